package db

// Expiry: documents put with a TTL (WriteOptions.TTL, ExpireAt).
//
// A record holds its expiry time, and every read applies
// compaction.Expired to what it reads, so an expired document is never
// returned, swept or not. On Pebble, an expiry index (codec's 'x' keys:
// expiry time, doc number) orders the expiring documents by time; the
// sweep reads its front and deletes what is due, SweepBatch documents per
// write batch under the writer lock, as deletes do (record, id, removal
// postings, expiry key), except that a list the batch empties is deleted
// (compaction.EmptiedBy: a delete leaves them to PurgeEmptyLists). A background sweep runs every
// Options.ExpirySweep on a writable handle; SweepExpired runs one now.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
)

// SweepExpired removes the documents whose expiry has passed (their
// records, ids and postings) and returns how many it removed. The
// background sweep (Options.ExpirySweep) calls it; call it to sweep now,
// for example on a handle opened with a negative ExpirySweep.
func (db *DB) SweepExpired(ctx context.Context) (int, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	return db.countedSweep(ctx)
}

// countedSweep is sweep, counted in the handle's metrics: a sweep, and
// its error unless the handle closed or ctx ended (the documents it
// removes are counted as each batch commits: countSwept). The caller
// holds db.mu for reading.
func (db *DB) countedSweep(ctx context.Context) (int, error) {
	n, err := db.sweep(ctx)
	db.counts.sweeps.Add(1)
	if workFailed(err) {
		db.counts.sweepErrors.Add(1)
	}
	return n, err
}

// countSwept counts in the metrics (ExpiredSwept) the documents a sweep's
// batch removed, once it committed. NB: per batch, not at the sweep's
// end: a sweep of 300,000 documents that expired together ran 80 s with
// the count at 0 and the overdue time growing, which the metrics' docs
// read as a sweep that fails or is off (a TTL review's TTL-3).
func (db *DB) countSwept(n int) { db.counts.swept.Add(uint64(n)) }

// workFailed reports whether err is a failure of the work itself, which
// the metrics count (ListPurgeErrors, ExpirySweepErrors): not its end by
// Close or by its context.
func workFailed(err error) bool {
	return err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (db *DB) sweep(ctx context.Context) (int, error) {
	if db.rkv != nil {
		db.sweepMu.Lock()
		defer db.sweepMu.Unlock()
		return db.redisSweep(ctx)
	}
	total := 0
	for {
		if err := ctxErr(ctx); err != nil {
			return total, err
		}
		n, more, err := db.sweepBatch(ctx)
		if err != nil {
			// NB: n counts the batch's documents, not committed: the
			// count of a sweep refused for want of room said 4 removed.
			return total, err
		}
		total += n
		db.countSwept(n)
		if !more {
			return total, nil
		}
	}
}

// expiryOverdue returns how long the oldest expired document has waited
// for the sweep (0 when none has): one seek into the expiry index.
func (db *DB) expiryOverdue() (time.Duration, error) {
	it, err := db.expiryIter(db.pdb)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return 0, classify(it.Error())
	}
	x, _, err := codec.ParseExpiryKey(it.Key())
	if err != nil {
		return 0, classify(err)
	}
	if now := db.now().UnixNano(); compaction.Expired(x, now) {
		return time.Duration(now - x), nil
	}
	return 0, nil
}

// dueExpiries returns an iterator over the expiry index.
func (db *DB) expiryIter(r pebble.Reader) (*pebble.Iterator, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: codec.ExpiryPrefix, UpperBound: codec.ExpiryPrefixEnd})
	return it, classify(err)
}

// anyExpired reports whether a document of the index had expired at now
// (its expiry index's first entry, the earliest: a seek), or its expiry
// index cannot be read as such (then true: the caller looks closer).
func (db *DB) anyExpired(now int64) (bool, error) {
	peek, err := db.expiryIter(db.pdb)
	if err != nil {
		return false, err
	}
	due := false
	if peek.First() {
		x, _, err := codec.ParseExpiryKey(peek.Key())
		due = err != nil || compaction.Expired(x, now)
	}
	return due, classify(errors.Join(peek.Error(), peek.Close()))
}

