package db

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
)

// Ensure that Explain reads the posting list of each band the two
// documents' keys share, and names those whose list does not hold both
// (Unlisted): with one band's list lost, that band is unlisted and the
// pair still found through the others; with every shared list lost, it
// is not found, as QueryID (the oracle) does not find it. It said found
// from the keys alone (an analyst's review of the shell, SH2).
func TestExplainReadsTheSharedLists(t *testing.T) {
	// NB: no query cache: the lists are lost behind the handle's back.
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), ExpirySweep: -1, PurgeEvery: -1, QueryCacheSize: -1})
	defer d.Close()
	text := "the quick brown fox jumps over the lazy dog and keeps on running far away"
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: text}, {ID: "b", Text: text + "!"}}, nil); err != nil {
		t.Fatal(err)
	}
	found := func() bool {
		res, err := d.QueryID(context.Background(), "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Matches, func(m Match) bool { return m.ID == "b" })
	}
	e, err := d.Explain("a", "b")
	if err != nil || !e.Found || len(e.Unlisted) != 0 || !found() {
		t.Fatalf("intact: %+v, %v; query finds b: %v", e, err, found())
	}
	var shared []int
	for i, c := range e.Collide {
		if c {
			shared = append(shared, i)
		}
	}
	if len(shared) < 2 {
		t.Fatalf("%d shared bands: want at least 2", len(shared))
	}
	lose := func(band int) {
		if err := d.pdb.Delete(codec.AppendPostingKey(nil, band, e.BandKeysA[band]), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	lose(shared[0])
	e2, err := d.Explain("a", "b")
	if err != nil || !e2.Found || !slices.Equal(e2.Unlisted, shared[:1]) || !found() {
		t.Errorf("one shared list lost: found %v, unlisted %v (want %v), %v; query finds b: %v", e2.Found, e2.Unlisted, shared[:1], err, found())
	}
	for _, band := range shared[1:] {
		lose(band)
	}
	e3, err := d.Explain("a", "b")
	if err != nil || e3.Found || !slices.Equal(e3.Unlisted, shared) || found() {
		t.Errorf("every shared list lost: found %v, unlisted %v (want %v), %v; query finds b: %v", e3.Found, e3.Unlisted, shared, err, found())
	}
}

// Ensure that Buckets stops at a cancel after its scan, while it ranks
// the hottest lists and while it reads their samples, each of which it
// reports as a phase: a Ctrl-C there was not heard, and buckets --band 0
// --top 1000000 printed every list and exited 0 (an inspection review's
// SH-1). The oracle for the whole run is the same call uncancelled. A
// cancel in a phase must end the call there: no later phase starts (the
// sample loop's own check caught a cancel in the ranking, which hid that
// the ranking had none: a read-through's RT5-6).
func TestBucketsStopsAfterItsScan(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), ExpirySweep: -1, PurgeEvery: -1})
	defer d.Close()
	testBucketsStopsAfterItsScan(t, d)
}

// testBucketsStopsAfterItsScan is TestBucketsStopsAfterItsScan on d,
// an empty index (TestRedisBucketsStopsAfterItsScan: on Redis).
func testBucketsStopsAfterItsScan(t *testing.T, d *DB) {
	var docs []Doc
	for i := range 3000 {
		docs = append(docs, Doc{ID: strconv.Itoa(i), Text: "document number " + strconv.Itoa(i) + " of the bucket test, with its own words"})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	full, err := d.Buckets(context.Background(), -1, 5000)
	if err != nil || len(full.Hottest) == 0 {
		t.Fatalf("uncancelled: %v, %+v", err, full)
	}
	for _, phase := range []string{"ranking the hottest lists", "reading the hottest lists' samples"} {
		for _, band := range []int{-1, 0} {
			ctx, cancel := context.WithCancel(context.Background())
			var phases []string
			ctx = WithProgress(ctx, func(p Progress) {
				if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
					phases = append(phases, p.Phase)
				}
				if p.Phase == phase {
					cancel()
				}
			})
			st, err := d.Buckets(ctx, band, 5000)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("band %d, cancelled in %q: %v (%v); want context.Canceled (phases %q)", band, phase, err, st != nil, phases)
			}
			if len(phases) == 0 || phases[len(phases)-1] != phase {
				t.Errorf("band %d, cancelled in %q: the phases %q went on after it", band, phase, phases)
			}
		}
	}
}
