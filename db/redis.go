package db

// The Redis backend (issue 16): an index kept on a Redis Cluster, or one
// Redis server, by internal/rediskv, behind the same DB. Open takes its
// URL in place of a directory.
//
// What it runs: Put, PutBatch, PutSet, PutSignature, PutIfNew, Delete,
// DeleteIDs, Load (as batched puts), Get, Has, Count, Info, All, Scan,
// Query, QueryID, QuerySet, QuerySignature, QueryMany, Explain, Bucket,
// Pairs, Clusters, ClustersFrom, Buckets, Check (and Repair),
// SweepExpired, Stats (memory by record kind in place of bytes on disk),
// PurgeEmptyLists (nothing to purge: a set goes with its last member) and
// Drop, and Backup (into a new Pebble index). The rest (Metrics, Upgrade)
// is Pebble's and returns ErrUnsupported.
//
// How it differs from Pebble, all of it from what a cluster is:
//   - No snapshot: a read sees the cluster as it is. A query reads its b
//     buckets in one pipelined round trip per master, then its
//     candidates' records in another; a write that lands in between may
//     or may not be seen. Scan, Backup, Pairs and Clusters list the ids
//     first and follow a document replaced since through its id (what
//     Pairs promises beside a writer is in its doc).
//   - No multi-key transaction: a write is several steps (rediskv's
//     package comment gives the order), and a posting whose document is
//     not (or no longer) there is skipped by readers. A batch is visible
//     whole only once it has completed; a crash between the steps leaves
//     what Check reports and Repair removes.
//   - Durability is replication: an acknowledged write is in the
//     memory of its masters and of at least one replica of each
//     (rediskv.Store.Sync: WAIT), so it survives the failover of a
//     master; on disk as the servers' appendonly/appendfsync settings
//     say. WriteOptions.NoSync and Options.NoSync skip the wait (the
//     write is then on the masters only when the call returns).
//   - No lock: any number of processes may open the index and write to
//     it. Writes of one DB are serialized; two processes writing the same
//     id at once may leave a record that Check reports.
//   - The query cache is off (it is tagged by Pebble's view of the
//     counters).

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/bits"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/internal/retry"
	"github.com/lshdb/lshdb/internal/seqs"
	"github.com/lshdb/lshdb/minhash"
)

// ErrUnsupported is returned by the calls that the index's storage
// backend does not run (the Redis backend: see IsRedisURL).
var ErrUnsupported = errors.New("lshdb: not supported by this index's storage backend")

// ErrBackend wraps a failure of a remote storage backend: a Redis node
// that does not answer, a cluster that is down or failing over.
var ErrBackend = errors.New("lshdb: the storage backend failed")

// ErrAccessDenied: the storage backend refused the index's credentials or
// their rights (Redis's NOAUTH, WRONGPASS, NOPERM). Unlike ErrBackend, no
// retry mends it: the URL's password, or the ACL user's rules, must
// change.
var ErrAccessDenied = errors.New("lshdb: the storage backend refused access")

// ErrNotReplicated: a synced write to Redis that a replica of a master
// did not acknowledge in time (stalled, unreachable, or its slots moving
// through every try). The write was applied on the master: a failover
// now would promote a replica without it. It matches ErrBackend too, and
// Transient: writing again once the replica keeps up finishes it (over
// the HTTP API, where it is backend_unavailable, ErrBackend alone). NB:
// the README named it, but package db did not export it, so a program
// could not tell a stalled replica from a dead node (an operator's
// review of Redis, RC-3).
var ErrNotReplicated = rediskv.ErrNotReplicated

// Transient reports whether err is a failure of the storage backend
// that the same call, made again a little later, may get past: a Redis
// node that did not answer or closed the connection, a cluster failing
// over, replicas that did not acknowledge a synced write in time
// (ErrBackend). A refusal is not (ErrAccessDenied; Redis at its
// maxmemory, ErrDiskFull), nor is any error of an index in a directory.
//
// Sending a failed write again as itself finishes it: PutPrepared of the
// same PreparedBatch (within 5 minutes of its first try), as Load does
// with its batches for up to a minute, and lshdb insert with its own.
// Nothing is left for Check, and what it replaced is counted once. A
// PutBatch (or Put) of the same documents again is a write of its own:
// the documents are stored, but what the failed write left (records no id
// names, postings of no document, a live count short by what it did)
// stays until Check's repair. NB: this said a PutBatch again was safe,
// and a program that retried so was left with a count short by 41-43 and
// Check failing after a failover (an operator's review of Redis, RC-2).
// A program that retries writes should prepare them (PrepareBatch).
func Transient(err error) bool {
	return errors.Is(err, ErrBackend) && !errors.Is(err, ErrAccessDenied) && !errors.Is(err, ErrDiskFull) && !rediskv.Permanent(err)
}

// IsRedisURL reports whether s names an index on Redis
// (redis://HOST:PORT[/NAME] or redis+cluster://HOST:PORT,…[/NAME]), which
// Open opens in place of a directory.
func IsRedisURL(s string) bool {
	l := strings.ToLower(s[:min(len(s), len("redis+cluster://"))])
	return strings.HasPrefix(l, "redis://") || strings.HasPrefix(l, "redis+cluster://")
}

// looksLikeURL reports whether dir, which is not a Redis URL, was meant
// as a URL (rediss://, redis-cluster://, redis+cluster:/…, redis:HOST):
// Open refuses it rather than make a directory of that name.
func looksLikeURL(dir string) bool {
	first, _, _ := strings.Cut(dir, "/")
	first = strings.ToLower(first)
	return strings.Contains(dir, "://") || strings.HasPrefix(first, "redis") && strings.ContainsAny(first, ":+")
}

// redisErr wraps an error of the Redis client as ErrBackend (a context's
// error passes as it is).
func redisErr(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, rediskv.ErrCountersGone) {
		// NB: a read's (Count, Info, Stats); a write's is told apart
		// from an index gone (redisWrite).
		return fmt.Errorf("%w: the index's counters are gone from Redis (lost with a restart without persistence, or evicted), so its documents cannot be counted: stop every writer, and lshdb check --repair puts them back: %w%w", ErrCorrupt, err, unsaid{errRepairable})
	}
	if errors.Is(err, rediskv.ErrForeignValue) || rediskv.WrongType(err) {
		// NB: it was ErrBackend ("worth a retry": HTTP 503), which no
		// retry mends, naming no key.
		return fmt.Errorf("%w: %w (a key under the index's prefix that lshdb did not write, of another program's or set by hand: find it with redis-cli --scan --pattern and remove it)", ErrCorrupt, err)
	}
	if errors.Is(err, rediskv.ErrCountersLost) {
		// NB: no retry mends it (ErrBackend says one may); a repair
		// does, as its message says (the command added "restore a
		// backup" to it: an operator's review, R4).
		return fmt.Errorf("%w: %w%w", ErrCorrupt, err, unsaid{errRepairable})
	}
	if rediskv.AccessDenied(err) && errors.Is(err, rediskv.ErrNotReplicated) {
		// NB: a write that no replica acknowledged in time, by a user
		// without INFO's right, which tells a server with no replica:
		// its own words say what to grant, and every write to such a
		// server fails so until it is granted (it was ErrBackend, worth
		// a retry: a maintainer's review).
		return fmt.Errorf("%w: redis: %w", ErrAccessDenied, err)
	}
	if rediskv.AccessDenied(err) {
		// NB: it was ErrBackend ("worth a retry": a serve answered 503,
		// which a load balancer retries for good), with Redis's words
		// only (an operator's review, R5).
		if rediskv.BadCredentials(err) {
			return fmt.Errorf("%w: redis: Redis refused the index's credentials: give the password in LSHDB_REDIS_PASSWORD or in the URL (redis://:PASSWORD@HOST:PORT, or redis://USER:PASSWORD@… for an ACL user): %w", ErrAccessDenied, err)
		}
		// NB: the password was right (a maintainer's review: it said
		// "give the password" to a user whose key patterns were short).
		return fmt.Errorf("%w: redis: Redis refused a command or key to the index's ACL user: its rules must allow every command lshdb runs (+@all, or at least reads, writes, scripts and +info) on every key (~*: an index's keys are not all under lshdb:NAME:, its counters and write tokens are hash-tagged): %w", ErrAccessDenied, err)
	}
	if rediskv.OutOfMemory(err) {
		// NB: Redis's words ("OOM command not allowed when used memory >
		// 'maxmemory'", with a script's hash) say neither what is full
		// nor what to do; a write that refused is no failover to wait out.
		// NB: ErrBackend unsaid: its words repeated the prefix ("lshdb:
		// disk full: lshdb: the storage backend failed: redis: ...", an
		// operator's review of Redis, RD8).
		return fmt.Errorf("%w: Redis is at its maxmemory and refuses writes (maxmemory-policy noeviction): raise maxmemory (CONFIG SET maxmemory), or free memory by deleting documents or dropping an index (lshdb drop); check --repair then removes what a stopped write left (Redis 6.2 refuses deletes and repairs too): %w%w", ErrDiskFull, err, unsaid{ErrBackend})
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		// NB: go-redis's "EOF" named no cause (an insert stopped by a
		// master's failover said only "redis: EOF").
		return fmt.Errorf("%w: redis: a server closed the connection or refused it (killed, restarted, or a master failing over: a cluster promotes its replica after its cluster-node-timeout; try again then): %w", ErrBackend, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// NB: go-redis's own words ("i/o timeout", after its retries)
		// name no cause.
		return fmt.Errorf("%w: redis: a node did not answer in time (a master frozen or unreachable: the cluster fails it over after its cluster-node-timeout; try again then): %w", ErrBackend, err)
	}
	return fmt.Errorf("%w: redis: %w", ErrBackend, err)
}

// unsupported returns ErrUnsupported for op on a Redis index, nil on
// Pebble.
func (db *DB) unsupported(op string) error {
	if db.rkv == nil {
		return nil
	}
	return fmt.Errorf("%w: %s on a Redis index (Pebble's for now)", ErrUnsupported, op)
}

// openTimeout bounds Open's first round trips to a Redis cluster.
const openTimeout = 30 * time.Second

// openRedis opens or creates the index at the Redis URL u.
func openRedis(u string, o Options) (*DB, error) {
	try := &redisOpenTry{}
	if !o.ReadOnly {
		var tok [12]byte
		rand.Read(tok[:])
		try.writer = hex.EncodeToString(tok[:])
	}
	parent := cmp.Or(o.openCtx, context.Background())
	try.deadline = time.Now().Add(redisOpenRetry)
	var d *DB
	err := retryTransient(parent, o.Logger, "opening the index", func() (err error) {
		if d, err = openRedisTry(parent, u, o, try); err != nil && !try.reached {
			return permanent{err}
		}
		return err
	})
	if err != nil && try.registered {
		// NB: a try registered, and none could take it back (the last
		// failed before its store was open): said, as unregister says
		// it.
		o.Logger.Warn("lshdb: this handle could not take back its registration as a writer: lshdb drop and check --repair count it as another handle until it has not been seen for 5m; once this process has ended, --force is safe", "index", rediskv.Redact(u))
	}
	return d, err
}

