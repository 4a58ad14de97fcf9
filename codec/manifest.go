package codec

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// FormatVersion is the on-disk format this build writes. A database
// written by a newer format is refused with ErrFormatTooNew; format 1
// (doc records with 64-bit shingle sets) is read only to upgrade it.
const FormatVersion = 2

// Storage modes (format 2): what a doc record keeps for verification.
const (
	// StorageText keeps the text; verification re-shingles it.
	StorageText = "text"
	// StorageSets keeps the signature and the 32-bit shingle set.
	StorageSets = "sets"
	// StorageNone keeps the signature only: answers are estimates.
	StorageNone = "none"
)

// ErrFormatTooNew: the database was written by a newer lshdb.
var ErrFormatTooNew = errors.New("codec: format newer than this build")

// Manifest records every parameter that shapes hashes and bands. It is
// written once, when a database is created.
type Manifest struct {
	FormatVersion int       `msgpack:"format_version"`
	Scheme        string    `msgpack:"scheme"`        // "fss", "oph" or "classic"
	NumPerm       int       `msgpack:"num_perm"`      // signature values
	Seed          uint64    `msgpack:"seed"`          // signature seed
	ShingleKind   string    `msgpack:"shingle_kind"`  // "char" or "word"
	ShingleSize   int       `msgpack:"shingle_size"`  // k
	Bag           bool      `msgpack:"bag"`           // bag (multiset) shingles
	Normalization string    `msgpack:"normalization"` // "fold" or "none"
	StopWords     StopWords `msgpack:"stop_words"`    // word shingles only
	Bands         int       `msgpack:"bands"`         // b
	Rows          int       `msgpack:"rows"`          // r
	Threshold     float64   `msgpack:"threshold"`     // default query threshold
	Recall        float64   `msgpack:"recall"`        // the recall target the banding was chosen for
	StoreText     bool      `msgpack:"store_text"`    // store document text by default
	Storage       string    `msgpack:"storage"`       // format 2: "text", "sets" or "none"
}

// MaxStopWords bounds the stop-word list a manifest may hold. Decoding
// checks the list's declared length against it before allocating, so a
// corrupt manifest cannot make Open allocate more than a few megabytes.
const MaxStopWords = 1 << 16

// StopWords is the manifest's stop-word list. It is a []string that
// decodes with a bound (MaxStopWords, and no more entries than the record
// has bytes left) instead of msgpack's generic preallocation of up to a
// million strings for a declared length.
type StopWords []string

// DecodeMsgpack implements msgpack.CustomDecoder.
func (s *StopWords) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 0 { // nil
		*s = nil
		return nil
	}
	if n > MaxStopWords {
		return fmt.Errorf("stop word list of %d entries (at most %d)", n, MaxStopWords)
	}
	list := make([]string, 0, min(n, 64))
	for range n {
		w, err := d.DecodeString()
		if err != nil {
			return err
		}
		list = append(list, w)
	}
	*s = list
	return nil
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
		return nil, fmt.Errorf("%w: manifest: %w", ErrCorrupt, err)
	}
	switch {
	case m.FormatVersion > FormatVersion:
		return nil, fmt.Errorf("%w: the database has format %d, this build reads up to %d", ErrFormatTooNew, m.FormatVersion, FormatVersion)
	case m.FormatVersion < 1:
		return nil, corrupt("manifest format version %d", m.FormatVersion)
	case m.FormatVersion >= 2 && m.Storage != StorageText && m.Storage != StorageSets && m.Storage != StorageNone:
		return nil, corrupt("manifest storage mode %q", m.Storage)
	}
	return &m, nil
}
