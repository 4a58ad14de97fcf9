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
	// An upsert of many copies of one text: each document's removal of
	// its old version comes after the additions before it, in lists that
	// all of them share (long runs far from document order).
	for _, n := range []int{20, 3000} {
		ops := upsertPostingOps(n)
		if got, want := slices.Clone(ops).sorted(16), bySortFunc(ops); !slices.Equal(got, want) {
			t.Fatalf("an upsert of %d copies: sorted differs from one sort by band, bucket and document", n)
		}
	}
	// Buckets whose high byte most (not all) share: that byte's pass
	// must run.
	rng2 := rand.New(rand.NewPCG(9, 9))
	ops := randomPostingOps(rng2, 500, false)
	for i := range ops {
		if rng2.IntN(10) < 6 {
			ops[i].key.bucket &= 0x00ff_ffff
		}
	}
	if got, want := slices.Clone(ops).sorted(16), bySortFunc(ops); !slices.Equal(got, want) {
		t.Fatal("buckets whose high byte most share: sorted differs from one sort by band, bucket and document")
	}
}

// upsertPostingOps are the operands of a batch that replaces n stored
// copies of one text (doc numbers 0..n-1) with n new ones (n..2n-1), in
// the order the write appends them: for each document, the removal of
// its old number from its 16 lists, then its new number's addition.
func upsertPostingOps(n int) postingOps {
	var ops postingOps
	for d := range n {
		for band := range 16 {
			ops = append(ops, postingOp{postingKey{band, uint64(band) * 7919}, codec.Posting{Doc: uint64(d), Remove: true}})
		}
		for band := range 16 {
			ops = append(ops, postingOp{postingKey{band, uint64(band) * 7919}, codec.Posting{Doc: uint64(n + d)}})
		}
	}
	return ops
}

// BenchmarkPostingOpsSorted sorts a batch of 1,000 new documents'
// operands (16 bands) by radix (postingOps.sorted) and, as the
// baselines, by band and then a comparison sort of each band
// (byComparison: sorted's fallback, its only way until stop 38), and by
// one sort of the whole with a three-field comparison.
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
	upsert := upsertPostingOps(10_000)
	b.Run("upsert-10000-copies", func(b *testing.B) {
		work := make(postingOps, len(upsert))
		for b.Loop() {
			copy(work, upsert)
			work.sorted(16)
		}
	})
	b.Run("upsert-10000-copies-comparison", func(b *testing.B) {
		work := make(postingOps, len(upsert))
		for b.Loop() {
			copy(work, upsert)
			byComparison(make(postingOps, len(work)), work, bandStarts(work, 16))
		}
	})
	b.Run("by-band-comparison", func(b *testing.B) {
		work := make(postingOps, len(ops))
		for b.Loop() {
			copy(work, ops)
			byComparison(make(postingOps, len(work)), work, bandStarts(work, 16))
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

// bandStarts is where each band's operands begin once placed by band
// (placeByBand), as sorted counts them.
func bandStarts(ops postingOps, bands int) []int {
	start := make([]int, bands+1)
	for i := range ops {
		start[ops[i].key.band+1]++
	}
	for b := 1; b <= bands; b++ {
		start[b] += start[b-1]
	}
	return start
}
