package arena

import (
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
