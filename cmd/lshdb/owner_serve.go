package main

import (
	"context"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
)

// serveOwned serves the index's API on its socket while this command owns
// it (a shell, an insert, a build), so that other commands attach to it
// instead of finding it locked: during a build they answer from the index
// as it was before the load, then after it (a load is one atomic step).
// The returned function stops serving; the caller MUST call it before
// closing d.
//
// NB: best effort and quiet: an index whose socket cannot be made (its
// path too long for a socket, a read-only directory) is owned as before,
// and other commands find it locked, with this process's pid.
func (a *app) serveOwned(d index) (stop func()) {
	dd, ok := d.(*db.DB)
	if !ok || a.dbDir == "" || db.IsRedisURL(a.dbDir) {
		return func() {} // attached, or not a directory
	}
	stopServing, err := httpapi.ServeSocket(dd, nil)
	if err != nil {
		return func() {}
	}
	return func() {
		// Requests in flight finish (briefly); then the index closes.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopServing(ctx)
	}
}
