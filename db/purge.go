package db

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
)

// PurgeResult is what Purge removed.
type PurgeResult struct {
	// SweptExpired counts the documents whose TTL had passed, removed
	// first (SweepExpired).
	SweptExpired int
	// PurgedLists counts the emptied posting lists deleted.
	PurgedLists int
}

// Purge is PurgeEmptyLists that also counts the expired documents it
// sweeps first.
func (db *DB) Purge(ctx context.Context) (PurgeResult, error) {
	var r PurgeResult
	var err error
	if r.SweptExpired, err = db.SweepExpired(ctx); err != nil {
		return r, err
	}
	r.PurgedLists, err = db.purgeLists(ctx)
	return r, err
}

// PurgeEmptyLists deletes the posting lists that hold no live posting —
// the keys that deletes and upserts leave behind when they remove a
// bucket's last document — and returns how many it deleted. Each batch of
// deletes is synced unless the database was opened with NoSync. Writers
// (and loads) wait only while a batch of deletes is made (of lists
// that looked empty in the scan, each read again);
// readers do not wait, and see no difference.
//
// On Redis it only sweeps the expired documents (SweepExpired) and
// returns 0: a set is deleted with its last member, so no list is ever
// left empty.
//
// NB: the merge operator cannot drop an emptied list itself: Pebble's
// DeletableFinish panics in compactions (cockroachdb/pebble#6168). Holding
// the writer lock is what makes the delete safe: no merge operand can
// arrive between reading a list as empty and deleting it.
func (db *DB) PurgeEmptyLists(ctx context.Context) (int, error) {
	// NB: the expired documents first (SweepExpired): removing them may
	// empty lists.
	r, err := db.Purge(ctx)
	return r.PurgedLists, err
}

// purgeLists deletes the emptied posting lists (PurgeEmptyLists without
// the sweep). It scans the lists without the writer lock, and takes it
// for each batch of those that looked empty, to read each again and
// delete it if it still is.
//
// NB: it held the writer lock for the whole scan: every write waited 5 s
// behind a purge of 4.6 million lists, 15.7 s behind one of 16 million
// (an operator's review, lshdb serve under a TTL workload).
func (db *DB) purgeLists(ctx context.Context) (int, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	if db.rkv != nil {
		return 0, nil // NB: after Purge's sweep, which refuses a handle whose index is gone
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	return db.countedPurge(ctx)
}

// countedPurge is purgeLists' work on a handle entered (Compact's too):
// the purge, counted in Metrics.
func (db *DB) countedPurge(ctx context.Context) (int, error) {
	// NB: the lists remembered for Close are among those it reads; they
	// are remembered again if it fails (cancelled by Close, say).
	keys, overflow := db.emptiable.take()
	removed := db.removedDocs()
	purged, err := db.scanAndPurge(ctx)
	if err != nil {
		db.emptiable.restore(keys, overflow)
	}
	db.counts.purges.Add(1)
	db.counts.purged.Add(uint64(purged))
	if err == nil {
		db.purgedAt.Store(removed + 1)
	} else if workFailed(err) {
		db.counts.purgeErrors.Add(1)
	}
	return purged, err
}

// scanAndPurge is purgeLists' work: it scans the posting lists a batch of
// candidates at a time (emptyListsFrom) and deletes each batch's
// (purgeCandidates).
func (db *DB) scanAndPurge(ctx context.Context) (int, error) {
	purged, seen := 0, 0
	for from := codec.PostingPrefix; ; {
		candidates, next, err := db.emptyListsFrom(ctx, from, &seen)
		if err != nil {
			return purged, err
		}
		n, err := db.purgeCandidates(ctx, candidates)
		purged += n
		if err != nil || next == nil {
			return purged, err
		}
		from = next
	}
}

// emptyListsFrom scans the posting lists from the key from on until it
// has purgeBatch that look empty, and returns them and the key the next
// scan starts at (nil at the end of the lists). seen counts the lists
// read, for the checks of ctx.
//
// NB: its iterator is closed before purgeCandidates waits for the writer
// lock. An open iterator pins the memtables and tables it reads, and a
// load holds the lock for its whole input: a purge waiting behind one
// kept every table that the load's flushes and compactions made obsolete
// on disk until the load ended (a maintainer's review, P2).
func (db *DB) emptyListsFrom(ctx context.Context, from []byte, seen *int) (candidates [][]byte, next []byte, _ error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return nil, nil, classify(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if *seen++; *seen%1024 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, nil, err
			}
		}
		garbage, err := compaction.Purgeable(it.Value())
		if err != nil {
			return nil, nil, classify(fmt.Errorf("posting list %x: %w", it.Key(), err))
		}
		if !garbage {
			continue
		}
		candidates = append(candidates, slices.Clone(it.Key()))
		if len(candidates) == purgeBatch {
			// NB: the key right after this one (keys are compared
			// bytewise): the next scan starts past it.
			return candidates, append(slices.Clone(it.Key()), 0), nil
		}
	}
	return candidates, nil, classify(it.Error())
}

