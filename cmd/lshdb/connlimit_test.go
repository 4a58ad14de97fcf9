package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// limitedServer serves "ok" (after hold is closed, for /hold) behind a
// connLimiter of limit connections that reclaims after after.
func limitedServer(t *testing.T, limit int, after time.Duration) (l *connLimiter, addr string, hold chan struct{}) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = newConnLimiter(raw, limit)
	l.after = after
	hold = make(chan struct{})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				<-hold
			}
			io.WriteString(w, "ok")
		}),
		ConnState:   connState,
		IdleTimeout: time.Hour,
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l, raw.Addr().String(), hold
}

// rawClient is one connection, with its requests written by hand.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rawClient{c, bufio.NewReader(c)}
}

func (c rawClient) send(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

func (c rawClient) answer(within time.Duration) error {
	c.c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		return errors.New("answer " + string(b))
	}
	return nil
}

// idleConns returns n connections, each idle after one request answered,
// idle in that order by l's clock.
//
// NB: the server marks a connection idle after the client may have read
// its answer: under load (a CI run) the next connection came, and was
// marked new, before, and the limiter took it for the one that waited
// longest.
func idleConns(t *testing.T, l *connLimiter, addr string, n int) []rawClient {
	t.Helper()
	var idle []rawClient
	for i := range n {
		c := dialRaw(t, addr)
		c.send(t, "/")
		if err := c.answer(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			waiting := len(l.waiting)
			l.mu.Unlock()
			if waiting == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections idle after 10 s, want %d", waiting, i+1)
			}
		}
	}
	return idle
}

func (c rawClient) closedByServer(t *testing.T) bool {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.r.ReadByte()
	return err == io.EOF
}

// Ensure that a connection over --max-connections takes the place of the
// one that waited longest, idle or silent, once it has waited the
// limiter's time (a server operator's review, S2: idle keep-alive
// connections held their places for 2 minutes, and a client with no
// token locked every other out; a read-through's R2: silent ones too),
// and not before (R1: a connection closed as its request ended, or as
// the next arrived, failed the writes of clients in a loop with EOF);
// and that it waits while every connection has a request in progress.
// The oracle: the answers each raw connection reads, and which of them
// the server closed.
func TestConnLimiterReclaims(t *testing.T) {
	const limit = 3
	t.Run("idle, once aged", func(t *testing.T) {
		l, addr, _ := limitedServer(t, limit, 300*time.Millisecond)
		idle := idleConns(t, l, addr, limit)
		overTheBound(t, l, addr, idle[0], "idle")
		for _, c := range idle[1:] {
			c.send(t, "/")
			if err := c.answer(10 * time.Second); err != nil {
				t.Errorf("a connection idle since later: %v, want it kept and answered", err)
			}
		}
	})
	t.Run("idle, not yet aged", func(t *testing.T) {
		l, addr, _ := limitedServer(t, limit, time.Hour)
		idleConns(t, l, addr, limit)
		fourth := dialRaw(t, addr)
		fourth.send(t, "/")
		if err := fourth.answer(300 * time.Millisecond); err == nil {
			t.Fatal("a connection over the bound took the place of one idle a moment")
		}
		if n := l.reclaimed.Load(); n != 0 {
			t.Errorf("%d connections closed, want none", n)
		}
	})
	t.Run("silent, once aged", func(t *testing.T) {
		l, addr, _ := limitedServer(t, limit, 300*time.Millisecond)
		var silent []rawClient
		for range limit {
			silent = append(silent, dialRaw(t, addr))
		}
		time.Sleep(50 * time.Millisecond) // NB: accepted in the order dialled
		overTheBound(t, l, addr, silent[0], "silent")
	})
	t.Run("busy", func(t *testing.T) {
		l, addr, hold := limitedServer(t, limit, 300*time.Millisecond)
		var busy []rawClient
		for range limit {
			c := dialRaw(t, addr)
			c.send(t, "/hold")
			busy = append(busy, c)
		}
		deadline := time.Now().Add(10 * time.Second)
		for l.open.Load() != limit || waitingOf(l) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d open, %d waiting: want %d busy", l.open.Load(), waitingOf(l), limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
		next := dialRaw(t, addr)
		next.send(t, "/")
		if err := next.answer(time.Second); err == nil {
			t.Fatal("a connection over the bound was answered while every place had a request in progress")
		}
		close(hold)
		for _, c := range busy {
			if err := c.answer(10 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		// NB: its request was sent before: the answer comes once a
		// place is free (the busy ones are idle now, and one gives its
		// place once it has waited).
		if err := next.answer(10 * time.Second); err != nil {
			t.Fatalf("the waiting connection, once the requests ended: %v", err)
		}
	})
}

func waitingOf(l *connLimiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}

// overTheBound checks that a connection over the bound of l, at addr, is
// answered once the one that waited longest, oldest (idle or silent, as
// kind says), is closed for it, and no other.
func overTheBound(t *testing.T, l *connLimiter, addr string, oldest rawClient, kind string) {
	t.Helper()
	fourth := dialRaw(t, addr)
	fourth.send(t, "/")
	if err := fourth.answer(10 * time.Second); err != nil {
		t.Fatalf("a connection over the bound with the others %s: %v, want an answer", kind, err)
	}
	if n := l.reclaimed.Load(); n != 1 {
		t.Errorf("%d connections closed, want 1", n)
	}
	if !oldest.closedByServer(t) {
		t.Errorf("the connection %s longest is open, want it closed", kind)
	}
}
