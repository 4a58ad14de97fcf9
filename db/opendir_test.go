package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/fspath"
)

// Ensure that a handle keeps reading and writing the directory its path
// led to at Open, whatever the path leads to later: a deploy's link
// re-pointed (current -> v1, then v2) or, for a relative path, the
// process's chdir. Pebble made and removed its tables through the path as
// given: the handle's background flushes wrote into the other index's
// directory and its compactions removed that index's tables, and neither
// index opened again (an embedder's review, EMB-1 and EMB-2); its writes
// were refused as to a directory moved (ErrNotExist), which is where this
// test stops on that code. Oracles: each index opened afterwards by its
// own path passes Check and counts what was written to it, and the other
// index's files are those it had.
func TestOpenKeepsItsDirectory(t *testing.T) {
	for _, how := range []string{"link", "chdir"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			v1, v2 := filepath.Join(base, "v1", "idx"), filepath.Join(base, "v2", "idx")
			docs := func(prefix string, n int) []Doc {
				var ds []Doc
				for i := range n {
					ds = append(ds, Doc{ID: fmt.Sprintf("%s-%d", prefix, i), Text: fmt.Sprintf("document %d of %s, with words %d %d %d and some more text to fill a memtable", i, prefix, i%97, i%89, i)})
				}
				return ds
			}
			for _, dir := range []string{v1, v2} {
				d := mustOpen(t, dir, &Options{NoSync: true})
				if _, err := d.PutBatch(docs(filepath.Base(filepath.Dir(dir)), 3000), nil); err != nil {
					t.Fatal(err)
				}
				if err := d.Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
			v2Files := dirNames(t, v2)
			var path string
			var repoint func()
			switch how {
			case "link":
				link := filepath.Join(base, "current")
				if err := os.Symlink("v1", link); err != nil {
					t.Fatal(err)
				}
				path = filepath.Join(link, "idx")
				repoint = func() {
					// NB: as ln -sfn does it: a new link renamed over.
					tmp := filepath.Join(base, "current.new")
					if err := os.Symlink("v2", tmp); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, link); err != nil {
						t.Fatal(err)
					}
				}
			case "chdir":
				t.Chdir(filepath.Join(base, "v1"))
				path = "idx"
				repoint = func() { t.Chdir(filepath.Join(base, "v2")) }
			}
			d := mustOpen(t, path, &Options{NoSync: true, MemTableSize: 1 << 20})
			if got, want := d.Dir(), fspath.Resolve(v1); got != want {
				t.Errorf("Dir() = %q, want where the path led at Open, %q", got, want)
			}
			written := 3000
			if _, err := d.PutBatch(docs("before", 500), nil); err != nil {
				t.Fatal(err)
			}
			written += 500
			repoint()
			// NB: enough for flushes (1 MiB memtables) and compactions.
			for i := range 12 {
				if _, err := d.PutBatch(docs(fmt.Sprintf("after%d", i), 500), nil); err != nil {
					t.Fatalf("a write after the path was re-pointed: %v", err)
				}
				written += 500
			}
			if err := d.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				dir  string
				want int
			}{{v1, written}, {v2, 3000}} {
				r := mustOpen(t, c.dir, &Options{ReadOnly: true})
				n, err := r.Count()
				if err != nil || n != uint64(c.want) {
					t.Errorf("%s: %d documents, %v; want %d", c.dir, n, err, c.want)
				}
				if rep, err := r.Check(context.Background()); err != nil || !rep.OK() {
					t.Errorf("%s: check %+v, %v", c.dir, rep, err)
				}
				r.Close()
			}
			if got := dirNames(t, v2); !slices.Equal(got, v2Files) {
				t.Errorf("the other index's files changed:\nbefore %q\n after %q", v2Files, got)
			}
		})
	}
}

// Ensure that a directory whose name reads like a mistyped Redis URL
// (redis+dedup, redis:2026) is opened when it exists, and that a new one
// is refused with the way to make it (./NAME), making nothing: Open
// refused even the existing directory (an embedder's review, EMB-5).
func TestOpenDirectoryNamedLikeAURL(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, name := range []string{"redis+dedup", "redis:2026-12-07", "Redis+Cache/idx"} {
		_, err := Open(name, nil)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "./NAME") {
			t.Errorf("Open(%q), not made yet: %v; want ErrInvalidOptions saying ./NAME", name, err)
		}
		if names := dirNames(t, "."); len(names) != 0 {
			t.Fatalf("a refused open made %q", names)
		}
		d := mustOpen(t, "./"+name, nil)
		if err := d.Put(Doc{ID: "a", Text: "a document in a directory named like a URL"}, nil); err != nil {
			t.Fatal(err)
		}
		d.Close()
		d, err = Open(name, nil)
		if err != nil {
			t.Fatalf("Open(%q) of the existing index: %v", name, err)
		}
		if n, err := d.Count(); n != 1 || err != nil {
			t.Errorf("Open(%q): %d documents, %v; want the 1 stored", name, n, err)
		}
		d.Close()
		os.RemoveAll(strings.Split(name, "/")[0])
	}
}

// Ensure that a Close right after the index's directory was moved (here
// within the millisecond that a write's check of its place stands) does
// not flush into the place it left: the flush rotates the log, and
// Pebble's fatal error ended the process, which no recover stops (a
// read-through's RT7-2, 17 of 20 runs for a relative path whose working
// directory was renamed, 20 of 20 for a moved index). The oracle: the
// test process lives, and the index opened where it went holds every
// acknowledged write (the log it replays).
func TestCloseRightAfterTheDirectoryMoved(t *testing.T) {
	for i := range 5 {
		dir := filepath.Join(t.TempDir(), "idx")
		d := mustOpen(t, dir, nil)
		for j := range 3 {
			if err := d.Put(Doc{ID: fmt.Sprint(j), Text: fmt.Sprintf("document %d of round %d, acknowledged before the move", j, i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(dir, dir+"-moved"); err != nil {
			t.Fatal(err)
		}
		d.Close()
		r := mustOpen(t, dir+"-moved", &Options{ReadOnly: true})
		if n, err := r.Count(); n != 3 || err != nil {
			t.Fatalf("round %d: %d documents where the index went, %v; want the 3 acknowledged", i, n, err)
		}
		r.Close()
	}
}
