package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// TestHelperHoldIndex is not a test: TestLockedNamesOwner runs it in a
// process of its own, which holds an index open until its stdin closes.
func TestHelperHoldIndex(t *testing.T) {
	dir := os.Getenv("LSHDB_HOLD_INDEX")
	if dir == "" {
		t.Skip("a helper process of TestLockedNamesOwner")
	}
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	io.Copy(io.Discard, os.Stdin)
	d.Close()
}

// Ensure that a command refused because another process holds the index
// names that process's pid and what to do: for a server (which the
// commands that need not own the index attach to), its socket; for any
// other holder, read from the lock file.
func TestLockedNamesOwner(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	_, _, log, stop := startServe(t, "--db", idx)
	want := fmt.Sprintf("lshdb serve (pid %d) owns it and serves its API on %s", os.Getpid(), filepath.Join(idx, "lshdb.sock"))
	// A command that must own the index cannot attach.
	for _, args := range [][]string{{"upgrade", "--db", idx}} {
		_, errOut, code := runLine(args, "")
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "locked") {
			t.Errorf("%s of a served index: exit %d %s", args[0], code, errOut)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	if runtime.GOOS == "windows" {
		return
	}
	// Another process, which does not serve it.
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperHoldIndex$", "-test.v")
	helper.Env = append(os.Environ(), "LSHDB_HOLD_INDEX="+idx)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		helper.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "holding" {
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	go io.Copy(io.Discard, stdout)
	_, errOut, code := runLine([]string{"query", "--db", idx, "--id", "x"}, "")
	want = fmt.Sprintf("process %d holds it and does not serve it", helper.Process.Pid)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("query of a held index: exit %d %s (want %q)", code, errOut, want)
	}
}
