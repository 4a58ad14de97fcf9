package db

import (
	"context"
	"sync"
	"testing"

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
