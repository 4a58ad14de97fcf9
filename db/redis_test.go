package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/internal/redistest"
	"github.com/lshdb/lshdb/minhash"
	"github.com/redis/go-redis/v9"
)

// The Redis backend's tests run on a local 3-master, 3-replica Redis
// Cluster (internal/redistest), started once for the package by the first
// test that needs it and stopped by TestMain. Without redis-server they
// skip, unless LSHDB_REQUIRE_REDIS=1 (CI): then they fail.

var (
	redisOnce    sync.Once
	redisCluster *redistest.Cluster
	redisDir     string
	redisErrOnce error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if redisCluster != nil {
		redisCluster.Stop()
	}
	if redisDir != "" {
		os.RemoveAll(redisDir)
	}
	os.Exit(code)
}

// redisURL returns the URL of a fresh, empty index on the package's
// cluster, named after the test (and suffix, if any: a test's second
// index), and removes its keys when the test ends.
func redisURL(t testing.TB, suffix ...string) string {
	t.Helper()
	redisOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lshdb-db-redis-")
		if err != nil {
			redisErrOnce = err
			return
		}
		redisDir = dir
		redisCluster, redisErrOnce = redistest.Start(context.Background(), dir)
	})
	switch {
	case errors.Is(redisErrOnce, redistest.ErrNoRedis) && os.Getenv("LSHDB_REQUIRE_REDIS") != "1":
		t.Skipf("%v: the Redis backend's tests skip (LSHDB_REQUIRE_REDIS=1 makes this a failure)", redisErrOnce)
	case redisErrOnce != nil:
		t.Fatal(redisErrOnce)
	}
	u := "redis+cluster://" + strings.Join(redisCluster.Addrs, ",") + "/" + redisName(t, suffix...)
	s, err := rediskv.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Flush(context.Background()); s.Close() })
	return u
}

// redisName is the name of the test's index on Redis (redisURL's).
func redisName(t testing.TB, suffix ...string) string {
	return strings.NewReplacer("/", "-", " ", "-", ":", "-").Replace(t.Name() + strings.Join(suffix, ""))
}

// rawRedis returns a client of the test cluster, for keys a test removes
// by hand, and the name of the test's index (its keys are lshdb:NAME:…).
func rawRedis(t *testing.T) (*redis.ClusterClient, string) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	t.Cleanup(func() { c.Close() })
	return c, redisName(t)
}

