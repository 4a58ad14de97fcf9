package db

import (
	"math/big"
	"testing"
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
