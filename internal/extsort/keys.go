package extsort

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// KeySorter sorts (key, tag) entries by key, then tag, within a memory
// budget: the keys accumulate in an arena, and each time the arena and
// the entries reach the budget they are sorted and written to a run file;
// Iterate merges the runs.
type KeySorter struct {
	fs  vfs.FS
	dir string
	// makeDir, when set, makes dir at the first spill (NewKeySorterLazy).
	makeDir func() (string, error)
	name    string // run files are dir/name-NNNNNN.run
	budget  int
	// fullEnts and fullArena are what ents and arena are allocated at, at
	// most (half the budget each, up to upfrontBytes).
	fullEnts, fullArena int
	arena               []byte
	ents                []keyEnt
	runs                []string
}

type keyEnt struct {
	off, klen int
	tag       uint64
}

// keyEntSize is the memory of one entry besides its key.
const keyEntSize = 24

// upfrontBytes bounds what a sorter allocates before it holds anything:
// its budget, up to this.
const upfrontBytes = 1 << 30

// NewKeySorter returns a sorter that holds about budget bytes (at least
// 64 KiB) in memory and writes its runs as dir/name-NNNNNN.run.
func NewKeySorter(fs vfs.FS, dir, name string, budget int) *KeySorter {
	budget = max(budget, 64<<10)
	return &KeySorter{fs: fs, dir: dir, name: name, budget: budget,
		fullEnts: min(budget/2, upfrontBytes) / keyEntSize, fullArena: min(budget/2, upfrontBytes)}
}

// NewKeySorterLazy is NewKeySorter whose directory is made by makeDir at
// the first spill, if any: a sort that fits its budget touches no disk
// (a sorted pairs run needed a writable $TMPDIR for a few pairs, a
// nightly review's NB-2). Dir returns it once made.
func NewKeySorterLazy(fs vfs.FS, makeDir func() (string, error), name string, budget int) *KeySorter {
	s := NewKeySorter(fs, "", name, budget)
	s.makeDir = makeDir
	return s
}

// Dir returns the directory of the runs: "" while a lazy sorter has
// spilled nothing.
func (s *KeySorter) Dir() string { return s.dir }

func (s *KeySorter) key(e keyEnt) []byte { return s.arena[e.off : e.off+e.klen] }

// Add adds an entry; key is copied.
func (s *KeySorter) Add(key []byte, tag uint64) error {
	// NB: small at first, growing eightfold as they fill, up to their
	// full size (see BandSorter.Add): growing by append (by a quarter, at
	// that size) would copy more, and hold two copies at a peak. Up to a
	// size any machine reserves; above it, they grow by append.
	switch {
	case s.ents == nil:
		s.ents = make([]keyEnt, 0, min(s.fullEnts, firstEntries))
		s.arena = make([]byte, 0, min(s.fullArena, firstEntries*keyEntSize))
	case len(s.ents) == cap(s.ents) && cap(s.ents) < s.fullEnts:
		s.ents = append(make([]keyEnt, 0, min(s.fullEnts, 8*cap(s.ents))), s.ents...)
	}
	if len(s.arena)+len(key) > cap(s.arena) && cap(s.arena) < s.fullArena {
		s.arena = append(make([]byte, 0, max(min(s.fullArena, 8*cap(s.arena)), len(s.arena)+len(key))), s.arena...)
	}
	// NB: the budget counts the entries' bookkeeping too: with short keys
	// it is most of the memory.
	if len(s.arena)+len(key)+(len(s.ents)+1)*keyEntSize > s.budget && len(s.ents) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	off := len(s.arena)
	s.arena = append(s.arena, key...)
	s.ents = append(s.ents, keyEnt{off, len(key), tag})
	return nil
}

func (s *KeySorter) sortMem() {
	slices.SortFunc(s.ents, func(a, b keyEnt) int {
		return cmp.Or(bytes.Compare(s.key(a), s.key(b)), cmp.Compare(a.tag, b.tag))
	})
}

// spill writes the sorted in-memory entries to a new run file.
func (s *KeySorter) spill() error {
	if s.dir == "" && s.makeDir != nil {
		dir, err := s.makeDir()
		if err != nil {
			return err
		}
		s.dir = dir
	}
	s.sortMem()
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("%s-%06d.run", s.name, len(s.runs)))
	err := writeRun(s.fs, path, func(w *bufio.Writer) {
		for _, e := range s.ents {
			appendKeyRecord(w, s.key(e), e.tag)
		}
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	s.arena, s.ents = s.arena[:0], s.ents[:0]
	return nil
}

// Runs returns how many runs the sorter has written.
func (s *KeySorter) Runs() int { return len(s.runs) }

func compareKeyEntry(a, b KeyEntry) int {
	return cmp.Or(bytes.Compare(a.Key, b.Key), cmp.Compare(a.Tag, b.Tag))
}

// Iterate calls fn for every entry in (key, tag) order: the entries in
// memory when nothing spilled, otherwise a merge of the runs (the entries
// left in memory spilled first, and the memory released). The key passed
// to fn is valid only during the call.
func (s *KeySorter) Iterate(fn func(key []byte, tag uint64) error) error {
	if len(s.runs) == 0 {
		s.sortMem()
		for _, e := range s.ents {
			if err := fn(s.key(e), e.tag); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.ents) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena, s.ents = nil, nil // NB: release the budget before the merge
	srcs := make([]Source[KeyEntry], 0, len(s.runs))
	var files []vfs.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, path := range s.runs {
		f, err := s.fs.Open(path)
		if err != nil {
			return err
		}
		files = append(files, f)
		srcs = append(srcs, newKeyReader(f))
	}
	return Merge(srcs, compareKeyEntry, func(e KeyEntry) error { return fn(e.Key, e.Tag) })
}

// Close removes the run files and releases the memory.
func (s *KeySorter) Close() {
	s.arena, s.ents = nil, nil
	for _, p := range s.runs {
		s.fs.Remove(p)
	}
	s.runs = nil
}

// KeyLog writes (key, tag) records to a file in the order they are
// appended, and replays them in that order: a sorted stream (a load's id
// map, as it comes out of a KeySorter) kept on disk until it is needed.
type KeyLog struct {
	fs   vfs.FS
	path string
	w    *runWriter
}

// CreateKeyLog creates the file at path.
func CreateKeyLog(fs vfs.FS, path string) (*KeyLog, error) {
	w, err := createRun(fs, path)
	if err != nil {
		return nil, err
	}
	return &KeyLog{fs: fs, path: path, w: w}, nil
}

// Append writes a record. A write error is reported by Finish.
func (l *KeyLog) Append(key []byte, tag uint64) {
	appendKeyRecord(l.w.w, key, tag)
}

// Finish flushes and closes the file for writing; then Replay may read it.
func (l *KeyLog) Finish() error { return l.w.finish() }

// Replay calls fn for every record in the order appended. The key passed
// to fn is valid only during the call. Several Replays may run at once.
func (l *KeyLog) Replay(fn func(key []byte, tag uint64) error) error {
	f, err := l.fs.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := newKeyReader(f)
	for {
		e, ok, err := r.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(e.Key, e.Tag); err != nil {
			return err
		}
	}
}

// Close closes the file if it is open and removes it.
func (l *KeyLog) Close() {
	l.w.abort()
	l.fs.Remove(l.path)
}
