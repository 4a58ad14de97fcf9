package minhash_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

var schemes = []minhash.Scheme{minhash.SchemeFSS, minhash.SchemeOPH, minhash.SchemeClassic}

func mustSketcher(t testing.TB, o minhash.SketchOptions) *minhash.Sketcher {
	t.Helper()
	s, err := minhash.NewSketcher(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomSet(rng *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = rng.Uint64()
	}
	return out
}

// Ensure that a signature depends only on the set: not on element order,
// not on repeats, and that equal sets agree everywhere.
func TestSketchIsAFunctionOfTheSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sc := range schemes {
		for _, k := range []int{1, 7, 64, 128, 130} {
			s := mustSketcher(t, minhash.SketchOptions{Scheme: sc, NumPerm: k, Seed: 99})
			for _, n := range []int{1, 2, 5, 100, 1000} {
				set := randomSet(rng, n)
				want := s.Sketch(nil, set)
				if len(want) != k {
					t.Fatalf("%v k=%d: signature has %d values", sc, k, len(want))
				}
				messy := append(slices.Clone(set), set[:n/2+1]...)
				rng.Shuffle(len(messy), func(i, j int) { messy[i], messy[j] = messy[j], messy[i] })
				if got := s.Sketch([]uint32{7}, messy); !slices.Equal(got[1:], want) || got[0] != 7 {
					t.Fatalf("%v k=%d n=%d: shuffled set with repeats gave another signature", sc, k, n)
				}
				if e := minhash.Estimate(want, want); e != 1 {
					t.Fatalf("Estimate(sig, sig) = %v", e)
				}
			}
		}
	}
}

// Ensure that the empty set has the all-EmptyValue signature, that OPH
// densification fills every bin of a one-element set from its one bin, and
// that disjoint sets share no value.
func TestSketchEdgeCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sc := range schemes {
		s := mustSketcher(t, minhash.SketchOptions{Scheme: sc})
		for _, v := range s.Sketch(nil, nil) {
			if v != minhash.EmptyValue {
				t.Fatalf("%v: empty set value %#x", sc, v)
			}
		}
		a, b := randomSet(rng, 300), randomSet(rng, 300)
		if m := minhash.Matches(s.Sketch(nil, a), s.Sketch(nil, b)); m != 0 {
			t.Errorf("%v: disjoint random sets agree at %d positions", sc, m)
		}
	}
	oph := mustSketcher(t, minhash.SketchOptions{Scheme: minhash.SchemeOPH})
	sig := oph.Sketch(nil, []uint64{12345})
	for _, v := range sig {
		if v != sig[0] {
			t.Fatalf("OPH one-element signature is not constant: %v", sig)
		}
	}
	if minhash.Estimate([]uint32{1, 2}, []uint32{1}) != 0 || minhash.Estimate(nil, nil) != 0 {
		t.Error("Estimate of mismatched or empty signatures is not 0")
	}
}

// Ensure that the seed selects the hash functions and the scheme matters.
func TestSketchSeeds(t *testing.T) {
	set := randomSet(rand.New(rand.NewPCG(15, 16)), 500)
	seen := map[string]bool{}
	for _, sc := range schemes {
		for seed := range uint64(5) {
			sig := mustSketcher(t, minhash.SketchOptions{Scheme: sc, Seed: seed}).Sketch(nil, set)
			key := fmt.Sprint(sc, sig)
			if seen[key] {
				t.Fatalf("%v seed %d repeats another signature", sc, seed)
			}
			seen[key] = true
		}
	}
}

// Ensure that out-of-range sketch options are refused with
// ErrInvalidOptions and the zero value means fss, 128, seed 0.
func TestSketchOptionsValidate(t *testing.T) {
	for _, o := range []minhash.SketchOptions{{NumPerm: -1}, {NumPerm: minhash.MaxNumPerm + 1}, {Scheme: 5}} {
		if _, err := minhash.NewSketcher(o); !errors.Is(err, minhash.ErrInvalidOptions) {
			t.Errorf("NewSketcher(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	if o := mustSketcher(t, minhash.SketchOptions{}).Options(); o.NumPerm != 128 || o.Scheme != minhash.SchemeFSS {
		t.Errorf("defaults = %+v", o)
	}
}

// Ensure that the Hasher's pipeline equals its parts run one by one.
func TestHasherEqualsParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, bag := range []bool{false, true} {
		for _, sc := range schemes {
			o := minhash.Options{Bag: bag}
			so := minhash.SketchOptions{Scheme: sc, Seed: 3}
			h, err := minhash.NewHasher(o, so)
			if err != nil {
				t.Fatal(err)
			}
			sh, sk := mustShingler(t, o), mustSketcher(t, so)
			for range 200 {
				text := randomText(rng, rng.IntN(200))
				set, sig := h.Document(nil, nil, text)
				if want := sh.AppendSet(nil, text); !slices.Equal(set, want) {
					t.Fatalf("Document set differs from AppendSet for %q", text)
				}
				if want := sk.Sketch(nil, set); !slices.Equal(sig, want) {
					t.Fatalf("Document signature differs from Sketch(set)")
				}
				if got := h.Signature(nil, text); !slices.Equal(got, sig) {
					t.Fatalf("Signature differs from Document's signature")
				}
			}
		}
	}
}

// Ensure that a set holding element 0 (HashElement's image of a caller's
// hash 0) gets an estimate near its Jaccard with a near-copy without 0, and
// not 1 with a set that shares only 0, in every scheme. Classic computed
// a·0 = 0 for every function, so such a set had the all-zero signature.
func TestSketchElementZero(t *testing.T) {
	for _, sc := range append(schemes, minhash.SchemeDatasketch) {
		sk := mustSketcher(t, minhash.SketchOptions{Scheme: sc, NumPerm: 256})
		elem := func(h uint64) uint64 {
			e, ok := sk.HashElement(h)
			if !ok {
				t.Fatalf("%v: HashElement(%d) out of range", sc, h)
			}
			return e
		}
		var a, b, c []uint64
		for h := range uint64(100) {
			a, b = append(a, elem(h)), append(b, elem(h+1)) // {0..99}, {1..100}
			c = append(c, elem(h+1000))                     // {1000..1099}
		}
		c = append(c, elem(0)) // shares only 0 with a
		sa, sb, sc2 := sk.Sketch(nil, a), sk.Sketch(nil, b), sk.Sketch(nil, c)
		// The estimate of J = 99/101 from 256 values has a standard
		// deviation under 0.01; of J = 1/199, under 0.005.
		if e := minhash.Estimate(sa, sb); e < 0.9 {
			t.Errorf("%v: J({0..99}, {1..100}) = %.3f, estimate %.3f (first values %v)", sc, 99.0/101, e, sa[:4])
		}
		if e := minhash.Estimate(sa, sc2); e > 0.05 {
			t.Errorf("%v: J = %.3f for sets sharing only element 0, estimate %.3f", sc, 1.0/199, e)
		}
	}
}
