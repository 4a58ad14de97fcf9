// Package accuracy measures the MinHash estimators against set pairs of
// known Jaccard similarity: the bias and variance table of the signatures
// issue. The test in this package runs a small version in CI; the command
// internal/cmd/accuracy prints the full table.
package accuracy

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/lshdb/lshdb/minhash"
)

// Sizes and Targets are the grid of the full table; Schemes are measured
// in both tables.
var (
	Schemes = []minhash.Scheme{minhash.SchemeFSS, minhash.SchemeOPH, minhash.SchemeClassic}
	Sizes   = []int{3, 10, 50, 500, 5000}
	Targets = []float64{0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95}
)

// Pair returns the shared count m for two sets of n elements each whose
// Jaccard m/(2n−m) is nearest to target, with 0 < m < n (so the cell is
// neither trivially disjoint nor identical), and that Jaccard.
func Pair(n int, target float64) (m int, j float64) {
	best := math.Inf(1)
	for c := 1; c < n; c++ {
		jc := float64(c) / float64(2*n-c)
		if d := math.Abs(jc - target); d < best {
			best, m, j = d, c, jc
		}
	}
	return m, j
}

// Cell is one measured cell of the table.
type Cell struct {
	Scheme   minhash.Scheme
	K        int     // signature size
	Size     int     // elements in each set
	Target   float64 // requested Jaccard
	J        float64 // the exact Jaccard of the constructed pairs
	Seeds    int     // independent trials
	Mean     float64 // mean estimate
	Var      float64 // sample variance of the estimate
	IdealVar float64 // J(1−J)/K
}

// VarRatio is Var / IdealVar.
func (c Cell) VarRatio() float64 { return c.Var / c.IdealVar }

// MeanSE is the standard error of Mean, from the larger of the observed
// and the ideal variance.
func (c Cell) MeanSE() float64 { return math.Sqrt(max(c.Var, c.IdealVar) / float64(c.Seeds)) }

// Run measures one cell: for each of seeds trials it draws two fresh random
// sets of size elements sharing m (independent per trial), sketches both
// with a Sketcher seeded for that trial, and records the estimate.
func Run(scheme minhash.Scheme, k, size int, target float64, seeds int, base uint64) (Cell, error) {
	m, j := Pair(size, target)
	c := Cell{Scheme: scheme, K: k, Size: size, Target: target, J: j, Seeds: seeds, IdealVar: j * (1 - j) / float64(k)}
	a := make([]uint64, size)
	b := make([]uint64, size)
	var sa, sb []uint32
	var sum, sumSq float64
	for t := range seeds {
		sk, err := drawTrial(scheme, k, m, base, t, a, b)
		if err != nil {
			return c, err
		}
		sa = sk.Sketch(sa[:0], a)
		sb = sk.Sketch(sb[:0], b)
		e := minhash.Estimate(sa, sb)
		sum += e
		sumSq += e * e
	}
	n := float64(seeds)
	c.Mean = sum / n
	c.Var = (sumSq - sum*sum/n) / (n - 1)
	return c, nil
}

// drawTrial fills a and b (of equal length) with trial t's fresh random
// pair of sets sharing their first m elements, and returns the Sketcher
// seeded for that trial: trials are independent in both the sets and the
// hash functions.
func drawTrial(scheme minhash.Scheme, k, m int, base uint64, t int, a, b []uint64) (*minhash.Sketcher, error) {
	trial := base ^ uint64(t)*0x9e3779b97f4a7c15
	rng := rand.New(rand.NewPCG(trial, uint64(len(a))))
	for i := range a {
		a[i] = rng.Uint64()
		b[i] = a[i]
		if i >= m {
			b[i] = rng.Uint64()
		}
	}
	seed := trial
	if scheme == minhash.SchemeDatasketch {
		seed >>= 32 // its seeds are numpy's: 32 bits
	}
	return minhash.NewSketcher(minhash.SketchOptions{Scheme: scheme, NumPerm: k, Seed: seed})
}

