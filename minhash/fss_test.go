package minhash

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceFSS computes the FSS signature from its definition, without
// stopping early: every element is thrown in every one of rounds
// 0..rounds−1, and each bin keeps the least (round, position) it receives.
// Values of later rounds exceed every value of earlier ones, so once every
// bin is filled more rounds change nothing; Sketch stops there.
func referenceFSS(s *Sketcher, elems []uint64, rounds int) []uint32 {
	k := uint64(s.opts.NumPerm)
	best := make([]uint64, k)
	for i := range best {
		best[i] = emptyBin
	}
	for round := range uint64(rounds) {
		for _, x := range elems {
			h := mum(x ^ s.mix)
			if round > 0 {
				h = mum(x ^ fmix64(s.probe^round))
			}
			bin, frac := bits.Mul64(h, k)
			best[bin] = min(best[bin], round<<32|frac>>32)
		}
	}
	out := make([]uint32, k)
	for i, v := range best {
		out[i] = uint32(v) ^ uint32(v>>32)*0x9e3779b9
	}
	return out
}

// Ensure that FSS's early stopping changes no value: its signatures equal
// the definition's, computed over many more rounds than any set needs.
func TestFSSMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []int{1, 8, 128} {
		s, err := NewSketcher(SketchOptions{Scheme: SchemeFSS, NumPerm: k, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 5, 20, 100, 700, 3000} {
			elems := make([]uint64, n)
			for i := range elems {
				elems[i] = rng.Uint64()
			}
			// A set of n elements fills k bins within k·(ln k + 20)/n
			// rounds but for a chance below e^−20.
			rounds := 2 + k*(bits.Len(uint(k))+20)/n
			got := s.Sketch(nil, elems)
			if want := referenceFSS(s, elems, rounds); !slices.Equal(got, want) {
				t.Fatalf("k=%d n=%d: Sketch differs from the definition at %d rounds", k, n, rounds)
			}
		}
	}
}
