package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lshdb/lshdb/codec"
)

// Compact sweeps the documents that have expired (SweepExpired), deletes
// the posting lists that deletes and upserts emptied (PurgeEmptyLists; a
// damaged list stops that purge with a warning, not the compaction),
// then rewrites the whole store, so that the space of the documents
// deleted, replaced or expired, and of those lists, is freed now rather
// than whenever Pebble's compactions reach it: a nightly build
// that replaces the whole index leaves the old records in the tables
// until then (220,000 generated documents loaded five times took 490 MiB
// on disk against 175 MiB for one load). It takes a fraction of a build's
// time (0.16-0.44× a build of the same 200,000-300,000 generated
// documents), on every core; reads and writes go on meanwhile
// (writes may stall while it holds the compaction slots; its purge takes
// the writer lock for each batch of emptied lists, so that behind a Load
// it waits for the load's end). ctx cancels it
// (the store is left as it was, or partly compacted).
//
// Every table is read, so that damage to the index's files is found
// (ErrCorrupt, naming the table), as check finds it: those the
// compaction rewrites are read by it, and those it keeps as they were (a
// table moved to another level) are read after it.
//
// On Redis it does nothing (Redis frees a deleted key's memory at once).
// A read-only handle gets ErrReadOnly. It needs free space for the live
// data it writes anew, beyond the reserve of writes that free space (a
// writable Open's and a new log's room: 34 MiB by default, or
// Options.DiskReserve if less; see Options.DiskReserve) (estimated as the
// store's size times 1.5 times the live share of the documents ever
// written, at most the store's size), and is refused with ErrDiskFull
// without it (nothing rewritten; the sweep before it may have removed
// expired documents, or been refused itself for want of room).
func (db *DB) Compact(ctx context.Context) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if db.rkv != nil {
		return nil
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: the documents expired and not yet swept first: compacted as
	// they were, their space stayed (20,000 expired of 21,000 took 38 MiB
	// after a compaction, 0.4 MiB after a sweep and one), and the process
	// that asked ended with the background sweep barely begun.
	if _, err := db.countedSweep(ctx); err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return cerr
		}
		return fmt.Errorf("compacting: sweeping the expired documents first (those swept are swept): %w", err)
	}
	// NB: and the emptied lists, which a compaction cannot drop (the
	// merge operator keeps an empty value: see PurgeEmptyLists): the doc
	// said Compact freed their space, and 252,099 empty lists of 544,624
	// were all still there after one (a review of a long-lived handle
	// under churn, CH2).
	// A damaged list stops the purge, not the compaction, which reads
	// it as a damaged list (Check names it, and check --repair mends it).
	if _, err := db.countedPurge(ctx); err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return cerr
		}
		if !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("compacting: deleting the emptied posting lists first (those deleted are deleted): %w", err)
		}
		db.opts.Logger.Warn("lshdb: compacting without deleting the emptied posting lists first, for a damaged one (lshdb check --repair mends it)", "err", err)
	}
	// NB: a compaction writes the new tables before it deletes the old
	// ones, and Pebble panics when the disk fills: as a write that
	// frees space, it is refused below the open's reserve (roomToFree;
	// it ignored DiskReserve once), with room for
	// what it writes. That is about the live data, which a store of
	// replaced and deleted documents holds a fraction of: the live share
	// of the documents ever written, half again for what does not shrink
	// with them (postings, ids). Room for the whole store refused the
	// compaction a disk filling with replaced records needs (a review).
	need := db.storeBytes()
	c := db.published.Load()
	if written := max(c.NextDoc, 1) - 1; written > 0 && c.Live < written {
		need = min(need, int64(float64(need)*float64(c.Live)/float64(written)*1.5))
	}
	if err := db.roomToFree(need); err != nil {
		return fmt.Errorf("compacting, which writes the live data anew before it frees the old: %w", err)
	}
	before, err := db.tableNums()
	if err != nil {
		return classify(fmt.Errorf("lshdb: compacting: %w", err))
	}
	// NB: every key lshdb writes is under one of codec's prefixes, from
	// 'd' (documents) to 'x' (expiries).
	// NB: through pebbleWrite: its flush rotates the write-ahead log, and
	// Pebble panics when that fails (FI-3: Compact panicked).
	if err := db.pebbleWrite(func() error { return db.pdb.Compact(ctx, codec.DocPrefix, codec.ExpiryPrefixEnd, true) }); err != nil {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		return classify(fmt.Errorf("lshdb: compacting: %w", unprefixed{err}))
	}
	if err := db.readUnrewritten(ctx, before); err != nil {
		return err
	}
	if db.manifestNow().UpgradeUncompacted {
		// NB: the old records an upgrade left went with the rest: the
		// manifest says so, or the next upgrade compacts again.
		if err := db.wmu.lock(cmp.Or(ctx, db.closing)); err != nil {
			return err
		}
		err := db.clearUpgradeMark()
		db.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("lshdb: compacted, but writing the manifest that says so failed (the next compaction or upgrade tries again): %w", err)
		}
	}
	db.awaitObsoleteDeletion(ctx)
	return nil
}

// obsoleteWait bounds how long Compact waits for Pebble to delete the
// tables it made obsolete.
const obsoleteWait = 30 * time.Second

// awaitObsoleteDeletion waits, up to obsoleteWait or ctx's end, until
// Pebble has deleted the tables and blob files that no longer belong to
// the store and that no iterator holds: it deletes them in the
// background, so a size read right after a compaction counted them (lshdb
// compact reported 75 MiB after, where the index took 25 MiB a moment
// later). Tables an open iterator holds (zombies) go when it closes, and
// are not waited for.
func (db *DB) awaitObsoleteDeletion(ctx context.Context) {
	deadline := time.Now().Add(obsoleteWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		m := db.pdb.Metrics()
		if m.Table.ObsoleteCount == 0 && m.BlobFiles.Local.ObsoleteCount == 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// tableNums returns the numbers of the store's tables.
func (db *DB) tableNums() (map[uint64]bool, error) {
	levels, err := db.pdb.SSTables()
	if err != nil {
		return nil, err
	}
	nums := map[uint64]bool{}
	for _, level := range levels {
		for _, t := range level {
			nums[uint64(t.FileNum)] = true
		}
	}
	return nums, nil
}

// readUnrewritten reads every key and value of the tables that a
// compaction kept as they were (a move to another level keeps a table's
// number), as tables rewritten were read: their blocks' checksums are
// checked, and damage is ErrCorrupt naming the table.
//
// NB: a compaction of an index of one table moved it: its damaged block
// was never read, and compact said "compacted" and exited 0 where check
// exited 4 (a bad-input review, B5).
func (db *DB) readUnrewritten(ctx context.Context, before map[uint64]bool) error {
	levels, err := db.pdb.SSTables()
	if err != nil {
		return classify(fmt.Errorf("lshdb: compacting: %w", err))
	}
	for _, level := range levels {
		for _, t := range level {
			if !before[uint64(t.FileNum)] {
				continue
			}
			hi := append(slices.Clip(t.Largest.UserKey), 0) // NB: the bound is exclusive
			if err := scan(ctx, db.pdb, t.Smallest.UserKey, hi, func(_, _ []byte) {}); err != nil {
				if cerr := ctxErr(ctx); cerr != nil {
					return cerr
				}
				return fmt.Errorf("lshdb: compacted, but reading table %s, which the compaction kept as it was, failed: %w", t.FileNum, err)
			}
		}
	}
	return nil
}