// redisOpenRetry bounds how long an Open of an index on Redis tries again
// while the cluster answers but fails as a failover makes it fail
// (Transient: a master that does not answer, CLUSTERDOWN, TRYAGAIN): as
// long as Load retries a batch. A URL no node of which answers fails at
// once.
//
// NB: creating an index, opening one and lshdb drop --force failed at
// once, CLUSTERDOWN, while a build or an insert retried through the same
// failover (a third review of Redis, RD3-3).
const redisOpenRetry = redisLoadRetry

// openHook, when a test sets it, runs in a try of an Open of an index on
// Redis after a step ("registered", "created"): an error it returns is
// the step's.
var openHook func(step string) error

// redisOpenTry is what an Open of an index on Redis keeps from one try to
// the next (openRedis).
type redisOpenTry struct {
	// writer is the writable handle's registration, the same in every
	// try: one a failed try made is the next one's, not another writer's.
	writer string
	// registered says that a try's Register may have been applied and
	// not taken back: a failed try takes it back before it ends, as it
	// can.
	registered bool
	// manifest is the manifest a try created the index with, once made:
	// a try after one whose creation was applied, its answer lost, finds
	// its own manifest, and takes the index for created (Created).
	manifest []byte
	// reached says that this try reached the cluster: its nodes
	// answered, but one master did not, or a step after the store was
	// open failed. A try that did not (no node answers) ends the open.
	reached bool
	// deadline ends the tries: no try runs past it.
	deadline time.Time
}

// openRedisTry is one try of openRedis, on a context of parent that ends
// with openTimeout or try.deadline. A try that fails takes back its
// registration (at once if a retry may follow, as unregister does if
// not) and closes its store.
func openRedisTry(parent context.Context, u string, o Options, try *redisOpenTry) (_ *DB, err error) {
	end := time.Now().Add(openTimeout)
	if try.deadline.Before(end) {
		end = try.deadline
	}
	ctx, cancel := context.WithDeadline(parent, end)
	defer cancel()
	try.reached = false
	s, err := rediskv.Open(ctx, u)
	if errors.Is(err, rediskv.ErrMasterDown) {
		try.reached = true
	}
	if err != nil {
		if errors.Is(err, rediskv.ErrURL) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		if errors.Is(err, rediskv.ErrVersion) {
			return nil, fmt.Errorf("%w: opening %s: %w", ErrUnsupported, rediskv.Redact(u), err)
		}
		// NB: with redisErr's words for a refused connection or a node
		// that does not answer: a command run while a cluster's master
		// failed over said only "dial tcp …: connection refused", where a
		// write said to try again once the replica is promoted.
		if err = redisErr(err); !errors.Is(err, ErrBackend) && !errors.Is(err, ErrAccessDenied) {
			err = fmt.Errorf("%w: %w", ErrBackend, err) // NB: the open's timeout
		}
		return nil, fmt.Errorf("opening %s: %w", rediskv.Redact(u), err)
	}
	// NB: a server that evicts keys at its maxmemory took an index's
	// writes and then dropped records, ids and counters (a review: 7,000
	// documents committed, 2,179 records left, the live count gone).
	// Every key of an index may go under allkeys-*: a writable open is
	// refused; volatile-* evicts only keys with a TTL (documents put with
	// one, before their time): said.
	for _, ev := range s.Evicting() {
		if o.ReadOnly {
			// NB: a reader writes nothing to lose, but reads what was
			// evicted as never stored: pairs found 2,737 of 4,781 pairs
			// with exit 0 and nothing said (a review's R4).
			if strings.HasPrefix(ev.Policy, "allkeys-") && ev.Limited {
				o.Logger.Warn("lshdb: a Redis server evicts keys at its maxmemory: any key of the index may be gone, and what is gone reads as never stored (missing documents, fewer matches and pairs); lshdb check finds what is missing; set maxmemory-policy noeviction", "server", ev.String())
			}
			continue
		}
		if strings.HasPrefix(ev.Policy, "allkeys-") && ev.Limited {
			s.Close()
			return nil, fmt.Errorf("%w: opening %s to write: %s evicts keys at its maxmemory, which would lose the index's documents, ids and counters unsaid: set maxmemory-policy noeviction (writes are then refused when Redis is full, as a full disk)", ErrUnsupported, rediskv.Redact(u), ev)
		}
		o.Logger.Warn("lshdb: a Redis server would evict keys at its maxmemory: documents put with a TTL may be evicted before their time, and under allkeys-* any key of the index; set maxmemory-policy noeviction", "server", ev.String())
	}
	// NB: no query cache: its entries are tagged with the counters a
	// Pebble view sees, and a cluster gives no such view. dir is for
	// messages: the URL without its password.
	db := &DB{dir: rediskv.Redact(u), opts: handleOptions{Options: o, FS: o.fs}, rkv: s}
	// NB: once per master and handle: a write there is acknowledged
	// without a replica (Sync has none to wait for).
	var warned sync.Map
	s.Unreplicated = func(master string) {
		if _, seen := warned.LoadOrStore(master, true); !seen {
			o.Logger.Warn("lshdb: a Redis master has no replica (or its replicas are being synced anew): writes to it are acknowledged without one and would not survive its failure", "master", master)
		}
	}
	db.closing, db.closeCancel = context.WithCancelCause(context.Background())
	db.open = make(map[*openIter]struct{})
	try.reached = true
	defer func() {
		if err == nil {
			return
		}
		if try.registered {
			// NB: not on ctx, which may have run out. A try that may be
			// followed by another asks once, and the next registers
			// again with the same name if it could not; the last one
			// asks as a handle's Close does (unregister).
			if Transient(err) && time.Now().Before(try.deadline) {
				uctx, ucancel := context.WithTimeout(context.Background(), time.Second)
				if s.Unregister(uctx, db.writer) == nil {
					try.registered = false
				}
				ucancel()
			} else {
				db.unregister()
				try.registered = false
			}
		}
		s.Close()
	}()
	if !o.ReadOnly {
		// NB: before the manifest is read: a creating command that
		// failed drops its new index only if no other writable handle
		// is registered (OtherWriters), and one that read the manifest
		// is registered by then.
		db.writer = try.writer
		try.registered = true
		if err := s.Register(ctx, db.writer); err != nil {
			return nil, fmt.Errorf("opening %s: %w", db.dir, redisErr(err))
		}
		if openHook != nil {
			if err := openHook("registered"); err != nil {
				return nil, err
			}
		}
	}
	if err = db.redisManifest(ctx, try); err == nil && db.writer != "" {
		err = db.markCounters(ctx)
	}
	if err != nil {
		return nil, err
	}
	try.registered = false // NB: the handle's now: its Close takes it back
	db.initPools()
	db.startSweeper()
	if db.writer != "" {
		db.startHeartbeat(writerHeartbeat)
	}
	return db, nil
}

// OtherWriters returns how many writable handles other than this one
// have a Redis index open (in any process), so that a program that
// created an index and failed can tell whether it may drop it: a process
// that opened it and has not written yet counts (Count does not see it).
// A process killed with it open counts until the index is dropped
// (OtherWritersSeen tells such a handle by its silence). On Pebble, whose
// lock admits one writable handle, it is 0.
func (db *DB) OtherWriters(ctx context.Context) (int, error) {
	seen, err := db.OtherWritersSeen(ctx)
	return len(seen), err
}

// WriterHeartbeat is how often a writable handle of a Redis index says
// it is alive, for OtherWritersSeen.
const WriterHeartbeat = 30 * time.Second

// writerHeartbeat is WriterHeartbeat, shorter in tests.
var writerHeartbeat = WriterHeartbeat

// OtherWritersSeen returns, for each writable handle other than this one
// that has a Redis index open (OtherWriters), the time it was last seen,
// oldest first: a handle is seen at its open and every WriterHeartbeat
// until it closes, so one not seen for several heartbeats is most likely
// a process killed with the index open (or one made by an lshdb before
// the heartbeat, seen at its open only). The times are the Redis
// server's, told on this host's clock (as their age there), so a skew
// between hosts does not age a writer. The zero time is a registration
// lshdb did not write. On Pebble it returns none.
func (db *DB) OtherWritersSeen(ctx context.Context) ([]time.Time, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if db.rkv == nil {
		return nil, nil
	}
	all, err := db.rkv.Writers(ctx)
	if err != nil {
		return nil, redisErr(err)
	}
	var seen []time.Time
	for tok, at := range all {
		if tok != db.writer {
			seen = append(seen, at)
		}
	}
	slices.SortFunc(seen, time.Time.Compare)
	return seen, nil
}

// startHeartbeat registers the writable Redis handle again every
// WriterHeartbeat until Close, which waits for it to end (a registration
// after Close's Unregister would outlive the handle). It registers anew
// a handle whose registration Redis lost (a restart without persistence).
func (db *DB) startHeartbeat(every time.Duration) {
	db.heartbeatDone = make(chan struct{})
	instance := db.man.Instance // NB: read here, before a write may change db.man
	go func() {
		defer close(db.heartbeatDone)
		t := time.NewTicker(every)
		defer t.Stop()
		gone := false // the manifest was found gone, and said
		for {
			select {
			case <-db.closing.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(db.closing, 5*time.Second)
			// NB: not into an index that is gone (dropped under the
			// handle, or lost by a Redis restarted without its data):
			// the registration made it read as in use, and it is said
			// once, as the handle's writes now go to no index.
			if gone || db.gone.Load() {
				// NB: for good: an index made again under the name (other
				// parameters, maybe) is not this handle's.
			} else if m, err := db.rkv.Manifest(ctx); err == nil && (m == nil || !sameInstance(m, instance)) {
				// NB: dropped and made again between two heartbeats (with
				// other parameters, maybe): the handle went on writing its
				// own bands into the new index (a maintainer review's K7).
				gone = true
				db.markGone(manifestGone(m))
			} else if err := db.rkv.Register(ctx, db.writer); err != nil && db.closing.Err() == nil {
				db.opts.Logger.Warn("lshdb: saying this writable handle is alive (lshdb drop and check --repair see it so)", "err", redisErr(err))
			}
			cancel()
		}
	}()
}

// sameInstance reports whether the manifest m names the index instance
// (codec.Manifest.Instance); a manifest that does not decode, or an index
// made before instances were named, is taken as the same.
func sameInstance(m []byte, instance string) bool {
	dm, err := codec.DecodeManifest(m)
	return err != nil || instance == "" || dm.Instance == "" || dm.Instance == instance
}

// markCounters marks the counters of the index a writable handle opened
// with its instance (rediskv.Store.MarkCounters).
func (db *DB) markCounters(ctx context.Context) error {
	mark := db.man.Instance
	if mark == "" {
		mark = "-" // NB: an index made before instances were named
	}
	gone, err := db.rkv.MarkCounters(ctx, mark, db.created)
	// NB: another Open that created the index marks its counters just
	// after its manifest: one that read the manifest between the two
	// found them not there yet, and its put was refused (six concurrent
	// creators, TestRedisConcurrentCreators). Counters still not there
	// after a while are gone.
	for wait := 25 * time.Millisecond; err == nil && gone && wait <= 1600*time.Millisecond; wait *= 2 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("opening %s: %w", db.dir, ctx.Err())
		case <-time.After(wait):
		}
		gone, err = db.rkv.MarkCounters(ctx, mark, false)
	}
	if errors.Is(err, rediskv.ErrCountersGone) {
		return fmt.Errorf("%w: %s: %w: it was dropped and made again as this handle opened it; open it again", ErrNotExist, db.dir, err)
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", db.dir, redisErr(err))
	}
	if gone {
		// NB: the handle opens (check --repair needs it), and its puts
		// are refused as repairable ErrCorrupt until a repair.
		db.opts.Logger.Warn("lshdb: the index's counters are gone from Redis (lost with a restart without persistence, or evicted) while its manifest is there: its documents cannot be counted and its writes are refused; stop every writer, and lshdb check --repair puts them back", "index", db.dir)
	}
	return nil
}

