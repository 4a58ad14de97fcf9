// Package client talks to an lshdb server (lshdb serve, or a program that
// serves db/httpapi's Handler) with the methods and types of *db.DB: the
// methods it has take and return what *db.DB's of the same name do, so
// that code written against the embedded database's reads and writes runs
// against an index another process owns. It has no method of the owner's
// process alone: All (Scan streams the same), Sync, SweepExpired,
// Metrics, Corruption (GET /healthz says "damaged"), RoomToWrite (it says
// "disk_full"), PrepareBatch, PutPrepared, Dir, Created and
// OtherWriters. The calls that take no context (Put, Get, Count, …)
// follow Options.Context and Options.Timeout; PutContext, DeleteContext,
// HasIDsContext and the others that take one, that context. No interface names
// the methods both share; a program that uses either declares the one it
// needs.
//
//	c, err := client.Open("/var/lib/mydocs/lshdb.sock", nil) // the owner's Unix socket
//	// or: client.Open("https://idx.example:7070", &client.Options{Token: tok})
//	if err != nil { ... }
//	defer c.Close()
//	res, err := c.Query(ctx, "the quick brown fox", &db.QueryOptions{Limit: 10})
//	if errors.Is(err, db.ErrNotFound) { ... }
//
// Every error the server reports matches the same sentinel with errors.Is
// as in-process (db.ErrNotFound, db.ErrInvalidID, …), or one of
// httpapi's (ErrUnauthorized, ErrBodyTooLarge, …); a failure to reach the
// server is a *url.Error. The methods without a context (Put, Get,
// Explain, …) run under Options.Timeout.
//
// Timeouts: by default none. A server that is stopped (kill -STOP, a
// debugger) or stuck keeps a call without a context waiting for as long
// as it is, and Open too: a service that calls an index through this
// package sets Options.Timeout and Options.OpenTimeout (the lshdb
// command waits 15 s for a server's first answer), and passes contexts
// with deadlines to the methods that take one. A write whose timeout or
// context ends after its request was sent returns the context's error,
// and may still be applied by the server (a stopped server applies it
// when it resumes): read it back, or write it again (a document put
// again replaces itself).
//
// Caveat: JSON strings are UTF-8. A text that is not valid UTF-8 is
// refused before anything is sent, with db.ErrInvalidDoc, as a handle
// opened with db.Options.StrictUTF8 refuses it (in process, a handle
// without it stores such a text, shingled with U+FFFD for each invalid
// byte). An id that is not valid UTF-8 is refused with db.ErrInvalidID,
// as in process: replaced, two such ids would name one document, and
// the second write would overwrite the first. db.IsExpired is false for
// the client's errors: the server answers an expired document's
// ErrNotFound as not_found, whose message says "(expired)".
//
// Proxies: the default HTTPClient takes a proxy from HTTP_PROXY,
// HTTPS_PROXY and NO_PROXY as net/http does (loopback addresses are never
// proxied), so a plain http:// URL sends its requests, the token in
// their Authorization header, in clear to that proxy: give the server an
// https:// URL, or name it in NO_PROXY, or give an HTTPClient whose
// Transport has no Proxy.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/seqs"
)

// Options configure Open. The zero value is a valid configuration.
type Options struct {
	// Token is the server's bearer token, if it has one (blanks and a
	// line end around it are trimmed; a line end or another control
	// character inside it is ErrInvalidOptions).
	Token string
	// Timeout bounds the calls that take no context (Put, Get, Delete,
	// Bucket, Explain, …). The methods that take one follow that context
	// alone (PutBatchContext, PutIfNewBatch, Query, Pairs, …): a stream
	// or a batch may take long. Default: none.
	Timeout time.Duration
	// Context, if set, ends the calls that take no context (Put, Get,
	// Count, Info, Explain, …) when it ends, with its error: a program's
	// shutdown, or an interrupted command (an attached lshdb get waited
	// out its 5-minute Timeout after Ctrl-C on a server that did not
	// answer: a review of serve, SV3-3). The methods that take a context
	// follow theirs. Default: none.
	Context context.Context
	// OpenTimeout bounds Open's exchange with the server, which answers
	// at once unless it is stopped or stuck: a server that does not answer
	// in time fails Open with an error that says so. Default: none.
	OpenTimeout time.Duration
	// HTTPClient sends the requests (TLS settings, proxies). Default: a
	// client of its own, dialling the Unix socket for a socket target,
	// whose idle connections to a URL last half of the server's idle
	// timeout (/v1/params' idle_timeout_ms). Give yours a Transport
	// whose IdleConnTimeout is below the server's (or a proxy's), or a
	// write sent on a connection just as the server closes it fails with
	// its fate unknown (ErrConnectionCut).
	// NB: for a socket target, its Transport is replaced; the client
	// follows no redirect, whatever its CheckRedirect.
	HTTPClient *http.Client
	// MaxAnswerBytes bounds what the client reads of one answer, or of
	// one line of a streamed one (Pairs, Scan, Clusters, …): a longer one
	// fails the call with ErrMalformedAnswer, so that a server gone wrong,
	// or a program that is not lshdb's, cannot make the client hold more
	// (its buffer, grown by doubling, allocates about twice the bound in
	// all before the refusal; an answer whose Content-Length is over the
	// bound is refused before any of it is read).
	// Default: DefaultMaxAnswerBytes; negative: no bound.
	MaxAnswerBytes int64
}

// DefaultMaxAnswerBytes is the default Options.MaxAnswerBytes: 1 GiB,
// far more than an lshdb server's answer but for a huge batch of queries
// with their texts. NB: with no bound, a server that answered one JSON
// line that never ended took an attached lshdb pairs to 1.3 GB in 15 s,
// still growing (a security review, S2).
const DefaultMaxAnswerBytes = 1 << 30

// Client is a connection to one lshdb server. Every method is safe for
// concurrent use. The caller MUST call Close.
type Client struct {
	base string // http://host:port, no trailing slash
	hc   *http.Client
	// writes is the client of the writes on a Unix socket (no
	// kept-alive connection); nil: hc.
	writes *http.Client
	o      Options
	params db.Params
	maxDoc int
	// maxBody is the server's bound on a request body: 0 when it did not
	// say (an earlier lshdb), negative for none.
	maxBody int64
	// maxBatch is the server's bound on the documents (or queries) of a
	// request: 0 when it did not say (none), negative for none.
	maxBatch int
	// instance is the server's index's instance name, read by Open.
	instance string
	closed   atomic.Bool
	// done ends with Close (closeCalls), and with it every call in
	// flight, as db.DB.Close ends its long calls (with db.ErrClosed).
	done       context.Context
	closeCalls context.CancelFunc
	timeout    time.Duration
	// maxAnswer bounds an answer, or a line of a stream (0: none).
	maxAnswer int64
}

// Open connects to the server at target: an http:// or https:// URL (the
// server's root, or the path a proxy publishes it under), or else the
// path of a Unix socket (relative to the working directory, or absolute;
// a leading unix: is dropped), or of a served index's directory (its
// socket, lshdb.sock). It asks
// the server for the index's parameters, so a wrong address or token
// fails here.
func Open(target string, opts *Options) (*Client, error) {
	return OpenContext(context.Background(), target, opts)
}

// OpenContext is Open whose first exchange with the server (the index's
// parameters) gives up when ctx ends; the client's later calls do not
// depend on ctx.
func OpenContext(ctx context.Context, target string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	// NB: a token with a line end (read from a file) failed every call
	// with net/http's "invalid header field value": the server trims
	// its own, and blanks around this one are trimmed as well.
	o.Token = strings.TrimSpace(o.Token)
	if o.Timeout < 0 || o.OpenTimeout < 0 {
		return nil, fmt.Errorf("%w: client: Timeout %v, OpenTimeout %v: want 0 (none) or more", db.ErrInvalidOptions, o.Timeout, o.OpenTimeout)
	}
	if i := strings.IndexFunc(o.Token, func(r rune) bool { return r < ' ' || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("%w: client: the token (Options.Token; the command's LSHDB_TOKEN) holds a control character (%q at byte %d), which an HTTP header cannot carry", db.ErrInvalidOptions, o.Token[i], i)
	}
	c := &Client{o: o, timeout: o.Timeout, maxAnswer: o.MaxAnswerBytes}
	switch {
	case c.maxAnswer == 0:
		c.maxAnswer = DefaultMaxAnswerBytes
	case c.maxAnswer < 0:
		c.maxAnswer = 0 // no bound
	}
	c.done, c.closeCalls = context.WithCancel(context.Background())
	hc := o.HTTPClient
	own := hc == nil // the transport is the client's own
	if own {
		// NB: a transport of its own, not http.DefaultTransport: Open
		// sets its idle timeout from the server's, and Close closes its
		// idle connections, not every one of the program's.
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	} else {
		cp := *hc
		hc = &cp
	}
	socket := false // a Unix socket's, not a URL's
	switch {
	case hasSchemePrefix(target, "http://") || hasSchemePrefix(target, "https://"):
		u, err := url.Parse(target)
		if err != nil {
			return nil, fmt.Errorf("%w: client: %w", db.ErrInvalidOptions, err)
		}
		if u.Host == "" {
			// NB: net/http's "no Host in request URL" came at the first
			// call (a bad-input review, B12).
			return nil, fmt.Errorf("%w: client: %s: no host: want http(s)://HOST:PORT", db.ErrInvalidOptions, target)
		}
		if first, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/"); first == "v1" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("%w: client: %s: the address is a server's root (scheme://host:port, with no path), or the prefix a proxy publishes it under (/v1 is the API's own path), with no query, fragment or user", db.ErrInvalidOptions, target)
		}
		// NB: a path is the prefix a proxy publishes the server under
		// (https://lb/lshdb: the proxy strips it): it was refused, and a
		// server behind a shared load balancer was out of reach (an
		// operator's review, SV-6).
		c.base = u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/")
	case strings.Contains(target, "://") && !strings.HasPrefix(target, "unix:"):
		// NB: ftp://x:1 was dialled as a socket file, and the error
		// blamed a server that stopped (a bad-input review, B12).
		scheme, _, _ := strings.Cut(target, "://")
		return nil, fmt.Errorf("%w: client: %s: a server's address is http:// or https:// (not %s://), or a socket's path", db.ErrInvalidOptions, target, scheme)
	default:
		path := strings.TrimPrefix(target, "unix:")
		if path == "" {
			return nil, fmt.Errorf("%w: client: no address (a socket path or an http(s) URL)", db.ErrInvalidOptions)
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			// NB: the index's directory is its server's socket: dialled
			// as a socket, it said no server answered while one did (an
			// operator's review, SV-5).
			path = httpapi.SocketPath(path)
		}
		// NB: HOST:PORT with no scheme would be dialled as a socket file
		// of that name ("dial unix 127.0.0.1:7072: no such file"): say
		// what was meant, unless such a file exists (or it has a slash:
		// a path).
		if _, port, err := net.SplitHostPort(target); err == nil && !strings.HasPrefix(target, "unix:") && !strings.Contains(target, "/") && port != "" && strings.Trim(port, "0123456789") == "" {
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("%w: client: %s: a server's address is a URL, http://%s (a socket is a file path)", db.ErrInvalidOptions, target, target)
			}
		}
		var d net.Dialer
		// NB: a path too long for a socket address is dialled relative to
		// the working directory, if that is short enough, as it is at
		// each dial.
		hc.Transport = &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				c, err := d.DialContext(ctx, "unix", httpapi.DialPath(path))
				if err == nil {
					if err = checkPeer(c, path); err != nil {
						c.Close()
						return nil, err
					}
				}
				return c, err
			},
			MaxIdleConnsPerHost: 64,
		}
		socket = true
		// NB: the host is a placeholder; the transport dials the socket.
		c.base = "http://lshdb"
	}
	// NB: no redirect is followed: one sent a delete, with its token and
	// body, to another port of the host (a security review, S4); and
	// an lshdb server redirects nothing.
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		return fmt.Errorf("%w: the server redirected %s %s to %s, and a client follows no redirect (is %s an lshdb server?)", ErrMalformedAnswer, via[0].Method, via[0].URL.Path, r.URL.Redacted(), target)
	}
	// NB: on a socket, a write goes on a connection of its own: an owner
	// that stops serving (a command handing the index over) closes its
	// idle connections, and a write sent on one just then was cut in
	// flight (ErrConnectionCut: its fate unknown, and not repeated) where
	// it had not been read (a concurrency review, C1: once in 40
	// handovers). A new connection is served, or refused at the dial
	// once the socket's name is gone (httpapi.DrainSocket), which an
	// attached command repeats on the next owner. It costs a write about
	// 0.15 ms (a synced write takes milliseconds); reads, which a cut one
	// may simply repeat, keep their connections (a query by id over the
	// socket took 2.4x its time on a connection of its own). A copy of
	// hc, with its redirect check.
	if socket {
		wt := hc.Transport.(*http.Transport).Clone()
		wt.DisableKeepAlives = true
		hw := *hc
		hw.Transport = wt
		c.writes = &hw
	}
	c.hc = hc
	ctx, cancel := c.ctxFrom(ctx) // NB: Open takes no context: Timeout bounds it
	defer cancel()
	if o.OpenTimeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, o.OpenTimeout, errNoAnswer)
		defer cancel()
	}
	var p httpapi.ParamsJSON
	if err := c.callUpTo(ctx, "GET", "/v1/params", nil, nil, &p, paramsAnswerBytes); err != nil {
		if errors.Is(context.Cause(ctx), errNoAnswer) {
			return nil, fmt.Errorf("lshdb: client: %s did not answer within %v (is the server stopped or stuck?): %w", target, o.OpenTimeout, err)
		}
		if errors.As(err, new(answerTooLarge)) {
			return nil, fmt.Errorf("%w, far more than an lshdb server's parameters: is %s an lshdb server?", err, target)
		}
		return nil, err
	}
	var err error
	if c.params, err = p.Params(); err != nil {
		return nil, fmt.Errorf("lshdb: client: the server's parameters: %w", err)
	}
	c.maxDoc = p.MaxDocBytes
	c.maxBody = p.MaxBodyBytes
	c.maxBatch = p.MaxBatch
	c.instance = p.Instance
	if own && !socket {
		keepIdleBelow(hc, time.Duration(p.IdleTimeoutMS)*time.Millisecond)
	}
	return c, nil
}

