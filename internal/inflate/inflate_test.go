package inflate

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// textLike is n bytes of words from a small vocabulary: text that
// deflate compresses as it compresses documents.
func textLike(rng *rand.Rand, n int) []byte {
	words := []string{"the", "package", "provides", "a", "library", "for", "near", "duplicate", "documents", "Debian", "of", "and", "\n", "ÿ€", "0x1f"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	if rng.IntN(4) == 0 { // and some noise, which deflate cannot shrink
		for i := 0; i < n/10; i++ {
			b.Bytes()[rng.IntN(n)] = byte(rng.Uint32())
		}
	}
	return b.Bytes()[:n]
}

func deflate(t testing.TB, p []byte, level int) []byte {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(p)
	w.Close()
	return b.Bytes()
}

func newZ(t testing.TB) *Decompressor {
	z, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// TestInflate: streams written by Go's compress/flate (the oracle: what
// it wrote, it inflates to) at every level, and the same streams with
// the wrong stated size, cut short, or followed by more bytes.
func TestInflate(t *testing.T) {
	z := newZ(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 100, 4095, 65280, 65536, 200000} {
		for level := flate.HuffmanOnly; level <= flate.BestCompression; level++ {
			want := textLike(rng, n)
			src := deflate(t, want, level)
			got := make([]byte, n)
			if err := z.Inflate(got, src); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes, level %d: err %v, equal %v", n, level, err, bytes.Equal(got, want))
			}
			if err := z.Inflate(make([]byte, n+1), src); !errors.Is(err, ErrTooShort) {
				t.Errorf("%d bytes, level %d, stated %d: err %v, want ErrTooShort", n, level, n+1, err)
			}
			if n > 0 {
				if err := z.Inflate(make([]byte, n-1), src); !errors.Is(err, ErrTooLong) {
					t.Errorf("%d bytes, level %d, stated %d: err %v, want ErrTooLong", n, level, n-1, err)
				}
			}
			if err := z.Inflate(got, append(bytes.Clone(src), 0, 1, 2)); !errors.Is(err, ErrTrailing) {
				t.Errorf("%d bytes, level %d, 3 bytes after the stream: err %v, want ErrTrailing", n, level, err)
			}
			for _, cut := range []int{1, len(src) / 2, len(src) - 1} {
				if err := z.Inflate(got, src[:len(src)-cut]); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%d bytes, level %d, the stream less %d bytes: err %v, want ErrCorrupt", n, level, cut, err)
				}
			}
		}
	}
	if err := z.Inflate(nil, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("no data: err %v, want ErrCorrupt", err)
	}
}

// FuzzInflate checks Inflate against Go's compress/flate on any bytes:
// where flate reads a stream from src, Inflate inflates it to the same
// bytes, and says whether src held more; where flate finds the data
// corrupt or cut short, so does Inflate, at any stated size.
func FuzzInflate(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, level := range []int{flate.HuffmanOnly, flate.NoCompression, 1, 6, 9} {
		f.Add(deflate(f, textLike(rng, 3000), level), uint16(0))
	}
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xff}, uint16(0)) // a stored empty final block
	f.Fuzz(func(t *testing.T, src []byte, extra uint16) {
		br := bytes.NewReader(src)
		want, ferr := io.ReadAll(io.LimitReader(flate.NewReader(br), 1<<20))
		if len(want) == 1<<20 {
			return // NB: a bomb; the callers' sizes are at most 64 KiB
		}
		z := newZ(t)
		if ferr != nil {
			size := int(extra) % (len(want) + 100)
			if err := z.Inflate(make([]byte, size), src); err == nil {
				t.Fatalf("flate: %v; Inflate to %d bytes: nil", ferr, size)
			}
			return
		}
		got := make([]byte, len(want))
		err := z.Inflate(got, src)
		if br.Len() > 0 {
			if !errors.Is(err, ErrTrailing) {
				t.Fatalf("flate read the stream with %d bytes after it; Inflate: %v", br.Len(), err)
			}
			return
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("flate read %d bytes; Inflate: %v, equal %v", len(want), err, bytes.Equal(got, want))
		}
		if err := z.Inflate(make([]byte, len(want)+1+int(extra)%10), src); !errors.Is(err, ErrTooShort) {
			t.Fatalf("stated more than the %d bytes: %v, want ErrTooShort", len(want), err)
		}
		if len(want) > 0 {
			if err := z.Inflate(make([]byte, int(extra)%len(want)), src); !errors.Is(err, ErrTooLong) {
				t.Fatalf("stated less than the %d bytes: %v, want ErrTooLong", len(want), err)
			}
		}
	})
}
