package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter bounds the connections open at once on a listener
// (--max-connections), as netutil.LimitListener does, except that a
// connection over the limit takes the place of the one that waited
// longest, idle (a keep-alive connection between requests) or silent (no
// request yet), once it has waited reclaimAfter: the server would close
// it at --idle-timeout or --read-timeout anyway. Only while every
// connection has a request in progress or waited less does the next wait
// to be served, accepted but unanswered until one closes or ages.
//
// NB: with netutil's limiter, idle connections held their places until
// --idle-timeout (2 minutes): a client with no token opened 4,096
// keep-alive connections to /healthz, left them idle, and every other
// TCP client, a load balancer's health check too, got no answer (a
// server operator's review, S2). A connection is reclaimed only after
// reclaimAfter: one closed the moment its request ended, or while its
// next was arriving (net/http calls it active only once its header is
// read), failed 19% of the puts of five clients in a loop at a bound of
// 4, with EOF (a read-through's R1): a client may resend a read, not a
// write. A connection idle that long that a client reuses as it is closed
// meets the race --idle-timeout has always had.
type connLimiter struct {
	net.Listener
	slots  chan struct{}
	closed chan struct{}
	once   sync.Once
	after  time.Duration // reclaimAfter (shorter in tests)
	// waited says that a connection went idle or came: an Accept waiting
	// for room looks again at when one may be reclaimed.
	waited chan struct{}

	mu      sync.Mutex
	waiting map[*limitedConn]time.Time // the idle and the silent connections, since when

	open      atomic.Int64 // connections open (served)
	reclaimed atomic.Int64 // waiting connections closed to make room

	// log, when set, is told (at most once a minute: warned) that the
	// listener named name is at its bound. NB: a socket full of
	// connections with requests in progress made attached commands say
	// the owner did not answer, and nothing said why (a read-through,
	// R1).
	log    *slog.Logger
	name   string
	warned atomic.Int64 // unix nanoseconds of the last warning
}

// full logs that the listener is at its bound, at most once a minute.
func (l *connLimiter) full() {
	if l.log == nil {
		return
	}
	now := time.Now().UnixNano()
	if last := l.warned.Load(); now-last < int64(time.Minute) || !l.warned.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("lshdb: a listener's connections are at their bound: a new one takes the place of one idle or silent 2 s, or waits while every one has a request in progress (--max-connections)", "listener", l.name, "max_connections", cap(l.slots))
}

// reclaimAfter is how long a connection waits, idle or silent, before one
// over the bound may take its place.
const reclaimAfter = 2 * time.Second

func newConnLimiter(l net.Listener, n int) *connLimiter {
	return &connLimiter{Listener: l, after: reclaimAfter, slots: make(chan struct{}, n), closed: make(chan struct{}), waited: make(chan struct{}, 1), waiting: map[*limitedConn]time.Time{}}
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
			l.full()
		}
		// NB: a slot first, in a select of its own: with a waiting
		// connection signalled as well, a select of both could close one
		// while a slot was free.
		var aged <-chan time.Time
		var timer *time.Timer
		if next := l.reclaim(time.Now()); next > 0 {
			timer = time.NewTimer(next)
			aged = timer.C
		}
		got := false
		select {
		case l.slots <- struct{}{}:
			got = true
		case <-l.waited:
		case <-aged:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
		if got {
			l.open.Add(1)
			return &limitedConn{Conn: c, l: l}, nil
		}
	}
}

// Close closes the listener; an Accept waiting for room returns.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// reclaim closes the connection that has waited longest, if it has waited
// reclaimAfter, and returns 0; else it returns how long until the one
// that waited longest will have (0 as well when none waits).
func (l *connLimiter) reclaim(now time.Time) time.Duration {
	l.mu.Lock()
	var oldest *limitedConn
	var since time.Time
	for c, t := range l.waiting {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	if oldest == nil {
		l.mu.Unlock()
		return 0
	}
	if wait := since.Add(l.after).Sub(now); wait > 0 {
		l.mu.Unlock()
		return wait
	}
	delete(l.waiting, oldest)
	l.mu.Unlock()
	l.reclaimed.Add(1)
	oldest.Close()
	return 0
}

// connState is the server's ConnState hook: it keeps track of which of
// the limiter's connections wait, idle or silent.
func connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l := lc.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		l.waiting[lc] = time.Now()
		select {
		case l.waited <- struct{}{}:
		default:
		}
	default:
		delete(l.waiting, lc)
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
		delete(c.l.waiting, c)
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		<-c.l.slots
	})
	return err
}
