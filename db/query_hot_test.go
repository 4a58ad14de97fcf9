package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/minhash"
	"golang.org/x/sync/semaphore"
)

// Ensure that a query whose buckets hold hundreds of copies of a few
// texts (a hot bucket), which verifies each distinct set once and gives
// its copies its answer (identicalSets), answers what brute force does:
// every stored document at or above the threshold, with its exact
// Jaccard, and nothing else. And that a limited answer holds only its
// limit: a reslice kept every match reachable, and QueryMany and
// PutIfNewBatch held them (a review's P1: 27 MB a query of a hot bucket
// with a limit of 1). Through the query cache too, which the shortcut
// leaves to its own path.
func TestQueryHotBucket(t *testing.T) {
	base := strings.Repeat("the quick brown fox jumps over the lazy dog near the river bank ", 4)
	texts := []string{
		base,
		strings.Replace(base, "river", "water", 1),
		strings.Replace(base, "quick", "slow", 2),
		base + "and then it rests",
		"an unrelated text about owls and the night sky, far from any fox",
	}
	var docs []Doc
	for i := range 700 {
		// Copies of the first four texts; a few of the fifth.
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: texts[i%4]})
		if i%100 == 0 {
			docs = append(docs, Doc{ID: fmt.Sprintf("o%04d", i), Text: texts[4]})
		}
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setOf := func(text string) []uint64 {
		s, _ := h.Document(nil, nil, text)
		return s
	}
	for _, cacheSize := range []int64{0, 8 << 20} {
		t.Run(fmt.Sprint("cache=", cacheSize), func(t *testing.T) {
			d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), Threshold: 0.5, QueryCacheSize: cacheSize})
			defer d.Close()
			if _, err := d.PutBatch(docs, nil); err != nil {
				t.Fatal(err)
			}
			for round := range 2 { // the second through a warm cache
				for qi, q := range texts {
					res, err := d.Query(context.Background(), q, &QueryOptions{Threshold: 0.5})
					if err != nil {
						t.Fatal(err)
					}
					if qi < 4 && res.Candidates < identicalSets {
						t.Fatalf("query %d: %d candidates, want a hot bucket (%d or more)", qi, res.Candidates, identicalSets)
					}
					qs := setOf(q)
					var want []string
					exact := map[string]float64{}
					for _, doc := range docs {
						if j := minhash.Jaccard(qs, setOf(doc.Text)); j >= 0.5 {
							want = append(want, doc.ID)
							exact[doc.ID] = j
						}
					}
					var got []string
					for _, m := range res.Matches {
						got = append(got, m.ID)
						if m.Jaccard != exact[m.ID] {
							t.Fatalf("round %d, query %d: %s at Jaccard %v, brute force %v", round, qi, m.ID, m.Jaccard, exact[m.ID])
						}
					}
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("round %d, query %d: %d matches, brute force %d", round, qi, len(got), len(want))
					}
					limited, err := d.Query(context.Background(), q, &QueryOptions{Threshold: 0.5, Limit: 1})
					if err != nil {
						t.Fatal(err)
					}
					if limited.Found != len(want) || len(limited.Matches) != 1 || cap(limited.Matches) != 1 {
						t.Fatalf("query %d with a limit of 1: found %d, %d matches in room for %d; want %d, 1 in 1", qi, limited.Found, len(limited.Matches), cap(limited.Matches), len(want))
					}
				}
			}
			many, err := d.QueryMany(context.Background(), []QueryInput{{ID: "d0000"}, {Text: texts[1]}}, &QueryOptions{Threshold: 0.5, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range many {
				if len(r.Matches) != 2 || cap(r.Matches) != 2 {
					t.Fatalf("QueryMany %d with a limit of 2: %d matches in room for %d", i, len(r.Matches), cap(r.Matches))
				}
			}
		})
	}
}