// redisManifest reads the manifest, or creates it for a new index.
func (db *DB) redisManifest(ctx context.Context, try *redisOpenTry) error {
	v, err := db.rkv.Manifest(ctx)
	if err != nil {
		return redisErr(err)
	}
	if v != nil && try.manifest != nil && bytes.Equal(v, try.manifest) {
		// NB: an earlier try of this Open created it (its manifest names
		// its instance), its answer lost, or the copies of the manifest
		// not made: it was opened as another process's, and a command
		// that failed kept the index it had made (a read-through,
		// RT5-1).
		db.created = true
	}
	if v == nil {
		if !db.opts.ReadOnly && !db.opts.MustExist {
			if err := db.rkv.CheckNewName(); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
			}
		}
		// NB: keys of an index whose manifest is gone (Redis lost its
		// data under running writers, evicted it, or a key was deleted
		// by hand) were adopted by the index created on them, with its
		// own parameters: documents no query finds, counted as stored.
		// A reader was told the index did not exist, and to create it
		// (a review's R3: check among them).
		left, unscanned, err := db.rkv.Leftovers(ctx)
		if err != nil {
			return redisErr(err)
		}
		if unscanned > 0 && !db.opts.ReadOnly && !db.opts.MustExist {
			db.opts.Logger.Warn("lshdb: creating the index, its name was checked for keys of a lost index by a few lookups, not by a scan of the servers' keys, which hold more than "+strconv.FormatInt(rediskv.LeftoverScanKeys, 10)+" (redis-cli --scan --pattern 'lshdb:NAME:*' finds any)", "index", db.dir, "keys", unscanned)
		}
		if len(left) > 0 {
			// NB: another process may have created the index and
			// written to it since the manifest was read: its keys are
			// no leftovers (6 creators at once refused 1 in 100).
			if v, err = db.rkv.Manifest(ctx); err != nil {
				return redisErr(err)
			}
		}
		if v == nil && len(left) > 0 {
			what := "a new index would take them for its own"
			if db.opts.ReadOnly || db.opts.MustExist {
				// NB: a drop under way deletes the manifest first: a
				// reader that lands then is told so too (a maintainer's
				// M3).
				what = "its documents cannot be read without it (unless a drop of the index is under way: then it is gone once the drop ends)"
			}
			return fmt.Errorf("%w: %s has no manifest but holds the keys of an index (%s): %s; lshdb drop --db %s --yes --force removes them (--force: without its manifest its writers cannot be counted), or restore the index%w", ErrCorrupt, db.dir, strings.Join(left, ", "), what, db.dir, errNoManifest)
		}
		if v == nil && (db.opts.ReadOnly || db.opts.MustExist) {
			return fmt.Errorf("%w: %s", ErrNotExist, db.dir)
		}
	}
	if v == nil {
		made := try.manifest == nil
		if made {
			enc, err := db.newManifest()
			if err != nil {
				return err
			}
			try.manifest = enc
		}
		created, err := db.rkv.CreateManifest(ctx, try.manifest)
		if err == nil && openHook != nil {
			err = openHook("created")
		}
		if err != nil {
			return redisErr(err)
		}
		if created && made {
			db.created = true
			return nil
		}
		if !created {
			// NB: another process created it first: open what it made.
			if v, err = db.rkv.Manifest(ctx); err != nil {
				return redisErr(err)
			}
		}
		// NB: or an earlier try of this Open did, its answer lost (its
		// manifest names its instance), or this try did with the
		// manifest an earlier one made.
		if created || bytes.Equal(v, try.manifest) {
			db.created, v = true, try.manifest
		}
	}
	if err := db.useManifest(v); err != nil {
		return err
	}
	db.expiryFormat.Store(db.man.FormatVersion >= codec.ExpiryFormatVersion)
	if !db.opts.ReadOnly {
		// NB: an index an older lshdb made has no copy of its manifest.
		// Not a reason to refuse the open (a Redis at its maxmemory
		// refuses the write, and a writable open must free memory there):
		// the next writable open makes them.
		if err := db.rkv.CopyManifest(ctx, v); err != nil {
			db.opts.Logger.Warn("lshdb: the copies of the index's manifest could not be stored: a master that loses the manifest takes the index with it", "index", db.dir, "err", redisErr(err))
		}
	}
	return nil
}

// indexGoneErr is the error of a write through a handle whose Redis index
// was found gone (DB.gone).
//
// NB: the writes went on into keys no index named: acknowledged, found
// by no reader of a new index, and left as leftovers that refused its
// creation. A write finds the manifest gone first (manifestThere), a put
// the counters' mark gone too (rediskv.ErrCountersGone), and the
// heartbeat finds the manifest gone between writes.
func (db *DB) indexGoneErr() error { return db.goneErr("nothing was written") }

// goneErr is the error of a call through a handle whose Redis index was
// found gone (DB.gone), saying what became of the call.
func (db *DB) goneErr(what string) error {
	return fmt.Errorf("%w: %s: the index is gone from Redis, or is another index's, since this handle opened it (its manifest or counters lost with a restart without persistence or an eviction; or it was dropped, and maybe made again): %s; close the handle, and restore or create the index again", ErrNotExist, db.dir, what)
}

// goneRead is the error of a read through a handle whose Redis index was
// found gone (DB.gone), nil while it is not.
//
// NB: a served index lost to a restart without persistence answered its
// writes, count and /healthz not_exist, but its queries, gets, has and
// scans 200, as if the index were empty (a review of serve, SV3-4).
func (db *DB) goneRead() error {
	if !db.gone.Load() {
		return nil
	}
	return db.goneErr("nothing of it can be read")
}

// manifestThere checks, before a write, that the index's manifest is
// still in Redis and names this handle's index: when it is gone (its
// master restarted without persistence, evicted, dropped), the handle is
// marked gone (indexGoneErr) and the write refused, with nothing written.
//
// NB: the counters' mark caught the counters lost at once, but a manifest
// lost alone (a cluster keeps it on another master) was found by the
// heartbeat only, up to 30 s later: an insert wrote on into keys no
// index named and exited 0 (an operator's review). One read a write.
func (db *DB) manifestThere(ctx context.Context) error {
	if db.gone.Load() {
		return db.indexGoneErr()
	}
	m, err := db.rkv.Manifest(ctx)
	if err != nil {
		return redisErr(err)
	}
	if m != nil && sameInstance(m, db.man.Instance) {
		return nil
	}
	db.markGone(manifestGone(m))
	return db.indexGoneErr()
}

// countersErr is the error of a read that found the index's counters
// gone (rediskv.ErrCountersGone) or failed otherwise (redisErr): the
// index gone, if its manifest is too or is another index's (dropped, and
// maybe made again), as a write says; else the counters lost alone,
// which check --repair puts back. NB: a served index dropped under its
// server answered /v1/count "corrupt ... check --repair puts them back",
// where check --repair said it does not exist, and a put not_exist (an
// operator's review of Redis, RD4).
func (db *DB) countersErr(err error) error {
	if !errors.Is(err, rediskv.ErrCountersGone) {
		return redisErr(err)
	}
	if merr := db.manifestThere(db.closing); errors.Is(merr, ErrNotExist) {
		return merr
	}
	return redisErr(err)
}

// manifestGone says what became of the manifest m that a handle found in
// place of its index's (nil: none).
func manifestGone(m []byte) string {
	if m != nil {
		return "'s manifest is another index's: it was dropped and made again under its name"
	}
	return "'s manifest is gone from Redis (lost with a restart without persistence, evicted, or dropped)"
}

// markGone marks the handle's index gone (DB.gone): its writes are
// refused from then on (indexGoneErr). The first time, it says what
// became of the index ("the index" what) and takes back the handle's
// registration (one a drop between two reads left, or the heartbeat's).
func (db *DB) markGone(what string) {
	if db.gone.Swap(true) {
		return
	}
	db.opts.Logger.Error("lshdb: the index"+what+": this handle's writes are refused from now on; close it, and restore or create the index again", "index", db.dir)
	db.unregister()
}

// redisWrite writes prepared documents (unique ids); it returns how many
// replaced a stored one. The caller holds wmu.
//
// With again, the Attempt of a write of the same preps that failed, it is
// that write sent again (rediskv.WriteSet.Again); the Attempt returned is
// this one's, for the caller to send again or to say is over
// (rediskv.Store.Finished).
func (db *DB) redisWrite(preps []prepared, again *rediskv.Attempt) (int, *rediskv.Attempt, error) {
	if err := db.manifestThere(db.redisWriteCtx()); err != nil {
		return 0, again, err
	}
	// NB: as on Pebble (expiryManifest), the first documents with an
	// expiry make the index format 4, before they are written.
	if slices.ContainsFunc(preps, func(p prepared) bool { return p.expires != 0 }) {
		if err := db.setExpiryFormat(); err != nil {
			return 0, again, err
		}
	}
	ws := rediskv.WriteSet{Puts: make([]rediskv.Put, len(preps)), Again: again}
	for i := range preps {
		p := &preps[i]
		ws.Puts[i] = rediskv.Put{ID: p.id, Record: p.record, Buckets: p.keys, Expires: p.expires}
	}
	res, err := db.rkv.Apply(db.redisWriteCtx(), &ws)
	att := cmp.Or(res.Attempt, again)
	if errors.Is(err, rediskv.ErrCountersLost) {
		// NB: the command that created the index dropped it at this
		// error, and with it every key of the lost index found here
		// (30,973 keys, 1,999 whole records: an operator's review, R2).
		db.foundForeign.Store(true)
	}
	if errors.Is(err, rediskv.ErrCountersGone) {
		// NB: the counters alone lost (a cluster's master restarted
		// without persistence, the manifest on another): the index is
		// there, and check --repair puts the counters back, mark
		// included; the handle's writes go on after it (a maintainer's
		// review: it was told to create the index again, for good).
		if m, merr := db.rkv.Manifest(db.redisWriteCtx()); merr == nil && m != nil && sameInstance(m, db.man.Instance) {
			return 0, att, corruptRepairable("%s: the index's counters are gone from Redis (lost with a restart without persistence, or evicted) while its manifest is there: no id of this write was written; stop every writer, and lshdb check --repair puts them back", db.dir)
		}
		db.markGone(" is gone from Redis (lost with a restart without persistence, evicted, or dropped)")
		return 0, att, db.indexGoneErr()
	}
	if err != nil {
		return 0, att, redisErr(err)
	}
	return res.Replaced, att, nil
}

