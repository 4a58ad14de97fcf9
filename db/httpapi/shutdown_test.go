package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// closedConnWriter is a ResponseWriter whose connection the server has
// closed: its flush fails, as net/http's does then.
type closedConnWriter struct {
	*httptest.ResponseRecorder
	err error
}

func (w closedConnWriter) FlushError() error { return w.err }

// Ensure that a request whose answer was written after the server's
// shutdown cut it, into a connection already closed, is logged and
// counted as an answer the client did not get, not as its 200 (an
// operator's soak review, O2), and that one whose flush works, or that
// was not cut, is not.
func TestAnswerAfterTheShutdownCut(t *testing.T) {
	d := openFixture(t, 3, nil)
	for _, c := range []struct {
		name     string
		cut      bool
		flushErr error
		want     bool // logged as not delivered
	}{
		{"cut, connection closed", true, net.ErrClosed, true},
		{"cut, connection open", true, nil, false},
		{"not cut, flush failing", false, net.ErrClosed, false},
		// A writer that cannot flush (a wrapper without Flush or
		// Unwrap) tells nothing of the connection (a read-through, R6).
		{"cut, no flush", true, http.ErrNotSupported, false},
	} {
		var logged bytes.Buffer
		var doneErr error
		var doneStatus int
		h := Handler(d, &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil)), Hooks: Hooks{Done: func(_ context.Context, _ string, status int, err error, _ time.Duration) {
			doneStatus, doneErr = status, err
		}}})
		ctx, cancel := context.WithCancelCause(context.Background())
		if c.cut {
			cancel(ErrShutdown)
		}
		r := httptest.NewRequest("GET", "/healthz", nil).WithContext(ctx)
		h.ServeHTTP(closedConnWriter{httptest.NewRecorder(), c.flushErr}, r)
		cancel(nil)
		got := errors.Is(doneErr, ErrShutdown) && strings.Contains(fmt.Sprint(doneErr), "did not reach the client") &&
			strings.Contains(logged.String(), "level=WARN") && strings.Contains(logged.String(), "code=shutdown")
		if got != c.want || doneStatus != http.StatusOK {
			t.Errorf("%s: logged as not delivered %v, want %v (status %d, %v): %s", c.name, got, c.want, doneStatus, doneErr, logged.String())
		}
	}
}

// Ensure the same through net/http itself: a request held (by its Start
// hook) while the server cuts it and closes its connection, then
// answered, is reported as not delivered, and its client gets no answer
// (a read-through, R8: the test above mocks the flush).
func TestAnswerAfterTheShutdownCutServed(t *testing.T) {
	d := openFixture(t, 3, nil)
	started, release := make(chan struct{}), make(chan struct{})
	doneErr := make(chan error, 1)
	h := Handler(d, &Options{Hooks: Hooks{
		Start: func(context.Context, string) { close(started); <-release },
		Done:  func(_ context.Context, _ string, _ int, err error, _ time.Duration) { doneErr <- err },
	}})
	base, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	defer srv.Close()
	clientErr := make(chan error, 1)
	go func() {
		c := &http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get(srv.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-started
	cut(ErrShutdown)
	srv.CloseClientConnections()
	close(release)
	if err := <-clientErr; err == nil {
		t.Error("the client got an answer over a connection the server closed")
	}
	select {
	case err := <-doneErr:
		if !errors.Is(err, ErrShutdown) || !strings.Contains(fmt.Sprint(err), "did not reach the client") {
			t.Errorf("the request's end: %v, want it not delivered", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request did not end")
	}
}

// Ensure that a request cut by the server's shutdown is said as the
// shutdown, matching both ErrShutdown and the failure it caused, without
// the failure's words: a body's read that the shutdown ended said
// "request timed out" and the server's socket path (an HTTP review,
// HT-8).
func TestShutdownCutSaidAsTheShutdown(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrShutdown)
	r := httptest.NewRequest("POST", "/v1/docs/put-if-new", nil).WithContext(ctx)
	read := fmt.Errorf("%w: reading the body: read unix /srv/.lshdb-sock-1/s->@: %w", ErrRequestTimeout, os.ErrDeadlineExceeded)
	err := cutErr(r, read)
	if !errors.Is(err, ErrShutdown) || !errors.Is(err, ErrRequestTimeout) {
		t.Fatalf("cutErr = %v; want ErrShutdown and the read's ErrRequestTimeout", err)
	}
	if msg := err.Error(); strings.Contains(msg, "timed out") || strings.Contains(msg, "/srv/") {
		t.Fatalf("cutErr says %q: the read's words", msg)
	}
	if got := codeOf(err).Code; got != "shutdown" {
		t.Fatalf("code %q, want shutdown", got)
	}
}
