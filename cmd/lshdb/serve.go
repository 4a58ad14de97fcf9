package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/db/httpapi/metrics"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/lockholder"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

// tokenFromFile reads a bearer token from the first line of the file
// path, which flag names, and reports whether other users may read the
// file. NB: its first line, without the spaces around it (as the server
// compares a token): "s3cret \n" or a second line made a token no
// request matched.
func tokenFromFile(flag, path string) (token string, readable bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", flag, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if token = strings.TrimSpace(line); token == "" {
		return "", false, usagef("%s %s has no token on its first line", flag, path)
	}
	fi, err := os.Stat(path)
	return token, err == nil && fi.Mode().Perm()&0o044 != 0, nil
}

// tokenFromEnv returns the bearer token of the environment variable name,
// "" if it is unset or empty. NB: trimmed, as a request's token is (a
// variable set from a file keeps its line end).
func tokenFromEnv(name string) (string, error) {
	env := os.Getenv(name)
	if env == "" {
		return "", nil
	}
	if token := strings.TrimSpace(env); token != "" {
		return token, nil
	}
	return "", usagef("%s is white space alone: give a token, or unset it", name)
}

// serveOptions are lshdb serve's flags.
type serveOptions struct {
	addr, token, backupRoot, logFormat     string
	logLevel                               slog.Level
	tokenFile                              string
	readTokenFile, readToken               string
	readTokenFileReadable                  bool
	tokenOnCommandLine                     bool
	tokenFileReadable                      bool // by its group or every user
	maxBody, maxInFlightBytes              int64
	maxTextBytes                           int64
	maxBatch, maxInFlight, maxMatches      int
	maxRuns                                int
	maxScans                               int
	maxSpoolBytes                          int64
	maxConns                               int
	defaultMaxConns                        int  // each listener's own bound, where --max-connections is not given (connsBound); 0: none
	connsDefault                           bool // the listeners take connsBound's bound
	readOnly                               bool // --read-only
	readTimeout, writeTimeout, idleTimeout time.Duration
	queryTimeout                           time.Duration
	shutdownTimeout                        time.Duration
	purgeEvery                             time.Duration
	// memoryLimit is the process's cgroup memory limit (containerMemory),
	// 0 for none.
	memoryLimit int64
}

// containerMemory returns the memory limit of the process's cgroup (a
// container's, a systemd unit's MemoryMax=), or 0 where none is set or it
// cannot be read (systems other than Linux).
var containerMemory = func() int64 {
	l, err := memlimit.FromCgroup()
	if err != nil || l == 0 || l > math.MaxInt64/2 {
		return 0
	}
	return int64(l)
}

// defaultMaxConns is serve's --max-connections: none.
//
// NB: a limit counts idle keep-alive connections too, and a connection
// over it waits until one has been idle or silent 2 s (connLimiter),
// answered by nothing meanwhile: with 512 by default (and a wait until
// one closed),
// a client's pool of idle connections made the next client (a liveness
// probe, an attaching command, told to kill a "stuck" owner) time out (a
// maintainer review's K11). An operator sets one knowing the clients.
const defaultMaxConns = -1

// connsBound is the bound on each listener's connections when
// --max-connections is not given, inUse the descriptors the process holds
// once the index is open and listeners how many listeners there are (the
// socket, the TCP address): the descriptors left after a reserve for the
// index's growth (fdReserve), shared by the listeners and the index (a
// share each), at least 16, at most 4,096 (far above a client's pool of
// keep-alive connections).
//
// NB: with no bound, 20,000 connections to the TCP port, each asking
// /healthz (which needs no token) and then idle, took every descriptor
// the process had: the owner's own socket accepted nothing, and a put
// failed inside Pebble, which could not open a table (a security
// review). Half of every descriptor did the same where the process may
// have few (160: the index held 81, and 200 idle connections left Pebble
// none, an SRE's SR1). The socket had no bound, as only this user
// reaches it: one client of this user that left its connections open
// (500 of them, each with a body unfinished) took every descriptor, TCP
// went unanswered and Pebble retried its flush in a loop (an operator's
// soak review, O1). With one listener, half of those left, as before.
var connsBound = func(inUse, listeners int) int {
	return min(4096, max(16, (openFileLimit()-inUse-fdReserve)/(listeners+1)))
}

// fdReserve is the descriptors kept from the listeners' connections
// beyond those the process holds at start: the tables the index opens as
// it grows (Pebble keeps up to 1,000 open), its logs.
const fdReserve = 256

// fewFiles is the bound on open files below which serve warns at start:
// Pebble alone keeps up to 1,000 tables open.
const fewFiles = 2048

// serving, when set (by tests), is called once serve listens, with the
// socket path and the TCP URL ("" without --addr).
var serving func(sock, tcp string)

