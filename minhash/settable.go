package minhash

import "math/bits"

// A SetTable holds a set of distinct hashes in an open-addressing hash
// table (linear probing, at most half full), so that other sets, in any
// order, are intersected with it in one pass each: no sort on either side.
// Reset reuses its memory; keep one per goroutine. It is not safe for
// concurrent use. Reset gives it its set, before any other method: the
// zero value holds none, and its other methods panic.
type SetTable struct {
	slots []uint64 // 0: empty
	zero  bool     // 0 is in the set
	shift uint
	n     int
}

// Reset makes the table hold set, whose values must be distinct.
func (t *SetTable) Reset(set []uint64) {
	b := max(4, bits.Len(uint(len(set)))+1) // 2n ≤ 2^b
	size := 1 << b
	t.slots = zeroed(t.slots, size)
	t.shift, t.zero, t.n = uint(64-b), false, len(set)
	mask := uint64(size - 1)
	for _, x := range set {
		if x == 0 {
			t.zero = true
			continue
		}
		i := (x * 0x9e3779b97f4a7c15) >> t.shift // see distinctTable
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = x
	}
}

// Len returns the size of the set.
func (t *SetTable) Len() int { return t.n }

// contains reports whether x is in the set.
func (t *SetTable) contains(x uint64) bool {
	if x == 0 {
		return t.zero
	}
	mask := uint64(len(t.slots) - 1)
	for i := (x * 0x9e3779b97f4a7c15) >> t.shift; ; i = (i + 1) & mask {
		switch t.slots[i] {
		case x:
			return true
		case 0:
			return false
		}
	}
}

// JaccardAtLeast is JaccardAtLeast of the table's set and other, whose
// values must be distinct and may come in any order: the same float64,
// and false as soon as the pass shows that t is out of reach.
func (t *SetTable) JaccardAtLeast(other []uint64, th float64) (float64, bool) {
	if t.n == 0 && len(other) == 0 {
		return 1, th <= 1
	}
	// The bound of JaccardAtLeast: never drops a pair.
	need := max(0, int(th/(1+th)*float64(t.n+len(other)))-1)
	inter := 0
	for i := 0; i < len(other); {
		end := min(len(other), i+64)
		for _, x := range other[i:end] {
			if t.contains(x) {
				inter++
			}
		}
		i = end
		if inter+len(other)-i < need {
			return 0, false
		}
	}
	j := float64(inter) / float64(t.n+len(other)-inter)
	return j, j >= th
}
