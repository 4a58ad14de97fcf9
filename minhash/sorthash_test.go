package minhash

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that hashSorter sorts like slices.Sort: uniform hashes of every
// size around the thresholds, many repeats, and skewed inputs that put
// everything in a few buckets.
func TestHashSorterMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h hashSorter
	gens := map[string]func() uint64{
		"uniform": rng.Uint64,
		"repeats": func() uint64 { return uint64(rng.IntN(5)) << 60 },
		"skewed":  func() uint64 { return rng.Uint64() >> 20 },
		"equal":   func() uint64 { return 42 },
	}
	for name, next := range gens {
		for _, n := range []int{0, 1, 2, 47, 48, 49, 100, 1200, 5000, 70000, 200000, sortAtOnce - 1, sortAtOnce} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = next()
			}
			want := slices.Clone(a)
			slices.Sort(want)
			h.sort(a)
			if !slices.Equal(a, want) {
				t.Fatalf("%s, n=%d: not sorted like slices.Sort", name, n)
			}
		}
	}
}

// BenchmarkSortHashes compares hashSorter with slices.Sort on the ~1,200
// shingle hashes of a 1.2 KB document.
func BenchmarkSortHashes(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	src := make([]uint64, 1200)
	for i := range src {
		src[i] = rng.Uint64()
	}
	a := make([]uint64, len(src))
	b.Run("slices.Sort", func(b *testing.B) {
		for b.Loop() {
			copy(a, src)
			slices.Sort(a)
		}
	})
	b.Run("hashSorter", func(b *testing.B) {
		var h hashSorter
		for b.Loop() {
			copy(a, src)
			h.sort(a)
		}
	})
}
