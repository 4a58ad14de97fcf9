package db

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/seqs"
	"github.com/lshdb/lshdb/minhash"
)

// ClusterMode is how Clusters groups the near-duplicate pairs.
type ClusterMode string

const (
	// Components are the connected components of the pairs. They chain: a
	// ~ b ~ c puts a and c in one cluster however little a and c share, so
	// a member's Jaccard to its representative may be below the threshold
	// (Cluster.MinJaccard is the weakest link of the chain, the least
	// Jaccard of the pairs inside the cluster; Cluster.Jaccard[i] says
	// how far each member really is from the representative).
	Components ClusterMode = "components"
	// Centers are star clusters that do not chain: every member reaches
	// the threshold with its representative. The rule (greedy): the
	// documents are taken in the keep order (KeepPolicy); a document not
	// yet in a cluster becomes a center (the representative of a new
	// cluster) and takes every document not yet in a cluster whose pair
	// with it was found. A center and any later center were not found as
	// a pair, so the representatives kept are pairwise below the threshold
	// (up to the pairs that LSH misses).
	Centers ClusterMode = "centers"
)

// KeepPolicy chooses the document a cluster keeps: its representative.
type KeepPolicy string

const (
	// KeepFirst keeps the earliest inserted member (the default).
	KeepFirst KeepPolicy = "first"
	// KeepLast keeps the latest inserted member.
	KeepLast KeepPolicy = "last"
	// KeepLongest keeps the member with the largest shingle set (the
	// stored set's size, which the doc record holds; not the text's
	// length in bytes), the earliest inserted among equals.
	KeepLongest KeepPolicy = "longest"
	// KeepShortest keeps the member with the smallest shingle set, the
	// earliest inserted among equals.
	KeepShortest KeepPolicy = "shortest"
)

// Cluster is a group of near-duplicates and the member to keep.
type Cluster struct {
	// Representative is the member to keep, chosen by
	// PairsOptions.Keep (default: the earliest inserted).
	Representative string
	// IDs are the members: Representative first, then the others in
	// insertion order.
	IDs []string
	// Jaccard[i] is the exact Jaccard of IDs[i] to the representative (1
	// for the representative itself; the signatures' estimate in storage
	// none). In Centers mode each is at least the threshold; in
	// Components mode it may be less (chaining).
	Jaccard []float64
	// MinJaccard is, in Components mode, the least Jaccard of the
	// verified pairs inside the cluster (a pair of identical documents
	// counts as 1): the weakest link that joined it, at least the
	// threshold. In Centers mode it is the least of Jaccard.
	MinJaccard float64

	first int32 // the least member position, for the order
}

// clusterer is what Clusters and ClustersFrom share: the documents of a
// pairsIndex, the pairs found between group representatives (nodes), and
// the options.
type clusterer struct {
	x     *pairsIndex
	mode  ClusterMode
	keep  KeepPolicy
	t     float64
	edges []edge           // between nodes (x.rep values), a < b, each once
	adj   map[int32][]edge // edges by node, made by split when first needed
	// uf, in Components mode where no node can vanish (Pebble: one
	// snapshot), holds the components as the pairs come, in place of
	// edges: the pairs of a group of 8,000 near copies (32 million) took
	// 1.3 GiB beside a 256 MiB budget (a review of skewed corpora, K1).
	uf *unionFind
	on []bool // by node: in some pair (its group is clustered)
	// named makes only the groups in some pair clusters (ClustersFrom:
	// the pairs given say which); otherwise every group of identical
	// documents is one, as Pairs reports their pairs.
	named bool
}

type edge struct {
	a, b int32
	j    float64
}

