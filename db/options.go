package db

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/minhash"
)

// Limits.
const (
	// MaxIDBytes is the longest external id accepted.
	MaxIDBytes = 4096
	// DefaultMaxDocBytes is the default Options.MaxDocBytes: 64 MiB.
	DefaultMaxDocBytes = 64 << 20
	// DefaultCacheSize is the default block cache: 64 MiB (Pebble's own
	// default, 8 MB, holds too few posting lists for a warm query path).
	DefaultCacheSize = 64 << 20
	// DefaultMemTableSize is the default Options.MemTableSize: 8 MiB,
	// between writes and reads. Pebble's own default, 4 MiB, flushed a
	// level 0 table every few 1,000-document batches, and each table's
	// compaction rewrote the level below it (posting keys are hashes, so
	// every table overlaps all of it): compactions took two thirds of the
	// CPU of BenchmarkPut's 300,000 synced inserts, which ran at
	// 9,800-11,600 documents/s against 23,600-26,200 with 8 MiB and
	// 26,900-30,000 with 16 MiB. But every read seeks the memtable's skip
	// list, and a fuller one costs more cache misses: BenchmarkMixed's
	// queries (90%) and synced puts through the socket ran at 5,600-6,100
	// operations/s with 4 MiB, 5,300-5,800 with 8 MiB and 4,200-4,500
	// with 16 MiB (memtable seeks 11% of the CPU with 4 MiB, 29% with 16).
	// 32 and 64 MiB wrote more slowly than 16 (14,800-17,700 documents/s):
	// their level 0 tables' bloom filters outgrow a block cache shard, so
	// every lookup of a new id read them from disk (measured on 2 cores).
	DefaultMemTableSize = 8 << 20
	// DefaultQueryCacheSize is the default Options.QueryCacheSize: 64 MiB,
	// as much as the block cache, and the shingle hashes of ~20,000
	// documents of 400 characters.
	DefaultQueryCacheSize = 64 << 20
	// DefaultThreshold is the default Jaccard threshold.
	DefaultThreshold = 0.8
	// DatasketchSeed is the seed a new SchemeDatasketch index takes when
	// Options.Seed is 0: datasketch's default (MinHash(seed=1)).
	DatasketchSeed = 1
)

