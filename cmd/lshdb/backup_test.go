package main

import (
	"context"
	"encoding/json"
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
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	got, rep = docsOf(t, copy2)
	if !reflect.DeepEqual(got, want) || !rep.OK() {
		t.Errorf("the served copy: %d documents (want %d), check %+v", len(got), len(want), rep)
	}
	if _, err := os.Stat(filepath.Join(copy2, "lshdb.sock")); err == nil {
		t.Error("the copy holds the owner's socket")
	}
}
