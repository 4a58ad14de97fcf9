package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
)

// Ensure that a purge beside writers that refill the lists it found empty
// deletes none of them: the purge scans without the writer lock (it held
// it for the whole scan, and every write waited behind it: 5 s behind 4.6
// million lists) and reads each list again under the lock before it
// deletes it. The oracle: Check (every stored document's postings are in
// its lists, no list is empty).
func TestPurgeBesideWriters(t *testing.T) {
	d, err := Open("db", &Options{fs: vfs.NewMem(), ExpirySweep: -1, keepEmptied: true})
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
// nothing. A read-only handle, or one with a negative PurgeEvery, purges
// nothing (Check's count of empty lists stays), a PurgeEvery below a
// second is refused, and a handle not given one purges every hour.
func TestPurgeEvery(t *testing.T) {
	for _, every := range []time.Duration{time.Nanosecond, 999 * time.Millisecond} {
		if _, err := Open("x", &Options{fs: vfs.NewMem(), PurgeEvery: every}); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("PurgeEvery %v: %v, want ErrInvalidOptions", every, err)
		}
	}
	defer func(m time.Duration) { minPurgeEvery = m }(minPurgeEvery)
	minPurgeEvery = time.Millisecond
	fs := vfs.NewMem()
	if d := mustOpen(t, "default", &Options{fs: fs}); d.opts.PurgeEvery != time.Hour {
		t.Fatalf("PurgeEvery by default: %v, want an hour", d.opts.PurgeEvery)
	} else {
		d.Close()
	}
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1, keepEmptied: true})
	docs, keep := churn(t, d)
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
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: 5 * time.Millisecond, keepEmptied: true})
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
	// With no document removed since, the background skips its purges
	// (each would scan every list for nothing): one purge ran, deleting
	// the lists Check counted, and the ticks since were skipped.
	metrics := func() Metrics { t.Helper(); return mustMetrics(t, d) }
	waitSkips := func(over uint64) Metrics {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if m := metrics(); m.ListPurgesSkipped >= over+3 {
				return m
			} else if time.Now().After(deadline) {
				t.Fatalf("no purge skipped in 10 s of ticks every 5 ms: %+v", m)
			}
		}
	}
	if m := waitSkips(0); m.ListPurges != 1 || m.ListsPurged != uint64(empty) || m.ListPurgeErrors != 0 {
		t.Fatalf("after the background's purge: %d purges, %d lists purged, %d errors; want 1, %d, 0", m.ListPurges, m.ListsPurged, m.ListPurgeErrors, empty)
	}
	// A removal makes the next tick purge again: the last kept document,
	// whose text no replacement took, leaves lists empty.
	if err := d.Delete(keep[len(keep)-1].ID, nil); err != nil {
		t.Fatal(err)
	}
	skipped := metrics().ListPurgesSkipped
	m := waitSkips(skipped)
	if m.ListPurges != 2 || m.ListsPurged <= uint64(empty) {
		t.Fatalf("after a delete: %d purges, %d lists purged; want 2, more than %d", m.ListPurges, m.ListsPurged, empty)
	}
	sameListsAsIndexOf(t, d, keep[:len(keep)-1], uint64(len(docs)))
	if n, err := d.PurgeEmptyLists(context.Background()); err != nil || n != 0 {
		t.Fatalf("a purge after the background's: %d, %v", n, err)
	}
	if m := metrics(); m.ListPurges != 3 {
		t.Fatalf("PurgeEmptyLists is not counted: %d purges, want 3", m.ListPurges)
	}
}

