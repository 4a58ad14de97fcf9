package docio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/flate"
)

// bgzfBytes compresses b with GzipWriter, written in pieces of step
// bytes.
func bgzfBytes(t testing.TB, b []byte, step int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewGzipWriter(&buf, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	for p := b; len(p) > 0; {
		k := min(step, len(p))
		if n, err := w.Write(p[:k]); n != k || err != nil {
			t.Fatalf("Write: %d of %d, %v", n, k, err)
		}
		p = p[k:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stdGunzip is the oracle: compress/gzip, every member.
func stdGunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// ourGunzip reads b through newGzipReader and says whether the members
// were inflated in parallel.
func ourGunzip(b []byte) ([]byte, bool, error) {
	r, err := newGzipReader(bufio.NewReaderSize(bytes.NewReader(b), 64<<10))
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	_, parallel := r.(*bgzfReader)
	out, err := io.ReadAll(r)
	return out, parallel, err
}

// textLike is n bytes of words, compressible as text is.
func textLike(rng *rand.Rand, n int) []byte {
	words := []string{"the", "package", "provides", "a", "library", "for", "near", "duplicate", "documents", "with", "minhash", "signatures", "\n"}
	var b []byte
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, ' ')
	}
	return b[:n]
}

func TestGzipWriterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*bgzfMaxInput+17)
	for i := range random {
		random[i] = byte(rng.Uint32()) // NB: incompressible: members near the size bound
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"one byte", []byte("x")},
		{"one member exactly", textLike(rng, bgzfMaxInput)},
		{"one member and a byte", textLike(rng, bgzfMaxInput+1)},
		{"many batches", textLike(rng, 3*bgzfBatch+12345)},
		{"incompressible", random},
	} {
		for _, step := range []int{1 << 20, 1000, 7} {
			if step < 1000 && len(tc.in) > 1<<20 {
				continue
			}
			z := bgzfBytes(t, tc.in, step)
			if !bytes.HasSuffix(z, bgzfEOF) {
				t.Errorf("%s: no BGZF end-of-file member", tc.name)
			}
			std, err := stdGunzip(z)
			if err != nil || !bytes.Equal(std, tc.in) {
				t.Fatalf("%s (writes of %d): compress/gzip read %d bytes, %v; want the %d written", tc.name, step, len(std), err, len(tc.in))
			}
			got, parallel, err := ourGunzip(z)
			if err != nil || !bytes.Equal(got, tc.in) {
				t.Fatalf("%s (writes of %d): read %d bytes, %v; want the %d written", tc.name, step, len(got), err, len(tc.in))
			}
			if !parallel {
				t.Errorf("%s: not read as BGZF", tc.name)
			}
			// Every member within BGZF's bound, and as many as the text
			// needs (one more: the end-of-file member).
			members := 0
			for p := z; len(p) > 0; members++ {
				size, _, ok := bgzfSize(p)
				if !ok || size > bgzfMaxBlock || size > len(p) {
					t.Fatalf("%s: member %d: size %d, ok %v, %d bytes left", tc.name, members, size, ok, len(p))
				}
				p = p[size:]
			}
			if want := (len(tc.in)+bgzfMaxInput-1)/bgzfMaxInput + 1; members != want {
				t.Errorf("%s: %d members, want %d", tc.name, members, want)
			}
		}
	}
}