// clusterOptions validates the cluster fields of o, with their defaults.
func clusterOptions(o *PairsOptions) (ClusterMode, KeepPolicy, error) {
	mode, keep := Components, KeepFirst
	if o != nil && o.Mode != "" {
		mode = o.Mode
	}
	if o != nil && o.Keep != "" {
		keep = o.Keep
	}
	switch mode {
	case Components, Centers:
	default:
		return "", "", invalid("cluster mode %q is not components or centers", string(mode))
	}
	switch keep {
	case KeepFirst, KeepLast, KeepLongest, KeepShortest:
	default:
		return "", "", invalid("keep %q is not first, last, longest or shortest", string(keep))
	}
	return mode, keep, nil
}

// newClusterer returns a clusterer of x's documents. With stable (no node
// can vanish: sim never says so), Components mode keeps its components as
// the pairs come, not the pairs.
func newClusterer(x *pairsIndex, mode ClusterMode, keep KeepPolicy, t float64, stable bool) *clusterer {
	c := &clusterer{x: x, mode: mode, keep: keep, t: t, on: make([]bool, len(x.nums))}
	if mode == Components && stable {
		c.uf = newUnionFind(len(x.nums))
	}
	return c
}

// unionFind holds components of nodes 0..n-1 (parents, a root the least
// of its component) and the least Jaccard of each root's pairs (2: none).
type unionFind struct {
	parent []int32
	least  []float64
}

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int32, n), least: make([]float64, n)}
	for i := range u.parent {
		u.parent[i], u.least[i] = int32(i), 2
	}
	return u
}

// find returns the root of node i's component, halving its path.
func (u *unionFind) find(i int32) int32 {
	p := u.parent
	for p[i] != i {
		p[i] = p[p[i]]
		i = p[i]
	}
	return i
}

// union joins a's and b's components by a pair of Jaccard j.
func (u *unionFind) union(a, b int32, j float64) {
	ra, rb := u.find(a), u.find(b)
	r := min(ra, rb)
	u.parent[max(ra, rb)] = r
	u.least[r] = min(u.least[ra], u.least[rb], j)
}

// better reports whether position i comes before j in the keep order.
func (c *clusterer) better(i, j int32) bool {
	x := c.x
	switch c.keep {
	case KeepLast:
		return i > j
	case KeepLongest:
		if x.sizes[i] != x.sizes[j] {
			return x.sizes[i] > x.sizes[j]
		}
	case KeepShortest:
		if x.sizes[i] != x.sizes[j] {
			return x.sizes[i] < x.sizes[j]
		}
	}
	return i < j
}

// best returns the member of node n's group first in the keep order.
func (c *clusterer) best(n int32) int32 {
	ms := c.x.members(n)
	b := ms[0]
	for _, m := range ms[1:] {
		if c.better(m, b) {
			b = m
		}
	}
	return b
}

// add records a verified pair of nodes.
func (c *clusterer) add(a, b int32, j float64) {
	if a > b {
		a, b = b, a
	}
	c.on[a], c.on[b] = true, true
	if c.uf != nil {
		c.uf.union(a, b, j)
		return
	}
	c.edges = append(c.edges, edge{a, b, j})
}

// dedupEdges keeps each pair of nodes once among the edges, at the
// highest Jaccard it was given with, in the order of the pairs of nodes.
// (Pairs found by a run give a pair of nodes one Jaccard.)
func (c *clusterer) dedupEdges() {
	slices.SortFunc(c.edges, func(e, f edge) int {
		return cmp.Or(cmp.Compare(e.a, f.a), cmp.Compare(e.b, f.b), cmp.Compare(f.j, e.j))
	})
	c.edges = slices.CompactFunc(c.edges, func(e, f edge) bool { return e.a == f.a && e.b == f.b })
}

// vanishedError is what a clusterer's sim returns for a node none of
// whose documents is stored any more (on Redis, which has no snapshot:
// replaced or deleted since the documents were read).
type vanishedError struct{ node int32 }

func (e vanishedError) Error() string { return fmt.Sprintf("lshdb: node %d vanished", e.node) }