// keepIdleBelow gives hc, whose transport is the client's own, a transport
// that keeps an idle connection for at most half of the server's idle
// timeout (none said: as it is), and closes the idle connections of the
// one it replaces.
//
// NB: a server closes a keep-alive connection idle for its --idle-timeout
// (2 min by default, 1 s in the review), and a write sent on one just
// then was cut in flight: the client said its fate unknown, and the
// server had never read it (an operator's review, SV-1: 5 of 800 puts at
// 1 s). On a socket every write has a connection of its own instead.
func keepIdleBelow(hc *http.Client, serverIdle time.Duration) {
	t, ok := hc.Transport.(*http.Transport)
	if !ok || serverIdle <= 0 {
		return
	}
	keep := max(serverIdle/2, time.Millisecond)
	if t.IdleConnTimeout > 0 && t.IdleConnTimeout <= keep {
		return
	}
	nt := t.Clone()
	nt.IdleConnTimeout = keep
	hc.Transport = nt
	t.CloseIdleConnections()
}

// errNoAnswer is the cause of Open's context when OpenTimeout passes.
var errNoAnswer = errors.New("no answer")

// ErrMalformedAnswer is matched (errors.Is) by the error of a call whose
// answer is not what an lshdb server of this version sends: not JSON of
// the call's shape, or not as many results as were asked for (a server
// of another version, or a program that is not lshdb's).
var ErrMalformedAnswer = errors.New("lshdb: client: a malformed answer")

// malformedError is an ErrMalformedAnswer naming what was malformed.
type malformedError struct {
	what string
	err  error
}

func (e *malformedError) Error() string {
	return "lshdb: client: a malformed " + e.what + ": " + e.err.Error()
}
func (e *malformedError) Unwrap() error        { return e.err }
func (e *malformedError) Is(target error) bool { return target == ErrMalformedAnswer }

func malformed(what string, err error) error { return &malformedError{what, err} }

// ErrConnectionCut is matched (errors.Is) by the error of a call whose
// connection the server closed before it answered, or before its answer
// ended (a stream such as Pairs' cut part-way): it is stopping, or
// was killed or restarted. A call that writes nothing (a query, a get,
// stats) may be made again; a write may or may not have been applied.
var ErrConnectionCut = errors.New("lshdb: client: the server closed the connection before it answered")

// ErrNoServer is matched (errors.Is) by the error of a call that found
// no server to send it to: nothing listens on the socket or the address
// (the server stopped, or was killed and not yet restarted). Nothing was
// sent, so a write was not applied; any call may be made again as it is
// once a server is back.
var ErrNoServer = errors.New("lshdb: client: no server answers")

// ErrForeignSocket is the error of a Unix socket that a process of
// another user serves (Linux, by its peer credentials): neither this
// process's user nor root, nor, when this process is root's, the user
// that owns the socket's directory (the index's). Nothing is sent to it: in a directory others
// may write to, one of them could put a socket of their own in place of
// the index's and take the token.
var ErrForeignSocket = errors.New("lshdb: client: the socket is another user's")

// Close ends the calls in flight (they return db.ErrClosed, a stream
// such as Pairs' at its next read) and releases the client's idle
// connections. Later calls return db.ErrClosed, as a closed *db.DB's do;
// closing twice returns db.ErrClosed. It does not stop the server: a
// write in flight may have been applied.
//
// NB: it closed only the idle connections, and a Pairs loop that called
// Close streamed its 380,000 pairs to the end (a client user's review).
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return db.ErrClosed
	}
	c.closeCalls()
	c.hc.CloseIdleConnections()
	if c.writes != nil {
		c.writes.CloseIdleConnections()
	}
	return nil
}

// callBody is the body of an answer: its reads fail with db.ErrClosed
// once the client is closed, and its Close releases the call's context.
type callBody struct {
	io.ReadCloser
	c       *Client
	release func()
}

func (b *callBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.c.done.Err() != nil {
		err = closedErr(err)
	}
	return n, err
}

