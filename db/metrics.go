package db

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics is a point-in-time view of the storage engine's health, for
// monitoring (lshdb serve exports it as Prometheus metrics). Counters
// (Compactions, Flushes, CacheHits, …) only grow while the database is
// open; the others are current values.
// It is a plain struct of numbers, not Pebble's metrics type, so that
// the API does not change with Pebble's version.
type Metrics struct {
	Docs uint64 // stored documents

	Compactions           int64         // compactions run
	CompactionsInProgress int64         // running now
	CompactionDebt        uint64        // estimated bytes to compact before the tree is stable
	CompactionTime        time.Duration // spent compacting, in total
	Flushes               int64         // memtable flushes run
	Ingests               uint64        // table ingests (bulk loads)

	// L0Files and L0Sublevels measure level 0, where flushes and ingests
	// land: many sublevels mean reads consult many tables (read
	// amplification), and at 40 every write waits for compactions (a
	// write stall) until they are fewer.
	L0Files     int64
	L0Sublevels int32
	ReadAmp     int // tables a point read may consult, over all levels

	// Levels[i] are the table files and bytes of level i.
	Levels []LevelMetrics

	CacheBytes  int64 // block cache bytes in use
	CacheCount  int64 // blocks cached
	CacheHits   int64
	CacheMisses int64

	MemTableBytes uint64
	MemTables     int64

	WALFiles int64  // live write-ahead log files
	WALBytes uint64 // live data in them
	// WALPhysicalSize is their size on disk as Pebble last measured it:
	// the current log's is its size when it was opened (0 for a new
	// one, a recycled log's old size), so it lags WALBytes while that
	// log fills.
	WALPhysicalSize uint64
	// WALObsoleteFiles and WALObsoleteSize are logs no longer live,
	// kept on disk to be recycled as the next logs (their space is
	// reused, not freed).
	WALObsoleteFiles int64
	WALObsoleteSize  uint64
	WALBytesIn       uint64 // logical bytes written to the log
	WALBytesWritten  uint64 // physical bytes written, with the log's overhead

	DiskBytes uint64 // the store's files: tables, logs, manifests

	// WriteStalls counts the times Pebble held every write back (too many
	// memtables waiting for their flush, or too many level 0 sublevels),
	// and WriteStallTime is how long they lasted in all, the one in
	// progress included. Each is logged too (Options.Logger).
	WriteStalls    int64
	WriteStallTime time.Duration

	// QueryCache is what the query cache (Options.QueryCacheSize) holds
	// and served; zero with no cache.
	QueryCache QueryCacheMetrics

	// Damaged says that this handle's background work met damage to the
	// index's files (Corruption returns it): run lshdb check.
	Damaged bool
	// DiskFree is the free space of the index's filesystem (-1 where the
	// filesystem cannot tell), and DiskReserve the free space below which
	// writes are refused as ErrDiskFull (Options.DiskReserve, resolved;
	// -1: no check). DiskFullRefusals counts the refusals of the reserve's
	// check: writes, and the temporary files of loads, pairs runs and
	// upgrades, backups, and flushes at Close skipped for want of room.
	DiskFree, DiskReserve int64
	DiskFullRefusals      uint64
	// ExpirySweeps counts the expiry sweeps run, as each ends (the
	// background's every Options.ExpirySweep, and SweepExpired's),
	// ExpirySweepErrors those that failed (each is logged), and
	// ExpiredSwept the documents they removed, as each batch of a sweep
	// commits (a sweep of many documents runs for minutes).
	ExpirySweeps, ExpirySweepErrors, ExpiredSwept uint64
	// ExpiryOverdue is how long the oldest expired document has awaited
	// the sweep (0 when none has): expired documents are never returned,
	// but they are counted (Docs) and take space until swept, so a value
	// that keeps growing while ExpiredSwept does not says the sweep fails
	// (ExpirySweepErrors) or is off (a negative Options.ExpirySweep). It
	// grows during a long sweep too, until every document of the oldest
	// expiry is removed (a build with a TTL gives all of its one expiry).
	ExpiryOverdue time.Duration
	// ListPurges counts the purges of emptied posting lists run (the
	// background's every Options.PurgeEvery, and PurgeEmptyLists'),
	// ListPurgeErrors those that failed (the background's are logged),
	// and ListsPurged the lists they deleted. ListPurgesSkipped counts
	// the background's purges skipped because no document was removed
	// since the last one: no list can have emptied.
	ListPurges, ListPurgeErrors, ListsPurged, ListPurgesSkipped uint64
	// WritersWaiting is the writes (puts, deletes, loads, sweeps, purges)
	// waiting now for another to finish: writes run one at a time, and a
	// load holds the others back for as long as its documents come.
	// WriterWaits counts the writes that waited (given up or not), and
	// WriterWaitTime is how long they waited in all, the waits in
	// progress not included.
	WritersWaiting int64
	WriterWaits    uint64
	WriterWaitTime time.Duration
}