// redisWriteCtx is the context of a Redis write once it has begun: Close
// does not cancel it (Close waits for a short call in flight, as on
// Pebble), and go-redis's own timeouts bound it.
//
// NB: on db.closing, a Close during a write cancelled it between its
// steps: a record and postings written without their id (a query found
// the document that Get did not), writes reported failed but applied, an
// index that failed check until check --repair, and a bare "context
// canceled" that was neither ErrClosed nor ErrBackend.
func (db *DB) redisWriteCtx() context.Context { return context.WithoutCancel(db.closing) }

// redisReadErr is redisErr for a read on db.closing before a write: a
// Close that cancelled it is ErrClosed (nothing was written), not a bare
// "context canceled".
func (db *DB) redisReadErr(err error) error {
	if errors.Is(err, context.Canceled) && db.closing.Err() != nil {
		return context.Cause(db.closing)
	}
	return redisErr(err)
}

// failSyncOnce, when a test sets it, fails the next wait for replicas
// (redisSync) with errSyncInjected, as a failover in the wait would.
var failSyncOnce atomic.Bool

// syncFailHook, when a test sets it, runs as failSyncOnce fails a wait:
// what a failover lost, emulated.
var syncFailHook func()

var errSyncInjected = errors.New("a failed wait for replicas, injected by a test")

// redisSyncTimeout bounds the wait for replicas after a write.
//
// NB: under go-redis's read timeout (3 s), which WAIT must not outlast.
const redisSyncTimeout = 2 * time.Second

// redisSync waits until the replicas hold the writes made so far,
// unless the caller opted out of synced writes.
func (db *DB) redisSync(wo *WriteOptions) error {
	if db.opts.NoSync || wo != nil && wo.NoSync {
		return nil
	}
	if failSyncOnce.CompareAndSwap(true, false) {
		if syncFailHook != nil {
			syncFailHook()
		}
		return redisErr(errSyncInjected)
	}
	return redisErr(db.rkv.Sync(db.redisWriteCtx(), redisSyncTimeout))
}

// redisDelete is deleteLocked on Redis. NB: the ids are checked before
// anything is deleted, so that a missing one fails the call with nothing
// done, as on Pebble (a writer in another process may still delete one
// in between).
func (db *DB) redisDelete(ids []string, o *WriteOptions) (DeleteResult, error) {
	var res DeleteResult
	if err := db.manifestThere(db.redisWriteCtx()); err != nil {
		return res, err
	}
	seen := make(map[string]bool, len(ids))
	var uniq []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	nums, err := db.rkv.DocNums(db.closing, uniq)
	if err != nil {
		return res, db.redisReadErr(err)
	}
	// NB: a document past its expiry, not yet swept, is missing to every
	// read: so it is to Delete (as on Pebble), which leaves it to the
	// sweeper.
	recs, err := db.rkv.Records(db.closing, nums)
	if err != nil {
		return res, db.redisReadErr(err)
	}
	now := db.now().UnixNano()
	expired := make([]bool, len(nums))
	for i, r := range recs {
		if nums[i] == 0 || r == nil {
			continue
		}
		// NB: a record that cannot be decoded is deleted as any other,
		// its expiry unread: the delete was refused as corrupt, and the
		// id could not be deleted at all.
		if view, err := codec.ParseDocView(r); err == nil && compaction.Expired(view.Expires, now) {
			nums[i], expired[i] = 0, true
		}
	}
	var stored []string
	for i, id := range uniq {
		switch {
		case nums[i] != 0:
			stored = append(stored, id)
		case o.IgnoreMissing:
			res.Missing = append(res.Missing, id)
		default:
			return DeleteResult{}, missingErr(&redisView{ctx: db.closing, s: db.rkv}, ids, id, expired[i])
		}
	}
	if len(stored) == 0 {
		return res, nil
	}
	r, err := db.rkv.Apply(db.redisWriteCtx(), &rediskv.WriteSet{Deletes: stored})
	db.rkv.Finished(r.Attempt) // NB: a delete is not sent again
	if errors.Is(err, rediskv.ErrCountersLost) {
		// NB: the rest of the delete was applied (only the record of
		// another id, which an id named, is left as it was): the result
		// counts it beside the error, where it was empty.
		db.foundForeign.Store(true) // NB: as redisWrite's
	} else if err != nil {
		return DeleteResult{}, redisErr(err)
	}
	res.Deleted = len(stored) - len(r.Missing)
	res.Missing = append(res.Missing, r.Missing...)
	return res, redisErr(err)
}

// redisScanChunk is how many records a Redis scan reads per round trip.
const redisScanChunk = 512

// redisScan is Scan on Redis: the live ids by doc number, their records
// read a chunk at a time. It is not a snapshot: a document written after
// the scan listed the ids is not seen, one deleted after is skipped.
func (db *DB) redisScan(ctx context.Context, sets bool) iter.Seq2[*StoredDoc, error] {
	if err := db.goneRead(); err != nil {
		return func(yield func(*StoredDoc, error) bool) { yield(nil, err) }
	}
	return db.redisScanning(ctx, sets, false)
}

// redisScanning is redisScan; with pastCorrupt, a record that cannot be
// decoded is yielded as its error (ErrCorrupt) and the scan goes on, as
// Check wants: it stopped at the first, and reported nothing after it.
func (db *DB) redisScanning(ctx context.Context, sets, pastCorrupt bool) iter.Seq2[*StoredDoc, error] {
	return func(yield func(*StoredDoc, error) bool) {
		if err := db.enter(); err != nil {
			yield(nil, err)
			return
		}
		live, err := db.rkv.Live(ctx)
		db.mu.RUnlock()
		if err != nil {
			yield(nil, redisErr(err))
			return
		}
		nums := make([]uint64, 0, redisScanChunk)
		for start := 0; start < len(live); start += redisScanChunk {
			chunk := live[start:min(len(live), start+redisScanChunk)]
			nums = nums[:0]
			for _, x := range chunk {
				nums = append(nums, x.Num)
			}
			if err := db.enter(); err != nil {
				yield(nil, err)
				return
			}
			recs, err := db.rkv.Records(ctx, nums)
			if err == nil {
				err = db.followReplaced(ctx, chunk, nums, recs)
			}
			db.mu.RUnlock()
			if err == nil && ctx.Err() != nil {
				err = fmt.Errorf("lshdb: scan interrupted: %w", ctx.Err())
			}
			if err != nil {
				yield(nil, redisErr(err))
				return
			}
			for i, r := range recs {
				if r == nil {
					continue // deleted since the ids were listed
				}
				var rec docData
				n := nums[i]
				if sets {
					err = db.decodeDoc(n, r, &rec)
				} else if err = codec.DecodeDocRecord(r, &rec.DocRecord); err != nil {
					err = classify(fmt.Errorf("doc %d: %w", n, err))
				}
				if err != nil {
					if pastCorrupt && errors.Is(err, ErrCorrupt) {
						err = fmt.Errorf("%w (id %q: delete it, or put it again)", err, chunk[i].ID)
					}
					if !yield(nil, err) || !pastCorrupt || !errors.Is(err, ErrCorrupt) {
						return
					}
					continue
				}
				if !sets {
					rec.Signature = nil
				}
				if compaction.Expired(rec.Expires, db.now().UnixNano()) {
					continue
				}
				if !yield(toDocument(n, &rec), nil) {
					return
				}
			}
		}
	}
}

// replacedNow returns the positions in chunk whose record is gone (recs[i]
// nil) and the doc numbers their ids name now (0: deleted), for a caller
// that reads the listed documents in chunks (Scan, Backup): a record gone
// since the ids were listed was deleted, or replaced under a number the
// list does not hold, and the document its id names now is the one to
// read (a backup or export beside a writer left out every document
// replaced while it ran).
func (db *DB) replacedNow(ctx context.Context, chunk []rediskv.IDNum, recs [][]byte) (at []int, now []uint64, err error) {
	var ids []string
	for i, r := range recs {
		if r == nil {
			ids, at = append(ids, chunk[i].ID), append(at, i)
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	now, err = db.rkv.DocNums(ctx, ids)
	return at, now, err
}

// followReplaced reads again, in place, the documents of chunk (nums and
// recs, as listed and read) whose record is gone (replacedNow): each
// becomes the document its id names now, or stays nil if deleted.
func (db *DB) followReplaced(ctx context.Context, chunk []rediskv.IDNum, nums []uint64, recs [][]byte) error {
	at, now, err := db.replacedNow(ctx, chunk, recs)
	if err != nil || len(at) == 0 {
		return err
	}
	newer, err := db.rkv.Records(ctx, now)
	if err != nil {
		return err
	}
	for k, i := range at {
		if newer[k] != nil {
			nums[i], recs[i] = now[k], newer[k]
		}
	}
	return nil
}

// redisCheck is Check on Redis: rediskv's structural check (ids, records,
// postings, counts) and a decode of every live record.
func (db *DB) redisCheck(ctx context.Context) (*CheckReport, error) {
	r, err := db.rkv.Check(ctx, db.man.Bands)
	if err != nil {
		return nil, redisErr(err)
	}
	rep := &CheckReport{IDs: r.IDs, PostingLists: r.Lists, Postings: r.Postings}
	for _, p := range r.Problems {
		rep.problem("%s", p)
	}
	// NB: Redis deletes a set when its last member goes: no empty lists.
	for _, err := range db.redisScanning(ctx, true, true) {
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				rep.problem("%v", err)
				continue
			}
			return nil, err
		}
		rep.Docs++
	}
	return rep, nil
}

// redisLoadBatch is how many documents a Redis load writes per Apply:
// each of its steps is one pipeline (thousands of commands) per master.
const redisLoadBatch = 2048

// redisLoadRetry is how long a Redis load retries a batch whose write
// failed (a master failing over: the cluster takes the node timeout plus
// an election, seconds) before it gives up.
const redisLoadRetry = 60 * time.Second

// redisWriteRetrying writes one batch of a load and waits for its
// replicas, retrying for up to redisLoadRetry while the cluster fails.
// NB: the batch is sent again as the same write (rediskv.Attempt): its
// records under the numbers the first try gave, its ids' swaps answered
// as they were. Written again as a new write, a batch that a failover
// broke off took the first try's records, which its ids named, for
// documents it replaced: a load of 30,000 new documents said 657
// replaced, its live count 657 short, and 6,331 records no id names
// failed check until a repair (an operator's review, RD2-2).
func (db *DB) redisWriteRetrying(ctx context.Context, preps []prepared, retried *int) (int, error) {
	var replaced int
	var att, again *rediskv.Attempt
	counted := false // in *retried
	err := retry.Do(ctx, retry.Policy{
		First: 50 * time.Millisecond, Max: 2 * time.Second, Limit: redisLoadRetry,
		// NB: only what a failover gives is retried: a full memory, a
		// refused password or an unknown command was retried for a
		// minute, a warning each time.
		Again: Transient,
		Waiting: func(err error, wait time.Duration) {
			if !counted {
				*retried++
				counted = true
			}
			again = att
			db.opts.Logger.Warn("lshdb: a Redis write failed; retrying the batch", "err", err, "after", wait)
		},
	}, func() (err error) {
		replaced, att, err = db.redisWrite(preps, again)
		if err == nil {
			err = db.redisSync(nil)
		}
		return err
	})
	var gaveUp *retry.GaveUp
	var stopped *retry.Interrupted
	switch {
	case errors.As(err, &gaveUp):
		err = fmt.Errorf("%w (retried for %v)", gaveUp.Err, gaveUp.After.Round(time.Second))
	case errors.As(err, &stopped):
		// NB: the batch may be written in part: the load's error says
		// what was stored.
		return 0, stopped.Cause
	}
	db.rkv.Finished(att)
	return replaced, err
}

