package bands_test

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"testing"

	"github.com/lshdb/lshdb/bands"
)

// exactRat returns t as an exact rational.
func exactRat(t float64) *big.Rat { return new(big.Rat).SetFloat64(t) }

// exactAreas computes ∫₀ᵗ P and ∫ₜ¹ (1 − P) exactly in rational arithmetic
// by expanding (1 − s^r)^b binomially: ∫ (1 − s^r)^b ds = Σⱼ C(b,j)(−1)^j
// s^(rj+1)/(rj+1). An oracle independent of the numerical integration.
func exactAreas(b, r int, t float64) (fp, fn float64) {
	tr := exactRat(t)
	low := new(big.Rat)  // ∫₀ᵗ (1 − s^r)^b
	high := new(big.Rat) // ∫ₜ¹ (1 − s^r)^b
	for j := 0; j <= b; j++ {
		c := new(big.Rat).SetInt(new(big.Int).Binomial(int64(b), int64(j)))
		if j%2 == 1 {
			c.Neg(c)
		}
		e := int64(r*j + 1)
		tp := new(big.Rat).SetFrac(new(big.Int).Exp(tr.Num(), big.NewInt(e), nil), new(big.Int).Exp(tr.Denom(), big.NewInt(e), nil))
		den := new(big.Rat).SetInt64(e)
		low.Add(low, new(big.Rat).Quo(new(big.Rat).Mul(c, tp), den))
		one := new(big.Rat).Sub(big.NewRat(1, 1), tp)
		high.Add(high, new(big.Rat).Quo(new(big.Rat).Mul(c, one), den))
	}
	fpR := new(big.Rat).Sub(tr, low)
	fp, _ = fpR.Float64()
	fn, _ = high.Float64()
	return fp, fn
}

// exactProbability is 1 − (1 − t^r)^b in rational arithmetic.
func exactProbability(b, r int, t float64) float64 {
	x := new(big.Rat).Set(exactRat(t))
	tr := new(big.Rat).SetInt64(1)
	for range r {
		tr.Mul(tr, x)
	}
	q := new(big.Rat).Sub(big.NewRat(1, 1), tr)
	qb := new(big.Rat).SetInt64(1)
	for range b {
		qb.Mul(qb, q)
	}
	p, _ := new(big.Rat).Sub(big.NewRat(1, 1), qb).Float64()
	return p
}

// Ensure that P(s) and both areas match exact rational arithmetic.
func TestCurveMatchesExactArithmetic(t *testing.T) {
	for _, p := range []bands.Params{{1, 1}, {20, 5}, {21, 6}, {16, 8}, {64, 2}, {32, 4}, {9, 14}, {128, 1}, {4, 32}} {
		for _, th := range []float64{0.3, 0.5, 0.8, 0.9} {
			fp, fn := exactAreas(p.B, p.R, th)
			if got := p.FalsePositiveArea(th); math.Abs(got-fp) > 1e-9 {
				t.Errorf("%v t=%v: FalsePositiveArea = %.12f, exact %.12f", p, th, got, fp)
			}
			if got := p.FalseNegativeArea(th); math.Abs(got-fn) > 1e-9 {
				t.Errorf("%v t=%v: FalseNegativeArea = %.12f, exact %.12f", p, th, got, fn)
			}
			if got, want := p.Probability(th), exactProbability(p.B, p.R, th); math.Abs(got-want) > 1e-12 {
				t.Errorf("%v: P(%v) = %.15f, exact %.15f", p, th, got, want)
			}
		}
	}
	p := bands.Params{B: 20, R: 5}
	if p.Probability(0) != 0 || p.Probability(1) != 1 {
		t.Error("P(0) must be 0 and P(1) must be 1")
	}
	// Hand-computed: (1/20)^(1/5) = 0.5492...
	if got := p.Threshold(); math.Abs(got-math.Pow(0.05, 0.2)) > 1e-15 || math.Abs(got-0.549280) > 1e-6 {
		t.Errorf("Threshold = %v", got)
	}
}

