package db

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
	"golang.org/x/sync/errgroup"
)

// setFile holds what verification needs of the documents that take part
// in candidate pairs (their texts, or their sets), written in one
// sequential scan of the doc records, so that verification reads each
// with one positioned read.
//
// NB: reading the records with Pebble point lookups instead cost 4x more at a
// million documents: for an index much larger than the block cache nearly
// every lookup misses the cache, reads and checksums a ~10 KB block and the
// index blocks above it, and allocates a cache entry (79% of Pairs' time
// went there). The file takes disk space up to the size of the stored
// texts (sets mode: 8 bytes a set element), in the database's directory,
// until Pairs ends. Mapping the file into memory instead of reading it
// saved no time and counted every page touched in the process's resident
// set (5.6 GB at a million documents).
//
// In text mode the file holds each document's stored text, and a reader
// re-derives the set (normalize, shingle, de-duplicate, not sorted) when
// verification asks for it, checking its size against the record's:
// verification puts one side of a pair in a hash table (minhash.SetTable)
// and passes over the other. Only the pairs the sketches do not rule out
// are verified (on a million generated documents, 162,359 of 15.6 million
// distinct candidate pairs): writing the sets instead (8 bytes a shingle,
// about 8 bytes a character of text) wrote 5.4 GB there, and the write
// calls alone took a quarter of Pairs' CPU time. A record without a
// sketch (a format before 5) has its set derived as it is written, for
// the sketch. A document with a stored set (sets mode) has its set
// written. In none mode the file holds the signatures (as uint64s), and
// verification compares them.
//
// NB: the entries stay in memory, and the file is never made, while they
// take no more than the memory the caller gives (a quarter of
// PairsOptions.Memory): each read from the file is a system call, and
// where most candidate pairs are verified (thousands of near-identical
// short texts) those took over half of Pairs' CPU time (3,000 short
// generated documents, 2.7 million pairs verified: 56%). Past that size
// the entries gathered so far go to the file, and so does every later
// one.
type setFile struct {
	fs   vfs.FS
	path string
	f    vfs.File // nil while the entries are in memory (chunks)
	// chunks are the entries while they fit in memory, as the writers
	// gathered them: no entry spans two chunks. NB: kept as gathered,
	// not appended to one slice, whose copies as it grew (and the garbage
	// they left) took twice the memory of the entries.
	chunks []memChunk
	memLen int64 // the bytes in chunks
	// memCap bounds memLen; an entry that would take it beyond sends them
	// all to the file.
	memCap int64
	// memo holds, by pairsIndex position, the sets that readers derived
	// from texts, while they take no more than memCap bytes in all
	// (memoLeft is what is left of it): a document in many candidate
	// pairs was derived again for each, and deriving sets took two thirds
	// of Pairs' CPU time on scancode-rules at t = 0.5 (10 million pairs
	// verified among 35,000 short notices). nil without texts.
	memo     []atomic.Pointer[[]uint64]
	memoLeft atomic.Int64
	off      []int64 // by pairsIndex position: where the set or text starts (−1: absent)
	// n, by pairsIndex position: the values in the set, or −1 − the
	// length of the text (a document whose set is derived when read).
	n       []int32
	x       *pairsIndex
	hashers *sync.Pool // *minhash.Hasher: readers derive sets from texts
}

// setChunkBytes is the bytes a worker gathers before it appends them to
// the file.
const setChunkBytes = 1 << 20

