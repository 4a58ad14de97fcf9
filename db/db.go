package db

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/lockholder"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/minhash"
	"golang.org/x/sync/semaphore"
)

// dataCorruption is the EventListener.DataCorruption of every Pebble
// store lshdb opens: it logs, where Pebble's default ends the process.
func dataCorruption(log *slog.Logger) func(pebble.DataCorruptionInfo) {
	// NB: a salvage scan (ScanOptions.Salvage) seeks into a damaged block
	// a few times to find its end, and each read said the same line: one
	// block's damage is said once in ten seconds (every block's, each).
	said := &repeatLimiter{every: 10 * time.Second, exact: true}
	return func(info pebble.DataCorruptionInfo) {
		// NB: the details' first line: the rest is Pebble's stack traces
		// (5 KB in a log line).
		details := firstLine{info.Details}.Error()
		if ok, _ := said.allow(info.Path+"\x00"+details, time.Now()); !ok {
			return
		}
		log.Error("lshdb: pebble: data corruption", "file", info.Path, "bounds", info.Bounds.String(), "error", details)
	}
}

// formatMajorVersion pins Pebble's on-disk format. NB: pinned, not
// FormatNewest, so that upgrading Pebble never silently rewrites a user's
// database into a format an older lshdb cannot open; raising it is a
// deliberate change.
const formatMajorVersion = pebble.FormatValueSeparation

// compactionCompression is the block compression of the tables that
// flushes below L0 and compactions write: zstd (level 3) where it pays,
// else MinLZ (Snappy on arm64), and a block either shrinks by less than
// 12% is stored raw, as before. NB: a table's blocks are records (texts:
// zstd shrinks them 3x), ids (the user's strings: generated ids to about
// half) or posting lists (hashes, doc numbers: it hardly shrinks them),
// and zstd tried on every block cost compactions CPU for nothing.
// Pebble's adaptive compressor keeps a running estimate, per table, of
// how much zstd saves against MinLZ, trying both on one block in ten and
// using zstd while it saves at least 12%: where a table goes
// from postings to records, a few record blocks (~10, 320 KiB) go out
// with MinLZ until a sample lands. Index and other blocks take MinLZ.
// Measured (BenchmarkPutUpsert, 150 batches): zstd's compression 6.0
// CPU-s against 7.5 of ~45-50, the index 0.5-0.7% larger
// (BenchmarkDiskUsage: 507.6-508.6 against 505.2 bytes a document).
var compactionCompression = func() *sstable.CompressionProfile {
	p := *sstable.ZstdCompression
	p.Name = "lshdb-zstd-adaptive"
	p.OtherBlocks = sstable.FastestCompression.DataBlocks
	p.AdaptiveReductionCutoffPercent = 12
	return &p
}()

// l0StopWrites is Pebble's L0StopWritesThreshold: the read amplification
// of level 0 (its sublevels) at which every write waits for compactions.
// NB: Pebble's default, 12, is reached by any sustained run of synced
// batches on 2 cores (each document's 16 posting keys make compactions
// the bottleneck), and then every writer waits: BenchmarkPut spent 1.9 s of
// its 9.2 s in such stalls over 300 batches of 1,000 documents, and 19 s
// of 44 s over 1,000. With 40, in the same runs (alternated, one process
// each): 32,600-35,100 documents/s become 40,200-41,300 over 300 batches
// (0.06-0.08 s of stalls) and 22,900 become 33,700-34,300 over 1,000;
// BenchmarkPutUpsert's 100 batches of replacements 6,900-7,300 become
// 18,600-19,600 (10.4 s stalled with 12, 0.6-0.9 s with 40). The
// cost is read amplification while compactions catch up: 3,000 queries
// right after the 300 batches took 1.41-1.55 s against 1.05-1.11 s
// (level 0: 20-26 tables against 10-12), after the 1,000 batches 4.08 s
// against 3.81 s. BenchmarkMixed (10% puts) met no stall either way.
const l0StopWrites = 40

// blockSize is the target uncompressed size of a table block.
const blockSize = 32 << 10

// DB is an open lshdb database. Every method is safe for concurrent use.
// The caller MUST call Close: it releases the directory lock, which no
// other process (or DB value) can take before.
type DB struct {
	damage *damageSeen // Pebble's background reports of damage (Corruption)
	// backupMu makes one Backup at a time: two to the same directory (a
	// retried request) shared the copy's temporary directory.
	backupMu sync.Mutex
	// dir is the index's directory, absolute and its links resolved at
	// Open (resolvedDir), where every file of the index is read and
	// written (Dir).
	dir  string
	opts handleOptions
	pdb  *pebble.DB     // nil on Redis
	rkv  *rediskv.Store // the Redis backend; nil on Pebble
	// writer is this writable Redis handle's registration
	// (rediskv.Register), "" for none.
	writer string
	// heartbeatDone is closed when the writer's heartbeat has ended
	// (startHeartbeat); nil without one.
	heartbeatDone chan struct{}
	// gone is set when the heartbeat finds the Redis index's manifest
	// gone (dropped under the handle, or lost by a Redis restarted
	// without its data): writes, repairs and sweeps are refused from
	// then on (indexGoneErr).
	gone  atomic.Bool
	popts *pebble.Options // as opened, defaults filled in (Load's SSTables follow them)
	lock  *dirLock
	man   codec.Manifest
	shOpt minhash.Options
	skOpt minhash.SketchOptions
	bands bands.Params

	hashers sync.Pool   // *minhash.Hasher
	qcache  *queryCache // nil: Options.QueryCacheSize < 0, or Redis
	// longWork holds the bytes of each long text being hashed where a
	// call can give up on it (cancellable), at most longBudget.
	longWork   *semaphore.Weighted
	longBudget int64
	scratch    sync.Pool // *queryScratch

	// mu guards the handle's life: every operation is in it (enter, then
	// mu.RUnlock) while it uses Pebble, and Close waits until none is.
	// NB: no iterator is in it while it yields, so a loop body may call
	// any method, Close included.
	mu     handleGate
	closed atomic.Bool // set once Close has waited out the operations

	// open holds the Pebble resources of iterations in progress (All), which
	// outlive a call: Close releases them. Guarded by openMu.
	openMu sync.Mutex
	open   map[*openIter]struct{}

	// closing is cancelled (with cause ErrClosed) when Close starts, so that
	// long operations stop promptly instead of making Close wait for them.
	closing     context.Context
	closeCancel context.CancelCauseFunc

	// ops holds the cancel function of each operation context in flight
	// (opCtx), which Close calls itself: a context.AfterFunc on closing
	// would cancel them on a goroutine of its own, after Close had
	// returned to a loop body that called it, which then got more
	// results. Guarded by opsMu.
	opsMu sync.Mutex
	ops   map[*liveOp]struct{}

	// wmu serializes writers: a write reads the id map and counters, then
	// commits one batch, with no other writer in between.
	wmu writerLock
	// sweepMu holds off the Redis sweep (which takes no writer lock: it
	// writes nothing a writer reads) while a Redis Repair runs: a sweep
	// beside it took documents off the live count that the repair then
	// set back.
	sweepMu  sync.Mutex
	counters codec.Counters // guarded by wmu
	// expiryFormat is set once the manifest says format 4 (a write with a
	// TTL made it so, or it was opened so). NB: db.man is not changed
	// after Open, for readers that use it without the writer lock.
	expiryFormat atomic.Bool
	// upgradeCompacted says that the manifest was written without its
	// UpgradeUncompacted since it was read (db.man, which is not
	// changed once the index is open, still has it): see manifestNow.
	upgradeCompacted atomic.Bool
	// published are the counters as of the last write, read without the
	// writer lock (Count, Info: Written and Docs together); nil on Redis.
	published atomic.Pointer[codec.Counters]
	stalls    *writeStalls // Pebble's write stalls, for Metrics; nil on Redis
	// counts are the figures of Metrics that this handle counts itself.
	counts handleCounts
	// emptiable are the lists this handle's writes may have emptied,
	// which Close deletes (purgeAtClose).
	emptiable emptiableLists
	// purgedAt is removedDocs plus one as of the start of the last purge
	// of emptied lists that completed (0: none yet), for startPurger.
	purgedAt atomic.Uint64
	// created says that this Open created the index (Created).
	created bool
	// logDamage is the damage to the newest write-ahead log that this
	// Open accepted (Options.AcceptLogDamage), or nil (LogDamage).
	logDamage *LogDamageError
	// olderLogDamage is the damage to the write-ahead logs older than
	// the newest that this open accepted (Options.AcceptLogDamage).
	olderLogDamage []*LogDamageError
	// manifestDamage is the damage to the store's MANIFEST that this
	// Open accepted, or nil (ManifestDamage).
	manifestDamage *LogDamageError
	// foundForeign is set when a write on Redis found a record of
	// another index's at a number it was given (Created).
	foundForeign atomic.Bool
}

// Created reports whether this Open created the index: it wrote the
// manifest of a new one (in a new or empty directory, or on Redis under a
// name no index had). A program that created an index and then failed to
// fill it can remove it again with Drop; on Redis, where any number of
// processes may open an index at once, only the creator should. On Redis
// it turns false once a write of this handle found a record it did not
// write where the index's numbers led it (ErrCorrupt): keys of a lost
// index under the name, which its creation's few lookups missed on a
// large Redis, and which a drop would delete with it.
func (db *DB) Created() bool { return db.created && !db.foundForeign.Load() }

// Open opens the database in dir, creating it (and dir) if it does not
// exist, unless opts.MustExist or opts.ReadOnly. A nil opts means the
// defaults. See Options for how options meet the stored parameters.
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
		o.StopWords = slices.Clone(opts.StopWords)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: an empty directory name", ErrInvalidOptions)
	}
	o.ensureDefaults()
	if IsRedisURL(dir) {
		return openRedis(dir, o)
	}
	if l := strings.ToLower(dir); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
		// NB: a newcomer who had just started lshdb serve --addr gave
		// its URL as --db, and was told only of Redis URLs.
		// NB: the URL's password is not shown (a fuzz campaign's F2).
		return nil, fmt.Errorf("%w: %q is a server's address, not an index: open a served index with package db/client (lshdb's commands: --addr %s)", ErrInvalidOptions, rediskv.Redact(dir), rediskv.Redact(dir))
	}
	if looksLikeURL(dir) && !existingDir(o.fs, dir) {
		// NB: a directory of that name is opened (redis+dedup, an
		// embedder's review's EMB-5); a new one is made given as ./NAME.
		return nil, fmt.Errorf("%w: %q is neither a directory nor an index URL (redis://HOST:PORT/NAME or redis+cluster://HOST:PORT,…/NAME; rediss:// with TLS is not supported; to make a directory of that name, give it as ./NAME)", ErrInvalidOptions, rediskv.Redact(dir))
	}
	if o.fs == vfs.Default {
		dir = fspath.ResolveDotDot(dir)
	}
	for try := 0; ; try++ {
		created, err := prepareDir(o.fs, dir, &o)
		if err != nil {
			return nil, err
		}
		// NB: the handle keeps the directory where it was at its open,
		// absolute and with its links resolved, and Pebble finds its
		// files there for as long as it is open: it joined every table,
		// log and manifest it made or removed to the path as given,
		// which a deploy's re-pointed link (current -> releases/v2) or
		// the process's chdir (a relative path) sent to another
		// directory, another index's maybe, whose tables it then
		// removed (an embedder's review, EMB-1 and EMB-2).
		d, err := openIn(resolvedDir(o.fs, dir), o, created)
		// NB: another Open's failed create removed dir between this one's
		// check and its lock: it is checked (and made) again.
		if !errors.Is(err, errDirVanished) || try == 2 {
			return d, err
		}
	}
}

