package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that queries answered through the query cache are exactly the
// brute-force model's answers and a cache-less query's, while puts,
// upserts, deletes, loads (which replace documents) and purges change the
// index between repeated queries: the same texts are asked again after
// every write, so stale posting lists or candidates would show. A cache of
// a few KiB makes evictions constant; the estimate-only mode (none) has no
// model answer and is compared with the cache-less query and a reopened
// database.
func TestQueryCache(t *testing.T) {
	steps := 300
	if testing.Short() {
		steps = 120
	}
	for i, o := range []Options{
		{},
		{QueryCacheSize: 4 << 10},
		{Storage: StorageSets, Threshold: 0.5},
		{Storage: StorageNone, Threshold: 0.5, QueryCacheSize: 16 << 10},
		{Bag: true, ShingleSize: 3, Threshold: 0.6},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			fs := vfs.NewMem()
			o.fs = fs
			d := mustOpen(t, "db", &o)
			defer func() { d.Close() }()
			m := newModel(t, d.Params())
			rng := rand.New(rand.NewPCG(uint64(i), 13))
			var texts, queries []string
			ids := []string{}
			for range 8 {
				queries = append(queries, randomText(rng, nil))
			}
			check := func(step int) {
				t.Helper()
				for _, text := range queries {
					for pass := range 2 { // the second is answered from the cache
						got, err := d.Query(context.Background(), text, nil)
						if err != nil {
							t.Fatalf("step %d: Query: %v", step, err)
						}
						c := d.qcache
						d.qcache = nil
						want, err := d.Query(context.Background(), text, nil)
						d.qcache = c
						if err != nil {
							t.Fatalf("step %d: cache-less Query: %v", step, err)
						}
						if err := sameMatches(got.Matches, want.Matches); err != nil {
							t.Fatalf("step %d pass %d: cached and cache-less queries differ: %v", step, pass, err)
						}
						if got.Candidates != want.Candidates {
							t.Fatalf("step %d: %d candidates cached, %d cache-less", step, got.Candidates, want.Candidates)
						}
						if d.estimateOnly() {
							continue
						}
						if err := sameMatches(got.Matches, m.expect(m.doc(text), "", m.t)); err != nil {
							t.Fatalf("step %d pass %d: Query(%q) against the model: %v", step, pass, text, err)
						}
					}
				}
			}
			for step := range steps {
				pick := func() string {
					if len(ids) > 0 && rng.IntN(2) == 0 {
						return ids[rng.IntN(len(ids))]
					}
					id := fmt.Sprintf("doc-%d", len(ids))
					ids = append(ids, id)
					return id
				}
				// NB: new texts are often near a query text, so that the
				// queries' buckets and candidates change.
				text := func() string { return randomText(rng, append(texts, queries...)) }
				switch op := rng.IntN(10); {
				case op < 5: // Put or upsert
					id, tx := pick(), text()
					if err := d.Put(Doc{ID: id, Text: tx}, nil); err != nil {
						t.Fatal(err)
					}
					m.docs[id], texts = m.doc(tx), append(texts, tx)
				case op < 7: // Delete
					if len(ids) == 0 {
						continue
					}
					id := ids[rng.IntN(len(ids))]
					if err := d.Delete(id, nil); err == nil {
						delete(m.docs, id)
					}
				case op < 9: // Load, replacing some documents
					var docs []Doc
					for range 1 + rng.IntN(5) {
						docs = append(docs, Doc{ID: pick(), Text: text()})
					}
					if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
						t.Fatalf("step %d: Load: %v", step, err)
					}
					for _, doc := range docs {
						m.docs[doc.ID], texts = m.doc(doc.Text), append(texts, doc.Text)
					}
				default:
					if _, err := d.PurgeEmptyLists(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				check(step)
			}
			// A reopened database (no cache yet) gives the same answers.
			before := map[string][]Match{}
			for _, q := range queries {
				res, err := d.Query(context.Background(), q, nil)
				if err != nil {
					t.Fatal(err)
				}
				before[q] = res.Matches
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, "db", &Options{fs: fs, QueryCacheSize: o.QueryCacheSize})
			for _, q := range queries {
				res, err := d.Query(context.Background(), q, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameMatches(res.Matches, before[q]); err != nil {
					t.Fatalf("after a reopen: %v", err)
				}
			}
		})
	}
}

// Ensure that the cache's byte budget holds: entries are evicted once it
// is full, and an entry larger than a shard's budget is not kept.
func TestQueryCacheBudget(t *testing.T) {
	c := newQueryCache(cacheShards * 10000)
	for n := range uint64(1000) {
		c.putDoc(n, cachedDoc{id: "x", setLen: 100, elems: make([]uint64, 100)})
	}
	var bytes int64
	docs := 0
	for i := range c.shards {
		s := &c.shards[i]
		if s.bytes > s.maxBytes {
			t.Fatalf("shard %d holds %d bytes, budget %d", i, s.bytes, s.maxBytes)
		}
		bytes += s.bytes
		docs += len(s.docs)
	}
	if docs == 0 || docs == 1000 {
		t.Fatalf("%d of 1000 documents kept in %d bytes", docs, bytes)
	}
	c.putDoc(5000, cachedDoc{id: "big", elems: make([]uint64, 10000)})
	if _, ok := c.getDoc(5000); ok {
		t.Fatal("an entry over a shard's budget was kept")
	}
	if newQueryCache(0) != nil || newQueryCache(-1) != nil {
		t.Fatal("a cache of no bytes")
	}
}
