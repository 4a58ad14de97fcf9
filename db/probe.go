package db

import "math/bits"

// probeSet holds a query's verification set in an open-addressing hash
// table, so that a candidate's shingle set is intersected with it in one
// pass over the candidate's shingle hashes, in any order and with or
// without repeats (the query cache keeps them de-duplicated), without
// sorting them.
//
// NB: in text mode a candidate's set is re-derived from its text for each
// query; sorting it was the part of that work the sorted-merge Jaccard
// needed and nothing else did. |B| comes from the record (the set size it
// stores), so |A ∩ B| is all the pass must count, and the Jaccard is the
// same float64 as the merge's. The query's own set need not be sorted
// either: the table is built from its elements with repeats, and counts
// the distinct ones (|A|).
type probeSet struct {
	slots []probeSlot
	shift uint
	cur   uint32
	n     int
}

// probeSlot is one slot of the table. NB: key, mark and stamp side by
// side, so that a probe touches one cache line: as three arrays, the
// intersection of a 370-element candidate took 1.0-1.2x as long (three
// runs).
type probeSlot struct {
	key   uint64
	used  bool
	stamp uint32 // the candidate that last counted the key
}

// newProbeSet returns a table of the distinct values of elems (in any
// order, with repeats).
func newProbeSet(elems []uint64) *probeSet {
	p := &probeSet{}
	p.reset(elems)
	return p
}

// reset makes p the table of the distinct values of elems, reusing its
// storage.
//
// NB: sized for the distinct values as they come (doubling at half
// full), not for len(elems): a text of 20 MB that repeats a few hundred
// shingles took a table of 64 bytes a shingle occurrence, 1.2 GB.
func (p *probeSet) reset(elems []uint64) {
	p.n, p.cur = 0, 0
	p.alloc(1 << max(4, bits.Len(uint(2*min(len(elems), 1<<12)))))
	for _, x := range elems {
		if p.insert(x) && 2*p.n > len(p.slots) {
			p.grow()
		}
	}
}

// alloc gives p an empty table of size slots (a power of two).
func (p *probeSet) alloc(size int) {
	if cap(p.slots) < size {
		p.slots = make([]probeSlot, size)
	} else {
		p.slots = p.slots[:size]
		clear(p.slots)
	}
	p.shift = uint(64 - bits.Len(uint(size-1)))
}

// insert adds x to the table, reporting whether it was not there.
func (p *probeSet) insert(x uint64) bool {
	mask := len(p.slots) - 1
	i := p.slot(x)
	for p.slots[i].used && p.slots[i].key != x {
		i = (i + 1) & mask
	}
	if s := &p.slots[i]; !s.used {
		s.key, s.used = x, true
		p.n++
		return true
	}
	return false
}

// grow doubles the table (reset: no stamps yet to keep).
func (p *probeSet) grow() {
	old := p.slots
	p.slots = nil
	p.n = 0
	p.alloc(2 * len(old))
	for _, s := range old {
		if s.used {
			p.insert(s.key)
		}
	}
}

// slot is x's home slot. NB: Fibonacci hashing of the high bits: shingle
// hashes are uniform, but bag elements and 32-bit sets are not in every
// bit.
func (p *probeSet) slot(x uint64) int { return int((x * 0x9E3779B97F4A7C15) >> p.shift) }

// intersect returns how many distinct values of elems are in the set, or
// false once that count can no longer reach need: each value of elems
// left adds at most one.
//
// NB: on long texts at a low threshold most candidates fall short:
// querying each of scancode-licenses' texts at t = 0.5 verifies 374,086
// candidates for 35,686 matches. The bound, checked every 256 values,
// left 38% of their values unread when they came de-duplicated (as the
// query cache keeps them), and 11% with repeats (3.5 and 8.7 thousand
// values a candidate), where the values left overstate what they can
// add; the whole run took 0.89x the time with repeats.
func (p *probeSet) intersect(elems []uint64, need int) (int, bool) {
	p.cur++
	if p.cur == 0 { // the stamps wrapped: forget them all
		for i := range p.slots {
			p.slots[i].stamp = 0
		}
		p.cur = 1
	}
	n := 0
	slots, cur := p.slots, p.cur
	mask := len(slots) - 1
	for len(elems) > 0 {
		if n+len(elems) < need {
			return n, false
		}
		block := elems[:min(len(elems), 256)]
		elems = elems[len(block):]
		for _, x := range block {
			for i := p.slot(x); slots[i].used; i = (i + 1) & mask {
				if s := &slots[i]; s.key == x {
					if s.stamp != cur {
						s.stamp = cur
						n++
					}
					break
				}
			}
		}
	}
	return n, n >= need
}

// jaccardAtLeast is minhash.JaccardAtLeast for a candidate of size setLen
// whose elements (repeats allowed) are elems.
func (p *probeSet) jaccardAtLeast(elems []uint64, setLen int, t float64) (float64, bool) {
	if p.n == 0 && setLen == 0 {
		return 1, t <= 1
	}
	// J ≥ t ⇔ |A∩B| ≥ t/(1+t)·(|A|+|B|). NB: need is rounded down, less
	// one for floating-point error, and the ratio is checked below, so the
	// early stop never drops a pair (as in minhash.JaccardAtLeast).
	need := max(0, int(t/(1+t)*float64(p.n+setLen))-1)
	inter, ok := p.intersect(elems, need)
	if !ok {
		return 0, false
	}
	j := float64(inter) / float64(p.n+setLen-inter)
	return j, j >= t
}
