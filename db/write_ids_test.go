package db

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/minhash"
)

// storedIDs returns the ids All yields, sorted, after checking the index.
func storedIDs(t *testing.T, d *DB) []string {
	t.Helper()
	var ids []string
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, doc.ID)
	}
	slices.Sort(ids)
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", rep, err)
	}
	if rep.Docs != len(ids) || rep.IDs != len(ids) {
		t.Fatalf("check counts %d docs and %d ids, All yields %d", rep.Docs, rep.IDs, len(ids))
	}
	return ids
}

// Ensure that DeleteIDs is all-or-nothing against a model of the stored
// ids: a missing or invalid id deletes nothing, IgnoreMissing deletes
// exactly the stored ones, repeats count once, and the reopened database
// holds exactly the model's ids.
func TestDeleteIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	d := mustOpen(t, dir, nil)
	model := map[string]bool{}
	var docs []Doc
	for i := range 50 {
		id := fmt.Sprintf("doc%02d", i)
		docs = append(docs, Doc{ID: id, Text: fmt.Sprintf("document number %d with some words %d", i, i*i)})
		model[id] = true
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		ids     []string
		o       *WriteOptions
		want    int
		missing []string
		wantErr error
	}{
		{ids: []string{"doc01", "doc02", "nope"}, wantErr: ErrNotFound},
		{ids: []string{"doc01", ""}, wantErr: ErrInvalidID},
		{ids: []string{"doc01", "bad\xff"}, o: &WriteOptions{IgnoreMissing: true}, wantErr: ErrInvalidID},
		{ids: []string{"doc01", "doc02", "doc01"}, want: 2},
		{ids: []string{"doc01"}, wantErr: ErrNotFound}, // already deleted
		{ids: []string{"doc01", "doc03", "nope", "doc04", "doc03"}, o: &WriteOptions{IgnoreMissing: true}, want: 2, missing: []string{"doc01", "nope"}},
		{ids: []string{"nope", "nope"}, o: &WriteOptions{IgnoreMissing: true}, want: 0, missing: []string{"nope"}},
		{ids: nil, want: 0},
	}
	for i, s := range steps {
		res, err := d.DeleteIDs(s.ids, s.o)
		n := res.Deleted
		if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
			t.Fatalf("step %d: DeleteIDs(%q) error %v, want %v", i, s.ids, err, s.wantErr)
		}
		if s.wantErr != nil {
			if n != 0 {
				t.Fatalf("step %d: failed call reports %d deleted", i, n)
			}
			if errors.Is(err, ErrNotFound) && !strings.Contains(err.Error(), `"nope"`) && !strings.Contains(err.Error(), `"doc01"`) {
				t.Fatalf("step %d: %v does not name the id", i, err)
			}
			continue
		}
		if n != s.want || !slices.Equal(res.Missing, s.missing) {
			t.Fatalf("step %d: deleted %d, missing %q; want %d, %q", i, n, res.Missing, s.want, s.missing)
		}
		for _, id := range s.ids {
			delete(model, id)
		}
	}
	want := slices.Sorted(maps.Keys(model))
	if got := storedIDs(t, d); !slices.Equal(got, want) {
		t.Fatalf("before reopening: %d ids %v, want %d", len(got), got, len(want))
	}
	d.Close()
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if got := storedIDs(t, d); !slices.Equal(got, want) {
		t.Fatalf("after reopening: ids %v, want %v", got, want)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(want)) {
		t.Fatalf("Count %d %v, want %d", n, err, len(want))
	}
}