// writeSetFile writes the texts (or sets) of the documents whose bit is
// set in inPair, and derives the sketches x does not hold yet.
//
// NB: a text whose record holds no sketch (format 4 and before) is
// re-derived (normalize, shingle, de-duplicate) for its sketch, and its
// set's size checked against the record's: that took half of Pairs' time
// on one core. The doc-number range is split among a goroutine per core
// (as in loadPairsIndex), each scanning its part and appending the texts
// to the file in chunks, under a lock, recording where each went: the
// file's order does not matter. One scan handing copies of the records to
// workers left the scan (decompressing every text) and the copies as a
// serial stage.
func (db *DB) writeSetFile(ctx context.Context, fs vfs.FS, path string, memCap int64, snap pebble.Reader, x *pairsIndex, inPair []uint64) (*setFile, error) {
	s := &setFile{fs: fs, path: path, memCap: memCap, off: make([]int64, len(x.nums)), n: make([]int32, len(x.nums)), x: x, hashers: &db.hashers}
	for i := range s.off {
		s.off[i] = -1
	}
	workers := runtime.GOMAXPROCS(0)
	if len(x.nums) < 1024*workers {
		workers = 1
	}
	var mu sync.Mutex // s.f, s.chunks, s.memLen, pos and s.off, s.n of the chunks written
	pos := int64(0)
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		// Index positions [from, to) of this worker's part.
		from, to := w*len(x.nums)/workers, (w+1)*len(x.nums)/workers
		if from == to {
			continue
		}
		g.Go(func() error {
			h := db.hashers.Get().(*minhash.Hasher)
			defer db.hashers.Put(h)
			var set []uint64
			var sig []uint32
			var out []byte
			var idx []int
			var ns []int32
			flush := func() error {
				mu.Lock()
				defer mu.Unlock()
				if err := s.append(out); err != nil {
					return err
				}
				for j, i := range idx {
					s.off[i], s.n[i] = pos, ns[j]
					pos += s.bytes(ns[j])
				}
				out, idx, ns = out[:0], idx[:0], ns[:0]
				return nil
			}
			hi := codec.DocPrefixEnd
			if to < len(x.nums) {
				hi = codec.AppendDocKey(nil, x.nums[to])
			}
			i := from
			done := counter{p: progressOf(ctx)}
			defer done.flush()
			var derr error
			err := scan(gctx, snap, codec.AppendDocKey(nil, x.nums[from]), hi, func(k, v []byte) {
				if derr != nil {
					return
				}
				// NB: the key's number, not a key built to compare with:
				// that allocated once per document of the scan.
				n, err := codec.ParseDocKey(k)
				if err == nil && (i >= to || n != x.nums[i]) && x.isExpired(n) {
					return // left out of the index: expired
				}
				if err != nil || i >= to || n != x.nums[i] {
					derr = fmt.Errorf("lshdb: doc records changed during Pairs")
					return
				}
				if inPair[i/64]&(1<<(i%64)) != 0 {
					done.inc()
					view, err := codec.ParseDocView(v)
					// asText: the file takes the text, not the set it gives
					// (see setFile); n is −1 − its length, so a text of
					// 2 GiB or more (MaxDocBytes raised that far) has its
					// set written.
					asText := err == nil && !db.estimateOnly() && !view.HasSet() && len(view.Text) < math.MaxInt32
					// NB: a text whose sketch came with its record goes to
					// the file as it is, its set derived (and checked) only
					// if verification reads it.
					sketchedText := asText && view.HasText && x.places > 0 && x.sketched[i]
					if err == nil && !sketchedText {
						if db.estimateOnly() {
							sig = view.AppendSignature(sig[:0])
							set = codec.Widen(set[:0], sig)
						} else if set, err = db.viewSet(h, x.nums[i], &view, set[:0]); err == nil {
							// NB: sets mode stores the signature; text mode
							// derives it from the set (the sketch step of a
							// build: a few percent of the shingling).
							if view.HasSignature() {
								sig = view.AppendSignature(sig[:0])
							} else {
								sig = h.Sketcher().Sketch(sig[:0], set)
							}
							if len(sig) < x.places {
								err = fmt.Errorf("%w: a signature of %d values, want %d", ErrCorrupt, len(sig), x.places)
							} else if x.places > 0 && !x.sketched[i] {
								codec.AppendSketch(x.sketch(int32(i))[:0], sig)
								x.sketched[i] = true
							}
						}
					}
					if err != nil {
						derr = classify(fmt.Errorf("doc %d: %w", x.nums[i], err))
						return
					}
					if asText {
						idx, ns = append(idx, i), append(ns, -1-int32(len(view.Text)))
						out = append(out, view.Text...)
					} else {
						idx, ns = append(idx, i), append(ns, int32(len(set)))
						at := len(out)
						out = slices.Grow(out, 8*len(set))[:at+8*len(set)]
						if nativeLittleEndian && len(set) > 0 { // see read
							copy(out[at:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(set))), 8*len(set)))
						} else {
							for k, v := range set {
								binary.LittleEndian.PutUint64(out[at+8*k:], v)
							}
						}
					}
					if len(out) >= setChunkBytes {
						derr = flush()
					}
				}
				i++
			})
			if err = cmp.Or(derr, err); err != nil {
				return err
			}
			if i != to {
				return fmt.Errorf("lshdb: doc records changed during Pairs")
			}
			return flush()
		})
	}
	if err := g.Wait(); err != nil {
		s.close()
		return nil, err
	}
	if slices.ContainsFunc(s.n, func(n int32) bool { return n < 0 }) {
		s.memo = make([]atomic.Pointer[[]uint64], len(s.n))
		s.memoLeft.Store(memCap)
	}
	return s, nil
}

// memChunk is a chunk of a setFile's entries held in memory, from byte
// start of the file.
type memChunk struct {
	start int64
	b     []byte
}

