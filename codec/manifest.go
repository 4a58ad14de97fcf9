package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// FormatVersion is the format of the indexes this build creates. A
// database written by a newer format is refused with ErrFormatTooNew;
// format 1 (doc records with 64-bit shingle sets) is read only to upgrade
// it. Formats 2 to 4 are read and written as they are, each with its own
// records: a build writes an index in the format it has.
const FormatVersion = SketchFormatVersion

// SumFingerprintFormatVersion is format 2's layout with the
// order-independent set fingerprint (SumFingerprint instead of
// SetFingerprint), so that a document's set need not be sorted where it
// is not stored. It is the oldest format that takes documents with an
// expiry.
const SumFingerprintFormatVersion = 3

// ExpiryFormatVersion is format 3 whose doc records may hold an expiry (a
// document put with a TTL: the flag 16 and the time after the
// fingerprint) and whose keyspace holds the expiry index ("x" keys). A
// format 3 index becomes format 4 at its first such write, so that a
// build that knows no expiry refuses it (ErrFormatTooNew) instead of
// reading those records as corrupt; an index never written with a TTL
// stays format 3.
const ExpiryFormatVersion = 4

// SketchFormatVersion is format 4 whose text mode doc records hold a
// sketch of their signature (the flag 32: SketchOf, 64 bytes), so that
// Pairs rules out most candidate pairs without deriving anything from
// their texts. Records without one (none in a new index; every record of
// an older format) are sketched from their text when Pairs needs it.
const SketchFormatVersion = 5

// MaxFormatVersion is the newest format this build reads and writes.
const MaxFormatVersion = SketchFormatVersion

// MinFormatVersion is the oldest format a database is opened in as it is;
// an older one is opened only to upgrade it.
const MinFormatVersion = 2

// FingerprintOf returns the fingerprint of a verification set as an index
// of the given format stores it: SetFingerprint in formats 1 and 2, of
// the sorted set; SumFingerprint from format 3, of the set in any order.
func FingerprintOf[T uint32 | uint64](format int, set []T) uint64 {
	if format >= 3 {
		return SumFingerprint(set)
	}
	return SetFingerprint(set)
}

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

// FormatTooNewError is the ErrFormatTooNew of a manifest (errors.Is): the
// database's format, and the newest this build reads.
type FormatTooNewError struct{ Version, Max int }

func (e *FormatTooNewError) Error() string {
	return fmt.Sprintf("%v: the database has format %d, this build reads up to %d", ErrFormatTooNew, e.Version, e.Max)
}

