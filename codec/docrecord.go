package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Doc record versions: the first byte of every doc record. Formats 2 and 3
// write only version 2 (they differ in the fingerprint, SetFP); version 1
// records are read to upgrade a format 1 index.
const (
	docRecordV1 = 1
	docRecordV2 = 2
)

// Flag bits, the second byte of a record. Version 1 knows text and meta
// only (it always holds a signature and a 64-bit set).
const (
	flagText    = 1 << iota // the text a user gave
	flagMeta                // opaque metadata
	flagSig                 // the signature (sets and none modes)
	flagSet32               // the 32-bit shingle set, Rice coded (sets mode)
	flagExpires             // an expiry time (a document put with a TTL)
	flagSketch              // a sketch of the signature (text mode, format 5)
)

// Limits that decoders enforce so that bad bytes cannot ask for huge
// allocations.
const (
	// MaxSignature is the most signature values a record may hold.
	MaxSignature = 1 << 16
	// SketchPlaces is the most signature values a sketch keeps.
	SketchPlaces = 128
)

// SketchBytes returns the length of the sketch of a signature of k
// values: 4 bits a value, for at most SketchPlaces values.
func SketchBytes(k int) int { return (min(k, SketchPlaces) + 1) / 2 }

// AppendSketch appends to dst the sketch of signature sig: the low 4 bits
// of each of its first min(len(sig), SketchPlaces) values, two to a byte,
// the first in the low half; an odd count leaves the last high half zero.
// Two signatures' values are equal with probability J, the Jaccard of
// their sets, so the sketches' places agree with probability J + (1-J)/16:
// at least J, which is what lets Pairs rule out, by their sketches alone,
// pairs that cannot reach a threshold.
func AppendSketch(dst []byte, sig []uint32) []byte {
	sig = sig[:min(len(sig), SketchPlaces)]
	for i := 0; i < len(sig); i += 2 {
		b := byte(sig[i] & 0xf)
		if i+1 < len(sig) {
			b |= byte(sig[i+1]&0xf) << 4
		}
		dst = append(dst, b)
	}
	return dst
}

// DocRecord is one stored document, in formats 2 and 3.
//
// What a record holds depends on the index's storage mode (fixed in the
// manifest): in text mode the text, from which verification re-derives
// the shingle set and the signature; in sets mode the signature and the
// 32-bit shingle set; in none mode the signature only. Every record holds
// the size and fingerprint of the set that verification compares, so
// that Pairs and the query's size filter need no set.
type DocRecord struct {
	ID        string
	SetLen    int      // elements of the verification set
	SetFP     uint64   // FingerprintOf the verification set
	Signature []uint32 // stored when non-nil
	Set32     []uint32 // stored when non-nil: sorted, distinct (Set32Of)
	HasText   bool
	Text      string
	Meta      []byte // opaque; nil when absent
	// Expires is when the document expires, in Unix nanoseconds; 0 for
	// never.
	Expires int64
	// Sketch is the signature's sketch (AppendSketch), stored when
	// non-nil (text mode from format 5), at most SketchPlaces/2 bytes.
	Sketch []byte
}

