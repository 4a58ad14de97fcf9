package db

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Storage modes: what each document's record keeps, fixed when an index
// is created (Options.Storage).
const (
	// StorageText keeps each document's text (the index compresses it);
	// verification re-shingles the text of each candidate. The default.
	StorageText = codec.StorageText
	// StorageSets keeps the signature and the shingle set as 32-bit hashes
	// (Rice coded), not the text (unless a write asks for it): exact
	// Jaccard of the 32-bit sets, for users who must not store text.
	StorageSets = codec.StorageSets
	// StorageNone keeps the signature only: the smallest index, and every
	// answer is an estimate from the signatures (QueryResult.EstimateOnly).
	StorageNone = codec.StorageNone
)

// docData is a stored document with what verification compares: Set is
// the verification set (the 64-bit shingle set re-derived from the text
// in text mode, the 32-bit set widened to uint64s in sets mode, nil in
// none mode), and Signature is re-derived from the text when the record
// does not hold it.
type docData struct {
	codec.DocRecord
	Set []uint64
	// sigBuf is where complete derives a signature that the record does
	// not store (a caller's scratch, or nil); complete leaves the derived
	// signature in it, so that the caller keeps the buffer for next time.
	sigBuf []uint32
	// anyOrder: the caller takes Set in any order (a query's probe
	// table), so that complete need not sort a set derived from text when
	// the format's fingerprint does not depend on the order.
	anyOrder bool
	// ctx, where set (a query by id), ends complete's derivation from a
	// long text (see hashText).
	ctx context.Context
}

// sortedSets reports whether writing a record needs the document's set
// sorted: in sets mode (the stored 32-bit set is sorted) and in a format 2
// index (whose fingerprint is of the sorted set). Otherwise a write
// de-duplicates the set without sorting it (Hasher.DocumentUnsorted).
func (db *DB) sortedSets() bool {
	return db.man.Storage == StorageSets || db.man.FormatVersion < 3
}

// estimateOnly reports whether the index can only estimate similarity.
func (db *DB) estimateOnly() bool { return db.man.Storage == StorageNone }

// verifySet returns the form of a 64-bit shingle set that this index's
// verification compares with stored ones: the set itself in text mode,
// its 32-bit set (widened) in sets mode, nil in none mode.
func (db *DB) verifySet(set []uint64) []uint64 {
	switch db.man.Storage {
	case StorageSets:
		return codec.Widen(nil, codec.Set32Of(nil, set))
	case StorageNone:
		return nil
	}
	return set
}

// newRecord returns the record of a document with shingle set set and
// signature sig, in this index's mode. set must be sorted in sets mode and
// in a format 2 index (see sortedSets); in any order otherwise. scratch32 is a buffer for the
// 32-bit set (sets mode); the record aliases set, sig, text and meta.
func (db *DB) newRecord(id string, set []uint64, sig []uint32, text string, storeText bool, meta []byte, scratch32 []uint32) (codec.DocRecord, []uint32) {
	if len(meta) == 0 {
		meta = nil // NB: none (Doc.Meta), as read back
	}
	r := codec.DocRecord{ID: id, Meta: meta}
	switch db.man.Storage {
	case StorageText:
		r.SetLen, r.SetFP = len(set), codec.FingerprintOf(db.man.FormatVersion, set)
		r.HasText, r.Text = true, text
		if db.man.FormatVersion >= codec.SketchFormatVersion {
			// NB: 64 bytes that spare Pairs deriving the set of every
			// document in a candidate pair (see codec.AppendSketch).
			r.Sketch = codec.AppendSketch(make([]byte, 0, codec.SketchBytes(len(sig))), sig)
		}
	case StorageSets:
		scratch32 = codec.Set32Of(scratch32[:0], set)
		r.Set32, r.Signature = scratch32, sig
		r.SetLen, r.SetFP = len(scratch32), codec.FingerprintOf(db.man.FormatVersion, scratch32)
	default:
		r.SetLen, r.SetFP = len(set), codec.FingerprintOf(db.man.FormatVersion, set)
		r.Signature = sig
	}
	if storeText {
		r.HasText, r.Text = true, text
	}
	return r, scratch32
}

