package bands

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned (wrapped) by this package.
var (
	// ErrInvalidParams: a banding, threshold or target out of range.
	ErrInvalidParams = errors.New("bands: invalid parameters")
	// ErrRecallUnreachable: no banding within the signature size reaches the
	// recall target at the threshold.
	ErrRecallUnreachable = errors.New("bands: recall target unreachable")
)

// Params is a banding: B bands of R rows each.
type Params struct {
	B int `msgpack:"b"`
	R int `msgpack:"r"`
}

// String returns "b=20 r=6".
func (p Params) String() string { return fmt.Sprintf("b=%d r=%d", p.B, p.R) }

// Validate checks that the banding fits a signature of k values.
func (p Params) Validate(k int) error {
	if p.B < 1 || p.R < 1 {
		return fmt.Errorf("%w: bands %d and rows %d must be at least 1", ErrInvalidParams, p.B, p.R)
	}
	// NB: compared by division, since B·R may overflow an int (B 2, R
	// 2⁶²: a negative product that passed, and every key then panicked).
	if p.B > k || p.R > k/p.B {
		return fmt.Errorf("%w: %d bands × %d rows exceeds the signature size %d", ErrInvalidParams, p.B, p.R, k)
	}
	return nil
}

// Probability returns P(s) = 1 − (1 − s^r)^b, the probability that two
// documents of Jaccard similarity s share at least one band.
func (p Params) Probability(s float64) float64 {
	if s <= 0 || s >= 1 {
		return probability(s, p.B, 0)
	}
	return probability(s, p.B, logMiss(s, p.R))
}

// logMiss is log(1 − s^r): the log of the chance that a pair of
// similarity s (in (0, 1)) differs in a band of r rows.
func logMiss(s float64, r int) float64 { return math.Log1p(-math.Pow(s, float64(r))) }

// probability is P(s) of b bands whose rows give logMiss(s, r) = l.
//
// NB: −expm1(b·log1p(−s^r)) keeps precision where P is tiny (s^r near 0)
// and where it is within 1e-12 of 1.
func probability(s float64, b int, l float64) float64 {
	switch {
	case s <= 0:
		return 0
	case s >= 1:
		return 1
	}
	return -math.Expm1(float64(b) * l)
}

// Threshold returns (1/b)^(1/r), the usual rough guide to where a banding
// switches from "rarely a candidate" to "nearly always": there P(s) =
// 1 − (1 − 1/b)^b, about 1 − 1/e ≈ 0.63. The S-curve is steepest a little
// below it, at ((r−1)/(rb−1))^(1/r) (0.33 against 0.37 for b=19 r=3).
func (p Params) Threshold() float64 { return math.Pow(1/float64(p.B), 1/float64(p.R)) }

// FalsePositiveArea returns ∫₀ᵗ P(s) ds: the weight of candidates below the
// threshold.
func (p Params) FalsePositiveArea(t float64) float64 {
	return integrate(p.Probability, 0, t)
}

// FalseNegativeArea returns ∫ₜ¹ (1 − P(s)) ds: the weight of pairs above the
// threshold that are missed.
func (p Params) FalseNegativeArea(t float64) float64 {
	return integrate(func(s float64) float64 { return 1 - p.Probability(s) }, t, 1)
}

// Point is one row of a P(s) table.
type Point struct {
	S float64 `json:"s"`
	P float64 `json:"p"`
}

// Table returns P(s) at each s.
func (p Params) Table(ss []float64) []Point {
	out := make([]Point, len(ss))
	for i, s := range ss {
		out[i] = Point{s, p.Probability(s)}
	}
	return out
}

// DefaultTableS is the similarity grid that commands print.
var DefaultTableS = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}

// simpsonIntervals is the number of intervals of the composite Simpson rule
// below: enough for an absolute error under 1e-9 on every S-curve with
// b, r ≤ 8192 (the test checks it against exact rational arithmetic).
const simpsonIntervals = 2048

// integrate is the composite Simpson rule over [a, b].
func integrate(f func(float64) float64, a, b float64) float64 {
	return simpson(a, b, func(_ int, s float64) float64 { return f(s) })
}

// simpson is integrate of f given each point's index i (0 to
// simpsonIntervals) beside the point itself, simpsonPoint(a, b, i): for a
// caller that computed something of each point beforehand.
func simpson(a, b float64, f func(i int, s float64) float64) float64 {
	if b <= a {
		return 0
	}
	h := (b - a) / simpsonIntervals
	sum := f(0, a) + f(simpsonIntervals, b)
	for i := 1; i < simpsonIntervals; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(i, a+float64(i)*h)
	}
	return sum * h / 3
}

// simpsonPoint is the point of index i at which simpson evaluates its
// function over [a, b].
func simpsonPoint(a, b float64, i int) float64 {
	switch i {
	case 0:
		return a
	case simpsonIntervals:
		return b
	}
	return a + float64(i)*((b-a)/simpsonIntervals)
}