func (a *app) serveCmd() *cobra.Command {
	var so serveOptions
	var logLevel string
	c := &cobra.Command{
		Use: "serve --db DIR [--addr HOST:PORT] [--token T]",
		Example: `  # Serve an index to the processes of this user, on DIR/lshdb.sock
  lshdb serve --db idx

  # Also on a TCP port, with a bearer token (required off loopback)
  LSHDB_TOKEN=s3cret lshdb serve --db idx --addr 0.0.0.0:7070`,
		Short: "Own an index and serve its API over HTTP/JSON (Unix socket, optionally TCP)",
		Long: `Own an index and serve the library's API over HTTP/JSON (its OpenAPI description: GET /v1/openapi.yaml, or db/httpapi/openapi.yaml in the source):
always on the Unix socket DIR/lshdb.sock (mode 0600: this user only), and on
TCP when --addr is given. A non-loopback --addr needs --token (or the
LSHDB_TOKEN environment variable): every request but /healthz must then carry
"Authorization: Bearer TOKEN". serve speaks plain HTTP, not TLS: off
loopback, put a TLS-terminating proxy in front (it warns at start).
/metrics serves Prometheus metrics; one line per request of the API (not
/metrics, which scrapers poll) is logged on stderr.

An index on Redis (--db redis+cluster://…) has no directory: it is served on
--addr only, which it then needs; any number of servers may serve it at once.

SIGTERM, SIGINT or SIGHUP (unless started with it ignored, as by nohup)
stops accepting requests, lets those in flight finish (up to
--shutdown-timeout, then cancels them), closes the index and exits 0.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.needDB(); err != nil {
				return err
			}
			// NB: a container's memory (its cgroup's limit) sizes the
			// defaults: a 57 MB put, under the defaults' 64 MiB of text in
			// flight (about 35x that in memory), OOM-killed a server in a
			// 1 GiB container, which 8 MiB kept alive (an SRE's SR2).
			so.memoryLimit = containerMemory()
			if so.memoryLimit > 0 && !c.Flags().Changed("max-in-flight-bytes") && so.maxInFlightBytes > 0 {
				so.maxInFlightBytes = min(so.maxInFlightBytes, max(1<<20, so.memoryLimit/128))
			}
			serveMemoryLimit(so.maxInFlightBytes, so.memoryLimit)
			var err error
			switch {
			case so.token != "" && so.tokenFile != "":
				return usagef("give --token or --token-file, not both")
			case so.tokenFile != "":
				if so.token, so.tokenFileReadable, err = tokenFromFile("--token-file", so.tokenFile); err != nil {
					return err
				}
			case so.token != "":
				so.tokenOnCommandLine = true
				if so.token = strings.TrimSpace(so.token); so.token == "" {
					return usagef("--token is white space alone: give a token, or no --token")
				}
			default:
				if so.token, err = tokenFromEnv("LSHDB_TOKEN"); err != nil {
					return err
				}
			}
			// NB: a second token for the clients that only read (a web
			// application's), so that theirs cannot delete the index (a
			// Python client user's PY4): in a file or the environment,
			// not on a command line every user sees.
			if so.readTokenFile != "" {
				so.readToken, so.readTokenFileReadable, err = tokenFromFile("--read-token-file", so.readTokenFile)
			} else {
				so.readToken, err = tokenFromEnv("LSHDB_READ_TOKEN")
			}
			if err != nil {
				return err
			}
			switch {
			case so.readToken != "" && so.token == "":
				return usagef("a read-only token (--read-token-file, LSHDB_READ_TOKEN) needs the server's own token (--token, --token-file or LSHDB_TOKEN): without it every request may write")
			case so.readToken != "" && so.readToken == so.token:
				return usagef("the read-only token is the server's own token: give it another, or none")
			}
			if so.addr != "" {
				_, port, err := net.SplitHostPort(so.addr)
				if err == nil {
					// NB: a port out of range was found by the listen, after
					// the open, as a plain error (a bad-input review, B9).
					_, err = net.LookupPort("tcp", port)
				}
				if err != nil {
					return usagef("--addr %s: not a TCP address, want HOST:PORT (127.0.0.1:7070, or :7070 for every interface): %v", escControls(so.addr), err)
				}
			}
			if so.addr != "" && so.token == "" && !loopback(so.addr) {
				return usagef("--addr %s listens beyond this machine: give --token (or LSHDB_TOKEN), or a loopback address (127.0.0.1:PORT)", so.addr)
			}
			if so.logFormat != "text" && so.logFormat != "json" {
				return usagef("--log-format must be text or json, not %q", so.logFormat)
			}
			if err := so.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
				return usagef("--log-level must be debug, info, warn or error, not %q", logLevel)
			}
			if so.maxBody == 0 || so.maxBody < -1 {
				return usagef("--max-body %d: give a number of bytes, or -1 for no limit", so.maxBody)
			}
			if so.maxRuns == 0 || so.maxRuns < -1 {
				return usagef("--max-runs %d: give a number of runs, or -1 for no limit", so.maxRuns)
			}
			if so.maxSpoolBytes == 0 || so.maxSpoolBytes < -1 {
				return usagef("--max-spool-bytes %d: give a number of bytes, or -1 for no spool files", so.maxSpoolBytes)
			}
			if so.maxScans == 0 || so.maxScans < -1 {
				return usagef("--max-scans %d: give a number of scans, or -1 for no limit", so.maxScans)
			}
			if so.maxMatches == 0 || so.maxMatches < -1 {
				return usagef("--max-matches %d: give a number of matches, or -1 for no limit", so.maxMatches)
			}
			if so.maxTextBytes == 0 || so.maxTextBytes < -1 {
				return usagef("--max-text-bytes %d: give a number of bytes, or -1 for no limit", so.maxTextBytes)
			}
			if so.maxBatch == 0 || so.maxBatch < -1 {
				return usagef("--max-batch %d: give a number of documents, or -1 for no limit", so.maxBatch)
			}
			if so.maxInFlight == 0 || so.maxInFlight < -1 {
				return usagef("--max-in-flight %d: give a number of documents, or -1 for no limit", so.maxInFlight)
			}
			if so.maxInFlightBytes == 0 || so.maxInFlightBytes < -1 {
				return usagef("--max-in-flight-bytes %d: give a number of bytes, or -1 for no limit", so.maxInFlightBytes)
			}
			if so.maxConns == 0 || so.maxConns < -1 {
				return usagef("--max-connections %d: give a number of connections, or -1 for no limit", so.maxConns)
			}
			// NB: counted once the index is open (serve), from the
			// descriptors left to the process.
			so.connsDefault = !c.Flags().Changed("max-connections")
			for _, d := range []struct {
				flag string
				v    time.Duration
			}{{"read-timeout", so.readTimeout}, {"write-timeout", so.writeTimeout}, {"query-timeout", so.queryTimeout}, {"idle-timeout", so.idleTimeout}, {"shutdown-timeout", so.shutdownTimeout}} {
				if d.v < 0 {
					// NB: taken silently, a negative query timeout as none
					// (a bad-input review, B11).
					return usagef("--%s %v: give a duration, 0 or more", d.flag, d.v)
				}
			}
			if so.purgeEvery != 0 && so.purgeEvery < time.Second {
				return usagef("--purge-every %v: give a duration of a second or more, or 0 for never", so.purgeEvery)
			}
			return a.serve(&so)
		},
	}
	fs := c.Flags()
	fs.StringVar(&so.addr, "addr", "", "also listen on this TCP address (HOST:PORT); default: the Unix socket only")
	fs.StringVar(&so.token, "token", "", "bearer token required on every request but /healthz (default: $LSHDB_TOKEN); every local user sees a command line: prefer LSHDB_TOKEN or --token-file")
	fs.StringVar(&so.tokenFile, "token-file", "", "read the bearer token from this file (its first line)")
	fs.StringVar(&so.readTokenFile, "read-token-file", "", "read a second bearer token from this file (its first line; default: $LSHDB_READ_TOKEN), which may only read: queries, gets, pairs, clusters, stats, check; a write or maintenance request with it gets 403 forbidden (for clients that only query; needs --token)")
	fs.Int64Var(&so.maxBody, "max-body", httpapi.DefaultMaxBodyBytes, "largest request body in bytes (413 beyond; for put-if-new: each document; -1: no limit)")
	fs.IntVar(&so.maxBatch, "max-batch", httpapi.DefaultMaxBatch, "most documents (queries) in one put or query/many request (413 beyond; -1: no limit)")
	fs.IntVar(&so.maxScans, "max-scans", httpapi.DefaultMaxScans, "most scans (GET /v1/scan: an attached export) reading the index at once, each read ahead of its client into a spool beside the index so that a slow client holds no snapshot (more wait; -1: no limit)")
	fs.Int64Var(&so.maxSpoolBytes, "max-spool-bytes", httpapi.DefaultMaxSpoolBytes, "most bytes of the spool files of the scans and pairs streams, together (beyond it, or at the disk reserve, a stream is made as its client reads it, holding its snapshot or its run; -1: no spool files)")
	fs.IntVar(&so.maxRuns, "max-runs", httpapi.DefaultMaxRuns, "most runs over the whole index at once: pairs and clusters, each with its memory budget, and stats, buckets and check (more wait; -1: no limit)")
	fs.IntVar(&so.maxMatches, "max-matches", httpapi.DefaultMaxMatches, "most matches one query or query/many request answers, after its limit (400 beyond, saying so; -1: no limit)")
	fs.Int64Var(&so.maxTextBytes, "max-text-bytes", httpapi.DefaultMaxTextBytes, "most bytes of stored text one query or query/many request with with_text answers (400 beyond, saying so; -1: no limit)")
	fs.IntVar(&so.maxInFlight, "max-in-flight", httpapi.DefaultMaxInFlight, "most documents (queries) of all requests worked on at once; others wait (-1: no limit)")
	fs.Int64Var(&so.maxInFlightBytes, "max-in-flight-bytes", httpapi.DefaultMaxInFlightBytes, "most bytes of text of all requests worked on at once (a document takes about 35x its text in memory while it is signed); others wait (-1: no limit; under a cgroup memory limit, as in a container, the default is at most 1/128 of it)")
	fs.IntVar(&so.maxConns, "max-connections", defaultMaxConns, "most connections open at once on each listener (the socket, the TCP address), idle keep-alive ones included: at the bound the next takes the place of the one idle or silent longest once it has waited 2 s, and while every one has a request in progress or waited less it waits, answered by nothing (a client sees a timeout if that lasts); a request waiting for others' work holds its body, so this bounds the memory they take (-1: no limit; not given: on each listener, the descriptors left once the index is open, less 256, shared by the listeners and the index: a half with one listener, a third with two, from 16 to 4096)")
	fs.DurationVar(&so.readTimeout, "read-timeout", time.Minute, "time a client has to send a request, body included (for the streams, put-if-new and load: each document, so a slow load holds other writers up as long as it lasts); its header block has at most 10s, whatever this is (0: no bound but the header's)")
	fs.DurationVar(&so.writeTimeout, "write-timeout", httpapi.DefaultWriteTimeout, "time a client has to take each part of an answer (0: no bound)")
	fs.DurationVar(&so.queryTimeout, "query-timeout", 0, "stop a query (or a batch of queries) that runs longer than this and answer 504 timeout (default: none; a query of a document that shares buckets with many others, such as boilerplate, may take seconds of every core)")
	fs.DurationVar(&so.idleTimeout, "idle-timeout", 2*time.Minute, "time an idle keep-alive connection is kept (0: --read-timeout's, or no bound when that is 0); a client, or a proxy, that keeps its connections idle longer may send a request on one just as the server closes it (the Go client keeps them half this, which /v1/params gives)")
	fs.DurationVar(&so.purgeEvery, "purge-every", time.Hour, "how often to delete the posting lists that deletes and upserts emptied (as lshdb purge does, while requests go on, skipped when no document was removed since; 0: never); no effect on Redis")
	fs.DurationVar(&so.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM, SIGINT or SIGHUP, time given to requests in flight before they are cancelled (then up to 10s more for them to end)")
	fs.BoolVar(&so.readOnly, "read-only", false, "open the index read-only and serve its reads: every write or maintenance request that writes answers 403 read_only (for an index on a full disk or a read-only filesystem, which a writable open refuses; on one, serve makes no socket there and needs --addr)")
	fs.StringVar(&so.backupRoot, "backup-root", "", "POST /v1/backup may write only under this directory, where the way from / to a backup's parent belongs to this user or root and no one else may write (default: anywhere through the socket, nowhere over TCP)")
	fs.StringVar(&so.logFormat, "log-format", "text", "request log format on stderr: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "least level of the lines logged on stderr: info (a line a request; a /healthz answered ok at debug), warn (only requests with a wrong token, cut streams and server errors, and the warnings), error, or debug; the lines that say the server is serving (its addresses), stopping and stopped are logged at every level")
	return c
}

// holderPoll is how often a serve waiting for a command that holds the
// index looks again: the wait may last hours.
const holderPoll = 500 * time.Millisecond

// loopback reports whether addr (HOST:PORT) listens on loopback
// interfaces only. An empty host listens on every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openOptions are the options serve opens the index with: writable, or
// with --read-only read-only (no purge then: it writes).
func (so *serveOptions) openOptions(a *app, log *slog.Logger) *db.Options {
	if so.readOnly {
		return &db.Options{MustExist: true, ReadOnly: true, Logger: log}
	}
	return a.writeOptions(&db.Options{MustExist: true, Logger: log, PurgeEvery: so.purgeOption()})
}

// purgeOption is --purge-every as Options.PurgeEvery: 0, never, is
// negative there (0 is its default, an hour).
func (so *serveOptions) purgeOption() time.Duration {
	if so.purgeEvery == 0 {
		return -1
	}
	return so.purgeEvery
}

func (a *app) serve(so *serveOptions) error {
	// NB: a line a request at info, the default: 1.3 GB a day at 76
	// requests a second (an SRE's review), which --log-level warn spares.
	//
	// The server's life (waiting, serving, stopping, stopped) is logged
	// at every level: at warn, the serving line, the only one to name
	// the address of --addr HOST:0, was left out with the requests'.
	lifeLevel := min(so.logLevel, slog.LevelInfo)
	var lh slog.Handler = slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lifeLevel})
	if so.logFormat == "json" {
		// NB: a duration in JSON is slog's integer nanoseconds, which no
		// one reads as such: milliseconds, with the unit in the key.
		lh = slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: lifeLevel, ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
			if at.Value.Kind() == slog.KindDuration {
				return slog.Float64(at.Key+"_ms", float64(at.Value.Duration().Microseconds())/1000)
			}
			return at
		}})
	}
	life := slog.New(lh)
	lh = levelGate{lh, so.logLevel}
	log := slog.New(lh)
	// NB: main's "still stopping" note goes to the server's log, in its
	// format: it was a plain line amid JSON objects.
	stopLog.Store(life)
	defer stopLog.Store(nil)
	if so.logFormat == "json" {
		a.errLog = life
	}
	onRedis := db.IsRedisURL(a.dbDir)
	if onRedis && so.addr == "" {
		return usagef("an index on Redis has no directory for the Unix socket: give --addr HOST:PORT (any number of servers may serve it)")
	}
	// NB: the TCP address is taken before the index is opened, so that
	// it answers while serve waits for a command that holds the index
	// (waitingServer). Where it cannot be taken yet (a server stopping
	// still holds it), it is taken once the index has opened, as before.
	var early net.Listener
	if so.addr != "" {
		l, err := net.Listen("tcp", so.addr)
		switch {
		case err == nil:
			early = l
			defer l.Close() // NB: once the server has closed it, nothing
		case !errors.Is(err, syscall.EADDRINUSE):
			// NB: an address this host does not have, a port it may not
			// take: no wait mends it, and it was found only after the
			// wait (a read-through, R4).
			return err
		}
	}
	var waiting *waitingServer
	defer func() {
		if waiting != nil {
			waiting.stop()
		}
	}()
	d, err := db.Open(a.dbDir, so.openOptions(a, log))
	// NB: a holder that does not serve may be an owner starting (its
	// socket comes milliseconds after its lock) or closing, or a server
	// that says it is stopping: waited for as an attaching command waits
	// (heldWait). A second serve started beside a starting one was told
	// to kill it.
	//
	// A batch command that holds the index (an insert, which took the
	// index over when the serve before this one stopped; a build) is
	// waited for until it ends, however long: a serve restarted during a
	// nightly insert exited at once, as locked, and the service stayed
	// down (an operator's review, S1). A shell is not waited for: a
	// person's session may hold the index for days (a review, M2).
	waitedFor := 0 // the pid of the command waited for
	for held := newHeldWait(); errors.Is(err, db.ErrLocked); {
		pid, serving, owner := ownerHealth(a.dbDir)
		wait := false
		switch {
		case serving && owner != "" && owner != serveOwner && owner != shellOwner:
			if pid != waitedFor {
				waitedFor = pid
				attrs := []any{"holder", owner, "pid", pid, "db", a.dbDir}
				if early != nil {
					if waiting == nil {
						waiting = startWaiting(early, so, connsBound(openDescriptors(), 1), slog.NewLogLogger(lh, slog.LevelWarn))
					}
					waiting.setHolder(owner, pid)
					attrs = append(attrs, "tcp", "http://"+early.Addr().String())
				}
				life.Info("lshdb: waiting for the command that holds the index to end: it serves the index on its socket meanwhile; interrupt to stop waiting", attrs...)
			}
			wait = true
		case waitedFor != 0 && lockholder.PID(a.dbDir) == waitedFor:
			// NB: the command waited for holds the lock still, answering
			// or not: closing (its socket goes first, then a flush and
			// Pebble's close: seconds after a large insert), or slow to
			// answer. The 2 s of a handover's wait ended the serve (a
			// review, M1).
			wait = true
		case !held.again(a):
			// NB: a server, a shell, or a holder that does not serve,
			// after the handover's wait: a serve just signalled answers
			// for a moment before it says it is stopping (its socket
			// closes as it writes lshdb.stopping), and one restarted in
			// that moment failed at once, with the index left unserved
			// (a server operator's review, S1); held.again then waits for
			// the drain the stopping file announces.
			return lockedHint(err, a.dbDir)
		}
		if wait {
			held = newHeldWait() // NB: counted from the command's end
			select {
			case <-a.ctx.Done():
			case <-time.After(holderPoll):
			}
		}
		if a.ctx.Err() != nil {
			// NB: a signal stops serve with exit 0, as it does once it
			// serves: systemctl stop during the wait exited 143 and left
			// the unit failed (an operator's soak review, O3).
			life.Info("lshdb: stopped while waiting for the process that holds the index: nothing was served", "cause", context.Cause(a.ctx).Error(), "db", rediskv.Redact(a.dbDir))
			return nil
		}
		d, err = db.Open(a.dbDir, so.openOptions(a, log))
	}
	if err != nil && !so.readOnly && (errors.Is(err, db.ErrDiskFull) || errors.Is(err, db.ErrReadOnly)) {
		// NB: a server restarted on a full disk or a read-only
		// filesystem exited, and reads went down with the writes (an
		// SRE's SR3).
		return fmt.Errorf("%w (lshdb serve --read-only serves it for reads meanwhile: writes answered 403 read_only)", err)
	}
	if err != nil {
		return lockedHint(err, a.dbDir)
	}
	if waiting != nil {
		waiting.handOver()
		waiting = nil
	}
	// NB: the index is closed last, after the server has stopped, so that
	// requests in flight finish against an open index.
	defer d.Close()
	// NB: so that damage its background work meets makes serve exit 4
	// (app.finish), as every other command: it exited 0.
	a.opened = append(a.opened, d)
	if n := openFileLimit(); n < fewFiles {
		// NB: the connections, the socket's clients and Pebble's tables
		// share them; when they run out, Pebble's background work fails
		// and writes answer 500 (an SRE's SR1).
		life.Warn("lshdb: the process may open few files: the index's tables (up to 1,000 open at once), its logs and every connection share them; raise the limit (ulimit -n, systemd's LimitNOFILE=, a container's nofile) to 4096 or more, or bound the connections with --max-connections", "open_files_limit", n, "open_now", openDescriptors())
	}
	var listeners []net.Listener
	var unixL net.Listener // the socket's, if any
	sock := ""
	if !onRedis {
		os.Remove(stoppingPath(a.dbDir)) // NB: a killed server's, if any
		sock = httpapi.SocketPath(a.dbDir)
		var err error
		unixL, err = httpapi.ListenSocket(sock)
		switch {
		case err != nil && so.readOnly && (errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)):
			// NB: on a read-only filesystem no socket can be made in the
			// index's directory: served on TCP alone.
			if so.addr == "" {
				return fmt.Errorf("%w (the index's directory takes no new file, so no socket can be made there: give --addr to serve it on TCP)", err)
			}
			life.Warn("lshdb: no socket in the index's directory (its filesystem takes no new file): served on the TCP address alone", "err", err)
			sock = ""
		case err != nil:
			return err
		default:
			listeners = append(listeners, unixL)
		}
	}
	tcpAddr := ""
	if so.addr != "" {
		l := early
		if l == nil {
			var err error
			if l, err = net.Listen("tcp", so.addr); err != nil {
				for _, l := range listeners {
					l.Close()
				}
				return err
			}
		}
		listeners = append(listeners, l)
		tcpAddr = "http://" + l.Addr().String()
	}
	// NB: nothing bounded the requests waiting for --max-in-flight,
	// each holding its body decoded: twelve has requests of 500,000
	// ids took a server from 49 MB to 570 MB (an SRE review's H1).
	limiters := map[string]*connLimiter{}
	if so.connsDefault {
		so.defaultMaxConns = connsBound(openDescriptors(), len(listeners))
	}
	for i, l := range listeners {
		name := "socket"
		if tcpAddr != "" && i == len(listeners)-1 {
			name = "tcp"
		}
		switch {
		case so.maxConns > 0:
			limiters[name] = newConnLimiter(l, so.maxConns)
		case so.defaultMaxConns > 0:
			limiters[name] = newConnLimiter(l, so.defaultMaxConns)
		default:
			continue
		}
		limiters[name].log, limiters[name].name = log, name
		listeners[i] = limiters[name]
	}
	m := metrics.New(d)
	for name, l := range limiters {
		m.Registry().MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lshdb_http_connections", Help: "Connections open on a listener with a --max-connections bound, idle keep-alive ones included.", ConstLabels: prometheus.Labels{"listener": name}},
				func() float64 { return float64(l.open.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lshdb_http_connections_limit", Help: "The listener's --max-connections bound.", ConstLabels: prometheus.Labels{"listener": name}},
				func() float64 { return float64(cap(l.slots)) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lshdb_http_connections_reclaimed_total", Help: "Connections closed to make room for a new one at the --max-connections bound: idle keep-alive ones, or ones that sent no request, after 2 s.", ConstLabels: prometheus.Labels{"listener": name}},
				func() float64 { return float64(l.reclaimed.Load()) }))
	}
	mux := http.NewServeMux()
	api := httpapi.Handler(d, &httpapi.Options{Token: so.token, ReadToken: so.readToken, MaxBodyBytes: so.maxBody, MaxBatch: so.maxBatch, MaxMatches: so.maxMatches, MaxTextBytes: so.maxTextBytes, MaxRuns: so.maxRuns, MaxScans: so.maxScans, MaxSpoolBytes: so.maxSpoolBytes, MaxInFlight: so.maxInFlight, MaxInFlightBytes: so.maxInFlightBytes, WriteTimeout: apiWriteTimeout(so.writeTimeout), ReadTimeout: so.readTimeout, IdleTimeout: cmp.Or(so.idleTimeout, so.readTimeout), QueryTimeout: so.queryTimeout,
		BackupRoot: so.backupRoot, Owner: serveOwner, ServesReadOnly: so.readOnly, Logger: log, Hooks: m.Hooks()})
	mux.Handle("/", api)
	metricsOpts := &httpapi.Options{Token: so.token, ReadToken: so.readToken, Logger: log, Hooks: m.Hooks()}
	mux.Handle("GET /metrics", httpapi.RequireTokens(metricsOpts, "metrics", m.Handler()))
	mux.Handle("/metrics", httpapi.RequireTokens(metricsOpts, "metrics", httpapi.MethodNotAllowed(metricsOpts, "metrics", "GET, HEAD")))
	// NB: the requests still in their handler: at the shutdown timeout
	// the server cancels them and returns, and a cancelled load's log
	// line (and its metrics) came after "stopped", or never.
	var inHandler atomic.Int64
	// waitHandlers waits until no request is in its handler, for up to d.
	waitHandlers := func(d time.Duration) {
		for end := time.Now().Add(d); inHandler.Load() > 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	base, cutRequests := context.WithCancelCause(context.Background())
	defer cutRequests(nil)
	srv := &http.Server{
		BaseContext: func(net.Listener) context.Context { return base },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inHandler.Add(1)
			defer inHandler.Add(-1)
			// NB: a handler that waits for its body does not see its
			// context end: at the shutdown timeout its read is ended
			// too, so that it answers 503 shutdown before the server
			// closes the connection (it was closed unanswered).
			fired := make(chan struct{})
			stop := context.AfterFunc(r.Context(), func() {
				defer close(fired)
				if errors.Is(context.Cause(r.Context()), httpapi.ErrShutdown) {
					_ = http.NewResponseController(w).SetReadDeadline(time.Now())
				}
			})
			defer func() {
				if !stop() {
					<-fired // NB: not after the handler returned
				}
			}()
			if p := r.URL.Path; p != "" && path.Clean(p) != p {
				// NB: the mux answers a path that is not clean ("//v1/docs",
				// a base URL ending in / joined to "/v1/docs") with a 307
				// and an HTML body, which some clients follow and resend
				// and others fail on: the API answers it (404 no_route, in
				// JSON, naming the path).
				api.ServeHTTP(w, r)
				return
			}
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: headerTimeout(so.readTimeout),
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
		ReadTimeout:       so.readTimeout,
		// NB: the API gives each write its own deadline (long answers
		// stream); this bounds what the API does not serve (/metrics).
		WriteTimeout: so.writeTimeout,
		IdleTimeout:  so.idleTimeout,
		ErrorLog:     slog.NewLogLogger(lh, slog.LevelWarn),
		ConnState:    connState,
	}
	served := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() { served <- srv.Serve(l) }()
	}
	attrs := []any{"db", rediskv.Redact(a.dbDir), "socket", sock, "pid", os.Getpid()}
	if tcpAddr != "" {
		attrs = append(attrs, "tcp", tcpAddr, "token", so.token != "", "read_token", so.readToken != "")
	}
	attrs = append(attrs, startupAttrs(d, so, !db.IsRedisURL(a.dbDir))...)
	life.Info("lshdb: serving", attrs...)
	if err := d.RoomToWrite(); errors.Is(err, db.ErrDiskFull) {
		log.Warn("lshdb: writes will be refused until there is room: reads are served", "err", err)
	}
	stopWatch := watchDamage(d, log, 5*time.Second)
	defer stopWatch()
	defer returnMemory(15*time.Second, idleMemory)()
	if so.tokenFileReadable {
		// NB: warned of on the command line, not in a file any user
		// could read.
		log.Warn("lshdb: the token file is readable by other users (chmod 600 it)", "file", so.tokenFile)
	}
	if so.readTokenFileReadable {
		log.Warn("lshdb: the read-only token file is readable by other users (chmod 600 it)", "file", so.readTokenFile)
	}
	if so.tokenOnCommandLine {
		log.Warn("lshdb: the token is on the command line, which every user of this machine may read (ps): give it in LSHDB_TOKEN or --token-file")
	}
	if a.redisPasswordInArgs {
		log.Warn("lshdb: the Redis password is on the command line (in --db), which every user of this machine may read (ps): give it in LSHDB_REDIS_PASSWORD, and --db without it")
	}
	if dirWritableByOthers(a.dbDir) {
		log.Warn("lshdb: the index's directory is writable by other users: one could put a socket of their own in place of lshdb.sock and take what the commands that attach send, the token included (chmod go-w the directory)", "dir", a.dbDir)
	}
	if so.backupRoot != "" {
		if err := fspath.Guarded(fspath.Resolve(so.backupRoot)); err != nil {
			log.Warn("lshdb: a backup directly under the backup root will be refused: "+err.Error()+": another user could redirect a backup out of it (make the directories from / to the root belong to this user or root, and writable by no one else)", "backup_root", so.backupRoot)
		}
	}
	if tcpAddr != "" && so.token == "" {
		// NB: the socket is the owner's alone (0600); a loopback port
		// without a token is every local user's, writes and backups
		// included.
		may := "read and write"
		if so.readOnly {
			may = "read"
		}
		log.Warn("lshdb: the TCP address has no token: every user of this machine may "+may+" the index (give --token or LSHDB_TOKEN)", "tcp", tcpAddr)
	}
	if tcpAddr != "" && !loopback(so.addr) {
		// NB: serve speaks plain HTTP; nothing said so, and the README's
		// https:// URL (a client's, through a proxy) read as if it could.
		log.Warn("lshdb: serving plain HTTP beyond this machine: the token and the texts cross the network unencrypted; put a TLS-terminating proxy (nginx, Caddy, a load balancer) in front, and have clients use its https:// URL", "tcp", tcpAddr)
	}
	for _, t := range []struct{ name, token string }{{"token", so.token}, {"read token", so.readToken}} {
		if tcpAddr != "" && t.token != "" && len(t.token) < minTokenBytes {
			// NB: a token of one character was taken without a word, and
			// a client may try thousands a second (a security review,
			// SEC-7).
			log.Warn(fmt.Sprintf("lshdb: the %s has %d bytes: a client of the TCP address may guess a short one (thousands of tries a second); make it %d or more random bytes (openssl rand -hex 16)", t.name, len(t.token), minTokenBytes), "tcp", tcpAddr)
		}
	}
	if serving != nil {
		serving(sock, tcpAddr)
	}
	var serveErr error
	select {
	case <-a.ctx.Done():
		// NB: said at once, so that an operator who sent SIGTERM sees it
		// taken while the requests in flight finish.
		life.Info("lshdb: stopping: requests in flight may finish", "cause", context.Cause(a.ctx).Error(), "within", so.shutdownTimeout)
	case serveErr = <-served:
	}
	if !onRedis {
		// NB: the socket goes with the listener, and the index stays
		// locked until the drain ends: a command that finds it so reads
		// this, waits for the drain instead of 2 s, and says what it
		// waits for (it said the owner "does not serve it", and to kill
		// it: a second signal, which cuts the drain; review O1).
		markStopping(a.dbDir, time.Now().Add(so.shutdownTimeout+stopSlack))
		defer os.Remove(stoppingPath(a.dbDir))
	}
	// Stop accepting, let requests in flight finish within the bound, then
	// cancel the rest (Close closes their connections: their contexts end).
	ctx, cancel := context.WithTimeout(context.Background(), so.shutdownTimeout)
	defer cancel()
	if unixL != nil {
		// NB: no more dials of the socket; those made are served (C1).
		httpapi.DrainSocket(ctx, unixL)
	}
	err = srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// NB: "cancelled" alone read as lost writes, where a put already
		// committing completed and was logged 200 after it (an SRE's
		// review): each request's own line says how it ended.
		log.Warn("lshdb: requests still running at the shutdown timeout are being cut: one already writing to the index may still complete; each request's own line says how it ended", "timeout", so.shutdownTimeout)
		cutRequests(httpapi.ErrShutdown)
		// NB: a moment for the handlers to answer 503 shutdown (their
		// body reads end with the cut), before Close ends their
		// connections: closed at once, no answer went out, and the log
		// said one had.
		waitHandlers(time.Second)
		err = srv.Close()
		// Their handlers see the cancellation and log the requests.
		waitHandlers(10 * time.Second)
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	if err = errors.Join(serveErr, err); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	life.Info("lshdb: stopped", "db", rediskv.Redact(a.dbDir))
	return nil
}

// levelGate passes on the records of its level and above (--log-level)
// to a handler that takes more (the server's life lines).
type levelGate struct {
	slog.Handler
	min slog.Level
}

func (g levelGate) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= g.min && g.Handler.Enabled(ctx, l)
}

func (g levelGate) WithAttrs(as []slog.Attr) slog.Handler {
	return levelGate{g.Handler.WithAttrs(as), g.min}
}

func (g levelGate) WithGroup(name string) slog.Handler {
	return levelGate{g.Handler.WithGroup(name), g.min}
}

// startupAttrs are what serve's first log line says of the index and the
// limits, so that a log shows what a server ran with: the version, the
// parameters, the documents, the reserve and the request limits, and on
// a directory index how often it purges (--purge-every does nothing on
// Redis, which leaves no list empty).
func startupAttrs(d *db.DB, so *serveOptions, dir bool) []any {
	p := d.Params()
	attrs := []any{"version", version(), "format", p.FormatVersion, "storage", p.Storage, "params", paramsLine(p)}
	if n, err := d.Count(); err == nil {
		attrs = append(attrs, "docs", n)
	}
	if m, err := d.Metrics(); err == nil {
		attrs = append(attrs, "disk_reserve", m.DiskReserve)
		if m.DiskFree >= 0 {
			attrs = append(attrs, "disk_free", m.DiskFree)
		}
	}
	if so.memoryLimit > 0 {
		attrs = append(attrs, "memory_limit", so.memoryLimit, "soft_memory_limit", debug.SetMemoryLimit(-1))
	}
	attrs = append(attrs, "max_body", so.maxBody, "max_batch", so.maxBatch, "max_matches", so.maxMatches, "max_text_bytes", so.maxTextBytes, "max_runs", so.maxRuns, "max_scans", so.maxScans, "max_spool_bytes", so.maxSpoolBytes, "max_in_flight", so.maxInFlight, "max_in_flight_bytes", so.maxInFlightBytes, "max_connections", so.maxConns)
	if so.defaultMaxConns > 0 {
		attrs = append(attrs, "max_connections_each", so.defaultMaxConns)
	}
	if so.readOnly {
		attrs = append(attrs, "read_only", true)
	} else if dir {
		attrs = append(attrs, "purge_every", so.purgeEvery.String())
	}
	return attrs
}

// watchDamage logs, once, the damage that d's background work meets
// (db.DB.Corruption), checking every interval until the returned stop is
// called: Pebble logs its background error, but an operator needs to
// read what it means for the server.
func watchDamage(d *db.DB, log *slog.Logger, every time.Duration) (stop func()) {
	return ticking(every, func() bool {
		if err := d.Corruption(); err != nil {
			log.Error("lshdb: the index met damage in the background: GET /healthz answers 503 and serve will exit 4 (damage); reads and writes go on where they can: stop the server and run lshdb check", "err", err)
			return false
		}
		return true
	})
}

// ticking runs f every interval on a goroutine of its own, until f
// returns false or stop is called.
func ticking(every time.Duration, f func() bool) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if !f() {
				return
			}
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}

// returnMemory gives the heap's memory back to the system, checked every
// interval, once the heap takes over idle bytes and twice what was live
// after the last time it did: the memory a burst of large documents took
// (a document takes about 35 times its text while it is signed). Until
// stop is called.
//
// NB: Go's scavenger returns free memory only after a garbage collection
// has lowered the heap's goal, and a server idle after a burst runs one
// only every 2 minutes: two puts of 30 MB left a server at 2.2 GB
// resident 150 s after they ended, with 208 MB of heap in use (a server
// operator's review, S4).
func returnMemory(interval time.Duration, idle uint64) (stop func()) {
	sample := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var live uint64 // after the last return
	return ticking(interval, func() bool {
		rtmetrics.Read(sample)
		if heap := sample[0].Value.Uint64() + sample[1].Value.Uint64(); heap > idle && heap > 2*live {
			debug.FreeOSMemory()
			rtmetrics.Read(sample)
			live = sample[2].Value.Uint64()
		}
		return true
	})
}

// idleMemory is the heap returnMemory lets a server keep.
const idleMemory = 512 << 20

// dirWritableByOthers reports whether dir (a directory, not a Redis URL)
// lets users other than its owner replace its entries: group or world
// writable, without the sticky bit. False where modes say nothing of it
// (Windows).
func dirWritableByOthers(dir string) bool {
	if runtime.GOOS == "windows" || db.IsRedisURL(dir) {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0
}

// serveMemoryLimit sets the server's soft memory limit from the texts it
// takes in flight (--max-in-flight-bytes): documents take about 35 times
// their text while they are prepared and written, so the default 64 MiB
// keeps a server near 2.2 GB, and the limit is 2.5 GiB; with no bound on
// them, none. GOMEMLIMIT overrides it.
//
// NB: serve kept the command's 768 MiB, below what its own defaults let
// in: two puts of 100,000 documents at once took 38.2 s against 20.2 s
// with no limit (the collector ran without pause), and queries beside
// them waited twice as long (an operator's review).
//
// Within a cgroup's memory limit (container, a limit of its own), the
// soft limit is at most three quarters of it, so that the collector works
// harder before the kernel kills the process.
func serveMemoryLimit(inFlightBytes, container int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if container > 0 {
		defer func() {
			debug.SetMemoryLimit(min(debug.SetMemoryLimit(-1), container/4*3))
		}()
	}
	if inFlightBytes == 0 {
		inFlightBytes = httpapi.DefaultMaxInFlightBytes
	}
	if inFlightBytes < 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	budget := int64(1 << 40) // NB: 18 times a huge bound overflowed
	if inFlightBytes < budget/18 {
		budget = 18 * inFlightBytes
	}
	raiseMemoryLimit(int(budget))
}

// minTokenBytes is the length under which serve warns that a token of
// its TCP address is short.
const minTokenBytes = 16

// headerTimeoutCap bounds the time a client has to send a request's
// header block, whatever --read-timeout is (a variable for the tests).
var headerTimeoutCap = 10 * time.Second

// headerTimeout is the http.Server's ReadHeaderTimeout for a read timeout
// of read: at most headerTimeoutCap, 0 included. NB: net/http reads a
// ReadHeaderTimeout of 0 as the ReadTimeout, and both 0 as no bound:
// --read-timeout 0 let a client trickle its headers for as long as it
// liked (an operator's review, SV-3).
func headerTimeout(read time.Duration) time.Duration {
	if read <= 0 {
		return headerTimeoutCap
	}
	return min(read, headerTimeoutCap)
}

// apiWriteTimeout is httpapi's Options.WriteTimeout for --write-timeout
// d: 0 is no bound, as for the server's own (httpapi reads 0 as its
// default, 30 s).
func apiWriteTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
