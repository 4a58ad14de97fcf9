package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"golang.org/x/sync/semaphore"
)

// DefaultMaxBodyBytes is the default Options.MaxBodyBytes: 65 MiB, one
// document at db's default MaxDocBytes (64 MiB) with room for its JSON.
const DefaultMaxBodyBytes = 65 << 20

// DefaultMaxBatch is the default Options.MaxBatch: 100,000 documents (or
// queries) in one request. A put of 100,000 small documents holds about
// 370 MB while it is prepared and written (3.7 KB a document, most of it
// its signature, twice: prepared and in the batch).
const DefaultMaxBatch = 100_000

// MaxHeaderBytes bounds the header of a request a server takes
// (http.Server.MaxHeaderBytes; net/http answers 431 past it): the API's
// own headers are a few hundred bytes, and a proxy's add a few more.
// NB: net/http's default is 1 MiB, which each connection could make the
// server hold before any token was seen: 1,000 connections without one,
// each sending 125 headers of 8,000 bytes, took a server from 567 MiB to
// 1,571 MiB (a security review, SEC2-3).
const MaxHeaderBytes = 32 << 10

// DefaultMaxRuns is the default Options.MaxRuns: one a core of a small
// server, each run using every core it has.
const DefaultMaxRuns = 2

// DefaultMaxScans is the default Options.MaxScans.
const DefaultMaxScans = 4

// DefaultMaxSpoolBytes is the default Options.MaxSpoolBytes: 1 GiB.
const DefaultMaxSpoolBytes = 1 << 30

// DefaultMaxMatches is the default Options.MaxMatches: a million matches,
// about 150 MB held and 75 MB of answer.
const DefaultMaxMatches = 1_000_000

// DefaultMaxTextBytes is the default Options.MaxTextBytes: 64 MiB of
// text in one answer, which holds about four times that while it is
// encoded.
const DefaultMaxTextBytes = 64 << 20

// DefaultMaxInFlight is the default Options.MaxInFlight: the documents of
// two batches of DefaultMaxBatch.
const DefaultMaxInFlight = 2 * DefaultMaxBatch

// DefaultMaxInFlightBytes is the default Options.MaxInFlightBytes: 64 MiB
// of text. NB: a document takes about 35 times its text in memory while
// it is shingled and signed (one of 42 MB took a server from 67 MB to 1.5
// GB, three at once to 4.4 GB); 64 MiB keeps a
// server's documents in flight near 2 GB.
const DefaultMaxInFlightBytes = 64 << 20

// DefaultWriteTimeout is the default Options.WriteTimeout.
const DefaultWriteTimeout = 30 * time.Second

// Options configure Handler. The zero value is a valid configuration.
type Options struct {
	// Token, when set, is the bearer token every request but /healthz
	// must carry (Authorization: Bearer TOKEN); others get 401. Default:
	// none (any request is served: for a Unix socket whose file mode
	// restricts who may connect, or a loopback port on a one-user host).
	// White space around it is not part of it, as around a request's:
	// a token read from a file or a variable with a line end still
	// matches; one of white space alone matches no request.
	Token string
	// ReadToken, when set beside Token, is a second bearer token that
	// may call the read operations alone (ReadOps): a request that
	// carries it and writes or maintains the index (put, delete,
	// put_if_new, load, repair, backup, purge, compact) gets 403
	// forbidden (ErrForbidden), and nothing is done. For a client that
	// only queries (a web application), so that its credential cannot
	// delete the index. Without Token it does nothing: every request is
	// served. It must differ from Token.
	ReadToken string
	// MaxBodyBytes bounds a request body. A request that announces a
	// larger one (Content-Length) is refused before its body is read; a
	// chunked one is cut off when it reaches the limit. Either way the
	// answer is 413 body_too_large, and no more than the limit is read.
	// A put-if-new stream is bounded per document instead (a dedup run
	// streams a whole corpus). Default: DefaultMaxBodyBytes; negative: no
	// limit.
	MaxBodyBytes int64
	// MaxBatch bounds the documents of one put (POST /v1/docs) and the
	// queries of one query/many: a larger batch is refused, whole, with
	// 413 batch_too_large (ErrBatchTooLarge) and nothing stored, its
	// documents counted as they are decoded. It bounds what one request
	// holds in memory beside its body: a document costs about 3.7 KB
	// while it is written, whatever its size (a 34 MB body of 800,000
	// small documents took the server to 3 GB). The ids of a has or a
	// delete, a few bytes each, are bounded by MaxBodyBytes alone (a
	// delete is atomic: it cannot be split); a put-if-new stream or a
	// load is not bounded by it (they go in groups, or through Load's
	// memory budget). Default: DefaultMaxBatch; negative: no limit.
	MaxBatch int
	// MaxMatches bounds the matches one query request answers (GET and
	// POST /v1/query; POST /v1/query/many, over all its queries): one
	// whose matches, after its limit, pass it is answered 400
	// invalid_options, saying so (db.QueryOptions.MaxMatches), holding
	// about the bound at most. On an index of near-identical documents
	// every query matches every document: 400 ids without a limit took
	// the server to 3 GB (a security review, SEC-1). Default:
	// DefaultMaxMatches; negative: no bound.
	MaxMatches int
	// MaxTextBytes bounds the bytes of stored text one query request
	// with with_text answers (over all the queries of a query/many): one
	// that would pass it is answered 400 invalid_options, saying so
	// (db.QueryOptions.MaxTextBytes). MaxMatches bounds the matches, not
	// their texts: one query/many of 20 ids on an index of near-copies of
	// a 17 KB text answered 697 MB and took the server to 3 GB (a security
	// review, SEC2-4). Default: DefaultMaxTextBytes; negative: no bound.
	MaxTextBytes int64
	// MaxRuns bounds the runs over the whole index the server makes at
	// once (GET /v1/pairs, /v1/pairs/groups and /v1/clusters, POST
	// /v1/clusters; GET /v1/stats, /v1/buckets and /v1/check, which read
	// every posting list): one more waits, in the order they came, until
	// one ends (or its client goes away). Each may hold its memory budget (up
	// to MaxPairsMemory) and spill to disk: six pairs runs of 1 GiB took
	// a server to 3.3 GB (a security review, SEC-3). Default:
	// DefaultMaxRuns; negative: no limit.
	MaxRuns int
	// MaxScans bounds the GET /v1/scan snapshots read at once: one more
	// waits, in the order they came, until one is read (or its client
	// goes away). A scan of a Pebble index reads its snapshot ahead of
	// its client into a spool, 256 KiB in memory and the rest in a file
	// in the index's directory (removed as it is made, so du does not
	// count it: it lives while the stream does), and releases the
	// snapshot, and its place, once read, however slowly the client
	// reads: a client reading 16 KB/s held a snapshot for the hour a 60
	// MB scan took, and four such scans beside a writer took the index
	// from 63 MB to 456 MB on disk (a review of serve, SV3-1). Default:
	// DefaultMaxScans; negative: no limit.
	MaxScans int
	// MaxSpoolBytes bounds the bytes of the spool files of the scans and
	// the pairs streams (GET /v1/pairs, /v1/pairs/groups: spooled so, a
	// pairs run gives its place among MaxRuns back once its pairs are
	// made), together,
	// and the files stop short of the index's disk reserve
	// (db.Options.DiskReserve): past either, a scan reads its snapshot as
	// its client takes the answer, holding it, as with no spool. An
	// answer with its sets (sets=true) is about 22 times the index's
	// bytes on disk, one without them about its texts'. Default:
	// DefaultMaxSpoolBytes; negative: no spool files.
	MaxSpoolBytes int64
	// MaxInFlight bounds the documents of the puts (and put-if-new
	// groups), the queries of the query/many requests and the ids of the
	// has requests the server prepares, writes and answers at once: a
	// request that would go over it waits, in the order they came, for
	// the ones before it to finish (or for its client to go away). NB: a waiting request holds its body,
	// decoded (bounded by MaxBodyBytes and MaxBatch): what bounds the
	// requests waiting is the server's connection limit, not this.
	// Default: DefaultMaxInFlight, and at least MaxBatch; negative: no
	// limit.
	MaxInFlight int
	// MaxInFlightBytes bounds, as MaxInFlight does, the bytes of the
	// texts (and token lists) of those documents and queries, and of
	// those ids: a request that would go over it waits. A request whose
	// texts alone exceed it runs once nothing else does. Default: DefaultMaxInFlightBytes;
	// negative: no limit.
	MaxInFlightBytes int64
	// WriteTimeout bounds each write of an answer, not the whole answer:
	// a stream of pairs may take an hour, but a client that stops reading
	// it for WriteTimeout is dropped. It replaces the server's
	// http.Server.WriteTimeout for the requests this handler serves
	// (which would cut long calls short). Default: DefaultWriteTimeout;
	// negative: none.
	WriteTimeout time.Duration
	// QueryTimeout, when positive, bounds each query request's work
	// (GET and POST /v1/query, POST /v1/query/many): one
	// that runs past it is stopped and answered 504 timeout. A query of a
	// document that shares buckets with many others (boilerplate) may
	// verify 100,000s of candidates, seconds of both cores, and slowed
	// every other query meanwhile (a review of skewed corpora, K5).
	// Default: none (a client that goes away stops its query).
	QueryTimeout time.Duration
	// IdleTimeout is the server's keep-alive idle timeout
	// (http.Server.IdleTimeout, or its ReadTimeout when that is 0), which
	// /v1/params tells clients (idle_timeout_ms), so that they close an
	// idle connection before the server does: a request sent on one
	// just as the server closes it is lost in flight, and a write's fate
	// is then unknown to its client. Default: 0, unknown (none said).
	IdleTimeout time.Duration
	// ReadTimeout, when positive, bounds the wait for each document of a
	// put-if-new stream (the server's http.Server.ReadTimeout bounds the
	// whole body of every other request). Default: 0, the server's.
	ReadTimeout time.Duration
	// BackupRoot, when set, is the only directory under which POST
	// /v1/backup may write. Default: anywhere the server can, for a
	// request through a Unix socket (its holder is trusted); over TCP
	// none, since a token may be shared more widely than the server's
	// user's rights should be. Under a root, every directory from / to
	// the backup's parent must belong to the server's user or root and
	// be writable by no one else (a sticky one such as /tmp may be,
	// above the parent): another user who may write one could swap the
	// way under it for a link while the backup runs, and have its copies
	// made outside the root. The backup is made at the directory's path
	// with its links resolved.
	BackupRoot string
	// Owner, when set, is what /healthz names as the process serving the
	// index (its owner field): lshdb serve says "lshdb serve", and a
	// command that serves the index's socket while it runs says so by
	// its name ("lshdb insert"), so that a serve started meanwhile knows
	// to wait for it to end rather than fail as locked. Default: none.
	Owner string
	// ServesReadOnly says that the index was opened read-only to be
	// served so (lshdb serve --read-only), not to be read for a while by
	// the command that owns it: a write refused (read_only) then ends
	// with ServerReadsOnly, not OwnerReadsOnly. Default: false.
	ServesReadOnly bool
	// Logger receives one line per request (method, path, operation,
	// status, error code, bytes, duration), but for requests refused for
	// want of the token: in each 10 s, the first of each client address
	// (64 at most) and 10 more, then a line of how many were not logged
	// (refusals_not_logged). Default: nil, no request log.
	Logger *slog.Logger
	// Hooks observe requests (metrics). Default: none.
	Hooks Hooks
}

