package db

import (
	"context"
	"fmt"

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
// (and loads) wait while it runs; readers do not, and see no difference.
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
// the sweep).
func (db *DB) purgeLists(ctx context.Context) (int, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	if db.rkv != nil {
		return 0, nil
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(ctx); err != nil {
		return 0, err
	}
	defer db.wmu.Unlock()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.PostingPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return 0, classify(err)
	}
	defer it.Close()
	sync := pebble.Sync
	if db.opts.NoSync {
		sync = pebble.NoSync
	}
	b := db.pdb.NewBatch()
	defer func() { b.Close() }()
	purged, seen := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		if seen++; seen%1024 == 0 {
			if err := ctxErr(ctx); err != nil {
				return purged, err
			}
		}
		garbage, err := compaction.Purgeable(it.Value())
		if err != nil {
			return purged, classify(fmt.Errorf("posting list %x: %w", it.Key(), err))
		}
		if !garbage {
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return purged, err
		}
		purged++
		if b.Len() >= 1<<20 {
			if err := db.roomFor(2 * int64(b.Len())); err != nil {
				return purged, err
			}
			if err := b.Commit(sync); err != nil {
				return purged, classify(err)
			}
			b.Close()
			b = db.pdb.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return purged, classify(err)
	}
	if err := db.roomFor(2 * int64(b.Len())); err != nil {
		return purged, err
	}
	if err := b.Commit(sync); err != nil {
		return purged, classify(err)
	}
	return purged, nil
}
