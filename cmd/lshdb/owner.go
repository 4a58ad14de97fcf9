package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/lockholder"
)

// serveOwner is what lshdb serve's /healthz names it (httpapi.Options.Owner),
// and shellOwner lshdb shell's.
const (
	serveOwner = "lshdb serve"
	shellOwner = "lshdb shell"
)

// ownerHealth finds the process that holds the index in dir: the server
// that answers on its socket (serving true), else the holder of its lock
// file (lockholder.PID; 0 when it cannot tell); and what a serving owner says
// it is (HealthJSON.Owner): serveOwner, the command that serves the index while
// it runs ("lshdb insert"), or "" where it says nothing (a program that
// embeds package db, an lshdb before this field).
func ownerHealth(dir string) (pid int, serving bool, owner string) {
	if h, err := socketHealth(dir); err == nil {
		return h.PID, true, h.Owner
	}
	return lockholder.PID(dir), false, ""
}

// socketHealth asks the server on dir's socket for its health (GET
// /healthz, which needs no token, and names the owner's pid). The error
// of a socket nothing serves is its dial's (ownerGone).
func socketHealth(dir string) (httpapi.HealthJSON, error) {
	sock := httpapi.DialPath(httpapi.SocketPath(dir))
	hc := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
	defer hc.CloseIdleConnections()
	var h httpapi.HealthJSON
	resp, err := hc.Get("http://lshdb/healthz")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	// NB: a damaged index answers 503 with its health, pid included.
	if (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable) || json.NewDecoder(resp.Body).Decode(&h) != nil || h.PID <= 0 {
		return h, fmt.Errorf("the server on %s answered /healthz with %s, not its health", httpapi.SocketPath(dir), resp.Status)
	}
	return h, nil
}

// stuckOwner is the error of an index locked by a process whose socket
// takes connections but does not answer within waited: one stopped
// (kill -STOP, a debugger) or stuck.
func stuckOwner(err error, dir string, waited time.Duration) error {
	pid := lockholder.PID(dir)
	if pid <= 0 {
		return fmt.Errorf("%w; its owner does not answer on %s (%v waited): is it stopped or stuck, or is every connection its socket allows busy (its log says so)?", err, httpapi.SocketPath(dir), waited)
	}
	return fmt.Errorf("%w; process %d owns it but does not answer on %s (%v waited): is it stopped (kill -STOP, a debugger; kill -CONT %d resumes it) or stuck (kill %d), or is every connection its socket allows busy (its log says so)?", err, pid, httpapi.SocketPath(dir), waited, pid, pid)
}

// lockedHint adds to an ErrLocked what an operator needs: which process
// holds the index, and what to do. Other errors pass unchanged.
func lockedHint(err error, dir string) error {
	if !errors.Is(err, db.ErrLocked) {
		return err
	}
	pid, serving, owner := ownerHealth(dir)
	sock := httpapi.SocketPath(dir)
	denied := false
	if !serving {
		// NB: a socket of another user's server (mode 0600) refuses the
		// connection: that owner serves, but not to this user.
		c, derr := net.Dial("unix", httpapi.DialPath(sock))
		if derr == nil {
			c.Close()
		}
		denied = errors.Is(derr, fs.ErrPermission)
	}
	// NB: an owner that bound its socket through a path relative to its
	// own working directory serves it, but a socket too long to dial from
	// here cannot be asked: it was named as not serving, and to be killed
	// (a review).
	undialable := false
	if !serving && !denied && !httpapi.Dialable(sock) {
		fi, serr := os.Lstat(sock)
		undialable = serr == nil && fi.Mode()&fs.ModeSocket != 0
	}
	switch {
	case undialable:
		holder := "a process"
		if pid > 0 {
			holder, _ = holderName(pid)
		}
		return fmt.Errorf("%w; %s holds it, and may serve it on %s, but that path is %d bytes, longer than a Unix socket address may be (even relative to this working directory): run the command from a directory nearer the index (cd into or beside it), or have the owner serve on TCP too (lshdb serve --addr 127.0.0.1:PORT) and use --addr",
			err, holder, sock, len(sock))
	case denied:
		return fmt.Errorf("%w; its owner serves it on %s, which belongs to another user (permission denied): run the command as that user, or have the owner serve on TCP with a token too (lshdb serve --addr 127.0.0.1:PORT --token …) and use --addr",
			err, sock)
	case serving:
		holder, _ := holderName(pid)
		if owner != "" {
			holder = fmt.Sprintf("%s (pid %d)", escControls(owner), pid) // NB: what it says it is (HealthJSON.Owner)
		}
		return fmt.Errorf("%w; %s owns it and serves its API on %s: query it there (curl --unix-socket %s http://localhost/v1/stats; the API: GET /v1/openapi.yaml), copy it with lshdb backup, or stop that process (kill %d)",
			err, holder, sock, sock, pid)
	case pid > 0:
		if until, command, ok := stoppingOwner(dir, pid); ok && command != "" {
			return fmt.Errorf("%w; %s (pid %d) is closing it, until %s at the latest: run the command again when it has",
				err, escControls(command), pid, until.Format("15:04:05"))
		} else if ok {
			return fmt.Errorf("%w; lshdb serve (pid %d) is stopping: it lets its requests in flight finish, until %s at the latest; run the command again when it has stopped (a second signal to it would cut those requests)",
				err, pid, until.Format("15:04:05"))
		}
		holder, embedded := holderName(pid)
		if embedded {
			return fmt.Errorf("%w; %s holds it and does not serve it: run the command when that program has closed the index (DB.Close) or ended; a program that serves the index (httpapi.ServeSocket, as lshdb serve does) lets lshdb commands query it meanwhile",
				err, holder)
		}
		if !httpapi.Dialable(sock) {
			// NB: no socket there, and none could be bound from here:
			// the owner's own path to it was likely as long (O2-3).
			return fmt.Errorf("%w; %s holds it and does not serve it: its socket path, %s, is %d bytes, longer than a Unix socket address may be, so an owner started as far from the index cannot serve it: wait for it to end, or stop it (kill %d); an owner started from a directory nearer the index (a shorter --db) serves it",
				err, holder, sock, len(sock), pid)
		}
		return fmt.Errorf("%w; %s holds it and does not serve it: wait for it to end, or stop it (kill %d); an owner started with lshdb serve could be queried meanwhile",
			err, holder, pid)
	}
	return err
}

