package db

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
)

// Sentinel errors. Every error the package returns for one of these
// conditions wraps the sentinel: test with errors.Is.
var (
	// ErrNotFound is returned when no document has the id asked for.
	ErrNotFound = errors.New("lshdb: document not found")
	// ErrLocked is returned by Open when another process (or another DB in
	// this process) has the directory index open (an index on Redis takes
	// no such lock).
	ErrLocked = errors.New("lshdb: database is locked")
	// ErrParamsMismatch is returned by Open when an option differs from the
	// value stored when the database was created. The error is a
	// *MismatchError naming the field.
	ErrParamsMismatch = errors.New("lshdb: parameters differ from the database's")
	// ErrFormatTooNew is returned by Open when the database was written by
	// a newer lshdb.
	ErrFormatTooNew = errors.New("lshdb: database format is newer than this build")
	// ErrFormat is returned by Open when the database was written in an
	// older format, which this build does not read: Upgrade (lshdb
	// upgrade) rewrites it in place. A write with a TTL to a format 2 index
	// (which this build reads) returns it too: Upgrade mends a text index;
	// the error says how to rebuild a sets or none index.
	ErrFormat = errors.New("lshdb: database format is older than this build reads")
	// ErrCorrupt is returned when stored bytes are damaged (Pebble's
	// corruption errors and lshdb's own decoding errors).
	ErrCorrupt = errors.New("lshdb: database is corrupt")
	// ErrEmptyDocument is returned when a text has no shingles (it is empty
	// or white space, or every word is a stop word).
	ErrEmptyDocument = errors.New("lshdb: document has no shingles")
	// ErrDocTooLarge is returned when a text (with metadata) exceeds
	// Options.MaxDocBytes.
	ErrDocTooLarge = errors.New("lshdb: document too large")
	// ErrInvalidID is returned when an id is empty, longer than
	// MaxIDBytes, or not UTF-8.
	ErrInvalidID = errors.New("lshdb: invalid document id")
	// ErrClosed is returned by every method that reads or writes the
	// store called after Close, and ends an iteration or a long call that
	// Close interrupted. Those that answer from the handle alone (Params,
	// Dir, MaxDocBytes, Instance, Created, Validate) still answer.
	ErrClosed = errors.New("lshdb: database is closed")
	// ErrInvalidOptions is returned when an option or query option is out
	// of range.
	ErrInvalidOptions = errors.New("lshdb: invalid options")
	// ErrNotIndex is returned by Open when the path is a file, or a
	// directory that holds something other than an lshdb database.
	ErrNotIndex = errors.New("lshdb: not an lshdb database")
	// ErrNotExist is returned by Open when the database does not exist and
	// Options.MustExist (or ReadOnly) forbids creating it; and by the
	// writes, repairs and sweeps of a handle whose Redis index was found
	// gone since it opened it (dropped, or lost by a Redis restarted
	// without its data).
	ErrNotExist = errors.New("lshdb: database does not exist")
	// ErrReadOnly is returned by a write to a database opened read-only.
	ErrReadOnly = errors.New("lshdb: database is open read-only")
	// ErrStorageMode is returned when a write gives a document in a form
	// the index's storage mode (Options.Storage) cannot keep: a set
	// (Doc.Set, PutSet) for a text index, which verifies from stored text,
	// or a signature alone (Doc.Signature, PutSignature) for a text or sets
	// index, which verify every answer exactly. Nothing is written.
	ErrStorageMode = errors.New("lshdb: the index's storage mode cannot keep this document")
	// ErrInvalidSignature is returned when a signature given as input
	// (PutSignature, QuerySignature, Doc.Signature) does not have the
	// index's NumPerm values.
	ErrInvalidSignature = errors.New("lshdb: signature does not fit the index")
	// ErrInvalidDoc is returned when a Doc gives more than one of Text,
	// Set and Signature, or a Set holds a hash outside the scheme's range
	// (datasketch's hashes are 32-bit).
	ErrInvalidDoc = errors.New("lshdb: invalid document")
	// ErrDiskFull is returned by a write when the filesystem holding the
	// database has less than Options.DiskReserve free, and by a writable
	// Open below 8 MiB plus two memtables (or DiskReserve if less).
	// Nothing of the refused write is stored (but for the write in which
	// a store stopped, its write-ahead log write failed with the reserve
	// off: reads of that handle may see it, the next open may or may not
	// find it, and every later write is refused); reads go on working, but
	// for a Pairs or Clusters run whose spilled files would take the
	// reserve (a read-only handle's too), which ends with it and removes
	// them. On a Redis index it is a write that Redis refused at its
	// maxmemory (noeviction), with ErrBackend: a delete's too, so that
	// memory is freed by raising maxmemory or by Drop of an index.
	ErrDiskFull = errors.New("lshdb: disk full")
	// ErrTooManyDeletes: a load that deletes the documents absent from it
	// (LoadOptions.DeleteAbsent) would delete more than its MaxDeleted;
	// nothing was stored.
	ErrTooManyDeletes = errors.New("lshdb: the load would delete too many documents")
	// ErrTooFewDocuments: a load would store fewer documents than its
	// MinStored (LoadOptions); nothing was stored.
	ErrTooFewDocuments = errors.New("lshdb: the load would store too few documents")
	// ErrStopped: the store stopped at a write Pebble could not finish (a
	// write-ahead log's or its manifest's, failed by an I/O error or a
	// full disk, which then also matches ErrDiskFull): the write that
	// failed and every later one are refused with it, reads go on, and
	// Close leaves the store as it is. The writes acknowledged before are
	// kept: close the handle and open the index again in a new process
	// (Pebble's lock on the directory stays held in this one). Nothing of
	// the stored data is damaged by it (ErrCorrupt says that).
	ErrStopped = errors.New("lshdb: the store stopped at a failed write")
)

