package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"iter"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/extsort"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/seqs"
	"github.com/lshdb/lshdb/internal/topk"
	"github.com/lshdb/lshdb/minhash"
	"golang.org/x/sync/errgroup"
)

// Pair is a verified near-duplicate pair. From Pairs without
// PairsOptions.Limit, A is the one stored first (the lower doc number: a
// replaced document counts from its replacement); with Limit, and from
// BestPairs, A is the lesser id. Jaccard is exact, but in storage mode
// none (no set or text to verify with) it is the signatures' estimate.
type Pair struct {
	A, B    string
	Jaccard float64
}

// DefaultPairsMemory is the default PairsOptions.Memory: 256 MiB.
const DefaultPairsMemory = 256 << 20

// HotList is the number of distinct shingle sets above which a posting list
// counts as hot in PairsStats.
const HotList = 1000

// PairsOptions adjust Pairs and Clusters. A nil *PairsOptions means the
// defaults.
type PairsOptions struct {
	// Threshold is the least Jaccard reported, in (0, 1]. Default: the
	// database's threshold. NB: below it, fewer pairs share a band:
	// Params().Bands.Probability(Threshold) is the chance that a pair at
	// Threshold is found (its expected recall there; lshdb pairs prints
	// it), against Params().Bands.Probability(Params().Threshold) at the
	// index's own.
	Threshold float64
	// Memory bounds the candidate pairs held in memory; the rest spill to
	// sorted runs on disk. The texts (or sets) that verification reads
	// again are held in memory while they take at most a quarter of it,
	// and read from a temporary file beyond; the sets derived from those
	// texts are kept for the next pair while they take another quarter.
	// Default: DefaultPairsMemory (256 MiB).
	Memory int
	// Stats, if set, is filled in when the iteration ends: by each
	// ranging of the sequence, which may be ranged again (each ranging
	// reads a snapshot of its own), but not by two goroutines at once with
	// the same Stats.
	Stats *PairsStats
	// Mode is how Clusters and ClustersFrom group the pairs. Default:
	// Components. Pairs ignores it.
	Mode ClusterMode
	// Keep chooses each cluster's representative in Clusters and
	// ClustersFrom. Default: KeepFirst. Pairs ignores it.
	Keep KeepPolicy
	// Limit makes Pairs yield only the best Limit pairs, in order
	// (ComparePairs: the highest Jaccard first, ties by ids, each pair
	// with A < B), once the run has found them all, holding Limit pairs
	// in memory. Through db/client the server keeps them (at most
	// 1,000,000: httpapi.MaxPairsLimit), and only they travel. Default:
	// 0, every pair, as they are found. Negative:
	// ErrInvalidOptions. Clusters and ClustersFrom ignore it.
	Limit int
	// OnIdentical, if set, is called once the documents are read, before
	// the first pair, when some have identical shingle sets: how many
	// groups of two or more they make, the pairs those groups stand for
	// (each at Jaccard 1, all of them yielded by Pairs: 100,000 copies of
	// one text are 5 billion) and the largest group's size. A caller may
	// warn before it writes them, or take PairGroups or Clusters, which
	// yield a group once. Pairs, PairGroups and Clusters call it, on the
	// goroutine that ranges over them; not on Redis (whose pairs are not
	// grouped), nor through db/client.
	OnIdentical func(groups int, pairs int64, largest int)
}