// complete fills in d.Set and, when the record does not hold it,
// d.Signature, reusing their storage. A text mode record whose text does
// not give back the stored set size and fingerprint is corrupt.
func (db *DB) complete(h *minhash.Hasher, n uint64, d *docData) error {
	d.Set = d.Set[:0]
	switch {
	case d.Set32 != nil:
		d.Set = codec.Widen(d.Set, d.Set32)
	case d.Signature == nil:
		if !d.HasText {
			return fmt.Errorf("%w: doc %d (%q) holds neither its text nor its signature", ErrCorrupt, n, d.ID)
		}
		unsorted := d.anyOrder && db.man.FormatVersion >= 3
		var err error
		d.Set, d.Signature, err = db.hashText(d.ctx, h, d.Text, d.Set, d.sigBuf[:0], func(h *minhash.Hasher, set []uint64, sig []uint32) ([]uint64, []uint32) {
			if unsorted {
				return h.DocumentUnsorted(set, sig, d.Text)
			}
			return h.Document(set, sig, d.Text)
		})
		if err != nil {
			return err
		}
		d.sigBuf = d.Signature
		if len(d.Set) != d.SetLen {
			return corruptRepairable("doc %d (%q): its text gives %d shingles, the record says %d", n, d.ID, len(d.Set), d.SetLen)
		}
		if codec.FingerprintOf(db.man.FormatVersion, d.Set) != d.SetFP {
			return corruptRepairable("doc %d (%q): its text gives a shingle set whose fingerprint differs from the record's", n, d.ID)
		}
	default:
		d.Set = nil
	}
	return nil
}

// cancellableText is the length of a text from which hashText hashes it
// where a query's context can end. NB: hashing has no check of its own,
// and a query of 8 MiB came back 0.8 s after a deadline of 10 ms (an
// embedder's review, E1; MaxDocBytes lets texts of 64 MiB in); a text of
// 1 MiB takes about 10 ms at the hashing floor, and a goroutine for it
// costs nothing measurable.
const cancellableText = 1 << 20

// hashText runs f, which hashes text into set and sig (a caller's scratch)
// with h, and returns what it returns. A text of cancellableText bytes
// or more, with ctx set, is hashed on a goroutine of its own
// (cancellable), with a hasher and buffers of its own, and hashText
// returns ctx's error as soon as ctx ends: the goroutine runs on to its
// end, its work dropped, and set and sig come back untouched. f must read
// nothing the caller may change once hashText returned (the query's own
// text, not its input).
func (db *DB) hashText(ctx context.Context, h *minhash.Hasher, text string, set []uint64, sig []uint32, f func(h *minhash.Hasher, set []uint64, sig []uint32) ([]uint64, []uint32)) ([]uint64, []uint32, error) {
	if !cancellableHashing(ctx, len(text)) {
		set, sig = f(h, set, sig)
		return set, sig, nil
	}
	type hashed struct {
		set []uint64
		sig []uint32
	}
	r, err := cancellable(db, ctx, len(text), func() (hashed, error) {
		h := db.hashers.Get().(*minhash.Hasher)
		defer db.hashers.Put(h)
		set, sig := f(h, nil, nil)
		return hashed{set, sig}, nil
	})
	if err != nil {
		return set, sig, err
	}
	return r.set, r.sig, nil
}

// cancellableHashing reports whether the hashing of size bytes of text
// goes on a goroutine of its own (cancellable): when it is long and ctx
// can end.
func cancellableHashing(ctx context.Context, size int) bool {
	return ctx != nil && ctx.Done() != nil && size >= cancellableText
}