// Ensure that a purge holds no iterator while it waits for the writer
// lock: an open iterator pins the tables it reads, and a load holds the
// lock for its whole input, so a purge waiting behind it kept the tables
// that the load's compactions made obsolete on disk. The oracle: Pebble's
// count of open table iterators as the purge is about to wait, over a
// purge of more lists than one batch (so that its scan stops and starts
// again), whose result is then compared with an index of the documents
// left.
func TestPurgeWaitsWithoutIterator(t *testing.T) {
	fs := vfs.NewMem()
	docs := loadDocs(1000)
	for i := range docs {
		docs[i].ID = fmt.Sprint("d-", i) // distinct
	}
	keep, gone := docs[:300], docs[300:]
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, keepEmptied: true})
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, doc := range gone {
		ids = append(ids, doc.ID)
	}
	if _, err := d.DeleteIDs(ids, nil); err != nil {
		t.Fatal(err)
	}
	// Closed and opened again: the lists are in tables, not memtables.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, keepEmptied: true})
	defer d.Close()
	rep, err := d.Check(context.Background())
	if err != nil || rep.EmptyLists <= purgeBatch {
		t.Fatalf("%d empty lists, %v; want more than one batch (%d)", rep.EmptyLists, err, purgeBatch)
	}
	// The count does see a scan's iterator.
	it, err := d.pdb.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	it.First()
	if n := d.pdb.Metrics().TableIters; n == 0 {
		t.Fatal("an open iterator: 0 table iterators counted")
	}
	it.Close()
	// NB: Pebble's own background work after an open (the collection of
	// table statistics, compactions) opens table iterators too: the purge
	// starts once there is none.
	for deadline := time.Now().Add(10 * time.Second); d.pdb.Metrics().TableIters != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Pebble's table iterators still open after 10 s: %d", d.pdb.Metrics().TableIters)
		}
	}
	var waits, open []int64
	purgeWaitHook = func() {
		waits = append(waits, 1)
		// NB: Pebble's background work may hold one for a moment (CI
		// saw it once); the purge's own, open while it waits here, would
		// stay open.
		n := d.pdb.Metrics().TableIters
		for deadline := time.Now().Add(2 * time.Second); n != 0 && time.Now().Before(deadline); n = d.pdb.Metrics().TableIters {
			time.Sleep(time.Millisecond)
		}
		if n != 0 {
			open = append(open, n)
		}
	}
	defer func() { purgeWaitHook = nil }()
	n, err := d.PurgeEmptyLists(context.Background())
	if err != nil || n != rep.EmptyLists {
		t.Fatalf("purged %d, %v; want %d", n, err, rep.EmptyLists)
	}
	if len(waits) < 2 || len(open) != 0 {
		t.Fatalf("%d waits for the writer lock, with table iterators open at %d of them (%v); want 2 or more, none", len(waits), len(open), open)
	}
	sameListsAsIndexOf(t, d, keep, uint64(len(docs)))
}

// Ensure that the background purge is not skipped for good after a
// Repair that counted more live documents than the counters did: the
// count of removed documents (NextDoc - Live) went back, later removals
// brought it to the last purge's value, and every tick was skipped
// though lists had emptied (a maintainer's M2).
func TestPurgeEveryAfterRepair(t *testing.T) {
	defer func(m time.Duration) { minPurgeEvery = m }(minPurgeEvery)
	minPurgeEvery = time.Millisecond
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, keepEmptied: true})
	docs := fiveDocs()
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	counters := d.counters
	d.Close()
	// Counters that count three documents fewer than stored.
	p := rawStore(t, fs, "db")
	if err := p.Set(codec.CountersKey, codec.EncodeCounters(codec.Counters{NextDoc: counters.NextDoc, Live: counters.Live - 3}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	p.Close()
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: 5 * time.Millisecond, keepEmptied: true})
	defer d.Close()
	ctx := context.Background()
	waitPurges := func(n uint64) {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			m := mustMetrics(t, d)
			if m.ListPurges >= n && m.ListPurgesSkipped >= 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no purge: %+v", m)
			}
		}
	}
	waitPurges(1) // the first tick purges, and records removedDocs
	if _, err := d.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteIDs([]string{"a", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	// The deletes' lists are purged (the oracle: Check's empty lists),
	// where every tick after them was skipped.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rep, err := d.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.EmptyLists == 0 {
			break
		}
		if time.Now().After(deadline) {
			m := mustMetrics(t, d)
			t.Fatalf("%d empty lists left after 10 s of ticks every 5 ms: %d purges, %d skipped", rep.EmptyLists, m.ListPurges, m.ListPurgesSkipped)
		}
	}
}

// Ensure that Compact deletes the posting lists that deletes and upserts
// emptied, as its doc says (it left every one of them: a review of a
// long-lived handle under churn, CH2): after 600 of 1,000 documents are
// deleted or replaced, on a handle that never purges in the background,
// Compact leaves no empty list and exactly the lists of an index of the
// documents left (the oracle: that index built on its own).
func TestCompactPurges(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), ExpirySweep: -1, PurgeEvery: -1, keepEmptied: true})
	defer d.Close()
	docs, keep := churn(t, d)
	ctx := context.Background()
	if rep, err := d.Check(ctx); err != nil || rep.EmptyLists == 0 {
		t.Fatalf("before Compact: %d empty lists, %v; want some", rep.EmptyLists, err)
	}
	if err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() || rep.EmptyLists != 0 {
		t.Fatalf("after Compact: %+v, %v; want no empty list", rep, err)
	}
	sameListsAsIndexOf(t, d, keep, uint64(len(docs)))
	if m := mustMetrics(t, d); m.ListPurges != 1 || m.ListsPurged == 0 {
		t.Fatalf("Compact's purge: %d purges, %d lists; want it counted", m.ListPurges, m.ListsPurged)
	}
}

