package db

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
)

// DefaultLoadMemory is the default LoadOptions.Memory: 256 MiB of sorted
// data, which keeps a load's whole process (documents in flight, Pebble's
// cache and memtables, Go's heap headroom) around 0.5 GiB: 545–591 MiB
// peak RSS measured for a million 1.2 KB documents.
const DefaultLoadMemory = 256 << 20

// loadTmpDir is the directory, inside the database's, where a load keeps
// its sorted runs and SSTables until they are ingested. Open removes one
// left by an interrupted load.
const loadTmpDir = "lshdb-load.tmp"

// LoadOptions adjust Load. A nil *LoadOptions means the defaults.
type LoadOptions struct {
	// Memory bounds the bytes of sorted entries held in memory (the rest
	// spill to sorted runs on disk); the process needs about two to three
	// times this in all. Default: DefaultLoadMemory (256 MiB).
	Memory int
	// SkipEmpty skips documents with no shingles (listed in the result)
	// instead of failing the load with ErrEmptyDocument. Default: false.
	SkipEmpty bool
	// Progress, if set, is called with the number of documents read so far
	// (every 10,000 and at the end).
	Progress func(docs int)

	// tableBytes is the size at which the load starts a new SSTable.
	// Default: defaultTableBytes (tests make it small).
	tableBytes int
}

// LoadResult reports what Load did.
type LoadResult struct {
	Stored       int      // documents written (new or replacing)
	Replaced     int      // of which replaced a document stored before the load
	Repeated     int      // documents superseded by a later one with the same id in the load
	SkippedEmpty []string // ids skipped for having no shingles (with SkipEmpty)
}