// cancellable runs work, the hashing of size bytes of text, on a
// goroutine of its own, and returns what it returns, or ctx's error as
// soon as ctx ends: the goroutine then runs on to its end, its work
// dropped.
//
// NB: such goroutines hold their bytes of db.longWork until they end: a
// request that gave up no longer counts in a server's bounds on the
// requests and bytes in flight, and without one, clients that sent long
// texts and went could leave any number of them hashing, each holding
// about 35 times its text (a read-through's R1; a bound of one slot a
// core, whatever the texts' size, let 8 cores hold 16 GB: the second
// read-through's R3). A call waits for room, as long as its context lets
// it; a text larger than the whole budget takes all of it.
func cancellable[T any](db *DB, ctx context.Context, size int, work func() (T, error)) (T, error) {
	var zero T
	n := min(int64(size), db.longBudget)
	if err := db.longWork.Acquire(ctx, n); err != nil {
		return zero, ctxErr(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer db.longWork.Release(n)
		if hashTextHook != nil {
			hashTextHook()
		}
		v, err := work()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctxErr(ctx)
	}
}

// hashTextHook, when set (tests), runs on cancellable's goroutine before
// it hashes.
var hashTextHook func()

// prepareCancellable runs prepare, which hashes docs (a write's
// documents: PutBatchContext, PutIfNewContext, PutIfNewBatch,
// PrepareBatch), and
// returns what it returns. Documents whose texts add up to
// cancellableText bytes or more are prepared on a goroutine of their own
// (cancellable), as hashText hashes a long query: the call returns ctx's
// error as soon as ctx ends, and ErrClosed as soon as Close starts, and
// stores nothing.
// The goroutine prepares a copy of docs (their slices copied: the caller
// may reuse them once the call returned).
//
// NB: a put of 30 MB took 7-9 s to hash on 2 cores and did not look at
// its context: a serve stopping with such puts in flight cancelled them
// at its --shutdown-timeout, yet closed the index only once they ended,
// 25 s after SIGTERM against a documented 20 s, and 36 s against 11 s with
// --shutdown-timeout 1s, where a restarted serve waiting for it gave up
// (a server operator's review, S1).
func prepareCancellable[T any](db *DB, ctx context.Context, docs []Doc, prepare func(docs []Doc) (T, error)) (T, error) {
	n := 0
	for i := range docs {
		n += len(docs[i].Text)
	}
	if n < cancellableText {
		return prepare(docs)
	}
	// NB: under the handle's closing too, so that Close does not wait for
	// the hashing: Put, PutBatch and PrepareBatch, which take no context
	// (or a caller's that never ends), held Close 2.5 s for a batch of
	// 45 MB and did the work for nothing, ending with ErrClosed (or, for
	// PrepareBatch, a batch no write could take; an embedder's review,
	// E3).
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	own := detachDocs(docs)
	return cancellable(db, ctx, n, func() (T, error) { return prepare(own) })
}

// detachDocs returns a copy of docs that shares nothing a caller may
// change: the slices of each document are copied (strings cannot change).
func detachDocs(docs []Doc) []Doc {
	own := slices.Clone(docs)
	for i := range own {
		d := &own[i]
		d.Meta = slices.Clone(d.Meta)
		d.Signature = slices.Clone(d.Signature)
		d.Set.tokens = slices.Clone(d.Set.tokens)
		d.Set.hashes = slices.Clone(d.Set.hashes)
	}
	return own
}

// decodeDoc decodes the record v of doc n into d and completes it.
func (db *DB) decodeDoc(n uint64, v []byte, d *docData) error {
	if err := codec.DecodeDocRecord(v, &d.DocRecord); err != nil {
		return classify(fmt.Errorf("doc %d: %w", n, err))
	}
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	return db.complete(h, n, d)
}

// viewSet appends the verification set of a parsed record to dst: the
// stored set (sets mode, sorted), or the text re-shingled (text mode), in
// no particular order (Shingler.AppendDistinct: no sort).
func (db *DB) viewSet(h *minhash.Hasher, n uint64, view *codec.DocView, dst []uint64) ([]uint64, error) {
	if view.HasSet() {
		return view.AppendSet(dst)
	}
	if !view.HasText {
		return dst, fmt.Errorf("%w: doc %d holds neither its text nor its set", ErrCorrupt, n)
	}
	start := len(dst)
	dst = h.Shingler().AppendDistinct(dst, string(view.Text))
	if len(dst)-start != view.SetLen {
		return dst, corruptRepairable("doc %d: its text gives %d shingles, the record says %d", n, len(dst)-start, view.SetLen)
	}
	return dst, nil
}

// bucketKeys appends the bucket of each band of sig (codec.BucketOf of
// its band key): what posting keys, explain and the bucket commands use.
func (db *DB) bucketKeys(dst []uint64, sig []uint32) ([]uint64, error) {
	start := len(dst)
	dst, err := bands.AppendKeys(dst, sig, db.bands)
	for i := start; i < len(dst); i++ {
		dst[i] = codec.BucketOf(dst[i])
	}
	return dst, err
}

// EstimateFigures says how an estimate-only (StorageNone) index's answers
// fall around its threshold. Such an index reports a candidate pair when
// its signatures' estimate reaches the threshold, so a pair at the
// threshold is reported only about half the time, where P(candidate)
// (Stats.ExpectedRecall, the S-curve) is near 1: these are the figures to
// give a user of such an index beside it.
type EstimateFigures struct {
	// SD is the standard deviation of a pair's estimate at the
	// threshold t: sqrt(t(1-t)/NumPerm).
	SD float64
	// RecallAtThreshold is the chance that a pair of Jaccard t is
	// reported: a candidate (P(candidate)) whose estimate reaches t, the
	// estimate's equal values taken as Binomial(NumPerm, t). A pair SD
	// above t is reported about 5 times in 6, one 2·SD above 39 in 40.
	RecallAtThreshold float64
}

// EstimateFigures returns the figures of an estimate-only index at its
// threshold, and false for an index that verifies (StorageText,
// StorageSets), whose answers are exact.
func (p Params) EstimateFigures() (EstimateFigures, bool) {
	if p.Storage != StorageNone || p.NumPerm <= 0 {
		return EstimateFigures{}, false
	}
	t, n := p.Threshold, p.NumPerm
	return EstimateFigures{SD: math.Sqrt(t * (1 - t) / float64(n)), RecallAtThreshold: p.EstimateRecall(t)}, true
}

// RecallAt is the chance that an answer at threshold t reports a pair of
// Jaccard exactly t (pairs above it are likelier): the S-curve at t,
// P(candidate), when the answer verifies candidates; EstimateRecall(t)
// when it is estimate-only (storage none, or QueryOptions.EstimateOnly),
// which reports a candidate only if its estimate reaches t too.
func (p Params) RecallAt(t float64, estimateOnly bool) float64 {
	if estimateOnly || p.Storage == StorageNone {
		return p.EstimateRecall(t)
	}
	return p.Bands.Probability(t)
}

// EstimateRecall is the chance that an estimate-only answer at threshold
// t reports a pair of Jaccard exactly t: that the two signatures agree in
// every row of some band (a candidate) and in at least t of all their
// values (the estimate reaches t), each value agreeing with probability t
// independently of the others.
//
// NB: computed whole, over the number of agreeing values band by band,
// not as P(candidate) times P(estimate >= t): a candidate has a band's
// rows agreeing, so its estimate is likelier to reach t than another
// pair's. The note below an index's threshold gave P(candidate) alone,
// 1.5 to 1.85 times the share of such pairs a storage-none index
// reported.
func (p Params) EstimateRecall(t float64) float64 {
	n, b, r := p.NumPerm, p.Bands.B, p.Bands.R
	if !(t > 0) || n <= 0 || b <= 0 || r <= 0 || b*r > n { // NB: NaN too
		return 0
	}
	if t >= 1 {
		return 1
	}
	// NB: remembered: the sum takes O(B·NumPerm·R), 140 ms at 8,192
	// values (a read-through, R6), and every answer below the threshold
	// (a server's requests) asks it again.
	key := estimateKey{n, b, r, t}
	estimateRecalls.Lock()
	v, ok := estimateRecalls.m[key]
	estimateRecalls.Unlock()
	if !ok {
		v = estimateRecall(n, b, r, t)
		estimateRecalls.Lock()
		if len(estimateRecalls.m) >= 1024 || estimateRecalls.m == nil {
			estimateRecalls.m = map[estimateKey]float64{} // NB: bounded: thresholds are a client's
		}
		estimateRecalls.m[key] = v
		estimateRecalls.Unlock()
	}
	return v
}

// estimateRecalls are the EstimateRecall figures computed, at most 1,024.
var estimateRecalls struct {
	sync.Mutex
	m map[estimateKey]float64
}

type estimateKey struct {
	n, b, r int
	t       float64
}

// estimateRecall is EstimateRecall's sum, for n values in b bands of r
// rows at Jaccard t in (0, 1).
func estimateRecall(n, b, r int, t float64) float64 {
	// NB: the estimate is the share of equal values, k/n; it reaches t
	// from the least k with k/n >= t.
	k := int(math.Ceil(t * float64(n)))
	if k > 0 && float64(k-1)/float64(n) >= t {
		k--
	}
	band := make([]float64, r+1)
	for j := range band {
		band[j] = binomialPMF(r, j, t)
	}
	// none[s], some[s]: s values agree so far, and no band / some band
	// agrees whole.
	none, some := make([]float64, n+1), make([]float64, n+1)
	none[0] = 1
	for i := range b {
		nn, ns := make([]float64, n+1), make([]float64, n+1)
		for s := 0; s <= i*r; s++ {
			for j, pj := range band {
				if j == r {
					ns[s+j] += (none[s] + some[s]) * pj
				} else {
					nn[s+j] += none[s] * pj
					ns[s+j] += some[s] * pj
				}
			}
		}
		none, some = nn, ns
	}
	// The values past the bands (NumPerm > B·R) count in the estimate.
	rest := n - b*r
	recall := 0.0
	for s := 0; s <= b*r; s++ {
		if some[s] == 0 {
			continue
		}
		for e := 0; e <= rest; e++ {
			if s+e >= k {
				recall += some[s] * binomialPMF(rest, e, t)
			}
		}
	}
	return min(recall, 1)
}

// binomialPMF is P(X = m) for X ~ Binomial(n, q), computed in log space
// (n is a signature's length: 2^n-sized terms would overflow).
func binomialPMF(n, m int, q float64) float64 {
	if q <= 0 || q >= 1 { // every trial fails, or every one succeeds
		if (q <= 0 && m == 0) || (q >= 1 && m == n) {
			return 1
		}
		return 0
	}
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	return math.Exp(lg(float64(n+1)) - lg(float64(m+1)) - lg(float64(n-m+1)) + float64(m)*math.Log(q) + float64(n-m)*math.Log1p(-q))
}
