package corpus

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Ensure that Load, now a wrapper over docio, reads the sample corpus as
// encoding/json reads it line by line (the oracle), plain and gzipped, and
// honours the limit.
func TestLoad(t *testing.T) {
	path, err := Testdata("corpora/debian-sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []Doc
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var d Doc
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw)
	w.Close()
	gzPath := filepath.Join(t.TempDir(), "docs.jsonl.gz")
	os.WriteFile(gzPath, gz.Bytes(), 0o644)
	for _, p := range []string{path, gzPath} {
		got, err := Load(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d documents, want %d", p, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: document %d is %q, want %q", p, i, got[i].ID, want[i].ID)
			}
		}
	}
	if got, err := Load(path, 3); err != nil || len(got) != 3 || got[2] != want[2] {
		t.Fatalf("limit 3: %d documents, %v", len(got), err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\"}\n"), 0o644)
	if _, err := Load(bad, 0); err == nil || !bytes.Contains([]byte(err.Error()), []byte("bad.jsonl:2")) {
		t.Fatalf("a bad record: %v", err)
	}
}
