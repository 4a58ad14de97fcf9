package minhash

import (
	"math/bits"
	"slices"
)

// distinctTable de-duplicates shingle hashes without sorting them: open
// addressing with linear probing over a power-of-two table of positions,
// between 1/8 and 1/4 full. A Shingler keeps one, so its table is reused
// from document to document.
//
// NB: a slot holds the position (plus one; 0 is empty) in the output of
// the value it stands for, not the value: 4 bytes instead of 8, so the
// table is twice as sparse in the same memory (16-32 bytes a value). A
// probe that lands on another value is a mispredicted branch: with a
// table of values 1/4 to 1/2 full, de-duplication cost 0.7x the hashing
// floor (BenchmarkSetOf); this one takes 0.74-0.8x that time on the
// generated and debian-descriptions samples (the whole distinct set
// 0.89-0.95x), 0.68x on random hashes (1/16 to 1/8 full, in twice the
// memory: 0.64x on random hashes, no better on text).
type distinctTable struct {
	slots []uint32
}

// dedup moves the distinct values of a to its front, in the order of their
// first occurrence (below 2^32-1 values; sorted above), and returns that
// prefix.
func (t *distinctTable) dedup(a []uint64) []uint64 {
	n := len(a)
	if n < 2 {
		return a
	}
	if uint64(n) >= 1<<32-1 {
		// NB: positions are 32-bit; no text has this many shingles, but
		// a caller's set may: sorted instead (the order is not kept).
		slices.Sort(a)
		return slices.Compact(a)
	}
	b := bits.Len(uint(n)) + 2 // 4n < 2^b ≤ 8n
	size := 1 << b
	if cap(t.slots) < size {
		t.slots = make([]uint32, size)
	} else {
		t.slots = t.slots[:size]
		clear(t.slots)
	}
	slots, mask, shift := t.slots, uint64(size-1), uint(64-b)
	out := 0
	for _, x := range a {
		// NB: Fibonacci hashing (one multiplication) spreads values that
		// are not uniform, such as small integers, over the table; the
		// table is at most 1/4 full, so every probe ends.
		i := (x * 0x9e3779b97f4a7c15) >> shift
		for {
			s := slots[i]
			if s == 0 {
				a[out] = x
				out++
				slots[i] = uint32(out)
				break
			}
			if a[s-1] == x {
				break
			}
			i = (i + 1) & mask
		}
	}
	if size > maxKeptSlots {
		// NB: a Shingler lives in pools (a database's hashers): the table
		// of one huge text, 16-32 bytes an occurrence, would stay with it.
		t.slots = nil
	}
	return a[:out]
}

// maxKeptSlots is the largest table (8 MiB: texts of up to half a million
// shingles) that dedup keeps for the next call.
const maxKeptSlots = 1 << 21