// ComparePairs orders pairs best first: by Jaccard, highest first, then
// by A, then by B (byte order). PairsOptions.Limit keeps the first ones
// in this order.
func ComparePairs(x, y Pair) int {
	return cmp.Or(cmp.Compare(y.Jaccard, x.Jaccard), cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
}

// PairsStats says what a Pairs run did, including the work that stays
// quadratic in a bucket's size.
type PairsStats struct {
	Docs int
	// IdenticalGroups are the groups of two or more documents with equal
	// shingle sets; their IdenticalPairs are reported at Jaccard 1 without
	// verification, and each group takes part in candidate generation once.
	IdenticalGroups int
	IdenticalPairs  int64
	// Lists are the posting lists read; HotLists those with more than
	// HotList distinct sets, LargestList the most distinct sets in one.
	Lists, HotLists, LargestList int
	// Candidates are the candidate pairs of distinct sets generated, over
	// all bands (the quadratic part: Σ m(m−1)/2 over lists of m distinct
	// sets, minus pairs the size filter rules out); Verified the distinct
	// ones checked with exact Jaccard, Matched those that reached the
	// threshold; Reported the pairs yielded (matched pairs of groups
	// expand to every member).
	Candidates, Verified, Matched, Reported int64
	// Filtered are the candidate pairs ruled out by their signatures'
	// sketches without reading their sets: they agree in so few places
	// that a pair at the threshold would only with probability below
	// 10^-12 (see Pairs). Pairs whose sketches the records hold are ruled
	// out as they are generated, counted as Candidates are (once per
	// band); the others once each, before verification.
	Filtered int64
	// Spilled reports whether candidate pairs spilled to disk.
	Spilled bool
}

// Pairs returns every pair of stored documents whose exact Jaccard reaches
// the threshold among those that share a band, each pair once, in no
// particular order, from one snapshot. A is the earlier inserted.
//
// Documents with identical shingle sets are grouped first: their pairs are
// reported at Jaccard 1 without verification and each group is one
// candidate, so thousands of copies of one document do not make a bucket
// quadratic to verify (they still make the output quadratic: a group of m
// copies is m(m−1)/2 pairs; [DB.Clusters] reports it as one cluster).
// Candidate pairs are generated band by band, sorted within
// PairsOptions.Memory (spilling to disk), and each distinct pair is
// verified once, on every core. Memory beyond that budget is about 140
// bytes per document (ids, set sizes, groups, set-file offsets, and a
// 64-byte sketch).
//
// A candidate pair is first compared by its signatures' sketches (the
// low 4 bits of each of the first 128 values, codec.AppendSketch): each
// place agrees with probability at least J, so a pair whose sketches agree
// in fewer places than a pair at the threshold would with probability
// 10^-12 is ruled out without reading its sets (PairsStats.Filtered). An
// index of format 5 stores each text's sketch in its record (sets mode:
// the signature), so pairs are ruled out as they are generated, before
// the sort, and only the texts of the documents in a pair that is left
// are read again; a text record of an older format has its sketch
// derived from its text first. On a million generated documents at
// t = 0.8, 15.4 M of the 17.0 M candidates (a pair counted once per band
// it shares) were ruled out, and 162 k distinct pairs verified, with the
// same pairs reported. None mode, which verifies by the signatures, has
// no such step.
//
// Pairs re-derives the set of each text it verifies and checks its size
// against the record's: a text that no longer matches its record ends the
// run with ErrCorrupt (pairs already yielded stay yielded). A document
// none of whose pairs is verified is not read; DB.Check reads them all.
//
// Pairs reads the store first (candidates, and a temporary file of the
// candidates' texts in the database's directory, removed at the end), then
// verifies and yields without holding the database: a loop body may call
// any method, Close included; after Close the iteration ends with
// ErrClosed. Cancelling ctx ends it with ctx's error.
//
// On Redis there is no snapshot: Pairs lists the ids when it starts and
// reads their documents a chunk at a time, beside whatever writers do
// meanwhile. What a run beside a writer promises:
//   - every pair of documents that were stored when it started and
//     unchanged until it ended is reported, once, with its exact Jaccard,
//     as with no writer;
//   - a document is paired by its id: one replaced while the run goes is
//     paired in the version its id names when the run reads it (its
//     current content where the run can still see it, as Scan reads it);
//     its pairs with documents the run had already passed when it was
//     replaced may be missing, or reported with its earlier version. It
//     never fails the run;
//   - a document deleted while the run goes is left out from then on (a
//     pair yielded before the delete stays yielded: no snapshot says it
//     is about to go); one written under a new id is not paired;
//   - every pair names two ids stored at some time during the run, and its
//     Jaccard is exact for the versions it read, each stored at some time
//     during the run (not necessarily at the same instant: there is no
//     snapshot to read both from).
func (db *DB) Pairs(ctx context.Context, po *PairsOptions) iter.Seq2[Pair, error] {
	if po != nil && po.Limit != 0 {
		return db.bestPairs(ctx, po)
	}
	return db.allPairs(ctx, po)
}

// bestPairs is Pairs with a Limit: every pair found into a heap of Limit
// whose root is the worst kept, then the heap yielded best first. An
// error of the run is yielded alone: the best pairs of part of a run are
// not the best pairs.
func (db *DB) bestPairs(ctx context.Context, po *PairsOptions) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		if po.Limit < 0 {
			yield(Pair{}, invalid("pairs limit %d is negative", po.Limit))
			return
		}
		all := *po
		all.Limit = 0
		// NB: the best pairs are yielded from memory once the run is over:
		// Close or a cancel in the loop body ends them there too (as the
		// run without a Limit ends), not after the Limit's last pair.
		stop := func() error {
			if db.closed.Load() {
				return ErrClosed
			}
			if ctx != nil {
				return ctx.Err()
			}
			return nil
		}
		bestPairs(db.somePairs(ctx, &all, po.Limit), po.Limit, stop)(yield)
	}
}

