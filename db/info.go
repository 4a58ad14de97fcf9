package db

import (
	"cmp"
	"slices"

	"github.com/cockroachdb/pebble/v2/wal"
	"github.com/lshdb/lshdb/codec"
)

// Info: what an index can say about itself without reading its data.

// Info is the cheap description of a database: its parameters, its
// document count and its size on disk. See [DB.Info].
type Info struct {
	// Params are the parameters stored in the manifest.
	Params Params
	// Docs is the number of stored documents, from the counters the
	// writes keep. It counts the expired documents the expiry sweep has
	// not removed yet (Expired), as Count does.
	Docs uint64
	// Expired is the part of Docs whose TTL has passed: documents that no
	// read returns, which the next expiry sweep removes (a writable
	// handle sweeps every Options.ExpirySweep; a read-only one does not,
	// and a read-only command's Info counts all of them). Counted from
	// the expiry index, earliest first: one seek when none is due.
	Expired uint64
	// Written counts the document numbers ever handed out: each document
	// written takes one never used before (an upsert's too, and each
	// document a Load reads, repeats of an id included). With Docs it tells
	// whether the index was written between two calls: every write changes
	// one of them (a put raises Written, a delete or an expiry sweep lowers
	// Docs), and no two states of an index share both. (On Redis a write
	// raises them in two steps, and one under way may show as the state
	// before it or as one of its own.)
	Written uint64
	// DiskBytes is the space the store's files take on disk, as in
	// [Stats.DiskBytes]: their allocated blocks (what du counts), where
	// the file system says.
	DiskBytes uint64
	// LogBytes is the part of DiskBytes that the write-ahead logs take:
	// Pebble allocates each log ahead (about 1.1 memtables, 9 MiB by
	// default, however little it holds yet) and keeps some to reuse
	// (RecycledLogBytes), so a small index's size is mostly logs. lshdb
	// compact (an open, a [DB.Compact], a close) leaves none of them,
	// until the next write allocates a log again, unless the Compact's
	// purge of emptied posting lists wrote (its log is kept for reuse);
	// a long-lived handle's Compact and Close leave the logs it kept for
	// reuse too, which the next Open deletes (35 MiB of logs beside
	// 9.5 MiB of tables, measured on such a handle). DiskBytes - LogBytes
	// is the figure that follows the data.
	LogBytes uint64
	// TempBytes is the part of DiskBytes that lshdb's temporary files
	// take: a Load's sorted runs and tables, a Pairs run's spill files,
	// while one runs, or left by a process killed during one (the next
	// writable Open removes those).
	TempBytes uint64
	// RecycledLogBytes is the part of DiskBytes that write-ahead logs
	// kept for reuse take: Pebble overwrites such a log as the next one
	// (a synced write to a file of its size is cheaper than to a growing
	// one), so its space is reused, not freed, and compaction does not
	// shrink it. Most of a small index's size may be these (a few
	// memtables' worth).
	RecycledLogBytes uint64
	// DamagedLogCopies are the copies of damaged write-ahead logs that an
	// Open accepting the damage kept in the index's directory
	// (Options.AcceptLogDamage, lshdb check --repair), and of a damaged
	// options file that a writable Open set aside
	// (lshdb-damaged-OPTIONS-NNNNNN): their paths, part of DiskBytes (not
	// of LogBytes). Remove them once examined. Nil if none.
	DamagedLogCopies []string
	// UpgradeUncompacted says that the records an upgrade replaced still
	// take their space: the upgrade was stopped after its ingest, or had
	// no room to compact them. Upgrade (again) or Compact frees it.
	UpgradeUncompacted bool
	// RestoreCopy is the hidden directory beside the index
	// (".NAME.restoring.lshdb-backup.tmp") of a restore into it that is
	// copying the backup, or was stopped while it did (killed), and
	// RestoreCopyBytes its size on disk, not part of DiskBytes: a copy
	// of the backup, as large as it. The next restore into the index, or
	// its next writable Open, removes a stopped one that this host made
	// (its owner file names the host: one another host made, or a
	// container before a restart under another name, is left for
	// whoever knows no restore runs to remove). "" if none.
	RestoreCopy      string
	RestoreCopyBytes uint64
	// Instance names the index: 26 random base32 characters (128 bits)
	// given when it was made; an index built anew in the same place, and
	// a backup, get another. Empty for an index made before lshdb gave it
	// (such an index keeps none).
	Instance string
	// Origin is set in a backup (Backup): the index it copies, and the
	// state it copied.
	Origin *Origin
	// Redis is set for an index on Redis, which has no files (DiskBytes
	// is 0: Stats gives the memory its keys take).
	Redis bool
}