// AppendDocRecord appends the format 2 and 3 encoding of r:
//
//	version 2 (1 byte) | flags (1 byte: 1 text, 2 meta, 4 signature, 8 set32, 16 expiry, 32 sketch)
//	uvarint len(id) | id
//	uvarint set length | set fingerprint (uint64 little-endian)
//	[expiry: int64 little-endian, Unix nanoseconds]  (flag 16)
//	[uvarint k | k × uint32 little-endian]          signature
//	[uvarint len(coded) | AppendRiceSet(Set32)]     32-bit set
//	[uvarint len(sketch) | sketch]                  sketch (format 5)
//	[uvarint len(text) | text]
//	[uvarint len(meta) | meta]
//
// NB: the text is stored raw: the index compresses its blocks with zstd,
// which measured 0.26-0.39 bytes per text byte on the shared corpora
// against 0.51-0.63 for per-record zstd with a 64 KiB dictionary
// (internal/cmd/storagecost).
func AppendDocRecord(dst []byte, r *DocRecord) []byte {
	var flags byte
	if r.HasText {
		flags |= flagText
	}
	if r.Meta != nil {
		flags |= flagMeta
	}
	if r.Signature != nil {
		flags |= flagSig
	}
	if r.Set32 != nil {
		flags |= flagSet32
	}
	if r.Expires != 0 {
		flags |= flagExpires
	}
	if r.Sketch != nil {
		flags |= flagSketch
	}
	dst = slices.Grow(dst, MaxDocRecordSize(r))
	dst = append(dst, docRecordV2, flags)
	dst = binary.AppendUvarint(dst, uint64(len(r.ID)))
	dst = append(dst, r.ID...)
	dst = binary.AppendUvarint(dst, uint64(r.SetLen))
	dst = binary.LittleEndian.AppendUint64(dst, r.SetFP)
	if r.Expires != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Expires))
	}
	if r.Signature != nil {
		dst = appendSignature(dst, r.Signature)
	}
	if r.Set32 != nil {
		// NB: the coded length is not known before coding: reserve the
		// longest uvarint the bound allows and close the gap after.
		at := len(dst)
		dst = AppendRiceSet(dst, r.Set32)
		n := len(dst) - at
		var lb [binary.MaxVarintLen64]byte
		l := binary.PutUvarint(lb[:], uint64(n))
		dst = slices.Insert(dst, at, lb[:l]...)
	}
	if r.Sketch != nil {
		dst = binary.AppendUvarint(dst, uint64(len(r.Sketch)))
		dst = append(dst, r.Sketch...)
	}
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

func appendSignature(dst []byte, sig []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(sig)))
	n := len(dst)
	dst = slices.Grow(dst, 4*len(sig))[:n+4*len(sig)]
	for i, v := range sig {
		binary.LittleEndian.PutUint32(dst[n+4*i:], v)
	}
	return dst
}

// MaxDocRecordSize bounds the length of r's encoding from above (it
// counts every varint at its longest and the set at 5 bytes a value), so
// a caller can hand AppendDocRecord a buffer it will not outgrow.
func MaxDocRecordSize(r *DocRecord) int {
	size := 2 + 2*binary.MaxVarintLen64 + len(r.ID) + 8 + 8
	if r.Signature != nil {
		size += binary.MaxVarintLen64 + 4*len(r.Signature)
	}
	if r.Set32 != nil {
		size += 2*binary.MaxVarintLen64 + 1 + maxRiceBytes(r.Set32)
	}
	if r.Sketch != nil {
		size += binary.MaxVarintLen64 + len(r.Sketch)
	}
	if r.HasText {
		size += binary.MaxVarintLen64 + len(r.Text)
	}
	if r.Meta != nil {
		size += binary.MaxVarintLen64 + len(r.Meta)
	}
	return size
}

// Set32Of appends to dst the 32-bit set of a sorted, distinct 64-bit set:
// the high 32 bits of each value, without repeats. The input's order makes
// the output sorted with no sort.
func Set32Of(dst []uint32, set []uint64) []uint32 {
	for _, x := range set {
		h := uint32(x >> 32)
		if len(dst) == 0 || dst[len(dst)-1] != h {
			dst = append(dst, h)
		}
	}
	return dst
}

// Widen appends the values of a 32-bit set to dst as uint64s (still
// sorted and distinct), the form the Jaccard functions take.
func Widen(dst []uint64, set []uint32) []uint64 {
	for _, x := range set {
		dst = append(dst, uint64(x))
	}
	return dst
}