// split returns the connected components of ns by the edges between
// them, each with the least Jaccard of its edges (1 with none).
func (c *clusterer) split(ns []int32) (parts [][]int32, minJs []float64) {
	if c.adj == nil {
		c.adj = make(map[int32][]edge)
		for _, e := range c.edges {
			c.adj[e.a] = append(c.adj[e.a], e)
			c.adj[e.b] = append(c.adj[e.b], e)
		}
	}
	parent := make(map[int32]int32, len(ns))
	for _, n := range ns {
		parent[n] = n
	}
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	// NB: the edges of ns alone: a writer may make many nodes vanish.
	var edges []edge
	for _, n := range ns {
		for _, e := range c.adj[n] {
			_, oka := parent[e.a]
			_, okb := parent[e.b]
			if oka && okb && n == e.a {
				edges = append(edges, e)
			}
		}
	}
	for _, e := range edges {
		if ra, rb := find(e.a), find(e.b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	at := map[int32]int{}
	for _, n := range ns {
		r := find(n)
		i, ok := at[r]
		if !ok {
			i = len(parts)
			at[r] = i
			parts, minJs = append(parts, nil), append(minJs, 1)
		}
		parts[i] = append(parts[i], n)
	}
	for _, e := range edges {
		i := at[find(e.a)]
		minJs[i] = min(minJs[i], e.j)
	}
	return parts, minJs
}

// clusters groups the nodes; sim returns the Jaccard of two nodes' sets
// (Components mode asks it for each member's Jaccard to its
// representative, once per node). A node that sim reports vanished
// (vanishedError) is left out: its component is made again without it
// (the clusters of its pairs with the others, which may fall apart).
func (c *clusterer) clusters(ctx context.Context, sim func(a, b int32) (float64, error)) ([]Cluster, error) {
	x := c.x
	var out []Cluster
	// emit makes a cluster of the nodes ns (center or root first is not
	// implied), whose representative is rep and whose node Jaccards to
	// rep's node are js (by index in ns).
	emit := func(rep int32, ns []int32, js []float64, minJ float64) {
		type mj struct {
			m int32
			j float64
		}
		var ms []mj
		for k, n := range ns {
			for _, m := range x.members(n) {
				if m != rep {
					ms = append(ms, mj{m, js[k]})
				}
			}
		}
		if len(ms) == 0 {
			return
		}
		slices.SortFunc(ms, func(a, b mj) int { return cmp.Compare(a.m, b.m) })
		cl := Cluster{Representative: x.ids[rep], IDs: make([]string, 1, len(ms)+1), Jaccard: make([]float64, 1, len(ms)+1),
			MinJaccard: minJ, first: min(rep, ms[0].m)}
		cl.IDs[0], cl.Jaccard[0] = x.ids[rep], 1
		for _, e := range ms {
			cl.IDs = append(cl.IDs, x.ids[e.m])
			cl.Jaccard = append(cl.Jaccard, e.j)
		}
		if c.mode == Centers {
			cl.MinJaccard = slices.Min(cl.Jaccard[1:])
		}
		out = append(out, cl)
	}
	nodes := make([]int32, 0)
	for n, on := range c.on {
		if on || (!c.named && x.rep[n] == int32(n) && len(x.members(int32(n))) > 1) {
			nodes = append(nodes, int32(n))
		}
	}
	// NB: the phase counts the distinct sets made into clusters: at 10
	// million documents it ran 1.5 minutes with no count (a review at
	// scale, S10-6).
	prog := progressOf(ctx)
	prog.setTotal(int64(len(nodes)))
	done := counter{p: prog}
	defer done.flush()
	switch c.mode {
	case Components:
		uf := c.uf
		if uf == nil {
			uf = newUnionFind(len(x.nums))
			for _, e := range c.edges {
				uf.union(e.a, e.b, e.j)
			}
		}
		find := uf.find
		minJ := map[int32]float64{}
		for _, n := range nodes {
			if r := find(n); uf.least[r] <= 1 {
				minJ[r] = uf.least[r]
			}
		}
		byRoot := map[int32][]int32{}
		var roots []int32
		for _, n := range nodes {
			r := find(n)
			if _, ok := byRoot[r]; !ok {
				roots = append(roots, r)
			}
			byRoot[r] = append(byRoot[r], n)
		}
		var component func(ns []int32, m float64) error
		component = func(ns []int32, m float64) error {
			rep := c.best(ns[0])
			for _, n := range ns[1:] {
				if b := c.best(n); c.better(b, rep) {
					rep = b
				}
			}
			js := make([]float64, len(ns))
			for k, n := range ns {
				done.inc() // NB: a node at a time: one component may hold most of them
				if n == x.rep[rep] {
					js[k] = 1
					continue
				}
				j, err := sim(x.rep[rep], n)
				if v, ok := err.(vanishedError); ok {
					parts, minJs := c.split(slices.DeleteFunc(slices.Clone(ns), func(n int32) bool { return n == v.node }))
					for i, p := range parts {
						if err := component(p, minJs[i]); err != nil {
							return err
						}
					}
					return nil
				}
				if err != nil {
					return err
				}
				js[k] = j
			}
			emit(rep, ns, js, m)
			return nil
		}
		for _, r := range roots {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
			m, ok := minJ[r]
			if !ok {
				m = 1 // one group of identical documents
			}
			if err := component(byRoot[r], m); err != nil {
				return nil, err
			}
		}
	case Centers:
		// Adjacency of the nodes, from the edges.
		deg := make(map[int32]int, len(nodes))
		for _, e := range c.edges {
			deg[e.a]++
			deg[e.b]++
		}
		adj := make(map[int32][]edge, len(nodes))
		for _, e := range c.edges {
			if adj[e.a] == nil {
				adj[e.a] = make([]edge, 0, deg[e.a])
			}
			if adj[e.b] == nil {
				adj[e.b] = make([]edge, 0, deg[e.b])
			}
			adj[e.a] = append(adj[e.a], edge{e.a, e.b, e.j})
			adj[e.b] = append(adj[e.b], edge{e.b, e.a, e.j})
		}
		bestOf := make(map[int32]int32, len(nodes))
		for _, n := range nodes {
			bestOf[n] = c.best(n)
		}
		slices.SortFunc(nodes, func(a, b int32) int {
			ba, bb := bestOf[a], bestOf[b]
			switch {
			case ba == bb:
				return 0
			case c.better(ba, bb):
				return -1
			}
			return 1
		})
		assigned := make(map[int32]bool, len(nodes))
		for _, n := range nodes {
			done.inc()
			if assigned[n] {
				continue
			}
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
			assigned[n] = true
			ns, js := []int32{n}, []float64{1}
			for _, e := range adj[n] {
				if !assigned[e.b] && e.j >= c.t {
					assigned[e.b] = true
					ns, js = append(ns, e.b), append(js, e.j)
				}
			}
			emit(bestOf[n], ns, js, 1)
		}
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(len(b.IDs), len(a.IDs)), cmp.Compare(a.first, b.first))
	})
	return out, nil
}

