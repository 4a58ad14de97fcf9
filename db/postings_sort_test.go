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
// duplicates) and removals of older documents among them. Buckets are
// below 2^32, as codec.BucketOf makes them, unless wide.
func randomPostingOps(rng *rand.Rand, n int, wide bool) postingOps {
	var ops postingOps
	for d := range n {
		for band := range 16 {
			bucket := uint64(rng.Uint32())
			if wide {
				bucket = rng.Uint64()
			}
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

// Ensure that postingOps.sorted orders as one stable sort by band,
// bucket and document does: by radix (buckets below 2^32, as stored,
// some of them sharing their low bytes, or all their high ones), and by
// comparison (wider ones).
func TestPostingOpsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, wide := range []bool{false, true} {
		for _, n := range []int{0, 1, 2, 3, 50, 1000} {
			for _, mask := range []uint64{^uint64(0), 0xffff_ff00, 0xff} {
				ops := randomPostingOps(rng, n, wide)
				for i := range ops {
					ops[i].key.bucket &= mask | 0xffff_ffff_0000_0000
				}
				want := bySortFunc(ops)
				got := slices.Clone(ops).sorted(16)
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d, wide %v, mask %x: sorted differs from one sort by band, bucket and document", n, wide, mask)
				}
			}
		}
	}
}

// BenchmarkPostingOpsSorted sorts a batch of 1,000 new documents'
// operands (16 bands) by radix (postingOps.sorted) and, as the
// baselines, by band and then a comparison sort of each band
// (sortByBandComparison: postingOps.sorted until stop 38), and by one
// sort of the whole with a three-field comparison.
func BenchmarkPostingOpsSorted(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var ops postingOps
	for d := range 1000 {
		for band := range 16 {
			ops = append(ops, postingOp{postingKey{band, uint64(rng.Uint32())}, codec.Posting{Doc: uint64(d)}})
		}
	}
	b.Run("by-band", func(b *testing.B) {
		work := make(postingOps, len(ops))
		for b.Loop() {
			copy(work, ops)
			work.sorted(16)
		}
	})
	b.Run("by-band-comparison", func(b *testing.B) {
		work := make(postingOps, len(ops))
		for b.Loop() {
			copy(work, ops)
			sortByBandComparison(work, 16)
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

// sortByBandComparison is how postingOps.sorted sorted until stop 38, the
// baseline of BenchmarkPostingOpsSorted: placed by band (a counting
// sort), then each band sorted by bucket and document by comparison.
func sortByBandComparison(ops postingOps, bands int) postingOps {
	start := make([]int, bands+1)
	for i := range ops {
		start[ops[i].key.band+1]++
	}
	for b := 1; b <= bands; b++ {
		start[b] += start[b-1]
	}
	out := make(postingOps, len(ops))
	next := slices.Clone(start[:bands])
	for i := range ops {
		b := ops[i].key.band
		out[next[b]] = ops[i]
		next[b]++
	}
	for b := range bands {
		slices.SortFunc(out[start[b]:start[b+1]], func(x, y postingOp) int {
			return cmp.Or(cmp.Compare(x.key.bucket, y.key.bucket), cmp.Compare(x.p.Doc, y.p.Doc))
		})
	}
	return out
}
