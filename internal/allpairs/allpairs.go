// Package allpairs finds every pair of sets whose exact Jaccard similarity
// reaches a threshold, without LSH: the prefix-filtering all-pairs join
// (Bayardo et al., "Scaling up all pairs similarity search", WWW 2007),
// with PPJoin's positional filter, which is complete for J ≥ t. It is the oracle that lshdb's recall tests
// compare against: an algorithm independent of MinHash and banding.
package allpairs

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lshdb/lshdb/minhash"
)

// Pair is a pair of set indexes A < B and their exact Jaccard.
type Pair struct {
	A, B    int
	Jaccard float64
}

// Join returns every pair (a < b) of sets with minhash.Jaccard ≥ t, sorted
// by (A, B). A t ≤ 0 is taken as 0, which returns the pairs with Jaccard
// > 0 (that share a token), not every pair: disjoint sets are never
// candidates. Sets MUST be sorted and de-duplicated; empty sets pair with
// nothing.
//
// Each set is reordered by global token frequency (rarest first); a pair
// with J ≥ t must share a token within the first |x| − ⌈t·|x|⌉ + 1 tokens of
// each, so only those prefixes are indexed and probed, and every candidate
// is verified exactly.
func Join(sets [][]uint64, t float64) []Pair {
	return Rank(sets).Join(t)
}

// Ranked is a collection of sets ranked for Join at any threshold: the
// ranking is the same at every one (on gcide it took 4.3 s, the join at
// t = 0.5 14.6 s and at 0.8 1.8 s).
type Ranked struct {
	sets   [][]uint64
	ranked [][]int32
	tokens int
}

// Rank ranks sets for Join (see Join for what sets must be). The sets
// MUST NOT change while the result is in use.
func Rank(sets [][]uint64) *Ranked {
	return rank(sets, workersFor(sets))
}

// rank is Rank with its sorts on the given number of goroutines.
func rank(sets [][]uint64, workers int) *Ranked {
	ranked, tokens := rankTokens(sets, workers)
	return &Ranked{sets: sets, ranked: ranked, tokens: tokens}
}

// Join returns what Join(sets, t) does for the sets r was made of.
func (r *Ranked) Join(t float64) []Pair {
	// NB: below 0 the prefix bound t/(1+t) divided by zero at -1 and
	// passed 1 below it: nothing was returned (a read-through's RT-8).
	return r.join(max(t, 0), workersFor(r.sets))
}

// workersFor is how many goroutines Rank and Join use for sets: one per
// core, and one for every 256 sets at most.
func workersFor(sets [][]uint64) int {
	return min(runtime.GOMAXPROCS(0), max(1, len(sets)/256))
}

// join is Join with its probes on the given number of goroutines.
func (r *Ranked) join(t float64, workers int) []Pair {
	sets, ranked, tokens := r.sets, r.ranked, r.tokens
	// Process sets by increasing size: when x is probed, every indexed y
	// has |y| ≤ |x|, and J ≥ t needs |y| ≥ t·|x|.
	order := make([]int, 0, len(sets))
	for i, s := range sets {
		if len(s) > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(sets[a]), len(sets[b])) })
	// NB: prefixes and bounds use a threshold a hair lower than t, so that
	// rounding can only make them looser (complete, never incomplete).
	tp := t - 1e-9
	// The index holds each set's indexing prefix, under its place k in
	// order. A set probes only the sets before it in order (those a
	// sequential join would have indexed by then): every posting list is
	// in increasing k, so a probe stops at the first posting at or past
	// its own place. The index is built first, whole, so that the probes
	// run on every core.
	// NB: each posting carries its set's size, so that the probes read
	// no other array for the size filter (those reads were about a
	// quarter of the join's time on gcide), and a probe starts each list
	// at the first set large enough to reach t (a binary search: places
	// in order are by size; galloping from the front was no faster).
	type posting struct{ k, pos, size int32 }
	index := make([][]posting, tokens)
	for k, i := range order {
		lx := len(sets[i])
		_, ip := prefixes(lx, tp)
		for pos, x := range ranked[i][:ip] {
			index[x] = append(index[x], posting{int32(k), int32(pos), int32(lx)})
		}
	}
	outs := make([][]Pair, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// overlap[k] counts the prefix tokens x shares with the set at
			// place k so far; -1 marks it as pruned by the positional
			// filter (PPJoin, Xiao et al., WWW 2008): when x's token i
			// meets y's token at position pj, no more than
			// min(|x|−i−1, |y|−pj−1) further tokens can be shared,
			// because both sets are in the same global order.
			overlap := make([]int32, len(order))
			var touched []int32
			var out []Pair
			const chunk = 64
			for {
				first := int(next.Add(chunk)) - chunk
				if first >= len(order) {
					break
				}
				for k := first; k < min(first+chunk, len(order)); k++ {
					i := order[k]
					s, rx := sets[i], ranked[i]
					lx := len(s)
					p, _ := prefixes(lx, tp)
					minSize := int32(math.Ceil(tp * float64(lx)))
					for xi, x := range rx[:p] {
						list := index[x]
						from, _ := slices.BinarySearchFunc(list, minSize, func(e posting, size int32) int { return cmp.Compare(e.size, size) })
						for _, e := range list[from:] {
							if int(e.k) >= k {
								break
							}
							ly := int(e.size)
							if overlap[e.k] < 0 {
								continue
							}
							if overlap[e.k] == 0 {
								touched = append(touched, e.k)
							}
							need := int32(math.Ceil(tp / (1 + tp) * float64(lx+ly)))
							if overlap[e.k]+1+int32(min(lx-xi-1, ly-int(e.pos)-1)) >= need {
								overlap[e.k]++
							} else {
								overlap[e.k] = -1
							}
						}
					}
					// NB: for a set y never pruned, overlap[kj] counted
					// every token that x and y share up to last, the
					// smaller of the last tokens of x's probe prefix and of
					// y's indexed prefix (such a token is in both, so x's
					// probe met y's posting), and no other: only the
					// tokens after last are left to merge.
					for _, kj := range touched {
						n := overlap[kj]
						overlap[kj] = 0
						if n <= 0 {
							continue
						}
						j := order[kj]
						ry := ranked[j]
						_, ipy := prefixes(len(ry), tp)
						last := min(rx[p-1], ry[ipy-1])
						xs, _ := slices.BinarySearch(rx, last+1)
						ys, _ := slices.BinarySearch(ry, last+1)
						if reaches(rx[xs:], ry[ys:], int(math.Ceil(tp/(1+tp)*float64(lx+len(ry))))-int(n)) {
							if jac := minhash.Jaccard(s, sets[j]); jac >= t {
								out = append(out, Pair{min(i, j), max(i, j), jac})
							}
						}
					}
					touched = touched[:0]
				}
			}
			outs[w] = out
		}()
	}
	wg.Wait()
	out := slices.Concat(outs...)
	slices.SortFunc(out, func(x, y Pair) int { return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B)) })
	return out
}

