package extsort

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that MergeBand over sealed BandSorters yields, band after band,
// exactly that band's entries in (bucket, value) order, as a load merges
// its own postings with its removals: whether either sorter spilled to
// runs or not, with hot buckets (one bucket holding thousands of entries)
// and skewed buckets (sharing their top bits) among uniform ones, bands
// read from several goroutines at once.
func TestBandSorter(t *testing.T) {
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
		adds := NewBandSorter(fs, "", "adds", budgets[0], bands)
		removes := NewBandSorter(fs, "", "removes", budgets[1], bands)
		var all []post
		add := func(s *BandSorter, band int, bucket, doc uint64, remove bool) {
			enc := doc << 1
			if remove {
				enc |= 1
			}
			all = append(all, post{band, bucket, enc})
			if err := s.Add(band, BandEntry{bucket, enc}); err != nil {
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
		adds.Seal()
		removes.Seal()
		for i, s := range []*BandSorter{adds, removes} {
			if spilled := s.Runs() > 0; spilled != (budgets[i] < 1<<20) {
				t.Fatalf("budgets %v: sorter %d has %d runs", budgets, i, s.Runs())
			}
		}
		got := make([][]post, bands)
		done := make(chan error, bands)
		for band := range bands {
			go func() {
				done <- MergeBand([]*BandSorter{adds, removes}, band, func(e BandEntry) error {
					got[band] = append(got[band], post{band, e.Bucket, e.Value})
					return nil
				})
			}()
		}
		for range bands {
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
		adds.Close()
		removes.Close()
		if left, _ := fs.List(""); len(left) != 0 {
			t.Fatalf("budgets %v: files left after close: %v", budgets, left)
		}
	}
}

// BenchmarkMergeBand measures reading one band back from a BandSorter
// that spilled 15 runs (16 sources with its region in memory: the merge
// a load's posting tables go through),
// and from one that did not (a plain loop over the sorted region).
func BenchmarkMergeBand(b *testing.B) {
	const bands, perBand = 4, 1 << 18
	for _, runs := range []int{1, 16} {
		b.Run(fmt.Sprintf("sources=%d", runs), func(b *testing.B) {
			s := NewBandSorter(vfs.NewMem(), "", "b", perBand/runs*bandEntryBytes*(bands+1), bands)
			rng := rand.New(rand.NewPCG(1, 1))
			for doc := range uint64(perBand) {
				for band := range bands {
					if err := s.Add(band, BandEntry{rng.Uint64(), doc << 1}); err != nil {
						b.Fatal(err)
					}
				}
			}
			s.Seal()
			if s.Runs() != runs-1 {
				b.Fatalf("%d runs", s.Runs())
			}
			b.SetBytes(perBand * bandEntryBytes)
			b.ResetTimer()
			for range b.N {
				n := 0
				if err := MergeBand([]*BandSorter{s}, 2, func(BandEntry) error { n++; return nil }); err != nil || n != perBand {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// Ensure that insertionSortWithin sorts within its budget and otherwise
// leaves a permutation and says so, against slices.SortFunc.
func TestInsertionSortWithin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 500 {
		n := rng.IntN(200)
		v := make([]BandEntry, n)
		for i := range v {
			v[i] = BandEntry{Bucket: uint64(rng.IntN(4)), Value: uint64(i)}
			if trial%2 == 0 {
				v[i].Value = uint64(rng.IntN(n + 1))
			}
		}
		want := slices.Clone(v)
		slices.SortFunc(want, CompareBandEntry)
		got := slices.Clone(v)
		budget := rng.IntN(4*n*n/4 + 1)
		if insertionSortWithin(got, budget) {
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: reported sorted, is not", trial)
			}
			continue
		}
		slices.SortFunc(got, CompareBandEntry)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: not a permutation after giving up", trial)
		}
	}
}
