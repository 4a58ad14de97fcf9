package minhash

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceFSS computes the FSS signature from its definition, without
// stopping early: every element is thrown in every one of rounds
// 0..rounds−1, and each bin keeps the least (round, position) it receives.
// Values of later rounds exceed every value of earlier ones, so once every
// bin is filled more rounds change nothing; Sketch stops there.
func referenceFSS(s *Sketcher, elems []uint64, rounds int) []uint32 {
	k := uint64(s.opts.NumPerm)
	best := make([]uint64, k)
	for i := range best {
		best[i] = emptyBin
	}
	for round := range uint64(rounds) {
		for _, x := range elems {
			h := mum(x ^ s.mix)
			if round > 0 {
				h = mum(x ^ fmix64(s.probe^round))
			}
			bin, frac := bits.Mul64(h, k)
			best[bin] = min(best[bin], round<<32|frac>>32)
		}
	}
	out := make([]uint32, k)
	for i, v := range best {
		out[i] = uint32(v) ^ uint32(v>>32)*0x9e3779b9
	}
	return out
}

// Ensure that FSS's early stopping changes no value: its signatures equal
// the definition's, computed over many more rounds than any set needs.
func TestFSSMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []int{1, 8, 128} {
		s, err := NewSketcher(SketchOptions{Scheme: SchemeFSS, NumPerm: k, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 5, 20, 100, 700, 3000} {
			elems := make([]uint64, n)
			for i := range elems {
				elems[i] = rng.Uint64()
			}
			// A set of n elements fills k bins within k·(ln k + 20)/n
			// rounds but for a chance below e^−20.
			rounds := 2 + k*(bits.Len(uint(k))+20)/n
			got := s.Sketch(nil, elems)
			if want := referenceFSS(s, elems, rounds); !slices.Equal(got, want) {
				t.Fatalf("k=%d n=%d: Sketch differs from the definition at %d rounds", k, n, rounds)
			}
		}
	}
}

// Ensure that repeats change no fss value, however many: the round limit
// counts the bins round 0 filled, not the elements (counting elements, a
// set of 1 element repeated 10,000 times stopped after one round and
// borrowed most of its bins). The oracle is the same set without repeats.
func TestFSSIgnoresRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	s, err := NewSketcher(SketchOptions{Scheme: SchemeFSS, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ distinct, copies int }{{1, 10000}, {3, 400}, {20, 300}, {200, 50}} {
		set := make([]uint64, c.distinct)
		for i := range set {
			set[i] = rng.Uint64()
		}
		var repeated []uint64
		for range c.copies {
			repeated = append(repeated, set...)
		}
		want := s.Sketch(nil, set)
		if got := s.Sketch(nil, repeated); !slices.Equal(got, want) {
			t.Errorf("%d elements × %d copies: Estimate against the set = %v, want identical signatures",
				c.distinct, c.copies, Estimate(got, want))
		}
	}
	// The Hasher signs a text's elements with repeats; Document signs its
	// set. Both must agree on a repetitive text.
	h, err := NewHasher(Options{}, SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("ha ", 5000)
	_, sig := h.Document(nil, nil, text)
	if got := h.Signature(nil, text); !slices.Equal(got, sig) {
		t.Errorf("Signature and Document disagree on a repetitive text: Estimate %v", Estimate(got, sig))
	}
}
