package db

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
)

// DefaultLoadMemory is the default LoadOptions.Memory: 256 MiB of sorted
// data, which keeps a load's whole process under about 1 GiB (Go's heap
// runs up to twice its live data, plus Pebble's cache and memtables).
const DefaultLoadMemory = 256 << 20

// loadTmpDir is the directory, inside the database's, where a load keeps
// its sorted runs and SSTables until they are ingested. Open removes one
// left by an interrupted load.
const loadTmpDir = "lshdb-load.tmp"

// LoadOptions adjust Load. A nil *LoadOptions means the defaults.
type LoadOptions struct {
	// Memory bounds the bytes of sorted entries held in memory (the rest
	// spill to sorted runs on disk); the process needs about four times
	// this in all. Default: DefaultLoadMemory (256 MiB).
	Memory int
	// SkipEmpty skips documents with no shingles (listed in the result)
	// instead of failing the load with ErrEmptyDocument. Default: false.
	SkipEmpty bool
	// Progress, if set, is called with the number of documents read so far
	// (every 10,000 and at the end).
	Progress func(docs int)
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

	// Stage 1: signatures in parallel, records sorted by id (then input
	// order), within half the budget.
	byID := newExtSorter(fs, tmp, "byid", o.Memory/2)
	defer byID.close()
	seq := uint64(0)
	read := 0
	chunk := make([]Doc, 0, 4096)
	var val []byte
	flush := func() error {
		preps, errs := db.prepareEach(chunk)
		for i, p := range preps {
			if err := errs[i]; err != nil {
				if o.SkipEmpty && errors.Is(err, ErrEmptyDocument) {
					res.SkippedEmpty = append(res.SkippedEmpty, chunk[i].ID)
					continue
				}
				return fmt.Errorf("document %d: %w", read-len(chunk)+i, err)
			}
			val = encodeLoadValue(val[:0], p)
			if err := byID.add([]byte(p.id), seq, 0, val); err != nil {
				return err
			}
			seq++
		}
		chunk = chunk[:0]
		return nil
	}
	for d, err := range docs {
		if err != nil {
			return res, err
		}
		chunk = append(chunk, d)
		read++
		if len(chunk) == cap(chunk) {
			if err := flush(); err != nil {
				return res, err
			}
		}
		if o.Progress != nil && read%10000 == 0 {
			o.Progress(read)
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	if o.Progress != nil {
		o.Progress(read)
	}

	// Stage 2: the last occurrence of each id wins; stored ids are
	// replaced. Everything is re-keyed by Pebble key.
	base := db.counters.NextDoc
	c := db.counters
	c.NextDoc = base + seq
	byKey := newExtSorter(fs, tmp, "bykey", o.Memory/2)
	defer byKey.close()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return res, classify(err)
	}
	defer it.Close()
	var old codec.DocRecord
	var kbuf []byte
	var pending struct {
		id    []byte
		seq   uint64
		value []byte
		ok    bool
	}
	emit := func() error {
		if !pending.ok {
			return nil
		}
		n := base + pending.seq
		record, keys := decodeLoadValue(pending.value)
		v, ok, err := seekExact(it, codec.AppendIDKey(kbuf[:0], string(pending.id)))
		if err != nil {
			return err
		}
		if ok {
			oldNum, err := codec.DecodeDocNum(v)
			if err != nil {
				return classify(err)
			}
			rv, ok, err := seekExact(it, codec.AppendDocKey(kbuf[:0], oldNum))
			if err != nil || !ok {
				return cmpOrErr(err, fmt.Errorf("%w: id %q names doc %d, which has no record", ErrCorrupt, pending.id, oldNum))
			}
			if err := codec.DecodeDocRecord(rv, &old); err != nil {
				return classify(err)
			}
			oldKeys, err := bands.AppendKeys(nil, old.Signature, db.bands)
			if err != nil {
				return classify(err)
			}
			if err := byKey.add(codec.AppendDocKey(nil, oldNum), 0, kindDelete, nil); err != nil {
				return err
			}
			for band, k := range oldKeys {
				if err := byKey.add(codec.AppendPostingKey(nil, band, k), oldNum, kindRemove, nil); err != nil {
					return err
				}
			}
			res.Replaced++
			c.Live--
		}
		if err := byKey.add(codec.AppendDocKey(nil, n), 0, kindSet, record); err != nil {
			return err
		}
		if err := byKey.add(codec.AppendIDKey(nil, string(pending.id)), 0, kindSet, codec.EncodeDocNum(n)); err != nil {
			return err
		}
		for band, k := range keys {
			if err := byKey.add(codec.AppendPostingKey(nil, band, k), n, kindAdd, nil); err != nil {
				return err
			}
		}
		res.Stored++
		c.Live++
		return nil
	}
	err = byID.iterate(func(key []byte, s uint64, _ byte, value []byte) error {
		if pending.ok && string(key) == string(pending.id) {
			res.Repeated++ // entries of one id come in input order: the later wins
		} else if err := emit(); err != nil {
			return err
		}
		pending.id = append(pending.id[:0], key...)
		pending.seq, pending.value, pending.ok = s, append(pending.value[:0], value...), true
		return nil
	})
	if err == nil {
		err = emit()
	}
	if err != nil {
		return res, err
	}
	byID.close()
	if err := byKey.add(codec.CountersKey, 0, kindSet, codec.EncodeCounters(c)); err != nil {
		return res, err
	}

	// Stage 3: SSTables in key order, one merge operand per posting list.
	paths, err := db.writeTables(fs, tmp, byKey)
	if err != nil {
		return res, err
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

// Entry kinds of the by-key sorter.
const (
	kindSet byte = iota
	kindDelete
	kindAdd    // a posting; seq is the doc number
	kindRemove // a removal posting; seq is the doc number
)

func cmpOrErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// encodeLoadValue packs a prepared document's record and band keys.
func encodeLoadValue(dst []byte, p prepared) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p.keys)))
	for _, k := range p.keys {
		dst = binary.LittleEndian.AppendUint64(dst, k)
	}
	return append(dst, p.record...)
}

