package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/internal/topk"
	"github.com/lshdb/lshdb/minhash"
)

// BucketInfo describes one posting list.
type BucketInfo struct {
	Band   int    `json:"band"`
	Bucket uint64 `json:"bucket"`
	// Size is the list's postings: expired documents not yet swept
	// included (a scan of the lists reads no record).
	Size int `json:"size"`
	// Sample holds up to SampleSize ids of live members (an expired
	// document is never returned, swept or not).
	Sample []string `json:"sample,omitempty"`
	// Also names the other bands' lists that hold mostly the same
	// members as this one, largest first: one hot spot (a group of
	// identical documents collides in every band) is one BucketInfo, with
	// its other bands here, rather than one per band. Mostly the same is
	// at least half of the smaller list's members in the larger
	// (estimated from a sketch of each list's members: exact for lists of
	// up to 32). Only the top × bands largest lists are looked at: a list
	// of the hot spot smaller than those is left out, and a larger top
	// may name more.
	Also []BandBucket `json:"also,omitempty"`
}

// BandBucket names one posting list: a band and its bucket.
type BandBucket struct {
	Band   int    `json:"band"`
	Bucket uint64 `json:"bucket"`
}

// SampleSize is the number of member ids a BucketInfo carries.
const SampleSize = 5

// BucketStats summarizes the posting lists.
type BucketStats struct {
	// Lists is the number of posting lists per band (empty ones
	// included); of a call for one band, the others are 0 (not read).
	Lists []int `json:"lists"`
	// Histogram counts lists by size: Histogram[i] is the number of lists
	// with size in [2^(i-1), 2^i), Histogram[0] the empty ones.
	Histogram []int `json:"histogram"`
	// Hottest are the largest lists, largest first, one for each group
	// of lists of mostly the same members (BucketInfo.Also): of one
	// size, the groups of more lists first, then in an order that
	// follows their members' doc numbers.
	Hottest []BucketInfo `json:"hottest"`
}

// Buckets scans the posting lists of one band (band < 0: all bands) and
// returns their count, a size histogram and the top hottest lists with a
// sample of their members, from one snapshot. A hot spot that spans
// bands (a group of identical documents collides in every band) is one
// of the top, which names its other bands' lists (BucketInfo.Also).
func (db *DB) Buckets(ctx context.Context, band, top int) (*BucketStats, error) {
	return db.buckets(ctx, band, top, 1, 0)
}

