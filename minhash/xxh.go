package minhash

import (
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// xxhash64 primes.
const (
	prime1 uint64 = 11400714785074694791
	prime2 uint64 = 14029467366897019727
	prime3 uint64 = 1609587929392839161
	prime4 uint64 = 9650029242287828579
	prime5 uint64 = 2870177450012600261
)

// sum64 is xxhash.Sum64 (seed 0), with the short-input case written out in
// Go. NB: shingles are mostly 5 to 20 bytes, where the call into
// xxhash's assembly and its setup cost more than the hashing; this path is
// the same algorithm (XXH64 for len < 32) and is tested to agree with
// xxhash.Sum64 at every length.
func sum64(b []byte) uint64 {
	n := len(b)
	if n >= 32 {
		return xxhash.Sum64(b)
	}
	h := prime5 + uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		k1 := binary.LittleEndian.Uint64(b) * prime2
		k1 = bits.RotateLeft64(k1, 31) * prime1
		h ^= k1
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * prime1
		h = bits.RotateLeft64(h, 23)*prime2 + prime3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * prime5
		h = bits.RotateLeft64(h, 11) * prime1
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}