func (b *callBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// closedErr is the error of a call that Close ended.
func closedErr(err error) error {
	return fmt.Errorf("%w: the client was closed during the call (%w)", db.ErrClosed, err)
}

// Instance returns the instance name of the server's index (see
// db.Info.Instance), read once by Open: empty for an index made before
// lshdb gave one, or a server of an earlier build.
func (c *Client) Instance() string { return c.instance }

// Params returns the index's parameters (fixed for its life: read once,
// by Open).
func (c *Client) Params() db.Params {
	p := c.params
	p.StopWords = append([]string(nil), p.StopWords...)
	return p
}

// MaxDocBytes returns the largest text plus metadata the server's index
// accepts.
func (c *Client) MaxDocBytes() int { return c.maxDoc }

// MaxBodyBytes returns the server's bound on a request body
// (httpapi.Options.MaxBodyBytes, lshdb serve --max-body), read once by
// Open: a PutBatch whose JSON is larger is refused with
// httpapi.ErrBodyTooLarge and stores nothing (a document too large for a
// request of its own, with db.ErrDocTooLarge too, before it is sent). Negative: no bound; 0: the
// server did not say (an lshdb before it did, whose default was
// httpapi.DefaultMaxBodyBytes).
func (c *Client) MaxBodyBytes() int64 { return c.maxBody }

// MaxBatch returns the server's bound on the documents of a PutBatch and
// the queries of a QueryMany (httpapi.Options.MaxBatch, lshdb serve
// --max-batch), read once by Open: a larger one is refused with
// httpapi.ErrBatchTooLarge before it is sent. 0 or negative: no bound.
func (c *Client) MaxBatch() int { return c.maxBatch }

// batch refuses n documents (or queries) over the server's MaxBatch,
// as the server would, without sending them.
func (c *Client) batch(n int, what string) error {
	if c.maxBatch > 0 && n > c.maxBatch {
		return fmt.Errorf("%w: %d %s in one request (the server takes at most %d, lshdb serve --max-batch): split them", httpapi.ErrBatchTooLarge, n, what, c.maxBatch)
	}
	return nil
}

// Error is an error the server reported. It matches its code's sentinel
// with errors.Is (db.ErrNotFound for "not_found", …).
type Error struct {
	Status  int    // HTTP status
	Code    string // stable code, as in httpapi.Codes
	Message string // the server's message, which names the problem
	// Also names the io/fs errors the server's error matched besides
	// its code's sentinel (httpapi.ErrorBody.Also).
	Also []string
	// Retry says that the same request may succeed later, unchanged
	// (httpapi.ErrorBody.Retry: the server shutting down, a lock another
	// process holds, a Redis index failing over); RetryAfter is how long
	// the server asked to wait first (its Retry-After), 0 when it did not
	// say. NB: a service had to tell these from the codes alone (an HTTP
	// review, HT-5).
	Retry      bool
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel of e's code.
func (e *Error) Unwrap() error { return httpapi.ErrorOf(e.Code) }

// Is reports whether target is one of the io/fs errors the server's error
// matched too (Also), so that errors.Is matches them as in-process; and
// db.ErrClosed for a request the server cut as it shut down (code
// "shutdown", httpapi.ErrShutdown), which was "closed" before it had a
// code of its own: a program that reconnects on db.ErrClosed goes on
// doing so.
func (e *Error) Is(target error) bool {
	if target == db.ErrClosed && e.Code == "shutdown" {
		return true
	}
	for _, name := range e.Also {
		if err, ok := httpapi.FSErrors[name]; ok && err == target {
			return true
		}
	}
	return false
}

func (c *Client) ctx() (context.Context, context.CancelFunc) {
	if c.o.Context != nil {
		return c.ctxFrom(c.o.Context)
	}
	return c.ctxFrom(context.Background())
}

// callerCtx is the context of a method that takes one: the caller's
// alone, which Options.Timeout does not cut.
//
// NB: it did: a PutIfNewBatch of 20,000 documents under a Timeout of
// 300 ms stopped with 4,000 answered and 4,155 stored, though its
// context had no deadline.
func callerCtx(base context.Context) (context.Context, context.CancelFunc) {
	if base == nil {
		base = context.Background()
	}
	return context.WithCancel(base)
}

// ctxFrom is ctx under a caller's context.
func (c *Client) ctxFrom(base context.Context) (context.Context, context.CancelFunc) {
	if base == nil {
		base = context.Background()
	}
	if c.timeout > 0 {
		return context.WithTimeoutCause(base, c.timeout, callTimeout{c.timeout})
	}
	return context.WithCancel(base)
}

// callTimeout is the cause of a call's context once Options.Timeout
// passed: the call's error (errors.Is context.DeadlineExceeded) says so.
type callTimeout struct{ d time.Duration }

func (e callTimeout) Error() string {
	return fmt.Sprintf("lshdb: client: the server did not answer within %v (client.Options.Timeout): is it stuck, or busy with a long call?", e.d)
}
func (e callTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// readOnly reports whether the API's method and path write nothing: every
// GET, and the POSTs that only read (a body too long for a query string).
func readOnly(method, path string) bool {
	switch {
	case method == http.MethodGet:
		return true
	case method != http.MethodPost:
		return false
	}
	switch path {
	case "/v1/docs/has", "/v1/query", "/v1/query/many", "/v1/clusters":
		return true
	}
	return false
}

// do sends a request and returns the response of a 2xx status; other
// statuses become an *Error. The caller MUST close the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, error) {
	if c.closed.Load() {
		return nil, db.ErrClosed
	}
	if ctx == nil {
		ctx = context.Background()
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case io.Reader:
			rd = b
		default:
			// NB: without HTML escapes: "<", ">" and "&" took 6 bytes
			// each, and a batch's body grew past what its texts weigh.
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(body); err != nil {
				return nil, fmt.Errorf("lshdb: client: %w", err)
			}
			// NB: refused here, as the server would: sent, a body far
			// over the bound was answered 413 and cut before it was read
			// whole, and the transport, which saw the cut first, said
			// ErrConnectionCut ("may have been applied") in 38 of 54
			// batches over a Unix socket (an HTTP review, HT-1).
			if c.maxBody > 0 && int64(buf.Len()) > c.maxBody {
				return nil, fmt.Errorf("%w: %d bytes (at most %d: lshdb serve --max-body); nothing was sent", httpapi.ErrBodyTooLarge, buf.Len(), c.maxBody)
			}
			rd = &buf
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.done, cancel)
	release := func() { stop(); cancel() }
	req, err := http.NewRequestWithContext(rctx, method, u, rd)
	if err != nil {
		release()
		return nil, fmt.Errorf("lshdb: client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost && readOnly(method, path) {
		// NB: a read sent with a body (a query by text) may be sent
		// again: so marked (a key of no value, which is not sent), the
		// transport sends it again on a new connection when the kept-
		// alive one it took was closed under it (a server restarted), as
		// it does a GET; it failed with ErrConnectionCut (HT-4).
		req.Header["X-Idempotency-Key"] = nil
	}
	if c.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.Token)
	}
	hc := c.hc
	if c.writes != nil && !readOnly(method, path) {
		hc = c.writes
	}
	resp, err := hc.Do(req)
	if err != nil {
		release()
		if c.done.Err() != nil && ctx.Err() == nil {
			return nil, closedErr(err)
		}
		if ctx.Err() != nil {
			// NB: as in-process: a cancelled call returns ctx's error.
			return nil, withCtxErr(ctx, err)
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			// NB: also what a server killed before it answered leaves:
			// the transport retries an idempotent request on a new
			// connection, whose dial fails. A write is not sent again
			// so (unless nothing of it was written), so a write whose
			// dial failed was not applied: it said only "no server
			// answers (it stopped, or was killed before it answered)",
			// which read as maybe applied, with nothing to match (a
			// soak of serve under kill -9, SOAK-1: 98% of the failed
			// writes).
			if errors.Is(err, syscall.ENOENT) && op.Addr != nil {
				// NB: a socket path with no file: a path mistyped as
				// likely as a server gone (an inspection review's SH-8:
				// it said only that the server stopped).
				what := "nothing was sent"
				if !readOnly(method, path) {
					what += ", so the write was not applied"
				}
				return nil, fmt.Errorf("%w: there is no socket %s (a server removes its socket as it stops; check the path): %s: %w", ErrNoServer, op.Addr, what, err)
			}
			if readOnly(method, path) {
				return nil, fmt.Errorf("%w (it stopped, or was killed before it answered): the call writes nothing; make it again once a server is back: %w", ErrNoServer, err)
			}
			return nil, fmt.Errorf("%w (it stopped, or was killed): nothing was sent, so the write was not applied; send it as it is once a server is back: %w", ErrNoServer, err)
		}
		if connEnded(err) {
			// NB: a server stopping closes its idle connections, and a
			// request sent on one as it closed met a bare "connection
			// reset by peer" or "use of closed network connection".
			if readOnly(method, path) {
				// NB: a query cut so said a write may have been applied,
				// and an operator reading it after a restart feared for
				// the writes (review O3).
				return nil, fmt.Errorf("%w (it is stopping, or was killed or restarted): the call writes nothing; make it again: %w", ErrConnectionCut, err)
			}
			if path == "/v1/backup" {
				// NB: a backup's copy gets its name last, so a cut one
				// has none (it said a document put again replaces
				// itself: a review).
				return nil, fmt.Errorf("%w (it is stopping, or was killed or restarted): the backup did not answer; its directory is there only if the copy was complete (and verified, if asked): %w", ErrConnectionCut, err)
			}
			if m, ok := cutMaintenance[path]; ok {
				// NB: a repair cut so was told to read a document back,
				// or put it again (an operator's review, OP-6).
				return nil, fmt.Errorf("%w (it is stopping, or was killed or restarted): the %s did not answer, and may or may not have run, in part or whole; it is safe to run again: %w", ErrConnectionCut, m, err)
			}
			return nil, fmt.Errorf("%w (it is stopping, or was killed or restarted): %s: %w", ErrConnectionCut, cutWrite(path), err)
		}
		return nil, err
	}
	resp.Body = &callBody{ReadCloser: resp.Body, c: c, release: release}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	return resp, nil
}

// cutWrite says what a write to path whose connection was cut before
// its answer may have done, and how to send it again (the README's
// Retries).
//
// NB: every write was told to write it again, a document put again
// replacing itself: a delete so sent again fails whole, not_found, once
// the first was applied, and put-if-new stores a repeat anew (a soak of
// serve under kill -9, SOAK-2).
func cutWrite(path string) string {
	switch path {
	case "/v1/docs/delete":
		return "the delete may or may not have been applied (has tells); sent again after it was, it fails whole with not_found unless it ignores missing ids: send it again so (WriteOptions.IgnoreMissing, ignore_missing)"
	case "/v1/docs/put-if-new":
		return "some of its documents may be stored, as their lines were answered, and one sent again is stored anew (replaced, not a duplicate of itself): ask has which are stored, and send the others again"
	case "/v1/load":
		return "the load may or may not have been applied, whole or (on Redis) in part: send it again"
	}
	return "the write may or may not have been applied (read it back, or send it again: a document put again replaces itself)"
}

// cutMaintenance names the maintenance calls by their paths, for the
// error of one whose connection was cut: each may be run again.
var cutMaintenance = map[string]string{
	"/v1/repair":  "repair (check --repair)",
	"/v1/compact": "compaction",
	"/v1/purge":   "purge",
}

// plainCodes are the codes of the answers without a JSON error body that
// net/http makes itself, in plain text, by their status: a header too
// large, a bad Content-Length, a transfer encoding or version it does not
// take (501, 505) are the request's fault.
//
// NB: every one was ErrInternal (an SRE review's H3).
var plainCodes = map[int]string{
	http.StatusBadRequest:                  "bad_request",
	http.StatusLengthRequired:              "bad_request",
	http.StatusRequestURITooLong:           "bad_request",
	http.StatusRequestHeaderFieldsTooLarge: "bad_request",
	http.StatusNotImplemented:              "bad_request",
	http.StatusHTTPVersionNotSupported:     "bad_request",
	http.StatusRequestEntityTooLarge:       "body_too_large",
	http.StatusRequestTimeout:              "request_timeout",
	http.StatusUnauthorized:                "unauthorized",
	http.StatusNotFound:                    "no_route",
	http.StatusMethodNotAllowed:            "method_not_allowed",
	http.StatusServiceUnavailable:          "shutdown",
}

// errorOf reads a non-2xx answer's error.
func errorOf(resp *http.Response) error {
	var e httpapi.ErrorJSON
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" {
		code, ok := plainCodes[resp.StatusCode]
		if !ok {
			code = "internal" // NB: a proxy's 429 or 502, say
		}
		return &Error{Status: resp.StatusCode, Code: code,
			Message: fmt.Sprintf("lshdb: client: the server answered %s: %.200q", resp.Status, b)}
	}
	err := errorFrom(resp.StatusCode, &e.Error)
	var ce *Error
	if errors.As(err, &ce) {
		if secs, perr := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); perr == nil && secs > 0 {
			ce.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return err
}

// errorFrom is the error of an answer's error body: an *Error, inside a
// *db.DocError or *db.QueryError (around the error of the document or
// query itself) when the body names one, as the call in process returns.
func errorFrom(status int, b *httpapi.ErrorBody) error {
	e := &Error{Status: status, Code: b.Code, Message: b.Message, Also: b.Also, Retry: b.Retry}
	if b.Index == nil || b.Cause == "" {
		return e
	}
	cause := &Error{Status: status, Code: b.Code, Message: b.Cause, Retry: b.Retry}
	if b.ID != nil {
		return &db.DocError{Index: *b.Index, ID: *b.ID, Err: cause}
	}
	return &db.QueryError{Index: *b.Index, Err: cause}
}

// call sends a request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return c.callUpTo(ctx, method, path, q, body, out, c.maxAnswer)
}

// paramsAnswerBytes bounds the answer that Open reads, the index's
// parameters: from an lshdb server a few hundred bytes, or, with a list
// of stop words (codec.MaxStopWords of them at most, each a word), a few
// MiB; and anything, endlessly, from an address that is not one (another
// service, a proxy): read whole, such an answer took 1.88 GB of a
// command's memory in the 15 seconds before its attach gave up (an
// adversarial review's A3). NB: 1 MiB refused an index of 60,000 stop
// words (a read-through's R3).
const paramsAnswerBytes = 64 << 20

// answerTooLarge is callUpTo's error of an answer over its bound (Open
// tells it with errors.As, as connCut is told); it is an
// ErrMalformedAnswer.
type answerTooLarge struct{ error }

func (e answerTooLarge) Is(target error) bool { return target == ErrMalformedAnswer }