// readOnlyFSError is a writable Open's error on a read-only filesystem:
// it matches ErrReadOnly (errors.Is) in words of its own (ErrReadOnly's
// say the handle is read-only), and the filesystem's error too.
type readOnlyFSError struct{ error }

func (e readOnlyFSError) Is(target error) bool { return target == ErrReadOnly }
func (e readOnlyFSError) Unwrap() error        { return e.error }

// errDirVanished is openIn's error when the directory it checked was
// removed before it held the lock: by a failed creating Open (openIn).
var errDirVanished = errors.New("lshdb: the directory was removed while this open waited for its lock (another open's failed create): open it again")

// openIn opens or creates the database in dir, which prepareDir checked
// (and created, if created says so), resolved (resolvedDir).
//
// A failed Open (bad creation options, a full disk) of a directory it
// created leaves no half-made database behind for a later Open to take as
// real: it removes the directory, but only under the lock and only if the
// directory held nothing but the lock file when it took it. NB: two Opens
// of one new directory both "create" it (MkdirAll succeeds for both); the
// one refused the lock removed the directory from under the other, which
// lost its acknowledged writes or ended in Pebble's fatal error.
func openIn(dir string, o Options, created bool) (*DB, error) {
	lock, err := lockDirectory(dir, &o)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := o.fs.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s: %w", ErrNotExist, dir, errDirVanished)
			}
		}
		if created && !isLockError(err) {
			// NB: only if empty (rmdir): another Open may hold the lock
			// of a directory this one failed to lock for another reason.
			o.fs.Remove(dir)
		}
		if isLockError(err) {
			// NB: the lock's own check (and heldDirs) finds a handle of
			// this process; the lock file's, another process's.
			by, here := lockHolder(dir, err)
			hint := ""
			if here {
				by, hint = "another handle in this process", " (Close it first, or share it)"
			}
			if stoppedHere(o.fs, dir) {
				// NB: it said "Close it first" of a handle closed (a
				// fault-injection review's FI-6).
				by, hint = "the store of a handle of this process that stopped at a failed write (ErrStopped), closed since", ": Pebble keeps its lock in this process; open the index in a new process"
			}
			if o.LockTimeout > 0 {
				hint += fmt.Sprintf(" (waited %v)", o.LockTimeout)
			}
			return nil, fmt.Errorf("%w by %s: %s%s", ErrLocked, by, dir, hint)
		}
		switch {
		case errors.Is(err, syscall.EROFS):
			return nil, readOnlyFSError{fmt.Errorf("lshdb: locking %s: %w (a read-only filesystem: the index can only be read there, opened with Options.ReadOnly, as lshdb's read commands open it; to write to it, copy it where it may be written first, with lshdb backup, or cp -a for an index of a format this build does not read)", dir, err)}
		case errors.Is(err, fs.ErrPermission):
			// NB: Pebble takes its lock file for every open, read-only
			// ones too.
			return nil, fmt.Errorf("lshdb: locking %s: %w (an open writes the lock file %s, a read-only one too unless the directory is writable by no one: make the file and the directory writable to this user, or copy the index where it may write)", dir, err, o.fs.PathJoin(dir, "LOCK"))
		}
		return nil, fmt.Errorf("lshdb: locking %s: %w", dir, err)
	}
	// NB: the lock may be a file of a directory that a failed creating
	// Open removed while this one waited for it (LockTimeout). A
	// read-only open is not checked: on a read-only filesystem (a backup,
	// which holds no LOCK file) it holds no lock file at all.
	if _, err := o.fs.Stat(o.fs.PathJoin(dir, "LOCK")); err != nil && !o.ReadOnly {
		lock.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrNotExist, dir, errDirVanished)
	}
	ours := false // dir is this Open's own: remove it if the open fails
	if created {
		names, err := o.fs.List(dir)
		ours = err == nil && len(names) == 1 && names[0] == "LOCK"
	}
	release := func() {
		if ours {
			o.fs.RemoveAll(dir) // NB: under the lock, before it is released
		}
		lock.Close()
	}
	if !o.ReadOnly {
		// The temporary files of a load that was interrupted (crash, kill)
		// before its ingest: the index never saw them. So are the spilled
		// candidates of a Pairs run that was interrupted. NB: removed
		// under the lock (no writer of this index runs) and before the
		// free space is checked: a killed build left up to the size of its
		// input there, and the next writable open was refused as out of
		// space, the message naming none of it.
		names, _ := o.fs.List(dir)
		for _, n := range names {
			// NB: and a copy of a damaged log that a crash left half
			// made (cutDamagedLog).
			if n != loadTmpDir && !isPairsRunDir(n) && !(strings.HasPrefix(n, damagedLogPrefix) && strings.HasSuffix(n, ".tmp")) {
				continue
			}
			if err := o.fs.RemoveAll(o.fs.PathJoin(dir, n)); err != nil {
				release()
				return nil, fmt.Errorf("lshdb: removing an interrupted load's or pairs run's files: %w", err)
			}
		}
		// NB: and the copy of a restore into dir killed while it copied,
		// as large as the backup, hidden beside dir, which only the next
		// restore removed and nothing named (an operator's review,
		// OP-2). A running restore holds dir's lock, and its copy's
		// owner file: neither is taken from one.
		if tmp := restoreCopyOf(o.fs, dir); tmp != "" {
			host, _ := os.Hostname()
			sweepBackupTemp(o.fs, tmp+backupOwnerSuffix, host)
		}
		// NB: a writable open writes (a new WAL, a MANIFEST), and Pebble
		// panics when it runs out of space mid-way.
		err := roomToOpen(o.fs, dir, &o)
		if err == nil && o.DiskReserve < 0 {
			err = roomToReplay(o.fs, dir)
		}
		if err != nil {
			release()
			if ours {
				// NB: no index to read: the hint was wrong for a new one.
				return nil, err
			}
			return nil, fmt.Errorf("%w (open it read-only to read it)", err)
		}
	}
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	stalls := &writeStalls{log: o.Logger}
	damage := &damageSeen{home: lock.held.Info(), opened: time.Now()}
	bgLog := &repeatLimiter{every: 10 * time.Second}
	hfs := newHeldFS(o.fs, dir)
	popts := &pebble.Options{
		FS:                 hfs,
		Lock:               lock.Lock,
		MemTableSize:       uint64(o.MemTableSize),
		Cache:              cache,
		Merger:             compaction.Merger,
		FormatMajorVersion: formatMajorVersion,
		ReadOnly:           o.ReadOnly,
		Logger:             pebbleLogger{o.Logger},
		// NB: Pebble's default reaction to on-disk corruption found while
		// reading is Logger.Fatalf, which would end the user's process; the
		// read itself returns the corruption error, which lshdb reports as
		// ErrCorrupt.
		EventListener: &pebble.EventListener{
			// NB: Pebble reports here a read's damage too, which the
			// read returns: only the background's is noted (below).
			DataCorruption: dataCorruption(o.Logger),
			// NB: Pebble's default logs it; a compaction that met a
			// damaged table is also noted (DB.Corruption): the writes
			// that started it were acknowledged, and the command that
			// made them exited 0.
			BackgroundError: func(err error) {
				damage.failures.Add(1)
				if errors.Is(err, syscall.ENOSPC) {
					damage.bgNoSpace.CompareAndSwap(nil, &err)
				}
				// NB: a flush that fails on a full disk is retried about
				// a hundred times a second (--disk-reserve -1): 61,000
				// lines in ten minutes. The same error is said once in
				// ten seconds, with how many times it came meanwhile.
				if ok, repeats := bgLog.allow(firstLine{err}.Error(), time.Now()); ok && repeats > 0 {
					pebbleLogger{o.Logger}.Errorf("background error: %v (and %d more like it since the last said)", firstLine{err}, repeats)
				} else if ok {
					pebbleLogger{o.Logger}.Errorf("background error: %v", firstLine{err})
				}
				// NB: codec's too, should a merge ever fail on a damaged
				// operand (it gives a damaged list instead: Pebble retries
				// a failed flush or compaction for ever).
				if pebble.IsCorruptionError(err) || errors.Is(err, codec.ErrCorrupt) {
					damage.note(fmt.Errorf("%w: %v", ErrCorrupt, firstLine{err}))
				}

			},
			// NB: while writes are stalled every write waits, synced puts
			// included (BenchmarkMixed's socket runs at half their
			// saturation had a p99 of 426 ms): operators see each stall
			// in Metrics, and in the log each that lasts a second
			// (writeStalls).
			// NB: a flush's failure for lack of space, not a compaction's:
			// no flush ran once writes were refused, so a compaction's
			// set the refusal for good, deletes and compactions included,
			// even once space was freed (a maintainer's review). Pebble
			// retries a failed flush until it succeeds.
			FlushEnd: func(info pebble.FlushInfo) {
				switch {
				case info.Err == nil:
					damage.noSpace.Store(nil) // NB: room again (writesRefused)
					damage.bgNoSpace.Store(nil)
				case errors.Is(info.Err, syscall.ENOSPC):
					err := info.Err
					damage.noSpace.Store(&err)
				}
			},
			// NB: a compaction that succeeds found room: the warning of
			// an earlier failure at Close would be stale (a long-lived
			// serve's disk filled once and freed: a read-through's RT-10).
			CompactionEnd: func(info pebble.CompactionInfo) {
				if info.Err == nil {
					damage.bgNoSpace.Store(nil)
				}
			},
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				stalls.begin(info.Reason)
			},
			WriteStallEnd: func() {
				stalls.end()
			},
		},
	}
	for i := range popts.Levels {
		// NB: a query is b point reads of posting lists plus one per
		// candidate; bloom filters let each read skip the levels that do
		// not hold its key (Pebble's default is no filter).
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		// NB: zstd on 32 KiB blocks: stored texts cost 0.26-0.39 bytes a
		// text byte on the shared corpora (internal/cmd/storagecost), and
		// blocks of random hashes (postings, signatures), which no
		// compressor shrinks, are kept raw by Pebble.
		popts.Levels[i].Compression = func() *sstable.CompressionProfile { return compactionCompression }
		popts.Levels[i].BlockSize = blockSize
	}
	// NB: flushes write L0 with the fastest compression, not zstd: Pebble
	// commits a large batch (BenchmarkPut's 1,000 documents) as a flushable
	// batch, and such commits wait for flushes (its profile).
	// In four alternated runs of BenchmarkPut (40 batches), the commit took
	// 0.41-0.53x the signature time against 0.60-0.74x with zstd, and the
	// put 1.78-2.29x (mean 2.10) against 2.32-2.48x (mean 2.37). L0 data is
	// rewritten (with zstd) by the compactions below it; a load writes its
	// tables with the last level's options.
	popts.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.FastestCompression }
	popts.L0StopWritesThreshold = l0StopWrites
	// NB: no value separation (Pebble's blob files, which compactions do
	// not rewrite): records of texts over 256 bytes separated gave
	// BenchmarkPut 2.46x the signature time against 2.55x without, in one
	// run (2.61x with zstd on level 0, whose blob files keep the flush's
	// compression): its compactions rewrite posting lists, 16 keys a
	// document, which are merge operands and never separated.
	// NB: an Upgrade's handle starts no compaction of its own (it runs
	// the one it needs, compactUpgraded): a compaction that Pebble's Open
	// of a format 1 index began went on after that Open failed (one I/O
	// error on its OPTIONS file), in a torn-down file cache, and Pebble
	// v2.1.7 ended the process there (a fault-injection review's FI-5).
	popts.DisableAutomaticCompactions = o.upgrading
	popts.EnsureDefaults()
	if err := markerMissing(&o, dir); err != nil {
		release()
		return nil, err
	}
	logDamage, err := acceptLogDamage(o, dir)
	if err != nil {
		release()
		return nil, err
	}
	manifestDamage, tornManifest, err := acceptManifestDamage(o, dir, popts, logDamage != nil && logDamage.Kept != "")
	if err != nil {
		release()
		return nil, err
	}
	if err := setAsideDamagedOptions(o, dir, popts); err != nil {
		release()
		return nil, err
	}
	pdb, err := pebble.Open(dir, popts)
	var olderLogDamage []*LogDamageError
	for err != nil && strings.Contains(err.Error(), "error when replaying WAL") {
		// NB: a log older than the newest that does not read whole fails
		// the replay: accepted, it is cut at its damaged record and the
		// open tried again, as long as one more is found (an operator's
		// review, DR3: no command opened the index). Only once Pebble
		// failed: a log it does not replay (obsolete, kept to be reused)
		// may end as a crash left it. Each cut makes the log read whole,
		// so the loop ends.
		dmg, aerr := acceptOlderLogDamage(o, dir)
		if aerr != nil {
			release()
			return nil, withCut(aerr, olderLogDamage)
		}
		if dmg == nil {
			break
		}
		olderLogDamage = append(olderLogDamage, dmg)
		pdb, err = pebble.Open(dir, popts)
	}
	if err != nil {
		release()
		// NB: Pebble v2.1.7 refuses a store made with another merger with
		// an unexported error whose message names the merger; matched by
		// text (TestErrNotIndex covers it: recheck on a Pebble upgrade).
		if strings.Contains(err.Error(), "merger") {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotIndex, dir, err)
		}
		// NB: a store whose marker names a manifest file that is gone
		// (deleted, a copy that missed it) is damaged, not missing: Pebble
		// says "could not open manifest file" around the ENOENT, matched by
		// text (TestOpenWithoutManifest: recheck on a Pebble upgrade).
		if errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "manifest") {
			return nil, fmt.Errorf("%w: %s: the store's manifest is missing: %w", ErrCorrupt, dir, firstLine{err})
		}
		// NB: Pebble checks, at Open, that every table file its manifest
		// lists is there at the size it recorded; a file deleted or
		// truncated behind its back (a copy that missed or cut it, a
		// cleanup script) fails that check with errors that are not
		// corruption errors to Pebble, matched by text
		// (TestOpenWithDamagedTable: recheck on a Pebble upgrade).
		if msg := err.Error(); strings.Contains(msg, "object size mismatch") || strings.Contains(msg, "unknown to the objstorage provider") {
			// NB: or the manifest lost records (damaged: Pebble reads
			// a damaged record as a crash's torn end) and names a table
			// deleted since: the message named only the table (a
			// crash-safety review).
			return nil, fmt.Errorf("%w: %s: a table file the store's manifest lists is missing or truncated (or the manifest, MANIFEST-*, is damaged and names one deleted since): %w", ErrCorrupt, dir, firstLine{err})
		}
		if strings.Contains(err.Error(), "error when replaying WAL") {
			if dmg := olderLogDamageError(o.fs, dir); dmg != nil {
				return nil, withCut(dmg, olderLogDamage)
			}
		}
		// NB: a directory of a store never begun (its LOCK alone: a
		// create killed at once) opened read-only: no index, said as for
		// an empty directory, not as Pebble's bare words.
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("%w: %s holds no store (a create or a first build killed?)%w", ErrNotExist, dir, errUnfinished)
		}
		// NB: a store of a newer Pebble format, which a newer lshdb
		// wrote: ErrFormat, as a newer index format is (exit 5 and what
		// to do; it was exit 1 and Pebble's words: a format review,
		// FM-6). Matched by text (TestOpenNewerStoreFormat: recheck on a
		// Pebble upgrade).
		if strings.Contains(err.Error(), "written in unknown format major version") {
			return nil, fmt.Errorf("%w: %s was written by a newer lshdb, whose storage format this build does not read (%w): open it with that lshdb, or a newer one", ErrFormat, dir, firstLine{err})
		}
		return nil, classify(fmt.Errorf("lshdb: opening %s: %w", dir, err))
	}
	db := &DB{dir: dir, opts: handleOptions{Options: o, FS: o.fs}, pdb: pdb, popts: popts, lock: lock, qcache: newQueryCache(o.QueryCacheSize), stalls: stalls, damage: damage, logDamage: logDamage, olderLogDamage: olderLogDamage, manifestDamage: manifestDamage}
	db.closing, db.closeCancel = context.WithCancelCause(context.Background())
	db.open = make(map[*openIter]struct{})
	db.emptiable.off = o.keepEmptied || o.PurgeEvery < 0
	if err := db.loadManifest(); err != nil {
		pdb.Close() // NB: the files Pebble found obsolete are kept (heldFS)
		release()
		return nil, err
	}
	if err := cutManifest(o.fs, dir, manifestDamage); err != nil {
		pdb.Close()
		release()
		return nil, err
	}
	if tornManifest != nil {
		tornManifest() // NB: said once the index opened (see acceptManifestDamage)
	}
	hfs.release(o.Logger)
	db.initPools()
	db.startSweeper()
	db.startPurger()
	return db, nil
}

