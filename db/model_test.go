package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// modelDoc is what the model knows of a stored document.
type modelDoc struct {
	text string
	set  []uint64
	sig  []uint32
	keys []uint64
}

// model is the expected state: the documents by id, and the same pipeline
// (minhash and bands, no storage) to answer queries by brute force.
type model struct {
	docs   map[string]modelDoc
	h      *minhash.Hasher
	params bands.Params
	t      float64
	sets32 bool // sets mode: verification compares 32-bit sets
}

func newModel(t testing.TB, p Params) *model {
	h, err := minhash.NewHasher(
		minhash.Options{Kind: p.Shingle, K: p.ShingleSize, Bag: p.Bag, Normalization: p.Normalization, StopWords: p.StopWords},
		minhash.SketchOptions{Scheme: p.Scheme, NumPerm: p.NumPerm, Seed: p.Seed})
	if err != nil {
		t.Fatal(err)
	}
	return &model{docs: map[string]modelDoc{}, h: h, params: p.Bands, t: p.Threshold, sets32: p.Storage == StorageSets}
}

func (m *model) doc(text string) modelDoc {
	set, sig := m.h.Document(nil, nil, text)
	if m.sets32 {
		set = codec.Widen(nil, codec.Set32Of(nil, set))
	}
	keys, _ := bands.AppendKeys(nil, sig, m.params)
	for i := range keys {
		keys[i] = codec.BucketOf(keys[i]) // as the index keys its buckets
	}
	return modelDoc{text, set, sig, keys}
}

func (m *model) clone() map[string]modelDoc { return maps.Clone(m.docs) }

// sharesBand reports whether two documents fall in the same bucket of
// some band: whether the index makes them a candidate pair.
func sharesBand(a, b modelDoc) bool {
	for i := range a.keys {
		if a.keys[i] == b.keys[i] {
			return true
		}
	}
	return false
}

// expect answers a query by brute force over every model document: those
// that share a band (same band, same key) with q and reach the threshold,
// sorted as the DB sorts.
func (m *model) expect(q modelDoc, self string, t float64) []Match {
	var out []Match
	for id, d := range m.docs {
		if id == self {
			continue
		}
		shared := 0
		for i := range q.keys {
			if q.keys[i] == d.keys[i] {
				shared++
			}
		}
		if shared == 0 {
			continue
		}
		if j := minhash.Jaccard(q.set, d.set); j >= t {
			// NB: the estimate no higher than the sizes allow (J <=
			// smaller/larger), as every answer gives it.
			e := min(minhash.Estimate(q.sig, d.sig), float64(min(len(q.set), len(d.set)))/float64(max(len(q.set), len(d.set))))
			out = append(out, Match{ID: id, Jaccard: j, Estimate: e, Bands: shared})
		}
	}
	slices.SortFunc(out, func(a, b Match) int { return cmp.Or(cmp.Compare(b.Jaccard, a.Jaccard), cmp.Compare(a.ID, b.ID)) })
	return out
}

var vocabulary = strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma")

