package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// Ensure that checkKeys refuses an object, at any depth, that names a
// field twice or two fields that differ only in case, and passes every
// other JSON value, its strings' braces, quotes and escapes included; and
// that plainLine tells the stream lines encoding/json reads as docLine
// means them. The oracle: the answers worked out by hand for each.
func TestCheckKeys(t *testing.T) {
	for _, c := range []struct {
		in      string
		refused string // "" when checkKeys passes it
		plain   bool   // plainLine's answer: false for all but an object
	}{
		{`{"id":"a","text":"b"}`, "", true},
		{`{"id":"a","ID":"b"}`, `"id" and "ID" differ only in case`, false},
		{`{"id":"a","id":"b"}`, `"id" given twice`, false},
		{`{"\u0069d":"a","id":"b"}`, `"id" given twice`, false},
		{`{"id":"a","text":"{\"id\":1,\"ID\":2}"}`, "", true},
		{`{"id":"a","meta":"x","url":{"u":1,"U":2}}`, `"u" and "U" differ only in case`, true},
		{`{"docs":[{"id":"a"},{"id":"b","Id":"c"}]}`, `"id" and "Id" differ only in case`, true},
		{`{"docs":[{"id":"a"},{"id":"b"}]}`, "", true},
		{`{"ids":["a","b"],"IDS":["c"]}`, `"ids" and "IDS" differ only in case`, true},
		{`{"id":"a","Title":"t","title":"u"}`, `"Title" and "title" differ only in case`, true},
		{`{"id":"a","text":"b","TEXT":"c"}`, `"text" and "TEXT" differ only in case`, false},
		{`[1, 2.5e3, true, false, null, "x\\"y", {"a":[{}]}]`, "", false},
		{` { "a" : 1 , "b" : [ ] } `, "", true},
		{`"just a string"`, "", false},
		{`null`, "", false},
		{`{}`, "", true},
		{`{"id":"é","ÉTÉ":1,"été":2}`, `"ÉTÉ" and "été" differ only in case`, true},
		// A name given once, not in lower case ASCII: encoding/json
		// took it for the field it folds to (AC15).
		{`{"ID":"a","TEXT":"b"}`, `unknown field "ID" (names are matched exactly, and every field's is in lower case: "id"?)`, false},
		{`{"id":"a","ſkip_empty":true}`, `unknown field "ſkip_empty" (names are matched exactly, and every field's is in lower case: "skip_empty"?)`, true},
		{`{"docs":[{"id":"a","Meta":"m"}]}`, `unknown field "Meta" (names are matched exactly, and every field's is in lower case: "meta"?)`, true},
		{`{"id":"a","ttl-ms":5}`, `unknown field "ttl-ms" (names are matched exactly: every field's is in lower case ASCII`, true},
		{`{"id":"a","meta_base64":"bQ==","no_sync":true}`, "", true},
	} {
		err := checkKeys([]byte(c.in))
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.in, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want %q", c.in, err, c.refused)
		}
		if got := plainLine([]byte(c.in)); got != c.plain {
			t.Errorf("plainLine(%s) = %v, want %v", c.in, got, c.plain)
		}
	}
	// An object of more fields than any body's is checked too, through a
	// map (compared two by two, 50,000 took 3.5 s: a review's F1): it was
	// left to the decoder, which took the last of 70 "id" and an "ID"
	// (a fuzz campaign's F2).
	for _, c := range []struct {
		head, tail, refused string
	}{
		{`{"id":1,"ID":2`, ``, `"id" and "ID" differ only in case`},
		{`{"id":1`, `,"k17":1`, `"k17" given twice`},
		{`{"id":1`, `,"K99999":1`, `"k99999" and "K99999" differ only in case`},
		{`{"id":1`, `,"K1":1`, `"k1" and "K1" differ only in case`}, // the Kelvin sign folds to k
		{`{"id":1`, `,"other":1`, ``},
	} {
		var many strings.Builder
		many.WriteString(c.head)
		for i := range 100_000 {
			fmt.Fprintf(&many, `,"k%d":0`, i)
		}
		many.WriteString(c.tail + "}")
		err := checkKeys([]byte(many.String()))
		if c.refused == "" && err != nil || c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)) {
			t.Errorf("an object of 100,000 fields and %s%s: %v, want %q", c.head, c.tail, err, c.refused)
		}
	}
	// foldKey's equality is bytes.EqualFold's.
	names := []string{"id", "ID", "Id", "k", "K", "\u212a", "s", "S", "\u017f", "ß", "ẞ", "ss", "été", "ÉTÉ", "Été", "σ", "Σ", "ς", "µ", "μ", "Μ", "ǅ", "ǆ", "Ǆ", "x\xff", "x\xfe"}
	for _, a := range names {
		for _, b := range names {
			a, b := []byte(a), []byte(b)
			if (foldKey(a) == foldKey(b)) != bytes.EqualFold(a, b) {
				t.Errorf("foldKey(%q) == foldKey(%q): %v, bytes.EqualFold: %v", a, b, foldKey(a) == foldKey(b), bytes.EqualFold(a, b))
			}
		}
	}
	// Not JSON: no panic, no endless walk (the decoder names the error).
	for _, in := range []string{`{"a":`, `{"a" 1}`, `[1 2]`, `{"a\`, `{`, `[`, `"`, `{"a":1,,}`, `{1:2}`} {
		checkKeys([]byte(in))
		plainLine([]byte(in))
	}
}

// Ensure that a JSON body whose names differ only in case is refused
// with nothing done, where encoding/json took the last: a delete of
// {"ids":["a"],"IDS":["b"]} deleted b (a maintainer review's K3), a put
// of {"id":"a","ID":"b"} stored b. The oracle: Has on the index.
func TestBodiesMatchNamesExactly(t *testing.T) {
	d := openFixture(t, 0, nil)
	for _, id := range []string{"a", "b"} {
		if err := d.Put(db.Doc{ID: id, Text: "a document named " + id + " with a few words"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	h := Handler(d, nil)
	for _, c := range []struct{ path, body string }{
		{"/v1/docs/delete", `{"ids":["a"],"IDS":["b"]}`},
		{"/v1/docs/delete", `{"ids":["a"],"ids":["b"]}`},
		{"/v1/docs", `{"id":"c","ID":"d","text":"a new document with words"}`},
		{"/v1/docs", `{"docs":[{"id":"e","text":"x y z w","TEXT":"other words here"}]}`},
		// More names than any body's object has (a fuzz campaign's F2:
		// stored as f).
		{"/v1/docs", `{` + strings.Repeat(`"id":"c",`, 70) + `"ID":"f","text":"a new document with words"}`},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "bad_request") {
			t.Errorf("POST %s %s: %d %s, want 400 bad_request", c.path, c.body, rec.Code, rec.Body)
		}
	}
	for id, want := range map[string]bool{"a": true, "b": true, "c": false, "d": false, "e": false, "f": false} {
		if ok, _ := d.Has(id); ok != want {
			t.Errorf("Has(%s) = %v, want %v", id, ok, want)
		}
	}
}

// BenchmarkStreamLine compares the decoding of a stream's lines as
// docLine (exact names) with encoding/json's own into DocJSON, on lines of
// about 1 KB with a corpus's other fields: the ratio is docLine's cost.
func BenchmarkStreamLine(b *testing.B) {
	line := `{"id":"doc-000123","text":"` + strings.Repeat("some words of a text ", 50) + `","url":"http://example.com/x","title":"a title"}` + "\n"
	body := strings.Repeat(line, 1000)
	for _, c := range []struct {
		name string
		v    func() any
	}{{"encoding-json", func() any { return new(DocJSON) }}, {"docLine", func() any { return new(docLine) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				dec := json.NewDecoder(strings.NewReader(body))
				for {
					if err := dec.Decode(c.v()); err != nil {
						break
					}
				}
			}
		})
	}
}

// Ensure that a body nested far deeper than any JSON decoder takes is
// refused as a bad request, not walked to the end of the stack: the key
// check recursed once per '[' with no bound, and 6 million of them (a
// body of 6 MB) overflowed the goroutine stack, a fatal error that ended
// the server (a security review). The oracle: encoding/json's own refusal
// of such nesting, and a server that answers the next request.
func TestDeepNestingRefused(t *testing.T) {
	deep := strings.Repeat("[", 6_000_000)
	if err := checkKeys([]byte(deep)); err != nil {
		t.Errorf("checkKeys of a deep list: %v, want nil (the decoder refuses it)", err)
	}
	if err := checkKeys([]byte(`{"a":` + strings.Repeat("[", 20_000) + `{"k":1,"K":2}` + strings.Repeat("]", 20_000) + "}")); err != nil {
		t.Errorf("checkKeys past its depth: %v, want nil", err)
	}
	d := openFixture(t, 5, nil)
	h := Handler(d, nil)
	for _, path := range []string{"/v1/docs/has", "/v1/docs", "/v1/query"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(deep)))
		if rec.Code != 400 {
			t.Errorf("POST %s of 6 million '[': %d %.200s, want 400", path, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/count", nil))
	if rec.Code != 200 {
		t.Errorf("count after: %d %s", rec.Code, rec.Body)
	}
}
