package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
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
					for pass := range 3 { // the later ones from the cache (lists: the third)
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
				checkCache(t, d.qcache)
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
		c.putDoc(n, cachedDoc{id: "x", setLen: 100, elems: make([]uint64, 100)}, codec.Counters{})
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
	checkCache(t, c)
	c.putDoc(5000, cachedDoc{id: "big", elems: make([]uint64, 10000)}, codec.Counters{})
	if _, ok := c.getDoc(5000); ok {
		t.Fatal("an entry over a shard's budget was kept")
	}
	if newQueryCache(0) != nil || newQueryCache(-1) != nil {
		t.Fatal("a cache of no bytes")
	}
}

// Ensure that a list entry serves exactly the queries whose view holds the
// same list: a write makes stale the entries of the lists it changes and
// no other, an entry read by an older view is never served to a newer
// one once the list changed in between, a load makes every older entry
// stale, and a change of a list that shares the entry's change slot
// does. The oracle is the rule itself, computed by hand for each case.
func TestQueryCacheListVersions(t *testing.T) {
	v := func(next, live uint64) codec.Counters { return codec.Counters{NextDoc: next, Live: live} }
	a, b := postingKey{0, 7}, postingKey{3, 9}
	hit := func(c *queryCache, pk postingKey, at codec.Counters) bool {
		_, ok := c.getList(pk, at)
		return ok
	}
	c := newQueryCache(1 << 20)
	// A list is cached the second time it is offered (the doorkeeper).
	c.putList(a, v(5, 4), []uint64{1, 2})
	if hit(c, a, v(5, 4)) {
		t.Fatal("a list offered once was cached")
	}
	c.putList(a, v(5, 4), []uint64{1, 2})
	for range 2 {
		c.putList(b, v(5, 4), []uint64{3})
	}
	if !hit(c, a, v(5, 4)) || !hit(c, b, v(5, 4)) {
		t.Fatal("a list offered twice was not cached")
	}
	// A put at version (6, 5) changes list a only.
	c.changing([]postingKey{a}, v(6, 5))
	if hit(c, a, v(6, 5)) {
		t.Fatal("list a, changed at (6,5), served from its (5,4) entry")
	}
	if hit(c, a, v(5, 4)) {
		// NB: right for that view, but the cache keeps only a list's
		// latest change and cannot tell: a miss, never a wrong list.
		t.Fatal("list a served to a view older than its latest change")
	}
	if docs, ok := c.getList(b, v(6, 5)); !ok || !slices.Equal(docs, []uint64{3}) {
		t.Fatalf("list b, unchanged by the put, not served at (6,5): %v %v", docs, ok)
	}
	// A query that opened its view before the put reads a list the put
	// changed and offers it after the put was recorded: not kept.
	fresh := postingKey{5, 11}
	c.changing([]postingKey{fresh}, v(6, 5))
	for range 2 {
		c.putList(fresh, v(5, 4), []uint64{8})
	}
	if _, ok := c.listShard(listKey(fresh)).lists[listKey(fresh)]; ok || hit(c, fresh, v(6, 5)) || hit(c, fresh, v(7, 5)) {
		t.Fatal("a list read before a change was cached")
	}
	c.putList(a, v(5, 4), []uint64{1, 2})
	if hit(c, a, v(6, 5)) || hit(c, a, v(7, 5)) {
		t.Fatal("an entry read before a change served after it")
	}
	// Read again at (6,5): served to later views until the next change.
	c.putList(a, v(6, 5), []uint64{1, 2, 4})
	if docs, ok := c.getList(a, v(8, 6)); !ok || !slices.Equal(docs, []uint64{1, 2, 4}) {
		t.Fatalf("list a as of (6,5) not served at (8,6): %v %v", docs, ok)
	}
	if hit(c, a, v(5, 4)) {
		t.Fatal("a list read at (6,5) served to a view at (5,4), before its change")
	}
	// A delete at (8, 5) (same NextDoc, fewer live) is newer than (8, 6).
	c.changing([]postingKey{a}, v(8, 5))
	if hit(c, a, v(8, 5)) || !hit(c, b, v(8, 5)) {
		t.Fatal("a delete's change is not ordered after the put's")
	}
	// A load changes every list.
	c.changingAll(v(20, 15))
	if hit(c, b, v(20, 15)) {
		t.Fatal("list b served after a load")
	}
	c.putList(b, v(20, 15), []uint64{3, 17})
	if !hit(c, b, v(21, 16)) {
		t.Fatal("list b read after the load not served")
	}
	// A change of another list of b's slot makes b's entry stale (a miss,
	// never a wrong list); a change of a list in another slot does not.
	s := c.listShard(listKey(b))
	var same, other postingKey
	for bucket := uint64(1 << 20); same == (postingKey{}) || other == (postingKey{}); bucket++ {
		pk := postingKey{1, bucket}
		switch {
		case c.listShard(listKey(pk)) != s:
		case s.changedSlot(listKey(pk)) == s.changedSlot(listKey(b)):
			same = pk
		default:
			other = pk
		}
	}
	c.changing([]postingKey{other}, v(21, 16))
	if !hit(c, b, v(22, 17)) {
		t.Fatal("list b stale after a change of a list in another slot")
	}
	c.changing([]postingKey{same}, v(22, 17))
	if hit(c, b, v(22, 17)) {
		t.Fatal("list b served after a change of a list of its slot")
	}
}

