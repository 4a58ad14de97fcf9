package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a prepared batch is checked as PutBatch checks its
// documents, is written once and only by its handle, may be written again
// after a write that failed (nothing stored by it), and that its expiry
// counts from the write, not the preparation (a fake clock). The model
// test writes prepared batches against brute force.
func TestPreparedBatch(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs, clock: clock.now, ExpirySweep: -1})
	other := mustOpen(t, "other", &Options{fs: fs})
	defer other.Close()
	docs := []Doc{{ID: "a", Text: expiryTexts["a"]}, {ID: "b", Text: expiryTexts["b"]}, {ID: "a", Text: expiryTexts["c"]}}

	// The documents' errors are PutBatch's, with the position.
	_, err := d.PrepareBatch([]Doc{{ID: "x", Text: "fine text"}, {ID: "y", Text: "  "}}, nil)
	var de *DocError
	if !errors.Is(err, ErrEmptyDocument) || !errors.As(err, &de) || de.Index != 1 {
		t.Fatalf("PrepareBatch with an empty document: %v", err)
	}
	pb, err := d.PrepareBatch(docs, &WriteOptions{TTL: time.Second})
	if err != nil || pb.Len() != 2 {
		t.Fatalf("PrepareBatch: Len %v, %v; want 2 (a repeated)", pb, err)
	}
	for _, c := range []struct {
		name string
		db   *DB
		pb   *PreparedBatch
	}{{"nil", d, nil}, {"another handle", other, pb}} {
		if _, err := c.db.PutPrepared(ctx, c.pb); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("PutPrepared of %s: %v, want ErrInvalidOptions", c.name, err)
		}
	}
	// A write that fails before the batch is written stores nothing, and
	// the batch may be written again.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.PutPrepared(cancelled, pb); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutPrepared with an ended context: %v", err)
	}
	if n, _ := d.Count(); n != 0 {
		t.Fatalf("a failed PutPrepared stored %d documents", n)
	}
	clock.advance(10 * time.Second) // the TTL counts from the write
	res, err := d.PutPrepared(ctx, pb)
	if err != nil || res.Stored != 2 || res.Repeated != 1 || res.Replaced != 0 {
		t.Fatalf("PutPrepared: %+v, %v", res, err)
	}
	if _, err := d.PutPrepared(ctx, pb); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("PutPrepared again: %v, want ErrInvalidOptions", err)
	}
	// The last "a" won, as in PutBatch.
	if got, err := d.Get("a"); err != nil || got.Text != expiryTexts["c"] {
		t.Fatalf("Get(a) = %+v, %v; want the last one's text", got, err)
	}
	clock.advance(999 * time.Millisecond)
	if ids := queryIDs(t, d, expiryTexts["a"]); len(ids) != 2 {
		t.Fatalf("999 ms after the write: %v, want a and b (the TTL counted from the preparation?)", ids)
	}
	clock.advance(time.Millisecond)
	if ids := queryIDs(t, d, expiryTexts["a"]); len(ids) != 0 {
		t.Fatalf("1 s after the write: %v, want none", ids)
	}
	// A closed handle and a read-only one refuse.
	pb2, err := d.PrepareBatch(docs[:1], nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := d.PutPrepared(ctx, pb2); !errors.Is(err, ErrClosed) {
		t.Fatalf("PutPrepared on a closed handle: %v", err)
	}
	ro := mustOpen(t, "db", &Options{fs: fs, ReadOnly: true})
	defer ro.Close()
	if _, err := ro.PrepareBatch(docs, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PrepareBatch on a read-only handle: %v", err)
	}
}
