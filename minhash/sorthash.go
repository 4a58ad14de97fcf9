package minhash

import (
	"math/bits"
	"slices"
)

// hashSorter sorts shingle hashes. A Shingler keeps one, so its buffers are
// reused from document to document.
//
// NB: shingle hashes are uniform 64-bit values, so one counting pass on the
// top bits spreads n of them over about n/2 buckets, and an insertion sort
// finishes the buckets (a few elements each). This replaced
// slices.Sort, which was the largest single cost of a bulk build (47% of
// its CPU at a million 1.2 KB documents). If a bucket is large anyway —
// many equal hashes, or inputs that are not uniform — slices.Sort sorts
// the whole input instead, so the worst case stays O(n log n). So does an
// input of sortAtOnce hashes or more, at once, without the counting pass.
type hashSorter struct {
	scratch []uint64
	counts  []uint32
}

// sortSmall is the length below which a plain insertion sort wins.
const sortSmall = 48

// sortAtOnce is the length from which hashSorter sorts with slices.Sort
// without its counting pass: the buckets are capped at 2^16, and with 30
// uniform hashes a bucket on average (about 2 million) the largest is
// over sortSmall almost surely (that none of 2^16 Poisson counts of mean
// 30 is over 48 has a chance of about e^-58), so the pass was wasted
// (1.18x slices.Sort's time at 2 million: a review, CR-7). At 1.6
// million (a mean of 25) it is still worth it 40% of the time.
const sortAtOnce = 30 << 16

// sort sorts a in place.
func (h *hashSorter) sort(a []uint64) {
	n := len(a)
	if n < sortSmall {
		insertionSort(a)
		return
	}
	// About one bucket per two elements, at most 2^16 buckets (256 KiB of
	// counts).
	if n >= sortAtOnce {
		slices.Sort(a) // too many a bucket for the insertion sorts
		return
	}
	b := min(bits.Len(uint(n))-1, 16)
	shift := 64 - b
	nb := 1 << b
	h.counts = slices.Grow(h.counts[:0], nb)[:nb]
	clear(h.counts)
	for _, x := range a {
		h.counts[x>>shift]++
	}
	// counts[i] becomes the start of bucket i; the scatter below advances
	// it to the bucket's end.
	sum, largest := uint32(0), uint32(0)
	for i, c := range h.counts {
		h.counts[i] = sum
		sum += c
		largest = max(largest, c)
	}
	if largest > sortSmall {
		slices.Sort(a) // not uniform: keep O(n log n)
		return
	}
	h.scratch = slices.Grow(h.scratch[:0], n)[:n]
	for _, x := range a {
		d := x >> shift
		h.scratch[h.counts[d]] = x
		h.counts[d]++
	}
	copy(a, h.scratch)
	// Every element is now in its bucket, so one insertion sort over the
	// whole slice only moves elements within buckets of a few.
	insertionSort(a)
}

func insertionSort(a []uint64) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i
		for j > 0 && a[j-1] > x {
			a[j] = a[j-1]
			j--
		}
		a[j] = x
	}
}
