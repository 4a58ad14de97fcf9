package minhash

import (
	"math/bits"
	"slices"
)

// distinctTable de-duplicates shingle hashes without sorting them: open
// addressing with linear probing over a power-of-two table of positions,
// at most 1/4 full (between 1/8 and 1/4 when the text fits the table it
// begins with). A Shingler keeps one, so its table is reused
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
	b     int // len(slots) is 2^b
}

// begin readies the table for about n values (at most 2^32-2), with at
// most maxStart slots to begin with (a power of two; tests make it small
// to exercise the growth).
//
// NB: the table is sized for n values, 4 to 8 slots each, up to maxStart,
// and doubles whenever a quarter of it could be taken by the values add is
// given, so that a huge text that
// repeats itself gets a table the size of its distinct shingles rather
// than of its occurrences: 30 MB of text with 270,000 distinct shingles
// among 31 million had a table of 2^27 slots (512 MiB, every probe a cache
// miss), now one of 2^22 (maxStartSlots: 16 MiB), which it never fills.
func (t *distinctTable) begin(n, maxStart int) {
	b := bits.Len(uint(n)) + 2 // 4n < 2^b ≤ 8n
	if 1<<b > maxStart {
		b = bits.Len(uint(maxStart)) - 1
	}
	t.reset(b)
}

// add appends to dst those of xs not yet in the table, in order, and
// returns the extended slice. The table holds positions in dst[start:]
// (plus one): every value added since begin must still be there.
func (t *distinctTable) add(dst []uint64, start int, xs []uint64) []uint64 {
	out := len(dst) - start
	for (out+len(xs))*4 > len(t.slots) {
		t.grow(dst[start:])
	}
	// NB: room for every value of xs, so that the loop is the one a
	// table sized for them all would run: no growth and no append. When
	// dst is xs[:0] (de-duplication in place) it has that room already,
	// and a value is written only over one already read.
	dst = slices.Grow(dst, len(xs))
	out = t.insert(dst[start:start+out+len(xs)], out, xs)
	return dst[:start+out]
}

// insert is add's loop: vals[:out] are the values in the table, and the
// new values of xs go to vals[out:]; it returns how many vals then holds.
// NB: a function of its own, so that the loop has no more live values
// than registers: within add it ran 6% slower (BenchmarkSetOf), as
// fast as the table that could not grow once it was on its own.
func (t *distinctTable) insert(vals []uint64, out int, xs []uint64) int {
	slots, mask, shift := t.layout()
	for _, x := range xs {
		// NB: Fibonacci hashing (one multiplication) spreads values that
		// are not uniform, such as small integers, over the table; the
		// table is at most 1/4 full, so every probe ends.
		i := (x * 0x9e3779b97f4a7c15) >> shift
		for {
			s := slots[i]
			if s == 0 {
				vals[out] = x
				out++
				slots[i] = uint32(out)
				break
			}
			if vals[s-1] == x {
				break
			}
			i = (i + 1) & mask
		}
	}
	return out
}

// layout returns the table's slots, the mask of a slot index, and the
// shift that takes a value's hash to its first slot. NB: & 63 tells the
// compiler that the shift is below 64, which spares a loop a test of it
// (and a register).
func (t *distinctTable) layout() (slots []uint32, mask uint64, shift uint) {
	return t.slots, uint64(len(t.slots) - 1), uint(64-t.b) & 63
}

// grow doubles the table, which holds the positions of vals.
func (t *distinctTable) grow(vals []uint64) {
	t.reset(t.b + 1)
	slots, mask, shift := t.layout()
	for j, x := range vals {
		i := (x * 0x9e3779b97f4a7c15) >> shift
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = uint32(j + 1)
	}
}

// end lets the table go if it is too large to keep for the next text.
func (t *distinctTable) end() {
	if len(t.slots) > maxKeptSlots {
		// NB: a Shingler lives in pools (a database's hashers): the table
		// of one huge text, 16-32 bytes a value, would stay with it.
		t.slots = nil
	}
}

// reset makes the table 2^b empty slots, reusing its memory when it can.
func (t *distinctTable) reset(b int) {
	t.slots, t.b = zeroed(t.slots, 1<<b), b
}

// maxStartSlots is the largest table AppendDistinct begins with (16 MiB: texts of up
// to a million shingles get one that never grows).
const maxStartSlots = 1 << 22

// maxKeptSlots is the largest table (8 MiB: texts of up to half a million
// shingles) that the table keeps for the next text.
const maxKeptSlots = 1 << 21