// Is makes errors.Is(err, ErrFormatTooNew) true.
func (e *FormatTooNewError) Is(target error) bool { return target == ErrFormatTooNew }

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
	Normalization string    `msgpack:"normalization"` // "fold", "none" or "nfkc"
	StopWords     StopWords `msgpack:"stop_words"`    // word shingles only
	Bands         int       `msgpack:"bands"`         // b
	Rows          int       `msgpack:"rows"`          // r
	Threshold     float64   `msgpack:"threshold"`     // default query threshold
	Recall        float64   `msgpack:"recall"`        // the recall target the banding was chosen for
	StoreText     bool      `msgpack:"store_text"`    // store document text by default
	Storage       string    `msgpack:"storage"`       // format 2: "text", "sets" or "none"
	// Instance names the index: random base32 given when it was made (a
	// copy shares it, an index built anew gets another), so that what
	// was derived from one index (a pairs file) is not taken for another's.
	// Empty in indexes made before it existed; no format depends on it.
	Instance string `msgpack:"instance,omitempty"`
	// Origin is, in a backup, the instance of the index it copies, and
	// OriginWritten and OriginDocs that index's counters at the instant
	// of the copy (db.Info's Written and Docs): until the backup is
	// written it is in that state, and what was derived from the original
	// in that state holds for it. A backup has an instance of its own, so
	// that the two, once written apart, are not taken for each other.
	// Empty in an index that is no backup; no format depends on them.
	Origin        string `msgpack:"origin,omitempty"`
	OriginWritten uint64 `msgpack:"origin_written,omitempty"`
	OriginDocs    uint64 `msgpack:"origin_docs,omitempty"`
	// OriginInstant says that OriginWritten and OriginDocs are the
	// original's at one instant (a Pebble index's backup; 0 for an empty
	// one), not absent (a Redis index's copy, of no one instant).
	OriginInstant bool `msgpack:"origin_instant,omitempty"`
	// UpgradeUncompacted says that an upgrade's records were ingested and
	// the records they replace not yet compacted away (the upgrade was
	// stopped then, or had no room to compact them): the next upgrade or
	// compaction of the whole index frees their space and clears it. No
	// format depends on it.
	UpgradeUncompacted bool `msgpack:"upgrade_uncompacted,omitempty"`
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
	if err := checkPlainMsgpack(v); err != nil {
		return nil, fmt.Errorf("%w: manifest: %w", ErrCorrupt, err)
	}
	if err := msgpack.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %w", ErrCorrupt, err)
	}
	switch {
	case m.FormatVersion > MaxFormatVersion:
		return nil, &FormatTooNewError{Version: m.FormatVersion, Max: MaxFormatVersion}
	case m.FormatVersion < 1:
		return nil, corrupt("manifest format version %d", m.FormatVersion)
	case m.FormatVersion >= 2 && m.Storage != StorageText && m.Storage != StorageSets && m.Storage != StorageNone:
		return nil, corrupt("manifest storage mode %q", m.Storage)
	}
	return &m, nil
}

