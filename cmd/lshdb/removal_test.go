package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db/httpapi"
)

// Ensure that a write command that created its index and then fails,
// having written nothing itself, removes what it made only when nothing
// else used it (an operator's review: it removed the index with the
// documents commands attached to it had stored, and the new parent
// directory with a sibling index another command had built there):
//   - documents written through it by an attached insert keep the index,
//     with a note, and a sibling index under the same new directory stays;
//   - with no other writer, the index and the directories it made go;
//   - an empty directory given as --db is emptied, not removed.
//
// The oracle: the documents each command was told were stored, counted
// in the indexes that remain.
func TestFailedCreatorRemovesOnlyItsOwn(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix sockets")
	}
	dir := shortDir(t)
	three := filepath.Join(dir, "three.jsonl")
	var lines []string
	for i := range 3 {
		lines = append(lines, docLine(fmt.Sprintf("other-%d", i), docText(i)))
	}
	os.WriteFile(three, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	idx := filepath.Join(dir, "night", "day1", "a")
	creator := startPiped(t, "insert", "--db", idx, "--progress", "none", "-")
	waitCount(t, httpapi.SocketPath(idx), creator, func(n uint64) bool { return n == 0 })
	if out, _ := mustRun(t, "insert", "--db", idx, three); !strings.HasPrefix(out, "inserted 3 documents") {
		t.Fatalf("the attached insert: %q", out)
	}
	sibling := filepath.Join(dir, "night", "day1", "b")
	mustRun(t, "insert", "--db", sibling, three)
	// The creator's own input is bad from its first record: it writes
	// nothing and fails.
	fmt.Fprintln(creator.stdin, `{"id": broken`)
	creator.stdin.Close()
	if err := <-creator.done; err == nil {
		t.Fatalf("the creator with a bad record succeeded: %s", creator.out)
	}
	if !strings.Contains(creator.out.String(), "was kept: other commands wrote 3 documents to it meanwhile") {
		t.Errorf("the creator's output lacks the note: %s", creator.out)
	}
	for _, x := range []string{idx, sibling} {
		if n, err := countOf(x); err != nil || n != 3 {
			t.Errorf("%s: %d documents, %v; want the 3 written to it", x, n, err)
		}
	}

	// Alone, a failed creator leaves nothing it made.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": broken`+"\n"), 0o644)
	if _, errOut, code := runLine([]string{"insert", "--db", filepath.Join(dir, "new", "x", "y"), bad}, ""); code == 0 {
		t.Fatalf("an insert of a bad record succeeded: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a failed creator left the directory it made: %v", err)
	}
	// An empty directory given is emptied again, not removed.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, errOut, code := runLine([]string{"build", "--db", empty, "--threshold", "0.6", bad}, ""); code == 0 {
		t.Fatalf("a build of a bad record succeeded: %s", errOut)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("the empty directory given holds %d entries after a failed build (%v): an empty index was left", len(ents), err)
	}
}
