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
// inPair, checking each (sorted, no repeats) once.
//
// NB: in text mode each set is re-derived from the text (normalize,
// shingle, sort): that took half of Pairs' time on one core, so the scan
// hands batches of records to a worker per core and writes their sets in
// scan order as they complete.
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
							set, err = db.viewSet(h, x.nums[b.idx[j]], &view, set[:0])
						}
					}
					if err != nil {
						b.err = classify(fmt.Errorf("doc %d: %w", x.nums[b.idx[j]], err))
						break
					}
					b.n = append(b.n, int32(len(set)))
					for _, v := range set {
						b.out = binary.LittleEndian.AppendUint64(b.out, v)
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
