//go:build unix

package db

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childOpenEnv names the directory TestLockChildOpen opens, in a process
// of its own; childReadOnlyEnv makes that open read-only.
const (
	childOpenEnv     = "LSHDB_TEST_CHILD_OPEN"
	childReadOnlyEnv = "LSHDB_TEST_CHILD_READ_ONLY"
)

// TestLockChildOpen is another process's Open for the lock tests: it
// prints OPENED (having stored a document), LOCKED, or the error. It is
// skipped unless a test runs it.
func TestLockChildOpen(t *testing.T) {
	dir := os.Getenv(childOpenEnv)
	if dir == "" {
		t.Skip("run by the lock tests in a process of its own")
	}
	ro := os.Getenv(childReadOnlyEnv) != ""
	d, err := Open(dir, &Options{MustExist: true, ReadOnly: ro})
	switch {
	case errors.Is(err, ErrLocked):
		os.Stdout.WriteString("LOCKED\n")
		return
	case err != nil:
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		return
	}
	if !ro {
		if err := d.Put(Doc{ID: "child", Text: "written by another process"}, nil); err != nil {
			os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		}
	}
	if err := d.Close(); err != nil {
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
	}
	os.Stdout.WriteString("OPENED\n")
}

// childOpen opens dir in another process (TestLockChildOpen) and returns
// what it printed.
func childOpen(t *testing.T, dir string, readOnly bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChildOpen$", "-test.count=1")
	cmd.Env = append(os.Environ(), childOpenEnv+"="+dir)
	if readOnly {
		cmd.Env = append(cmd.Env, childReadOnlyEnv+"=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line == "OPENED" || line == "LOCKED" || strings.HasPrefix(line, "ERROR ") {
			return line
		}
	}
	t.Fatalf("the other process said nothing of its open:\n%s", out)
	return ""
}

// readEveryFile opens, reads and closes every file of dir, as a service
// that checksums or uploads an index's directory does.
func readEveryFile(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
}

// Ensure that an index stays locked against other processes while the
// process that has it open opens and closes its files itself: Pebble's
// fcntl lock on LOCK was lost on any close of that file, a second process
// opened the index for writing, and with both writing the index no longer
// opened (an embedder's review, E1). Oracle: the other process's open,
// refused with ErrLocked while the index is open here, writable or
// read-only, and taken once it is closed; and a reopen holding the
// writes of both, one after the other.
func TestLockKeptAfterAStrayClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "parent", Text: "written by the process that holds the index"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := childOpen(t, dir, false); got != "LOCKED" {
		t.Fatalf("before any stray close, another process's open: %s", got)
	}
	readEveryFile(t, dir)
	for _, ro := range []bool{false, true} {
		if got := childOpen(t, dir, ro); got != "LOCKED" {
			t.Fatalf("after this process read the index's files, another process's open (read-only %v): %s", ro, got)
		}
	}
	if err := d.Put(Doc{ID: "parent2", Text: "written after the stray close"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// NB: a read-only holder refuses a writer too.
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	readEveryFile(t, dir)
	if got := childOpen(t, dir, false); got != "LOCKED" {
		t.Fatalf("beside a read-only handle whose lock file was read, a writable open in another process: %s", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	if got := childOpen(t, dir, false); got != "OPENED" {
		t.Fatalf("once closed, another process's open: %s", got)
	}
	d = mustOpen(t, dir, nil)
	for _, id := range []string{"parent", "parent2", "child"} {
		if ok, err := d.Has(id); err != nil || !ok {
			t.Errorf("%s: stored %v, %v", id, ok, err)
		}
	}
}
