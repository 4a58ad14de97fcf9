package db

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

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
	// NB: the database's own columnar blocks. Row blocks (Pebblev4) wrote
	// format 1's 10 KB records 1.2x faster, but a posting table in
	// columnar blocks is a third smaller: building debian-descriptions
	// gave 21.7 MB against 27.6 MB on disk (0.83x and 1.06x the text),
	// and took 0.87x the time, in one run.
	switch {
	case name == "ids":
		// NB: ids are the user's strings, which compress (generated ids
		// to about half), as a compaction compresses them: this table
		// was compacted once at the end of every fresh load (see
		// writeTables), so it was stored that way.
		wopts.Compression = compactionCompression
	case !strings.HasPrefix(name, "records") && !strings.HasPrefix(name, "upgrade-records") || db.man.Storage != StorageText && !db.man.StoreText:
		// NB: only records with text compress: signatures, shingle sets,
		// posting lists and doc numbers are uniform hashes or small
		// integers, which block compression hardly shrinks; compressing
		// them only costs time.
		wopts.Compression = sstable.NoCompression
	default:
		wopts.Compression = loadCompression
	}
	return &tableSeq{fs: lt.fs, dir: lt.dir, name: name, wopts: wopts, maxBytes: lt.maxBytes}
}

// loadCompression is the block compression of the record tables that a
// load writes (when they hold text): zstd level 1, against level 3 for
// the tables that compactions write. NB: on 200,000 generated documents,
// level 1 made the index 3.6% larger (0.575x against 0.555x the text)
// and took 4-10% less CPU time for the whole build in two runs each; a
// load is CPU-bound, a compaction rewrites in the background.
var loadCompression = func() *sstable.CompressionProfile {
	p := *sstable.ZstdCompression
	p.Name = "lshdb-load-zstd1"
	p.DataBlocks = sstable.BalancedCompression.DataBlocks // zstd level 1
	p.ValueBlocks = p.DataBlocks
	return &p
}()

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