// Clusters returns the clusters (of two or more documents) of the pairs
// that Pairs reports, largest first (ties by their earliest inserted
// member), from one snapshot: connected components by default, or
// centers (PairsOptions.Mode), each naming the member to keep
// (PairsOptions.Keep) and every member's Jaccard to it.
//
// It runs the same join as Pairs, but a group of identical documents joins
// its cluster as a group, so m copies cost O(m), not m(m−1)/2 pairs. In
// Components mode the components are held as the pairs come (12 bytes a
// document); in Centers mode, and on Redis, the verified pairs between
// distinct sets are held in memory (16 bytes each) until the join ends.
//
// On Redis (no snapshot) it runs Pairs, with the promise Pairs' doc gives
// beside a writer, keeps each pair with the versions it scored, then
// lists the documents again and makes the clusters of the pairs whose two
// versions are still stored: a document replaced while it runs joins by
// its current version's pairs that the run found, or not at all; one
// deleted is left out, as is a member whose record is gone by the time
// Components mode reads its set (its cluster is made again without it).
// A writer never makes it fail, and in Components mode a cluster of
// documents that no writer touched, and that no version of a touched
// document read by the run pairs with, is exactly the cluster of a run
// with no writer. Centers mode promises less: its greedy choice of
// centers runs over every document, so a touched one may change the
// clusters of untouched documents it never pairs with (each is still a
// valid clustering of the pairs the run kept).
func (db *DB) Clusters(ctx context.Context, po *PairsOptions) ([]Cluster, error) {
	ctx = orBackground(ctx)
	mode, keep, err := clusterOptions(po)
	if err != nil {
		return nil, err
	}
	if db.rkv != nil {
		return db.redisClusters(ctx, po)
	}
	var c *clusterer
	var out []Cluster
	var st PairsStats
	// NB: a step of its own after the pairs' four: the clustering (its
	// members' Jaccards read from their sets) took 40-50% of a run that
	// showed "4/4 verifying candidate pairs: 100%" all along.
	prog := progressOf(ctx)
	prog.setSteps(5)
	defer prog.setSteps(0)
	init := func(px *pairsIndex) {
		if c == nil {
			c = newClusterer(px, mode, keep, 0, true) // NB: one snapshot: no node vanishes
		}
	}
	err = db.pairs(ctx, po, &st, func(px *pairsIndex, g []int32) bool {
		init(px)
		prog.add(int64(len(g)) * int64(len(g)-1) / 2) // NB: the phase counts their pairs (pairs)
		return true                                   // groups are known to the clusterer through px
	}, func(px *pairsIndex, a, b int32, j float64) bool {
		init(px)
		c.add(a, b, j)
		return true
	}, func(px *pairsIndex, sets *setFile) error {
		init(px)
		prog.phase(5, 5, "making clusters", 0)
		c.t = 0 // every pair found reached the threshold
		var sa, sb []uint64
		rd := sets.reader()
		defer rd.close()
		var table minhash.SetTable
		cached := int32(-1)
		var err error
		out, err = c.clusters(ctx, func(a, b int32) (float64, error) {
			if a != cached {
				if sa, err = rd.read(a, sa); err != nil {
					return 0, err
				}
				cached = a
				table.Reset(sa)
			}
			if sb, err = rd.read(b, sb); err != nil {
				return 0, err
			}
			if db.estimateOnly() {
				return px.estimate(a, b, sa, sb), nil
			}
			j, _ := table.JaccardAtLeast(sb, 0)
			return j, nil
		})
		return err
	})
	if err != nil {
		return nil, classify(err) // NB: ErrDiskFull where the run's spill found the disk full, as Pairs
	}
	if po != nil && po.Stats != nil {
		*po.Stats = st
	}
	return out, nil
}

