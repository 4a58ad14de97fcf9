package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// Ensure that a posting list encodes to the bytes worked out by hand.
func TestPostingsKnownBytes(t *testing.T) {
	ps := []Posting{{Doc: 1}, {Doc: 3, Remove: true}, {Doc: 200}}
	// version 1, count 3, (1<<1)=2, (2<<1|1)=5, (197<<1)=394 = 0x8a 0x03
	want := []byte{1, 3, 2, 5, 0x8a, 0x03}
	if got := AppendPostings(nil, ps); !bytes.Equal(got, want) {
		t.Fatalf("AppendPostings = %x, want %x", got, want)
	}
	got, err := DecodePostings(want, nil)
	if err != nil || !slices.Equal(got, ps) {
		t.Fatalf("DecodePostings = %v, %v", got, err)
	}
	if n, err := PostingCount(want); n != 3 || err != nil {
		t.Fatalf("PostingCount = %d, %v", n, err)
	}
}

// Ensure that a doc record encodes to the documented layout, byte by byte.
func TestDocRecordKnownBytes(t *testing.T) {
	r := DocRecord{ID: "ab", Signature: []uint32{1, 0x01020304}, Set: []uint64{5, 7}, HasText: true, Text: "hi"}
	want := []byte{1, flagText, 2, 'a', 'b', 2, 1, 0, 0, 0, 4, 3, 2, 1, 2, 5, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'}
	if got := AppendDocRecord(nil, &r); !bytes.Equal(got, want) {
		t.Fatalf("AppendDocRecord = %v, want %v", got, want)
	}
}

func randomRecord(rng *rand.Rand) DocRecord {
	r := DocRecord{ID: string(rune('a' + rng.IntN(26)))}
	for range rng.IntN(20) {
		r.Signature = append(r.Signature, rng.Uint32())
	}
	set := map[uint64]bool{}
	for range rng.IntN(50) {
		set[rng.Uint64()>>uint(rng.IntN(64))] = true
	}
	for x := range set {
		r.Set = append(r.Set, x)
	}
	slices.Sort(r.Set)
	if rng.IntN(2) == 0 {
		r.HasText, r.Text = true, "text é 東"
	}
	if rng.IntN(2) == 0 {
		r.Meta = []byte{}
		if rng.IntN(2) == 0 {
			r.Meta = []byte("meta")
		}
	}
	return r
}

// Ensure that doc records, sets, postings, counters and manifests round-trip.
func TestRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var got DocRecord
	for range 2000 {
		r := randomRecord(rng)
		b := AppendDocRecord([]byte("x"), &r)
		if n := MaxDocRecordSize(&r); len(b)-1 > n {
			t.Fatalf("a record of %d bytes, MaxDocRecordSize said at most %d", len(b)-1, n)
		}
		if err := DecodeDocRecord(b[1:], &got); err != nil {
			t.Fatal(err)
		}
		if r.Signature == nil {
			r.Signature = got.Signature[:0]
		}
		if r.Set == nil {
			r.Set = got.Set[:0]
		}
		if got.ID != r.ID || !slices.Equal(got.Signature, r.Signature) || !slices.Equal(got.Set, r.Set) ||
			got.HasText != r.HasText || got.Text != r.Text || !bytes.Equal(got.Meta, r.Meta) || (got.Meta == nil) != (r.Meta == nil) {
			t.Fatalf("round trip: %+v became %+v", r, got)
		}
		set, err := DecodeDocSet(b[1:], nil)
		if err != nil || !slices.Equal(set, r.Set) {
			t.Fatalf("DecodeDocSet = %v, %v", set, err)
		}

		var ps []Posting
		doc := uint64(0)
		for range rng.IntN(30) {
			doc += 1 + rng.Uint64N(1<<uint(rng.IntN(40)))
			ps = append(ps, Posting{Doc: doc, Remove: rng.IntN(3) == 0})
		}
		dec, err := DecodePostings(AppendPostings(nil, ps), nil)
		if err != nil || !slices.Equal(dec, ps) {
			t.Fatalf("postings round trip: %v → %v, %v", ps, dec, err)
		}
	}
	c := Counters{NextDoc: 1 << 40, Live: 12345}
	if got, err := DecodeCounters(EncodeCounters(c)); err != nil || got != c {
		t.Fatalf("counters: %v, %v", got, err)
	}
	m := &Manifest{FormatVersion: FormatVersion, Scheme: "oph", NumPerm: 128, ShingleKind: "word", ShingleSize: 3,
		StopWords: []string{"the"}, Bands: 16, Rows: 6, Threshold: 0.8, Recall: 0.99, Seed: 7}
	b, err := EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeManifest(b); err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("manifest: %+v, %v", got, err)
	}
}

// Ensure that keys sort by prefix and then by number, and parse back.
func TestKeys(t *testing.T) {
	if k := AppendDocKey(nil, 258); !bytes.Equal(k, []byte{'d', 0, 0, 0, 0, 0, 0, 1, 2}) {
		t.Fatalf("doc key %x", k)
	}
	if bytes.Compare(AppendDocKey(nil, 255), AppendDocKey(nil, 256)) >= 0 {
		t.Fatal("doc keys do not sort by number")
	}
	if n, err := ParseDocKey(AppendDocKey(nil, 99)); n != 99 || err != nil {
		t.Fatal(n, err)
	}
	band, bucket, err := ParsePostingKey(AppendPostingKey(nil, 513, 0xdeadbeef))
	if band != 513 || bucket != 0xdeadbeef || err != nil {
		t.Fatal(band, bucket, err)
	}
	if id, err := ParseIDKey(AppendIDKey(nil, "x/y")); id != "x/y" || err != nil {
		t.Fatal(id, err)
	}
	for _, bad := range [][]byte{nil, {'d'}, {'p', 1}, []byte("i")} {
		_, e1 := ParseDocKey(bad)
		_, _, e2 := ParsePostingKey(bad)
		if !errors.Is(e1, ErrCorrupt) || !errors.Is(e2, ErrCorrupt) {
			t.Errorf("bad key %x accepted", bad)
		}
	}
}