// redisLoad is Load on Redis: batched puts, prepared on every core, each
// batch written with pipelined steps and acknowledged by the replicas
// before the next (unless Options.NoSync), retried while a master fails
// over. Unlike Pebble's load it is not atomic: an error stops it with the
// batches before it written (LoadResult.Stored counts them; a re-run
// replaces them), and Replaced also counts documents replacing earlier
// ones of the same load. The caller holds db.mu for reading and wmu.
func (db *DB) redisLoad(ctx context.Context, docs iter.Seq2[Doc, error], o LoadOptions, expires int64) (LoadResult, error) {
	var res LoadResult
	if db.gone.Load() {
		return res, db.indexGoneErr() // NB: at once, not after a batch read and prepared
	}
	batch := make([]Doc, 0, redisLoadBatch)
	read := 0
	retried := 0
	defer func() {
		if retried > 0 {
			// NB: each try warned; each batch was sent again as the
			// write it was (redisWriteRetrying), which leaves nothing
			// that check finds.
			db.opts.Logger.Info("lshdb: batches of this load were sent again after Redis write failures, each as the same write", "batches", retried)
		}
	}()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctxErr(ctx); err != nil {
			return err
		}
		// NB: prepared first, then the last of each id wins among the
		// documents kept, as in Pebble's load: an empty text skipped
		// leaves an earlier version of its id.
		preps, errs, _ := db.prepareEach(batch, db.man.StoreText, nil)
		keep := preps[:0]
		for i, err := range errs {
			if err == nil {
				err = preps[i].setExpiry(expires)
			}
			switch {
			case err == nil:
				keep = append(keep, preps[i])
			case o.SkipEmpty && errors.Is(err, ErrEmptyDocument):
				res.SkippedEmpty = append(res.SkippedEmpty, batch[i].ID)
			default:
				return &DocError{Index: read - len(batch) + i, ID: batch[i].ID, Err: err}
			}
		}
		last := make(map[string]int, len(keep))
		for i := range keep {
			last[keep[i].id] = i
		}
		uniq := keep[:0]
		for i := range keep {
			if last[keep[i].id] == i {
				uniq = append(uniq, keep[i])
			}
		}
		res.Repeated += len(keep) - len(uniq)
		keep = uniq
		replaced, err := db.redisWriteRetrying(ctx, keep, &retried)
		if err != nil {
			return err
		}
		res.Stored += len(keep)
		res.Replaced += replaced
		batch = batch[:0]
		return nil
	}
	done := ctx.Done()
	for d, err := range seqs.Caller(docs) {
		if err != nil {
			return res, err
		}
		// NB: at every document, as Load on Pebble: a slow stream kept a
		// cancel (or a Close) waiting for the rest of its batch.
		select {
		case <-done:
			return res, ctxErr(ctx)
		default:
		}
		// NB: kept until its batch is prepared: copied, as Load's doc
		// promises (docs may reuse its buffers).
		d = d.clone()
		batch = append(batch, d)
		read++
		if o.Progress != nil && read%10000 == 0 {
			o.Progress(read)
		}
		if len(batch) == redisLoadBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	if o.Progress != nil {
		o.Progress(read)
	}
	return res, nil
}

// redisPairsChunk is how many documents a Redis Pairs run takes at a
// time: their buckets in one pipeline, their candidates' records in
// another.
const redisPairsChunk = 256

// redisPair is a pair of a Redis Pairs run with the doc numbers of the
// versions of A and B that it scored: Clusters keeps a pair only while
// they are the versions its index lists.
type redisPair struct {
	Pair
	na, nb uint64
}

// redisRun is what a Redis Pairs run keeps for its whole length: the
// documents listed when it started, by doc number, and each id's key,
// its place in that list. A pair is reported by the document of the
// lesser key, whatever versions of the two are read.
type redisRun struct {
	live  []rediskv.IDNum
	keyOf map[string]int
	t     float64
	est   bool
	st    *PairsStats
}

// listedAt finds doc number n in live, a list of the live documents in
// doc-number order (rediskv.Store.Live).
func listedAt(live []rediskv.IDNum, n uint64) (int, bool) {
	return slices.BinarySearchFunc(live, n, func(x rediskv.IDNum, n uint64) int { return cmp.Compare(x.Num, n) })
}

// listedKey returns the key of the id that the list gives doc number n.
func (r *redisRun) listedKey(n uint64) (int, bool) {
	i, ok := listedAt(r.live, n)
	if !ok {
		return 0, false
	}
	return r.keyOf[r.live[i].ID], true
}

// redisPairs is Pairs on Redis. It lists the live documents, then takes
// them a chunk at a time in doc-number order; for each, the other members
// of its b buckets that come later in the list are its candidates,
// verified with exact Jaccard (the estimate in storage none) as a query
// verifies them. Every pair is thus reported once, by its earlier
// document. Three round trips per master and chunk (more while a writer
// replaces documents); the memory is the list, a chunk's records and its
// candidates'. Its PairsStats count the work of this method: no
// identical groups are formed (identical documents are candidates,
// verified at 1), and Lists, HotLists and LargestList count the lists as
// each chunk reads them (a list that two chunks read counts twice), by
// documents, not distinct sets.
//
// No snapshot: beside a writer, what it promises is what Pairs' doc says.
// A document is paired by its id: one replaced since the list was made
// (its listed record gone, or a newer version of it in a bucket) is read
// as its id names it when its chunk is read, as Scan reads it; one
// deleted is left out from then on; one written under a new id since is
// not paired (no id of the list names it).
func (db *DB) redisPairs(ctx context.Context, po *PairsOptions, st *PairsStats, yield func(Pair, error) bool) error {
	return db.redisPairsRun(ctx, po, st, func(p redisPair) bool { return yield(p.Pair, nil) })
}

