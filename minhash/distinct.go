package minhash

import "math/bits"

// distinctTable de-duplicates shingle hashes without sorting them: open
// addressing with linear probing over a power-of-two table between a
// quarter and half full. A Shingler keeps one, so its table is reused from
// document to document.
type distinctTable struct {
	slots []uint64
}

// dedup moves the distinct values of a to its front, in the order of their
// first occurrence, and returns that prefix.
func (t *distinctTable) dedup(a []uint64) []uint64 {
	n := len(a)
	if n < 2 {
		return a
	}
	b := bits.Len(uint(n)) + 1 // 2n ≤ 2^b < 4n
	size := 1 << b
	if cap(t.slots) < size {
		t.slots = make([]uint64, size)
	} else {
		t.slots = t.slots[:size]
		clear(t.slots)
	}
	slots, mask, shift := t.slots, uint64(size-1), uint(64-b)
	// NB: 0 marks an empty slot, so a zero hash is tracked on the side.
	out, zero := 0, false
	for _, x := range a {
		if x == 0 {
			if !zero {
				zero = true
				a[out] = 0
				out++
			}
			continue
		}
		// NB: Fibonacci hashing (one multiplication) spreads values that
		// are not uniform, such as small integers, over the table; the
		// table is at most half full, so every probe ends.
		i := (x * 0x9e3779b97f4a7c15) >> shift
		for {
			s := slots[i]
			if s == x {
				break
			}
			if s == 0 {
				slots[i] = x
				a[out] = x
				out++
				break
			}
			i = (i + 1) & mask
		}
	}
	return a[:out]
}