// Ensure that the background purge skips its ticks on an index from which
// no document was ever removed, the first one too (it scanned every list
// a minute after every open: a read-through's R5), and purges once one is.
func TestPurgeSkipsWhileNothingRemoved(t *testing.T) {
	defer func(m time.Duration) { minPurgeEvery = m }(minPurgeEvery)
	minPurgeEvery = time.Millisecond
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), ExpirySweep: -1, PurgeEvery: 5 * time.Millisecond, keepEmptied: true})
	defer d.Close()
	docs := loadDocs(400)[:50]
	for i := range docs {
		docs[i].ID = fmt.Sprint("d-", i)
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	wait := func(ok func(Metrics) bool) Metrics {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			m := mustMetrics(t, d)
			if ok(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s of ticks every 5 ms: %+v", m)
			}
		}
	}
	if m := wait(func(m Metrics) bool { return m.ListPurgesSkipped >= 3 }); m.ListPurges != 0 {
		t.Fatalf("no document removed: %d purges, want every tick skipped", m.ListPurges)
	}
	if err := d.Delete(docs[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	wait(func(m Metrics) bool { return m.ListPurges >= 1 && m.ListsPurged > 0 })
}

// churn puts 1,000 documents of distinct ids in d, deletes the last 300
// and replaces the 300 before them by the texts of the first 300, so that
// their old lists empty, and returns the documents first put and the 400
// kept as they were.
func churn(t *testing.T, d *DB) (docs, keep []Doc) {
	t.Helper()
	docs = loadDocs(1000)
	for i := range docs {
		docs[i].ID = fmt.Sprint("d-", i) // distinct
	}
	keep, replaced, deleted := docs[:400], docs[400:700], docs[700:]
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
	var upserts []Doc
	for i, doc := range replaced {
		upserts = append(upserts, Doc{ID: doc.ID, Text: keep[i].Text})
	}
	if _, err := d.PutBatch(upserts, nil); err != nil {
		t.Fatal(err)
	}
	return docs, keep
}

// fiveDocs are five short documents of distinct words, for the tests that
// damage an index's records or counters by hand.
func fiveDocs() []Doc {
	return []Doc{
		{ID: "a", Text: "alpha beta gamma delta epsilon zeta eta theta"},
		{ID: "b", Text: "one two three four five six seven eight nine"},
		{ID: "c", Text: "red orange yellow green blue indigo violet"},
		{ID: "e", Text: "north south east west up down left right"},
		{ID: "f", Text: "spring summer autumn winter rain snow sun wind"},
	}
}

// Ensure that a handle deletes at its close the posting lists its
// deletes and upserts (PutBatch, DeleteIDs, Delete, Put) emptied: the
// index then holds no empty list, and exactly the lists, postings and
// pairs of a fresh index of its live documents (the oracle), where it
// held an empty key for each emptied list until a purge, which a
// command's short life never reached (an operator's lifecycle review,
// LC2). A list an upsert both empties of the old document and gives the
// new one is kept; one that holds other documents too is kept.
func TestCloseDeletesTheListsItsWritesEmptied(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1})
	_, keep := churn(t, d)
	// One at a time too: a delete, an upsert to a new text, an upsert
	// to the same text (each of its lists gets a removal and an addition).
	if err := d.Delete(keep[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: keep[1].ID, Text: "a wholly different text of its own, shared by no other document here"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(keep[2], nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(context.Background()); err != nil || rep.EmptyLists == 0 {
		t.Fatalf("before the close: %d empty lists, %v; want some (the writes emptied lists)", rep.EmptyLists, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1})
	defer d.Close()
	checkLikeFresh(t, d)
}

// checkLikeFresh checks that d holds no empty posting list, and the same
// lists, postings and pairs as a fresh index of its live documents.
func checkLikeFresh(t *testing.T, d *DB) {
	t.Helper()
	rep, err := d.Check(context.Background())
	if err != nil || rep.ProblemCount != 0 || rep.EmptyLists != 0 {
		t.Fatalf("check: %+v, %v; want no empty list", rep, err)
	}

	fresh := mustOpen(t, "fresh", &Options{fs: vfs.NewMem(), ExpirySweep: -1, PurgeEvery: -1})
	defer fresh.Close()
	var live []Doc
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, Doc{ID: doc.ID, Text: doc.Text})
	}
	if _, err := fresh.PutBatch(live, nil); err != nil {
		t.Fatal(err)
	}
	frep, err := fresh.Check(context.Background())
	if err != nil || frep.PostingLists != rep.PostingLists || frep.Postings != rep.Postings || frep.Docs != rep.Docs {
		t.Fatalf("written: %d lists, %d postings, %d docs; a fresh index of its %d documents: %d, %d, %d (%v)",
			rep.PostingLists, rep.Postings, rep.Docs, len(live), frep.PostingLists, frep.Postings, frep.Docs, err)
	}
	pairsOf := func(d *DB) map[string]float64 {
		out := map[string]float64{}
		for p, err := range d.Pairs(context.Background(), &PairsOptions{Threshold: 0.5}) {
			if err != nil {
				t.Fatal(err)
			}
			out[min(p.A, p.B)+" "+max(p.A, p.B)] = p.Jaccard
		}
		return out
	}
	if got, want := pairsOf(d), pairsOf(fresh); !maps.Equal(got, want) || len(want) == 0 {
		t.Errorf("pairs: %d written, %d fresh (want equal, and some)", len(got), len(want))
	}
}

