package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensure that Open with a LockTimeout waits for the database to be
// released and then opens it, and that it fails with ErrLocked once the
// timeout has passed while the database stays held.
func TestLockTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	holder := mustOpen(t, dir, nil)
	if err := holder.Put(Doc{ID: "a", Text: "a document to find"}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// NB: held by a handle of this process, which the message says.
	if _, err := Open(dir, &Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another handle in this process") {
		t.Fatalf("held: %v", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", waited)
	}
	if _, err := Open(dir, &Options{LockTimeout: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a negative timeout: %v", err)
	}
	// NB: the holder closes only once the waiter has failed to take the
	// lock at least once: the waiter then must wait, not find it free.
	retried := make(chan struct{}, 1)
	lockRetried = func() {
		select {
		case retried <- struct{}{}:
		default:
		}
	}
	defer func() { lockRetried = nil }()
	type result struct {
		d   *DB
		err error
	}
	got := make(chan result, 1)
	go func() {
		d, err := Open(dir, &Options{LockTimeout: time.Minute})
		got <- result{d, err}
	}()
	<-retried
	holder.Close()
	r := <-got
	if r.err != nil {
		t.Fatalf("after the release: %v", r.err)
	}
	defer r.d.Close()
	if ok, _ := r.d.Has("a"); !ok {
		t.Error("the document is missing")
	}
}

// Ensure that Opens racing to create one new directory never lose a
// write one of them acknowledged: an Open refused the lock leaves the
// directory alone (it removed it from under the winner, whose writes were
// lost or whose Pebble died on a missing manifest), and a creating Open
// that fails (an unreachable banding, found under the lock) removes only
// the directory it made and held. Oracle: a reopen holding every id a
// winner wrote; every refusal is ErrLocked or ErrInvalidOptions.
func TestOpenRaceNewDirectory(t *testing.T) {
	base := t.TempDir()
	for round := range 40 {
		dir := filepath.Join(base, fmt.Sprint(round), "idx")
		var mu sync.Mutex
		var written []string
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				o := &Options{ExpirySweep: -1}
				switch g {
				case 0:
					o.Threshold = 0.01 // fails under the lock, after the directory is made
				case 1:
					o.LockTimeout = 5 * time.Second
				}
				d, err := Open(dir, o)
				if err != nil {
					if !errors.Is(err, ErrLocked) && !errors.Is(err, ErrInvalidOptions) {
						t.Errorf("round %d, opener %d: %v", round, g, err)
					}
					return
				}
				id := fmt.Sprintf("doc%d", g)
				if err := d.Put(Doc{ID: id, Text: "a document written by one of the racing opens " + id}, nil); err != nil {
					t.Errorf("round %d: put: %v", round, err)
				} else {
					mu.Lock()
					written = append(written, id)
					mu.Unlock()
				}
				if err := d.Close(); err != nil {
					t.Errorf("round %d: close: %v", round, err)
				}
			})
		}
		wg.Wait()
		if len(written) == 0 {
			continue // NB: the failing opener held the lock each time the others tried
		}
		d, err := Open(dir, &Options{MustExist: true})
		if err != nil {
			t.Fatalf("round %d: reopening after writes %v were acknowledged: %v", round, written, err)
		}
		for _, id := range written {
			if ok, err := d.Has(id); !ok || err != nil {
				t.Errorf("round %d: acknowledged %s lost (%v)", round, id, err)
			}
		}
		d.Close()
	}
}

// Ensure that a path with ".." after a symbolic link opens the directory
// the system resolves it to, the link's target's parent: Pebble joined
// its file names lexically, so Open("link/../idx") made the index in one
// directory and looked for its lock file in another (it failed with
// ENOENT). The index made there is the one a plain path then opens.
func TestOpenDotDotAfterLink(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "a", "b"), link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	d, err := Open(link+"/../idx", nil)
	if err != nil {
		t.Fatalf("Open(link/../idx): %v", err)
	}
	if err := d.Put(Doc{ID: "x", Text: "a document stored through a link and a parent"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(root, "a", "idx"), nil); !errors.Is(err, ErrLocked) {
		t.Errorf("a second Open of a/idx while link/../idx is open: %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "idx")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(link/../idx) made %s (the lexical reading): %v", filepath.Join(root, "idx"), err)
	}
	d, err = Open(filepath.Join(root, "a", "idx"), &Options{MustExist: true})
	if err != nil {
		t.Fatalf("Open(a/idx), where link/../idx is: %v", err)
	}
	defer d.Close()
	if _, err := d.Get("x"); err != nil {
		t.Errorf("Get(x) from a/idx: %v", err)
	}
}

