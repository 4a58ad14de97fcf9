package codec

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// FormatVersion is the on-disk format this build writes and reads. A
// database written by a newer format is refused with ErrFormatTooNew.
const FormatVersion = 1

// ErrFormatTooNew: the database was written by a newer lshdb.
var ErrFormatTooNew = errors.New("codec: format newer than this build")

// Manifest records every parameter that shapes hashes and bands. It is
// written once, when a database is created.
type Manifest struct {
	FormatVersion int      `msgpack:"format_version"`
	Scheme        string   `msgpack:"scheme"`        // "oph" or "classic"
	NumPerm       int      `msgpack:"num_perm"`      // signature values
	Seed          uint64   `msgpack:"seed"`          // signature seed
	ShingleKind   string   `msgpack:"shingle_kind"`  // "char" or "word"
	ShingleSize   int      `msgpack:"shingle_size"`  // k
	Bag           bool     `msgpack:"bag"`           // bag (multiset) shingles
	Normalization string   `msgpack:"normalization"` // "fold" or "none"
	StopWords     []string `msgpack:"stop_words"`    // word shingles only
	Bands         int      `msgpack:"bands"`         // b
	Rows          int      `msgpack:"rows"`          // r
	Threshold     float64  `msgpack:"threshold"`     // default query threshold
	Recall        float64  `msgpack:"recall"`        // the recall target the banding was chosen for
	StoreText     bool     `msgpack:"store_text"`    // store document text by default
}

// EncodeManifest encodes m with msgpack.
func EncodeManifest(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeManifest decodes a manifest record. A record of a newer format
// version returns ErrFormatTooNew (with the version); bytes that are not a
// manifest return ErrCorrupt.
func DecodeManifest(v []byte) (*Manifest, error) {
	var m Manifest
	if err := msgpack.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	switch {
	case m.FormatVersion > FormatVersion:
		return nil, fmt.Errorf("%w: the database has format %d, this build reads up to %d", ErrFormatTooNew, m.FormatVersion, FormatVersion)
	case m.FormatVersion < 1:
		return nil, corrupt("manifest format version %d", m.FormatVersion)
	}
	return &m, nil
}