// callUpTo is call whose answer may be at most limit bytes (0: no bound).
func (c *Client) callUpTo(ctx context.Context, method, path string, q url.Values, body, out any, limit int64) error {
	resp, err := c.do(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// NB: read into a buffer of the pool, then decoded: a Decoder per
	// answer grew a buffer of its own from 512 bytes each time (see
	// httpapi's marshal for why the garbage matters).
	bp := buffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			buffers.Put(bp)
		}
	}()
	tooLarge := func() error {
		return answerTooLarge{fmt.Errorf("lshdb: client: the answer of %s %s is over %d bytes (client.Options.MaxAnswerBytes)", method, path, limit)}
	}
	if limit > 0 && resp.ContentLength > limit {
		return tooLarge() // NB: refused before a byte of it is held
	}
	b := (*bp)[:0]
	if n := resp.ContentLength; n > int64(cap(b)) {
		// NB: +1: the read that sees the end. At most 1 MiB ahead: a
		// Content-Length is the server's word, and one that lied had
		// the client allocate it whole for a 10-byte body (a
		// read-through, RT12-5); past 1 MiB the buffer grows as read.
		b = make([]byte, 0, min(n+1, 1<<20))
	}
	b, err = readUpTo(b, resp.Body, limit)
	*bp = b[:0]
	if err != nil {
		if err == errOverBound {
			return tooLarge()
		}
		return cutAnswer(ctx, fmt.Errorf("lshdb: client: reading the answer of %s %s: %w", method, path, err))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return malformed(fmt.Sprintf("answer to %s %s", method, path), err)
	}
	return nil
}

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// errOverBound is readUpTo's error past its limit, which its caller says
// naming the call.
var errOverBound = errors.New("lshdb: client: the answer is over its bound (client.Options.MaxAnswerBytes)")

