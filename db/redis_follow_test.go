package db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/minhash"
)

// followCorpus is a corpus of near-duplicate groups for the tests of
// Pairs and Clusters beside a writer: group g has followSize members, each
// its group's base text (version v) with one word of its own changed, so
// that members pair at about 0.85 and groups are far apart.
const (
	followGroups = 500
	followSize   = 6
)

func followID(g, i int) string { return fmt.Sprintf("g%03d-%d", g, i) }

// followText is member i of group g in version v (v ≥ 1000: a text of its
// own, in no group).
func followText(g, i, v int) string {
	base := g*100003 + v*7919
	if v >= 1000 {
		base += i * 31
	}
	rng := rand.New(rand.NewPCG(uint64(base), 5))
	w := make([]string, 40)
	for k := range w {
		b := make([]byte, 3+rng.IntN(6))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		w[k] = string(b)
	}
	w[(i*7+3)%40] = fmt.Sprintf("edit%dx%d", i, v)
	return strings.Join(w, " ")
}

// followOracle is brute force (the prefix-filtering join, exact) over
// texts by id: the pairs reaching t, each with A < B.
func followOracle(texts map[string]string, t float64) map[[2]string]float64 {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range texts {
			if !yield(id) {
				return
			}
		}
	})
	sets := make([][]uint64, len(ids))
	for i, id := range ids {
		sets[i], _ = h.Document(nil, nil, texts[id])
	}
	out := map[[2]string]float64{}
	for _, p := range allpairs.Join(sets, t) {
		out[[2]string{ids[p.A], ids[p.B]}] = p.Jaccard
	}
	return out
}

