package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Key prefixes. Each kind of record lives under its own one-byte prefix.
const (
	PrefixManifest = 'm'
	PrefixCounters = 'n'
	PrefixDoc      = 'd'
	PrefixID       = 'i'
	PrefixPosting  = 'p'
	PrefixExpiry   = 'x'
)

// ErrCorrupt is wrapped by every decoding error: the bytes are not a valid
// record of the expected kind.
var ErrCorrupt = errors.New("codec: corrupt record")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// ManifestKey and CountersKey are the keys of the two singleton records.
var (
	ManifestKey = []byte{PrefixManifest}
	CountersKey = []byte{PrefixCounters}
)

// DocKeyLen is the length of a doc record's key.
const DocKeyLen = 9

// AppendDocKey appends the key of doc number n.
func AppendDocKey(dst []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, PrefixDoc), n)
}

// ParseDocKey returns the doc number of a doc record key.
func ParseDocKey(k []byte) (uint64, error) {
	if len(k) != DocKeyLen || k[0] != PrefixDoc {
		return 0, corrupt("doc key %x", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// DocPrefix bounds the doc records: [DocPrefix, DocPrefixEnd).
var (
	DocPrefix    = []byte{PrefixDoc}
	DocPrefixEnd = []byte{PrefixDoc + 1}
)

// AppendIDKey appends the key of external id.
func AppendIDKey(dst []byte, id string) []byte { return append(append(dst, PrefixID), id...) }

// IDPrefix bounds the id map: [IDPrefix, IDPrefixEnd).
var (
	IDPrefix    = []byte{PrefixID}
	IDPrefixEnd = []byte{PrefixID + 1}
)

// ParseIDKey returns the external id of an id-map key.
func ParseIDKey(k []byte) (string, error) {
	if len(k) < 2 || k[0] != PrefixID {
		return "", corrupt("id key %x", k)
	}
	return string(k[1:]), nil
}

// EncodeDocNum is the value of an id-map record.
func EncodeDocNum(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// DecodeDocNum decodes an id-map value.
func DecodeDocNum(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, corrupt("doc number of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// PostingKeyLen is the length of a posting-list key: prefix, band
// (uint16 big-endian), bucket (uint32 big-endian).
//
// NB: format 2 keeps 32 bits of the bucket hash (format 1 kept 64: see
// PostingKeyLenV1). Two bands' values that differ but share 32 bits of
// hash only add a candidate, which verification drops: with a million
// documents about a hundred such pairs a band. The 4 bytes were 6-7% of
// a text index of short documents.
const PostingKeyLen = 7

// PostingKeyLenV1 is the length of a format 1 posting-list key (64-bit
// bucket), which an upgrade reads.
const PostingKeyLenV1 = 11

// BucketOf is the bucket a band key falls in: the high 32 bits of the
// band's hash (bands.Key).
func BucketOf(bandKey uint64) uint64 { return bandKey >> 32 }

// MaxBands is the largest band number a key can hold, plus one.
const MaxBands = 1 << 16

// AppendPostingKey appends the key of the posting list of (band, bucket);
// bucket is a BucketOf value (below 2^32).
func AppendPostingKey(dst []byte, band int, bucket uint64) []byte {
	dst = binary.BigEndian.AppendUint16(append(dst, PrefixPosting), uint16(band))
	return binary.BigEndian.AppendUint32(dst, uint32(bucket))
}

// ParsePostingKey returns the band and bucket of a posting-list key.
func ParsePostingKey(k []byte) (band int, bucket uint64, err error) {
	if len(k) != PostingKeyLen || k[0] != PrefixPosting {
		return 0, 0, corrupt("posting key %x", k)
	}
	return int(binary.BigEndian.Uint16(k[1:])), uint64(binary.BigEndian.Uint32(k[3:])), nil
}

// PostingKeyBand returns the band of a posting-list key of any format (the
// band follows the prefix in both), without checking the rest of the key:
// for a scan that counts bands. ok is false for a key too short.
func PostingKeyBand(k []byte) (band int, ok bool) {
	if len(k) < 3 || k[0] != PrefixPosting {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(k[1:])), true
}

// ParsePostingKeyV1 returns the band and the 64-bit bucket of a format 1
// posting-list key.
func ParsePostingKeyV1(k []byte) (band int, bucket uint64, err error) {
	if len(k) != PostingKeyLenV1 || k[0] != PrefixPosting {
		return 0, 0, corrupt("format 1 posting key %x", k)
	}
	return int(binary.BigEndian.Uint16(k[1:])), binary.BigEndian.Uint64(k[3:]), nil
}

// PostingPrefix bounds the posting lists: [PostingPrefix, PostingPrefixEnd).
var (
	PostingPrefix    = []byte{PrefixPosting}
	PostingPrefixEnd = []byte{PrefixPosting + 1}
)

// AppendBandPrefix appends the prefix of one band's posting lists.
func AppendBandPrefix(dst []byte, band int) []byte {
	return binary.BigEndian.AppendUint16(append(dst, PrefixPosting), uint16(band))
}

// Counters is the record of the database's counters.
type Counters struct {
	NextDoc uint64 // the next doc number to hand out; numbers are never reused
	Live    uint64 // documents stored
}

// EncodeCounters encodes c (16 bytes, big-endian).
func EncodeCounters(c Counters) []byte {
	b := binary.BigEndian.AppendUint64(nil, c.NextDoc)
	return binary.BigEndian.AppendUint64(b, c.Live)
}

// DecodeCounters decodes a counters record.
func DecodeCounters(v []byte) (Counters, error) {
	if len(v) != 16 {
		return Counters{}, corrupt("counters of %d bytes", len(v))
	}
	return Counters{NextDoc: binary.BigEndian.Uint64(v), Live: binary.BigEndian.Uint64(v[8:])}, nil
}

// ExpiryKeyLen is the length of an expiry-index key.
const ExpiryKeyLen = 17

// AppendExpiryKey appends the expiry-index key of doc number n, which
// expires at expires (Unix nanoseconds, > 0): the keys sort by time, so
// that a sweep reads the due ones from the front. The value is empty.
func AppendExpiryKey(dst []byte, expires int64, n uint64) []byte {
	dst = binary.BigEndian.AppendUint64(append(dst, PrefixExpiry), uint64(expires))
	return binary.BigEndian.AppendUint64(dst, n)
}

// ParseExpiryKey returns the expiry time and doc number of an
// expiry-index key.
func ParseExpiryKey(k []byte) (expires int64, n uint64, err error) {
	if len(k) != ExpiryKeyLen || k[0] != PrefixExpiry || k[1]&0x80 != 0 {
		return 0, 0, corrupt("expiry key %x", k)
	}
	return int64(binary.BigEndian.Uint64(k[1:])), binary.BigEndian.Uint64(k[9:]), nil
}

// ExpiryPrefix bounds the expiry index: [ExpiryPrefix, ExpiryPrefixEnd).
var (
	ExpiryPrefix    = []byte{PrefixExpiry}
	ExpiryPrefixEnd = []byte{PrefixExpiry + 1}
)