// Ensure that a load deletes the posting lists that it empties (of its
// replaced and, with DeleteAbsent, deleted documents) in its own tables:
// the index then holds no empty list, and the lists, postings and pairs
// of a fresh index of its live documents, before any purge (PurgeEvery
// negative: Close purges nothing) and once reopened. A build's
// replacements left an empty key for each list they emptied until a
// purge.
func TestLoadDeletesTheListsItEmpties(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1}
	d := mustOpen(t, "db", opts)
	docs := loadDocs(1000)
	for i := range docs {
		docs[i].ID = fmt.Sprint("d-", i) // distinct
	}
	if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
		t.Fatal(err)
	}
	// The next night: 300 documents get the text of others, 300 are gone,
	// 400 are as they were (replaced by themselves: their lists get a
	// removal and an addition, and stay).
	night := append([]Doc(nil), docs[:700]...)
	for i := 400; i < 700; i++ {
		night[i].Text = docs[i-400].Text
	}
	res, err := d.Load(context.Background(), seqOf(night), &LoadOptions{DeleteAbsent: true})
	if err != nil || res.Deleted != 300 || res.Replaced != 700 {
		t.Fatalf("second load: %+v, %v; want 300 deleted and 700 replaced (the same text too)", res, err)
	}
	checkLikeFresh(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", opts)
	defer d.Close()
	checkLikeFresh(t, d)
}

// Ensure that a handle whose writes emptied more lists than it remembers
// (maxEmptiable) purges every list at its close: the lists an earlier
// handle left empty (keepEmptied) go too, which the purge of the lists
// remembered alone would leave (the oracle that tells the two apart).
func TestCloseDeletesEmptiedListsPastTheBound(t *testing.T) {
	for _, bound := range []int{maxEmptiable, 10} {
		fs := vfs.NewMem()
		d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, keepEmptied: true})
		churn(t, d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1})
		left, err := d.Check(context.Background())
		if err != nil || left.EmptyLists == 0 {
			t.Fatalf("left by the first handle: %d empty lists, %v; want some", left.EmptyLists, err)
		}
		func() {
			defer func(m int) { maxEmptiable = m }(maxEmptiable)
			maxEmptiable = bound
			// This handle empties lists of its own: it deletes 100
			// documents of the 700 the churn kept.
			var ids []string
			for i := range 100 {
				ids = append(ids, fmt.Sprint("d-", i))
			}
			if _, err := d.DeleteIDs(ids, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1})
		rep, err := d.Check(context.Background())
		d.Close()
		switch {
		case err != nil || rep.ProblemCount != 0:
			t.Fatalf("bound %d: %+v, %v", bound, rep, err)
		case bound == 10 && rep.EmptyLists != 0:
			t.Errorf("past the bound: %d empty lists after the close, want none (a full purge)", rep.EmptyLists)
		case bound != 10 && rep.EmptyLists != left.EmptyLists:
			t.Errorf("within the bound: %d empty lists after the close, want the first handle's %d (its own deleted, no others)", rep.EmptyLists, left.EmptyLists)
		}
	}
}

// Ensure that a close whose bound for deleting the lists its writes
// emptied runs out says so at the Info level, with what it left, and no
// warning (a warning naming "context deadline exceeded" broke lshdb
// delete --quiet's silence: an operator's review, O2-8); and that a purge
// then deletes what it left (the oracle: Check's empty lists before and
// after, and a fresh index of the live documents).
func TestClosePurgeBoundSaysWhatItLeft(t *testing.T) {
	defer func(w time.Duration) { closePurgeWait = w }(closePurgeWait)
	closePurgeWait = time.Nanosecond
	fs := vfs.NewMem()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, Logger: logger})
	churn(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "level=INFO") || !strings.Contains(logs.String(), "left up to ") {
		t.Fatalf("the close's log: %q; want an Info line saying what it left, no warning", logs.String())
	}
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1})
	defer d.Close()
	if rep, err := d.Check(context.Background()); err != nil || rep.EmptyLists == 0 {
		t.Fatalf("after the close: %d empty lists, %v; want those it left", rep.EmptyLists, err)
	}
	if _, err := d.PurgeEmptyLists(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkLikeFresh(t, d)
}
