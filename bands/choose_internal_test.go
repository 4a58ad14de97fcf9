package bands

import (
	"math"
	"testing"
)

// Ensure that minBands gives the least b of at most maxB that reaches the
// recall, and reports none past maxB, as a search of every b from 1 to
// maxB finds (the oracle); it searched up to 2^31 whatever maxB was
// (C3-2), which no result of Choose could use.
func TestMinBandsWithinTheSignature(t *testing.T) {
	for _, recall := range []float64{0.5, 0.99, 1 - 1e-9, math.Nextafter(1, 0)} {
		for _, th := range []float64{0.3, 0.8, 0.95} {
			for r := 1; r <= 128; r++ {
				maxB := 128 / r
				want := 0
				for b := 1; b <= maxB; b++ {
					if (Params{B: b, R: r}).Probability(th) >= recall {
						want = b
						break
					}
				}
				got, ok := minBands(th, r, recall, maxB)
				if ok != (want > 0) || ok && got != want {
					t.Fatalf("minBands(%v, %d, %v, %d) = %d, %v; want %d", th, r, recall, maxB, got, ok, want)
				}
			}
		}
	}
}
