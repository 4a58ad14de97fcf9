package db

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/extsort"
	"github.com/lshdb/lshdb/internal/seqs"
	"golang.org/x/sync/errgroup"
)

// DefaultLoadMemory is the default LoadOptions.Memory: 256 MiB of sorted
// data, which keeps a load's whole process (documents in flight, Pebble's
// cache and memtables, Go's heap headroom) around 0.5 GiB: 490–499 MiB
// peak RSS measured for a million 1.2 KB documents (format 5).
const DefaultLoadMemory = 256 << 20

// loadTmpDir is the directory, inside the database's, where a load keeps
// its sorted runs and SSTables until they are ingested. NB: inside it, so
// that it is on the same file system and Ingest hard-links the tables
// instead of copying them. Open removes one left by an interrupted load.
const loadTmpDir = "lshdb-load.tmp"

// LoadOptions adjust Load. A nil *LoadOptions means the defaults.
type LoadOptions struct {
	// Memory bounds the bytes of sorted entries (postings and ids) held in
	// memory; the rest spill to sorted runs on disk. The process needs
	// about two to three times this in all. Default: DefaultLoadMemory
	// (256 MiB).
	Memory int
	// SkipEmpty skips documents with no shingles (listed in the result)
	// instead of failing the load with ErrEmptyDocument. Default: false.
	SkipEmpty bool
	// Progress, if set, is called with the number of documents read so far
	// (every 10,000 and at the end), on the goroutine that called Load.
	// A context made by WithProgress reports every stage of a load on
	// Pebble (reading, resolving ids, writing tables, ingesting); on Redis
	// only this function reports.
	Progress func(docs int)
	// TTL makes every document of the load expire this long after Load
	// starts, and ExpireAt at that time (one of them at most), as
	// WriteOptions.TTL and ExpireAt do for a write: the first documents
	// with an expiry make the index format 4. Default: none.
	TTL      time.Duration
	ExpireAt time.Time
	// DeleteAbsent deletes, in the same atomic step, every document stored
	// before the load whose id docs does not hold: the index then holds
	// the load's documents and no others (a nightly build of a corpus
	// whose documents come and go). An id whose only documents in docs
	// are skipped as empty (SkipEmpty) is not held: its stored document
	// is deleted, and counted. A stored document is looked up as a
	// replaced one is (its record read for its postings). A stored
	// document that has expired but awaits the sweep is removed too, and
	// counted neither in Deleted nor against MaxDeleted: it was no longer
	// in the index for any reader. Not on Redis (ErrInvalidOptions).
	// Default: false, a load only adds and replaces.
	DeleteAbsent bool
	// MaxDeleted, with DeleteAbsent, fails the load with
	// ErrTooManyDeletes, storing nothing, when it would delete more than
	// this many documents: a guard against an input cut short, or the
	// wrong input, emptying the index. 0: no limit.
	MaxDeleted int
	// MaxDeletedPercent, with DeleteAbsent, is MaxDeleted as a share of
	// the documents stored when the load begins (counted under the
	// writer lock, so no other write comes between the count and the
	// load): the limit is that percentage of them, rounded down, and at
	// least 1, so that an index of one document can lose it. Above 0 and
	// at most 100 (100 is no limit); at most one of MaxDeleted and
	// MaxDeletedPercent. 0: none. lshdb build --max-delete 10% and the
	// HTTP API's max_deleted=10% are this.
	MaxDeletedPercent float64
	// MinStored fails the load with ErrTooFewDocuments, storing nothing,
	// when it would store fewer than this many documents: those skipped
	// as empty (SkipEmpty) and the superseded copies of a repeated id do
	// not count. A guard against an input cut short, or one whose texts
	// an upstream fault emptied, building an empty or partial index (a
	// count of the records read passes a night of 1,000 blank texts).
	// Not on Redis, whose load is not
	// atomic (ErrInvalidOptions). 0: no minimum.
	MinStored int

	// tableBytes is the size at which the load starts a new SSTable.
	// Default: defaultTableBytes (tests make it small).
	tableBytes int
	// resolveChunk is how many ids stage 2 looks up at once. Default:
	// resolveChunkLen (tests make it small).
	resolveChunk int
}

// LoadResult reports what Load did.
type LoadResult struct {
	Stored       int      // documents written (new or replacing)
	Replaced     int      // of which replaced a document stored before the load
	Repeated     int      // documents superseded by a later one with the same id in the load
	Deleted      int      // with DeleteAbsent: stored documents deleted for being absent from the load
	SkippedEmpty []string // ids skipped for having no shingles (with SkipEmpty)
}