// ClustersFrom returns the clusters of the pairs of seq, as Clusters
// would from the pairs it finds itself: a pairs file written by an
// earlier run (lshdb pairs --output json) need not be computed again.
// Pairs below the threshold (PairsOptions.Threshold, default the
// index's) are skipped; a pair naming an id the index does not hold ends
// the run with ErrNotFound. The index supplies what the keep policy needs
// (insertion order, set sizes) and, in Components mode, the sets of the
// members to measure their Jaccard to the representative: one scan of the
// doc records and point reads, no scan of the posting lists. Identical
// documents are grouped as Clusters groups them: every document whose set
// equals one in a pair joins its cluster; a group of identical documents
// none of which is in a pair is no cluster (with the whole output of
// Pairs, as lshdb pairs writes it, every group is in one). A pair whose
// Jaccard is not in [0, 1], or that names one document twice, ends the
// run with ErrInvalidOptions. On Redis (no snapshot), a member whose
// record is gone (replaced or deleted) by the time its set is read is
// left out, and its cluster made again without it, as in Clusters.
//
// Memory: in Components mode on a directory index no pair is held (the
// components grow as the pairs come, 12 bytes a document); in Centers
// mode, and on Redis, each pair between two documents' sets is held (16
// bytes, a repeat too) until the pairs end, as in Clusters, then twice by
// set. A pair given more than once counts once, at its highest Jaccard.
func (db *DB) ClustersFrom(ctx context.Context, seq iter.Seq2[Pair, error], po *PairsOptions) ([]Cluster, error) {
	if seq == nil {
		return nil, fmt.Errorf("%w: ClustersFrom of a nil sequence of pairs", ErrInvalidOptions)
	}
	return db.clustersFrom(ctx, func(yield func(redisPair, error) bool) {
		for p, err := range seqs.Caller(seq) {
			if !yield(redisPair{Pair: p}, err) {
				return
			}
		}
	}, po, false, 1)
}

