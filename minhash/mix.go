package minhash

import "math/bits"

// fmix64 is MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
// Its constants are part of the storage format.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// splitmix64 returns the next state and output of the SplitMix64 generator,
// used to derive per-seed constants deterministically.
func splitmix64(state uint64) (next, out uint64) {
	next = state + 0x9e3779b97f4a7c15
	z := next
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return next, z ^ (z >> 31)
}

// mum mixes x with one 64×64→128-bit multiplication by a fixed odd constant
// and folds the product's halves (wyhash's "mum"). NB: it is the per-element
// cost of OPH, so it is one multiplication; elements are xxhash64 outputs
// already, and the seed is xored in before it.
func mum(x uint64) uint64 {
	hi, lo := bits.Mul64(x, 0xa0761d6478bd642f)
	return hi ^ lo
}
