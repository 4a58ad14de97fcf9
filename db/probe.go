package db

import "math/bits"

// probeSet holds a query's verification set in an open-addressing hash
// table, so that a candidate's shingle set is intersected with it in one
// pass over the candidate's shingle hashes as the text gives them (in text
// order, with repeats), without sorting them.
//
// NB: in text mode a candidate's set is re-derived from its text for each
// query; sorting it was the part of that work the sorted-merge Jaccard
// needed and nothing else did. |B| comes from the record (the set size it
// stores), so |A ∩ B| is all the pass must count, and the Jaccard is the
// same float64 as the merge's.
type probeSet struct {
	keys  []uint64
	used  []bool
	stamp []uint32 // the candidate that last counted the key
	shift uint
	cur   uint32
	n     int
}

// newProbeSet returns a table of set, which must be distinct.
func newProbeSet(set []uint64) *probeSet {
	size := 1 << max(4, bits.Len(uint(2*len(set)))) // load factor ≤ 1/2
	p := &probeSet{keys: make([]uint64, size), used: make([]bool, size), stamp: make([]uint32, size),
		shift: uint(64 - bits.Len(uint(size-1))), n: len(set)}
	for _, x := range set {
		i := p.slot(x)
		for p.used[i] {
			i = (i + 1) & (len(p.keys) - 1)
		}
		p.keys[i], p.used[i] = x, true
	}
	return p
}

// slot is x's home slot. NB: Fibonacci hashing of the high bits: shingle
// hashes are uniform, but bag elements and 32-bit sets are not in every
// bit.
func (p *probeSet) slot(x uint64) int { return int((x * 0x9E3779B97F4A7C15) >> p.shift) }

// intersect returns how many distinct values of elems are in the set.
func (p *probeSet) intersect(elems []uint64) int {
	p.cur++
	if p.cur == 0 { // the stamps wrapped: forget them all
		clear(p.stamp)
		p.cur = 1
	}
	n := 0
	mask := len(p.keys) - 1
	for _, x := range elems {
		for i := p.slot(x); p.used[i]; i = (i + 1) & mask {
			if p.keys[i] == x {
				if p.stamp[i] != p.cur {
					p.stamp[i] = p.cur
					n++
				}
				break
			}
		}
	}
	return n
}

// jaccardAtLeast is minhash.JaccardAtLeast for a candidate of size setLen
// whose elements (with repeats) are elems.
func (p *probeSet) jaccardAtLeast(elems []uint64, setLen int, t float64) (float64, bool) {
	if p.n == 0 && setLen == 0 {
		return 1, t <= 1
	}
	inter := p.intersect(elems)
	j := float64(inter) / float64(p.n+setLen-inter)
	return j, j >= t
}
