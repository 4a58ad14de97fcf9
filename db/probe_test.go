package db

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

// Ensure that the probe table's Jaccard equals the sorted merge's, bit for
// bit, on random sets given with repeats and in any order: small and large
// values, zero, overlapping and disjoint, across many candidates (the
// stamps must forget the previous one).
func TestProbeSetMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 300 {
		universe := 1 + rng.IntN(400)
		value := func() uint64 {
			x := uint64(rng.IntN(universe))
			if rng.IntN(2) == 0 {
				x *= 0x9E3779B97F4A7C15 // spread over 64 bits, 0 stays 0
			}
			return x
		}
		distinct := func(n int) []uint64 {
			m := map[uint64]bool{}
			for range n {
				m[value()] = true
			}
			var s []uint64
			for x := range m {
				s = append(s, x)
			}
			slices.Sort(s)
			return s
		}
		a := distinct(rng.IntN(200))
		p := newProbeSet(a)
		for range 20 {
			b := distinct(rng.IntN(200))
			elems := slices.Clone(b)
			for range rng.IntN(len(b) + 1) { // repeats
				if len(b) > 0 {
					elems = append(elems, b[rng.IntN(len(b))])
				}
			}
			rng.Shuffle(len(elems), func(i, j int) { elems[i], elems[j] = elems[j], elems[i] })
			for _, th := range []float64{0.01, 0.3, 0.5, 0.9, 1} {
				wj, wok := minhash.JaccardAtLeast(a, b, th)
				gj, gok := p.jaccardAtLeast(elems, len(b), th)
				if wok != gok || (wok && wj != gj) {
					t.Fatalf("|a| %d |b| %d t %v: probe %v %v, merge %v %v", len(a), len(b), th, gj, gok, wj, wok)
				}
			}
		}
	}
}