// SetFingerprint is a 64-bit hash of a set's values (as uint64
// little-endian bytes): equal sets have equal fingerprints, and different
// sets collide with probability about 2^-64. It is the xxhash of a format
// 1 record's set bytes, so an upgrade keeps it.
func SetFingerprint[T uint32 | uint64](set []T) uint64 {
	var d xxhash.Digest
	d.Reset()
	var buf [512]byte
	for len(set) > 0 {
		n := min(len(set), len(buf)/8)
		for i, x := range set[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], uint64(x))
		}
		d.Write(buf[:8*n])
		set = set[n:]
	}
	return d.Sum64()
}

// SumFingerprint is the fingerprint of a set from format 3: the sum (mod
// 2^64) of a 64-bit mix of each value, so it does not depend on the
// values' order and a set need not be sorted to get it. Equal sets have
// equal fingerprints; for sets of hashes, different sets collide with
// probability about 2^-64. The values must be distinct (a set).
func SumFingerprint[T uint32 | uint64](set []T) uint64 {
	var s uint64
	for _, x := range set {
		// NB: one 64x64→128-bit multiplication of the value plus an odd
		// constant, its halves folded (wyhash's mum), is enough for
		// values that are hashes already; the offset keeps 0 from mixing
		// to 0 ({0, a} and {a} would collide). The constants are part of
		// the storage format.
		hi, lo := bits.Mul64(uint64(x)+0x9e3779b97f4a7c15, 0xa0761d6478bd642f)
		s += hi ^ lo
	}
	return s
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
	Version int // 1 or 2
	ID      []byte
	HasText bool
	Text    []byte
	Meta    []byte // nil when absent
	SetLen  int    // elements in the verification set
	Expires int64  // Unix nanoseconds; 0: never
	setFP   uint64 // version 2
	sig     []byte // k × uint32 LE; nil when absent
	set64   []byte // version 1: SetLen × uint64 LE
	set32   []byte // version 2 sets mode: AppendRiceSet's coding
	sketch  []byte // version 2, format 5 text mode: AppendSketch's
}