// redisPairsRun is redisPairs, each pair given to emit with the versions
// it scored (until emit returns false).
func (db *DB) redisPairsRun(ctx context.Context, po *PairsOptions, st *PairsStats, emit func(redisPair) bool) error {
	if err := db.goneRead(); err != nil {
		return err
	}
	t, err := db.pairsThreshold(po)
	if err != nil {
		return err
	}
	if po != nil && po.Memory < 0 {
		// NB: as on Pebble, where it bounds the run's memory (here
		// unused: the pairs are found chunk by chunk).
		return invalid("pairs memory %d is negative", po.Memory)
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.enter(); err != nil {
		return err
	}
	live, err := db.rkv.Live(ctx)
	db.mu.RUnlock()
	if err != nil {
		return redisErr(err)
	}
	st.Docs = len(live)
	r := &redisRun{live: live, keyOf: make(map[string]int, len(live)), t: t, est: db.estimateOnly(), st: st}
	for i, x := range live {
		r.keyOf[x.ID] = i // NB: an id listed twice (SCAN gave it twice, replaced in between) has the later place
	}
	prog := progressOf(ctx)
	defer prog.end()
	prog.phase(1, 1, "verifying candidates", int64(len(live)))
	for start := 0; start < len(live); start += redisPairsChunk {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		end := min(len(live), start+redisPairsChunk)
		if err := db.enter(); err != nil {
			return err
		}
		pairs, err := db.redisPairsOf(ctx, r, start, end)
		db.mu.RUnlock()
		if err != nil {
			return err
		}
		prog.add(int64(end - start))
		for _, p := range pairs {
			// NB: a chunk's pairs come from memory: a loop body that
			// cancels, or closes the handle, gets none after.
			if err := ctxErr(ctx); err != nil {
				return err
			}
			st.Reported++
			if !emit(p) {
				return nil
			}
		}
	}
	return nil
}

// redisPairsOf returns the pairs that the documents listed at keys
// [start, end) report (with documents of greater keys). Each id is read
// in one version for the chunk: a chunk document's is its listed record,
// or what its id names now if that is gone; a candidate's the newest
// found (its listed record, a newer version posted in a bucket, or what
// its id names now if the listed record is gone). The caller holds db.mu.
func (db *DB) redisPairsOf(ctx context.Context, r *redisRun, start, end int) ([]redisPair, error) {
	type version struct {
		num uint64
		doc *docData
	}
	decode := func(n uint64, rec []byte) (*docData, error) {
		d := new(docData)
		if err := db.decodeDoc(n, rec, d); err != nil {
			return nil, err
		}
		return d, nil
	}
	chunk := r.live[start:end]
	own := func(k int) bool { return k >= start && k < end }
	nums := make([]uint64, len(chunk))
	for i, x := range chunk {
		nums[i] = x.Num
	}
	recs, err := db.rkv.Records(ctx, nums)
	if err != nil {
		return nil, redisErr(err)
	}
	// NB: a document replaced since the ids were listed is read as its id
	// names it now; one deleted is left out.
	if err := db.followReplaced(ctx, chunk, nums, recs); err != nil {
		return nil, redisErr(err)
	}
	// numKey is the key of each doc number whose id is known; vers the
	// version of each key read for this chunk.
	numKey := map[uint64]int{}
	vers := map[int]version{}
	read := make([]bool, len(chunk))
	keys := make([][]uint64, len(chunk))
	var lists []rediskv.BandBucket
	listOf := map[postingKey]int{}
	for i, rec := range recs {
		k := start + i
		if rec == nil || r.keyOf[chunk[i].ID] != k {
			continue // deleted; or listed twice, and read at its other place
		}
		d, err := decode(nums[i], rec)
		if err != nil {
			return nil, err
		}
		read[i] = true
		vers[k] = version{nums[i], d}
		numKey[nums[i]], numKey[chunk[i].Num] = k, k
		if keys[i], err = db.bucketKeys(nil, d.Signature); err != nil {
			return nil, classify(err)
		}
		for band, b := range keys[i] {
			pk := postingKey{band, b}
			if _, ok := listOf[pk]; !ok {
				listOf[pk] = len(lists)
				lists = append(lists, rediskv.BandBucket{Band: band, Bucket: b})
			}
		}
	}
	members, err := db.rkv.Postings(ctx, lists)
	if err != nil {
		return nil, redisErr(err)
	}
	st := r.st
	st.Lists += len(lists)
	for _, m := range members {
		st.LargestList = max(st.LargestList, len(m))
		if len(m) > HotList {
			st.HotLists++
		}
	}
	// Each document's candidates: the members of its buckets of a
	// greater key, or of a key known only once their record is read (a
	// version written since the ids were listed).
	cands := make([][]uint64, len(chunk))
	var need []uint64
	needed := map[uint64]bool{}
	for i := range chunk {
		if !read[i] {
			continue
		}
		self := start + i
		seen := map[uint64]bool{}
		for band, b := range keys[i] {
			for _, m := range members[listOf[postingKey{band, b}]] {
				if seen[m] {
					continue
				}
				seen[m] = true
				k, known := numKey[m]
				if !known {
					k, known = r.listedKey(m)
				}
				if known && k <= self {
					continue
				}
				cands[i] = append(cands[i], m)
				if _, ok := numKey[m]; !ok && !needed[m] {
					needed[m] = true
					need = append(need, m)
				}
			}
		}
	}
	// use makes rec (doc number n) the version of key k, unless the
	// chunk's own or a newer one is.
	use := func(k int, n uint64, rec []byte) error {
		if v, ok := vers[k]; ok && (own(k) || v.num >= n) {
			return nil
		}
		d, err := decode(n, rec)
		if err != nil {
			return err
		}
		vers[k] = version{n, d}
		return nil
	}
	var follow []string
	if len(need) > 0 {
		rs, err := db.rkv.Records(ctx, need)
		if err != nil {
			return nil, redisErr(err)
		}
		// read are the versions found through the postings, used once
		// their ids are found to name them.
		type found struct {
			k   int
			n   uint64
			rec []byte
		}
		var read []found
		for i, rec := range rs {
			n := need[i]
			if rec == nil {
				// NB: a listed document replaced or deleted since: read
				// as its id names it now. A version not listed, gone,
				// was replaced in turn: skipped, as a query skips it.
				if k, ok := r.listedKey(n); ok {
					numKey[n] = k
					follow = append(follow, r.live[k].ID)
				}
				continue
			}
			view, err := codec.ParseDocView(rec)
			if err != nil {
				return nil, classify(fmt.Errorf("doc %d: %w", n, err))
			}
			k, ok := r.keyOf[string(view.ID)]
			if !ok {
				continue // an id written since the ids were listed: not paired
			}
			numKey[n] = k
			read = append(read, found{k, n, rec})
		}
		// NB: a version is its id's only if the id names it now: the
		// newest read was taken, and a replacement that stopped after
		// its new version's postings (a writer killed), its id naming
		// the old one still, had the id paired by a text Get did not
		// give, at Jaccard 1 with documents it shared no word with (a
		// read-through's RT2-3). Such a version's id is read as it
		// names it now (follow), as Query reads it.
		if len(read) > 0 {
			ids := make([]string, len(read))
			for i, f := range read {
				ids[i] = r.live[f.k].ID
			}
			now, err := db.rkv.DocNums(ctx, ids)
			if err != nil {
				return nil, redisErr(err)
			}
			for i, f := range read {
				if now[i] != f.n {
					if now[i] != 0 {
						follow = append(follow, ids[i])
					}
					continue
				}
				if err := use(f.k, f.n, f.rec); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(follow) > 0 {
		now, err := db.rkv.DocNums(ctx, follow)
		if err != nil {
			return nil, redisErr(err)
		}
		rs, err := db.rkv.Records(ctx, now)
		if err != nil {
			return nil, redisErr(err)
		}
		for i, rec := range rs {
			if rec == nil {
				continue // deleted (or replaced once more): left out
			}
			if err := use(r.keyOf[follow[i]], now[i], rec); err != nil {
				return nil, err
			}
		}
	}
	var out []redisPair
	for i := range chunk {
		if !read[i] {
			continue
		}
		self := start + i
		a := vers[self]
		var ks []int
		seen := map[int]bool{}
		for _, m := range cands[i] {
			if k, ok := numKey[m]; ok && k > self && !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		st.Candidates += int64(len(ks))
		for _, k := range ks {
			b, ok := vers[k]
			if !ok {
				continue // deleted since the ids were listed
			}
			var j float64
			if r.est {
				j = sizeCapped(minhash.Estimate(a.doc.Signature, b.doc.Signature), a.doc.SetLen, b.doc.SetLen)
			} else {
				small, big := min(len(a.doc.Set), len(b.doc.Set)), max(len(a.doc.Set), len(b.doc.Set))
				if float64(small)/float64(big) < r.t {
					continue
				}
				j = minhash.Jaccard(a.doc.Set, b.doc.Set)
			}
			st.Verified++
			if j >= r.t {
				st.Matched++
				out = append(out, redisPair{Pair{A: a.doc.ID, B: b.doc.ID, Jaccard: j}, a.num, b.num})
			}
		}
	}
	return out, nil
}

// redisSweep is SweepExpired on Redis (not yet: see rediskv).
func (db *DB) redisSweep(ctx context.Context) (int, error) {
	if db.gone.Load() {
		return 0, db.indexGoneErr() // NB: nor the keys of one made again under its name
	}
	n, err := db.rkv.SweepCounted(ctx, db.now().UnixNano(), compaction.SweepBatch, db.countSwept)
	return n, redisErr(err)
}

// redisPairsIndex reads the documents' ids, set sizes and fingerprints
// into a pairsIndex (Clusters' and ClustersFrom's), a chunk of records per
// round trip. A document replaced since the ids were listed is read as
// its id names it now (as Scan reads it); one deleted is left out.
func (db *DB) redisPairsIndex(ctx context.Context, now int64) (*pairsIndex, error) {
	if err := db.goneRead(); err != nil {
		return nil, err
	}
	live, err := db.rkv.Live(ctx)
	if err != nil {
		return nil, redisErr(err)
	}
	listed := func(n uint64) bool {
		_, ok := listedAt(live, n)
		return ok
	}
	// NB: no sketches (skBytes 0): Redis's Pairs verifies as it reads,
	// with no set file.
	var p indexPart
	add := func(p *indexPart, n uint64, r []byte) error {
		view, err := codec.ParseDocView(r)
		if err == nil {
			err = p.add(n, &view, now)
		}
		if err != nil {
			return classify(fmt.Errorf("doc %d: %w", n, err))
		}
		return nil
	}
	// moved are the versions followed: their numbers are not in the
	// list's order, and they are merged into it at the end.
	type moved struct {
		n uint64
		r []byte
	}
	var follows []moved
	nums := make([]uint64, 0, redisScanChunk)
	for start := 0; start < len(live); start += redisScanChunk {
		chunk := live[start:min(len(live), start+redisScanChunk)]
		nums = nums[:0]
		for _, x := range chunk {
			nums = append(nums, x.Num)
		}
		recs, err := db.rkv.Records(ctx, nums)
		if err != nil {
			return nil, redisErr(err)
		}
		at, cur, err := db.replacedNow(ctx, chunk, recs)
		if err == nil && len(at) > 0 {
			var newer [][]byte
			if newer, err = db.rkv.Records(ctx, cur); err == nil {
				for k := range at {
					// NB: a number also listed (an id listed twice) is
					// read there.
					if newer[k] != nil && !listed(cur[k]) {
						follows = append(follows, moved{cur[k], newer[k]})
					}
				}
			}
		}
		if err != nil {
			return nil, redisErr(err)
		}
		for i, r := range recs {
			if r == nil {
				continue // replaced (followed above) or deleted since the ids were listed
			}
			if err := add(&p, nums[i], r); err != nil {
				return nil, err
			}
		}
	}
	if len(follows) > 0 {
		slices.SortFunc(follows, func(a, b moved) int { return cmp.Compare(a.n, b.n) })
		follows = slices.CompactFunc(follows, func(a, b moved) bool { return a.n == b.n })
		var q indexPart
		for _, f := range follows {
			if err := add(&q, f.n, f.r); err != nil {
				return nil, err
			}
		}
		p = mergeParts(p, q)
	}
	return (&pairsIndex{groupOf: map[int32]int{}}).fill([]indexPart{p}), nil
}

// mergeParts returns the documents of p and q, each in doc-number order
// and with no sketches, as one part in doc-number order.
func mergeParts(p, q indexPart) indexPart {
	var out indexPart
	i, j := 0, 0
	for i < len(p.nums) || j < len(q.nums) {
		from, k := &p, i
		if i == len(p.nums) || j < len(q.nums) && q.nums[j] < p.nums[i] {
			from, k = &q, j
			j++
		} else {
			i++
		}
		out.nums = append(out.nums, from.nums[k])
		out.ids = append(out.ids, from.ids[k])
		out.sizes = append(out.sizes, from.sizes[k])
		out.fps = append(out.fps, from.fps[k])
	}
	out.expired = slices.Sorted(slices.Values(append(slices.Clip(p.expired), q.expired...)))
	return out
}

// redisClusters is Clusters on Redis: the pairs of a Pairs run, held in
// memory with the versions they scored, made into clusters as
// ClustersFrom makes them over the documents listed after the run. A
// pair is kept only if both its versions are still the ones listed: a
// document replaced while the clusters are made joins them by its
// current version's pairs that the run found, or not at all; one deleted
// is left out; one whose record is gone by the time its set is read is
// left out of its cluster (see clusterer.clusters). The clusters of the
// documents no writer touched are those of a run with no writer.
func (db *DB) redisClusters(ctx context.Context, po *PairsOptions) ([]Cluster, error) {
	// NB: the run's phase, then ClustersFrom's three, as steps 1 to 4 of
	// one count (they went 1/1, then 1/3 to 3/3).
	prog := progressOf(ctx)
	prog.setSteps(4)
	defer prog.setSteps(0)
	var pairs []redisPair
	var st PairsStats
	if err := db.redisPairsRun(ctx, po, &st, func(p redisPair) bool {
		pairs = append(pairs, p)
		return true
	}); err != nil {
		return nil, err
	}
	if po != nil && po.Stats != nil {
		*po.Stats = st
	}
	return db.clustersFrom(ctx, func(yield func(redisPair, error) bool) {
		for _, p := range pairs {
			if !yield(p, nil) {
				return
			}
		}
	}, po, true, 2)
}

// redisPostingsPage is how many posting lists' members redisBuckets reads
// per round trip.
const redisPostingsPage = 1024

// redisBuckets is Buckets on Redis: every posting list's size (a SCAN
// page of SCARDs per round trip), then the hottest lists' members. Ties
// among the hottest go to the earlier band and bucket, as on Pebble.
func (db *DB) redisBuckets(ctx context.Context, band, top, step, steps int) (*BucketStats, error) {
	st := &BucketStats{Lists: make([]int, db.bands.B)}
	// NB: the same steps as on Pebble (bucketsIn): three of Buckets' own,
	// or the first of Stats'. Redis's SCAN gives no count ahead: the first
	// phase counts the lists it sized, and its total is known at its end.
	// The ranking took the lists' count to no phase (a read-through's
	// RT5-6).
	prog := progressOf(ctx)
	own := steps == 0
	if own {
		steps = 3
		defer prog.end()
	}
	prog.phase(step, steps, "reading posting lists' sizes", 0)
	var hottest []hotList
	if err := db.rkv.ListSizes(ctx, band, func(b int, bucket uint64, size int) {
		prog.add(1)
		if b < 0 || b >= len(st.Lists) {
			return
		}
		st.Lists[b]++
		h := bits.Len(uint(size))
		for len(st.Histogram) <= h {
			st.Histogram = append(st.Histogram, 0)
		}
		st.Histogram[h]++
		if top > 0 && size > 0 {
			hottest = append(hottest, hotList{band: b, bucket: bucket, size: size})
		}
	}); err != nil {
		return nil, redisErr(err)
	}
	slices.SortFunc(hottest, func(a, b hotList) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.band, b.band), cmp.Compare(a.bucket, b.bucket))
	})
	// NB: top × bands lists hold top hot spots, as on Pebble (bucketsIn).
	// The lists of the cut's size are ordered by their sketches there
	// (hotter): their members are read up to 4 × the cut, and beyond
	// that the first in key order are taken.
	nb := db.bands.B
	if band >= 0 {
		nb = 1
	}
	cut := min(len(hottest), top*nb)
	read := cut
	for read < len(hottest) && read < 4*cut && hottest[read].size == hottest[cut-1].size {
		read++
	}
	hottest = hottest[:read]
	for i := range hottest {
		hottest[i].seq = i // key order: hotter's last key
	}
	lists := make([]rediskv.BandBucket, len(hottest))
	for i, h := range hottest {
		lists[i] = rediskv.BandBucket{Band: h.band, Bucket: h.bucket}
	}
	// NB: the members read are the ranking's first part, a page of
	// lists per round trip, each counted and a cancel heard between
	// them: one pipeline of them all took 0.3 s of a 0.5 s first step,
	// unreported, at top 100,000 (a read-through's RT6-7).
	sub := subProgress(prog, own)
	sub.phase(2, steps, "ranking the hottest lists", int64(len(lists)+cut))
	members := make([][]uint64, 0, len(lists))
	for i := 0; i < len(lists); i += redisPostingsPage {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		page, err := db.rkv.Postings(ctx, lists[i:min(i+redisPostingsPage, len(lists))])
		if err != nil {
			return nil, redisErr(err)
		}
		members = append(members, page...)
		sub.add(int64(len(page)))
	}
	for i := range hottest {
		slices.Sort(members[i])
		sk := newMemberSketch()
		for _, n := range members[i] {
			sk.add(n)
		}
		hottest[i].sketch, hottest[i].docs = sk.sorted(), members[i]
	}
	slices.SortFunc(hottest, hotter)
	groups, err := groupHot(ctx, hottest[:cut], top, sub)
	if err != nil {
		return nil, err
	}
	sub.phase(3, steps, "reading the hottest lists' samples", int64(len(groups)))
	for _, g := range groups {
		info := BucketInfo{Band: g[0].band, Bucket: g[0].bucket, Size: g[0].size}
		for _, o := range g[1:] {
			info.Also = append(info.Also, BandBucket{Band: o.band, Bucket: o.bucket})
		}
		st.Hottest = append(st.Hottest, info)
	}
	for i, g := range groups {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		sub.add(1)
		nums := g[0].docs[:min(len(g[0].docs), SampleSize)]
		recs, err := db.rkv.Records(ctx, nums)
		if err != nil {
			return nil, redisErr(err)
		}
		for _, r := range recs {
			if r == nil {
				continue // being written or retired
			}
			view, err := codec.ParseDocView(r)
			if err != nil {
				return nil, classify(err)
			}
			st.Hottest[i].Sample = append(st.Hottest[i].Sample, string(view.ID))
		}
	}
	return st, nil
}

// redisStats fills st's Redis parts: what is pending expiry and the
// memory the keys take by kind (in StoredBytes).
func (db *DB) redisStats(ctx context.Context, st *Stats) (*Stats, error) {
	progressOf(ctx).phase(3, 3, "sizing the keys (MEMORY USAGE)", 0)
	n, err := db.rkv.Count(ctx)
	if err != nil {
		return nil, db.countersErr(err)
	}
	st.Docs = n
	expired, expiring, err := db.rkv.Pending(ctx, db.now().UnixNano())
	if err != nil {
		return nil, redisErr(err)
	}
	st.Expired, st.Expiring = int(expired), int(expiring)
	if st.StoredBytes, err = db.rkv.MemoryUsage(ctx); err != nil {
		return nil, redisErr(err)
	}
	return st, nil
}

// Drop deletes the index at dir (a directory, or a Redis URL as Open
// takes) and everything it holds. It refuses what is not an lshdb index
// (ErrNotExist, ErrNotIndex), an index directory that also holds files
// that are not the index's (ErrNotIndex, naming them: a corpus kept
// beside the index would go with it), and a directory that another
// process has open (ErrLocked): the directory is renamed aside while Drop holds its
// lock, then removed, so nothing can open it in between. A dir that is a
// symbolic link to an index drops the index it names, then the link.
//
// On Redis there is no lock: Drop deletes the manifest first (an Open
// after it finds no index), then every key of the name, under any process
// that has the index open. Such a process's later writes leave keys with
// no manifest; Drop of the name removes those too (and returns
// ErrNotExist only when the name holds no key at all).
//
// A Drop stopped after its rename (the process killed) leaves the index
// in dir.dropped-N; the next Drop of dir removes it, and returns nil when
// that finished an earlier Drop of an index no longer at dir, and so does
// the making of an index at dir. Until then Open's ErrNotExist names it.
func Drop(ctx context.Context, dir string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	swept := 0
	if !IsRedisURL(dir) {
		removed, err := sweepTombs(dir)
		if err != nil {
			return err
		}
		swept = len(removed)
	}
	// NB: read-only: no sweeper (whose writes could land after the keys
	// are gone) and no write to a store about to be deleted.
	d, err := Open(dir, &Options{ReadOnly: true, ExpirySweep: -1, openCtx: ctx})
	if IsRedisURL(dir) && (errors.Is(err, ErrNotExist) || errors.Is(err, errNoManifest)) {
		return dropLeftovers(ctx, dir)
	}
	if errors.Is(err, errUnfinished) {
		// NB: a create killed before its store was whole: its files are
		// the store's alone (Open said so), and nothing is in them.
		names, lerr := os.ReadDir(dir)
		if lerr != nil {
			return fmt.Errorf("lshdb: drop: %w", lerr)
		}
		for _, n := range names {
			if !indexFile(n.Name()) {
				return err
			}
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			return fmt.Errorf("lshdb: drop: %w", rerr)
		}
		return nil
	}
	if swept > 0 && errors.Is(err, ErrNotExist) {
		// An earlier Drop's, killed after its rename: finished now, with
		// the link it was given, left dangling.
		if fi, lerr := os.Lstat(strings.TrimRight(dir, string(filepath.Separator))); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			os.Remove(strings.TrimRight(dir, string(filepath.Separator)))
		}
		return nil
	}
	if err != nil {
		return err
	}
	if d.rkv != nil {
		err := retryTransient(ctx, d.opts.Logger, "dropping the index", func() error {
			if dropHook != nil {
				if err := dropHook(d.rkv); err != nil {
					return err
				}
			}
			return redisErr(d.rkv.Drop(ctx))
		})
		return cmp.Or(err, d.Close())
	}
	fsys := d.opts.FS
	// NB: dir may be a symbolic link to the index (or pass through one):
	// renaming the link would remove only the link and report the index
	// dropped while every document stayed on disk. The index is dropped
	// where it is, then the link that named it.
	link := ""
	if fsys == vfs.Default {
		// NB: without its trailing slashes, or Lstat follows the link.
		if l := strings.TrimRight(dir, string(filepath.Separator)); l != "" {
			if fi, err := os.Lstat(l); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				link = l
			}
		}
		// NB: the directory the handle locked, resolved at its Open:
		// resolved again here, a link re-pointed between the two led to
		// another index, which was removed under its own handle (a
		// read-through's RT7-3).
		dir = d.dir
	}
	// NB: Drop deletes the directory: a file the user put beside the
	// index (a corpus, notes) would go with it. What is not the index's
	// is named, and the index left as it was.
	names, err := fsys.List(dir)
	if err != nil {
		d.Close()
		return fmt.Errorf("lshdb: drop: %w", err)
	}
	var foreign []string
	for _, n := range names {
		if !indexFile(n) {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) > 0 {
		d.Close()
		slices.Sort(foreign)
		shown := foreign[:min(len(foreign), 5)]
		more := ""
		if len(foreign) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
		}
		return fmt.Errorf("%w: %s also holds files that are not the index's (%s%s): drop deletes the whole directory, so nothing was deleted; move them out first", ErrNotIndex, dir, strings.Join(quoteAll(shown), ", "), more)
	}
	tomb := fmt.Sprintf("%s%s%d", dir, tombPrefix, time.Now().UnixNano())
	if err := fsys.Rename(dir, tomb); err != nil {
		d.Close()
		return fmt.Errorf("lshdb: drop: %w", err)
	}
	if err := d.Close(); err != nil {
		return err
	}
	if err := fsys.RemoveAll(tomb); err != nil {
		return err
	}
	if link != "" {
		if err := os.Remove(link); err != nil {
			return fmt.Errorf("lshdb: drop: the index is dropped, its link is not: %w", err)
		}
	}
	return nil
}