// Hooks observe requests; a nil function is not called. They run on the
// request's goroutine: a slow hook slows the request.
type Hooks struct {
	// Start is called when a request begins, with its context and its
	// operation (one of Ops: "unknown" when no endpoint matched), before
	// it is authenticated.
	Start func(ctx context.Context, op string)
	// Done is called when a request ends, after Start: its HTTP status, its
	// error (nil on success; for a stream, the error that ended it) and
	// how long it took.
	Done func(ctx context.Context, op string, status int, err error, elapsed time.Duration)
	// Query is called after each query with the number of candidates it
	// verified.
	Query func(op string, candidates int)
}

// Handler returns an http.Handler that serves the database's API (see
// the package documentation and openapi.yaml). It does not own d: the
// caller closes d after the server has stopped. Requests that arrive after
// d is closed get 503 closed.
func Handler(d *db.DB, opts *Options) http.Handler {
	h := &handler{d: d}
	if opts != nil {
		h.o = *opts
	}
	if h.o.MaxBodyBytes == 0 {
		h.o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.o.WriteTimeout == 0 {
		h.o.WriteTimeout = DefaultWriteTimeout
	}
	if h.o.MaxMatches == 0 {
		h.o.MaxMatches = DefaultMaxMatches
	}
	if h.o.MaxTextBytes == 0 {
		h.o.MaxTextBytes = DefaultMaxTextBytes
	}
	if h.o.MaxBatch == 0 {
		h.o.MaxBatch = DefaultMaxBatch
	}
	if h.o.MaxInFlight == 0 {
		h.o.MaxInFlight = DefaultMaxInFlight
	}
	if h.o.MaxInFlight > 0 {
		if h.o.MaxBatch > h.o.MaxInFlight {
			h.o.MaxInFlight = h.o.MaxBatch
		}
		h.inFlight = semaphore.NewWeighted(int64(h.o.MaxInFlight))
	}
	if h.o.MaxRuns == 0 {
		h.o.MaxRuns = DefaultMaxRuns
	}
	if h.o.MaxRuns > 0 {
		h.runs = semaphore.NewWeighted(int64(h.o.MaxRuns))
	}
	if h.o.MaxScans == 0 {
		h.o.MaxScans = DefaultMaxScans
	}
	if h.o.MaxScans > 0 {
		h.scans = semaphore.NewWeighted(int64(h.o.MaxScans))
	}
	if h.o.MaxSpoolBytes == 0 {
		h.o.MaxSpoolBytes = DefaultMaxSpoolBytes
	}
	if h.o.MaxSpoolBytes > 0 {
		h.spoolBudget = semaphore.NewWeighted(h.o.MaxSpoolBytes)
	}
	if d != nil && !db.IsRedisURL(d.Dir()) {
		removeDeadSpools(d.Dir())
	}
	if h.o.MaxInFlightBytes == 0 {
		h.o.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if lg := h.o.Logger; lg != nil {
		h.refusals.summary = func(n int) {
			lg.Warn("lshdb: requests refused (no token, a wrong one, or another site's) and not logged", "refusals_not_logged", n)
		}
	}
	if h.o.MaxInFlightBytes > 0 {
		h.inFlightBytes = semaphore.NewWeighted(h.o.MaxInFlightBytes)
		h.decoding = semaphore.NewWeighted(h.o.MaxInFlightBytes)
	}
	h.setTokens()
	h.routes = []route{
		{"GET", "/healthz", "healthz", h.healthz},
		{"GET", "/v1/params", "params", h.params},
		{"GET", "/v1/count", "count", h.count},
		{"GET", "/v1/docs", "get", h.get},
		{"POST", "/v1/docs", "put", h.put},
		{"DELETE", "/v1/docs", "delete", h.deleteQuery},
		{"GET", "/v1/docs/has", "has", h.has},
		{"POST", "/v1/docs/has", "has", h.hasMany},
		{"POST", "/v1/docs/delete", "delete", h.deleteBody},
		{"POST", "/v1/docs/put-if-new", "put_if_new", h.putIfNew},
		{"POST", "/v1/load", "load", h.load},
		{"GET", "/v1/query", "query", h.queryGet},
		{"POST", "/v1/query", "query", h.queryPost},
		{"POST", "/v1/query/many", "query_many", h.queryMany},
		{"GET", "/v1/pairs", "pairs", h.pairs},
		{"GET", "/v1/pairs/groups", "pairs", h.pairGroups},
		{"GET", "/v1/scan", "scan", h.scan},
		{"GET", "/v1/clusters", "clusters", h.clusters},
		{"GET", "/v1/info", "info", h.info},
		{"POST", "/v1/clusters", "clusters_from", h.clustersFrom},
		{"GET", "/v1/stats", "stats", h.stats},
		{"GET", "/v1/buckets", "buckets", h.buckets},
		{"GET", "/v1/buckets/", "bucket", h.bucket}, // /v1/buckets/{band}/{bucket}
		{"GET", "/v1/explain", "explain", h.explain},
		{"GET", "/v1/check", "check", h.check},
		{"POST", "/v1/repair", "repair", h.repair},
		{"GET", "/v1/tune", "tune", h.tune},
		{"POST", "/v1/backup", "backup", h.backup},
		{"POST", "/v1/purge", "purge", h.purge},
		{"POST", "/v1/compact", "compact", h.compact},
		{"GET", "/v1/openapi.yaml", "openapi", h.openapi},
	}
	return h
}

type handler struct {
	d *db.DB
	o Options
	// refusals bounds the log lines of refused requests (refusalLog).
	refusals refusalLog
	token    [32]byte
	// readToken is Options.ReadToken's hash, if hasReadToken.
	readToken    [32]byte
	hasReadToken bool
	routes       []route
	// inFlight holds Options.MaxInFlight, inFlightBytes
	// Options.MaxInFlightBytes (nil: no limit).
	inFlight, inFlightBytes *semaphore.Weighted
	// decoding holds the bodies being decoded (Options.MaxInFlightBytes
	// of them: see decode).
	decoding *semaphore.Weighted
	// runs holds Options.MaxRuns, scans Options.MaxScans (nil: no
	// limit).
	runs, scans *semaphore.Weighted
	// spoolBudget holds Options.MaxSpoolBytes (nil: no spool files).
	spoolBudget *semaphore.Weighted
}

// spoolRoom reports whether the index's filesystem has room for n more
// bytes of a spool's file above the index's disk reserve.
func (h *handler) spoolRoom(n int64) bool {
	return !errors.Is(h.d.RoomToWrite(), db.ErrDiskFull)
}

// admitRun waits for one of the runs over the whole index the server
// makes at once (Options.MaxRuns), and returns the function that gives it
// back; an error if the client went away while it waited.
func (h *handler) admitRun(ctx context.Context) (release func(), err error) {
	return place(ctx, h.runs, "other runs over the whole index (pairs, clusters, stats, buckets, check) to end (serve --max-runs)")
}

// admitScan waits for one of the scans that read the index at once
// (Options.MaxScans), as admitRun does.
func (h *handler) admitScan(ctx context.Context) (release func(), err error) {
	return place(ctx, h.scans, "other scans to end (serve --max-scans)")
}

// place waits for one of sem's places (nil: no limit), and returns the
// function that gives it back, which may be called more than once (a
// spooled stream gives its place back once made, and its handler at its
// end); an error saying what it waited for if ctx ended first.
func place(ctx context.Context, sem *semaphore.Weighted, waitingFor string) (release func(), err error) {
	if sem == nil {
		return func() {}, nil
	}
	if err := sem.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("%w while waiting for %s", err, waitingFor)
	}
	return sync.OnceFunc(func() { sem.Release(1) }), nil
}

// batch refuses the n queries of a query/many over MaxBatch (a put's
// documents are counted as they are decoded: boundedList).
func (h *handler) batch(n int) error {
	if h.o.MaxBatch <= 0 || n <= h.o.MaxBatch {
		return nil
	}
	return fmt.Errorf("%w: %d queries in one request (at most %d, lshdb serve --max-batch): split them into several requests", ErrBatchTooLarge, n, h.o.MaxBatch)
}

// admit waits for room for n documents (or queries) of size bytes of
// text among those the server works on at once (MaxInFlight,
// MaxInFlightBytes), and returns the function that gives it back; an
// error if the client went away while it waited. n is at most MaxBatch,
// and MaxInFlight at least that; a request of more bytes than
// MaxInFlightBytes waits for all of them: a request never waits for more
// than the whole. NB: documents first, then bytes, in every request: no
// two wait for each other.
func (h *handler) admit(ctx context.Context, n int, size int64) (release func(), err error) {
	if n == 0 {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil {
		// NB: ended before it waited (a client gone, the server shutting
		// down): Acquire failed at once, and the log blamed a wait for
		// other requests' documents when there were none.
		return nil, err
	}
	var w, wb int64
	if h.inFlight != nil {
		w = int64(min(n, h.o.MaxInFlight))
		if err := h.inFlight.Acquire(ctx, w); err != nil {
			return nil, fmt.Errorf("%w while waiting for other requests' documents to be written (serve --max-in-flight)", err)
		}
	}
	if h.inFlightBytes != nil {
		wb = min(max(size, 1), h.o.MaxInFlightBytes)
		if err := h.inFlightBytes.Acquire(ctx, wb); err != nil {
			if w > 0 {
				h.inFlight.Release(w)
			}
			return nil, fmt.Errorf("%w while waiting for other requests' texts to be written (serve --max-in-flight-bytes)", err)
		}
	}
	return func() {
		if wb > 0 {
			h.inFlightBytes.Release(wb)
		}
		if w > 0 {
			h.inFlight.Release(w)
		}
	}, nil
}

// admitIDs is admit for a request of ids (has, delete): each counts as a
// document, its bytes as a text's.
func (h *handler) admitIDs(ctx context.Context, ids []string) (release func(), err error) {
	var size int64
	for _, id := range ids {
		size += int64(len(id))
	}
	return h.admit(ctx, len(ids), size)
}

// docBytes is what admit counts of a document: its text's and tokens'
// bytes, 8 a hash.
func docBytes(text string, tokens []string, hashes int) int64 {
	n := int64(len(text)) + 8*int64(hashes)
	for _, t := range tokens {
		n += int64(len(t))
	}
	return n
}

type route struct {
	method, path, op string
	fn               func(w *resp, r *http.Request) error
}

// Ops lists the operation names that Hooks and the request log use, one
// per endpoint (GET and DELETE /v1/docs are get and delete; both query
// endpoints are query, both pairs endpoints pairs), plus "unknown" for a request that matched none.
var Ops = []string{"healthz", "params", "count", "get", "put", "delete", "has", "put_if_new", "load", "query", "query_many",
	"pairs", "scan", "clusters", "clusters_from", "info", "stats", "buckets", "bucket", "explain", "check", "repair", "tune", "backup", "purge", "compact", "openapi", "unknown"}

// OwnerReadsOnly ends the message of a write refused (read_only) by a
// server that opened its index to read only (an lshdb read command, which
// serves the index while it runs): the write may succeed once that
// process has closed the index. lshdb's commands tell the case by it
// (exit 75, busy), as only a code and a message cross HTTP.
const OwnerReadsOnly = "which reads only: write once it has closed the index"

// ownerReadsOnly is a write refused (read_only) by an owner that opened
// its index to read only: its ErrorBody says retry.
type ownerReadsOnly struct{ error }

func (e ownerReadsOnly) Unwrap() error { return e.error }

// ServerReadsOnly ends, in OwnerReadsOnly's place, the message of a write
// refused by a server started to serve reads only (Options.ServesReadOnly,
// lshdb serve --read-only, for an index on a full disk or a read-only
// filesystem): writes wait for its restart without the flag, not for a
// command to end.
const ServerReadsOnly = "which was started to serve reads only (lshdb serve --read-only): writes wait for it to be restarted without --read-only, once the index's disk takes writes"

// ReadOps are the operations that a request with Options.ReadToken may
// call: those that neither write nor maintain the index.
var ReadOps = []string{"healthz", "params", "count", "get", "has", "query", "query_many", "pairs", "scan", "clusters", "clusters_from",
	"info", "stats", "buckets", "bucket", "explain", "check", "tune", "openapi"}

// longOps are the GET operations that read the whole index.
var longOps = []string{"pairs", "scan", "clusters", "check", "stats", "buckets"}

// match finds the route of r: ok false when no path matches; rt nil (and
// allow the methods the path takes) when the path matches but not the
// method.
//
// NB: on the path as sent (EscapedPath), so that a route's own part is
// only ever its plain bytes: routed on the decoded path, /v1%2Frepair
// was /v1/repair, and a proxy's rule that keeps /v1/repair from the
// world let it through (an operator's review, SV-2). What follows a
// route's prefix (an id) is decoded by its handler, %2F included.
func (h *handler) match(r *http.Request) (rt *route, allow []string, ok bool) {
	p := r.URL.EscapedPath()
	for i := range h.routes {
		x := &h.routes[i]
		if x.path == p || strings.HasSuffix(x.path, "/") && strings.HasPrefix(p, x.path) {
			ok = true
			// NB: HEAD is GET without the body, so it does the GET's
			// work: not taken where that work is a whole pass over the
			// index (longOps), which a HEAD would
			// run to the end for nothing.
			if x.method == r.Method || x.method == "GET" && r.Method == "HEAD" && !slices.Contains(longOps, x.op) {
				return x, nil, true
			}
			allow = append(allow, x.method)
		}
	}
	return nil, allow, ok
}

// clipPath is a request's path as a log line or an error quotes it: its
// first 256 bytes, and its length past them (no route's path is longer).
func clipPath(p string) string {
	const most = 256
	if len(p) <= most {
		return p
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", p[:cut], len(p))
}

// notAllowed sets w's Allow header to allow ("GET, HEAD") and returns the
// ErrMethod of r, a request for another method.
func notAllowed(w http.ResponseWriter, r *http.Request, allow string) error {
	w.Header().Set("Allow", allow)
	return fmt.Errorf("%w: %s %s (allowed: %s)", ErrMethod, r.Method, clipPath(r.URL.Path), allow)
}

func (h *handler) ServeHTTP(hw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &resp{w: hw, rc: http.NewResponseController(hw), h: h, id: requestID(r), r: r}
	hw.Header().Set("X-Request-Id", w.id)
	op := "unknown"
	var err error
	defer func() {
		if p := recover(); p != nil {
			// NB: a handler's bug must not take the index's owner down
			// with it; the request fails, the server goes on.
			err = fmt.Errorf("%w: panic: %v", ErrInternal, p)
			// NB: the request's own line says what failed; this one
			// says where, for the bug report.
			if h.o.Logger != nil {
				h.o.Logger.Error("lshdb: a request's handler panicked", "method", r.Method, "path", clipPath(r.URL.Path), "request_id", w.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			if !w.started {
				w.fail(err)
			}
		}
		w.finish()
		if err == nil && errors.Is(context.Cause(r.Context()), ErrShutdown) {
			// NB: a request whose work ended after the server's
			// shutdown cut it (a put committing past the timeout) wrote
			// its answer into a connection the server had closed: it
			// was logged and counted 200, and the client got nothing
			// (an operator's soak review, O2). A flush tells (and makes
			// an answer still unsent chunked). A writer that cannot
			// flush (an embedder's wrapper) tells nothing.
			if ferr := w.rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				err = fmt.Errorf("%w: its work was done, but its answer (%d) did not reach the client, its connection closed: %w", ErrShutdown, w.status, ferr)
			}
		}
		h.done(r, op, w, err, time.Since(start))
	}()
	rt, allow, ok := h.match(r)
	if rt != nil {
		op = rt.op
	}
	if h.o.Hooks.Start != nil {
		h.o.Hooks.Start(r.Context(), op)
	}
	// NB: a request for no route is refused as unauthorized first, where
	// a token is set: answered 404 with its path, a client without the
	// token had every byte it sent written back, and twice to the log
	// (an SRE's review: 40 MB of log for 20 requests of 1 MB paths).
	if rt != nil && rt.op == "healthz" {
		if r.ContentLength != 0 {
			// NB: the one route that needs no token answers without
			// reading a body, which net/http then read for up to the
			// read timeout, the connection busy meanwhile: 4,200 peers
			// without a token, each promising /healthz a body and
			// sending a byte a second, took every slot of serve's TCP
			// bound, and a client with the token waited until its
			// timeout (a security review, SEC2-2). Such a request is
			// answered, and its connection closed unread.
			w.refuseUnread()
		}
	} else {
		if err = h.sameSite(r); err != nil {
			w.refuseUnread()
			w.fail(err)
			return
		}
		if w.readOnly, err = h.authorize(r); err != nil {
			w.w.Header().Set("WWW-Authenticate", `Bearer realm="lshdb"`)
			w.refuseUnread()
			w.fail(err)
			return
		}
		if w.readOnly && rt != nil && !slices.Contains(ReadOps, rt.op) {
			w.refuseUnread() // NB: a read token's peer is no writer's (see healthz above)
			err = fmt.Errorf("%w: the request's token may only read (the server's read-only token: serve --read-token-file, Options.ReadToken), and %s writes or maintains the index, which needs the server's own token; nothing was done", ErrForbidden, rt.op)
			w.fail(err)
			return
		}
	}
	switch {
	case !ok:
		p, sent := r.URL.Path, r.URL.EscapedPath()
		err = fmt.Errorf("%w: %s %s", ErrNoRoute, r.Method, clipPath(sent))
		if p != "" && path.Clean(p) != p {
			err = fmt.Errorf("%w (the path is not clean: an empty segment, a . or a ..: does the base URL end in a /?)", err)
		} else if sent != p {
			err = fmt.Errorf("%w (a route's own part is taken as sent: %%2F and other escapes there are not read as the characters they stand for)", err)
		}
		w.fail(err)
		return
	case rt == nil:
		err = notAllowed(w.w, r, strings.Join(allow, ", "))
		w.fail(err)
		return
	}
	// NB: JSON is UTF-8 (RFC 8259), and Go's decoder turns other bytes into
	// U+FFFD: two ids that differ only there were stored as one. The body
	// is wrapped only once the request is taken: a request refused on its
	// length keeps net/http's own body, whose early close makes the
	// server wait for the client to read the answer before it closes
	// (else the client met a connection reset, not the 413).
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// NB: the body was parsed as it came, and a gzip one failed as
		// "malformed JSON at byte 1: invalid character '\x1f'".
		err = badRequest("Content-Encoding %q is not supported: send the body uncompressed", ce)
		w.w.Header().Set("Connection", "close") // NB: rather than drain the body
		w.fail(err)
		return
	}
	checked := &utf8Body{r: r.Body}
	if max := h.o.MaxBodyBytes; max > 0 && (rt.op == "put_if_new" || rt.op == "load" || rt.op == "clusters_from") {
		// NB: a put-if-new or load stream (a dedup run or a build over a
		// whole corpus) and a pairs file to cluster are bounded per line,
		// not in total: see docLimit.
		r.Body = &docLimit{r: checked, max: max}
	} else if max > 0 {
		if r.ContentLength > max {
			// NB: refused on the announced length, before a byte of the
			// body is read; the server then closes the connection rather
			// than drain it.
			w.w.Header().Set("Connection", "close")
			err = fmt.Errorf("%w: %d bytes (at most %d)", ErrBodyTooLarge, r.ContentLength, max)
			w.fail(err)
			return
		}
		r.Body = http.MaxBytesReader(hw, checked, max)
	} else {
		r.Body = checked
	}
	if h.o.WriteTimeout != 0 {
		// NB: the server's whole-response deadline would cut a long call
		// (check, pairs) short; each write gets its own deadline instead
		// (resp.Write), and until then the work is bounded by the client:
		// a client that goes away cancels it.
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
	timed := h.o.QueryTimeout > 0 && (rt.op == "query" || rt.op == "query_many")
	if timed {
		t := h.o.QueryTimeout
		ctx, cancel := context.WithTimeoutCause(r.Context(), t, fmt.Errorf("lshdb: the query ran past the server's query timeout (%v: lshdb serve --query-timeout): %w", t, context.DeadlineExceeded))
		defer cancel()
		r = r.WithContext(ctx)
	}
	err = rt.fn(w, r)
	if cause := context.Cause(r.Context()); timed && cause != nil && errors.Is(err, context.DeadlineExceeded) {
		err = cause // NB: the timeout's words; a deadline from elsewhere keeps its own (a read-through's R4)
	}
	if errors.Is(err, db.ErrReadOnly) {
		err = h.readOnlyRefusal(err)
	}
	err = cutErr(r, err)
	if err != nil && !w.started {
		w.fail(err)
	}
}

// readOnlyRefusal is err, a write refused by the index (ErrReadOnly), as
// the API says it.
func (h *handler) readOnlyRefusal(err error) error {
	// NB: the client's process did not open the index read-only: say
	// who did (an lshdb read command serves while it runs).
	why := OwnerReadsOnly
	if h.o.ServesReadOnly {
		why = ServerReadsOnly
	}
	err = fmt.Errorf("%w by the process that serves it (pid %d), %s", err, os.Getpid(), why)
	if !h.o.ServesReadOnly {
		err = ownerReadsOnly{err}
	}
	return err
}

// cutErr is err, the failure of r, as ErrShutdown when the server cut r as
// it shut down (r's context, or the read of its body, which the server
// ends too): 503 shutdown, what a client may retry once a server is back,
// where it answered (and logged) 499, "the client went away". Any other
// error of the same moment (a 404, a full disk) stays its own.
func cutErr(r *http.Request, err error) error {
	if err != nil && r != nil && errors.Is(context.Cause(r.Context()), ErrShutdown) && !errors.Is(err, ErrShutdown) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, ErrRequestTimeout) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)) {
		return shutdownCut{err}
	}
	return err
}

// shutdownCut is cutErr's error: ErrShutdown, and the failure it caused
// (errors.Is matches both), said as the shutdown alone. NB: it said the
// failure too, "request timed out: reading the body: read unix
// /…/.lshdb-sock-…/s->@: i/o timeout", a timeout that was not one and a
// path of the server's (an HTTP review, HT-8).
type shutdownCut struct{ err error }

func (e shutdownCut) Error() string {
	return ErrShutdown.Error() + ": the request was cut before it was done: retry it once the server is back"
}

func (e shutdownCut) Unwrap() []error { return []error{ErrShutdown, e.err} }

// authorized compares the request's bearer token with the handler's in
// constant time (of the digests, so that not even the length leaks).
// refuseUnread makes the connection of a request refused before its body
// was read close once the refusal is written, without reading the body.
// NB: net/http reads up to 256 KiB of a body the handler left, for up to
// the server's read timeout, and the connection counts as busy meanwhile:
// 4,100 connections with no token, each sending a header that promised a
// body and then a byte a second, took every slot of serve's TCP bound
// (4,096), and /healthz went unanswered for 30 s (a security review, S1).
// Connection: close alone still read the body; a read deadline in the
// past ends that read at once.
func (w *resp) refuseUnread() {
	w.w.Header().Set("Connection", "close")
	_ = w.rc.SetReadDeadline(time.Now())
}

// sameSite refuses what a web page could make a browser send: a request
// that carries a foreign Origin (or Sec-Fetch-Site: cross-site), whatever
// the transport; and, on a TCP port served without a token, one whose
// Host is not a loopback name or address, which is how a page rebinds its
// own host name to 127.0.0.1 to read the answers. lshdb's client and curl
// send neither header and name the host they dial.
//
// NB: without it, any page the operator opened could POST (as text/plain,
// no preflight) to a loopback server without a token: delete documents,
// write them, or make a backup anywhere the server may write.
func (h *handler) sameSite(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("%w: Origin %q is not this server (%s)", ErrCrossSite, o, r.Host)
		}
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return fmt.Errorf("%w: Sec-Fetch-Site: cross-site", ErrCrossSite)
	}
	if h.o.Token != "" {
		return nil // NB: a page cannot send the token
	}
	if _, tcp := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); !tcp {
		return nil // NB: a Unix socket, which no browser dials
	}
	host := hostOf(r.Host)
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() || strings.EqualFold(host, "localhost") {
		return nil
	}
	return fmt.Errorf("%w: Host %q is not a loopback name or address, and the server has no token (serve it with --token to take other names)", ErrCrossSite, r.Host)
}

