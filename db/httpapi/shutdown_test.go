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