// Ensure that the recall-first choice satisfies the recall constraint
// (checked in exact arithmetic) and is the least false-positive area among
// all fitting bandings that do (checked by brute force over every (b, r)).
func TestChooseRecallFirst(t *testing.T) {
	for _, k := range []int{64, 128, 256} {
		for _, th := range []float64{0.5, 0.8, 0.9} {
			p, err := bands.Choose(k, th, bands.Options{})
			if err != nil {
				t.Fatalf("k=%d t=%v: %v", k, th, err)
			}
			if p.B*p.R > k {
				t.Fatalf("k=%d t=%v: %v does not fit", k, th, p)
			}
			if pt := exactProbability(p.B, p.R, th); pt < 0.99 {
				t.Fatalf("k=%d t=%v: %v has P(t) = %v < 0.99", k, th, p, pt)
			}
			area := p.FalsePositiveArea(th)
			for r := 1; r <= k; r++ {
				for b := 1; b*r <= k; b++ {
					q := bands.Params{B: b, R: r}
					if q.Probability(th) >= 0.99 && q.FalsePositiveArea(th) < area-1e-12 {
						t.Fatalf("k=%d t=%v: chose %v (area %v) but %v has area %v", k, th, p, area, q, q.FalsePositiveArea(th))
					}
				}
			}
			t.Logf("k=%d t=%.1f: %v  P(t)=%.5f  threshold=%.3f  FP area=%.4f", k, th, p, p.Probability(th), p.Threshold(), area)
		}
	}
}

// Ensure that the weighted policy minimises the weighted cost over every
// fitting banding, and that it trades recall for fewer candidates.
func TestChooseWeighted(t *testing.T) {
	const k, th = 128, 0.8
	o := bands.Options{Policy: bands.Weighted}
	p, err := bands.Choose(k, th, o)
	if err != nil {
		t.Fatal(err)
	}
	cost := func(q bands.Params) float64 { return 0.5*q.FalsePositiveArea(th) + 0.5*q.FalseNegativeArea(th) }
	for r := 1; r <= k; r++ {
		for b := 1; b*r <= k; b++ {
			if q := (bands.Params{B: b, R: r}); cost(q) < cost(p)-1e-12 {
				t.Fatalf("weighted chose %v (cost %v) but %v costs %v", p, cost(p), q, cost(q))
			}
		}
	}
	rf, _ := bands.Choose(k, th, bands.Options{})
	if !(p.FalsePositiveArea(th) < rf.FalsePositiveArea(th)) {
		t.Errorf("weighted %v has no fewer candidates than recall-first %v", p, rf)
	}
}

// Ensure that impossible requests are refused with the right sentinel.
func TestChooseErrors(t *testing.T) {
	for _, c := range []struct {
		k    int
		t    float64
		o    bands.Options
		want error
	}{
		{128, 0, bands.Options{}, bands.ErrInvalidParams},
		{128, 1, bands.Options{}, bands.ErrInvalidParams},
		{128, math.NaN(), bands.Options{}, bands.ErrInvalidParams},
		{0, 0.8, bands.Options{}, bands.ErrInvalidParams},
		{128, 0.8, bands.Options{Recall: 1}, bands.ErrInvalidParams},
		{128, 0.8, bands.Options{Policy: 9}, bands.ErrInvalidParams},
		{128, 0.8, bands.Options{Policy: bands.Weighted, WeightFP: -1}, bands.ErrInvalidParams},
		{16, 0.05, bands.Options{}, bands.ErrRecallUnreachable}, // 1 − 0.95^16 ≈ 0.56 at best
	} {
		if _, err := bands.Choose(c.k, c.t, c.o); !errors.Is(err, c.want) {
			t.Errorf("Choose(%d, %v, %+v) = %v, want %v", c.k, c.t, c.o, err, c.want)
		}
	}
	for _, c := range []struct {
		p  bands.Params
		ok bool
	}{
		{bands.Params{B: 20, R: 7}, false}, // 140
		{bands.Params{B: 16, R: 8}, true},  // 128: exactly the signature
		{bands.Params{B: 128, R: 1}, true},
		{bands.Params{B: 129, R: 1}, false},
		{bands.Params{B: 1, R: 129}, false},
		{bands.Params{B: 0, R: 8}, false},
		{bands.Params{B: 8, R: -1}, false},
		// B·R overflows an int: the product wrapped to a negative
		// number and passed, and every key then panicked.
		{bands.Params{B: 2, R: math.MaxInt/2 + 1}, false},
		{bands.Params{B: math.MaxInt/2 + 1, R: 2}, false},
		{bands.Params{B: 1 << (strconv.IntSize / 2), R: 1 << (strconv.IntSize / 2)}, false}, // 0 once wrapped
	} {
		err := c.p.Validate(128)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, bands.ErrInvalidParams)) {
			t.Errorf("%v in 128: %v", c.p, err)
		}
		if err == nil {
			continue
		}
		if _, err := bands.AppendKeys(nil, make([]uint32, 128), c.p); !errors.Is(err, bands.ErrInvalidParams) {
			t.Errorf("AppendKeys with %v for 128 values: %v, want ErrInvalidParams", c.p, err)
		}
	}
}