// initPools sets up the pools of hashers and query buffers, once the
// manifest is loaded.
func (db *DB) initPools() {
	db.scratch.New = func() any { return new(queryScratch) }
	// NB: 32 MiB of text a core (at least 2): about 35 times that in
	// memory while it is hashed; a server's default bound on the bytes
	// in flight is 64 MiB.
	db.longBudget = int64(max(2, runtime.GOMAXPROCS(0))) << 25
	db.longWork = semaphore.NewWeighted(db.longBudget)
	db.hashers.New = func() any {
		h, err := minhash.NewHasher(db.shOpt, db.skOpt)
		if err != nil {
			// NB: the options were validated when the manifest was loaded.
			panic(fmt.Sprintf("lshdb: hasher from validated options: %v", err))
		}
		return h
	}
}

// prepareDir checks what dir is before Pebble touches it: refuses a file
// and a non-empty directory that is not a Pebble store, and creates a
// missing one unless the options forbid it.
// It reports whether it created dir.
func prepareDir(fs vfs.FS, dir string, o *Options) (created bool, err error) {
	st, err := fs.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := restoreStopped(fs, dir); err != nil {
			return false, err
		}
		if o.MustExist || o.ReadOnly {
			return false, fmt.Errorf("%w: %s%s%s", ErrNotExist, dir, tombsNote(fs, dir), restoreCopyNote(fs, dir))
		}
		if fs == vfs.Default {
			// NB: what a stopped Drop of dir left, the dropped index
			// (as large as it was), went unsaid and stayed beside the
			// index an insert made anew (an operator's review, OP-1):
			// the drop is finished before dir is made again.
			removed, err := sweepTombs(dir)
			for _, tomb := range removed {
				o.Logger.Warn("lshdb: removed " + tomb + ", what a drop of " + dir + " that was stopped left (the index it dropped), before making an index there")
			}
			if err != nil {
				return false, err
			}
		}
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			// NB: said as the same fault is said of an existing index
			// (ErrReadOnly, ErrDiskFull), where it matched no sentinel
			// (an embedder's review).
			if errors.Is(err, syscall.EROFS) {
				return false, readOnlyFSError{fmt.Errorf("lshdb: creating %s: %w (a read-only filesystem: no index can be made there)", dir, err)}
			}
			return false, classify(fmt.Errorf("lshdb: creating %s: %w", dir, err))
		}
		return true, nil
	case errors.Is(err, syscall.ENOTDIR):
		// NB: a path through a file ("notes.txt/idx") is no index, and
		// none can be made there.
		return false, fmt.Errorf("%w: %s: a part of the path is a file: %w", ErrNotIndex, dir, err)
	case err != nil:
		return false, fmt.Errorf("lshdb: %w", err)
	case !st.IsDir():
		return false, fmt.Errorf("%w: %s is a file", ErrNotIndex, dir)
	}
	names, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("lshdb: %w", err)
	}
	if len(names) == 0 {
		if err := restoreStopped(fs, dir); err != nil {
			return false, err
		}
		if o.MustExist || o.ReadOnly {
			return false, fmt.Errorf("%w: %s is empty", ErrNotExist, dir)
		}
		return false, nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest") || n == "LOCK" {
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: %s holds files but no database", ErrNotIndex, dir)
}

// lockHolder names who holds dir's lock, whose taking failed with err (a
// lock error): "another process", with its pid where its lock file says
// (who to ask, or wait for: an embedder's review, E4); here says it is
// this process (the lock's own check, or lockholder's, by their words).
func lockHolder(dir string, err error) (by string, here bool) {
	if err.Error() == lockholder.ErrHeldHere.Error() {
		return "this process", true
	}
	if pid := cmp.Or(flockPID(err), lockholder.PID(dir)); pid > 0 {
		return fmt.Sprintf("another process (pid %d)", pid), false
	}
	return "another process", false
}