// sweepBatch removes up to compaction.SweepBatch expired documents in one
// batch; more says that more are due. The caller holds db.mu for reading;
// ctx (the caller's, with Close's end: opCtx) ends its wait for the
// writer lock.
func (db *DB) sweepBatch(ctx context.Context) (n int, more bool, err error) {
	now := db.now().UnixNano()
	// NB: a look before the writer lock: most sweeps find nothing due.
	if due, err := db.anyExpired(now); err != nil || !due {
		return 0, false, err
	}
	// NB: the caller's ctx, not the handle's: behind a Load (which holds
	// the lock for its whole input), a SweepExpired, Purge or Compact
	// whose ctx had ended waited for the Load, then swept and returned
	// nil (a maintainer's review, C3-1).
	if err := db.wmu.lock(ctx); err != nil {
		return 0, false, err
	}
	defer db.wmu.Unlock()
	xit, err := db.expiryIter(db.pdb)
	if err != nil {
		return 0, false, err
	}
	defer xit.Close()
	it, err := db.writeIter()
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	b := db.pdb.NewBatch()
	defer b.Close()
	c := db.counters
	var postings postingOps
	var old docData
	valid := xit.First()
	for ; valid && n < compaction.SweepBatch; valid = xit.Next() {
		x, num, err := codec.ParseExpiryKey(xit.Key())
		if err != nil {
			return n, false, classify(err)
		}
		if !compaction.Expired(x, now) {
			break
		}
		// NB: the key goes whatever it names: removeOld deletes it again
		// for a record that still expires at x, harmlessly.
		if err := b.Delete(xit.Key(), nil); err != nil {
			return n, false, err
		}
		rv, ok, err := seekExact(it, codec.AppendDocKey(nil, num))
		if err != nil {
			return n, false, err
		}
		if !ok {
			continue // a stale key (Check reports it): nothing else to remove
		}
		view, err := codec.ParseDocView(rv)
		if err != nil {
			return n, false, classify(fmt.Errorf("doc %d: %w", num, err))
		}
		if view.Expires != x {
			continue // stale: the record expires at another time
		}
		idKey := codec.AppendIDKey(nil, string(view.ID))
		v, ok, err := seekExact(it, idKey)
		if err != nil {
			return n, false, err
		}
		if named, err := codec.DecodeDocNum(v); !ok || err != nil || named != num {
			continue // not the id's document (Check reports it)
		}
		if err := db.removeOld(it, b, idKey, &old, &postings, &c); err != nil {
			return n, false, err
		}
		if err := b.Delete(idKey, nil); err != nil {
			return n, false, err
		}
		n++
	}
	if valid {
		x, _, err := codec.ParseExpiryKey(xit.Key())
		more = err == nil && compaction.Expired(x, now)
	}
	if b.Empty() {
		return 0, false, nil
	}
	// NB: most buckets hold one document, so most lists a sweep touches
	// it empties: left to purge, they grew without bound under a TTL
	// workload (4.5 of 4.6 million lists empty after 2.5 minutes of 3,000
	// expiring documents a second, in an operator's review), and serve
	// never purges. So a list the batch empties is deleted in the batch,
	// in place of its removal operand: read before the commit (the writer
	// lock is held: no operand arrives in between), where the sweep once
	// wrote the operand, read the list back after the commit and deleted
	// it in a second batch, and the compactions then carried both.
	lists, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.PostingPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return n, more, classify(err)
	}
	defer lists.Close()
	// NB: unsynced: a sweep acknowledges nothing, and one lost to a crash
	// is done again by the next.
	sw, err := db.commitDropping(b, postings, c, &WriteOptions{NoSync: true}, true, dropEmptied(lists))
	if err == nil && sw.b != nil {
		err = sw.wait()
	}
	return n, more, err
}