// removedDocs is how many documents this index has removed (deleted,
// replaced or expired) as of the last write: the doc numbers handed out
// that are no longer stored. Only a removal empties a posting list, so
// while it stays the same no list empties (see startPurger).
func (db *DB) removedDocs() uint64 {
	if c := db.published.Load(); c != nil {
		return c.NextDoc - c.Live
	}
	return 0
}

// purgeBatch is how many lists that looked empty purge reads again and
// deletes under the writer lock at a time. NB: at 1 MiB of keys (80,000
// lists) a put beside a purge of 567,000 lists waited up to 1.08 s.
const purgeBatch = 4096

// purgeCandidates deletes, under the writer lock, those of the posting
// lists keys (sorted) that hold no live posting, read again under the
// lock: a write may have added to one since the scan read it, and no
// operand can arrive between a list's read and its delete (see
// PurgeEmptyLists). The batch is synced unless the database was opened
// with NoSync.
func (db *DB) purgeCandidates(ctx context.Context, keys [][]byte) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if purgeWaitHook != nil {
		purgeWaitHook()
	}
	if err := db.wmu.lock(ctx); err != nil {
		return 0, err
	}
	defer db.wmu.Unlock()
	// NB: one iterator, sought forward key by key (keys are sorted), not
	// a Get each: beside synced puts, the purge of 567,000 lists took
	// 4.2 s with a Get each and 3.5 s with one iterator.
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: keys[0], UpperBound: append(slices.Clone(keys[len(keys)-1]), 0)})
	if err != nil {
		return 0, classify(err)
	}
	defer it.Close()
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, k := range keys {
		v, ok, err := seekExact(it, k)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		garbage, err := compaction.Purgeable(v)
		if err != nil {
			return 0, classify(fmt.Errorf("posting list %x: %w", k, err))
		}
		if garbage {
			if err := b.Delete(k, nil); err != nil {
				return 0, err
			}
		}
	}
	if b.Empty() {
		return 0, nil
	}
	if err := db.roomToFree(2 * int64(b.Len())); err != nil {
		return 0, err
	}
	wo := pebble.Sync
	if db.opts.NoSync {
		wo = pebble.NoSync
	}
	n := int(b.Count())
	if err := db.pebbleWrite(func() error { return b.Commit(wo) }); err != nil {
		return 0, err
	}
	return n, nil
}

// purgeWaitHook, when set (by tests), is called as purgeCandidates is
// about to wait for the writer lock.
var purgeWaitHook func()

// startPurger runs purgeLists every Options.PurgeEvery until the handle
// closes (a writable handle on a directory index whose PurgeEvery is
// not negative), the first time within a minute of the open: a server
// restarted more often than the interval purged never. A tick is skipped
// when no document was removed since the start of the last purge that
// completed (removedDocs): it would scan every list for nothing, once an
// hour on an index that only grows or is only read. Its failures are
// logged: the next purge tries again.
func (db *DB) startPurger() {
	if db.opts.ReadOnly || db.opts.PurgeEvery < 0 || db.rkv != nil {
		return
	}
	if c := db.published.Load(); c != nil && max(c.NextDoc, 1)-1 == c.Live {
		// NB: no document was ever removed (each written is live): no
		// list can be empty, and the ticks skip until one is. The first
		// scanned every list of an index that only grows (a
		// read-through's R5).
		db.purgedAt.Store(db.removedDocs() + 1)
	}
	db.repeat(min(db.opts.PurgeEvery, time.Minute), db.opts.PurgeEvery, func() bool {
		if at := db.purgedAt.Load(); at != 0 && at-1 == db.removedDocs() {
			db.counts.purgesSkipped.Add(1)
			return true
		}
		n, err := db.purgeLists(db.closing)
		// NB: nothing is logged once the handle closes (see repeat).
		switch {
		case db.closing.Err() != nil || errors.Is(err, ErrClosed):
			return false
		case err != nil:
			db.opts.Logger.Warn("lshdb: purging emptied posting lists", "err", err)
		case n > 0:
			db.opts.Logger.Info("lshdb: purged emptied posting lists", "lists", n)
		}
		return true
	})
}