// A DocError is the error of one document of a call given several
// (PutBatch, an invalid id among HasIDs's ids, an invalid or missing id
// among DeleteIDs's, and Load's documents; a refused document of
// PutIfNewBatch is its IfNewResult.Err): Index is its position among the
// call's documents, from 0, and ID its id. A call of PutBatch, HasIDs or
// DeleteIDs given one document or id returns its error bare, not in a
// DocError (errors.Is matches it either way; the position says nothing
// there), and Load names the document even when it reads one. It wraps the
// document's own error: test that with errors.Is (ErrEmptyDocument,
// ErrInvalidID, …), and find the document with errors.As. Through
// db/client the same: the server sends the position, and the client's
// DocError wraps its *client.Error.
type DocError struct {
	Index int
	ID    string
	Err   error
}

func (e *DocError) Error() string {
	msg := "no error"
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "lshdb: ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lshdb: document %d", e.Index)
	// NB: not when the document's own error names it already ("document
	// has no shingles: \"b\"").
	// An id too long to store is shown cut (showID).
	if e.ID == "" || !strings.Contains(msg, showID(e.ID)) {
		fmt.Fprintf(&b, " (id %s)", showID(e.ID))
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

func (e *DocError) Unwrap() error { return e.Err }

// A QueryError is the error of one query of QueryMany: an input that is
// invalid (ErrInvalidDoc, ErrInvalidSignature, …), an id that is not
// stored (ErrNotFound), or an error met while answering it. Index is its
// position among the call's queries, from 0; it wraps the query's own
// error (errors.Is, errors.As). Through db/client the same.
type QueryError struct {
	Index int
	Err   error
}

func (e *QueryError) Error() string {
	msg := "no error"
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "lshdb: ")
	}
	return fmt.Sprintf("lshdb: query %d: %s", e.Index, msg)
}

func (e *QueryError) Unwrap() error { return e.Err }

// idError names the document whose error err is, after err's sentinel:
// "lshdb: invalid document: "l": …". NB: it was "%q: %w", which put
// the sentinel's own "lshdb: " inside ("lshdb: document 0: "l": lshdb:
// invalid document: …").
type idError struct {
	id  string
	err error
}

func (e *idError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "lshdb: ")
	if head, tail, ok := strings.Cut(msg, ": "); ok {
		return "lshdb: " + head + ": " + showID(e.id) + ": " + tail
	}
	return "lshdb: " + msg + ": " + showID(e.id)
}

func (e *idError) Unwrap() error { return e.err }

// maxShownID is how much of an id an error message shows: an id may be
// up to MaxIDBytes (4 KiB), and a service logs the errors of its
// clients' requests.
const maxShownID = 64

// showID is id as an error message shows it: quoted, and past maxShownID
// bytes cut (at a character's start) and followed by its length. NB: a
// missing id of 4 KiB was quoted whole, and an invalid one too.
func showID(id string) string {
	if len(id) <= maxShownID {
		return strconv.Quote(id)
	}
	cut := maxShownID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(id[:cut]), len(id))
}

// MismatchError reports an option that differs from the stored parameter.
// It matches ErrParamsMismatch with errors.Is.
type MismatchError struct {
	Field     string
	Stored    any
	Requested any
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("lshdb: parameters differ from the database's: %s is %v in the database, %v was requested", e.Field, e.Stored, e.Requested)
}

// Is makes errors.Is(err, ErrParamsMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrParamsMismatch }

