package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
)

// Ensure that export's line of a document carries its metadata in a form
// that a JSON reader decodes back to the stored bytes, and that the line
// is UTF-8 JSON: metadata that json.Valid took but that is not UTF-8 (an
// earlier insert's Latin-1 value) was written raw (an input review, IN-2).
func TestExportMetaRoundTrips(t *testing.T) {
	for _, c := range []struct {
		meta []byte
		form string // "meta", "meta_string", "meta_base64" or ""
	}{
		{nil, ""},
		{[]byte(`{"k":[1,"é"]}`), "meta"},
		{[]byte(`"café"`), "meta"},
		{[]byte(`not json, but UTF-8: é`), "meta_string"},
		{[]byte("\"caf\xe9\""), "meta_base64"}, // JSON to json.Valid, not UTF-8
		{[]byte{0, 0xff, 0xfe}, "meta_base64"},
	} {
		line, err := json.Marshal(exportOf(&db.StoredDoc{ID: "a", Meta: c.meta}))
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("meta %q: the line %q is not UTF-8 JSON", c.meta, line)
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		var got []byte
		switch c.form {
		case "meta":
			got = back["meta"]
		case "meta_string", "meta_base64":
			var s string
			if err := json.Unmarshal(back[c.form], &s); err != nil {
				t.Fatalf("meta %q: %s in %s: %v", c.meta, c.form, line, err)
			}
			got = []byte(s)
			if c.form == "meta_base64" {
				if got, err = base64.StdEncoding.DecodeString(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !bytes.Equal(got, c.meta) {
			t.Errorf("meta %q: read back as %q from %s (want the %s form)", c.meta, got, line, c.form)
		}
	}
}
