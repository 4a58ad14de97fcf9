package db

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
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
// all from one consistent view.
func (db *DB) Query(ctx context.Context, text string, qo *QueryOptions) (*QueryResult, error) {
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
	it, err := db.queryIter()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	return db.query(ctx, it, db.verifySet(set), sig, 0, q)
}

// QueryID is Query with the stored document id as the query. The document
// itself is never among the matches.
func (db *DB) QueryID(ctx context.Context, id string, qo *QueryOptions) (*QueryResult, error) {
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
	it, err := db.queryIter()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var rec docData
	n, err := db.lookup(it, id, &rec)
	if err != nil {
		return nil, err
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	return db.query(ctx, it, rec.Set, rec.Signature, n, q)
}

// queryIter returns the iterator a query reads everything through. A Pebble
// iterator is a consistent point-in-time view by itself, so a query needs
// no snapshot. NB: one iterator serves the whole query (forward seeks
// through the sorted posting keys, then the sorted candidates' doc keys);
// measured against a point read per key (BenchmarkQuery), it cut the
// median query by a quarter, as each Get builds and tears down an iterator
// stack over every level.
func (db *DB) queryIter() (*pebble.Iterator, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.PostingPrefixEnd})
	return it, classify(err)
}

// seekExact positions it at key and returns its value (valid until the
// iterator moves); ok is false if key is absent.
func seekExact(it *pebble.Iterator, key []byte) (v []byte, ok bool, err error) {
	if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
		return nil, false, classify(it.Error())
	}
	v, err = it.ValueAndErr()
	return v, err == nil, classify(err)
}

// query finds, reads and verifies the candidates of (set, sig) through it,
// leaving out doc number self (0: none). set is in the form this index
// verifies (verifySet).
func (db *DB) query(ctx context.Context, it *pebble.Iterator, set []uint64, sig []uint32, self uint64, q QueryOptions) (*QueryResult, error) {
	q.EstimateOnly = q.EstimateOnly || db.estimateOnly()
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	keys, err := db.bucketKeys(nil, sig)
	if err != nil {
		return nil, classify(err)
	}
	// Every posting of every band goes into hits; sorted, a run of one doc
	// number is a candidate and its length the bands it shares.
	var hits []uint64
	var ps []codec.Posting
	var kbuf []byte
	for band, k := range keys { // keys ascend with the band
		v, ok, err := seekExact(it, codec.AppendPostingKey(kbuf[:0], band, k))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if ps, err = codec.DecodePostings(v, ps[:0]); err != nil {
			return nil, classify(fmt.Errorf("posting list of band %d: %w", band, err))
		}
		for _, p := range ps {
			if !p.Remove && p.Doc != self {
				hits = append(hits, p.Doc)
			}
		}
	}
	slices.Sort(hits) // NB: doc-number order reads the records in key order
	type cand struct {
		doc   uint64
		bands int
	}
	var cands []cand
	for i := 0; i < len(hits); {
		j := i + 1
		for j < len(hits) && hits[j] == hits[i] {
			j++
		}
		cands = append(cands, cand{hits[i], j - i})
		i = j
	}
	res := &QueryResult{Threshold: q.Threshold, ExpectedRecall: db.bands.Probability(q.Threshold), Candidates: len(cands), EstimateOnly: q.EstimateOnly}
	var other []uint64
	var otherSig []uint32
	var probe *probeSet // the query's set, built at the first text candidate
	for i, c := range cands {
		if i%256 == 0 {
			// NB: a query that reaches a hot bucket verifies thousands of
			// candidates: it stops when its context ends.
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		n := c.doc
		v, ok, err := seekExact(it, codec.AppendDocKey(kbuf[:0], n))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: a posting names doc %d, which has no record", ErrCorrupt, n)
		}
		view, err := codec.ParseDocView(v)
		if err != nil {
			return nil, classify(fmt.Errorf("doc %d: %w", n, err))
		}
		m := Match{Bands: c.bands}
		other = other[:0]
		fromText := view.HasText && !view.HasSet() && !view.HasSignature() // text mode
		if !q.EstimateOnly {
			// Size filter: J ≤ min(|A|, |B|) / max(|A|, |B|), and float
			// division is monotone, so this never drops a pair at or
			// above the threshold.
			small, big := min(len(set), view.SetLen), max(len(set), view.SetLen)
			if float64(small)/float64(big) < q.Threshold {
				continue
			}
		}
		if fromText {
			// NB: the candidate's shingles as the text gives them (with
			// repeats, unsorted), after the size filter: the probe table
			// counts the distinct ones it shares with the query, and a
			// signature over them is the signature of the set.
			other = h.Shingler().AppendElements(other, unsafe.String(unsafe.SliceData(view.Text), len(view.Text)))
		}
		if !q.EstimateOnly {
			var ok bool
			if fromText {
				if probe == nil {
					probe = newProbeSet(set)
				}
				m.Jaccard, ok = probe.jaccardAtLeast(other, view.SetLen, q.Threshold)
			} else {
				if other, err = db.viewSet(h, n, &view, other); err != nil {
					return nil, classify(fmt.Errorf("doc %d: %w", n, err))
				}
				m.Jaccard, ok = minhash.JaccardAtLeast(set, other, q.Threshold)
			}
			if !ok {
				continue
			}
		}
		if view.HasSignature() {
			otherSig = view.AppendSignature(otherSig[:0])
		} else {
			// Text mode: the signature is re-derived, for matches only
			// (and every candidate of an estimate-only query).
			otherSig = h.Sketcher().Sketch(otherSig[:0], other)
		}
		if m.Estimate = minhash.Estimate(sig, otherSig); q.EstimateOnly && m.Estimate < q.Threshold {
			continue
		}
		m.ID = string(view.ID)
		res.Matches = append(res.Matches, m)
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