// Options configure Open. They are of two kinds:
//
//   - creation parameters, stored in the database and fixed for its life:
//     Threshold, Recall, Bands and Rows, NumPerm, Scheme, Seed, Shingle,
//     ShingleSize, Bag, Normalization, StopWords, Storage and StoreText;
//   - handle options, for this Open only and stored nowhere: NoSync,
//     ReadOnly, MustExist, MaxDocBytes, StrictUTF8, CacheSize, MemTableSize,
//     QueryCacheSize, DiskReserve, AcceptLogDamage, RestoreLostIDs,
//     RemoveUnnamed, LockTimeout, ExpirySweep, PurgeEvery and Logger. An
//     Open that leaves one zero takes its default, whatever an earlier
//     Open set: a limit such as MaxDocBytes must be given to every Open.
//
// The zero value is a valid configuration: on creation every zero field
// takes its default, on reopening every zero creation parameter takes the
// value stored in the database, and a non-zero one that differs from the
// stored value is refused with a *MismatchError (errors.Is
// ErrParamsMismatch). NB: the defaults that are their types' zero values
// (minhash.SchemeFSS, minhash.NormalizeFold, minhash.ShingleChar) cannot
// be told from "not set": given on reopening, they take the stored value,
// whatever it is.
type Options struct {
	// Creation parameters: stored in the manifest, fixed for the
	// database's life.

	// Threshold is the Jaccard threshold that queries default to and that
	// the banding is chosen for, in (0, 1]. Default: 0.8.
	Threshold float64
	// Recall is the target probability that a pair at exactly Threshold
	// shares a band, in (0, 1); it selects the banding (see bands.Choose).
	// Default: 0.99.
	Recall float64
	// Bands and Rows set the banding explicitly (both or neither), with
	// Bands·Rows ≤ NumPerm. Default: chosen from Threshold and Recall.
	Bands, Rows int
	// NumPerm is the number of signature values, 1 to minhash.MaxNumPerm
	// (8192). Default: 128.
	NumPerm int
	// Scheme is the signature scheme of a new database. Default:
	// minhash.SchemeFSS. An existing database keeps the scheme it was made
	// with (databases made before fss are oph).
	//
	// minhash.SchemeDatasketch makes signatures equal to those of the
	// Python library datasketch (MinHash with num_perm NumPerm and seed
	// Seed): a set put as Tokens signs as datasketch's MinHash of the same
	// tokens (each updated as its UTF-8 bytes), and datasketch's
	// hashvalues can be put and queried as they are (PutSignature,
	// QuerySignature). Only the signatures match: lshdb bands them its own
	// way (b bands of r rows, each band's values hashed into a bucket,
	// chosen from Threshold and Recall), not as datasketch's MinHashLSH
	// does, so an lshdb index and a MinHashLSH with the same threshold
	// find similar but not identical candidates, and lshdb verifies them
	// (exactly, where a set or text is stored). A text put into such an
	// index is shingled and hashed by lshdb, so its signature is not
	// datasketch's of any token list.
	Scheme minhash.Scheme
	// Seed selects the signature hash functions. Default: 0, and
	// DatasketchSeed (1, datasketch's default) for SchemeDatasketch, whose
	// seed must be below 2^32.
	Seed uint64
	// Shingle is the shingle kind. Default: minhash.ShingleChar.
	Shingle minhash.ShingleKind
	// ShingleSize is k, 1 to minhash.MaxK (256). Default: 5 for char, 3
	// for word shingles.
	ShingleSize int
	// Bag counts repeated shingles (weighted Jaccard). Default: false.
	Bag bool
	// Normalization of text before shingling: minhash.NormalizeFold,
	// NormalizeNone or NormalizeNFKC (for text whose characters are
	// written in more than one way). Default: minhash.NormalizeFold.
	Normalization minhash.Normalization
	// StopWords are dropped before word shingling. Each is one word once
	// normalized: a new index refuses one that is empty or holds white
	// space (ErrInvalidOptions), as it could never match. Default: none.
	StopWords []string
	// Storage is what each document's record keeps: StorageText (the
	// default: the text, compressed with the index's blocks; verification
	// re-shingles it), StorageSets (the signature and the 32-bit shingle
	// set, no text) or StorageNone (the signature only: every answer is an
	// estimate). Fixed when the index is created.
	Storage string
	// StoreText keeps each document's text in sets and none modes too, so
	// Get returns it (text mode always keeps it). Default: false.
	StoreText bool

	// Handle options: this open only.

	// NoSync makes writes return before they are synced to disk, for every
	// write of this handle (WriteOptions.NoSync does it per call). The end
	// of the process (a kill, a crash), not only of the machine, may lose
	// the latest unsynced writes, never half of one. Default: false.
	NoSync bool
	// ReadOnly opens an existing database for reading only. It takes the
	// directory's lock like any open (a writer elsewhere waits for it),
	// except on a read-only filesystem (a backup on read-only media),
	// where no lock file can be made: there it opens unlocked, which is
	// safe unless the same directory is written through another, writable
	// mount. Default: false.
	ReadOnly bool
	// MustExist refuses to create a database that does not exist
	// (ErrNotExist). Default: false (Open creates it).
	MustExist bool
	// MaxDocBytes is the largest text plus metadata accepted, in bytes,
	// by this handle (not stored: give it to every Open). Default:
	// DefaultMaxDocBytes (64 MiB). NB: a document's shingle
	// hashes and set take many times its size while it is written or
	// queried (a 16 MiB text peaked at 1.1 GiB of the process's memory
	// through Put, Query and Get): a service that takes documents from
	// others should set it to what it expects, with that in mind.
	MaxDocBytes int
	// StrictUTF8 refuses a text that is not valid UTF-8, a document's
	// (Put and every other write, Load, Validate: ErrInvalidDoc, nothing
	// stored) or a query's (ErrInvalidDoc), naming the first bad byte.
	// Default: false, a text is read as UTF-8 with each byte that is not
	// as U+FFFD (Doc.Text), so that texts in another encoding (Latin-1)
	// that differ only in their accented letters score 1.0. The
	// command's readers, the server and the Go client (db/client) refuse
	// such texts whatever this says; a program that reads texts of
	// unknown encoding should set it.
	StrictUTF8 bool
	// CacheSize is the block cache size in bytes. Default: 64 MiB.
	CacheSize int64
	// MemTableSize is the size, in bytes, of each of Pebble's memtables,
	// the in-memory tables writes go to before they are flushed to disk
	// (two at most, then writes wait; after a crash the write-ahead log
	// of up to that much is replayed on the next Open). Default:
	// DefaultMemTableSize (8 MiB); 1 MiB to 1 GiB. Larger makes batched
	// writes faster and reads slower (see DefaultMemTableSize). A Redis
	// index has none (its Backup's copy takes this size).
	MemTableSize int64
	// QueryCacheSize is the memory, in bytes, that queries keep of what
	// they read and derive beyond the block cache: the live doc numbers of
	// the posting lists they read, and their candidates' ids, set sizes,
	// shingle hashes (re-derived from the text in text mode, ~8 bytes a
	// character) and signatures, least recently used evicted first. A
	// query whose buckets and candidates are cached reads one key and
	// re-shingles nothing. A posting list is cached the second time a
	// query reads it; a write makes stale the cached lists it changes
	// (they are re-read), never the candidates (a document's number is
	// never reused). Its bookkeeping takes up to ~1/8 more than the
	// budget (recent writes' list changes, and a bit per 64 bytes of
	// budget for the lists read once). It fills as queries go, so a
	// process's memory grows for as long as it takes to fill (about
	// 150,000 operations on 20,000 documents, whose tables took 9.5 MiB)
	// and then stays: Metrics().QueryCache.Bytes says how full it is.
	// Default: DefaultQueryCacheSize (64 MiB); negative: no cache.
	QueryCacheSize int64
	// DiskReserve is the free space, in bytes, below which writes are
	// refused with ErrDiskFull (a writable Open only below 8 MiB plus two
	// memtables, 24 MiB by default, or this if it is less: an index whose
	// writes are refused still opens; writes that free space once
	// compacted, deletes, purges, the expiry sweep and Compact, keep that
	// and the room of a new write-ahead log, 1.25 memtables: 34 MiB by
	// default, so that it can be emptied). Pebble cannot survive running out
	// of space (it panics when it cannot close a write-ahead log, and a
	// flush that fails retries forever), so lshdb stops writing while
	// Pebble still has room to flush and compact. Default:
	// DefaultDiskReserve (64 MiB), or four memtables (4·MemTableSize) if
	// that is more; negative: no check (but from the first flush or
	// compaction that fails for lack of space on, writes are refused with
	// ErrDiskFull until a flush succeeds, as they are with a reserve:
	// they hung in Pebble's write stall). Without the check a write can
	// meet the full disk inside Pebble, which then either ends the process
	// (a fatal error, which no recover catches, when it cannot close a
	// write-ahead log) or stops the store: that write and every later one
	// fail with ErrDiskFull until the index is opened again, in a new
	// process; what was acknowledged before is kept. Filesystems that cannot report
	// their free space are not checked. lshdb's temporary files (Pairs'
	// spilled candidates and sets, Load's runs and tables) are held to it
	// too: they stop with ErrDiskFull once the free space of their
	// directory falls to it (checked every 16 MiB written), a read-only
	// handle's too.
	DiskReserve int64
	// AcceptLogDamage opens an index whose newest write-ahead log is
	// damaged before its end (Open's *LogDamageError, which matches
	// ErrCorrupt), accepting the loss: the damaged record and every later
	// one in that log are dropped, as Pebble's recovery drops them. A
	// writable open copies the log into the index's directory as
	// lshdb-damaged-NNNNNN.log, then cuts the log at the damage; a
	// read-only one changes nothing (see LogDamageError). DB.LogDamage
	// says what was accepted. Default: false (Open refuses such an
	// index).
	//
	// The same holds for the store's MANIFEST, Pebble's log of its table
	// files, damaged before its last record (LogDamageError.Manifest):
	// the index opens as of the records before the damage, the tables
	// added since dropped; a writable open copies the manifest as
	// lshdb-damaged-MANIFEST-NNNNNN, and cuts it once the open succeeded.
	// Where the index does not open as of those records (a later record
	// had replaced a table they list), Open fails with ErrCorrupt and
	// changes nothing. DB.ManifestDamage says what was accepted.
	AcceptLogDamage bool
	// RestoreLostIDs makes Repair on a Redis index give a record whose
	// id has no key its id back (the latest record of each id, with its
	// expiry: RepairResult.Restored), for an index whose Redis lost keys
	// (a master that came back empty, an evicted key). Without it such a
	// record is removed (Unnamed: a write that stopped before its id, or
	// the older copy of a document replaced and then deleted, which its
	// id would bring back), or, where Redis shows that it lost writes
	// (RepairResult.LostWrites), left as it is (Unrestored) for the
	// caller to choose. NB: a document deleted since its id was lost may
	// come back with it. Ignored on Pebble, whose Repair always gives an
	// id back (its writes are atomic). Default: false.
	RestoreLostIDs bool
	// RemoveUnnamed makes Repair on a Redis index remove every record
	// whose id has no key (RepairResult.Unnamed), where Redis lost writes
	// too (which leaves them: Unrestored): for an index whose documents
	// are put again from their inputs. Ignored on Pebble. Default: false.
	RemoveUnnamed bool
	// LockTimeout is how long Open waits for another process (or DB
	// value) to release the database before it fails with ErrLocked.
	// Default: 0, fail at once.
	LockTimeout time.Duration
	// ExpirySweep is how often the handle removes the documents whose TTL
	// has passed (WriteOptions.TTL): their records, ids and postings.
	// An expired document is never returned, swept or not; until it is
	// swept it is still counted (Count, Info), on Redis too (where any
	// writable handle's sweep removes it), and Stats reports it as
	// pending.
	// The sweep at Open runs in the background: a Count right after
	// Open may still count documents that expired before it. Default: compaction.SweepInterval (1 s); at least 10 ms;
	// negative: no background sweep (DB.SweepExpired sweeps on demand). A
	// read-only handle never sweeps.
	ExpirySweep time.Duration
	// PurgeEvery is how often a writable handle on a directory index
	// deletes, in the background, the posting lists that deletes and
	// upserts emptied (DB.PurgeEmptyLists without its sweep), the first
	// time within a minute of the open: a
	// long-lived handle under such writes otherwise keeps them all (25
	// days of churn made an index 1.58x the size of a fresh one; 16
	// rounds of replacing or deleting a third of 20,000 documents made
	// its tables 2.29x, 77% of its lists empty). Each
	// purge scans every list, without the writer lock; a tick is skipped
	// when no document was removed since the last purge (Metrics counts
	// both). Default: DefaultPurgeEvery (an hour); at least a second;
	// negative: never (purge on demand, or with Compact), nor at Close,
	// which otherwise deletes the lists the handle's own writes emptied.
	// No effect on Redis, which leaves no list empty.
	PurgeEvery time.Duration
	// Logger receives Pebble's errors and lshdb's warnings, and two notes
	// of lshdb's background work at the Info level: a purge that removed
	// emptied posting lists (at most once a PurgeEvery), and the sweep of
	// expired documents working again after it failed. Pebble's
	// informational messages go to it at the Debug level. Default:
	// slog.Default().
	Logger *slog.Logger

	// upgrading lets Open read an older format, for Upgrade only.
	upgrading bool
	// origin, when set, is the Origin (codec.Manifest) of a new index: the
	// instance of the Redis index it is a backup of, whose state it does
	// not name (there is no instant of it).
	origin string
	// openCtx, when set, ends an Open of an index on Redis that tries
	// again through a failover (Drop's context).
	openCtx context.Context
	// clock is the time expiry is measured against: time.Now unless a
	// test sets a fake one.
	clock func() time.Time
	// fs is the filesystem: the operating system's (vfs.Default) unless a
	// test sets it (vfs.NewCrashableMem()). NB: unexported, so that no
	// Pebble type is in the public API.
	fs vfs.FS

	// keepEmptied, when a test sets it, keeps the lists the handle's
	// writes empty until a purge (Close deletes them: emptiableLists),
	// for the tests of the purge.
	keepEmptied bool
	// sweepFault, when a test sets it, is an error the background sweep
	// reports after a sweep that succeeded (a field, not a package
	// variable: other tests' handles sweep meanwhile).
	sweepFault func() error
}

