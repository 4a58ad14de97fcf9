package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that a purge beside writers that refill the lists it found empty
// deletes none of them: the purge scans without the writer lock (it held
// it for the whole scan, and every write waited behind it: 5 s behind 4.6
// million lists) and reads each list again under the lock before it
// deletes it. The oracle: Check (every stored document's postings are in
// its lists, no list is empty).
func TestPurgeBesideWriters(t *testing.T) {
	d, err := Open("db", &Options{fs: vfs.NewMem(), ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	docs := loadDocs(2000)
	docs = docs[:1800] // distinct ids
	ids := make([]string, len(docs))
	for i, doc := range docs {
		ids[i] = doc.ID
	}
	for round := range 4 {
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := d.DeleteIDs(ids, nil); err != nil {
			t.Fatal(err)
		}
		// Every list is now empty; the same documents go back into the
		// same lists while purges run.
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 3 {
				if _, err := d.PurgeEmptyLists(ctx); err != nil {
					t.Error(err)
				}
			}
		})
		for i := 0; i < len(docs); i += 50 {
			if _, err := d.PutBatch(docs[i:i+50], nil); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		if _, err := d.PurgeEmptyLists(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := d.Check(ctx)
		if err != nil || !rep.OK() || rep.EmptyLists != 0 || rep.Docs != len(docs) {
			t.Fatalf("round %d: check %+v, %v", round, rep, err)
		}
	}
}

// Ensure that a handle with Options.PurgeEvery deletes in the background
// the lists that deletes and upserts emptied: after 600 of 1,000
// documents are deleted or replaced, the store comes to hold exactly the
// lists of an index of the documents left, with the same live postings
// (the oracle: that index built on its own), and a purge then finds
// nothing. A read-only handle, or one without the option, purges nothing
// (Check's count of empty lists stays), and a PurgeEvery below a second
// is refused.
func TestPurgeEvery(t *testing.T) {
	for _, every := range []time.Duration{-time.Second, time.Nanosecond, 999 * time.Millisecond} {
		if _, err := Open("x", &Options{fs: vfs.NewMem(), PurgeEvery: every}); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("PurgeEvery %v: %v, want ErrInvalidOptions", every, err)
		}
	}
	defer func(m time.Duration) { minPurgeEvery = m }(minPurgeEvery)
	minPurgeEvery = time.Millisecond
	fs := vfs.NewMem()
	docs := loadDocs(1000)
	for i := range docs {
		docs[i].ID = fmt.Sprint("d-", i) // distinct
	}
	keep, replaced, deleted := docs[:400], docs[400:700], docs[700:]
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1})
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, doc := range deleted {
		ids = append(ids, doc.ID)
	}
	if _, err := d.DeleteIDs(ids, nil); err != nil {
		t.Fatal(err)
	}
	// Each replaced by the text of a kept document: its old lists empty.
	var upserts []Doc
	for i, doc := range replaced {
		upserts = append(upserts, Doc{ID: doc.ID, Text: keep[i].Text})
	}
	if _, err := d.PutBatch(upserts, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || rep.EmptyLists == 0 {
		t.Fatalf("before any purge: %d empty lists, %v; want some", rep.EmptyLists, err)
	}
	empty := rep.EmptyLists
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, "db", &Options{fs: fs, ReadOnly: true, PurgeEvery: time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if rep, err := ro.Check(context.Background()); err != nil || rep.EmptyLists != empty {
		t.Fatalf("a read-only handle with PurgeEvery: %d empty lists, %v; want %d", rep.EmptyLists, err, empty)
	}
	ro.Close()
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: 5 * time.Millisecond})
	defer d.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, err := d.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.EmptyLists == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d empty lists still there after 10 s of purges every 5 ms", rep.EmptyLists, empty)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// NB: the replacements took doc numbers past the 1,000 first, and
	// their texts are the kept ones': they add no list, and their
	// postings in the kept ones' lists are not compared. The deleted and
	// replaced documents' numbers (401-1,000) must be gone from them.
	sameListsAsIndexOf(t, d, keep, uint64(len(docs)))
	if n, err := d.PurgeEmptyLists(context.Background()); err != nil || n != 0 {
		t.Fatalf("a purge after the background's: %d, %v", n, err)
	}
}