// loadManifest reads the manifest, or writes it for a new database, and
// derives the pipeline's options from it.
func (db *DB) loadManifest() error {
	v, closer, err := db.pdb.Get(codec.ManifestKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		// NB: a store with no index, beside tables its manifest does
		// not list, is an index whose Pebble MANIFEST lost records:
		// it was "not an lshdb database", or, with nothing left, made
		// into a new empty index over them (heldFS).
		if orphans, err := orphanTables(db.opts.FS, db.dir, db.pdb); err != nil {
			return classify(err)
		} else if len(orphans) > 0 {
			return manifestLostTables(db.dir, orphans)
		}
		empty, err := db.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s is a Pebble store without an lshdb manifest", ErrNotIndex, db.dir)
		}
		if db.opts.ReadOnly || db.opts.MustExist {
			// NB: an empty Pebble store is what a create that failed before
			// writing its manifest leaves; only a creating Open may finish it.
			return fmt.Errorf("%w: %s holds an empty store with no lshdb manifest (a create that failed?)", ErrNotExist, db.dir)
		}
		db.created = true
		return db.create()
	case err != nil:
		return classify(err)
	}
	err = db.useManifest(v)
	closer.Close()
	if err != nil {
		return err
	}
	if err := db.foldBackupStamp(); err != nil {
		return err
	}
	db.expiryFormat.Store(db.man.FormatVersion >= codec.ExpiryFormatVersion)
	cv, closer, err := db.pdb.Get(codec.CountersKey)
	if errors.Is(err, pebble.ErrNotFound) {
		// NB: every index has one from its creation: it said "reading
		// counters: pebble: not found".
		return fmt.Errorf("%w: the counters record is missing (the store lost a record it is created with: lshdb check --db DIR on a backup, or build the index again)", ErrCorrupt)
	}
	if err != nil {
		return classify(fmt.Errorf("lshdb: reading counters: %w", err))
	}
	c, err := codec.DecodeCounters(cv)
	closer.Close()
	if err != nil {
		return fmt.Errorf("%w%w", classify(err), unsaid{errUnrepairable})
	}
	db.setCounters(c)
	return nil
}

// setCounters makes c the handle's counters: the writers' (db.counters,
// under wmu) and the ones Count and Info read without the lock. The
// caller holds wmu, or is Open.
func (db *DB) setCounters(c codec.Counters) {
	db.counters = c
	if old := db.published.Load(); old != nil && c.NextDoc-c.Live < old.NextDoc-old.Live {
		// NB: the count of removed documents went back (a Repair that
		// counted more live documents than the counters did): later
		// removals could bring it back to the value of the last purge,
		// whose ticks would then be skipped (startPurger; a
		// maintainer's M2). The next tick purges.
		db.purgedAt.Store(0)
	}
	db.published.Store(&c)
}

// stored is the number of documents stored, as of the last write (0 on
// Redis, whose count is the cluster's).
func (db *DB) stored() uint64 {
	if c := db.published.Load(); c != nil {
		return c.Live
	}
	return 0
}

// useManifest decodes a stored manifest, checks it against the options
// and derives the pipeline's options from it.
func (db *DB) useManifest(v []byte) error {
	m, err := codec.DecodeManifest(v)
	if err != nil {
		return fmt.Errorf("%w%w", classify(err), unsaid{errUnrepairable})
	}
	db.man = *m
	if m.FormatVersion < codec.MinFormatVersion && !db.opts.upgrading {
		// NB: and what a killed upgrade left, which only upgrade removes
		// and info, refused here, could not show (an upgrade review's
		// UPG-7).
		left := ""
		if n := dirBytes(db.opts.FS, db.opts.FS.PathJoin(db.dir, loadTmpDir)); n > 0 {
			left = fmt.Sprintf("; an upgrade that was stopped left %s of temporary files in it (%s), which the next upgrade removes", mib(int64(n)), loadTmpDir)
		}
		return fmt.Errorf("%w: %s has index format %d and this build reads formats %d to %d; rewrite it in place with `lshdb upgrade --db %s` (db.Upgrade), after copying the directory if it is the only copy (cp -a, while nothing has it open: lshdb backup reads only the formats this build reads)%s", ErrFormat, db.dir, m.FormatVersion, codec.MinFormatVersion, codec.MaxFormatVersion, db.dir, left)
	}
	if err := db.checkOptions(); err != nil {
		return err
	}
	if err := db.derive(); err != nil {
		return fmt.Errorf("%w: stored parameters: %w", ErrCorrupt, err)
	}
	return nil
}

func (db *DB) isEmpty() (bool, error) {
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		return false, classify(err)
	}
	empty := !it.First()
	return empty, classify(it.Close())
}

// create writes the manifest of a new database from the options.
func (db *DB) create() error {
	enc, err := db.newManifest()
	if err != nil {
		return err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	db.setCounters(codec.Counters{NextDoc: 1}) // NB: doc numbers start at 1
	if err := b.Set(codec.ManifestKey, enc, nil); err != nil {
		return err
	}
	if err := b.Set(codec.CountersKey, codec.EncodeCounters(db.counters), nil); err != nil {
		return err
	}
	return db.pebbleWrite(func() error { return b.Commit(pebble.Sync) })
}

// newInstance returns a new index's Instance (codec.Manifest): 128 random
// bits (crypto/rand's Text: 26 base32 characters).
func newInstance() string { return rand.Text() }

// newManifest makes the manifest of a new database from the options,
// sets it as the database's and returns it encoded.
func (db *DB) newManifest() ([]byte, error) {
	o := &db.opts
	m := codec.Manifest{
		FormatVersion: codec.FormatVersion,
		Scheme:        o.Scheme.String(),
		NumPerm:       cmp.Or(o.NumPerm, minhash.DefaultNumPerm),
		Seed:          o.Seed,
		ShingleKind:   o.Shingle.String(),
		ShingleSize:   o.ShingleSize,
		Bag:           o.Bag,
		Normalization: o.Normalization.String(),
		StopWords:     o.StopWords,
		Threshold:     cmp.Or(o.Threshold, DefaultThreshold),
		Recall:        cmp.Or(o.Recall, bands.DefaultRecall),
		StoreText:     o.StoreText || cmp.Or(o.Storage, StorageText) == StorageText,
		Storage:       cmp.Or(o.Storage, StorageText),
		Bands:         o.Bands,
		Rows:          o.Rows,
		Instance:      newInstance(),
		Origin:        o.origin,
	}
	// NB: derive passes on only the stop words that can match (an index
	// made before they were checked opens with the others); a new index
	// refuses them.
	if err := checkStopWords(m.StopWords, m.Normalization); err != nil {
		return nil, err
	}
	if m.Seed == 0 && o.Scheme == minhash.SchemeDatasketch {
		m.Seed = DatasketchSeed
	}
	if m.ShingleSize == 0 {
		m.ShingleSize = minhash.DefaultCharK
		if o.Shingle == minhash.ShingleWord {
			m.ShingleSize = minhash.DefaultWordK
		}
	}
	if m.Bands == 0 {
		t := min(m.Threshold, bands.MaxChoiceThreshold)
		p, err := bands.Choose(m.NumPerm, t, bands.Options{Recall: m.Recall})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		m.Bands, m.Rows = p.B, p.R
	}
	db.man = m
	// NB: a new index takes expiring documents as it is: its first TTL
	// leaves the manifest alone (see expiryManifest).
	db.expiryFormat.Store(m.FormatVersion >= codec.ExpiryFormatVersion)
	if err := db.derive(); err != nil {
		return nil, invalidPipeline(err)
	}
	return codec.EncodeManifest(&m)
}

// checkStopWords refuses, as ErrInvalidOptions, a stop word of words that
// can never match under the normalization named norm (a manifest's):
// what a new index is made with and an existing one is opened with. An
// unknown normalization is derive's to refuse.
func checkStopWords(words []string, norm string) error {
	n, err := minhash.ParseNormalization(norm)
	if err != nil {
		return nil
	}
	for _, w := range words {
		if err := minhash.CheckStopWord(w, n); err != nil {
			return invalidPipeline(err)
		}
	}
	return nil
}

// invalidPipeline is a minhash options error (minhash.ErrInvalidOptions)
// as ErrInvalidOptions, saying "invalid options" once: it said "lshdb:
// invalid options: minhash: invalid options: StopWords: …" (a maintainer
// review's K6). Both sentinels match it.
func invalidPipeline(err error) error {
	msg := strings.TrimPrefix(err.Error(), minhash.ErrInvalidOptions.Error()+": ")
	return fmt.Errorf("%w: %s%w", ErrInvalidOptions, msg, unsaid{err})
}

// derive builds and validates the pipeline options from the manifest.
func (db *DB) derive() error {
	m := &db.man
	kind, err := minhash.ParseShingleKind(m.ShingleKind)
	if err != nil {
		return err
	}
	norm, err := minhash.ParseNormalization(m.Normalization)
	if err != nil {
		return err
	}
	scheme, err := minhash.ParseScheme(m.Scheme)
	if err != nil {
		return err
	}
	db.shOpt = minhash.Options{Kind: kind, K: m.ShingleSize, Bag: m.Bag, Normalization: norm, StopWords: minhash.MatchingStopWords(m.StopWords, norm)}
	db.skOpt = minhash.SketchOptions{Scheme: scheme, NumPerm: m.NumPerm, Seed: m.Seed}
	if err := db.shOpt.Validate(); err != nil {
		return err
	}
	if err := db.skOpt.Validate(); err != nil {
		return err
	}
	db.bands = bands.Params{B: m.Bands, R: m.Rows}
	if err := db.bands.Validate(m.NumPerm); err != nil {
		return err
	}
	if m.Bands > codec.MaxBands {
		return fmt.Errorf("%d bands exceed the key format's %d", m.Bands, codec.MaxBands)
	}
	if !(m.Threshold > 0 && m.Threshold <= 1) {
		return fmt.Errorf("threshold %v", m.Threshold)
	}
	switch m.Storage {
	case StorageText, StorageSets, StorageNone:
	case "":
		if m.FormatVersion >= 2 {
			return fmt.Errorf("no storage mode")
		}
	default:
		return fmt.Errorf("storage mode %q (text, sets or none)", m.Storage)
	}
	return nil
}

// stopWordsOf is a list of stop words as a mismatch compares and names
// it: "none" for none (a message said "StopWords is  in the database");
// sorted, each once, since they are a set (reopening with {"a","b"} an
// index made with {"b","a"} was refused).
func stopWordsOf(words []string) string {
	if len(words) == 0 {
		return "none"
	}
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(words))), ",")
}

// normalizedWords is words, each normalized by n.
func normalizedWords(words []string, n minhash.Normalization) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = minhash.Normalize(w, n)
	}
	return out
}