// Load bulk-loads documents, the fast path for large inputs: no WAL, no
// memtable, signatures on every core. It works on an existing index: a
// document whose id is stored replaces it, and when an id repeats in docs
// the last one stored wins (one skipped as empty, with SkipEmpty, leaves
// the one before it). The result is the index that [DB.Put] of each
// document in order would have produced, doc numbers included. Each
// document is copied as it is read: docs may reuse its buffers (Meta,
// Signature, a Set's slice) from one document to the next. Package
// github.com/lshdb/lshdb/db/docfile reads the files that the lshdb
// command reads (JSON Lines, CSV, TSV, Parquet, text; gzip, zstd) as
// such an iterator.
//
// Load runs in four stages:
//
//  1. Read and prepare: docs is read in chunks of
//     1,024 on the caller's goroutine; a worker computes each chunk's
//     shingle sets, signatures, records and band keys on every core;
//     another writes the records straight into SSTables in input order
//     (doc numbers follow input order, so the records are never sorted),
//     and gives the ids and the postings to external sorters bounded by
//     LoadOptions.Memory (which spill sorted runs to disk).
//  2. Resolve ids: the ids come out of their sorter in
//     order; an earlier occurrence of an id in docs is dropped, and an id
//     stored before the load is replaced (its record deleted, its
//     postings removed). With DeleteAbsent the stored ids are walked
//     beside them, and one the load does not hold is deleted the same
//     way, its id with it. This makes the id map.
//  3. Write tables: the deletes of replaced records,
//     the record tables of stage 1 (rewritten without dropped records),
//     the id map, the counters (a table of their own), and one merge
//     operand per posting list, ranges of bands on every core; a list
//     that the removals alone empty is deleted instead.
//  4. Ingest: every table in one Pebble Ingest, which is
//     atomic: queries see all of the load or none of it.
//
// The first failure stops every stage and Load returns it promptly, with
// nothing stored: the reader stops at its next chunk (a bad document near
// the start costs a few chunks, not the whole input), the workers at
// their next chunk or band. The failure is one of: a document that cannot
// be stored, a *DocError (Index its 0-based position in docs, ID its id)
// wrapping ErrInvalidID, ErrEmptyDocument (unless SkipEmpty) or
// ErrDocTooLarge, said as "document N (id "x"): …", or "document N: …"
// where the error names the id already ("document has no shingles:
// "x""); an error yielded by docs, unchanged; a disk error; ctx's
// error when it ends (context.Canceled, context.DeadlineExceeded);
// ErrClosed when Close is called. On error the LoadResult is zero. An
// error, a crash or a kill before the ingest leaves the index as it was.
//
// Hazards:
//   - Load holds the database's writer lock from its start to its
//     ingest, reading docs included: every writer ([DB.Put],
//     [DB.PutBatch], [DB.PutIfNew], [DB.Delete], another Load) and
//     [DB.PurgeEmptyLists] waits until then (not for the flush after
//     it). Readers go on.
//   - [DB.Close] cancels a Load in flight (it returns ErrClosed) and
//     waits for it to stop. A Load waiting inside docs for its next
//     document (a pipe, a network stream) notices a cancel, and lets
//     Close proceed, only when docs yields or returns: an iterator that
//     may block for long should watch ctx itself, and the caller cancel
//     ctx before Close (Close cannot end ctx, which is the caller's, nor
//     interrupt the caller's iterator).
//   - Its temporary files (sorted runs and the SSTables, about the size of
//     the data loaded) live in the directory "lshdb-load.tmp" inside the
//     database's directory, on the same file system so that the ingest
//     can hard-link the tables instead of copying them: that file system
//     needs room for them. Load removes them when it returns; after a
//     crash, the next writable Open does (a read-only one leaves them:
//     [DB.Info] counts them, and lshdb info names them).
//   - The records of the documents a load replaces stay on disk until
//     Pebble's compactions reach them, which a process that closes the
//     database soon after never gives them time for: after a load that
//     replaced much of the index, [DB.Compact] frees their space (lshdb
//     build does when it replaced at least a quarter of the index).
func (db *DB) Load(ctx context.Context, docs iter.Seq2[Doc, error], lo *LoadOptions) (LoadResult, error) {
	if err := db.enter(); err != nil {
		return LoadResult{}, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return LoadResult{}, ErrReadOnly
	}
	if docs == nil {
		return LoadResult{}, fmt.Errorf("%w: Load of a nil sequence of documents", ErrInvalidOptions)
	}
	var o LoadOptions
	if lo != nil {
		o = *lo
	}
	if o.Memory == 0 {
		o.Memory = DefaultLoadMemory
	}
	if o.Memory < 0 {
		return LoadResult{}, invalid("load memory %d is negative", o.Memory)
	}
	if o.MaxDeleted < 0 {
		return LoadResult{}, invalid("load MaxDeleted %d is negative", o.MaxDeleted)
	}
	if o.MaxDeleted > 0 && !o.DeleteAbsent {
		return LoadResult{}, invalid("load MaxDeleted %d without DeleteAbsent (a load deletes nothing without it)", o.MaxDeleted)
	}
	if o.MaxDeletedPercent != 0 {
		switch {
		case !(o.MaxDeletedPercent > 0 && o.MaxDeletedPercent <= 100):
			return LoadResult{}, invalid("load MaxDeletedPercent %v is outside (0, 100]", o.MaxDeletedPercent)
		case !o.DeleteAbsent:
			return LoadResult{}, invalid("load MaxDeletedPercent %v without DeleteAbsent (a load deletes nothing without it)", o.MaxDeletedPercent)
		case o.MaxDeleted > 0:
			return LoadResult{}, invalid("load MaxDeleted %d and MaxDeletedPercent %v: give one limit", o.MaxDeleted, o.MaxDeletedPercent)
		}
	}
	if o.MinStored < 0 {
		return LoadResult{}, invalid("load MinStored %d is negative", o.MinStored)
	}
	expires, err := (&WriteOptions{TTL: o.TTL, ExpireAt: o.ExpireAt}).expires(db.now())
	if err != nil {
		return LoadResult{}, err
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: the progress ends after the flush: it ended before it, and a
	// flush behind other writers' memtable took seconds after the load
	// had said it was done (a maintainer's review, P5).
	defer progressOf(ctx).end()
	res, ingested, err := db.loadLocked(ctx, docs, o, expires)
	if err != nil || !ingested {
		return res, err
	}
	// NB: the flush after the ingest waits for the memtable that the
	// other writers filled, however much they put: outside the writer
	// lock (loadLocked has released it, and the load's files and
	// buffers). A load with a table whose span overlaps the memtable's
	// (the counters) is ingested as a flushable, which sits beside the memtable,
	// outside the LSM's levels, until the next flush: Pebble's SSTables
	// and EstimateDiskUsage did not see the whole index a build had made.
	// The flush puts them in the levels.
	//
	// It only tidies: the load is stored, and its result stands. Pebble's
	// Flush, which no context or Close ends, waited for ever on a disk
	// where flushes could not write, and Close behind it; a flush that
	// failed returned a zero result for a load that was stored (a
	// maintainer's review, C3-4). It is skipped on such a disk, ends
	// with ctx, and a failure is logged.
	if err := db.flushWait(ctx); err != nil {
		db.opts.Logger.Warn("lshdb: the load is stored, but not flushed into the LSM's levels after it (Pebble does it later)", "error", err)
	}
	return res, nil
}

// percentOf is the limit that LoadOptions.MaxDeletedPercent p gives an
// index of n documents: p% of n, rounded down, and at least 1.
//
// NB: rounded near the integer first: 375 documents at 18.4% gave 68
// (68.99999999999999).
func percentOf(n uint64, p float64) int {
	return max(1, int(math.Floor(float64(n)*p/100+1e-9)))
}

// loadLocked is Load under the writer lock, up to its ingest (ingested:
// the load is stored, on Pebble, and Load flushes). It releases the
// load's temporary files and memory before the lock: a Load that
// released them after it (once it had flushed) removed the files of the
// next Load, which had taken the lock meanwhile (a maintainer's M1).
func (db *DB) loadLocked(ctx context.Context, docs iter.Seq2[Doc, error], o LoadOptions, expires int64) (LoadResult, bool, error) {
	// NB: a Load waiting for another writer (another Load) gives up when
	// its context ends or the database closes.
	if err := db.wmu.lock(ctx); err != nil {
		return LoadResult{}, false, err
	}
	defer db.wmu.Unlock()
	if db.rkv != nil {
		if o.DeleteAbsent {
			return LoadResult{}, false, invalid("a load that deletes the documents absent from it (DeleteAbsent) is not supported on Redis: delete them apart (DeleteIDs)")
		}
		if o.MinStored > 0 {
			return LoadResult{}, false, invalid("a load with a minimum of documents (MinStored) is not supported on Redis, where a load writes batches, not one atomic step")
		}
		res, err := db.redisLoad(ctx, docs, o, expires)
		return res, false, err
	}
	// NB: the load's tables fill the disk before the ingest; a disk that
	// fills on the way fails the load cleanly (ENOSPC is ErrDiskFull), but
	// one already below the reserve would leave Pebble no room after it.
	if err := db.roomFor(0); err != nil {
		return LoadResult{}, false, err
	}
	if expires != 0 && db.man.FormatVersion < codec.SumFingerprintFormatVersion {
		return LoadResult{}, false, db.expiryFormatError()
	}
	l, err := db.newLoader(o)
	if err != nil {
		return LoadResult{}, false, err
	}
	l.expires = expires
	defer l.close()
	limit := ""
	if o.MaxDeletedPercent > 0 && o.MaxDeletedPercent < 100 {
		live := db.stored()
		o.MaxDeleted = percentOf(live, o.MaxDeletedPercent)
		limit = fmt.Sprintf(" (%v%% of %d stored)", o.MaxDeletedPercent, live)
	}
	prog := progressOf(ctx) // NB: Load ends it
	prog.phase(1, 4, "reading documents", 0)
	if err := l.readAndPrepare(ctx, docs); err != nil {
		if y, ok := errors.AsType[docsError](err); ok {
			return LoadResult{}, false, y.err // unchanged, as Load says
		}
		return LoadResult{}, false, loadErr(err)
	}
	// NB: each stored id is looked up here (a replaced document's record
	// is read for its postings): minutes when millions are replaced.
	prog.phase(2, 4, "resolving ids (documents)", int64(l.seq))
	if err := l.resolveIDs(ctx); err != nil {
		return LoadResult{}, false, loadErr(err)
	}
	if o.MaxDeleted > 0 && l.res.Deleted > o.MaxDeleted {
		return LoadResult{}, false, fmt.Errorf("%w: %d stored documents are absent from it, more than its limit of %d%s", ErrTooManyDeletes, l.res.Deleted, o.MaxDeleted, limit)
	}
	if l.res.Stored < o.MinStored {
		return LoadResult{}, false, fmt.Errorf("%w: it would store %d (of %d read: %d empty, %d superseded by a later copy of their id), fewer than its minimum of %d",
			ErrTooFewDocuments, l.res.Stored, l.seq+uint64(len(l.res.SkippedEmpty)), len(l.res.SkippedEmpty), l.res.Repeated, o.MinStored)
	}
	prog.phase(3, 4, bandsPhase("writing tables"), int64(db.bands.B)*bandParts)
	if err := l.writeTables(ctx); err != nil {
		return LoadResult{}, false, loadErr(err)
	}
	if err := db.roomFor(0); err != nil {
		return LoadResult{}, false, err
	}
	if expires != 0 {
		// NB: the manifest says format 4 before the ingest: if the load
		// fails after it, the index is format 4 with no expiring document
		// yet, which every reader of format 4 reads.
		if err := db.setExpiryFormat(); err != nil {
			return LoadResult{}, false, err
		}
	}
	prog.phase(4, 4, "ingesting tables", int64(len(l.paths)))
	if err := l.ingest(ctx); err != nil {
		return LoadResult{}, false, loadErr(err)
	}
	prog.add(int64(len(l.paths)))
	return l.res, true, nil
}

// loader is one Load's state, passed from stage to stage.
type loader struct {
	db     *DB
	o      LoadOptions
	fs     vfs.FS
	tmp    string // the load's directory
	base   uint64 // the doc number of the first document read
	fresh  bool   // the index held no live document: postings are written as values
	tables loadTables
	res    LoadResult
	// expires is the load's expiry (LoadOptions.TTL, ExpireAt; Unix ns),
	// 0 for none.
	expires int64

	// Stage 1: readAndPrepare.
	read      int                 // documents read from the iterator
	seq       uint64              // documents written: the next one gets doc number base+seq
	scratches sync.Pool           // *scratch: the workers' buffers, reused batch after batch
	records   *tableSeq           // the records, in doc number order
	recFirst  []uint64            // recFirst[i]: the seq of the first record in records table i
	recKey    []byte              // the record key being written
	recPaths  []string            // the records tables, finished
	byID      *extsort.KeySorter  // (id, seq) of every document written
	postings  *extsort.BandSorter // the documents' postings
	removals  *extsort.BandSorter // the replaced documents' removals (stage 2)
	sealed    chan struct{}       // closed once postings are sealed (nil before it starts)

	// Stage 2: resolveIDs.
	counters codec.Counters  // the counters after the load
	dropped  []uint64        // bit s: the document of seq s is superseded within the load
	oldDocs  []uint64        // the replaced documents' numbers
	oldXKeys [][]byte        // the expiry keys of the replaced documents that had one
	ids      *extsort.KeyLog // the id map, in key order: (id, doc number)

	// Stage 3: writeTables.
	paths []string // the tables to ingest
}

func (db *DB) newLoader(o LoadOptions) (*loader, error) {
	fs := db.tempFS(db.dir)
	tmp := fs.PathJoin(db.dir, loadTmpDir)
	if err := fs.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	l := &loader{
		db: db, o: o, fs: fs, tmp: tmp, base: db.counters.NextDoc, fresh: db.counters.Live == 0,
		tables: loadTables{db: db, fs: fs, dir: tmp, maxBytes: cmp.Or(o.tableBytes, defaultTableBytes)},
	}
	l.scratches.New = func() any { return newScratch() }
	l.records = l.tables.seqNoFilter("records")
	l.byID = extsort.NewKeySorter(fs, tmp, "ids", o.Memory/4)
	l.postings = extsort.NewBandSorter(fs, tmp, "postings", o.Memory/2, db.bands.B)
	// NB: the replaced documents' removals are sorted apart (stage 2),
	// so that sorting the load's own postings overlaps stage 2.
	l.removals = extsort.NewBandSorter(fs, tmp, "removals", o.Memory/8, db.bands.B)
	return l, nil
}

// close releases everything the load holds and removes its directory.
func (l *loader) close() {
	if l.sealed != nil {
		<-l.sealed // NB: postings.close must not release the regions being sorted
	}
	l.records.abandon()
	l.byID.Close()
	l.postings.Close()
	l.removals.Close()
	if l.ids != nil {
		l.ids.Close()
	}
	l.fs.RemoveAll(l.tmp) // NB: what this leaves, the next Open removes
}

// loadChunk is how many documents the reader hands on at a time.
//
// NB: each chunk in flight holds its texts and prepared records (~20 KB a
// document), and up to five are in flight.
const loadChunk = 1024

// loadBatch is a chunk of documents on its way through stage 1.
type loadBatch struct {
	docs      []Doc
	first     int // input position of docs[0]
	preps     []prepared
	errs      []error
	scratches []*scratch // the preps' records and keys live in these
}

// readAndPrepare is stage 1: it reads docs, prepares them on every core,
// writes the records into tables, and feeds the ids and postings to their
// sorters. Three stages run at once and the first failure in any of them
// (an iterator error, a document's, a disk error, ctx ending) stops all.
func (l *loader) readAndPrepare(ctx context.Context, docs iter.Seq2[Doc, error]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	toPrep := make(chan loadBatch, 2)
	toWrite := make(chan loadBatch, 2)
	g.Go(func() error {
		defer close(toWrite)
		return l.prepare(gctx, toPrep, toWrite)
	})
	g.Go(func() error { return l.write(gctx, toWrite) })
	// NB: docs runs on the caller's goroutine (a panic in it stays the
	// caller's); its failure joins the group's, so that whichever failure
	// comes first is the one returned, and it stops the others.
	// NB: a panic of docs or of Progress (which the caller may recover)
	// stops the other two stages, and waits for them, before it goes on
	// up: Load's deferred close then closed the tables they were writing
	// to, and a stage's panic ("send on closed channel") ended the
	// caller's process.
	waited := false
	defer func() {
		if !waited {
			cancel()
			g.Wait()
		}
	}()
	if err := l.readChunks(gctx, docs, toPrep); err != nil {
		g.Go(func() error { return err })
	}
	err := g.Wait()
	waited = true
	if err != nil {
		return err
	}
	if l.o.Progress != nil && (l.read%10000 != 0 || l.read == 0) {
		// NB: a count that is a multiple of 10,000 was reported as read.
		l.o.Progress(l.read)
	}
	// NB: sorting the postings overlaps stages 2 and 3 until the posting
	// tables need them.
	l.sealed = make(chan struct{})
	go func() {
		defer close(l.sealed)
		l.postings.Seal()
	}()
	l.recPaths, err = l.records.finish()
	return err
}

// loadErr is classify for the load's own errors, said as the load's: an
// I/O error on its temporary files came back bare, "input/output error"
// (a fault-injection review's FI-7). Not for an error of docs (Load
// returns those unchanged) or of ctx.
func loadErr(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "lshdb: ") || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return classify(err)
	}
	return classify(fmt.Errorf("lshdb: load: %w", err))
}