// Ensure that each kind of bad bytes is refused with ErrCorrupt (or
// ErrFormatTooNew for a newer manifest).
func TestDecodersRefuseBadBytes(t *testing.T) {
	good := AppendDocRecord(nil, &DocRecord{ID: "a", Signature: []uint32{1}, Set: []uint64{1, 2}})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{9}, good[1:]...),
		"flags":         append([]byte{1, 0x80}, good[2:]...),
		"truncated":     good[:len(good)-1],
		"trailing":      append(slices.Clone(good), 0),
		"repeat in set": {1, 0, 1, 'a', 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		"unsorted set":  {1, 0, 1, 'a', 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		"huge sig":      {1, 0, 1, 'a', 0xff, 0xff, 0xff, 0x0f},
		"huge set":      {1, 0, 1, 'a', 0, 0xff, 0xff, 0x0f, 1},
	} {
		var r DocRecord
		if err := DecodeDocRecord(b, &r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("doc record %s: %v", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"empty":    nil,
		"version":  {2, 0},
		"repeat":   {1, 2, 2, 0},
		"count":    {1, 5, 2},
		"trailing": {1, 1, 2, 2},
		"overflow": {1, 2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x04},
	} {
		if _, err := DecodePostings(b, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("postings %s: %v", name, err)
		}
	}
	if _, err := DecodeManifest([]byte{0xc1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("manifest garbage: %v", err)
	}
	newer, _ := EncodeManifest(&Manifest{FormatVersion: FormatVersion + 1})
	if _, err := DecodeManifest(newer); !errors.Is(err, ErrFormatTooNew) {
		t.Errorf("newer manifest: %v", err)
	}
	if _, err := DecodeCounters([]byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("counters: %v", err)
	}
}

// The fuzz targets hold every decoder to "never panic; what decodes
// re-encodes to something that decodes to the same value".

func FuzzDecodeDocRecord(f *testing.F) {
	f.Add(AppendDocRecord(nil, &DocRecord{ID: "a", Signature: []uint32{1, 2}, Set: []uint64{3, 9}, HasText: true, Text: "t", Meta: []byte("m")}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r, again DocRecord
		if DecodeDocRecord(b, &r) != nil {
			DecodeDocSet(b, nil)
			return
		}
		if err := DecodeDocRecord(AppendDocRecord(nil, &r), &again); err != nil {
			t.Fatalf("re-encoding a decoded record: %v", err)
		}
		if again.ID != r.ID || !slices.Equal(again.Set, r.Set) || !slices.Equal(again.Signature, r.Signature) || again.Text != r.Text {
			t.Fatal("round trip changed the record")
		}
		if set, err := DecodeDocSet(b, nil); err != nil || !slices.Equal(set, r.Set) {
			t.Fatalf("DecodeDocSet disagrees with DecodeDocRecord: %v", err)
		}
	})
}

func FuzzDecodePostings(f *testing.F) {
	f.Add(AppendPostings(nil, []Posting{{Doc: 1}, {Doc: 5, Remove: true}}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := DecodePostings(b, nil)
		PostingCount(b)
		if err != nil {
			return
		}
		again, err := DecodePostings(AppendPostings(nil, ps), nil)
		if err != nil || !slices.Equal(again, ps) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzDecodeManifest(f *testing.F) {
	b, _ := EncodeManifest(&Manifest{FormatVersion: 1, Scheme: "oph", NumPerm: 128})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		enc, err := EncodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeManifest(enc); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}

func FuzzDecodeSmall(f *testing.F) {
	f.Add([]byte("d\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseDocKey(b)
		ParsePostingKey(b)
		ParseIDKey(b)
		DecodeDocNum(b)
		DecodeCounters(b)
	})
}

// A manifest whose stop-word list declares more entries than it could
// hold is corrupt, and decoding it allocates nothing near the declared
// size (msgpack's generic decoder preallocates up to a million strings).
func TestManifestStopWordsBounded(t *testing.T) {
	m := &Manifest{FormatVersion: 1, Scheme: "oph", NumPerm: 128, StopWords: StopWords{"a", "the"}}
	b, err := EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeManifest(b)
	if err != nil || !slices.Equal(got.StopWords, m.StopWords) {
		t.Fatalf("round trip: %v, %v", got, err)
	}

	huge := []byte{0x82, 0xae}
	huge = append(huge, "format_version"...)
	huge = append(huge, 0x01, 0xaa)
	huge = append(huge, "stop_words"...)
	huge = append(huge, 0xdd, 0xff, 0xff, 0xff, 0xff) // array32 of 2^32-1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := DecodeManifest(huge); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("declared 2^32-1 stop words: %v, want ErrCorrupt", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("decoding a corrupt stop-word list allocated %d bytes", n)
	}
}
