package db

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

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
// written, de-duplicated but not sorted: verification puts one side of a
// pair in a hash table (minhash.SetTable) and passes over the other. In
// none mode the file holds the signatures (as uint64s), and verification
// compares them.
type setFile struct {
	fs   vfs.FS
	path string
	f    vfs.File
	off  []int64 // by pairsIndex position: where the set starts (−1: absent)
	n    []int32 // by pairsIndex position: values in the set
	x    *pairsIndex
}

// setBatch is a run of consecutive in-pair records on their way through
// writeSetFile's workers: raw record copies in, encoded sets out.
type setBatch struct {
	idx  []int    // pairsIndex positions
	recs [][]byte // the records (copies)
	out  []byte   // the sets, uint64 little-endian, one after another
	n    []int32  // values in each set
	err  error
	done chan struct{}
}

// setBatchBytes is the record bytes a batch gathers before it is sent.
const setBatchBytes = 256 << 10

// writeSetFile writes the sets of the documents whose bit is set in
// inPair, checking each once (its size against the record's).
//
// NB: in text mode each set is re-derived from the text (normalize,
// shingle, de-duplicate): that took half of Pairs' time on one core, so
// the scan hands batches of records to a worker per core and writes their
// sets in scan order as they complete.
func (db *DB) writeSetFile(ctx context.Context, fs vfs.FS, path string, snap pebble.Reader, x *pairsIndex, inPair []uint64) (*setFile, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	s := &setFile{fs: fs, path: path, f: f, off: make([]int64, len(x.nums)), n: make([]int32, len(x.nums)), x: x}
	for i := range s.off {
		s.off[i] = -1
	}
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *setBatch, workers)
	ordered := make(chan *setBatch, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := db.hashers.Get().(*minhash.Hasher)
			defer db.hashers.Put(h)
			var set []uint64
			var sig []uint32
			for b := range work {
				for j, rec := range b.recs {
					view, err := codec.ParseDocView(rec)
					if err == nil {
						if db.estimateOnly() {
							sig = view.AppendSignature(sig[:0])
							set = codec.Widen(set[:0], sig)
						} else {
							set, err = db.viewSetIn(h, x.nums[b.idx[j]], &view, set[:0], false)
						}
					}
					if err != nil {
						b.err = classify(fmt.Errorf("doc %d: %w", x.nums[b.idx[j]], err))
						break
					}
					b.n = append(b.n, int32(len(set)))
					at := len(b.out)
					b.out = slices.Grow(b.out, 8*len(set))[:at+8*len(set)]
					if nativeLittleEndian && len(set) > 0 { // see read
						copy(b.out[at:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(set))), 8*len(set)))
					} else {
						for k, v := range set {
							binary.LittleEndian.PutUint64(b.out[at+8*k:], v)
						}
					}
				}
				close(b.done)
			}
		}()
	}
	// The writer: the batches' sets in scan order.
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(f, 1<<20)
		pos := int64(0)
		var err error
		for b := range ordered {
			<-b.done
			if err != nil {
				continue // drain
			}
			if err = b.err; err != nil {
				continue
			}
			if _, err = w.Write(b.out); err != nil {
				continue
			}
			for j, i := range b.idx {
				s.off[i], s.n[i] = pos, b.n[j]
				pos += 8 * int64(b.n[j])
			}
		}
		werr <- cmp.Or(err, w.Flush())
	}()

	i := 0
	var derr error
	cur := &setBatch{done: make(chan struct{})}
	size := 0
	send := func() {
		ordered <- cur
		work <- cur
		cur, size = &setBatch{done: make(chan struct{})}, 0
	}
	err = scan(ctx, snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		if i >= len(x.nums) {
			derr = fmt.Errorf("lshdb: doc records changed during Pairs")
			return
		}
		if inPair[i/64]&(1<<(i%64)) != 0 {
			cur.idx = append(cur.idx, i)
			cur.recs = append(cur.recs, bytes.Clone(v))
			if size += len(v); size >= setBatchBytes {
				send()
			}
		}
		i++
	})
	if len(cur.idx) > 0 {
		send()
	}
	close(work)
	close(ordered)
	wg.Wait()
	if err = cmp.Or(derr, err, <-werr); err != nil {
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
	// NB: no check: writeSetFile checked every set it wrote.
	if nativeLittleEndian {
		// NB: the file's bytes are the values as this machine holds them:
		// read straight into dst's memory, with no copy to decode (which
		// was a twelfth of Pairs' CPU time on 200,000 generated documents).
		dst = slices.Grow(dst[:0], int(n/8))[:n/8]
		if n > 0 {
			raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), n)
			if _, err := s.f.ReadAt(raw, off); err != nil {
				return dst, buf, fmt.Errorf("lshdb: reading the set of doc %d: %w", s.x.nums[i], err)
			}
		}
		return dst, buf, nil
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return dst, buf, fmt.Errorf("lshdb: reading the set of doc %d: %w", s.x.nums[i], err)
	}
	dst = slices.Grow(dst[:0], len(buf)/8)[:len(buf)/8]
	for j := range dst {
		dst[j] = binary.LittleEndian.Uint64(buf[8*j:])
	}
	return dst, buf, nil
}

// nativeLittleEndian says whether this machine stores a uint64 as its
// little-endian bytes, as the set file does.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func (s *setFile) close() {
	s.f.Close()
	s.fs.Remove(s.path)
}
