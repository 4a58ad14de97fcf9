package db

import (
	"bytes"

	"context"
	"errors"
	"fmt"
	"github.com/lshdb/lshdb/codec"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensure that the Meta of a document returned by Get is owned by the
// caller: it keeps its bytes after the block it was read from has left the
// cache and Pebble has reused the memory (code review B1).
func TestGetMetaOwned(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{CacheSize: 64 << 10, NoSync: true})
	defer d.Close()
	want := bytes.Repeat([]byte("M"), 64)
	if _, err := d.PutBatch([]Doc{{ID: "x", Text: "the meta of this document must survive", Meta: want}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	doc, err := d.Get("x")
	if err != nil {
		t.Fatal(err)
	}
	// Churn: new blocks through the 64 KiB cache evict and reuse the one
	// that held x.
	for i := range 3000 {
		if err := d.Put(Doc{ID: fmt.Sprintf("churn-%d", i), Text: strings.Repeat(fmt.Sprintf("text %d ", i), 20)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if _, err := d.Get(fmt.Sprintf("churn-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(doc.Meta, want) {
		t.Fatalf("Meta changed after cache churn: %q", doc.Meta)
	}
}

// Ensure that an empty Meta is none: read back as nil, as a nil one is,
// through Get and a query, in text and none modes (a review: it came back
// as an empty slice, so a caller testing Meta == nil for "none" got two
// answers for the same thing).
func TestEmptyMetaIsNone(t *testing.T) {
	for _, storage := range []string{StorageText, StorageNone} {
		d := mustOpen(t, t.TempDir(), &Options{Storage: storage, NoSync: true})
		var docs []Doc
		for i, meta := range [][]byte{nil, {}, []byte("m")} {
			docs = append(docs, Doc{ID: fmt.Sprint("d", i), Text: "one text, stored three times with three metas", Meta: meta})
		}
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		if storage == StorageNone {
			// A signature put (PutSignature's path) with an empty Meta.
			d0, err := d.Get("d0")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.PutBatch([]Doc{{ID: "d3", Signature: d0.Signature, Meta: []byte{}}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i, want := range [][]byte{nil, nil, []byte("m"), nil} {
			if i == 3 && storage != StorageNone {
				break
			}
			got, err := d.Get(fmt.Sprint("d", i))
			if err != nil || (got.Meta == nil) != (want == nil) || !bytes.Equal(got.Meta, want) {
				t.Errorf("%s: Get(d%d).Meta = %#v (%v), want %#v", storage, i, got.Meta, err, want)
			}
		}
		res, err := d.QueryID(context.Background(), "d2", nil)
		if err != nil || len(res.Matches) < 2 {
			t.Fatalf("%s: QueryID: %+v, %v", storage, res, err)
		}
		for _, m := range res.Matches {
			if m.Meta != nil {
				t.Errorf("%s: the match %s has Meta %#v, want nil", storage, m.ID, m.Meta)
			}
		}
		if storage == StorageText {
			// A record written before an empty Meta was stored as none
			// holds it as present and empty: read back as nil too.
			p, err := d.prepare(&Doc{ID: "old", Text: "one text, stored three times with three metas", Meta: []byte("m")}, true)
			if err != nil {
				t.Fatal(err)
			}
			var r codec.DocRecord
			if err := codec.DecodeDocRecord(p.record, &r); err != nil {
				t.Fatal(err)
			}
			r.Meta = []byte{}
			p.record = codec.AppendDocRecord(nil, &r)
			d.wmu.Lock()
			_, sw, err := d.writeLockedCount([]prepared{p}, &WriteOptions{})
			d.wmu.Unlock()
			if err == nil {
				err = sw.wait()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := d.Get("old"); err != nil || got.Meta != nil {
				t.Errorf("Get of a record holding an empty Meta: %#v, %v; want nil", got.Meta, err)
			}
			res, err := d.QueryID(context.Background(), "d0", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Matches {
				if m.ID == "old" && m.Meta != nil {
					t.Errorf("the match of a record holding an empty Meta: %#v, want nil", m.Meta)
				}
			}
		}
		d.Close()
	}
}

// closeWithin runs Close and fails the test if it does not return within d.
func closeWithin(t *testing.T, db *DB, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Close did not return within %v", d)
		return nil
	}
}

// Ensure that Close called inside the body of an All loop returns, and the
// iteration then ends with ErrClosed (code review B3).
func TestCloseInsideAll(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	for i := range 10 {
		if err := d.Put(Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document number %d of ten", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var seen int
	var last error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for doc, err := range d.All() {
			if err != nil {
				last = err
				continue
			}
			seen++
			if seen == 3 {
				if err := d.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			_ = doc
		}
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("Close inside an All loop deadlocked")
	}
	if seen != 3 || !errors.Is(last, ErrClosed) {
		t.Fatalf("after Close in the loop: %d documents, last error %v; want 3 and ErrClosed", seen, last)
	}
}

// Ensure that Close called inside the body of a Pairs loop returns, and
// the iteration then ends with ErrClosed (reliability R9).
func TestCloseInsidePairs(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	var docs []Doc
	for i := range 20 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy-%d", i), Text: "one text in twenty identical copies"})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var seen int
	var last error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, err := range d.Pairs(context.Background(), nil) {
			if err != nil {
				last = err
				continue
			}
			if seen++; seen == 5 {
				if err := d.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		}
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("Close inside a Pairs loop deadlocked")
	}
	if seen != 5 || !errors.Is(last, ErrClosed) {
		t.Fatalf("after Close in the loop: %d pairs, last error %v; want 5 and ErrClosed", seen, last)
	}
}

// Ensure that a write inside an All loop body does not deadlock while
// another goroutine waits in Close (the three-party case of code review
// B3): the write fails with ErrClosed or succeeds, and everything returns.
func TestWriteInsideAllWhileClosing(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	for i := range 5 {
		if err := d.Put(Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document number %d of five", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	finished := make(chan struct{})
	closing := make(chan struct{})
	go func() {
		defer close(finished)
		first := true
		for _, err := range d.All() {
			if err != nil {
				return
			}
			if first {
				first = false
				go func() { close(closing); d.Close() }()
				<-closing
				time.Sleep(50 * time.Millisecond) // let Close wait for the lock
			}
			if err := d.Put(Doc{ID: "w", Text: "a write made inside the loop body"}, nil); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Put: %v", err)
			}
		}
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("a write inside an All loop deadlocked with a waiting Close")
	}
}

// Ensure that the long calls stop with ctx's error when ctx is cancelled,
// and that Close then returns promptly.
func TestCancelledLongCalls(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	var docs []Doc
	for i := range 3000 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document %d with some words %d", i, i*7919)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := d.Stats(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stats with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := d.QueryID(ctx, "d5", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("QueryID with a cancelled context: %v, want context.Canceled", err)
	}
	// NB: a query with no candidate too (it checked among them only).
	if _, err := d.Query(ctx, "zzzz qqqq xxxx, nothing like any document", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Query with no candidate and a cancelled context: %v, want context.Canceled", err)
	}
	//lint:ignore SA1012 a nil context is what this checks
	if _, err := d.Query(nil, "document 5 with some words", nil); err != nil {
		t.Fatalf("Query with a nil context: %v", err)
	}
	if _, err := d.Clusters(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Clusters with a cancelled context: %v, want context.Canceled", err)
	}
	for _, err := range d.Pairs(ctx, nil) {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Pairs with a cancelled context: %v, want context.Canceled", err)
		}
	}
	if err := closeWithin(t, d, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// Ensure that Clusters reports thousands of identical documents as one
// cluster, representative first, without expanding their pairs (code
// review B4): the cluster is the known answer, every copy plus the near
// copy that verifies against them.
func TestClustersIdenticalGroup(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	text := "a boilerplate notice repeated in thousands of documents, word for word"
	var docs []Doc
	var want []string
	for i := range 3000 {
		id := fmt.Sprintf("copy-%04d", i)
		docs = append(docs, Doc{ID: id, Text: text})
		want = append(want, id)
	}
	docs = append(docs, Doc{ID: "near", Text: text + "!"}, Doc{ID: "other", Text: "nothing like the rest at all"})
	want = append(want, "near")
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := d.Clusters(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Representative != "copy-0000" || !slices.Equal(cs[0].IDs, want) {
		t.Fatalf("Clusters = %d clusters, first %+v; want one of %d starting at copy-0000", len(cs), cs[0].Representative, len(want))
	}
}

// Ensure that Pebble's messages go through Options.Logger (reviews L11):
// with a Debug-level logger, a flush's informational messages arrive
// there, tagged as Pebble's.
func TestLoggerReceivesPebble(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := mustOpen(t, t.TempDir(), &Options{Logger: logger, NoSync: true})
	if err := d.Put(Doc{ID: "a", Text: "a document to flush"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "lshdb: pebble: ") {
		t.Fatalf("the logger received no Pebble message:\n%s", buf.String())
	}
}

// Ensure that cancelling the context stops Pairs inside a group of
// identical documents, whose pairs need no store read: 3,000 copies are
// 4.5 million pairs, and the run ends within a few thousand of the cancel.
func TestCancelInsideIdenticalGroup(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	var docs []Doc
	for i := range 3000 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy-%04d", i), Text: "one notice copied three thousand times, word for word"})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range d.Pairs(ctx, nil) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 10 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) || n > 10+2048 {
		t.Fatalf("after cancelling at pair 10: %d pairs, last error %v; want context.Canceled within 2048 more", n, last)
	}
}

// Ensure that Close, called while a long call runs the caller's code (a
// Load's documents, a Progress function, ClustersFrom's pairs) and that
// code calls the database, neither deadlocks (the embedder's review: a
// read-write mutex queued the callback's call behind the waiting Close,
// which waited for the long call): the callback's call returns ErrClosed
// or answers, the long call returns, and Close returns.
func TestCallbackIntoDBWhileClosing(t *testing.T) {
	var docs []Doc
	for i := range 3000 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document %d with some words %d", i, i*7919)})
	}
	fill := func(t *testing.T) *DB {
		d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
		if _, err := d.PutBatch(docs[:1000], nil); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// run starts call on d, which calls back into d through touch; the
	// first callback starts Close on another goroutine and waits until
	// Close has begun (it refuses new calls once it has, or the handle is
	// closed) before it calls d. Both must return.
	run := func(t *testing.T, d *DB, call func(touch func()) error) {
		var once sync.Once
		closed := make(chan error, 1)
		touch := func() {
			once.Do(func() {
				go func() { closed <- d.Close() }()
				// NB: Close begins at once; give it the time to be waiting.
				time.Sleep(50 * time.Millisecond)
			})
			if _, err := d.Has("d1"); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Has inside the callback: %v", err)
			}
		}
		returned := make(chan error, 1)
		go func() { returned <- call(touch) }()
		select {
		case err := <-returned:
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("the long call: %v, want nil or ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the long call deadlocked with Close")
		}
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close deadlocked with the long call")
		}
	}
	t.Run("Load", func(t *testing.T) {
		d := fill(t)
		run(t, d, func(touch func()) error {
			_, err := d.Load(context.Background(), func(yield func(Doc, error) bool) {
				for _, doc := range docs[1000:] {
					touch() // the "skip what is stored" pattern
					if !yield(doc, nil) {
						return
					}
				}
			}, nil)
			return err
		})
	})
	t.Run("Progress", func(t *testing.T) {
		d := fill(t)
		run(t, d, func(touch func()) error {
			_, err := d.Check(WithProgress(context.Background(), func(Progress) { touch() }))
			return err
		})
	})
	t.Run("ClustersFrom", func(t *testing.T) {
		d := fill(t)
		run(t, d, func(touch func()) error {
			_, err := d.ClustersFrom(context.Background(), func(yield func(Pair, error) bool) {
				for i := range 500 {
					touch()
					if !yield(Pair{A: fmt.Sprintf("d%d", i), B: fmt.Sprintf("d%d", i+1), Jaccard: 0.9}, nil) {
						return
					}
				}
			}, nil)
			return err
		})
	})
}

// Ensure that Check of a small index (checked whole before its first
// periodic look at ctx) stops with a cancelled context's error as every
// other call does, instead of a report.
func TestCheckCancelledSmallIndex(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "the quick brown fox"}, {ID: "b", Text: "jumps over the lazy dog"}}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := d.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check of 2 documents with a cancelled context: %v, %v; want context.Canceled", rep, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after it: %v, %v", rep, err)
	}
}

// Ensure that an operation's context has ended with ErrClosed by the
// time Close returns, on both backends, and that one begun after Close
// is ended from the start. Close cancelled them through a
// context.AfterFunc, on a goroutine of its own: a loop body that closed
// the handle could run on and get more results (a Redis Pairs yielded
// 2,707 more pairs from memory in one CI run).
func TestCloseEndsOperationsBeforeReturning(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		for i := range 50 {
			var d *DB
			if backend == "redis" {
				var err error
				if d, err = Open(redisURL(t, fmt.Sprint(i)), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				d = mustOpen(t, t.TempDir(), &Options{NoSync: true})
			}
			ctx, cancel := d.opCtx(context.Background())
			d.Close()
			err := ctxErr(ctx)
			cancel()
			after, cancelAfter := d.opCtx(context.Background())
			errAfter := ctxErr(after)
			cancelAfter()
			if !errors.Is(err, ErrClosed) || !errors.Is(errAfter, ErrClosed) {
				t.Fatalf("%s, run %d: once Close returned, an operation begun before it ended with %v, one begun after with %v; want ErrClosed both", backend, i, err, errAfter)
			}
			if n := len(d.ops); n != 0 {
				t.Fatalf("%s: %d operations left registered", backend, n)
			}
		}
	}
}

// Ensure that of two Closes at once, the one that returns ErrClosed does
// so once the other has ended: an Open right after it then takes the
// directory (it got ErrLocked: the second returned while the first still
// flushed, an embedder's review, EM-1), and holds every write, NoSync
// ones included (a process that exited on the second's return lost
// some). The first Close is made slow by unflushed NoSync writes; the
// oracle is the count of the documents put.
func TestConcurrentCloseWaitsForTheFirst(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		d, err := Open(dir, &Options{NoSync: true, MemTableSize: 64 << 20})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want, _ := d.Count()
		var batch []Doc
		for i := range 20_000 {
			batch = append(batch, Doc{ID: fmt.Sprintf("r%d-%d", round, i), Text: fmt.Sprintf("document %d of round %d, with a few words %d %d to store", i, round, i%97, i%89)})
		}
		if _, err := d.PutBatch(batch, nil); err != nil {
			t.Fatal(err)
		}
		want += uint64(len(batch))
		errs := make(chan error, 2)
		var start sync.WaitGroup
		start.Add(1)
		for range 2 {
			go func() {
				start.Wait()
				err := d.Close()
				if errors.Is(err, ErrClosed) {
					// NB: the first Close has ended: the directory is free.
					again, oerr := Open(dir, &Options{ReadOnly: true})
					if oerr != nil {
						errs <- fmt.Errorf("Open after a Close that returned %v: %w", err, oerr)
						return
					}
					n, cerr := again.Count()
					again.Close()
					if cerr != nil || n != want {
						errs <- fmt.Errorf("after a Close that returned %v: %d documents (%v), want %d", err, n, cerr, want)
						return
					}
				}
				errs <- err
			}()
		}
		start.Done()
		var closed int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
			case errors.Is(err, ErrClosed):
				closed++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if closed != 1 {
			t.Fatalf("round %d: %d Closes returned ErrClosed, want 1", round, closed)
		}
	}
}
