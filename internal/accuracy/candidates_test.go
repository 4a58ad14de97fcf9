package accuracy

import (
	"testing"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that the candidate measurement agrees with the S-curve where the
// curve's assumption (independent MinHash values) holds: classic
// signatures of sets larger than the signature, within 4.5 standard
// errors. The oracle is 1 − (1 − J^r)^b.
func TestCandidatesMatchCurveForLongSets(t *testing.T) {
	p, err := bands.Choose(128, 0.5, bands.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []float64{0.3, 0.5} {
		c, err := Candidates(minhash.SchemeClassic, 128, p, 400, target, 1500, 12)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Measured - c.Curve; d < -4.5*c.SE() || d > 4.5*c.SE() {
			t.Errorf("classic, 400 elements, J %.3f: measured %.4f, curve %.4f (%.4f standard errors)", c.J, c.Measured, c.Curve, d/c.SE())
		}
	}
}
