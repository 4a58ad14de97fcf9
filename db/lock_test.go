package db

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Ensure that Open with a LockTimeout waits for the database to be
// released and then opens it, and that it fails with ErrLocked once the
// timeout has passed while the database stays held.
func TestLockTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	holder := mustOpen(t, dir, nil)
	if err := holder.Put(Doc{ID: "a", Text: "a document to find"}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// NB: held by a handle of this process, which the message says.
	if _, err := Open(dir, &Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another handle in this process") {
		t.Fatalf("held: %v", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", waited)
	}
	if _, err := Open(dir, &Options{LockTimeout: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a negative timeout: %v", err)
	}
	// NB: the holder closes only once the waiter has failed to take the
	// lock at least once: the waiter then must wait, not find it free.
	retried := make(chan struct{}, 1)
	lockRetried = func() {
		select {
		case retried <- struct{}{}:
		default:
		}
	}
	defer func() { lockRetried = nil }()
	type result struct {
		d   *DB
		err error
	}
	got := make(chan result, 1)
	go func() {
		d, err := Open(dir, &Options{LockTimeout: time.Minute})
		got <- result{d, err}
	}()
	<-retried
	holder.Close()
	r := <-got
	if r.err != nil {
		t.Fatalf("after the release: %v", r.err)
	}
	defer r.d.Close()
	if ok, _ := r.d.Has("a"); !ok {
		t.Error("the document is missing")
	}
}
