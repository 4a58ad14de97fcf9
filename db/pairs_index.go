package db

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
)

// pairsIndex is what Pairs keeps per document: the doc number, id, set
// size and group (about 40 bytes plus the id's), beside the set file's
// offset (8 bytes) and the candidate bit.
type pairsIndex struct {
	nums    []uint64  // doc numbers, ascending
	ids     []string  // external ids
	sizes   []uint32  // shingle set sizes
	rep     []int32   // the group representative (first doc with the same set)
	groups  [][]int32 // members of groups with two or more, by representative
	groupOf map[int32]int
}

func (x *pairsIndex) find(n uint64) (int, bool) {
	// NB: doc numbers are dense until deletes and upserts leave gaps; a
	// bulk-built index finds every document at its first guess.
	if len(x.nums) > 0 && n >= x.nums[0] {
		if i := n - x.nums[0]; i < uint64(len(x.nums)) && x.nums[i] == n {
			return int(i), true
		}
	}
	return slices.BinarySearch(x.nums, n)
}

// members returns the documents a representative stands for.
func (x *pairsIndex) members(rep int32) []int32 {
	if g, ok := x.groupOf[rep]; ok {
		return x.groups[g]
	}
	return []int32{rep}
}

func loadPairsIndex(ctx context.Context, r pebble.Reader) (*pairsIndex, error) {
	x := &pairsIndex{groupOf: map[int32]int{}}
	first := make(map[uint64]int32)
	var derr error
	err := scan(ctx, r, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		n, err := codec.ParseDocKey(k)
		var view codec.DocView
		if err == nil {
			view, err = codec.ParseDocView(v)
		}
		if err != nil {
			derr = classify(fmt.Errorf("doc record %x: %w", k, err))
			return
		}
		i := int32(len(x.nums))
		x.nums = append(x.nums, n)
		x.ids = append(x.ids, string(view.ID))
		x.sizes = append(x.sizes, uint32(view.SetLen))
		fp := view.SetFingerprint()
		r, seen := first[fp]
		if !seen {
			first[fp], r = i, i
		}
		x.rep = append(x.rep, r)
		if seen {
			g, ok := x.groupOf[r]
			if !ok {
				g = len(x.groups)
				x.groupOf[r] = g
				x.groups = append(x.groups, []int32{r})
			}
			x.groups[g] = append(x.groups[g], i)
		}
	})
	return x, cmp.Or(derr, err)
}
