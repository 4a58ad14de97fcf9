package extsort

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Run files come in two record formats, each with one writer and one
// reader here:
//
//   - fixed-size records (Fixed's values, BandSorter's entries): the
//     encoded values back to back, read by fixedReader in blocks;
//   - key records (KeySorter's runs, KeyLog): uvarint key length, uvarint
//     tag, key bytes; written by appendKeyRecord, read by keyReader.
//
// A run is written once, read once or twice, and lives only as long as
// one load or Pairs call, so it is not synced.

// runWriter is a run file being written through a buffer.
type runWriter struct {
	f vfs.File
	w *bufio.Writer
}

func createRun(fs vfs.FS, path string) (*runWriter, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return &runWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// finish flushes and closes the file. NB: the buffered writer's errors
// are sticky: writes after the first failure do nothing, and Flush
// reports it, so the record writers need not check each Write.
func (r *runWriter) finish() error {
	if r.f == nil {
		return nil
	}
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	return err
}

// abort closes the file without flushing, if it is still open.
func (r *runWriter) abort() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// writeRun creates the run file at path and fills it.
func writeRun(fs vfs.FS, path string, fill func(w *bufio.Writer)) error {
	r, err := createRun(fs, path)
	if err != nil {
		return err
	}
	fill(r.w)
	if err := r.finish(); err != nil {
		r.abort()
		return err
	}
	return nil
}

// fixedReader reads fixed-size records from r in blocks of about 64 KiB.
type fixedReader[T any] struct {
	r    io.Reader
	size int
	get  func(b []byte) T
	buf  []byte
	vals []T // the block's values, decoded
}

func newFixedReader[T any](r io.Reader, size int, get func(b []byte) T) *fixedReader[T] {
	n := max(1, 64<<10/size)
	return &fixedReader[T]{r: r, size: size, get: get, buf: make([]byte, n*size), vals: make([]T, 0, n)}
}

var errTornRecord = errors.New("extsort: a run file ends inside a record")

func (f *fixedReader[T]) Next() ([]T, error) {
	n, err := io.ReadFull(f.r, f.buf)
	if err == io.EOF {
		return nil, nil
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	if n%f.size != 0 {
		return nil, errTornRecord
	}
	f.vals = f.vals[:0]
	for b := f.buf[:n]; len(b) > 0; b = b[f.size:] {
		f.vals = append(f.vals, f.get(b))
	}
	return f.vals, nil
}

// KeyEntry is a key record: a byte key and its tag.
type KeyEntry struct {
	Key []byte
	Tag uint64
}

// appendKeyRecord writes one key record (see runWriter for errors).
func appendKeyRecord(w *bufio.Writer, key []byte, tag uint64) {
	var hdr [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(key)))
	n += binary.PutUvarint(hdr[n:], tag)
	w.Write(hdr[:n])
	w.Write(key)
}

// keyReader reads key records; the key it returns is valid until the
// next call.
type keyReader struct {
	r   *bufio.Reader
	key []byte
	one [1]KeyEntry
}

func newKeyReader(r io.Reader) *keyReader {
	return &keyReader{r: bufio.NewReaderSize(r, 256<<10)}
}

func (k *keyReader) Next() ([]KeyEntry, error) {
	e, ok, err := k.next()
	if !ok || err != nil {
		return nil, err
	}
	k.one[0] = e
	return k.one[:], nil
}

func (k *keyReader) next() (KeyEntry, bool, error) {
	klen, err := binary.ReadUvarint(k.r)
	if err == io.EOF {
		return KeyEntry{}, false, nil
	}
	if err != nil {
		return KeyEntry{}, false, err
	}
	tag, err := binary.ReadUvarint(k.r)
	if err != nil {
		return KeyEntry{}, false, fmt.Errorf("%w: %w", errTornRecord, err)
	}
	if klen > 1<<30 {
		return KeyEntry{}, false, fmt.Errorf("extsort: a run file's key of %d bytes", klen)
	}
	if uint64(cap(k.key)) < klen {
		k.key = make([]byte, klen, max(klen, 2*uint64(cap(k.key))))
	}
	k.key = k.key[:klen]
	if _, err := io.ReadFull(k.r, k.key); err != nil {
		return KeyEntry{}, false, fmt.Errorf("%w: %w", errTornRecord, err)
	}
	return KeyEntry{Key: k.key, Tag: tag}, true, nil
}
