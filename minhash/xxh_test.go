package minhash

import (
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// Ensure that the inlined short-input path agrees with xxhash.Sum64 at every
// length on both sides of the 32-byte switch.
func TestSum64MatchesXXHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 80; n++ {
		for range 50 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if got, want := sum64(b), xxhash.Sum64(b); got != want {
				t.Fatalf("len %d: sum64 = %#x, xxhash.Sum64 = %#x", n, got, want)
			}
		}
	}
}