// checkOptions refuses non-zero options that differ from the manifest:
// one *MismatchError, or mismatches for several.
func (db *DB) checkOptions() error {
	o, m := &db.opts, &db.man
	var all mismatches
	check := func(field string, set bool, stored, requested any) {
		if set && stored != requested {
			all = append(all, &MismatchError{Field: field, Stored: stored, Requested: requested})
		}
	}
	check("Threshold", o.Threshold != 0, m.Threshold, o.Threshold)
	check("Recall", o.Recall != 0, m.Recall, o.Recall)
	check("Bands", o.Bands != 0, m.Bands, o.Bands)
	check("Rows", o.Rows != 0, m.Rows, o.Rows)
	check("NumPerm", o.NumPerm != 0, m.NumPerm, o.NumPerm)
	check("Scheme", o.Scheme != 0, m.Scheme, o.Scheme.String())
	check("Seed", o.Seed != 0, m.Seed, o.Seed)
	check("Shingle", o.Shingle != 0, m.ShingleKind, o.Shingle.String())
	check("ShingleSize", o.ShingleSize != 0, m.ShingleSize, o.ShingleSize)
	check("Bag", o.Bag, m.Bag, o.Bag)
	check("Normalization", o.Normalization != 0, m.Normalization, o.Normalization.String())
	// NB: the stored words that can match, which Params reports: Open
	// refused them of an index made with others too (a maintainer
	// review's K5). A requested word that cannot is refused, as a new
	// index refuses it.
	if err := checkStopWords(o.StopWords, m.Normalization); err != nil {
		return err
	}
	norm, _ := minhash.ParseNormalization(m.Normalization)
	// NB: compared as the index uses them, normalized ("The" and "the"
	// are one stop word under fold: reopening with the other spelling
	// was refused, an embedder's review's EMB-8); named as given.
	stored := minhash.MatchingStopWords(m.StopWords, norm)
	if len(o.StopWords) != 0 && stopWordsOf(normalizedWords(stored, norm)) != stopWordsOf(normalizedWords(o.StopWords, norm)) {
		check("StopWords", true, stopWordsOf(stored), stopWordsOf(o.StopWords))
	}
	check("StoreText", o.StoreText, m.StoreText, o.StoreText)
	check("Storage", o.Storage != "", m.Storage, o.Storage)
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

// mismatches is the error of several parameters that differ: one line,
// each *MismatchError found by errors.As (the first), and errors.Is
// ErrParamsMismatch. NB: errors.Join wrote each on a line of its own,
// "lshdb: parameters differ" again on each (an embedder's review, E2).
type mismatches []*MismatchError

func (ms mismatches) Error() string {
	parts := make([]string, len(ms))
	for i, e := range ms {
		parts[i] = fmt.Sprintf("%s is %v in the database, %v was requested", e.Field, e.Stored, e.Requested)
	}
	return "lshdb: parameters differ from the database's: " + strings.Join(parts, "; ")
}

func (ms mismatches) Unwrap() []error {
	errs := make([]error, len(ms))
	for i, e := range ms {
		errs[i] = e
	}
	return errs
}

// Params describes a database's fixed parameters: the Options it was
// created with, as its manifest stores them (defaults filled in).
type Params struct {
	Threshold     float64             // the Jaccard threshold that queries, Pairs and Clusters default to
	Recall        float64             // the recall target the banding was chosen for (P(candidate) at Threshold)
	Bands         bands.Params        // the banding: B bands of R rows
	Scheme        minhash.Scheme      // how signatures are computed
	NumPerm       int                 // the values of a signature
	Seed          uint64              // the seed of the signatures' hash functions
	Shingle       minhash.ShingleKind // character or word shingles
	ShingleSize   int                 // k, the shingles' length in characters or words
	Bag           bool                // shingles counted with their repeats (weighted Jaccard)
	Normalization minhash.Normalization
	StopWords     []string // words dropped before word shingling
	// StoreText says a sets or none index also keeps each document's
	// text (Options.StoreText); a text index always does.
	StoreText bool
	Storage   string // StorageText, StorageSets or StorageNone
	// FormatVersion is the index's on-disk format (codec); Upgrade
	// rewrites an older one to the current.
	FormatVersion int
}

// Params returns the database's parameters (as stored in its manifest).
func (db *DB) Params() Params {
	return Params{
		Threshold: db.man.Threshold, Recall: db.man.Recall, Bands: db.bands,
		Scheme: db.skOpt.Scheme, NumPerm: db.skOpt.NumPerm, Seed: db.skOpt.Seed,
		Shingle: db.shOpt.Kind, ShingleSize: db.shOpt.K, Bag: db.shOpt.Bag,
		Normalization: db.shOpt.Normalization, StopWords: slices.Clone(db.shOpt.StopWords),
		StoreText: db.man.StoreText, Storage: db.man.Storage, FormatVersion: db.formatVersion(),
	}
}

// formatVersion is the index's format: the manifest's, or 4 once a write
// with a TTL has made a format 3 index so (expiryFormat).
func (db *DB) formatVersion() int {
	if db.expiryFormat.Load() && db.man.FormatVersion < codec.ExpiryFormatVersion {
		return codec.ExpiryFormatVersion
	}
	return db.man.FormatVersion
}

// Dir returns the database's directory: where the path Open was given
// led when it was opened, absolute and with its symbolic links resolved
// (on a Redis index, its URL without a password). The handle reads and
// writes that directory for as long as it is open, wherever the path
// leads later (a link on it re-pointed, the process's working directory
// changed for a relative one); files of the index's (a server's socket)
// belong there.
func (db *DB) Dir() string { return db.dir }

// Close closes the database. It does not hang: long calls in flight
// (loads, pairs, checks, scans) stop at their next check and return
// ErrClosed, calls made once Close has begun return ErrClosed at once,
// short ones in flight finish first, and iterations parked in their loop
// body end with ErrClosed when they resume. It may be called from inside
// a loop body, but not from a callback that a long call runs (Load's
// documents, a WithProgress function, ClustersFrom's pairs): it would wait
// for that call. It waits, though, for a callback that is running to
// return: a Load whose documents iterator blocks (a stalled stream) holds
// Close until it yields; such an iterator should watch the ctx given to
// Load, and the caller cancel that ctx before Close, which cannot.
// On Redis a write that began (a put, a delete, a batch of a load) is
// finished whole before Close returns: with a cluster that stops
// answering, go-redis's own timeouts bound that wait (about 25 s a step,
// measured with every master frozen). Closing twice returns ErrClosed: a
// second Close that runs beside the first returns once the first has
// ended (the directory's lock released).
//
// A writable handle on a directory first deletes the posting lists that
// its own deletes and upserts emptied (a seek each, for at most 10 s;
// past about 2 million lists, every list is scanned, as PurgeEmptyLists
// does), unless Options.PurgeEvery is negative. It then flushes the
// memtables to tables, so that the next open replays no log: behind a
// write load, where Pebble holds writes back until its flushes catch up
// (a write stall), that took 3 to 19 s under a concurrent load: a
// service with a short shutdown budget should allow for it.
func (db *DB) Close() error {
	db.closeCancel(ErrClosed) // long operations in flight stop at their next check
	db.cancelOps()
	if !db.mu.close() {
		return ErrClosed
	}
	defer db.mu.closeEnded()
	db.closed.Store(true)
	// NB: an iteration parked in its caller's loop body holds Pebble
	// iterators and snapshots; Pebble's Close refuses to close under them.
	// The iteration finds the handle closed when it resumes.
	db.openMu.Lock()
	for it := range db.open {
		it.release()
	}
	clear(db.open)
	db.openMu.Unlock()
	if db.rkv != nil {
		if db.heartbeatDone != nil {
			<-db.heartbeatDone // NB: its closing was cancelled above
		}
		if db.writer != "" {
			db.unregister()
		}
		return redisErr(db.rkv.Close())
	}
	if p := db.damage.stopped.Load(); p != nil {
		// NB: Pebble's Close would wait for ever on the commit pipeline
		// that its panic left locked (pebbleWrite): the store is left as
		// it is, its writes in the log.
		stoppedClosed(db.opts.FS, db.dir)
		db.lock.Close()
		return *p
	}
	db.purgeAtClose() // NB: no call is in flight, and none can begin
	if p := db.damage.stopped.Load(); p != nil {
		stoppedClosed(db.opts.FS, db.dir)
		db.lock.Close() // NB: the purge's write stopped the store: as above
		return *p
	}
	db.flushAtClose()
	err := db.pdb.Close()
	if lerr := db.lock.Close(); err == nil {
		err = lerr
	}
	db.warnBackgroundNoSpace(err)
	return classify(err)
}

// warnBackgroundNoSpace logs, at Close (whose error is closeErr), a
// background flush's or compaction's failure for want of space since the
// last that succeeded, unless closeErr says it already.
//
// NB: a build under --disk-reserve -1 that filled the disk exited 0
// beside Pebble's bare "no space left on device" line, with no word of
// what failed or what to do (an operator's review, OP-5).
func (db *DB) warnBackgroundNoSpace(closeErr error) {
	p := db.damage.bgNoSpace.Load()
	if p == nil || errors.Is(closeErr, ErrDiskFull) || errors.Is(closeErr, syscall.ENOSPC) {
		return
	}
	db.opts.Logger.Warn("lshdb: a background flush or compaction of "+db.dir+" ran out of disk space: the writes acknowledged are kept (in its tables, or its write-ahead log, which the next open replays), but free space on its disk before the next write", "error", firstLine{*p})
}

// markerMissing returns ErrCorrupt for a store whose manifest and tables
// are there but not the marker that names its current manifest: Pebble
// said "database does not exist" to a reader and "already exists and is
// not pristine" to a writer (which first wrote a marker of its own).
//
// A store with no marker, no table, no log and no options file, whose
// only manifest is the first (MANIFEST-000001), is one whose creation
// never finished (a create or first build killed between Pebble's first
// two files): it holds nothing. An open that may create an index removes
// that manifest, and Pebble creates the store anew; any other open finds
// no index (ErrNotExist). NB: it was taken as damage, and every command,
// drop and the nightly build's re-run included, refused the directory.
func markerMissing(o *Options, dir string) error {
	// (errUnfinished marks the ErrNotExist for Drop.)
	fs := o.fs
	names, err := fs.List(dir)
	if err != nil {
		return nil // NB: Open says what is wrong with dir
	}
	store, marker, tables, begun := false, false, false, false
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "marker.manifest.") || n == "CURRENT":
			marker = true
		case strings.HasSuffix(n, ".sst"):
			store, tables = true, true
		case strings.HasPrefix(n, "MANIFEST-"):
			store = true
			begun = begun || n != "MANIFEST-000001"
		case strings.HasSuffix(n, ".log") || strings.HasPrefix(n, "OPTIONS-"):
			begun = true
		}
	}
	switch {
	case !store || marker:
		return nil
	case !tables && !begun && (o.ReadOnly || o.MustExist):
		return fmt.Errorf("%w: %s holds the start of a store whose creation never finished (a create or a first build killed)%w", ErrNotExist, dir, errUnfinished)
	case !tables && !begun:
		if err := fs.Remove(fs.PathJoin(dir, "MANIFEST-000001")); err != nil {
			return fmt.Errorf("lshdb: %s: removing the manifest of a store whose creation never finished: %w", dir, err)
		}
		return nil
	case tables:
		return fmt.Errorf("%w: %s: the store's marker of its current manifest (marker.manifest.*) is missing, though its manifest and tables are there", ErrCorrupt, dir)
	}
	return fmt.Errorf("%w: %s: the store's marker of its current manifest (marker.manifest.*) is missing, though its manifest and write-ahead logs are there", ErrCorrupt, dir)
}

