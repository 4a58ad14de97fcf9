package fspath

import (
	"os"
	"path/filepath"
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