// BestPairs yields the n best of pairs (n > 0; else an error of
// ErrInvalidOptions alone) in ComparePairs order, each with A < B,
// holding n of them at a time; an error of pairs is yielded alone (the
// best of part of a run are not the best). Pairs with a Limit is
// BestPairs of every pair; a client of a server without one keeps the
// best itself.
func BestPairs(pairs iter.Seq2[Pair, error], n int) iter.Seq2[Pair, error] {
	return bestPairs(pairs, n, nil)
}

// bestPairs is BestPairs that also ends, with stop's error, when stop
// (if not nil) returns one before a pair of the best is yielded.
func bestPairs(pairs iter.Seq2[Pair, error], n int, stop func() error) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		if n <= 0 {
			yield(Pair{}, invalid("best pairs: n is %d, and must be positive", n))
			return
		}
		if pairs == nil {
			// NB: it panicked (a review), where ClustersFrom and Load
			// refuse a nil sequence.
			yield(Pair{}, invalid("best pairs of a nil sequence of pairs"))
			return
		}
		best := topk.New(n, ComparePairs)
		for p, err := range seqs.Caller(pairs) {
			if err != nil {
				yield(Pair{}, err)
				return
			}
			if p.B < p.A {
				p.A, p.B = p.B, p.A
			}
			best.Offer(p)
		}
		for _, p := range best.Sorted() {
			if stop != nil {
				if err := stop(); err != nil {
					yield(Pair{}, err)
					return
				}
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

// allPairs is Pairs without a Limit.
func (db *DB) allPairs(ctx context.Context, po *PairsOptions) iter.Seq2[Pair, error] {
	return db.somePairs(ctx, po, 0)
}

// somePairs is allPairs that, with best > 0, yields of the pairs of an
// identical group, and of two groups' members, only those that may be
// among the best best pairs in ComparePairs order (bestPairs keeps them):
// a group's best pairs at its Jaccard are the first in id order.
//
// NB: every pair of a group went through the heap of the best: a limit
// of 5 on an index holding 100,000 copies of one text (5 billion pairs)
// ran 400 s and printed nothing (a review's P3).
func (db *DB) somePairs(ctx context.Context, po *PairsOptions, best int) iter.Seq2[Pair, error] {
	return func(consumer func(Pair, error) bool) {
		yield := untilBreak(consumer)
		var st PairsStats
		if po != nil && po.Stats != nil {
			defer func() { *po.Stats = st }()
		}
		if db.rkv != nil {
			if err := db.redisPairs(ctx, po, &st, yield); err != nil {
				yield(Pair{}, err)
			}
			return
		}
		var cancelled error
		var done <-chan struct{} // nil: never
		if ctx != nil {
			done = ctx.Done()
		}
		emit := func(x *pairsIndex, a, b int32, j float64) bool {
			if a > b {
				a, b = b, a
			}
			// NB: a group of m identical documents yields m(m−1)/2 pairs
			// with no store read in between: check ctx here too, at every
			// pair, so that a loop body that cancels gets no pair after
			// (it got up to 1,023 when this was checked every 1,024).
			select {
			case <-done:
				cancelled = ctx.Err()
				return false
			default:
			}
			st.Reported++
			return yield(Pair{A: x.ids[a], B: x.ids[b], Jaccard: j}, nil)
		}
		// firstOf memoizes firstByID of a group's members (by its
		// representative): a group near many others was sorted again
		// for each of them, and with its ids in no order a limit of 5
		// on 20,000 copies near 1,000 variants took 8.2 s against 1.2
		// (a maintainer's M1).
		firsts := map[int32][]int32{}
		firstOf := func(x *pairsIndex, rep int32, m []int32) []int32 {
			f, ok := firsts[rep]
			if !ok {
				f = firstByID(x, m, best)
				firsts[rep] = f
			}
			return f
		}
		prog := progressOf(ctx)
		err := db.pairs(ctx, po, &st, func(x *pairsIndex, g []int32) bool {
			var unyielded int64 // the pairs counted as found, not yielded
			// NB: the group's pairs are the progress phase's work (see
			// pairs), counted in steps: a group of 100,000 copies is 5e9.
			var counted int64
			all := int64(len(g)) * int64(len(g)-1) / 2 // NB: before a limit cuts g
			defer func() { prog.add(all - counted) }()
			if best > 0 {
				// NB: the first pairs in id order are the first best
				// pairs of the first best+1 ids: (s0, s1), …, (s0, sbest).
				unyielded = all - min(all, int64(best))
				g = firstByID(x, g, best+1)
			}
			emitted := 0
			for i := range g {
				for _, b := range g[i+1:] {
					if best > 0 && emitted == best {
						break
					}
					emitted++
					st.IdenticalPairs++
					if emitted&(1<<14-1) == 0 {
						prog.add(1 << 14)
						counted += 1 << 14
					}
					if !emit(x, g[i], b, 1) || db.closed.Load() {
						return false // NB: a stopped run counts what it yielded
					}
				}
			}
			st.IdenticalPairs += unyielded
			st.Reported += unyielded
			return true
		}, func(x *pairsIndex, a, b int32, j float64) bool {
			ma, mb := x.members(a), x.members(b)
			var unyielded int64 // the pairs counted as found, not yielded
			if all := int64(len(ma)) * int64(len(mb)); best > 0 && all > int64(best) {
				unyielded = all - int64(min(len(ma), best))*int64(min(len(mb), best))
				// NB: a pair whose member of a is not among a's best
				// first in id order comes after the best pairs that
				// those make with the same member of b, whichever of the
				// two ids comes first: it is not among the best.
				if len(ma) > best {
					ma = firstOf(x, a, ma)
				}
				if len(mb) > best {
					mb = firstOf(x, b, mb)
				}
			}
			for _, ma := range ma {
				for _, mb := range mb {
					if !emit(x, ma, mb, j) || db.closed.Load() {
						return false // NB: a stopped run counts what it yielded
					}
				}
			}
			st.Reported += unyielded
			return true
		}, nil)
		if err := db.runEnd(err, cancelled); err != nil {
			yield(Pair{}, err)
		}
	}
}

var errStopped = errors.New("lshdb: iteration stopped")

// untilBreak wraps an iterator's consumer: once the loop body has
// returned false (a break), it is never called again, and errors are
// classified. NB: a consumer that cancelled ctx and then broke out of its
// loop was handed ctx's error, and Go panics ("range function continued
// iteration after function for loop body returned false"), ending an
// embedding program. A run's own files (its spill of texts and
// candidates) fail as the store's do: ErrDiskFull where the disk is full.
func untilBreak[T any](consumer func(T, error) bool) func(T, error) bool {
	stopped := false
	return func(v T, err error) bool {
		if stopped {
			return false
		}
		stopped = !consumer(v, classify(err))
		return !stopped
	}
}

// runEnd is the error a pairs run's consumer is handed once db.pairs has
// returned err: errStopped is Close's ErrClosed, or the ctx error that
// stopped it (cancelled), else a break of the loop (nil).
func (db *DB) runEnd(err, cancelled error) error {
	switch {
	case errors.Is(err, errStopped) && db.closed.Load():
		return ErrClosed
	case errors.Is(err, errStopped) && cancelled != nil:
		return cancelled
	case errors.Is(err, errStopped):
		return nil
	}
	return err
}

// firstByID returns the n documents of g (indexes of x; all of them when
// it holds n or fewer) whose ids come first in byte order, in that order.
func firstByID(x *pairsIndex, g []int32, n int) []int32 {
	s := slices.Clone(g)
	slices.SortFunc(s, func(a, b int32) int { return strings.Compare(x.ids[a], x.ids[b]) })
	return s[:min(n, len(s))]
}

// pairsThreshold returns the threshold po asks for (the index's when po
// or its Threshold is zero), or ErrInvalidOptions outside (0, 1].
func (db *DB) pairsThreshold(po *PairsOptions) (float64, error) {
	t := db.man.Threshold
	if po != nil && po.Threshold != 0 {
		t = po.Threshold
	}
	if !(t > 0 && t <= 1) {
		return 0, invalid("pairs threshold %v is outside (0, 1]", t)
	}
	return t, nil
}

// pairs runs an all-pairs join, in stages:
//  1. loadPairsIndex: one scan of the doc records of a snapshot: ids, set
//     sizes, groups of identical sets;
//  2. candidates: one scan of the posting lists, candidate pairs of group
//     representatives into an external sort;
//  3. writeSetFile: the texts (sets mode: the sets) of the documents in
//     some candidate pair, and the sketches not yet known, into a
//     temporary file (the
//     snapshot and the handle are released after it: nothing later reads
//     the store);
//  4. onGroup for every group of identical sets;
//  5. verify: each distinct candidate pair checked with exact Jaccard on
//     every core, onPair for those that reach the threshold;
//  6. fin, if not nil, with the set file still open (Clusters measures
//     each member's Jaccard to its representative there).
//
// Every stage stops at the first error, or when ctx ends; onGroup or
// onPair returning false stops the run with errStopped. a < b is not
// implied.
func (db *DB) pairs(ctx context.Context, po *PairsOptions, st *PairsStats,
	onGroup func(x *pairsIndex, g []int32) bool, onPair func(x *pairsIndex, a, b int32, j float64) bool,
	fin func(x *pairsIndex, sets *setFile) error) error {
	if err := db.enter(); err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			db.mu.RUnlock()
		}
	}()
	if err := db.unsupported("Pairs and Clusters"); err != nil {
		return err
	}
	var o PairsOptions
	if po != nil {
		o = *po
	}
	var err error
	if o.Threshold, err = db.pairsThreshold(po); err != nil {
		return err
	}
	if o.Memory == 0 {
		o.Memory = DefaultPairsMemory
	}
	if o.Memory < 0 {
		return invalid("pairs memory %d is negative", o.Memory)
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	t := o.Threshold
	prog := progressOf(ctx)
	defer prog.end()
	prog.phase(1, 4, "reading documents", int64(db.stored()))
	snap := db.pdb.NewSnapshot()
	snapOpen := true
	defer func() {
		if snapOpen {
			snap.Close()
		}
	}()
	places := 0
	if !db.estimateOnly() {
		places = min(db.skOpt.NumPerm, codec.SketchPlaces)
	}
	x, err := loadPairsIndex(ctx, snap, db.now().UnixNano(), places, db.stored())
	if err != nil {
		return err
	}
	st.Docs = len(x.nums)
	st.IdenticalGroups = len(x.groups)
	if o.OnIdentical != nil && len(x.groups) > 0 {
		var pairs int64
		largest := 0
		for _, g := range x.groups {
			m := int64(len(g))
			pairs += m * (m - 1) / 2
			largest = max(largest, len(g))
		}
		o.OnIdentical(len(x.groups), pairs, largest)
	}

	// Candidates: pairs of distinct representatives sharing a list.
	tmp, removeTmp, err := runTempDir(db.opts.FS, db.dir)
	if err != nil {
		return err
	}
	defer removeTmp()
	// NB: the free space of where the run's files are (the system's
	// temporary directory when the index's cannot take them).
	fs := db.tempFS(tmp)
	sorter := extsort.NewUint64(fs, tmp, "pairs", o.Memory)
	defer sorter.Close()
	prog.phase(2, 4, bandsPhase("reading posting lists"), int64(db.bands.B)*bandParts)
	inPair, err := candidates(ctx, snap, x, db.bands.B, t, sorter, st)
	if err != nil {
		return err
	}
	st.Spilled = sorter.Runs() > 0
	if prog != nil {
		n := 0
		for _, w := range inPair {
			n += bits.OnesCount64(w)
		}
		prog.phase(3, 4, "reading the sets of candidate documents", int64(n))
	}
	sets, err := db.writeSetFile(ctx, fs, fs.PathJoin(tmp, "sets"), int64(o.Memory)/4, snap, x, inPair)
	if err != nil {
		return err
	}
	defer sets.close()
	// NB: from here on nothing reads the store: the snapshot is released
	// and so is the handle, so that the caller's loop body may call Close
	// (or write) without deadlocking against this run.
	snap.Close()
	snapOpen = false
	db.mu.RUnlock()
	locked = false

	// Identical sets: every group, at Jaccard 1. NB: their pairs are the
	// last phase's first work, counted in its total (onGroup counts them
	// done): 100,000 copies of one text, 5e9 pairs, were written while the
	// progress showed the sets' phase at 84-97%, its time left growing (a
	// review of skewed corpora, K4).
	var identical int64
	for _, g := range x.groups {
		identical += int64(len(g)) * int64(len(g)-1) / 2
	}
	phase := "verifying candidate pairs"
	if identical > 0 {
		phase = "pairs of identical documents then verifying candidate pairs"
	}
	prog.phase(4, 4, phase, st.Candidates-st.Filtered+identical)
	for _, g := range x.groups {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if !onGroup(x, g) {
			return errStopped
		}
	}

	// NB: the pairs ruled out so far never reach the sort.
	if err := verify(ctx, x, sorter, sets, t, db.estimateOnly(), st, onPair); err != nil || fin == nil {
		return err
	}
	return fin(x, sets)
}

// candidates is the join's first stage: it reads every posting list of
// snap and adds to sorter each pair of distinct group representatives
// that share a list, whose set sizes allow Jaccard t and whose sketches,
// where both are known, do not rule it out, as a<<32|b
// (a < b); a pair that shares several bands is added once per band. The
// bits it returns mark the documents in some candidate pair.
//
// NB: the bands are split among a goroutine per core, each scanning its
// own key range: one scan was a serial stage between the index and the
// set file (decoding, merging and sorting 2.6 million lists at 200,000
// documents). They hand their candidates to sorter in batches, under a
// lock; the sorter's order makes the output independent of the split.
func candidates(ctx context.Context, snap pebble.Reader, x *pairsIndex, nbands int, t float64, sorter *extsort.Fixed[uint64], st *PairsStats) ([]uint64, error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), nbands))
	words := (len(x.nums) + 63) / 64
	inPair := make([]uint64, words) // bit i: doc i is in a candidate pair
	var mu sync.Mutex               // sorter, inPair, st
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		lo := codec.AppendPostingKey(nil, w*nbands/workers, 0)
		hi := codec.PostingPrefixEnd
		if w < workers-1 {
			hi = codec.AppendPostingKey(nil, (w+1)*nbands/workers, 0)
		}
		g.Go(func() error {
			bands := newBandCounter(progressOf(ctx), w*nbands/workers)
			var ps []codec.Posting
			var reps []int32
			var batch []uint64
			mine := make([]uint64, words)
			var local PairsStats
			floor := sketchFloor(x.places, t)
			flush := func() error {
				mu.Lock()
				defer mu.Unlock()
				for _, v := range batch {
					if err := sorter.Add(v); err != nil {
						return err
					}
				}
				batch = batch[:0]
				return nil
			}
			var derr error
			err := scan(gctx, snap, lo, hi, func(k, v []byte) {
				if derr != nil {
					return
				}
				if ps, derr = codec.DecodePostings(v, ps[:0]); derr != nil {
					derr = classify(fmt.Errorf("posting list %x: %w", k, derr))
					return
				}
				bands.key(k)
				local.Lists++
				reps = reps[:0]
				for _, p := range ps {
					if p.Remove {
						continue
					}
					i, ok := x.find(p.Doc)
					if !ok && x.isExpired(p.Doc) {
						continue // expired, not yet swept
					}
					if !ok {
						derr = corruptRepairable("posting list %x names doc %d, which has no record", k, p.Doc)
						return
					}
					reps = append(reps, x.rep[i])
				}
				slices.Sort(reps)
				reps = slices.Compact(reps)
				local.LargestList = max(local.LargestList, len(reps))
				if len(reps) > HotList {
					local.HotLists++
				}
				for i, a := range reps {
					// NB: a list of n distinct sets makes n²/2 candidates:
					// a hot list of 10,600 held 1.2 GB of them, whatever
					// the memory budget, and ran minutes deaf to a cancel
					// (and to Close). Its candidates go to the sorter as
					// they come, and the context is checked on the way.
					if len(batch) >= 1<<14 || i&255 == 255 {
						if derr = cmp.Or(ctxErr(gctx), flush()); derr != nil {
							return
						}
					}
					sa := float64(x.sizes[a])
					for _, b := range reps[i+1:] {
						sb := float64(x.sizes[b])
						// NB: J ≤ min/max: never a pair. A size of 0 is
						// unknown (a signature put in none mode).
						if sa > 0 && sb > 0 && min(sa, sb)/max(sa, sb) < t {
							continue
						}
						local.Candidates++
						// NB: the pairs whose two sketches are known (read
						// with the records) are ruled out here, before the
						// sort; the others in verify, once writeSetFile has
						// derived them.
						if floor > 0 && x.sketched[a] && x.sketched[b] && agree(x.sketch(a), x.sketch(b), x.places) < floor {
							local.Filtered++
							continue
						}
						batch = append(batch, uint64(a)<<32|uint64(b))
						mine[a/64] |= 1 << (a % 64)
						mine[b/64] |= 1 << (b % 64)
					}
				}
				if len(batch) >= 1<<14 {
					derr = flush()
				}
			})
			if err = cmp.Or(derr, err); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
			bands.upTo((w + 1) * nbands / workers)
			mu.Lock()
			defer mu.Unlock()
			for i, m := range mine {
				inPair[i] |= m
			}
			st.Lists += local.Lists
			st.HotLists += local.HotLists
			st.Candidates += local.Candidates
			st.Filtered += local.Filtered
			st.LargestList = max(st.LargestList, local.LargestList)
			return nil
		})
	}
	return inPair, g.Wait()
}

