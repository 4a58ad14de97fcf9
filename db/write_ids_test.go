package db

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
}
