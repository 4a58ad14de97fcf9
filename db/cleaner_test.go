package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/record"
)

// tableSizes returns the table files of dir and their sizes.
func tableSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	sizes := make(map[string]int64)
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		sizes[filepath.Base(n)] = st.Size()
	}
	return sizes
}

// Ensure that an index whose Pebble MANIFEST lost its later records (cut
// after its first, as a damaged record is read: the torn end a crash
// leaves), its logs reused since, is refused as ErrCorrupt by every
// open, read-only, writable or creating, each naming the tables, and
// that no open deletes a table file: a writable open let Pebble delete
// every table the cut manifest did not list (the whole index) before
// lshdb refused the store as not an index, and a creating one would have
// made a new empty index there.
func TestOpenKeepsTablesItsManifestLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	var docs []Doc
	for i := range 300 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document %d of an index whose manifest is about to lose its records", i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tables := tableSizes(t, dir)
	if len(tables) == 0 {
		t.Fatalf("no table in %s after the close", dir)
	}
	// The current manifest, cut after its first record.
	markers, _ := filepath.Glob(filepath.Join(dir, "marker.manifest.*"))
	if len(markers) != 1 {
		t.Fatalf("markers: %q", markers)
	}
	manifest := filepath.Join(dir, markers[0][strings.Index(markers[0], "MANIFEST-"):])
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatal(err)
	}
	r := record.NewReader(f, 0)
	var offsets []int64
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading %s: %v", manifest, err)
			}
			break
		}
		if _, err := io.Copy(io.Discard, rec); err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, r.Offset()) // the record's end
	}
	f.Close()
	if len(offsets) < 2 {
		t.Fatalf("%s holds %d records", manifest, len(offsets))
	}
	if err := os.Truncate(manifest, offsets[0]); err != nil {
		t.Fatal(err)
	}
	// NB: and the logs, which here still hold every write (the store is
	// small: none was reused yet), and from which the open would recover
	// the index whole: in the review, the logs had been reused since.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*Options{{ReadOnly: true}, {MustExist: true}, nil, {ReadOnly: true}} {
		_, err := Open(dir, o)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "lost its later records") {
			t.Fatalf("Open(%+v) of an index whose manifest lost its tables: %v, want ErrCorrupt saying so", o, err)
		}
		for n := range tables {
			if !strings.Contains(err.Error(), n) {
				t.Fatalf("Open(%+v): %v, naming not the table %s", o, err, n)
			}
		}
		after := tableSizes(t, dir)
		if len(after) < len(tables) {
			t.Fatalf("Open(%+v) deleted tables: %v, before %v", o, after, tables)
		}
		for n, size := range tables {
			if after[n] != size {
				t.Fatalf("Open(%+v): table %s of %d bytes is now %d", o, n, size, after[n])
			}
		}
	}
}

// Ensure that a writable open still deletes the files Pebble finds
// obsolete, once it has found the index: a table no manifest lists (the
// output of a compaction a crash cut short) goes, and the index is whole.
func TestOpenDeletesObsoleteTables(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "a document of an index with a stray table"}, {ID: "b", Text: "another document of it"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tables := tableSizes(t, dir)
	var one string
	for n := range tables {
		one = n
	}
	b, err := os.ReadFile(filepath.Join(dir, one))
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "009999.sst")
	if err := os.WriteFile(stray, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, nil)
	ids, err := d.HasIDs([]string{"a", "b"})
	if err != nil || !slices.Equal(ids, []bool{true, true}) {
		t.Fatalf("HasIDs: %v, %v", ids, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stray table is still there: %v", err)
	}
}
