package db

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
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
	// Meta is the document's stored metadata, nil for none: a copy, owned
	// by the caller.
	Meta []byte `json:"meta,omitempty"`
	// Text is the document's stored text when QueryOptions.WithText asks
	// for it ("" otherwise, and for a document stored without text).
	Text string `json:"text,omitempty"`

	num uint64 // the doc number, while the query runs
}

// QueryResult is the answer to a query.
type QueryResult struct {
	// Matches at or above Threshold, best first (ties by id).
	Matches []Match
	// Found is the number of matches before QueryOptions.Limit kept the
	// best: len(Matches) when there is no limit.
	Found int
	// Threshold is the threshold applied.
	Threshold float64
	// ExpectedRecall is the probability that a document of similarity
	// exactly Threshold is found (pairs above it are more likely): that
	// it shares a band with the query, the index's S-curve at Threshold;
	// for an estimate-only answer, that its estimate reaches Threshold
	// too (Params.EstimateRecall): about half of it at the index's
	// threshold, 0.63 to 0.86 of it below (defaults, 0.5 to 0.7).
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
	case q.MaxMatches < 0:
		return q, invalid("query MaxMatches %d is negative", q.MaxMatches)
	case q.MaxTextBytes < 0:
		return q, invalid("query MaxTextBytes %d is negative", q.MaxTextBytes)
	}
	if q.MaxTextBytes > 0 {
		q.texts = new(atomic.Int64) // NB: not on every query's path
	}
	return q, nil
}

// textBoundError is the error of a call whose matches' texts pass
// QueryOptions.MaxTextBytes. It matches ErrInvalidOptions. NB: a type
// of its own, so that QueryMany gives it as the call's, not as the query
// whose text passed the sum's bound (QueryError).
type textBoundError struct{ n, bound int64 }

func (e *textBoundError) Error() string {
	return fmt.Sprintf("%v: the answer's texts hold more than %d bytes (%d at least), more than the bound of a call (MaxTextBytes): give a limit, or fewer queries a call, or ask without the texts", ErrInvalidOptions, e.bound, e.n)
}

func (e *textBoundError) Unwrap() error { return ErrInvalidOptions }

// tooManyMatches is the error of a call whose matches pass
// QueryOptions.MaxMatches: n of them at least, of queries queries.
func tooManyMatches(n, bound, queries int) error {
	of := ""
	if queries > 1 {
		of = fmt.Sprintf(" of %d queries", queries)
	}
	return invalid("the answer%s holds more than %d matches (%d at least), more than the bound of a call (MaxMatches): give a limit, or fewer queries a call", of, bound, n)
}

// Query returns the stored documents whose exact Jaccard similarity to
// text reaches the threshold, among those that share at least one band
// with it. It reads only the query's b buckets and the candidates' records,
// all from one consistent view. A text longer than Options.MaxDocBytes is
// ErrDocTooLarge, as it would be to Put (QuerySet's set counts 8 bytes a
// hash, and QueryMany's queries each); a text with no shingles (empty,
// white space, or stop words alone) is ErrEmptyDocument; bad QueryOptions
// are ErrInvalidOptions; a closed handle is ErrClosed.
func (db *DB) Query(ctx context.Context, text string, qo *QueryOptions) (*QueryResult, error) {
	return db.queryOne(ctx, &QueryInput{Text: text}, qo)
}

// QueryID is Query with the stored document id as the query. The document
// itself is never among the matches. An id not stored, or expired, is
// ErrNotFound; an invalid one (CheckID) ErrInvalidID.
func (db *DB) QueryID(ctx context.Context, id string, qo *QueryOptions) (*QueryResult, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidID)
	}
	return db.queryOne(ctx, &QueryInput{ID: id}, qo)
}

// QueryInput is one query of QueryMany: exactly one of Text (Query), Set
// (QuerySet), Signature (QuerySignature) or ID (QueryID).
type QueryInput struct {
	Text      string
	Set       Set
	Signature []uint32
	ID        string
}

// given is how many of in's fields are set (exactly one should be).
func (in *QueryInput) given() int {
	return btoi(in.Text != "") + btoi(!in.Set.IsZero()) + btoi(in.Signature != nil) + btoi(in.ID != "")
}