// append adds entries (whole ones) to the end of s: in memory while they
// fit in memCap, else to the file, made then, which takes the entries
// held in memory first.
func (s *setFile) append(b []byte) error {
	if s.f == nil && s.memLen+int64(len(b)) <= s.memCap {
		s.chunks = append(s.chunks, memChunk{s.memLen, slices.Clone(b)})
		s.memLen += int64(len(b))
		return nil
	}
	if s.f == nil {
		f, err := s.fs.Create(s.path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		s.f = f
		for _, c := range s.chunks {
			if _, err := f.Write(c.b); err != nil {
				return err
			}
		}
		s.chunks, s.memLen = nil, 0
	}
	_, err := s.f.Write(b)
	return err
}

// inMemory returns the n bytes at off when s holds them in memory (a view,
// never written to), else nil.
func (s *setFile) inMemory(off, n int64) []byte {
	if s.f != nil {
		return nil
	}
	// NB: the last chunk that starts at or before off.
	i, _ := slices.BinarySearchFunc(s.chunks, off+1, func(c memChunk, v int64) int { return cmp.Compare(c.start, v) })
	if i == 0 {
		return nil
	}
	c := s.chunks[i-1]
	if off-c.start+n > int64(len(c.b)) {
		return nil
	}
	return c.b[off-c.start : off-c.start+n]
}

// readAt fills b with the bytes at off, from memory or the file.
func (s *setFile) readAt(b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	if s.f == nil {
		m := s.inMemory(off, int64(len(b)))
		if m == nil {
			return fmt.Errorf("%d bytes at %d: not among the %d held in memory", len(b), off, s.memLen)
		}
		copy(b, m)
		return nil
	}
	_, err := s.f.ReadAt(b, off)
	return err
}

// bytes returns the length in the file of an entry of n (see setFile.n).
func (s *setFile) bytes(n int32) int64 {
	if n < 0 {
		return int64(-1 - n)
	}
	return 8 * int64(n)
}

// setReader reads sets from a setFile for one goroutine at a time.
type setReader struct {
	s   *setFile
	h   *minhash.Hasher // derives the sets of texts; nil until one is read
	buf []byte
}

// reader returns a reader of s's sets; the caller MUST close it.
func (s *setFile) reader() *setReader { return &setReader{s: s} }

// close hands back the reader's hasher.
func (r *setReader) close() {
	if r.h != nil {
		r.s.hashers.Put(r.h)
		r.h = nil
	}
}

// read replaces dst's contents with document i's set (de-duplicated, in no
// particular order) and returns it.
func (r *setReader) read(i int32, dst []uint64) ([]uint64, error) {
	s := r.s
	if n := s.n[i]; n < 0 && s.off[i] >= 0 {
		if p := s.memo[i].Load(); p != nil {
			return append(dst[:0], *p...), nil
		}
		// NB: a text held in memory is read in place: nothing writes the
		// chunks once readers run.
		off, l := s.off[i], int64(-1-n)
		text := s.inMemory(off, l)
		if text == nil {
			r.buf = slices.Grow(r.buf[:0], int(l))[:l]
			if err := s.readAt(r.buf, off); err != nil {
				return dst, fmt.Errorf("lshdb: reading the text of doc %d: %w", s.x.nums[i], err)
			}
			text = r.buf
		}
		if r.h == nil {
			r.h = s.hashers.Get().(*minhash.Hasher)
		}
		// NB: the text is not kept past the call. Its set's size is
		// checked against the record's here: writeSetFile derives only the
		// sets of the texts whose records hold no sketch.
		dst = r.h.Shingler().AppendDistinct(dst[:0], unsafe.String(unsafe.SliceData(text), len(text)))
		if want := s.x.sizes[i]; len(dst) != int(want) {
			return dst, corruptRepairable("doc %d (%q): its text gives %d shingles, the record says %d", s.x.nums[i], s.x.ids[i], len(dst), want)
		}
		if size := int64(8 * len(dst)); s.memoLeft.Load() >= size {
			if s.memoLeft.Add(-size) >= 0 {
				set := slices.Clone(dst)
				if !s.memo[i].CompareAndSwap(nil, &set) {
					s.memoLeft.Add(size) // NB: another reader memoized it first
				}
			} else {
				s.memoLeft.Add(size)
			}
		}
		return dst, nil
	}
	var err error
	dst, r.buf, err = s.read(i, dst[:0], r.buf)
	return dst, err
}

// read appends document i's set to dst, using buf for the bytes. The file
// MUST hold the set itself (not the text).
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
			if err := s.readAt(raw, off); err != nil {
				return dst, buf, fmt.Errorf("lshdb: reading the set of doc %d: %w", s.x.nums[i], err)
			}
		}
		return dst, buf, nil
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if err := s.readAt(buf, off); err != nil {
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
	s.chunks, s.memo = nil, nil
	if s.f != nil {
		s.f.Close()
		s.fs.Remove(s.path)
	}
}
