package bands

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Key returns the bucket key of one band: xxhash64 (seed 0) of the band
// number as 4 little-endian bytes followed by the band's values, each as 4
// little-endian bytes. It is a storage format: never change it.
func Key(band int, values []uint32) uint64 {
	if len(values) <= 15 {
		// NB: the common case (r ≤ 15) hashes one small stack buffer in one
		// call; streaming through a Digest, or zeroing a large buffer, cost
		// two to four times as much for r = 6.
		var buf [64]byte
		binary.LittleEndian.PutUint32(buf[:], uint32(band))
		for i, v := range values {
			binary.LittleEndian.PutUint32(buf[4+4*i:], v)
		}
		return xxhash.Sum64(buf[:4+4*len(values)])
	}
	var d xxhash.Digest
	d.Reset()
	var buf [256]byte
	binary.LittleEndian.PutUint32(buf[:], uint32(band))
	n := 4
	for _, v := range values {
		if n == len(buf) {
			d.Write(buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint32(buf[n:], v)
		n += 4
	}
	d.Write(buf[:n])
	return d.Sum64()
}

// AppendKeys appends the keys of the p.B bands of sig (band i covers
// sig[i·R : (i+1)·R]) and returns the extended slice. Values of sig past
// B·R are unused. A banding that does not fit sig is refused with an error
// wrapping ErrInvalidParams, and dst is returned unchanged.
func AppendKeys(dst []uint64, sig []uint32, p Params) ([]uint64, error) {
	if err := p.Validate(len(sig)); err != nil {
		return dst, err
	}
	for i := range p.B {
		dst = append(dst, Key(i, sig[i*p.R:(i+1)*p.R]))
	}
	return dst, nil
}