// ParseDocView checks a doc record's structure (version, flags, every
// length against the bytes present) and returns a view of it. It does not
// decode the set; AppendSet checks it.
func ParseDocView(v []byte) (DocView, error) {
	var d DocView
	if len(v) < 2 {
		return d, corrupt("doc record of %d bytes", len(v))
	}
	flags := v[1]
	rd := reader{b: v[2:]}
	switch v[0] {
	case docRecordV1:
		if flags&^(flagText|flagMeta) != 0 {
			return d, corrupt("doc record flags %#x", flags)
		}
		d.Version = 1
		d.ID = rd.bytes(rd.uvarint("id length"), "id")
		d.sig = rd.signature()
		n := rd.uvarint("set length")
		if rd.err == nil && n > uint64(len(rd.b))/8 {
			return d, corrupt("set of %d elements in %d bytes", n, len(rd.b))
		}
		d.SetLen = int(n)
		d.set64 = rd.bytes(n*8, "set")
	case docRecordV2:
		if flags&^(flagText|flagMeta|flagSig|flagSet32|flagExpires|flagSketch) != 0 {
			return d, corrupt("doc record flags %#x", flags)
		}
		d.Version = 2
		d.ID = rd.bytes(rd.uvarint("id length"), "id")
		n := rd.uvarint("set length")
		if fp := rd.bytes(8, "set fingerprint"); fp != nil {
			d.setFP = binary.LittleEndian.Uint64(fp)
		}
		if flags&flagExpires != 0 {
			if x := rd.bytes(8, "expiry"); x != nil {
				d.Expires = int64(binary.LittleEndian.Uint64(x))
				if d.Expires <= 0 {
					return d, corrupt("expiry %d", d.Expires)
				}
			}
		}
		if flags&flagSig != 0 {
			d.sig = rd.signature()
		}
		if flags&flagSet32 != 0 {
			d.set32 = rd.bytes(rd.uvarint("set length in bytes"), "set")
			// Rice coding spends at least one bit a value.
			if rd.err == nil && n > 8*uint64(len(d.set32)) {
				return d, corrupt("set of %d elements in %d bytes", n, len(d.set32))
			}
		}
		if flags&flagSketch != 0 {
			k := rd.uvarint("sketch length")
			if rd.err == nil && k > SketchPlaces/2 {
				return d, corrupt("sketch of %d bytes", k)
			}
			d.sketch = rd.bytes(k, "sketch")
			if d.sketch == nil && rd.err == nil {
				d.sketch = []byte{}
			}
		}
		if rd.err == nil && n > 1<<40 {
			return d, corrupt("set of %d elements", n)
		}
		d.SetLen = int(n)
	default:
		return d, corrupt("doc record version %d", v[0])
	}
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

func (r *reader) signature() []byte {
	k := r.uvarint("signature length")
	if r.err == nil && k > MaxSignature {
		r.err = corrupt("signature of %d values", k)
	}
	return r.bytes(k*4, "signature")
}

// SetFingerprint returns the fingerprint of the verification set (see
// SetFingerprint).
func (d *DocView) SetFingerprint() uint64 {
	if d.Version == 1 {
		return xxhash.Sum64(d.set64)
	}
	return d.setFP
}

// SameContent reports whether the record o, of the same index, holds the
// same content as d: the same verification set (its size and
// fingerprint) and the same signature where either holds one (a
// signature put, in none mode, has no set). Their ids, metadata and
// expiries may differ.
func (d *DocView) SameContent(o *DocView) bool {
	return d.SetLen == o.SetLen && d.SetFingerprint() == o.SetFingerprint() && bytes.Equal(d.sig, o.sig)
}

// HasSignature reports whether the record holds its signature (format 1,
// and format 2 in sets and none modes).
func (d *DocView) HasSignature() bool { return d.sig != nil }

// Sketch returns the stored sketch (AppendSketch), aliasing the record;
// nil if the record holds none.
func (d *DocView) Sketch() []byte { return d.sketch }

// AppendSketch appends the record's sketch to dst: the stored one, or
// that of the stored signature (AppendSketch); ok is false, and nothing
// appended, when the record holds neither (a text mode record of a format
// before 5), whose sketch is its text's signature's.
func (d *DocView) AppendSketch(dst []byte) (_ []byte, ok bool) {
	if d.sketch != nil {
		return append(dst, d.sketch...), true
	}
	if d.sig == nil {
		return dst, false
	}
	n := min(len(d.sig)/4, SketchPlaces)
	for i := 0; i < n; i += 2 {
		b := d.sig[4*i] & 0xf // the value's low byte: little-endian
		if i+1 < n {
			b |= d.sig[4*(i+1)] << 4
		}
		dst = append(dst, b)
	}
	return dst, true
}

// HasSet reports whether the record holds a shingle set (format 1: the
// 64-bit set; format 2 in sets mode: the 32-bit set).
func (d *DocView) HasSet() bool { return d.Version == 1 || d.set32 != nil }

// AppendSignature appends the signature to dst (nothing if absent).
func (d *DocView) AppendSignature(dst []uint32) []uint32 {
	for i := 0; i+4 <= len(d.sig); i += 4 {
		dst = append(dst, binary.LittleEndian.Uint32(d.sig[i:]))
	}
	return dst
}

// AppendSet appends the stored shingle set to dst as uint64s (a 32-bit
// set widened), checking that it strictly increases and has SetLen
// values. A record without a set appends nothing.
func (d *DocView) AppendSet(dst []uint64) ([]uint64, error) {
	if d.set32 != nil {
		start := len(dst)
		var err error
		if dst, err = decodeRiceSet64(dst, d.set32); err != nil {
			return dst, err
		}
		if len(dst)-start != d.SetLen {
			return dst, corrupt("set of %d elements, the record says %d", len(dst)-start, d.SetLen)
		}
		return dst, nil
	}
	prev := uint64(0)
	for i := 0; i+8 <= len(d.set64); i += 8 {
		x := binary.LittleEndian.Uint64(d.set64[i:])
		if i > 0 && x <= prev {
			return dst, corrupt("set element %d is not above its predecessor", i/8)
		}
		prev = x
		dst = append(dst, x)
	}
	return dst, nil
}

// DecodeDocRecord decodes a doc record of either version into r, reusing
// r's Signature and Set32. Everything it sets is a copy, owned by the
// caller: v may be freed or reused afterwards (Pebble's iterator memory
// is, when the iterator moves or closes). A version 1 record's 64-bit set
// is not decoded (ParseDocView's AppendSet reads it).
func DecodeDocRecord(v []byte, r *DocRecord) error {
	d, err := ParseDocView(v)
	if err != nil {
		return err
	}
	r.ID = string(d.ID)
	r.SetLen, r.SetFP = d.SetLen, d.SetFingerprint()
	r.Signature = nil
	if d.sig != nil {
		r.Signature = d.AppendSignature(r.Signature[:0])
		if r.Signature == nil {
			r.Signature = []uint32{}
		}
	}
	r.Set32 = r.Set32[:0]
	if d.set32 != nil {
		if r.Set32, err = DecodeRiceSet(r.Set32, d.set32); err != nil {
			return err
		}
		if r.Set32 == nil {
			r.Set32 = []uint32{}
		}
		if len(r.Set32) != d.SetLen {
			return corrupt("set of %d elements, the record says %d", len(r.Set32), d.SetLen)
		}
	} else {
		r.Set32 = nil
	}
	r.HasText, r.Text, r.Meta = d.HasText, string(d.Text), bytes.Clone(d.Meta)
	r.Expires = d.Expires
	r.Sketch = nil
	if d.sketch != nil {
		r.Sketch = append([]byte{}, d.sketch...)
	}
	return nil
}

// AppendDocRecordV1 appends the format 1 encoding of a record (only tests
// and fixtures write it):
//
//	version 1 | flags (1 text, 2 meta) | uvarint len(id) | id
//	uvarint k | k × uint32 LE | uvarint n | n × uint64 LE, increasing
//	[uvarint len(text) | text] [uvarint len(meta) | meta]
func AppendDocRecordV1(dst []byte, id string, sig []uint32, set []uint64, text *string, meta []byte) []byte {
	var flags byte
	if text != nil {
		flags |= flagText
	}
	if meta != nil {
		flags |= flagMeta
	}
	dst = append(dst, docRecordV1, flags)
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	dst = append(dst, id...)
	dst = appendSignature(dst, sig)
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	for _, x := range set {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	if text != nil {
		dst = binary.AppendUvarint(dst, uint64(len(*text)))
		dst = append(dst, *text...)
	}
	if meta != nil {
		dst = binary.AppendUvarint(dst, uint64(len(meta)))
		dst = append(dst, meta...)
	}
	return dst
}

// SetExpiry returns doc record v (format 2 and 3) with its expiry set to
// expires (Unix nanoseconds, > 0), appended to dst: the record as
// AppendDocRecord would have encoded it with DocRecord.Expires. It
// splices the bytes in, without decoding the rest.
func SetExpiry(dst, v []byte, expires int64) ([]byte, error) {
	if expires <= 0 {
		return nil, fmt.Errorf("codec: expiry %d", expires)
	}
	if len(v) < 2 || v[0] != docRecordV2 {
		return nil, corrupt("not a version 2 doc record")
	}
	rd := reader{b: v[2:]}
	rd.bytes(rd.uvarint("id length"), "id")
	rd.uvarint("set length")
	rd.bytes(8, "set fingerprint")
	if rd.err != nil {
		return nil, rd.err
	}
	at := len(v) - len(rd.b) // the end of the fingerprint
	old := v[1]&flagExpires != 0
	dst = append(dst, v[0], v[1]|flagExpires)
	dst = append(dst, v[2:at]...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(expires))
	if old {
		at += 8
		if at > len(v) {
			return nil, corrupt("expiry past the record's end")
		}
	}
	return append(dst, v[at:]...), nil
}
