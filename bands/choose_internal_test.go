package bands

import "testing"

// Ensure that the weighted search breaks ties as the exhaustive search
// does, the first banding in (r, b) order: with the false negatives
// weighing nothing, every banding whose false-positive area underflows to
// 0 costs 0, and the search meets them from the largest b down within a
// row count (the oracle: the least r whose area at b = 1 is 0, found by
// the exported area, and b = 1).
func TestChooseWeightedTies(t *testing.T) {
	const k, th = 1300, 0.1 // NB: there the areas of b = 1 to 3 at that r are all 0
	want := Params{}
	for r := 1; r <= k && want.B == 0; r++ {
		p := Params{B: 1, R: r}
		if p.FalsePositiveArea(th) == 0 {
			want = p
		}
	}
	if want.B == 0 || k/want.R < 3 || (Params{B: 3, R: want.R}).FalsePositiveArea(th) != 0 {
		t.Fatalf("no row count of area 0 at 3 bands too, with room for them: %v", want)
	}
	if got := chooseWeighted(k, th, 1, 0); got != want {
		t.Errorf("chose %v, want %v (of cost %v)", got, want, want.FalsePositiveArea(th))
	}
}
