package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/minhash"
)

var allKeeps = []KeepPolicy{KeepFirst, KeepLast, KeepLongest, KeepShortest}

// clusterFixture is an index of random texts with near-copies and chains
// (copies of copies), and the exact sets and insertion numbers of its
// documents read back with Get.
func clusterFixture(t *testing.T) (*DB, map[string]*StoredDoc) {
	t.Helper()
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true, Threshold: 0.5})
	rng := rand.New(rand.NewPCG(15, 15))
	var docs []Doc
	var texts []string
	for i := range 600 {
		text := randomText(rng, texts)
		texts = append(texts, text)
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: text})
	}
	for i := range 5 { // a group of identical documents
		docs = append(docs, Doc{ID: fmt.Sprintf("same%d", i), Text: texts[7]})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]*StoredDoc{}
	for _, doc := range docs {
		g, err := d.Get(doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		got[doc.ID] = g
	}
	return d, got
}

// keepBest is the keep policy's choice among ids, computed from the
// documents' numbers and sets.
func keepBest(keep KeepPolicy, ids []string, docs map[string]*StoredDoc) string {
	best := ids[0]
	for _, id := range ids[1:] {
		a, b := docs[id], docs[best]
		la, lb := len(a.Shingles), len(b.Shingles)
		var better bool
		switch keep {
		case KeepFirst:
			better = a.Num < b.Num
		case KeepLast:
			better = a.Num > b.Num
		case KeepLongest:
			better = la > lb || la == lb && a.Num < b.Num
		case KeepShortest:
			better = la < lb || la == lb && a.Num < b.Num
		}
		if better {
			best = id
		}
	}
	return best
}

