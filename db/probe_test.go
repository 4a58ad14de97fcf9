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
// stamps must forget the previous one), and query sets given with repeats,
// some of more than 4,096 distinct values (the table grows as they come).
func TestProbeSetMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for round := range 300 {
		universe, most := 1+rng.IntN(400), 200
		if round%10 == 0 {
			universe, most = 20000, 12000
		}
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
		a := distinct(rng.IntN(most))
		given := slices.Clone(a)
		for range rng.IntN(3 * (len(a) + 1)) { // repeats
			if len(a) > 0 {
				given = append(given, a[rng.IntN(len(a))])
			}
		}
		rng.Shuffle(len(given), func(i, j int) { given[i], given[j] = given[j], given[i] })
		p := newProbeSet(given)
		if p.n != len(a) || 2*p.n > len(p.slots) {
			t.Fatalf("a table of %d slots counts %d distinct values, want %d", len(p.slots), p.n, len(a))
		}
		for range 20 {
			b := distinct(rng.IntN(most))
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
