package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lshdb/lshdb/db"
)

// DrainSocket readies l, a listener of ListenSocket that a server
// serves, for the server's Shutdown: it removes the socket's name, so
// that no client dials it any more (its dial fails: its request never
// reached this server, and an attached command repeats it on the next
// owner), and waits a moment (or until ctx ends) while the server
// accepts the connections dialled before. Without it, Shutdown closed
// the listener with such connections waiting to be accepted, their
// requests sent: they were reset, and the client could not tell them
// from requests cut in flight (a concurrency review, C1). Other
// listeners are left as they are.
func DrainSocket(ctx context.Context, l net.Listener) {
	sl, ok := l.(*socketListener)
	if !ok {
		return
	}
	sl.unlink()
	t := time.NewTimer(socketDrain)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// socketDrain is how long a socket's server goes on accepting once its
// name is gone: the connections dialled before are in its queue.
const socketDrain = 50 * time.Millisecond

// ServeSocket serves d's API on the index's Unix socket (SocketPath of
// d.Dir(), mode 0600), so that the lshdb command and db/client attach to
// an index a program embeds, as they attach to lshdb serve: the one call
// an embedding program makes to opt in. o is the handler's options (nil:
// the defaults; no token is needed on the socket, which only this user
// can reach).
//
// The returned stop serves on while requests are in flight, new ones
// included (another command's load, then its next batch), until none is
// or ctx ends; then it stops accepting, lets a request that came in
// meanwhile finish until ctx ends (then cuts it), and removes the socket.
// Call it before d.Close: a request that arrives after Close fails with
// db.ErrClosed.
//
//	d, err := db.Open(dir, nil)
//	...
//	stop, err := httpapi.ServeSocket(d, nil)
//	...
//	defer d.Close()
//	defer stop(context.Background())
func ServeSocket(d *db.DB, o *Options) (stop func(ctx context.Context) error, err error) {
	l, err := ListenSocket(SocketPath(d.Dir()))
	if err != nil {
		return nil, err
	}
	var active atomic.Int64 // requests in flight
	h := Handler(d, o)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: MaxHeaderBytes, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		h.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	return func(ctx context.Context) error {
		// NB: while one request runs, more may come (a command attached
		// here that goes on): they are served, rather than refused at
		// the socket while this process still holds the index (they then
		// failed as locked).
		for active.Load() > 0 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		// NB: Shutdown serves the connections accepted that are still
		// sending their request.
		DrainSocket(ctx, l)
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		<-done
		return err
	}, nil
}