// authorized returns nil if r carries the server's token (or the server
// has none), else ErrUnauthorized saying whether the token was missing or
// wrong.
// setTokens sets the hashes of the options' tokens.
func (h *handler) setTokens() {
	if h.o.Token != "" {
		// NB: trimmed as a request's is: a configured "s3cret " matched
		// no request, the server's own commands' included.
		h.token = sha256.Sum256([]byte(strings.TrimSpace(h.o.Token)))
		if t := strings.TrimSpace(h.o.ReadToken); t != "" && t != strings.TrimSpace(h.o.Token) {
			h.readToken, h.hasReadToken = sha256.Sum256([]byte(t)), true
		}
	}
}

func (h *handler) authorized(r *http.Request) error {
	_, err := h.authorize(r)
	return err
}

// authorize is authorized, which also reports whether r carries the
// read-only token (Options.ReadToken).
func (h *handler) authorize(r *http.Request) (readOnly bool, err error) {
	if h.o.Token == "" {
		return false, nil
	}
	auth := r.Header.Get("Authorization")
	// NB: the scheme is case-insensitive (RFC 9110, 11.1).
	scheme, tok, _ := strings.Cut(auth, " ")
	if auth == "" || !strings.EqualFold(scheme, "Bearer") {
		return false, fmt.Errorf("%w: a bearer token is required (Authorization: Bearer TOKEN; lshdb's commands take it from $LSHDB_TOKEN)", ErrUnauthorized)
	}
	tok = strings.TrimSpace(tok)
	sum := sha256.Sum256([]byte(tok))
	// NB: an empty bearer never matches, though a token of white space
	// alone hashes as it does.
	switch {
	case tok == "":
	case subtle.ConstantTimeCompare(sum[:], h.token[:]) == 1:
		return false, nil
	case h.hasReadToken && subtle.ConstantTimeCompare(sum[:], h.readToken[:]) == 1:
		return true, nil
	}
	return false, fmt.Errorf("%w: the bearer token is not this server's", ErrUnauthorized)
}