// Ensure that Validate refuses exactly what PutBatch refuses before hashing,
// with the same sentinels, and passes what it stores.
func TestValidate(t *testing.T) {
	d := mustOpen(t, filepath.Join(t.TempDir(), "index"), &Options{MaxDocBytes: 100})
	defer d.Close()
	for _, c := range []struct {
		doc  Doc
		want error
	}{
		{Doc{ID: "ok", Text: "fine text"}, nil},
		{Doc{ID: "", Text: "x"}, ErrInvalidID},
		{Doc{ID: strings.Repeat("i", MaxIDBytes+1), Text: "x"}, ErrInvalidID},
		{Doc{ID: strings.Repeat("i", MaxIDBytes), Text: "at the id limit"}, nil},
		{Doc{ID: "u\xff", Text: "x"}, ErrInvalidID},
		{Doc{ID: "big", Text: strings.Repeat("y", 101)}, ErrDocTooLarge},
		{Doc{ID: "meta", Text: strings.Repeat("y", 60), Meta: make([]byte, 41)}, ErrDocTooLarge},
		{Doc{ID: "edge", Text: strings.Repeat("y", 60), Meta: make([]byte, 40)}, nil},
	} {
		err := d.Validate(c.doc)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("Validate(%.20q) = %v, want %v", c.doc.ID, err, c.want)
		}
		if perr := d.Put(c.doc, nil); !errors.Is(perr, c.want) || (c.want == nil && perr != nil) {
			t.Errorf("Put(%.20q) = %v, want %v like Validate", c.doc.ID, perr, c.want)
		}
	}
	if d.MaxDocBytes() != 100 {
		t.Fatalf("MaxDocBytes %d", d.MaxDocBytes())
	}
	// What the storage mode and the scheme refuse (EMB-4: Validate passed
	// these, and every write refused them).
	sig := make([]uint32, minhash.DefaultNumPerm)
	for i := range sig {
		sig[i] = uint32(i * 7919)
	}
	for _, c := range []struct {
		o    Options
		doc  Doc
		want error
	}{
		{Options{}, Doc{ID: "t-sig", Signature: sig}, ErrStorageMode},
		{Options{}, Doc{ID: "t-set", Set: Tokens("a", "b")}, ErrStorageMode},
		{Options{Storage: StorageSets}, Doc{ID: "s-sig", Signature: sig}, ErrStorageMode},
		{Options{Storage: StorageSets}, Doc{ID: "s-set", Set: Tokens("a", "b")}, nil},
		{Options{Storage: StorageNone}, Doc{ID: "n-short", Signature: sig[:3]}, ErrInvalidSignature},
		{Options{Storage: StorageNone}, Doc{ID: "n-empty", Signature: slices.Repeat([]uint32{minhash.EmptyValue}, minhash.DefaultNumPerm)}, ErrEmptyDocument},
		{Options{Storage: StorageNone}, Doc{ID: "n-sig", Signature: sig}, nil},
		{Options{Storage: StorageSets, Scheme: minhash.SchemeDatasketch}, Doc{ID: "d-wide", Set: Hashes(1, 1<<40)}, ErrInvalidDoc},
		{Options{Storage: StorageSets, Scheme: minhash.SchemeDatasketch}, Doc{ID: "d-ok", Set: Hashes(1, 1<<31)}, nil},
	} {
		d := mustOpen(t, t.TempDir(), &c.o)
		err := d.Validate(c.doc)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: Validate = %v, want %v", c.doc.ID, err, c.want)
		}
		if perr := d.Put(c.doc, nil); !errors.Is(perr, c.want) || (c.want == nil && perr != nil) {
			t.Errorf("%s: Put = %v, want %v like Validate", c.doc.ID, perr, c.want)
		}
		if n, _ := d.Count(); (c.want == nil) != (n == 1) {
			t.Errorf("%s: %d stored", c.doc.ID, n)
		}
		d.Close()
	}
}