// randomText makes a text of 6 to 14 words from a small vocabulary, so
// that near-duplicates are common; half the time it mutates an existing
// text by a word or two.
func randomText(rng *rand.Rand, existing []string) string {
	if len(existing) > 0 && rng.IntN(2) == 0 {
		w := strings.Fields(existing[rng.IntN(len(existing))])
		for range 1 + rng.IntN(2) {
			switch i := rng.IntN(len(w)); rng.IntN(3) {
			case 0:
				w[i] = vocabulary[rng.IntN(len(vocabulary))]
			case 1:
				w = append(w, vocabulary[rng.IntN(len(vocabulary))])
			default:
				if len(w) > 2 {
					w = append(w[:i], w[i+1:]...)
				}
			}
		}
		return strings.Join(w, " ")
	}
	w := make([]string, 6+rng.IntN(9))
	for i := range w {
		w[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

// checkState compares the DB's documents, count and consistency with the
// model.
func checkState(t *testing.T, d *DB, want map[string]modelDoc) {
	t.Helper()
	n, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(want)) {
		t.Fatalf("Count = %d, model has %d", n, len(want))
	}
	seen := 0
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[doc.ID]
		if !ok {
			t.Fatalf("stored document %q is not in the model", doc.ID)
		}
		if !slices.Equal(doc.Shingles, w.set) || !slices.Equal(doc.Signature, w.sig) {
			t.Fatalf("document %q differs from the model", doc.ID)
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("All yielded %d documents, model has %d", seen, len(want))
	}
	// HasIDs: every model id, each beside one the model does not hold.
	var ids []string
	for id := range want {
		ids = append(ids, id, id+"/absent")
	}
	found, err := d.HasIDs(ids)
	if err != nil || len(found) != len(ids) {
		t.Fatalf("HasIDs of %d ids: %d answers, %v", len(ids), len(found), err)
	}
	for i, id := range ids {
		if _, ok := want[id]; found[i] != ok {
			t.Fatalf("HasIDs says %q: %v, the model %v", id, found[i], ok)
		}
	}
	rep, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("check: %v", rep.Problems)
	}
}

func sameMatches(got, want []Match) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d matches, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Errorf("match %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	return nil
}

// runModel drives random operations against d and the model, checking
// every answer; reopen, when set, closes and reopens the DB at random
// points; compact forces Pebble compactions (merges with the base).
func runModel(t *testing.T, rng *rand.Rand, dir string, opts *Options, steps int, reopen bool) {
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	m := newModel(t, d.Params())
	ids := func() []string {
		out := make([]string, 0, len(m.docs))
		for id := range m.docs {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	texts := func() []string {
		var out []string
		for _, id := range ids() {
			out = append(out, m.docs[id].text)
		}
		return out
	}
	nextID := 0
	pickID := func() string {
		if ex := ids(); len(ex) > 0 && rng.IntN(3) == 0 {
			return ex[rng.IntN(len(ex))]
		}
		nextID++
		return fmt.Sprintf("doc-%d", nextID)
	}
	for step := range steps {
		switch op := rng.IntN(114); {
		case op < 35: // Put (insert or upsert)
			id, text := pickID(), randomText(rng, texts())
			if err := d.Put(Doc{ID: id, Text: text}, nil); err != nil {
				t.Fatalf("step %d: Put: %v", step, err)
			}
			m.docs[id] = m.doc(text)
		case op < 45: // PutBatch, with repeated ids; or prepared first, with a write between
			var docs []Doc
			for range 1 + rng.IntN(6) {
				docs = append(docs, Doc{ID: pickID(), Text: randomText(rng, texts())})
			}
			wo := &WriteOptions{NoSync: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				if _, err := d.PutBatch(docs, wo); err != nil {
					t.Fatalf("step %d: PutBatch: %v", step, err)
				}
			} else {
				pb, err := d.PrepareBatch(docs, wo)
				if err != nil {
					t.Fatalf("step %d: PrepareBatch: %v", step, err)
				}
				if rng.IntN(2) == 0 {
					// A write of one of its ids after the preparation: the
					// batch, written later, replaces it.
					mid := Doc{ID: docs[0].ID, Text: randomText(rng, texts())}
					if err := d.Put(mid, nil); err != nil {
						t.Fatalf("step %d: Put: %v", step, err)
					}
					m.docs[mid.ID] = m.doc(mid.Text)
				}
				res, err := d.PutPrepared(context.Background(), pb)
				if err != nil || res.Stored != pb.Len() || res.Stored+res.Repeated != len(docs) {
					t.Fatalf("step %d: PutPrepared of %d documents: %+v (Len %d), %v", step, len(docs), res, pb.Len(), err)
				}
				if _, err := d.PutPrepared(context.Background(), pb); !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("step %d: PutPrepared again: %v, want ErrInvalidOptions", step, err)
				}
			}
			for _, doc := range docs {
				m.docs[doc.ID] = m.doc(doc.Text)
			}
		case op < 55: // a batch with one bad document changes nothing
			docs := []Doc{{ID: pickID(), Text: randomText(rng, texts())}, {ID: pickID(), Text: "   "}}
			if _, err := d.PutBatch(docs, nil); !errors.Is(err, ErrEmptyDocument) {
				t.Fatalf("step %d: PutBatch with an empty document: %v", step, err)
			}
		case op < 65: // Delete
			id := pickID()
			err := d.Delete(id, nil)
			if _, ok := m.docs[id]; ok {
				if err != nil {
					t.Fatalf("step %d: Delete(%q): %v", step, id, err)
				}
				delete(m.docs, id)
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: Delete of missing %q: %v", step, id, err)
			}
		case op < 80: // Query by text
			q := m.doc(randomText(rng, texts()))
			th := m.t
			if rng.IntN(3) == 0 {
				th = 0.3 + 0.7*rng.Float64()
			}
			res, err := d.Query(context.Background(), q.text, &QueryOptions{Threshold: th})
			if err != nil {
				t.Fatalf("step %d: Query: %v", step, err)
			}
			if err := sameMatches(res.Matches, m.expect(q, "", th)); err != nil {
				t.Fatalf("step %d: Query(%q, %.3f): %v", step, q.text, th, err)
			}
		case op < 92: // Query by id
			id := pickID()
			res, err := d.QueryID(context.Background(), id, nil)
			if w, ok := m.docs[id]; ok {
				if err != nil {
					t.Fatalf("step %d: QueryID: %v", step, err)
				}
				if err := sameMatches(res.Matches, m.expect(w, id, m.t)); err != nil {
					t.Fatalf("step %d: QueryID(%q): %v", step, id, err)
				}
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: QueryID of missing %q: %v", step, id, err)
			}
		case op < 96: // Get
			id := pickID()
			doc, err := d.Get(id)
			if w, ok := m.docs[id]; ok {
				if err != nil || !slices.Equal(doc.Shingles, w.set) {
					t.Fatalf("step %d: Get(%q) = %v", step, id, err)
				}
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: Get of missing %q: %v", step, id, err)
			}
		case op < 98 && d.rkv != nil:
			// Compaction and purge are Pebble's (ErrUnsupported on
			// Redis: TestRedisUnsupported).
		case op < 97:
			if err := d.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
				t.Fatal(err)
			}
		case op < 98: // purge emptied lists: nothing observable may change
			if _, err := d.PurgeEmptyLists(context.Background()); err != nil {
				t.Fatalf("step %d: PurgeEmptyLists: %v", step, err)
			}
			if rep, err := d.Check(context.Background()); err != nil || !rep.OK() || rep.EmptyLists != 0 {
				t.Fatalf("step %d: check after a purge: %+v, %v", step, rep, err)
			}
		case op < 99: // Pairs and Clusters against the model's banding
			checkPairs(t, d, m)
		case op < 104: // Explain
			ex := ids()
			if len(ex) < 2 {
				continue
			}
			a, b := ex[rng.IntN(len(ex))], ex[rng.IntN(len(ex))]
			e, err := d.Explain(a, b)
			if err != nil {
				t.Fatalf("step %d: Explain: %v", step, err)
			}
			shared := false
			for i := range e.Collide {
				want := m.docs[a].keys[i] == m.docs[b].keys[i]
				shared = shared || want
				if e.Collide[i] != want {
					t.Fatalf("step %d: Explain(%s, %s) band %d collide = %v", step, a, b, i, e.Collide[i])
				}
			}
			j := minhash.Jaccard(m.docs[a].set, m.docs[b].set)
			if a == b {
				// A document collides with itself in every band, and no
				// query or pair reports it with itself.
				if !shared || e.Jaccard != 1 || e.Found {
					t.Fatalf("step %d: Explain(%s, %s) = %+v, want every band, J 1, not found", step, a, b, e)
				}
				continue
			}
			if e.Jaccard != j || e.Found != (shared && j >= m.t) {
				t.Fatalf("step %d: Explain(%s, %s) = %+v, want J %v", step, a, b, e, j)
			}
		case op < 107: // one bucket's members
			ex := ids()
			if len(ex) == 0 {
				continue
			}
			doc := m.docs[ex[rng.IntN(len(ex))]]
			band := rng.IntN(len(doc.keys))
			got, err := d.Bucket(band, doc.keys[band])
			if err != nil {
				t.Fatalf("step %d: Bucket: %v", step, err)
			}
			var want []string
			for id, o := range m.docs {
				if o.keys[band] == doc.keys[band] {
					want = append(want, id)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: Bucket members %v, model %v", step, got, want)
			}
		case op < 110: // PutIfNew
			id, text := pickID(), randomText(rng, texts())
			q := m.doc(text)
			want := m.expect(q, id, m.t)
			dup, err := d.PutIfNew(Doc{ID: id, Text: text}, nil)
			if err != nil {
				t.Fatalf("step %d: PutIfNew: %v", step, err)
			}
			switch {
			case len(want) == 0 && dup != nil:
				t.Fatalf("step %d: PutIfNew refused %q as a duplicate of %v; the model has none", step, id, dup)
			case len(want) > 0 && (dup == nil || !reflect.DeepEqual(*dup, want[0])):
				t.Fatalf("step %d: PutIfNew(%q) = %v, model's best match %v", step, id, dup, want[0])
			case dup == nil:
				m.docs[id] = q
			}
		case op < 114: // PutIfNewBatch: as PutIfNew of each in turn, an empty one refused alone
			var docs []Doc
			var batchTexts []string // NB: near-duplicates within the batch too
			for range 1 + rng.IntN(6) {
				text := randomText(rng, append(texts(), batchTexts...))
				id := pickID()
				if old, ok := m.docs[id]; ok && rng.IntN(3) == 0 {
					// NB: a stored id with its own text: stored again
					// (unless another is a near-duplicate), Unchanged
					// (a read-through's RT-1: no step was).
					text = old.text
				}
				batchTexts = append(batchTexts, text)
				docs = append(docs, Doc{ID: id, Text: text})
			}
			if rng.IntN(4) == 0 {
				docs = slices.Insert(docs, rng.IntN(len(docs)+1), Doc{ID: pickID(), Text: " \t "})
			}
			res, err := d.PutIfNewBatch(context.Background(), docs, &WriteOptions{NoSync: rng.IntN(2) == 0})
			if err != nil || len(res) != len(docs) {
				t.Fatalf("step %d: PutIfNewBatch of %d documents: %d results, %v", step, len(docs), len(res), err)
			}
			for i, doc := range docs {
				r := res[i]
				if strings.TrimSpace(doc.Text) == "" {
					if !errors.Is(r.Err, ErrEmptyDocument) || r.Match != nil || r.Replaced {
						t.Fatalf("step %d: PutIfNewBatch: the empty document %d: %+v", step, i, r)
					}
					continue
				}
				q := m.doc(doc.Text)
				want := m.expect(q, doc.ID, m.t)
				_, had := m.docs[doc.ID]
				switch {
				case r.Err != nil:
					t.Fatalf("step %d: PutIfNewBatch: document %d: %v", step, i, r.Err)
				case len(want) == 0 && r.Match != nil:
					t.Fatalf("step %d: PutIfNewBatch refused %q as a duplicate of %v; the model has none", step, doc.ID, r.Match)
				case len(want) > 0 && (r.Match == nil || !reflect.DeepEqual(*r.Match, want[0])):
					t.Fatalf("step %d: PutIfNewBatch: %q: %v, model's best match %v", step, doc.ID, r.Match, want[0])
				case r.Match == nil && r.Replaced != had:
					t.Fatalf("step %d: PutIfNewBatch: %q stored, replaced = %v; the model had it: %v", step, doc.ID, r.Replaced, had)
				case r.Unchanged != (r.Match == nil && had && slices.Equal(m.docs[doc.ID].set, q.set)):
					t.Fatalf("step %d: PutIfNewBatch: %q: unchanged = %v; the model had it: %v, with the same set: %v", step, doc.ID, r.Unchanged, had, had && slices.Equal(m.docs[doc.ID].set, q.set))
				case r.Match == nil:
					m.docs[doc.ID] = q
				case r.Replaced:
					t.Fatalf("step %d: PutIfNewBatch: %q refused and replaced", step, doc.ID)
				}
			}
		default:
			if reopen {
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				if d, err = Open(dir, &Options{fs: opts.fs}); err != nil {
					t.Fatalf("step %d: reopen: %v", step, err)
				}
			}
		}
		if step%50 == 49 {
			checkState(t, d, m.docs)
		}
	}
	checkState(t, d, m.docs)
}

// Ensure that thousands of random puts, upserts, deletes and queries give
// exactly the model's answers, for char and word shingles.
func TestModel(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	for i, opts := range []*Options{
		{},
		{Shingle: minhash.ShingleWord, ShingleSize: 2, Threshold: 0.5, Scheme: minhash.SchemeClassic, NumPerm: 64},
		{Bag: true, ShingleSize: 3, Threshold: 0.6, Bands: 20, Rows: 3},
		{Storage: StorageSets, Threshold: 0.5, StoreText: true},
		{Storage: StorageSets, Shingle: minhash.ShingleWord, ShingleSize: 1, Threshold: 0.7},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			opts.fs = vfs.NewMem()
			runModel(t, rand.New(rand.NewPCG(uint64(i), 7)), "db", opts, steps, false)
		})
	}
}