// Ensure that queries answered through the cache while one writer puts,
// upserts and deletes are exactly the brute-force model's answers for the
// state their view holds: each query reads the version of its view, and
// the writer recorded the model of every version before writing it. The
// writes change some lists and not others, so entries survive writes and
// are served to views of later versions (the rule TestQueryCacheListVersions
// checks by hand).
func TestQueryCacheConcurrent(t *testing.T) {
	steps, readers := 300, 3
	if testing.Short() {
		steps = 120
	}
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	m := newModel(t, d.Params())
	rng := rand.New(rand.NewPCG(7, 11))
	var texts []string
	for range 40 {
		texts = append(texts, randomText(rng, texts))
	}
	queries := texts[:12]
	var asked atomic.Int64
	var failed atomic.Bool // a reader stopped on an error
	var mu sync.Mutex
	states := map[codec.Counters]map[string]modelDoc{d.counters: m.clone()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, readers+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		c := d.counters
		ids := []string{}
		for step := range steps {
			if len(ids) > 4 && rng.IntN(5) == 0 {
				id := ids[rng.IntN(len(ids))]
				if _, ok := m.docs[id]; !ok {
					continue
				}
				delete(m.docs, id)
				c.Live--
				mu.Lock()
				states[c] = m.clone()
				mu.Unlock()
				if err := d.Delete(id, nil); err != nil {
					errc <- err
					return
				}
				continue
			}
			id := fmt.Sprintf("doc-%d", rng.IntN(step+1))
			text := randomText(rng, texts)
			if _, ok := m.docs[id]; !ok {
				c.Live++
				ids = append(ids, id)
			}
			c.NextDoc++
			m.docs[id] = m.doc(text)
			mu.Lock()
			states[c] = m.clone()
			mu.Unlock()
			if err := d.Put(Doc{ID: id, Text: text}, nil); err != nil {
				errc <- err
				return
			}
			// NB: the readers query between any two writes, however
			// the scheduler runs the goroutines.
			for from := asked.Load(); asked.Load() < from+int64(readers) && !failed.Load(); {
				runtime.Gosched()
			}
		}
	}()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer failed.Store(true) // NB: a reader returns only when done or failed
			rng := rand.New(rand.NewPCG(uint64(r), 5))
			q, _ := d.queryOptions(nil)
			qm := newModel(t, d.Params())
			for n := 0; ; n++ {
				select {
				case <-done:
					if n > 0 {
						return
					}
				default:
				}
				text := queries[rng.IntN(len(queries))]
				sc := d.scratch.Get().(*queryScratch)
				v, release, err := d.openView(context.Background(), d.pdb, &sc.pv)
				if err != nil {
					errc <- err
					return
				}
				version, err := v.version()
				if err != nil {
					release()
					errc <- err
					return
				}
				res, err := d.answer(context.Background(), v, &QueryInput{Text: text}, q, sc)
				release()
				d.putScratch(sc)
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				state, ok := states[version]
				mu.Unlock()
				if !ok {
					errc <- fmt.Errorf("a view at %+v, a version the writer never wrote", version)
					return
				}
				qm.docs = state
				asked.Add(1)
				if err := sameMatches(res.Matches, qm.expect(qm.doc(text), "", qm.t)); err != nil {
					errc <- fmt.Errorf("query %d at %+v: %w", n, version, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	cm := d.qcache.metrics()
	hits, stale := cm.ListHits, cm.ListStale
	var across int64 // NB: not a metric: only this test asks
	for i := range d.qcache.shards {
		across += d.qcache.shards[i].listAcross
	}
	t.Logf("%d queries; list entries: %d served (%d to a view of a later version), %d stale", asked.Load(), hits, across, stale)
	if across == 0 || stale == 0 {
		t.Fatalf("the run never served an entry across a write (%d) or found one stale (%d): it tested nothing", across, stale)
	}
}

// checkCache checks the cache's bookkeeping: every shard's LRU list runs
// through exactly its mapped entries, each mapped to its own slot, their
// sizes add up to the shard's bytes, within budget, and the free slots are
// empty.
func checkCache(t *testing.T, c *queryCache) {
	t.Helper()
	if c == nil {
		return
	}
	for si := range c.shards {
		s := &c.shards[si]
		s.mu.Lock()
		seen := map[int32]bool{}
		var bytes int64
		for i, n := s.ents[0].next, 0; i != 0; i = s.ents[i].next {
			if n++; n > len(s.ents) || seen[i] {
				t.Fatalf("shard %d: the LRU list loops", si)
			}
			seen[i] = true
			e := &s.ents[i]
			if s.ents[e.next].prev != i {
				t.Fatalf("shard %d: slot %d's successor does not link back", si, i)
			}
			m := s.docs
			if e.list {
				m = s.lists
			}
			if m[e.key] != i {
				t.Fatalf("shard %d: slot %d (key %d) is not where its map says", si, i, e.key)
			}
			if s.data[i] == nil && e.size > entryOverhead {
				t.Fatalf("shard %d: slot %d has no payload", si, i)
			}
			bytes += e.size
		}
		if len(seen) != len(s.docs)+len(s.lists) {
			t.Fatalf("shard %d: %d entries on the LRU list, %d mapped", si, len(seen), len(s.docs)+len(s.lists))
		}
		if bytes != s.bytes || bytes > s.maxBytes {
			t.Fatalf("shard %d: entries of %d bytes, counted %d, budget %d", si, bytes, s.bytes, s.maxBytes)
		}
		for _, i := range s.free {
			if seen[i] || s.data[i] != nil || s.ents[i] != (cacheEntry{}) {
				t.Fatalf("shard %d: free slot %d is in use", si, i)
			}
		}
		if len(seen)+len(s.free)+1 != len(s.ents) {
			t.Fatalf("shard %d: %d slots, %d used, %d free", si, len(s.ents), len(seen), len(s.free))
		}
		s.mu.Unlock()
	}
}

// Ensure that a doc entry gives back exactly what was put, whatever the
// shape of its parts (an odd signature, an empty id, empty but present
// metadata, derived but empty elements), and that a later put keeps the
// parts it lacks from the entry it replaces.
func TestQueryCacheDocPayload(t *testing.T) {
	c := newQueryCache(1 << 20)
	cases := []cachedDoc{
		{id: "doc-1", setLen: 3, elems: []uint64{1, 1 << 63, 7}, sig: []uint32{9, 8, 7}, meta: []byte("m"), expires: 42},
		{id: "", setLen: 0, elems: []uint64{}, sig: []uint32{5}},
		{id: "odd-id-of-nine", meta: []byte{}},
		{id: "x", setLen: 2},
		{id: "long", elems: []uint64{1, 2, 3, 4}, meta: []byte("0123456789abcdef0")},
	}
	for n, want := range cases {
		c.putDoc(uint64(n), want, codec.Counters{})
		got, ok := c.getDoc(uint64(n))
		if !ok {
			t.Fatalf("doc %d: not cached", n)
		}
		same := got.id == want.id && got.setLen == want.setLen && got.expires == want.expires &&
			slices.Equal(got.elems, want.elems) && (got.elems == nil) == (want.elems == nil) &&
			slices.Equal(got.sig, want.sig) && (got.sig == nil) == (want.sig == nil) &&
			string(got.meta) == string(want.meta) && (got.meta == nil) == (want.meta == nil)
		if !same {
			t.Fatalf("doc %d: put %+v, got %+v", n, want, got)
		}
	}
	// A put with the signature only keeps the elements the entry had.
	c.putDoc(3, cachedDoc{id: "x", setLen: 2, elems: []uint64{4, 5}}, codec.Counters{})
	c.putDoc(3, cachedDoc{id: "x", setLen: 2, sig: []uint32{1, 2, 3}}, codec.Counters{})
	got, _ := c.getDoc(3)
	if !slices.Equal(got.elems, []uint64{4, 5}) || !slices.Equal(got.sig, []uint32{1, 2, 3}) {
		t.Fatalf("merged entry: %+v", got)
	}
	checkCache(t, c)
}