// checkPlainMsgpack checks that v is exactly one msgpack value made of
// plain values (nil, booleans, numbers, strings, binaries, arrays and
// maps; no extension types) whose every declared length fits in the bytes
// that follow it.
//
// NB: msgpack's decoder allocates what a length declares before reading
// (up to 4 GiB for a bin32, a million entries for an array), and fuzzing
// the manifest with it lost workers under load (golang/go#56238: a run of
// over 10 s counts as a hang). After this check nothing it allocates can
// exceed a few times the record's size.
func checkPlainMsgpack(v []byte) error {
	pending := 1 // values still to read
	i := 0
	need := func(n uint64) error {
		if n > uint64(len(v)-i) {
			return fmt.Errorf("a length of %d at byte %d overruns the record (%d left)", n, i, len(v)-i)
		}
		return nil
	}
	length := func(size int) (uint64, error) {
		if err := need(uint64(size)); err != nil {
			return 0, err
		}
		var n uint64
		for _, c := range v[i : i+size] {
			n = n<<8 | uint64(c)
		}
		i += size
		return n, nil
	}
	for ; pending > 0; pending-- {
		if i >= len(v) {
			return errors.New("truncated")
		}
		c := v[i]
		i++
		var skip uint64    // payload bytes
		var entries uint64 // array or map entries (values each)
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			entries = 2 * uint64(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			entries = uint64(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, err = length(1)
		case c == 0xc5 || c == 0xda:
			skip, err = length(2)
		case c == 0xc6 || c == 0xdb:
			skip, err = length(4)
		case c == 0xca || c == 0xce || c == 0xd2:
			skip = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			skip = 8
		case c == 0xcc || c == 0xd0:
			skip = 1
		case c == 0xcd || c == 0xd1:
			skip = 2
		case c == 0xdc:
			entries, err = length(2)
		case c == 0xdd:
			entries, err = length(4)
		case c == 0xde:
			entries, err = length(2)
			entries *= 2
		case c == 0xdf:
			entries, err = length(4)
			entries *= 2
		default:
			return fmt.Errorf("msgpack code %#x at byte %d (extension types and 0xc1 are not allowed)", c, i-1)
		}
		if err != nil {
			return err
		}
		// NB: every entry takes at least one byte.
		if err := need(skip + entries); err != nil {
			return err
		}
		i += int(skip)
		pending += int(entries)
	}
	if i != len(v) {
		return fmt.Errorf("%d trailing bytes", len(v)-i)
	}
	return nil
}

// BackupStampFile is the name of the file, in a backup's directory, that
// gives the backup its own instance (BackupStamp) until an Open that may
// write folds it into the manifest record and removes it.
//
// NB: a file beside the store, not a write to the copy's manifest record:
// that write opened the copy writable, whose replay of the copied log
// flushes a table, and a failed write of Pebble's MANIFEST in that flush
// ended the process that served the index (a fault-injection review's
// FI-1: Pebble treats it as fatal on its own goroutine). Writing this
// file touches nothing of Pebble's.
const BackupStampFile = "lshdb-backup-stamp"

// backupStampMagic begins a stamp file, before its checksum.
const backupStampMagic = "lshdb-stamp1\n"

// BackupStamp is what a backup's copy is given to be an index of its own
// (the Manifest's Instance, Origin, OriginWritten and OriginDocs; its
// OriginInstant is true). Origin is empty in a backup of an index made
// before instances existed.
type BackupStamp struct {
	Instance      string `msgpack:"instance"`
	Origin        string `msgpack:"origin"`
	OriginWritten uint64 `msgpack:"origin_written"`
	OriginDocs    uint64 `msgpack:"origin_docs"`
	// For is the instance in the copy's manifest record when it was
	// stamped (Origin's, or, for a copy of a backup not yet written, the
	// instance that backup's record still holds): a stamp is taken only
	// by the manifest it was made for (For) or one it was folded into.
	For string `msgpack:"for"`
}

// Apply sets m's fields that s gives.
func (s *BackupStamp) Apply(m *Manifest) {
	m.Instance, m.Origin = s.Instance, s.Origin
	m.OriginWritten, m.OriginDocs, m.OriginInstant = s.OriginWritten, s.OriginDocs, true
}

// MadeFor reports whether s was made for the manifest m: m is the
// copy's record as it was stamped (one s was folded into is Applied).
func (s *BackupStamp) MadeFor(m *Manifest) bool { return m.Instance == s.For }

// Applied reports whether m has s's fields already (it was folded in).
func (s *BackupStamp) Applied(m *Manifest) bool {
	return m.Instance == s.Instance && m.Origin == s.Origin &&
		m.OriginWritten == s.OriginWritten && m.OriginDocs == s.OriginDocs && m.OriginInstant
}

// EncodeBackupStamp encodes s as a stamp file's bytes: a magic line, the
// xxhash64 of the rest (8 bytes, little-endian) and s in msgpack.
func EncodeBackupStamp(s *BackupStamp) ([]byte, error) {
	body, err := msgpack.Marshal(s)
	if err != nil {
		return nil, err
	}
	v := append([]byte(backupStampMagic), make([]byte, 8)...)
	binary.LittleEndian.PutUint64(v[len(backupStampMagic):], xxhash.Sum64(body))
	return append(v, body...), nil
}

// DecodeBackupStamp decodes a stamp file's bytes; bytes that are not one
// (torn, damaged or another file's) return ErrCorrupt.
func DecodeBackupStamp(v []byte) (*BackupStamp, error) {
	n := len(backupStampMagic)
	switch {
	case len(v) < n+8 || string(v[:n]) != backupStampMagic:
		return nil, corrupt("backup stamp: not a stamp file (%d bytes)", len(v))
	case binary.LittleEndian.Uint64(v[n:]) != xxhash.Sum64(v[n+8:]):
		return nil, corrupt("backup stamp: checksum mismatch (%d bytes)", len(v))
	}
	body := v[n+8:]
	if err := checkPlainMsgpack(body); err != nil {
		return nil, fmt.Errorf("%w: backup stamp: %w", ErrCorrupt, err)
	}
	var s BackupStamp
	if err := msgpack.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("%w: backup stamp: %w", ErrCorrupt, err)
	}
	if s.Instance == "" {
		return nil, corrupt("backup stamp: no instance")
	}
	return &s, nil
}