// Ensure that components are the connected components of the pairs, with
// the representative the keep policy names, each member's exact Jaccard
// to it (brute force on the stored sets) and the least Jaccard of the
// pairs inside as MinJaccard.
func TestClustersComponentsOracle(t *testing.T) {
	d, docs := clusterFixture(t)
	defer d.Close()
	pairs := collectPairs(t, d, nil)
	adj := map[string][]idPair{}
	for _, p := range pairs {
		adj[p.a] = append(adj[p.a], p)
		adj[p.b] = append(adj[p.b], p)
	}
	chained := false
	for _, keep := range allKeeps {
		cs, err := d.Clusters(context.Background(), &PairsOptions{Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) < 10 {
			t.Fatalf("only %d clusters: the fixture is too easy", len(cs))
		}
		seen := map[string]bool{}
		for _, c := range cs {
			// The component of c's first member, by a walk over the pairs.
			comp := map[string]bool{c.IDs[0]: true}
			stack := []string{c.IDs[0]}
			minJ := 2.0
			for len(stack) > 0 {
				id := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, p := range adj[id] {
					minJ = min(minJ, p.j)
					for _, o := range []string{p.a, p.b} {
						if !comp[o] {
							comp[o] = true
							stack = append(stack, o)
						}
					}
				}
			}
			members := slices.Sorted(func(yield func(string) bool) {
				for id := range comp {
					if !yield(id) {
						return
					}
				}
			})
			got := slices.Sorted(slices.Values(c.IDs))
			if !slices.Equal(got, members) {
				t.Fatalf("keep %s: cluster %v, component %v", keep, got, members)
			}
			for _, id := range c.IDs {
				if seen[id] {
					t.Fatalf("%s in two clusters", id)
				}
				seen[id] = true
			}
			if want := keepBest(keep, c.IDs, docs); c.Representative != want || c.IDs[0] != want {
				t.Fatalf("keep %s: representative %s (ids %v), want %s", keep, c.Representative, c.IDs, want)
			}
			if c.MinJaccard != minJ {
				t.Fatalf("keep %s: MinJaccard %v, brute force over the cluster's pairs %v", keep, c.MinJaccard, minJ)
			}
			for i, id := range c.IDs {
				want := minhash.Jaccard(docs[c.Representative].Shingles, docs[id].Shingles)
				if c.Jaccard[i] != want {
					t.Fatalf("keep %s: %s's Jaccard to %s is %v, brute force %v", keep, id, c.Representative, c.Jaccard[i], want)
				}
				if want < 0.5 {
					chained = true
				}
			}
			for i := 2; i < len(c.IDs); i++ {
				if docs[c.IDs[i-1]].Num > docs[c.IDs[i]].Num {
					t.Fatalf("members after the representative are not in insertion order: %v", c.IDs)
				}
			}
		}
		for _, p := range pairs {
			if !seen[p.a] || !seen[p.b] {
				t.Fatalf("pair %v is in no cluster", p)
			}
		}
	}
	if !chained {
		t.Fatal("no member is below the threshold to its representative: the fixture does not chain")
	}
}

// Ensure that centers do not chain: every member reaches the threshold
// with its representative (brute force), the representative is first of
// its cluster in the keep order, no two documents kept (representatives
// and documents in no cluster) form a pair that Pairs reports, and every
// document is in one cluster at most.
func TestClustersCentersOracle(t *testing.T) {
	d, docs := clusterFixture(t)
	defer d.Close()
	pairs := collectPairs(t, d, nil)
	for _, keep := range allKeeps {
		cs, err := d.Clusters(context.Background(), &PairsOptions{Mode: Centers, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		removed := map[string]bool{}
		seen := map[string]bool{}
		for _, c := range cs {
			if want := keepBest(keep, c.IDs, docs); c.Representative != want {
				t.Fatalf("keep %s: representative %s, first of %v in the keep order is %s", keep, c.Representative, c.IDs, want)
			}
			least := 1.0
			for i, id := range c.IDs {
				if seen[id] {
					t.Fatalf("%s in two clusters", id)
				}
				seen[id] = true
				j := minhash.Jaccard(docs[c.Representative].Shingles, docs[id].Shingles)
				if j != c.Jaccard[i] || j < 0.5 {
					t.Fatalf("keep %s: %s to %s: Jaccard %v, brute force %v (threshold 0.5)", keep, id, c.Representative, c.Jaccard[i], j)
				}
				if i > 0 {
					removed[id] = true
					least = min(least, j)
				}
			}
			if c.MinJaccard != least {
				t.Fatalf("MinJaccard %v, least member %v", c.MinJaccard, least)
			}
		}
		for _, p := range pairs {
			if !removed[p.a] && !removed[p.b] {
				t.Fatalf("keep %s: both of pair %v are kept", keep, p)
			}
		}
	}
}

// Ensure that each keep policy names the right representative of a
// hand-made cluster whose members' order and lengths are known.
func TestClustersKeepPolicies(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true, Threshold: 0.6})
	defer d.Close()
	base := "the committee approved the annual budget for the public library after a long debate"
	docs := []Doc{
		{ID: "first", Text: base},
		{ID: "longest", Text: base + " on tuesday"},
		{ID: "shortest", Text: base[:len(base)-8]},
		{ID: "last", Text: base + "!"},
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	want := map[KeepPolicy]string{KeepFirst: "first", KeepLast: "last", KeepLongest: "longest", KeepShortest: "shortest"}
	for _, mode := range []ClusterMode{Components, Centers} {
		for keep, rep := range want {
			cs, err := d.Clusters(context.Background(), &PairsOptions{Mode: mode, Keep: keep})
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || len(cs[0].IDs) != 4 || cs[0].Representative != rep {
				t.Fatalf("%s, keep %s: %+v, want one cluster of 4 kept by %s", mode, keep, cs, rep)
			}
		}
	}
	if _, err := d.Clusters(context.Background(), &PairsOptions{Keep: "newest"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("keep newest: %v, want ErrInvalidOptions", err)
	}
	if _, err := d.Clusters(context.Background(), &PairsOptions{Mode: "stars"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("mode stars: %v, want ErrInvalidOptions", err)
	}
}

// Ensure that clusters from the pairs Pairs reported equal the clusters
// Clusters computes, in every mode and keep policy, and that a pair naming
// an unknown id is refused.
func TestClustersFromPairs(t *testing.T) {
	d, _ := clusterFixture(t)
	defer d.Close()
	ctx := context.Background()
	for _, mode := range []ClusterMode{Components, Centers} {
		for _, keep := range allKeeps {
			po := &PairsOptions{Mode: mode, Keep: keep}
			want, err := d.Clusters(ctx, po)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.ClustersFrom(ctx, d.Pairs(ctx, nil), po)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s/%s: ClustersFrom differs from Clusters", mode, keep)
			}
			// Each pair twice, the second time the other way round (a
			// file that repeats its pairs): the same clusters.
			twice := func(yield func(Pair, error) bool) {
				for p, err := range d.Pairs(ctx, nil) {
					if !yield(p, err) || !yield(Pair{A: p.B, B: p.A, Jaccard: p.Jaccard}, err) {
						return
					}
				}
			}
			if got, err := d.ClustersFrom(ctx, twice, po); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s/%s: ClustersFrom of each pair twice differs from Clusters (%v)", mode, keep, err)
			}
		}
	}
	bad := func(yield func(Pair, error) bool) { yield(Pair{A: "d001", B: "nobody", Jaccard: 0.9}, nil) }
	if _, err := d.ClustersFrom(ctx, bad, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v, want ErrNotFound", err)
	}
	// Only the pairs given make clusters (the operator's review: an empty
	// pairs file gave the index's groups of identical documents): none
	// from none, and from each pair alone the clusters it is in, by an
	// independent oracle, Clusters' own: the cluster holding both.
	pairs := slices.Collect(func(yield func(Pair) bool) {
		for p, err := range d.Pairs(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if !yield(p) {
				return
			}
		}
	})
	none, err := d.ClustersFrom(ctx, func(func(Pair, error) bool) {}, nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("ClustersFrom of no pairs: %d clusters, %v", len(none), err)
	}
	all, _ := d.Clusters(ctx, nil)
	identical := 0
	for _, p := range pairs {
		if p.Jaccard == 1 {
			identical++
		}
		got, err := d.ClustersFrom(ctx, func(yield func(Pair, error) bool) { yield(p, nil) }, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("ClustersFrom of (%s, %s): %d clusters, %v", p.A, p.B, len(got), err)
		}
		// Its cluster is within the one Clusters makes of everything.
		for _, c := range all {
			if slices.Contains(c.IDs, p.A) {
				for _, id := range got[0].IDs {
					if !slices.Contains(c.IDs, id) {
						t.Fatalf("ClustersFrom of (%s, %s) holds %s, outside their cluster %v", p.A, p.B, id, c.IDs)
					}
				}
			}
		}
	}
	if identical == 0 {
		t.Fatal("the fixture has no identical documents: the test proves nothing about their groups")
	}
	for _, p := range []Pair{{A: "d001", B: "d002", Jaccard: 1.5}, {A: "d001", B: "d002", Jaccard: math.NaN()}, {A: "d001", B: "d001", Jaccard: 0.9}} {
		if _, err := d.ClustersFrom(ctx, func(yield func(Pair, error) bool) { yield(p, nil) }, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("ClustersFrom of %+v: %v, want ErrInvalidOptions", p, err)
		}
	}
}

// Ensure that Components mode's clusters kept as the pairs come (the
// union-find of a run with one snapshot, which holds no pair: a review of
// skewed corpora's K1) are those of the pairs kept (the edge list, which
// Redis needs): the same members, Jaccards and least Jaccards, on random
// graphs with groups of identical documents, in every keep order; and
// that their members and least Jaccards are those of a walk of the pairs'
// graph (the oracle, which shares no code with either).
func TestClustererKeepsNoPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for round := range 50 {
		n := 2 + rng.IntN(300)
		x := &pairsIndex{groupOf: map[int32]int{}}
		for i := range n {
			x.nums = append(x.nums, uint64(i+1))
			x.ids = append(x.ids, fmt.Sprintf("d%04d", i))
			x.sizes = append(x.sizes, uint32(1+rng.IntN(20)))
			x.rep = append(x.rep, int32(i))
		}
		// Some groups of identical documents: a representative and later
		// members.
		for i := 0; i+1 < n; i++ {
			if rng.IntN(10) == 0 {
				g := []int32{int32(i)}
				for j := i + 1; j < n && rng.IntN(2) == 0 && x.rep[j] == int32(j); j++ {
					x.rep[j] = int32(i)
					g = append(g, int32(j))
				}
				if len(g) > 1 {
					x.groupOf[int32(i)] = len(x.groups)
					x.groups = append(x.groups, g)
				}
			}
		}
		var nodes []int32
		for i := range n {
			if x.rep[i] == int32(i) {
				nodes = append(nodes, int32(i))
			}
		}
		type pair struct {
			a, b int32
			j    float64
		}
		var pairs []pair
		for range rng.IntN(2 * len(nodes)) {
			a, b := nodes[rng.IntN(len(nodes))], nodes[rng.IntN(len(nodes))]
			if a != b {
				pairs = append(pairs, pair{a, b, 0.5 + float64(rng.IntN(50))/100})
			}
		}
		slices.SortFunc(pairs, func(p, q pair) int {
			return cmp.Or(cmp.Compare(min(p.a, p.b), min(q.a, q.b)), cmp.Compare(max(p.a, p.b), max(q.a, q.b)))
		})
		pairs = slices.CompactFunc(pairs, func(p, q pair) bool { return min(p.a, p.b) == min(q.a, q.b) && max(p.a, p.b) == max(q.a, q.b) })
		rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		sim := func(a, b int32) (float64, error) { return float64(a*31+b*17%100) / 1000, nil }
		for _, keep := range []KeepPolicy{KeepFirst, KeepLast, KeepLongest, KeepShortest} {
			var got [2][]Cluster
			for k, stable := range []bool{false, true} {
				c := newClusterer(x, Components, keep, 0, stable)
				for _, p := range pairs {
					c.add(p.a, p.b, p.j)
				}
				if stable && len(c.edges) != 0 {
					t.Fatalf("the union-find clusterer kept %d pairs", len(c.edges))
				}
				cs, err := c.clusters(context.Background(), sim)
				if err != nil {
					t.Fatal(err)
				}
				got[k] = cs
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("round %d, keep %s: %d pairs among %d documents: union-find %+v\nedges %+v", round, keep, len(pairs), n, got[1], got[0])
			}
			if keep == KeepFirst {
				var ps [][3]float64
				for _, p := range pairs {
					ps = append(ps, [3]float64{float64(p.a), float64(p.b), p.j})
				}
				checkComponents(t, x, ps, got[1])
			}
		}
	}
}

// checkComponents checks clusters cs against a walk of the graph whose
// nodes are x's group representatives and whose edges are pairs: each
// component of two or more documents (its nodes' members) is one cluster,
// whose MinJaccard is the least Jaccard of the component's pairs (1 with
// none).
func checkComponents(t *testing.T, x *pairsIndex, pairs [][3]float64, cs []Cluster) {
	t.Helper()
	adj := map[int32][][3]float64{}
	for _, p := range pairs {
		adj[int32(p[0])] = append(adj[int32(p[0])], p)
		adj[int32(p[1])] = append(adj[int32(p[1])], p)
	}
	want := map[string]float64{} // the sorted member ids, joined: least Jaccard
	seen := map[int32]bool{}
	for n := range x.rep {
		if x.rep[n] != int32(n) || seen[int32(n)] {
			continue
		}
		least, ids, stack := 1.0, []string{}, []int32{int32(n)}
		seen[int32(n)] = true
		for len(stack) > 0 {
			m := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range x.members(m) {
				ids = append(ids, x.ids[d])
			}
			for _, e := range adj[m] {
				least = min(least, e[2])
				for _, o := range []int32{int32(e[0]), int32(e[1])} {
					if !seen[o] {
						seen[o] = true
						stack = append(stack, o)
					}
				}
			}
		}
		if len(ids) > 1 {
			slices.Sort(ids)
			want[fmt.Sprint(ids)] = least
		}
	}
	got := map[string]float64{}
	for _, c := range cs {
		ids := slices.Sorted(slices.Values(c.IDs))
		got[fmt.Sprint(ids)] = c.MinJaccard
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("clusters %v, a walk of the pairs' graph %v", got, want)
	}
}

// clustersFromAllocated returns ClustersFrom's clusters of seq (threshold
// 0.5, mode) and the bytes the process allocated meanwhile (TotalAlloc:
// other goroutines' too), after a GC; an error fails the test.
func clustersFromAllocated(t *testing.T, d *DB, seq iter.Seq2[Pair, error], mode ClusterMode) ([]Cluster, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cs, err := d.ClustersFrom(context.Background(), seq, &PairsOptions{Threshold: 0.5, Mode: mode})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("%s: ClustersFrom: %v", mode, err)
	}
	return cs, after.TotalAlloc - before.TotalAlloc
}