// Ensure that a query whose context ends while it hashes its input stops
// there with the context's error: one with no candidates (a long text
// like nothing stored) ran to its end with no error, as only the
// candidates' loop checked (an embedder's review: a 26 MB text, cancelled
// after 0.1 s, answered after 1.6 s). The oracle: the same query with a
// live context answers, with no match.
func TestQueryStopsAfterHashing(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document about one thing and another, at some length"}, nil); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("an unrelated text of quite different words ", 200)
	if res, err := d.Query(context.Background(), text, nil); err != nil || len(res.Matches) != 0 {
		t.Fatalf("the query with a live context: %v %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queryHashedHook = cancel
	defer func() { queryHashedHook = nil }()
	if res, err := d.Query(ctx, text, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a query cancelled while it hashed: %v %v, want context.Canceled", res, err)
	}
}

// Ensure that a query whose context ends while it hashes a long text
// (cancellableText or more: the query's own, or a stored one's for a query
// by id) returns the context's error then, not once the hashing is done:
// it had no check, and a query of 8 MiB came back 0.8 s after a deadline
// of 10 ms (an embedder's review, E1). The hashing is held until the query
// has returned; the oracle for the answers is the same query with a live
// context, which finds the stored document.
func TestQueryEndsWhileHashing(t *testing.T) {
	long := strings.Repeat("a long text of many words and some numbers 12345, ", cancellableText/40)
	for _, c := range []struct {
		name    string
		storage string
		query   func(ctx context.Context, d *DB) (*QueryResult, error)
	}{
		{"text", StorageText, func(ctx context.Context, d *DB) (*QueryResult, error) { return d.Query(ctx, long, nil) }},
		{"text, sets mode", StorageSets, func(ctx context.Context, d *DB) (*QueryResult, error) { return d.Query(ctx, long, nil) }},
		{"id", StorageText, func(ctx context.Context, d *DB) (*QueryResult, error) { return d.QueryID(ctx, "long2", nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mustOpen(t, t.TempDir(), &Options{Storage: c.storage})
			defer d.Close()
			if _, err := d.PutBatch([]Doc{{ID: "long", Text: long}, {ID: "long2", Text: long + " and one more"}}, nil); err != nil {
				t.Fatal(err)
			}
			res, err := c.query(context.Background(), d)
			if err != nil || len(res.Matches) == 0 || res.Matches[0].ID != "long" {
				t.Fatalf("the query with a live context: %+v %v, want long first", res, err)
			}
			ctx, release := holdHashing(t)
			hashed := make(chan struct{})
			go func() {
				defer close(hashed)
				if res, err := c.query(ctx, d); !errors.Is(err, context.Canceled) {
					t.Errorf("a query cancelled while it hashed: %+v %v, want context.Canceled", res, err)
				}
			}()
			select {
			case <-hashed:
			case <-time.After(time.Minute):
				t.Fatal("the query waited for its hashing after its context ended")
			}
			release()
		})
	}
}

// Ensure that the hashings that queries gave up on are bounded: each holds
// a slot until it ends, and a query that finds none free starts none, and
// gives up with its context (a read-through's R1: clients that sent long
// texts and went could leave any number hashing, each holding several
// times its text). Once they end, a query answers again.
func TestAbandonedHashingsAreBounded(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	long := strings.Repeat("a long text of many words and some numbers 12345, ", cancellableText/40)
	if err := d.Put(Doc{ID: "long", Text: long}, nil); err != nil {
		t.Fatal(err)
	}
	// NB: room for two such texts' hashings (the bound is on their bytes).
	const slots = 2
	d.longBudget = slots * int64(len(long))
	d.longWork = semaphore.NewWeighted(d.longBudget)
	var reached atomic.Int64
	release := make(chan struct{})
	hashTextHook = func() {
		reached.Add(1)
		<-release
	}
	defer func() { hashTextHook = nil }()
	for i := range slots {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for reached.Load() < int64(i+1) {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if _, err := d.Query(ctx, long, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("query %d, given up on: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Query(ctx, long, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a query with every slot taken: %v, want its deadline", err)
	}
	if n := reached.Load(); n != int64(slots) {
		t.Fatalf("%d hashings began, with %d slots", n, slots)
	}
	hashTextHook = nil
	close(release)
	res, err := d.Query(context.Background(), long, nil)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "long" {
		t.Fatalf("once the hashings ended: %+v %v", res, err)
	}
}

// Ensure that a write of a long text gives up with its context while it
// hashes, stores nothing, and leaves the index free to close: a put of
// 30 MB, hashed for 7-9 s with no look at its context, held a stopping
// server's Close past its documented bound (a server operator's review,
// S1). The hashing is held until the write returned and the index closed;
// the oracle is the index reopened, which holds none of the documents.
func TestPutEndsWhileHashing(t *testing.T) {
	long := strings.Repeat("a long text of many words and some numbers 12345, ", cancellableText/40)
	for _, c := range []struct {
		name string
		put  func(ctx context.Context, d *DB) error
	}{
		{"PutBatchContext", func(ctx context.Context, d *DB) error {
			_, err := d.PutBatchContext(ctx, []Doc{{ID: "a", Text: "short", Meta: []byte("m")}, {ID: "long", Text: long}}, nil)
			return err
		}},
		{"PutIfNewContext", func(ctx context.Context, d *DB) error {
			_, err := d.PutIfNewContext(ctx, Doc{ID: "long", Text: long}, nil)
			return err
		}},
		{"PutIfNewBatch", func(ctx context.Context, d *DB) error {
			_, err := d.PutIfNewBatch(ctx, []Doc{{ID: "a", Text: "short"}, {ID: "long", Text: long}}, nil)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, dir, nil)
			ctx, release := holdHashing(t)
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				if err := c.put(ctx, d); !errors.Is(err, context.Canceled) {
					t.Errorf("a write cancelled while it hashed: %v, want context.Canceled", err)
				}
			}()
			select {
			case <-returned:
			case <-time.After(time.Minute):
				t.Fatal("the write waited for its hashing after its context ended")
			}
			closeWithoutWaiting(t, d, "a hashing given up on")
			release()
			wantNoDocuments(t, dir)
		})
	}
}

// closeWithoutWaiting closes d, which must return (with no error) while
// held, a hashing that holdHashing holds, is still held.
func closeWithoutWaiting(t *testing.T, d *DB, held string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Close waited for %s", held)
	}
}

// wantNoDocuments reopens the index in dir and fails the test unless it
// holds no document.
func wantNoDocuments(t *testing.T, dir string) {
	t.Helper()
	d := mustOpen(t, dir, nil)
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("reopened: %d documents (%v), want none", n, err)
	}
}

// Ensure that Close does not wait for the hashing of a write that takes
// no context (Put, PutBatch, PutIfNew, PrepareBatch): it held Close 2.5 s
// for a batch of 45 MB, and PrepareBatch then returned a batch no write
// could take (an embedder's review, E3). The hashing is held (the
// hashTextHook) until Close has returned; the call must end with
// ErrClosed, and the oracle is the index reopened, which holds none of
// the documents.
func TestCloseEndsWritesWhileHashing(t *testing.T) {
	long := strings.Repeat("a long text of many words and some numbers 12345, ", cancellableText/40)
	for _, c := range []struct {
		name string
		put  func(d *DB) error
	}{
		{"Put", func(d *DB) error { return d.Put(Doc{ID: "long", Text: long}, nil) }},
		{"PutBatch", func(d *DB) error {
			_, err := d.PutBatch([]Doc{{ID: "a", Text: "short"}, {ID: "long", Text: long}}, nil)
			return err
		}},
		{"PutIfNew", func(d *DB) error {
			_, err := d.PutIfNew(Doc{ID: "long", Text: long}, nil)
			return err
		}},
		{"PrepareBatch", func(d *DB) error {
			pb, err := d.PrepareBatch([]Doc{{ID: "long", Text: long}}, nil)
			if err == nil {
				_, err = d.PutPrepared(context.Background(), pb)
				return fmt.Errorf("PrepareBatch returned a batch after Close (its write: %v)", err)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, dir, nil)
			held, release := holdHashing(t) // NB: ends once the hashing is held
			returned := make(chan error, 1)
			go func() { returned <- c.put(d) }()
			select {
			case <-held.Done():
			case err := <-returned:
				t.Fatalf("the write returned before its hashing began: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("the write's hashing did not begin on a goroutine of its own")
			}
			closeWithoutWaiting(t, d, "a write's hashing")
			select {
			case err := <-returned:
				if !errors.Is(err, ErrClosed) {
					t.Errorf("a write whose hashing Close ended: %v, want ErrClosed", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the write did not return once Close had")
			}
			release()
			wantNoDocuments(t, dir)
		})
	}
}

// Ensure that a write given up on while it hashed holds its bytes of the
// long hashings' budget until its hashing ends, as a query's does: a
// cancelled large put freed a server's bound on the bytes in flight while
// it hashed on, with nothing bounding such puts but one a core, whatever
// their size (a read-through's R3). The oracle: a query that finds no
// room gives up with its deadline, and answers once the put's hashing
// ended.
func TestAbandonedWritesHoldTheirBytes(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	long := strings.Repeat("a long text of many words and some numbers 12345, ", cancellableText/40)
	if err := d.Put(Doc{ID: "long", Text: long}, nil); err != nil {
		t.Fatal(err)
	}
	d.longBudget = int64(len(long)) + int64(len(long))/2 // one such text, not two
	d.longWork = semaphore.NewWeighted(d.longBudget)
	ctx, release := holdHashing(t)
	if _, err := d.PutBatchContext(ctx, []Doc{{ID: "long2", Text: long + " more"}}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the put given up on: %v", err)
	}
	qctx, qcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer qcancel()
	if _, err := d.Query(qctx, long, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a query while the put given up on hashes on: %v, want its deadline (no room)", err)
	}
	release()
	qctx, qcancel = context.WithTimeout(context.Background(), time.Minute)
	defer qcancel()
	res, err := d.Query(qctx, long, nil)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "long" {
		t.Fatalf("once the put's hashing ended: %+v %v", res, err)
	}
}

// holdHashing holds the first hashing that cancellable starts (the
// hashTextHook) until release is called, and returns a context cancelled
// once that hashing is held: a call given it gives up while it hashes.
// Later hashings pass.
func holdHashing(t *testing.T) (ctx context.Context, release func()) {
	reached, held := make(chan struct{}), make(chan struct{})
	var first sync.Once
	hashTextHook = func() {
		holds := false
		first.Do(func() {
			holds = true
			close(reached)
		})
		if holds {
			<-held
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-reached:
			cancel()
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(func() {
		release()
		cancel()
		hashTextHook = nil
	})
	return ctx, release
}
