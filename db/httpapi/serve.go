package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/lshdb/lshdb/db"
)

// ServeSocket serves d's API on the index's Unix socket (SocketPath of
// d.Dir(), mode 0600), so that the lshdb command and db/client attach to
// an index a program embeds, as they attach to lshdb serve: the one call
// an embedding program makes to opt in. o is the handler's options (nil:
// the defaults; no token is needed on the socket, which only this user
// can reach).
//
// The returned stop stops accepting, lets requests in flight finish until
// ctx ends (then cuts them), and removes the socket. Call it before
// d.Close: a request that arrives after Close fails with db.ErrClosed.
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
	srv := &http.Server{Handler: Handler(d, o), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	return func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		<-done
		return err
	}, nil
}
