package minhash

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// Scheme is a signature scheme. The zero value is [SchemeFSS], the default.
//
// The numeric values are not stored anywhere (an index's manifest records
// the scheme's name), so they carry no compatibility promise.
type Scheme uint8

const (
	// SchemeFSS is fast similarity sketching (Dahlgaard, Knudsen and
	// Thorup, FOCS 2017): one-permutation hashing whose empty bins are filled
	// by further rounds of hashing every element, not by copying other
	// bins. One 64-bit mix per element for sets of more than a few times k
	// elements, and the collision behaviour of k independent MinHash values
	// at every set size. The default.
	SchemeFSS Scheme = iota
	// SchemeOPH is one-permutation hashing with optimal densification: one
	// hash per element. Sets much smaller than k collide in bands less often
	// than independent values would (filled bins are copies), so the S-curve
	// overstates their recall. The default of indexes made before fss.
	SchemeOPH
	// SchemeClassic is k independent multiply-shift hash functions, the
	// minimum of each: k hash evaluations per element.
	SchemeClassic
	// SchemeDatasketch is the MinHash of the Python library datasketch
	// (MinHash with its default hashfunc): k permutations
	// ((a_i·h + b_i) mod (2⁶¹−1)) & (2³²−1) of each element's 32-bit hash
	// h, with (a_i, b_i) drawn by numpy.random.RandomState(Seed), and the
	// minimum of each. A set given as tokens ([Sketcher.TokenElement]) is
	// hashed with datasketch's sha1_hash32, so that with Seed 1 (datasketch's
	// default) and the same NumPerm a signature equals datasketch's
	// MinHash.hashvalues bit for bit. k hash evaluations per element, like
	// classic. See datasketch.go.
	SchemeDatasketch
)

// String returns "fss", "oph", "classic" or "datasketch".
func (s Scheme) String() string {
	switch s {
	case SchemeFSS:
		return "fss"
	case SchemeOPH:
		return "oph"
	case SchemeClassic:
		return "classic"
	case SchemeDatasketch:
		return "datasketch"
	}
	return "scheme(" + strconv.Itoa(int(s)) + ")"
}

// ParseScheme parses the names returned by [Scheme.String]. The empty name
// is "oph", the scheme before names were checked (every manifest records
// one; the command refuses an empty --scheme).
func ParseScheme(s string) (Scheme, error) {
	switch s {
	case "fss":
		return SchemeFSS, nil
	case "oph", "":
		return SchemeOPH, nil
	case "classic":
		return SchemeClassic, nil
	case "datasketch":
		return SchemeDatasketch, nil
	}
	return 0, optionError("Scheme", "unknown scheme %q (want fss, oph, classic or datasketch)", s)
}

const (
	// DefaultNumPerm is the default number of signature values.
	DefaultNumPerm = 128
	// MaxNumPerm is the largest signature size accepted.
	MaxNumPerm = 8192
)

// EmptyValue is every value of the signature of an empty set.
const EmptyValue = math.MaxUint32

// SketchOptions says how a set becomes a signature. The zero value gives
// the defaults: fss, 128 values, seed 0.
type SketchOptions struct {
	// Scheme is SchemeFSS, SchemeOPH, SchemeClassic or SchemeDatasketch.
	// Default: SchemeFSS.
	Scheme Scheme
	// NumPerm is the number of signature values k, 1 to MaxNumPerm.
	// Default (0): DefaultNumPerm.
	NumPerm int
	// Seed selects the hash functions. Every seed, 0 included, is valid and
	// gives the same signatures everywhere; SchemeDatasketch takes seeds
	// below 2³² (numpy's RandomState does), and datasketch's default is 1.
	// Default: 0.
	Seed uint64
}

// EnsureDefaults fills in the fields left at zero and returns o.
func (o *SketchOptions) EnsureDefaults() *SketchOptions {
	if o.NumPerm == 0 {
		o.NumPerm = DefaultNumPerm
	}
	return o
}