// classify wraps err with the matching sentinel: Pebble's corruption and
// lshdb's decoding errors become ErrCorrupt, a newer format ErrFormatTooNew,
// a full disk (ENOSPC) ErrDiskFull.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrFormatTooNew) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrDiskFull) || errors.Is(err, ErrStopped):
		return err // NB: classified already
	case errors.Is(err, codec.ErrFormatTooNew):
		if fe := (*codec.FormatTooNewError)(nil); errors.As(err, &fe) {
			return &formatTooNewError{fe}
		}
		return fmt.Errorf("%w: %w", ErrFormatTooNew, err)
	case errors.Is(err, codec.ErrCorrupt) || pebble.IsCorruptionError(err):
		return fmt.Errorf("%w: %w", ErrCorrupt, firstLine{unprefixed{err}})
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: %w", ErrDiskFull, unprefixed{err})
	}
	return err
}

// formatTooNewError is ErrFormatTooNew (and codec's) in words that say
// what to do. NB: it said the same twice and no more ("database format is
// newer than this build: codec: format newer than this build: the
// database has format 6, this build reads up to 5": a compatibility
// review, C4).
type formatTooNewError struct{ fe *codec.FormatTooNewError }

func (e *formatTooNewError) Error() string {
	return fmt.Sprintf("%v: the index has format %d, and this build reads up to %d: open it with an lshdb that reads format %d (lshdb version says which formats a build reads)", ErrFormatTooNew, e.fe.Version, e.fe.Max, e.fe.Version)
}
func (e *formatTooNewError) Unwrap() []error { return []error{ErrFormatTooNew, e.fe} }

// unprefixed is an error said without its leading "lshdb: ", for a
// sentinel's text before it ("lshdb: disk full: lshdb: backup to ..."
// said the prefix twice: an embedder's review).
type unprefixed struct{ err error }

func (e unprefixed) Error() string {
	msg, _ := strings.CutPrefix(e.err.Error(), "lshdb: ")
	return msg
}

func (e unprefixed) Unwrap() error { return e.err }

// errRepairable marks (unsaid) an ErrCorrupt of damage that Repair mends:
// a record, posting list or id that disagrees with the records.
var errRepairable = errors.New("repairable")

// corruptRepairable is an ErrCorrupt that Repair mends (Repairable).
func corruptRepairable(format string, args ...any) error {
	return fmt.Errorf("%w: %s%w", ErrCorrupt, fmt.Sprintf(format, args...), unsaid{errRepairable})
}

// errUnrepairable marks (unsaid) an ErrCorrupt of lshdb's own records
// that Repair cannot reach: the manifest or the counters record that Open
// reads does not decode (Repair needs the index open). They were taken
// for a record's damage, and the advice to run check --repair came back
// from check --repair itself (a review).
var errUnrepairable = errors.New("unrepairable")

// errAdvised marks (unsaid) an ErrCorrupt whose message names its own
// remedy (Advised).
var errAdvised = errors.New("advised")

// Advised reports whether err's message names what mends it, so that a
// caller adds no advice of its own: a backup's damaged stamp (remove the
// file, which holds no document), which is neither Repairable nor a
// reason to restore a backup.
func Advised(err error) bool { return errors.Is(err, errAdvised) }

// Repairable reports whether err (ErrCorrupt) is damage that Repair
// mends from the records: a record, posting list or id of lshdb's that
// does not decode or disagrees with the records. Damage Pebble reports
// (a block whose checksum fails, a manifest or table missing) and a store
// that does not open are not: restore a backup, or build the index again.
func Repairable(err error) bool {
	if !errors.Is(err, ErrCorrupt) || pebble.IsCorruptionError(err) || errors.Is(err, errUnrepairable) || errors.Is(err, errAdvised) {
		return false
	}
	return errors.Is(err, errRepairable) || errors.Is(err, codec.ErrCorrupt)
}

// isLockError reports whether err from taking the directory lock means
// someone else holds it: EAGAIN or EACCES from fcntl for another process,
// Pebble's in-process check for this one. NB: Pebble v2.1.7's in-process
// error is unexported and matched by its text (TestErrLocked covers it:
// recheck on a Pebble upgrade).
//
// NB: EACCES is also what opening the lock file returns without write
// permission (a read-only copy, another user's index): that error comes
// as an *fs.PathError from the open, fcntl's as a bare errno, and it is
// no lock held by anyone.
func isLockError(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		errors.Is(err, syscall.EWOULDBLOCK) || err.Error() == "lock held by current process"
}

// firstLine is an error whose message is the first line of its cause's,
// which it wraps. NB: Pebble's corruption errors carry their details on
// further lines (a "<corruption detail carrier>" and the message again),
// which a command's one-line error would show as escaped line ends.
type firstLine struct{ err error }

func (e firstLine) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n")
	return msg
}

func (e firstLine) Unwrap() error { return e.err }

// emptyQuery is ErrEmptyDocument for a query by a text with no shingles,
// worded as about the query, not a stored document.
type emptyQuery struct{}

func (emptyQuery) Error() string {
	return "lshdb: the query text has no shingles (it is empty, white space, or stop words alone): it matches nothing"
}

func (emptyQuery) Unwrap() error { return ErrEmptyDocument }