// tombPrefix is what Drop renames an index directory dir to before it
// removes it: dir + tombPrefix + a number.
const tombPrefix = ".dropped-"

// tombsNote is what an ErrNotExist of dir adds when Drops of dir stopped
// after their rename left the dropped index beside it (dir.dropped-N):
// the first one's name and size, and what removes them.
func tombsNote(fsys vfs.FS, dir string) string {
	if fsys != vfs.Default {
		return ""
	}
	tombs := tombsOf(dir)
	if len(tombs) == 0 {
		return ""
	}
	var size uint64
	for _, t := range tombs {
		size += dirBytes(vfs.Default, t)
	}
	more := ""
	if len(tombs) > 1 {
		more = fmt.Sprintf(" and %d more", len(tombs)-1)
	}
	return fmt.Sprintf(" (a drop of it was stopped: %s%s, %s, remains of the index it dropped, which renamed back to %s is the index again, if whole; a drop of %s, or making an index there, removes it)", tombs[0], more, mib(int64(size)), dir, dir)
}

// tombsOf returns the directories that Drops of dir stopped after their
// rename left (dir.dropped-N), which sweepTombs removes.
func tombsOf(dir string) []string {
	base := filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		base = real // NB: Drop renames the directory a link names
	} else if target, err := os.Readlink(base); err == nil {
		// NB: a link left dangling by a Drop killed after its rename.
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(base), target)
		}
		base = filepath.Clean(target)
	}
	parent, name := filepath.Split(base)
	entries, err := os.ReadDir(cmp.Or(parent, "."))
	if err != nil {
		return nil // NB: no parent to read: no tombs either, and Open says what is wrong
	}
	var tombs []string
	for _, e := range entries {
		if num, ok := strings.CutPrefix(e.Name(), name+tombPrefix); ok && e.IsDir() && num != "" && strings.Trim(num, "0123456789") == "" {
			tombs = append(tombs, filepath.Join(parent, e.Name()))
		}
	}
	return tombs
}

// sweepTombs removes what Drops of dir killed after their rename left
// (dir.dropped-N: the whole index, texts included, which nothing else
// would ever remove), and returns how many it removed. A tomb whose lock
// a process holds is a Drop still running (before it closes the index),
// and is left to it; so is a directory of that name that holds a file
// no index has (Drop's own rule).
func sweepTombs(dir string) (removed []string, _ error) {
	for _, tomb := range tombsOf(dir) {
		names, err := os.ReadDir(tomb)
		if err != nil || slices.ContainsFunc(names, func(n os.DirEntry) bool { return !indexFile(n.Name()) }) {
			continue // not an index's files only: not Drop's to remove
		}
		// NB: by its resolved path, as every handle locks its directory
		// (Open): by the name found, a tomb open in this process under
		// its resolved one was taken for free (a read-through's RT7-4).
		lock, err := pebble.LockDirectory(fspath.Resolve(tomb), vfs.Default)
		if err != nil {
			continue // a Drop running
		}
		lock.Close()
		if err := os.RemoveAll(tomb); err != nil {
			return removed, fmt.Errorf("lshdb: removing %s, what a drop of %s that was stopped left: %w", tomb, dir, err)
		}
		removed = append(removed, tomb)
	}
	return removed, nil
}