func (h *handler) done(r *http.Request, op string, w *resp, err error, elapsed time.Duration) {
	cut := err != nil && errors.Is(err, ErrShutdown)
	if cut {
		// NB: logged as "the client went away", at INFO, with the
		// status of an answer already begun: the server cut it.
		err = fmt.Errorf("%w (its shutdown timeout passed)", err)
	} else if err != nil && r.Context().Err() != nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)) {
		// NB: the client went away mid-answer (a stream's write failed),
		// or the server closed its connection as it shut down ("use of
		// closed network connection", which was logged as an internal
		// error at every shutdown with an answer in flight): not the
		// server's fault, and no "internal" error to page anyone. A
		// backend's broken connection, with the client still there,
		// stays what it is.
		err = fmt.Errorf("%w: the client went away: %w", context.Canceled, err)
	}
	if h.o.Hooks.Done != nil {
		h.o.Hooks.Done(r.Context(), op, w.status, err, elapsed)
	}
	if h.o.Logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", clipPath(r.URL.Path)), slog.String("op", op),
		slog.Int("status", w.status), slog.Int64("bytes", w.bytes), slog.Duration("elapsed", elapsed),
		slog.String("remote", r.RemoteAddr), slog.String("request_id", w.id)}
	level := slog.LevelInfo
	if op == "healthz" && err == nil && w.status == http.StatusOK {
		// NB: a probe every few seconds was a line each, 34,560 a day for
		// a liveness and a readiness probe at 5 s (an SRE's SR5): at
		// DEBUG, as /metrics, which scrapers poll, is not logged at all.
		level = slog.LevelDebug
	}
	if err != nil {
		c := codeOf(err)
		attrs = append(attrs, slog.String("code", c.Code), slog.String("error", err.Error()))
		switch {
		case cut:
			level = slog.LevelWarn
		case errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrCrossSite):
			// NB: at INFO, a burst of wrong tokens read as traffic.
			level = slog.LevelWarn
			log, unlogged := h.refusals.admit(time.Now(), hostOf(r.RemoteAddr))
			if !log {
				return
			}
			if unlogged > 0 {
				attrs = append(attrs, slog.Int("refusals_not_logged", unlogged))
			}
		case w.status >= 500 && w.status != 499:
			level = slog.LevelError
		case w.status < 400 && c.Status >= 500 && c.Status != 499:
			// NB: a stream that failed after its 200 went out (its last
			// line is the error): logged at INFO, it read as a success.
			attrs = append(attrs, slog.Bool("stream_failed", true))
			level = slog.LevelError
		case w.status < 400 && c.Status != 499:
			attrs = append(attrs, slog.Bool("stream_failed", true))
			level = slog.LevelWarn
		}
	}
	h.o.Logger.LogAttrs(r.Context(), level, "lshdb: request", attrs...)
}