// handleCounts are the figures of Metrics that a handle counts itself.
type handleCounts struct {
	diskFull                   atomic.Uint64 // writes refused by roomFor
	sweeps, sweepErrors, swept atomic.Uint64
	// purges, purgeErrors and purged are the purges of emptied lists
	// (purgeLists), purgesSkipped the background's skipped ones.
	purges, purgeErrors, purged, purgesSkipped atomic.Uint64
}

// QueryCacheMetrics are the query cache's figures: what it holds, and
// counters of its lookups. A list lookup is served (ListHits) only when
// no write changed the posting list since the entry was read (ListStale
// counts the entries found but changed since).
type QueryCacheMetrics struct {
	Bytes      int64 // bytes counted against the budget
	Docs       int64 // document entries held
	Lists      int64 // posting list entries held
	DocHits    int64
	DocMisses  int64
	ListHits   int64
	ListMisses int64 // not cached (a list read once is not: see Options.QueryCacheSize)
	ListStale  int64 // cached, but as of a version a write changed since (or later than the query's)
}

// LevelMetrics describes one level of the store.
type LevelMetrics struct {
	Files int64
	Bytes int64
}

// Metrics returns the storage engine's current figures. It reads no data
// but the front of the expiry index (one seek), and is cheap: monitoring
// may call it on every scrape.
func (db *DB) Metrics() (Metrics, error) {
	if err := db.enter(); err != nil {
		return Metrics{}, err
	}
	defer db.mu.RUnlock()
	if err := db.unsupported("Metrics"); err != nil {
		return Metrics{}, err
	}
	pm := db.pdb.Metrics()
	m := Metrics{
		Docs:                  db.stored(),
		Compactions:           pm.Compact.Count,
		CompactionsInProgress: pm.Compact.NumInProgress,
		CompactionDebt:        pm.Compact.EstimatedDebt,
		CompactionTime:        pm.Compact.Duration,
		Flushes:               pm.Flush.Count,
		Ingests:               pm.Ingest.Count,
		L0Files:               pm.Levels[0].TablesCount,
		L0Sublevels:           pm.Levels[0].Sublevels,
		ReadAmp:               pm.ReadAmp(),
		CacheBytes:            pm.BlockCache.Size,
		CacheCount:            pm.BlockCache.Count,
		CacheHits:             pm.BlockCache.Hits,
		CacheMisses:           pm.BlockCache.Misses,
		MemTableBytes:         pm.MemTable.Size,
		MemTables:             pm.MemTable.Count,
		WALFiles:              pm.WAL.Files,
		WALBytes:              pm.WAL.Size,
		WALPhysicalSize:       pm.WAL.PhysicalSize,
		WALObsoleteFiles:      pm.WAL.ObsoleteFiles,
		WALObsoleteSize:       pm.WAL.ObsoletePhysicalSize,
		WALBytesIn:            pm.WAL.BytesIn,
		WALBytesWritten:       pm.WAL.BytesWritten,
		DiskBytes:             dirBytes(db.opts.FS, db.dir), // NB: as Info says, allocated blocks (Pebble's DiskSpaceUsage counts file sizes)
	}
	if db.stalls != nil {
		m.WriteStalls, m.WriteStallTime = db.stalls.get()
	}
	for _, l := range pm.Levels {
		m.Levels = append(m.Levels, LevelMetrics{Files: l.TablesCount, Bytes: l.TablesSize})
	}
	if db.qcache != nil {
		m.QueryCache = db.qcache.metrics()
	}
	m.Damaged = db.Corruption() != nil
	m.DiskFree, m.DiskReserve = -1, max(db.opts.DiskReserve, -1)
	if u, err := db.opts.FS.GetDiskUsage(db.dir); err == nil {
		m.DiskFree = int64(u.AvailBytes)
	}
	m.DiskFullRefusals = db.counts.diskFull.Load()
	m.ExpirySweeps, m.ExpirySweepErrors, m.ExpiredSwept = db.counts.sweeps.Load(), db.counts.sweepErrors.Load(), db.counts.swept.Load()
	m.ListPurges, m.ListPurgeErrors, m.ListsPurged, m.ListPurgesSkipped = db.counts.purges.Load(), db.counts.purgeErrors.Load(), db.counts.purged.Load(), db.counts.purgesSkipped.Load()
	// NB: an error reading the expiry index (damage there) leaves it 0:
	// failing Metrics hid every figure, Damaged included, just then.
	m.ExpiryOverdue, _ = db.expiryOverdue()
	m.WritersWaiting, m.WriterWaits, m.WriterWaitTime = db.wmu.waiting.Load(), db.wmu.waits.Load(), time.Duration(db.wmu.waited.Load())
	return m, nil
}

