package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/fspath"
)

// restoreFixture makes an index at root/idx of 200 documents, backs it up
// to root/bk, then writes to the index (inserts, deletes, a compaction)
// so that the two differ; it returns the documents of each.
func restoreFixture(t *testing.T, root string) (backup, later map[string]*StoredDoc) {
	t.Helper()
	ctx := context.Background()
	d := mustOpen(t, filepath.Join(root, "idx"), nil)
	defer d.Close()
	var docs []Doc
	for i := range 260 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d about %s, version %d", i, []string{"foxes", "owls", "cats"}[i%3], i%7)})
	}
	if _, err := d.PutBatch(docs[:200], nil); err != nil {
		t.Fatal(err)
	}
	backup = allDocs(t, d)
	if err := d.Backup(ctx, filepath.Join(root, "bk")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBatch(docs[200:], nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d001", "d050", "d199"} {
		if err := d.Delete(id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	later = allDocs(t, d)
	if len(later) != 257 || len(backup) != 200 {
		t.Fatalf("fixture: %d and %d documents", len(backup), len(later))
	}
	return backup, later
}

// docsIn opens dir read-only and returns its documents.
func docsIn(t *testing.T, dir string) map[string]*StoredDoc {
	t.Helper()
	d := mustOpen(t, dir, &Options{ReadOnly: true, MustExist: true})
	defer d.Close()
	return allDocs(t, d)
}

// Ensure that Restore puts the backup's state in the index's place: the
// oracle is the model of each state (the documents read before and after
// the later writes). The index that was there is kept aside, whole; the
// backup is not written; the restored index checks clean, has an instance
// of its own and takes writes; and a restore into an absent or empty
// directory needs nothing moved aside.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	backup, later := restoreFixture(t, root)
	idx, bk := filepath.Join(root, "idx"), filepath.Join(root, "bk")
	docsIn(t, bk) // NB: a read-only open makes the lock file
	bkFiles := dirListing(t, bk)

	var during []string
	restoreSwapped = func() { during = dirNames(t, root) }
	rep, err := Restore(ctx, bk, idx, &RestoreOptions{Verify: true})
	restoreSwapped = nil
	if err != nil {
		t.Fatal(err)
	}
	if got := docsIn(t, idx); !reflect.DeepEqual(got, backup) {
		t.Errorf("the restored index holds %d documents, the backup %d (or they differ)", len(got), len(backup))
	}
	if rep.Docs != uint64(len(backup)) {
		t.Errorf("report: %d documents, want %d", rep.Docs, len(backup))
	}
	if !strings.HasPrefix(rep.Aside, idx+".before-restore-") {
		t.Fatalf("the old index went to %q", rep.Aside)
	}
	if got := docsIn(t, rep.Aside); !reflect.DeepEqual(got, later) {
		t.Errorf("the index moved aside holds %d documents, it held %d (or they differ)", len(got), len(later))
	}
	if got := docsIn(t, bk); !reflect.DeepEqual(got, backup) {
		t.Errorf("the backup changed: %d documents", len(got))
	}
	if got := dirListing(t, bk); !reflect.DeepEqual(got, bkFiles) {
		t.Errorf("the backup's files changed: %v, were %v", got, bkFiles)
	}
	if _, err := os.Stat(idx + restoreStaging); !os.IsNotExist(err) {
		t.Errorf("the staging directory is left: %v", err)
	}
	// Between the renames, the copy was complete under its staging name.
	if !slices.Contains(during, "idx"+restoreStaging) || slices.Contains(during, "idx") {
		t.Errorf("between the renames the directory held %v", during)
	}
	d := mustOpen(t, idx, &Options{MustExist: true})
	b := mustOpen(t, bk, &Options{ReadOnly: true, MustExist: true})
	info, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Origin == nil || info.Origin.Instance != b.Instance() || d.Instance() == b.Instance() {
		t.Errorf("the restored index's instance %s, origin %+v; the backup's instance %s", d.Instance(), info.Origin, b.Instance())
	}
	b.Close()
	if r, err := d.Check(ctx); err != nil || !r.OK() || r.Docs != len(backup) {
		t.Errorf("check of the restored index: %+v %v", r, err)
	}
	if err := d.Put(Doc{ID: "new", Text: "a write after the restore"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got := docsIn(t, bk); len(got) != len(backup) {
		t.Errorf("a write to the restored index reached the backup: %d documents", len(got))
	}

	// The restored index has the mode of the index it replaced, not the
	// backup's (a read-through's R4).
	if err := os.Chmod(idx, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, bk, idx, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(idx); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the restored index's mode: %v %v, want 0700 as the index it replaced", fi.Mode(), err)
	}
	if fi, err := os.Stat(bk); err != nil || fi.Mode().Perm() == 0o700 {
		t.Fatalf("the backup's mode %v %v: the check above would prove nothing", fi.Mode(), err)
	}

	// Into an absent directory, and into an empty one: nothing aside.
	for _, to := range []string{filepath.Join(root, "fresh", "idx"), t.TempDir()} {
		rep, err := Restore(ctx, bk, to, nil)
		if err != nil {
			t.Fatalf("restore into %s: %v", to, err)
		}
		if rep.Aside != "" || rep.Docs != uint64(len(backup)) {
			t.Errorf("restore into %s: %+v", to, rep)
		}
		if got := docsIn(t, to); !reflect.DeepEqual(got, backup) {
			t.Errorf("restore into %s: %d documents", to, len(got))
		}
	}

	// Through a symbolic link: the index is replaced where it is, and the
	// link still leads to it.
	link := filepath.Join(root, "link")
	if err := os.Symlink(rep.Aside, link); err != nil {
		t.Fatal(err)
	}
	rep2, err := Restore(ctx, bk, link, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v %v", fi, err)
	}
	if got := docsIn(t, link); !reflect.DeepEqual(got, backup) {
		t.Errorf("through the link: %d documents", len(got))
	}
	if !strings.HasPrefix(rep2.Aside, rep.Aside+".before-restore-") {
		t.Errorf("through the link, the old index went to %q", rep2.Aside)
	}
	if got := docsIn(t, rep2.Aside); !reflect.DeepEqual(got, later) {
		t.Errorf("the index moved aside through the link: %d documents", len(got))
	}
}

// Ensure that a restore that cannot be made leaves the index as it was,
// each refusal with its error: the index in use (ErrLocked), a damaged
// backup (ErrCorrupt, with Verify), a backup that is not there
// (ErrNotExist), the backup as its own target, a directory of other files
// (ErrNotIndex), a restore stopped earlier (its staging directory), a
// Redis target, and a cancelled context.
func TestRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	_, later := restoreFixture(t, root)
	idx, bk := filepath.Join(root, "idx"), filepath.Join(root, "bk")
	unchanged := func(what string) {
		t.Helper()
		if got := docsIn(t, idx); !reflect.DeepEqual(got, later) {
			t.Errorf("%s: the index holds %d documents, it held %d (or they differ)", what, len(got), len(later))
		}
		for _, n := range dirNames(t, root) {
			if strings.Contains(n, ".before-restore-") || n == "idx"+restoreStaging {
				t.Errorf("%s: left %s", what, n)
			}
		}
	}

	d := mustOpen(t, idx, &Options{MustExist: true})
	if _, err := Restore(ctx, bk, idx, nil); !errors.Is(err, ErrLocked) {
		t.Errorf("restore over an index in use: %v, want ErrLocked", err)
	}
	d.Close()
	unchanged("in use")

	if _, err := Restore(ctx, filepath.Join(root, "nothing"), idx, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("restore from nothing: %v, want ErrNotExist", err)
	}
	unchanged("from nothing")

	for _, to := range []string{bk, filepath.Join(bk, "inner")} {
		if _, err := Restore(ctx, bk, to, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("restore of %s into %s: %v, want ErrInvalidOptions", bk, to, err)
		}
	}
	if _, err := Restore(ctx, bk, "redis://127.0.0.1:1/x", nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("restore into Redis: %v, want ErrUnsupported", err)
	}

	other := filepath.Join(root, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Restore(ctx, bk, other, nil); !errors.Is(err, ErrNotIndex) {
		t.Errorf("restore over a directory of other files: %v, want ErrNotIndex", err)
	}
	if b, err := os.ReadFile(filepath.Join(other, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the other directory's file: %q %v", b, err)
	}

	// The working directory would go aside with the old index (a
	// read-through's R5).
	t.Chdir(idx)
	if _, err := Restore(ctx, bk, ".", nil); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "working directory") {
		t.Errorf("restore into the working directory: %v, want ErrInvalidOptions", err)
	}
	t.Chdir(root)
	unchanged("the working directory")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Restore(cctx, bk, idx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("restore with a cancelled context: %v", err)
	}
	unchanged("cancelled")

	// A staging directory left by a restore killed between its renames.
	if err := os.Mkdir(idx+restoreStaging, 0o755); err != nil {
		t.Fatal(err)
	}
	// NB: not ErrInvalidOptions, a usage error (exit 2): the disk's
	// state stops it (OP-4).
	if _, err := Restore(ctx, bk, idx, nil); !errors.Is(err, fs.ErrExist) || errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), idx+restoreStaging) {
		t.Errorf("restore beside a staging directory: %v, want fs.ErrExist naming it", err)
	}
	os.Remove(idx + restoreStaging)
	unchanged("staging left")

	// Too little room on the index's disk for the copy and the reserve
	// (a read-through's R9): refused before anything is written; with
	// the check turned off, it goes ahead.
	before := dirNames(t, root)
	func() {
		defer func(f func(string) (int64, error)) { backupTargetFree = f }(backupTargetFree)
		var asked []string
		backupTargetFree = func(dir string) (int64, error) {
			asked = append(asked, dir)
			return DefaultDiskReserve + 1000, nil
		}
		_, err := Restore(ctx, bk, idx, nil)
		if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "reserve") {
			t.Errorf("restore onto a disk without room: %v, want ErrDiskFull", err)
		}
		if !slices.Contains(asked, root) {
			t.Errorf("the room asked of %q, not of the index's parent %s", asked, root)
		}
		unchanged("no room")
		if names := dirNames(t, root); !slices.Equal(names, before) {
			t.Errorf("a restore refused for room left %q (before: %q)", names, before)
		}
		if _, err := Restore(ctx, bk, filepath.Join(root, "fresh"), &RestoreOptions{DiskReserve: -1}); err != nil {
			t.Errorf("restore with no room check: %v", err)
		}
		os.RemoveAll(filepath.Join(root, "fresh"))
	}()

	// Stopped while the copy is checked (the copy made, not yet in
	// place): the index as it was, and no copy left.
	func() {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer func() { backupVerifyHook = nil }()
		backupVerifyHook = func(string) { cancel() }
		if _, err := Restore(cctx, bk, idx, &RestoreOptions{Verify: true}); !errors.Is(err, context.Canceled) {
			t.Errorf("restore stopped during its copy: %v, want context.Canceled", err)
		}
		unchanged("stopped during the copy")
		if names := dirNames(t, root); !slices.Equal(names, before) {
			t.Errorf("a restore stopped during its copy left %q (before: %q)", names, before)
		}
	}()

	// The copy's rename fails once the old index is aside (a read-through's
	// R2): the old index is put back, and the error says so.
	func() {
		defer func() { restoreSwapped = nil }()
		restoreSwapped = func() { os.Rename(idx+restoreStaging, idx+".elsewhere") }
		rep, err := Restore(ctx, bk, idx, nil)
		if err == nil || rep != nil || !strings.Contains(err.Error(), "is as it was") {
			t.Errorf("a failed last rename: %v (report %+v), want an error saying the index is as it was", err, rep)
		}
		os.RemoveAll(idx + ".elsewhere")
		unchanged("last rename failed, old index put back")
	}()

	// ... and when the old index cannot be put back either (dir taken
	// meanwhile), the report names where it is, and nothing is lost.
	func() {
		defer func() { restoreSwapped = nil }()
		restoreSwapped = func() {
			os.MkdirAll(filepath.Join(idx, "taken"), 0o755)
		}
		rep, err := Restore(ctx, bk, idx, nil)
		if err == nil || rep == nil || rep.Aside == "" || !strings.Contains(err.Error(), rep.Aside) || !strings.Contains(err.Error(), idx+restoreStaging) {
			t.Fatalf("a failed last rename with the old index stuck aside: %v (report %+v), want both places named", err, rep)
		}
		if got := docsIn(t, rep.Aside); !reflect.DeepEqual(got, later) {
			t.Errorf("the index aside holds %d documents, it held %d", len(got), len(later))
		}
		if got, want := docsIn(t, idx+restoreStaging), docsIn(t, bk); !reflect.DeepEqual(got, want) {
			t.Errorf("the restored copy holds %d documents, the backup %d", len(got), len(want))
		}
		// Put back by hand, as the error says.
		os.RemoveAll(idx)
		os.RemoveAll(idx + restoreStaging)
		if err := os.Rename(rep.Aside, idx); err != nil {
			t.Fatal(err)
		}
		unchanged("put back by hand")
	}()

	// A damaged backup: bytes of its biggest table overwritten. Verify
	// refuses it and leaves the index; the damaged copy is kept for a look.
	// NB: the backup holds its documents in the log it copied (a
	// backup's stamp opens nothing writable); a writable open and its
	// Close flush them into a table.
	mustOpen(t, bk, &Options{MustExist: true}).Close()
	damageBiggestTable(t, bk)
	if _, err := Restore(ctx, bk, idx, &RestoreOptions{Verify: true}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("restore of a damaged backup: %v, want ErrCorrupt", err)
	}
	unchanged("damaged backup")
	if _, err := os.Stat(idx + restoreStaging + ".damaged"); err != nil {
		t.Errorf("the damaged copy is not kept: %v", err)
	}
}

