package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// Ensure that sorted pairs come out in pairCmp's order (best first, then
// ids) when they spill to disk, with ids that hold NUL bytes and ids that
// are prefixes of others: the oracle is an in-memory sort of the same
// pairs.
func TestPairSorterSpills(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ids := []string{"a", "a\x00", "a\x00b", "ab", "b", "", "\x00", "zz\x00\x00", "ä"}
	var want []db.Pair
	for i := range 20000 {
		p := db.Pair{
			A:       ids[rng.IntN(len(ids))] + fmt.Sprint(rng.IntN(50)),
			B:       fmt.Sprintf("doc-%d-%s", i%997, ids[rng.IntN(len(ids))]),
			Jaccard: float64(rng.IntN(5)) / 4,
		}
		want = append(want, p)
	}
	s, err := newPairSorter(0, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, p := range want {
		if err := s.add(p); err != nil {
			t.Fatal(err)
		}
	}
	if s.ext.Runs() < 2 {
		t.Fatalf("%d runs: the test does not spill", s.ext.Runs())
	}
	slices.SortFunc(want, pairCmp)
	var got []db.Pair
	if err := s.each(func(p db.Pair) error { got = append(got, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("pair %d: got %+q, want %+q", i, []string{got[i].A, got[i].B, fmt.Sprint(got[i].Jaccard)}, []string{want[i].A, want[i].B, fmt.Sprint(want[i].Jaccard)})
			}
		}
		t.Fatalf("got %d pairs, want %d", len(got), len(want))
	}
}