// docsError is an error that Load's docs yielded, kept apart from the
// load's own on its way out: Load returns it unchanged, where classify
// made one wrapping ENOSPC an ErrDiskFull of the index's disk, and one
// wrapping a codec error an ErrCorrupt of the index (a code review's C4).
type docsError struct{ err error }

func (e docsError) Error() string { return e.err.Error() }
func (e docsError) Unwrap() error { return e.err }

// readChunks pulls docs and sends them on in chunks, until docs ends, it
// fails, or ctx ends. It closes out.
func (l *loader) readChunks(ctx context.Context, docs iter.Seq2[Doc, error], out chan<- loadBatch) error {
	defer close(out)
	chunk := make([]Doc, 0, loadChunk)
	send := func() error {
		// NB: checked first: out may have room after the others stopped.
		if err := ctxErr(ctx); err != nil {
			return err
		}
		select {
		case out <- loadBatch{docs: chunk, first: l.read - len(chunk)}:
			progressOf(ctx).add(int64(len(chunk)))
			chunk = make([]Doc, 0, loadChunk)
			return nil
		case <-ctx.Done():
			return ctxErr(ctx)
		}
	}
	done := ctx.Done()
	for d, err := range seqs.Caller(docs) {
		if err != nil {
			return docsError{err}
		}
		// NB: checked at every document, not only at a chunk's send: a
		// slow stream (a document a second) kept a cancelled Load, and a
		// Close, waiting for the rest of its chunk of 1,024.
		select {
		case <-done:
			return ctxErr(ctx)
		default:
		}
		// NB: the document is prepared on another goroutine after docs
		// goes on: its slices are copied, so that an iterator may reuse
		// its buffers from one document to the next (a Meta appended into
		// one buffer was stored as another document's).
		d = d.clone()
		chunk = append(chunk, d)
		l.read++
		if len(chunk) == loadChunk {
			if err := send(); err != nil {
				return err
			}
		}
		if l.o.Progress != nil && l.read%10000 == 0 {
			l.o.Progress(l.read)
		}
	}
	if len(chunk) > 0 {
		return send()
	}
	return nil
}

