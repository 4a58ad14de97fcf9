package db

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
)

// Shared test helpers of package db.

// mustOpen opens dir or fails the test, and closes the handle when the
// test ends if the test has not (a second Close returns ErrClosed, which is
// ignored). NB: a handle left open outlives its test: its background work
// (the purge of emptied lists a minute after an open, the expiry sweep)
// then runs in a t.TempDir that the test's cleanup is removing, which
// failed that cleanup ("directory not empty") and crashed a race run in
// CI. The Close is registered after the caller's t.TempDir, so it runs
// before the directory is removed.
func mustOpen(t testing.TB, dir string, o *Options) *DB {
	t.Helper()
	d, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// long reports whether the long variants of the tests run: LSHDB_LONG=1,
// which .ci/run sets. A developer's `go test ./...` runs the short
// variants, so that it answers in about a minute on 2 cores.
func long() bool { return os.Getenv("LSHDB_LONG") == "1" }

// seqOf yields docs, for Load.
func seqOf(docs []Doc) iter.Seq2[Doc, error] {
	return func(yield func(Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// purgedStateOf purges the index's emptied posting lists (checking that
// the purge removes exactly what Check counted), then returns everything
// observable about it: each document's doc number and shingle set, the
// check summary, and every query by id. NB: it writes (the purge).
func purgedStateOf(t *testing.T, d *DB) (map[string]string, CheckReport) {
	t.Helper()
	out := map[string]string{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.QueryID(context.Background(), doc.ID, &QueryOptions{Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		out[doc.ID] = fmt.Sprint(doc.Num, len(doc.Shingles), doc.Shingles[0], res.Matches)
	}
	// NB: empty posting lists are garbage that removals leave behind (Puts
	// that replace a document empty its old buckets; a load never writes
	// the buckets of a document replaced within it): purged first, then
	// the check summaries must be identical, and no list may be empty.
	before, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	purged, err := d.PurgeEmptyLists(context.Background())
	if err != nil || purged != before.EmptyLists {
		t.Fatalf("purged %d lists (%v); check counted %d empty", purged, err, before.EmptyLists)
	}
	t.Logf("purged %d empty posting lists", purged)
	rep, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.EmptyLists != 0 || rep.PostingLists != before.PostingLists-purged {
		t.Fatalf("check after purging %d lists: %+v (before: %+v)", purged, rep, before)
	}
	return out, *rep
}

// stateOf reads every stored document's id and shingle set.
func stateOf(t *testing.T, d *DB) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		out[doc.ID] = doc.Shingles
	}
	return out
}

// syncBuffer is a log destination that Pebble's and lshdb's goroutines
// may write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rawStore opens the Pebble store of the index in dir (on fs) directly,
// with lshdb's merger, to change its keys behind the index's back (the
// damage tests); the caller closes it before the index opens again.
func rawStore(t *testing.T, fs vfs.FS, dir string) *pebble.DB {
	t.Helper()
	p, err := pebble.Open(dir, &pebble.Options{FS: fs, Merger: compaction.Merger, FormatMajorVersion: formatMajorVersion, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// storedManifest reads the lshdb manifest record of the closed index in
// dir (on the system's file system) through a read-only Pebble of the
// test's own: what is stored, not what an Open makes of it.
func storedManifest(t *testing.T, dir string) *codec.Manifest {
	t.Helper()
	p, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Merger: compaction.Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	v, closer, err := p.Get(codec.ManifestKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m, err := codec.DecodeManifest(v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// editManifest rewrites the lshdb manifest of the closed index in dir
// through the raw store: edit changes it, as a hand or an older build
// would have written it.
func editManifest(t *testing.T, fs vfs.FS, dir string, edit func(*codec.Manifest)) {
	t.Helper()
	p := rawStore(t, fs, dir)
	defer p.Close()
	v, closer, err := p.Get(codec.ManifestKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := codec.DecodeManifest(v)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	enc, err := codec.EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Set(codec.ManifestKey, enc, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// twoDocIndex makes the index "db" on a file system in memory with two
// documents, a and b, for the damage tests, and returns it open.
func twoDocIndex(t *testing.T) (vfs.FS, *DB) {
	t.Helper()
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs})
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "some text here, long enough"}, {ID: "b", Text: "another document altogether"}}, nil); err != nil {
		t.Fatal(err)
	}
	return fs, d
}

// mustMetrics returns d's Metrics, failing t on an error.
func mustMetrics(t *testing.T, d *DB) Metrics {
	t.Helper()
	m, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
