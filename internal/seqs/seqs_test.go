package seqs

import (
	"slices"
	"testing"
)

// Ensure that a consumer that stops early gets no panic from an iterator
// that yields on regardless, and sees exactly what it took; and that a
// well-behaved iterator is passed through whole. The oracle: the
// iterator's own values, counted here.
func TestCaller(t *testing.T) {
	yielded := 0
	rude := func(yield func(int, error) bool) {
		for i := range 10 {
			yielded++
			yield(i, nil) // NB: its result ignored
		}
	}
	var got []int
	for i := range Caller(rude) {
		got = append(got, i)
		if i == 2 {
			break
		}
	}
	if !slices.Equal(got, []int{0, 1, 2}) || yielded != 10 {
		t.Errorf("took %v (want 0 1 2); the iterator yielded %d (want 10)", got, yielded)
	}
	got = nil
	for i := range Caller(rude) {
		got = append(got, i)
	}
	if len(got) != 10 {
		t.Errorf("a whole range took %v", got)
	}
}