// handleOptions are the options a DB runs with: Options, defaults filled
// in, and the filesystem as FS.
type handleOptions struct {
	Options
	FS vfs.FS
}

// DefaultDiskReserve is the default Options.DiskReserve: 64 MiB, both
// memtables' worth (DefaultMemTableSize) plus a compaction's headroom for
// a small index.
const DefaultDiskReserve = 64 << 20

// ensureDefaults fills in the handle options.
func (o *Options) ensureDefaults() {
	if o.MaxDocBytes == 0 {
		o.MaxDocBytes = DefaultMaxDocBytes
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.QueryCacheSize == 0 {
		o.QueryCacheSize = DefaultQueryCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.fs == nil {
		o.fs = vfs.Default
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = max(DefaultDiskReserve, 4*o.MemTableSize)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ExpirySweep == 0 {
		o.ExpirySweep = compaction.SweepInterval
	}
	if o.PurgeEvery == 0 {
		o.PurgeEvery = DefaultPurgeEvery
	}
	if o.clock == nil {
		o.clock = time.Now
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
}

// DefaultPurgeEvery is the default Options.PurgeEvery: a long-lived
// handle under churn (deletes, upserts) does not grow without bound.
const DefaultPurgeEvery = time.Hour

// minPurgeEvery is the least positive Options.PurgeEvery. NB: a
// variable, which tests lower.
var minPurgeEvery = time.Second

// minExpirySweep is the least positive Options.ExpirySweep.
const minExpirySweep = 10 * time.Millisecond

// validate checks ranges that do not depend on the stored manifest.
func (o *Options) validate() error {
	switch {
	case o.Storage != "" && o.Storage != StorageText && o.Storage != StorageSets && o.Storage != StorageNone:
		return invalid("Storage %q is not text, sets or none", o.Storage)
	case o.Threshold != 0 && !(o.Threshold > 0 && o.Threshold <= 1):
		return invalid("Threshold %v is outside (0, 1]", o.Threshold)
	case o.Recall != 0 && !(o.Recall > 0 && o.Recall < 1):
		return invalid("Recall %v is outside (0, 1)", o.Recall)
	case (o.Bands == 0) != (o.Rows == 0):
		return invalid("Bands and Rows must be set together (got %d and %d)", o.Bands, o.Rows)
	case o.Bands < 0 || o.Rows < 0:
		return invalid("Bands %d and Rows %d must be positive", o.Bands, o.Rows)
	case o.NumPerm < 0 || o.NumPerm > minhash.MaxNumPerm:
		return invalid("NumPerm %d is outside 1..%d", o.NumPerm, minhash.MaxNumPerm)
	case o.ShingleSize < 0 || o.ShingleSize > minhash.MaxK:
		return invalid("ShingleSize %d is outside 1..%d", o.ShingleSize, minhash.MaxK)
	case o.LockTimeout < 0:
		return invalid("LockTimeout %v is negative", o.LockTimeout)
	case o.RestoreLostIDs && o.RemoveUnnamed:
		return invalid("RestoreLostIDs and RemoveUnnamed ask opposite things of Repair: give one")
	case o.ExpirySweep > 0 && o.ExpirySweep < minExpirySweep:
		// NB: a bare number is nanoseconds: ExpirySweep: 1 meant as a
		// second swept without pause, a core busy on an idle index.
		return invalid("ExpirySweep %v is below %v (a duration such as time.Second; negative: no background sweep)", o.ExpirySweep, minExpirySweep)
	case o.PurgeEvery > 0 && o.PurgeEvery < minPurgeEvery:
		return invalid("PurgeEvery %v is below %v (a duration such as time.Hour; negative: never)", o.PurgeEvery, minPurgeEvery)
	case o.MaxDocBytes < 0:
		return invalid("MaxDocBytes %d is negative", o.MaxDocBytes)
	case o.CacheSize < 0:
		return invalid("CacheSize %d is negative", o.CacheSize)
	case o.MemTableSize != 0 && o.MemTableSize < 1<<20 || o.MemTableSize > 1<<30:
		// NB: Pebble panics on a memtable smaller than an empty one
		// (~1 KiB), and a few KiB would flush every write.
		return invalid("MemTableSize %d is outside 1 MiB..1 GiB", o.MemTableSize)
	case math.IsNaN(o.Threshold) || math.IsNaN(o.Recall):
		return invalid("Threshold and Recall must be numbers")
	}
	return nil
}

// WriteOptions adjust one write: every writing call (Put, PutBatch,
// PutSet, PutSignature, PutIfNew, Delete, DeleteIDs) takes them, and
// each uses the fields that concern it. A nil *WriteOptions means the
// defaults.
type WriteOptions struct {
	// NoSync returns before the write is synced to disk: the end of the
	// process, not only of the machine, may lose it (see Options.NoSync).
	// Default: false (synced, unless the DB was opened with Options.NoSync).
	NoSync bool
	// StoreText keeps the text of these documents even if the database
	// does not by default. Default: false (the database's StoreText).
	StoreText bool
	// SkipEmpty skips documents with no shingles (PutBatch lists them)
	// instead of failing the whole call with ErrEmptyDocument. Default:
	// false.
	SkipEmpty bool
	// IgnoreMissing makes Delete and DeleteIDs delete the ids that are
	// stored and pass over the others. Default: false (an id not stored
	// fails the whole call with ErrNotFound).
	IgnoreMissing bool
	// TTL makes the documents written expire this long after the write:
	// from then on no call returns them, and the sweep removes them (see
	// Options.ExpirySweep). Default: 0, never. A replacing write without
	// a TTL makes the document permanent again.
	TTL time.Duration
	// ExpireAt makes the documents written expire at this time, as TTL
	// does (one of the two at most). Default: the zero time, never. A
	// time already past is accepted (a caller that computes expiries from
	// its records' dates need not sort them out): the documents are
	// written expired, so they replace the stored ones of their ids and
	// are never returned, as a delete would do, but they count in Count
	// and Stats until the sweep removes them.
	ExpireAt time.Time
}

// expires returns the expiry time (Unix nanoseconds) that wo gives the
// documents it writes at now, 0 for none, or ErrInvalidOptions.
func (wo *WriteOptions) expires(now time.Time) (int64, error) {
	if wo == nil {
		return 0, nil
	}
	// NB: an expiry is stored in Unix nanoseconds (an int64): past
	// lastExpiry it would wrap around (the write failed deep in the codec,
	// or stored an expiry in the past: the document was gone at once).
	switch {
	case wo.TTL < 0:
		return 0, invalid("TTL %v is negative", wo.TTL)
	case wo.TTL > 0 && !wo.ExpireAt.IsZero():
		return 0, invalid("TTL and ExpireAt are both set (one at most)")
	case !wo.ExpireAt.IsZero() && !wo.ExpireAt.After(time.Unix(0, 0)):
		// NB: a time already past is accepted, as the field says: one
		// before 1970 too (it was refused), stored as the earliest expiry
		// (0 means none, and UnixNano wraps before 1678).
		return 1, nil
	case wo.ExpireAt.After(lastExpiry):
		return 0, invalid("ExpireAt %v is after %v, the latest expiry an index can store", wo.ExpireAt, lastExpiry)
	case wo.TTL > 0 && now.Add(wo.TTL).After(lastExpiry):
		return 0, invalid("TTL %v ends after %v, the latest expiry an index can store", wo.TTL, lastExpiry)
	}
	return compaction.ExpiresAt(now, wo.TTL, wo.ExpireAt), nil
}

// lastExpiry is the latest expiry an index stores: Unix nanoseconds fill
// an int64 in April 2262.
var lastExpiry = time.Unix(0, math.MaxInt64).UTC()

// QueryOptions adjust one query. A nil *QueryOptions means the defaults.
type QueryOptions struct {
	// Threshold is the least Jaccard similarity reported, in (0, 1].
	// Default: the database's threshold. A lower one is allowed; the
	// result's ExpectedRecall says how likely a pair at that similarity
	// is to be a candidate at all.
	Threshold float64
	// Limit keeps only the best Limit matches. Default: 0, all.
	Limit int
	// EstimateOnly skips exact verification: matches are the candidates
	// whose signature estimate reaches the threshold, sorted by estimate,
	// with Jaccard left at 0.
	EstimateOnly bool
	// WithText fills each match's Text with its stored text (one more
	// record read per match, after Limit). Default: false (Match.Meta is
	// always filled; Text is not).
	WithText bool
	// MaxMatches bounds the matches a call holds: a Query's, or the sum
	// over a QueryMany's queries. A call whose matches (after Limit)
	// would pass it fails with an error that matches ErrInvalidOptions
	// and says so (give a Limit, or fewer queries a call), holding about
	// the bound and one query's matches at most. Default: 0, no bound.
	//
	// NB: on an index of near-identical documents every query matches
	// every document: 400 queries without a limit held 3 GB for a 607 MB
	// answer of lshdb serve, which bounds it.
	MaxMatches int
	// MaxTextBytes bounds the bytes of stored text that WithText puts
	// in a call's matches: a Query's, or the sum over a QueryMany's
	// queries. A call that would pass it fails with an error that matches
	// ErrInvalidOptions and says so (give a Limit, fewer queries a call,
	// or ask without the texts), having read about the bound and one
	// text more. Default: 0, no bound.
	//
	// NB: MaxMatches counts matches, not their texts: 20 queries of
	// 2,000 near-copies of a 17 KB text made a 697 MB answer of lshdb
	// serve, which took 3 GB (a security review, SEC2-4).
	MaxTextBytes int64

	// texts counts the bytes of text read for MaxTextBytes: one counter
	// for all the queries of a QueryMany.
	texts *atomic.Int64
}
