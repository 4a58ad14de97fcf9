package db

import (
	"cmp"
	"context"
	"slices"
)

// Cluster is a connected component of the near-duplicate pairs.
type Cluster struct {
	// Representative is the earliest inserted member.
	Representative string
	// IDs are the members in insertion order (Representative first).
	IDs []string

	first int32 // the representative's position, for the order
}

// Clusters returns the connected components (of two or more documents) of
// the pairs that Pairs reports, largest first (ties by representative's
// insertion order), from one snapshot. A component is transitive: two of
// its members may be less similar than the threshold (a ~ b ~ c).
//
// It runs the same join as Pairs, but a group of identical documents joins
// its cluster as a group, so m copies cost O(m), not m(m−1)/2 pairs.
func (db *DB) Clusters(ctx context.Context, po *PairsOptions) ([]Cluster, error) {
	var x *pairsIndex
	var parent []int32 // union-find over pairsIndex positions, -1: no pair yet
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int32) {
		ra, rb := find(a), find(b)
		if ra == rb {
			return
		}
		if ra > rb { // the earlier inserted (lower position) root represents
			ra, rb = rb, ra
		}
		parent[rb] = ra
	}
	init := func(px *pairsIndex) {
		if x == nil {
			x = px
			parent = make([]int32, len(x.nums))
			for i := range parent {
				parent[i] = int32(i)
			}
		}
	}
	var linked []uint64 // bit i: position i is in some pair
	mark := func(i int32) {
		if linked == nil {
			linked = make([]uint64, (len(x.nums)+63)/64)
		}
		linked[i/64] |= 1 << (i % 64)
	}
	var st PairsStats
	err := db.pairs(ctx, po, &st, func(px *pairsIndex, g []int32) bool {
		init(px)
		for _, m := range g {
			mark(m)
			union(g[0], m)
		}
		return true
	}, func(px *pairsIndex, a, b int32, j float64) bool {
		init(px)
		mark(a)
		mark(b)
		union(a, b) // a and b are representatives: their groups follow them
		return true
	})
	if err != nil {
		return nil, err
	}
	if x == nil {
		return nil, nil
	}
	// A group member's root is its representative's: members joined their
	// representative in onGroup, before any pair.
	byRoot := make(map[int32][]int32)
	for i := range parent {
		if linked[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		r := find(int32(i))
		byRoot[r] = append(byRoot[r], int32(i))
	}
	out := make([]Cluster, 0, len(byRoot))
	for r, ms := range byRoot {
		if len(ms) < 2 {
			continue
		}
		ids := make([]string, len(ms))
		for k, m := range ms { // ascending positions: insertion order
			ids[k] = x.ids[m]
		}
		out = append(out, Cluster{Representative: x.ids[r], IDs: ids, first: r})
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(len(b.IDs), len(a.IDs)), cmp.Compare(a.first, b.first))
	})
	return out, nil
}
