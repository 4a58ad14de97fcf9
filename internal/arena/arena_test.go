package arena

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that the slices an Arena hands out have the capacity asked for
// and never overlap until Reset, and that after Reset it reuses its
// chunks instead of allocating new ones.
func TestArena(t *testing.T) {
	a := Arena[int]{Chunk: 100}
	fill := func() [][]int {
		var out [][]int
		for i, n := range []int{10, 50, 40, 30, 250, 1, 99, 0, 7} {
			s := a.Alloc(n)
			if len(s) != 0 || cap(s) != n {
				t.Fatalf("Alloc(%d): len %d cap %d", n, len(s), cap(s))
			}
			for range n {
				s = append(s, i)
			}
			out = append(out, s)
		}
		for i, s := range out {
			for _, v := range s {
				if v != i {
					t.Fatalf("slice %d was overwritten: %v", i, s)
				}
			}
		}
		return out
	}
	fill()
	chunks := len(a.chunks)
	a.Reset()
	second := fill()
	if len(a.chunks) != chunks {
		t.Fatalf("after Reset: %d chunks, %d before", len(a.chunks), chunks)
	}
	if !slices.Equal(second[4], slices.Repeat([]int{4}, 250)) {
		t.Fatal("the large slice differs")
	}
}

// Ensure that an arena whose requests are sometimes larger than a chunk
// keeps about one cycle's demand (the oracle: the largest cycle's total of
// requests no larger than a chunk, counted here), not chunks skipped by
// the large ones.
func TestArenaLargeRequestsKeepNoExtraChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := Arena[byte]{Chunk: 1 << 20} // as a load's records
	maxDemand := 0
	for range 300 {
		demand := 0
		for range 1000 {
			n := 5000 + r.IntN(10000) // records of about 10 KB
			if r.IntN(100) == 0 {
				n = 2<<20 + r.IntN(1<<20) // and a few of 2-3 MiB
			} else {
				demand += n
			}
			if s := a.Alloc(n); len(s) != 0 || cap(s) != n {
				t.Fatalf("Alloc(%d): len %d cap %d", n, len(s), cap(s))
			}
		}
		maxDemand = max(maxDemand, demand)
		a.Reset()
	}
	held := 0
	for _, c := range a.chunks {
		held += len(c)
	}
	// A chunk may end unfilled by up to a record's size: 1.1x is room.
	if float64(held) > 1.1*float64(maxDemand)+float64(a.Chunk) {
		t.Fatalf("the arena holds %d MiB in %d chunks, the largest cycle asked for %d MiB", held>>20, len(a.chunks), maxDemand>>20)
	}
}
