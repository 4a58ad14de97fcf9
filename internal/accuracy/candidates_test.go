package accuracy

import (
	"math"
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

// Ensure that short sets (8 to 100 elements, ShortSetSizes) become
// candidates at least as often as the S-curve promises, with fss, the
// default scheme: pooled over the sizes whose pairs come within 0.05 of
// the threshold, the pairs that share no band may exceed the curve's
// expected count by at most 4.5 standard deviations. The oracle is the
// curve 1 − (1 − J^r)^b at each pair's exact Jaccard, for the banding
// bands.Choose picks at t = 0.5 and 0.8. The same bound rejects oph, the
// default before fss, whose densified bins are copies of each other (its
// short sets miss 1.2–1.6 times as often as the curve says): the test can
// fail.
func TestShortSetsMeetTheCurve(t *testing.T) {
	// NB: the trials are seeded, so the outcome is fixed; 20,000 a size
	// keep oph more than 6 standard deviations out (8 s on 2 cores).
	const trials = 20000
	for _, th := range []float64{0.5, 0.8} {
		p, err := bands.Choose(128, th, bands.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range []minhash.Scheme{minhash.SchemeFSS, minhash.SchemeOPH} {
			e, err := ShortSetRecall(sc, 128, p, th, trials, 0x5e7<<32)
			if err != nil {
				t.Fatal(err)
			}
			z := (e.Misses - e.Expected) / math.Sqrt(e.Variance)
			t.Logf("t=%v %v %v: %v of %d pairs share no band, the curve expects %.0f (z = %+.1f)", th, p, sc, e.Misses, e.Pairs, e.Expected, z)
			switch ok := z <= 4.5; {
			case sc == minhash.SchemeFSS && !ok:
				t.Errorf("t=%v %v fss: %v short pairs missed, the curve expects %.0f (%.1f standard deviations over)", th, p, e.Misses, e.Expected, z)
			case sc == minhash.SchemeOPH && ok:
				t.Errorf("t=%v %v oph: the bound no longer rejects the old scheme (z = %+.1f): the test has lost its power", th, p, z)
			}
		}
	}
}

// Ensure that ShortSetRecall tells the schemes apart as the pooled test
// above does: fss at or above the curve's P(t) on short sets, oph below.
func TestShortSetRecall(t *testing.T) {
	p, err := bands.Choose(128, 0.5, bands.Options{})
	if err != nil {
		t.Fatal(err)
	}
	curve := p.Probability(0.5)
	fss, err := ShortSetRecall(minhash.SchemeFSS, 128, p, 0.5, 5000, 1)
	if err != nil {
		t.Fatal(err)
	}
	oph, err := ShortSetRecall(minhash.SchemeOPH, 128, p, 0.5, 5000, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("curve %.4f; fss %.4f (miss ratio %.2f); oph %.4f (miss ratio %.2f)", curve, fss.AtThreshold, fss.MissRatio, oph.AtThreshold, oph.MissRatio)
	if !(fss.AtThreshold >= curve && oph.AtThreshold < curve) || fss.Pairs == 0 {
		t.Errorf("fss %+v, oph %+v around the curve's %v", fss, oph, curve)
	}
}

// Ensure that ShortSetRecall measures the datasketch scheme (classic
// MinHash with numpy's 32-bit seeds: a 64-bit trial seed was refused) and
// finds it on the curve, as independent permutations are: within five
// standard errors of P(t).
func TestShortSetRecallDatasketch(t *testing.T) {
	p, err := bands.Choose(128, 0.5, bands.Options{})
	if err != nil {
		t.Fatal(err)
	}
	curve := p.Probability(0.5)
	const trials = 400
	ds, err := ShortSetRecall(minhash.SchemeDatasketch, 128, p, 0.5, trials, 1)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(curve * (1 - curve) / float64(ds.Pairs))
	t.Logf("curve %.4f; datasketch %.4f over %d pairs (SE %.4f)", curve, ds.AtThreshold, ds.Pairs, se)
	if ds.Pairs == 0 || math.Abs(ds.AtThreshold-curve) > 5*se {
		t.Errorf("datasketch %+v against the curve's %v", ds, curve)
	}
}
