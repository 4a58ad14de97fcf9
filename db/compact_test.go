package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Ensure that Compact frees the space of replaced documents: an index
// loaded four times over with the same documents (each load replacing
// every one) takes much more room than one load, and after Compact about
// as much as one load (the oracle: the size of that first load), with
// every document still there and answering.
func TestCompactFreesReplaced(t *testing.T) {
	if raceEnabled {
		// NB: 30 s of CI's -race run of db (Pebble checks its invariants
		// under -race, in every compaction; 1.4 s without), for no
		// concurrency of lshdb's own: the README's test run covers it.
		t.Skip("one goroutine of lshdb's: the race detector only slows it")
	}
	rng := rand.New(rand.NewPCG(4, 4))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	docs := make([]Doc, 20_000)
	for i := range docs {
		var b strings.Builder
		for range 60 {
			b.WriteString(words[rng.IntN(len(words))])
			fmt.Fprintf(&b, "%d ", rng.IntN(1000))
		}
		docs[i] = Doc{ID: fmt.Sprintf("doc%05d", i), Text: b.String()}
	}
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{NoSync: true})
	defer func() { d.Close() }()
	load := func() {
		t.Helper()
		if _, err := d.Load(context.Background(), func(yield func(Doc, error) bool) {
			for _, doc := range docs {
				if !yield(doc, nil) {
					return
				}
			}
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		t.Helper()
		in, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		return int64(in.DiskBytes)
	}
	load()
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	once := size()
	for range 3 {
		load()
	}
	reloaded := size()
	if reloaded < once*3/2 {
		t.Logf("reloading took %d bytes against %d for one load: Pebble freed the space itself", reloaded, once)
	}
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	// NB: read at once: Compact returns once Pebble has deleted the
	// obsolete tables (before, this read counted them, and lshdb compact
	// reported 75 MiB after, where the index took 25 MiB a moment later).
	after := size()
	t.Logf("one load %d bytes, four %d, compacted %d", once, reloaded, after)
	if after > once*5/4 {
		t.Errorf("after Compact: %d bytes, want about one load's %d (reloaded: %d)", after, once, reloaded)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(docs)) {
		t.Errorf("Count %d (%v), want %d", n, err, len(docs))
	}
	res, err := d.Query(context.Background(), docs[7].Text, nil)
	if err != nil || len(res.Matches) == 0 || res.Matches[0].ID != docs[7].ID || res.Matches[0].Jaccard != 1 {
		t.Errorf("a query by a stored text after Compact: %+v, %v", res, err)
	}
	d.Close()
	d = mustOpen(t, dir, &Options{ReadOnly: true})
	if err := d.Compact(context.Background()); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Compact of a read-only handle: %v, want ErrReadOnly", err)
	}
}

// Ensure that Compact frees the space of documents that have expired and
// were not swept: it sweeps them first. Compacted as they were, their
// records stayed (a review: 20,000 expired of 21,000 documents took 38
// MiB after compact, 0.4 MiB after a sweep and then compact). The oracle:
// Check's count of records, and an index that never held them.
func TestCompactSweepsExpired(t *testing.T) {
	ctx := context.Background()
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true, ExpirySweep: -1})
	defer d.Close()
	past := &WriteOptions{ExpireAt: time.Now().Add(-time.Hour)}
	for i := range 300 {
		wo := past
		if i%3 == 0 {
			wo = nil
		}
		if err := d.Put(Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d of a set that mostly expired, with words %d and %d", i, i*7, i*13)}, wo); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := d.Check(ctx); err != nil || rep.Docs != 300 {
		t.Fatalf("before: %d records, %v; want 300 (the expired unswept)", rep.Docs, err)
	}
	if err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(ctx)
	if err != nil || !rep.OK() || rep.Docs != 100 || rep.EmptyLists != 0 {
		t.Fatalf("after Compact: %d records, %d empty lists, %v, %v; want the 100 live and none empty", rep.Docs, rep.EmptyLists, rep.Problems, err)
	}
	if n, err := d.Count(); err != nil || n != 100 {
		t.Errorf("Count after Compact: %d, %v", n, err)
	}
	if m, err := d.Metrics(); err != nil || m.ExpiredSwept != 200 {
		t.Errorf("metrics: %d swept, %v; want 200", m.ExpiredSwept, err)
	}
}

// Ensure that Compact finds damage in a table that its compaction kept as
// it was: a compaction of an index of one table moved it to another
// level, its damaged block was never read, and compact said "compacted"
// where check found the damage (a bad-input review, B5). The damage is
// put in the table's first block, of document records, which neither the
// sweep nor the purge before the compaction reads. Oracle: Check, which
// finds it too, and the same compaction of the undamaged index passing.
func TestCompactReadsTablesItKept(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		dir := t.TempDir()
		d := mustOpen(t, dir, &Options{StoreText: true})
		var docs []Doc
		for i := range 200 {
			docs = append(docs, Doc{ID: fmt.Sprintf("doc%03d", i), Text: fmt.Sprintf("document %d of a small index: %s", i, strings.Repeat("some words that repeat ", 10))})
		}
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		if len(tables) != 1 {
			t.Fatalf("%d tables after the close's flush, want 1", len(tables))
		}
		if damaged {
			f, err := os.OpenFile(tables[0], os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(bytes.Repeat([]byte{0}, 200), 1000); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		d = mustOpen(t, dir, nil)
		err := d.Compact(context.Background())
		rep, cerr := d.Check(context.Background())
		found := errors.Is(cerr, ErrCorrupt) || cerr == nil && !rep.OK()
		switch {
		case cerr != nil && !found:
			t.Fatal(cerr)
		case !damaged && (err != nil || found):
			t.Fatalf("an undamaged index: compact %v, check %v", err, cerr)
		case damaged && !found:
			t.Fatal("check found no damage: the test damaged nothing it reads")
		case damaged && !errors.Is(err, ErrCorrupt):
			t.Errorf("compact of a damaged index: %v, want ErrCorrupt", err)
		}
	}
}