// buckets is Buckets, reporting its progress as step of steps, or as a
// call of its own, in three steps, when steps is 0.
func (db *DB) buckets(ctx context.Context, band, top, step, steps int) (*BucketStats, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if band >= db.bands.B {
		return nil, invalid("band %d: the index has bands 0 to %d", band, db.bands.B-1)
	}
	if top < 0 {
		return nil, invalid("top %d is negative", top)
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if db.rkv != nil {
		return db.redisBuckets(ctx, band, top, step, steps)
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	return db.bucketsIn(ctx, snap, band, top, step, steps)
}

// statsHook, when set (tests), runs in Stats after the posting lists are
// read.
var statsHook func()

// bucketsIn is buckets on Pebble, reading snap. The caller has entered
// the handle.
func (db *DB) bucketsIn(ctx context.Context, snap *pebble.Snapshot, band, top, step, steps int) (*BucketStats, error) {
	lo, hi := codec.PostingPrefix, codec.PostingPrefixEnd
	if band >= 0 {
		lo, hi = codec.AppendBandPrefix(nil, band), codec.AppendBandPrefix(nil, band+1)
	}
	st := &BucketStats{Lists: make([]int, db.bands.B)}
	nb := int64(db.bands.B)
	if band >= 0 {
		nb = 1
	}
	// NB: a heap of top, not a sorted slice re-sorted for each list it
	// took: buckets --top 50000 took 28.6 s on 489,000 lists (and a
	// billion ran for ever), and each list kept all its doc numbers. It
	// keeps top × bands lists, which hold top hot spots however many
	// bands each spans (lists of one band share no member).
	hottest := topk.New(max(top*int(nb), 1), hotter)
	seq := 0
	var ps []codec.Posting
	var derr error
	prog := progressOf(ctx)
	// NB: the call's own (Buckets) reports the ranking of the hottest
	// lists and the reading of their samples as steps of their own
	// (sub, below); within Stats, their work is its first step's.
	own := steps == 0
	if own {
		steps = 3
		defer prog.end()
	}
	prog.phase(step, steps, bandsPhase("reading posting lists"), nb*bandParts)
	bands := newBandCounter(prog, max(band, 0))
	err := scan(ctx, snap, lo, hi, func(k, v []byte) {
		bands.key(k)
		b, bucket, err := codec.ParsePostingKey(k)
		if err == nil && b >= len(st.Lists) {
			// NB: a list of a band the index has not (a key set by hand,
			// a damaged manifest) panicked stats and buckets; check
			// reports it, and check --repair removes it.
			err = corruptRepairable("posting list %d/%08x is of band %d, and the index has bands 0 to %d", b, bucket, b, len(st.Lists)-1)
		}
		if err == nil {
			ps, err = codec.DecodePostings(v, ps[:0])
		}
		if err != nil {
			derr = classify(err)
			return
		}
		st.Lists[b]++
		h := bits.Len(uint(len(ps)))
		for len(st.Histogram) <= h {
			st.Histogram = append(st.Histogram, 0)
		}
		st.Histogram[h]++
		seq++
		// NB: an emptied list (before a purge) was listed hot, at size 0.
		// Whether the heap wants the list is asked first as if its
		// sketch were the least (first 0), before making the sketch.
		if h := (hotList{band: b, bucket: bucket, size: len(ps), seq: seq}); top > 0 && len(ps) > 0 && hottest.Wants(h) {
			sk := newMemberSketch()
			for _, p := range ps {
				if !p.Remove {
					sk.add(p.Doc)
				}
			}
			h.sketch = sk.sorted()
			if hottest.Wants(h) {
				h.docs = make([]uint64, 0, min(len(ps), sampleReads))
				for _, p := range ps[:min(len(ps), sampleReads)] {
					h.docs = append(h.docs, p.Doc)
				}
				hottest.Offer(h)
			}
		}
	})
	if err = cmp.Or(derr, err); err != nil {
		return nil, err
	}
	// NB: the lists ranked, grouped and their samples read took 38 s of
	// buckets --top 200000 on 126,236 documents, silent, and a Ctrl-C did
	// not stop them (an inspection review's SH-1 and SH-2): steps of their
	// own in Buckets, which a cancel ends.
	sub := subProgress(prog, own)
	sub.phase(2, steps, "ranking the hottest lists", int64(hottest.Len()))
	groups, err := groupHot(ctx, hottest.Sorted(), top, sub)
	if err != nil {
		return nil, err
	}
	sub.phase(3, steps, "reading the hottest lists' samples", int64(len(groups)))
	now := db.now().UnixNano()
	for i, g := range groups {
		if i%256 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		sub.add(1)
		h := g[0]
		info := BucketInfo{Band: h.band, Bucket: h.bucket, Size: h.size}
		for _, o := range g[1:] {
			info.Also = append(info.Also, BandBucket{Band: o.band, Bucket: o.bucket})
		}
		for _, n := range h.docs {
			if len(info.Sample) == SampleSize {
				break
			}
			id, expires, err := idOf(snap, n)
			if err != nil {
				return nil, err
			}
			if !compaction.Expired(expires, now) {
				info.Sample = append(info.Sample, id)
			}
		}
		st.Hottest = append(st.Hottest, info)
	}
	return st, nil
}

// subProgress is the reporter of Buckets' second and third steps: prog
// when the call is Buckets' own, else nil (within Stats, that work is
// part of its first step, and a phase reported there would take a step
// number of its own).
func subProgress(prog *progress, own bool) *progress {
	if own {
		return prog
	}
	return nil
}

// hotList is a posting list that Buckets may list as hot.
type hotList struct {
	band   int
	bucket uint64
	size   int
	seq    int      // the list's place in the scan: ties go to the first
	docs   []uint64 // the first sampled ones
	sketch []uint64 // its members' sketch (memberSketch)
}

// hotter orders posting lists hottest first: by size, then by the least
// hash of their sketches, which puts lists of the same members (a group
// of identical documents, in every band) next to each other, so that a
// cut among lists of one size parts at most one such group; then in key
// order (band, then bucket: seq).
func hotter(a, b hotList) int {
	return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.first(), b.first()), cmp.Compare(a.seq, b.seq))
}

// first is the least hash of l's sketch: 0 before it is made, the
// largest for a list of no live member.
func (l hotList) first() uint64 {
	if l.sketch == nil {
		return 0
	}
	if len(l.sketch) == 0 {
		return math.MaxUint64
	}
	return l.sketch[0]
}

// sketchSize is the number of values a memberSketch keeps.
const sketchSize = 32

// memberSketch keeps the sketchSize least hashes of a list's members (a
// bottom-k sketch), to estimate how many members two lists share.
type memberSketch struct{ h *topk.Heap[uint64] }

func newMemberSketch() memberSketch {
	return memberSketch{topk.New(sketchSize, cmp.Compare[uint64])}
}

func (s memberSketch) add(doc uint64) { s.h.Offer(mix64(doc)) }

// sorted returns the sketch's hashes in increasing order (none: empty,
// not nil); s is spent.
func (s memberSketch) sorted() []uint64 { return s.h.Sorted() }

