package minhash

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Ensure that classic's signature is, value by value, the high 32 bits of
// the least a_i·x over the set (computed here one product at a time), with
// element 0 hashed as classicZero and every other element as itself: the
// signatures of sets without 0 are those classic always computed.
func TestClassicAgainstBruteForce(t *testing.T) {
	sk, err := NewSketcher(SketchOptions{Scheme: SchemeClassic, NumPerm: 130, Seed: 7}) // 130: min4's tail too
	if err != nil {
		t.Fatal(err)
	}
	brute := func(set []uint64) []uint32 {
		sig := make([]uint32, len(sk.a))
		for i, a := range sk.a {
			m := uint64(math.MaxUint64)
			for _, x := range set {
				if x == 0 {
					x = classicZero
				}
				m = min(m, a*x)
			}
			sig[i] = uint32(m >> 32)
		}
		return sig
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		set := make([]uint64, n)
		for j := range set {
			set[j] = r.Uint64()
		}
		if n > 2 && n%3 == 0 {
			set[r.IntN(n)] = 0
			set[r.IntN(n)] = 1 << 63
		}
		orig := slices.Clone(set)
		if got, want := sk.Sketch(nil, set), brute(set); !slices.Equal(got, want) {
			t.Fatalf("%d elements: signature %v, brute force %v", n, got[:4], want[:4])
		}
		if !slices.Equal(set, orig) {
			t.Fatalf("Sketch changed its input: %v, was %v", set, orig)
		}
	}
}