// prepare computes each chunk's records and band keys on every core.
func (l *loader) prepare(ctx context.Context, in <-chan loadBatch, out chan<- loadBatch) error {
	for b := range in {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		b.preps, b.errs, b.scratches = l.db.prepareEach(b.docs, l.db.man.StoreText, &l.scratches)
		select {
		case out <- b:
		case <-ctx.Done():
			return ctxErr(ctx)
		}
	}
	return nil
}

// write writes each prepared chunk: records into tables, ids and
// postings into their sorters.
func (l *loader) write(ctx context.Context, in <-chan loadBatch) error {
	for {
		select {
		case b, ok := <-in:
			if !ok {
				return nil
			}
			if err := l.writeBatch(b); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctxErr(ctx)
		}
	}
}

func (l *loader) writeBatch(b loadBatch) error {
	for i, p := range b.preps {
		if err := b.errs[i]; err != nil {
			if l.o.SkipEmpty && errors.Is(err, ErrEmptyDocument) {
				l.res.SkippedEmpty = append(l.res.SkippedEmpty, b.docs[i].ID)
				continue
			}
			return docError(b.first+i, b.docs[i].ID, err)
		}
		if err := p.setExpiry(l.expires); err != nil {
			return docError(b.first+i, b.docs[i].ID, err)
		}
		l.recKey = codec.AppendDocKey(l.recKey[:0], l.base+l.seq)
		if err := l.records.set(l.recKey, p.record); err != nil {
			return err
		}
		if len(l.records.paths) > len(l.recFirst) {
			l.recFirst = append(l.recFirst, l.seq)
		}
		if err := l.byID.Add([]byte(p.id), l.seq); err != nil {
			return err
		}
		for band, k := range p.keys {
			if err := l.postings.Add(band, extsort.BandEntry{Bucket: k, Value: posting(l.base+l.seq, false)}); err != nil {
				return err
			}
		}
		l.seq++
	}
	// NB: the records and keys have been copied into the table and the
	// sorters: their buffers go to the next batch.
	for _, sc := range b.scratches {
		l.scratches.Put(sc)
	}
	return nil
}

