package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// docsOf returns every document of the index in dir, by id, and its
// check report.
func docsOf(t *testing.T, dir string) (map[string]*db.StoredDoc, *db.CheckReport) {
	t.Helper()
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := map[string]*db.StoredDoc{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		out[doc.ID] = doc
	}
	rep, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out, rep
}

// sharedFiles counts the files of the backup bk that are the index idx's
// file of that name (hard links).
func sharedFiles(idx, bk string) (n int) {
	ents, _ := os.ReadDir(bk)
	for _, e := range ents {
		b, err1 := os.Stat(filepath.Join(bk, e.Name()))
		o, err2 := os.Stat(filepath.Join(idx, e.Name()))
		if err1 == nil && err2 == nil && os.SameFile(o, b) {
			n++
		}
	}
	return n
}

// Ensure that lshdb backup copies an index, on its own and through the
// socket of the server that owns it, into a directory that opens, checks
// clean and holds the source's documents; and that it refuses an existing
// target.
func TestBackupCommand(t *testing.T) {
	root := shortDir(t)
	idx := filepath.Join(root, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	want, _ := docsOf(t, idx)
	if len(want) == 0 {
		t.Fatal("no documents")
	}
	copy1 := filepath.Join(root, "copy1")
	out, errOut, code := runLine([]string{"backup", "--db", idx, "--to", copy1}, "")
	if code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: exit %d %s %s", code, out, errOut)
	}
	got, rep := docsOf(t, copy1)
	if !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Errorf("the copy: %d documents (want %d), check %+v", len(got), len(want), rep)
	}
	if _, errOut, code := runLine([]string{"backup", "--db", idx, "--to", copy1}, ""); code != 2 || !strings.Contains(errOut, "exists") {
		t.Errorf("an existing target: exit %d %s", code, errOut)
	}
	if _, _, code := runLine([]string{"backup", "--db", idx}, ""); code != 2 {
		t.Errorf("no --to: exit %d", code)
	}
	// A --to whose directory is missing (a typo, a volume not mounted)
	// is refused, and nothing of its path is made (B15: it made the
	// whole path). Its directory a file: refused too.
	missing := filepath.Join(root, "nosuch", "deeper", "copy")
	if _, errOut, code := runLine([]string{"backup", "--db", idx, "--to", missing}, ""); code != 1 || !strings.Contains(errOut, "does not exist (lshdb makes no directory for an output)") {
		t.Errorf("--to under a missing directory: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "nosuch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--to under a missing directory made it: %v", err)
	}
	afile := filepath.Join(root, "a-file")
	if err := os.WriteFile(afile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"backup", "--db", idx, "--to", filepath.Join(afile, "copy")}, ""); code != 1 || !strings.Contains(errOut, "is not a directory") {
		t.Errorf("--to under a file: exit %d %s", code, errOut)
	}
	// Served: the owner makes the copy.
	_, _, log, stop := startServe(t, "--db", idx)
	copy2 := filepath.Join(root, "copy2")
	out, errOut, code = runLine([]string{"backup", "--db", idx, "--to", copy2, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("backup of a served index: exit %d %s", code, errOut)
	}
	var res backupJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Via != "socket" || res.Docs != uint64(len(want)) || res.To != copy2 {
		t.Errorf("backup --output json: %q %v", out, err)
	}
	// --copy through the socket: the owner copies the tables.
	copy3 := filepath.Join(root, "copy3")
	if out, errOut, code := runLine([]string{"backup", "--db", idx, "--to", copy3, "--copy"}, ""); code != 0 || !strings.Contains(out, "owner") || !strings.Contains(out, "copied, not linked") {
		t.Fatalf("backup --copy of a served index: exit %d %s %s", code, out, errOut)
	}
	// --verify through the socket: the owner verifies the copy.
	copy4 := filepath.Join(root, "copy4")
	if out, errOut, code := runLine([]string{"backup", "--db", idx, "--to", copy4, "--verify"}, ""); code != 0 || !strings.Contains(out, "owner") || !strings.Contains(out, "verified") {
		t.Fatalf("backup --verify of a served index: exit %d %s %s", code, out, errOut)
	}
	out, errOut, code = runLine([]string{"backup", "--db", idx, "--to", filepath.Join(root, "copy5"), "--verify", "--copy", "--output", "json"}, "")
	res = backupJSON{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || !res.Verified || !res.Copied || res.Via != "socket" {
		t.Errorf("backup --verify --copy --output json: exit %d %q %s %v", code, out, errOut, err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	// NB: the plain one shares tables: the premise of the check.
	if n := sharedFiles(idx, copy2); n == 0 {
		t.Fatal("the served plain backup shares no file with the index: the --copy check below would prove nothing")
	}
	if n := sharedFiles(idx, copy3); n != 0 {
		t.Errorf("backup --copy through the socket: %d of its files are the index's", n)
	}
	if got, rep := docsOf(t, copy3); !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Errorf("the served --copy: %d documents (want %d), check %+v", len(got), len(want), rep)
	}
	got, rep = docsOf(t, copy2)
	if !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Errorf("the served copy: %d documents (want %d), check %+v", len(got), len(want), rep)
	}
	if _, err := os.Stat(filepath.Join(copy2, "lshdb.sock")); err == nil {
		t.Error("the copy holds the owner's socket")
	}
}

// Ensure that backup --copy gives the copy files of its own (on the same
// filesystem they are otherwise the index's, hard-linked: damage to one
// is damage to both), with the same documents, and that --verify fails a
// backup of a damaged index, which a plain backup reports as done (an
// operator's review). The oracle: os.SameFile against the index's files,
// the documents read back, and bytes overwritten in a table by hand.
func TestBackupCopyAndVerify(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl")
	want, _ := docsOf(t, idx)
	shared := func(bk string) int { return sharedFiles(idx, bk) }
	linked := filepath.Join(dir, "linked")
	mustRun(t, "backup", "--db", idx, "--to", linked)
	if shared(linked) == 0 {
		t.Fatal("a backup on the same filesystem shares no file with the index: the test's premise (hard links) does not hold here")
	}
	own := filepath.Join(dir, "own")
	out, _ := mustRun(t, "backup", "--db", idx, "--to", own, "--copy", "--verify")
	if n := shared(own); n != 0 || !strings.Contains(out, "copied, not linked; verified") {
		t.Fatalf("backup --copy shares %d files with the index; it said %q", n, out)
	}
	if got, rep := docsOf(t, own); !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Fatalf("the --copy backup holds %d documents of %d (check %+v)", len(got), len(want), rep)
	}

	// A damaged table: the plain backup does not notice, --verify does.
	var biggest string
	var size int64
	ents, _ := os.ReadDir(idx)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".sst") && fi.Size() > size {
			biggest, size = filepath.Join(idx, e.Name()), fi.Size()
		}
	}
	f, err := os.OpenFile(biggest, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), size/2)
	f.Close()
	if _, errOut, code := runLine([]string{"backup", "--db", idx, "--to", filepath.Join(dir, "plain")}, ""); code != 0 {
		t.Fatalf("a plain backup of the damaged index: exit %d %s (the test expects it not to read the tables)", code, errOut)
	}
	_, errOut, code := runLine([]string{"backup", "--db", idx, "--to", filepath.Join(dir, "checked"), "--verify"}, "")
	if code != exitDamaged || !strings.Contains(errOut, "is damaged") && !strings.Contains(errOut, "fails its check") {
		t.Fatalf("backup --verify of a damaged index: exit %d, %q", code, errOut)
	}
	// The damaged copy is out of NEWDIR's way (a script that checks the
	// backup exists kept it as a good one), kept for a look.
	if _, err := os.Stat(filepath.Join(dir, "checked")); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(errOut, "checked.damaged") {
		t.Errorf("NEWDIR after a failed --verify: %v (%s)", err, errOut)
	}
	if _, _, code := runLine([]string{"info", "--db", filepath.Join(dir, "checked.damaged")}, ""); code != 0 {
		t.Errorf("the damaged copy does not open: exit %d", code)
	}
}

