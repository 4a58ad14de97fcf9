package db

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
)

func seqOf(docs []Doc) iter.Seq2[Doc, error] {
	return func(yield func(Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// snapshotOf is everything observable about an index: each document's
// doc number and shingle set, the check summary, and every query by id.
func snapshotOf(t *testing.T, d *DB) (map[string]string, CheckReport) {
	t.Helper()
	out := map[string]string{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.QueryID(doc.ID, &QueryOptions{Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		out[doc.ID] = fmt.Sprint(doc.Num, len(doc.Shingles), doc.Shingles[0], res.Matches)
	}
	// NB: empty posting lists are garbage that removals leave behind (Puts
	// that replace a document empty its old buckets; a load never writes
	// the buckets of a document replaced within it): purged first, then
	// the check summaries must be identical, and no list may be empty.
	before, err := d.Check()
	if err != nil {
		t.Fatal(err)
	}
	purged, err := d.PurgeEmptyLists()
	if err != nil || purged != before.EmptyLists {
		t.Fatalf("purged %d lists (%v); check counted %d empty", purged, err, before.EmptyLists)
	}
	t.Logf("purged %d empty posting lists", purged)
	rep, err := d.Check()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.EmptyLists != 0 || rep.PostingLists != before.PostingLists-purged {
		t.Fatalf("check after purging %d lists: %+v (before: %+v)", purged, rep, before)
	}
	return out, *rep
}

// Ensure that a bulk load gives the index that Put of each document in
// order gives (doc numbers included), into an empty index and in three
// loads with upserts and repeated ids, with a memory budget small enough
// to spill sorted runs: a generated corpus of 20,000 documents (originals
// from the testdata sample and near-copies of them), a fifth of them
// reusing an earlier id, often one within the same load.
func TestLoadEqualsPuts(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 1000
	}
	sources, err := corpus.SampleTexts()
	if err != nil {
		t.Fatal(err)
	}
	// NB: the loads below use small tables (tableBytes), so that records
	// span many and the ones that hold superseded records are rewritten
	// while the others are not.
	rng := rand.New(rand.NewPCG(5, 5))
	var docs []Doc
	for g := range gen.Stream(gen.Options{Seed: 5, N: n, Sources: sources}) {
		id := g.ID
		if len(docs) > 10 && rng.IntN(5) == 0 {
			id = docs[rng.IntN(len(docs))].ID // an upsert, often within one load
		}
		docs = append(docs, Doc{ID: id, Text: g.Text})
	}
	puts := mustOpen(t, "puts", &Options{FS: vfs.NewMem(), NoSync: true})
	defer puts.Close()
	for _, d := range docs {
		if err := puts.Put(d.ID, d.Text); err != nil {
			t.Fatal(err)
		}
	}
	want, wantRep := snapshotOf(t, puts)

	one := mustOpen(t, "one", &Options{FS: vfs.NewMem()})
	defer one.Close()
	res, err := one.Load(seqOf(docs), &LoadOptions{Memory: 64 << 10, tableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored+res.Repeated != n {
		t.Fatalf("load result %+v for %d documents", res, n)
	}
	got, gotRep := snapshotOf(t, one)
	if !mapsEqual(got, want) {
		t.Fatal("one load: documents or query answers differ from puts")
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		t.Fatalf("one load: check summary %+v, puts %+v", gotRep, wantRep)
	}

	three := mustOpen(t, "three", &Options{FS: vfs.NewMem()})
	defer three.Close()
	for _, part := range [][]Doc{docs[:n/3], docs[n/3 : 2*n/3], docs[2*n/3:]} {
		if _, err := three.Load(seqOf(part), &LoadOptions{Memory: 64 << 10, tableBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	got, gotRep = snapshotOf(t, three)
	if !mapsEqual(got, want) {
		t.Fatal("three loads: documents or query answers differ from puts")
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		t.Fatalf("three loads: check summary %+v, puts %+v", gotRep, wantRep)
	}
	// The loaded index keeps taking ordinary writes.
	if err := three.Put("after", "a document after the loads"); err != nil {
		t.Fatal(err)
	}
	if rep, err := three.Check(); err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// loadDocs is the deterministic input of the interrupted-load test.
func loadDocs(n int) []Doc {
	rng := rand.New(rand.NewPCG(8, 8))
	docs := make([]Doc, n)
	var texts []string
	for i := range docs {
		text := randomText(rng, texts[max(0, len(texts)-50):])
		texts = append(texts, text)
		docs[i] = Doc{ID: fmt.Sprintf("load-%d", i%(n-n/10)), Text: text} // some repeats
	}
	// Upserts of documents stored before the load.
	for i := 0; i < 50; i++ {
		docs[i*7].ID = fmt.Sprintf("pre-%d", i)
	}
	return docs
}

// TestHelperLoad is not a test: the interrupted-load test runs the test
// binary again with LSHDB_LOAD_DIR set, and kills it during the load.
func TestHelperLoad(t *testing.T) {
	dir := os.Getenv("LSHDB_LOAD_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("loading\n")
	if _, err := d.Load(seqOf(loadDocs(20000)), &LoadOptions{Memory: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("loaded\n")
	d.Close()
}

// Ensure that killing the process (SIGKILL) at a random moment of a bulk
// load leaves the index exactly as it was before the load, or (if the kill
// came after the ingest) with all of it; it checks clean either way.
func TestLoadKilled(t *testing.T) {
	trials := 6
	if testing.Short() {
		trials = 2
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range trials {
		dir := t.TempDir()
		d := mustOpen(t, dir, nil)
		for i := range 200 {
			if err := d.Put(fmt.Sprintf("pre-%d", i), randomText(rng, nil)); err != nil {
				t.Fatal(err)
			}
		}
		before, beforeRep := snapshotOf(t, d)
		d.Close()

		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLoad$")
		cmd.Env = append(os.Environ(), "LSHDB_LOAD_DIR="+dir)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		if line, err := br.ReadString('\n'); err != nil || line != "loading\n" {
			t.Fatalf("helper: %q %v", line, err)
		}
		delay := time.Duration(rng.IntN(1600)) * time.Millisecond
		time.Sleep(delay)
		cmd.Process.Kill() // SIGKILL
		rest, _ := io.ReadAll(br)
		cmd.Wait()
		completed := strings.Contains(string(rest), "loaded")

		d = mustOpen(t, dir, nil)
		after, afterRep := snapshotOf(t, d)
		n, _ := d.Count()
		d.Close()
		switch {
		case mapsEqual(after, before) && reflect.DeepEqual(afterRep, beforeRep):
			t.Logf("trial %d: killed after %v, before the ingest: index unchanged (%d docs)", trial, delay, n)
		case n > uint64(len(before)):
			t.Logf("trial %d: killed after %v, after the ingest (completed: %v): %d docs", trial, delay, completed, n)
			ids := map[string]bool{}
			for i := range 200 {
				ids[fmt.Sprintf("pre-%d", i)] = true
			}
			for _, doc := range loadDocs(20000) {
				ids[doc.ID] = true
			}
			if n != uint64(len(ids)) {
				t.Fatalf("trial %d: a partial load is visible: %d documents", trial, n)
			}
		default:
			t.Fatalf("trial %d: the index changed without the load being complete (%d docs)", trial, n)
		}
		if _, err := os.Stat(filepath.Join(dir, loadTmpDir)); !os.IsNotExist(err) {
			t.Fatalf("trial %d: the interrupted load's files were not removed", trial)
		}
	}
}
