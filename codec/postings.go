package codec

import (
	"encoding/binary"
	"math"
	"strings"
)

// postingsVersion is the first byte of every posting list and operand.
const postingsVersion = 1

// postingsDamaged is the first byte of a damaged list: what a merge makes
// of operands one of which it cannot decode (AppendDamagedPostings).
const postingsDamaged = 0xdd

// maxDamageCause bounds the cause a damaged list keeps.
const maxDamageCause = 512

// AppendDamagedPostings appends the value a merge gives a posting list
// whose operands it cannot merge (one of them damaged): a marker and the
// cause, which every decoder of posting lists refuses as ErrCorrupt with
// that cause. The merge cannot fail instead: Pebble retries a failed
// flush or compaction for ever (an open that replays such an operand from
// its log never returned), and a read of the list then says what is
// wrong where it is read, the list's key with it.
func AppendDamagedPostings(dst []byte, cause string) []byte {
	if len(cause) > maxDamageCause {
		cause = cause[:maxDamageCause]
	}
	cause = strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, cause), "?")
	dst = append(dst, postingsDamaged)
	return append(dst, cause...)
}

// IsDamagedPostings reports whether v is a damaged list
// (AppendDamagedPostings): a merge keeps it as it is, so that its cause is
// not wrapped again at every merge.
func IsDamagedPostings(v []byte) bool { return len(v) > 0 && v[0] == postingsDamaged }

// badHeader is the error of a posting list whose first byte is not
// postingsVersion.
func badHeader(v []byte) error {
	if IsDamagedPostings(v) {
		return corrupt("posting list damaged: a merge met an operand it could not decode (%s); it stays so until lshdb check --repair writes it anew from the records", v[1:])
	}
	return corrupt("posting list header")
}

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
		return 0, badHeader(v)
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
	if len(v) < 1 || v[0] != postingsVersion {
		return dst, badHeader(v)
	}
	rd := reader{b: v[1:]}
	n := rd.uvarint("posting count")
	if rd.err != nil {
		return dst, rd.err
	}
	if n > uint64(len(rd.b)) {
		return dst, corrupt("%d postings in %d bytes", n, len(rd.b))
	}
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		e := rd.uvarint("posting")
		if rd.err != nil {
			return dst, rd.err
		}
		d := e >> 1
		if i > 0 && d == 0 {
			return dst, corrupt("posting %d repeats doc %d", i, prev)
		}
		if d > MaxDocNum-prev {
			return dst, corrupt("posting %d overflows", i)
		}
		prev += d
		dst = append(dst, Posting{Doc: prev, Remove: e&1 != 0})
	}
	if len(rd.b) != 0 {
		return dst, corrupt("%d trailing bytes in posting list", len(rd.b))
	}
	return dst, nil
}

// PostingsHaveRemoval reports whether an encoded posting list holds a
// removal, checking it as DecodePostings does.
func PostingsHaveRemoval(v []byte) (bool, error) {
	var buf [16]Posting // NB: most lists hold a few postings: no allocation
	ps, err := DecodePostings(v, buf[:0])
	if err != nil {
		return false, err
	}
	for _, p := range ps {
		if p.Remove {
			return true, nil
		}
	}
	return false, nil
}
