package fspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Ensure that Within answers by where paths really are: plain names
// inside and outside, a name that starts like the directory, paths not
// yet made, and symbolic links leading in and out.
func TestWithin(t *testing.T) {
	root := t.TempDir()
	dir, out := filepath.Join(root, "dir"), filepath.Join(root, "out")
	for _, d := range []string{dir, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in, leave := filepath.Join(root, "in-link"), filepath.Join(dir, "leave-link")
	if err := os.Symlink(dir, in); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink(out, leave); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{dir, true},
		{filepath.Join(dir, "a", "b"), true}, // not made yet
		{filepath.Join(in, "x"), true},       // through a link into dir
		{dir + "-copy", false},               // starts like dir
		{out, false},
		{root, false},
		{filepath.Join(leave, "x"), false}, // under dir by name, out of it really
		{filepath.Join(dir, "..", "out"), false},
		// NB: dir/x by its letters; the system goes to the link's
		// target's parent, root: out of dir (Within said in).
		{leave + "/../x", false},
		{in + "/../dir/y", true}, // root/dir/y
	} {
		if got := Within(c.path, dir); got != c.want {
			t.Errorf("Within(%s, %s) = %v, want %v", c.path, dir, got, c.want)
		}
	}
}

// Ensure that Guarded passes a directory that only this user (or root)
// can change the way to, and names the first directory on the way that
// another user could write: the directory itself, or one above it,
// sticky or not (a sticky one passes above the directory only).
func TestGuarded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Guarded checks only that the directory is one elsewhere than Unix")
	}
	base := t.TempDir()
	a := filepath.Join(base, "a")
	b := filepath.Join(a, "b")
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Guarded(Resolve(b)); err != nil {
		t.Fatalf("a directory of this user's, mode 0755 all the way: %v", err)
	}
	for _, c := range []struct {
		dir    string
		mode   fs.FileMode
		target string
		ok     bool
	}{
		{a, 0o777, b, false},                 // a may be written: b may be swapped
		{a, 0o775, b, false},                 // by its group too
		{a, 0o777 | fs.ModeSticky, b, true},  // sticky above b: others cannot rename b
		{b, 0o777 | fs.ModeSticky, b, false}, // b itself may be written
		{a, 0o777 | fs.ModeSticky, a, false}, // the directory itself, sticky or not
	} {
		if err := os.Chmod(c.dir, c.mode); err != nil {
			t.Fatal(err)
		}
		err := Guarded(Resolve(c.target))
		if c.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), Resolve(c.dir)+" may be written by other users") {
			t.Errorf("%s at %v, Guarded(%s): %v, want ok %v", c.dir, c.mode, c.target, err, c.ok)
		}
		if err := os.Chmod(c.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	if err := Guarded(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("a path through a link: %v", err)
	}
	if err := Guarded(filepath.Join(b, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}
