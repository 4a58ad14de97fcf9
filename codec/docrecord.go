package codec

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
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
//	uvarint n | n × uint64 little-endian, strictly increasing
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
	// NB: one allocation at the final size: a record is ~10 KB for a
	// 1.2 KB text, and growing it by append copied it several times.
	dst = slices.Grow(dst, MaxDocRecordSize(r))
	dst = append(dst, docRecordVersion, flags)
	dst = binary.AppendUvarint(dst, uint64(len(r.ID)))
	dst = append(dst, r.ID...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Signature)))
	n := len(dst)
	dst = dst[:n+4*len(r.Signature)]
	for i, v := range r.Signature {
		binary.LittleEndian.PutUint32(dst[n+4*i:], v)
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

// MaxDocRecordSize bounds the length of r's encoding from above (it
// counts every varint at its longest), so a caller can hand
// AppendDocRecord a buffer it will not outgrow.
func MaxDocRecordSize(r *DocRecord) int {
	size := 2 + 3*binary.MaxVarintLen64 + len(r.ID) + 4*len(r.Signature) + 8*len(r.Set)
	if r.HasText {
		size += binary.MaxVarintLen64 + len(r.Text)
	}
	if r.Meta != nil {
		size += binary.MaxVarintLen64 + len(r.Meta)
	}
	return size
}

// AppendSet appends a sorted, de-duplicated set as a uvarint count and
// the values as uint64 little-endian.
//
// NB: not delta-varint. Shingle hashes are uniform 64-bit values, so the
// gap between neighbours in a set of n is about 2^64/n: 8 varint bytes for
// every n below 2^15, the same as raw, while raw decodes several times
// faster on the query path (measured in BenchmarkQuery).
func AppendSet(dst []byte, set []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	n := len(dst)
	dst = slices.Grow(dst, 8*len(set))[:n+8*len(set)]
	for i, x := range set {
		binary.LittleEndian.PutUint64(dst[n+8*i:], x)
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

// DocView is a doc record parsed in place: its fields alias the encoded
// bytes, and the signature and set are decoded only when asked for. The
// query path uses it to skip candidates by set size before decoding them.
type DocView struct {
	ID      []byte
	HasText bool
	Text    []byte
	Meta    []byte // nil when absent
	SetLen  int    // elements in the shingle set
	sig     []byte // k × uint32 LE
	set     []byte // SetLen × uint64 LE
}

// ParseDocView checks a doc record's structure (version, flags, every
// length against the bytes present) and returns a view of it. It does not
// check that the set is sorted; AppendSet does.
func ParseDocView(v []byte) (DocView, error) {
	var d DocView
	if len(v) < 2 {
		return d, corrupt("doc record of %d bytes", len(v))
	}
	if v[0] != docRecordVersion {
		return d, corrupt("doc record version %d", v[0])
	}
	flags := v[1]
	if flags&^(flagText|flagMeta) != 0 {
		return d, corrupt("doc record flags %#x", flags)
	}
	rd := reader{b: v[2:]}
	d.ID = rd.bytes(rd.uvarint("id length"), "id")
	k := rd.uvarint("signature length")
	if rd.err == nil && k > MaxSignature {
		return d, corrupt("signature of %d values", k)
	}
	d.sig = rd.bytes(k*4, "signature")
	n := rd.uvarint("set length")
	if rd.err == nil && n > uint64(len(rd.b))/8 {
		return d, corrupt("set of %d elements in %d bytes", n, len(rd.b))
	}
	d.SetLen = int(n)
	d.set = rd.bytes(n*8, "set")
	d.HasText = flags&flagText != 0
	if d.HasText {
		d.Text = rd.bytes(rd.uvarint("text length"), "text")
	}
	if flags&flagMeta != 0 {
		d.Meta = rd.bytes(rd.uvarint("meta length"), "meta")
	}
	if rd.err != nil {
		return d, rd.err
	}
	if len(rd.b) != 0 {
		return d, corrupt("%d trailing bytes in doc record", len(rd.b))
	}
	return d, nil
}

// SetFingerprint is a 64-bit hash of the shingle set's encoding: equal sets
// have equal fingerprints, and different sets collide with probability
// about 2^-64.
func (d *DocView) SetFingerprint() uint64 { return xxhash.Sum64(d.set) }

// SetBytes returns the shingle set's encoding: SetLen uint64s, little
// endian, strictly increasing if the record is sound. It aliases the
// record.
func (d *DocView) SetBytes() []byte { return d.set }

// AppendSignature appends the signature to dst.
func (d *DocView) AppendSignature(dst []uint32) []uint32 {
	for i := 0; i+4 <= len(d.sig); i += 4 {
		dst = append(dst, binary.LittleEndian.Uint32(d.sig[i:]))
	}
	return dst
}

// AppendSet appends the shingle set to dst, checking that it strictly
// increases.
func (d *DocView) AppendSet(dst []uint64) ([]uint64, error) {
	prev := uint64(0)
	for i := 0; i+8 <= len(d.set); i += 8 {
		x := binary.LittleEndian.Uint64(d.set[i:])
		if i > 0 && x <= prev {
			return dst, corrupt("set element %d is not above its predecessor", i/8)
		}
		prev = x
		dst = append(dst, x)
	}
	return dst, nil
}

// DecodeDocRecord decodes a doc record into r, reusing r's Signature and
// Set. Everything it sets is a copy, owned by the caller: v may be freed or
// reused afterwards (Pebble's iterator memory is, when the iterator moves
// or closes).
func DecodeDocRecord(v []byte, r *DocRecord) error {
	d, err := ParseDocView(v)
	if err != nil {
		return err
	}
	r.ID = string(d.ID)
	r.Signature = d.AppendSignature(r.Signature[:0])
	if r.Set, err = d.AppendSet(r.Set[:0]); err != nil {
		return err
	}
	r.HasText, r.Text, r.Meta = d.HasText, string(d.Text), bytes.Clone(d.Meta)
	return nil
}

// DecodeDocSet decodes only the shingle set of a doc record, appending it
// to dst.
func DecodeDocSet(v []byte, dst []uint64) ([]uint64, error) {
	d, err := ParseDocView(v)
	if err != nil {
		return dst, err
	}
	return d.AppendSet(dst)
}
