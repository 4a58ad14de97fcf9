package main

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter bounds the connections open at once on a listener
// (--max-connections), as netutil.LimitListener does, except that a
// connection over the limit takes the place of the one idle longest (a
// keep-alive connection between requests): the server would close it at
// --idle-timeout anyway, and a client that finds it closed opens
// another. Only when every connection has a request in progress does the
// next wait to be served, accepted but unanswered until one closes.
//
// NB: with netutil's limiter, idle connections held their places until
// --idle-timeout (2 minutes): a client with no token opened 4,096
// keep-alive connections to /healthz, left them idle, and every other
// TCP client, a load balancer's health check too, got no answer (a
// server operator's review, S2).
type connLimiter struct {
	net.Listener
	slots  chan struct{}
	closed chan struct{}
	once   sync.Once
	// idled says that a connection went idle: an Accept waiting for room
	// closes it.
	idled chan struct{}

	mu   sync.Mutex
	idle map[*limitedConn]time.Time // the connections between requests, since when

	open      atomic.Int64 // connections open (served)
	reclaimed atomic.Int64 // idle connections closed to make room
}

func newConnLimiter(l net.Listener, n int) *connLimiter {
	return &connLimiter{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{}), idled: make(chan struct{}, 1), idle: map[*limitedConn]time.Time{}}
}

// Accept accepts the next connection and makes room for it.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			l.open.Add(1)
			return &limitedConn{Conn: c, l: l}, nil
		default:
		}
		// NB: a slot first, in a select of its own: with an idle
		// connection signalled as well, a select of both closed one at
		// random while a slot was free.
		l.closeIdlest()
		select {
		case l.slots <- struct{}{}:
			l.open.Add(1)
			return &limitedConn{Conn: c, l: l}, nil
		case <-l.idled: // NB: a request ended: its connection makes room
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// Close closes the listener; an Accept waiting for room returns.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// closeIdlest closes the connection idle longest, if any is idle.
func (l *connLimiter) closeIdlest() {
	l.mu.Lock()
	var oldest *limitedConn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	if oldest != nil {
		delete(l.idle, oldest)
	}
	l.mu.Unlock()
	if oldest != nil {
		l.reclaimed.Add(1)
		oldest.Close()
	}
}

// connState is the server's ConnState hook: it keeps track of which of
// the limiter's connections are idle.
func connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l := lc.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		l.idle[lc] = time.Now()
		select {
		case l.idled <- struct{}{}:
		default:
		}
	default:
		delete(l.idle, lc)
	}
}

// limitedConn is a connection of a connLimiter: its Close gives back its
// place (once, whoever closes it).
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.idle, c)
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		<-c.l.slots
	})
	return err
}