// Ensure that PutBatch with SkipEmpty, given ids that repeat with some of
// their documents empty, stores what a Put of each document in turn stores
// (the model: an empty document is skipped and changes nothing), and what
// Load with SkipEmpty stores: an empty later version never wins over an
// earlier one, nor over the stored one. Random batches over a few ids,
// each checked against the model by Get after a reopen.
func TestPutBatchSkipEmptyRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ids := []string{"a", "b", "c", "d"}
	for round := range 40 {
		var docs []Doc
		for range 1 + rng.IntN(8) {
			text := fmt.Sprintf("version %d of a document about the number %d, told at some length", rng.IntN(1000), round)
			if rng.IntN(3) == 0 {
				text = []string{"", "   ", "\t"}[rng.IntN(3)]
			}
			docs = append(docs, Doc{ID: ids[rng.IntN(len(ids))], Text: text})
		}
		// The model: the documents stored before the batch, then each
		// document of the batch in turn, an empty one skipped.
		stored := map[string]string{"a": "the stored document a, from before the batch"}
		want := maps.Clone(stored)
		wantSkipped, wantRepeated := 0, 0
		for i, d := range docs {
			if strings.TrimSpace(d.Text) == "" {
				wantSkipped++
				continue
			}
			for _, later := range docs[i+1:] {
				if later.ID == d.ID && strings.TrimSpace(later.Text) != "" {
					wantRepeated++
					break
				}
			}
			want[d.ID] = d.Text
		}
		for _, how := range []string{"PutBatch", "Load"} {
			dir := t.TempDir()
			d := mustOpen(t, dir, nil)
			if err := d.Put(Doc{ID: "a", Text: stored["a"]}, nil); err != nil {
				t.Fatal(err)
			}
			var skipped, repeated int
			if how == "PutBatch" {
				res, err := d.PutBatch(docs, &WriteOptions{SkipEmpty: true})
				if err != nil {
					t.Fatalf("round %d: PutBatch: %v", round, err)
				}
				skipped, repeated = len(res.SkippedEmpty), res.Repeated
				if res.Stored != len(docs)-skipped-repeated {
					t.Fatalf("round %d: PutBatch %+v of %d documents", round, res, len(docs))
				}
			} else {
				res, err := d.Load(context.Background(), seqOf(docs), &LoadOptions{SkipEmpty: true})
				if err != nil {
					t.Fatalf("round %d: Load: %v", round, err)
				}
				skipped, repeated = len(res.SkippedEmpty), res.Repeated
			}
			if skipped != wantSkipped || repeated != wantRepeated {
				t.Errorf("round %d: %s skipped %d and counted %d repeated, want %d and %d (%+v)", round, how, skipped, repeated, wantSkipped, wantRepeated, docs)
			}
			d.Close()
			d = mustOpen(t, dir, nil)
			for _, id := range ids {
				got, err := d.Get(id)
				switch text, ok := want[id]; {
				case !ok && !errors.Is(err, ErrNotFound):
					t.Fatalf("round %d: %s: Get(%s) = %v, %v; want not found (%+v)", round, how, id, got, err, docs)
				case ok && (err != nil || got.Text != text):
					t.Fatalf("round %d: %s: Get(%s) = %+v, %v; want %q (%+v)", round, how, id, got, err, text, docs)
				}
			}
			d.Close()
		}
	}
}

// TestPutBatchChecksEarlierCopies: every document of a batch is checked,
// an earlier copy of a repeated id too, as Load checks it (the oracle): an
// invalid, empty or too large copy before the last fails the whole call,
// names its position and stores nothing. Only the last copy of each id
// was prepared, and the earlier ones were dropped unchecked.
func TestPutBatchChecksEarlierCopies(t *testing.T) {
	later := Doc{ID: "a", Text: "the later, valid version of a"}
	for _, c := range []struct {
		name      string
		first     Doc
		skipEmpty bool
		want      error // nil: stored (SkipEmpty skips the empty copy)
	}{
		{"empty", Doc{ID: "a", Text: "   "}, false, ErrEmptyDocument},
		{"too large", Doc{ID: "a", Text: strings.Repeat("x", 500)}, false, ErrDocTooLarge},
		{"two contents", Doc{ID: "a", Text: "some text here", Signature: make([]uint32, 128)}, false, ErrInvalidDoc},
		{"too large, SkipEmpty", Doc{ID: "a", Text: strings.Repeat("x", 500)}, true, ErrDocTooLarge},
		{"two contents, SkipEmpty", Doc{ID: "a", Text: "some text here", Signature: make([]uint32, 128)}, true, ErrInvalidDoc},
		{"empty, SkipEmpty", Doc{ID: "a", Text: "   "}, true, nil},
	} {
		docs := []Doc{{ID: "b", Text: "another document, valid"}, c.first, later}
		oracle := mustOpen(t, "db", &Options{fs: vfs.NewMem(), MaxDocBytes: 100})
		_, lerr := oracle.Load(context.Background(), seqOf(docs), &LoadOptions{SkipEmpty: c.skipEmpty})
		if !errors.Is(lerr, c.want) || (c.want == nil) != (lerr == nil) {
			t.Fatalf("%s: the oracle, Load: %v, want %v", c.name, lerr, c.want)
		}
		oracle.Close()
		d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), MaxDocBytes: 100})
		res, err := d.PutBatch(docs, &WriteOptions{SkipEmpty: c.skipEmpty})
		var de *DocError
		switch {
		case c.want == nil:
			if err != nil || res.Stored != 2 || len(res.SkippedEmpty) != 1 {
				t.Errorf("%s: PutBatch = %+v, %v; want 2 stored, 1 skipped", c.name, res, err)
			}
		case !errors.Is(err, c.want) || !errors.As(err, &de) || de.Index != 1 || de.ID != "a":
			t.Errorf("%s: PutBatch = %+v, %v; want %v naming document 1", c.name, res, err, c.want)
		}
		n, err := d.Count()
		if want := map[bool]uint64{true: 0, false: 2}[c.want != nil]; err != nil || n != want {
			t.Errorf("%s: %d documents stored (%v), want %d", c.name, n, err, want)
		}
		d.Close()
	}
}