// refusalLog bounds the log lines of requests refused before anything
// was done (no token, or a wrong one; another site's): within each
// refusalWindow, the first refusal of each peer (of refusalPeers at
// most) and refusalLines more; at the end of a window in which some
// went unlogged a line says how many (refusals_not_logged; it was said
// only by the next refusal logged, which might never come: a
// read-through, RT11-4). Hooks.Done (the metrics) still sees every one.
// NB: a line each, one client without the token sent 21,131 requests in
// 5 s and the server wrote 7 MB of log, at every log level (a security
// review, SEC2-8). NB: the first of each peer's has its line, however
// many others refused: with 10 lines a window for all, a client that
// never had the token used them up, and a colleague's service with a
// stale one went unseen in the log (RT11-4).
type refusalLog struct {
	mu       sync.Mutex
	start    time.Time           // of the window
	logged   int                 // lines in the window beyond each peer's first
	peers    map[string]struct{} // the peers whose first refusal was logged in the window
	unlogged int                 // refusals not logged since the last line
	pending  bool                // a summary is due at the window's end
	// summary logs n refusals not logged (set with the handler's Logger).
	summary func(n int)
}

// refusalLines, refusalPeers and refusalWindow: see refusalLog
// (refusalWindow is a variable for tests).
const (
	refusalLines = 10
	refusalPeers = 64
)