// writeStalls counts Pebble's write stalls (its EventListener's
// WriteStallBegin and WriteStallEnd, which come in pairs) and logs them:
// a stall that lasts stallLogAfter is logged then (Warn) and when it ends;
// a shorter one only at Debug. NB: a bulk insert meets stalls of a few
// milliseconds as its memtables wait for a flush, a routine event that
// filled a nightly job's mail with warnings; an operator wants the ones
// that hold writes up.
type writeStalls struct {
	mu     sync.Mutex
	n      int64
	total  time.Duration
	since  time.Time // the stall in progress began; zero: none
	reason string    // the stall in progress's reason
	told   bool      // the stall in progress was logged (it lasted stallLogAfter)
	timer  *time.Timer
	log    *slog.Logger
}

// stallLogAfter is how long a stall lasts before it is logged as one.
var stallLogAfter = time.Second

func (w *writeStalls) begin(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	w.since, w.reason, w.told = time.Now(), reason, false
	n := w.n
	if w.log != nil {
		w.timer = time.AfterFunc(stallLogAfter, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.n == n && !w.since.IsZero() {
				w.told = true
				w.log.Warn("lshdb: pebble: writes stalled", "reason", w.reason, "for", time.Since(w.since).Round(time.Millisecond))
			}
		})
	}
}

// end closes the stall in progress and returns how long it lasted.
func (w *writeStalls) end() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() {
		return 0
	}
	d := time.Since(w.since)
	w.total += d
	w.since = time.Time{}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.log != nil {
		if w.told {
			w.log.Warn("lshdb: pebble: writes resumed", "stalled", d.Round(time.Millisecond), "reason", w.reason)
		} else {
			w.log.Debug("lshdb: pebble: writes stalled briefly", "stalled", d, "reason", w.reason)
		}
	}
	return d
}

// get returns the stalls so far and their time, the one in progress
// included.
func (w *writeStalls) get() (int64, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.total
	if !w.since.IsZero() {
		t += time.Since(w.since)
	}
	return w.n, t
}