// Brute returns the same pairs as Join by comparing every pair: for tests
// of Join and for small inputs.
func Brute(sets [][]uint64, t float64) []Pair {
	var out []Pair
	for a := range sets {
		for b := a + 1; b < len(sets); b++ {
			if len(sets[a]) == 0 || len(sets[b]) == 0 {
				continue
			}
			if j := minhash.Jaccard(sets[a], sets[b]); j >= t {
				out = append(out, Pair{a, b, j})
			}
		}
	}
	return out
}

// prefixes returns the lengths of the prefixes of a set of n tokens that
// a join at threshold tp probes with and indexes: a pair with J ≥ tp
// shares a token within the first n − ⌈tp·n⌉ + 1 of each; only a shorter
// prefix is indexed, as a later (larger) x needs overlap ≥
// tp/(1+tp)·(|x|+|y|) ≥ 2tp/(1+tp)·|y| with an indexed y.
func prefixes(n int, tp float64) (probe, indexed int) {
	probe = max(1, min(n-int(math.Ceil(tp*float64(n)))+1, n))
	indexed = max(1, min(n-int(math.Ceil(2*tp/(1+tp)*float64(n)))+1, probe))
	return probe, indexed
}

// rankTokens ranks the tokens by global frequency, rarest first (ties by
// value), and rewrites each set as its sorted ranks: a set's prefix is
// then its smallest ranks, and the index a dense slice of len(tokens).
// NB: by sorting every occurrence by value, not through a map of counts
// and one of ranks: the maps' lookups took 17 of gcide's 48 CPU-s. The
// occurrences take 16 bytes each while they sort, so a join's peak memory
// is about twice what it was with the maps (a review measured gcide at
// t = 0.9: 985 MB against 556 MB, in 5.4 s against 12.8 s). Ranks are
// int32: fewer than 2^31 distinct tokens.
func rankTokens(sets [][]uint64, workers int) (ranked [][]int32, tokens int) {
	type occurrence struct {
		x  uint64
		at int // in flat
	}
	// NB: the occurrences go into 256 buckets by their top byte, which
	// the goroutines take and sort one at a time (the tokens are hashes,
	// but shingles' frequencies vary: gcide's buckets differ 3.8x in
	// size); one after the other they are in value order.
	const buckets = 256
	var count [buckets + 1]int
	total := 0
	for _, s := range sets {
		total += len(s)
		for _, x := range s {
			count[x>>56+1]++
		}
	}
	for b := range buckets {
		count[b+1] += count[b]
	}
	occ := make([]occurrence, total)
	next := count
	at := 0
	for _, s := range sets {
		for _, x := range s {
			occ[next[x>>56]] = occurrence{x, at}
			next[x>>56]++
			at++
		}
	}
	var wg sync.WaitGroup
	var bucket atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := int(bucket.Add(1)) - 1; b < buckets; b = int(bucket.Add(1)) - 1 {
				slices.SortFunc(occ[count[b]:count[b+1]], func(o, q occurrence) int { return cmp.Compare(o.x, q.x) })
			}
		}()
	}
	wg.Wait()
	// The runs of one value are the distinct tokens, in value order; a
	// stable sort by their counts gives the ranks.
	var runs []int // where each distinct token's run starts in occ
	for i := range occ {
		if i == 0 || occ[i].x != occ[i-1].x {
			runs = append(runs, i)
		}
	}
	runs = append(runs, len(occ))
	byCount := make([]int32, len(runs)-1)
	for d := range byCount {
		byCount[d] = int32(d)
	}
	slices.SortStableFunc(byCount, func(a, b int32) int {
		return cmp.Compare(runs[a+1]-runs[a], runs[b+1]-runs[b])
	})
	flat := make([]int32, total)
	for r, d := range byCount {
		for _, o := range occ[runs[d]:runs[d+1]] {
			flat[o.at] = int32(r)
		}
	}
	ranked = make([][]int32, len(sets))
	for i, s := range sets {
		ranked[i], flat = flat[:len(s):len(s)], flat[len(s):]
		slices.Sort(ranked[i])
	}
	return ranked, len(byCount)
}

// reaches reports whether sorted a and b share at least need elements,
// giving up as soon as the elements left cannot make up the difference.
func reaches(a, b []int32, need int) bool {
	if need <= 0 {
		return true
	}
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		if n+min(len(a)-i, len(b)-j) < need {
			return false
		}
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n >= need
}