// Spec says how many trials a cell gets.
type Spec struct {
	K     int
	Seeds int // trials per cell
	// SmallSeeds is the number of trials for OPH cells with Size < K, whose
	// variance is above the ideal and which need more trials to pin the
	// mean to ±0.01.
	SmallSeeds int
	Base       uint64 // base seed
}

// Table measures every (scheme, size, target) cell, in parallel.
func Table(spec Spec) ([]Cell, error) {
	type job struct {
		i      int
		scheme minhash.Scheme
		size   int
		target float64
	}
	var jobs []job
	for _, sc := range Schemes {
		for _, n := range Sizes {
			for _, t := range Targets {
				jobs = append(jobs, job{len(jobs), sc, n, t})
			}
		}
	}
	cells := make([]Cell, len(jobs))
	err := parallel(len(jobs), func(i int) (err error) {
		j := jobs[i]
		seeds := spec.Seeds
		if j.scheme == minhash.SchemeOPH && j.size < spec.K {
			seeds = max(seeds, spec.SmallSeeds)
		}
		cells[i], err = Run(j.scheme, spec.K, j.size, j.target, seeds, spec.Base+uint64(j.i)<<40)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cells, nil
}

// parallel runs fn(0) … fn(n−1) on every core and returns their errors,
// joined.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// Bounds are the acceptance bounds of a table.
type Bounds struct {
	MeanTol  float64 // |Mean − J| ≤ max(MeanTol, MeanSigmas·MeanSE)
	MeanSigs float64
	VarRatio float64 // VarRatio ≤ VarRatio, for the cells that must be ideal
}

// BoundsFor returns the bounds (mean ±0.01, variance ≤ 1.25× ideal)
// widened for a run of seeds trials so that a correct estimator fails with
// negligible probability: the variance bound is at least 4.5 standard
// errors of a sample variance (√(2/(seeds−1))), and the mean bound at least
// 4.5 standard errors of the mean.
func BoundsFor(seeds int) Bounds {
	return Bounds{
		MeanTol:  0.01,
		MeanSigs: 4.5,
		VarRatio: 1 + max(0.25, 4.5*math.Sqrt(2/float64(seeds-1))),
	}
}

// MustBeIdeal reports whether a cell's variance must be within the bound:
// classic and fss at every size, OPH once sets have at least K elements.
func (c Cell) MustBeIdeal() bool { return c.Scheme != minhash.SchemeOPH || c.Size >= c.K }

// Check returns a description of every bound a cell breaks, or nil.
func (b Bounds) Check(c Cell) []string {
	var out []string
	if tol := max(b.MeanTol, b.MeanSigs*c.MeanSE()); math.Abs(c.Mean-c.J) > tol {
		out = append(out, fmt.Sprintf("mean %.4f is %.4f from J %.4f (bound %.4f)", c.Mean, c.Mean-c.J, c.J, tol))
	}
	if c.MustBeIdeal() && c.VarRatio() > b.VarRatio {
		out = append(out, fmt.Sprintf("variance %.3g is %.3f× the ideal %.3g (bound %.3f×)", c.Var, c.VarRatio(), c.IdealVar, b.VarRatio))
	}
	return out
}

// Print writes the table as Markdown.
func Print(w io.Writer, cells []Cell) {
	fmt.Fprintln(w, "| scheme | size | target J | exact J | seeds | mean | mean − J | var / ideal | checked |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, c := range cells {
		checked := "mean, var"
		if !c.MustBeIdeal() {
			checked = "mean (var reported)"
		}
		fmt.Fprintf(w, "| %v | %d | %.2f | %.4f | %d | %.4f | %+.4f | %.3f | %s |\n",
			c.Scheme, c.Size, c.Target, c.J, c.Seeds, c.Mean, c.Mean-c.J, c.VarRatio(), checked)
	}
}