// docError names the document at input position pos that failed.
func docError(pos int, id string, err error) error {
	return &DocError{Index: pos, ID: id, Err: err}
}

// resolveIDs is stage 2: by id, the last occurrence wins (earlier ones
// are dropped); an id stored before the load is replaced: its record
// deleted, its postings removed. The id map comes out in key order.
//
// NB: finding a replaced document's postings means reading its record
// and, in text mode, signing its text again: as much work as the new
// document's. The ids are resolved in chunks, each looked up on every
// core (resolveChunk), then applied in key order: a build that replaced
// all of 300,000 stored documents spent 14 of its 26 CPU-s in these
// lookups on one goroutine (sorting each old set, which nothing reads, a
// third of it), and took 2.7x a build into an empty index.
func (l *loader) resolveIDs(ctx context.Context) error {
	now := l.db.now().UnixNano()
	db := l.db
	l.counters = db.counters
	l.counters.NextDoc = l.base + l.seq
	l.dropped = make([]uint64, (l.seq+63)/64)
	ids, err := extsort.CreateKeyLog(l.fs, l.fs.PathJoin(l.tmp, "idmap"))
	if err != nil {
		return err
	}
	l.ids = ids
	r, err := newResolver(db, runtime.GOMAXPROCS(0), cmp.Or(l.o.resolveChunk, resolveChunkLen))
	if err != nil {
		return err
	}
	defer r.close()
	// NB: with DeleteAbsent, the stored ids are walked in key order beside
	// the load's: each one the load passes over is absent (stored; the
	// writer lock keeps them as they are meanwhile).
	var stored *pebble.Iterator
	if l.o.DeleteAbsent && !l.fresh {
		if stored, err = db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.IDPrefix, UpperBound: codec.IDPrefixEnd}); err != nil {
			return classify(err)
		}
		defer stored.Close()
		stored.First()
	}
	// apply looks the chunk's ids up, then takes what they replace in
	// key order.
	apply := func() error {
		// NB: an index with no live document holds no id (a deleted or
		// replaced document's goes with it; an expired one counts as live
		// until swept): nothing to look up, as writePostings relies on.
		if !l.fresh {
			if err := r.lookup(ctx); err != nil {
				return err
			}
		}
		for i := range r.chunk {
			e := &r.chunk[i]
			if e.absent {
				if !e.found {
					return fmt.Errorf("%w: id %q is in the id map but its document was not found", ErrCorrupt, e.id)
				}
				if live, err := l.dropStored(e, now); err != nil {
					return err
				} else if live {
					l.res.Deleted++
				}
				ids.Append(e.id, deletedID)
				continue
			}
			if e.found {
				if live, err := l.dropStored(e, now); err != nil {
					return err
				} else if live {
					l.res.Replaced++
				}
			}
			ids.Append(e.id, l.base+e.seq)
			l.res.Stored++
			l.counters.Live++
		}
		r.chunk = r.chunk[:0]
		return nil
	}
	var lastID []byte
	lastSeq, have := uint64(0), false
	// absentBefore adds each stored id before key (every one left, when
	// key is nil) to the chunk as absent, and steps over key itself.
	absentBefore := func(key []byte) error {
		for ; stored != nil && stored.Valid(); stored.Next() {
			id := stored.Key()[len(codec.IDPrefix):]
			if key != nil {
				if c := bytes.Compare(id, key); c == 0 {
					stored.Next()
					break
				} else if c > 0 {
					break
				}
			}
			if r.addAbsent(id) {
				if err := apply(); err != nil {
					return err
				}
			}
		}
		if stored != nil {
			return classify(stored.Error())
		}
		return nil
	}
	emit := func() error {
		if !have {
			return nil
		}
		if err := absentBefore(lastID); err != nil {
			return err
		}
		if r.add(lastID, lastSeq) {
			return apply()
		}
		return nil
	}
	n := 0
	done := counter{p: progressOf(ctx)}
	defer done.flush()
	err = l.byID.Iterate(func(key []byte, s uint64) error {
		done.inc()
		if n++; n%4096 == 0 {
			if err := ctxErr(ctx); err != nil {
				return err
			}
		}
		if have && string(key) == string(lastID) {
			l.dropped[lastSeq/64] |= 1 << (lastSeq % 64) // a later occurrence wins
			l.res.Repeated++
		} else if err := emit(); err != nil {
			return err
		}
		lastID, lastSeq, have = append(lastID[:0], key...), s, true
		return nil
	})
	if err == nil {
		err = emit()
	}
	if err == nil {
		err = absentBefore(nil)
	}
	if err == nil && len(r.chunk) > 0 {
		err = apply()
	}
	if err = cmp.Or(err, ids.Finish()); err != nil {
		return err
	}
	l.byID.Close()
	return nil
}