// Validate reports the first option that is out of range, as an error
// wrapping [ErrInvalidOptions]. Call it after EnsureDefaults.
func (o *SketchOptions) Validate() error {
	if o.Scheme > SchemeDatasketch {
		return optionError("Scheme", "unknown scheme %d", o.Scheme)
	}
	if o.Scheme == SchemeDatasketch && o.Seed > math.MaxUint32 {
		return optionError("Seed", "datasketch's seed %d is above 2^32-1 (numpy's RandomState takes 32 bits)", o.Seed)
	}
	if o.NumPerm < 1 || o.NumPerm > MaxNumPerm {
		return optionError("NumPerm", "signature size %d is outside 1..%d", o.NumPerm, MaxNumPerm)
	}
	return nil
}

// A Sketcher computes signatures. It keeps a scratch buffer: reuse one per
// goroutine. It is not safe for concurrent use. Make one with
// [NewSketcher]: the zero value is not usable (its methods panic).
type Sketcher struct {
	opts SketchOptions
	// classic: h_i(x) = a[i]·x (mod 2^64), a[i] odd: multiply-shift.
	// datasketch: the permutations' a[i] and b[i].
	a []uint64
	b []uint64
	// oph and fss
	mix   uint64   // xored into each element before mum
	probe uint64   // oph: seeds the densification probe sequence; fss: the rounds' salt
	bins  []uint64 // per-bin minimum; emptyBin when the bin is empty
}

// emptyBin marks an empty bin: larger than every bin value (an OPH value
// is 32 bits; an FSS value is its round above 32 bits of position).
const emptyBin = math.MaxUint64

// NewSketcher returns a Sketcher for opts (defaults filled in).
func NewSketcher(opts SketchOptions) (*Sketcher, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Sketcher{opts: opts}
	k := opts.NumPerm
	// NB: every per-seed constant comes from SplitMix64 seeded with Seed and
	// a scheme tag, so that the schemes never share constants.
	switch opts.Scheme {
	case SchemeClassic:
		s.a = make([]uint64, k)
		st := opts.Seed ^ 0xc1a551c0c1a551c0
		for i := range k {
			st, s.a[i] = splitmix64(st)
			s.a[i] |= 1
		}
	case SchemeDatasketch:
		s.a, s.b = datasketchPermutations(uint32(opts.Seed), k)
	case SchemeOPH:
		st := opts.Seed ^ 0x0e0e0e0e0e0e0e0e
		st, s.mix = splitmix64(st)
		_, s.probe = splitmix64(st)
		s.bins = make([]uint64, k)
	case SchemeFSS:
		st := opts.Seed ^ 0xf55f55f55f55f55f
		st, s.mix = splitmix64(st)
		_, s.probe = splitmix64(st)
		s.bins = make([]uint64, k)
	}
	return s, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Sketcher) Options() SketchOptions { return s.opts }

// Sketch appends the signature of the set whose elements are elems (repeats
// allowed, order irrelevant) to dst and returns the extended slice. An empty
// set's signature is NumPerm copies of [EmptyValue].
func (s *Sketcher) Sketch(dst []uint32, elems []uint64) []uint32 {
	switch s.opts.Scheme {
	case SchemeClassic:
		return s.classic(dst, elems)
	case SchemeOPH:
		return s.oph(dst, elems)
	case SchemeDatasketch:
		return s.datasketch(dst, elems)
	}
	return s.fss(dst, elems)
}

func (s *Sketcher) classic(dst []uint32, elems []uint64) []uint32 {
	if slices.Contains(elems, 0) {
		// NB: a·0 is 0 for every a, so a set holding element 0 had the
		// all-zero signature: it shared every band with every other set
		// holding 0, and none with a near-copy without it. 0 is
		// [Sketcher.HashElement]'s image of a caller's hash 0 (fmix64
		// fixes 0), so small-integer hashes reach it. It stands in for
		// classicZero instead: only those degenerate signatures change.
		// The scan costs one comparison an element, against k
		// multiplications.
		elems = slices.Clone(elems)
		for i, x := range elems {
			if x == 0 {
				elems[i] = classicZero
			}
		}
	}
	a := s.a
	i := 0
	for ; i+4 <= len(a); i += 4 {
		m0, m1, m2, m3 := min4(elems, (*[4]uint64)(a[i:]))
		dst = append(dst, uint32(m0>>32), uint32(m1>>32), uint32(m2>>32), uint32(m3>>32))
	}
	for ; i < len(a); i++ {
		m := uint64(math.MaxUint64)
		for _, x := range elems {
			m = min(m, a[i]*x)
		}
		dst = append(dst, uint32(m>>32))
	}
	return dst
}

