package db

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a fixedSorter yields exactly the sorted values, repeats
// included, whether they spilled to runs or not.
func TestFixedSorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, budget := range []int{1 << 20, 64 << 10} { // in memory; many runs
		fs := vfs.NewMem()
		s := newU64Sorter(fs, "", budget)
		var all []uint64
		for range 50000 {
			v := rng.Uint64N(1 << 20) // repeats included
			all = append(all, v)
			if err := s.add(v); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(all)
		var got []uint64
		if err := s.iterate(func(v uint64) error {
			got = append(got, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if spilled := len(s.runs) > 1; spilled != (budget < 1<<20) {
			t.Fatalf("budget %d: %d runs", budget, len(s.runs))
		}
		if !slices.Equal(got, all) {
			t.Fatalf("budget %d: %d values out, %d in, or out of order", budget, len(got), len(all))
		}
		s.close()
		if left, _ := fs.List(""); len(left) != 0 {
			t.Fatalf("budget %d: files left after close: %v", budget, left)
		}
	}
}

// Ensure that mergeBands over sealed postSorters yields, for any range of
// bands, exactly that range's postings in (band, bucket, doc) order, as a
// load merges its own postings with its removals: whether either sorter
// spilled to runs or not, with hot buckets (one bucket holding thousands
// of postings) and skewed buckets (sharing their top bits) among uniform
// ones, read from several goroutines at once.
func TestPostSorterBands(t *testing.T) {
	const bands = 5
	type post struct {
		band        int
		bucket, doc uint64
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, budgets := range [][2]int{
		{64 << 20, 64 << 20}, // all in memory
		{64 << 10, 64 << 20}, // adds spill
		{64 << 20, 16 << 10}, // removals spill
		{64 << 10, 16 << 10}, // both
	} {
		fs := vfs.NewMem()
		adds := newPostSorter(fs, "", "adds", budgets[0], bands)
		removes := newPostSorter(fs, "", "removes", budgets[1], bands)
		var all []post
		add := func(s *postSorter, band int, bucket, doc uint64, remove bool) {
			enc := doc << 1
			if remove {
				enc |= 1
			}
			all = append(all, post{band, bucket, enc})
			if err := s.addPosting(band, bucket, doc, remove); err != nil {
				t.Fatal(err)
			}
		}
		bucket := func() uint64 {
			switch r := rng.IntN(10); {
			case r == 0:
				return 42 // hot
			case r == 1:
				return 7<<60 | rng.Uint64N(1000) // same top bits
			default:
				return rng.Uint64()
			}
		}
		for doc := range uint64(25000) {
			for band := range bands {
				add(adds, band, bucket(), 10000+doc, false)
			}
		}
		// Removals come in no particular doc order, as a load's replaced
		// documents do, and may share buckets with the adds.
		for range 5000 {
			doc := rng.Uint64N(10000)
			for band := range bands {
				add(removes, band, bucket(), doc, true)
			}
		}
		slices.SortFunc(all, func(a, b post) int {
			return cmp.Or(cmp.Compare(a.band, b.band), cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.doc, b.doc))
		})
		adds.seal()
		removes.seal()
		for i, s := range []*postSorter{adds, removes} {
			if spilled := len(s.runs) > 0; spilled != (budgets[i] < 1<<20) {
				t.Fatalf("budgets %v: sorter %d has %d runs", budgets, i, len(s.runs))
			}
		}
		cuts := []int{0, 2, 3, bands}
		got := make([][]post, len(cuts)-1)
		done := make(chan error, len(got))
		for i := range got {
			go func() {
				done <- mergeBands([]*postSorter{adds, removes}, cuts[i], cuts[i+1], func(band int, e bandEnt) error {
					got[i] = append(got[i], post{band, e.bucket, e.doc})
					return nil
				})
			}()
		}
		for range got {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if g := slices.Concat(got...); !slices.Equal(g, all) {
			for i := range min(len(g), len(all)) {
				if g[i] != all[i] {
					t.Logf("first difference at %d: got %+v, want %+v; prev %+v", i, g[i], all[i], all[max(i-1, 0)])
					break
				}
			}
			t.Fatalf("budgets %v: %d postings out, %d in, or out of order", budgets, len(g), len(all))
		}
		adds.close()
		removes.close()
		if left, _ := fs.List(""); len(left) != 0 {
			t.Fatalf("budgets %v: files left after close: %v", budgets, left)
		}
	}
}