// dropStored takes away the document stored before the load that e
// found, replaced or deleted (DeleteAbsent): its record, its expiry key
// and its postings. It reports whether the document was live. NB: an
// expired one not yet swept goes as any other (before, the load left its
// record and postings behind, under no id, and counted one document too
// many), but it was never returned: the caller does not count it.
func (l *loader) dropStored(e *resolved, now int64) (live bool, _ error) {
	l.oldDocs = append(l.oldDocs, e.num)
	if e.expires != 0 {
		l.oldXKeys = append(l.oldXKeys, codec.AppendExpiryKey(nil, e.expires, e.num))
	}
	for band, k := range e.keys {
		if err := l.removals.Add(band, extsort.BandEntry{Bucket: k, Value: posting(e.num, true)}); err != nil {
			return false, err
		}
	}
	l.counters.Live--
	return !compaction.Expired(e.expires, now), nil
}

// resolveChunkLen is how many ids a resolver looks up at once.
const resolveChunkLen = 2048

// deletedID is the number the id map of a load gives an id it deletes
// (LoadOptions.DeleteAbsent): no document's.
const deletedID = ^uint64(0)

// resolved is one id of a load, and what it replaces, if anything.
type resolved struct {
	id      []byte
	seq     uint64 // its place in the load
	absent  bool   // a stored id the load does not hold (DeleteAbsent): deleted
	found   bool   // stored before the load: replaced (or, absent, deleted)
	num     uint64 // the stored document's number
	expires int64
	keys    []uint64 // its bucket in each band
}

// resolver looks up a chunk of ids on several goroutines, each reading
// through an iterator of its own.
type resolver struct {
	db    *DB
	chunk []resolved
	views []pebbleView // an iterator of its own per goroutine
	olds  []docData    // a scratch record per goroutine
}

func newResolver(db *DB, workers, chunk int) (*resolver, error) {
	r := &resolver{db: db, chunk: make([]resolved, 0, chunk)}
	for range max(1, workers) {
		it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.PostingPrefixEnd})
		if err != nil {
			r.close()
			return nil, classify(err)
		}
		r.views = append(r.views, pebbleView{it: it})
		// NB: a replaced document's set is only checked (size,
		// fingerprint), never read in order: no sort (as the synced
		// path's lookupOlds).
		r.olds = append(r.olds, docData{anyOrder: true})
	}
	return r, nil
}

// add appends an id (copied) to the chunk and says whether it is full.
func (r *resolver) add(id []byte, seq uint64) bool {
	i := len(r.chunk)
	r.chunk = r.chunk[:i+1] // NB: the caller applies a full chunk before the next add
	e := &r.chunk[i]
	// NB: the buffers of an entry are kept from chunk to chunk.
	*e = resolved{id: append(e.id[:0], id...), seq: seq, keys: e.keys[:0]}
	return len(r.chunk) == cap(r.chunk)
}

