package db

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
)

// Ensure that a bulk load gives the index that Put of each document in
// order gives (doc numbers included), into an empty index in one load and
// in four loads with upserts and repeated ids, with a memory budget small
// enough to spill sorted runs: a generated corpus of 3,000 documents
// (20,000 with LSHDB_LONG=1; originals from the testdata sample and
// near-copies of them), a fifth of them reusing an earlier id, often one
// within the same load, then 1,500 new versions of stored documents.
func TestLoadEqualsPuts(t *testing.T) {
	// NB: at 3,000 documents the one load spills its ids (3 runs) and
	// postings (4 runs), the last of the four loads its postings and its
	// removals (1,500 replaced documents), and both rewrite record tables
	// (1 MiB each) without superseded records. The full 20,000 took 138 s on 2 cores and runs
	// with LSHDB_LONG=1.
	n := 3000
	switch {
	case os.Getenv("LSHDB_LONG") == "1":
		n = 20000
	case testing.Short():
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
	// A last part replaces half the documents with new texts: loaded on
	// its own, it replaces more stored documents than a band's region of
	// removals holds, so those spill too.
	for i := range n / 2 {
		docs = append(docs, Doc{ID: docs[i].ID, Text: docs[n-1-i].Text + " (a new version)"})
	}
	puts := mustOpen(t, "puts", &Options{fs: vfs.NewMem(), NoSync: true})
	defer puts.Close()
	for _, d := range docs {
		if err := puts.Put(Doc{ID: d.ID, Text: d.Text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	want, wantRep := purgedStateOf(t, puts)

	one := mustOpen(t, "one", &Options{fs: vfs.NewMem()})
	defer one.Close()
	res, err := one.Load(context.Background(), seqOf(docs), &LoadOptions{Memory: 64 << 10, tableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored+res.Repeated != len(docs) {
		t.Fatalf("load result %+v for %d documents", res, len(docs))
	}
	got, gotRep := purgedStateOf(t, one)
	if !maps.Equal(got, want) {
		t.Fatal("one load: documents or query answers differ from puts")
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		t.Fatalf("one load: check summary %+v, puts %+v", gotRep, wantRep)
	}

	four := mustOpen(t, "four", &Options{fs: vfs.NewMem()})
	defer four.Close()
	for _, part := range [][]Doc{docs[:n/3], docs[n/3 : 2*n/3], docs[2*n/3 : n], docs[n:]} {
		// NB: stored ids are looked up in chunks of 97 here (2,048 by
		// default), so that a load's replacements span many chunks, each
		// split between goroutines.
		if _, err := four.Load(context.Background(), seqOf(part), &LoadOptions{Memory: 64 << 10, tableBytes: 1 << 20, resolveChunk: 97}); err != nil {
			t.Fatal(err)
		}
	}
	got, gotRep = purgedStateOf(t, four)
	if !maps.Equal(got, want) {
		t.Fatal("four loads: documents or query answers differ from puts")
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		t.Fatalf("four loads: check summary %+v, puts %+v", gotRep, wantRep)
	}
	// The loaded index keeps taking ordinary writes.
	if err := four.Put(Doc{ID: "after", Text: "a document after the loads"}, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := four.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
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
	del := os.Getenv("LSHDB_LOAD_DELETE") == "1"
	if _, err := d.Load(context.Background(), seqOf(loadDocs(20000)), &LoadOptions{Memory: 1 << 20, DeleteAbsent: del}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("loaded\n")
	d.Close()
}

// Ensure that killing the process (SIGKILL) at a random moment of a bulk
// load leaves the index exactly as it was before the load, or (if the kill
// came after the ingest) with all of it; it checks clean either way. Every
// other trial deletes what the load does not hold (DeleteAbsent): all of
// it then is the load's documents and no others.
func TestLoadKilled(t *testing.T) {
	trials := 8
	if testing.Short() {
		trials = 2
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range trials {
		dir := t.TempDir()
		d := mustOpen(t, dir, nil)
		for i := range 200 {
			if err := d.Put(Doc{ID: fmt.Sprintf("pre-%d", i), Text: randomText(rng, nil)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		before, beforeRep := purgedStateOf(t, d)
		d.Close()

		del := trial%2 == 1
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLoad$")
		cmd.Env = append(os.Environ(), "LSHDB_LOAD_DIR="+dir, fmt.Sprintf("LSHDB_LOAD_DELETE=%d", map[bool]int{false: 0, true: 1}[del]))
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		if line, err := br.ReadString('\n'); err != nil || line != "loading\n" {
			t.Fatalf("helper: %q %v", line, err)
		}
		// NB: a load of these takes about 0.3 s, one that deletes the
		// absent longer: each trial may kill it before or after the ingest.
		delay := time.Duration(rng.IntN(map[bool]int{false: 400, true: 900}[del])) * time.Millisecond
		time.Sleep(delay)
		cmd.Process.Kill() // SIGKILL
		rest, _ := io.ReadAll(br)
		cmd.Wait()
		completed := strings.Contains(string(rest), "loaded")

		d = mustOpen(t, dir, nil)
		after, afterRep := purgedStateOf(t, d)
		n, _ := d.Count()
		d.Close()
		switch {
		case maps.Equal(after, before) && reflect.DeepEqual(afterRep, beforeRep):
			t.Logf("trial %d: killed after %v, before the ingest: index unchanged (%d docs)", trial, delay, n)
		case n != uint64(len(before)):
			t.Logf("trial %d: killed after %v, after the ingest (completed: %v, deleting the absent: %v): %d docs", trial, delay, completed, del, n)
			ids := map[string]bool{}
			for i := range 200 {
				if !del {
					ids[fmt.Sprintf("pre-%d", i)] = true
				}
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

// stopDocs is an iterator over n small distinct documents that counts
// what it yields in *yielded and calls at(i) (if set) before yielding
// document i; bad, if ≥ 0, is the position of a document with an empty id.
func stopDocs(n, bad int, yielded *atomic.Int64, at func(i int)) iter.Seq2[Doc, error] {
	return func(yield func(Doc, error) bool) {
		for i := range n {
			if at != nil {
				at(i)
			}
			d := Doc{ID: fmt.Sprintf("d-%d", i), Text: fmt.Sprintf("document number %d of a long input, with a few words", i)}
			if i == bad {
				d.ID = ""
			}
			yielded.Add(1)
			if !yield(d, nil) {
				return
			}
		}
	}
}

// indexState is what an interrupted load must leave unchanged: the
// document count and the check summary.
func indexState(t *testing.T, d *DB) string {
	t.Helper()
	n, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
	return fmt.Sprintf("%d docs, %+v", n, *rep)
}

// Ensure that a load stops pulling the caller's iterator within a few
// chunks of a document that fails (B2: it used to read and hash all
// 200,000), returns the document's error naming its position and id, and
// stores nothing.
func TestLoadStopsAtBadDocument(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "pre", Text: "a document stored before the load"}, nil); err != nil {
		t.Fatal(err)
	}
	before := indexState(t, d)
	var yielded atomic.Int64
	_, err := d.Load(context.Background(), stopDocs(200000, 5, &yielded, nil), nil)
	if n := yielded.Load(); n >= 10000 {
		t.Fatalf("the iterator yielded %d documents after the failure at 5", n)
	} else {
		t.Logf("yielded %d documents", n)
	}
	if !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), `document 5 (id ""): `) {
		t.Fatalf("err = %v, want ErrInvalidID naming document 5", err)
	}
	if after := indexState(t, d); after != before {
		t.Fatalf("index changed: %s, before %s", after, before)
	}
	if _, err := os.Stat(filepath.Join(d.Dir(), loadTmpDir)); !os.IsNotExist(err) {
		t.Fatalf("the load's directory is still there: %v", err)
	}
}

// Ensure that cancelling the context stops a load promptly, while it
// reads or after it has read everything, with context.Canceled, the
// index unchanged and the load's directory removed.
func TestLoadCancelled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, at int // cancel before yielding document at (or, if -1, from the final Progress call)
	}{
		{"reading", 200000, 3000},
		{"after reading", 5000, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustOpen(t, t.TempDir(), nil)
			defer d.Close()
			for i := range 20 {
				// Some documents the load replaces.
				if err := d.Put(Doc{ID: fmt.Sprintf("d-%d", i*7), Text: fmt.Sprintf("an old version of document %d", i)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			before := indexState(t, d)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var yielded atomic.Int64
			var cancelledAt time.Time
			at := func(i int) {
				if i == tc.at {
					cancelledAt = time.Now()
					cancel()
				}
			}
			lo := &LoadOptions{Memory: 1 << 20, Progress: func(n int) {
				if tc.at < 0 && n == tc.n {
					cancelledAt = time.Now()
					cancel()
				}
			}}
			_, err := d.Load(ctx, stopDocs(tc.n, -1, &yielded, at), lo)
			took := time.Since(cancelledAt)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			t.Logf("returned %v after the cancel, %d documents yielded", took, yielded.Load())
			if took > time.Second {
				t.Fatalf("returned %v after the cancel", took)
			}
			// NB: the document yielded after the cancel is refused: the
			// load checks at every document, not once a chunk of 1,024.
			if tc.at >= 0 && yielded.Load() != int64(tc.at)+1 {
				t.Fatalf("the iterator yielded %d documents, cancelled before the %dth", yielded.Load(), tc.at+1)
			}
			if after := indexState(t, d); after != before {
				t.Fatalf("index changed: %s, before %s", after, before)
			}
			if _, err := os.Stat(filepath.Join(d.Dir(), loadTmpDir)); !os.IsNotExist(err) {
				t.Fatalf("the load's directory is still there: %v", err)
			}
		})
	}
}

// Ensure that Close called during a load cancels it: the load returns
// ErrClosed promptly, having stopped pulling its iterator, and Close
// returns.
func TestLoadClosed(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	var yielded atomic.Int64
	reading := make(chan struct{})
	at := func(i int) {
		if i == 3000 {
			close(reading)
		}
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), stopDocs(200000, -1, &yielded, at), nil)
		loaded <- err
	}()
	<-reading
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-loaded:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Load: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load did not return within 10 s of Close")
	}
	took := time.Since(start)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Load returned %v after Close began, %d documents yielded", took, yielded.Load())
	if took > time.Second || yielded.Load() >= 3000+10000 {
		t.Fatalf("Load returned %v after Close began, having yielded %d documents", took, yielded.Load())
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("after the closed load: %d documents, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, loadTmpDir)); !os.IsNotExist(err) {
		t.Fatalf("the load's directory is still there: %v", err)
	}
}

// Ensure that Close stops a load of a slow stream at the next document,
// not at the end of its chunk: the document yielded once Close has begun
// is refused, the load returns ErrClosed, and nothing of it is stored. It
// waited for 1,024 documents (17 minutes of a stream of one a second; on
// Redis, for its batch of 2,048).
func TestLoadClosedMidChunk(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		t.Run(backend, func(t *testing.T) { loadClosedMidChunk(t, backend) })
	}
}

func loadClosedMidChunk(t *testing.T, backend string) {
	dir := t.TempDir()
	if backend == "redis" {
		dir = redisURL(t)
	}
	d := mustOpen(t, dir, nil)
	closed := make(chan error, 1)
	var yielded atomic.Int64
	// A stream of a document a millisecond from the 11th, when Close
	// begins. NB: Close, on a goroutine of its own, ends the load's
	// context just after the handle's (cancelOps), so a few documents
	// may still go in; the chunk's 1,024 (Redis: 2,048) may not.
	at := func(i int) {
		if i == 10 {
			go func() { closed <- d.Close() }()
			<-d.closing.Done()
		}
		if i >= 10 {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := d.Load(context.Background(), stopDocs(2000, -1, &yielded, at), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Load: %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := yielded.Load(); n < 11 || n > 500 {
		t.Fatalf("the iterator yielded %d documents, Close begun at the 11th; want the load stopped within a few more", n)
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("after the closed load: %d documents, %v", n, err)
	}
}

// Ensure that a panic of Load's documents or of its Progress, which the
// caller recovers (as net/http does a handler's), stays the caller's: the
// load's other stages stop before it goes on, where a stage then panicked
// on its own goroutine ("send on closed channel": Load's cleanup had
// closed the tables it was writing), ending the process. After it the
// index holds nothing of the load, has no load directory left, and takes
// the next load.
func TestLoadCallbackPanicRecovered(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	defer d.Close()
	for _, where := range []string{"documents", "progress"} {
		for round := range 5 {
			var yielded atomic.Int64
			at := func(i int) {
				if where == "documents" && i == 5000+round*1000 {
					panic("the documents failed")
				}
			}
			lo := &LoadOptions{}
			if where == "progress" {
				lo.Progress = func(n int) {
					if n >= 10000 {
						panic("the progress failed")
					}
				}
			}
			got := func() (p any) {
				defer func() { p = recover() }()
				d.Load(context.Background(), stopDocs(50000, -1, &yielded, at), lo)
				return nil
			}()
			if got == nil {
				t.Fatalf("%s, round %d: the panic did not reach the caller", where, round)
			}
		}
		if n, err := d.Count(); err != nil || n != 0 {
			t.Fatalf("after the %s panics: %d documents, %v", where, n, err)
		}
		if _, err := os.Stat(filepath.Join(dir, loadTmpDir)); !os.IsNotExist(err) {
			t.Fatalf("after the %s panics, the load's directory is still there: %v", where, err)
		}
	}
	var yielded atomic.Int64
	if res, err := d.Load(context.Background(), stopDocs(3000, -1, &yielded, nil), nil); err != nil || res.Stored != 3000 {
		t.Fatalf("a load after the panics: %+v, %v", res, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() || rep.Docs != 3000 {
		t.Fatalf("check after the panics and a load: %+v, %v", rep, err)
	}
}

// Ensure that a write made inside Load's documents, which waits for the
// Load (it holds the writer lock) while the Load waits for it, does not
// make Close hang: Close ends the write's wait (ErrClosed) and the Load
// (ErrClosed), and the index holds neither the load nor the write. So
// does a Load waiting behind it for the writer lock, on its own context.
func TestWriteInsideLoadDoesNotHangClose(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	inside, started := make(chan error, 1), make(chan struct{})
	docs := func(yield func(Doc, error) bool) {
		if !yield(Doc{ID: "a", Text: "a loaded document, the first of two"}, nil) {
			return
		}
		close(started)
		inside <- d.Put(Doc{ID: "side", Text: "a document written by the documents of a load"}, nil)
		yield(Doc{ID: "b", Text: "a loaded document, the second of two"}, nil)
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), docs, nil)
		loaded <- err
	}()
	<-started
	// A second Load waits for the first; its context's end ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Load(ctx, seqOf([]Doc{{ID: "c", Text: "a document of a second load"}}), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Load behind another: %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-inside:
		t.Fatalf("the write inside the load returned %v before Close", err)
	case <-time.After(100 * time.Millisecond):
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	for what, ch := range map[string]chan error{"the write inside the load": inside, "Load": loaded, "Close": closed} {
		select {
		case err := <-ch:
			if want := ErrClosed; what == "Close" && err != nil || what != "Close" && !errors.Is(err, want) {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not return within 10 s of Close", what)
		}
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("after the closed load: %d documents, %v", n, err)
	}
}

// Ensure that PutBatchContext and DeleteIDsContext (and PutContext and
// DeleteContext, their single-document forms) give up when their
// context ends while they wait for the writer lock behind a Load, writing
// nothing (a server's client that went away), and PutBatchContext with a
// context already ended even when the lock is free; with a live context
// it stores as PutBatch does.
func TestPutBatchContextGivesUp(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "old", Text: "a document stored before the load"}, nil); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	docs := func(yield func(Doc, error) bool) {
		if yield(Doc{ID: "a", Text: "a loaded document, which holds the writer lock"}, nil) {
			close(started)
			<-release
		}
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), docs, nil)
		loaded <- err
	}()
	<-started
	doc := []Doc{{ID: "p", Text: "a document put while a load runs"}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.PutBatchContext(ctx, doc, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PutBatchContext behind a Load: %v, want DeadlineExceeded", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	if _, err := d.DeleteIDsContext(dctx, []string{"old"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DeleteIDsContext behind a Load: %v, want DeadlineExceeded", err)
	}
	// The single-document forms, as their batches. NB: each on a
	// goroutine, so that one that does not give up fails the test
	// rather than hanging it behind the load (a read-through's R8).
	within := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s behind a Load: %v, want DeadlineExceeded", what, err)
			}
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("%s behind a Load: still waiting 10 s after its deadline", what)
		}
	}
	within("PutContext", func(ctx context.Context) error { return d.PutContext(ctx, doc[0], nil) })
	within("DeleteContext", func(ctx context.Context) error { return d.DeleteContext(ctx, "old", nil) })
	close(release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	end()
	if _, err := d.PutBatchContext(ended, doc, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutBatchContext with an ended context: %v, want Canceled", err)
	}
	if err := d.DeleteContext(ended, "old", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("DeleteContext with an ended context: %v, want Canceled", err)
	}
	if _, err := d.Get("p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(p) after three abandoned puts: %v, want ErrNotFound", err)
	}
	if _, err := d.Get("old"); err != nil {
		t.Fatalf("Get(old) after two abandoned deletes: %v", err)
	}
	if res, err := d.PutBatchContext(context.Background(), doc, nil); err != nil || res.Stored != 1 {
		t.Fatalf("PutBatchContext: %+v, %v", res, err)
	}
	if got, err := d.Get("p"); err != nil || got.Text != doc[0].Text {
		t.Fatalf("Get(p) = %+v, %v", got, err)
	}
	if err := d.PutContext(context.Background(), Doc{ID: "q", Text: "a document put with a live context"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteContext(context.Background(), "old", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteContext(context.Background(), "old", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteContext of a deleted id: %v, want ErrNotFound", err)
	}
	if _, err := d.Get("q"); err != nil {
		t.Fatalf("Get(q): %v", err)
	}
}

// Ensure that an error yielded by the caller's iterator ends the load at
// once with that error, unchanged, and stores nothing: one that wraps
// ENOSPC (the input's own disk) or a codec error too, which came back as
// the index's ErrDiskFull and ErrCorrupt (a code review's C4).
func TestLoadIteratorError(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	before := indexState(t, d)
	for _, bad := range []error{
		errors.New("input.jsonl:6: malformed record"),
		fmt.Errorf("reading /mnt/in/part-7.jsonl: %w", syscall.ENOSPC),
		fmt.Errorf("input.jsonl:6: %w", codec.ErrCorrupt),
	} {
		var yielded atomic.Int64
		docs := func(yield func(Doc, error) bool) {
			for d, err := range stopDocs(200000, -1, &yielded, nil) {
				if yielded.Load() == 6 {
					err = bad
				}
				if !yield(d, err) {
					return
				}
			}
		}
		if _, err := d.Load(context.Background(), docs, nil); err != bad {
			t.Fatalf("err = %v, want the iterator's own: %v", err, bad)
		}
		if n := yielded.Load(); n != 6 {
			t.Fatalf("the iterator yielded %d documents, the 6th an error", n)
		}
		if after := indexState(t, d); after != before {
			t.Fatalf("index changed: %s, before %s", after, before)
		}
	}
}

// Ensure that a disk error in the load's own files (a sorted run that
// cannot be created) stops the load promptly with that error, leaving
// the index unchanged and the database usable.
func TestLoadDiskError(t *testing.T) {
	var fail atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if fail.Load() && op.Kind == errorfs.OpCreate && strings.Contains(op.Path, "postings-000000.run") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	d := mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	if err := d.Put(Doc{ID: "pre", Text: "a document stored before the load"}, nil); err != nil {
		t.Fatal(err)
	}
	before := indexState(t, d)
	fail.Store(true)
	var yielded atomic.Int64
	_, err := d.Load(context.Background(), stopDocs(200000, -1, &yielded, nil), &LoadOptions{Memory: 1 << 20})
	fail.Store(false)
	if !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("err = %v, want the injected disk error", err)
	}
	t.Logf("%v after %d documents yielded", err, yielded.Load())
	if n := yielded.Load(); n >= 20000 {
		t.Fatalf("the iterator yielded %d documents", n)
	}
	if after := indexState(t, d); after != before {
		t.Fatalf("index changed: %s, before %s", after, before)
	}
	if _, err := fs.Stat(fs.PathJoin("db", loadTmpDir)); err == nil {
		t.Fatal("the load's directory is still there")
	}
	if err := d.Put(Doc{ID: "after", Text: "a document stored after the failed load"}, nil); err != nil {
		t.Fatal(err)
	}
}

// Ensure that a load into an index whose documents were all deleted (its
// posting lists written whole, over lists that name deleted documents
// only) ends in the state that puts give, and that later writes merge onto
// those lists: documents and every query answer, against an index built
// by puts alone.
func TestLoadIntoEmptiedIndex(t *testing.T) {
	sources, err := corpus.SampleTexts()
	if err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for g := range gen.Stream(gen.Options{Seed: 9, N: 600, Sources: sources}) {
		docs = append(docs, Doc{ID: g.ID, Text: g.Text})
	}
	first, second := docs[:300], slices.Clone(docs[300:])
	for i := range 50 { // old texts under new ids: their buckets held deleted documents
		second = append(second, Doc{ID: fmt.Sprintf("again-%d", i), Text: first[i].Text})
	}
	later := []Doc{{ID: "later-1", Text: first[60].Text}, {ID: "later-2", Text: second[10].Text + " and more"}}
	build := func(name string, load bool) *DB {
		d := mustOpen(t, name, &Options{fs: vfs.NewMem(), NoSync: true})
		for _, doc := range first {
			if err := d.Put(Doc{ID: doc.ID, Text: doc.Text}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, doc := range first {
			if err := d.Delete(doc.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		if load {
			if _, err := d.Load(context.Background(), seqOf(second), &LoadOptions{tableBytes: 64 << 10}); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, doc := range second {
				if err := d.Put(Doc{ID: doc.ID, Text: doc.Text}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		return d
	}
	puts, loaded := build("puts", false), build("loaded", true)
	defer puts.Close()
	defer loaded.Close()
	for round := range 2 {
		want, wantRep := purgedStateOf(t, puts)
		got, gotRep := purgedStateOf(t, loaded)
		if !maps.Equal(got, want) || !reflect.DeepEqual(gotRep, wantRep) {
			t.Fatalf("round %d: documents, query answers or check summary differ from puts (%+v, %+v)", round, gotRep, wantRep)
		}
		for _, d := range []*DB{puts, loaded} {
			if _, err := d.PutBatch(later, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Ensure that Load copies what it keeps of each document, so that an
// iterator may reuse one buffer for every document's metadata and set (it
// stored 4,999 of 5,000 documents with another one's metadata). Oracle:
// each document's metadata and shingle count as Put of a fresh copy
// stores them.
func TestLoadCopiesReusedBuffers(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets})
	defer d.Close()
	const n = 5000
	meta := func(i int) string { return fmt.Sprintf("meta-%05d", i) }
	words := func(i int) []string {
		return strings.Fields(fmt.Sprintf("token%d alpha beta gamma delta w%d x%d", i, i%13, i%29))
	}
	var buf []byte
	var toks []string
	docs := func(yield func(Doc, error) bool) {
		for i := range n {
			buf = fmt.Appendf(buf[:0], "%s", meta(i))
			toks = append(toks[:0], words(i)...)
			if !yield(Doc{ID: fmt.Sprintf("d%05d", i), Set: Tokens(toks...), Meta: buf}, nil) {
				return
			}
		}
	}
	if _, err := d.Load(context.Background(), docs, nil); err != nil {
		t.Fatal(err)
	}
	ref := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets})
	defer ref.Close()
	for i := 0; i < n; i += 97 {
		id := fmt.Sprintf("d%05d", i)
		if err := ref.Put(Doc{ID: id, Set: Tokens(words(i)...), Meta: []byte(meta(i))}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := d.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Meta) != meta(i) || !slices.Equal(got.Shingles, want.Shingles) || !slices.Equal(got.Signature, want.Signature) {
			t.Fatalf("%s: meta %q, %d shingles; want %q, %d (and the same shingles and signature)", id, got.Meta, len(got.Shingles), meta(i), len(want.Shingles))
		}
	}
}

// Ensure that a load with DeleteAbsent gives the index that Put of each
// of its documents, then DeleteIDs of every stored id it does not hold,
// gives (doc numbers included; the oracle, a model of the expected
// state): absent ids before, between and after the load's in key order,
// across many lookup chunks, an expired document among them (deleted,
// not counted), and an absent id that the load replaces nothing for.
// MaxDeleted refuses a load over it with ErrTooManyDeletes and leaves
// the index as it was, and allows one at it; an empty load deletes all.
func TestLoadDeleteAbsent(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 600
	}
	sources, err := corpus.SampleTexts()
	if err != nil {
		t.Fatal(err)
	}
	var all []Doc
	for g := range gen.Stream(gen.Options{Seed: 9, N: n, Sources: sources}) {
		all = append(all, Doc{ID: g.ID, Text: g.Text})
	}
	// NB: ids shuffled, so that absent ids fall everywhere in key order.
	rng := rand.New(rand.NewPCG(9, 9))
	rng.Shuffle(len(all), func(i, j int) { all[i].ID, all[j].ID = all[j].ID, all[i].ID })
	before, night := all[:2*n/3], slices.Clone(all[n/3:])
	for i := range night[:n/6] {
		night[i].Text += " (tonight's version)"
	}
	absent := map[string]bool{}
	for _, d := range before {
		absent[d.ID] = true
	}
	for _, d := range night {
		delete(absent, d.ID)
	}
	clock := &fakeClock{t: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}
	expiring := Doc{ID: "~expiring", Text: "a document that expires before the night's load runs"}
	// NB: absent, with an expiry to come: its expiry key goes with it.
	later := Doc{ID: "~later", Text: "a document that would expire long after the night"}

	// NB: no background sweep: it removed the expired document before
	// the load, under -race, so the case did not run (a review).
	puts := mustOpen(t, "puts", &Options{fs: vfs.NewMem(), NoSync: true, clock: clock.now, ExpirySweep: -1})
	defer puts.Close()
	load := mustOpen(t, "load", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
	defer load.Close()
	for _, d := range before {
		if err := puts.Put(d, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := load.Load(context.Background(), seqOf(before), nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*DB{puts, load} {
		if err := d.Put(expiring, &WriteOptions{TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := d.Put(later, &WriteOptions{TTL: 240 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	absent[later.ID] = true
	clock.advance(time.Hour)
	for _, d := range night {
		if err := puts.Put(d, nil); err != nil {
			t.Fatal(err)
		}
	}
	gone := append(slices.Sorted(maps.Keys(absent)), expiring.ID)
	if _, err := puts.DeleteIDs(gone, &WriteOptions{IgnoreMissing: true}); err != nil {
		t.Fatal(err)
	}
	// NB: the expired document is missing to DeleteIDs, left to the
	// sweeper: gone from the model by hand.
	if n, err := puts.SweepExpired(context.Background()); err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want the expiring document", n, err)
	}
	want, wantRep := purgedStateOf(t, puts)

	opts := &LoadOptions{Memory: 64 << 10, tableBytes: 1 << 20, resolveChunk: 97, DeleteAbsent: true}
	was := indexState(t, load)
	opts.MaxDeleted = len(absent) - 1
	if _, err := load.Load(context.Background(), seqOf(night), opts); !errors.Is(err, ErrTooManyDeletes) || !strings.Contains(err.Error(), fmt.Sprint(len(absent))) {
		t.Fatalf("a load over MaxDeleted: %v, want ErrTooManyDeletes naming %d", err, len(absent))
	}
	if now := indexState(t, load); now != was {
		t.Fatalf("a refused load changed the index: %s, was %s", now, was)
	}
	opts.MaxDeleted = len(absent)
	res, err := load.Load(context.Background(), seqOf(night), opts)
	if err != nil {
		t.Fatal(err)
	}
	replaced := len(before) - (len(absent) - 1) // NB: ~later was put apart
	if res.Deleted != len(absent) || res.Stored != len(night) || res.Replaced != replaced {
		t.Errorf("load result %+v; want %d deleted, %d stored, %d replaced", res, len(absent), len(night), replaced)
	}
	got, gotRep := purgedStateOf(t, load)
	if !maps.Equal(got, want) {
		t.Fatalf("documents or query answers differ from puts and deletes: %d documents, want %d", len(got), len(want))
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		t.Fatalf("check summary %+v, puts and deletes %+v", gotRep, wantRep)
	}
	if c, err := load.Count(); err != nil || c != uint64(len(night)) {
		t.Fatalf("count %d (%v), want %d", c, err, len(night))
	}

	// Nothing absent: nothing deleted. An empty load: everything.
	if res, err := load.Load(context.Background(), seqOf(night), opts); err != nil || res.Deleted != 0 {
		t.Fatalf("the same load again: %+v %v", res, err)
	}
	if res, err := load.Load(context.Background(), seqOf(nil), &LoadOptions{DeleteAbsent: true}); err != nil || res.Deleted != len(night) {
		t.Fatalf("an empty load: %+v %v, want %d deleted", res, err, len(night))
	}
	if c, err := load.Count(); err != nil || c != 0 {
		t.Fatalf("count after an empty load %d (%v)", c, err)
	}
	if rep, err := load.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("check after an empty load: %+v %v", rep, err)
	}

	for _, bad := range []*LoadOptions{{MaxDeleted: -1, DeleteAbsent: true}, {MaxDeleted: 5}} {
		if _, err := load.Load(context.Background(), seqOf(night), bad); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", *bad, err)
		}
	}
}

// Ensure that a Load budget larger than any machine's memory loads (the
// sorters allocate as they fill beyond a bound): 256 GiB ended the
// process with "out of memory" at the first document, and 1<<62 panicked
// in makeslice on a worker goroutine (an embedder's review).
func TestLoadHugeMemoryBudget(t *testing.T) {
	d := mustOpen(t, "huge", &Options{fs: vfs.NewMem()})
	defer d.Close()
	for i, m := range []int{256 << 30, 1 << 62} {
		docs := []Doc{{ID: fmt.Sprint("a", i), Text: "a document loaded under a huge budget"}, {ID: fmt.Sprint("b", i), Text: "another one, loaded with it"}}
		res, err := d.Load(context.Background(), seqOf(docs), &LoadOptions{Memory: m})
		if err != nil || res.Stored != 2 {
			t.Fatalf("Memory %d: %+v %v", m, res, err)
		}
	}
	if n, err := d.Count(); err != nil || n != 4 {
		t.Fatalf("count %d %v", n, err)
	}
}

// Ensure that LoadOptions.Progress is called every 10,000 documents read
// and once at the end, each count once (a count that is a multiple of
// 10,000 was reported twice).
func TestLoadProgressCounts(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []int
	}{{20000, []int{10000, 20000}}, {12345, []int{10000, 12345}}, {0, []int{0}}} {
		d := mustOpen(t, "p", &Options{fs: vfs.NewMem()})
		docs := make([]Doc, c.n)
		for i := range docs {
			docs[i] = Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("document %d of the load", i)}
		}
		var got []int
		if _, err := d.Load(context.Background(), seqOf(docs), &LoadOptions{Progress: func(n int) { got = append(got, n) }}); err != nil {
			t.Fatal(err)
		}
		d.Close()
		if !slices.Equal(got, c.want) {
			t.Errorf("%d documents: Progress called with %v, want %v", c.n, got, c.want)
		}
	}
}

// Ensure that a small Load allocates memory for what it holds, not for
// its whole budget (LoadOptions.Memory, 256 MiB by default): its sorters
// took their budget up front, and memory the heap had freed is cleared
// before it is handed out again, so a Load of 20 documents took 0.1-0.5 s
// beside a writer, all of it under the writer lock (a consistency
// review's F1; the writer's puts waited up to 454 ms, against 84-138 ms
// since). The oracle is the runtime's count of the bytes allocated.
func TestSmallLoadAllocatesLittle(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	docs := loadDocs(400)[:20]
	load := func() {
		if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
			t.Fatal(err)
		}
	}
	load() // the first: Pebble's own buffers
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	load()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Fatalf("a Load of %d documents allocated %d MiB", len(docs), got>>20)
	}
}

// Ensure that two Loads at once, beside a writer, both succeed: a Load
// that released its temporary files after the writer lock (to flush
// outside it) removed those of the other Load, which had taken the lock
// meanwhile, and 14 of 30 loads failed (a maintainer's M1). The oracle:
// every document loaded is then stored.
func TestConcurrentLoads(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	docs := loadDocs(2000)
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() { // a writer filling the memtable: each Load's flush waits for it
		defer wwg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			doc := docs[i%len(docs)]
			doc.ID = fmt.Sprint("w-", i%500)
			if err := d.Put(doc, &WriteOptions{NoSync: true}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				part := docs[(g*7+i)%10*200 : (g*7+i)%10*200+200]
				if _, err := d.Load(context.Background(), seqOf(part), &LoadOptions{tableBytes: 16 << 10}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	wwg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of 30 loads failed; first: %v", len(errs), errs[0])
	}
	for _, doc := range docs {
		if _, err := d.Get(doc.ID); err != nil {
			t.Fatalf("after the loads, %s: %v", doc.ID, err)
		}
	}
}

// Ensure that a Load's progress ends once the Load is done, its flush
// included: it ended before the flush, which waits for the memtable other
// writers filled, so that a build said it was done seconds before it
// was. The oracle: Pebble's count of flushes when the last report comes
// is the count once Load has returned.
func TestLoadProgressEndsAfterFlush(t *testing.T) {
	d := mustOpen(t, "p", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	// Writes in the memtable: the Load's flush has work to do.
	docs := loadDocs(400)
	if _, err := d.PutBatch(docs[:50], nil); err != nil {
		t.Fatal(err)
	}
	var last Progress
	var flushes int64
	ctx := WithProgress(context.Background(), func(p Progress) {
		last, flushes = p, d.pdb.Metrics().Flush.Count
	})
	before := d.pdb.Metrics().Flush.Count
	if _, err := d.Load(ctx, seqOf(docs[200:]), nil); err != nil {
		t.Fatal(err)
	}
	after := d.pdb.Metrics().Flush.Count
	if after == before || last.Step != last.Steps || flushes != after {
		t.Fatalf("the last report (%+v) came after %d flushes, Load's end after %d (%d before it)", last, flushes, after, before)
	}
}

// Ensure that a load into a fresh index lands its tables where they stay:
// no compaction rewrites them. The id map's table used to end with the
// counters key, so its span took in the manifest key that Open leaves in
// the memtable: the flush of the (flushable) ingest put it in level 0,
// over the memtable's own table, and a compaction then moved it to the
// level below, rewriting every id (1 s of a million-document build, after
// the load had said it was done). The
// oracle is Pebble's count of the bytes its compactions wrote, once they
// are idle, against the size of the id map's table.
func TestFreshLoadIsNotRewritten(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	docs := loadDocs(20000)
	if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
		t.Fatal(err)
	}
	var m *pebble.Metrics
	for start := time.Now(); ; {
		m = d.pdb.Metrics()
		if m.Compact.NumInProgress == 0 && m.Levels[0].TablesCount == 0 {
			break
		}
		if time.Since(start) > time.Minute {
			// NB: the old code's compaction of the id map is what the
			// oracle counts; unfinished, it would count too little.
			t.Fatalf("compactions still busy a minute after the load: %d in progress, %d tables in level 0", m.Compact.NumInProgress, m.Levels[0].TablesCount)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var compacted uint64
	for _, l := range m.Levels {
		compacted += l.TableBytesCompacted
	}
	tables, err := d.pdb.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	var idBytes uint64
	for level, ts := range tables {
		for _, tb := range ts {
			t.Logf("L%d %s %d bytes [%q, %q]", level, tb.FileNum, tb.Size, tb.Smallest.UserKey[:1], tb.Largest.UserKey[:1])
			if tb.Smallest.UserKey[0] == codec.PrefixID {
				idBytes += tb.Size
			}
		}
	}
	if idBytes == 0 || compacted >= idBytes/2 {
		t.Fatalf("compactions wrote %d bytes after a fresh load; its id map takes %d", compacted, idBytes)
	}
}

// Ensure that a load with MinStored refuses, storing nothing, to store
// fewer documents than that, counting neither those skipped as empty nor
// the superseded copies of an id (a nightly operator's review, N1: the
// command's --min-docs counted records, and 1,000 blank texts built an
// empty index). The oracle: the documents given, counted by hand, and the
// index's own count and contents before and after.
func TestLoadMinStored(t *testing.T) {
	ctx := context.Background()
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "kept", Text: "a document stored before the loads"}}, nil); err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{ID: "e1", Text: "   "}, {ID: "e2", Text: "\t\n"},
		{ID: "r", Text: "the first copy of a document"}, {ID: "r", Text: "the second copy of a document"},
		{ID: "a", Text: "a document of its own, the first"}, {ID: "b", Text: "a document of its own, the second"},
	}
	// 3 to store: r (once), a, b.
	for _, min := range []int{4, 100} {
		_, err := d.Load(ctx, seqOf(docs), &LoadOptions{SkipEmpty: true, MinStored: min})
		if !errors.Is(err, ErrTooFewDocuments) || !strings.Contains(err.Error(), "it would store 3 (of 6 read: 2 empty, 1 superseded") {
			t.Fatalf("MinStored %d: %v, want ErrTooFewDocuments naming 3 of 6", min, err)
		}
		if n, err := d.Count(); err != nil || n != 1 {
			t.Fatalf("after a refused load: %d documents (%v), want the one stored before", n, err)
		}
		if _, err := d.Get("a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after a refused load, a: %v", err)
		}
	}
	if _, err := d.Load(ctx, seqOf(docs), &LoadOptions{SkipEmpty: true, MinStored: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("MinStored -1: %v, want ErrInvalidOptions", err)
	}
	res, err := d.Load(ctx, seqOf(docs), &LoadOptions{SkipEmpty: true, MinStored: 3})
	if err != nil || res.Stored != 3 {
		t.Fatalf("MinStored 3: %+v %v, want 3 stored", res, err)
	}
	if n, err := d.Count(); err != nil || n != 4 {
		t.Fatalf("after the load: %d documents (%v), want 4", n, err)
	}
}

// Ensure that LoadOptions.MaxDeletedPercent limits a load with
// DeleteAbsent to that share of the documents stored when it takes the
// writer lock, rounded down and at least 1 (the oracle: the limits
// worked out by hand), refusing one over it with ErrTooManyDeletes and
// the index left as it was; that a load which takes the lock after
// another counts the other's documents; and that bad values are refused
// with ErrInvalidOptions.
func TestLoadMaxDeletedPercent(t *testing.T) {
	docsOf := func(prefix string, n int) []Doc {
		var ds []Doc
		for i := range n {
			ds = append(ds, Doc{ID: fmt.Sprintf("%s-%04d", prefix, i), Text: fmt.Sprintf("document %s number %d of the percentage test", prefix, i)})
		}
		return ds
	}
	d := mustOpen(t, "idx", &Options{fs: vfs.NewMem(), NoSync: true})
	stored := docsOf("a", 375)
	if _, err := d.Load(context.Background(), seqOf(stored), nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*LoadOptions{
		{DeleteAbsent: true, MaxDeletedPercent: -1},
		{DeleteAbsent: true, MaxDeletedPercent: 100.5},
		{DeleteAbsent: true, MaxDeletedPercent: math.NaN()},
		{DeleteAbsent: true, MaxDeletedPercent: math.Inf(1)},
		{MaxDeletedPercent: 10},
		{DeleteAbsent: true, MaxDeletedPercent: 10, MaxDeleted: 5},
	} {
		was := indexState(t, d)
		if _, err := d.Load(context.Background(), seqOf(nil), bad); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxDeletedPercent") {
			t.Fatalf("%+v: %v, want ErrInvalidOptions naming MaxDeletedPercent", *bad, err)
		}
		if now := indexState(t, d); now != was {
			t.Fatalf("%+v changed the index: %s, was %s", *bad, now, was)
		}
	}
	// 18.4% of 375 is 69 (in floating point 68.99999999999999).
	keep := func(n int) iter.Seq2[Doc, error] { return seqOf(stored[:len(stored)-n]) }
	was := indexState(t, d)
	_, err := d.Load(context.Background(), keep(70), &LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 18.4})
	if !errors.Is(err, ErrTooManyDeletes) || !strings.Contains(err.Error(), "70 stored documents are absent from it, more than its limit of 69 (18.4% of 375 stored)") {
		t.Fatalf("deleting 70 at 18.4%% of 375: %v", err)
	}
	if now := indexState(t, d); now != was {
		t.Fatalf("a refused load changed the index: %s, was %s", now, was)
	}
	if res, err := d.Load(context.Background(), keep(69), &LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 18.4}); err != nil || res.Deleted != 69 {
		t.Fatalf("deleting 69 at 18.4%% of 375: %+v %v", res, err)
	}
	// At least 1: an index of one document can lose it at 10%.
	one := mustOpen(t, "one", &Options{fs: vfs.NewMem(), NoSync: true})
	if _, err := one.Load(context.Background(), seqOf(stored[:1]), nil); err != nil {
		t.Fatal(err)
	}
	if res, err := one.Load(context.Background(), seqOf(docsOf("b", 1)), &LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 10}); err != nil || res.Deleted != 1 {
		t.Fatalf("deleting the one document at 10%%: %+v %v", res, err)
	}
	// 100%: no limit.
	if res, err := one.Load(context.Background(), seqOf(nil), &LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 100}); err != nil || res.Deleted != 1 {
		t.Fatalf("an empty load at 100%%: %+v %v", res, err)
	}

	// Counted under the lock: a load that waits for another counts the
	// other's documents. 306 stored; the first load adds 306 new ones;
	// the second keeps those 306 and deletes the first 306, 50% of 612
	// (of 306 it would be refused).
	first := docsOf("c", 306)
	holding, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), func(yield func(Doc, error) bool) {
			close(holding) // NB: the load holds the writer lock while it reads
			<-release
			for _, doc := range first {
				if !yield(doc, nil) {
					return
				}
			}
		}, nil)
		firstDone <- err
	}()
	<-holding
	secondDone := make(chan error, 1)
	go func() {
		res, err := d.Load(context.Background(), seqOf(first), &LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 50})
		if err == nil && res.Deleted != 306 {
			err = fmt.Errorf("deleted %d, want 306", res.Deleted)
		}
		secondDone <- err
	}()
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("a load after another, deleting 50%% of the documents then stored: %v", err)
	}
	if c, err := d.Count(); err != nil || c != 306 {
		t.Fatalf("count %d (%v), want 306", c, err)
	}
}
