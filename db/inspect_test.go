package db

import (
	"context"
	"slices"
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