// unregister removes the registration of the handle's writer at Close.
// One left behind reads as a writer (an index kept, never one dropped),
// and a repair then needs --force: it tries again, for up to 5 s, while
// the server is restarting (it refuses or closes the connection, or
// answers LOADING), where one try failed and every process that closed
// during an outage left its registration (a review's R5). NB: briefly:
// a server that does not answer (an attempt that runs out its 2 s) is
// not waited on.
func (db *DB) unregister() {
	for deadline := time.Now().Add(5 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := db.rkv.Unregister(ctx, db.writer)
		cancel()
		restarting := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || err != nil && strings.HasPrefix(err.Error(), "LOADING")
		if !restarting || time.Now().Add(unregisterRetry).After(deadline) {
			if err != nil {
				// NB: said: the registration left behind made lshdb drop and
				// check --repair refuse for minutes, for "another handle",
				// with nothing to tell why (an operator's review of Redis,
				// RD3).
				db.opts.Logger.Warn("lshdb: this handle could not take back its registration as a writer: lshdb drop and check --repair count it as another handle until it has not been seen for 5m; once this process has ended, --force is safe", "index", db.dir, "err", err)
			}
			return
		}
		time.Sleep(unregisterRetry)
	}
}

// unregisterRetry is the wait between two tries of unregister.
const unregisterRetry = 200 * time.Millisecond

// errUnfinished marks the ErrNotExist of a directory that holds a store
// whose creation never finished: Drop removes it. It says nothing.
var errUnfinished = quietError{"unfinished"}

// errNoManifest marks the ErrCorrupt of a Redis index whose manifest is
// gone and whose other keys are left: Drop removes them. It says
// nothing.
var errNoManifest = quietError{"no manifest"}

// quietError is an error that says nothing, for marks that errors.Is
// finds in an error whose words are elsewhere; mark tells them apart.
type quietError struct{ mark string }

func (quietError) Error() string { return "" }

// damageSeen is the first damage to a store's files that Pebble reported
// in the background (DB.Corruption).
type damageSeen struct {
	err      atomic.Pointer[error]
	failures atomic.Int64 // Pebble's background errors, of any kind (flushAtClose)
	// noSpace is the last flush's failure for lack of space (ENOSPC),
	// until a flush succeeds (nil then).
	noSpace atomic.Pointer[error]
	// bgNoSpace is the first background failure (a flush's or a
	// compaction's) for lack of space since the last that succeeded:
	// Close warns of it.
	bgNoSpace atomic.Pointer[error]
	// stopped is the error of a write that Pebble panicked in (pebbleWrite):
	// its store takes no write after it, and is not closed.
	stopped atomic.Pointer[error]
	// home is the index's directory as the open found it (nil on another
	// filesystem than the operating system's: movedAway); homeSeen when
	// it was last found in its place (nanoseconds since the open).
	home     os.FileInfo
	homeSeen atomic.Int64
	opened   time.Time
}

// homeRecheck is how long a check that the directory is in its place
// stands (writesRefused). NB: the check is a stat, 2 µs here: asked on
// every write, the smallest (an unsynced one-document Put,
// BenchmarkPutOneReserve) took about 1.08x its time; standing 1 ms,
// 1.06x (within the noise).
const homeRecheck = time.Millisecond

// dirMovedNow is movedAway for the index, asked now.
func (d *damageSeen) dirMovedNow(dir string) error {
	if d.home == nil {
		return nil
	}
	return movedAway(dir, d.home)
}

// dirMoved is movedAway for the index, asked at most once a
// homeRecheck while the directory is found in its place.
func (d *damageSeen) dirMoved(dir string) error {
	if d.home == nil {
		return nil
	}
	now := int64(time.Since(d.opened))
	if seen := d.homeSeen.Load(); seen != 0 && now-seen < int64(homeRecheck) {
		return nil
	}
	if err := movedAway(dir, d.home); err != nil {
		return err
	}
	d.homeSeen.Store(max(now, 1))
	return nil
}

// pebbleWrite runs f, a write into Pebble (a batch's commit, a Set), and
// returns its error classified; it turns a panic of Pebble's in f into
// an error: Pebble panics when a
// write-ahead log write fails (a full disk with DiskReserve off, an I/O
// error), holding its commit pipeline's lock, which no later write or
// Close then gets. From then on every write is refused with that error
// at once, and Close leaves the store as it is (the writes acknowledged
// before are in the log, which the next open replays: in a new process,
// as Pebble's own lock on the directory stays held in this one).
//
// NB: a server recovered the panic in its handler and went on: every
// later write hung until the client's timeout, and SIGTERM did not stop
// it, its Close waiting for ever (a data-safety review, on a full tmpfs).
func (db *DB) pebbleWrite(f func() error) error {
	if p := db.damage.stopped.Load(); p != nil {
		return *p
	}
	err, panicked := recovering(f)
	if panicked != nil {
		return db.logFailed(panicked)
	}
	return classify(err)
}

// recovering runs f, a commit into Pebble, and returns its error, or as
// panicked the panic it raised: a failed commit (pebbleLogger's Fatalf).
func recovering(f func() error) (err, panicked error) {
	defer func() {
		if r := recover(); r != nil {
			cause, ok := r.(error)
			if !ok {
				cause = fmt.Errorf("%v", r)
			}
			err, panicked = nil, cause
		}
	}()
	return f(), nil
}

// logFailed stops the store at a failed write (cause: Pebble's panic at a
// write-ahead log's or its manifest's write that failed) and returns the
// error that every write gets from then on: the first one's, ErrStopped
// (and ErrDiskFull for a full disk). Pebble's log keeps a failure: the
// next commit panics, and the next rotation of the log (a flush) ends the
// process.
//
// NB: it was ErrCorrupt, which says stored bytes are damaged and sends
// the reader to a backup, for an I/O error that damaged nothing (a
// fault-injection review's FI-4).
func (db *DB) logFailed(cause error) error {
	full := errors.Is(cause, syscall.ENOSPC)
	what := "a write of its log or manifest failed"
	if full {
		what = "its disk is full (disk full)"
	}
	var err error = stoppedError{full: full, msg: fmt.Sprintf("%s: %s: %s (%v): no write is taken until the index is opened again, by a new process (close it: the writes acknowledged before are kept, and the next open replays them)", ErrStopped, db.dir, what, firstLine{unprefixed{cause}})}
	if db.damage.stopped.CompareAndSwap(nil, &err) {
		db.opts.Logger.Error("lshdb: Pebble failed a write and stopped: writes are refused; close the index and open it again in a new process", "index", db.dir, "error", fmt.Sprint(firstLine{cause}))
	}
	return *db.damage.stopped.Load()
}

// stoppedStores are the directories (with their filesystem) of the
// handles closed after their store stopped (ErrStopped): Pebble keeps
// their lock in this process, and an Open of one says so.
var stoppedStores sync.Map

type stoppedStore struct {
	fs  vfs.FS
	dir string
}

// stoppedClosed notes that the handle of dir on fs closed after its store
// stopped.
func stoppedClosed(fs vfs.FS, dir string) {
	if reflect.TypeOf(fs).Comparable() {
		stoppedStores.Store(stoppedStore{fs, dir}, struct{}{})
	}
}

// stoppedHere reports whether a handle of dir on fs closed after its store
// stopped (stoppedClosed).
func stoppedHere(fs vfs.FS, dir string) bool {
	if !reflect.TypeOf(fs).Comparable() {
		return false
	}
	_, ok := stoppedStores.Load(stoppedStore{fs, dir})
	return ok
}

// stoppedError is logFailed's error: ErrStopped, and ErrDiskFull too when
// the write found the disk full (errors.Is), in one message.
type stoppedError struct {
	full bool
	msg  string
}

func (e stoppedError) Error() string { return e.msg }
func (e stoppedError) Is(target error) bool {
	return target == ErrStopped || e.full && target == ErrDiskFull
}

// writesRefused returns the error that every write gets, as every room
// check asks it (roomFor, roomToFree, RoomToWrite, flushAtClose): the
// store's once it stopped (damageSeen.stopped: Pebble's commit pipeline,
// and with it its flushes, compactions and ingests, would wait for ever),
// else ErrDiskFull while the index's flushes fail for lack of space
// (damageSeen.noSpace), else nil.
//
// NB: Pebble retries a failed flush at once, for ever, and writes go on
// into memtables until their count stops every write: with the reserve
// off (DiskReserve -1), or a disk filled by another process faster than
// the reserve's checks, an insert hung on a full disk at 100% of a core,
// and its graceful stop never came (an operator's review, O1). A write
// is refused instead from the first failed flush on, as the reserve
// refuses it; the writes stored before it stay in the write-ahead log.
func (d *damageSeen) writesRefused(dir string) error {
	if p := d.stopped.Load(); p != nil {
		return *p
	}
	if err := d.dirMoved(dir); err != nil {
		return err
	}
	p := d.noSpace.Load()
	if p == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: the index's last flush found no space left on its disk (%v): free space there; writes are let through again once a flush succeeds (Pebble retries it)", ErrDiskFull, dir, firstLine{*p})
}

// movedAway returns ErrNotExist when dir is no longer the directory home
// (its identity when the index was opened): moved or removed while open,
// where Pebble's next write-ahead log (a write's, or a flush's) could not
// be made. Nil while it is, or when it cannot tell (dir cannot be read
// for another reason).
//
// NB: Pebble makes its next log with its mutex released, and its
// Fatalf's panic there unlocked the mutex again: Go's runtime ended the
// whole process ("fatal error: sync: unlock of unlocked mutex"), which
// no recover stops, at the first write after a deploy script moved an
// embedding service's index (an embedder's review, E2). Every room check
// asks this (writesRefused), so that the write is refused instead; the
// acknowledged writes are in the directory wherever it went.
func movedAway(dir string, home os.FileInfo) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && os.SameFile(fi, home):
		return nil
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %s: the index's directory was moved or removed since this handle opened it: nothing was written (no file of the index's could be made there); close the handle, whose acknowledged writes are in the directory wherever it went, and open the index where it is", ErrNotExist, dir)
	}
	return nil
}

func (d *damageSeen) note(err error) { d.err.CompareAndSwap(nil, &err) }

