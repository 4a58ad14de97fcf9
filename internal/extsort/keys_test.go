package extsort

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a KeySorter yields exactly the added (key, tag) entries
// sorted by key then tag (repeated keys included, keys of every length,
// the empty key too), whether they spilled to runs or not, and that
// Close leaves no files.
func TestKeySorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, budget := range []int{64 << 20, 64 << 10} { // in memory; many runs
		fs := vfs.NewMem()
		s := NewKeySorter(fs, "", "keys", budget)
		var want []KeyEntry
		for tag := range uint64(30000) {
			key := fmt.Appendf(nil, "id-%d", rng.IntN(20000)) // repeats
			switch rng.IntN(100) {
			case 0:
				key = nil
			case 1:
				key = bytes.Repeat([]byte{byte(rng.Uint32())}, 300+rng.IntN(3000))
			}
			want = append(want, KeyEntry{Key: key, Tag: tag})
			if err := s.Add(key, tag); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortFunc(want, func(a, b KeyEntry) int { return cmp.Or(bytes.Compare(a.Key, b.Key), cmp.Compare(a.Tag, b.Tag)) })
		var got []KeyEntry
		if err := s.Iterate(func(key []byte, tag uint64) error {
			got = append(got, KeyEntry{Key: bytes.Clone(key), Tag: tag})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if spilled := s.Runs() > 1; spilled != (budget < 1<<20) {
			t.Fatalf("budget %d: %d runs", budget, s.Runs())
		}
		if !slices.EqualFunc(got, want, func(a, b KeyEntry) bool { return bytes.Equal(a.Key, b.Key) && a.Tag == b.Tag }) {
			t.Fatalf("budget %d: %d entries out, %d in, or out of order", budget, len(got), len(want))
		}
		s.Close()
		if left, _ := fs.List(""); len(left) != 0 {
			t.Fatalf("budget %d: files left after close: %v", budget, left)
		}
	}
}

// Ensure that a KeyLog replays exactly what was appended, in order, as
// often as asked, and that Close removes its file.
func TestKeyLog(t *testing.T) {
	fs := vfs.NewMem()
	l, err := CreateKeyLog(fs, "log")
	if err != nil {
		t.Fatal(err)
	}
	var want []KeyEntry
	for i := range uint64(5000) {
		e := KeyEntry{Key: fmt.Appendf(nil, "key-%d", i*7919%5000), Tag: i << 40}
		want = append(want, e)
		l.Append(e.Key, e.Tag)
	}
	if err := l.Finish(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var got []KeyEntry
		if err := l.Replay(func(key []byte, tag uint64) error {
			got = append(got, KeyEntry{Key: bytes.Clone(key), Tag: tag})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b KeyEntry) bool { return bytes.Equal(a.Key, b.Key) && a.Tag == b.Tag }) {
			t.Fatalf("replayed %d records, appended %d, or different", len(got), len(want))
		}
	}
	l.Close()
	if left, _ := fs.List(""); len(left) != 0 {
		t.Fatalf("files left after close: %v", left)
	}
}

// Ensure that reading a run file cut inside a record is an error, not a
// short or wrong result.
func TestTornRun(t *testing.T) {
	fs := vfs.NewMem()
	l, err := CreateKeyLog(fs, "log")
	if err != nil {
		t.Fatal(err)
	}
	l.Append([]byte("a fairly long key"), 1)
	if err := l.Finish(); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.Open("log")
	whole, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cut, _ := fs.Create("log", vfs.WriteCategoryUnspecified)
	cut.Write(whole[:len(whole)-3])
	cut.Close()
	if err := l.Replay(func([]byte, uint64) error { return nil }); err == nil {
		t.Fatal("a torn key record replayed without error")
	}
	r := newFixedReader(bytes.NewReader(make([]byte, 20)), 16, bandEntryCodec.Get)
	if _, err := r.Next(); err == nil {
		t.Fatal("a torn fixed record read without error")
	}
}

// BenchmarkKeySorterIterate measures reading back 256 Ki ids of about 12
// bytes (a load's ids) that spilled to runs: the generic Merge.
func BenchmarkKeySorterIterate(b *testing.B) {
	const n = 1 << 18
	s := NewKeySorter(vfs.NewMem(), "", "keys", n/16*36)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range uint64(n) {
		if err := s.Add(fmt.Appendf(nil, "id-%08x", rng.Uint32()), i); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		got := 0
		if err := s.Iterate(func([]byte, uint64) error { got++; return nil }); err != nil || got != n {
			b.Fatal(got, err)
		}
	}
	b.ReportMetric(float64(s.Runs()), "runs")
}

// Ensure that a lazy KeySorter makes its directory at its first spill
// and only then, once: one whose entries fit its budget calls makeDir
// never (a sorted pairs run needed a writable $TMPDIR for a few pairs, a
// nightly review's NB-2), and one that spills writes its runs there and
// yields the entries sorted.
func TestKeySorterLazyDir(t *testing.T) {
	for _, budget := range []int{64 << 20, 64 << 10} {
		fs := vfs.NewMem()
		made := 0
		s := NewKeySorterLazy(fs, func() (string, error) {
			made++
			return "runs", fs.MkdirAll("runs", 0o700)
		}, "keys", budget)
		var want [][]byte
		for i := range 20000 {
			key := fmt.Appendf(nil, "id-%08d", (i*7919)%20000)
			want = append(want, key)
			if err := s.Add(key, 0); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortFunc(want, bytes.Compare)
		var got [][]byte
		if err := s.Iterate(func(key []byte, _ uint64) error {
			got = append(got, bytes.Clone(key))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("budget %d: %d entries out of %d, or out of order", budget, len(got), len(want))
		}
		spilled := s.Runs() > 1
		if wantMade := map[bool]int{false: 0, true: 1}[spilled]; made != wantMade || spilled != (budget < 1<<20) {
			t.Fatalf("budget %d: %d runs, the directory made %d times", budget, s.Runs(), made)
		}
		if spilled && s.Dir() != "runs" || !spilled && s.Dir() != "" {
			t.Errorf("budget %d: Dir %q", budget, s.Dir())
		}
		s.Close()
	}
	failing := NewKeySorterLazy(vfs.NewMem(), func() (string, error) { return "", io.ErrShortWrite }, "keys", 64<<10)
	var err error
	for i := 0; err == nil && i < 100000; i++ {
		err = failing.Add(fmt.Appendf(nil, "key-%d", i), 0)
	}
	if err != io.ErrShortWrite {
		t.Errorf("a sorter whose directory cannot be made: %v, want its error at the spill", err)
	}
}
