package bands

import (
	"fmt"
	"math"
)

// Policy says how Choose trades candidates against recall. The zero value
// is RecallFirst, the default.
type Policy uint8

const (
	// RecallFirst minimises the false-positive area subject to
	// P(threshold) ≥ Recall.
	RecallFirst Policy = iota
	// Weighted minimises WeightFP·FalsePositiveArea + WeightFN·FalseNegativeArea
	// over every banding that fits, the classic policy.
	Weighted
)

// String returns "recall" or "weighted".
func (p Policy) String() string {
	switch p {
	case RecallFirst:
		return "recall"
	case Weighted:
		return "weighted"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// DefaultRecall is the default recall target at the threshold.
const DefaultRecall = 0.99

// Options says how Choose picks a banding. The zero value gives the
// defaults: RecallFirst with a target of 0.99.
type Options struct {
	// Policy is RecallFirst or Weighted. Default: RecallFirst.
	Policy Policy
	// Recall is RecallFirst's target P(threshold), in (0, 1). Default
	// (0): DefaultRecall.
	Recall float64
	// WeightFP and WeightFN are Weighted's weights, each ≥ 0 and not both
	// 0. Default (both 0): 0.5 and 0.5.
	WeightFP, WeightFN float64
}

// EnsureDefaults fills in the fields left at zero and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Recall == 0 {
		o.Recall = DefaultRecall
	}
	if o.WeightFP == 0 && o.WeightFN == 0 {
		o.WeightFP, o.WeightFN = 0.5, 0.5
	}
	return o
}

// Validate reports the first option that is out of range. Call it after
// EnsureDefaults.
func (o *Options) Validate() error {
	switch {
	case o.Policy > Weighted:
		return fmt.Errorf("%w: unknown policy %d", ErrInvalidParams, o.Policy)
	case !(o.Recall > 0 && o.Recall < 1):
		return fmt.Errorf("%w: recall target %v is outside (0, 1)", ErrInvalidParams, o.Recall)
	case !(o.WeightFP >= 0 && o.WeightFN >= 0) || math.IsInf(o.WeightFP+o.WeightFN, 0):
		return fmt.Errorf("%w: weights %v and %v must be finite and ≥ 0", ErrInvalidParams, o.WeightFP, o.WeightFN)
	}
	return nil
}

// MaxChoiceThreshold is the highest threshold a banding is chosen for:
// a threshold of 1 asks for identical sets, and is banded for this one
// (Open's default banding and tune's, which says so).
const MaxChoiceThreshold = 0.999

// Choose returns the banding of a k-value signature for threshold t under
// opts. With RecallFirst, it is the banding of least false-positive area
// among those with P(t) ≥ opts.Recall (ties: more rows, then more bands), or
// an error wrapping ErrRecallUnreachable when none has. With Weighted, it is
// the banding of least weighted area.
func Choose(k int, t float64, opts Options) (Params, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return Params{}, err
	}
	if k < 1 {
		return Params{}, fmt.Errorf("%w: signature size %d", ErrInvalidParams, k)
	}
	if !(t > 0 && t < 1) {
		return Params{}, fmt.Errorf("%w: threshold %v is outside (0, 1)", ErrInvalidParams, t)
	}
	if opts.Policy == Weighted {
		return chooseWeighted(k, t, opts.WeightFP, opts.WeightFN), nil
	}
	best, bestArea := Params{}, math.Inf(1)
	for r := 1; r <= k; r++ {
		// For fixed r, P(t) and the false-positive area both grow with b,
		// so the fewest bands that reach the target is the best b for r.
		b, ok := minBands(t, r, opts.Recall, k/r)
		if !ok {
			continue
		}
		p := Params{B: b, R: r}
		if area := p.FalsePositiveArea(t); area <= bestArea {
			best, bestArea = p, area
		}
	}
	if best.B == 0 {
		p := Params{B: k, R: 1}
		return Params{}, fmt.Errorf("%w: %v at threshold %v with %d signature values (at most %.4f, with %v); raise the signature size or lower the target",
			ErrRecallUnreachable, opts.Recall, t, k, p.Probability(t), p)
	}
	return best, nil
}