// Ensure that Choose answers for any recall target Validate takes, up to
// the largest float below 1, with the banding that a search of every
// fitting banding finds (the oracle), or ErrRecallUnreachable when none
// reaches it: at 1−2^-53 the search of the bands stepped about 10^8 times
// for each of many row counts, and Open took 28 s (a maintainer's review,
// C3-2).
func TestChooseExtremeRecall(t *testing.T) {
	for _, k := range []int{16, 128} {
		for _, recall := range []float64{0.5, 0.99, 1 - 1e-9, 1 - 0x1p-40, math.Nextafter(1, 0)} {
			th := 0.8
			var want bands.Params
			wantArea := math.Inf(1)
			for r := 1; r <= k; r++ {
				for b := 1; b*r <= k; b++ {
					q := bands.Params{B: b, R: r}
					if q.Probability(th) >= recall && q.FalsePositiveArea(th) < wantArea {
						want, wantArea = q, q.FalsePositiveArea(th)
					}
				}
			}
			p, err := bands.Choose(k, th, bands.Options{Recall: recall})
			switch {
			case want.B == 0:
				if !errors.Is(err, bands.ErrRecallUnreachable) {
					t.Errorf("k=%d recall=%v: %v, %v; want ErrRecallUnreachable", k, recall, p, err)
				}
			case err != nil || p.B*p.R > k || p.Probability(th) < recall || math.Abs(p.FalsePositiveArea(th)-wantArea) > 1e-12:
				t.Errorf("k=%d recall=%v: %v, %v; want %v (area %v)", k, recall, p, err, want, wantArea)
			}
		}
	}
}

// Ensure that the weighted policy's search picks what the exhaustive
// search over every fitting banding picks (the first of least cost in (r,
// b) order, its costs from the exported areas), bit for bit, at several
// signature sizes, thresholds and weights, those that weigh one side
// alone included.
func TestChooseWeightedExhaustive(t *testing.T) {
	exhaustive := func(k int, th, wfp, wfn float64) bands.Params {
		best, bestCost := bands.Params{B: 1, R: 1}, math.Inf(1)
		for r := 1; r <= k; r++ {
			for b := 1; b*r <= k; b++ {
				p := bands.Params{B: b, R: r}
				if cost := wfp*p.FalsePositiveArea(th) + wfn*p.FalseNegativeArea(th); cost < bestCost {
					best, bestCost = p, cost
				}
			}
		}
		return best
	}
	ks := []int{1, 2, 3, 7, 16, 33, 64, 128}
	if testing.Short() {
		ks = []int{1, 3, 16, 64}
	}
	for _, k := range ks {
		for _, th := range []float64{0.3, 0.5, 0.8, 0.95} {
			for _, w := range [][2]float64{{0.5, 0.5}, {0.9, 0.1}, {0.1, 0.9}, {1, 0}, {0, 1}} {
				got, err := bands.Choose(k, th, bands.Options{Policy: bands.Weighted, WeightFP: w[0], WeightFN: w[1]})
				if err != nil {
					t.Fatal(err)
				}
				if want := exhaustive(k, th, w[0], w[1]); got != want {
					t.Errorf("k=%d t=%v weights %v: chose %v, the exhaustive search %v", k, th, w, got, want)
				}
			}
		}
	}
}