// Ensure that a second Open of an index in the same process is refused
// however its path is spelled (relative, with "./", through a symbolic
// link, with a trailing "/."), as by its first spelling: each was a lock
// of its own, and two DB values wrote one index (the synced writes of
// one were lost on reopen). Once the first is closed, each opens.
func TestLockedUnderAnotherName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	first, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Put(Doc{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, nil); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	names := []string{dir, rel, "." + string(filepath.Separator) + rel, link, dir + string(filepath.Separator) + "."}
	// A bind mount of the index's parent (root only: CI runs as root) is
	// the same directory under a name no link resolves to.
	bind := t.TempDir()
	if out, err := exec.Command("mount", "--bind", filepath.Dir(dir), bind).CombinedOutput(); err != nil {
		t.Logf("no bind mount here (needs root): %v: %s", err, out)
	} else {
		t.Cleanup(func() { exec.Command("umount", bind).Run() })
		names = append(names, filepath.Join(bind, "idx"))
	}
	for _, name := range names {
		d, err := Open(name, &Options{MustExist: true})
		if !errors.Is(err, ErrLocked) {
			if err == nil {
				d.Close()
			}
			t.Errorf("Open(%q) while %q is open: %v, want ErrLocked", name, dir, err)
		}
	}
	// The refused opens left the first one's lock and data as they were.
	if err := first.Put(Doc{ID: "b", Text: "a second document, synced"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		d, err := Open(name, &Options{MustExist: true})
		if err != nil {
			t.Fatalf("Open(%q) after Close: %v", name, err)
		}
		if n, err := d.Count(); err != nil || n != 2 {
			t.Errorf("Open(%q): %d documents (%v), want 2", name, n, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Ensure that a directory left by a create killed before its store was
// whole (Pebble's LOCK and first manifest, no marker, no log, no table:
// what a kill -9 early in a first build left, in a review) is no index to
// a reader, is made anew by a build's open, and is removed by Drop: every
// command, drop and the nightly build's re-run included, refused it as
// damaged. The same for a directory of the LOCK alone. The oracle: the
// documents put after, read back from a reopened index.
func TestUnfinishedCreate(t *testing.T) {
	for _, files := range [][]string{{"LOCK", "MANIFEST-000001"}, {"LOCK"}} {
		t.Run(strings.Join(files, "+"), func(t *testing.T) {
			mk := func() string {
				dir := filepath.Join(t.TempDir(), "idx")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, f := range files {
					size := 0
					if f != "LOCK" {
						size = 39 // NB: a first manifest as Pebble begins it
					}
					if err := os.WriteFile(filepath.Join(dir, f), make([]byte, size), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return dir
			}
			dir := mk()
			for _, o := range []*Options{{ReadOnly: true}, {MustExist: true}} {
				if d, err := Open(dir, o); !errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) {
					if d != nil {
						d.Close()
					}
					t.Fatalf("Open (read-only %v, must exist %v): %v; want ErrNotExist", o.ReadOnly, o.MustExist, err)
				}
			}
			d := mustOpen(t, dir, nil)
			if err := d.Put(Doc{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, &Options{ReadOnly: true})
			if doc, err := d.Get("a"); err != nil || doc.ID != "a" {
				t.Fatalf("Get after the index was made anew: %+v, %v", doc, err)
			}
			if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
				t.Fatalf("Check: %+v, %v", rep, err)
			}
			d.Close()
			dir = mk()
			if err := Drop(context.Background(), dir); err != nil {
				t.Fatalf("Drop: %v", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Drop left %s: %v", dir, err)
			}
		})
	}
}