// addAbsent appends a stored id (copied) that the load does not hold,
// to be deleted, and says whether the chunk is full.
func (r *resolver) addAbsent(id []byte) bool {
	full := r.add(id, 0)
	r.chunk[len(r.chunk)-1].absent = true
	return full
}

// lookup finds, for each id of the chunk, the document it names now, if
// any, and that document's buckets: each goroutine a contiguous part.
func (r *resolver) lookup(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	per := (len(r.chunk) + len(r.views) - 1) / len(r.views)
	for w := range r.views {
		lo, hi := min(w*per, len(r.chunk)), min((w+1)*per, len(r.chunk))
		if lo == hi {
			continue
		}
		g.Go(func() error {
			v, old := &r.views[w], &r.olds[w]
			for i := lo; i < hi; i++ {
				if (i-lo)%64 == 63 {
					// NB: a cancel, or another goroutine's failure.
					if err := ctxErr(gctx); err != nil {
						return err
					}
				}
				e := &r.chunk[i]
				num, err := r.db.lookupStored(v, string(e.id), old)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if e.keys, err = r.db.bucketKeys(e.keys[:0], old.Signature); err != nil {
					return classify(err)
				}
				e.found, e.num, e.expires = true, num, old.Expires
			}
			return nil
		})
	}
	return g.Wait()
}

func (r *resolver) close() {
	for _, v := range r.views {
		v.it.Close()
	}
}

// posting is a posting's value in the band sorters: the doc number and
// the removal flag in its low bit, so that a bucket's postings sort by
// doc number, adds before removes.
func posting(doc uint64, remove bool) uint64 {
	if remove {
		return doc<<1 | 1
	}
	return doc << 1
}

// isDropped reports whether doc number n is a document of the load that
// a later one with the same id superseded.
func (l *loader) isDropped(n uint64) bool {
	if n < l.base {
		return false
	}
	s := n - l.base
	return l.dropped[s/64]&(1<<(s%64)) != 0
}

