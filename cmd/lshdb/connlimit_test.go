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

// Ensure that a connection over --max-connections takes the place of the
// one idle longest, and waits only while every connection has a request
// in progress (a server operator's review, S2: idle keep-alive
// connections held their places for 2 minutes, and a client with no
// token locked every other out). The oracle: the answers each raw
// connection reads, and which of them the server closed.
func TestConnLimiterReclaimsIdle(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 3
	l := newConnLimiter(raw, limit)
	hold := make(chan struct{})
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
	defer srv.Close()

	type client struct {
		c net.Conn
		r *bufio.Reader
	}
	dial := func() client {
		t.Helper()
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return client{c, bufio.NewReader(c)}
	}
	send := func(c client, path string) {
		t.Helper()
		if _, err := io.WriteString(c.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(c client, within time.Duration) error {
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

	// Three connections, each idle after one answer.
	var idle []client
	for range limit {
		c := dial()
		send(c, "/")
		if err := answer(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// A fourth is answered: the first, idle longest, is closed.
	fourth := dial()
	send(fourth, "/")
	if err := answer(fourth, 10*time.Second); err != nil {
		t.Fatalf("a connection over the bound with %d idle: %v, want an answer", limit, err)
	}
	if n := l.reclaimed.Load(); n != 1 {
		t.Errorf("%d idle connections closed, want 1", n)
	}
	idle[0].c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle[0].r.ReadByte(); err != io.EOF {
		t.Errorf("the connection idle longest: read %v, want it closed (EOF)", err)
	}
	for _, c := range idle[1:] {
		send(c, "/")
		if err := answer(c, 10*time.Second); err != nil {
			t.Errorf("a connection idle since later: %v, want it kept and answered", err)
		}
	}

	// Every place taken by a request in progress: the next waits until
	// one ends.
	busy := []client{idle[1], idle[2], fourth}
	for _, c := range busy {
		send(c, "/hold")
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.open.Load() != limit || len(idleOf(l)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d open, %d idle: want %d busy", l.open.Load(), len(idleOf(l)), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	waiting := dial()
	send(waiting, "/")
	if err := answer(waiting, 300*time.Millisecond); err == nil {
		t.Fatal("a connection over the bound was answered while every place had a request in progress")
	}
	close(hold)
	for _, c := range busy {
		if err := answer(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// NB: its request was sent before: the answer comes once a place is
	// free (the busy ones are idle now, and one gives its place).
	if err := answer(waiting, 10*time.Second); err != nil {
		t.Fatalf("the waiting connection, once the requests ended: %v", err)
	}
}

func idleOf(l *connLimiter) []*limitedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*limitedConn
	for c := range l.idle {
		out = append(out, c)
	}
	return out
}
