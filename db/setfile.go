package db

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// setFile holds the shingle sets of the documents that take part in
// candidate pairs, written in one sequential scan of the doc records, so
// that verification reads a set with one positioned read.
//
// NB: reading the sets with Pebble point lookups instead cost 4x more at a
// million documents: for an index much larger than the block cache nearly
// every lookup misses the cache, reads and checksums a ~10 KB block and the
// index blocks above it, and allocates a cache entry (79% of Pairs' time
// went there). The file takes disk space up to the size of the stored
// sets, in the database's directory, until Pairs ends. Mapping the file
// into memory instead of reading it saved no time and counted every page
// touched in the process's resident set (5.6 GB at a million documents).
//
// In text mode the sets are re-derived from the stored texts as they are
// written; in none mode the file holds the signatures (as uint64s), and
// verification compares them.
type setFile struct {
	fs   vfs.FS
	path string
	f    vfs.File
	off  []int64 // by pairsIndex position: where the set starts (−1: absent)
	n    []int32 // by pairsIndex position: values in the set
	x    *pairsIndex
}

// writeSetFile writes the sets of the documents whose bit is set in
// inPair, checking each (sorted, no repeats) once.
func (db *DB) writeSetFile(ctx context.Context, fs vfs.FS, path string, snap pebble.Reader, x *pairsIndex, inPair []uint64) (*setFile, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	s := &setFile{fs: fs, path: path, f: f, off: make([]int64, len(x.nums)), n: make([]int32, len(x.nums)), x: x}
	w := bufio.NewWriterSize(f, 1<<20)
	i, pos := 0, int64(0)
	var check []uint64
	var sig []uint32
	var buf []byte
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	var derr error
	err = scan(ctx, snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		if i >= len(x.nums) {
			derr = fmt.Errorf("lshdb: doc records changed during Pairs")
			return
		}
		s.off[i] = -1
		if inPair[i/64]&(1<<(i%64)) != 0 {
			view, err := codec.ParseDocView(v)
			if err == nil {
				if db.estimateOnly() {
					sig = view.AppendSignature(sig[:0])
					check = codec.Widen(check[:0], sig)
				} else {
					check, err = db.viewSet(h, x.nums[i], &view, check[:0])
				}
			}
			if err != nil {
				derr = classify(fmt.Errorf("doc record %x: %w", k, err))
				return
			}
			s.off[i], s.n[i] = pos, int32(len(check))
			buf = buf[:0]
			for _, x := range check {
				buf = binary.LittleEndian.AppendUint64(buf, x)
			}
			_, derr = w.Write(buf)
			pos += int64(len(buf))
		}
		i++
	})
	if err = cmp.Or(derr, err, w.Flush()); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// read appends document i's set to dst, using buf for the bytes.
func (s *setFile) read(i int32, dst []uint64, buf []byte) ([]uint64, []byte, error) {
	n, off := int64(s.n[i])*8, s.off[i]
	if off < 0 {
		return dst, buf, fmt.Errorf("lshdb: doc %d is not in the set file", s.x.nums[i])
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return dst, buf, fmt.Errorf("lshdb: reading the set of doc %d: %w", s.x.nums[i], err)
	}
	// NB: no order check: writeSetFile checked every set it wrote.
	dst = slices.Grow(dst[:0], len(buf)/8)[:len(buf)/8]
	for j := range dst {
		dst[j] = binary.LittleEndian.Uint64(buf[8*j:])
	}
	return dst, buf, nil
}

func (s *setFile) close() {
	s.f.Close()
	s.fs.Remove(s.path)
}
