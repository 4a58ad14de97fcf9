//go:build unix

package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
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
		os.Stdout.WriteString("LOCKED\n" + err.Error() + "\n")
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
	said, _ := childOpenSays(t, dir, readOnly)
	return said
}

// childOpenSays is childOpen, with the error line that follows LOCKED.
func childOpenSays(t *testing.T, dir string, readOnly bool) (string, string) {
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
	lines := strings.Split(string(out), "\n")
	for i, line := range lines {
		switch {
		case line == "LOCKED" && i+1 < len(lines):
			return line, lines[i+1]
		case line == "OPENED" || strings.HasPrefix(line, "ERROR "):
			return line, ""
		}
	}
	t.Fatalf("the other process said nothing of its open:\n%s", out)
	return "", ""
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
	if runtime.GOOS != "linux" {
		t.Skip("the flock beside Pebble's lock is taken on Linux only (see flockLock)")
	}
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
		got, msg := childOpenSays(t, dir, ro)
		if got != "LOCKED" {
			t.Fatalf("after this process read the index's files, another process's open (read-only %v): %s", ro, got)
		}
		// NB: the holder named, though its fcntl lock, which names it
		// otherwise, is gone.
		if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not name the holder (%s)", msg, want)
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

// Ensure that a write to an index whose directory was moved away, removed
// or replaced while it was open is refused with ErrNotExist, before
// Pebble tries to make a file there: Pebble's next write-ahead log failed
// with its mutex released, and Go's runtime ended the process ("sync:
// unlock of unlocked mutex"), which no recover stops (an embedder's
// review, E2). The writes go on past the memtable's size, where the old
// code made a new log (and died). Oracle: the directory reopened where it
// went, holding every acknowledged write and nothing else.
func TestMovedDirectoryRefusesWrites(t *testing.T) {
	text := strings.Repeat("a document long enough to fill a small memtable quickly, ", 40)
	for _, how := range []string{"moved", "removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			dir, aside := filepath.Join(base, "idx"), filepath.Join(base, "aside")
			d := mustOpen(t, dir, &Options{MemTableSize: 1 << 20})
			acked := 0
			put := func() error {
				err := d.Put(Doc{ID: fmt.Sprintf("d%d", acked), Text: fmt.Sprintf("%d %s", acked, text)}, &WriteOptions{NoSync: true})
				if err == nil {
					acked++
				}
				return err
			}
			for range 100 {
				if err := put(); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, aside); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "removed":
				if err := os.RemoveAll(aside); err != nil {
					t.Fatal(err)
				}
			case "replaced":
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * homeRecheck) // NB: the last check that found it in place stands that long
			var err error
			for i := 0; err == nil && i < 2000; i++ { // NB: 2,000 documents of 2.3 KB fill 1 MiB memtables
				err = put()
			}
			if !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "moved or removed") {
				t.Fatalf("a write after the directory was %s: %v, want ErrNotExist saying so", how, err)
			}
			if acked != 100 {
				t.Errorf("%d writes acknowledged after the directory was %s", acked-100, how)
			}
			if _, err := d.PutBatch([]Doc{{ID: "batch", Text: text}}, nil); !errors.Is(err, ErrNotExist) {
				t.Errorf("a batch: %v, want ErrNotExist", err)
			}
			if err := d.Delete("d0", nil); !errors.Is(err, ErrNotExist) {
				t.Errorf("a delete: %v, want ErrNotExist", err)
			}
			d.Close() // NB: its error, if any, is Pebble's; it must not end the process
			switch how {
			case "removed":
				return
			case "replaced":
				if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
					t.Errorf("the directory put in the index's place holds %d files (%v), want none", len(entries), err)
				}
			}
			r := mustOpen(t, aside, &Options{ReadOnly: true})
			if n, err := r.Count(); err != nil || n != 100 {
				t.Errorf("reopened where it went: %d documents (%v), want the 100 acknowledged", n, err)
			}
			for i := range 100 {
				if ok, err := r.Has(fmt.Sprintf("d%d", i)); err != nil || !ok {
					t.Fatalf("d%d: %v %v", i, ok, err)
				}
			}
		})
	}
}

// Ensure that a flock(1) an operator takes on the index's directory (a
// cron job's guard: flock idx lshdb insert …) does not refuse the index's
// own open: the lock this package adds beside Pebble's was first a flock
// on the directory, and every open under such a guard was refused (a
// read-through, R2). Oracle: another process's open and write, under
// this process's flock on the directory, and the write found after.
func TestOpenUnderAFlockOfTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	mustOpen(t, dir, nil).Close()
	guard, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	if err := syscall.Flock(int(guard.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("no flock on this filesystem: %v", err)
	}
	if got := childOpen(t, dir, false); got != "OPENED" {
		t.Fatalf("an open under a flock of the directory: %s", got)
	}
	d := mustOpen(t, dir, &Options{ReadOnly: true})
	if ok, err := d.Has("child"); err != nil || !ok {
		t.Errorf("the other process's write: %v %v", ok, err)
	}
}