// writerOfTwenty opens a writable handle of the index at u with o, closed
// when the test ends, and puts 20 documents through it (before0, …),
// stored before the loss that each text names.
func writerOfTwenty(t *testing.T, u string, o *Options, loss string) *DB {
	w, err := Open(u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for i := range 20 {
		if err := w.Put(Doc{ID: fmt.Sprint("before", i), Text: fmt.Sprint("a document stored before ", loss, ", number ", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// Ensure that random puts, upserts, deletes, queries, Get, Explain,
// Bucket and PutIfNew on a Redis Cluster give exactly the model's answers
// (brute force), as on Pebble, and that Check finds it whole throughout.
func TestRedisModel(t *testing.T) {
	steps := 1500
	if testing.Short() {
		steps = 400
	}
	for i, opts := range []*Options{
		{},
		{Shingle: minhash.ShingleWord, ShingleSize: 2, Threshold: 0.5, Scheme: minhash.SchemeClassic, NumPerm: 64},
		{Storage: StorageSets, Threshold: 0.5, StoreText: true},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			runModel(t, rand.New(rand.NewPCG(uint64(i), 11)), redisURL(t), opts, steps, true)
		})
	}
}

// Ensure that a Redis index keeps its parameters and documents across
// handles: a second handle opened beside the first (no lock) sees the
// first's writes, and refuses options that differ from the stored ones.
func TestRedisReopenAndShare(t *testing.T) {
	u := redisURL(t)
	a, err := Open(u, &Options{Threshold: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Put(Doc{ID: "x", Text: "the quick brown fox jumps over the lazy dog"}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := Open(u, &Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if p := b.Params(); p.Threshold != 0.6 {
		t.Fatalf("second handle's threshold %v, stored 0.6", p.Threshold)
	}
	doc, err := b.Get("x")
	if err != nil || doc.Text != "the quick brown fox jumps over the lazy dog" {
		t.Fatalf("second handle Get = %+v, %v", doc, err)
	}
	res, err := b.Query(context.Background(), "the quick brown fox jumps over the lazy dog", nil)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "x" || res.Matches[0].Jaccard != 1 {
		t.Fatalf("second handle Query = %+v, %v", res, err)
	}
	if _, err := Open(u, &Options{Threshold: 0.9}); !errors.As(err, new(*MismatchError)) || !errors.Is(err, ErrParamsMismatch) {
		t.Fatalf("Open with another threshold: %v, want ErrParamsMismatch", err)
	}
	if _, err := Open(u+"-absent", &Options{MustExist: true}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Open of an absent index with MustExist: %v, want ErrNotExist", err)
	}
	if _, err := Open("redis+cluster://127.0.0.1:7000/a{b}", nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open of a bad URL: %v, want ErrInvalidOptions", err)
	}
}

// Ensure that what the Redis backend does not run says so with
// ErrUnsupported, and changes nothing.
func TestRedisUnsupported(t *testing.T) {
	d, err := Open(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "some text to keep"}, nil); err != nil {
		t.Fatal(err)
	}
	_, upgradeErr := Upgrade(context.Background(), redisURL(t, "-upgrade"), nil)
	for name, err := range map[string]error{
		"Metrics": second(d.Metrics()),
		"Upgrade": upgradeErr,
	} {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s on Redis: %v, want ErrUnsupported", name, err)
		}
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("Count after the refused calls = %d, %v", n, err)
	}
}

// Ensure that Load on Redis (batched puts) stores what Put of each
// document in order would: the last of a repeated id wins, empty texts
// are skipped when asked, and every document is found by its own text.
func TestRedisLoad(t *testing.T) {
	d, err := Open(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]string{}
	var docs []Doc
	for i := range 5000 {
		id := fmt.Sprintf("d%d", rng.IntN(4000))
		text := randomText(rng, nil) + fmt.Sprintf(" number %d", i)
		if i%997 == 0 {
			text = "  "
		} else {
			want[id] = text
		}
		docs = append(docs, Doc{ID: id, Text: text})
	}
	// NB: an empty text skipped by the load leaves the id's earlier
	// version stored, as Put would (it skips it too).
	res, err := d.Load(context.Background(), func(yield func(Doc, error) bool) {
		for _, doc := range docs {
			if !yield(doc, nil) {
				return
			}
		}
	}, &LoadOptions{SkipEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(want)) {
		t.Fatalf("Count = %d, %v; want %d (load %+v)", n, err, len(want), res)
	}
	for id, text := range want {
		doc, err := d.Get(id)
		if err != nil || doc.Text != text {
			t.Fatalf("Get(%q) = %v, %v; want the last text loaded", id, doc, err)
		}
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("Check after the load: %+v, %v", rep, err)
	}
	// A load that would delete what it does not hold is refused, and
	// deletes nothing: on Redis it is not one atomic step.
	if _, err := d.Load(context.Background(), seqOf(docs[:10]), &LoadOptions{DeleteAbsent: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Load with DeleteAbsent on Redis: %v, want ErrInvalidOptions", err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(want)) {
		t.Fatalf("Count after a refused load = %d, %v; want %d", n, err, len(want))
	}
}

// Ensure that a load survives the failover of a master: kill -9 one of
// the three masters part way through a load of 100,000 documents (10,000
// with -short); the load retries through the failover and completes, or
// fails with ErrBackend having acknowledged a prefix (LoadResult.Stored),
// which a second load completes. Either way, after check --repair every
// acknowledged document is stored with its text, and Check finds no
// posting of a missing document.
func TestRedisFailoverDuringLoad(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	c := redistest.Require(t) // a cluster of its own: this test kills a master
	u := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/failover"
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	d, err := Open(u, &Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	rng := rand.New(rand.NewPCG(6, 6))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	docs := make([]Doc, n)
	for i := range docs {
		w := make([]string, 12+rng.IntN(20))
		for j := range w {
			w[j] = words[rng.IntN(len(words))]
		}
		docs[i] = Doc{ID: fmt.Sprintf("f%06d", i), Text: strings.Join(w, " ") + fmt.Sprintf(" %d", i)}
	}
	seqOf := func(ds []Doc) func(func(Doc, error) bool) {
		return func(yield func(Doc, error) bool) {
			for _, doc := range ds {
				if !yield(doc, nil) {
					return
				}
			}
		}
	}
	killed := make(chan error, 1)
	var once sync.Once
	ctx := context.Background()
	start := time.Now()
	res, err := d.Load(ctx, seqOf(docs), &LoadOptions{Progress: func(read int) {
		if read >= n*3/10 {
			once.Do(func() { go func() { killed <- c.Kill(0) }() })
		}
	}})
	if kerr := <-killed; kerr != nil {
		t.Fatal(kerr)
	}
	t.Logf("load through the failover: %v after %v, %d of %d documents acknowledged", err, time.Since(start).Round(time.Millisecond), res.Stored, n)
	acked := n
	if err != nil {
		if !errors.Is(err, ErrBackend) {
			t.Fatalf("the load failed with %v; want ErrBackend", err)
		}
		acked = res.Stored
	}
	// The cluster has failed over (the load waited for it, or we do).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := d.Count(); err == nil {
			if err := d.Put(Doc{ID: "probe", Text: "after the failover"}, nil); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not recover in 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("recovered after %v", time.Since(start).Round(time.Millisecond))
	// The promoted replica is a master with no replica of its own: a synced
	// write there is acknowledged without one, and the handle says so.
	warning := strings.Contains(logged.String(), "has no replica (or its replicas are being synced anew)")
	if !warning {
		t.Fatalf("no warning of a master with no replica after the failover; logged:\n%s", logged.String())
	}
	if err := d.Delete("probe", nil); err != nil {
		t.Fatal(err)
	}
	if acked < n {
		if _, err := d.Load(ctx, seqOf(docs[acked:]), nil); err != nil {
			t.Fatalf("resuming the load: %v", err)
		}
	} else {
		// A batch that the failover cut was sent again as the same write
		// (rediskv.Attempt): it replaced nothing, and left nothing that
		// check finds, the live count right (an operator's review, RD2-2:
		// "657 replaced", the count 2% short and 6,331 orphan records
		// until a repair).
		if res.Replaced != 0 || res.Stored != n {
			t.Errorf("the load through the failover: %+v; want %d stored, none replaced", res, n)
		}
		if rep, err := d.Check(ctx); err != nil || !rep.OK() {
			t.Errorf("Check after the load, before any repair: %+v, %v", rep, err)
		}
		if c, err := d.Count(); err != nil || c != uint64(n) {
			t.Errorf("Count after the load = %d, %v; want %d", c, err, n)
		}
	}
	rr, err := d.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair removed %d orphan records, %d dangling postings; added %d missing postings", rr.Orphans, rr.Dangling, rr.Reposted)
	t.Logf("repaired after %v", time.Since(start).Round(time.Millisecond))
	rep, err := d.Check(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %+v, %v", rep, err)
	}
	t.Logf("checked after %v", time.Since(start).Round(time.Millisecond))
	stored := map[string]string{}
	for doc, err := range d.Scan(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		stored[doc.ID] = doc.Text
	}
	t.Logf("scanned after %v", time.Since(start).Round(time.Millisecond))
	for _, doc := range docs {
		if stored[doc.ID] != doc.Text {
			t.Fatalf("document %s: stored %q, loaded %q", doc.ID, stored[doc.ID], doc.Text)
		}
	}
	if len(stored) != n {
		t.Fatalf("%d documents stored, %d loaded", len(stored), n)
	}
}

// Ensure that opening an index on Redis, creating one, and dropping one
// get through a master's failover, as a load does: each is started while
// the master is down (killed), and must succeed once a replica has taken
// its place. On the code before, each failed at once (a third review of
// Redis, RD3-3: CLUSTERDOWN).
func TestRedisOpenAndDropThroughAFailover(t *testing.T) {
	c := redistest.Require(t) // a cluster of its own: this test kills a master
	base := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/"
	for _, name := range []string{"kept", "dropped"} {
		d, err := Open(base+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: name, Text: "a document of the index " + name}, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Add(3)
	go func() { // a new index, created
		defer wg.Done()
		d, err := Open(base+"fresh", &Options{Logger: logger})
		if err != nil {
			errs[0] = fmt.Errorf("creating: %w", err)
			return
		}
		defer d.Close()
		if !d.Created() {
			errs[0] = errors.New("creating: Created is false")
			return
		}
		if err := d.Put(Doc{ID: "new", Text: "written after the failover"}, nil); err != nil {
			errs[0] = fmt.Errorf("creating: the first put: %w", err)
		}
	}()
	go func() { // an index there, opened to read
		defer wg.Done()
		d, err := Open(base+"kept", &Options{ReadOnly: true, Logger: logger})
		if err != nil {
			errs[1] = fmt.Errorf("opening: %w", err)
			return
		}
		defer d.Close()
		if doc, err := d.Get("kept"); err != nil || doc.Text != "a document of the index kept" {
			errs[1] = fmt.Errorf("opening: get: %v, %v", doc, err)
		}
	}()
	go func() { // an index there, dropped
		defer wg.Done()
		if err := Drop(context.Background(), base+"dropped"); err != nil {
			errs[2] = fmt.Errorf("dropping: %w", err)
		}
	}()
	wg.Wait()
	t.Logf("through the failover in %v", time.Since(start).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, logged.String())
	}
	if !strings.Contains(logged.String(), "trying again") {
		t.Errorf("the opens did not wait for the failover (nothing said of a retry): the test did not test it\nlog:\n%s", logged.String())
	}
	// What each left, read once the cluster is whole again.
	if _, err := Open(base+"dropped", &Options{ReadOnly: true}); !errors.Is(err, ErrNotExist) {
		t.Errorf("the dropped index opens with %v; want ErrNotExist", err)
	}
	d, err := Open(base+"fresh", &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 1 {
		t.Errorf("the created index counts %d, %v; want 1", n, err)
	}
	if doc, err := d.Get("new"); err != nil || doc.Text != "written after the failover" {
		t.Errorf("the created index's document: %v, %v", doc, err)
	}
}

// Ensure that Buckets on Redis gives what it gives on Pebble for the same
// documents written in the same order (the oracle): list counts per band,
// the size histogram, the hottest lists and their samples.
func TestRedisBucketsMatchPebble(t *testing.T) {
	docs := make([]Doc, 0, 1300)
	p, _ := corpus.Testdata("corpora/debian-sample/docs.jsonl")
	sample, err := corpus.Load(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sample {
		docs = append(docs, Doc{ID: d.ID, Text: d.Text})
	}
	var got [2]*DB
	for i, where := range []string{t.TempDir(), redisURL(t)} {
		d, err := Open(where, &Options{Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for j := 0; j < len(docs); j += 500 {
			if _, err := d.PutBatch(docs[j:min(j+500, len(docs))], &WriteOptions{SkipEmpty: true}); err != nil {
				t.Fatal(err)
			}
		}
		got[i] = d
	}
	ctx := context.Background()
	for _, c := range []struct{ band, top int }{{-1, 10}, {3, 4}, {0, 0}} {
		a, err := got[0].Buckets(ctx, c.band, c.top)
		if err != nil {
			t.Fatal(err)
		}
		b, err := got[1].Buckets(ctx, c.band, c.top)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("Buckets(%d, %d):\nPebble %+v\n Redis %+v", c.band, c.top, a, b)
		}
	}
}

// Ensure that Stats on Redis says what it says on Pebble for the same
// documents written in the same order (the oracle): documents, recall,
// posting lists and their sizes once Pebble's emptied lists are purged
// (Redis deletes a set with its last member: its PurgeEmptyLists finds
// none), what awaits expiry; and that the memory by kind it gives in place
// of bytes on disk is there for every kind, at least the record bytes
// Pebble stores for the documents, and within what the masters use.
func TestRedisStatsMatchPebble(t *testing.T) {
	p, _ := corpus.Testdata("corpora/debian-sample/docs.jsonl")
	sample, err := corpus.Load(p, 400)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var st [2]*Stats
	var purged [2]int
	for i, where := range []string{t.TempDir(), redisURL(t)} {
		d, err := Open(where, &Options{Threshold: 0.5, keepEmptied: true})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for j, s := range sample {
			wo := &WriteOptions{SkipEmpty: true}
			if j%10 == 0 {
				wo.TTL = time.Hour
			}
			if _, err := d.PutBatch([]Doc{{ID: s.ID, Text: s.Text}}, wo); err != nil {
				t.Fatal(err)
			}
		}
		for j := 0; j < len(sample); j += 7 {
			if err := d.Delete(sample[j].ID, nil); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		if purged[i], err = d.PurgeEmptyLists(ctx); err != nil {
			t.Fatal(err)
		}
		if st[i], err = d.Stats(ctx, 5); err != nil {
			t.Fatal(err)
		}
	}
	if purged[0] == 0 || purged[1] != 0 {
		t.Fatalf("PurgeEmptyLists purged %d lists on Pebble (want some), %d on Redis (want none)", purged[0], purged[1])
	}
	a, b := st[0], st[1]
	if a.Docs != b.Docs || a.Docs == 0 || !reflect.DeepEqual(a.Params, b.Params) || a.ExpectedRecall != b.ExpectedRecall ||
		!reflect.DeepEqual(a.Recall, b.Recall) || !reflect.DeepEqual(a.Buckets, b.Buckets) ||
		a.Expired != b.Expired || a.Expiring != b.Expiring || a.Expiring == 0 {
		t.Fatalf("Stats:\nPebble %+v %+v\n Redis %+v %+v", a, a.Buckets, b, b.Buckets)
	}
	if b.DiskBytes != 0 || len(b.TableBytes) != 0 {
		t.Fatalf("Redis Stats has disk bytes %d, tables %v", b.DiskBytes, b.TableBytes)
	}
	var total uint64
	for _, kind := range []string{"docs", "ids", "postings", "expiry", "manifest+counters"} {
		if b.StoredBytes[kind] == 0 {
			t.Fatalf("Redis Stats: no memory for %s: %v", kind, b.StoredBytes)
		}
		total += b.StoredBytes[kind]
	}
	if b.StoredBytes["docs"] < a.StoredBytes["docs"] {
		t.Fatalf("Redis holds the documents in %d bytes, fewer than their records' %d", b.StoredBytes["docs"], a.StoredBytes["docs"])
	}
	s, err := rediskv.Open(ctx, redisURL(t, "-probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	used, err := s.UsedMemory(ctx)
	if err != nil || total > used {
		t.Fatalf("the index's keys take %d bytes, the masters use %d (%v)", total, used, err)
	}
	t.Logf("%d documents: Redis memory by kind %v (%d B/doc), Pebble stored bytes %v", b.Docs, b.StoredBytes, total/b.Docs, a.StoredBytes)
}

// Ensure that Drop deletes an index and nothing else: on Redis every key
// of its name (another index on the cluster is untouched), on Pebble its
// directory; and that it refuses what is not an index, leaving it as it
// was.
func TestDrop(t *testing.T) {
	ctx := context.Background()
	put := func(where string) {
		d, err := Open(where, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: "a", Text: "some text to keep for a while"}, &WriteOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir() + "/index"
	put(dir)
	if err := Drop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the directory after Drop: %v", err)
	}
	if err := Drop(ctx, dir); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop of a missing index: %v, want ErrNotExist", err)
	}
	// A Drop killed after its rename left the index as dir.dropped-N (its
	// texts on disk for good): the next Drop of dir removes it and
	// finishes; a tomb whose lock is held (a Drop running) and names that
	// are not dir's tombs stay.
	killed := t.TempDir() + "/killed"
	put(killed)
	if err := os.Rename(killed, killed+".dropped-123"); err != nil {
		t.Fatal(err)
	}
	put(killed + ".dropped-456")
	running := mustOpen(t, killed+".dropped-456", nil)
	for _, keep := range []string{killed + ".dropped-x1", killed + "x.dropped-7"} {
		if err := os.Mkdir(keep, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Drop(ctx, killed); err != nil {
		t.Fatalf("Drop after a killed Drop: %v", err)
	}
	if _, err := os.Stat(killed + ".dropped-123"); !os.IsNotExist(err) {
		t.Errorf("the killed Drop's directory is left: %v", err)
	}
	for _, keep := range []string{killed + ".dropped-456", killed + ".dropped-x1", killed + "x.dropped-7"} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
	running.Close()
	if err := Drop(ctx, killed); err != nil {
		t.Fatalf("Drop after the running one ended: %v", err)
	}
	if _, err := os.Stat(killed + ".dropped-456"); !os.IsNotExist(err) {
		t.Errorf("the ended Drop's directory is left: %v", err)
	}
	if err := Drop(ctx, killed); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop with nothing left: %v, want ErrNotExist", err)
	}
	// A directory of a tomb's name that holds a file no index has is
	// not Drop's to remove.
	foreign := killed + ".dropped-789"
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign+"/notes.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, killed); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop beside a foreign directory: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(foreign + "/notes.txt"); err != nil {
		t.Errorf("a foreign directory of a tomb's name was removed: %v", err)
	}
	// Killed after its rename through a link: the link left dangling
	// names the tomb's index; the next Drop of the link removes both.
	target, named := t.TempDir()+"/target", t.TempDir()+"/named"
	put(target)
	if err := os.Symlink(target, named); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(target, target+".dropped-5"); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, named); err != nil {
		t.Fatalf("Drop of a link a killed Drop left dangling: %v", err)
	}
	for _, p := range []string{target + ".dropped-5", named} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", p, err)
		}
	}
	// Through a symbolic link (given with a trailing slash): the index it
	// names goes, then the link (renaming the link alone left every
	// document on disk).
	real, link := t.TempDir()+"/real", t.TempDir()+"/link"
	put(real)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, link+"/"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{real, link} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s after a Drop through the link: %v", p, err)
		}
	}
	if left, _ := filepath.Glob(real + "*"); len(left) > 0 {
		t.Errorf("Drop through a link left %v", left)
	}
	other := t.TempDir()
	if err := os.WriteFile(other+"/notes.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, other); !errors.Is(err, ErrNotIndex) {
		t.Fatalf("Drop of a directory that is no index: %v, want ErrNotIndex", err)
	}
	if b, err := os.ReadFile(other + "/notes.txt"); err != nil || string(b) != "mine" {
		t.Fatalf("a refused Drop changed the directory: %q, %v", b, err)
	}
	// An index directory that also holds a user's file: refused, the
	// index and the file kept; without the file it drops.
	mixed := t.TempDir() + "/mixed"
	put(mixed)
	if err := os.WriteFile(mixed+"/corpus.jsonl", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, mixed); !errors.Is(err, ErrNotIndex) || !strings.Contains(err.Error(), `"corpus.jsonl"`) {
		t.Fatalf("Drop of an index beside a user's file: %v, want ErrNotIndex naming the file", err)
	}
	if b, err := os.ReadFile(mixed + "/corpus.jsonl"); err != nil || string(b) != "mine" {
		t.Fatalf("a refused Drop changed the user's file: %q, %v", b, err)
	}
	d := mustOpen(t, mixed, &Options{ReadOnly: true})
	if ok, err := d.Has("a"); !ok || err != nil {
		t.Fatalf("the index after a refused Drop: Has = %v, %v", ok, err)
	}
	d.Close()
	if err := os.Remove(mixed + "/corpus.jsonl"); err != nil {
		t.Fatal(err)
	}
	// NB: what a file browser leaves does not hold a drop back.
	if err := os.WriteFile(mixed+"/.DS_Store", []byte("finder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, mixed); err != nil {
		t.Fatalf("Drop once the user's file is out: %v", err)
	}
	held := mustOpen(t, t.TempDir()+"/held", nil)
	defer held.Close()
	if err := Drop(ctx, held.dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Drop of an index open here: %v, want ErrLocked", err)
	}

	u, keep := redisURL(t), redisURL(t, "-kept")
	put(u)
	put(keep)
	if err := Drop(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(u, &Options{MustExist: true}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Open after Drop: %v, want ErrNotExist", err)
	}
	for where, want := range map[string]uint64{u: 0, keep: 1} {
		s, err := rediskv.Open(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := s.MemoryUsage(ctx)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for _, n := range mem {
			total += n
		}
		if (total > 0) != (want > 0) {
			t.Fatalf("%s after Drop holds keys of %d bytes (%v)", where, total, mem)
		}
	}
	if err := Drop(ctx, u); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop of a dropped index: %v, want ErrNotExist", err)
	}

	// A process that has the index open while it is dropped, and puts
	// after, is refused at once (the counters' mark is gone), and writes
	// nothing. Keys left with no manifest (an older lshdb's put; one
	// set here by hand): the next Drop removes them.
	w := redisURL(t, "-writer")
	put(w)
	d, err := Open(w, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := Drop(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "late", Text: "a write after the drop, by a handle opened before it"}, nil); !errors.Is(err, ErrNotExist) {
		t.Fatalf("a put after the drop, by a handle opened before it: %v, want ErrNotExist", err)
	}
	if err := Drop(ctx, w); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop after the refused put: %v, want ErrNotExist (nothing written)", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer c.Close()
	name := w[strings.LastIndex(w, "/")+1:]
	if err := c.Set(ctx, "lshdb:"+name+":d:7", "a record left by an older lshdb", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := Drop(ctx, w); err != nil {
		t.Fatalf("Drop of the leftovers: %v", err)
	}
	if err := Drop(ctx, w); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Drop once the leftovers are gone: %v, want ErrNotExist", err)
	}
	// A glob character in a name would make its keys' patterns match
	// other names' keys (v[12]: v1's and v2's): refused.
	for _, name := range []string{"v[12]", "v*", "v%3F", `v\x`} {
		bad := strings.Replace(w, "/"+strings.TrimPrefix(w[strings.LastIndex(w, "/"):], "/"), "/"+name, 1)
		if _, err := Open(bad, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Open of the name %q: %v, want ErrInvalidOptions", name, err)
		}
	}
	// Pebble: nothing is left beside the dropped directory.
	if names, _ := os.ReadDir(filepath.Dir(dir)); len(names) != 0 {
		t.Fatalf("Drop left %v beside the index", names)
	}
}

// Ensure that a batch whose write fails part way on Redis, as a failover
// cuts it, and is written again (Load's retry, and lshdb insert's, a
// PutPrepared of the same batch) is sent again as the same write: after
// a failure at each of Apply's steps, and in the wait for the replicas
// once the write was whole, the index holds what the model says (every
// id's last text, the live count), check finds nothing, and the result
// counts what the batch replaced once. Before, the second try took the
// first's records for documents it replaced: it said so, the live count
// fell short by them, and records no id names failed check (RD2-2).
func TestRedisBatchSentAgainAfterAFailure(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"load", "prepared", "load-replacements", "prepared-replacements"} {
		fresh := 30
		if strings.HasSuffix(how, "-replacements") {
			// NB: a batch of replacements alone counts nothing: sent
			// again, it counted every put as new (a read-through, RT3-1).
			fresh = 0
		}
		for step := int32(1); step <= 7; step++ {
			t.Run(fmt.Sprint(how, "-", step), func(t *testing.T) {
				d, err := Open(redisURL(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				batch, _, model := replacingBatch(t, d, fresh)
				var restore func()
				if step <= 6 {
					restore = rediskv.InjectFailover(step)
				} else {
					// 7: the replicas' wait fails once, the write whole.
					restore = injectSyncFailure()
				}
				defer restore()
				var stored, replaced int
				switch strings.TrimSuffix(how, "-replacements") {
				case "load":
					res, err := d.Load(ctx, seqOf(batch), nil)
					if err != nil {
						t.Fatal(err)
					}
					stored, replaced = res.Stored, res.Replaced
				default:
					pb, err := d.PrepareBatch(batch, nil)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := d.PutPrepared(ctx, pb); !Transient(err) {
						t.Fatalf("the first try: %v; want the injected failure, a transient one", err)
					}
					res, err := d.PutPrepared(ctx, pb)
					if err != nil {
						t.Fatal(err)
					}
					stored, replaced = res.Stored, res.Replaced
				}
				restore()
				if stored != 20+fresh || replaced != 20 {
					t.Errorf("stored %d, replaced %d; want %d and 20", stored, replaced, 20+fresh)
				}
				checkModel(t, d, model)
				// Each new text finds its own id alone at J = 1 (no record
				// of a try left beside it, no old version).
				for _, doc := range batch[:5] {
					res, err := d.Query(ctx, doc.Text, &QueryOptions{Threshold: 0.99})
					if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != doc.ID {
						t.Fatalf("Query(%s's text) = %+v, %v", doc.ID, res, err)
					}
				}
			})
		}
	}
}

// Ensure that the marks a write leaves to be counted once
// (countedKey, kept 10 minutes for a write sent again) do not pile up
// from writes that are over: each goes with the next write's count. The
// oracle is the keys on the cluster.
func TestRedisCountMarksOfFinishedWritesGo(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 30 {
		if err := d.Put(Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprint("document number ", i, " of the marks' test")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if err := d.Delete(fmt.Sprint("d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Load(context.Background(), seqOf([]Doc{{ID: "l", Text: "a document loaded last"}}), nil); err != nil {
		t.Fatal(err)
	}
	c, name := rawRedis(t)
	marks, err := redistest.Keys(context.Background(), c, "{lshdb:"+name+"}:counted:*")
	if err != nil {
		t.Fatal(err)
	}
	// NB: the last write's mark waits for a next write.
	if len(marks) > 1 {
		t.Fatalf("%d count marks left after 36 writes that are over: %v", len(marks), marks)
	}
	// Close deletes it, and the swaps that a last write of replacements
	// keeps until it is over (RT4-1).
	if err := d.Put(Doc{ID: "d10", Text: "document number 10, replaced last"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	marks, err = redistest.Keys(context.Background(), c, "{lshdb:"+name+"}:counted:*")
	if err != nil {
		t.Fatal(err)
	}
	swaps, err := redistest.Keys(context.Background(), c, "*lshdb:"+name+":swaps:*")
	if err != nil || len(marks)+len(swaps) > 0 {
		t.Fatalf("after Close: %v and %v left, %v", marks, swaps, err)
	}
}

// Ensure that a batch sent again after a failover lost some of its keys
// (a master's last writes, which its replica had not received) finishes
// as one write: the index holds what the model says, the live count is
// right, and check finds nothing. The write is whole when its wait for
// the replicas fails (as a failover's does); then, emulated: for 5 ids
// the swap lost (the id names its old record again, whose delete was
// kept), and for 5 others the old record's delete lost (the record back,
// marked by the write). Before, the second left 5 records no id names
// (a Redis review, RD3-1: 883 too many and 208 problems after two
// failovers).
func TestRedisResendAfterAFailoverLostWrites(t *testing.T) {
	ctx := context.Background()
	d, err := Open(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, name := rawRedis(t)
	batch, replaced, model := replacingBatch(t, d, 30)
	oldNums, err := d.rkv.DocNums(ctx, replaced)
	if err != nil {
		t.Fatal(err)
	}
	oldRecs := make([]map[string]string, len(replaced))
	for i, n := range oldNums {
		if oldRecs[i], err = c.HGetAll(ctx, fmt.Sprintf("lshdb:%s:d:%d", name, n)).Result(); err != nil || len(oldRecs[i]) == 0 {
			t.Fatalf("the old record of %s: %v, %v", replaced[i], oldRecs[i], err)
		}
	}
	lost := func() {
		// The write's swaps, kept until it is over (before, deleted
		// with its end: none is found then).
		swaps, err := redistest.Keys(ctx, c, "*lshdb:"+name+":swaps:*")
		if err != nil {
			t.Error(err)
			return
		}
		// NB: the token from the write's count mark, which a write
		// kept before too.
		marks, err := redistest.Keys(ctx, c, "{lshdb:"+name+"}:counted:*")
		if err != nil || len(marks) != 1 {
			// NB: the put's before went with the load's count.
			t.Errorf("the write's count mark: %v, %v; want one", marks, err)
			return
		}
		token := marks[0][strings.LastIndex(marks[0], ":")+1:]
		for i, id := range replaced[:10] {
			idKey := fmt.Sprintf("lshdb:%s:i:%s", name, id)
			if i < 5 {
				// The swap lost: the id names its old record, and the
				// swaps key holds nothing of it.
				if err := c.Set(ctx, idKey, oldNums[i], 0).Err(); err != nil {
					t.Error(err)
				}
				for _, k := range swaps {
					c.HDel(ctx, k, idKey)
				}
				continue
			}
			// The old record's delete lost: back, marked by the write.
			fields := []any{"x", token}
			for f, v := range oldRecs[i] {
				fields = append(fields, f, v)
			}
			if err := c.HSet(ctx, fmt.Sprintf("lshdb:%s:d:%d", name, oldNums[i]), fields...).Err(); err != nil {
				t.Error(err)
			}
		}
	}
	syncFailHook = lost
	restore := injectSyncFailure()
	defer func() { syncFailHook = nil }()
	res, err := d.Load(ctx, seqOf(batch), nil)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 50 || res.Replaced != 20 {
		t.Errorf("stored %d, replaced %d; want 50 and 20", res.Stored, res.Replaced)
	}
	checkModel(t, d, model)
}

// replacingBatch puts 40 documents, old0 … old39, into d, and returns a
// batch that replaces every other one (the ids replaced) and adds fresh
// new ones, and the model of the index once the batch is written: each
// id's text.
func replacingBatch(t *testing.T, d *DB, fresh int) (batch []Doc, replaced []string, model map[string]string) {
	t.Helper()
	text := func(id string, round int) string {
		return fmt.Sprintf("document %s of round %d says words of its own: %s %d %s", id, round, strings.Repeat(id+" ", 3), round*7, id)
	}
	model = map[string]string{}
	var old []Doc
	for i := range 40 {
		id := fmt.Sprint("old", i)
		old = append(old, Doc{ID: id, Text: text(id, 1)})
		model[id] = text(id, 1)
	}
	if _, err := d.PutBatch(old, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		id := fmt.Sprint("old", 2*i)
		replaced = append(replaced, id)
		batch = append(batch, Doc{ID: id, Text: text(id, 2)})
	}
	for i := range fresh {
		id := fmt.Sprint("new", i)
		batch = append(batch, Doc{ID: id, Text: text(id, 2)})
	}
	for _, doc := range batch {
		model[doc.ID] = doc.Text
	}
	return batch, replaced, model
}

// checkModel checks d against model (each id's text): its live count,
// that Check finds nothing, and each id's stored text.
func checkModel(t *testing.T, d *DB, model map[string]string) {
	t.Helper()
	if n, err := d.Count(); err != nil || n != uint64(len(model)) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(model))
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Errorf("Check: %+v, %v", rep, err)
	}
	for id, want := range model {
		if got, err := d.Get(id); err != nil || got.Text != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", id, got.Text, err, want)
		}
	}
}

// injectSyncFailure makes the next wait for replicas fail, once.
func injectSyncFailure() (restore func()) {
	failSyncOnce.Store(true)
	return func() { failSyncOnce.Store(false) }
}

// Ensure that what a reader sees while an id is being replaced on Redis
// (no snapshot: both versions' records and postings are there, as after a
// crash between Apply's steps) never shows the id twice: a query finds it
// once, at its new text's Jaccard; QueryID leaves out both its versions;
// PutIfNew does not take its old version for a duplicate of it; Pairs and
// Clusters pair it once. The oracle is exact Jaccard over the new texts.
func TestRedisReplaceInFlight(t *testing.T) {
	d, err := Open(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const (
		a    = "the quick brown fox jumps over the lazy dog near the old river bank"
		xOld = "the quick brown fox jumps over the lazy dog near the old river bank!"
		xNew = "the quick brown fox jumps over the lazy dog near the old river bank?!"
	)
	// z's old version is a near-duplicate of a; its new one is a
	// candidate of a (8 bands shared) below the threshold (Jaccard 0.447):
	// once a query has read the new version, the old one must not answer
	// for z.
	const (
		zOld = "the quick brown fox jumps over the lazy dog near the old river bank."
		zNew = "the quick brown fox under over the lazy new near the fast river bank"
	)
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: a}, {ID: "x", Text: xOld}, {ID: "z", Text: zOld}}, nil); err != nil {
		t.Fatal(err)
	}
	restore := rediskv.InjectCrash(2) // the new versions' records, postings and ids written; the old ones not retired
	if _, err := d.PutBatch([]Doc{{ID: "x", Text: xNew}, {ID: "z", Text: zNew}}, nil); err == nil {
		t.Fatal("the injected crash did not stop the put")
	}
	restore()
	if rep, err := d.Check(ctx); err != nil || rep.OK() {
		t.Fatalf("Check should report the old version left behind: %+v, %v", rep, err)
	}
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	jac := func(s, u string) float64 {
		p, _ := h.Document(nil, nil, s)
		q, _ := h.Document(nil, nil, u)
		return minhash.Jaccard(p, q)
	}
	if j := jac(a, zNew); j >= 0.5 {
		t.Fatalf("z's new text is at %v of a: the test needs it below 0.5", j)
	}
	res, err := d.Query(ctx, a, &QueryOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 2 || res.Matches[0].ID != "a" || res.Matches[1].ID != "x" || res.Matches[1].Jaccard != jac(a, xNew) {
		t.Fatalf("Query finds %+v; want a, then x once at %v (and not z, whose new text is below the threshold)", res.Matches, jac(a, xNew))
	}
	// At a threshold below z's new text, z is found once, by its new text
	// (which shows that its new version is a candidate of a).
	res, err = d.Query(ctx, a, &QueryOptions{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	zs := 0
	for _, m := range res.Matches {
		if m.ID == "z" {
			zs++
			if m.Jaccard != jac(a, zNew) {
				t.Fatalf("z found at %v, its new text is at %v", m.Jaccard, jac(a, zNew))
			}
		}
	}
	if zs != 1 {
		t.Fatalf("z found %d times at threshold 0.01: %+v", zs, res.Matches)
	}
	res, err = d.QueryID(ctx, "x", &QueryOptions{Threshold: 0.5})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "a" {
		t.Fatalf("QueryID(x) = %+v, %v; want a alone", res, err)
	}
	// Bucket lists x once in each of a's buckets, and in some of them.
	_, sigA := h.Document(nil, nil, a)
	keys, err := d.bucketKeys(nil, sigA)
	if err != nil {
		t.Fatal(err)
	}
	withX := 0
	for band, k := range keys {
		ids, err := d.Bucket(band, k)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, "x") {
			withX++
		}
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
			t.Fatalf("Bucket(%d, %x) = %v: an id twice", band, k, ids)
		}
	}
	if withX == 0 {
		t.Fatal("x is in none of a's buckets")
	}
	if m, err := d.PutIfNew(Doc{ID: "x", Text: xOld + " again"}, nil); err != nil || m == nil || m.ID != "a" {
		t.Fatalf("PutIfNew(x) = %+v, %v; want a as its duplicate, not x", m, err)
	}
	var pairs []Pair
	for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	if len(pairs) != 1 || pairs[0] != (Pair{A: "a", B: "x", Jaccard: jac(a, xNew)}) {
		t.Fatalf("Pairs = %+v; want (a, x) once at %v", pairs, jac(a, xNew))
	}
	// NB: refused as on Pebble, though Redis's pairs use no such bound.
	for _, err := range d.Pairs(ctx, &PairsOptions{Memory: -1}) {
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Pairs with a negative memory: %v, want ErrInvalidOptions", err)
		}
	}
	cs, err := d.Clusters(ctx, &PairsOptions{Threshold: 0.5})
	if err != nil || len(cs) != 1 || !reflect.DeepEqual(cs[0].IDs, []string{"a", "x"}) {
		t.Fatalf("Clusters = %+v, %v; want one of a and x", cs, err)
	}
	if _, err := d.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after Repair: %+v, %v", rep, err)
	}
}

// Ensure that Backup of a Redis index makes a Pebble index that holds
// what the Redis one holds (the oracle: the source, read through the same
// calls): the same parameters, documents (text, metadata, expiry pending),
// query answers and pairs; that the copy checks clean; and that a
// directory that exists, or a cancelled context, leaves nothing behind.
func TestRedisBackup(t *testing.T) {
	d, err := Open(redisURL(t), &Options{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	p, _ := corpus.Testdata("corpora/debian-sample/docs.jsonl")
	sample, err := corpus.Load(p, 300)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sample {
		wo := &WriteOptions{SkipEmpty: true}
		if i%9 == 0 {
			wo.TTL = time.Hour
		}
		doc := Doc{ID: s.ID, Text: s.Text}
		if i%5 == 0 {
			doc.Meta = []byte(fmt.Sprintf(`{"n":%d}`, i))
		}
		if _, err := d.PutBatch([]Doc{doc}, wo); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(sample); i += 11 {
		if err := d.Delete(sample[i].ID, &WriteOptions{IgnoreMissing: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(Doc{ID: sample[1].ID, Text: sample[2].Text + " (replaced)"}, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := d.Backup(ctx, dir); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Backup into a directory that exists: %v, want ErrInvalidOptions", err)
	}
	// Cancelled once the copy has started (its first progress report):
	// the partial copy goes.
	cancelled, cancel := context.WithCancel(ctx)
	reports := 0
	cancelled = WithProgress(cancelled, func(Progress) { reports++; cancel() })
	if err := d.Backup(cancelled, dir+"/never"); !errors.Is(err, context.Canceled) || reports == 0 {
		t.Fatalf("Backup cancelled as it started: %v (%d progress reports)", err, reports)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("a failed Backup left %d entries", len(names))
	}
	to := dir + "/copy"
	if err := d.Backup(ctx, to); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Fatalf("Backup left %d entries beside its copy", len(names))
	}
	c, err := Open(to, &Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !reflect.DeepEqual(c.Params(), d.Params()) {
		t.Fatalf("the copy's parameters %+v, the index's %+v", c.Params(), d.Params())
	}
	// NB: a backup is an index of its own, which names the Redis index
	// as its origin, but no state of it (there is no instant of it).
	ci, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if c.Instance() == d.Instance() || d.Instance() == "" || c.Instance() == "" || ci.Origin == nil || *ci.Origin != (Origin{Instance: d.Instance()}) {
		t.Fatalf("the copy's instance %q (origin %+v), the index's %q: want another, naming the index as its origin", c.Instance(), ci.Origin, d.Instance())
	}
	if rep, err := c.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check of the copy: %+v, %v", rep, err)
	}
	n, _ := d.Count()
	if m, err := c.Count(); err != nil || m != n {
		t.Fatalf("the copy counts %d documents (%v), the index %d", m, err, n)
	}
	// A verified copy is checked before it gets its name (TestBackupVerify).
	verified, hooked := dir+"/verified", false
	backupVerifyHook = func(tmp string) {
		_, err := os.Stat(verified)
		_, terr := os.Stat(tmp)
		hooked = err != nil && terr == nil
	}
	err = d.BackupWith(ctx, verified, BackupOptions{Verify: true})
	backupVerifyHook = nil
	if err != nil || !hooked {
		t.Fatalf("a verified backup: %v (checked in its temporary directory, before its name: %v)", err, hooked)
	}
	if v, err := Open(verified, &Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	} else if m, err := v.Count(); err != nil || m != n {
		t.Fatalf("the verified copy counts %d documents (%v), the index %d", m, err, n)
	} else {
		v.Close()
	}
	var ids []string
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, doc.ID)
		got, err := c.Get(doc.ID)
		if err != nil || got.Text != doc.Text || !bytes.Equal(got.Meta, doc.Meta) {
			t.Fatalf("Get(%s) of the copy = %+v, %v; want %+v", doc.ID, got, err, doc)
		}
	}
	if len(ids) != int(n) {
		t.Fatalf("All yields %d documents, Count %d", len(ids), n)
	}
	for _, id := range ids[:40] {
		a, err1 := d.QueryID(ctx, id, nil)
		b, err2 := c.QueryID(ctx, id, nil)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a.Matches, b.Matches) {
			t.Fatalf("QueryID(%s): index %+v (%v), copy %+v (%v)", id, a, err1, b, err2)
		}
	}
	pairs := func(x *DB) []Pair {
		var ps []Pair
		for p, err := range x.Pairs(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		slices.SortFunc(ps, func(a, b Pair) int { return strings.Compare(a.A+"\x00"+a.B, b.A+"\x00"+b.B) })
		return ps
	}
	if a, b := pairs(d), pairs(c); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("Pairs: index %d, copy %d", len(a), len(b))
	}
	sd, err1 := d.Stats(ctx, 0)
	sc, err2 := c.Stats(ctx, 0)
	if err1 != nil || err2 != nil || sd.Expiring == 0 || sd.Expiring != sc.Expiring {
		t.Fatalf("expiring: index %d (%v), copy %d (%v)", sd.Expiring, err1, sc.Expiring, err2)
	}
}

// Ensure that Created says which Open made the index, on both backends:
// the first of two opens of a new index, not the second, nor a reopen.
func TestCreated(t *testing.T) {
	for _, where := range []string{filepath.Join(t.TempDir(), "idx"), redisURL(t)} {
		first, err := Open(where, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !first.Created() {
			t.Fatalf("%s: the first Open did not create it", where)
		}
		if redisIdx := IsRedisURL(where); redisIdx {
			second, err := Open(where, nil)
			if err != nil {
				t.Fatal(err)
			}
			if second.Created() {
				t.Fatalf("%s: a second Open says it created the index", where)
			}
			second.Close()
		}
		first.Close()
		again, err := Open(where, nil)
		if err != nil {
			t.Fatal(err)
		}
		if again.Created() {
			t.Fatalf("%s: a reopen says it created the index", where)
		}
		again.Close()
	}
}

// Ensure that a --db meant as a URL but not an index URL is refused
// (ErrInvalidOptions) and makes no directory, that the scheme is read in
// any case, and that redis:// naming a node of a cluster says to use
// redis+cluster://.
func TestRedisURLMistakes(t *testing.T) {
	u := redisURL(t)
	t.Chdir(t.TempDir())
	for _, bad := range []string{"rediss://127.0.0.1:7000/a", "redis-cluster://127.0.0.1:7000/a", "redis+cluster:/127.0.0.1:7000/a",
		"redis+cluster//127.0.0.1:7000/a", "http://127.0.0.1:7000/a", "redis:127.0.0.1/a"} {
		if _, err := Open(bad, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%q): %v, want ErrInvalidOptions", bad, err)
		}
	}
	if names, _ := os.ReadDir("."); len(names) != 0 {
		t.Fatalf("refused URLs made %v", names)
	}
	upper := "REDIS+CLUSTER" + strings.TrimPrefix(u, "redis+cluster")
	d, err := Open(upper, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", upper, err)
	}
	d.Close()
	node := "redis://" + redisCluster.Addrs[0] + "/a"
	if _, err := Open(node, nil); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "redis+cluster://") {
		t.Fatalf("Open(%s) of a cluster node: %v, want ErrInvalidOptions naming redis+cluster://", node, err)
	}
}

// Ensure that an Open whose first try created the index, its answer lost
// (or its manifest's copies not made), takes the index for created when a
// later try finds its own manifest there: it opened it as another
// process's, Created false, and a command that failed kept the empty
// index it had made (a read-through, RT5-1). The oracle: Created, and a
// second Open, which creates nothing.
func TestRedisOpenCreatedAfterALostAnswer(t *testing.T) {
	addr := standaloneRedis(t)
	lost := 0
	openHook = func(step string) error {
		if step == "created" && lost == 0 {
			lost++
			return fmt.Errorf("%w: i/o timeout (a test's: the answer of an applied create lost)", ErrBackend)
		}
		return nil
	}
	defer func() { openHook = nil }()
	var logged syncBuffer
	d, err := Open("redis://"+addr+"/x", &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Created() || lost != 1 || !strings.Contains(logged.String(), "trying again") {
		t.Errorf("Created %v after a create whose answer was lost (%d lost)\nlog: %s", d.Created(), lost, logged.String())
	}
	d.Close()
	d, err = Open("redis://"+addr+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Created() {
		t.Error("a second Open created the index again")
	}
}

// Ensure that an Open that registered as a writer, its server then gone
// for good, fails with ErrBackend and says that its registration may stay:
// it panicked (a nil store's Unregister), and a URL no node of which
// answered any more was tried again for a minute (a read-through, RT5-2).
func TestRedisOpenRegisteredThenServerGone(t *testing.T) {
	addr, kill := killableRedis(t)
	u := "redis://" + addr + "/x"
	openHook = func(step string) error {
		if step == "registered" {
			kill()
		}
		return nil
	}
	defer func() { openHook = nil }()
	var logged syncBuffer
	start := time.Now()
	_, err := Open(u, &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if !errors.Is(err, ErrBackend) {
		t.Errorf("Open after its server went: %v; want ErrBackend", err)
	}
	if !strings.Contains(logged.String(), "could not take back its registration") {
		t.Errorf("nothing said of the registration left:\n%s", logged.String())
	}
	t.Logf("failed in %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// Ensure that Drop tries again a drop that failed as a failover makes
// one fail, of an index and of the keys an index left without its
// manifest, and that a try whose keys were deleted, its answer lost, is
// not then said to have found nothing (ErrNotExist): the index is gone
// either way (read back). Drop's retry was untested, and the leftovers'
// said ErrNotExist after it had deleted them (a read-through, RT5-4).
func TestRedisDropTriesAgain(t *testing.T) {
	addr := standaloneRedis(t)
	for _, leftovers := range []bool{false, true} {
		u := fmt.Sprintf("redis://%s/drop%v", addr, leftovers)
		d, err := Open(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: "a", Text: "a document of an index about to be dropped"}, nil); err != nil {
			t.Fatal(err)
		}
		d.Close()
		if leftovers {
			// NB: the manifest and its copies gone, the other keys left
			// (a drop cut after its first step): Drop deletes them.
			c := redis.NewClient(&redis.Options{Addr: addr})
			if err := c.Del(context.Background(), rediskv.ManifestKeys(fmt.Sprintf("drop%v", leftovers))...).Err(); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if _, err := Open(u, &Options{ReadOnly: true}); !errors.Is(err, errNoManifest) {
				t.Fatalf("the index without its manifest opens with %v; want its leftovers found", err)
			}
		}
		tries := 0
		dropHook = func(s *rediskv.Store) error {
			tries++
			if tries == 1 {
				// NB: the keys deleted, the answer lost.
				if _, err := s.Flush(context.Background()); err != nil {
					return err
				}
				return fmt.Errorf("%w: i/o timeout (a test's: the answer of a drop lost)", ErrBackend)
			}
			return nil
		}
		err = Drop(context.Background(), u)
		dropHook = nil
		if err != nil || tries != 2 {
			t.Errorf("leftovers %v: Drop: %v after %d tries; want nil after 2", leftovers, err, tries)
		}
		if _, err := Open(u, &Options{ReadOnly: true}); !errors.Is(err, ErrNotExist) {
			t.Errorf("leftovers %v: the dropped index opens with %v; want ErrNotExist", leftovers, err)
		}
	}
}

// Ensure that an Open of a Redis URL no node of which answers fails at
// once, with ErrBackend: only a cluster that answers while a master does
// not is tried again (RD3-3's retry), not a wrong port.
func TestRedisOpenOfNoNodeIsNotRetried(t *testing.T) {
	for _, u := range []string{"redis+cluster://127.0.0.1:%d/x", "redis://127.0.0.1:%d/x"} {
		var logged syncBuffer
		_, err := Open(fmt.Sprintf(u, freePort(t)), &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if !errors.Is(err, ErrBackend) {
			t.Errorf("%s: %v; want ErrBackend", u, err)
		}
		if logged.String() != "" {
			t.Errorf("%s: tried again: %s", u, logged.String())
		}
	}
}

// standaloneRedis starts a redis-server of its own on a loopback port,
// with args added to its command line, stopped when the test ends, and
// returns its address. It skips (or fails under LSHDB_REQUIRE_REDIS) as
// the cluster's tests do.
func standaloneRedis(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := killableRedis(t, args...)
	return addr
}

// killableRedis is standaloneRedis, and a function that kills the
// server at once (as a crash would; the test's end then does nothing).
func killableRedis(t *testing.T, args ...string) (addr string, kill func()) {
	t.Helper()
	redisURL(t)
	port := freePort(t)
	srv, err := startRedisServer(port, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() { once.Do(func() { srv.Process.Kill(); srv.Wait() }) }
	t.Cleanup(kill)
	return fmt.Sprintf("127.0.0.1:%d", port), kill
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedisServer starts a redis-server on 127.0.0.1:port with its
// files in dir and no persistence unless args ask for it (later options
// win), and returns once it accepts connections; the caller kills it.
func startRedisServer(port int, dir string, args ...string) (*exec.Cmd, error) {
	srv := exec.Command("redis-server", append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
	if err := srv.Start(); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return srv, nil
		}
		if time.Since(start) > 10*time.Second {
			srv.Process.Kill()
			srv.Wait()
			return nil, fmt.Errorf("redis-server on %s did not start", addr)
		}
	}
}

// Ensure that a Redis record that cannot be decoded (overwritten by
// hand, or by a foreign writer) is one problem of Check, which goes on to
// the records after it and names its id, and that Delete removes it: Check
// stopped at it, reporting nothing after, and Delete of its id was
// refused as corrupt. Oracle: the documents put, less the one deleted,
// and a clean Check after the delete.
func TestRedisCorruptRecord(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var docs []Doc
	for i := range 1200 { // NB: past a scan chunk (redisScanChunk)
		docs = append(docs, Doc{ID: fmt.Sprintf("doc-%04d", i), Text: fmt.Sprintf("document %d, with a few words of its own: %d", i, i*31)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	bad, err := d.Get("doc-0009")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer c.Close()
	name := u[strings.LastIndex(u, "/")+1:]
	if err := c.HSet(context.Background(), fmt.Sprintf("lshdb:%s:d:%d", name, bad.Num), "r", "garbage").Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || rep.ProblemCount != 1 || rep.Docs != len(docs)-1 || !strings.Contains(rep.Problems[0], `"doc-0009"`) {
		t.Fatalf("Check with one record overwritten: %+v, %v; want its one problem, naming it, and the %d others checked", rep, err, len(docs)-1)
	}
	if err := d.Delete("doc-0009", nil); err != nil {
		t.Fatalf("Delete of the undecodable record: %v", err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() || rep.Docs != len(docs)-1 {
		t.Fatalf("Check after the delete: %+v, %v", rep, err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(docs)-1) {
		t.Fatalf("Count after the delete: %d, %v", n, err)
	}
}

// Ensure that Open of a Redis URL whose server refuses the connection
// (down, or a cluster's master failing over) is ErrBackend and says that
// a retry may succeed, as a write's failure does: it said only "dial tcp
// …: connection refused".
func TestRedisOpenRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // NB: nothing listens there now
	for _, u := range []string{"redis://" + addr + "/r", "redis+cluster://" + addr + "/r"} {
		_, err := Open(u, nil)
		if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "try again") || !strings.Contains(err.Error(), addr) {
			t.Errorf("Open(%s) with no server: %v; want ErrBackend, the address and a word on trying again", u, err)
		}
	}
}

// Ensure that a Redis server that wants a password is opened with the
// URL's (redis://:PASSWORD@HOST:PORT/NAME), refused without it, and that
// no message shows it. The server is a standalone redis-server started
// here with requirepass.
func TestRedisPassword(t *testing.T) {
	addr := standaloneRedis(t, "--requirepass", "sekret")
	_, err := Open("redis://"+addr+"/p", nil)
	if !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Open without the password: %v, want ErrAccessDenied", err)
	}
	_, err = Open("redis://:wrong@"+addr+"/p", nil)
	if !errors.Is(err, ErrAccessDenied) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Open with a wrong password: %v (want ErrAccessDenied, no password shown)", err)
	}
	u := "redis://:sekret@" + addr + "/p"
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document behind a password"}, nil); err != nil {
		t.Fatal(err)
	}
	if doc, err := d.Get("a"); err != nil || doc.Text != "a document behind a password" {
		t.Fatalf("Get = %+v, %v", doc, err)
	}
	if _, err := d.Get("missing"); err == nil || strings.Contains(err.Error(), "sekret") {
		t.Fatalf("Get(missing): %v", err)
	}
	if _, err := Open("redis://:sekret@"+addr+"/none", &Options{MustExist: true}); !errors.Is(err, ErrNotExist) || strings.Contains(err.Error(), "sekret") {
		t.Fatalf("Open of a missing index: %v (want ErrNotExist, no password shown)", err)
	}
}

// Ensure that a Scan on Redis (export, and the copy a backup makes)
// reads a document replaced after the ids were listed as its id names it
// then: it left out every document replaced while it ran. Oracle: each id
// once, in its last version; a deleted one not at all.
func TestRedisScanFollowsReplaced(t *testing.T) {
	d, err := Open(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	text := func(i, v int) string {
		return fmt.Sprintf("scanned document %d in version %d with words %d %d", i, v, i%7, i%13)
	}
	var docs []Doc
	for i := range 1500 {
		docs = append(docs, Doc{ID: fmt.Sprintf("s%04d", i), Text: text(i, 1)})
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := seen[doc.ID]; dup {
			t.Fatalf("%s scanned twice", doc.ID)
		}
		seen[doc.ID] = doc.Text
		if len(seen) == 1 {
			// NB: after the ids were listed and the first chunk read.
			var again []Doc
			for i := 600; i < 1400; i++ {
				again = append(again, Doc{ID: fmt.Sprintf("s%04d", i), Text: text(i, 2)})
			}
			if _, err := d.PutBatch(again, &WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			var gone []string
			for i := 1400; i < 1450; i++ {
				gone = append(gone, fmt.Sprintf("s%04d", i))
			}
			if _, err := d.DeleteIDs(gone, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 1500 {
		id := fmt.Sprintf("s%04d", i)
		got, ok := seen[id]
		switch {
		case i >= 1400 && i < 1450:
			if ok {
				t.Errorf("%s, deleted before its chunk was read, was scanned", id)
			}
		case !ok:
			t.Errorf("%s was not scanned", id)
		case i >= 600 && i < 1400 && got != text(i, 2):
			t.Errorf("%s scanned as %q, want its replacement", id, got)
		}
	}
}

// Ensure that OtherWriters counts the writable handles other than the
// caller's open on a Redis index (in this process or others), not the
// read-only ones, and not one closed: a creating command that failed
// dropped its new index while another process had it open and had not
// finished its first write.
func TestRedisOtherWriters(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	a, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n, err := a.OtherWriters(ctx); err != nil || n != 0 {
		t.Fatalf("alone: %d, %v", n, err)
	}
	ro, err := Open(u, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	b, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := a.OtherWriters(ctx); err != nil || n != 1 {
		t.Fatalf("with another writer and a reader: %d, %v; want 1", n, err)
	}
	if n, err := ro.OtherWriters(ctx); err != nil || n != 2 {
		t.Fatalf("a reader beside two writers: %d, %v; want 2", n, err)
	}
	b.Close()
	if n, err := a.OtherWriters(ctx); err != nil || n != 0 {
		t.Fatalf("after the other closed: %d, %v; want 0", n, err)
	}
	p := mustOpen(t, t.TempDir(), nil)
	defer p.Close()
	if n, err := p.OtherWriters(ctx); err != nil || n != 0 {
		t.Fatalf("Pebble: %d, %v", n, err)
	}
}

// Ensure that a Redis at its maxmemory (noeviction) refuses a load with
// ErrDiskFull (and ErrBackend), at once: the load retried it for a
// minute, a warning each time, as if a failover were to be waited out,
// and its message was Redis's "OOM command not allowed". The documents
// of the batches before stay, and read. And that deletes go through
// there and free memory for the next put: they were refused too (a
// script's HSETNX mark and the counter's HINCRBY), after their ids were
// gone, so a full Redis could not be emptied by lshdb; nor could a
// repair of the load's last batch run there (its HSET of the counter).
// The server is a
// standalone redis-server started here with maxmemory 16 MB (Redis 7:
// 6.2 takes no allow-oom flag, and refuses such deletes still).
func TestRedisOutOfMemory(t *testing.T) {
	addr := standaloneRedis(t, "--maxmemory", "16mb", "--maxmemory-policy", "noeviction")
	var log syncBuffer
	d, err := Open("redis://"+addr+"/oom", &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	docs := func(yield func(Doc, error) bool) {
		for i := 0; i < 200_000; i++ {
			if !yield(Doc{ID: fmt.Sprint("doc-", i), Text: fmt.Sprintf("document %d fills the memory of a small redis with its words %d %d %d", i, i%7, i%11, i%13)}, nil) {
				return
			}
		}
	}
	res, err := d.Load(context.Background(), docs, nil)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "maxmemory") {
		t.Fatalf("a load into a full Redis: %+v, %v; want ErrDiskFull and ErrBackend naming maxmemory", res, err)
	}
	// NB: its words say lshdb once ("lshdb: disk full: lshdb: the
	// storage backend failed: redis: ...": an operator's review, RD8).
	if n := strings.Count(err.Error(), "lshdb:"); n != 1 {
		t.Errorf("a load into a full Redis: %v; want lshdb: said once", err)
	}
	if strings.Contains(log.String(), "retrying the batch") {
		t.Errorf("the refused write was retried:\n%s", log.String())
	}
	if res.Stored == 0 {
		t.Fatalf("no batch stored before the memory filled: %+v", res)
	}
	last := fmt.Sprint("doc-", res.Stored-1)
	if ok, err := d.Has(last); !ok || err != nil {
		t.Errorf("the last document of the batches stored (%s): %v %v", last, ok, err)
	}
	// A put is refused while the memory is full; a repair of what the
	// stopped load left and deletes are not (they free it), and then the
	// put goes in.
	extra := Doc{ID: "after-the-deletes", Text: "a new document stored once the deletes have freed memory"}
	if err := d.Put(extra, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a put into the full Redis: %v, want ErrDiskFull", err)
	}
	// A writable handle opens there (as lshdb delete and check --repair
	// do): its registration was refused at maxmemory, and so was the
	// open (a review's R1). The rest goes through it.
	d.Close()
	again, err := Open("redis://"+addr+"/oom", &Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), MustExist: true})
	if err != nil {
		t.Fatalf("a writable open of the full Redis: %v", err)
	}
	d = again
	if rep, err := d.Check(context.Background()); err != nil || rep.OK() {
		t.Fatalf("check after the stopped load: %+v, %v; want the records its last batch left", rep, err)
	}
	// NB: a Redis still full once the stopped batch's records are gone
	// (a maxmemory below what the documents kept take): the repair's
	// re-posting of the live documents was refused there (SADD, even of
	// a member its set holds), with the steps after it skipped (an
	// operator's review, RD1).
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.ConfigSet(context.Background(), "maxmemory", "4mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(extra, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a put into the Redis made fuller: %v, want ErrDiskFull", err)
	}
	if rr, err := d.Repair(context.Background()); err != nil || rr.Orphans == 0 {
		t.Fatalf("repair of the full Redis: %+v, %v; want the stopped batch's records removed", rr, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("check after the repair: %+v, %v", rep, err)
	}
	if err := c.ConfigSet(context.Background(), "maxmemory", "16mb").Err(); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for i := range int(res.Stored / 2) {
		gone = append(gone, fmt.Sprint("doc-", i))
	}
	dr, err := d.DeleteIDs(gone, nil)
	if err != nil || dr.Deleted != len(gone) || len(dr.Missing) != 0 {
		t.Fatalf("deleting %d documents from the full Redis: %+v, %v", len(gone), dr, err)
	}
	if n, err := d.Count(); err != nil || n != uint64(res.Stored)-uint64(len(gone)) {
		t.Errorf("count after the deletes: %d, %v; want %d", n, err, uint64(res.Stored)-uint64(len(gone)))
	}
	for _, id := range []string{gone[0], gone[len(gone)-1], last} {
		want := id == last
		if ok, err := d.Has(id); ok != want || err != nil {
			t.Errorf("Has(%s) after the deletes: %v, %v; want %v", id, ok, err, want)
		}
	}
	if err := d.Put(extra, nil); err != nil {
		t.Fatalf("a put once the deletes freed memory: %v", err)
	}
	if r, err := d.Query(context.Background(), extra.Text, nil); err != nil || len(r.Matches) != 1 || r.Matches[0].ID != extra.ID {
		t.Errorf("the document put after the deletes: %+v, %v", r, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Errorf("check after the deletes: %+v, %v", rep, err)
	}
}

// Ensure that an index is not created under a name with a control
// character (keys that redis-cli shows cut short or over two lines):
// ErrInvalidOptions, and no key of the name left behind.
func TestRedisNewNameControlCharacters(t *testing.T) {
	base := redisURL(t)
	for _, name := range []string{"x%00y", "a%0Ab", "a%7Fb"} {
		u := base[:strings.LastIndex(base, "/")+1] + name
		if _, err := Open(u, nil); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "control character") {
			t.Errorf("Open(%s): %v, want ErrInvalidOptions naming the control character", name, err)
		}
		s, err := rediskv.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.Flush(context.Background()); err != nil || n != 0 {
			t.Errorf("%s: %d keys left behind (%v)", name, n, err)
		}
		s.Close()
	}
}

// Ensure that a Close while writes run lets each write that began finish
// whole, as on Pebble: it cancelled them between their steps, which left
// records and postings without their ids (a query found a document Get
// did not), writes reported failed but applied, an index that failed
// Check, and a bare "context canceled". Every write must succeed (and be
// stored, with its last text) or fail with ErrClosed (and be as before).
func TestRedisCloseDuringWrites(t *testing.T) {
	u := redisURL(t)
	rng := rand.New(rand.NewPCG(21, 21))
	var texts []string
	for range 200 {
		texts = append(texts, randomText(rng, texts[max(0, len(texts)-20):]))
	}
	for round := range 4 {
		d, err := Open(u, &Options{Threshold: 0.6})
		if err != nil {
			t.Fatal(err)
		}
		type write struct {
			id, text string
			del      bool
			err      error
		}
		results := make(chan write, 10000)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					id := fmt.Sprintf("w%d-%d", w, i%10) // upserts after ten
					wr := write{id: id, text: texts[(w*37+i+round)%len(texts)]}
					if i%7 == 6 {
						wr.del = true
						_, wr.err = d.DeleteIDs([]string{id}, &WriteOptions{IgnoreMissing: true})
					} else {
						wr.err = d.Put(Doc{ID: id, Text: wr.text}, nil)
					}
					results <- wr
					if wr.err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(100+50*round) * time.Millisecond)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(results)
		// The model: the last acknowledged write of each id.
		want := map[string]*string{}
		for wr := range results {
			switch {
			case wr.err == nil && wr.del:
				want[wr.id] = nil
			case wr.err == nil:
				text := wr.text
				want[wr.id] = &text
			case !errors.Is(wr.err, ErrClosed):
				t.Fatalf("round %d: a write cut by Close: %v, want ErrClosed", round, wr.err)
			}
		}
		d, err = Open(u, &Options{MustExist: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
			t.Fatalf("round %d: Check after a Close during writes: %v, %v", round, rep.Problems, err)
		}
		for id, text := range want {
			got, err := d.Get(id)
			switch {
			case text == nil && !errors.Is(err, ErrNotFound):
				t.Errorf("round %d: %s, deleted, reads %v, %v", round, id, got, err)
			case text != nil && (err != nil || got.Text != *text):
				t.Errorf("round %d: %s reads %v, %v; want its last acknowledged text", round, id, got, err)
			}
		}
		d.Close()
	}
}

// Ensure that Repair of a whole index that holds expired documents not yet
// swept changes nothing: it set the live count to the ids' alone, so that
// Check failed after it and the sweep then took the expired documents off
// the count a second time (Count 2 with 6 stored).
func TestRedisRepairLeavesExpiredToTheSweep(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{Threshold: 0.6, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var docs []Doc
	for i := range 10 {
		docs = append(docs, Doc{ID: fmt.Sprint("doc", i), Text: fmt.Sprintf("document number %d of the expiry repair test, with words", i)})
	}
	if _, err := d.PutBatch(docs[:6], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBatch(docs[6:], &WriteOptions{TTL: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // NB: Redis expires the records' keys itself
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check before the repair: %v, %v", rep.Problems, err)
	}
	if res, err := d.Repair(context.Background()); err != nil || res.Changed() {
		t.Errorf("Repair of a whole index with expired documents awaiting the sweep: %+v, %v; want nothing mended", res, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %v, %v", rep.Problems, err)
	}
	if n, err := d.SweepExpired(context.Background()); err != nil || n != 4 {
		t.Fatalf("SweepExpired: %d, %v; want 4", n, err)
	}
	if n, err := d.Count(); err != nil || n != 6 {
		t.Errorf("Count after the sweep: %d, %v; want 6", n, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after the sweep: %v, %v", rep.Problems, err)
	}
}

// Ensure that a synced write by a user whose ACL refuses INFO, to a server
// with no replica, fails as unreplicated and says why: it failed with
// INFO's bare NOPERM, which named no cause.
func TestRedisSyncWithoutInfo(t *testing.T) {
	addr := standaloneRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "bob", "on", ">bobpw", "~*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	d, err := Open("redis://bob:bobpw@"+addr+"/noinfo", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Put(Doc{ID: "a", Text: "some words of a document"}, nil)
	if !errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrBackend) || !errors.Is(err, ErrNotReplicated) || !strings.Contains(err.Error(), "may not run INFO") || !strings.Contains(err.Error(), "+info") {
		t.Fatalf("a synced put without INFO to a server with no replica: %v", err)
	}
	if err := d.Put(Doc{ID: "b", Text: "some words of another document"}, &WriteOptions{NoSync: true}); err != nil {
		t.Fatalf("a put with NoSync: %v", err)
	}
}

// Ensure that a Redis repair keeps the records whose id key is gone where
// Redis shows that it lost writes (an id whose record is gone), and gives
// them their id back when asked (Options.RestoreLostIDs), keeping the
// documents: it removed such records, so after a master came back empty a
// repair removed the documents whose id key alone was lost, about as many
// again as Redis had lost (an operator's review, R1). A repair that left
// them leaves them again, though it removed the sign (a maintainer's
// review). Of two records of one id, the later (higher number) gets it; an
// expiring document's id gets the record's expiry. The oracle: the
// documents written, read back by id, query and count, and the keys read
// with a client of its own.
func TestRedisRepairNamesUnnamed(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{Threshold: 0.6, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	if _, err := d.PutBatch([]Doc{{ID: "kept", Text: "a document that stays where it is"}, {ID: "lost-key", Text: "a document whose id key is deleted by hand"},
		{ID: "gone", Text: "a document whose record Redis loses"}, {ID: "spare", Text: "a document deleted to free its number"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "expiring", Text: "a document that expires in an hour, its id key deleted"}, &WriteOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer cc.Close()
	prefix := "lshdb:" + t.Name() + ":"
	num := func(id string) string {
		t.Helper()
		n, err := cc.Get(ctx, prefix+"i:"+id).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	lostNum, spareNum, goneNum := num("lost-key"), num("spare"), num("gone")
	if err := d.Delete("spare", nil); err != nil {
		t.Fatal(err)
	}
	// A later copy of lost-key's record, at spare's number (below the
	// counters' next: only the id scan tells that Redis lost writes),
	// what a replacement that stopped before its id leaves: the id goes
	// to the later record, and the earlier is removed.
	rec, err := cc.HGetAll(ctx, prefix+"d:"+lostNum).Result()
	if err != nil || len(rec) == 0 {
		t.Fatalf("reading lost-key's record: %v, %v", rec, err)
	}
	if err := cc.HSet(ctx, prefix+"d:"+spareNum, rec).Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"lost-key", "expiring"} {
		if n, err := cc.Del(ctx, prefix+"i:"+id).Result(); err != nil || n != 1 {
			t.Fatalf("deleting the id key of %s: %d, %v", id, n, err)
		}
	}
	// Redis lost writes: gone's record, as a master that came back empty
	// loses records beside ids.
	if n, err := cc.Del(ctx, prefix+"d:"+goneNum).Result(); err != nil || n != 1 {
		t.Fatalf("deleting gone's record: %d, %v", n, err)
	}
	unrestored := []string{"expiring", "lost-key"}
	res, err := d.Repair(ctx)
	if err != nil || res.Restored != 0 || res.Orphans != 0 || len(res.Unnamed) != 0 || !slices.Equal(res.Unrestored, unrestored) || !slices.Equal(res.Lost, []string{"gone"}) || !res.LostWrites {
		t.Fatalf("Repair: %+v, %v; want lost-key's and expiring's records left, gone lost", res, err)
	}
	// Again: gone's id is removed now, and the counters right; the
	// records are left still.
	if res, err = d.Repair(ctx); err != nil || res.Orphans != 0 || !slices.Equal(res.Unrestored, unrestored) || len(res.Lost) != 0 || !res.LostWrites {
		t.Fatalf("a second Repair: %+v, %v; want the records left again", res, err)
	}
	if _, err := d.Get("lost-key"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(lost-key) before its id is given back: %v, want ErrNotFound", err)
	}
	d.Close()
	if d, err = Open(u, &Options{Threshold: 0.6, ExpirySweep: -1, RestoreLostIDs: true}); err != nil {
		t.Fatal(err)
	}
	res, err = d.Repair(ctx)
	if err != nil || res.Restored != 2 || res.Orphans != 1 || len(res.Unnamed) != 0 || len(res.Unrestored) != 0 || len(res.Lost) != 0 {
		t.Fatalf("Repair with RestoreLostIDs: %+v, %v; want lost-key's and expiring's ids given back, lost-key's older copy removed", res, err)
	}
	if got, err := cc.Get(ctx, prefix+"i:lost-key").Result(); err != nil || got != spareNum {
		t.Fatalf("lost-key's id names %q (%v), want its later record %s", got, err, spareNum)
	}
	if n, err := cc.Exists(ctx, prefix+"d:"+lostNum).Result(); err != nil || n != 0 {
		t.Fatalf("the earlier copy of lost-key's record: %d keys, %v; want it removed", n, err)
	}
	if ttl, err := cc.PTTL(ctx, prefix+"i:expiring").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Fatalf("expiring's id key given back with a TTL of %v (%v), want its record's (under an hour)", ttl, err)
	}
	for _, id := range []string{"kept", "lost-key", "expiring"} {
		if ok, err := d.Has(id); !ok || err != nil {
			t.Fatalf("Has(%s) after the repair: %v, %v", id, ok, err)
		}
	}
	if n, err := d.Count(); err != nil || n != 3 {
		t.Fatalf("Count after the repair: %d, %v; want 3", n, err)
	}
	r, err := d.Query(ctx, "a document whose id key is deleted by hand", nil)
	if err != nil || len(r.Matches) == 0 || r.Matches[0].ID != "lost-key" {
		t.Fatalf("query for lost-key's text: %+v, %v", r, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %v, %v", rep.Problems, err)
	}
	// The sign is forgotten once nothing is left.
	if got, err := cc.HExists(ctx, "{lshdb:"+t.Name()+"}:counters", "lostwrites").Result(); err != nil || got {
		t.Fatalf("the counters' lostwrites field after the repair that left nothing: %v, %v; want gone", got, err)
	}
}

// Ensure that RemoveUnnamed removes the records no id names where Redis
// lost writes (a repair leaves them without it), naming them.
func TestRedisRepairRemoveUnnamed(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1, RemoveUnnamed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "kept", Text: "a document that stays where it is"}, {ID: "nameless", Text: "a document whose id key is deleted by hand"},
		{ID: "gone", Text: "a document whose record Redis loses"}}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer cc.Close()
	prefix := "lshdb:" + t.Name() + ":"
	goneNum, err := cc.Get(ctx, prefix+"i:gone").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{prefix + "d:" + goneNum, prefix + "i:nameless"} {
		if err := cc.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Repair(ctx)
	if err != nil || res.Orphans != 1 || !slices.Equal(res.Unnamed, []string{"nameless"}) || len(res.Unrestored) != 0 || !slices.Equal(res.Lost, []string{"gone"}) || !res.LostWrites {
		t.Fatalf("Repair with RemoveUnnamed: %+v, %v; want nameless's record removed and named", res, err)
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("Count: %d, %v; want 1 (kept)", n, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %v, %v", rep.Problems, err)
	}
	if _, err := Open(u, &Options{RestoreLostIDs: true, RemoveUnnamed: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with RestoreLostIDs and RemoveUnnamed: %v, want ErrInvalidOptions", err)
	}
}

// Ensure that a Redis index whose counters went back (Redis restarted
// without persistence under a writer, or a failover that lost a master's
// last writes) fails the writes that would reuse its document numbers,
// ErrCorrupt, and never retires another id's document: a put of one id
// deleted the document of another whose number Redis had given out
// again, and every write said it succeeded. The oracle: the documents
// acknowledged, by id, read back after each step.
func TestRedisCountersLost(t *testing.T) {
	addr := standaloneRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	u := "redis://" + addr + "/lost"
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := func(i int) string {
		return fmt.Sprintf("document number %d, with words enough to make shingles of: %d", i, i*7919)
	}
	var docs []Doc
	for i := range 20 {
		docs = append(docs, Doc{ID: fmt.Sprint("old-", i), Text: text(i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	// Redis loses the counters (as a restart without persistence would,
	// with the documents written before: a model of its loss).
	ctx := context.Background()
	if err := admin.HSet(ctx, "{lshdb:lost}:counters", "next", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The handle that wrote sees numbers go back, and stores nothing.
	err = d.Put(Doc{ID: "new-0", Text: text(100)}, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "went back") {
		t.Fatalf("a put given a number given out before: %v, want ErrCorrupt (the numbers went back)", err)
	}
	if _, err := d.Get("new-0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused put's document: %v, want ErrNotFound", err)
	}
	d.Close()
	// A new handle has not seen the numbers: its put of a new id is
	// given one a record holds, and stores nothing of it either.
	d, err = Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Put(Doc{ID: "new-1", Text: text(101)}, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "held by another record") {
		t.Fatalf("a new handle's put given a number a record holds: %v, want ErrCorrupt", err)
	}
	if _, err := d.Get("new-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused put's document: %v, want ErrNotFound", err)
	}
	// A repair puts the next number past every record's (and says so):
	// puts then take numbers of their own, and every document stays.
	if r, err := d.Repair(ctx); err != nil || !r.Counters {
		t.Errorf("Repair: %+v, %v; want the counters put right", r, err)
	}
	want := map[string]string{}
	for i := range 20 {
		want[fmt.Sprint("old-", i)] = text(i)
	}
	for i := range 5 {
		id := fmt.Sprint("after-", i)
		if err := d.Put(Doc{ID: id, Text: text(200 + i)}, nil); err != nil {
			t.Fatalf("a put after the repair: %v", err)
		}
		want[id] = text(200 + i)
	}
	for id, tx := range want {
		if got, err := d.Get(id); err != nil || got.Text != tx {
			t.Errorf("%s after the repair and puts: %v %v", id, got, err)
		}
	}
	// An id that names another id's record (as lost writes leave it):
	// a put of it leaves that record as it is, and says why.
	four, err := admin.Get(ctx, "lshdb:lost:i:old-4").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "lshdb:lost:i:old-3", four, 0).Err(); err != nil {
		t.Fatal(err)
	}
	err = d.Put(Doc{ID: "old-3", Text: text(103)}, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "another id's record") {
		t.Errorf("a put of an id that names another's record: %v, want ErrCorrupt naming it", err)
	}
	if got, err := d.Get("old-4"); err != nil || got.Text != text(4) {
		t.Errorf("old-4 after a put of old-3, which named its record: %v %v, want it as it was", got, err)
	}
	if got, err := d.Get("old-3"); err != nil || got.Text != text(103) {
		t.Errorf("old-3 after its put: %v %v, want the text put", got, err)
	}
	// A delete of an id that names another id's record, beside one that
	// does not: the record is left, the rest is deleted, and the result
	// says what was deleted beside the error (it was empty).
	seven, err := admin.Get(ctx, "lshdb:lost:i:old-7").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "lshdb:lost:i:old-6", seven, 0).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := d.DeleteIDs([]string{"old-5", "old-6"}, nil)
	if !errors.Is(err, ErrCorrupt) || res.Deleted != 2 || len(res.Missing) != 0 {
		t.Errorf("a delete of old-5 and of old-6, which names old-7's record: %+v, %v; want ErrCorrupt with 2 deleted", res, err)
	}
	for _, id := range []string{"old-5", "old-6"} {
		if _, err := d.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after its delete: %v, want ErrNotFound", id, err)
		}
	}
	if got, err := d.Get("old-7"); err != nil || got.Text != text(7) {
		t.Errorf("old-7 after a delete of old-6, which named its record: %v %v, want it as it was", got, err)
	}
	if _, err := d.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Errorf("check after the repair: %v %v", rep.Problems, err)
	}
}

// Ensure that a key under a Redis index's prefix that lshdb did not write
// (another program's, or one set by hand) is ErrCorrupt, not ErrBackend:
// it was "the storage backend failed" (HTTP 503, worth a retry), which no
// retry mends. The oracle: the keys set by hand.
func TestRedisForeignKeys(t *testing.T) {
	addr := standaloneRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	d, err := Open("redis://"+addr+"/fk", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document with words enough to shingle"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Set(ctx, "lshdb:fk:i:ghost", "notanumber", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.LPush(ctx, "lshdb:fk:i:listid", "5").Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ghost", "listid"} {
		if _, err := d.Get(id); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrBackend) {
			t.Errorf("Get(%s) of a key lshdb did not write: %v, want ErrCorrupt, not ErrBackend", id, err)
		}
	}
	if got, err := d.Get("a"); err != nil || got.ID != "a" {
		t.Errorf("Get(a) beside them: %v %v", got, err)
	}
}

// Ensure that a writable Redis handle says it is alive every heartbeat:
// OtherWritersSeen sees its time advance, a registration Redis lost (a
// restart without persistence) comes back, and Close leaves none, with a
// heartbeat due at every instant (check --repair refuses under a
// registered writer, and drop does: one left behind would hold them off).
// NB: the last is a smoke check: Close cancels the heartbeat's context
// before it waits for it, so a registration sent after Unregister needs
// a command in flight at that instant, which this rarely catches.
func TestRedisWriterHeartbeat(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerHeartbeat = d }(writerHeartbeat)
	writerHeartbeat = 20 * time.Millisecond
	b, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(u, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	seen, err := a.OtherWritersSeen(ctx)
	if err != nil || len(seen) != 1 {
		t.Fatalf("one writer: %v, %v", seen, err)
	}
	first := seen[0]
	if d := time.Since(first); d < -time.Second || d > 5*time.Second {
		t.Fatalf("seen at its open: %v, %v ago", first, d)
	}
	// NB: Unix seconds: the heartbeat shows in the second after.
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen, err = a.OtherWritersSeen(ctx)
		if err == nil && len(seen) == 1 && seen[0].After(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat: %v, %v (first %v)", seen, err, first)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := b.rkv.Unregister(ctx, b.writer); err != nil {
		t.Fatal(err)
	}
	for {
		if n, err := a.OtherWriters(ctx); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lost registration did not come back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
	writerHeartbeat = time.Nanosecond
	for range 20 {
		c, err := Open(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		c.Close()
	}
	if n, err := a.OtherWriters(ctx); err != nil || n != 0 {
		t.Fatalf("after Close: %d writers, %v; want 0", n, err)
	}
}

// Ensure that a writable open of an index on a Redis that evicts any key
// at its maxmemory (allkeys-*) is refused with ErrUnsupported naming the
// policy, and a read-only one is taken: such a server took an index's
// writes, then evicted records, ids and the counters (a review's R4).
// The oracle: the policy set on a server started here.
func TestRedisRefusesEvictingServer(t *testing.T) {
	addr := standaloneRedis(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
	u := "redis://" + addr + "/evict"
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document put before the policy changed"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(u, nil); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "maxmemory-policy allkeys-lru") {
		t.Fatalf("a writable open under allkeys-lru: %v, want ErrUnsupported naming the policy", err)
	}
	// A reader loses nothing, but reads what was evicted as never
	// stored: said (a review's R4).
	var log syncBuffer
	r, err := Open(u, &Options{ReadOnly: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("a read-only open under allkeys-lru: %v", err)
	}
	if !strings.Contains(log.String(), "evicts keys at its maxmemory") || !strings.Contains(log.String(), "allkeys-lru") {
		t.Errorf("a read-only open under allkeys-lru said nothing of it:\n%s", log.String())
	}
	if doc, err := r.Get("a"); err != nil || doc.Text == "" {
		t.Errorf("Get: %v, %v", doc, err)
	}
	r.Close()
	if err := c.ConfigSet(context.Background(), "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	w, err := Open(u, nil)
	if err != nil {
		t.Fatalf("a writable open under volatile-lru (said, not refused): %v", err)
	}
	w.Close()
	// With no maxmemory nothing is evicted (until one is set): said.
	if err := c.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if w, err = Open(u, nil); err != nil {
		t.Fatalf("a writable open under allkeys-lru with no maxmemory: %v", err)
	}
	w.Close()
}

// Ensure that a writable handle of an index dropped under it does not
// register again (it brought the writers key back every heartbeat, so the
// name read as in use after drop had removed every key), and says once
// that its index is gone (a review's L6 and R3).
func TestRedisHeartbeatOfDroppedIndex(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerHeartbeat = d }(writerHeartbeat)
	writerHeartbeat = 10 * time.Millisecond
	var log syncBuffer
	w, err := Open(u, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := Drop(ctx, u); err != nil {
		t.Fatal(err)
	}
	// Its reads of the counters say the index does not exist, as its
	// writes do: they said the counters were lost, corrupt, and that
	// check --repair puts them back (an operator's review of Redis, RD4).
	reads := func(when string) {
		if _, err := w.Count(); !errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) {
			t.Errorf("Count of the dropped index, %s: %v, want ErrNotExist", when, err)
		}
		if _, err := w.Info(); !errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) {
			t.Errorf("Info of the dropped index, %s: %v, want ErrNotExist", when, err)
		}
	}
	reads("at once")
	time.Sleep(200 * time.Millisecond)
	reads("after a heartbeat")
	s, err := rediskv.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if seen, err := s.Writers(ctx); err != nil || len(seen) != 0 {
		t.Errorf("writers of the dropped index: %v, %v; want none", seen, err)
	}
	if n := strings.Count(log.String(), "the index's manifest is gone"); n != 1 {
		t.Errorf("said %d times that the index is gone, want once:\n%s", n, log.String())
	}
	// Its other reads say so too, once the handle knows: they answered as
	// if the index were empty (a review of serve, SV3-4: a served index
	// lost to a restart answered its queries 200, no match).
	if _, err := w.Get("a"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Get in the dropped index: %v, want ErrNotExist", err)
	}
	if _, err := w.Has("a"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Has in the dropped index: %v, want ErrNotExist", err)
	}
	if _, err := w.Query(ctx, "a text to look for in the dropped index", nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Query of the dropped index: %v, want ErrNotExist", err)
	}
	var serr, perr error
	for _, err := range w.Scan(ctx, nil) {
		serr = err
		break
	}
	if !errors.Is(serr, ErrNotExist) {
		t.Errorf("Scan of the dropped index: %v, want ErrNotExist", serr)
	}
	for _, err := range w.Pairs(ctx, nil) {
		perr = err
		break
	}
	if !errors.Is(perr, ErrNotExist) {
		t.Errorf("Pairs of the dropped index: %v, want ErrNotExist", perr)
	}
	// Its writes are refused, and write nothing: they went into keys no
	// index named (acknowledged, found by no reader), and made leftovers
	// that refused the index's creation again (a review's R3).
	if err := w.Put(Doc{ID: "a", Text: "a document put after the drop"}, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Put into the dropped index: %v, want ErrNotExist", err)
	}
	docs := func(yield func(Doc, error) bool) { yield(Doc{ID: "b", Text: "a document loaded after the drop"}, nil) }
	if _, err := w.Load(ctx, docs, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Load into the dropped index: %v, want ErrNotExist", err)
	}
	if _, err := w.DeleteIDs([]string{"a"}, &WriteOptions{IgnoreMissing: true}); !errors.Is(err, ErrNotExist) {
		t.Errorf("Delete in the dropped index: %v, want ErrNotExist", err)
	}
	// NB: a repair put the counters right, so made them again (a
	// maintainer review's M2); a sweep or purge is refused as well.
	if _, err := w.Repair(ctx); !errors.Is(err, ErrNotExist) {
		t.Errorf("Repair of the dropped index: %v, want ErrNotExist", err)
	}
	if _, err := w.SweepExpired(ctx); !errors.Is(err, ErrNotExist) {
		t.Errorf("SweepExpired of the dropped index: %v, want ErrNotExist", err)
	}
	if _, err := w.Purge(ctx); !errors.Is(err, ErrNotExist) {
		t.Errorf("Purge of the dropped index: %v, want ErrNotExist", err)
	}
	if left, _, err := s.Leftovers(ctx); err != nil || len(left) != 0 {
		t.Errorf("keys written after the drop: %v, %v", left, err)
	}
}

// Ensure that a handle whose index Redis lost (every key gone, as in a
// restart without persistence) refuses its next put at once, and writes
// nothing: it learnt it only at its heartbeat, every 30 s, and a build
// that outlived the restart wrote 83,000 documents into keys no manifest
// named, numbered again from 1, and ended with exit status 0 (a review).
func TestRedisPutAfterTheIndexWasLost(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	w := writerOfTwenty(t, u, nil, "Redis lost its data") // NB: the heartbeat of 30 s does not come
	s, err := rediskv.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Flush(ctx); err != nil { // NB: every key of the index
		t.Fatal(err)
	}
	if err := w.Put(Doc{ID: "after", Text: "a document put after Redis lost the index"}, nil); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Put into the lost index: %v, want ErrNotExist", err)
	}
	docs := func(yield func(Doc, error) bool) {
		for i := range 100 {
			if !yield(Doc{ID: fmt.Sprint("load", i), Text: fmt.Sprint("a document loaded after Redis lost the index, number ", i)}, nil) {
				return
			}
		}
	}
	if _, err := w.Load(ctx, docs, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Load into the lost index: %v, want ErrNotExist", err)
	}
	if left, _, err := s.Leftovers(ctx); err != nil || len(left) != 0 {
		t.Errorf("keys written after the loss: %v, %v", left, err)
	}
	// A handle opened on the index made again writes as any other.
	w2, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := w2.Put(Doc{ID: "new", Text: "a document of the index made again"}, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := w2.Count(); err != nil || n != 1 {
		t.Errorf("the index made again: %d documents, %v; want 1", n, err)
	}
}

// Ensure that a handle whose index lost only its manifest (a cluster's
// master restarted without persistence, the counters on another) refuses
// its next put and delete at once, writing nothing, and says so once:
// the heartbeat found it up to 30 s later, and an insert wrote on into
// keys no index named and exited 0 (an operator's review). The oracle:
// the id's record, read by its number from the store's own keys.
func TestRedisPutAfterTheManifestWasLost(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	var log syncBuffer
	w := writerOfTwenty(t, u, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}, "the manifest went") // NB: the heartbeat of 30 s does not come
	c, name := rawRedis(t)
	for _, k := range rediskv.ManifestKeys(name) { // NB: the manifest and its copies
		if n, err := c.Del(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("deleting the manifest's key %s: %d keys, %v", k, n, err)
		}
	}
	err := w.Put(Doc{ID: "after", Text: "a document put after the manifest went"}, nil)
	if !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("Put after the manifest went: %v, want ErrNotExist saying nothing was written", err)
	}
	if _, err := w.DeleteIDs([]string{"before0"}, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Delete after the manifest went: %v, want ErrNotExist", err)
	}
	s, err := rediskv.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nums, err := s.DocNums(ctx, []string{"after", "before0"})
	if err != nil || nums[0] != 0 || nums[1] == 0 {
		t.Errorf("doc numbers of the refused put's id and of a stored one: %v, %v; want none and one", nums, err)
	}
	if n := strings.Count(log.String(), "the index's manifest is gone"); n != 1 {
		t.Errorf("said %d times that the manifest is gone, want once:\n%s", n, log.String())
	}
}

// Ensure that a handle whose index lost only its counters (a cluster's
// master restarted without persistence, the manifest on another) is told
// that check --repair puts them back, not that the index is gone, and
// writes again once it has: it was told to create the index again, and
// refused for good (a maintainer's review).
func TestRedisPutAfterTheCountersWereLost(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	w := writerOfTwenty(t, u, nil, "the counters went")
	c, name := rawRedis(t)
	if err := c.Del(ctx, "{lshdb:"+name+"}:counters").Err(); err != nil {
		t.Fatal(err)
	}
	err := w.Put(Doc{ID: "after", Text: "a document put after the counters went"}, nil)
	if !errors.Is(err, ErrCorrupt) || !Repairable(err) || errors.Is(err, ErrNotExist) {
		t.Fatalf("Put after the counters went: %v, want a repairable ErrCorrupt", err)
	}
	if _, err := w.Get("after"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused put was written: %v", err)
	}
	if _, err := w.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(Doc{ID: "after", Text: "a document put after the repair"}, nil); err != nil {
		t.Fatalf("Put after the repair: %v", err)
	}
	if n, err := w.Count(); err != nil || n != 21 {
		t.Errorf("after the repair and a put: %d documents, %v; want 21", n, err)
	}
	if rep, err := w.Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("Check: %+v, %v", rep, err)
	}
}

// Ensure that an index is not created over the keys of one whose
// manifest is gone (lost with a restart, deleted by hand): it took them
// for its own, with its own parameters (documents no query finds,
// counted as stored; a review's R2). Open is refused with ErrCorrupt
// naming them, nothing is written, and Drop clears the name.
func TestRedisCreateRefusesLeftovers(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document of the index whose manifest goes"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	c, name := rawRedis(t)
	for _, k := range rediskv.ManifestKeys(name) { // NB: the manifest and its copies
		if err := c.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Open(u, &Options{Bands: 8, Rows: 4})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no manifest but holds the keys of an index") {
		t.Fatalf("creating over leftovers: %v, want ErrCorrupt", err)
	}
	if n, err := c.Exists(ctx, "lshdb:"+name+":manifest").Result(); err != nil || n != 0 {
		t.Fatalf("the refused create wrote a manifest: %d, %v", n, err)
	}
	// A reader (check, query, pairs) is told the same, not that the
	// index does not exist and to create it (a review's R3).
	for _, o := range []*Options{{ReadOnly: true}, {MustExist: true}} {
		if _, err := Open(u, o); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "no manifest but holds the keys of an index") {
			t.Fatalf("opening leftovers with %+v: %v, want ErrCorrupt", *o, err)
		}
	}
	if err := Drop(ctx, u); err != nil {
		t.Fatal(err)
	}
	d, err = Open(u, &Options{Bands: 8, Rows: 4})
	if err != nil {
		t.Fatalf("creating after Drop: %v", err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("the new index: %d documents, %v; want 0", n, err)
	}
}

// Ensure that an index whose manifest went with the keys every index
// holds (its counters, its first document's record, its expiry index:
// in a cluster, one master restarted without persistence held all of
// them for 1 name in 9) is still found by the rest of its keys: a new
// index with the default parameters was created over them, and its
// first document took the number of a stored one (a review). A name
// that only begins with this one's is another index.
func TestRedisCreateRefusesLeftoversWithoutItsFirstKeys(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	d, err := Open(u, &Options{Bands: 8, Rows: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := d.Put(Doc{ID: fmt.Sprint("doc", i), Text: fmt.Sprint("a document of the index that loses its first keys, number ", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	// Another index whose name begins with this one's.
	otherURL := redisURL(t, "x")
	other, err := Open(otherURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put(Doc{ID: "o", Text: "a document of the other index"}, nil); err != nil {
		t.Fatal(err)
	}
	other.Close()
	c, name := rawRedis(t)
	for _, k := range append(rediskv.ManifestKeys(name), "{lshdb:"+name+"}:counters", "lshdb:"+name+":d:1", "lshdb:"+name+":x") {
		if err := c.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*Options{nil, {ReadOnly: true}, {MustExist: true}} {
		if _, err := Open(u, o); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no manifest but holds the keys of an index") {
			t.Fatalf("opening what is left with %+v: %v, want ErrCorrupt", o, err)
		}
	}
	if n, err := c.Exists(ctx, "lshdb:"+name+":manifest").Result(); err != nil || n != 0 {
		t.Fatalf("the refused create wrote a manifest: %d, %v", n, err)
	}
	// Servers holding more keys than a scan may read (17 million took
	// the open past its 30 s: a maintainer's review) are not scanned: a
	// reader is told the index does not exist, a creator is warned.
	func() {
		defer func(n int64) { rediskv.LeftoverScanKeys = n }(rediskv.LeftoverScanKeys)
		rediskv.LeftoverScanKeys = 0
		if _, err := Open(u, &Options{ReadOnly: true}); !errors.Is(err, ErrNotExist) {
			t.Fatalf("a read-only open without the scan: %v, want ErrNotExist", err)
		}
		var log syncBuffer
		d, err := Open(u, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if !strings.Contains(log.String(), "by a few lookups, not by a scan") {
			t.Errorf("no warning of the scan not made:\n%s", log.String())
		}
	}()
	if err := Drop(ctx, u); err != nil {
		t.Fatal(err)
	}
	d, err = Open(u, nil)
	if err != nil {
		t.Fatalf("creating after Drop, with the other index there: %v", err)
	}
	defer d.Close()
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("the new index: %d documents, %v; want 0", n, err)
	}
	other, err = Open(otherURL, &Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if doc, err := other.Get("o"); err != nil || doc.Text != "a document of the other index" {
		t.Errorf("the other index's document: %+v, %v", doc, err)
	}
}

// Ensure that processes creating one index at once all open it: a
// creator that found no manifest, then the first writes of another that
// had made it since, took them for an index's leftovers and was refused
// (a review: 19 of 1,800 opens); it reads the manifest again first.
func TestRedisConcurrentCreators(t *testing.T) {
	for i := range 30 {
		u := redisURL(t, fmt.Sprint(i))
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := Open(u, nil)
				if err != nil {
					errs <- err
					return
				}
				defer d.Close()
				if err := d.Put(Doc{ID: fmt.Sprint("g", g), Text: fmt.Sprintf("a document of creator %d among six", g)}, nil); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("index %d: %v", i, err)
		}
	}
}

// Ensure that a handle whose Redis index was dropped and made again
// between two of its heartbeats (with other parameters) finds it another
// index's, and refuses its writes: it found the manifest there, and went
// on writing its own bands into the new index (a maintainer review's
// K7). The oracle: the new index's own count and check.
func TestRedisHeartbeatOfRecreatedIndex(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	defer func(d time.Duration) { writerHeartbeat = d }(writerHeartbeat)
	// NB: long enough that no heartbeat falls between the drop and the
	// create (it would find the manifest gone, as the test above).
	writerHeartbeat = time.Second
	var log syncBuffer
	opened := time.Now()
	w, err := Open(u, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Put(Doc{ID: "old", Text: "a document of the first index"}, nil); err != nil {
		t.Fatal(err)
	}
	// NB: dropped and made again at once, well within one heartbeat.
	if err := Drop(ctx, u); err != nil {
		t.Fatal(err)
	}
	n, err := Open(u, &Options{Bands: 8, Rows: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Put(Doc{ID: "new", Text: "a document of the index made again"}, nil); err != nil {
		t.Fatal(err)
	}
	if time.Since(opened) > 900*time.Millisecond {
		t.Skip("the drop and the create took a heartbeat: the test checks nothing")
	}
	time.Sleep(time.Until(opened.Add(1600 * time.Millisecond)))
	if err := w.Put(Doc{ID: "stale", Text: "a document put through the first index's handle"}, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("Put through the handle of the dropped index: %v, want ErrNotExist", err)
	}
	// NB: a heartbeat in the gap between the drop and the create finds
	// the manifest gone, which says so as well.
	if !strings.Contains(log.String(), "dropped and made again") && !strings.Contains(log.String(), "manifest is gone") {
		t.Errorf("the handle did not say its index went:\n%s", log.String())
	}
	// The manifests of the two are told apart by their instance.
	m := n.man
	m.Instance = "A"
	a, err := codec.EncodeManifest(&m)
	if err != nil {
		t.Fatal(err)
	}
	if !sameInstance(a, "A") || sameInstance(a, "B") || !sameInstance(a, "") {
		t.Error("sameInstance does not tell instances apart")
	}
	if c, err := n.Count(); err != nil || c != 1 {
		t.Errorf("the new index holds %d documents, %v; want its own 1", c, err)
	}
	if rep, err := n.Check(ctx); err != nil || !rep.OK() {
		t.Errorf("the new index fails check: %v %v", rep, err)
	}
}

// Ensure that on Redis a document being replaced is never read as
// missing: while one writer does nothing but replace id a, Get, Has,
// HasIDs, QueryID, Explain and QueryMany of a always find it (the oracle:
// a is stored throughout). With no snapshot, the reads of the id's doc
// number and of its record may fall on either side of a replace, which
// retires the record the id named; they answered "not found" in 2-5% of
// reads (a consistency review's R1).
func TestRedisReadsDuringReplace(t *testing.T) {
	d, err := Open(redisURL(t), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	texts := loadDocs(400)
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: texts[0].Text}, {ID: "b", Text: texts[0].Text}}, nil); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	writer := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				writer <- nil
				return
			default:
			}
			if err := d.Put(Doc{ID: "a", Text: texts[i%len(texts)].Text}, nil); err != nil {
				writer <- err
				return
			}
		}
	}()
	ctx := context.Background()
	missing := map[string]int{}
	reads := 0
	for range 150 {
		if _, err := d.Get("a"); err != nil {
			missing["Get"]++
		}
		if ok, err := d.Has("a"); err != nil || !ok {
			missing["Has"]++
		}
		if found, err := d.HasIDs([]string{"a", "b"}); err != nil || !found[0] {
			missing["HasIDs"]++
		}
		if _, err := d.QueryID(ctx, "a", nil); err != nil {
			missing["QueryID"]++
		}
		if _, err := d.Explain("a", "b"); err != nil {
			missing["Explain"]++
		}
		if _, err := d.QueryMany(ctx, []QueryInput{{ID: "a"}, {ID: "b"}}, nil); err != nil {
			missing["QueryMany"]++
		}
		reads += 6
	}
	close(stop)
	if err := <-writer; err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("a, stored throughout, was read as missing beside its replacement: %v (of %d reads)", missing, reads)
	}
}

// Ensure that a writable handle closed while its Redis restarts does not
// leave its registration behind: Close tried once, the server refused
// the connection, and every process that closed during an outage read as
// a writer still there, so that a repair needed --force (a review's R5).
// The oracle: the writers key, read once the server is back.
func TestRedisCloseUnregistersThroughRestart(t *testing.T) {
	redisURL(t)
	port, dir := freePort(t), t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	persistent := []string{"--appendonly", "yes", "--appendfsync", "always"}
	srv, err := startRedisServer(port, dir, persistent...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if srv != nil {
			srv.Process.Kill()
			srv.Wait()
		}
	}()
	d, err := Open("redis://"+addr+"/restart", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document put before the restart"}, nil); err != nil {
		t.Fatal(err)
	}
	srv.Process.Kill()
	srv.Wait()
	restarted := make(chan error, 1)
	go func() {
		// NB: longer than one try of Unregister (2 s).
		time.Sleep(2500 * time.Millisecond)
		var err error
		srv, err = startRedisServer(port, dir, persistent...)
		restarted <- err
	}()
	closeStart := time.Now()
	d.Close()
	t.Logf("Close took %v", time.Since(closeStart))
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if w, err := c.HGetAll(context.Background(), "lshdb:restart:writers").Result(); err != nil || len(w) != 0 {
		t.Fatalf("writers after a Close during the restart: %v, %v; want none", w, err)
	}
	if n, err := c.Exists(context.Background(), "lshdb:restart:manifest").Result(); err != nil || n != 1 {
		t.Fatalf("the index did not survive the restart (manifest: %d, %v): the test proves nothing", n, err)
	}
}

// Ensure that Redis's refusal of the credentials (WRONGPASS) or of an ACL
// user's rights (NOPERM) is ErrAccessDenied, which no retry mends, not
// ErrBackend (worth a retry: a serve answered 503 for it, an operator's
// review R5), and that the index is unchanged.
func TestRedisAccessDenied(t *testing.T) {
	ctx := context.Background()
	u := redisURL(t)
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document that a refused open must leave in place"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	// NB: ACL users are per node: every node gets one whose keys are
	// another program's only.
	for _, addr := range redisCluster.Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.Do(ctx, "ACL", "SETUSER", "lshdb-elsewhere", "on", ">pw", "~elsewhere:*", "+@all").Err()
		if err == nil {
			t.Cleanup(func() { c.Do(ctx, "ACL", "DELUSER", "lshdb-elsewhere"); c.Close() })
		} else {
			c.Close()
			t.Fatal(err)
		}
	}
	at := func(userinfo string) string {
		return strings.Replace(u, "://", "://"+userinfo+"@", 1)
	}
	for _, c := range []struct{ name, url string }{
		// NB: the test cluster's default user takes any password
		// (nopass), as Redis's does unless requirepass is set.
		{"an unknown user", at("nobody:wrong")},
		{"a wrong password", at("lshdb-elsewhere:wrong")},
		{"a user without the index's keys", at("lshdb-elsewhere:pw")},
	} {
		_, err := Open(c.url, nil)
		if !errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrBackend) {
			t.Fatalf("Open with %s: %v, want ErrAccessDenied and not ErrBackend", c.name, err)
		}
		if strings.Contains(err.Error(), "wrong@") {
			t.Fatalf("Open with %s: the error shows the password: %v", c.name, err)
		}
		if err := Drop(ctx, c.url); !errors.Is(err, ErrAccessDenied) {
			t.Fatalf("Drop with %s: %v, want ErrAccessDenied", c.name, err)
		}
	}
	// A user whose key patterns leave out the hash-tagged write tokens
	// opens the index, and a put is refused inside a script (which Redis
	// words without NOPERM): ErrAccessDenied, naming the rights, not the
	// password.
	name := u[strings.LastIndex(u, "/")+1:]
	for _, addr := range redisCluster.Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.Do(ctx, "ACL", "SETUSER", "lshdb-prefix", "on", ">pw", "~lshdb:"+name+":*", "~{lshdb:"+name+"}:*", "+@all").Err()
		if err == nil {
			t.Cleanup(func() { c.Do(ctx, "ACL", "DELUSER", "lshdb-prefix"); c.Close() })
		} else {
			c.Close()
			t.Fatal(err)
		}
	}
	// Redis words a script's refused call without NOPERM.
	uc := redis.NewClient(&redis.Options{Addr: redisCluster.Addrs[0], Username: "lshdb-prefix", Password: "pw"})
	err = uc.Eval(ctx, "return redis.call('GET', 'elsewhere')", nil).Err()
	uc.Close()
	if !rediskv.NoRights(err) {
		t.Fatalf("a script's call to a key the user may not reach: %v, not taken for a refusal of rights", err)
	}
	if p, err := Open(at("lshdb-prefix:pw"), nil); err == nil {
		err = p.Put(Doc{ID: "b", Text: "a document whose write reaches a key the user may not"}, nil)
		p.Close()
		if !errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrBackend) || strings.Contains(err.Error(), "give the password") || !strings.Contains(err.Error(), "ACL user") {
			t.Fatalf("a put by a user without every key: %v, want ErrAccessDenied naming the ACL user's rights", err)
		}
	} else if !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Open by a user without every key: %v, want ErrAccessDenied", err)
	}
	d, err = Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("after the refused opens and put, and a repair: %d documents (%v), want 1", n, err)
	}
}

// Ensure that a repair does not bring back a deleted document: a replace
// that stopped after its id moved to the new record leaves the old record
// unmarked, and once the id is deleted (acknowledged) no id key names it.
// Given its id back, the deleted document came back as its version before
// the replace (a maintainer's review). With no sign that Redis lost
// writes, it is removed and named (Unnamed). The oracle: the delete's
// acknowledgement.
func TestRedisRepairKeepsDeletesDeleted(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "x", Text: "version one of a document that is replaced and then deleted"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "y", Text: "a document that stays as it is throughout"}, nil); err != nil {
		t.Fatal(err)
	}
	restore := rediskv.InjectCrash(2) // the new record and its id written; the old one not retired
	err = d.Put(Doc{ID: "x", Text: "version two of a document that is replaced and then deleted"}, nil)
	restore()
	if err == nil {
		t.Fatal("the put with a crash injected succeeded")
	}
	if err := d.Delete("x", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := d.Repair(ctx)
	if err != nil || res.Restored != 0 || res.LostWrites || !slices.Equal(res.Unnamed, []string{"x"}) || len(res.Lost) != 0 {
		t.Fatalf("Repair: %+v, %v; want x's older record removed and named, nothing given back", res, err)
	}
	if _, err := d.Get("x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(x) after the delete and the repair: %v, want ErrNotFound", err)
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("Count: %d, %v; want 1 (y)", n, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %v, %v", rep.Problems, err)
	}
}

// Ensure that a Redis index whose counters are gone says so where it is
// counted (Count, Info, Stats: it counted 0 documents, and info said 0 of
// an index that held them, an operator's review R8), as repairable
// damage; that Check reports it; and that Repair puts the count back.
// The oracle: the documents put.
func TestRedisCountersGoneCounted(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "the first of three documents"}, {ID: "b", Text: "the second of three documents"}, {ID: "c", Text: "the third of three documents"}}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer cc.Close()
	if n, err := cc.Del(ctx, "{lshdb:"+t.Name()+"}:counters").Result(); err != nil || n != 1 {
		t.Fatalf("deleting the counters: %d, %v", n, err)
	}
	if n, err := d.Count(); !errors.Is(err, ErrCorrupt) || !Repairable(err) {
		t.Fatalf("Count with the counters gone: %d, %v; want repairable ErrCorrupt", n, err)
	}
	if _, err := d.Info(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Info with the counters gone: %v; want ErrCorrupt", err)
	}
	if _, err := d.Stats(ctx, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Stats with the counters gone: %v; want ErrCorrupt", err)
	}
	if rep, err := d.Check(ctx); err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), "counters are gone") {
		t.Fatalf("Check with the counters gone: %+v, %v; want it reported", rep, err)
	}
	// A new writable handle (a new command) opens, warning, and leaves
	// the counters gone: it made them again from 0, its put succeeded,
	// and Count then said 1 (an operator's review of Redis Cluster, RC-1).
	var log syncBuffer
	d2, err := Open(u, &Options{ExpirySweep: -1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("a writable open with the counters gone: %v", err)
	}
	if !strings.Contains(log.String(), "counters are gone") {
		t.Errorf("the open said nothing of the counters gone:\n%s", log.String())
	}
	if err := d2.Put(Doc{ID: "d", Text: "a fourth document, put with the counters gone"}, nil); !errors.Is(err, ErrCorrupt) || !Repairable(err) {
		t.Fatalf("a put of the new handle: %v; want repairable ErrCorrupt", err)
	}
	if n, err := cc.Exists(ctx, "{lshdb:"+t.Name()+"}:counters").Result(); err != nil || n != 0 {
		t.Fatalf("the new handle made the counters again (%d, %v)", n, err)
	}
	if n, err := d2.Count(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Count of the new handle: %d, %v; want ErrCorrupt", n, err)
	}
	d2.Close()
	if res, err := d.Repair(ctx); err != nil || !res.Counters {
		t.Fatalf("Repair: %+v, %v; want the counters put back", res, err)
	}
	if n, err := d.Count(); err != nil || n != 3 {
		t.Fatalf("Count after the repair: %d, %v; want 3", n, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after the repair: %v, %v", rep.Problems, err)
	}
	d3, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if err := d3.Put(Doc{ID: "d", Text: "a fourth document, put after the repair"}, nil); err != nil {
		t.Fatalf("a put after the repair: %v", err)
	}
	if n, err := d.Count(); err != nil || n != 4 {
		t.Fatalf("Count after the put: %d, %v; want 4", n, err)
	}
}

// Ensure that a handle that cannot take back its registration as a
// writer at Close (Redis stopped) says so: the registration left behind
// made lshdb drop and check --repair refuse for minutes, for "another
// handle", with nothing to tell why (an operator's review of Redis, RD3).
// The oracle: the server stopped here before the Close.
func TestRedisCloseCannotUnregister(t *testing.T) {
	addr, kill := killableRedis(t)
	var log syncBuffer
	d, err := Open("redis://"+addr+"/gone", &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "a", Text: "a document put before the server stopped"}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "registration") {
		t.Fatalf("said before the server stopped:\n%s", log.String())
	}
	kill()
	d.Close()
	if !strings.Contains(log.String(), "could not take back its registration as a writer") {
		t.Errorf("Close with the server stopped said:\n%s\nwant that the registration is left", log.String())
	}
}

// Ensure that on Redis a record no id names answers no query: one whose
// id key is gone (a write that stopped after its postings and before its
// id, as a writer killed or a write refused at maxmemory leaves: an
// operator's review, RD2-1) is not found, and PutIfNew does not take a
// new document for its duplicate; and of an id's two versions (a
// replacement stopped after the new one's postings, its id still naming
// the old), the one the id names answers, as Get does. The oracle is
// exact Jaccard of the texts, and Get.
func TestRedisUnnamedRecordsAnswerNothing(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const (
		g  = "a document whose id is lost while its record and postings stay behind"
		v1 = "the first version of a document that is being replaced by another one"
		v2 = "the first version of a document that is being replaced by another text"
	)
	if _, err := d.PutBatch([]Doc{{ID: "g", Text: g}, {ID: "x", Text: v1}}, nil); err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redisCluster.Addrs})
	defer cc.Close()
	prefix := "lshdb:" + t.Name() + ":"
	if n, err := cc.Del(ctx, prefix+"i:g").Result(); err != nil || n != 1 {
		t.Fatalf("deleting g's id: %d, %v", n, err)
	}
	if _, err := d.Get("g"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(g) with its id gone: %v, want ErrNotFound", err)
	}
	if res, err := d.Query(ctx, g, nil); err != nil || len(res.Matches) != 0 || res.Candidates != 0 {
		t.Fatalf("Query(g's text) = %+v, %v; want no match and no candidate (g is not stored)", res, err)
	}
	if m, err := d.PutIfNew(Doc{ID: "g2", Text: g}, nil); err != nil || m != nil {
		t.Fatalf("PutIfNew(g2 with g's text) = %+v, %v; want it stored (g is not)", m, err)
	}
	if res, err := d.Query(ctx, g, nil); err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "g2" {
		t.Fatalf("Query(g's text) after g2 = %+v, %v; want g2 alone", res, err)
	}

	replacementNotLanded(t, d, "x", v2)
	res, err := d.Query(ctx, v1, &QueryOptions{Threshold: 0.3})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "x" || res.Matches[0].Jaccard != 1 {
		t.Fatalf("Query(v1) = %+v, %v; want x once, at 1 (the version its id names)", res, err)
	}
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	p, _ := h.Document(nil, nil, v1)
	q, _ := h.Document(nil, nil, v2)
	if j := minhash.Jaccard(p, q); j < 0.3 || j == 1 {
		t.Fatalf("v1 and v2 at %v: the test needs them apart and both candidates", j)
	}
}

// Ensure that on a Redis server with a replica, at its maxmemory, a
// delete goes through and says so: it was carried out, but its wait for
// the replica (a plain INCR, refused there) reported it failed as disk
// full (an operator's review of Redis, RD2-6). The servers are a
// redis-server started here with maxmemory 8 MB and its replica; the
// oracle is Has and Count after the delete.
func TestRedisDeleteAtMaxmemoryWithReplica(t *testing.T) {
	addr := standaloneRedis(t, "--maxmemory", "8mb", "--maxmemory-policy", "noeviction")
	host, port, _ := net.SplitHostPort(addr)
	rport := freePort(t)
	replica, err := startRedisServer(rport, t.TempDir(), "--replicaof", host, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Process.Kill(); replica.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the replica did not come online: %s %v", info, err)
		}
	}
	d, err := Open("redis://"+addr+"/oom", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	docs := func(yield func(Doc, error) bool) {
		for i := 0; i < 200_000; i++ {
			if !yield(Doc{ID: fmt.Sprint("doc-", i), Text: fmt.Sprintf("document %d fills the memory of a small redis with its words %d %d %d", i, i%7, i%11, i%13)}, nil) {
				return
			}
		}
	}
	res, err := d.Load(context.Background(), docs, nil)
	if !errors.Is(err, ErrDiskFull) || res.Stored < 2 {
		t.Fatalf("a load into a full Redis: %+v, %v; want ErrDiskFull after a batch or more", res, err)
	}
	before, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("doc-0", nil); err != nil {
		t.Fatalf("a delete at maxmemory: %v, want it done and said so", err)
	}
	if ok, err := d.Has("doc-0"); ok || err != nil {
		t.Errorf("Has(doc-0) after its delete: %v, %v", ok, err)
	}
	if n, err := d.Count(); err != nil || n != before-1 {
		t.Errorf("Count after the delete: %d, %v; want %d", n, err, before-1)
	}
}

// Ensure that a cluster URL whose seeds are nodes of two clusters is
// refused (ErrInvalidOptions), naming the node out of place, and that
// nothing is written to either: go-redis took its slot map from the first
// seed that answered, so one URL named one index in a run and another in
// the next (an operator's review of Redis, RD2-3). The second cluster is
// one redis-server of its own holding every slot; the oracle is each
// cluster's keys, and an Open of the test cluster's seeds alone.
func TestRedisSeedsOfTwoClusters(t *testing.T) {
	u := redisURL(t)
	port := freePort(t)
	srv, err := startRedisServer(port, t.TempDir(), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	other := fmt.Sprintf("127.0.0.1:%d", port)
	ctx := context.Background()
	oc := redis.NewClient(&redis.Options{Addr: other})
	defer oc.Close()
	if err := oc.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if info, err := oc.ClusterInfo(ctx).Result(); err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the one-node cluster did not come up")
		}
	}
	// NB: each group named as it is, whichever seed go-redis asked
	// first: the good nodes were named as the stray ones (RT2-6).
	a := redisCluster.Addrs
	for _, c := range []struct {
		seeds []string
		want  string
	}{
		{[]string{a[0], other}, "{" + a[0] + "} and {" + other + "}"},
		{[]string{other, a[1]}, "{" + other + "} and {" + a[1] + "}"},
		{[]string{a[0], a[1], other, a[2]}, "{" + a[0] + ", " + a[1] + ", " + a[2] + "} and {" + other + "}"},
	} {
		mixed := "redis+cluster://" + strings.Join(c.seeds, ",") + "/" + t.Name()
		for range 3 {
			_, err := Open(mixed, nil)
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "the URL names nodes of 2 Redis Clusters, "+c.want+":") {
				t.Fatalf("Open(%s): %v, want ErrInvalidOptions naming the clusters %s", mixed, err, c.want)
			}
		}
	}
	if n, err := oc.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("the other cluster holds %d keys (%v), want none", n, err)
	}
	d, err := Open(u, nil)
	if err != nil {
		t.Fatalf("Open of the test cluster's own seeds: %v", err)
	}
	d.Close()
}

// Ensure that an index whose manifest alone was lost (its master
// restarted empty before its failover, the rest of the index intact on
// the other masters) is read from a copy of the manifest: a writer goes
// on, an open (reader and writer) finds every document, and the
// manifest is back in place; the index could only be dropped (an
// operator's review of Redis, RD2-4). The oracle is the documents put.
func TestRedisManifestLostAloneReadFromItsCopy(t *testing.T) {
	u := redisURL(t)
	ctx := context.Background()
	w := writerOfTwenty(t, u, nil, "the manifest alone went")
	c, name := rawRedis(t)
	keys := rediskv.ManifestKeys(name)
	if n, err := c.Del(ctx, keys[0]).Result(); err != nil || n != 1 {
		t.Fatalf("deleting the manifest: %d, %v", n, err)
	}
	if err := w.Put(Doc{ID: "after", Text: "a document put after the manifest alone went"}, nil); err != nil {
		t.Fatalf("Put after the manifest alone went: %v", err)
	}
	if n, err := c.Exists(ctx, keys[0]).Result(); err != nil || n != 1 {
		t.Fatalf("the manifest was not put back: %d, %v", n, err)
	}
	if _, err := c.Del(ctx, keys[0]).Result(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(u, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only open with the manifest lost alone: %v", err)
	}
	defer r.Close()
	if n, err := r.Count(); err != nil || n != 21 {
		t.Fatalf("Count: %d, %v; want 21", n, err)
	}
	for _, id := range []string{"before0", "before19", "after"} {
		if ok, err := r.Has(id); !ok || err != nil {
			t.Errorf("Has(%s): %v, %v", id, ok, err)
		}
	}
	if rep, err := r.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check: %v, %v", rep, err)
	}
}

// Ensure that Pairs and Bucket on Redis take an id's version to be the
// one its id names, as Get and a query do: of an id whose replacement
// stopped after its new version's record, postings and id, the id then
// set back to the old version (a write that did not land), Pairs paired
// the id by the newer version read, at Jaccard 1 with documents whose
// text the id's document shares no word with, and Bucket listed the id
// where its document is not (a read-through's RT2-3, RT2-4). The id
// comes in a later chunk than the documents it was paired with. The
// oracle is Get, and the texts' exact Jaccard (0).
func TestRedisPairsAndBucketTakeTheNamedVersion(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	const (
		v1 = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima"
		v2 = "one two three four five six seven eight nine ten eleven twelve thirteen"
	)
	var docs []Doc
	for i := range 12 {
		docs = append(docs, Doc{ID: fmt.Sprint("y", i), Text: v2})
	}
	for i := range 1500 {
		docs = append(docs, Doc{ID: fmt.Sprint("f", i), Text: fmt.Sprintf("filler %d has words %d and %d and %d of its own zz%d", i, i*7, i*13, i*31, i)})
	}
	docs = append(docs, Doc{ID: "x", Text: v1})
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	replacementNotLanded(t, d, "x", v2)
	ys := 0
	for p, err := range d.Pairs(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if p.A == "x" || p.B == "x" {
			t.Fatalf("Pairs paired x, whose text shares no word with any other: %+v", p)
		}
		if p.A[0] == 'y' && p.B[0] == 'y' {
			ys++
		}
	}
	if ys != 12*11/2 {
		t.Fatalf("Pairs gave %d pairs of the y documents, want %d", ys, 12*11/2)
	}
	ex, err := d.Explain("y0", "y1")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := d.Bucket(0, ex.BandKeysA[0])
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(ids); len(ids) != 12 || slices.Contains(ids, "x") {
		t.Fatalf("Bucket(0, y0's bucket) = %v; want the 12 y documents, not x", ids)
	}
}

// replacementNotLanded replaces document id of d (an index of the test's
// name on the test cluster) by text as a write that did not land leaves
// it: the new version's record, postings and id written, its old version
// not retired (an injected crash), and then the id set back to the old
// version, as if its write had been lost. It checks that Get still gives
// the old version.
func replacementNotLanded(t *testing.T, d *DB, id, text string) {
	t.Helper()
	old, err := d.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	restore := rediskv.InjectCrash(2) // the new version's record, postings and id written; the old one not retired
	err = d.Put(Doc{ID: id, Text: text}, nil)
	restore()
	if err == nil {
		t.Fatal("the injected crash did not stop the put")
	}
	c, name := rawRedis(t)
	if err := c.Set(context.Background(), "lshdb:"+name+":i:"+id, strconv.FormatUint(old.Num, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if doc, err := d.Get(id); err != nil || doc.Text != old.Text {
		t.Fatalf("Get(%s) = %+v, %v; want its old version", id, doc, err)
	}
}

// Ensure that Buckets on Redis stops at a cancel while it ranks the
// hottest lists and while it reads their samples, as on Pebble
// (testBucketsStopsAfterItsScan), and that it and Stats report their
// phases in order, each a step of its own: Buckets in three (the lists
// sized, the hottest ranked, their samples read), Stats in three (the
// lists, the expected recall, the keys sized). On Redis they reported no
// phase for the lists (Stats began at step 2) and the ranking counted to
// no phase (a read-through's RT5-6). Oracles: the lists Buckets counts
// (its first phase sizes every one) and the hot spots it returns.
func TestRedisBucketsStopsAfterItsScan(t *testing.T) {
	d := mustOpen(t, redisURL(t), &Options{ExpirySweep: -1, PurgeEvery: -1})
	defer d.Close()
	testBucketsStopsAfterItsScan(t, d)
	var l progressLog
	bs, err := d.Buckets(l.ctx(), -1, 3)
	if err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, n := range bs.Lists {
		lists += n
	}
	ends := l.check(t, "Buckets", 3)
	// NB: the ranking counts the hottest lists' members read (RT6-7: one
	// pipeline, unreported) and the lists ranked: more than the hot spots.
	if cut := min(3*d.Params().Bands.B, lists); ends["ranking the hottest lists"].Total < int64(2*cut) {
		t.Errorf("the ranking phase %+v counts no members read: want the %d lists' and their ranking", ends["ranking the hottest lists"], cut)
	}
	if ends["reading posting lists' sizes"].Total != int64(lists) || ends["reading the hottest lists' samples"].Total != int64(len(bs.Hottest)) || len(bs.Hottest) == 0 {
		t.Errorf("buckets phases %+v, want %d lists and %d hot spots", ends, lists, len(bs.Hottest))
	}
	l = progressLog{}
	if _, err := d.Stats(l.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	if e := l.check(t, "Stats", 3)["reading posting lists' sizes"]; e.Step != 1 || e.Total != int64(lists) {
		t.Errorf("stats' first phase %+v, want step 1 of the %d lists", e, lists)
	}
}