var refusalWindow = 10 * time.Second

// hostOf is addr (HOST:PORT, a request's RemoteAddr or Host) without its
// port, or addr as it is when it has none. Of a RemoteAddr, it is the
// peer: a client's every connection is one (a socket's peers are one).
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// admit reports whether the refusal of peer at now gets its line, and
// how many refusals went unlogged before it.
func (l *refusalLog) admit(now time.Time, peer string) (log bool, unlogged int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= refusalWindow {
		l.start, l.logged = now, 0
		clear(l.peers)
	}
	if l.peers == nil {
		l.peers = make(map[string]struct{})
	}
	_, seen := l.peers[peer]
	switch {
	case !seen && len(l.peers) < refusalPeers:
		l.peers[peer] = struct{}{}
	case l.logged < refusalLines:
		l.logged++
	default:
		l.unlogged++
		if !l.pending && l.summary != nil {
			l.pending = true
			time.AfterFunc(l.start.Add(refusalWindow).Sub(now), l.flush)
		}
		return false, 0
	}
	unlogged, l.unlogged = l.unlogged, 0
	return true, unlogged
}

// flush logs the refusals not logged so far, at a window's end.
func (l *refusalLog) flush() {
	l.mu.Lock()
	n := l.unlogged
	l.unlogged, l.pending = 0, false
	l.mu.Unlock()
	if n > 0 {
		l.summary(n)
	}
}

// resp is the answer being written: it remembers the status and bytes
// (for the log and hooks), buffers streams, and gives each write its own
// deadline.
type resp struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	h       *handler
	bw      *bufio.Writer // for streams
	status  int
	bytes   int64
	started bool
	id      string // the request's id (requestID)
	r       *http.Request
	// decoded gives back the room its body's decoding took (decode), at
	// the request's end; nil if it took none.
	decoded func()
	// readOnly says the request came with the read token
	// (Options.ReadToken).
	readOnly bool
}

// requestID returns the id of r for the log and the answer's
// X-Request-Id: the client's X-Request-Id when it is 1 to 128 printable
// ASCII characters, no space (so that a client's error and the server's log line
// can be matched, on the socket too, whose remote address is "@"), else
// 16 random hex digits.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && !strings.ContainsFunc(id, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return id
	}
	return fmt.Sprintf("%016x", rand.Uint64())
}

// Write sends p with a fresh write deadline.
func (w *resp) Write(p []byte) (int, error) {
	if t := w.h.o.WriteTimeout; t > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(t))
	}
	n, err := w.w.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *resp) header(status int, contentType string) {
	w.started = true
	w.status = status
	w.w.Header().Set("Content-Type", contentType)
	w.w.Header().Set("X-Content-Type-Options", "nosniff")
	w.w.WriteHeader(status)
}

// json writes v as the whole answer.
func (w *resp) json(status int, v any) error {
	buf, err := marshal(v)
	if err != nil {
		return err
	}
	defer putBuffer(buf)
	// NB: said ahead, so that a client can refuse an answer over its
	// bound before it reads any of it (db/client's MaxAnswerBytes).
	w.w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.header(status, "application/json")
	_, err = w.Write(buf.Bytes())
	return err
}