// Corruption returns the first damage to the index's files that this
// handle's background work met, or nil: a compaction (or a flush) that
// read a table whose checksum was wrong, as an ErrCorrupt naming the
// file. No call returned it: the writes that started the compaction are
// stored (in the log and in new tables), but the index is damaged: Check
// reads every table, and a backup restored (or a build from the inputs)
// mends it. A read that meets damage returns it itself, and is not noted
// here. Nil on a read-only handle (which compacts nothing) and on Redis.
func (db *DB) Corruption() error {
	if db.damage == nil {
		return nil
	}
	if p := db.damage.err.Load(); p != nil {
		return *p
	}
	return nil
}

// flushAtClose flushes the memtable of a writable handle that wrote, so
// that a cleanly closed index does not depend on its write-ahead log.
//
// NB: Pebble replays the newest log leniently (damage in it reads as a
// torn tail, what a crash leaves) and does not flush at Close: 4 bytes
// overwritten in the middle of the log of a cleanly closed index dropped
// the last 2,000 acknowledged documents of 30,000, and Open and Check
// both said ok. A flush costs a table write (at most a memtable). It is
// skipped without the room for it, and waited for until it is done or
// Pebble reports an error in the background: Pebble retries a failed
// flush without end (a full disk, a quota) until it is closed, and Flush
// waited for ever, which made Close hang. The writes are in the log whatever comes
// of it (synced, unless the caller opted out), as before. (Open now finds
// damage before the newest log's last record itself, LogDamageError; a
// clean close leaves it none to find.)
func (db *DB) flushAtClose() {
	if db.opts.ReadOnly {
		return
	}
	m := db.pdb.Metrics()
	if m.WAL.BytesIn == 0 {
		return // nothing written through this handle
	}
	// NB: the flush turns the log's writes into a table, and the log
	// (preallocated beyond them) goes: about even, so it keeps only the
	// open's reserve. At DiskReserve's, the deletes of a handle let
	// through on a nearly full disk stayed in the log (a review).
	// Nor is it tried once a flush found no space (DiskReserve < 0 lets
	// writes fill the disk): both memtables full, AsyncFlush itself
	// waited in Pebble's write stall for ever, and Close hung (an
	// embedder's review, D1).
	if err := cmp.Or(db.damage.writesRefused(db.dir), roomIn(db.opts.FS, db.dir, min(db.opts.DiskReserve, openReserve(&db.opts.Options)), int64(m.MemTable.Size))); err != nil {
		// NB: said as what it is: the writes are kept (the log is
		// synced, and the next open replays it); a build that failed on
		// a full disk, having written nothing, read it as writes left.
		why := "the handle's writes are not flushed into tables at close" // NB: a moved directory's (movedAway)
		if errors.Is(err, ErrDiskFull) {
			db.counts.diskFull.Add(1)
			why = "no room to flush the handle's writes into tables at close"
		}
		db.opts.Logger.Warn("lshdb: "+why+": they are kept in the write-ahead log, which the next open replays", "error", err)
		return
	}
	if err := db.flushWait(context.Background()); err != nil {
		db.opts.Logger.Warn("lshdb: flushing at close failed; the last writes stay in the write-ahead log only", "error", err)
	}
}

// flushWait flushes the memtables and waits for the flush, until ctx
// ends or the flush fails once (Pebble retries a failed flush at once,
// for ever: damageSeen.failures counts them); where writes are refused
// (writesRefused) it is not tried. Such a flush only tidies: the writes
// it flushes are in the synced log, or in ingested tables.
func (db *DB) flushWait(ctx context.Context) error {
	// NB: the directory's place is asked anew, not as a write's check
	// stands (homeRecheck): a flush rotates the log, and in a directory
	// moved within that millisecond Pebble's fatal error ended the
	// process (a read-through's RT7-2).
	if err := cmp.Or(db.damage.dirMovedNow(db.dir), db.damage.writesRefused(db.dir)); err != nil {
		return err
	}
	failed := db.damage.failures.Load()
	// NB: through pebbleWrite: a flush rotates the log, which panics when
	// the last log write failed and the store was not yet stopped.
	var flushed <-chan struct{}
	err := db.pebbleWrite(func() (err error) {
		flushed, err = db.pdb.AsyncFlush()
		return err
	})
	if err != nil || flushed == nil {
		return err
	}
	for {
		select {
		case <-flushed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if db.damage.failures.Load() != failed {
			// NB: Pebble's Close then stops retrying it.
			return cmp.Or(db.damage.writesRefused(db.dir), errors.New("lshdb: a flush failed"))
		}
	}
}

// writerLock is DB.wmu: a mutex whose waiters give up when their context
// ends (lock), Close's included. NB: a write made inside a Load's
// documents or Progress function waits for the Load, which waits for the
// write to return: with a sync.Mutex, Close (which cancels the Load and
// waits for it) then hung too. Now Close ends the wait: the write returns
// ErrClosed, the Load stops, and Close returns. The zero value is
// unlocked.
type writerLock struct {
	once sync.Once
	ch   chan struct{} // holds a token while locked
	// waiting counts the writers waiting now for another to finish,
	// waits those that waited, and waited how long they waited in all,
	// in nanoseconds (the waits in progress not counted): Metrics'
	// WritersWaiting, WriterWaits and WriterWaitTime.
	waiting atomic.Int64
	waits   atomic.Uint64
	waited  atomic.Int64
}

func (l *writerLock) sem() chan struct{} {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	return l.ch
}

// Lock locks l, waiting as long as it takes.
func (l *writerLock) Lock() {
	select {
	case l.sem() <- struct{}{}:
		return
	default:
	}
	defer l.wait()()
	l.sem() <- struct{}{}
}

// wait counts a writer that waits for l, and returns the function that
// counts the end of its wait.
func (l *writerLock) wait() func() {
	l.waiting.Add(1)
	start := time.Now()
	return func() {
		l.waited.Add(int64(time.Since(start)))
		l.waits.Add(1)
		l.waiting.Add(-1)
	}
}

// lock locks l unless ctx ends first, and then returns ctxErr(ctx)
// (ErrClosed when the database is closing).
func (l *writerLock) lock(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctxErr(ctx) // NB: an ended context never takes the lock
	}
	select {
	case l.sem() <- struct{}{}:
		return nil
	default:
	}
	defer l.wait()()
	select {
	case l.sem() <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// Unlock unlocks l. Unlocking an unlocked l is a bug, as with a
// sync.Mutex: it panics rather than block for ever.
func (l *writerLock) Unlock() {
	select {
	case <-l.sem():
	default:
		panic("lshdb: unlock of an unlocked writer lock")
	}
}

// enter counts an operation in; the caller MUST call db.mu.RUnlock when
// it returns nil. Once Close has begun it returns ErrClosed at once.
func (db *DB) enter() error {
	if !db.mu.enter() {
		return ErrClosed
	}
	return nil
}

// handleGate is what Close waits on: the operations in flight. Unlike a
// read-write mutex, it refuses new operations as soon as Close begins
// instead of queueing them behind it: an operation that calls back into
// the caller's code (Load's documents, a Progress function, ClustersFrom's
// pairs) while another goroutine closes the handle would otherwise wait
// for Close, which waits for that operation: a deadlock (a sync.RWMutex
// blocks new readers while a writer waits). The callback's call returns
// ErrClosed instead, and the operation stops at its next check.
type handleGate struct {
	mu      sync.Mutex
	idle    *sync.Cond // signalled when ops falls to 0 while closing
	closing bool
	ops     int
	// closed is closed when the first Close has ended (closeEnded).
	closed chan struct{}
}

// enter counts an operation in, unless Close has begun.
func (g *handleGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.ops++
	return true
}

// RUnlock counts an operation out.
func (g *handleGate) RUnlock() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ops--; g.ops == 0 && g.idle != nil {
		g.idle.Broadcast()
	} else if g.ops < 0 {
		// NB: a bug in lshdb, not in its input: as sync.RWMutex's RUnlock
		// of an unlocked mutex, which this gate replaced.
		panic("lshdb: handle gate left more often than entered")
	}
}

// close refuses new operations and waits until none is in flight; the
// caller then closes the handle, and MUST call closeEnded when it has. It
// reports false if the gate was already closing (a second Close), once
// the first Close has ended.
//
// NB: a second Close returned ErrClosed at once, while the first still
// flushed and held the directory's lock: a deferred Close beside a signal
// handler's, then an Open, got ErrLocked, and a process that exited on
// the second's return lost NoSync writes (an embedder's review, EM-1).
func (g *handleGate) close() bool {
	g.mu.Lock()
	if g.closing {
		closed := g.closed
		g.mu.Unlock()
		<-closed
		return false
	}
	defer g.mu.Unlock()
	g.closing = true
	g.closed = make(chan struct{})
	g.idle = sync.NewCond(&g.mu)
	for g.ops > 0 {
		g.idle.Wait()
	}
	return true
}

// closeEnded says that the Close that closed the gate has ended.
func (g *handleGate) closeEnded() { close(g.closed) }

// openIter is an iteration's hold on Pebble resources across yields.
type openIter struct {
	release func() // idempotent
}

// track registers the resources an iteration holds across yields; the
// caller holds db.mu for reading, and MUST call untrack when it ends.
func (db *DB) track(release func()) *openIter {
	it := &openIter{release: sync.OnceFunc(release)}
	db.openMu.Lock()
	db.open[it] = struct{}{}
	db.openMu.Unlock()
	return it
}

// untrack releases an iteration's resources, unless Close already did.
func (db *DB) untrack(it *openIter) {
	if !db.mu.enter() {
		// NB: Close has begun: it releases every tracked iteration once
		// the operations in flight are done (after this one's release
		// could race with Pebble's Close).
		return
	}
	defer db.mu.RUnlock()
	db.openMu.Lock()
	delete(db.open, it)
	db.openMu.Unlock()
	it.release()
}

// liveOp is an operation context in flight (DB.ops).
type liveOp struct{ cancel context.CancelCauseFunc }

// opCtx returns the context a long operation runs under: ctx, cancelled
// also when Close starts (with cause ErrClosed), before Close returns.
// The caller MUST call the returned cancel function.
func (db *DB) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, cancel := context.WithCancelCause(ctx)
	op := &liveOp{cancel: cancel}
	db.opsMu.Lock()
	if db.closing.Err() != nil {
		// NB: checked under opsMu, which Close's cancelOps takes after
		// cancelling closing: no op is registered after that sweep.
		db.opsMu.Unlock()
		cancel(ErrClosed)
		return c, func() { cancel(context.Canceled) }
	}
	if db.ops == nil {
		db.ops = make(map[*liveOp]struct{})
	}
	db.ops[op] = struct{}{}
	db.opsMu.Unlock()
	return c, func() {
		db.opsMu.Lock()
		delete(db.ops, op)
		db.opsMu.Unlock()
		cancel(context.Canceled)
	}
}

// cancelOps cancels every operation context in flight with cause
// ErrClosed. Close calls it once closing is cancelled.
func (db *DB) cancelOps() {
	db.opsMu.Lock()
	defer db.opsMu.Unlock()
	for op := range db.ops {
		op.cancel(ErrClosed)
	}
	clear(db.ops)
}

