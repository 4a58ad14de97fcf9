package bands_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that a band key is xxhash64 of the documented bytes, at band
// sizes on both sides of Key's internal buffer.
func TestKeyMatchesDocumentedBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, r := range []int{0, 1, 5, 63, 64, 65, 200} {
		vals := make([]uint32, r)
		for i := range vals {
			vals[i] = rng.Uint32()
		}
		band := rng.IntN(1000)
		b := binary.LittleEndian.AppendUint32(nil, uint32(band))
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		if got, want := bands.Key(band, vals), xxhash.Sum64(b); got != want {
			t.Errorf("r=%d: Key = %#x, want %#x", r, got, want)
		}
	}
	// The band number is part of the key: equal values in different bands
	// land in different buckets.
	if bands.Key(0, []uint32{1, 2}) == bands.Key(1, []uint32{1, 2}) {
		t.Error("band number does not change the key")
	}
}

// Ensure that AppendKeys cuts the signature into consecutive bands and
// refuses a banding that does not fit.
func TestAppendKeys(t *testing.T) {
	sig := make([]uint32, 10)
	for i := range sig {
		sig[i] = uint32(i * 7)
	}
	p := bands.Params{B: 3, R: 3}
	keys, err := bands.AppendKeys([]uint64{9}, sig, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{9, bands.Key(0, sig[0:3]), bands.Key(1, sig[3:6]), bands.Key(2, sig[6:9])}
	if !slices.Equal(keys, want) {
		t.Errorf("AppendKeys = %x, want %x", keys, want)
	}
	if _, err := bands.AppendKeys(nil, sig, bands.Params{B: 4, R: 3}); !errors.Is(err, bands.ErrInvalidParams) {
		t.Errorf("12 rows from 10 values: %v", err)
	}
}

// Ensure that the empirical rate at which pairs of known Jaccard s share a
// band key matches P(s) within binomial error, for both schemes and two
// bandings. Each trial draws fresh sets and a fresh signature seed.
func TestCandidateRateMatchesCurve(t *testing.T) {
	const n, trials, k = 400, 1500, 128
	for _, th := range []float64{0.5, 0.8} {
		p, err := bands.Choose(k, th, bands.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range []minhash.Scheme{minhash.SchemeOPH, minhash.SchemeClassic} {
			for _, s := range []float64{0.3, 0.5, 0.7, 0.8, 0.9} {
				// m shared of n each: J = m / (2n − m) ⇒ m = 2ns / (1 + s).
				m := int(math.Round(2 * n * s / (1 + s)))
				j := float64(m) / float64(2*n-m)
				hits := 0
				rng := rand.New(rand.NewPCG(uint64(m), uint64(sc)))
				a, b := make([]uint64, n), make([]uint64, n)
				var sa, sb []uint32
				var ka, kb []uint64
				for trial := range trials {
					for i := range n {
						a[i], b[i] = rng.Uint64(), rng.Uint64()
						if i < m {
							b[i] = a[i]
						}
					}
					sk, _ := minhash.NewSketcher(minhash.SketchOptions{Scheme: sc, NumPerm: k, Seed: uint64(trial)})
					sa, sb = sk.Sketch(sa[:0], a), sk.Sketch(sb[:0], b)
					ka, _ = bands.AppendKeys(ka[:0], sa, p)
					kb, _ = bands.AppendKeys(kb[:0], sb, p)
					for i := range ka {
						if ka[i] == kb[i] {
							hits++
							break
						}
					}
				}
				rate, want := float64(hits)/trials, p.Probability(j)
				sigma := math.Sqrt(want * (1 - want) / trials)
				if math.Abs(rate-want) > 4.5*sigma+1.0/trials {
					t.Errorf("%v %v s=%.3f: candidate rate %.4f, P(s) = %.4f (σ %.4f)", sc, p, j, rate, want, sigma)
				}
			}
		}
	}
}

// BenchmarkAppendKeys measures band keys for a default signature (16 bands
// of 6 rows), against a baseline of hashing the same 96 values as one key.
func BenchmarkAppendKeys(b *testing.B) {
	sig := make([]uint32, 128)
	for i := range sig {
		sig[i] = uint32(i) * 2654435761
	}
	p := bands.Params{B: 16, R: 6}
	b.Run("baseline-one-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bands.Key(0, sig[:96])
		}
	})
	b.Run("16x6", func(b *testing.B) {
		var keys []uint64
		b.ReportAllocs()
		for b.Loop() {
			keys, _ = bands.AppendKeys(keys[:0], sig, p)
		}
	})
}