// clustersFrom is ClustersFrom. With run, the pairs are a Redis Pairs
// run's with the versions they scored (Clusters on Redis): a pair whose
// documents the index no longer holds in those versions (replaced or
// deleted since they were read) is skipped, not an error. Its three
// phases are steps first to first+2 of as many (a run's come first).
func (db *DB) clustersFrom(ctx context.Context, seq iter.Seq2[redisPair, error], po *PairsOptions, run bool, first int) ([]Cluster, error) {
	ctx = orBackground(ctx)
	mode, keep, err := clusterOptions(po)
	if err != nil {
		return nil, err
	}
	t, err := db.pairsThreshold(po)
	if err != nil {
		return nil, err
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: an ended context with no pairs to read was never looked at.
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	prog := progressOf(ctx)
	defer prog.end()
	last := first + 2
	prog.phase(first, last, "reading documents", int64(db.stored()))
	// The index of the documents, and the reader of their records: from
	// one snapshot on Pebble, as they are on Redis.
	var x *pairsIndex
	var record func(n uint64) ([]byte, bool, error)
	// stored tells whether an id the index does not hold live is stored
	// all the same: expired, not yet swept.
	var stored func(id string) bool
	if db.rkv != nil {
		if x, err = db.redisPairsIndex(ctx, db.now().UnixNano()); err != nil {
			return nil, err
		}
		v := &redisView{ctx: ctx, s: db.rkv}
		record = v.record
		// NB: Redis expires an id key itself, at its document's expiry:
		// an expired document is not told from a deleted one.
		stored = func(string) bool { return false }
	} else {
		snap := db.pdb.NewSnapshot()
		defer snap.Close()
		if x, err = loadPairsIndex(ctx, snap, db.now().UnixNano(), 0, db.stored()); err != nil {
			return nil, err
		}
		record = func(n uint64) ([]byte, bool, error) { return getCopy(snap, codec.AppendDocKey(nil, n)) }
		stored = func(id string) bool { _, ok, err := getCopy(snap, codec.AppendIDKey(nil, id)); return ok && err == nil }
	}
	prog.phase(first+1, last, "reading pairs", 0)
	read := counter{p: prog}
	defer read.flush()
	pos := make(map[string]int32, len(x.ids))
	for i, id := range x.ids {
		pos[id] = int32(i)
	}
	c := newClusterer(x, mode, keep, t, db.rkv == nil)
	c.named = true
	// NB: a pair of nodes comes once for each pair of their documents, in
	// groups of identical ones, and a file may repeat a pair: the edges
	// are made each once (dedupEdges) whenever they have doubled since
	// the last time, and after the loop, so that they hold at most twice
	// the distinct pairs (two groups of 8,000 identical copies near each
	// other are 64 million pairs of documents, and one of nodes). The
	// union-find (Components mode on a directory index) holds no pair,
	// and one joined again changes nothing. A map of the pairs seen was
	// kept beside the edges: about 50 bytes a pair more, and gigabytes
	// for the 32 million pairs of a group of 8,000 near copies (a review
	// of skewed corpora, K1).
	dedupAt := 1 << 16
	for p, err := range seq {
		if err != nil {
			return nil, err
		}
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		read.inc()
		switch {
		case !(p.Jaccard >= 0 && p.Jaccard <= 1): // NB: NaN too
			return nil, fmt.Errorf("%w: the pair (%q, %q) has Jaccard %v, not in [0, 1]", ErrInvalidOptions, p.A, p.B, p.Jaccard)
		case p.A == p.B:
			return nil, fmt.Errorf("%w: the pair (%q, %q) names one document twice", ErrInvalidOptions, p.A, p.B)
		}
		if p.Jaccard < t {
			continue
		}
		ia, oka := pos[p.A]
		ib, okb := pos[p.B]
		if run && !(oka && okb && x.nums[ia] == p.na && x.nums[ib] == p.nb) {
			continue // NB: a version no longer stored: replaced or deleted since it was read
		}
		if !oka || !okb {
			missing := p.A
			if oka {
				missing = p.B
			}
			if stored(missing) {
				// NB: an expiry changes neither count a pairs file's
				// header holds (until the sweep): it was taken for a
				// file of another index.
				return nil, fmt.Errorf("%w: the pair (%q, %q) names %q, which has expired since the pairs were found: the file is stale, run pairs again", ErrNotFound, p.A, p.B, missing)
			}
			return nil, fmt.Errorf("%w: the pair (%q, %q) names %q, which the index does not hold (deleted or expired since the pairs were found, or pairs of another index)", ErrNotFound, p.A, p.B, missing)
		}
		na, nb := x.rep[ia], x.rep[ib]
		if na == nb {
			c.on[na] = true
			continue
		}
		c.add(na, nb, p.Jaccard)
		if len(c.edges) >= dedupAt {
			c.dedupEdges()
			dedupAt = max(dedupAt, 2*len(c.edges))
		}
	}
	c.dedupEdges()
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	setOf := func(n int32, dst []uint64) ([]uint64, error) {
		v, ok, err := record(x.nums[n])
		if err != nil {
			return nil, classify(err)
		}
		if !ok && db.rkv != nil {
			// NB: replaced or deleted since the index was read (a Redis
			// index has no snapshot): an identical member's record gives
			// the same set; with none left, the node is left out of its
			// cluster (clusterer.clusters).
			for _, m := range x.members(n) {
				if m == n {
					continue
				}
				if v, ok, err = record(x.nums[m]); err != nil {
					return nil, classify(err)
				} else if ok {
					break
				}
			}
			if !ok {
				return nil, vanishedError{n}
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: doc %d vanished from the snapshot", ErrCorrupt, x.nums[n])
		}
		view, err := codec.ParseDocView(v)
		if err != nil {
			return nil, classify(fmt.Errorf("doc %d: %w", x.nums[n], err))
		}
		if db.estimateOnly() {
			return codec.Widen(dst, view.AppendSignature(nil)), nil
		}
		return db.viewSet(h, x.nums[n], &view, dst)
	}
	var sa, sb []uint64
	var table minhash.SetTable
	cached := int32(-1)
	read.flush() // NB: the pairs' phase ends with its count
	prog.phase(last, last, "making clusters", 0)
	return c.clusters(ctx, func(a, b int32) (float64, error) {
		if a != cached {
			if sa, err = setOf(a, sa[:0]); err != nil {
				return 0, err
			}
			cached = a
			table.Reset(sa)
		}
		if sb, err = setOf(b, sb[:0]); err != nil {
			return 0, err
		}
		if db.estimateOnly() {
			return x.estimate(a, b, sa, sb), nil
		}
		j, _ := table.JaccardAtLeast(sb, 0)
		return j, nil
	})
}
