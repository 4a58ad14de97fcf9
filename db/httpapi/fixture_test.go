package httpapi

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// sampleDocs returns the first n documents of the debian sample, and for
// every tenth one a near-copy (a word appended) with id ID+"~", so that
// queries and pairs have matches.
func sampleDocs(t testing.TB, n int) []db.Doc {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "corpora", "debian-sample", "docs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []db.Doc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for len(docs) < n && sc.Scan() {
		var d struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, db.Doc{ID: d.ID, Text: d.Text})
		if len(docs)%10 == 1 {
			docs = append(docs, db.Doc{ID: d.ID + "~", Text: d.Text + " again", Meta: []byte{0xff, 0, 'm'}})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return docs
}

// openFixture opens a new index in a temporary directory holding
// sampleDocs(n); the test closes it at its end.
func openFixture(t testing.TB, n int, o *db.Options) *db.DB {
	t.Helper()
	d, err := db.Open(filepath.Join(t.TempDir(), "idx"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if n > 0 {
		if _, err := d.PutBatch(sampleDocs(t, n), &db.WriteOptions{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}
