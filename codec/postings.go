package codec

import (
	"encoding/binary"
	"math"
)

// postingsVersion is the first byte of every posting list and operand.
const postingsVersion = 1

// Posting is one operation on a posting list: doc number Doc added to, or
// (Remove) removed from, the bucket.
type Posting struct {
	Doc    uint64
	Remove bool
}

// MaxDocNum is the largest doc number a posting can hold.
const MaxDocNum = math.MaxUint64 >> 1

// AppendPostings appends the encoding of a posting list or merge operand:
//
//	version (1 byte) | uvarint count | count × uvarint (delta<<1 | remove)
//
// where delta is the difference from the previous doc number (the first is
// absolute). ps MUST be sorted by strictly increasing Doc, each ≤ MaxDocNum.
func AppendPostings(dst []byte, ps []Posting) []byte {
	dst = append(dst, postingsVersion)
	dst = binary.AppendUvarint(dst, uint64(len(ps)))
	prev := uint64(0)
	for _, p := range ps {
		v := (p.Doc - prev) << 1
		if p.Remove {
			v |= 1
		}
		dst = binary.AppendUvarint(dst, v)
		prev = p.Doc
	}
	return dst
}

// PostingCount returns the number of entries of an encoded list without
// decoding them.
func PostingCount(v []byte) (int, error) {
	if len(v) < 1 || v[0] != postingsVersion {
		return 0, corrupt("posting list header")
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 || n > uint64(len(v)) {
		return 0, corrupt("posting list count")
	}
	return int(n), nil
}

// DecodePostings appends the entries of an encoded posting list to dst,
// checking that doc numbers strictly increase.
func DecodePostings(v []byte, dst []Posting) ([]Posting, error) {
	err := eachPosting(v, func(p Posting) { dst = append(dst, p) })
	return dst, err
}

// PostingsHaveRemoval reports whether an encoded posting list holds a
// removal, checking it as DecodePostings does without decoding it into a
// slice.
func PostingsHaveRemoval(v []byte) (bool, error) {
	found := false
	err := eachPosting(v, func(p Posting) { found = found || p.Remove })
	return found, err
}

// eachPosting calls f with each entry of an encoded posting list, in
// order, and fails on a list that is not well formed.
func eachPosting(v []byte, f func(Posting)) error {
	if len(v) < 1 || v[0] != postingsVersion {
		return corrupt("posting list header")
	}
	rd := reader{b: v[1:]}
	n := rd.uvarint("posting count")
	if rd.err != nil {
		return rd.err
	}
	if n > uint64(len(rd.b)) {
		return corrupt("%d postings in %d bytes", n, len(rd.b))
	}
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		e := rd.uvarint("posting")
		if rd.err != nil {
			return rd.err
		}
		d := e >> 1
		if i > 0 && d == 0 {
			return corrupt("posting %d repeats doc %d", i, prev)
		}
		if d > MaxDocNum-prev {
			return corrupt("posting %d overflows", i)
		}
		prev += d
		f(Posting{Doc: prev, Remove: e&1 != 0})
	}
	if len(rd.b) != 0 {
		return corrupt("%d trailing bytes in posting list", len(rd.b))
	}
	return nil
}