// check validates in before any I/O.
func (db *DB) checkInput(in *QueryInput) error {
	given := in.given()
	switch {
	case given > 1:
		return fmt.Errorf("%w: a query gives %d of Text, Set, Signature and ID (exactly one)", ErrInvalidDoc, given)
	case in.ID != "":
		return checkID(in.ID)
	case in.Signature != nil:
		return db.checkSignature(in.Signature)
	}
	if n := len(in.Text) + in.Set.bytes(); n > db.opts.MaxDocBytes {
		what := "text"
		if !in.Set.IsZero() {
			what = "set"
		}
		return fmt.Errorf("%w: query %s of %d bytes (at most %d)", ErrDocTooLarge, what, n, db.opts.MaxDocBytes)
	}
	if err := db.checkUTF8(in.Text); err != nil {
		return fmt.Errorf("%w: the query text %s", ErrInvalidDoc, err)
	}
	return nil
}

// queryOne answers one query on a view of its own.
func (db *DB) queryOne(ctx context.Context, in *QueryInput, qo *QueryOptions) (*QueryResult, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	q, err := db.queryOptions(qo)
	if err != nil {
		return nil, err
	}
	// NB: checked first, not only among the candidates: a query with none
	// would answer a cancelled context.
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := db.checkInput(in); err != nil {
		return nil, err
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	sc := db.scratch.Get().(*queryScratch)
	defer db.putScratch(sc)
	v, release, err := db.openView(ctx, db.pdb, &sc.pv)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := db.answer(ctx, v, in, q, sc)
	if err == nil && q.MaxMatches > 0 && len(res.Matches) > q.MaxMatches {
		return nil, tooManyMatches(len(res.Matches), q.MaxMatches, 1)
	}
	return res, err
}

// longQueryText is the length, in bytes, past which a query's text is
// de-duplicated as it is hashed (Shingler.AppendDistinct), not taken with
// its repeats: the hash table costs a short text's query time for nothing
// (probeSet takes repeats), and a long text's table up to 16 MiB, but its
// occurrences cost 8 bytes each (a var for the tests). Measured on a
// repetitive 12 MB text (TestQueryLongText): the query allocated 0.26x the
// bytes.
var longQueryText = 8 << 20

// answer answers the checked query in through v.
func (db *DB) answer(ctx context.Context, v view, in *QueryInput, q QueryOptions, sc *queryScratch) (*QueryResult, error) {
	switch {
	case in.ID != "":
		// NB: the stored document's set and (text mode) signature are
		// derived into the scratch space, which query does not use for
		// anything else.
		rec := docData{Set: sc.elems[:0], sigBuf: sc.sig[:0], anyOrder: true, ctx: ctx}
		n, err := db.lookup(v, in.ID, &rec)
		if rec.Set != nil {
			sc.elems = rec.Set[:0]
		}
		if rec.sigBuf != nil {
			sc.sig = rec.sigBuf[:0]
		}
		if err != nil {
			return nil, err
		}
		return db.query(ctx, v, rec.Set, rec.Signature, rec.SetLen, n, in.ID, q, sc)
	case in.Signature != nil:
		// NB: no set to compare: every answer is an estimate.
		q.EstimateOnly = true
		return db.query(ctx, v, nil, in.Signature, 0, 0, "", q, sc)
	}
	h := db.hashers.Get().(*minhash.Hasher)
	var set []uint64
	var sig []uint32
	var err error
	size := 0       // the set's distinct elements, where known without a pass (0)
	text := in.Text // NB: not in, which the caller may reuse once a cancelled query returned (hashText)
	switch {
	case !in.Set.IsZero():
		if sc.elems, err = in.Set.elements(h.Sketcher(), sc.elems[:0]); err == nil {
			sc.sig = h.Sketcher().Sketch(sc.sig[:0], sc.elems)
			set, sig = sc.elems, sc.sig
		}
	case db.man.Storage == StorageText:
		// NB: text mode verifies through a hash table of the query's
		// shingles (probeSet), which takes them with repeats and in any
		// order, and so does the signature: sorting them, as Document
		// does, was ~5% of a warm query (BenchmarkQuery's profile).
		sc.elems, sc.sig, err = db.hashText(ctx, h, text, sc.elems[:0], sc.sig[:0], func(h *minhash.Hasher, set []uint64, sig []uint32) ([]uint64, []uint32) {
			if len(text) > longQueryText {
				// NB: a long text's occurrences are not kept, only its
				// distinct shingles: a query by 30 MB of text held 240
				// MB of hashes, most of them repeats.
				set = h.Shingler().AppendDistinct(set, text)
			} else {
				set = h.Shingler().AppendElements(set, text)
			}
			return set, h.Sketcher().Sketch(sig, set)
		})
		set, sig = sc.elems, sc.sig
	default:
		set, sig, err = db.hashText(ctx, h, text, nil, nil, func(h *minhash.Hasher, set []uint64, sig []uint32) ([]uint64, []uint32) {
			return h.Document(set, sig, text)
		})
		size = len(set)
	}
	db.hashers.Put(h)
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		if !in.Set.IsZero() {
			return nil, fmt.Errorf("%w: query set", ErrEmptyDocument)
		}
		// NB: it said "document has no shingles: query text", which
		// reads as about a stored document (an inspection review's SH-8).
		return nil, emptyQuery{}
	}
	if db.man.Storage != StorageText {
		set = db.verifySet(set)
	}
	return db.query(ctx, v, set, sig, size, 0, "", q, sc)
}