// holderName names the process pid that holds an index: "lshdb serve
// (pid N)" from its command line where /proc tells it (Linux); another
// program, one that embeds package db, by its own name ("myservice (pid
// N), a program that opened the index with lshdb's package db"), with
// embedded true; else "lshdb (pid N: serve, the shell, or a command that
// holds the index while it runs)".
func holderName(pid int) (name string, embedded bool) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		base := filepath.Base(args[0])
		switch {
		case !strings.HasPrefix(base, "lshdb"):
			// NB: not the command: the user's own service, which the
			// advice to kill it as a finished command would hit (a
			// newcomer's review, N1).
			return fmt.Sprintf("%s (pid %d), a program that opened the index with lshdb's package db,", escControls(base), pid), true
		case len(args) > 1 && !strings.HasPrefix(args[1], "-"):
			return fmt.Sprintf("lshdb %s (pid %d)", escControls(args[1]), pid), false
		}
	}
	return fmt.Sprintf("lshdb (pid %d: serve, the shell, or a command that holds the index while it runs)", pid), false
}

// silently is err for errors.Is, and nothing in a message: a cause that
// decides the exit status (context.Canceled: 130 or 143) where the message
// already says what happened.
type silently struct{ err error }

func (s silently) Error() string { return "" }
func (s silently) Unwrap() error { return s.err }

// stoppingName is the file a serve that is stopping writes into its
// index's directory: its pid and the time by which its drain ends.
const stoppingName = "lshdb.stopping"

// stopSlack is how long after --shutdown-timeout a stopping serve may
// still hold its index: the cancelled requests' handlers (10 s at most)
// and the close.
const stopSlack = 15 * time.Second

// stopping is what a stopping serve's file says, or a command's that
// owned the index and is closing it (Command: what it is, "lshdb
// build"; "" for a serve).
type stopping struct {
	PID     int    `json:"pid"`
	Until   int64  `json:"until_unix_ms"`
	Command string `json:"command,omitempty"`
}

func stoppingPath(dir string) string { return filepath.Join(dir, stoppingName) }

// markStopping writes the file that says this process is stopping until
// until. NB: best effort: without it, a command waits 2 s as before.
func markStopping(dir string, until time.Time) { markStoppingAs(dir, until, "") }

// markStoppingAs is markStopping for a command that owned the index
// (command: what it is) and is closing it.
func markStoppingAs(dir string, until time.Time, command string) {
	b, _ := json.Marshal(stopping{PID: os.Getpid(), Until: until.UnixMilli(), Command: command})
	// NB: written aside and renamed, so that a reader never sees it
	// half written.
	// NB: made anew (O_EXCL), not opened: in an index directory others
	// may write, a link planted at the temporary name had a server of
	// root's write the note over the file it named (a security review,
	// SEC2-10). A name taken (a killed stop's file, or a link) is
	// removed once; one taken again goes without the note.
	tmp := stoppingPath(dir) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) && os.Remove(tmp) == nil {
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if err = cmp.Or(err, f.Close()); err != nil || os.Rename(tmp, stoppingPath(dir)) != nil {
		os.Remove(tmp)
	}
}

// stoppingOwner returns the time until which pid, the holder of dir's
// lock, said it would be stopping; ok is false if it said nothing, if
// another process wrote the file (a server killed mid-drain left it), or
// if that time has passed. NB: Unix only: elsewhere lockholder.PID knows no
// pid, and a command waits 2 s as before.
func stoppingOwner(dir string, pid int) (until time.Time, command string, ok bool) {
	b, err := os.ReadFile(stoppingPath(dir))
	var st stopping
	if err != nil || json.Unmarshal(b, &st) != nil || pid <= 0 || st.PID != pid {
		return time.Time{}, "", false
	}
	until = time.UnixMilli(st.Until)
	return until, st.Command, until.After(time.Now())
}

// ownerCloseWait bounds how long a command waits for a command that
// owned the index and is closing it (markStoppingAs): a flush, and
// Pebble's wait for the compactions under way.
const ownerCloseWait = 2 * time.Minute