// Ensure that backup serves the index it owns while it copies it, as
// every owner does: a writer meanwhile attaches and writes, where it was
// refused ("lshdb backup holds it and does not serve it") for as long as
// a verification took (an operator's review). The oracle: the writer's
// document, in the index after, and the backup's own summary.
func TestBackupServesWhileItCopies(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	type result struct {
		out, errOut string
		code        int
	}
	wrote := make(chan result, 1)
	backupServing = func() {
		out, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id": "during", "text": "a document written while a backup copies the index"}`+"\n")
		wrote <- result{out, errOut, code}
	}
	defer func() { backupServing = nil }()
	to := filepath.Join(t.TempDir(), "copy")
	out, errOut, code := runLine([]string{"backup", "--db", idx, "--to", to, "--verify"}, "")
	if code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: exit %d %q %q", code, out, errOut)
	}
	select {
	case w := <-wrote:
		if w.code != 0 {
			t.Fatalf("an insert while backup owned the index: exit %d %q", w.code, w.errOut)
		}
	default:
		t.Fatal("backup never served the index it copied")
	}
	if out, errOut, code := runLine([]string{"get", "--db", idx, "during"}, ""); code != 0 || !strings.Contains(out, "during") {
		t.Fatalf("the document written during the backup: exit %d %q %q", code, out, errOut)
	}
}

