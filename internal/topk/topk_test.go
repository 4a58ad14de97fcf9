package topk

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that a Heap keeps the k best values, best first (the oracle: a
// sort of everything offered), scores tied and broken by the order
// offered.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	type v struct{ score, seq int }
	better := func(a, b v) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.seq, b.seq)) }
	for _, n := range []int{0, 1, 5, 100, 1000} {
		for _, k := range []int{-1, 0, 1, 2, 7, 100, 2000} {
			var all []v
			top := New(k, better)
			for i := range n {
				x := v{rng.IntN(20), i}
				all = append(all, x)
				top.Offer(x)
			}
			slices.SortFunc(all, better)
			want := all[:min(max(k, 0), n)]
			if got := top.Sorted(); !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: %v, want %v", n, k, got, want)
			}
			if best := (v{100, -1}); top.Wants(best) != (k > 0) {
				t.Fatalf("n=%d k=%d: Wants(the best value) = %v", n, k, !(k > 0))
			}
		}
	}
}
