package minhash_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

// Ensure that Jaccard and the bag measures give the hand-computed answers
// of Mining of Massive Datasets §3.1.
func TestJaccardHandComputed(t *testing.T) {
	// Example 3.1: |S ∩ T| = 3, |S ∪ T| = 8.
	s := []uint64{1, 2, 3, 4, 5}
	u := []uint64{3, 4, 5, 6, 7, 8}
	if got := minhash.Jaccard(s, u); got != 3.0/8 {
		t.Errorf("Jaccard = %v, want 3/8", got)
	}
	// §3.3 matrix: S1 = {a, d}, S4 = {a, c, d}: SIM = 2/3.
	if got := minhash.Jaccard([]uint64{'a', 'd'}, []uint64{'a', 'c', 'd'}); got != 2.0/3 {
		t.Errorf("Jaccard = %v, want 2/3", got)
	}
	if got := minhash.Jaccard(nil, []uint64{1}); got != 0 {
		t.Errorf("Jaccard(∅, {1}) = %v", got)
	}
	if got := minhash.Jaccard(nil, nil); got != 1 {
		t.Errorf("Jaccard(∅, ∅) = %v, want 1 (equal sets)", got)
	}
	// §3.1.2: bags {a,a,a,b} and {a,a,b,b,c} have bag similarity 1/3.
	a := []uint64{'a', 'a', 'a', 'b'}
	b := []uint64{'a', 'a', 'b', 'b', 'c'}
	if got := minhash.BagSimilarity(a, b); got != 1.0/3 {
		t.Errorf("BagSimilarity = %v, want 1/3", got)
	}
	if got := minhash.WeightedJaccard(a, b); got != 3.0/6 {
		t.Errorf("WeightedJaccard = %v, want 3/6", got)
	}
}

// Ensure that Jaccard equals a map-based count on random sets.
func TestJaccardMatchesMapOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		universe := 1 + rng.IntN(60)
		var a, b []uint64
		in := map[uint64]int{}
		for x := range uint64(universe) {
			if rng.IntN(2) == 0 {
				a = append(a, x*0x9e3779b97f4a7c15)
				in[x]++
			}
			if rng.IntN(2) == 0 {
				b = append(b, x*0x9e3779b97f4a7c15)
				in[x]++
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		inter, union := 0, len(in)
		for _, c := range in {
			if c == 2 {
				inter++
			}
		}
		want := 1.0
		if union > 0 {
			want = float64(inter) / float64(union)
		}
		if got := minhash.Jaccard(a, b); got != want {
			t.Fatalf("Jaccard = %v, want %d/%d", got, inter, union)
		}
	}
}

// Ensure that Intersection, Jaccard and JaccardAtLeast agree with a
// map-based count on sets large enough for the merge's 64-step blocks, at
// every overlap, and that JaccardAtLeast says true exactly when the ratio
// reaches t.
func TestJaccardAtLeastMatchesMapOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 3000 {
		universe := 1 + rng.IntN(3000)
		pa, pb := rng.Float64(), rng.Float64()
		if trial%3 == 0 {
			pa, pb = 0.9, 0.9 // mostly shared: pairs near the threshold
		}
		var a, b []uint64
		in := map[uint64]int{}
		for x := range uint64(universe) {
			v := x * 0x9e3779b97f4a7c15
			if rng.Float64() < pa {
				a = append(a, v)
				in[v]++
			}
			if rng.Float64() < pb {
				b = append(b, v)
				in[v]++
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		inter := 0
		for _, c := range in {
			if c == 2 {
				inter++
			}
		}
		if got := minhash.Intersection(a, b); got != inter {
			t.Fatalf("Intersection = %d, want %d", got, inter)
		}
		want := 1.0
		if len(in) > 0 {
			want = float64(inter) / float64(len(in))
		}
		for _, th := range []float64{want, want - 1e-9, want + 1e-9, rng.Float64(), 0.5, 0.8, 1} {
			if th <= 0 || th > 1 {
				continue
			}
			j, ok := minhash.JaccardAtLeast(a, b, th)
			if ok != (want >= th) || (ok && j != want) {
				t.Fatalf("JaccardAtLeast(t=%v) = %v, %v; exact %v (%d/%d)", th, j, ok, want, inter, len(in))
			}
		}
	}
}

// BenchmarkJaccard compares the threshold-bound merge with the full one on
// a candidate pair of ~1,150-element sets (about a 1.2 KB document) that
// falls short of t = 0.8, and one that reaches it.
func BenchmarkJaccard(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(share float64) ([]uint64, []uint64) {
		var x, y []uint64
		for range 1150 {
			v := rng.Uint64()
			x = append(x, v)
			if rng.Float64() < share {
				y = append(y, v)
			} else {
				y = append(y, rng.Uint64())
			}
		}
		slices.Sort(x)
		slices.Sort(y)
		return x, y
	}
	for _, c := range []struct {
		name  string
		share float64
	}{{"J=0.33", 0.5}, {"J=0.90", 0.95}} {
		x, y := mk(c.share)
		b.Run(c.name+"/full", func(b *testing.B) {
			for b.Loop() {
				minhash.Jaccard(x, y)
			}
		})
		b.Run(c.name+"/at-least-0.8", func(b *testing.B) {
			for b.Loop() {
				minhash.JaccardAtLeast(x, y, 0.8)
			}
		})
	}
}