// emptiableLists are the posting lists that this handle's writes gave
// removals alone (of deleted and replaced documents), each of which may
// now hold no live posting: Close deletes those that are
// (purgeEmptiable), a seek each in key order.
//
// NB: each stayed, an empty key, until a purge: a handle open an hour
// purges (startPurger), but a command lasts seconds, and an index written
// by cron's inserts and deletes alone held 1,275,222 empty lists beside
// 273,873 live ones after 100,000 replacements, its queries 1.13-1.8x and
// pairs up to 1.9x a fresh build's (an operator's lifecycle review, LC2).
// Deleted in each write's batch, as the sweep deletes those it empties,
// they cost a read of each list under the writer lock: batches of 1,000
// upserts ran at 0.67-0.73x (BenchmarkPutUpsert).
type emptiableLists struct {
	mu   sync.Mutex
	keys []postingKey
	// overflow: more than maxEmptiable were written; Close purges every
	// list instead (countedPurge).
	overflow bool
	off      bool // Options.keepEmptied (tests)
}

// maxEmptiable bounds the lists a handle remembers (16 bytes each); a
// variable for a test.
var maxEmptiable = 1 << 21

func (e *emptiableLists) add(keys []postingKey) {
	if len(keys) == 0 || e.off {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.overflow {
		return
	}
	if len(e.keys)+len(keys) > maxEmptiable {
		// NB: a list that many writes emptied again is remembered once:
		// the bound is on distinct lists.
		slices.SortFunc(e.keys, comparePostingKeys)
		e.keys = slices.Compact(e.keys)
	}
	if len(e.keys)+len(keys) > maxEmptiable {
		e.keys, e.overflow = nil, true
		return
	}
	e.keys = append(e.keys, keys...)
}

func comparePostingKeys(a, b postingKey) int {
	return cmp.Or(cmp.Compare(a.band, b.band), cmp.Compare(a.bucket, b.bucket))
}

// restore remembers again what take returned, for a purge that failed.
func (e *emptiableLists) restore(keys []postingKey, overflow bool) {
	if overflow {
		e.mu.Lock()
		e.keys, e.overflow = nil, true
		e.mu.Unlock()
		return
	}
	e.add(keys)
}

// take returns the lists remembered and forgets them.
func (e *emptiableLists) take() ([]postingKey, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys, overflow := e.keys, e.overflow
	e.keys, e.overflow = nil, false
	return keys, overflow
}

// closePurgeWait bounds the purge that Close runs of the lists its
// writes may have emptied; what it leaves, a purge deletes later.
var closePurgeWait = 10 * time.Second // a variable for a test

// purgeEmptiable deletes those of the lists this handle's writes gave
// removals alone (emptiableLists) that hold no live posting, or every
// emptied list when there were too many to remember; the caller has
// entered the handle, or closed it to every call (Close).
func (db *DB) purgeEmptiable(ctx context.Context) (int, error) {
	keys, overflow := db.emptiable.take()
	if overflow {
		n, err := db.countedPurge(ctx)
		if err != nil {
			db.emptiable.restore(nil, true)
		}
		return n, err
	}
	if len(keys) == 0 {
		return 0, nil
	}
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		enc[i] = codec.AppendPostingKey(nil, k.band, k.bucket)
	}
	slices.SortFunc(enc, bytes.Compare)
	enc = slices.CompactFunc(enc, bytes.Equal)
	purged := 0
	for i := 0; i < len(enc); i += purgeBatch {
		n, err := db.purgeCandidates(ctx, enc[i:min(i+purgeBatch, len(enc))])
		purged += n
		if err != nil {
			db.emptiable.restore(keys, false) // NB: a purge (or the next Close) tries again
			return purged, err
		}
	}
	db.counts.purged.Add(uint64(purged))
	return purged, nil
}

// purgeAtClose is Close's purgeEmptiable, bounded by closePurgeWait, once
// the calls in flight have ended (none can begin); its failure is
// logged, not returned: the lists are only garbage. Its bound running
// out is no failure (a delete of 100,000 of 300,000 documents leaves
// more to check than 10 s allow): said at the Info level, with what it
// left; it was a warning naming "context deadline exceeded", which broke
// lshdb delete --quiet's silence (an operator's review, O2-8).
func (db *DB) purgeAtClose() {
	if db.rkv != nil || db.opts.ReadOnly || db.damage.stopped.Load() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closePurgeWait)
	defer cancel()
	n, err := db.purgeEmptiable(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		keys, overflow := db.emptiable.take()
		left := fmt.Sprintf("up to %d", len(keys))
		if overflow {
			left = "some"
		}
		db.opts.Logger.Info(fmt.Sprintf("lshdb: deleted %d of the posting lists this handle's writes emptied at its close, within its %v, and left %s for a purge (lshdb purge, serve --purge-every, db.DB.PurgeEmptyLists): they hold no document, and answers skip them", n, closePurgeWait, left))
	case err != nil:
		db.opts.Logger.Warn("lshdb: deleting the posting lists that this handle's writes emptied, at its close (a purge deletes them later: lshdb purge)", "err", err)
	}
}