// marshal encodes v as one line of JSON into a buffer of the pool; the
// caller returns it with putBuffer.
//
// NB: an answer's encoding is most of what a query through the API
// allocates beside the query itself; the server's and client's garbage
// set how often the collector runs, and its mark phase is where the
// latency tail of BenchmarkMixed's socket runs was.
func marshal(v any) (*bytes.Buffer, error) {
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		putBuffer(buf)
		return nil, fmt.Errorf("%w: encoding the answer: %w", ErrInternal, err)
	}
	return buf, nil
}

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBuffer returns buf to the pool, unless a large answer grew it.
func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		buffers.Put(buf)
	}
}

// fail writes err as the answer: its code's status and
// {"error":{"code","message"}}.
func (w *resp) fail(err error) {
	c := codeOf(err)
	if c.Status == http.StatusRequestEntityTooLarge && c.Code == "body_too_large" || c.Code == "request_timeout" {
		// NB: the body was not read to its end; the connection cannot
		// carry another request.
		w.w.Header().Set("Connection", "close")
	}
	_ = w.json(c.Status, ErrorJSON{errorBody(err, c)})
}

// startStream begins a JSON Lines answer.
func (w *resp) startStream() {
	w.header(http.StatusOK, "application/x-ndjson")
	w.bw = bufio.NewWriterSize(w, 32<<10)
}

// line writes v as one line of the stream; flush sends it now rather
// than when the buffer fills.
func (w *resp) line(v any, flush bool) error {
	buf, err := marshal(v)
	if err != nil {
		return err
	}
	_, err = w.bw.Write(buf.Bytes())
	putBuffer(buf)
	if err != nil {
		return err
	}
	if flush {
		return w.flush()
	}
	return nil
}

func (w *resp) flush() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	return w.rc.Flush()
}

// failLine ends a stream with an error line.
func (w *resp) failLine(err error) {
	// NB: a stream the server cut as it shut down ended with "canceled",
	// which a client took for its own cancellation.
	err = cutErr(w.r, err)
	c := codeOf(err)
	_ = w.line(ErrorJSON{errorBody(err, c)}, true)
}

func (w *resp) finish() {
	if w.bw != nil {
		_ = w.flush()
	}
	if w.decoded != nil {
		w.decoded()
		w.decoded = nil
	}
	if !w.started {
		w.status = http.StatusOK
	}
}

// query parameters

// params returns r's query, refusing a parameter not in allowed (a typo
// such as "treshold" would otherwise be ignored) and a repeated one not
// in multi.
func params(r *http.Request, allowed []string, multi ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("query string: %v", err)
	}
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, badRequest("unknown parameter %q (this endpoint takes none)", k)
			}
			return nil, badRequest("unknown parameter %q (this endpoint takes %s)", k, strings.Join(allowed, ", "))
		}
		if len(v) > 1 && !slices.Contains(multi, k) {
			return nil, badRequest("parameter %q given %d times", k, len(v))
		}
	}
	return q, nil
}

// overTCP reports whether r came other than through a Unix socket (the
// index's is its owner's alone): TCP, or a listener that says nothing of
// itself. NB: tested positively for the socket, so that what is not known
// to be one is restricted.
func overTCP(r *http.Request) bool {
	_, unix := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr)
	return !unix
}

// required returns a bad request naming the first of names that q lacks
// (as DELETE /v1/docs says "id is required"; a GET said "invalid id:
// empty", and explain did not say which of a and b).
func required(q url.Values, names ...string) error {
	for _, n := range names {
		if !q.Has(n) {
			return badRequest("%s is required (?%s=…)", n, n)
		}
	}
	return nil
}

func floatParam(q url.Values, name string) (float64, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, badRequest("%s %q is not a number", name, s)
	}
	return f, nil
}

func intParam(q url.Values, name string, def int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badRequest("%s %q is not an integer", name, s)
	}
	return n, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	s := q.Get(name)
	if s == "" {
		return true, nil // ?estimate_only
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest("%s %q is not true or false", name, s)
	}
	return b, nil
}

// decode reads the body as one JSON value into v: unknown fields and
// anything after the value are refused.
func (h *handler) decode(w *resp, r *http.Request, v any) error {
	// NB: read whole (MaxBytesReader bounds it), and its names checked
	// (checkKeys), before it is decoded: encoding/json matches them
	// without regard to case and keeps the last of two. Reading to the
	// end of the body also lets the server notice a client that goes
	// away while the call runs (its context is then cancelled).
	raw, err := io.ReadAll(transportReader{r.Body})
	if err != nil {
		return bodyError(err)
	}
	if h.decoding != nil && len(raw) > 0 {
		// NB: decoded bodies take up to 14 times their bytes (a list of
		// short tokens) before the request is admitted among the work in
		// flight (admit): 6 queries of 62 MB at once took a server to
		// 2.5 GB, --max-in-flight-bytes 64 MiB notwithstanding (a
		// security review, SEC2-5). Their decoding is admitted by their
		// bytes, once read (a client that sends slowly holds nothing),
		// and the room is held until the request ends: given back once
		// decoded, each decoded body waited for its admission, 12 of
		// them at 2 GB (a read-through, RT11-1). NB: every request
		// decodes before it is admitted, and none that holds admitted
		// work waits for this room: no two wait for each other.
		n := min(int64(len(raw)), h.o.MaxInFlightBytes)
		if err := h.decoding.Acquire(r.Context(), n); err != nil {
			return fmt.Errorf("%w while waiting for other requests' bodies to be decoded (serve --max-in-flight-bytes)", err)
		}
		w.decoded = func() { h.decoding.Release(n) }
	}
	if err := checkKeys(raw); err != nil {
		return badRequest("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return badRequest("the body holds more than one JSON value")
		}
		return bodyError(err)
	}
	return nil
}

// noBody checks that an endpoint that takes no body got none: an empty
// body, or an empty JSON object (what a client that always sends one
// sends). Anything else is bad_request, not ignored.
func noBody(r *http.Request) error {
	const most = 1 << 10
	b, err := io.ReadAll(io.LimitReader(transportReader{r.Body}, most+1))
	if err != nil {
		return bodyError(err)
	}
	switch t := bytes.TrimSpace(b); {
	case len(b) > most:
		return badRequest("this endpoint takes no body")
	case len(t) == 0:
		return nil
	case t[0] == '{':
		var v map[string]json.RawMessage
		if err := json.Unmarshal(t, &v); err != nil {
			return bodyError(err)
		}
		for k := range v {
			return badRequest("unknown field %q (this endpoint takes no body)", k)
		}
		return nil
	default:
		return badRequest("this endpoint takes no body")
	}
}

// bodyError classifies an error reading a body: too large, too slow,
// empty or malformed.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, ErrBatchTooLarge) || errors.Is(err, ErrBadRequest):
		return err // NB: a field's own decoding said (boundedList)
	case errors.As(err, &mbe):
		return fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, mbe.Limit)
	case codeOf(err).Code == "request_timeout":
		return fmt.Errorf("%w: reading the body: %w", ErrRequestTimeout, err)
	case errors.Is(err, errNotUTF8) || errors.Is(err, errBOM) || errors.As(err, new(*errKeys)):
		return badRequest("%v", err)
	case errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.As(err, new(transportError)) && errors.Is(err, io.ErrUnexpectedEOF):
		// NB: the connection ended under the read (the client went away,
		// or the server closed it at the end of its shutdown): no bad
		// request of the client's, which the log said it was. A body cut
		// short by its connection (fewer bytes than its Content-Length,
		// a chunk never ended) is io.ErrUnexpectedEOF from the transport;
		// the same error from encoding/json is a body that ends inside
		// its JSON value.
		return fmt.Errorf("%w: the connection ended while the body was read: %w", context.Canceled, err)
	case err == io.EOF:
		return badRequest("the body is empty (a JSON object is expected)")
	case err == io.ErrUnexpectedEOF:
		return badRequest("the body ends inside its JSON value")
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te) && jsonField(te.Field) == "":
		// NB: it said JSON field "": array where an object is expected.
		return badRequest("the body is a JSON %s where %s is expected", te.Value, jsonKind(te.Type))
	case errors.As(err, &te):
		return badRequest("JSON field %q: %s where %s is expected", jsonField(te.Field), te.Value, jsonKind(te.Type))
	}
	return badRequest("the body: %v", err)
}

