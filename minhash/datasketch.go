package minhash

import (
	"crypto/sha1"
	"encoding/binary"
	"math/bits"
)

// SchemeDatasketch reproduces datasketch's MinHash (github.com/ekzhu/datasketch,
// datasketch/minhash.py):
//
//	_mersenne_prime = 2**61 - 1; _max_hash = 2**32 - 1
//	gen = np.random.RandomState(seed)
//	a_i, b_i = gen.randint(1, _mersenne_prime, dtype=np.uint64), gen.randint(0, _mersenne_prime, dtype=np.uint64)
//	phv = ((a * hv + b) % _mersenne_prime) & _max_hash   # numpy uint64: a*hv+b wraps mod 2**64
//	hashvalues = min(phv over every update)
//
// with hv = sha1_hash32(token) (the first 4 bytes of the token's SHA-1,
// little-endian). The values below are bit for bit numpy's: its legacy
// MT19937 seeded by init_genrand, and its masked rejection sampling of
// 64-bit integers (two 32-bit outputs, the first in the high half).
// testdata/datasketch holds vectors datasketch itself computed.
//
// An element of a datasketch set carries its 32-bit hash in its high 32
// bits (see TokenElement): the scheme permutes x>>32. A text's shingles
// (64-bit xxhash values) thus sign by their high 32 bits; only a set of
// tokens hashed with sha1_hash32 signs as datasketch does.

const (
	mersenne61 = 1<<61 - 1
	maxHash32  = 1<<32 - 1
)

// mt19937 is the Mersenne Twister as numpy's legacy RandomState runs it.
type mt19937 struct {
	key [624]uint32
	pos int
}

// seed is init_genrand (numpy's mt19937_seed).
func (m *mt19937) seed(s uint32) {
	for i := range m.key {
		m.key[i] = s
		s = 1812433253*(s^(s>>30)) + uint32(i) + 1
	}
	m.pos = len(m.key)
}

func (m *mt19937) next32() uint32 {
	const n, mid = 624, 397
	const upper, lower = 0x80000000, 0x7fffffff
	if m.pos == n {
		k := &m.key
		for i := range n {
			y := k[i]&upper | k[(i+1)%n]&lower
			v := k[(i+mid)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			k[i] = v
		}
		m.pos = 0
	}
	y := m.key[m.pos]
	m.pos++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// next64 is numpy's mt19937_next64: the first output is the high half.
func (m *mt19937) next64() uint64 {
	hi := uint64(m.next32())
	return hi<<32 | uint64(m.next32())
}

// randint is RandomState.randint(low, high, dtype=np.uint64) for
// high-low-1 > 2³²−1: masked rejection sampling.
func (m *mt19937) randint(low, high uint64) uint64 {
	rng := high - low - 1
	mask := uint64(1)<<bits.Len64(rng) - 1
	for {
		if v := m.next64() & mask; v <= rng {
			return low + v
		}
	}
}

// datasketchPermutations returns datasketch's k permutations for seed, as
// its MinHash._init_permutations draws them (a_i then b_i, in turn).
func datasketchPermutations(seed uint32, k int) (a, b []uint64) {
	var m mt19937
	m.seed(seed)
	a, b = make([]uint64, k), make([]uint64, k)
	for i := range k {
		a[i] = m.randint(1, mersenne61)
		b[i] = m.randint(0, mersenne61)
	}
	return a, b
}

// mod61 is x mod 2⁶¹−1, exactly.
func mod61(x uint64) uint64 {
	x = x&mersenne61 + x>>61 // < 2⁶¹ + 8
	if x >= mersenne61 {
		x -= mersenne61
	}
	return x
}

func (s *Sketcher) datasketch(dst []uint32, elems []uint64) []uint32 {
	for i, a := range s.a {
		b := s.b[i]
		m := uint64(maxHash32)
		for _, x := range elems {
			// NB: a·h + b wraps modulo 2⁶⁴ before the reduction, as numpy's
			// uint64 arithmetic does.
			if v := mod61(a*(x>>32)+b) & maxHash32; v < m {
				m = v
			}
		}
		dst = append(dst, uint32(m))
	}
	return dst
}

// SHA1Hash32 is datasketch's default token hash, sha1_hash32: the first 4
// bytes of the SHA-1 digest of b, little-endian.
func SHA1Hash32(b []byte) uint32 {
	d := sha1.Sum(b)
	return binary.LittleEndian.Uint32(d[:4])
}

// TokenElement returns the set element that stands for a caller's token
// (a word, a tag, a code token: any string) under this Sketcher's scheme.
// For fss, oph and classic it is [HashShingle] of the token's UTF-8
// bytes, the element a shingle with the same text gets; for datasketch,
// the token's sha1_hash32 in the high 32 bits (see SchemeDatasketch).
func (s *Sketcher) TokenElement(token string) uint64 {
	if s.opts.Scheme == SchemeDatasketch {
		return uint64(SHA1Hash32([]byte(token))) << 32
	}
	return HashShingle([]byte(token))
}

// HashElement returns the set element that stands for a caller's own
// token hash h under this Sketcher's scheme, and whether h is in the
// scheme's range. For fss, oph and classic every value is, and the
// element is a fixed bijective mix of h, so that any distinct values
// (small integers included) make distinct, well-spread elements; for
// datasketch h is a 32-bit hash value (as datasketch's hashfunc returns),
// below 2³², and the element carries it in its high 32 bits.
func (s *Sketcher) HashElement(h uint64) (uint64, bool) {
	if s.opts.Scheme == SchemeDatasketch {
		return h << 32, h <= maxHash32
	}
	return fmix64(h), true
}