// mix64 is a bijective mix of a doc number (SplitMix64's finalizer): doc
// numbers are dense, and a sketch needs them spread.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sketchJaccard estimates the Jaccard of the member sets that two sorted
// sketches come from: of the least sketchSize hashes of their union (the
// union's own sketch), the share in both. whole says that both sketches
// hold their whole sets (of at most sketchSize members): the Jaccard is
// then exact, from the whole union.
func sketchJaccard(a, b []uint64, whole bool) float64 {
	limit := sketchSize
	if whole {
		limit = len(a) + len(b)
	}
	both, seen := 0, 0
	for i, j := 0, 0; seen < limit && (i < len(a) || j < len(b)); seen++ {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			i++
		case i == len(a) || b[j] < a[i]:
			j++
		default:
			both++
			i, j = i+1, j+1
		}
	}
	if seen == 0 {
		return 0
	}
	return float64(both) / float64(seen)
}

// sharedHalf reports whether at least half of the members of the smaller
// of two lists are in the larger, estimated from their sketches (exact
// for lists of up to sketchSize): the members in common are
// J(|a|+|b|)/(1+J) of the Jaccard J of the two.
//
// NB: half of the smaller, not a Jaccard of 1/2: the hot lists of the
// "word of the LORD came" verses in three bands held 23 and 15 members,
// 16 and 12 of them in the first's 40, at Jaccard 0.33 and 0.27, and were
// three rows of buckets --top 10 (a newcomer's review, NF-3).
func sharedHalf(a, b hotList) bool {
	whole := max(a.size, b.size) <= sketchSize
	j := sketchJaccard(a.sketch, b.sketch, whole)
	na, nb := float64(a.size), float64(b.size)
	if whole {
		na, nb = float64(len(a.sketch)), float64(len(b.sketch)) // the live members
	}
	if min(na, nb) == 0 {
		return false
	}
	return j*(na+nb)/(1+j) >= min(na, nb)/2
}

// groupHot groups lists, hottest first, into hot spots and returns the
// top ones: a list joins the first group whose first list shares at
// least half of the smaller one's members with it (sharedHalf), and
// whose bands do not hold it already; another starts a group. Groups
// come largest first, then those of more lists; each is its lists,
// hottest first.
func groupHot(ctx context.Context, lists []hotList, top int, prog *progress) ([][]hotList, error) {
	var groups [][]hotList
	byHash := map[uint64][]int{} // a hash of a group's first sketch → the group
	for li, l := range lists {
		if li%1024 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
			prog.add(int64(min(1024, len(lists)-li)))
		}
		fits := func(g int) bool {
			return !slices.ContainsFunc(groups[g], func(o hotList) bool { return o.band == l.band }) && sharedHalf(groups[g][0], l)
		}
		// NB: every group is a candidate while they are few (512 at
		// most); beyond that, the groups that share a hash with the
		// list: lists of like sizes that share half their members share
		// one of their sketches' hashes but with a chance below 1e-9,
		// and for a much smaller list the estimate is rough.
		g := -1
		if len(groups) <= 16*sketchSize {
			for i := range groups {
				if fits(i) {
					g = i
					break
				}
			}
		} else {
			var near []int
			for _, x := range l.sketch {
				near = append(near, byHash[x]...)
			}
			slices.Sort(near)
			near = slices.Compact(near)
			if i := slices.IndexFunc(near, fits); i >= 0 {
				g = near[i]
			}
		}
		if g >= 0 {
			groups[g] = append(groups[g], l)
			continue
		}
		for _, x := range l.sketch {
			byHash[x] = append(byHash[x], len(groups))
		}
		groups = append(groups, []hotList{l})
	}
	// NB: of groups of one size, those of more bands first: they are
	// hotter (a query of one of their members reads them in each).
	slices.SortStableFunc(groups, func(a, b []hotList) int {
		return cmp.Or(cmp.Compare(b[0].size, a[0].size), cmp.Compare(len(b), len(a)))
	})
	return groups[:min(len(groups), top)], nil
}

// sampleReads bounds the records read for a hot list's sample: a list
// of expired documents not yet swept is read no further.
const sampleReads = 8 * SampleSize

// idOf returns the external id and expiry (Unix ns, 0 for none) of doc
// number n.
func idOf(r pebble.Reader, n uint64) (string, int64, error) {
	v, ok, err := getCopy(r, codec.AppendDocKey(nil, n))
	if err != nil {
		return "", 0, err
	}
	if !ok {
		return "", 0, corruptRepairable("a posting names doc %d, which has no record", n)
	}
	view, err := codec.ParseDocView(v)
	if err != nil {
		return "", 0, classify(err)
	}
	return string(view.ID), view.Expires, nil
}