// dropLeftovers deletes the keys of a Redis index name that has no
// manifest (what writers left after a Drop), or returns ErrNotExist when
// it holds none.
func dropLeftovers(ctx context.Context, u string) error {
	var n int64
	flushed := false // a try's Flush failed, maybe part done
	err := retryTransient(ctx, slog.Default(), "dropping the index's keys", func() error {
		s, err := rediskv.Open(ctx, u)
		if err != nil {
			if err = redisErr(err); !errors.Is(err, ErrBackend) && !errors.Is(err, ErrAccessDenied) {
				err = fmt.Errorf("%w: %w", ErrBackend, err)
			}
			err = fmt.Errorf("opening %s: %w", rediskv.Redact(u), err)
			if !errors.Is(err, rediskv.ErrMasterDown) {
				// NB: no node answers: the URL is wrong, or the
				// cluster down, which no retry gets past soon.
				err = permanent{err}
			}
			return err
		}
		defer s.Close()
		if dropHook != nil {
			if err := dropHook(s); err != nil {
				flushed = true
				return err
			}
		}
		m, err := s.Flush(ctx)
		n += m
		if err != nil {
			flushed = true
		}
		return redisErr(err)
	})
	if err != nil {
		return err
	}
	if n == 0 && !flushed {
		// NB: a try that failed may have deleted keys, its answer lost:
		// the keys were there, and are gone (a read-through, RT5-4).
		return fmt.Errorf("%w: %s", ErrNotExist, rediskv.Redact(u))
	}
	return nil
}

// dropHook, when a test sets it, runs before each try of a Redis index's
// Drop (and of its leftovers'), with the try's store: an error it
// returns is the try's.
var dropHook func(*rediskv.Store) error

// permanent is an error that retryTransient returns at once, as it is.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retryTransient calls f, and again while it fails in a way a retry may
// get past (Transient), for up to redisOpenRetry, saying so to logger
// (retryLog). A permanent error of f ends it at once.
func retryTransient(ctx context.Context, logger *slog.Logger, what string, f func() error) error {
	rl := retryLog{logger: logger, what: what, now: time.Now}
	err := retry.Do(ctx, retry.Policy{
		First: 100 * time.Millisecond, Max: 2 * time.Second, Limit: redisOpenRetry,
		Again: func(err error) bool {
			var p permanent
			return !errors.As(err, &p) && Transient(err)
		},
		Waiting: rl.waiting,
	}, f)
	var p permanent
	var gaveUp *retry.GaveUp
	var stopped *retry.Interrupted
	switch {
	case errors.As(err, &gaveUp):
		return fmt.Errorf("%w (tried again for %v)", gaveUp.Err, gaveUp.After.Round(time.Second))
	case errors.As(err, &stopped):
		return fmt.Errorf("%w (while a failed Redis call was tried again: %v)", stopped.Cause, stopped.Err)
	case errors.As(err, &p):
		return p.error
	}
	return err
}

// retryLog says that a call failed on Redis and is tried again: the
// first failure, then a failure of another kind, or one every
// retryLogEvery, with the tries not said since the last line (tries).
// NB: a line each try, a read-only command on a cluster with a master
// down and no replica wrote about 30 identical lines in its minute of
// tries (a review of Redis, RC-5).
type retryLog struct {
	logger *slog.Logger
	what   string
	now    func() time.Time
	last   time.Time // of the last line
	said   string    // the error of the last line
	tries  int       // since the last line
}

// retryLogEvery is how often retryLog repeats a failure of one kind.
const retryLogEvery = 10 * time.Second

func (l *retryLog) waiting(err error, wait time.Duration) {
	l.tries++
	now, msg := l.now(), err.Error()
	if msg == l.said && now.Sub(l.last) < retryLogEvery {
		return
	}
	l.logger.Warn("lshdb: "+l.what+" failed on Redis, a master failing over maybe; trying again", "err", err, "after", wait, "tries", l.tries)
	l.last, l.said, l.tries = now, msg, 0
}

// redisBackup is Backup on Redis: the live documents copied, a chunk of
// records per round trip, into a new Pebble index built beside dir and
// renamed to it. The caller holds db.mu for reading.
func (db *DB) redisBackup(ctx context.Context, dir string, verify bool) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	fsys := db.opts.FS
	if err := fsys.MkdirAll(fsys.PathDir(dir), 0o755); err != nil {
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	tmp, release, err := db.backupTemp(dir)
	if err != nil {
		return err
	}
	defer release()
	p := db.Params()
	o := Options{Threshold: p.Threshold, Recall: p.Recall, NumPerm: p.NumPerm, Scheme: p.Scheme, Seed: p.Seed,
		Shingle: p.Shingle, ShingleSize: p.ShingleSize, Bag: p.Bag, Normalization: p.Normalization,
		StopWords: p.StopWords, Storage: p.Storage, StoreText: p.StoreText, MaxDocBytes: db.opts.MaxDocBytes,
		MemTableSize: db.opts.MemTableSize, NoSync: true, ExpirySweep: -1, Logger: db.opts.Logger, fs: db.opts.fs, clock: db.opts.clock,
		origin: db.man.Instance}
	out, err := Open(tmp, &o)
	if err != nil {
		return fmt.Errorf("lshdb: backup: creating the copy: %w", err)
	}
	done := false
	defer func() {
		if !done {
			out.Close()
			fsys.RemoveAll(tmp)
		}
	}()
	want, got := db.Params(), out.Params()
	want.FormatVersion, got.FormatVersion = 0, 0
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("lshdb: backup: the copy's parameters %+v are not the index's %+v", got, want)
	}
	live, err := db.rkv.Live(ctx)
	if err != nil {
		return redisErr(err)
	}
	prog := progressOf(ctx)
	defer prog.end()
	prog.phase(1, 1, "copying documents", int64(len(live)))
	nums := make([]uint64, 0, redisLoadBatch)
	for start := 0; start < len(live); start += redisLoadBatch {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		chunk := live[start:min(len(live), start+redisLoadBatch)]
		nums = nums[:0]
		for _, x := range chunk {
			nums = append(nums, x.Num)
		}
		// NB: the buckets as stored with each record: deriving them again
		// re-shingles every text (text mode), which took most of a copy.
		recs, buckets, err := db.rkv.RecordsAndBuckets(ctx, nums)
		if err != nil {
			return redisErr(err)
		}
		at, cur, err := db.replacedNow(ctx, chunk, recs)
		if err != nil {
			return redisErr(err)
		}
		if len(at) > 0 {
			newer, newerKeys, err := db.rkv.RecordsAndBuckets(ctx, cur)
			if err != nil {
				return redisErr(err)
			}
			for k, i := range at {
				if newer[k] != nil {
					nums[i], recs[i], buckets[i] = cur[k], newer[k], newerKeys[k]
				}
			}
		}
		now := db.now().UnixNano()
		preps := make([]prepared, 0, len(recs))
		for i, r := range recs {
			if r == nil {
				continue // deleted since the ids were listed
			}
			view, err := codec.ParseDocView(r)
			if err != nil {
				return classify(fmt.Errorf("doc %d: %w", nums[i], err))
			}
			if compaction.Expired(view.Expires, now) {
				continue
			}
			keys := buckets[i]
			if len(keys) != db.bands.B {
				return fmt.Errorf("%w: doc %d has %d band buckets, the index %d bands", ErrCorrupt, nums[i], len(keys), db.bands.B)
			}
			preps = append(preps, prepared{id: string(view.ID), record: r, keys: keys, expires: view.Expires})
		}
		out.wmu.Lock()
		_, _, err = out.writeLockedCount(preps, &WriteOptions{NoSync: true})
		out.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("lshdb: backup: writing the copy: %w", err)
		}
		prog.add(int64(len(chunk)))
	}
	// NB: the copy's writes were not synced one by one: its memtables
	// are flushed to synced tables before it is closed and renamed.
	if err := out.pdb.Flush(); err != nil {
		return classify(fmt.Errorf("lshdb: backup: flushing the copy: %w", err))
	}
	done = true
	if err := out.Close(); err != nil {
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: closing the copy: %w", err)
	}
	if verify {
		if err := db.verifyBackup(ctx, tmp, dir); err != nil {
			return err
		}
	}
	if err := fsys.Rename(tmp, dir); err != nil {
		fsys.RemoveAll(tmp)
		return fmt.Errorf("lshdb: backup: %w", err)
	}
	if err := syncDir(fsys, fsys.PathDir(dir)); err != nil {
		return fmt.Errorf("lshdb: backup: syncing %s: %w", fsys.PathDir(dir), err)
	}
	return nil
}

// indexFile reports whether name, in an index's directory, is one of the
// index's files: Pebble's (tables, blob files, write-ahead logs, the
// manifest and its markers, options, the lock, temporary files) or
// lshdb's own (an interrupted load's or pairs run's, the socket of a
// serving owner and its private binding directories).
func indexFile(name string) bool {
	switch {
	case name == "LOCK", name == "CURRENT", name == loadTmpDir, isPairsRunDir(name), name == codec.BackupStampFile:
		return true
	case name == "lshdb.sock", strings.HasPrefix(name, ".lshdb-sock-"), name == "lshdb.stopping":
		// NB: httpapi's SocketName and its binding directories (db
		// cannot import httpapi, which imports db), and the file of a
		// serve that is stopping (cmd/lshdb).
		return true
	case name == ".DS_Store", name == "Thumbs.db", name == "desktop.ini":
		// NB: what a file browser leaves in a folder it showed: not
		// the user's data, and no reason to refuse a drop.
		return true
	case strings.HasPrefix(name, "MANIFEST-"), strings.HasPrefix(name, "OPTIONS-"), strings.HasPrefix(name, "marker."):
		return true
	case strings.HasPrefix(name, damagedLogPrefix):
		// NB: lshdb's copies of a damaged log or options file (and a
		// log's copy half made): drop refused an index that held one as
		// not an index (a maintainer's review).
		return true
	case strings.HasSuffix(name, ".dbtmp") && (strings.HasPrefix(name, "CURRENT.") || strings.HasPrefix(name, "temporary.")):
		return true
	}
	// NNNNNN.sst, NNNNNN.blob, NNNNNN.log and a failover log NNNNNN-NNN.log.
	num, ext, ok := strings.Cut(name, ".")
	if !ok || num == "" {
		return false
	}
	switch ext {
	case "sst", "blob":
		return allDigits(num)
	case "log":
		n, k, two := strings.Cut(num, "-")
		return allDigits(n) && (!two || allDigits(k))
	}
	return false
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quoteAll quotes each name (%q: a control character cannot hide).
func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return q
}