// Ensure that ClustersFrom in Centers mode, which holds its pairs of
// sets, does not hold a pair of sets once for each pair of documents
// given: two groups of identical documents near each other are m*m pairs
// of documents and one pair of sets. The oracle: the bytes allocated with
// every pair of the two groups given, less those with one of them (the
// same cluster, the same index read), and the one cluster of both groups.
func TestClustersFromRepeatedPairs(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem()})
	m := 1000
	var docs []Doc
	for i := range 2 * m {
		docs = append(docs, Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("a long text that every copy shares, group %d, then more words after it", i/m)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	pairs := 0
	cross := func(yield func(Pair, error) bool) {
		for i := range m {
			for j := m; j < 2*m; j++ {
				pairs++
				if !yield(Pair{A: docs[i].ID, B: docs[j].ID, Jaccard: 0.9}, nil) {
					return
				}
			}
		}
	}
	one := func(yield func(Pair, error) bool) {
		yield(Pair{A: docs[0].ID, B: docs[m].ID, Jaccard: 0.9}, nil)
	}
	allocated := func(seq iter.Seq2[Pair, error]) uint64 {
		t.Helper()
		cs, bytes := clustersFromAllocated(t, d, seq, Centers)
		if len(cs) != 1 || len(cs[0].IDs) != 2*m {
			t.Fatalf("ClustersFrom of two groups of %d: %d clusters; want one of them all", m, len(cs))
		}
		return bytes
	}
	few := allocated(one)
	many := allocated(cross)
	// NB: each pair held took about 80 bytes a pair allocated here (16
	// held, in a slice grown by append); the bound leaves room for what
	// other goroutines of the process allocate meanwhile.
	if many > few && many-few > 8*uint64(pairs) {
		t.Fatalf("ClustersFrom of %d pairs of two groups allocated %d bytes, of one pair %d: more than 8 bytes a pair more", pairs, many, few)
	}
}

// Ensure that ClustersFrom in Components mode holds no pair while it
// reads them, and Centers mode only the pairs it needs: a map of the
// pairs seen, kept beside the union-find (which holds none) or the edges,
// took the 32 million pairs of a group of 8,000 near copies (a review of
// skewed corpora, K1) to gigabytes. The oracle: the bytes allocated with
// every pair of n documents given, less those with a chain of n-1 pairs
// (the same one cluster, and the same index read), which must not grow
// with the pairs in Components mode, and the cluster of them all.
func TestClustersFromHoldsNoPair(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem()})
	defer d.Close()
	n := 1500
	var docs []Doc
	for i := range n {
		docs = append(docs, Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("a long text that every copy shares, word %d, then more words after it", i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	pairs := 0
	all := func(yield func(Pair, error) bool) {
		for i := range n {
			for j := i + 1; j < n; j++ {
				pairs++
				if !yield(Pair{A: docs[i].ID, B: docs[j].ID, Jaccard: 0.9}, nil) {
					return
				}
			}
		}
	}
	chain := func(yield func(Pair, error) bool) {
		for i := 1; i < n; i++ {
			if !yield(Pair{A: docs[i-1].ID, B: docs[i].ID, Jaccard: 0.9}, nil) {
				return
			}
		}
	}
	// allocated wants one cluster of all n documents, but of a chain in
	// Centers mode (which does not chain).
	allocated := func(seq iter.Seq2[Pair, error], mode ClusterMode, one bool) uint64 {
		t.Helper()
		cs, bytes := clustersFromAllocated(t, d, seq, mode)
		if len(cs) == 0 || one && (len(cs) != 1 || len(cs[0].IDs) != n) {
			t.Fatalf("%s: ClustersFrom of %d documents' pairs: %d clusters; want one of them all", mode, n, len(cs))
		}
		return bytes
	}
	few := allocated(chain, Components, true)
	many := allocated(all, Components, true)
	// NB: the map took about 50 bytes a pair (56.7 MB here); the bound
	// leaves room for what other goroutines of the process allocate
	// meanwhile (TotalAlloc counts them all).
	if many > few && many-few > 10*uint64(pairs) {
		t.Fatalf("ClustersFrom of %d pairs allocated %d bytes, of %d pairs %d: more than 10 bytes a pair more", pairs, many, n-1, few)
	}
	// Centers mode holds the pairs (16 bytes each, in a slice grown by
	// append: about 5 times that allocated in all), then each twice by
	// node (32 bytes): 131 bytes a pair allocated here, and 180 with the
	// map.
	pairs = 0
	few = allocated(chain, Centers, false)
	many = allocated(all, Centers, true)
	if many > few && many-few > 150*uint64(pairs) {
		t.Fatalf("centers: ClustersFrom of %d pairs allocated %d bytes, of %d pairs %d: more than 150 bytes a pair more", pairs, many, n-1, few)
	}
}