// minBands returns the least b with 1 − (1 − t^r)^b ≥ recall, if it is
// at most maxB (the bands of r rows that the signature holds).
//
// NB: bounded by maxB: the search stepped one band at a time from its
// estimate, up to 2^31, whatever the signature held; a recall of 1−2^-53
// (which Validate takes) made it step about 10^8 times for each r near
// 60 to 80, and Open took 28 s (a maintainer's review, C3-2).
func minBands(t float64, r int, recall float64, maxB int) (int, bool) {
	q := math.Log1p(-math.Pow(t, float64(r))) // log(1 − t^r) < 0
	if q == 0 || maxB < 1 {
		return 0, false // t^r underflows: no b reaches it
	}
	b := math.Ceil(math.Log1p(-recall) / q)
	if !(b <= float64(maxB)+1) { // NB: one more, for rounding below
		return 0, false
	}
	n := max(1, int(b))
	// NB: guard the ceiling against rounding either way.
	for n > 1 && (Params{B: n - 1, R: r}).Probability(t) >= recall {
		n--
	}
	for n <= maxB && (Params{B: n, R: r}).Probability(t) < recall {
		n++
	}
	return n, n <= maxB
}

// chooseWeighted returns the banding of least wfp·FalsePositiveArea(t) +
// wfn·FalseNegativeArea(t), the first in (r, b) order among equals.
//
// NB: exhaustive over about k·ln k bandings, each two integrals of 2,049
// points, took 14.1 s at k = 8192 and 1.3 s at 1024 (53 s and 7.4 s in a
// review's busier run, CR-4); this search 2.6 s and 0.27 s. Now,
// for each r, the curve's logMiss at the integrals' points is computed
// once (the area of each b is then an Expm1 a point, through the same
// probability and simpson that Probability and the areas use, so the
// same costs), and b
// is searched from about t^−r, where the curve crosses the threshold, up
// while the false positives alone (which grow with b) cost less than the
// best, and down while the false negatives alone (which shrink with b)
// do: no banding left unvisited can cost less.
func chooseWeighted(k int, t, wfp, wfn float64) Params {
	best, bestCost := Params{B: 1, R: 1}, math.Inf(1)
	var fpL, fnL [simpsonIntervals + 1]float64 // logMiss at each point of [0, t] and [t, 1]
	fp := func(b int) float64 {
		return simpson(0, t, func(i int, s float64) float64 { return probability(s, b, fpL[i]) })
	}
	fn := func(b int) float64 {
		return simpson(t, 1, func(i int, s float64) float64 { return 1 - probability(s, b, fnL[i]) })
	}
	for r := 1; r <= k; r++ {
		for i := range fpL {
			fpL[i] = logMiss(simpsonPoint(0, t, i), r)
			fnL[i] = logMiss(simpsonPoint(t, 1, i), r)
		}
		maxB := k / r
		b0 := min(max(int(math.Round(math.Pow(t, -float64(r)))), 1), maxB)
		if math.IsInf(math.Pow(t, -float64(r)), 1) {
			b0 = maxB
		}
		consider := func(b int, fp, fn float64) {
			cost := wfp*fp + wfn*fn
			if cost < bestCost || cost == bestCost && (r < best.R || r == best.R && b < best.B) {
				best, bestCost = Params{B: b, R: r}, cost
			}
		}
		for b := b0 - 1; b >= 1; b-- {
			missed := fn(b)
			if wfn*missed > bestCost {
				break // fewer bands miss more: every smaller b costs more
			}
			consider(b, fp(b), missed)
		}
		for b := b0; b <= maxB; b++ {
			admitted := fp(b)
			if wfp*admitted >= bestCost {
				break // more bands admit more: no larger b costs less
			}
			consider(b, admitted, fn(b))
		}
	}
	return best
}
