package minhash

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that SetTable.JaccardAtLeast gives JaccardAtLeast's answer (the
// same float64, the same verdict) on sorted-merge inputs, for sets in any
// order, with zeros, small integers and random overlaps, at thresholds
// around the true value.
func TestSetTableMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var tab SetTable
	for trial := range 3000 {
		universe := 1 + rng.IntN(3000)
		pick := func() []uint64 {
			n := rng.IntN(universe + 1)
			m := map[uint64]bool{}
			for range n {
				var v uint64
				if trial%3 == 0 {
					v = uint64(rng.IntN(universe)) // small integers, 0 included
				} else {
					v = rng.Uint64() >> uint(rng.IntN(2)*40) // some collide when shifted
				}
				m[v] = true
			}
			out := make([]uint64, 0, len(m))
			for v := range m {
				out = append(out, v)
			}
			return out
		}
		a, b := pick(), pick()
		if trial%5 == 0 && len(a) > 0 {
			b = append(b[:0:0], a[:rng.IntN(len(a))]...) // a subset: high Jaccard
		}
		sa, sb := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
		for _, th := range []float64{0.01, 0.3, 0.5, 0.8, 0.95, 1} {
			wantJ, wantOK := JaccardAtLeast(sa, sb, th)
			tab.Reset(a)
			gotJ, gotOK := tab.JaccardAtLeast(b, th)
			if gotOK != wantOK || (wantOK && gotJ != wantJ) {
				t.Fatalf("trial %d t=%v |a|=%d |b|=%d: got (%v, %v), want (%v, %v)", trial, th, len(a), len(b), gotJ, gotOK, wantJ, wantOK)
			}
			if exact := Jaccard(sa, sb); wantOK && gotJ != exact {
				t.Fatalf("trial %d: %v, exact %v", trial, gotJ, exact)
			}
		}
	}
}
