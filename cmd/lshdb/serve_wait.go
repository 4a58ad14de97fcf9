package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lshdb/lshdb/db/httpapi"
)

// waitingServer answers serve's TCP address while serve waits for the
// command that holds the index (httpapi.WaitingHandler: 503, /healthz
// "waiting"), until handOver gives the listener to the index's server.
//
// NB: the address was taken only once the index opened: while a nightly
// insert held the index, connections to it were refused, and a TCP
// liveness probe took the waiting server for dead (a known limit the
// README told to work around).
type waitingServer struct {
	l      *handoverListener
	srv    *http.Server
	served chan error
	holder atomic.Pointer[string]
}

// handoverListener is a listener whose Accept, once handed is set, ends
// with errHandedOver (its deadline passed) and whose Close then does
// nothing: the waiting server lets the listener go without closing it.
type handoverListener struct {
	net.Listener
	handed atomic.Bool
}

var errHandedOver = errors.New("the listener was handed over")

func (l *handoverListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.handed.Load() {
		if c != nil {
			c.Close()
		}
		return nil, errHandedOver
	}
	return c, err
}

func (l *handoverListener) Close() error {
	if l.handed.Load() {
		return nil
	}
	return l.Listener.Close()
}

// startWaiting serves l with httpapi.WaitingHandler until handOver or
// stop, at most maxConns connections at once, its own errors to errLog.
//
// NB: bounded as the index's server's TCP address is: unbounded, silent
// connections over a wait of hours could take every descriptor, and the
// index's open at its end found none (a read-through, R2).
func startWaiting(l net.Listener, so *serveOptions, maxConns int, errLog *log.Logger) *waitingServer {
	ws := &waitingServer{l: &handoverListener{Listener: l}, served: make(chan error, 1)}
	none := "the command that holds the index"
	ws.holder.Store(&none)
	ws.srv = &http.Server{
		Handler: httpapi.WaitingHandler(&httpapi.Options{Token: so.token, ReadToken: so.readToken, Owner: serveOwner},
			func() string { return *ws.holder.Load() }),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    httpapi.MaxHeaderBytes, // NB: SEC2-3
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       10 * time.Second,
		ErrorLog:          errLog,
		// NB: the limiter's hook: without it no connection counted as
		// silent, and one that sent nothing held its place for the
		// header's 10 s instead of the limiter's 2 s.
		ConnState: connState,
	}
	var served net.Listener = ws.l
	if maxConns > 0 {
		served = newConnLimiter(ws.l, maxConns)
	}
	go func() { ws.served <- ws.srv.Serve(served) }()
	return ws
}

// setHolder names the process waited for.
func (ws *waitingServer) setHolder(owner string, pid int) {
	s := fmt.Sprintf("%s (pid %d)", owner, pid)
	ws.holder.Store(&s)
}

// handOver stops the waiting server and leaves its listener open, for the
// index's server: Accept is ended by a deadline in the past, which is
// then cleared; the connections it answered are closed.
func (ws *waitingServer) handOver() {
	dl, ok := ws.l.Listener.(interface{ SetDeadline(time.Time) error })
	if !ok {
		// NB: not a TCP listener: never so, but stop it rather than
		// leave it accepting beside the index's server.
		ws.stop()
		return
	}
	ws.l.handed.Store(true)
	_ = dl.SetDeadline(time.Now())
	<-ws.served
	_ = dl.SetDeadline(time.Time{})
	ws.shutdown() // NB: its listener's Close does nothing now
}

// stop stops the waiting server and closes its listener (serve gave up
// waiting).
func (ws *waitingServer) stop() {
	ws.shutdown()
	<-ws.served
}

// shutdown stops the server: a moment for the answers being written,
// then every connection closed. NB: its answers are immediate 503s;
// Shutdown alone waited 2 s for a connection that had sent nothing yet
// (net/http counts one under 5 s old as active), with the index open and
// served nowhere (a read-through, R3).
func (ws *waitingServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if ws.srv.Shutdown(ctx) != nil {
		_ = ws.srv.Close()
	}
}