// classicZero is the value classic hashes in place of element 0: a fixed
// odd constant (the 64-bit golden ratio), so that 0's values are as
// well-spread as any element's. Element 0 then collides with element
// classicZero, a chance of 2^-64 for a shingle hash.
//
// NB: elements with many trailing zero bits are the family's other weak
// points (a·2^63 is 2^63 for every odd a, so that element's values are
// equal across the functions, not independent), but no signature
// collapses for them, and a 64-bit hash has 32 trailing zeros with a
// chance of 2^-32: they hash as they always have, so that no stored
// signature of a classic index changes but those of sets holding 0.
const classicZero = 0x9e3779b97f4a7c15

// min4 returns the minimums over elems of four multiply-shift functions
// a[j]·x (mod 2^64).
//
// NB: the loop over elements is the inner loop, four functions at a time,
// in a leaf function so that the constants and minimums stay in registers
// (with a call in the loop nest, the compiler spilled them to the stack).
// The minimum changes about ln(n) times in n elements, so the branches are
// predicted; as conditional moves they formed one dependency chain per
// function and ran slower. Each element is loaded once per four functions.
func min4(elems []uint64, a *[4]uint64) (m0, m1, m2, m3 uint64) {
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	m0, m1, m2, m3 = math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64
	for _, x := range elems {
		if v := a0 * x; v < m0 {
			m0 = v
		}
		if v := a1 * x; v < m1 {
			m1 = v
		}
		if v := a2 * x; v < m2 {
			m2 = v
		}
		if v := a3 * x; v < m3 {
			m3 = v
		}
	}
	return m0, m1, m2, m3
}

func (s *Sketcher) oph(dst []uint32, elems []uint64) []uint32 {
	bins := s.bins
	for i := range bins {
		bins[i] = emptyBin
	}
	k := uint64(len(bins))
	for _, x := range elems {
		// The bin is the high part of h·k (Lemire's fast range, exact for
		// any k); the value is the top 32 bits of the low part, the
		// element's position inside its bin.
		bin, frac := bits.Mul64(mum(x^s.mix), k)
		bins[bin] = min(bins[bin], frac>>32)
	}
	filled := 0
	for _, v := range bins {
		if v != emptyBin {
			filled++
		}
	}
	if filled == 0 {
		for range bins {
			dst = append(dst, EmptyValue)
		}
		return dst
	}
	for i, v := range bins {
		if v == emptyBin {
			v = bins[s.donor(uint64(i), filled)]
		}
		dst = append(dst, uint32(v))
	}
	return dst
}

