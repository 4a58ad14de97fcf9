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
// by (A, B). Sets MUST be sorted and de-duplicated; empty sets pair with
// nothing.
//
// Each set is reordered by global token frequency (rarest first); a pair
// with J ≥ t must share a token within the first |x| − ⌈t·|x|⌉ + 1 tokens of
// each, so only those prefixes are indexed and probed, and every candidate
// is verified exactly.
func Join(sets [][]uint64, t float64) []Pair {
	return join(sets, t, min(runtime.GOMAXPROCS(0), max(1, len(sets)/256)))
}

// join is Join with its probes on the given number of goroutines.
func join(sets [][]uint64, t float64, workers int) []Pair {
	// Rank tokens by global frequency, rarest first (ties by value), and
	// rewrite each set as its sorted ranks: the prefix is then the set's
	// smallest ranks, and the index is a dense slice.
	freq := make(map[uint64]int32)
	for _, s := range sets {
		for _, x := range s {
			freq[x]++
		}
	}
	tokens := make([]uint64, 0, len(freq))
	for x := range freq {
		tokens = append(tokens, x)
	}
	slices.SortFunc(tokens, func(a, b uint64) int { return cmp.Or(cmp.Compare(freq[a], freq[b]), cmp.Compare(a, b)) })
	rank := make(map[uint64]int32, len(tokens))
	for r, x := range tokens {
		rank[x] = int32(r)
	}
	ranked := make([][]int32, len(sets))
	for i, s := range sets {
		r := make([]int32, len(s))
		for j, x := range s {
			r[j] = rank[x]
		}
		slices.Sort(r)
		ranked[i] = r
	}
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
	type posting struct{ k, pos int32 }
	index := make([][]posting, len(tokens))
	for k, i := range order {
		lx := len(sets[i])
		// NB: only a shorter prefix is indexed: a later (larger) x needs
		// overlap ≥ t/(1+t)·(|x|+|y|) ≥ 2t/(1+t)·|y| with this y.
		p := max(1, min(lx-int(math.Ceil(tp*float64(lx)))+1, lx))
		ip := max(1, min(lx-int(math.Ceil(2*tp/(1+tp)*float64(lx)))+1, p))
		for pos, x := range ranked[i][:ip] {
			index[x] = append(index[x], posting{int32(k), int32(pos)})
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
					p := max(1, min(lx-int(math.Ceil(tp*float64(lx)))+1, lx))
					minSize := tp * float64(lx)
					for xi, x := range rx[:p] {
						for _, e := range index[x] {
							if int(e.k) >= k {
								break
							}
							ly := len(sets[order[e.k]])
							if overlap[e.k] < 0 || float64(ly) < minSize {
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
					for _, kj := range touched {
						j := order[kj]
						if overlap[kj] > 0 && reaches(rx, ranked[j], int(math.Ceil(tp/(1+tp)*float64(lx+len(sets[j]))))) {
							if jac := minhash.Jaccard(s, sets[j]); jac >= t {
								out = append(out, Pair{min(i, j), max(i, j), jac})
							}
						}
						overlap[kj] = 0
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

// reaches reports whether sorted a and b share at least need elements,
// giving up as soon as the elements left cannot make up the difference.
func reaches(a, b []int32, need int) bool {
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
