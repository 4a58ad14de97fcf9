package db

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lshdb/lshdb/codec"
)

// randomPostingOps makes n documents' operands in 16 bands, as a write
// appends them (document by document), with some buckets shared (near
// duplicates) and removals of older documents among them.
func randomPostingOps(rng *rand.Rand, n int) postingOps {
	var ops postingOps
	for d := range n {
		for band := range 16 {
			bucket := rng.Uint64()
			if rng.IntN(4) == 0 {
				bucket = uint64(rng.IntN(8)) // shared by many documents
			}
			if rng.IntN(10) == 0 {
				ops = append(ops, postingOp{postingKey{band, bucket}, codec.Posting{Doc: uint64(rng.IntN(n)), Remove: true}})
			}
			ops = append(ops, postingOp{postingKey{band, bucket}, codec.Posting{Doc: uint64(n + d)}})
		}
	}
	return ops
}

// bySortFunc is the oracle: one sort of the whole by band, bucket and
// document.
func bySortFunc(ops postingOps) postingOps {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b postingOp) int {
		return cmp.Or(cmp.Compare(a.key.band, b.key.band), cmp.Compare(a.key.bucket, b.key.bucket), cmp.Compare(a.p.Doc, b.p.Doc))
	})
	return ops
}

func TestPostingOpsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 2, 3, 50, 1000} {
		ops := randomPostingOps(rng, n)
		want := bySortFunc(ops)
		got := slices.Clone(ops).sorted(16)
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: sorted by band differs from one sort by band, bucket and document", n)
		}
	}
}

// BenchmarkPostingOpsSorted sorts a batch of 1,000 new documents'
// operands (16 bands) by band first (postingOps.sorted) and, as the
// baseline, by one sort of the whole with a three-field comparison.
func BenchmarkPostingOpsSorted(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var ops postingOps
	for d := range 1000 {
		for band := range 16 {
			ops = append(ops, postingOp{postingKey{band, rng.Uint64()}, codec.Posting{Doc: uint64(d)}})
		}
	}
	b.Run("by-band", func(b *testing.B) {
		work := make(postingOps, len(ops))
		for b.Loop() {
			copy(work, ops)
			work.sorted(16)
		}
	})
	b.Run("three-field", func(b *testing.B) {
		work := make(postingOps, len(ops))
		for b.Loop() {
			copy(work, ops)
			slices.SortFunc(work, func(a, b postingOp) int {
				return cmp.Or(cmp.Compare(a.key.band, b.key.band), cmp.Compare(a.key.bucket, b.key.bucket), cmp.Compare(a.p.Doc, b.p.Doc))
			})
		}
	})
}