// writeTables is stage 3: the SSTables other than stage 1's, each range
// apart from the others (an ingest takes non-overlapping files): deletes
// of replaced records (below base), the records tables of stage 1 —
// rewritten without the records that a later occurrence of their id
// superseded —, and the id map, the counters and one merge operand per
// posting list.
func (l *loader) writeTables(ctx context.Context) error {
	slices.Sort(l.oldDocs)
	if len(l.oldDocs) > 0 {
		var kbuf []byte
		dels, err := l.tables.write("deletes", func(w tableSink) error {
			for _, n := range l.oldDocs {
				if err := w.del(codec.AppendDocKey(kbuf[:0], n)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		l.paths = append(l.paths, dels...)
	}
	if err := l.keepRecords(ctx); err != nil {
		return err
	}
	if err := l.writeExpiries(); err != nil {
		return err
	}
	// NB: the id map and counters, and the posting lists split by band
	// range, are written concurrently (one part per core): each part's keys
	// are a range of their own, so the tables never overlap. On one core
	// this stage took 10 s of a 1M-document build.
	l.removals.Seal()
	<-l.sealed
	B := l.db.bands.B
	parts := max(1, min(runtime.GOMAXPROCS(0), B))
	partPaths := make([][]string, parts+1)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		ids, err := l.tables.write("ids", func(w tableSink) error {
			var kbuf []byte
			return l.ids.Replay(func(id []byte, n uint64) error {
				kbuf = codec.AppendIDKey(kbuf[:0], string(id))
				if n == deletedID {
					return w.del(kbuf)
				}
				return w.set(kbuf, codec.EncodeDocNum(n))
			})
		})
		if err != nil {
			return err
		}
		// NB: the counters in a table of their own. Open leaves the
		// manifest and counters keys in the memtable, so a load into it is
		// a flushable ingest, and at the flush Pebble places each of the
		// load's tables by itself, at the lowest level it overlaps nothing.
		// The id map's table, when it ended with the counters, spanned the
		// manifest key too, so it overlapped the level 0 table the
		// memtable had just been flushed to: it went to level 0 and was
		// then compacted into the level below, every id rewritten, after
		// the load was done (1 s of a million-document build). Now only
		// the counters' table does (TestFreshLoadIsNotRewritten).
		counters, err := l.tables.write("counters", func(w tableSink) error {
			return w.set(codec.CountersKey, codec.EncodeCounters(l.counters))
		})
		partPaths[parts] = append(ids, counters...)
		return err
	})
	for part := range parts {
		g.Go(func() (err error) {
			from, to := part*B/parts, (part+1)*B/parts
			partPaths[part], err = l.tables.write(fmt.Sprintf("postings-%d", part), func(w tableSink) error {
				return l.writePostings(gctx, w, from, to)
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, pp := range partPaths {
		l.paths = append(l.paths, pp...)
	}
	return nil
}

// writeExpiries adds a table of the expiry index's changes: the keys of
// the replaced documents that had an expiry deleted, a key for every
// document of the load set (when it has an expiry). The load's keys share
// one expiry, so they come in doc number order; both lists are merged in
// key order. The 'x' keys are a range no other table of the load touches.
func (l *loader) writeExpiries() error {
	if len(l.oldXKeys) == 0 && l.expires == 0 {
		return nil
	}
	slices.SortFunc(l.oldXKeys, bytes.Compare)
	paths, err := l.tables.write("expiry", func(w tableSink) error {
		old := l.oldXKeys
		var k []byte
		for s := uint64(0); l.expires != 0 && s < l.seq; s++ {
			n := l.base + s
			if l.isDropped(n) {
				continue
			}
			k = codec.AppendExpiryKey(k[:0], l.expires, n)
			for len(old) > 0 && bytes.Compare(old[0], k) < 0 {
				if err := w.del(old[0]); err != nil {
					return err
				}
				old = old[1:]
			}
			if err := w.set(k, nil); err != nil {
				return err
			}
		}
		for _, o := range old {
			if err := w.del(o); err != nil {
				return err
			}
		}
		return nil
	})
	l.paths = append(l.paths, paths...)
	return err
}

// keepRecords adds stage 1's records tables to the ingest, each rewritten
// without its dropped records if it holds any.
func (l *loader) keepRecords(ctx context.Context) error {
	for i, path := range l.recPaths {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		first, end := l.recFirst[i], l.seq
		if i+1 < len(l.recFirst) {
			end = l.recFirst[i+1]
		}
		hasDropped := false
		for s := first; s < end && !hasDropped; s++ {
			hasDropped = l.isDropped(l.base + s)
		}
		if !hasDropped {
			l.paths = append(l.paths, path)
			continue
		}
		kept, err := l.tables.rewrite(path, func(k []byte) bool {
			n, err := codec.ParseDocKey(k)
			return err != nil || !l.isDropped(n)
		})
		if err != nil {
			return err
		}
		l.paths = append(l.paths, kept...)
	}
	return nil
}

// writePostings writes one merge operand per posting list of the bands
// [from, to): the load's postings (less the dropped documents') merged
// with the replaced documents' removals.
func (l *loader) writePostings(ctx context.Context, w tableSink, from, to int) error {
	// NB: into an index with no live document, each list is the whole
	// list (what an older list holds names deleted documents only, and
	// doc numbers are never reused), so it is written as a value, not a
	// merge operand: reading an operand goes through the merge operator,
	// which was two thirds of the candidate scan of Pairs (and of every
	// posting read) after a build. Lists merged onto it later treat it as
	// their base.
	put := w.merge
	if l.fresh {
		put = w.set
	}
	// NB: a list given removals alone (of replaced and deleted documents)
	// that then holds no live posting is deleted in the load's table, in
	// place of its operand (dropEmptied, as the expiry sweep does): it was
	// left an empty key until a purge, 1,149,866 of 5,219,739 lists after
	// 100,000 replacements in a 300,000-document index, and the handle's
	// Close purging them took 0.6-0.9x the load's own time. Read in key
	// order from the index before the load (the writer lock is held: no
	// operand arrives meanwhile).
	var emptied emptiedFunc
	if !l.fresh {
		upper := codec.PostingPrefixEnd
		if to < l.db.bands.B {
			upper = codec.AppendPostingKey(nil, to, 0)
		}
		lists, err := l.db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.AppendPostingKey(nil, from, 0), UpperBound: upper})
		if err != nil {
			return classify(err)
		}
		defer lists.Close()
		emptied = dropEmptied(lists)
	}
	var listKey, vbuf []byte
	var list []codec.Posting
	curBand, cur := -1, uint64(0)
	flushList := func() error {
		if len(list) == 0 {
			return nil
		}
		defer func() { list = list[:0] }()
		listKey = codec.AppendPostingKey(listKey[:0], curBand, cur)
		if emptied != nil {
			drop, err := emptied(listKey, list)
			if err != nil {
				return err
			}
			if drop {
				return w.del(listKey)
			}
		}
		vbuf = codec.AppendPostings(vbuf[:0], list)
		return put(listKey, vbuf)
	}
	sorters := []*extsort.BandSorter{l.postings, l.removals}
	bands := newBandCounter(progressOf(ctx), from)
	for band := from; band < to; band++ {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if err := extsort.MergeBand(sorters, band, func(e extsort.BandEntry) error {
			if band != curBand || e.Bucket != cur {
				bands.at(band, uint32(e.Bucket))
				if err := flushList(); err != nil {
					return err
				}
				curBand, cur = band, e.Bucket
			}
			n, remove := e.Value>>1, e.Value&1 == 1
			if !remove && l.isDropped(n) {
				return nil
			}
			list = append(list, codec.Posting{Doc: n, Remove: remove})
			return nil
		}); err != nil {
			return err
		}
		bands.upTo(band + 1)
	}
	return flushList()
}

// ingest is stage 4: every table in one atomic Ingest, then the counters
// (Load then flushes, outside the writer lock).
func (l *loader) ingest(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if l.db.qcache != nil {
		// NB: before the tables are visible (see queryCache).
		l.db.qcache.changingAll(l.counters)
	}
	// NB: one Ingest call is atomic: every file gets the same sequence
	// number and becomes visible at once. Once begun it is not cancelled.
	// NB: through pebbleWrite: Pebble panics when the manifest's write
	// fails, and Load panicked, leaving its commit pipeline locked: the
	// handle's next write and Close hung (a fault-injection review's
	// FI-3). The store stops instead (ErrStopped).
	if err := l.db.pebbleWrite(func() error { return l.db.pdb.Ingest(context.Background(), l.paths) }); err != nil {
		if l.db.qcache != nil {
			// NB: nothing became visible: back to the stored version, or
			// the floor would stay above every version until NextDoc
			// caught up and no list would be served.
			l.db.qcache.changingAll(l.db.counters)
		}
		// NB: unprefixed: a stopped store's "lshdb: the store stopped"
		// said the prefix twice (a read-through's RT8-4).
		return classify(fmt.Errorf("lshdb: ingesting the load: %w", unprefixed{err}))
	}
	// NB: the load is in the index from here on: its counters are the
	// handle's before anything else can fail, or the next write would
	// hand out its doc numbers again.
	l.db.setCounters(l.counters)
	return nil
}