// startSweeper runs SweepExpired every Options.ExpirySweep until the
// handle closes (a writable handle with a positive ExpirySweep).
func (db *DB) startSweeper() {
	if db.opts.ReadOnly || db.opts.ExpirySweep <= 0 {
		return
	}
	// NB: a sweep at once, then every interval: a command that opens an
	// index for less than the interval still sweeps what is due.
	var failing sweepFailures
	db.repeat(0, db.opts.ExpirySweep, func() bool {
		// NB: a Redis index found gone was said once by the heartbeat;
		// its refused sweep is not said at every tick.
		if db.gone.Load() {
			return false
		}
		_, err := db.SweepExpired(db.closing)
		if db.opts.sweepFault != nil && err == nil {
			err = db.opts.sweepFault()
		}
		if errors.Is(err, ErrClosed) || db.closing.Err() != nil {
			return true
		}
		failing.report(db.opts.Logger, err, time.Now())
		return true
	})
}

// sweepLogEvery is how often the background sweep says that it still
// fails.
const sweepLogEvery = time.Minute

// sweepFailures says the background sweep's failures without a line a
// tick: the first failure at once, then how many more every
// sweepLogEvery while they last, and the first success after them. NB:
// serve sweeps every second, and a Redis failover (10-20 s) wrote a
// warning a second (an operator's review, R7).
type sweepFailures struct {
	since, said time.Time       // of the first failure and the last line; zero: not failing
	total, more int             // failures in all, and since the last line
	seen        map[string]bool // the errors said since the failures began (at most sweepErrorsSaid)
}

// sweepErrorsSaid is the most errors of one stretch of failures that are
// each said at once, the first time they come.
const sweepErrorsSaid = 8

func (f *sweepFailures) report(log *slog.Logger, err error, now time.Time) {
	switch {
	case err == nil && !f.since.IsZero():
		log.Info("lshdb: sweeping expired documents works again", "failed_for", now.Sub(f.since).Round(time.Second), "failures", f.total)
		*f = sweepFailures{}
	case err == nil:
	case f.since.IsZero():
		log.Warn("lshdb: sweeping expired documents", "err", err)
		f.since, f.said, f.total, f.seen = now, now, 1, map[string]bool{err.Error(): true}
	default:
		f.total++
		f.more++
		// NB: an error not said before in this stretch is said at once
		// (the count with it), not a minute later; one said before
		// waits: a failover's errors alternate (connection refused,
		// LOADING, CLUSTERDOWN), and a warning a second came back (a
		// maintainer review's K4).
		fresh := !f.seen[err.Error()] && len(f.seen) < sweepErrorsSaid
		if now.Sub(f.said) >= sweepLogEvery || fresh {
			f.seen[err.Error()] = true
			log.Warn("lshdb: sweeping expired documents still fails", "err", err, "failures_since_last_said", f.more, "failing_for", now.Sub(f.since).Round(time.Second))
			f.said, f.more = now, 0
		}
	}
}

// repeat runs f on its own goroutine after first, then every interval (a
// tick that falls while f runs is dropped), until the handle closes or f
// returns false: the background work of a writable handle, which Close
// does not wait for (f must say nothing once db.closing has ended: a
// logger may be gone).
func (db *DB) repeat(first, interval time.Duration, f func() bool) {
	go func() {
		wait := time.NewTimer(first)
		defer wait.Stop()
		t := time.NewTicker(interval)
		defer t.Stop()
		for tick := wait.C; ; tick = t.C {
			select {
			case <-db.closing.Done():
				return
			case <-tick:
			}
			if !f() {
				return
			}
		}
	}()
}

// pendingExpiry returns how many documents of r's expiry index have
// expired at now and await the sweep, and how many more are set to
// expire; with dueOnly, the first alone (Info's count): the index is in
// expiry order, so the scan ends at the first still to come (one seek
// when none is due), and expiring is 0.
func (db *DB) pendingExpiry(r pebble.Reader, now int64, dueOnly bool) (expired, expiring int, err error) {
	it, err := db.expiryIter(r)
	if err != nil {
		return 0, 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		x, _, err := codec.ParseExpiryKey(it.Key())
		if err != nil {
			it.Close()
			return 0, 0, classify(err)
		}
		switch {
		case compaction.Expired(x, now):
			expired++
		case dueOnly:
			return expired, 0, classify(errors.Join(it.Error(), it.Close()))
		default:
			expiring++
		}
	}
	return expired, expiring, classify(errors.Join(it.Error(), it.Close()))
}
