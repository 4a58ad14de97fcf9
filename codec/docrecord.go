package codec

import (
	"encoding/binary"
	"math"
)

// docRecordVersion is the first byte of every doc record.
const docRecordVersion = 1

const (
	flagText = 1 << iota
	flagMeta
)

// Limits that decoders enforce so that bad bytes cannot ask for huge
// allocations.
const (
	// MaxSignature is the most signature values a record may hold.
	MaxSignature = 1 << 16
)

// DocRecord is one stored document.
type DocRecord struct {
	ID        string
	Signature []uint32
	Set       []uint64 // sorted, de-duplicated shingle set
	HasText   bool
	Text      string
	Meta      []byte // opaque; nil when absent
}

// AppendDocRecord appends the encoding of r:
//
//	version (1 byte) | flags (1 byte: 1 = text, 2 = meta)
//	uvarint len(id) | id
//	uvarint k | k × uint32 little-endian
//	uvarint n | n × uvarint delta (first value absolute, then differences ≥ 1)
//	[uvarint len(text) | text] [uvarint len(meta) | meta]
//
// r.Set MUST be sorted and de-duplicated.
func AppendDocRecord(dst []byte, r *DocRecord) []byte {
	var flags byte
	if r.HasText {
		flags |= flagText
	}
	if r.Meta != nil {
		flags |= flagMeta
	}
	dst = append(dst, docRecordVersion, flags)
	dst = binary.AppendUvarint(dst, uint64(len(r.ID)))
	dst = append(dst, r.ID...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Signature)))
	for _, v := range r.Signature {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	dst = AppendSet(dst, r.Set)
	if r.HasText {
		dst = binary.AppendUvarint(dst, uint64(len(r.Text)))
		dst = append(dst, r.Text...)
	}
	if r.Meta != nil {
		dst = binary.AppendUvarint(dst, uint64(len(r.Meta)))
		dst = append(dst, r.Meta...)
	}
	return dst
}

// AppendSet appends a sorted, de-duplicated set as a uvarint count and
// uvarint deltas.
func AppendSet(dst []byte, set []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	prev := uint64(0)
	for _, x := range set {
		dst = binary.AppendUvarint(dst, x-prev)
		prev = x
	}
	return dst
}

// reader decodes with bounds checks; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = corrupt("bad varint for %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = corrupt("%s of %d bytes overruns the record (%d left)", what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// DecodeDocRecord decodes a doc record into r, reusing r's slices. The
// strings it sets are copies; Meta aliases v.
func DecodeDocRecord(v []byte, r *DocRecord) error {
	if len(v) < 2 {
		return corrupt("doc record of %d bytes", len(v))
	}
	if v[0] != docRecordVersion {
		return corrupt("doc record version %d", v[0])
	}
	flags := v[1]
	if flags&^(flagText|flagMeta) != 0 {
		return corrupt("doc record flags %#x", flags)
	}
	rd := reader{b: v[2:]}
	r.ID = string(rd.bytes(rd.uvarint("id length"), "id"))
	k := rd.uvarint("signature length")
	if rd.err == nil && (k > MaxSignature || k*4 > uint64(len(rd.b))) {
		return corrupt("signature of %d values", k)
	}
	sig := rd.bytes(k*4, "signature")
	if rd.err != nil {
		return rd.err
	}
	r.Signature = r.Signature[:0]
	for i := uint64(0); i < k; i++ {
		r.Signature = append(r.Signature, binary.LittleEndian.Uint32(sig[4*i:]))
	}
	var err error
	if r.Set, rd.b, err = decodeSet(rd.b, r.Set[:0]); err != nil {
		return err
	}
	r.HasText, r.Text, r.Meta = flags&flagText != 0, "", nil
	if r.HasText {
		r.Text = string(rd.bytes(rd.uvarint("text length"), "text"))
	}
	if flags&flagMeta != 0 {
		r.Meta = rd.bytes(rd.uvarint("meta length"), "meta")
	}
	if rd.err != nil {
		return rd.err
	}
	if len(rd.b) != 0 {
		return corrupt("%d trailing bytes in doc record", len(rd.b))
	}
	return nil
}

// DecodeDocSet decodes only the shingle set of a doc record, appending it
// to dst: the query path's verification needs nothing else.
func DecodeDocSet(v []byte, dst []uint64) ([]uint64, error) {
	if len(v) < 2 || v[0] != docRecordVersion {
		return dst, corrupt("doc record header")
	}
	rd := reader{b: v[2:]}
	rd.bytes(rd.uvarint("id length"), "id")
	k := rd.uvarint("signature length")
	if rd.err == nil && k > MaxSignature {
		return dst, corrupt("signature of %d values", k)
	}
	rd.bytes(k*4, "signature")
	if rd.err != nil {
		return dst, rd.err
	}
	set, _, err := decodeSet(rd.b, dst)
	return set, err
}

// decodeSet decodes a count and deltas, checking that the values strictly
// increase without overflow. It returns the rest of b.
func decodeSet(b []byte, dst []uint64) ([]uint64, []byte, error) {
	rd := reader{b: b}
	n := rd.uvarint("set length")
	if rd.err != nil {
		return dst, b, rd.err
	}
	if n > uint64(len(rd.b)) { // every element takes at least one byte
		return dst, b, corrupt("set of %d elements in %d bytes", n, len(rd.b))
	}
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		d := rd.uvarint("set element")
		if rd.err != nil {
			return dst, b, rd.err
		}
		if i > 0 && d == 0 {
			return dst, b, corrupt("set element %d repeats its predecessor", i)
		}
		if d > math.MaxUint64-prev {
			return dst, b, corrupt("set element %d overflows", i)
		}
		prev += d
		dst = append(dst, prev)
	}
	return dst, rd.b, nil
}