// readUpTo reads r to its end, appending to b, failing with errOverBound
// past limit bytes (0 or less: no bound). b grows as grow says.
func readUpTo(b []byte, r io.Reader, limit int64) ([]byte, error) {
	for {
		b = grow(b, 1, limit)
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if limit > 0 && int64(len(b)) > limit {
			return b, errOverBound
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Put stores the document d under d.ID, replacing any document with that
// id.
func (c *Client) Put(d db.Doc, wo *db.WriteOptions) error {
	_, err := c.PutBatch([]db.Doc{d}, wo)
	return err
}

// PutContext is Put that gives up when ctx ends, as DB.PutContext does
// (see PutBatchContext; Options.Timeout does not bound it).
func (c *Client) PutContext(ctx context.Context, d db.Doc, wo *db.WriteOptions) error {
	_, err := c.PutBatchContext(ctx, []db.Doc{d}, wo)
	return err
}

// PutBatch stores documents atomically (all of them or none), with a
// report.
func (c *Client) PutBatch(docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.PutBatchContext(ctx, docs, wo)
}

// PutBatchContext is PutBatch that gives up when ctx ends, as
// db.DB.PutBatchContext does: the request is cut, and a server still
// waiting to write the batch (behind a load) does not write it. One it
// was already writing is written: an error from a cut request says
// nothing of whether the batch was stored.
func (c *Client) PutBatchContext(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error) {
	if err := c.wireable(docs); err != nil {
		return db.BatchResult{}, err
	}
	if err := c.batch(len(docs), "documents"); err != nil {
		return db.BatchResult{}, err
	}
	req := httpapi.PutRequest{Docs: make([]httpapi.DocJSON, len(docs))}
	for i, d := range docs {
		req.Docs[i] = httpapi.DocIn(d)
	}
	if wo != nil {
		req.NoSync, req.StoreText, req.SkipEmpty = wo.NoSync, wo.StoreText, wo.SkipEmpty
		var err error
		if req.TTLMillis, req.ExpireAt, err = httpapi.ExpiryOut(wo); err != nil {
			return db.BatchResult{}, err
		}
	}
	ctx, cancel := callerCtx(ctx)
	defer cancel()
	var body any = req
	if len(docs) == 0 {
		// NB: an empty batch is sent as an empty list, which the server
		// answers as in process (nothing stored, or the options', the
		// context's or a read-only index's error): the wire omits an
		// empty docs, and the request read as one without a document.
		body = struct {
			httpapi.PutRequest
			Docs []httpapi.DocJSON `json:"docs"`
		}{req, []httpapi.DocJSON{}}
	}
	var out httpapi.BatchResultJSON
	if err := c.call(ctx, "POST", "/v1/docs", nil, body, &out); err != nil {
		return db.BatchResult{}, err
	}
	return out.BatchResult(), nil
}

// Load bulk-loads docs through the server's db.Load, streamed as JSON
// Lines: one atomic load, as in process. An error yielded by docs is
// returned unchanged and fails the load (the request is cut, so the
// server stores nothing). LoadOptions.Progress is called with the number
// of documents sent so far; Memory, SkipEmpty, TTL and ExpireAt go to
// the server.
func (c *Client) Load(ctx context.Context, docs iter.Seq2[db.Doc, error], lo *db.LoadOptions) (db.LoadResult, error) {
	if docs == nil {
		return db.LoadResult{}, fmt.Errorf("%w: Load of a nil sequence of documents", db.ErrInvalidOptions)
	}
	q := url.Values{}
	var progress func(int)
	if lo != nil {
		if lo.Memory < 0 {
			return db.LoadResult{}, fmt.Errorf("%w: load memory %d is negative", db.ErrInvalidOptions, lo.Memory)
		}
		if lo.Memory > 0 {
			q.Set("memory", strconv.Itoa(lo.Memory))
		}
		if lo.SkipEmpty {
			q.Set("skip_empty", "true")
		}
		// NB: a server from before these refuses them (an unknown
		// parameter is a bad request), rather than keep what it should
		// delete.
		if lo.DeleteAbsent {
			q.Set("delete_absent", "true")
		}
		// NB: absent, a server takes 50% of its documents (as lshdb
		// build): no limit (MaxDeleted and MaxDeletedPercent 0) it says
		// as all. The server checks them, as Load does.
		switch {
		case lo.MaxDeleted != 0 && lo.MaxDeletedPercent != 0:
			return db.LoadResult{}, fmt.Errorf("%w: load MaxDeleted %d and MaxDeletedPercent %v: give one limit", db.ErrInvalidOptions, lo.MaxDeleted, lo.MaxDeletedPercent)
		case lo.MaxDeleted != 0:
			q.Set("max_deleted", strconv.Itoa(lo.MaxDeleted))
		case lo.MaxDeletedPercent != 0:
			q.Set("max_deleted", strconv.FormatFloat(lo.MaxDeletedPercent, 'f', -1, 64)+"%")
		case lo.DeleteAbsent:
			q.Set("max_deleted", "all")
		}
		if lo.MinStored != 0 {
			q.Set("min_stored", strconv.Itoa(lo.MinStored))
		}
		if err := setExpiry(q, &db.WriteOptions{TTL: lo.TTL, ExpireAt: lo.ExpireAt}); err != nil {
			return db.LoadResult{}, err
		}
		progress = lo.Progress
	}
	if ctx == nil {
		ctx = context.Background()
	}
	pr, pw := io.Pipe()
	var docsErr error
	var panicked any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer recoverSeq(&panicked, pw)
		bw := bufio.NewWriterSize(pw, 1<<20)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false) // NB: "<" is 1 byte, not 6
		n := 0
		for d, err := range seqs.Caller(docs) {
			if err == nil {
				// NB: as PutBatch's: what the index would refuse, or
				// the wire would change (an id not UTF-8, an empty
				// set or signature).
				if err = c.wireable([]db.Doc{d}); err != nil {
					err = &db.DocError{Index: n, ID: d.ID, Err: err}
				}
			}
			if err != nil {
				docsErr = err
				pw.CloseWithError(err)
				return
			}
			if err := enc.Encode(httpapi.DocIn(d)); err != nil {
				pw.CloseWithError(err)
				return
			}
			if n++; progress != nil && n%1024 == 0 {
				progress(n)
			}
		}
		if err := bw.Flush(); err != nil {
			pw.CloseWithError(err)
			return
		}
		if progress != nil {
			progress(n)
		}
		pw.Close()
	}()
	var out httpapi.LoadResultJSON
	err := c.call(ctx, "POST", "/v1/load", q, io.Reader(pr), &out)
	// NB: the writer may still be blocked on the pipe when the server
	// answered early (an error): unblock it, and wait for it to see that
	// (as in process, a docs that blocks for long should watch ctx).
	pr.CloseWithError(errLoadAnswered)
	<-done
	if panicked != nil {
		panic(panicked) // NB: the caller's sequence's, on the caller's goroutine, as in process
	}
	if docsErr != nil {
		return db.LoadResult{}, docsErr
	}
	if err != nil {
		return db.LoadResult{}, err
	}
	return out.LoadResult(), nil
}

// errLoadAnswered stops Load's writer once the server has answered.
var errLoadAnswered = errors.New("lshdb: client: the server answered the load")

// PutIfNew stores doc unless a stored document is a near-duplicate of it,
// which it returns instead.
func (c *Client) PutIfNew(doc db.Doc, wo *db.WriteOptions) (*db.Match, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.PutIfNewContext(ctx, doc, wo)
}

// PutIfNewContext is PutIfNew that gives up when ctx ends, as
// PutBatchContext does: a server still waiting for the writer lock
// (behind a load) stores nothing.
func (c *Client) PutIfNewContext(ctx context.Context, doc db.Doc, wo *db.WriteOptions) (*db.Match, error) {
	if err := c.wireable([]db.Doc{doc}); err != nil {
		return nil, err
	}
	q, err := putIfNewQuery(wo)
	if err != nil {
		return nil, err
	}
	ctx, cancel := callerCtx(ctx)
	defer cancel()
	var out httpapi.PutIfNewJSON
	if err := c.call(ctx, "POST", "/v1/docs/put-if-new", q, httpapi.DocIn(doc), &out); err != nil {
		return nil, err
	}
	if out.Error != nil {
		return nil, errorFrom(http.StatusOK, out.Error)
	}
	return out.Match(), nil
}

// putIfNewQuery is the query of a put-if-new request with wo.
func putIfNewQuery(wo *db.WriteOptions) (url.Values, error) {
	q := url.Values{}
	if wo != nil && wo.NoSync {
		q.Set("no_sync", "true")
	}
	if wo != nil && wo.StoreText {
		q.Set("store_text", "true")
	}
	return q, setExpiry(q, wo)
}

// PutIfNewBatch is db.DB.PutIfNewBatch through the server: the documents
// go in one request (a put-if-new stream), checked and stored in turn,
// the stored ones synced once by a server of this lshdb (one of an
// earlier lshdb syncs each). A document the server refuses, or that
// cannot be sent (an id that is not UTF-8), has its IfNewResult.Err; an
// error of the stream (the server stopped, ctx ended) returns the results
// of the documents answered before it.
func (c *Client) PutIfNewBatch(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) ([]db.IfNewResult, error) {
	if c.closed.Load() {
		return nil, db.ErrClosed
	}
	q, err := putIfNewQuery(wo)
	if err != nil {
		return nil, err
	}
	res := make([]db.IfNewResult, len(docs))
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	var sent []int // positions in docs of the documents sent
	for i, d := range docs {
		if err := c.wireable([]db.Doc{d}); err != nil {
			res[i].Err = err
			continue
		}
		if err := enc.Encode(httpapi.DocIn(d)); err != nil {
			return nil, fmt.Errorf("lshdb: client: %w", err)
		}
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return res, nil
	}
	ctx, cancel := callerCtx(ctx)
	defer cancel()
	resp, err := c.do(ctx, "POST", "/v1/docs/put-if-new", q, &body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer io.Reader = resp.Body
	if c.maxAnswer > 0 {
		answer = &boundedReader{r: resp.Body, left: c.maxAnswer, what: "the answer of POST /v1/docs/put-if-new"}
	}
	dec := json.NewDecoder(answer)
	// NB: read to the body's end, not to the last document's answer: the
	// server's failure may follow it (the final sync's), and says the
	// documents answered as stored may not be durable.
	for k := 0; ; k++ {
		var line struct {
			ID *string `json:"id"`
			httpapi.PutIfNewJSON
		}
		err := dec.Decode(&line)
		answered := res
		if k < len(sent) {
			answered = res[:sent[k]]
		}
		switch {
		case err == io.EOF && k == len(sent):
			return res, nil
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
			fallthrough
		case err != nil:
			return answered, withCtxErr(ctx, cutAnswer(ctx, fmt.Errorf("lshdb: client: reading the answer of POST /v1/docs/put-if-new: %w", err)))
		case line.ID == nil: // the stream's failure
			// NB: not ErrCorrupt, which says the index is damaged (exit
			// 4 in lshdb): the answer is.
			var e error = malformed("put-if-new answer", errors.New("neither id nor error"))
			if line.Error != nil {
				e = errorFrom(http.StatusOK, line.Error)
			}
			return answered, withCtxErr(ctx, e)
		case k >= len(sent):
			return res, malformed("put-if-new answer", fmt.Errorf("more documents answered than the %d sent", len(sent)))
		}
		r := &res[sent[k]]
		switch out := line.PutIfNewJSON; {
		case out.Error != nil:
			r.Err = errorFrom(http.StatusOK, out.Error)
		case out.DuplicateOf != nil:
			r.Match = out.Match()
		default:
			r.Replaced, r.Unchanged = out.Replaced, out.Unchanged
		}
	}
}

// Get returns the document id.
func (c *Client) Get(id string) (*db.StoredDoc, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out httpapi.DocumentJSON
	if err := c.call(ctx, "GET", "/v1/docs", url.Values{"id": {id}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Document()
}

// Has reports whether a document has id.
func (c *Client) Has(id string) (bool, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out struct {
		Exists bool `json:"exists"`
	}
	err := c.call(ctx, "GET", "/v1/docs/has", url.Values{"id": {id}}, nil, &out)
	return out.Exists, err
}

// HasIDs reports for each of ids whether a document has it, in one
// request (POST /v1/docs/has), as DB.HasIDs does (Options.Timeout bounds
// it). A server of an earlier lshdb, which has no such request, is asked
// id by id.
func (c *Client) HasIDs(ids []string) ([]bool, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.hasIDs(ctx, ids)
}

// HasIDsContext is HasIDs that gives up when ctx ends, as
// DB.HasIDsContext does (Options.Timeout does not bound it).
func (c *Client) HasIDsContext(ctx context.Context, ids []string) ([]bool, error) {
	ctx, cancel := callerCtx(ctx)
	defer cancel()
	return c.hasIDs(ctx, ids)
}

func (c *Client) hasIDs(ctx context.Context, ids []string) ([]bool, error) {
	if c.closed.Load() {
		return nil, db.ErrClosed
	}
	for i, id := range ids {
		if err := wireID(id); err != nil && len(ids) > 1 {
			return nil, &db.DocError{Index: i, ID: id, Err: err} // NB: as in process
		} else if err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return []bool{}, nil
	}
	var out httpapi.HasResultJSON
	if err := c.call(ctx, "POST", "/v1/docs/has", nil, httpapi.HasRequest{IDs: ids}, &out); errors.Is(err, httpapi.ErrMethod) {
		found := make([]bool, len(ids))
		for i, id := range ids {
			if found[i], err = c.Has(id); errors.Is(err, db.ErrInvalidID) && len(ids) > 1 {
				return nil, &db.DocError{Index: i, ID: id, Err: err}
			} else if err != nil {
				return nil, err
			}
		}
		return found, nil
	} else if err != nil {
		return nil, err
	}
	if len(out.Exists) != len(ids) {
		return nil, fmt.Errorf("lshdb: client: the server answered %d of %d ids", len(out.Exists), len(ids))
	}
	return out.Exists, nil
}

// Count returns the number of stored documents.
func (c *Client) Count() (uint64, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out struct {
		Docs uint64 `json:"docs"`
	}
	err := c.call(ctx, "GET", "/v1/count", nil, nil, &out)
	return out.Docs, err
}

// Delete removes the document id.
func (c *Client) Delete(id string, wo *db.WriteOptions) error {
	_, err := c.DeleteIDs([]string{id}, wo)
	return err
}

// DeleteContext is Delete that gives up when ctx ends, as
// DB.DeleteContext does (see DeleteIDsContext; Options.Timeout does not
// bound it).
func (c *Client) DeleteContext(ctx context.Context, id string, wo *db.WriteOptions) error {
	_, err := c.DeleteIDsContext(ctx, []string{id}, wo)
	return err
}

// DeleteIDs removes documents atomically: all of them or none.
func (c *Client) DeleteIDs(ids []string, o *db.WriteOptions) (db.DeleteResult, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.DeleteIDsContext(ctx, ids, o)
}

// DeleteIDsContext is DeleteIDs that gives up when ctx ends, as
// PutBatchContext does: a server still waiting to delete (behind a load)
// does not delete.
func (c *Client) DeleteIDsContext(ctx context.Context, ids []string, o *db.WriteOptions) (db.DeleteResult, error) {
	for i, id := range ids {
		if err := wireID(id); err != nil && len(ids) > 1 {
			return db.DeleteResult{}, &db.DocError{Index: i, ID: id, Err: err} // NB: as in process
		} else if err != nil {
			return db.DeleteResult{}, err
		}
	}
	req := httpapi.DeleteRequest{IDs: ids}
	if o != nil {
		req.IgnoreMissing, req.NoSync = o.IgnoreMissing, o.NoSync
	}
	if len(ids) == 0 {
		// NB: as in-process, deleting nothing does nothing.
		return db.DeleteResult{}, nil
	}
	ctx, cancel := callerCtx(ctx)
	defer cancel()
	var out httpapi.DeleteResultJSON
	if err := c.call(ctx, "POST", "/v1/docs/delete", nil, req, &out); err != nil {
		return db.DeleteResult{}, err
	}
	res := db.DeleteResult{Deleted: out.Deleted}
	if len(out.Missing) > 0 {
		res.Missing = out.Missing
	}
	return res, nil
}

func (c *Client) query(ctx context.Context, req httpapi.QueryRequest, qo *db.QueryOptions) (*db.QueryResult, error) {
	if err := queryOptions(qo); err != nil {
		return nil, err
	}
	if qo != nil {
		req.Threshold, req.Limit, req.EstimateOnly, req.WithText = qo.Threshold, qo.Limit, qo.EstimateOnly, qo.WithText
	}
	var out httpapi.QueryResultJSON
	if err := c.call(ctx, "POST", "/v1/query", nil, req, &out); err != nil {
		return nil, err
	}
	if err := maxMatches(qo, len(out.Matches), 1); err != nil {
		return nil, err
	}
	return out.QueryResult(), nil
}

// maxMatches is QueryOptions.MaxMatches of an answer of n matches to
// queries queries, as the index says it. NB: checked on the answer
// received (the server holds the bound of its own, lshdb serve
// --max-matches): the option was ignored, and a call the index refuses
// answered every match (an HTTP review, HT-2).
func maxMatches(qo *db.QueryOptions, n, queries int) error {
	if qo == nil || qo.MaxMatches <= 0 || n <= qo.MaxMatches {
		return nil
	}
	of := ""
	if queries > 1 {
		of = fmt.Sprintf(" of %d queries", queries)
	}
	return fmt.Errorf("%w: the answer%s holds more than %d matches (%d at least), more than the bound of a call (MaxMatches): give a limit, or fewer queries a call", db.ErrInvalidOptions, of, qo.MaxMatches, n)
}

// Query returns the stored near-duplicates of text.
func (c *Client) Query(ctx context.Context, text string, qo *db.QueryOptions) (*db.QueryResult, error) {
	if err := c.querySize("text", len(text)); err != nil {
		return nil, err
	}
	if err := wireText(text, "the query text"); err != nil {
		return nil, err
	}
	return c.query(ctx, httpapi.QueryRequest{Text: &text}, qo)
}

// querySize refuses, as the index would, a query text or set larger
// than the index's MaxDocBytes (the server refused its request as a body
// too large, which does not match db.ErrDocTooLarge).
func (c *Client) querySize(what string, n int) error {
	if c.maxDoc > 0 && n > c.maxDoc {
		return fmt.Errorf("%w: query %s of %d bytes (at most %d)", db.ErrDocTooLarge, what, n, c.maxDoc)
	}
	return nil
}

// QueryID returns the stored near-duplicates of the stored document id.
func (c *Client) QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error) {
	if err := wireID(id); err != nil {
		return nil, err
	}
	return c.query(ctx, httpapi.QueryRequest{ID: &id}, qo)
}

// QuerySet returns the stored near-duplicates of the set s, as
// db.DB.QuerySet does. An empty set is refused before any request, with
// db.ErrEmptyDocument as in process.
func (c *Client) QuerySet(ctx context.Context, s db.Set, qo *db.QueryOptions) (*db.QueryResult, error) {
	if s.Len() == 0 {
		return nil, fmt.Errorf("%w: an empty set", db.ErrEmptyDocument)
	}
	if err := c.querySize("set", docBytes(db.Doc{Set: s})); err != nil {
		return nil, err
	}
	return c.query(ctx, httpapi.QueryRequestOf(db.QueryInput{Set: s}), qo)
}

// QuerySignature returns the stored near-duplicates of the signature sig,
// as db.DB.QuerySignature does.
func (c *Client) QuerySignature(ctx context.Context, sig []uint32, qo *db.QueryOptions) (*db.QueryResult, error) {
	if len(sig) == 0 {
		return nil, fmt.Errorf("%w: 0 values", db.ErrInvalidSignature)
	}
	return c.query(ctx, httpapi.QueryRequest{Signature: sig}, qo)
}

// QueryMany answers the queries on one snapshot of the server's index,
// as db.DB.QueryMany does: one result per query, in their order.
func (c *Client) QueryMany(ctx context.Context, qs []db.QueryInput, qo *db.QueryOptions) ([]*db.QueryResult, error) {
	if err := c.batch(len(qs), "queries"); err != nil {
		return nil, err
	}
	if err := queryOptions(qo); err != nil {
		return nil, err
	}
	req := httpapi.QueryManyRequest{Queries: make([]httpapi.QueryRequest, len(qs))}
	for i, q := range qs {
		// NB: checked here, as db.DB.QueryMany does, so that the error
		// names the fields of db.QueryInput, not the API's.
		given := btoi(q.Text != "") + btoi(!q.Set.IsZero()) + btoi(q.Signature != nil) + btoi(q.ID != "")
		if given > 1 {
			return nil, &db.QueryError{Index: i, Err: fmt.Errorf("%w: a query gives %d of Text, Set, Signature and ID (exactly one)", db.ErrInvalidDoc, given)}
		}
		if given == 0 {
			// NB: here too: the server's answer carries one code, and
			// empty_document lost ErrInvalidDoc, which the error is.
			return nil, &db.QueryError{Index: i, Err: emptyQuery{fmt.Errorf("%w: the query is empty: give exactly one of Text (not empty), Set, Signature and ID", db.ErrInvalidDoc)}}
		}
		// NB: an empty list is left out of the request's JSON, and the
		// server saw an empty query (ErrBadRequest), where QuerySet and
		// QuerySignature, as in process, say what it is (a review).
		if !q.Set.IsZero() && q.Set.Len() == 0 {
			return nil, &db.QueryError{Index: i, Err: fmt.Errorf("%w: an empty set", db.ErrEmptyDocument)}
		}
		if q.Signature != nil && len(q.Signature) == 0 {
			return nil, &db.QueryError{Index: i, Err: fmt.Errorf("%w: 0 values", db.ErrInvalidSignature)}
		}
		if n := docBytes(db.Doc{Text: q.Text, Set: q.Set}); n > c.maxDoc && c.maxDoc > 0 {
			what := "text"
			if !q.Set.IsZero() {
				what = "set"
			}
			return nil, &db.QueryError{Index: i, Err: c.querySize(what, n)}
		}
		if err := wireText(q.Text, "the query text"); err != nil {
			return nil, &db.QueryError{Index: i, Err: err}
		}
		if q.ID != "" {
			// NB: sent as JSON, its bad bytes became U+FFFD: the query
			// answered for another document (wireID).
			if err := wireID(q.ID); err != nil {
				return nil, &db.QueryError{Index: i, Err: err}
			}
		}
		req.Queries[i] = httpapi.QueryRequestOf(q)
	}
	if qo != nil {
		req.Threshold, req.Limit, req.EstimateOnly, req.WithText = qo.Threshold, qo.Limit, qo.EstimateOnly, qo.WithText
	}
	var out httpapi.QueryManyJSON
	if err := c.call(ctx, "POST", "/v1/query/many", nil, req, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(qs) {
		// NB: one result a query, as the caller indexes them: a
		// server's answer of fewer was returned as it came (a fuzz
		// target of the client's answers).
		return nil, malformed("answer to a batch of queries", fmt.Errorf("%d results for %d queries", len(out.Results), len(qs)))
	}
	res := make([]*db.QueryResult, len(out.Results))
	n := 0
	for i, r := range out.Results {
		res[i] = r.QueryResult()
		n += len(res[i].Matches)
	}
	if err := maxMatches(qo, n, len(qs)); err != nil {
		return nil, err
	}
	return res, nil
}

// PutSet stores the set s under id, as db.DB.PutSet does.
func (c *Client) PutSet(id string, s db.Set, wo *db.WriteOptions) error {
	return c.Put(db.Doc{ID: id, Set: s}, wo)
}

// PutSignature stores the signature sig under id, as db.DB.PutSignature
// does.
func (c *Client) PutSignature(id string, sig []uint32, wo *db.WriteOptions) error {
	if sig == nil {
		sig = []uint32{} // as in process: a signature of no values, not a text
	}
	return c.Put(db.Doc{ID: id, Signature: sig}, wo)
}

func pairsQuery(po *db.PairsOptions) url.Values {
	q := url.Values{}
	if po != nil && po.Threshold != 0 {
		q.Set("threshold", strconv.FormatFloat(po.Threshold, 'g', -1, 64))
	}
	if po != nil && po.Memory != 0 {
		q.Set("memory", strconv.Itoa(po.Memory))
	}

	if po != nil && po.Mode != "" {
		q.Set("mode", string(po.Mode))
	}
	if po != nil && po.Keep != "" {
		q.Set("keep", string(po.Keep))
	}
	return q
}

// lines reads a JSON Lines answer: each line to fn, which decodes it;
// an error line ends it with the server's error, the end line with its
// body; a stream that stops without either was cut short.
func lines(ctx context.Context, body io.Reader, maxLine int64, fn func(line []byte) (bool, error)) (*httpapi.EndBody, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		// NB: lines already read stay in the buffer after ctx ends: a
		// cancelled stream must not go on yielding them.
		if ctx != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := readLine(br, maxLine)
		if errors.As(err, new(answerTooLarge)) {
			return nil, err // NB: not a stream cut short
		}
		if err != nil {
			// NB: ReadBytes fails only before a line's end: the stream
			// ended without its end line, and what came with the error
			// is a line cut short (the server writes through a buffer,
			// flushed where it fills), not one to parse.
			if (ctx == nil || ctx.Err() == nil) && !isTimeout(err) {
				return nil, cutShort(err)
			}
			return nil, err
		}
		var tail struct {
			End   *httpapi.EndBody   `json:"end"`
			Error *httpapi.ErrorBody `json:"error"`
		}
		if bytes.HasPrefix(line, []byte(`{"end"`)) || bytes.HasPrefix(line, []byte(`{"error"`)) {
			if jerr := json.Unmarshal(line, &tail); jerr != nil {
				return nil, malformed("line", jerr)
			}
			if tail.Error != nil {
				return nil, errorFrom(http.StatusOK, tail.Error)
			}
			if tail.End != nil {
				// NB: read to the answer's end (the chunked stream's last
				// chunk, a few bytes) before the caller closes it: closed
				// early, the connection went, and the server's last write
				// of a stream the client had read whole could fail, which
				// it logged and counted as a client that went away (review
				// O2); read, the connection is reused.
				io.Copy(io.Discard, io.LimitReader(br, 64<<10))
				return tail.End, nil
			}
		}
		more, ferr := fn(line)
		if ferr != nil || !more {
			return nil, ferr
		}
	}
}

// grow returns b with room for n more bytes: its capacity doubled (at
// least 32 KiB), but never past limit+1 bytes when limit > 0, where the
// caller has at most limit+1-len(b) bytes to add.
//
// NB: bytes.Buffer.ReadFrom, whose Grow doubles whatever it is asked,
// took an attached lshdb get to 3.7 GB before the 1 GiB bound refused an
// endless answer, and append a line of pairs to 2.7 GB (a review of
// serve, SV3-2): grown so, an answer refused costs about twice the
// bound in all.
func grow(b []byte, n int, limit int64) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := max(2*cap(b), len(b)+n, 32<<10)
	if limit > 0 && int64(c) >= limit {
		c = int(limit + 1) // NB: not limit, then limit+1 again
	}
	grown := make([]byte, len(b), c)
	copy(grown, b)
	return grown
}

// readLine is br.ReadBytes('\n') with a bound on the line (0: none), past
// which it fails with ErrMalformedAnswer having held at most that much.
// The line is the caller's, as ReadBytes'.
func readLine(br *bufio.Reader, maxLine int64) ([]byte, error) {
	var long []byte // a line longer than br's buffer
	for {
		chunk, err := br.ReadSlice('\n')
		if maxLine > 0 && int64(len(long)+len(chunk)) > maxLine {
			return nil, answerTooLarge{fmt.Errorf("lshdb: client: a line of the answer is over %d bytes (client.Options.MaxAnswerBytes)", maxLine)}
		}
		if err == bufio.ErrBufferFull {
			long = append(grow(long, len(chunk), maxLine), chunk...)
			continue
		}
		if long != nil {
			return append(grow(long, len(chunk), maxLine), chunk...), err
		}
		return bytes.Clone(chunk), err
	}
}

// boundedReader reads r up to left bytes, and fails past them with
// ErrMalformedAnswer naming what.
type boundedReader struct {
	r    io.Reader
	left int64
	what string
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, answerTooLarge{fmt.Errorf("lshdb: client: %s is over its bound (client.Options.MaxAnswerBytes)", b.what)}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// cutShort is the error of a stream that ended before its end line: the
// connection ended mid-answer (the server stopped or was killed), where
// the transport says only "unexpected EOF" or "connection reset by peer".
// It matches io.ErrUnexpectedEOF.
func cutShort(err error) error {
	if errors.Is(err, db.ErrClosed) {
		return err // NB: this client's Close ended it (callBody)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w (%w)", io.ErrUnexpectedEOF, err)
	}
	return connCut{fmt.Errorf("lshdb: client: the server's answer was cut short (did the server stop?): what came before it is all there is: %w", err)}
}

// connCut is an error that matches ErrConnectionCut (errors.Is) in words
// of its own: a stream or an answer the server's end cut part-way, which
// matched none of the package's errors (a client user's review).
type connCut struct{ error }

func (e connCut) Is(target error) bool { return target == ErrConnectionCut }
func (e connCut) Unwrap() error        { return e.error }

// cutAnswer is err, the failure of reading an answer, as a connCut where
// the connection ended under it (not a deadline, a cancel or Close).
func cutAnswer(ctx context.Context, err error) error {
	if (ctx != nil && ctx.Err() != nil) || isTimeout(err) || errors.Is(err, db.ErrClosed) {
		return err
	}
	if connEnded(err) {
		return connCut{err}
	}
	return err
}

// connEnded says whether err is a connection's end under a call: the
// server stopping, killed or restarted.
//
// NB: net/http's "server closed idle connection" (unexported: matched by
// text) too: a request sent on a kept-alive connection as the server
// closed it (a restart) came back as that bare error, which was not
// ErrConnectionCut and said nothing of the write (an HTTP review, HT-4).
func connEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// isTimeout says whether err is a timeout (the caller's HTTP client's, a
// deadline), which is not a cut stream.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Pairs streams every near-duplicate pair, as the server computes them.
// Breaking out of the loop closes the connection, which stops the
// server's run. PairsOptions.OnIdentical is not called (its figures are
// not sent before the pairs); PairsOptions.Stats, once the run ends,
// holds IdenticalGroups and IdenticalPairs.
func (c *Client) Pairs(ctx context.Context, po *db.PairsOptions) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) {
		q := pairsQuery(po)
		if po != nil && po.Limit != 0 {
			q.Set("limit", strconv.Itoa(po.Limit))
		}
		resp, err := c.do(ctx, "GET", "/v1/pairs", q, nil)
		var refused *Error
		if po != nil && po.Limit > 0 && errors.As(err, &refused) && refused.Code == "bad_request" && strings.Contains(refused.Message, `unknown parameter "limit"`) {
			// NB: a server before limit: every pair comes, and the best
			// are kept here, as the client did before.
			all := *po
			all.Limit = 0
			db.BestPairs(c.Pairs(ctx, &all), po.Limit)(yield)
			return
		}
		if err != nil {
			yield(db.Pair{}, err)
			return
		}
		defer resp.Body.Close()
		end, err := lines(ctx, resp.Body, c.maxAnswer, func(line []byte) (bool, error) {
			var p httpapi.PairJSON
			if err := json.Unmarshal(line, &p); err != nil {
				return false, malformed("pair", err)
			}
			return yield(db.Pair{A: p.A, B: p.B, Jaccard: float64(p.Jaccard)}, nil), nil
		})
		if err != nil {
			err = withCtxErr(ctx, err)
			yield(db.Pair{}, err)
			return
		}
		if end != nil && end.Stats != nil && po != nil && po.Stats != nil {
			*po.Stats = end.Stats.PairsStats()
		}
	}
}

// PairGroups is Pairs with the pairs of documents with identical shingle
// sets as groups, as db.DB.PairGroups yields them (GET /v1/pairs/groups).
// A server from before it gives each pair as a group of its own.
func (c *Client) PairGroups(ctx context.Context, po *db.PairsOptions) iter.Seq2[db.PairGroup, error] {
	return func(yield func(db.PairGroup, error) bool) {
		if po != nil && po.Limit != 0 {
			yield(db.PairGroup{}, fmt.Errorf("%w: pair groups take no limit (%d): Pairs keeps the best pairs", db.ErrInvalidOptions, po.Limit))
			return
		}
		resp, err := c.do(ctx, "GET", "/v1/pairs/groups", pairsQuery(po), nil)
		var refused *Error
		if errors.As(err, &refused) && refused.Code == "no_route" {
			// NB: a server from before /v1/pairs/groups (an unknown
			// path): every pair, each its own group.
			for p, err := range c.Pairs(ctx, po) {
				if !yield(db.PairGroup{A: []string{p.A}, B: []string{p.B}, Jaccard: p.Jaccard}, err) {
					return
				}
			}
			return
		}
		if err != nil {
			yield(db.PairGroup{}, err)
			return
		}
		defer resp.Body.Close()
		end, err := lines(ctx, resp.Body, c.maxAnswer, func(line []byte) (bool, error) {
			var g httpapi.PairGroupJSON
			if err := json.Unmarshal(line, &g); err != nil {
				return false, malformed("pair group", err)
			}
			if len(g.A) == 0 || g.B != nil && len(g.B) == 0 {
				return false, fmt.Errorf("lshdb: client: a pair group without documents: %s", line)
			}
			return yield(db.PairGroup{A: g.A, B: g.B, Jaccard: float64(g.Jaccard)}, nil), nil
		})
		if err != nil {
			yield(db.PairGroup{}, withCtxErr(ctx, err))
			return
		}
		if end != nil && end.Stats != nil && po != nil && po.Stats != nil {
			*po.Stats = end.Stats.PairsStats()
		}
	}
}

// Scan streams every stored document in insertion order, as db.DB.Scan
// does on the server's snapshot. Breaking out of the loop closes the
// connection.
func (c *Client) Scan(ctx context.Context, so *db.ScanOptions) iter.Seq2[*db.StoredDoc, error] {
	return func(yield func(*db.StoredDoc, error) bool) {
		if so != nil && so.Salvage {
			// NB: a salvage reads past damaged blocks of the files, which
			// only a process that opens the index can: not said over the
			// API, which would read as a whole scan.
			// NB: ErrLocked, as another process holding the index is to
			// every command that must open it itself (it was
			// ErrInvalidOptions, a usage error to lshdb export: a
			// read-through's R5).
			yield(nil, fmt.Errorf("%w: a salvage scan reads the index's files: stop the process that serves it, and run it where the index is opened", db.ErrLocked))
			return
		}
		q := url.Values{}
		if so != nil && so.Sets {
			q.Set("sets", "true")
		}
		resp, err := c.do(ctx, "GET", "/v1/scan", q, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		_, err = lines(ctx, resp.Body, c.maxAnswer, func(line []byte) (bool, error) {
			var d httpapi.DocumentJSON
			if err := json.Unmarshal(line, &d); err != nil {
				return false, malformed("document", err)
			}
			doc, err := d.Document()
			if err != nil {
				return false, malformed("document", err)
			}
			return yield(doc, nil), nil
		})
		if err != nil {
			err = withCtxErr(ctx, err)
			yield(nil, err)
		}
	}
}

// Clusters returns the clusters of the pairs, largest first, as
// db.DB.Clusters does.
func (c *Client) Clusters(ctx context.Context, po *db.PairsOptions) ([]db.Cluster, error) {
	resp, err := c.do(ctx, "GET", "/v1/clusters", pairsQuery(po), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readClusters(ctx, resp.Body, c.maxAnswer)
}

// ClustersFrom returns the clusters of the pairs of seq, as
// db.DB.ClustersFrom does: the pairs are sent to the server as the body
// of one request, as they come.
func (c *Client) ClustersFrom(ctx context.Context, seq iter.Seq2[db.Pair, error], po *db.PairsOptions) ([]db.Cluster, error) {
	q := pairsQuery(po)
	q.Del("memory")
	pr, pw := io.Pipe()
	var seqErr error
	var panicked any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer recoverSeq(&panicked, pw)
		bw := bufio.NewWriterSize(pw, 64<<10)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false) // NB: "<" is 1 byte, not 6
		for p, err := range seqs.Caller(seq) {
			if err == nil && (wireID(p.A) != nil || wireID(p.B) != nil) {
				// NB: as in process, where no stored id is such; sent as
				// JSON, its bad bytes became U+FFFD, and the pair named
				// another document.
				missing := p.A
				if wireID(p.A) == nil {
					missing = p.B
				}
				err = fmt.Errorf("%w: the pair (%q, %q) names %q, which the index does not hold (deleted or expired since the pairs were found, or pairs of another index)", db.ErrNotFound, p.A, p.B, missing)
			}
			if err != nil {
				seqErr = err
				pw.CloseWithError(err)
				return
			}
			if err := enc.Encode(httpapi.PairJSON{A: p.A, B: p.B, Jaccard: httpapi.Similarity(p.Jaccard)}); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(bw.Flush())
	}()
	defer pr.Close()
	resp, err := c.do(ctx, "POST", "/v1/clusters", q, io.Reader(pr))
	if err != nil {
		pr.CloseWithError(err)
		<-done
		if panicked != nil {
			panic(panicked) // NB: the caller's sequence's, on the caller's goroutine, as in process
		}
		if seqErr != nil {
			return nil, seqErr
		}
		return nil, err
	}
	defer resp.Body.Close()
	return readClusters(ctx, resp.Body, c.maxAnswer)
}

// recoverSeq, deferred on the goroutine that reads a caller's sequence
// into a request's body, keeps a panic of the sequence in *panicked, for
// the call to panic again on the caller's goroutine, and ends the body.
//
// NB: a panic there took the whole program down, where in process it is
// the caller's to recover (a maintainer review's K5).
func recoverSeq(panicked *any, pw *io.PipeWriter) {
	if r := recover(); r != nil {
		*panicked = r
		pw.CloseWithError(errSeqPanicked)
	}
}

// errSeqPanicked ends a request body whose sequence panicked.
var errSeqPanicked = errors.New("lshdb: client: the sequence panicked")

// readClusters reads a clusters answer, held whole: at most max bytes of
// it (0: no bound).
func readClusters(ctx context.Context, body io.Reader, max int64) ([]db.Cluster, error) {
	if max > 0 {
		body = &boundedReader{r: body, left: max, what: "the clusters answer"}
	}
	var out []db.Cluster
	_, err := lines(ctx, body, max, func(line []byte) (bool, error) {
		var cl httpapi.ClusterJSON
		if err := json.Unmarshal(line, &cl); err != nil {
			return false, malformed("cluster", err)
		}
		c, err := cl.DBCluster()
		if err != nil {
			return false, malformed("cluster", err)
		}
		out = append(out, c)
		return true, nil
	})
	if err != nil {
		err = withCtxErr(ctx, err)
		return nil, err
	}
	return out, nil
}

// Info returns the index's parameters, document count and size on disk,
// which the server answers without reading the data (db.DB.Info).
func (c *Client) Info() (*db.Info, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out httpapi.InfoJSON
	if err := c.call(ctx, "GET", "/v1/info", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Info()
}

// Stats returns the index's parameters, counts, bytes and bucket
// statistics with the top hottest lists.
func (c *Client) Stats(ctx context.Context, top int) (*db.Stats, error) {
	var out httpapi.StatsJSON
	if err := c.call(ctx, "GET", "/v1/stats", url.Values{"top": {strconv.Itoa(top)}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Stats()
}

// Buckets returns the posting-list statistics of one band (band < 0: all).
func (c *Client) Buckets(ctx context.Context, band, top int) (*db.BucketStats, error) {
	var out httpapi.BucketStatsJSON
	q := url.Values{"band": {strconv.Itoa(band)}, "top": {strconv.Itoa(top)}}
	if err := c.call(ctx, "GET", "/v1/buckets", q, nil, &out); err != nil {
		return nil, err
	}
	return out.BucketStats()
}

// Bucket returns the ids of one posting list's members.
func (c *Client) Bucket(band int, bucket uint64) ([]string, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out httpapi.BucketMembersJSON
	// NB: a bucket over 32 bits is sent in full, so that the server
	// refuses it as in-process (invalid_options), rather than truncated.
	path := fmt.Sprintf("/v1/buckets/%d/%x", band, bucket)
	if bucket >= 1<<32 {
		return nil, fmt.Errorf("%w: bucket %#x: buckets are 32 bits (at most 0xffffffff)", db.ErrInvalidOptions, bucket)
	}
	if err := c.call(ctx, "GET", path, nil, nil, &out); err != nil {
		return nil, err
	}
	if out.IDs == nil {
		return []string{}, nil // NB: as in-process: empty, not nil
	}
	return out.IDs, nil
}

// Explain compares two stored documents band by band.
func (c *Client) Explain(a, b string) (*db.Explanation, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var out httpapi.ExplainJSON
	if err := c.call(ctx, "GET", "/v1/explain", url.Values{"a": {a}, "b": {b}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Explanation()
}

// Check runs the server's full consistency check.
func (c *Client) Check(ctx context.Context) (*db.CheckReport, error) {
	var out httpapi.CheckJSON
	if err := c.call(ctx, "GET", "/v1/check", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.CheckReport(), nil
}

// Repair is db.DB.Repair: the server mends what Check finds in the
// index's structure, from the records. The call waits for the whole
// repair (it reads the whole index): give it a context without a short
// deadline. A server of an index on Redis refuses it (ErrUnsupported):
// repair one in-process, with no writer beside it.
func (c *Client) Repair(ctx context.Context) (db.RepairResult, error) {
	var out httpapi.RepairJSON
	if err := c.call(ctx, "POST", "/v1/repair", nil, nil, &out); err != nil {
		return db.RepairResult{}, err
	}
	return out.RepairResult(), nil
}

// PurgeEmptyLists deletes the emptied posting lists.
func (c *Client) PurgeEmptyLists(ctx context.Context) (int, error) {
	r, err := c.Purge(ctx)
	return r.PurgedLists, err
}

// Purge is db.DB.Purge: the server sweeps the expired documents, then
// deletes the emptied posting lists. An older server does not count the
// documents it sweeps: SweptExpired is then -1.
func (c *Client) Purge(ctx context.Context) (db.PurgeResult, error) {
	var out httpapi.PurgeJSON
	err := c.call(ctx, "POST", "/v1/purge", nil, struct{}{}, &out)
	r := db.PurgeResult{PurgedLists: out.PurgedLists, SweptExpired: -1}
	if out.SweptExpired != nil {
		r.SweptExpired = *out.SweptExpired
	}
	return r, err
}

// Compact rewrites the server's index to free the space of deleted and
// replaced documents, as db.DB.Compact does.
func (c *Client) Compact(ctx context.Context) error {
	var out struct {
		Compacted bool `json:"compacted"`
	}
	return c.call(ctx, "POST", "/v1/compact", nil, struct{}{}, &out)
}

// Tune returns the index's banding at threshold t (0: the index's), as
// lshdb tune --db reports it.
func (c *Client) Tune(ctx context.Context, t float64) (httpapi.TuneJSON, error) {
	var out httpapi.TuneJSON
	q := url.Values{}
	if t != 0 {
		q.Set("threshold", strconv.FormatFloat(t, 'g', -1, 64))
	}
	err := c.call(ctx, "GET", "/v1/tune", q, nil, &out)
	return out, err
}

// Backup makes the server write a consistent copy of the index into dir,
// an absolute path on the server's machine that must not exist (a
// relative one is ErrInvalidOptions: the server's working directory is
// not the caller's). Over TCP a server
// takes backups only under its backup root (lshdb serve --backup-root),
// and none without one (ErrInvalidOptions); through the index's socket,
// anywhere it may write.
func (c *Client) Backup(ctx context.Context, dir string) error {
	return c.BackupWith(ctx, dir, db.BackupOptions{})
}

// BackupWith is Backup with options (db.BackupOptions).
func (c *Client) BackupWith(ctx context.Context, dir string, o db.BackupOptions) error {
	var out httpapi.BackupRequest
	if err := c.call(ctx, "POST", "/v1/backup", nil, httpapi.BackupRequest{Dir: dir, Copy: o.Copy, Verify: o.Verify}, &out); err != nil {
		return err
	}
	if o.Verify && !out.Verify {
		// NB: a server from before verify ignored it: the copy is under
		// dir, unchecked.
		return fmt.Errorf("%w: the server made the backup in %s, but did not verify it (it does not know verify): lshdb check --db %s checks it", db.ErrInvalidOptions, dir, dir)
	}
	if o.Copy && !out.Copy {
		// NB: a server from before copy ignored it: its backup's tables
		// are the index's files.
		return fmt.Errorf("%w: the server made the backup in %s, but not with files of its own (it does not know copy): its tables are hard links to the index's", db.ErrInvalidOptions, dir)
	}
	return nil
}

// Validate runs the checks that PutBatch makes on a document before
// hashing it, as (*db.DB).Validate does, without asking the server: an
// empty, over-long (db.MaxIDBytes) or non-UTF-8 id is db.ErrInvalidID, a
// text and metadata over the server's MaxDocBytes db.ErrDocTooLarge.
func (c *Client) Validate(d db.Doc) error {
	switch {
	case d.ID == "":
		return fmt.Errorf("%w: empty", db.ErrInvalidID)
	case len(d.ID) > db.MaxIDBytes:
		return fmt.Errorf("%w: %d bytes (at most %d)", db.ErrInvalidID, len(d.ID), db.MaxIDBytes)
	}
	if err := wireID(d.ID); err != nil {
		return err
	}
	if n := docBytes(d); c.maxDoc > 0 && n > c.maxDoc {
		return fmt.Errorf("%w: %q has %d bytes (at most %d)", db.ErrDocTooLarge, d.ID, n, c.maxDoc)
	}
	if err := wireText(d.Text, fmt.Sprintf("%q: its text", d.ID)); err != nil {
		return err
	}
	return c.fitsBody(d)
}

// countWriter counts the bytes written to it.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// fitsBody refuses, as db.ErrDocTooLarge, a document that the server's
// index would take but whose request alone exceeds the server's bound on
// a body (MaxBodyBytes, lshdb serve --max-body): it cannot be sent. NB:
// the server refused its request whole (httpapi.ErrBodyTooLarge), which
// an attached insert --skip-bad took for a failure of the batch, not of
// one record, and stopped with nothing committed.
func (c *Client) fitsBody(d db.Doc) error {
	if c.maxBody <= 0 {
		return nil
	}
	// NB: encoded only when a bound of its JSON may not fit: an escape
	// takes at most 6 bytes a byte (\u00XX), a hash 19 (16 hex digits,
	// quotes, comma), a signature value 11.
	bound := 512 + 6*(len(d.ID)+len(d.Text)+len(d.Meta)) + 19*len(d.Set.HashList()) + 11*len(d.Signature)
	for _, t := range d.Set.TokenList() {
		bound += 6*len(t) + 3
	}
	if int64(bound) <= c.maxBody {
		return nil
	}
	// NB: encoded as call encodes a body (no HTML escapes).
	var n countWriter
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(httpapi.PutRequest{Docs: []httpapi.DocJSON{httpapi.DocIn(d)}}); err != nil || int64(n) <= c.maxBody {
		return nil // NB: what json cannot encode, the put says
	}
	// NB: both errors: a caller that splits its batches at
	// ErrBodyTooLarge (as MaxBodyBytes says) learns that one document is
	// too large for any (a review).
	return fmt.Errorf("%w: %q takes %d bytes in a request, and the server takes at most %d (lshdb serve --max-body; %w)", db.ErrDocTooLarge, d.ID, int64(n), c.maxBody, httpapi.ErrBodyTooLarge)
}

// docBytes is what d counts toward the index's MaxDocBytes, as db counts
// it: its text, metadata, set and signature.
func docBytes(d db.Doc) int {
	n := len(d.Text) + len(d.Meta) + 8*len(d.Set.HashList()) + 4*len(d.Signature)
	for _, t := range d.Set.TokenList() {
		n += len(t)
	}
	return n
}

// wireText refuses a text (what names it) that is not UTF-8: JSON
// carries it with each bad byte as U+FFFD, so the server stored or
// queried another text, where the server refuses such bytes in a body
// and a handle with db.Options.StrictUTF8 refuses them in process (a
// read-through's RT8-2). As ErrInvalidDoc, which StrictUTF8 gives.
func wireText(text, what string) error {
	if utf8.ValidString(text) {
		return nil
	}
	return fmt.Errorf("%w: %s is not UTF-8, which JSON cannot carry (each bad byte would arrive as U+FFFD): convert it first, from Latin-1 or whatever its encoding is", db.ErrInvalidDoc, what)
}

// wireable refuses, as the index would, a document given as an empty set
// or signature (the wire omits an empty list, which would read as an
// empty text) and one larger than the index takes (the server refused its
// request as a body too large, which does not match db.ErrDocTooLarge).
func (c *Client) wireable(docs []db.Doc) error {
	for i, d := range docs {
		err := wireID(d.ID)
		if err == nil {
			err = wireText(d.Text, fmt.Sprintf("%q: its text", d.ID))
		}
		if given := btoi(d.Text != "") + btoi(!d.Set.IsZero()) + btoi(d.Signature != nil); err == nil && given > 1 {
			// NB: before storageMode, as db.Validate checks: a text with a
			// signature was refused as "needs each document's text".
			err = fmt.Errorf("%w: %q gives %d of Text, Set and Signature (one at most)", db.ErrInvalidDoc, d.ID, given)
		}
		if n := docBytes(d); err == nil && c.maxDoc > 0 && n > c.maxDoc {
			err = fmt.Errorf("%w: %q has %d bytes (at most %d)", db.ErrDocTooLarge, d.ID, n, c.maxDoc)
		}
		if err == nil {
			err = c.storageMode(d)
		}
		if err == nil {
			err = c.fitsBody(d)
		}
		switch {
		case err != nil:
		case !d.Set.IsZero() && d.Set.Len() == 0:
			err = fmt.Errorf("%w: %q: an empty set", db.ErrEmptyDocument, d.ID)
		case d.Signature != nil && len(d.Signature) == 0:
			err = fmt.Errorf("%w: %q: 0 values", db.ErrInvalidSignature, d.ID)
		}
		if err != nil {
			// NB: with its position in a batch, as in process.
			if len(docs) > 1 {
				return &db.DocError{Index: i, ID: d.ID, Err: err}
			}
			return err
		}
	}
	return nil
}

// withCtxErr makes err, a stream's failure, match ctx's error when ctx
// ended (as in process, a cancelled call returns ctx's error), once.
func withCtxErr(ctx context.Context, err error) error {
	if ctx == nil || ctx.Err() == nil {
		return err
	}
	if cause := context.Cause(ctx); errors.As(cause, new(callTimeout)) {
		return cause
	}
	var ue *url.Error
	if errors.As(err, &ue) && errors.Is(ue.Err, ctx.Err()) {
		// NB: the transport's report of the cancellation ("Get
		// \"http://lshdb/v1/pairs?…\": context canceled"): as in
		// process, ctx's error alone.
		return ctx.Err()
	}
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}

// wireID refuses an id that is not valid UTF-8, as the index would: JSON
// would carry it with each invalid byte replaced by U+FFFD, so that
// "k\xff" and "k\xfe" would both write (or delete) "k\uFFFD".
func wireID(id string) error {
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: %q is not valid UTF-8", db.ErrInvalidID, id)
	}
	return nil
}

// storageMode refuses, as the index would, a set or a signature that the
// server's storage mode cannot keep: checked here because an empty one
// would reach the server as an empty text (the wire omits an empty list)
// and be refused as that. The messages are db's (prepareGiven).
func (c *Client) storageMode(d db.Doc) error {
	storage := c.params.Storage
	switch {
	case d.Signature != nil && storage != db.StorageNone:
		kind, call := "text", "Put"
		if storage == db.StorageSets {
			kind, call = "set", "PutSet"
		}
		return fmt.Errorf("%w: %q: a %s index verifies every answer and needs each document's %s; put it (%s), or keep signatures in an index created with Storage none", db.ErrStorageMode, d.ID, storage, kind, call)
	case !d.Set.IsZero() && d.Signature == nil && d.Text == "" && storage == db.StorageText:
		return fmt.Errorf("%w: %q: a text index verifies from stored texts and keeps no sets; create the index with Storage sets (exact Jaccard of the sets) or none", db.ErrStorageMode, d.ID)
	}
	return nil
}

// queryOptions refuses, as the index would, a query's threshold or limit
// that is out of range: a NaN or an infinity cannot be sent as JSON, and
// failed as an encoding error that matched no sentinel. 0 is the index's
// threshold (the server's to fill in).
func queryOptions(qo *db.QueryOptions) error {
	switch {
	case qo == nil:
	case qo.Threshold != 0 && (math.IsNaN(qo.Threshold) || qo.Threshold <= 0 || qo.Threshold > 1):
		return fmt.Errorf("%w: query threshold %v is outside (0, 1]", db.ErrInvalidOptions, qo.Threshold)
	case qo.Limit < 0:
		return fmt.Errorf("%w: query limit %d is negative", db.ErrInvalidOptions, qo.Limit)
	case qo.MaxMatches < 0:
		return fmt.Errorf("%w: query MaxMatches %d is negative", db.ErrInvalidOptions, qo.MaxMatches)
	}
	return nil
}

// setExpiry sets the query parameters ttl_ms and expire_at of wo's TTL
// and ExpireAt, or returns ExpiryOut's error.
func setExpiry(q url.Values, wo *db.WriteOptions) error {
	ttl, at, err := httpapi.ExpiryOut(wo)
	if err != nil {
		return err
	}
	if ttl != 0 {
		q.Set("ttl_ms", strconv.FormatInt(ttl, 10))
	}
	if at != "" {
		q.Set("expire_at", at)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emptyQuery is the error of a db.QueryInput that gives nothing, as
// db.DB.QueryMany's: db.ErrInvalidDoc, and db.ErrEmptyDocument too.
type emptyQuery struct{ error }

func (e emptyQuery) Unwrap() error        { return e.error }
func (e emptyQuery) Is(target error) bool { return target == db.ErrEmptyDocument }

// hasSchemePrefix reports whether target starts with scheme (such as
// "http://"), in any case, as URL schemes are: HTTP://host:port was
// refused as "not HTTP://" (a read-through's R7).
func hasSchemePrefix(target, scheme string) bool {
	return len(target) >= len(scheme) && strings.EqualFold(target[:len(scheme)], scheme)
}