// Origin is the index a backup copies (Info.Origin): its Instance, and
// its Written and Docs at the instant of the copy. While the backup's own
// Written and Docs are these, it holds what the original held then.
// Instant is false for a copy of a Redis index, which has no instant
// (each document is copied as it is when read; Written and Docs are 0).
type Origin struct {
	Instance      string
	Written, Docs uint64
	Instant       bool
}

// originOf returns m's Origin, nil when m is no backup.
func originOf(m *codec.Manifest) *Origin {
	if m.Origin == "" {
		return nil
	}
	return &Origin{Instance: m.Origin, Written: m.OriginWritten, Docs: m.OriginDocs, Instant: m.OriginInstant}
}

// Info returns the database's parameters, document count and size on
// disk. Unlike [DB.Stats] it reads no records: the parameters and the
// count are held in memory since Open, the size is the sum of the
// blocks allocated to the directory's files (as du counts them), and the
// expired documents awaiting the sweep are counted from the expiry
// index's keys, earliest first (one seek when none is due), so it
// answers in microseconds on any index that a writer sweeps.
func (db *DB) Info() (*Info, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if db.rkv != nil {
		// NB: the size is the cluster's: the README gives its cost per
		// document; INFO memory on each master tells it.
		w, n, err := db.rkv.Counters(db.closing)
		if err != nil {
			err = db.countersErr(err)
		}
		in := &Info{Params: db.Params(), Docs: n, Written: w, Instance: db.man.Instance, Origin: originOf(&db.man), Redis: true}
		if err == nil {
			var expired int64
			expired, _, err = db.rkv.Pending(db.closing, db.now().UnixNano())
			in.Expired, err = uint64(max(expired, 0)), redisErr(err)
		}
		return in, err
	}
	c := db.published.Load()
	expired, _, err := db.pendingExpiry(db.pdb, db.now().UnixNano(), true)
	if err != nil {
		return nil, err
	}
	all, temp, logs := dirBytesTemp(db.opts.FS, db.dir)
	rc, rcBytes := restoreCopyOf(db.opts.FS, db.dir), uint64(0)
	if rc != "" {
		rcBytes = dirBytes(db.opts.FS, rc)
	}
	return &Info{Params: db.Params(), Docs: c.Live, Expired: uint64(expired), Written: max(c.NextDoc, 1) - 1, DiskBytes: all, TempBytes: temp, LogBytes: logs, RecycledLogBytes: db.recycledLogBytes(),
		DamagedLogCopies: damagedLogCopies(db.opts.FS, db.dir), Instance: db.man.Instance, Origin: originOf(&db.man),
		UpgradeUncompacted: db.manifestNow().UpgradeUncompacted, RestoreCopy: rc, RestoreCopyBytes: rcBytes}, nil
}

// recycledLogBytes is the space on disk that the write-ahead logs Pebble
// keeps for reuse take (Info.RecycledLogBytes): every log but the live
// ones, the newest Metrics().WAL.Files (the newest one for a read-only
// handle, which has none: it is the log an open replays), counted as
// LogBytes counts them (allocated blocks).
//
// NB: not Pebble's WAL.ObsoletePhysicalSize, their apparent size: a log
// is allocated ahead (about 9 MiB) with its apparent size that of what it
// holds, so LogBytes less that gave a fresh build's 18 MiB of logs kept
// for reuse, holding 367 bytes, as writes not yet flushed. What it
// cannot tell: a read-only handle after a crash in the middle of a
// memtable's rotation, where two logs hold unflushed writes (the older is
// counted as kept for reuse), and a writable one's obsolete logs not yet
// deleted (counted as kept for reuse until they are).
func (db *DB) recycledLogBytes() uint64 {
	live := max(int(db.pdb.Metrics().WAL.Files), 1)
	names, err := db.opts.FS.List(db.dir)
	if err != nil {
		return 0
	}
	type logFile struct {
		num   wal.NumWAL
		bytes uint64
	}
	var logs []logFile
	for _, n := range names {
		num, index, ok := wal.ParseLogFilename(n)
		if !ok || index != 0 {
			continue
		}
		if fi, err := db.opts.FS.Stat(db.opts.FS.PathJoin(db.dir, n)); err == nil && !fi.IsDir() {
			logs = append(logs, logFile{num, allocatedBytes(fi)})
		}
	}
	slices.SortFunc(logs, func(a, b logFile) int { return cmp.Compare(a.num, b.num) })
	var kept uint64
	for _, l := range logs[:max(len(logs)-live, 0)] {
		kept += l.bytes
	}
	return kept
}

// isLogFile says whether name is a write-ahead log of Pebble's (not
// lshdb's copy of a damaged one, lshdb-damaged-NNNNNN.log).
func isLogFile(name string) bool {
	_, _, ok := wal.ParseLogFilename(name)
	return ok
}
