package db

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Match is one query result.
type Match struct {
	ID string `json:"id"`
	// Jaccard is the exact Jaccard similarity of the shingle sets (0 in
	// estimate-only mode).
	Jaccard float64 `json:"jaccard"`
	// Estimate is the signatures' estimate of the Jaccard similarity.
	Estimate float64 `json:"estimate"`
	// Bands is the number of bands the two documents share.
	Bands int `json:"bands"`
}

// QueryResult is the answer to a query.
type QueryResult struct {
	// Matches at or above Threshold, best first (ties by id).
	Matches []Match
	// Threshold is the threshold applied.
	Threshold float64
	// ExpectedRecall is the probability that a document of similarity
	// exactly Threshold shares a band with the query (pairs above it are
	// more likely): the index's S-curve at Threshold.
	ExpectedRecall float64
	// Candidates is the number of documents that shared a band and were
	// verified (or estimated).
	Candidates int
	// EstimateOnly says the matches were not verified.
	EstimateOnly bool
}

func (db *DB) queryOptions(qo *QueryOptions) (QueryOptions, error) {
	var q QueryOptions
	if qo != nil {
		q = *qo
	}
	if q.Threshold == 0 {
		q.Threshold = db.man.Threshold
	}
	switch {
	case math.IsNaN(q.Threshold) || q.Threshold <= 0 || q.Threshold > 1:
		return q, invalid("query threshold %v is outside (0, 1]", q.Threshold)
	case q.Limit < 0:
		return q, invalid("query limit %d is negative", q.Limit)
	}
	return q, nil
}

// Query returns the stored documents whose exact Jaccard similarity to
// text reaches the threshold, among those that share at least one band
// with it. It reads only the query's b buckets and the candidates' records,
// all from one snapshot.
func (db *DB) Query(text string, qo *QueryOptions) (*QueryResult, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	q, err := db.queryOptions(qo)
	if err != nil {
		return nil, err
	}
	if len(text) > db.opts.MaxDocBytes {
		return nil, fmt.Errorf("%w: query text of %d bytes (at most %d)", ErrDocTooLarge, len(text), db.opts.MaxDocBytes)
	}
	h := db.hashers.Get().(*minhash.Hasher)
	set, sig := h.Document(nil, nil, text)
	db.hashers.Put(h)
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: query text", ErrEmptyDocument)
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	return db.query(snap, set, sig, 0, q)
}

// QueryID is Query with the stored document id as the query. The document
// itself is never among the matches.
func (db *DB) QueryID(id string, qo *QueryOptions) (*QueryResult, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	q, err := db.queryOptions(qo)
	if err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	var rec codec.DocRecord
	n, err := lookup(snap, id, &rec)
	if err != nil {
		return nil, err
	}
	return db.query(snap, rec.Set, rec.Signature, n, q)
}

// query finds, reads and verifies the candidates of (set, sig) in snap,
// leaving out doc number self (0: none).
func (db *DB) query(snap *pebble.Snapshot, set []uint64, sig []uint32, self uint64, q QueryOptions) (*QueryResult, error) {
	keys, err := bands.AppendKeys(nil, sig, db.bands)
	if err != nil {
		return nil, classify(err)
	}
	shared := make(map[uint64]int)
	var ps []codec.Posting
	var kbuf []byte
	for band, k := range keys {
		kbuf = codec.AppendPostingKey(kbuf[:0], band, k)
		v, closer, err := snap.Get(kbuf)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, classify(err)
		}
		ps, err = codec.DecodePostings(v, ps[:0])
		closer.Close()
		if err != nil {
			return nil, classify(fmt.Errorf("posting list of band %d: %w", band, err))
		}
		for _, p := range ps {
			if !p.Remove && p.Doc != self {
				shared[p.Doc]++
			}
		}
	}
	cands := make([]uint64, 0, len(shared))
	for n := range shared {
		cands = append(cands, n)
	}
	slices.Sort(cands) // NB: doc-number order reads the records in key order
	res := &QueryResult{Threshold: q.Threshold, ExpectedRecall: db.bands.Probability(q.Threshold), Candidates: len(cands), EstimateOnly: q.EstimateOnly}
	var rec codec.DocRecord
	for _, n := range cands {
		v, closer, err := snap.Get(codec.AppendDocKey(kbuf[:0], n))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, fmt.Errorf("%w: a posting names doc %d, which has no record", ErrCorrupt, n)
		}
		if err != nil {
			return nil, classify(err)
		}
		err = codec.DecodeDocRecord(v, &rec)
		closer.Close()
		if err != nil {
			return nil, classify(fmt.Errorf("doc %d: %w", n, err))
		}
		m := Match{ID: rec.ID, Estimate: minhash.Estimate(sig, rec.Signature), Bands: shared[n]}
		if q.EstimateOnly {
			if m.Estimate >= q.Threshold {
				res.Matches = append(res.Matches, m)
			}
			continue
		}
		if m.Jaccard = minhash.Jaccard(set, rec.Set); m.Jaccard >= q.Threshold {
			res.Matches = append(res.Matches, m)
		}
	}
	slices.SortFunc(res.Matches, func(a, b Match) int {
		if q.EstimateOnly {
			return cmp.Or(cmp.Compare(b.Estimate, a.Estimate), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(cmp.Compare(b.Jaccard, a.Jaccard), cmp.Compare(a.ID, b.ID))
	})
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		res.Matches = res.Matches[:q.Limit]
	}
	return res, nil
}