// verify is the join's last stage: it reads the sorted candidates, drops
// the repeats (a pair from several bands), verifies each distinct pair
// with exact Jaccard against the sets in sets, on every core, and calls
// onPair for each that reaches t, on the caller's goroutine. onPair
// returning false stops it with errStopped.
func verify(ctx context.Context, x *pairsIndex, sorter *extsort.Fixed[uint64], sets *setFile, t float64, estimate bool, st *PairsStats,
	onPair func(x *pairsIndex, a, b int32, j float64) bool) error {
	type job struct{ a, b []int32 }
	type verified struct {
		a, b int32
		j    float64
	}
	jobs := make(chan job, 4)
	results := make(chan []verified, 4)
	done := make(chan struct{})
	stop := sync.OnceFunc(func() { close(done) })
	defer stop()
	var prodErr error
	var distinct int64 // read once prodDone is closed
	// NB: results close once the workers are done, which a stopped run's
	// workers are before the producer sees done: reading distinct then
	// was a data race (the race detector, when an output's failed write
	// stopped a pairs run).
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		defer close(jobs)
		var cur job
		last, have := uint64(0), false
		seen := counter{p: progressOf(ctx)}
		defer seen.flush()
		prodErr = sorter.Iterate(func(v uint64) error {
			seen.inc()
			if have && v == last {
				return nil // the same pair from another band
			}
			last, have = v, true
			distinct++
			cur.a = append(cur.a, int32(v>>32))
			cur.b = append(cur.b, int32(uint32(v)))
			if len(cur.a) == 4096 {
				select {
				case jobs <- cur:
				case <-done:
					return errStopped
				case <-ctx.Done():
					return ctxErr(ctx)
				}
				cur = job{}
			}
			return nil
		})
		if prodErr == nil && len(cur.a) > 0 {
			select {
			case jobs <- cur:
			case <-done:
			case <-ctx.Done():
			}
		}
	}()
	var wg sync.WaitGroup
	var filteredAll atomic.Int64
	var werrMu sync.Mutex
	var werr error
	var failed atomic.Bool // werr is set: the run stops, nothing more is yielded
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sa, sb []uint64
			rd := sets.reader()
			defer rd.close()
			var table minhash.SetTable // sa's set, when verifying
			cached := int32(-1)
			floor := sketchFloor(x.places, t)
			var filtered int64
			defer func() { filteredAll.Add(filtered) }()
			fail := func(err error) {
				werrMu.Lock()
				werr = cmp.Or(werr, err)
				werrMu.Unlock()
				failed.Store(true)
				stop()
			}
			for jb := range jobs {
				var out []verified
				for i := range jb.a {
					if i&255 == 255 {
						// NB: a job of long sets takes seconds: a pairs
						// request whose client left ran on for 6-10 s
						// (a review).
						select {
						case <-done:
							return
						case <-ctx.Done():
							return
						default:
						}
					}
					a, b := jb.a[i], jb.b[i]
					if floor > 0 && agree(x.sketch(a), x.sketch(b), x.places) < floor {
						filtered++
						continue
					}
					var err error
					if a != cached {
						if sa, err = rd.read(a, sa); err != nil {
							fail(err)
							break
						}
						cached = a
						if !estimate {
							table.Reset(sa)
						}
					}
					if sb, err = rd.read(b, sb); err != nil {
						fail(err)
						break
					}
					if estimate {
						// None mode: the set file holds signatures.
						if j := x.estimate(a, b, sa, sb); j >= t {
							out = append(out, verified{a, b, j})
						}
					} else if j, ok := table.JaccardAtLeast(sb, t); ok {
						out = append(out, verified{a, b, j})
					}
				}
				select {
				case results <- out:
				case <-done:
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	// NB: onPair is the caller's loop body: one that panics unwound
	// verify while the workers read the set file its caller's defer
	// closes, and a worker then panicked on the freed file, ending the
	// process beyond any recover (an API review, API-1). So they are
	// stopped and waited for on every way out (after the loop below,
	// results is closed and prodDone too: this returns at once).
	defer func() {
		stop()
		for range results {
		}
		<-prodDone
	}()
	stopped := false
	for batch := range results {
		if stopped {
			continue // drain: the workers end once done is closed
		}
		if ctx.Err() != nil || failed.Load() {
			stopped = true
			stop()
			continue
		}
		for _, v := range batch {
			st.Matched++
			if !onPair(x, v.a, v.b, v.j) {
				stopped = true
				stop()
				break
			}
		}
	}
	<-prodDone // NB: stop was called, or jobs drained: the producer returns
	st.Filtered += filteredAll.Load()
	st.Verified = distinct - filteredAll.Load()
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if werr != nil { // NB: the workers are done (results is closed)
		return werr
	}
	if stopped {
		return errStopped
	}
	return cmp.Or(prodErr, ctxErr(ctx))
}

// estimate is the signatures' estimate of the Jaccard of documents a
// and b (their signatures sa and sb, as uint64s), no higher than their
// sizes allow (J <= min/max; a size of 0 is unknown): an estimate-only
// index reported pairs above it (8 of 3,260 on kjv at 0.8: sizes 42 and
// 46, Jaccard at most 0.9130, estimated 0.9453: a statistician's review,
// Q3). The cap only lowers an error; where the size filter ran first
// (Pebble's pairs, queries), it keeps which pairs reach t. Redis's pairs
// have no size filter before it, and report no pair the sizes rule out
// since (as Pebble's).
func (x *pairsIndex) estimate(a, b int32, sa, sb []uint64) float64 {
	return sizeCapped(estimateOf(sa, sb), int(x.sizes[a]), int(x.sizes[b]))
}

// sizeCapped is est no higher than min/max of the sizes a and b, when
// both are known (not 0).
func sizeCapped(est float64, a, b int) float64 {
	if a > 0 && b > 0 {
		return min(est, float64(min(a, b))/float64(max(a, b)))
	}
	return est
}

// estimateOf is the signatures' estimate of Jaccard (the share of equal
// values) of two signatures held as uint64s.
func estimateOf(a, b []uint64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	eq := 0
	for i := range a {
		if a[i] == b[i] {
			eq++
		}
	}
	return float64(eq) / float64(len(a))
}

// A pairs run's temporary directory in the index's directory:
// lshdb-pairs-PID-N.tmp, with a LOCK file inside that the run holds
// while it lasts.
const (
	pairsTmpPrefix = "lshdb-pairs-"
	pairsTmpSuffix = ".tmp"
)

// isPairsRunDir reports whether name is a pairs run's temporary
// directory (this build's or an older one's, lshdb-pairs-0x….tmp).
func isPairsRunDir(name string) bool {
	return strings.HasPrefix(name, pairsTmpPrefix) && strings.HasSuffix(name, pairsTmpSuffix)
}

// pairsRuns numbers this process's pairs runs, for their directories.
var pairsRuns atomic.Uint64

// staleRunAge is how old a run's directory must be before another run
// may take it for a dead one's: a run locks its directory just after it
// makes it.
const staleRunAge = time.Minute

// runTempDir makes a pairs run's temporary directory in dir and locks it;
// remove deletes it and releases the lock. First it removes what runs
// that died left (a kill -9, an out-of-memory kill): a directory whose
// lock no process holds. Until now only a writable Open removed them, so
// that nightly pairs on an index never written again piled up a set file
// (0.7 GB at a million documents) per killed run.
func runTempDir(fs vfs.FS, dir string) (tmp string, remove func(), err error) {
	sweepDeadRuns(fs, dir)
	name := fmt.Sprintf("%s%d-%d%s", pairsTmpPrefix, os.Getpid(), pairsRuns.Add(1), pairsTmpSuffix)
	tmp = fs.PathJoin(dir, name)
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		if !errors.Is(err, syscall.EROFS) && !errors.Is(err, iofs.ErrPermission) {
			return "", nil, err
		}
		// NB: an index on a read-only filesystem (or another user's
		// read-only open): the system's temporary directory, where what
		// dead runs left is swept as it is beside an index (the runs of
		// every index that spilled there: a live one's lock is held).
		// There the directory must be a new one, this user's alone: with
		// MkdirAll a directory of that name that another user made first
		// (the name is predictable) took the spilled ids and sets, for
		// that user to read or change (a security review).
		sweepDeadRuns(fs, os.TempDir())
		for try := 0; ; try++ {
			tmp = fs.PathJoin(os.TempDir(), name)
			err := mkdirNew(fs, tmp)
			if err == nil {
				break
			}
			if !errors.Is(err, iofs.ErrExist) || try == 100 {
				return "", nil, err
			}
			name = fmt.Sprintf("%s%d-%d%s", pairsTmpPrefix, os.Getpid(), pairsRuns.Add(1), pairsTmpSuffix)
		}
	}
	lock, err := fs.Lock(fs.PathJoin(tmp, "LOCK"))
	if err != nil {
		fs.RemoveAll(tmp)
		return "", nil, fmt.Errorf("lshdb: locking the pairs run's temporary directory: %w", err)
	}
	return tmp, func() {
		// NB: the lock released first: on Windows a held lock file
		// cannot be deleted, nor its directory.
		lock.Close()
		fs.RemoveAll(tmp)
	}, nil
}