// queryIter returns the iterator a query reads everything through. A Pebble
// iterator is a consistent point-in-time view by itself, so a query needs
// no snapshot. NB: one iterator serves the whole query (forward seeks
// through the sorted posting keys, then the sorted candidates' doc keys);
// measured against a point read per key (BenchmarkQuery), it cut the
// median query by a quarter, as each Get builds and tears down an iterator
// stack over every level.
func (db *DB) queryIter(r pebble.Reader) (*pebble.Iterator, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.PostingPrefixEnd})
	return it, classify(err)
}

// queryScratch holds a query's buffers, reused across queries.
type queryScratch struct {
	elems    []uint64 // the query's elements
	live     []uint64 // one posting list's live doc numbers
	sig      []uint32 // the query's signature
	keys     []uint64
	hits     []uint64
	cands    []cand
	other    []uint64
	otherSig []uint32
	probe    probeSet
	pv       pebbleView // the query's view, on Pebble
	nums     []uint64   // the candidates' doc numbers (prefetch)
	same     map[setKey]verdict
	groupSig []uint32 // groupFingerprint's scratch
}

// identicalSets is the number of candidates from which a query verifies
// each distinct set once: a candidate whose set has the size and
// fingerprint of one verified before (the same set, as Pairs groups
// them) takes its Jaccard and estimate. NB: a hot bucket of 150,000
// copies of one text cost 1.4 CPU-s a query, each copy shingled again
// (dedup of each document into such an index too; a review's P2); below
// this many candidates the map costs more than it may save.
const identicalSets = 256

// setKey names a candidate's set: its size (distinct elements; 0 is
// unknown, a signature put, and is never a key) and fingerprint.
type setKey struct {
	n  int
	fp uint64
}

// verdict is a verified set's answer.
type verdict struct {
	ok                bool
	jaccard, estimate float64
}

// cand is a candidate: a doc number and the bands it shares with the
// query.
type cand struct {
	doc   uint64
	bands int
}

// putScratch returns sc to the pool, unless a large query grew it: a pool
// that kept the buffers of a 64 MiB document would keep them for good.
func (db *DB) putScratch(sc *queryScratch) {
	const maxKept = 1 << 16 // elements
	if cap(sc.elems) > maxKept || cap(sc.other) > maxKept || cap(sc.hits) > maxKept || len(sc.probe.slots) > 4*maxKept {
		return
	}

	db.scratch.Put(sc)
}

// seekExact positions it at key and returns its value (valid until the
// iterator moves); ok is false if key is absent.
//
// NB: a prefix seek (the whole key is the prefix: Pebble's default
// comparer) lets Pebble consult the tables' bloom filters and stop at the
// key instead of finding the next one: 4 in 10 of a query's buckets are
// absent, and 16 posting reads took 30 µs against 40-58 µs with SeekGE
// (two runs, the benchmark index). Every caller reads exact keys.
func seekExact(it *pebble.Iterator, key []byte) (v []byte, ok bool, err error) {
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		return nil, false, classify(it.Error())
	}
	v, err = it.ValueAndErr()
	return v, err == nil, classify(err)
}

// viewVersion returns the counters as it sees them: the version of its
// view that the cached posting lists are tagged with (see queryCache).
func viewVersion(it *pebble.Iterator) (codec.Counters, error) {
	v, ok, err := seekExact(it, codec.CountersKey)
	if err != nil {
		return codec.Counters{}, err
	}
	if !ok {
		return codec.Counters{}, fmt.Errorf("%w: the counters record is missing", ErrCorrupt)
	}
	c, err := codec.DecodeCounters(v)
	return c, classify(err)
}

// queryHashedHook, when set (tests), runs in a query once its input is
// hashed, before the lists are read.
var queryHashedHook func()

