package db

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// heldFS is the filesystem of Pebble's open: the files of the store that
// Pebble deletes as obsolete while the open is under way (the tables, logs
// and manifests its manifest does not list) are deleted only once lshdb
// has found the store to be its index (release), and never by an open
// that is refused: the handle is closed with them kept. (A Pebble Cleaner
// would say it more directly, but its method takes a type of Pebble's
// internal package.)
//
// NB: Pebble reads a damaged record of its MANIFEST as the torn end a
// crash leaves and opens the store as of the records before it. A
// writable open then deleted every table written since (a bit flipped in
// a fresh index's MANIFEST: all of its 8,000 documents), before lshdb
// found no index there and refused: a refused command destroyed the
// data, beyond repair by hand (a crash-safety review). With the tables
// kept, the open sees them (orphanTables) and says what happened.
type heldFS struct {
	vfs.FS
	dir   string
	mu    sync.Mutex
	held  bool
	files []string
}

func newHeldFS(fs vfs.FS, dir string) *heldFS {
	return &heldFS{FS: fs, dir: fs.PathDir(fs.PathJoin(dir, "x")), held: true}
}

// Remove removes name, or, while the open is under way, keeps it for
// release if it is a table, log or manifest of the store.
func (f *heldFS) Remove(name string) error {
	f.mu.Lock()
	if f.held && f.storeFile(name) {
		f.files = append(f.files, name)
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	return f.FS.Remove(name)
}

func (f *heldFS) storeFile(name string) bool {
	if f.FS.PathDir(name) != f.dir {
		return false
	}
	base := f.FS.PathBase(name)
	return strings.HasSuffix(base, ".sst") || strings.HasSuffix(base, ".log") || strings.HasPrefix(base, "MANIFEST-")
}

// release deletes the files kept while the open was under way, and later
// ones as Pebble asks. One that cannot be deleted is logged and left: it
// takes room, and Pebble finds it obsolete again at the next open.
func (f *heldFS) release(log interface{ Warn(string, ...any) }) {
	f.mu.Lock()
	files := f.files
	f.files, f.held = nil, false
	f.mu.Unlock()
	for _, name := range files {
		if err := f.FS.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("lshdb: deleting an obsolete file of the store", "path", name, "error", err)
		}
	}
}

// orphanTables returns the table files in dir that pdb's manifest does
// not list, by name, in order. A crash in a flush or compaction may leave
// one (its output, or its inputs not yet deleted), which Pebble deletes as
// obsolete; a MANIFEST that lost its later records leaves every table
// written since.
func orphanTables(fs vfs.FS, dir string, pdb *pebble.DB) ([]string, error) {
	levels, err := pdb.SSTables()
	if err != nil {
		return nil, err
	}
	live := make(map[uint64]bool)
	for _, l := range levels {
		for _, t := range l {
			live[uint64(t.BackingSSTNum)] = true
		}
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var orphans []string
	for _, n := range names {
		num, ok := strings.CutSuffix(n, ".sst")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(num, 10, 64); err == nil && !live[v] {
			orphans = append(orphans, n)
		}
	}
	slices.Sort(orphans)
	return orphans, nil
}

// manifestLostTables is loadManifest's error for a store with no lshdb
// manifest (or nothing at all) beside table files its manifest does not
// list: its MANIFEST lost records, and with them the index.
func manifestLostTables(dir string, orphans []string) error {
	list := strings.Join(orphans[:min(len(orphans), 5)], ", ")
	if len(orphans) > 5 {
		list += fmt.Sprintf(" and %d more", len(orphans)-5)
	}
	return fmt.Errorf("%w: %s: the store's manifest (MANIFEST-*) lists no lshdb index, and %d table files it does not list are there (%s): the manifest lost its later records (damaged), and with them the index; no file was deleted", ErrCorrupt, dir, len(orphans), list)
}
