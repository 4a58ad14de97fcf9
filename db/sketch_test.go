package db

import (
	"math"
	"math/big"
	"testing"

	"github.com/lshdb/lshdb/bands"
)

// Ensure that sketchFloor is the least m with P(X < m) > 10^-12 for X ~
// Binomial(n, t), against the same tail summed in exact rational
// arithmetic, and that a floor never exceeds what a pair at t expects.
func TestSketchFloor(t *testing.T) {
	limit := big.NewRat(1, 1_000_000_000_000)
	for _, n := range []int{1, 16, 64, 128} {
		for _, th := range []float64{0.1, 0.3, 0.5, 0.8, 0.9, 0.95} {
			p := new(big.Rat).SetFloat64(th)
			q := new(big.Rat).Sub(big.NewRat(1, 1), p)
			// want: the first m at which the tail P(X ≤ m) exceeds 10^-12.
			want, tail := n, new(big.Rat)
			for m := 0; m <= n; m++ {
				term := new(big.Rat).SetInt(new(big.Int).Binomial(int64(n), int64(m)))
				for range m {
					term.Mul(term, p)
				}
				for range n - m {
					term.Mul(term, q)
				}
				tail.Add(tail, term)
				if tail.Cmp(limit) > 0 {
					want = m
					break
				}
			}
			if got := sketchFloor(n, th); got != want {
				t.Errorf("sketchFloor(%d, %v) = %d, want %d", n, th, got, want)
			}
			if got := sketchFloor(n, th); float64(got) > th*float64(n) {
				t.Errorf("sketchFloor(%d, %v) = %d is above the mean %v", n, th, got, th*float64(n))
			}
		}
	}
	if got := sketchFloor(128, 1); got != 128 {
		t.Errorf("sketchFloor(128, 1) = %d, want 128", got)
	}
	if got := sketchFloor(0, 0.8); got != 0 {
		t.Errorf("sketchFloor(0, 0.8) = %d, want 0", got)
	}
}

// Ensure that an estimate-only index's figures at its threshold are the
// S-curve's P(candidate) times the chance that a Binomial(num_perm, t)
// count of equal values reaches t, and that an index that verifies has
// none. The oracle: the tails computed with Python's exact integers,
// sum(comb(128, k) * t**k * (1-t)**(128-k) for k in range(ceil(128 t), 129))
// with t as a Fraction: 0.5000550066725326 at 0.8, 0.5351930460850076 at
// 0.5 (at 0.5, 64/128 reaches t, so the tail counts k = 64).
func TestEstimateFigures(t *testing.T) {
	for _, c := range []struct{ t, tail float64 }{{0.8, 0.5000550066725326}, {0.5, 0.5351930460850076}} {
		bp := bands.Params{B: 16, R: 8}
		p := Params{Threshold: c.t, NumPerm: 128, Bands: bp, Storage: StorageNone}
		f, ok := p.EstimateFigures()
		if want := bp.Probability(c.t) * c.tail; !ok || math.Abs(f.RecallAtThreshold-want) > 1e-12 {
			t.Errorf("at %v: %+v %v, want a recall at the threshold of %v", c.t, f, ok, want)
		}
		if want := math.Sqrt(c.t * (1 - c.t) / 128); math.Abs(f.SD-want) > 1e-15 {
			t.Errorf("at %v: SD %v, want %v", c.t, f.SD, want)
		}
		for _, s := range []string{StorageText, StorageSets} {
			p.Storage = s
			if f, ok := p.EstimateFigures(); ok {
				t.Errorf("a %s index at %v has estimate figures: %+v", s, c.t, f)
			}
		}
	}
}
