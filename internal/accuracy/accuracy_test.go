package accuracy

import (
	"os"
	"testing"
)

// Ensure that both schemes are unbiased at every size and have the ideal
// variance where the issue demands it: the CI-sized version of the full
// table (go run ./internal/cmd/accuracy), with bounds widened for its
// fewer trials.
func TestEstimatorAccuracy(t *testing.T) {
	spec := Spec{K: 128, Seeds: 400, SmallSeeds: 4000, Base: 1}
	if testing.Short() {
		spec.Seeds, spec.SmallSeeds = 150, 1500
	}
	cells, err := Table(spec)
	if err != nil {
		t.Fatal(err)
	}
	fail := false
	for _, c := range cells {
		for _, p := range BoundsFor(c.Seeds).Check(c) {
			t.Errorf("%v size %d J %.3f: %s", c.Scheme, c.Size, c.J, p)
			fail = true
		}
	}
	if fail || testing.Verbose() {
		Print(os.Stderr, cells)
	}
}

// Ensure that the constructed pairs have the Jaccard they claim, counted by
// hand from the construction (m shared of n each: m / (2n − m)).
func TestPair(t *testing.T) {
	for _, c := range []struct {
		n      int
		target float64
		m      int
	}{{3, 0.1, 1}, {3, 0.5, 2}, {10, 0.5, 7}, {500, 0.95, 487}, {5000, 0.1, 909}} {
		m, j := Pair(c.n, c.target)
		if m != c.m || j != float64(c.m)/float64(2*c.n-c.m) {
			t.Errorf("Pair(%d, %v) = %d, %v; want m = %d", c.n, c.target, m, j, c.m)
		}
	}
}