// jsonField is the JSON path of a field that failed to decode, without
// the Go names of the structs embedded on the way ("PutRequest.DocJSON.id"
// is "id"): the client knows its fields, not this package's types.
func jsonField(path string) string {
	var keep []string
	for _, p := range strings.Split(path, ".") {
		if r, _ := utf8.DecodeRuneInString(p); !unicode.IsUpper(r) {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return path
	}
	return strings.Join(keep, ".")
}

// jsonKind says in JSON's words what a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}

// recallNote is the expected recall at t when t is below the index's
// threshold (where its banding was not chosen for it), else nil: as the
// command's JSON lines carry it.
func (h *handler) recallNote(t float64) *float64 {
	p := h.d.Params()
	if t == 0 || t >= p.Threshold {
		return nil
	}
	r := p.RecallAt(t, false)
	return &r
}

// errNotUTF8 is a request body that is not UTF-8, or whose JSON escapes
// a lone UTF-16 surrogate (surrogateScan).
var errNotUTF8 = errors.New("the body is not UTF-8")

// errBOM is the error of a body that starts with a byte order mark.
var errBOM = errors.New("the body starts with a byte order mark (EF BB BF), which JSON text does not take: send it without")

// utf8Body is a request body checked to be UTF-8 as it is read: a read
// that meets other bytes returns those before them and fails with
// errNotUTF8, naming their offset, as does every read after it (so that
// no decoder takes the bytes it has for a whole body). A character cut
// between two reads is checked when the rest arrives.
type utf8Body struct {
	r     io.ReadCloser
	off   int64   // bytes checked before carry
	carry []byte  // the start of a character cut by the last read
	buf   [4]byte // carry's storage
	err   error   // the first errNotUTF8
	read  int64   // bytes returned by earlier reads
	esc   surrogateScan
}

func (b *utf8Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.readUTF8(p)
	if b.read == 0 && bytes.HasPrefix(p[:n], []byte("\xef\xbb\xbf")) {
		// NB: said as what it is: JSON's decoder said "invalid character
		// 'ï' at byte 1" (an API client's review, A-6).
		b.err = errBOM
		return 0, b.err
	}
	// NB: the bytes given back before invalid ones are scanned too: a
	// stream's earlier lines are decoded and stored.
	if at := b.esc.scan(p[:n], b.read); at >= 0 {
		b.err = fmt.Errorf("%w: a lone UTF-16 surrogate escape (\\uD800 to \\uDFFF not in a pair), which is no character, at byte %d (JSON text must be UTF-8; an id or a text with it would be changed)", errNotUTF8, at)
		return int(max(at-b.read, 0)), b.err
	}
	b.read += int64(n)
	return n, err
}

// readUTF8 reads into p, and returns the bytes up to the first that are
// not UTF-8, with errNotUTF8 naming them (kept in b.err).
func (b *utf8Body) readUTF8(p []byte) (int, error) {
	n, err := b.r.Read(p)
	data := p[:n]
	bad := func(at int64, kept int, what string) (int, error) {
		b.err = fmt.Errorf("%w: %s at byte %d (JSON text must be UTF-8; an id or a text with other bytes would be changed)", errNotUTF8, what, at)
		return kept, b.err
	}
	used := 0 // bytes of data taken to complete the carried character
	for used < len(data) && len(b.carry) > 0 {
		// NB: the character cut by the last read lacks at most 3 bytes.
		b.carry = append(b.carry, data[used])
		used++
		if utf8.FullRune(b.carry) {
			if !utf8.Valid(b.carry) {
				return bad(b.off, 0, "invalid bytes")
			}
			b.off += int64(len(b.carry))
			b.carry = b.carry[:0]
		}
	}
	rest := data[used:]
	cut := len(rest)
	for i := len(rest) - 1; i >= 0 && i >= len(rest)-3; i-- {
		if c := rest[i]; c < 0x80 {
			break
		} else if c >= 0xC0 {
			if !utf8.FullRune(rest[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(rest[:cut]) {
		i := 0
		for i < cut {
			r, size := utf8.DecodeRune(rest[i:cut])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return bad(b.off+int64(i), used+i, "invalid bytes")
	}
	b.off += int64(cut)
	if cut < len(rest) {
		b.carry = append(b.buf[:0], rest[cut:]...)
	}
	if err == io.EOF && len(b.carry) > 0 {
		return bad(b.off, n, "the body ends inside a character")
	}
	return n, err
}

// surrogateScan finds the JSON escapes of lone UTF-16 surrogates in a
// stream of JSON text: a \uD800-\uDBFF not followed at once by a
// \uDC00-\uDFFF, or the latter alone. NB: Go's decoder turns each into
// U+FFFD, so "a\ud800" and "a\udc00" were stored as one id (Python's
// json.dumps writes them for a str that holds a lone surrogate); raw
// bytes that are not UTF-8 were refused already. A backslash is an
// escape wherever it is: outside a string it is a syntax error the
// decoder refuses anyway.
type surrogateScan struct {
	state  int   // 0: text; 1: after a backslash; 2-5: the \u escape's hex digits read, plus 2
	val    rune  // the \u escape's value so far
	escAt  int64 // the offset of the escape being read
	high   bool  // the last escape was a high surrogate: a low one must follow at once
	highAt int64
}

// scan reads data, which starts at offset off of the stream, and returns
// the offset of the first lone surrogate escape, or -1.
func (s *surrogateScan) scan(data []byte, off int64) int64 {
	for i := 0; i < len(data); {
		switch s.state {
		case 0:
			if !s.high {
				j := bytes.IndexByte(data[i:], '\\')
				if j < 0 {
					return -1
				}
				i += j
			} else if data[i] != '\\' {
				return s.highAt
			}
			s.state, s.escAt = 1, off+int64(i)
			i++
		case 1:
			if data[i] == 'u' {
				s.state, s.val = 2, 0
			} else if s.high {
				return s.highAt
			} else {
				s.state = 0 // another escape (a malformed one is the decoder's to refuse)
			}
			i++
		default:
			c, d := data[i], rune(-1)
			switch {
			case c >= '0' && c <= '9':
				d = rune(c - '0')
			case c >= 'a' && c <= 'f':
				d = rune(c-'a') + 10
			case c >= 'A' && c <= 'F':
				d = rune(c-'A') + 10
			}
			if d < 0 {
				s.state, s.high = 0, false // malformed: the decoder refuses it
				continue
			}
			s.val, s.state = s.val<<4|d, s.state+1
			i++
			if s.state < 6 {
				continue
			}
			s.state = 0
			switch {
			case s.val >= 0xD800 && s.val < 0xDC00:
				if s.high {
					return s.highAt
				}
				s.high, s.highAt = true, s.escAt
			case s.val >= 0xDC00 && s.val < 0xE000:
				if !s.high {
					return s.escAt
				}
				s.high = false
			case s.high:
				return s.highAt
			}
		}
	}
	return -1
}

func (b *utf8Body) Close() error { return b.r.Close() }