// dirNames returns the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Ensure that an index whose restore stopped before its copy took the
// index's name (killed between the renames, or before the one rename of a
// restore into an absent directory) is refused by every Open, read or
// write, naming the copy and the index it replaced, and not made anew
// empty: a crash review's insert made an empty index there, which the next
// restore took for the index to replace. The oracle: the state between
// the renames, seen from the restore's own hook; the documents of the
// backup once the copy is renamed by hand, as the error says.
func TestOpenRefusesAStoppedRestore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	backup, _ := restoreFixture(t, root)
	idx, bk := filepath.Join(root, "idx"), filepath.Join(root, "bk")
	// refused opens dir (whose index is at real) with o, and wants it
	// refused.
	refused := func(what, dir, real string, o *Options, aside bool) {
		t.Helper()
		d, err := Open(dir, o)
		var stopped *RestoreStoppedError
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrNotExist) || !errors.As(err, &stopped) {
			t.Fatalf("%s: Open: %v, want a RestoreStoppedError", what, err)
		}
		real = fspath.Resolve(real)
		if stopped.Staging != real+restoreStaging || (len(stopped.Aside) == 1) != aside || !strings.Contains(err.Error(), stopped.Staging) {
			t.Fatalf("%s: %v: staging %q, aside %q", what, err, stopped.Staging, stopped.Aside)
		}
		if aside && (!strings.HasPrefix(stopped.Aside[0], real+".before-restore-") || !strings.Contains(err.Error(), stopped.Aside[0])) {
			t.Fatalf("%s: %v: aside %q", what, err, stopped.Aside)
		}
		if names, err := os.ReadDir(dir); err == nil && len(names) > 0 {
			t.Fatalf("%s: the refused Open left %d files in %s", what, len(names), dir)
		}
	}

	// Over an index: between the two renames.
	seen := false
	restoreSwapped = func() {
		seen = true
		refused("between the renames, read-only", idx, idx, &Options{ReadOnly: true}, true)
		refused("between the renames, must exist", idx, idx, &Options{MustExist: true}, true)
		refused("between the renames, a write", idx, idx, nil, true)
		if _, err := os.Stat(idx); !os.IsNotExist(err) {
			t.Fatalf("between the renames, after the refused opens: %v", err)
		}
	}
	_, err := Restore(ctx, bk, idx, nil)
	restoreSwapped = nil
	if err != nil || !seen {
		t.Fatalf("restore: %v (the state between the renames seen: %v)", err, seen)
	}

	// Into an absent directory, and an empty one: the copy made, not yet
	// renamed (as a restore killed then leaves it).
	for _, empty := range []bool{false, true} {
		dir := filepath.Join(root, fmt.Sprintf("new-%v", empty))
		if empty {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		src := mustOpen(t, bk, &Options{ReadOnly: true, MustExist: true})
		if err := src.Backup(ctx, dir+restoreStaging); err != nil {
			t.Fatal(err)
		}
		src.Close()
		refused(fmt.Sprintf("empty %v, a write", empty), dir, dir, nil, false)
		refused(fmt.Sprintf("empty %v, read-only", empty), dir, dir, &Options{ReadOnly: true}, false)
		// Through symbolic links to the directory, absent or empty: one
		// of an absolute path, and one relative from a directory
		// elsewhere.
		link := dir + "-link"
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		refused(fmt.Sprintf("empty %v, through a link", empty), link, dir, nil, false)
		rel := filepath.Join(root, "links", filepath.Base(dir))
		if err := os.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", filepath.Base(dir)), rel); err != nil {
			t.Fatal(err)
		}
		refused(fmt.Sprintf("empty %v, through a relative link", empty), rel, dir, nil, false)
		// A restore again is refused as every command is there, not as a
		// usage error (OP-4).
		var stopped *RestoreStoppedError
		if _, err := Restore(ctx, bk, dir, nil); !errors.As(err, &stopped) || !errors.Is(err, ErrNotExist) || errors.Is(err, ErrInvalidOptions) {
			t.Errorf("empty %v: a restore again: %v, want a RestoreStoppedError", empty, err)
		}
		// Finished by hand, as the error says.
		os.Remove(dir)
		if err := os.Rename(dir+restoreStaging, dir); err != nil {
			t.Fatal(err)
		}
		if got := docsIn(t, link); !reflect.DeepEqual(got, backup) {
			t.Errorf("empty %v: the copy renamed by hand holds %d documents, the backup %d", empty, len(got), len(backup))
		}
	}
}