func decodeLoadValue(v []byte) (record []byte, keys []uint64) {
	n, k := binary.Uvarint(v)
	v = v[k:]
	keys = make([]uint64, n)
	for i := range keys {
		keys[i] = binary.LittleEndian.Uint64(v[8*i:])
	}
	return v[8*n:], keys
}

// maxTableBytes is the size at which writeTables starts a new SSTable.
const maxTableBytes = 256 << 20

// writeTables writes the by-key entries as SSTables (non-overlapping, in
// key order) and returns their paths.
func (db *DB) writeTables(fs vfs.FS, dir string, s *extSorter) ([]string, error) {
	wopts := db.popts.MakeWriterOptions(len(db.popts.Levels)-1, db.pdb.TableFormat())
	if !db.man.StoreText {
		// NB: signatures and shingle sets are uniform hashes, which no
		// block compression shrinks; compressing them only costs time.
		wopts.Compression = sstable.NoCompression
	}
	var paths []string
	var w *sstable.Writer
	var size int
	closeTable := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		w = nil
		return err
	}
	open := func() error {
		path := fs.PathJoin(dir, fmt.Sprintf("load-%06d.sst", len(paths)))
		f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
		paths = append(paths, path)
		size = 0
		return nil
	}
	var listKey []byte
	var list []codec.Posting
	var vbuf []byte
	flushList := func() error {
		if len(list) == 0 {
			return nil
		}
		vbuf = codec.AppendPostings(vbuf[:0], list)
		size += len(listKey) + len(vbuf)
		err := w.Merge(listKey, vbuf)
		list = list[:0]
		return err
	}
	err := s.iterate(func(key []byte, seq uint64, kind byte, value []byte) error {
		if len(list) > 0 && string(key) != string(listKey) {
			if err := flushList(); err != nil {
				return err
			}
		}
		if w == nil || (size > maxTableBytes && len(list) == 0) {
			if err := closeTable(); err != nil {
				return err
			}
			if err := open(); err != nil {
				return err
			}
		}
		switch kind {
		case kindSet:
			size += len(key) + len(value)
			return w.Set(key, value)
		case kindDelete:
			size += len(key)
			return w.Delete(key)
		default:
			listKey = append(listKey[:0], key...)
			list = append(list, codec.Posting{Doc: seq, Remove: kind == kindRemove})
			return nil
		}
	})
	if err == nil {
		err = flushList()
	}
	if cerr := closeTable(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	return paths, nil
}