// followComponents returns the connected components of pairs (two or
// more ids), each sorted.
func followComponents(pairs map[[2]string]float64) [][]string {
	parent := map[string]string{}
	var find func(string) string
	find = func(s string) string {
		if p, ok := parent[s]; ok && p != s {
			r := find(p)
			parent[s] = r
			return r
		}
		parent[s] = s
		return s
	}
	for p := range pairs {
		ra, rb := find(p[0]), find(p[1])
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	by := map[string][]string{}
	for s := range parent {
		by[find(s)] = append(by[find(s)], s)
	}
	var out [][]string
	for _, c := range by {
		slices.Sort(c)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func followPairs(t *testing.T, ctx context.Context, d *DB, po *PairsOptions) map[[2]string]float64 {
	t.Helper()
	got := map[[2]string]float64{}
	for p, err := range d.Pairs(ctx, po) {
		if err != nil {
			t.Fatal(err)
		}
		k := [2]string{min(p.A, p.B), max(p.A, p.B)}
		if _, dup := got[k]; dup {
			t.Fatalf("pair %v reported twice", k)
		}
		got[k] = p.Jaccard
	}
	return got
}

// followIndex opens a new Redis index of threshold 0.5 holding the
// follow corpus (closed when the test ends), and returns it with its
// texts by id.
func followIndex(t *testing.T) (*DB, map[string]string) {
	t.Helper()
	d, err := Open(redisURL(t), &Options{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	texts := map[string]string{}
	var docs []Doc
	for g := range followGroups {
		for i := range followSize {
			docs = append(docs, Doc{ID: followID(g, i), Text: followText(g, i, 0)})
			texts[followID(g, i)] = followText(g, i, 0)
		}
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	return d, texts
}

// Ensure that Pairs and Clusters on Redis follow a document replaced
// after the ids were listed, through its id, to its new version, and
// leave out one deleted (as Scan does): with the writes made after the
// listing and before any chunk but the first is read, the pairs are brute
// force's over what the index then holds, and the clusters its components.
// They left out every replaced document.
func TestRedisPairsFollowReplaced(t *testing.T) {
	d, texts := followIndex(t)
	ctx := context.Background()
	version := 0
	// write replaces the members of the groups ≥ 100 with g%5 == 1 and
	// deletes those with g%5 == 3: none is in the first chunk's groups.
	write := func() {
		version++
		var docs []Doc
		var gone []string
		for g := 100; g < followGroups; g++ {
			for i := range followSize {
				switch g % 5 {
				case 1:
					docs = append(docs, Doc{ID: followID(g, i), Text: followText(g, i, version)})
					texts[followID(g, i)] = followText(g, i, version)
				case 3:
					if _, ok := texts[followID(g, i)]; ok {
						gone = append(gone, followID(g, i))
						delete(texts, followID(g, i))
					}
				}
			}
		}
		if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
			t.Error(err)
		}
		if len(gone) > 0 {
			if _, err := d.DeleteIDs(gone, &WriteOptions{NoSync: true}); err != nil {
				t.Error(err)
			}
		}
	}
	got := map[[2]string]float64{}
	for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			write() // NB: after the ids were listed and the first chunk read
		}
		got[[2]string{min(p.A, p.B), max(p.A, p.B)}] = p.Jaccard
	}
	want := followOracle(texts, 0.5)
	missing, extra := 0, 0
	for k, j := range want {
		if g, ok := got[k]; !ok || g != j {
			missing++
			if missing <= 3 {
				t.Errorf("pair %v at %v: got %v, %v", k, j, g, ok)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra++
			if extra <= 3 {
				t.Errorf("pair %v at %v is not brute force's", k, got[k])
			}
		}
	}
	if missing+extra > 0 {
		t.Errorf("Pairs: %d of brute force's %d pairs missing or wrong, %d not brute force's", missing, len(want), extra)
	}
	// Clusters: the writes once the pairs' ids are listed.
	wrote := false
	pctx := WithProgress(ctx, func(p Progress) {
		if !wrote && p.Phase == "verifying candidates" {
			wrote = true
			write()
		}
	})
	cs, err := d.Clusters(pctx, &PairsOptions{Threshold: 0.5})
	if err != nil {
		t.Fatalf("Clusters beside the writes: %v", err)
	}
	if !wrote {
		t.Fatal("the writes were not made")
	}
	var gotC [][]string
	for _, c := range cs {
		gotC = append(gotC, slices.Sorted(slices.Values(c.IDs)))
	}
	slices.SortFunc(gotC, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	wantC := followComponents(followOracle(texts, 0.5))
	if !slices.EqualFunc(gotC, wantC, slices.Equal) {
		t.Errorf("Clusters: %d clusters, the components of brute force's pairs over the index as written %d", len(gotC), len(wantC))
	}
	// ClustersFrom, with the writes once it has read the documents and
	// before it reads their sets: member 0 (the representative) of the
	// groups with g%5 == 4 replaced by a text of its own, member 1 of
	// those with g%5 == 0 deleted. Each is left out of its cluster, which
	// is made again of the others: the components of brute force over what
	// the index then holds, each member's Jaccard to the representative
	// and the least of the pairs inside exact. (This failed, "doc … was
	// replaced or deleted while the clusters were made".)
	var all []Pair
	for k, j := range followPairs(t, ctx, d, &PairsOptions{Threshold: 0.5}) {
		all = append(all, Pair{A: k[0], B: k[1], Jaccard: j})
	}
	wrote = false
	pctx = WithProgress(ctx, func(p Progress) {
		if wrote || p.Phase != "reading pairs" {
			return
		}
		wrote = true
		var docs []Doc
		var gone []string
		for g := range followGroups {
			switch g % 5 {
			case 4:
				docs = append(docs, Doc{ID: followID(g, 0), Text: followText(g, 0, 1000)})
				texts[followID(g, 0)] = followText(g, 0, 1000)
			case 0:
				gone = append(gone, followID(g, 1))
				delete(texts, followID(g, 1))
			}
		}
		if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
			t.Error(err)
		}
		if _, err := d.DeleteIDs(gone, &WriteOptions{NoSync: true}); err != nil {
			t.Error(err)
		}
	})
	cs, err = d.ClustersFrom(pctx, func(yield func(Pair, error) bool) {
		for _, p := range all {
			if !yield(p, nil) {
				return
			}
		}
	}, &PairsOptions{Threshold: 0.5})
	if err != nil {
		t.Fatalf("ClustersFrom beside the writes: %v", err)
	}
	if !wrote {
		t.Fatal("the writes were not made")
	}
	final := followOracle(texts, 0.5)
	wantC = followComponents(final)
	gotC = gotC[:0]
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	for _, c := range cs {
		gotC = append(gotC, slices.Sorted(slices.Values(c.IDs)))
		rep, _ := h.Document(nil, nil, texts[c.Representative])
		minJ := 1.0
		for i, id := range c.IDs {
			set, _ := h.Document(nil, nil, texts[id])
			if j := minhash.Jaccard(rep, set); c.Jaccard[i] != j {
				t.Fatalf("cluster of %s: %s at %v, brute force %v", c.Representative, id, c.Jaccard[i], j)
			}
			for _, o := range c.IDs[i+1:] {
				if j, ok := final[[2]string{min(id, o), max(id, o)}]; ok {
					minJ = min(minJ, j)
				}
			}
		}
		if c.MinJaccard != minJ {
			t.Fatalf("cluster of %s: MinJaccard %v, brute force %v", c.Representative, c.MinJaccard, minJ)
		}
	}
	slices.SortFunc(gotC, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	if !slices.EqualFunc(gotC, wantC, slices.Equal) {
		t.Fatalf("ClustersFrom: %d clusters, the components of brute force's pairs over the index as written %d", len(gotC), len(wantC))
	}
}

// Ensure that Pairs and Clusters on Redis beside a writer that keeps
// replacing and deleting a known subset of ids report, for the documents
// the writer never touched, exactly what brute force finds (every pair
// with its exact Jaccard; every cluster of untouched groups, as with no
// writer), never an id that was not stored, and no score that no stored
// versions of a pair have; and that Clusters does not fail (it failed when
// a member was replaced or deleted while it ran).
func TestRedisPairsClustersBesideWriter(t *testing.T) {
	d, texts := followIndex(t)
	ctx := context.Background()
	const th = 0.5
	// Touched: every member of the groups with g%5 == 1 (replaced, again
	// and again) and g%5 == 3 (deleted); in the groups with g%5 == 2,
	// member 0 is replaced by a text of its own and member 1 deleted.
	touched := func(g, i int) bool { return g%5 == 1 || g%5 == 3 || g%5 == 2 && i < 2 }
	untouched := map[string]string{}
	for g := range followGroups {
		for i := range followSize {
			if !touched(g, i) {
				untouched[followID(g, i)] = texts[followID(g, i)]
			}
		}
	}
	// The baseline: the clusters with no writer.
	before, err := d.Clusters(ctx, &PairsOptions{Threshold: th})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	versions := map[string][]string{} // every text each id had
	for id, text := range texts {
		versions[id] = []string{text}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var deletes []string
		for g := range followGroups {
			switch g % 5 {
			case 3:
				for i := range followSize {
					deletes = append(deletes, followID(g, i))
				}
			case 2:
				deletes = append(deletes, followID(g, 1))
			}
		}
		rng := rand.New(rand.NewPCG(9, 9))
		rng.Shuffle(len(deletes), func(i, j int) { deletes[i], deletes[j] = deletes[j], deletes[i] })
		for v := 1; ; v++ {
			for g0 := 0; g0 < followGroups; g0 += 25 {
				select {
				case <-stop:
					return
				default:
				}
				var docs []Doc
				for g := g0; g < g0+25; g++ {
					for i := range followSize {
						var text string
						switch {
						case g%5 == 1:
							text = followText(g, i, v)
						case g%5 == 2 && i == 0:
							text = followText(g, i, 1000+v)
						default:
							continue
						}
						docs = append(docs, Doc{ID: followID(g, i), Text: text})
					}
				}
				mu.Lock()
				for _, doc := range docs {
					versions[doc.ID] = append(versions[doc.ID], doc.Text)
				}
				mu.Unlock()
				if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
					t.Error(err)
					return
				}
				if len(deletes) > 0 {
					k := min(len(deletes), 8)
					if _, err := d.DeleteIDs(deletes[:k], &WriteOptions{NoSync: true}); err != nil {
						t.Error(err)
						return
					}
					deletes = deletes[k:]
				}
				time.Sleep(time.Millisecond)
			}
		}
	}()
	got := followPairs(t, ctx, d, &PairsOptions{Threshold: th})
	cs, cerr := d.Clusters(ctx, &PairsOptions{Threshold: th})
	close(stop)
	<-done
	if t.Failed() {
		t.FailNow()
	}
	if cerr != nil {
		t.Errorf("Clusters beside a writer: %v", cerr)
	}
	t.Logf("%d pairs reported beside the writer, %d clusters", len(got), len(cs))
	// Pairs: every pair of untouched documents brute force finds, with its
	// score; no id never stored; no score no versions of the pair have.
	want := followOracle(untouched, th)
	if len(want) < 1000 {
		t.Fatalf("only %d pairs of untouched documents: the corpus is too easy", len(want))
	}
	missing := 0
	for k, j := range want {
		if g, ok := got[k]; !ok || g != j {
			missing++
			if missing <= 3 {
				t.Errorf("untouched pair %v at %v: got %v, %v", k, j, g, ok)
			}
		}
	}
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	setOf := func(text string) []uint64 { s, _ := h.Document(nil, nil, text); return s }
	bad := 0
	for k, j := range got {
		va, oka := versions[k[0]]
		vb, okb := versions[k[1]]
		if !oka || !okb {
			bad++
			t.Errorf("pair %v names an id never stored", k)
			continue
		}
		if _, ok := want[k]; ok {
			continue
		}
		if _, ok := untouched[k[0]]; ok {
			if _, ok := untouched[k[1]]; ok {
				bad++
				t.Errorf("pair %v at %v of untouched documents is not brute force's", k, j)
				continue
			}
		}
		found := false
		for _, a := range va {
			for _, b := range vb {
				found = found || minhash.Jaccard(setOf(a), setOf(b)) == j
			}
		}
		if !found {
			bad++
			t.Errorf("pair %v at %v: no versions of the two have that Jaccard", k, j)
		}
	}
	if missing+bad > 0 {
		t.Fatalf("Pairs beside a writer: %d of the %d pairs of untouched documents missing or wrong, %d pairs wrong", missing, len(want), bad)
	}
	// Clusters: every cluster of an untouched group as with no writer (and
	// its members those of brute force's component), and no id never
	// stored.
	groupOf := func(id string) int { var g, i int; fmt.Sscanf(id, "g%03d-%d", &g, &i); return g }
	cleanGroup := func(g int) bool { return g%5 == 0 || g%5 == 4 }
	byRep := map[string]Cluster{}
	for _, c := range cs {
		byRep[c.Representative] = c
		for _, id := range c.IDs {
			if _, ok := versions[id]; !ok {
				t.Fatalf("cluster %v names %q, never stored", c.IDs, id)
			}
		}
	}
	comps := map[int][]string{}
	for _, c := range followComponents(want) {
		if g := groupOf(c[0]); cleanGroup(g) {
			comps[g] = c
		}
	}
	checked, wrong := 0, 0
	for _, c := range before {
		g := groupOf(c.Representative)
		if !cleanGroup(g) {
			continue
		}
		checked++
		if !slices.Equal(slices.Sorted(slices.Values(c.IDs)), comps[g]) {
			t.Fatalf("with no writer, the cluster of group %d is %v; brute force %v", g, c.IDs, comps[g])
		}
		now, ok := byRep[c.Representative]
		if !ok || !slices.Equal(now.IDs, c.IDs) || !slices.Equal(now.Jaccard, c.Jaccard) || now.MinJaccard != c.MinJaccard {
			if wrong++; wrong <= 3 {
				t.Errorf("beside a writer, the cluster of %s is %+v; with none %+v", c.Representative, now, c)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("Clusters beside a writer: %d of the %d clusters of untouched groups missing or different", wrong, checked)
	}
	if checked < len(comps) || checked < followGroups*2/5 {
		t.Fatalf("%d clusters of untouched groups checked, brute force has %d", checked, len(comps))
	}
}

// timeoutErr is a net.Error that timed out, as go-redis returns when a
// node does not answer.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// Ensure that a Redis node's timeout is ErrBackend saying what it likely
// is (go-redis's "i/o timeout" named no cause), and that other errors and
// a context's end pass as they are.
func TestRedisErrTimeout(t *testing.T) {
	err := redisErr(fmt.Errorf("wrapped: %w", timeoutErr{}))
	if !errors.Is(err, ErrBackend) || !strings.Contains(err.Error(), "did not answer in time") || !strings.Contains(err.Error(), "i/o timeout") {
		t.Errorf("a timeout: %v", err)
	}
	if err := redisErr(errors.New("ERR max number of clients reached")); !errors.Is(err, ErrBackend) || strings.Contains(err.Error(), "in time") {
		t.Errorf("another error: %v", err)
	}
	if err := redisErr(context.Canceled); err != context.Canceled {
		t.Errorf("a cancel: %v", err)
	}
}