// orBackground returns ctx, or context.Background() for a nil one: every
// method that takes a context takes nil for none. NB: Scan, Stats and
// Clusters panicked on a nil one, and a recovered panic of Scan's left
// the handle entered, so that Close waited for ever.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// ctxErr returns nil while ctx is live, and then why it ended: ErrClosed
// when the database is closing, else ctx.Err() (context.Canceled or
// context.DeadlineExceeded).
func ctxErr(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if c := context.Cause(ctx); errors.Is(c, ErrClosed) {
		return ErrClosed
	}
	return ctx.Err()
}

// openReserve is the free space a writable Open needs (at most
// Options.DiskReserve): room for a new WAL and MANIFEST (8 MiB), and for
// flushing the two memtables the old WAL may replay into (of this
// handle's size: a log written with larger memtables may need more). Less
// than the write reserve by default (24 of 64 MiB), so that an index
// whose writes are refused can still be opened and read.
func openReserve(o *Options) int64 { return 8<<20 + 2*o.MemTableSize }

// roomFor returns ErrDiskFull when writing about n more bytes would leave
// the database's filesystem with less than Options.DiskReserve free.
//
// NB: it asks the filesystem on every write: unsynced one-document Puts
// took 1.01x and 1.07x the time without the check in two runs of
// BenchmarkPutOneReserve (within the noise), synced ones far less. Asking
// only after enough bytes would miss another process filling the disk,
// and Pebble panics when the disk fills.
func (db *DB) roomFor(n int64) error {
	err := cmp.Or(db.damage.writesRefused(db.dir), roomIn(db.opts.FS, db.dir, db.opts.DiskReserve, n))
	if err != nil {
		db.counts.diskFull.Add(1)
	}
	return err
}

// freeReserve is the reserve of writes that free space (roomToFree): a
// writable Open's (openReserve) and the room of the write-ahead log that
// a handle's first write, and each new memtable, preallocates (Pebble:
// 110% of a memtable; a quarter here). At the open's reserve alone, one
// delete took the log's room (9 MiB of 26 free), and left the index where
// no writable open, so no other delete, purge or compaction, was let
// through (a review on a full tmpfs).
func freeReserve(o *Options) int64 { return openReserve(o) + o.MemTableSize + o.MemTableSize/4 }

// roomToFree is roomFor for a write that frees space once compacted (a
// delete, a purge of emptied lists, a sweep of the expired) and for a
// compaction: it keeps only the reserve a writable Open needs and a new
// log's room (freeReserve: 34 of the default 64 MiB), so that an index
// whose writes are refused can still be emptied. They were refused with the rest (a review), and
// the message's way out was a lower --disk-reserve, which lets every
// write through.
func (db *DB) roomToFree(n int64) error {
	reserve := db.opts.DiskReserve
	if reserve <= 0 || reserve <= freeReserve(&db.opts.Options) {
		return db.roomFor(n) // NB: DiskReserve's own message (and its flag)
	}
	reserve = freeReserve(&db.opts.Options)
	err := roomIn(db.opts.FS, db.dir, reserve, n)
	if err != nil {
		// NB: not DiskReserve's reserve: a lower --disk-reserve, the way
		// out its message names, lets every write through (a review).
		err = fmt.Errorf("%w: %s has %s free, and a write that frees space (a delete, a purge, a compaction; this one needs about %s) still keeps %s for the index's flushes and compactions: free space on the disk outside the index", ErrDiskFull, db.dir, mib(freeIn(db.opts.FS, db.dir)), mib(n), mib(reserve))
	}
	// NB: as roomFor: refused while flushes fail for lack of space.
	err = cmp.Or(db.damage.writesRefused(db.dir), err)
	if err != nil {
		db.counts.diskFull.Add(1)
	}
	return err
}

// freeIn is the free space of dir's filesystem (0 where it cannot tell).
func freeIn(fs vfs.FS, dir string) int64 {
	u, err := fs.GetDiskUsage(dir)
	if err != nil {
		return 0
	}
	return int64(u.AvailBytes)
}

// RoomToWrite returns ErrDiskFull when the index's filesystem has less
// than Options.DiskReserve free, so that writes are refused (the error
// says how much is free), ErrReadOnly on a read-only handle, else nil. A
// server's health check calls it: reads are served either way.
func (db *DB) RoomToWrite() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if db.rkv != nil {
		return nil // NB: Redis refuses at maxmemory itself (ErrDiskFull then)
	}
	return cmp.Or(db.damage.writesRefused(db.dir), roomIn(db.opts.FS, db.dir, db.opts.DiskReserve, 0))
}

func roomIn(fs vfs.FS, dir string, reserve, n int64) error {
	if reserve < 0 {
		return nil
	}
	u, err := fs.GetDiskUsage(dir)
	if err != nil {
		return nil // NB: the filesystem cannot tell (vfs.MemFS by default): no check
	}
	if free := int64(u.AvailBytes); free-n < reserve {
		need := ""
		if n > 0 {
			need = fmt.Sprintf(" (the write needs about %s)", mib(n))
		}
		return fmt.Errorf("%w: %s has %s free%s, and lshdb keeps %s in reserve so that the index's flushes and compactions have room (Options.DiskReserve)",
			ErrDiskFull, dir, mib(free), need, mib(reserve))
	}
	return nil
}

// roomToOpen is a writable Open's room check: openReserve (8 MiB and two
// memtables, 24 MiB by default), or DiskReserve if that is less.
//
// NB: it said "lshdb keeps 24.0 MiB in reserve … (--disk-reserve MiB
// changes it)", where that reserve was 64 MiB (a data-safety review).
func roomToOpen(fs vfs.FS, dir string, o *Options) error {
	need := min(o.DiskReserve, openReserve(o))
	if err := roomIn(fs, dir, need, 0); err != nil {
		return fmt.Errorf("%w: %s has %s free, and a writable open needs %s of it for a new write-ahead log and a flush: 8 MiB and two memtables, or the disk reserve if that is less (Options.DiskReserve)",
			ErrDiskFull, dir, mib(freeIn(fs, dir)), mib(need))
	}
	return nil
}

// roomToReplay is a writable Open's room check without a reserve
// (DiskReserve < 0): Pebble flushes the write-ahead logs it replays into
// tables before it opens, and a flush that fails for lack of space is
// retried for ever: the open hung on a full disk, leaving an empty table
// file a try (an embedder's review, D1). It needs about the logs' size
// (tables of the same writes, compressed); obsolete logs, which Pebble
// deletes at the open, are counted too.
func roomToReplay(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return nil // NB: Open says what is wrong with dir
	}
	// NB: the logs' sizes as written, not their allocated blocks (Info's
	// LogBytes): Pebble allocates a log's room ahead of its writes.
	var logs int64
	for _, n := range names {
		if !isLogFile(n) {
			// NB: check --repair's copies of damaged logs
			// (lshdb-damaged-NNNNNN.log), never replayed, were counted:
			// a large one refused every open (a maintainer review's K1).
			continue
		}
		if st, err := fs.Stat(fs.PathJoin(dir, n)); err == nil {
			logs += st.Size()
		}
	}
	if logs == 0 {
		return nil
	}
	u, err := fs.GetDiskUsage(dir)
	if err != nil {
		return nil // NB: the filesystem cannot tell: no check
	}
	if free := int64(u.AvailBytes); free < logs+1<<20 {
		return fmt.Errorf("%w: %s has %s free, and opening it for writing replays %s of write-ahead logs into tables, which needs about that much (and a flush that finds no space is retried for ever): free space there",
			ErrDiskFull, dir, mib(free), mib(logs))
	}
	return nil
}

// mib is n bytes in MiB, or in KiB or bytes below a tenth of a MiB (a
// small write "needed about 0.0 MiB").
func mib(n int64) string {
	switch {
	case n >= 1<<20/10:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// pebbleLogger sends Pebble's messages to the handle's slog.Logger:
// informational ones at Debug, errors at Error.
type pebbleLogger struct{ l *slog.Logger }

// repeatLimiter says a message at most once every interval, counting the
// repeats it held back meanwhile. Messages alike but for their numbers
// (the table a failed flush wrote) are the same message.
type repeatLimiter struct {
	every time.Duration
	exact bool // messages alike only when equal (else: equal but for their digits)
	mu    sync.Mutex
	last  map[string]time.Time
	held  map[string]int
}

// allow reports whether msg is to be said at now, and how many like it
// were held back since it was last said.
func (r *repeatLimiter) allow(msg string, now time.Time) (ok bool, held int) {
	key := msg
	if !r.exact {
		key = strings.Map(func(c rune) rune {
			if c >= '0' && c <= '9' {
				return '#'
			}
			return c
		}, msg)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, r.held = map[string]time.Time{}, map[string]int{}
	}
	if t, seen := r.last[key]; seen && now.Sub(t) < r.every {
		r.held[key]++
		return false, 0
	}
	if len(r.last) > 1000 {
		clear(r.last) // NB: bounded: a stream of distinct errors
		clear(r.held)
	}
	r.last[key], held = now, r.held[key]
	delete(r.held, key)
	return true, held
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug("lshdb: pebble: " + fmt.Sprintf(format, args...))
	}
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("lshdb: pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "lshdb: pebble: fatal: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	// NB: Pebble calls Fatalf for invariant violations inside Pebble, for
	// a commit whose write-ahead log write failed (a full disk, an I/O
	// error) and for a failed write of its manifest (an ingest's, a
	// flush's, a compaction's), never for bad input, and expects it not
	// to return: in a goroutine of Pebble's own (a flush, a compaction)
	// the panic ends the process (README: "Nothing in the library exits
	// the process but ..."). A panic (rather than
	// Pebble's default os.Exit) lets an embedding program decide, and
	// pebbleWrite tells a full disk by the panic's errors: Pebble formats
	// them with %v, which keeps only their text (a Repair's commit on a
	// full disk was reported as a corrupt index).
	var errs []error
	for _, a := range args {
		if err, ok := a.(error); ok {
			errs = append(errs, err)
		}
	}
	panic(fatalError{msg: msg, errs: errs})
}

// fatalError is the panic of pebbleLogger.Fatalf: its message, and the
// errors among its arguments, which errors.Is and errors.As see.
type fatalError struct {
	msg  string
	errs []error
}

func (e fatalError) Error() string   { return e.msg }
func (e fatalError) Unwrap() []error { return e.errs }

// existingDir reports whether dir is a directory on fsys.
func existingDir(fsys vfs.FS, dir string) bool {
	fi, err := fsys.Stat(dir)
	return err == nil && fi.IsDir()
}

// resolvedDir is dir with its symbolic links resolved (fspath.Resolve) on
// the OS's filesystem, and dir as it is on another.
func resolvedDir(fsys vfs.FS, dir string) string {
	if fsys != vfs.Default {
		return dir
	}
	return fspath.Resolve(dir)
}