// Ensure that a backup of an index whose owner refuses the command's
// token says so, as query does: it said that nothing answered on the
// socket and advised a backup, the command just run (an operator's
// review). The oracle: the message, and no copy made.
func TestBackupRefusedTokenSaid(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	t.Setenv("LSHDB_TOKEN", "s3cret")
	startServe(t, "--db", idx)
	to := filepath.Join(t.TempDir(), "copy")
	for _, token := range []string{"", "wrong"} {
		t.Setenv("LSHDB_TOKEN", token)
		_, errOut, code := runLine([]string{"backup", "--db", idx, "--to", to}, "")
		if code != 1 || !strings.Contains(errOut, "serves it and refused this command: unauthorized") || strings.Contains(errOut, "nothing answers") {
			t.Errorf("backup with token %q: exit %d %q", token, code, errOut)
		}
		if _, err := os.Stat(to); !os.IsNotExist(err) {
			t.Errorf("a refused backup made %s: %v", to, err)
		}
	}
}

// Ensure that lshdb restore puts a backup in an index's place: the index
// then holds the backup's documents (the oracle: the documents read from
// the backup before the index was written), the index that was there is
// kept aside as it was, the note and --output json name it, a served
// index is refused (exit 75) with nothing changed, and a missing --from is
// a usage error.
func TestRestoreCommand(t *testing.T) {
	root := shortDir(t)
	idx, bk := filepath.Join(root, "idx"), filepath.Join(root, "bk")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"backup", "--db", idx, "--to", bk}, ""); code != 0 {
		t.Fatal(errOut)
	}
	want, _ := docsOf(t, bk)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id": "later", "text": "a document written after the backup"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	later, _ := docsOf(t, idx)
	if len(later) != len(want)+1 {
		t.Fatalf("%d documents after the insert, %d in the backup", len(later), len(want))
	}

	_, _, log, stop := startServe(t, "--db", idx)
	if _, errOut, code := runLine([]string{"restore", "--from", bk, "--db", idx}, ""); code != exitBusy || !strings.Contains(errOut, "stop it") {
		t.Errorf("restore over a served index: exit %d %q, want %d", code, errOut, exitBusy)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	if got, _ := docsOf(t, idx); !reflect.DeepEqual(got, later) {
		t.Errorf("a refused restore changed the index: %d documents", len(got))
	}

	out, errOut, code := runLine([]string{"restore", "--from", bk, "--db", idx, "--verify"}, "")
	if code != 0 || !strings.Contains(out, "restored") || !strings.Contains(out, "verified") {
		t.Fatalf("restore: exit %d %q %q", code, out, errOut)
	}
	got, rep := docsOf(t, idx)
	if !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Errorf("the restored index: %d documents (want %d), check %+v", len(got), len(want), rep)
	}
	_, aside, ok := strings.Cut(errOut, "the index that was there is now ")
	aside, _, _ = strings.Cut(aside, ":")
	if !ok || !strings.HasPrefix(aside, idx+".before-restore-") {
		t.Fatalf("the note does not name where the old index went: %q", errOut)
	}
	if got, _ := docsOf(t, aside); !reflect.DeepEqual(got, later) {
		t.Errorf("the index moved aside: %d documents, it held %d", len(got), len(later))
	}

	out, errOut, code = runLine([]string{"restore", "--from", bk, "--db", idx, "--output", "json"}, "")
	var res restoreJSON
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Docs != uint64(len(want)) || res.Aside == "" || res.Aside == aside {
		t.Errorf("restore --output json: exit %d %q %q %v", code, out, errOut, err)
	}
	if _, _, code := runLine([]string{"restore", "--db", idx}, ""); code != 2 {
		t.Errorf("restore without --from: exit %d, want 2", code)
	}
	if _, errOut, code := runLine([]string{"restore", "--from", filepath.Join(root, "none"), "--db", idx}, ""); code != 1 || strings.Contains(errOut, "makes an index") {
		t.Errorf("restore from nothing: exit %d %q", code, errOut)
	}
}
