package codec

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// A 32-bit shingle set (sets mode) is stored as the gaps between its
// sorted values, Golomb-Rice coded:
//
//	uvarint n | k (1 byte, 0..31) | bits, least significant first
//
// Gap i is v[0] for i = 0 and v[i] − v[i−1] − 1 after; each is the
// quotient g>>k in unary (that many 0 bits, then a 1) followed by the k
// low bits of g. The encoder picks the k, near log2 of the mean gap, that
// spends the fewest bits; the last byte is padded with zero bits.
//
// NB: chosen with internal/cmd/storagecost on the shared corpora: within
// 1% of the entropy bound for uniform gaps, 2.3-2.9 bytes a text byte
// against 3.1-3.7 for delta-varints.

// riceParams returns the k the encoder uses for set and the bits of the
// coded gaps.
func riceParams(set []uint32) (k uint, nbits uint64) {
	if len(set) == 0 {
		return 0, 0
	}
	est := bits.Len64((uint64(set[len(set)-1])+1)/uint64(len(set))) - 1
	nbits = math.MaxUint64
	for c := max(0, est-2); c <= min(31, est+1); c++ {
		var nb uint64
		prev := int64(-1)
		for _, v := range set {
			g := uint64(int64(v) - prev - 1)
			nb += g>>c + 1 + uint64(c)
			prev = int64(v)
		}
		if nb < nbits {
			k, nbits = uint(c), nb
		}
	}
	return k, nbits
}

// maxRiceBytes is the length of AppendRiceSet's encoding of set, bounded
// from above.
func maxRiceBytes(set []uint32) int {
	_, nb := riceParams(set)
	return binary.MaxVarintLen64 + 1 + int((nb+7)/8)
}

// AppendRiceSet appends the coding of set, which must be sorted and
// distinct.
func AppendRiceSet(dst []byte, set []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	if len(set) == 0 {
		return dst
	}
	k, _ := riceParams(set)
	dst = append(dst, byte(k))
	var acc uint64 // bits not yet appended, least significant first
	var na uint    // how many (always < 8 between writes)
	put := func(v uint64, nb uint) {
		acc |= v << na
		na += nb
		for na >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			na -= 8
		}
	}
	prev := int64(-1)
	for _, v := range set {
		g := uint64(int64(v) - prev - 1)
		prev = int64(v)
		q := g >> k
		for ; q >= 48; q -= 48 {
			put(0, 48)
		}
		put(1<<q, uint(q)+1)
		put(g&(1<<k-1), k)
	}
	if na > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// DecodeRiceSet appends the values of AppendRiceSet's coding b to dst.
func DecodeRiceSet(dst []uint32, b []byte) ([]uint32, error) {
	return decodeRice(dst, b)
}

func decodeRiceSet64(dst []uint64, b []byte) ([]uint64, error) {
	return decodeRice(dst, b)
}

// decodeRice appends the values of AppendRiceSet's coding b to dst. It
// checks that b holds exactly the values it declares, each below 2^32.
func decodeRice[T uint32 | uint64](dst []T, b []byte) ([]T, error) {
	n, nk := binary.Uvarint(b)
	// NB: every value takes at least one bit, so n is bounded by the
	// input before anything is allocated.
	if nk <= 0 || n > 8*uint64(len(b)) {
		return dst, corrupt("32-bit set: bad length")
	}
	b = b[nk:]
	if n == 0 {
		if len(b) != 0 {
			return dst, corrupt("32-bit set: %d trailing bytes", len(b))
		}
		return dst, nil
	}
	if len(b) == 0 || b[0] > 31 {
		return dst, corrupt("32-bit set: bad Rice parameter")
	}
	k := uint(b[0])
	b = b[1:]
	// Past the end, the reader reads zero bytes; the bits consumed are
	// checked against the input at the end.
	var acc uint64
	var na uint
	pos := 0
	refill := func() {
		for na <= 56 {
			var c byte
			if pos < len(b) {
				c = b[pos]
			}
			pos++
			acc |= uint64(c) << na
			na += 8
		}
	}
	prev := int64(-1)
	for range n {
		var q uint64
		for {
			refill()
			if acc != 0 {
				tz := uint(bits.TrailingZeros64(acc))
				q += uint64(tz)
				acc >>= tz + 1
				na -= tz + 1
				break
			}
			q += uint64(na)
			acc, na = 0, 0
			if pos > len(b)+8 {
				return dst, corrupt("32-bit set: runs past its end")
			}
		}
		refill()
		r := acc & (1<<k - 1)
		acc >>= k
		na -= k
		if q > math.MaxUint32>>k {
			return dst, corrupt("32-bit set: value out of range")
		}
		v := prev + 1 + int64(q<<k|r)
		if v > math.MaxUint32 {
			return dst, corrupt("32-bit set: value out of range")
		}
		dst = append(dst, T(v))
		prev = v
	}
	// The bits consumed must end in the last byte, and the rest of it must
	// be zero.
	used := 8*pos - int(na)
	if used > 8*len(b) || used <= 8*(len(b)-1) || acc != 0 {
		return dst, corrupt("32-bit set: coding does not end at its last byte")
	}
	return dst, nil
}