// TestGzipReaderOtherWriters reads what other writers made: bgzip
// (htslib 1.16, Debian's tabix package) on a head of the debian sample,
// and one-stream gzip, and concatenations of them.
func TestGzipReaderOtherWriters(t *testing.T) {
	bgzip, err := os.ReadFile(filepath.Join("testdata", "bgzf", "debian-head.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := stdGunzip(bgzip)
	if err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpora", "debian-sample", "docs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3*bgzfMaxInput || !bytes.HasPrefix(sample, want) {
		t.Fatalf("the fixture inflates to %d bytes, not a head of the sample over three members", len(want))
	}
	plain := gzipBytes(want[:1000])
	ours := bgzfBytes(t, want[1000:5000], 1<<20)
	for _, tc := range []struct {
		name     string
		z        []byte
		want     []byte
		parallel bool
	}{
		{"bgzip", bgzip, want, true},
		{"one stream", gzipBytes(want), want, false},
		{"bgzip then one stream", cat(bgzip, plain), cat(want, want[:1000]), true},
		{"one stream then bgzf", cat(plain, ours), want[:5000], false},
		{"bgzf, stream, bgzf", cat(ours, plain, ours), cat(want[1000:5000], want[:1000], want[1000:5000]), true},
	} {
		got, parallel, err := ourGunzip(tc.z)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: read %d bytes, %v; want %d", tc.name, len(got), err, len(tc.want))
		}
		if parallel != tc.parallel {
			t.Errorf("%s: parallel %v, want %v", tc.name, parallel, tc.parallel)
		}
	}
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// TestGzipReaderDamage: a damaged or cut BGZF stream is an error, after
// the members before the damage, as compress/gzip reads it.
func TestGzipReaderDamage(t *testing.T) {
	in := textLike(rand.New(rand.NewPCG(3, 4)), 5*bgzfMaxInput)
	z := bgzfBytes(t, in, 1<<20)
	second, _, _ := bgzfSize(z)
	size2, _, _ := bgzfSize(z[second:])
	for _, tc := range []struct {
		name string
		z    []byte
		want error
	}{
		{"cut in a member", z[:second+100], io.ErrUnexpectedEOF},
		{"cut in a header", z[:second+5], io.ErrUnexpectedEOF},
		{"crc", flip(z, second+size2-6, 0), gzip.ErrChecksum},
		{"data", flip(z, second+size2/2, 0), nil},
		{"trailing bytes", cat(z, []byte("trailing garbage, not gzip")), gzip.ErrHeader},
	} {
		got, _, err := ourGunzip(tc.z)
		_, stdErr := stdGunzip(tc.z)
		if err == nil || stdErr == nil {
			t.Errorf("%s: err %v (compress/gzip: %v), want errors", tc.name, err, stdErr)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if !bytes.HasPrefix(in, got) || len(got) < bgzfMaxInput {
			t.Errorf("%s: read %d bytes before the error, not the members before it", tc.name, len(got))
		}
	}
	// A member whose BC size lies is corrupt, whatever its deflate data.
	lie := bytes.Clone(z)
	lie[16]-- // NB: the first member's size, one byte short
	if _, _, err := ourGunzip(lie); err == nil {
		t.Error("a member whose size lies was read")
	}
}

func flip(b []byte, i int, bit uint) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1 << bit
	return c
}

// TestGzipReaderClose: closing before the end stops the reader.
func TestGzipReaderClose(t *testing.T) {
	z := bgzfBytes(t, textLike(rand.New(rand.NewPCG(5, 6)), 4*bgzfBatch), 1<<20)
	r, err := newGzipReader(bufio.NewReaderSize(bytes.NewReader(z), 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 10)); err == nil {
		t.Error("a closed reader read")
	}
}

// FuzzGzipReader: whatever the bytes, the parallel reader reads a
// stream only as compress/gzip reads it (the same bytes), and never
// panics. (A BGZF member whose size lies is refused where compress/gzip,
// which ignores the size, may read it.)
func FuzzGzipReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	f.Add(bgzfBytes(f, textLike(rng, 300), 1<<20))
	f.Add(bgzfBytes(f, textLike(rng, bgzfMaxInput+300), 1<<20))
	f.Add(cat(bgzfBytes(f, []byte("abc"), 1), gzipBytes([]byte("def"))))
	f.Add(bgzfEOF)
	f.Fuzz(func(t *testing.T, z []byte) {
		got, _, err := ourGunzip(z)
		if err != nil {
			return
		}
		want, stdErr := stdGunzip(z)
		if stdErr != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %q; compress/gzip reads %q, %v", got, want, stdErr)
		}
	})
}