// Ensure that the model test holds when the database is closed and
// reopened at random points (everything survives a restart).
func TestModelRestart(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 400
	}
	runModel(t, rand.New(rand.NewPCG(9, 9)), t.TempDir(), &Options{NoSync: true}, steps, true)
}

// checkPairs compares Pairs and Clusters with the model: the pairs are the
// model's documents that share a band and reach the threshold, each once;
// the clusters are the connected components of those pairs.
func checkPairs(t *testing.T, d *DB, m *model) {
	t.Helper()
	want := map[[2]string]float64{}
	var ids []string
	for id := range m.docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// NB: the candidates by the model's buckets (band, key), which give
	// the pairs that share a band (sharesBand) without trying every pair:
	// on 20,000 documents the double loop took 40 s, and under -race
	// 7 minutes of CI's bound (TestUpgradeCountsTheSketches).
	type bucket struct {
		band int
		key  uint64
	}
	buckets := map[bucket][]int{}
	for x, id := range ids {
		for i, k := range m.docs[id].keys {
			buckets[bucket{i, k}] = append(buckets[bucket{i, k}], x)
		}
	}
	tried := map[[2]int]bool{}
	for _, xs := range buckets {
		for i, x := range xs {
			for _, y := range xs[i+1:] {
				if tried[[2]int{x, y}] {
					continue
				}
				tried[[2]int{x, y}] = true
				a, b := ids[x], ids[y] // NB: x < y, ids sorted: a < b
				if j := minhash.Jaccard(m.docs[a].set, m.docs[b].set); j >= m.t {
					want[[2]string{a, b}] = j
				}
			}
		}
	}
	got := map[[2]string]float64{}
	for p, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		k := [2]string{min(p.A, p.B), max(p.A, p.B)}
		if _, dup := got[k]; dup {
			t.Fatalf("Pairs reported %v twice", k)
		}
		got[k] = p.Jaccard
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Pairs found %d pairs, the model %d", len(got), len(want))
	}
	// Components by a plain graph search over the model's pairs.
	adj := map[string][]string{}
	for k := range want {
		adj[k[0]] = append(adj[k[0]], k[1])
		adj[k[1]] = append(adj[k[1]], k[0])
	}
	seen := map[string]bool{}
	var comps [][]string
	for _, id := range ids {
		if seen[id] || len(adj[id]) == 0 {
			continue
		}
		var comp []string
		stack := []string{id}
		seen[id] = true
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comp = append(comp, x)
			for _, y := range adj[x] {
				if !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
		slices.Sort(comp)
		comps = append(comps, comp)
	}
	clusters, err := d.Clusters(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var gotComps [][]string
	for _, c := range clusters {
		if c.IDs[0] != c.Representative {
			t.Fatalf("cluster %v does not start with its representative", c)
		}
		ids := slices.Clone(c.IDs)
		slices.Sort(ids)
		gotComps = append(gotComps, ids)
	}
	sortComps := func(cs [][]string) {
		slices.SortFunc(cs, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	}
	sortComps(comps)
	sortComps(gotComps)
	if !slices.EqualFunc(comps, gotComps, slices.Equal) {
		t.Fatalf("Clusters = %v, model %v", gotComps, comps)
	}
}