// query finds, reads and verifies the candidates of (set, sig) through v,
// leaving out doc number self (0: none) and any other document of id
// selfID (""): none; on a backend with no snapshot, a version of it being
// replaced). set holds the elements of the
// query's set in the form this index verifies (verifySet), in any order,
// repeats allowed; size is its count of distinct elements where the
// caller knows it (0: unknown), which an estimate-only query's size filter
// takes (a verifying one counts them). sc is the query's scratch space
// (set and sig may be in it).
func (db *DB) query(ctx context.Context, v view, set []uint64, sig []uint32, size int, self uint64, selfID string, q QueryOptions, sc *queryScratch) (*QueryResult, error) {
	if queryHashedHook != nil {
		queryHashedHook()
	}
	// NB: a check after the query's own hashing, which is not
	// interrupted: a query of tens of MB with few candidates ran to its
	// end, a second and more after its context had ended (an embedder's
	// review), as the candidates' loop below checks only where there are
	// candidates.
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	q.EstimateOnly = q.EstimateOnly || db.estimateOnly()
	now := db.now().UnixNano()
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	keys, err := db.bucketKeys(sc.keys[:0], sig)
	sc.keys = keys
	if err != nil {
		return nil, classify(err)
	}
	cache := db.qcache
	var version codec.Counters
	if cache != nil {
		if version, err = v.version(); err != nil {
			return nil, err
		}
	} else if err := v.prefetchPostings(keys); err != nil {
		return nil, err
	}
	// Every posting of every band goes into hits; sorted, a run of one doc
	// number is a candidate and its length the bands it shares.
	hits := sc.hits[:0]
	defer func() { sc.hits = hits }()
	for band, k := range keys { // keys ascend with the band
		pk := postingKey{band, k}
		if cache != nil {
			if docs, ok := cache.getList(pk, version); ok {
				for _, n := range docs {
					if n != self {
						hits = append(hits, n)
					}
				}
				continue
			}
		}
		live, err := v.postings(sc.live[:0], band, k)
		if err != nil {
			return nil, err
		}
		sc.live = live
		for _, n := range live {
			if n != self {
				hits = append(hits, n)
			}
		}
		if cache != nil {
			cache.putList(pk, version, live) // NB: it copies
		}
	}
	slices.Sort(hits) // NB: doc-number order reads the records in key order
	cands := sc.cands[:0]
	defer func() { sc.cands = cands }()
	for i := 0; i < len(hits); {
		j := i + 1
		for j < len(hits) && hits[j] == hits[i] {
			j++
		}
		cands = append(cands, cand{hits[i], j - i})
		i = j
	}
	if cache == nil {
		nums := sc.nums[:0]
		for _, c := range cands {
			nums = append(nums, c.doc)
		}
		sc.nums = nums
		if err := v.prefetchRecords(nums); err != nil {
			return nil, err
		}
	}
	res := &QueryResult{Threshold: q.Threshold, ExpectedRecall: db.bands.Probability(q.Threshold), Candidates: len(cands), EstimateOnly: q.EstimateOnly}
	if q.EstimateOnly {
		res.ExpectedRecall = db.estimateRecall(q.Threshold)
	}
	var probe *probeSet
	if !q.EstimateOnly {
		probe = &sc.probe
		probe.reset(set)
		size = probe.n
		if err := ctxErr(ctx); err != nil { // the probe of a long text takes a while too
			return nil, err
		}
	}
	other, otherSig := sc.other[:0], sc.otherSig[:0]
	defer func() { sc.other, sc.otherSig = other, otherSig }()
	var same map[setKey]verdict
	if len(cands) >= identicalSets {
		if sc.same == nil {
			sc.same = map[setKey]verdict{}
		}
		same = sc.same
		defer func() {
			if len(same) > 4096 {
				// NB: cleared, a map keeps its room, and each later
				// query of identicalSets candidates clears all of it:
				// 122 µs against 28 for 300 candidates once a query had
				// 65,536 (a maintainer's M5).
				sc.same = nil
				return
			}
			clear(same)
		}()
	}
	for i, c := range cands {
		if i%256 == 0 {
			// NB: a query that reaches a hot bucket verifies thousands of
			// candidates: it stops when its context ends.
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		n := c.doc
		var d cachedDoc
		hit := false
		if cache != nil {
			d, hit = cache.getDoc(n)
		}
		// What this candidate derived that the cache lacks.
		var newElems, newSig bool
		var view codec.DocView
		haveView := false
		load := func() error {
			r, ok, err := v.record(n)
			if err != nil {
				return err
			}
			if !ok {
				if v.gone() {
					return errGone
				}
				return corruptRepairable("a posting names doc %d, which has no record", n)
			}
			if view, err = codec.ParseDocView(r); err != nil {
				return classify(fmt.Errorf("doc %d: %w", n, err))
			}
			if compaction.Expired(view.Expires, now) {
				return errGone // expired, not yet swept
			}
			haveView = true
			if !hit {
				// NB: meta is the record's, valid until v reads again:
				// putDoc copies it and the Match clones it before this
				// candidate's turn ends.
				d = cachedDoc{id: string(view.ID), setLen: view.SetLen, meta: view.Meta, expires: view.Expires}
			}
			if d.sig == nil && view.HasSignature() {
				// NB: a stored signature is cached with the entry (it is
				// read anyway), so that a hit never needs the record for it.
				otherSig = view.AppendSignature(otherSig[:0])
				d.sig, newSig = otherSig, true
			}
			return nil
		}
		if hit && compaction.Expired(d.expires, now) {
			res.Candidates--
			continue
		}
		if !hit {
			if err := load(); err == errGone {
				// NB: a document being written or retired (Redis): not
				// there yet, or no more.
				res.Candidates--
				continue
			} else if err != nil {
				return nil, err
			}
		}
		m := Match{Bands: c.bands}
		// An identical set verified before gives its answer (see
		// identicalSets).
		var key setKey
		if same != nil && haveView && d.setLen > 0 {
			key.n = d.setLen
			key.fp, sc.groupSig = groupFingerprint(&view, sc.groupSig)
		}
		if v, ok := same[key]; ok && key.n > 0 {
			if !v.ok {
				continue
			}
			m.Jaccard, m.Estimate = v.jaccard, v.estimate
			m.ID, m.num = d.id, n
			m.Meta = metaOf(d.meta)
			if selfID == "" || d.id != selfID {
				res.Matches = append(res.Matches, m)
			}
			continue
		}
		verify := func() (bool, error) {
			// Size filter: J ≤ min(|A|, |B|) / max(|A|, |B|), and float
			// division is monotone, so this never drops a pair at or
			// above the threshold. NB: estimate-only too (where both sizes
			// are known: 0 is unknown, a signature put in none mode), as
			// Pairs does: a none index's query, explain and dedup reported
			// pairs whose sizes rule them out, and pairs and clusters did
			// not.
			small, big := min(size, d.setLen), max(size, d.setLen)
			if (!q.EstimateOnly || small > 0) && float64(small)/float64(big) < q.Threshold {
				return false, nil
			}
			if d.elems == nil && (!q.EstimateOnly || d.sig == nil) {
				if !haveView {
					if err := load(); err != nil {
						return false, err
					}
				}
				switch {
				case view.HasSet():
					var err error
					if other, err = view.AppendSet(other[:0]); err != nil {
						return false, classify(fmt.Errorf("doc %d: %w", n, err))
					}
				case view.HasText:
					// NB: the candidate's shingles, unsorted, after the
					// size filter: the probe table counts the distinct ones
					// it shares with the query, and a signature over them
					// is the signature of the set. With repeats when they
					// are used once; de-duplicated when the cache keeps
					// them: on texts that repeat their shingles the entry
					// is smaller (twice as many of scancode-licenses' fit)
					// and each hit's pass shorter; and the pass stops as
					// soon as the values left cannot reach the threshold
					// (probeSet.intersect), a bound that is tight only
					// without repeats. Querying each of
					// scancode-licenses' 2,304 texts at t = 0.5 took
					// 0.24x the time (8.4 s against 34.1-34.5 s); a
					// pass with no cache, 1.07x as long de-duplicated.
					text := unsafe.String(unsafe.SliceData(view.Text), len(view.Text))
					if cache != nil {
						other = h.Shingler().AppendDistinct(other[:0], text)
					} else {
						other = h.Shingler().AppendElements(other[:0], text)
					}
				default:
					return false, fmt.Errorf("%w: doc %d holds neither its text nor its set", ErrCorrupt, n)
				}
				d.elems, newElems = other, true
			}
			if !q.EstimateOnly {
				var ok bool
				if m.Jaccard, ok = probe.jaccardAtLeast(d.elems, d.setLen, q.Threshold); !ok {
					return false, nil
				}
			}
			if d.sig == nil {
				// Text mode (a record with a signature gave it to d when
				// it was read, and a cached entry keeps it): the
				// signature is re-derived, for matches only
				// (and every candidate of an estimate-only query).
				otherSig = h.Sketcher().Sketch(otherSig[:0], d.elems)
				d.sig, newSig = otherSig, true
			}
			// NB: no higher than the sizes allow (Q3; 0: unknown).
			if m.Estimate = sizeCapped(minhash.Estimate(sig, d.sig), size, d.setLen); q.EstimateOnly && m.Estimate < q.Threshold {
				return false, nil
			}
			return true, nil
		}
		ok, err := verify()
		if err != nil {
			return nil, err
		}
		if key.n > 0 {
			same[key] = verdict{ok, m.Jaccard, m.Estimate}
		}
		if cache != nil && (!hit || newElems || newSig) {
			// NB: putDoc copies what it keeps; nil parts keep what the
			// entry has.
			put := cachedDoc{id: d.id, setLen: d.setLen, meta: d.meta, expires: d.expires}
			if newElems {
				put.elems = d.elems
			}
			if newSig {
				put.sig = d.sig
			}
			cache.putDoc(n, put, version)
		}
		if !ok || selfID != "" && d.id == selfID {
			continue
		}
		m.ID, m.num = d.id, n
		if hit {
			// NB: a cached id is a view of the cache's payload, which
			// holds the candidate's elements too: the answer keeps a copy.
			m.ID = strings.Clone(d.id)
		}
		// NB: the cached metadata is shared; the caller gets a copy.
		m.Meta = metaOf(d.meta)
		res.Matches = append(res.Matches, m)
	}
	if rv, ok := v.(*redisView); ok && len(res.Matches) > 0 {
		// NB: with no snapshot (Redis) a match answers for its id only
		// if the id names it now: while an id is being replaced both its
		// versions may be candidates, and a write that stopped part way
		// (a writer killed, a write refused at maxmemory) leaves a record
		// and postings that no id names, or names no more, until Repair.
		// Such a record answered queries, and put-if-new took new
		// documents for its duplicates, though Get said the id was not
		// stored (an operator's review of Redis, RD2-1). One pipelined
		// read of the matches' ids, after verification.
		n := len(res.Matches)
		if res.Matches, err = keepNamed(rv, res.Matches, func(m Match) (string, uint64) { return m.ID, m.num }); err != nil {
			return nil, err
		}
		// NB: not candidates either, as a record gone is not (errGone).
		res.Candidates -= n - len(res.Matches)
	}
	slices.SortFunc(res.Matches, func(a, b Match) int {
		if q.EstimateOnly {
			return cmp.Or(cmp.Compare(b.Estimate, a.Estimate), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(cmp.Compare(b.Jaccard, a.Jaccard), cmp.Compare(a.ID, b.ID))
	})
	res.Found = len(res.Matches)
	if q.Limit > 0 && len(res.Matches) > q.Limit {
		// NB: a copy, not a reslice: the matches past the limit (ids
		// and metadata) stayed reachable through it for as long as the
		// result was held. QueryMany holds them all, and a hot bucket's
		// 150,000 matches took 27 MB a query with a limit of 1: a server
		// reached 2.77 GB on 100 ids of a batch (a review's P1).
		res.Matches = slices.Clone(res.Matches[:q.Limit])
	}
	for i := range res.Matches {
		m := &res.Matches[i]
		if q.WithText {
			// NB: the texts of the matches only, after the limit: a record
			// read just now is in the block cache.
			r, ok, err := v.record(m.num)
			if err != nil {
				return nil, err
			}
			if !ok {
				if v.gone() {
					m.num = 0
					continue // retired since it was verified; no text
				}
				return nil, corruptRepairable("a posting names doc %d, which has no record", m.num)
			}
			view, err := codec.ParseDocView(r)
			if err != nil {
				return nil, classify(fmt.Errorf("doc %d: %w", m.num, err))
			}
			if q.MaxTextBytes > 0 {
				if n := q.texts.Add(int64(len(view.Text))); n > q.MaxTextBytes {
					return nil, &textBoundError{n: n, bound: q.MaxTextBytes}
				}
			}
			m.Text = string(view.Text)
		}
		m.num = 0
	}
	return res, nil
}

// estimateRecall is Params.EstimateRecall(t) of the index.
func (db *DB) estimateRecall(t float64) float64 {
	return Params{NumPerm: db.skOpt.NumPerm, Bands: db.bands, Storage: StorageNone}.EstimateRecall(t)
}
