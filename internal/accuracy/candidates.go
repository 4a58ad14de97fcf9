package accuracy

import (
	"fmt"
	"io"
	"math"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

// CandidateSizes and CandidateTargets are the grid of the candidate
// probability table: the real P(candidate | J, set size) of each scheme
// against the S-curve the banding was chosen from (issue 12).
var (
	CandidateSizes   = []int{5, 10, 20, 50, 100, 500, 5000}
	CandidateTargets = []float64{0.3, 0.5, 0.8, 0.95}
)

// CandidateCell is one measured cell: the fraction of pairs at Jaccard J
// that share at least one band under banding P, against the curve's
// P.Probability(J).
type CandidateCell struct {
	Scheme   minhash.Scheme
	K        int
	P        bands.Params
	Size     int
	Target   float64
	J        float64 // the exact Jaccard of the constructed pairs
	Trials   int
	Measured float64 // fraction of trials whose pair shared a band
	Curve    float64 // P.Probability(J): what the banding promises
}

// SE is the standard error of Measured, from the curve's probability (the
// hypothesis under test) or the measured one, whichever is larger.
func (c CandidateCell) SE() float64 {
	p := max(min(c.Curve, 1-c.Curve), min(c.Measured, 1-c.Measured))
	return math.Sqrt(p * (1 - p) / float64(c.Trials))
}

// Candidates measures one cell: for each trial two fresh random sets of
// size elements with Jaccard nearest target, sketched with a Sketcher
// seeded for that trial and cut into p's bands.
func Candidates(scheme minhash.Scheme, k int, p bands.Params, size int, target float64, trials int, base uint64) (CandidateCell, error) {
	m, j := Pair(size, target)
	c := CandidateCell{Scheme: scheme, K: k, P: p, Size: size, Target: target, J: j, Trials: trials, Curve: p.Probability(j)}
	a := make([]uint64, size)
	b := make([]uint64, size)
	var sa, sb []uint32
	var ka, kb []uint64
	hits := 0
	for t := range trials {
		sk, err := drawTrial(scheme, k, m, base, t, a, b)
		if err != nil {
			return c, err
		}
		sa, sb = sk.Sketch(sa[:0], a), sk.Sketch(sb[:0], b)
		if ka, err = bands.AppendKeys(ka[:0], sa, p); err != nil {
			return c, err
		}
		if kb, err = bands.AppendKeys(kb[:0], sb, p); err != nil {
			return c, err
		}
		for i := range ka {
			if ka[i] == kb[i] {
				hits++
				break
			}
		}
	}
	c.Measured = float64(hits) / float64(trials)
	return c, nil
}

// CandidateTable measures every (threshold, scheme, size, target) cell,
// in parallel, with the banding bands.Choose picks for each threshold.
func CandidateTable(k int, thresholds []float64, trials int, base uint64) ([]CandidateCell, error) {
	type job struct {
		i      int
		scheme minhash.Scheme
		p      bands.Params
		size   int
		target float64
	}
	var jobs []job
	for _, th := range thresholds {
		p, err := bands.Choose(k, th, bands.Options{})
		if err != nil {
			return nil, err
		}
		for _, sc := range Schemes {
			for _, n := range CandidateSizes {
				for _, t := range CandidateTargets {
					jobs = append(jobs, job{len(jobs), sc, p, n, t})
				}
			}
		}
	}
	cells := make([]CandidateCell, len(jobs))
	err := parallel(len(jobs), func(i int) (err error) {
		j := jobs[i]
		cells[i], err = Candidates(j.scheme, k, j.p, j.size, j.target, trials, base+uint64(j.i)<<40)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cells, nil
}

// PrintCandidates writes the candidate table as Markdown; a cell whose
// measured probability is more than 4.5 standard errors below the curve
// is marked "below".
func PrintCandidates(w io.Writer, cells []CandidateCell) {
	fmt.Fprintln(w, "| banding | scheme | size | exact J | trials | measured P(candidate) | curve P(J) | measured − curve | |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---|")
	for _, c := range cells {
		mark := ""
		if c.Measured < c.Curve-4.5*c.SE() {
			mark = "below"
		}
		fmt.Fprintf(w, "| %v | %v | %d | %.4f | %d | %.4f | %.4f | %+.4f | %s |\n",
			c.P, c.Scheme, c.Size, c.J, c.Trials, c.Measured, c.Curve, c.Measured-c.Curve, mark)
	}
}

// ShortSetSizes are the set sizes ShortSetRecall measures: documents of a
// few words to a sentence or two, where OPH's densification shows.
var ShortSetSizes = []int{8, 10, 15, 20, 30, 50, 100}

// ShortSetEstimate is the measured recall at a threshold for short sets.
type ShortSetEstimate struct {
	// Pairs is the number of random set pairs sketched, over the sizes
	// whose pairs come within 0.05 of the threshold.
	Pairs int
	// Misses is how many of them shared no band; Expected and Variance
	// are the count's mean and variance if each pair missed with the
	// curve's probability at its exact Jaccard.
	Misses, Expected, Variance float64
	// MissRatio is the pairs that shared no band over the number the
	// S-curve expects at their exact Jaccard: below 1 when the scheme does
	// better than independent values, above 1 when worse. NaN when the
	// curve expects under one miss (the measurement cannot tell).
	MissRatio float64
	// AtThreshold is the curve's P(t) with its miss rate scaled by
	// MissRatio: the expected recall at t for short documents. The curve's
	// own P(t) when MissRatio is NaN.
	AtThreshold float64
}

// ShortSetRecall measures how often short set pairs near Jaccard t become
// candidates under scheme, k and p, against the S-curve, with trials pairs
// for each of ShortSetSizes (pairs drawn from base, so the result is a
// fixed function of its arguments).
func ShortSetRecall(scheme minhash.Scheme, k int, p bands.Params, t float64, trials int, base uint64) (ShortSetEstimate, error) {
	var e ShortSetEstimate
	for i, n := range ShortSetSizes {
		if _, j := Pair(n, t); math.Abs(j-t) > 0.05 {
			continue
		}
		c, err := Candidates(scheme, k, p, n, t, trials, base+uint64(i)<<40)
		if err != nil {
			return e, err
		}
		e.Pairs += trials
		e.Misses += math.Round((1 - c.Measured) * float64(trials))
		e.Expected += (1 - c.Curve) * float64(trials)
		e.Variance += c.Curve * (1 - c.Curve) * float64(trials)
	}
	curve := p.Probability(t)
	e.MissRatio, e.AtThreshold = math.NaN(), curve
	if e.Expected >= 1 {
		e.MissRatio = e.Misses / e.Expected
		e.AtThreshold = max(0, 1-e.MissRatio*(1-curve))
	}
	return e, nil
}