// Bucket returns the ids of the members of one posting list, in insertion
// order (an absent list has none). bucket is the index's own, as
// Buckets, Stats' hot buckets and Explain (BandKeysA, BandKeysB) give it:
// 32 bits since format 2 (a wider value, such as a key of
// bands.AppendKeys, is refused with ErrInvalidOptions).
func (db *DB) Bucket(band int, bucket uint64) ([]string, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if band < 0 || band >= db.bands.B {
		return nil, invalid("band %d: the index has bands 0 to %d", band, db.bands.B-1)
	}
	if bucket >= 1<<32 {
		return nil, invalid("bucket %#x: buckets are 32 bits (at most 0xffffffff)", bucket)
	}
	var r pebble.Reader
	if db.pdb != nil {
		snap := db.pdb.NewSnapshot()
		defer snap.Close()
		r = snap
	}
	v, release, err := db.openView(db.closing, r, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	nums, err := v.postings(nil, band, bucket)
	if err != nil {
		return nil, err
	}
	if err := v.prefetchRecords(nums); err != nil {
		return nil, err
	}
	found := make([]rediskv.IDNum, 0, len(nums))
	now := db.now().UnixNano()
	for _, n := range nums {
		rec, ok, err := v.record(n)
		switch {
		case err != nil:
			return nil, err
		case !ok && v.gone():
			continue
		case !ok:
			return nil, corruptRepairable("a posting names doc %d, which has no record", n)
		}
		dv, err := codec.ParseDocView(rec)
		if err != nil {
			return nil, classify(err)
		}
		if !compaction.Expired(dv.Expires, now) {
			found = append(found, rediskv.IDNum{ID: string(dv.ID), Num: n})
		}
	}
	if rv, ok := v.(*redisView); ok && len(found) > 0 {
		// NB: with no snapshot (Redis), an id is listed where the
		// version it names now is, as a query answers: of an id being
		// replaced, both versions may be in the bucket (it is listed
		// once), and a version a stopped write left, which no id names,
		// listed its id in a bucket where the id's document is not (a
		// read-through's RT2-4).
		if found, err = keepNamed(rv, found, func(x rediskv.IDNum) (string, uint64) { return x.ID, x.Num }); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = x.ID
	}
	return ids, nil
}

// Explanation says why two stored documents are or are not found as a pair.
type Explanation struct {
	A, B     string
	Jaccard  float64 // exact
	Estimate float64 // from the signatures
	// EstimateOnly says the index keeps no sets (storage none): Jaccard
	// is the estimate.
	EstimateOnly bool
	// Collide[i] reports whether band i's keys are equal.
	Collide []bool
	// Unlisted are the bands whose keys are equal but whose posting list
	// does not name both documents: the lists disagree with the records
	// (damage, or a write cut short: Check reports it, and check --repair
	// mends it), and a query by either id does not find the other through
	// that band.
	Unlisted []int
	// BandKeysA and BandKeysB are the two documents' bucket keys.
	BandKeysA, BandKeysB []uint64
	// Probability is P(candidate) = 1 − (1 − J^r)^b at the exact Jaccard.
	Probability float64
	// Threshold is the index's threshold (or the one AtThreshold was
	// given).
	Threshold float64
	// SetLenA and SetLenB are the documents' set sizes (distinct
	// shingles; 0: unknown, a signature put in none mode).
	SetLenA, SetLenB int
	// SizesRuleOut reports, estimate-only, that the two set sizes rule the
	// pair out whatever its estimate: J ≤ min/max < Threshold. A query and
	// Pairs drop such a pair before its estimate (both sizes known: a
	// signature put in none mode has none).
	SizesRuleOut bool
	// Found reports whether a query by either id reports the other: they
	// share a band whose list names both, and Jaccard ≥ Threshold, and their sizes do not rule it
	// out. A document explained with itself is never found (no query by
	// id or pair reports it).
	Found bool
}

// Explain compares two stored documents band by band.
func (db *DB) Explain(a, b string) (*Explanation, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	// NB: as Get does: an id no document can have is an invalid id (an
	// API request without b), not a missing document.
	if err := cmp.Or(checkID(a), checkID(b)); err != nil {
		db.mu.RUnlock()
		return nil, err
	}
	defer db.mu.RUnlock()
	v, release, err := db.openView(db.closing, db.pdb, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var ra, rb docData
	na, errA := db.lookup(v, a, &ra)
	nb, errB := db.lookup(v, b, &rb)
	if a == b && errors.Is(errA, ErrNotFound) {
		return nil, errA // NB: it said "neither "d1" nor "d1"" (an embedder's review, D4)
	}
	if errA != nil && errB != nil && errors.Is(errA, ErrNotFound) && errors.Is(errB, ErrNotFound) {
		// NB: both missing: said at once, not one per attempt (the shell
		// review's F11).
		// NB: with "(expired)" as one missing id's error says it (an
		// inspection review's Q5).
		return nil, fmt.Errorf("%w: neither %s nor %s", ErrNotFound, missingName(a, errA), missingName(b, errB))
	}
	if err := cmp.Or(errA, errB); err != nil {
		return nil, err
	}
	ka, err := db.bucketKeys(nil, ra.Signature)
	if err != nil {
		return nil, classify(err)
	}
	kb, err := db.bucketKeys(nil, rb.Signature)
	if err != nil {
		return nil, classify(err)
	}
	e := &Explanation{A: a, B: b, Jaccard: minhash.Jaccard(ra.Set, rb.Set), Estimate: minhash.Estimate(ra.Signature, rb.Signature),
		BandKeysA: ka, BandKeysB: kb, Threshold: db.man.Threshold}
	if db.estimateOnly() {
		e.Jaccard, e.EstimateOnly = e.Estimate, true
	}
	for i := range ka {
		e.Collide = append(e.Collide, ka[i] == kb[i])
		if ka[i] != kb[i] || a == b {
			continue
		}
		// NB: the shared bucket's list is read, not taken from the keys:
		// on an index whose lists had lost a posting, explain said
		// "found" and exit 0 where query and bucket failed (an analyst's
		// review of the shell, SH2).
		nums, err := v.postings(nil, i, ka[i])
		if err != nil {
			return nil, err
		}
		if !slices.Contains(nums, na) || !slices.Contains(nums, nb) {
			e.Unlisted = append(e.Unlisted, i)
		}
	}
	e.SetLenA, e.SetLenB = ra.SetLen, rb.SetLen
	// NB: no higher than the sizes allow, as Pairs and queries give it
	// (a statistician's review, Q3).
	e.Estimate = sizeCapped(e.Estimate, e.SetLenA, e.SetLenB)
	if e.EstimateOnly {
		e.Jaccard = e.Estimate
	}
	e.Probability = db.bands.Probability(e.Jaccard)
	return e.AtThreshold(db.man.Threshold), nil
}

// AtThreshold returns the explanation for a query or Pairs run at
// threshold t (QueryOptions.Threshold, PairsOptions.Threshold) rather than
// the index's: Threshold, SizesRuleOut and Found derived for t (a lower
// threshold reads the same bands, and verifies against t). The rest does
// not depend on the threshold.
func (e Explanation) AtThreshold(t float64) *Explanation {
	e.Threshold = t
	small, big := min(e.SetLenA, e.SetLenB), max(e.SetLenA, e.SetLenB)
	e.SizesRuleOut = e.EstimateOnly && small > 0 && float64(small)/float64(big) < t
	listed := false
	for i, c := range e.Collide {
		listed = listed || c && !slices.Contains(e.Unlisted, i)
	}
	e.Found = listed && e.Jaccard >= t && e.A != e.B && !e.SizesRuleOut
	return &e
}

// Stats describes a database.
type Stats struct {
	Params         Params
	Docs           uint64
	ExpectedRecall float64 // P(threshold), the S-curve's
	// Recall is P(threshold) from the S-curve and as measured for short
	// documents with the index's scheme (see MeasureRecall).
	Recall RecallEstimate
	// StoredBytes is the bytes of keys and values by record kind, as
	// written (before Pebble's block compression). On Redis: the memory
	// the keys of each kind take on the masters (MEMORY USAGE: keys,
	// values and Redis's per-key overhead; replicas hold as much again),
	// and DiskBytes and TableBytes are zero.
	StoredBytes map[string]uint64
	// DiskBytes is the space the store's files take on disk (tables,
	// logs, and files that compactions made obsolete but not yet removed).
	DiskBytes uint64
	// TableBytes is the size of the store's tables by the record kind of
	// their first key ("docs", "ids", "postings", "expiry",
	// "manifest+counters"):
	// compressed, as on disk. A table that spans two kinds (compactions
	// cut tables by size, not by kind) counts as its first key's.
	TableBytes map[string]uint64
	// LogBytes is the size of the write-ahead log's files on disk: the
	// live log, which holds the writes not yet flushed into tables (an
	// index written by small batches holds most of its data there until
	// the log fills or the index is opened again) and is allocated ahead
	// for the writes to come, and log files kept for reuse.
	LogBytes uint64
	// RecycledLogBytes is the part of LogBytes that logs kept for reuse
	// take (Info.RecycledLogBytes): the rest is the live log.
	RecycledLogBytes uint64
	Buckets          *BucketStats
	// Expired counts the documents whose TTL has passed and that await
	// the sweep (counted in Docs until then, never returned); Expiring
	// those set to expire later.
	Expired, Expiring int
}

// Stats returns the parameters, counts, stored bytes by record kind, disk
// usage, the posting-list statistics (with the top hottest lists) and the
// expected recall (MeasureRecall). It reads the whole store.
func (db *DB) Stats(ctx context.Context, top int) (*Stats, error) {
	ctx = orBackground(ctx)
	steps := 5 // buckets, recall, sizing docs, ids, postings
	if db.rkv != nil {
		steps = 3 // buckets, recall, sizing every key
	}
	if top < 0 {
		return nil, invalid("top %d is negative", top)
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: one snapshot for every figure on Pebble: the lists, the count
	// of documents and the bytes were read at three times, and a write
	// between them (the shell's sweep of the expired, an attached insert)
	// gave a report at odds with itself: no document, and 16 lists of
	// one (a review).
	var snap *pebble.Snapshot
	var bs *BucketStats
	var err error
	if db.rkv != nil {
		bs, err = db.redisBuckets(ctx, -1, top, 1, steps)
	} else {
		snap = db.pdb.NewSnapshot()
		defer snap.Close()
		bs, err = db.bucketsIn(ctx, snap, -1, top, 1, steps)
	}
	if err != nil {
		return nil, err
	}
	if statsHook != nil {
		statsHook()
	}
	prog := progressOf(ctx)
	defer prog.end()
	prog.phase(2, steps, "measuring the expected recall", 1)
	// NB: the first measurement for a set of parameters takes 0.2 s or
	// more (later ones are remembered): waited for until ctx ends, which
	// Close ends too.
	recall, err := MeasureRecallContext(ctx, db.Params(), 0)
	if err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	st := &Stats{Params: db.Params(), Docs: db.stored(), ExpectedRecall: db.bands.Probability(db.man.Threshold),
		StoredBytes: map[string]uint64{}, Buckets: bs, Recall: recall}
	if db.rkv != nil {
		return db.redisStats(ctx, st)
	}
	cv, ok, err := getCopy(snap, codec.CountersKey)
	if err != nil {
		return nil, classify(err)
	}
	if ok {
		c, err := codec.DecodeCounters(cv)
		if err != nil {
			return nil, classify(err)
		}
		st.Docs = c.Live
	}
	if st.Expired, st.Expiring, err = db.pendingExpiry(snap, db.now().UnixNano(), false); err != nil {
		return nil, err
	}
	step := 2
	for _, k := range []struct {
		name   string
		lo, hi []byte
	}{{"manifest+counters", []byte{codec.PrefixManifest}, []byte{codec.PrefixCounters + 1}},
		{"docs", codec.DocPrefix, codec.DocPrefixEnd}, {"ids", codec.IDPrefix, codec.IDPrefixEnd},
		{"postings", codec.PostingPrefix, codec.PostingPrefixEnd}, {"expiry", codec.ExpiryPrefix, codec.ExpiryPrefixEnd}} {
		var n uint64
		done, bands := counter{p: prog}, newBandCounter(prog, 0)
		tick := func([]byte) { done.inc() }
		switch k.name {
		case "docs", "ids":
			step++
			prog.phase(step, 5, "sizing "+k.name, int64(st.Docs))
		case "postings":
			step++
			prog.phase(step, 5, bandsPhase("sizing posting lists"), int64(db.bands.B)*bandParts)
			tick = bands.key
		}
		if err := scan(ctx, snap, k.lo, k.hi, func(key, v []byte) {
			n += uint64(len(key) + len(v))
			tick(key)
		}); err != nil {
			return nil, err
		}
		done.flush()
		st.StoredBytes[k.name] = n
	}
	// NB: the directory's files, not Pebble's EstimateDiskUsage over the
	// keyspace or its metrics, which both gave a few kilobytes for an
	// index whose zstd-compressed records a load had ingested (30 MB on
	// disk).
	// NB: and the logs' files' sizes, not Pebble's WAL metrics, whose size
	// of the log being written is its size when it was opened (0 for a
	// new one).
	st.DiskBytes, _, st.LogBytes = dirBytesTemp(db.opts.FS, db.dir)
	levels, err := db.pdb.SSTables()
	if err != nil {
		return nil, classify(err)
	}
	st.RecycledLogBytes = min(db.recycledLogBytes(), st.LogBytes)
	st.TableBytes = map[string]uint64{}
	for _, level := range levels {
		for _, t := range level {
			kind := "manifest+counters"
			if k := t.Smallest.UserKey; len(k) > 0 {
				switch k[0] {
				case codec.PrefixDoc:
					kind = "docs"
				case codec.PrefixID:
					kind = "ids"
				case codec.PrefixPosting:
					kind = "postings"
				case codec.PrefixExpiry:
					kind = "expiry"
				}
			}
			st.TableBytes[kind] += t.Size
		}
	}
	return st, nil
}

// PutIfNew stores doc unless a stored document is a near-duplicate of it
// at the index threshold; the check and the insert are atomic with respect
// to other writers. It returns the best such match (and stores nothing),
// or nil when doc was stored. An id already stored is replaced only if no
// other document is a near-duplicate.
func (db *DB) PutIfNew(doc Doc, wo *WriteOptions) (*Match, error) {
	return db.PutIfNewContext(context.Background(), doc, wo)
}

// PutIfNewContext is PutIfNew that gives up when ctx ends before it
// holds the writer lock (behind a Load, which holds it for its whole
// run), or while it hashes a text of 1 MiB or more, as PutBatchContext
// does: it then returns ctx's error and stores nothing. Once it holds the
// lock the check and the insert are made whatever ctx says.
func (db *DB) PutIfNewContext(ctx context.Context, doc Doc, wo *WriteOptions) (*Match, error) {
	wo, expires, err := db.enterWrite(wo)
	if err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	storeText := wo.StoreText || db.man.StoreText
	p, err := prepareCancellable(db, ctx, []Doc{doc}, func(docs []Doc) (prepared, error) {
		return db.prepare(&docs[0], storeText)
	})
	if err == nil {
		err = p.setExpiry(expires)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(ctx); err != nil {
		return nil, err
	}
	m, _, _, sw, err := db.putIfNewLocked(&doc, p, wo, false)
	db.wmu.Unlock()
	return m, cmp.Or(err, sw.wait())
}

// IfNewResult is what PutIfNewBatch did with one document.
type IfNewResult struct {
	// Match is the best near-duplicate the document had, for which it
	// was not stored; nil when it was stored, or refused (Err).
	Match *Match
	// Replaced says the document was stored in place of a stored one
	// with the same id (an id already stored is replaced only if no
	// other document is a near-duplicate, as PutIfNew's is).
	Replaced bool
	// Unchanged, with Replaced, says the document replaced had the same
	// content: the same shingle set (its size and fingerprint) and the
	// same signature where the records hold one. What was a
	// near-duplicate of it is one of the new document.
	Unchanged bool
	// Err is the document's own refusal, for which it stored nothing: an
	// invalid id (ErrInvalidID), a text with no shingles
	// (ErrEmptyDocument), one too large (ErrDocTooLarge), a content the
	// index cannot keep (ErrStorageMode). The other documents go on.
	Err error
}

// PutIfNewBatch is PutIfNew of each document of docs in turn: each is
// stored unless a stored document is a near-duplicate of it, one stored
// by an earlier document of docs included. It is PutIfNew's bulk form
// (lshdb dedup): the documents are prepared on every core, the writer
// lock is taken once, and the documents stored are synced once, at the
// end, where PutIfNew syncs each (so pass hundreds or thousands at a
// time). It returns one result per document, in order.
//
// The call is not atomic, as a sequence of PutIfNew calls is not: a
// crash before it returns may leave any first part of the documents it
// stored in the index (in order: never a later one without an earlier).
// It gives up when ctx ends before it holds the writer lock (or while it
// hashes documents whose texts add up to 1 MiB or more), storing
// nothing, and between two documents once it holds it: it then returns
// the results of the documents it got to (fewer than docs), the ones it
// stored synced, with ctx's error. An error of the index (I/O, a closed
// handle, a full disk) stops it the same way, the documents stored before
// it synced when the index still can; a document's own refusal does not
// (IfNewResult.Err).
func (db *DB) PutIfNewBatch(ctx context.Context, docs []Doc, wo *WriteOptions) ([]IfNewResult, error) {
	wo, expires, err := db.enterWrite(wo)
	if err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if ctx == nil {
		ctx = context.Background()
	}
	storeText := wo.StoreText || db.man.StoreText
	type made struct {
		preps []prepared
		errs  []error
	}
	m, err := prepareCancellable(db, ctx, docs, func(docs []Doc) (made, error) {
		preps, errs, _ := db.prepareEach(docs, storeText, nil)
		return made{preps, errs}, nil
	})
	if err != nil {
		return nil, err
	}
	preps, errs := m.preps, m.errs
	for i := range preps {
		if errs[i] == nil {
			errs[i] = preps[i].setExpiry(expires)
		}
	}
	octx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(octx); err != nil {
		return nil, err
	}
	// NB: each document's write is its own batch, unsynced, so that the
	// next one's check sees it; one sync at the end covers them all
	// (Pebble's log is written in order).
	each := *wo
	each.NoSync = true
	res := make([]IfNewResult, 0, len(docs))
	stored := false
	for i := range docs {
		if errs[i] != nil {
			res = append(res, IfNewResult{Err: errs[i]})
			continue
		}
		if err = ctx.Err(); err != nil {
			break
		}
		var r IfNewResult
		var sw syncWaiter
		r.Match, r.Replaced, r.Unchanged, sw, err = db.putIfNewLocked(&docs[i], preps[i], &each, true)
		if err = cmp.Or(err, sw.wait()); err != nil {
			break
		}
		stored = stored || r.Match == nil
		res = append(res, r)
	}
	db.wmu.Unlock()
	if stored && !wo.NoSync && !db.opts.NoSync {
		if serr := db.syncLog(); serr != nil {
			// NB: the results stand (the documents were written, and
			// read as stored until a crash), but not their durability.
			err = cmp.Or(err, fmt.Errorf("the documents stored were written, but syncing them failed (a crash may lose them): %w", serr))
		}
	}
	return res, err
}

// Sync makes every write this handle has acknowledged durable: the
// writes of a handle opened with Options.NoSync, or made with
// WriteOptions.NoSync, survive a crash once Sync returns nil (one sync of
// Pebble's log: a batch of unsynced writes costs one sync, not one each;
// on Redis, what a synced write waits for). A read-only handle has
// nothing to sync.
func (db *DB) Sync() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return nil
	}
	return db.syncLog()
}

// syncLog makes every write made so far durable: Pebble's log synced, or
// Redis's WAIT/fsync as a synced write's.
func (db *DB) syncLog() error {
	if db.rkv != nil {
		return db.redisSync(nil)
	}
	// NB: an empty log record, committed as every write is (commit):
	// through pebbleWrite, which refuses it once the store stopped and
	// recovers a failed commit, and with the sync waited for apart, which
	// returns a failed log write as an error. Pebble's LogData(nil, Sync)
	// panicked on a full disk (a failed log write is fatal to its Apply),
	// ending the process of a Sync, a PutIfNewBatch or a Backup, and
	// hung for ever once the store had stopped (a maintainer's review,
	// C3-3).
	b := db.pdb.NewBatch()
	_ = b.LogData(nil, nil)
	if err := db.pebbleWrite(func() error { return db.pdb.ApplyNoSyncWait(b, pebble.Sync) }); err != nil {
		b.Close()
		return err
	}
	return syncWaiter{b: b, db: db}.wait()
}

// putIfNewLocked is PutIfNew's check and insert, and whether the
// document replaced one of its id, and, when asked (whether), one of the
// same content (IfNewResult.Unchanged). The caller holds db.mu for
// reading and wmu, and waits on the syncWaiter after releasing wmu.
func (db *DB) putIfNewLocked(doc *Doc, p prepared, wo *WriteOptions, whether bool) (_ *Match, replaced, unchanged bool, _ syncWaiter, _ error) {
	sc := db.scratch.Get().(*queryScratch)
	defer db.putScratch(sc)
	v, release, err := db.openView(db.closing, db.pdb, &sc.pv)
	if err != nil {
		return nil, false, false, syncWaiter{}, err
	}
	self, stored, err := v.docNum(doc.ID)
	if err != nil {
		release()
		return nil, false, false, syncWaiter{}, err
	}
	res, err := db.query(db.closing, v, db.verifySet(p.set), p.sig, len(p.set), self, doc.ID, QueryOptions{Threshold: db.man.Threshold, Limit: 1}, sc)
	// NB: the stored record is read only where the answer is wanted: for
	// a document that will be written in its place (PutIfNew's callers
	// have no use for it, nor has a refused one).
	if err == nil && whether && stored && len(res.Matches) == 0 {
		unchanged, err = sameContent(v, self, p.record)
	}
	release()
	if err != nil {
		return nil, false, false, syncWaiter{}, err
	}
	if len(res.Matches) > 0 {
		// NB: a copy: a pointer into the matches kept them all (those
		// past the limit too, before the query cut them off by copy),
		// and PutIfNewBatch holds one for each document (a review's P1).
		m := res.Matches[0]
		return &m, false, false, syncWaiter{}, nil
	}
	n, sw, err := db.writeLockedCount([]prepared{p}, wo)
	return nil, n > 0, n > 0 && unchanged, sw, err
}

// sameContent reports whether the record of doc n in v (if any) has the
// content of record, a record of the same index (codec.DocView.SameContent).
//
// NB: dedup warned that the documents it had skipped as near-duplicates
// of an id were in no document of the index when a later record stored
// the id again, also with the same text (a docs review's D-2).
func sameContent(v view, n uint64, record []byte) (bool, error) {
	old, ok, err := v.record(n)
	if err != nil || !ok {
		return false, err
	}
	a, err := codec.ParseDocView(old)
	if err != nil {
		return false, err
	}
	b, err := codec.ParseDocView(record)
	if err != nil {
		return false, err
	}
	return a.SameContent(&b), nil
}

// dirBytes returns the disk space (allocatedBytes) of the files in dir and the
// temporary directories of loads and pairs runs in it: Pebble keeps its
// files flat, but a run that was killed leaves its directory, whose files
// take disk space until they are removed.
func dirBytes(fs vfs.FS, dir string) uint64 {
	n, _, _ := dirBytesTemp(fs, dir)
	return n
}

// storeBytes is the size of the store's own files: dirBytes less lshdb's
// temporary directories, which a copy or a compaction leaves out.
func (db *DB) storeBytes() int64 {
	all, temp, _ := dirBytesTemp(db.opts.FS, db.dir)
	return int64(all - temp)
}

// DirBytes is the space the files of the index in dir take on disk, as
// Info.DiskBytes counts it (allocated blocks), read without opening the
// index: what a command reports as the size before it opens the index to
// write (an open replays the write-ahead log into tables).
func DirBytes(dir string) uint64 {
	all, _, _ := dirBytesTemp(vfs.Default, dir)
	return all
}

// dirBytesTemp is dirBytes, the part of it in lshdb's temporary
// directories (a load's, a pairs run's), and the part of it that
// write-ahead logs take.
func dirBytesTemp(fs vfs.FS, dir string) (all, temp, logs uint64) {
	names, _ := fs.List(dir)
	for _, name := range names {
		p := fs.PathJoin(dir, name)
		fi, err := fs.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			// NB: only lshdb's own directories, whose files are flat: a
			// link a user put there could loop.
			if name == loadTmpDir || isPairsRunDir(name) {
				n, _, _ := dirBytesTemp(fs, p)
				all += n
				temp += n
			}
		default:
			n := allocatedBytes(fi)
			all += n
			if isLogFile(name) {
				logs += n
			}
		}
	}
	return all, temp, logs
}