// mkdirNew makes the directory dir, private to this user, failing with
// an error matching fs.ErrExist if something is there already. On the
// operating system's filesystem, a directory made there meanwhile by
// another user (or a link) is refused too.
func mkdirNew(fs vfs.FS, dir string) error {
	if _, err := fs.Stat(dir); err == nil {
		return fmt.Errorf("%s: %w", dir, iofs.ErrExist)
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err == nil && !fspath.PrivateDir(fi) {
		return fmt.Errorf("lshdb: the pairs run's temporary directory %s is not this user's own: %w", dir, iofs.ErrExist)
	}
	return nil
}

// sweepDeadRuns removes the temporary directories of pairs runs that
// ended without removing them: older than staleRunAge, and their lock
// free. A directory it cannot lock (a run under way, or a filesystem it
// may not write) is left.
func sweepDeadRuns(fs vfs.FS, dir string) {
	names, _ := fs.List(dir)
	for _, n := range names {
		if !isPairsRunDir(n) {
			continue
		}
		p := fs.PathJoin(dir, n)
		fi, err := fs.Stat(p)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleRunAge {
			continue
		}
		// NB: not a symbolic link of that name (in a shared temporary
		// directory, another user's), where the lock below would be made
		// in the directory it names.
		if li, err := os.Lstat(p); err == nil && li.Mode()&iofs.ModeSymlink != 0 {
			continue
		}
		lock, err := fs.Lock(fs.PathJoin(p, "LOCK"))
		if err != nil {
			continue
		}
		lock.Close()
		fs.RemoveAll(p)
	}
}