// Load bulk-loads documents: it computes signatures on every core, sorts
// the records within a memory budget (spilling sorted runs to disk), writes
// them as SSTables and ingests them into Pebble in one step — no WAL, no
// memtable. It works on an existing index: a document whose id is stored
// replaces it (its old postings are removed in the same ingest), and when an
// id repeats in docs the last one wins. The result is the index that Put
// of each document in order would have produced, doc numbers included.
//
// A load is atomic for readers: queries see all of it or none of it. An
// error, a crash or a kill before the ingest leaves the index as it was
// (the next Open removes the temporary files). Writers wait for the load.
func (db *DB) Load(docs iter.Seq2[Doc, error], lo *LoadOptions) (LoadResult, error) {
	var res LoadResult
	if err := db.enter(); err != nil {
		return res, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return res, ErrReadOnly
	}
	var o LoadOptions
	if lo != nil {
		o = *lo
	}
	if o.Memory == 0 {
		o.Memory = DefaultLoadMemory
	}
	if o.Memory < 0 {
		return res, invalid("load memory %d is negative", o.Memory)
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	fs := db.opts.FS
	tmp := fs.PathJoin(db.dir, loadTmpDir)
	if err := fs.RemoveAll(tmp); err != nil {
		return res, err
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return res, err
	}
	defer fs.RemoveAll(tmp)
	base := db.counters.NextDoc

	// Stage 1, pipelined: the caller's iterator feeds chunks; one goroutine
	// computes their signatures on every core; another writes the records
	// straight into SSTables (doc numbers follow input order, so their keys
	// come in order), the (id, seq) pairs into a small sorter and the
	// postings into another. Records are never sorted or copied again.
	tables := loadTables{db: db, fs: fs, dir: tmp, maxBytes: cmp.Or(o.tableBytes, defaultTableBytes)}
	records := tables.seqNoFilter("records")
	defer records.abandon()
	var recFirst []uint64 // recFirst[i]: the seq of the first record in table i
	var recKey []byte
	byID := newExtSorter(fs, tmp, "ids", o.Memory/4)
	defer byID.close()
	postings := newPostSorter(fs, tmp, "postings", o.Memory/2, db.bands.B)
	defer postings.close()
	// NB: the replaced documents' removals are sorted apart (stage 2),
	// so that sorting the load's own postings overlaps stage 2.
	removals := newPostSorter(fs, tmp, "removals", o.Memory/8, db.bands.B)
	defer removals.close()
	type batch struct {
		docs      []Doc
		preps     []prepared
		errs      []error
		scratches []*scratch // the preps' records and keys live in these
		first     int        // input position of docs[0]
	}
	scratches := &sync.Pool{New: func() any { return newScratch() }}
	toPrep := make(chan batch, 2)
	toAdd := make(chan batch, 2)
	var stageErr error
	seq := uint64(0)
	var pipe sync.WaitGroup
	pipe.Add(2)
	go func() {
		defer pipe.Done()
		defer close(toAdd)
		for b := range toPrep {
			b.preps, b.errs, b.scratches = db.prepareEach(b.docs, db.man.StoreText, scratches)
			toAdd <- b
		}
	}()
	go func() {
		defer pipe.Done()
		for b := range toAdd {
			if stageErr != nil {
				continue
			}
			for i, p := range b.preps {
				if err := b.errs[i]; err != nil {
					if o.SkipEmpty && errors.Is(err, ErrEmptyDocument) {
						res.SkippedEmpty = append(res.SkippedEmpty, b.docs[i].ID)
						continue
					}
					stageErr = fmt.Errorf("document %d: %w", b.first+i, err)
					break
				}
				recKey = codec.AppendDocKey(recKey[:0], base+seq)
				if err := records.set(recKey, p.record); err != nil {
					stageErr = err
					break
				}
				if len(records.paths) > len(recFirst) {
					recFirst = append(recFirst, seq)
				}
				if err := byID.add([]byte(p.id), seq, 0, nil); err != nil {
					stageErr = err
					break
				}
				for band, k := range p.keys {
					if err := postings.addPosting(band, k, base+seq, false); err != nil {
						stageErr = err
						break
					}
				}
				if stageErr != nil {
					break
				}
				seq++
			}
			// NB: the records and keys have been copied into the table and
			// the sorters: their buffers go to the next batch.
			for _, sc := range b.scratches {
				scratches.Put(sc)
			}
		}
	}()
	read := 0
	// NB: chunks of 1,024: each in flight holds its texts and prepared
	// records (~20 KB a document), and up to five are in flight.
	chunk := make([]Doc, 0, 1024)
	var iterErr error
	for d, err := range docs {
		if err != nil {
			iterErr = err
			break
		}
		chunk = append(chunk, d)
		read++
		if len(chunk) == cap(chunk) {
			toPrep <- batch{docs: chunk, first: read - len(chunk)}
			chunk = make([]Doc, 0, 1024)
		}
		if o.Progress != nil && read%10000 == 0 {
			o.Progress(read)
		}
	}
	if len(chunk) > 0 {
		toPrep <- batch{docs: chunk, first: read - len(chunk)}
	}
	close(toPrep)
	pipe.Wait()
	sealed := make(chan struct{})
	go func() {
		defer close(sealed)
		postings.seal()
	}()
	// NB: no return before the seal is done: postings.close must not
	// release the regions it sorts.
	defer func() { <-sealed }()
	recPaths, err := records.finish()
	if err := cmp.Or(iterErr, stageErr, err); err != nil {
		return res, err
	}
	if o.Progress != nil {
		o.Progress(read)
	}

	// Stage 2: by id, the last occurrence wins (earlier ones are dropped);
	// an id stored before the load is replaced: its record deleted, its
	// postings removed. The id map comes out in key order.
	c := db.counters
	c.NextDoc = base + seq
	dropped := make([]uint64, (seq+63)/64) // bit s: occurrence s is superseded
	var oldDocs []uint64
	ids, err := newRunWriter(fs, fs.PathJoin(tmp, "idmap"))
	if err != nil {
		return res, err
	}
	defer ids.close()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return res, classify(err)
	}
	defer it.Close()
	var old codec.DocRecord
	var kbuf, lastID []byte
	lastSeq, have := uint64(0), false
	emit := func() error {
		if !have {
			return nil
		}
		oldNum, err := lookup(it, string(lastID), &old)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil {
			oldKeys, err := bands.AppendKeys(nil, old.Signature, db.bands)
			if err != nil {
				return classify(err)
			}
			oldDocs = append(oldDocs, oldNum)
			for band, k := range oldKeys {
				if err := removals.addPosting(band, k, oldNum, true); err != nil {
					return err
				}
			}
			res.Replaced++
			c.Live--
		}
		if err := ids.writeKV(codec.AppendIDKey(kbuf[:0], string(lastID)), codec.EncodeDocNum(base+lastSeq)); err != nil {
			return err
		}
		res.Stored++
		c.Live++
		return nil
	}
	err = byID.iterate(func(key []byte, s uint64, _ byte, _ []byte) error {
		if have && string(key) == string(lastID) {
			dropped[lastSeq/64] |= 1 << (lastSeq % 64) // a later occurrence wins
			res.Repeated++
		} else if err := emit(); err != nil {
			return err
		}
		lastID, lastSeq, have = append(lastID[:0], key...), s, true
		return nil
	})
	if err = cmp.Or(err, emit(), ids.finish()); err != nil {
		return res, err
	}
	byID.close()
	isDropped := func(n uint64) bool {
		if n < base {
			return false
		}
		s := n - base
		return dropped[s/64]&(1<<(s%64)) != 0
	}

	// Stage 3: the other SSTables, each range apart from the others (an
	// ingest takes non-overlapping files): deletes of replaced records
	// (below base), the records tables of stage 1 — rewritten without the
	// records that a later occurrence of their id superseded —, and the id
	// map, the counters and one merge operand per posting list.
	slices.Sort(oldDocs)
	var paths []string
	if len(oldDocs) > 0 {
		dels, err := tables.write("deletes", func(w tableSink) error {
			for _, n := range oldDocs {
				if err := w.del(codec.AppendDocKey(kbuf[:0], n)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		paths = append(paths, dels...)
	}
	for i, path := range recPaths {
		first, end := recFirst[i], seq
		if i+1 < len(recFirst) {
			end = recFirst[i+1]
		}
		hasDropped := false
		for s := first; s < end && !hasDropped; s++ {
			hasDropped = isDropped(base + s)
		}
		if !hasDropped {
			paths = append(paths, path)
			continue
		}
		kept, err := tables.rewrite(path, func(k []byte) bool {
			n, err := codec.ParseDocKey(k)
			return err != nil || !isDropped(n)
		})
		if err != nil {
			return res, err
		}
		paths = append(paths, kept...)
	}
	// NB: the id map and counters, and the posting lists split by band
	// range, are written concurrently (one part per core): each part's keys
	// are a range of their own, so the tables never overlap. On one core
	// this stage took 10 s of a 1M-document build.
	removals.seal()
	<-sealed
	sorters := []*postSorter{postings, removals}
	parts := max(1, min(runtime.GOMAXPROCS(0), db.bands.B))
	partPaths := make([][]string, parts+1)
	partErrs := make([]error, parts+1)
	var wg sync.WaitGroup
	wg.Add(parts + 1)
	go func() {
		defer wg.Done()
		partPaths[parts], partErrs[parts] = tables.write("ids", func(w tableSink) error {
			if err := ids.replay(w.set); err != nil {
				return err
			}
			return w.set(codec.CountersKey, codec.EncodeCounters(c))
		})
	}()
	for part := range parts {
		go func() {
			defer wg.Done()
			from, to := part*db.bands.B/parts, (part+1)*db.bands.B/parts
			partPaths[part], partErrs[part] = tables.write(fmt.Sprintf("postings-%d", part), func(w tableSink) error {
				var listKey, vbuf []byte
				var list []codec.Posting
				curBand, cur := -1, uint64(0)
				flushList := func() error {
					if len(list) == 0 {
						return nil
					}
					listKey = codec.AppendPostingKey(listKey[:0], curBand, cur)
					vbuf = codec.AppendPostings(vbuf[:0], list)
					list = list[:0]
					return w.merge(listKey, vbuf)
				}
				if err := mergeBands(sorters, from, to, func(band int, e bandEnt) error {
					if band != curBand || e.bucket != cur {
						if err := flushList(); err != nil {
							return err
						}
						curBand, cur = band, e.bucket
					}
					n, remove := e.doc>>1, e.doc&1 == 1
					if !remove && isDropped(n) {
						return nil
					}
					list = append(list, codec.Posting{Doc: n, Remove: remove})
					return nil
				}); err != nil {
					return err
				}
				return flushList()
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(partErrs...); err != nil {
		return res, err
	}
	for _, pp := range partPaths {
		paths = append(paths, pp...)
	}
	// NB: one Ingest call is atomic: every file gets the same sequence
	// number and becomes visible at once.
	if err := db.pdb.Ingest(context.Background(), paths); err != nil {
		return res, classify(fmt.Errorf("lshdb: ingesting the load: %w", err))
	}
	db.counters = c
	db.live.Store(c.Live)
	return res, nil
}

// defaultTableBytes is the size at which a load starts a new SSTable.
const defaultTableBytes = 256 << 20

// loadTables makes a load's SSTables: all in one directory, each up to
// about maxBytes.
type loadTables struct {
	db       *DB
	fs       vfs.FS
	dir      string
	maxBytes int
}

// tableSink receives keys in strictly increasing order.
type tableSink struct {
	set, merge func(k, v []byte) error
	del        func(k []byte) error
}

// tableSeq writes keys in increasing order into SSTables of about
// maxBytes each (non-overlapping, in key order), named
// name-NNNNNN.sst in dir.
//
// NB: a full table is closed (its index written and the file synced) in
// the background while the next one fills: closing in line stalled a
// million-document build's pipeline for 4.2 s of its 47 s.
type tableSeq struct {
	fs       vfs.FS
	dir      string
	name     string
	wopts    sstable.WriterOptions
	w        *sstable.Writer
	closing  chan error // the previous table's close, when one is under way
	size     int
	maxBytes int
	paths    []string
}

// seqNoFilter is seq for tables whose keys no one probes for absence.
//
// NB: the records tables: a record is read by its doc number, which a
// posting or the id map names, and each load's records cover a range of
// new doc numbers of their own, so a bloom filter would almost never
// spare a read; building them cost a million-document build 0.6 s of CPU.
func (lt loadTables) seqNoFilter(name string) *tableSeq {
	t := lt.seq(name)
	t.wopts.FilterPolicy = pebble.NoFilterPolicy
	return t
}

func (lt loadTables) seq(name string) *tableSeq {
	db := lt.db
	wopts := db.popts.MakeWriterOptions(len(db.popts.Levels)-1, db.pdb.TableFormat())
	// NB: a load's tables can land above older data (an index being
	// extended), so they are not bottommost: with WritingToLowestLevel the
	// writer marks point deletes obsolete, readers hide them, and the
	// records of replaced documents show through again.
	wopts.WritingToLowestLevel = false
	// NB: row blocks, not the columnar blocks the database writes itself:
	// BenchmarkLoadTables writes 10 KB records 1.2x and single-posting
	// lists 1.3x faster with them. Pebble reads and ingests both formats,
	// and compactions rewrite these tables in the database's own.
	wopts.TableFormat = sstable.TableFormatPebblev4
	if !db.man.StoreText {
		// NB: signatures and shingle sets are uniform hashes, which no
		// block compression shrinks; compressing them only costs time.
		wopts.Compression = sstable.NoCompression
	}
	return &tableSeq{fs: lt.fs, dir: lt.dir, name: name, wopts: wopts, maxBytes: lt.maxBytes}
}

// next makes room for an entry of n bytes, starting a table if needed.
func (t *tableSeq) next(n int) error {
	if t.w != nil && t.size < t.maxBytes {
		t.size += n
		return nil
	}
	if t.w != nil {
		if err := t.waitClose(); err != nil {
			return err
		}
		w := t.w
		t.w = nil
		t.closing = make(chan error, 1)
		go func() { t.closing <- w.Close() }()
	}
	path := t.fs.PathJoin(t.dir, fmt.Sprintf("%s-%06d.sst", t.name, len(t.paths)))
	f, err := t.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.w = nil
		return err
	}
	t.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), t.wopts)
	t.paths = append(t.paths, path)
	t.size = n
	return nil
}

func (t *tableSeq) set(k, v []byte) error {
	if err := t.next(len(k) + len(v)); err != nil {
		return err
	}
	return t.w.Set(k, v)
}

func (t *tableSeq) merge(k, v []byte) error {
	if err := t.next(len(k) + len(v)); err != nil {
		return err
	}
	return t.w.Merge(k, v)
}

func (t *tableSeq) del(k []byte) error {
	if err := t.next(len(k)); err != nil {
		return err
	}
	return t.w.Delete(k)
}

// waitClose waits for the close under way, if any.
func (t *tableSeq) waitClose() error {
	if t.closing == nil {
		return nil
	}
	err := <-t.closing
	t.closing = nil
	return err
}

// finish closes the last table and returns the paths of all.
func (t *tableSeq) finish() ([]string, error) {
	err := t.waitClose()
	if t.w != nil {
		err = cmp.Or(err, t.w.Close())
		t.w = nil
	}
	if err != nil {
		return nil, err
	}
	return t.paths, nil
}

// abandon closes an unfinished table (the load's directory is removed
// with the files).
func (t *tableSeq) abandon() {
	t.waitClose()
	if t.w != nil {
		t.w.Close()
		t.w = nil
	}
}

// write runs fill, which writes keys in increasing order, into SSTables
// named name-NNNNNN.sst and returns their paths.
func (lt loadTables) write(name string, fill func(tableSink) error) ([]string, error) {
	t := lt.seq(name)
	defer t.abandon()
	if err := fill(tableSink{set: t.set, merge: t.merge, del: t.del}); err != nil {
		return nil, err
	}
	return t.finish()
}

// rewrite copies the SSTable at path into new tables without the keys for
// which keep is false, and returns their paths (none if nothing is kept).
func (lt loadTables) rewrite(path string, keep func(k []byte) bool) ([]string, error) {
	fs := lt.fs
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := sstable.NewReader(context.Background(), readable, lt.db.popts.MakeReaderOptions())
	if err != nil {
		readable.Close()
		return nil, err
	}
	defer r.Close()
	it, err := r.NewIter(sstable.NoTransforms, nil, nil, sstable.AssertNoBlobHandles)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	return lt.write(strings.TrimSuffix(fs.PathBase(path), ".sst")+"-kept", func(w tableSink) error {
		for kv := it.First(); kv != nil; kv = it.Next() {
			if !keep(kv.K.UserKey) {
				continue
			}
			if kv.Kind() != pebble.InternalKeyKindSet {
				return fmt.Errorf("lshdb: load table %s holds a %s key", path, kv.Kind())
			}
			v, _, err := kv.Value(nil)
			if err != nil {
				return err
			}
			if err := w.set(kv.K.UserKey, v); err != nil {
				return err
			}
		}
		return it.Error()
	})
}

// runWriter appends (key, value) records to a file and replays them in
// order.
type runWriter struct {
	fs   vfs.FS
	path string
	f    vfs.File
	w    *bufio.Writer
}

func newRunWriter(fs vfs.FS, path string) (*runWriter, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return &runWriter{fs: fs, path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (r *runWriter) writeKV(k, v []byte) error {
	var hdr [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(k)))
	n += binary.PutUvarint(hdr[n:], uint64(len(v)))
	r.w.Write(hdr[:n])
	r.w.Write(k)
	_, err := r.w.Write(v)
	return err
}

// finish flushes and closes the file for writing.
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

// replay calls fn for every record in order.
func (r *runWriter) replay(fn func(k, v []byte) error) error {
	f, err := r.fs.Open(r.path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var buf []byte
	for {
		kl, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		vl, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		buf = slices.Grow(buf[:0], int(kl+vl))[:kl+vl]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		if err := fn(buf[:kl], buf[kl:]); err != nil {
			return err
		}
	}
}

func (r *runWriter) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.fs.Remove(r.path)
}
