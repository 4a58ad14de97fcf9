package httpapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SocketName is the name of the Unix socket an index's owner listens on,
// inside the index directory.
const SocketName = "lshdb.sock"

// maxSocketPath is the longest Unix socket path the kernel takes
// (sun_path: 108 bytes on Linux, 104 on the BSDs and macOS, with the
// terminating zero).
const maxSocketPath = 103

// ErrSocketInUse is returned by ListenSocket when a process answers on
// the socket already.
var ErrSocketInUse = errors.New("lshdb: a server already answers on the index's socket (another process, or this one)")

// SocketPath returns the socket path of the index in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// DialPath returns path, or the same file relative to the working
// directory when that is shorter and path is too long for a Unix socket
// address: what to bind or dial, at once (a later change of directory
// makes another). An index deep in a tree can then be served and attached
// to from nearby (an owner that bound its socket through a relative path
// answered, and an attach through the absolute path, too long to dial,
// named it as not serving).
//
// NB: the relative path is made between physical directories (symbolic
// links resolved): the kernel resolves ".." from where the working
// directory really is, so one made from the names as typed could lead to
// another socket.
func DialPath(path string) string {
	if len(path) <= maxSocketPath {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	wd, err = filepath.EvalSymlinks(wd)
	if err != nil {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, filepath.Join(dir, filepath.Base(abs))); err == nil && len(rel) < len(path) {
		return rel
	}
	return path
}

// Dialable reports whether the socket at path can be dialed from the
// working directory: DialPath makes it short enough for a Unix socket
// address.
func Dialable(path string) bool { return len(DialPath(path)) <= maxSocketPath }

// ErrSocketPathTooLong is ListenSocket's error (errors.Is) for a socket
// path that even DialPath cannot shorten enough for a Unix socket
// address.
var ErrSocketPathTooLong = errors.New("lshdb: socket path too long")

// tooLong is the error for a socket path that even DialPath cannot
// shorten enough.
func tooLong(path string) error {
	return fmt.Errorf("%w: %s is %d bytes, longer than Unix sockets allow (%d), even relative to the working directory: use an index directory with a shorter path, or work nearer to it", ErrSocketPathTooLong, path, len(path), maxSocketPath)
}

// ListenSocket listens on the Unix socket path, which only the process's
// user may connect to (mode 0600). A socket file left by an owner that
// died is removed first, but only after checking that no process answers
// on it (ErrSocketInUse); a file there that is not a socket is an error.
// Closing the listener removes the socket file.
//
// NB: the socket is bound inside a fresh directory of mode 0700, made
// 0600 and only then renamed into place, so that no other user can
// connect in the moment between bind and chmod.
func ListenSocket(path string) (net.Listener, error) {
	// NB: bound (in a private directory beside path, ~14 bytes longer)
	// and dialled through DialPath; renamed and removed through path
	// itself, which has no limit.
	if len(DialPath(path)) > maxSocketPath {
		return nil, tooLong(path)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	// Private directories that an owner killed mid-way left behind.
	if olds, _ := filepath.Glob(filepath.Join(dir, ".lshdb-sock-*")); olds != nil {
		for _, o := range olds {
			os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(dir, ".lshdb-sock-")
	if err != nil {
		return nil, fmt.Errorf("lshdb: socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	if len(DialPath(bound)) > maxSocketPath {
		return nil, tooLong(path)
	}
	l, err := net.Listen("unix", DialPath(bound))
	if err != nil {
		return nil, fmt.Errorf("lshdb: socket: %w", err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(bound, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("lshdb: socket: %w", err)
	}
	if err := os.Rename(bound, path); err != nil {
		l.Close()
		return nil, fmt.Errorf("lshdb: socket: %w", err)
	}
	return &socketListener{UnixListener: ul, path: path}, nil
}

// removeStale removes a socket file at path that no process answers on.
func removeStale(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lshdb: socket: %w", err)
	}
	if st.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("lshdb: %s exists and is not a socket: remove it or rename it", path)
	}
	c, err := net.DialTimeout("unix", DialPath(path), 2*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%w: %s", ErrSocketInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) && !strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("lshdb: socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lshdb: removing the stale socket: %w", err)
	}
	return nil
}

type socketListener struct {
	*net.UnixListener
	path     string
	unlinked sync.Once
}

// unlink removes the socket file, so that no client can dial it; the
// listener goes on accepting those that did.
func (l *socketListener) unlink() {
	l.unlinked.Do(func() { os.Remove(l.path) })
}

// Close stops listening and removes the socket file.
func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	// NB: once only: unlinked, the name may be the next owner's socket.
	var rerr error
	l.unlinked.Do(func() { rerr = os.Remove(l.path) })
	if err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	return err
}

// RequireToken wraps next (a /metrics handler, say) in the checks of who
// may call that Handler applies: the guard against what a web page could
// make a browser send (a foreign Origin, Sec-Fetch-Site: cross-site, and
// without a token a Host that is no loopback name), then the bearer token
// when there is one.
//
// NB: it checked the token alone: a page that rebound its host name to
// 127.0.0.1 read the metrics of a loopback server without a token.
func RequireToken(token string, next http.Handler) http.Handler {
	return RequireTokens(&Options{Token: token}, "", next)
}

// MethodNotAllowed answers every request 405 method_not_allowed in the
// API's error body, with Allow: allow ("GET, HEAD"), and logs it as op:
// for a path served beside the API on a method alone (serve's GET
// /metrics), so that another method is told which it takes, as the
// API's own paths are, not that the path does not exist (POST /metrics
// answered 404 not_found, where POST /healthz answered 405).
func MethodNotAllowed(opts *Options, op, allow string) http.Handler {
	h := &handler{o: *opts}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.refuse(w, r, op, notAllowed(w, r, allow), time.Now())
	})
}

// refuse answers r with err, its body unread, and with op logs and
// counts it as that operation (Options.Hooks): a request refused beside
// the API's handler (RequireTokens, MethodNotAllowed). start is when it
// came.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, op string, err error, start time.Time) {
	if op != "" && h.o.Hooks.Start != nil {
		h.o.Hooks.Start(r.Context(), op)
	}
	rw := &resp{w: w, rc: http.NewResponseController(w), h: h}
	rw.refuseUnread()
	rw.fail(err)
	if op != "" {
		h.done(r, op, rw, err, time.Since(start))
	}
}

// RequireTokens is RequireToken with a server's options: a request may
// carry its token or its read-only token (Options.ReadToken: next must
// only read, as /metrics does), and, with op, a refused request is
// logged (Options.Logger: at warn, as the API's refusals are) and counted
// (Options.Hooks) under op. Requests let through are neither.
//
// NB: /metrics took the read-write token alone, so a scraper had to hold
// write credentials, and its refusals went unlogged and uncounted (an
// operator's soak review, O4 and O5).
func RequireTokens(opts *Options, op string, next http.Handler) http.Handler {
	h := &handler{o: *opts}
	h.setTokens()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		err := h.sameSite(r)
		if err == nil {
			err = h.authorized(r)
		}
		if err != nil {
			if errors.Is(err, ErrUnauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="lshdb"`)
			}
			h.refuse(w, r, op, err, start)
			return
		}
		next.ServeHTTP(w, r)
	})
}
