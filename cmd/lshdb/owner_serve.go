package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
)

// serveOwnedOutput serves the index's API on its socket while this command owns
// it (a shell, an insert, a build), so that other commands attach to it
// instead of finding it locked: during a build they answer from the index
// as it was before the load, then after it (a load is one atomic step).
// The returned function stops serving; the caller MUST call it before
// closing d.
//
// NB: best effort and quiet: an index whose socket cannot be made (its
// path too long for a socket, a read-only directory) is owned as before,
// and other commands find it locked, with this process's pid.
//
// stop closes the command's output only if closeOutput: a command that
// writes its output after it stops serving (backup's summary, compact's
// and purge's: outputAfterClose) keeps it.
func (a *app) serveOwnedOutput(d index, closeOutput bool) (stop func()) {
	dd, ok := d.(*db.DB)
	if !ok || a.dbDir == "" || db.IsRedisURL(a.dbDir) {
		return func() {} // attached, or not a directory
	}
	// NB: named as the owner, so that a serve started meanwhile waits for
	// this command to end (serve's open).
	stopServing, err := httpapi.ServeSocket(dd, &httpapi.Options{Owner: a.command})
	if err != nil {
		if errors.Is(err, httpapi.ErrSocketPathTooLong) {
			// NB: other commands found the index held by a process that
			// "does not serve it", and nothing said why (an operator's
			// review, O2-3).
			sock := httpapi.SocketPath(a.dbDir)
			a.notef(fmt.Sprintf("other commands cannot attach to the index while this one runs: its socket path, %s, is %d bytes, longer than a Unix socket address may be; run from a directory nearer the index (a shorter --db) for them to", sock, len(sock)))
		}
		return func() {}
	}
	return func() {
		// NB: this command's output is complete: closed, so that a
		// command reading it (pairs | clusters --from -), which may be
		// attached here, sees its end and can finish its request.
		if closeOutput {
			a.out.closeFile()
		}
		if a.ctx.Err() != nil {
			// Interrupted: requests in flight get a moment.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			stopServing(ctx)
			return
		}
		// NB: the requests in flight are other commands' whole jobs (an
		// attached build's load, a clusters --from): they finish, however
		// long they take, unless an interrupt cuts them. Cut after 5 s,
		// they failed with nothing done: a nightly build that found a
		// short insert holding the index.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		defer context.AfterFunc(a.ctx, cancel)()
		note := time.AfterFunc(ownerWaitNote, func() {
			a.notef("waiting for the commands attached to this index to finish their requests (interrupt to cut them off)")
		})
		defer note.Stop()
		stopServing(ctx)
	}
}

// ownerWaitNote is how long an owner waits for attached commands'
// requests before it says so.
const ownerWaitNote = 2 * time.Second
