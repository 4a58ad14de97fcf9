package db

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Pair is a verified near-duplicate pair: A was inserted before B.
type Pair struct {
	A, B    string
	Jaccard float64
}

// PairsOptions adjust Pairs and Clusters. A nil *PairsOptions means the
// defaults.
type PairsOptions struct {
	// Threshold is the least Jaccard reported, in (0, 1]. Default: the
	// database's threshold.
	Threshold float64
}

// docSets loads every document's shingle set and id, by doc number, from
// one snapshot.
type docSets struct {
	nums []uint64 // sorted
	ids  []string
	sets [][]uint64
}

func (s *docSets) find(n uint64) (int, bool) { return slices.BinarySearch(s.nums, n) }

func loadSets(r pebble.Reader) (*docSets, error) {
	s := &docSets{}
	var rec codec.DocRecord
	var derr error
	err := scan(r, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		n, err := codec.ParseDocKey(k)
		if err == nil {
			err = codec.DecodeDocRecord(v, &rec)
		}
		if err != nil {
			derr = classify(fmt.Errorf("doc record %x: %w", k, err))
			return
		}
		s.nums = append(s.nums, n)
		s.ids = append(s.ids, rec.ID)
		s.sets = append(s.sets, slices.Clone(rec.Set))
	})
	return s, cmp.Or(derr, err)
}

// Pairs returns every pair of stored documents whose exact Jaccard reaches
// the threshold among those that share a band, each pair once, in no
// particular order. It streams over the posting lists band by band,
// verifying each candidate pair once however many bands it shares, on one
// snapshot.
//
// NB: this version holds every document's shingle set and the set of
// verified candidate pairs in memory; bounded-memory extraction for bulk
// jobs is planned work.
func (db *DB) Pairs(po *PairsOptions) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		if err := db.enter(); err != nil {
			yield(Pair{}, err)
			return
		}
		defer db.mu.RUnlock()
		t := db.man.Threshold
		if po != nil && po.Threshold != 0 {
			t = po.Threshold
		}
		if !(t > 0 && t <= 1) {
			yield(Pair{}, invalid("pairs threshold %v is outside (0, 1]", t))
			return
		}
		snap := db.pdb.NewSnapshot()
		defer snap.Close()
		docs, err := loadSets(snap)
		if err != nil {
			yield(Pair{}, err)
			return
		}
		seen := make(map[[2]int32]struct{})
		var ps []codec.Posting
		var members []int32
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.PostingPrefix, UpperBound: codec.PostingPrefixEnd})
		if err != nil {
			yield(Pair{}, classify(err))
			return
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if ps, err = codec.DecodePostings(it.Value(), ps[:0]); err != nil {
				yield(Pair{}, classify(fmt.Errorf("posting list %x: %w", it.Key(), err)))
				return
			}
			members = members[:0]
			for _, p := range ps {
				if p.Remove {
					continue
				}
				i, found := docs.find(p.Doc)
				if !found {
					yield(Pair{}, fmt.Errorf("%w: posting list %x names doc %d, which has no record", ErrCorrupt, it.Key(), p.Doc))
					return
				}
				members = append(members, int32(i))
			}
			for x := range members {
				for _, b := range members[x+1:] {
					a := members[x]
					key := [2]int32{min(a, b), max(a, b)}
					if _, dup := seen[key]; dup {
						continue
					}
					seen[key] = struct{}{}
					if j := minhash.Jaccard(docs.sets[key[0]], docs.sets[key[1]]); j >= t {
						if !yield(Pair{A: docs.ids[key[0]], B: docs.ids[key[1]], Jaccard: j}, nil) {
							return
						}
					}
				}
			}
		}
		if err := it.Error(); err != nil {
			yield(Pair{}, classify(err))
		}
	}
}

// Cluster is a connected component of the near-duplicate pairs.
type Cluster struct {
	// Representative is the earliest inserted member.
	Representative string
	// IDs are the members in insertion order (Representative first).
	IDs []string
}

// Clusters returns the connected components (of two or more documents) of
// the pairs that Pairs reports, largest first (ties by representative's
// insertion order).
func (db *DB) Clusters(po *PairsOptions) ([]Cluster, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	order := make(map[string]uint64)
	for doc, err := range db.allLocked() {
		if err != nil {
			db.mu.RUnlock()
			return nil, err
		}
		order[doc.ID] = doc.Num
	}
	db.mu.RUnlock()
	parent := make(map[string]string)
	var find func(string) string
	find = func(x string) string {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	for p, err := range db.Pairs(po) {
		if err != nil {
			return nil, err
		}
		ra, rb := find(p.A), find(p.B)
		if ra == rb {
			continue
		}
		if order[ra] > order[rb] {
			ra, rb = rb, ra
		}
		parent[ra], parent[rb] = ra, ra // the earlier root represents
	}
	groups := make(map[string][]string)
	for x := range parent {
		r := find(x)
		groups[r] = append(groups[r], x)
	}
	var out []Cluster
	for r, ids := range groups {
		if len(ids) < 2 {
			continue
		}
		slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(order[a], order[b]) })
		out = append(out, Cluster{Representative: r, IDs: ids})
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(len(b.IDs), len(a.IDs)), cmp.Compare(order[a.Representative], order[b.Representative]))
	})
	return out, nil
}
