package allpairs

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that the prefix-filter join finds exactly the pairs that
// comparing every pair finds, on random sets with many near-duplicates.
func TestJoinEqualsBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		var sets [][]uint64
		for range 150 {
			var s []uint64
			if len(sets) > 0 && rng.IntN(2) == 0 {
				s = slices.Clone(sets[rng.IntN(len(sets))])
				for range rng.IntN(4) {
					if len(s) > 0 && rng.IntN(2) == 0 {
						s = slices.Delete(s, 0, 1)
					} else {
						s = append(s, uint64(rng.IntN(60)))
					}
				}
			} else {
				for range rng.IntN(25) {
					s = append(s, uint64(rng.IntN(60)))
				}
			}
			slices.Sort(s)
			sets = append(sets, slices.Compact(s))
		}
		if round%3 != 0 {
			// NB: the ranking sorts the tokens in buckets by their top
			// byte: here they spread over every bucket, as hashes do, or
			// over three, each holding many.
			for _, s := range sets {
				for i, x := range s {
					s[i] = x * 0x9e3779b97f4a7c15
					if round%3 == 2 {
						s[i] = s[i]>>8 | (x%3)<<56
					}
				}
				slices.Sort(s)
			}
		}
		// NB: one ranking serves every threshold.
		ranked := map[int]*Ranked{1: Rank(sets), 2: rank(sets, 2), 3: rank(sets, 3), 5: rank(sets, 5)}
		for _, th := range []float64{0.3, 0.5, 0.8, 0.9, 1} {
			want := Brute(sets, th)
			if got := Join(sets, th); !slices.Equal(got, want) {
				t.Fatalf("round %d t=%v: Join found %d pairs, Brute %d", round, th, len(got), len(want))
			}
			// NB: the probes and the ranking's sorts on several
			// goroutines, each probe taking 64 sets at a time: 150 sets
			// are 3 chunks.
			for _, workers := range []int{1, 2, 3, 5} {
				if got := ranked[workers].join(th, workers); !slices.Equal(got, want) {
					t.Fatalf("round %d t=%v, %d goroutines: join found %d pairs, Brute %d", round, th, workers, len(got), len(want))
				}
			}
		}
	}
}

// Ensure that a threshold of 0 or below gives the pairs that share a
// token, as its doc says (the oracle: counted by hand): below -1 it gave
// none.
func TestJoinThresholdAtOrBelowZero(t *testing.T) {
	sets := [][]uint64{{1, 2, 3}, {3, 4}, {5, 6}, {}}
	for _, th := range []float64{0, -0.5, -1, -2} {
		if got := Join(sets, th); len(got) != 1 || got[0] != (Pair{0, 1, 0.25}) {
			t.Errorf("Join(t=%v) = %v, want [{0 1 0.25}]", th, got)
		}
	}
}