// fss is fast similarity sketching. Round 0 is OPH's pass: each element
// x lands in bin ⌊h₀(x)·k/2⁶⁴⌋ with a 32-bit position inside it. While some
// bin is empty, round t = 1, 2, ... throws every element again with a
// fresh hash h_t, and an element landing in a bin that is empty, or was
// first filled in this round, offers the value t·2³² + position. A bin's
// value is thus the least (round, position) over every element's first
// landing in it: a MinHash of the set under an order of its own, for which
// a pair collides with probability exactly J, and whose orders are nearly
// independent across bins, so bands collide as the S-curve says at every
// set size (OPH's copies of filled bins make short sets' bins correlated).
// Stopping once every bin is filled changes no value: a later round's
// values are larger than every value already in a bin.
//
// A set of n elements needs about (k·ln k)/n rounds when n < k·ln k, each
// n mixes; a set of several k·ln k elements almost never needs round 1.
func (s *Sketcher) fss(dst []uint32, elems []uint64) []uint32 {
	bins := s.bins
	for i := range bins {
		bins[i] = emptyBin
	}
	if len(elems) == 0 {
		for range bins {
			dst = append(dst, EmptyValue)
		}
		return dst
	}
	k := uint64(len(bins))
	for _, x := range elems {
		bin, frac := bits.Mul64(mum(x^s.mix), k)
		bins[bin] = min(bins[bin], frac>>32)
	}
	empty := 0
	for _, v := range bins {
		if v == emptyBin {
			empty++
		}
	}
	if empty == 0 {
		return s.fssValues(dst, 0)
	}
	// NB: with n distinct elements a round leaves a given empty bin empty
	// with probability (1 − 1/k)^n ≤ e^(−n/k); after k·(log₂k + 48)/n
	// rounds the chance that any bin is still empty is below e^−48. The
	// bound keeps the loop finite for every input; the fallback in
	// fssValues never runs in practice. It counts the bins round 0 filled,
	// not the elements: filled ≤ n, so the bound only grows, and unlike
	// len(elems) it does not count repeats, so the limit, like every
	// value, is a function of the set.
	filled := k - uint64(empty)
	limit := k * (uint64(bits.Len64(k)) + 48) / filled
	for round := uint64(1); empty > 0 && round <= limit+1; round++ {
		salt := fmix64(s.probe ^ round)
		floor := round << 32 // values of this round and later are ≥ floor
		for _, x := range elems {
			bin, frac := bits.Mul64(mum(x^salt), k)
			if v := bins[bin]; v >= floor {
				if v == emptyBin {
					empty--
				}
				bins[bin] = min(v, floor|frac>>32)
			}
		}
	}
	return s.fssValues(dst, empty)
}

// fssValues appends the signature values of fss's bins, of which empty
// are still empty (they borrow, as OPH's do: see fss).
func (s *Sketcher) fssValues(dst []uint32, empty int) []uint32 {
	bins := s.bins
	k := len(bins)
	for i, v := range bins {
		if v == emptyBin {
			v = bins[s.donor(uint64(i), k-empty)] // NB: see limit in fss
		}
		// Fold the round into the 32-bit value: round 0 values are the
		// position itself.
		dst = append(dst, uint32(v)^uint32(v>>32)*0x9e3779b9)
	}
	return dst
}

// donor returns the non-empty bin that empty bin i borrows from: the first
// non-empty bin along the probe sequence p(i, 1), p(i, 2), ... Optimal
// densification (Shrivastava 2017, Algorithm 2): the sequence depends only on
// the seed and i, never on the set, which keeps the estimator unbiased.
func (s *Sketcher) donor(i uint64, filled int) int {
	bins := s.bins
	k := uint64(len(bins))
	// With f of k bins filled, a probe hits one with probability f/k; after
	// 64·k/f probes the chance of still missing is below e^-64.
	limit := 64 * (int(k)/filled + 1)
	for attempt := uint64(1); attempt <= uint64(limit); attempt++ {
		j, _ := bits.Mul64(fmix64(s.probe^(i<<32|attempt)), k)
		if bins[j] != emptyBin {
			return int(j)
		}
	}
	// NB: unreachable in practice; a deterministic scan keeps the function
	// total (and the result still depends only on the seed, i and the set).
	for d := uint64(1); d < k; d++ {
		if j := (i + d) % k; bins[j] != emptyBin {
			return int(j)
		}
	}
	return int(i)
}

// Estimate returns the fraction of positions at which two signatures agree,
// an unbiased estimate of the Jaccard similarity of their sets. Signatures
// of different lengths, or empty ones, give 0.
func Estimate(a, b []uint32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	return float64(Matches(a, b)) / float64(len(a))
}

// Matches returns the number of positions at which a and b agree, over the
// shorter length.
func Matches(a, b []uint32) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	eq := 0
	for i := range a {
		if a[i] == b[i] {
			eq++
		}
	}
	return eq
}
