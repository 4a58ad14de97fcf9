package minhash

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that dedup keeps exactly the distinct values, each once, against
// sort + compact, on uniform hashes, small integers (not uniform), zeros
// and heavy repeats.
func TestDistinctTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var dt distinctTable
	gens := map[string]func(n int) []uint64{
		"uniform": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = rng.Uint64()
			}
			return a
		},
		"small": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(rng.IntN(n/2 + 1))
			}
			return a
		},
		"repeats": func(n int) []uint64 {
			vals := []uint64{0, 7, 1 << 63, rng.Uint64()}
			a := make([]uint64, n)
			for i := range a {
				a[i] = vals[rng.IntN(len(vals))]
			}
			return a
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 3, 17, 100, 1000, 5000} {
			for range 5 {
				a := gen(n)
				want := slices.Compact(slices.Sorted(slices.Values(a)))
				got := slices.Clone(dt.dedup(a))
				// First occurrences keep their order.
				seen := map[uint64]bool{}
				for i, x := range got {
					if seen[x] {
						t.Fatalf("%s n=%d: %d repeated at %d", name, n, x, i)
					}
					seen[x] = true
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%s n=%d: %d distinct, want %d", name, n, len(got), len(want))
				}
			}
		}
	}
}

// Ensure that DocumentUnsorted gives Document's set (as a set) and the same
// signature, in every scheme and in bag mode.
func TestDocumentUnsorted(t *testing.T) {
	texts := []string{"", "a", "the quick brown fox jumps over the lazy dog", "abab abab abab abab abab abab", "Ünïcödé text, with repeats: la la la la la la la la"}
	for _, scheme := range []Scheme{SchemeFSS, SchemeOPH, SchemeClassic} {
		for _, bag := range []bool{false, true} {
			h, err := NewHasher(Options{Bag: bag}, SketchOptions{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				set, sig := h.Document(nil, nil, text)
				uset, usig := h.DocumentUnsorted(nil, nil, text)
				if !slices.Equal(set, slices.Sorted(slices.Values(uset))) || !slices.Equal(sig, usig) {
					t.Fatalf("scheme %v bag %v %q: sets %d/%d, signatures equal %v", scheme, bag, text, len(set), len(uset), slices.Equal(sig, usig))
				}
			}
		}
	}
}
