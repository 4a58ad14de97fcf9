package bands_test

import (
	"fmt"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

// The pipeline from two texts to their exact Jaccard, estimate and shared
// bands. The exact Jaccard 34/45 was counted by hand (39 and 40 distinct
// 5-shingles, 34 shared).
func Example() {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	setA, sigA := h.Document(nil, nil, "The quick brown fox jumps over the lazy dog")
	setB, sigB := h.Document(nil, nil, "The quick brown fox jumped over the lazy dog")
	p, _ := bands.Choose(128, 0.8, bands.Options{})
	keysA, _ := bands.AppendKeys(nil, sigA, p)
	keysB, _ := bands.AppendKeys(nil, sigB, p)
	shared := 0
	for i := range keysA {
		if keysA[i] == keysB[i] {
			shared++
		}
	}
	fmt.Printf("banding %v, P(0.8) = %.4f\n", p, p.Probability(0.8))
	fmt.Printf("exact Jaccard %.4f\n", minhash.Jaccard(setA, setB))
	fmt.Printf("estimate within 0.15: %v\n", abs(minhash.Estimate(sigA, sigB)-minhash.Jaccard(setA, setB)) < 0.15)
	fmt.Printf("candidates: %v\n", shared > 0)
	// Output:
	// banding b=16 r=6, P(0.8) = 0.9923
	// exact Jaccard 0.7556
	// estimate within 0.15: true
	// candidates: true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
