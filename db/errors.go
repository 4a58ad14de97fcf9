package db

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
)

// Sentinel errors. Every error the package returns for one of these
// conditions wraps the sentinel: test with errors.Is.
var (
	// ErrNotFound: no document has that id.
	ErrNotFound = errors.New("lshdb: document not found")
	// ErrLocked: another process (or another DB in this process) has the
	// database open.
	ErrLocked = errors.New("lshdb: database is locked by another process")
	// ErrParamsMismatch: an option differs from the value stored when the
	// database was created. The error is a *MismatchError naming the field.
	ErrParamsMismatch = errors.New("lshdb: parameters differ from the database's")
	// ErrFormatTooNew: the database was written by a newer lshdb.
	ErrFormatTooNew = errors.New("lshdb: database format is newer than this build")
	// ErrCorrupt: stored bytes are damaged (Pebble's corruption errors and
	// lshdb's own decoding errors).
	ErrCorrupt = errors.New("lshdb: database is corrupt")
	// ErrEmptyDocument: the text has no shingles (it is empty or white
	// space, or every word is a stop word).
	ErrEmptyDocument = errors.New("lshdb: document has no shingles")
	// ErrDocTooLarge: the text (with metadata) exceeds Options.MaxDocBytes.
	ErrDocTooLarge = errors.New("lshdb: document too large")
	// ErrInvalidID: an id is empty, longer than MaxIDBytes, or not UTF-8.
	ErrInvalidID = errors.New("lshdb: invalid document id")
	// ErrClosed: the DB has been closed.
	ErrClosed = errors.New("lshdb: database is closed")
	// ErrInvalidOptions: an option or query option is out of range.
	ErrInvalidOptions = errors.New("lshdb: invalid options")
	// ErrNotIndex: the path is a file, or a directory that holds something
	// other than an lshdb database.
	ErrNotIndex = errors.New("lshdb: not an lshdb database")
	// ErrNotExist: the database does not exist and Options.MustExist (or
	// ReadOnly) forbids creating it.
	ErrNotExist = errors.New("lshdb: database does not exist")
	// ErrReadOnly: a write to a database opened read-only.
	ErrReadOnly = errors.New("lshdb: database is open read-only")
)

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
// lshdb's decoding errors become ErrCorrupt, a newer format ErrFormatTooNew.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, codec.ErrFormatTooNew):
		return fmt.Errorf("%w: %w", ErrFormatTooNew, err)
	case errors.Is(err, codec.ErrCorrupt) || pebble.IsCorruptionError(err):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// isLockError reports whether err from taking the directory lock means
// someone else holds it: EAGAIN or EACCES from fcntl for another process,
// Pebble's in-process check for this one.
func isLockError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		errors.Is(err, syscall.EWOULDBLOCK) || err.Error() == "lock held by current process"
}
