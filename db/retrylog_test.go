package db

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Ensure that a call tried again on Redis says so at its first failure,
// at a failure of another kind, and once every retryLogEvery of one
// kind, each line counting the tries since the last: a line each try
// was about 30 identical lines in a read-only command's minute of tries
// on a cluster with a master down (a review of Redis, RC-5).
func TestRetryLogBounded(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	l := retryLog{logger: slog.New(slog.NewTextHandler(&buf, nil)), what: "opening the index", now: func() time.Time { return clock }}
	down := errors.New("dial tcp 127.0.0.1:7112: connect: connection refused")
	// 30 tries 2 s apart, one kind of failure: lines at 0, 10, 20, …, 50 s.
	for range 30 {
		l.waiting(down, 2*time.Second)
		clock = clock.Add(2 * time.Second)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("30 tries of one failure over 60 s: %d lines, want 6:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "tries=1") || !strings.Contains(lines[1], "tries=5") || !strings.Contains(lines[0], "opening the index failed on Redis") {
		t.Errorf("the lines do not count the tries since the last: %q, %q", lines[0], lines[1])
	}
	// Another kind of failure is said at once.
	l.waiting(errors.New("CLUSTERDOWN The cluster is down"), 2*time.Second)
	if n := strings.Count(buf.String(), "\n"); n != 7 || !strings.Contains(buf.String(), "CLUSTERDOWN") {
		t.Errorf("another failure right after: %d lines in all, want 7:\n%s", n, buf.String())
	}
}
