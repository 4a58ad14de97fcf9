package db

import (
	"context"
	"iter"
	"slices"
)

// A PairGroup stands for pairs of Pairs that share their Jaccard, as
// PairGroups yields them. With B nil, every pair of two of A's documents,
// which have identical shingle sets (Jaccard 1): len(A)·(len(A)−1)/2
// pairs. Otherwise every pair of a document of A and one of B, at
// Jaccard: len(A)·len(B) pairs, where the documents of A (and those of B)
// have identical shingle sets. Each list is in insertion order, and A's
// first document was inserted before B's first; a pair (a, b) of A × B
// may have b inserted before a (Pair's A is the earlier: swap them for
// Pairs' order). The lists are shared by the groups of one run: the
// caller must not modify them.
type PairGroup struct {
	A, B    []string
	Jaccard float64
}

// Pairs returns the number of pairs g stands for.
func (g PairGroup) Pairs() int64 {
	if g.B == nil {
		n := int64(len(g.A))
		return n * (n - 1) / 2
	}
	return int64(len(g.A)) * int64(len(g.B))
}

// PairGroups is Pairs with the pairs of documents that have identical
// shingle sets grouped: expanded, its groups are exactly the pairs Pairs
// yields, each once (PairsStats counts them the same way). Pairs yields
// a group of m copies of one text as m(m−1)/2 pairs, and two such groups
// near each other as the product of their sizes: 100,000 copies of a
// text are 5 billion pairs, where PairGroups yields one group. A
// histogram of the similarities, or the connected components of the
// pairs, then takes a pass over the documents and a step per pair of
// distinct sets (lshdb report). PairsOptions'
// Limit is not taken (ErrInvalidOptions): Pairs keeps the best pairs.
//
// On Redis, identical sets are not grouped: each pair is a group of its
// own, A and B one id each.
func (db *DB) PairGroups(ctx context.Context, po *PairsOptions) iter.Seq2[PairGroup, error] {
	return func(consumer func(PairGroup, error) bool) {
		yield := untilBreak(consumer)
		if po != nil && po.Limit != 0 {
			yield(PairGroup{}, invalid("pair groups take no limit (%d): Pairs keeps the best pairs", po.Limit))
			return
		}
		var st PairsStats
		if po != nil && po.Stats != nil {
			defer func() { *po.Stats = st }()
		}
		if db.rkv != nil {
			err := db.redisPairs(ctx, po, &st, func(p Pair, err error) bool {
				return yield(PairGroup{A: []string{p.A}, B: []string{p.B}, Jaccard: p.Jaccard}, err)
			})
			if err != nil {
				yield(PairGroup{}, err)
			}
			return
		}
		var cancelled error
		// NB: a group's ids are made once per run: a group of 20,000
		// copies near 300 variants handed out 6.1 million ids, 198 MiB
		// (a maintainer's review).
		groupIDs := map[int32][]string{}
		ids := func(x *pairsIndex, m []int32) []string {
			if len(m) == 1 {
				return []string{x.ids[m[0]]}
			}
			if out, ok := groupIDs[m[0]]; ok {
				return out
			}
			out := make([]string, len(m))
			for i, n := range m {
				out[i] = x.ids[n]
			}
			out = slices.Clip(out)
			groupIDs[m[0]] = out
			return out
		}
		emit := func(g PairGroup) bool {
			if ctx != nil && ctx.Err() != nil {
				cancelled = ctx.Err()
				return false
			}
			st.Reported += g.Pairs()
			return yield(g, nil) && !db.closed.Load()
		}
		prog := progressOf(ctx)
		err := db.pairs(ctx, po, &st, func(x *pairsIndex, g []int32) bool {
			pg := PairGroup{A: ids(x, g), Jaccard: 1}
			st.IdenticalPairs += pg.Pairs()
			prog.add(pg.Pairs()) // NB: the phase counts the group's pairs (pairs)
			return emit(pg)
		}, func(x *pairsIndex, a, b int32, j float64) bool {
			ma, mb := x.members(a), x.members(b)
			if ma[0] > mb[0] {
				ma, mb = mb, ma
			}
			return emit(PairGroup{A: ids(x, ma), B: ids(x, mb), Jaccard: j})
		}, nil)
		if err := db.runEnd(err, cancelled); err != nil {
			yield(PairGroup{}, err)
		}
	}
}
