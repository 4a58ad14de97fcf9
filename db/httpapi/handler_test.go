package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that every error code names its own sentinel: an error wrapping
// the sentinel is answered with that code and status, and the code leads
// back to the sentinel.
func TestErrorTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("code %q twice", c.Code)
		}
		seen[c.Code] = true
		err := fmt.Errorf("context: %w", c.Err)
		if got := codeOf(err); got.Code != c.Code || got.Status != c.Status {
			t.Errorf("%v: code %s %d, want %s %d", c.Err, got.Code, got.Status, c.Code, c.Status)
		}
		if !errors.Is(ErrorOf(c.Code), c.Err) {
			t.Errorf("ErrorOf(%q) is not %v", c.Code, c.Err)
		}
	}
	// Every sentinel of package db has a code.
	for _, e := range []error{db.ErrNotFound, db.ErrLocked, db.ErrParamsMismatch, db.ErrFormatTooNew, db.ErrFormat,
		db.ErrCorrupt, db.ErrEmptyDocument, db.ErrDocTooLarge, db.ErrInvalidID, db.ErrClosed, db.ErrInvalidOptions,
		db.ErrNotIndex, db.ErrNotExist, db.ErrReadOnly, db.ErrDiskFull, db.ErrBackend, db.ErrUnsupported, db.ErrStorageMode,
		db.ErrInvalidSignature, db.ErrInvalidDoc, db.ErrTooManyDeletes, db.ErrStopped} {
		if c := codeOf(e); c.Code == "internal" {
			t.Errorf("%v has no code", e)
		}
	}
	if c := codeOf(&db.MismatchError{Field: "Threshold"}); c.Code != "params_mismatch" {
		t.Errorf("a MismatchError is %s", c.Code)
	}
	if c := codeOf(errors.New("something else")); c.Code != "internal" || c.Status != 500 {
		t.Errorf("an unknown error is %s %d", c.Code, c.Status)
	}
}

// startTCP serves h on a loopback port with the given server timeouts.
func startTCP(t *testing.T, h http.Handler, readTimeout time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadTimeout: readTimeout, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// expectAnswer sends req and checks its status and, when code is set,
// the error code of its answer; what names the request in failures. It
// returns the answer's header, and whether the status was the one
// wanted.
func expectAnswer(t *testing.T, req *http.Request, status int, code, what string) (http.Header, bool) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("%s: status %d, want %d (%s)", what, resp.StatusCode, status, b)
		return resp.Header, false
	}
	if code != "" {
		if got := errorCode(t, resp.Body); got != code {
			t.Errorf("%s: code %q, want %q", what, got, code)
		}
	}
	return resp.Header, true
}

// errorCode reads an error answer's code.
// postJSON posts body to url and returns the answer's status and body.
func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func errorCode(t *testing.T, body io.Reader) string {
	t.Helper()
	var e ErrorJSON
	if err := json.NewDecoder(body).Decode(&e); err != nil {
		t.Fatalf("not an error body: %v", err)
	}
	if e.Error.Message == "" {
		t.Errorf("error %q has no message", e.Error.Code)
	}
	return e.Error.Code
}

// RequireToken guards what it wraps (/metrics) as Handler guards the API:
// a page that rebound its host name to 127.0.0.1 read the metrics of a
// loopback server without a token.
func TestRequireTokenIsSameSite(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("metrics")) })
	for _, tc := range []struct {
		token, host, origin, bearer string
		want                        int
	}{
		{"", "", "", "", 200},
		{"", "evil.example:1", "", "", 403},
		{"", "", "http://evil.example", "", 403},
		{"tok", "evil.example:1", "", "tok", 200}, // NB: a page cannot send the token
		{"tok", "", "http://evil.example", "tok", 403},
		{"tok", "", "", "", 401},
	} {
		addr := startTCP(t, RequireToken(tc.token, ok), 0)
		r, err := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+tc.bearer)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("token %q, Host %q, Origin %q: %d, want %d", tc.token, tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
}

// A configured token is trimmed as a request's is: "s3cret\n" (a token
// from a file or a variable) matched no request, the server's own
// commands' included. One of white space alone matches no request, an
// empty bearer included.
func TestTokenTrimmed(t *testing.T) {
	d := openFixture(t, 3, nil)
	for _, tc := range []struct {
		token, bearer string
		want          int
	}{
		{"s3cret\n", "s3cret", 200},
		{" s3cret ", "s3cret", 200},
		{"s3cret ", "s3cret ", 200},
		{"s3cret", " s3cret", 200},
		{"s3cret ", "s3cre", 401},
		{"  ", "", 401},
		{"  ", "  ", 401},
		{"\t", "x", 401},
	} {
		for _, h := range []http.Handler{Handler(d, &Options{Token: tc.token}), RequireToken(tc.token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))} {
			r := httptest.NewRequest("GET", "/v1/count", nil)
			r.Header.Set("Authorization", "Bearer "+tc.bearer)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("token %q, bearer %q: %d, want %d", tc.token, tc.bearer, w.Code, tc.want)
			}
		}
	}
}

// Ensure that malformed requests get 4xx answers with their codes, and
// that a wrong or missing token is refused with 401 except on /healthz.
func TestBadRequests(t *testing.T) {
	d := openFixture(t, 30, nil)
	before, _ := d.Count()
	addr := startTCP(t, Handler(d, &Options{Token: "s3cret"}), 0)
	base := "http://" + addr
	for _, tc := range []struct {
		method, path, body, token string
		status                    int
		code                      string
	}{
		{"GET", "/v1/count", "", "", 401, "unauthorized"},
		{"GET", "/v1/count", "", "wrong", 401, "unauthorized"},
		{"GET", "/v1/count", "", "s3cret", 200, ""},
		{"GET", "/healthz", "", "", 200, ""},
		{"POST", "/v1/repair", "", "s3cret", 200, ""},
		{"POST", "/v1/repair", "{}", "s3cret", 200, ""},
		{"POST", "/v1/repair", `{"dry_run": true}`, "s3cret", 400, "bad_request"}, // NB: no such option: not ignored
		{"POST", "/v1/repair", "x", "s3cret", 400, "bad_request"},
		{"POST", "/v1/repair", strings.Repeat(" ", 1100) + "garbage", "s3cret", 400, "bad_request"}, // NB: past the first KiB it was not read
		{"POST", "/v1/repair", "", "", 401, "unauthorized"},
		{"GET", "/v1/repair", "", "s3cret", 405, "method_not_allowed"},
		{"POST", "/v1/purge", "garbage", "s3cret", 400, "bad_request"}, // NB: it was ignored
		{"POST", "/v1/compact", `{"x": 1}`, "s3cret", 400, "bad_request"},
		{"GET", "/v1/openapi.yaml?x=1", "", "s3cret", 400, "bad_request"}, // NB: it was taken
		{"POST", "/v1/docs", `{"id": "a", "text": `, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `{"id": "a", "txt": "x"}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `{"id": "a", "text": "xxxxxx"} {}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", ``, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `{}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `[1,2]`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `{"id": "a", "text": "x", "docs": []}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs", `{"docs": null}`, "s3cret", 400, "bad_request"},                                             // NB: a 500 (a nil dereference)
		{"POST", "/v1/docs", `{"tokens": ["zz"], "docs": [{"id": "a", "text": "x y z"}]}`, "s3cret", 400, "bad_request"}, // NB: the tokens were dropped unsaid
		{"POST", "/v1/docs", `{"tokens": ["a"]}`, "s3cret", 400, "invalid_id"},                                           // NB: it said "no document"
		{"POST", "/v1/docs", `{"id": "", "text": "some text"}`, "s3cret", 400, "invalid_id"},
		{"POST", "/v1/docs", `{"id": "a", "text": "   "}`, "s3cret", 422, "empty_document"},
		{"POST", "/v1/query", `{"text": "abc", "id": "x"}`, "s3cret", 400, "invalid_doc"}, // NB: two inputs, as db.QueryMany says
		{"POST", "/v1/query", `{"threshold": 0.5}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/query", `{"hashes": ["0xzz"]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/query/many", `{"threshold": 0.5}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/query/many", `{"queries": [{"text": "a", "limit": 2}]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/query", `{"text": "some text here", "threshold": 2}`, "s3cret", 400, "invalid_options"},
		{"GET", "/v1/query?id=0ad&treshold=0.5", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/query?id=0ad&threshold=x", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/query?id=nope", "", "s3cret", 404, "not_found"},
		{"GET", "/v1/docs?id=%ff", "", "s3cret", 400, "invalid_id"},
		{"GET", "/v1/buckets/0/zz", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/buckets/999/00", "", "s3cret", 400, "invalid_options"},
		{"GET", "/v1/nothing", "", "s3cret", 404, "no_route"},
		// NB: routed on the decoded path, these were /v1/compact,
		// /v1/docs/delete and /v1/count, past a proxy's rules on the
		// path as sent (an operator's review, SV-2).
		{"POST", "/v1%2Fcompact", "", "s3cret", 404, "no_route"},
		{"POST", "/v1/docs%2fdelete", `{"ids": ["0ad"]}`, "s3cret", 404, "no_route"},
		{"GET", "/%761/count", "", "s3cret", 404, "no_route"},
		{"PATCH", "/v1/docs", "", "s3cret", 405, "method_not_allowed"},
		{"POST", "/v1/backup", `{"dir": "relative/dir"}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs/put-if-new", `{"id": "a"`, "s3cret", 400, "bad_request"},
		{"DELETE", "/v1/docs", "", "s3cret", 400, "bad_request"},
		// NB: expiries past 2262 wrapped around the int64 of Unix
		// nanoseconds (stored, then gone at once; or a 500), and the zero
		// time meant no expiry at all.
		{"POST", "/v1/docs", `{"id": "t", "text": "some text here", "ttl_ms": 18446744073710}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs", `{"id": "t", "text": "some text here", "ttl_ms": 9000000000000}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs", `{"id": "t", "text": "some text here", "expire_at": "2600-01-01T00:00:00Z"}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs/put-if-new?ttl_ms=18446744073710", `{"id": "t", "text": "some text here"}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/load?ttl_ms=18446744073710", `{"id": "t", "text": "some text here"}`, "s3cret", 400, "invalid_options"},
		// NB: a negative ttl_ms below -2^63 ns wrapped around to a
		// positive TTL: the write went through and the document it
		// replaced expired at once.
		{"POST", "/v1/docs", `{"id": "0ad", "text": "some text here", "ttl_ms": -18446744073709}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs", `{"id": "0ad", "text": "some text here", "ttl_ms": -18446740473709}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs", `{"id": "0ad", "text": "some text here", "ttl_ms": -1}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/docs/put-if-new?ttl_ms=-18446744073709", `{"id": "t", "text": "some text here"}`, "s3cret", 400, "invalid_options"},
		{"POST", "/v1/load?ttl_ms=-18446744073709", `{"id": "0ad", "text": "some text here"}`, "s3cret", 400, "invalid_options"},
		// NB: bytes that are not UTF-8 were decoded as U+FFFD: "\xff\xfe"
		// was stored as "\ufffd\ufffd", and the two were one id.
		{"POST", "/v1/docs", `{"docs": [{"id": "ok", "text": "abc def"}, {"id": "` + "\xff\xfe" + `", "text": "abc def ghi"}]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs/has", `{"ids": ["` + "\xff" + `"]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs/put-if-new", `{"id": "q", "text": "` + "\xc3" + ` fine text"}` + "\n" + `{"id": "p", "text": "fine text"}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/load", `{"id": "l", "text": "a text ending inside a character ` + "\xe2\x82", "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs/has", `{}`, "s3cret", 400, "bad_request"},
		// NB: lone surrogate escapes were decoded as U+FFFD: "a\ud800"
		// replaced "a\udc00" (Python's json.dumps writes them).
		{"POST", "/v1/docs", `{"docs": [{"id": "sur\ud800", "text": "abc def"}, {"id": "sur\udc00", "text": "abc def ghi"}]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/docs/delete", `{"ids": ["0ad\udfff"]}`, "s3cret", 400, "bad_request"},
		{"POST", "/v1/query", `{"id": "0ad\ud83d"}`, "s3cret", 400, "bad_request"},
		{"GET", "/v1/query?text=%ff%fe+hello+world", "", "s3cret", 400, "bad_request"},
		// NB: a missing id said "invalid id: empty" (DELETE said "id is
		// required"), and explain did not say which one was missing.
		{"GET", "/v1/docs", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/docs/has", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/explain?a=0ad", "", "s3cret", 400, "bad_request"},
		{"GET", "/v1/docs?id=", "", "s3cret", 400, "invalid_id"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		h, ok := expectAnswer(t, req, tc.status, tc.code, fmt.Sprintf("%s %s %q", tc.method, tc.path, tc.body))
		if ok && tc.status == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
	if n, _ := d.Count(); n != before {
		t.Errorf("the refused writes changed the index: %d documents, want %d", n, before)
	}
	if doc, err := d.Get("0ad"); err != nil {
		t.Errorf("the refused writes changed 0ad: %v", err)
	} else if !doc.ExpiresAt.IsZero() || doc.Text == "some text here" {
		t.Errorf("the refused writes changed 0ad: expires %v, text %.20q", doc.ExpiresAt, doc.Text)
	}
	// The scheme is case-insensitive; a wrong token is told from a
	// missing one.
	for auth, want := range map[string]string{"bearer s3cret": "", "BEARER  s3cret": "", "Bearer nope": "not this server's", "Basic czNjcmV0": "is required"} {
		req, _ := http.NewRequest("GET", base+"/v1/count", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want == "" && resp.StatusCode != 200 || want != "" && (resp.StatusCode != 401 || !strings.Contains(string(b), want)) {
			t.Errorf("Authorization %q: %d %s, want %q", auth, resp.StatusCode, b, want)
		}
	}
}

// byteSource yields n bytes of a JSON document's text without holding
// them, and counts what was read.
type byteSource struct {
	n      int64
	read   atomic.Int64 // NB: the transport may go on sending after the answer
	prefix string
}

func (s *byteSource) Read(p []byte) (int, error) {
	read := s.read.Load()
	if read >= s.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if k > s.n-read {
		k = s.n - read
	}
	for i := range p[:k] {
		off := read + int64(i)
		if off < int64(len(s.prefix)) {
			p[i] = s.prefix[off]
		} else {
			p[i] = 'a' + byte(off%26)
		}
	}
	s.read.Add(k)
	return int(k), nil
}

// Ensure that a 100 MB body is refused with 413 without being read: on
// its announced length before any of it is read, and a chunked one (with
// no length) once it passes the limit.
func TestBodyTooLarge(t *testing.T) {
	d := openFixture(t, 10, nil)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			o := &Options{}
			if chunked {
				o.MaxBodyBytes = 1 << 20
			}
			addr := startTCP(t, Handler(d, o), 0)
			src := &byteSource{n: 100 << 20, prefix: `{"id": "big", "text": "`}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/docs", src)
			if !chunked {
				req.ContentLength = src.n
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			runtime.ReadMemStats(&ms1)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413", resp.StatusCode)
			}
			if code := errorCode(t, resp.Body); code != "body_too_large" {
				t.Errorf("code %q", code)
			}
			if read := src.read.Load(); read >= src.n {
				t.Errorf("the whole body was sent (%d bytes)", read)
			}
			// NB: the client and the server share this process: neither
			// may have held the body.
			if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 32<<20 {
				t.Errorf("%d MiB allocated while refusing the body", alloc>>20)
			}
			if ok, _ := d.Has("big"); ok {
				t.Error("the document was stored")
			}
		})
	}
}

// Ensure that a put whose unset optional fields a client's serializer
// wrote as null ("docs": null beside one document, "meta": null) stores
// the document: "docs": null was a 500 (a nil dereference).
func TestPutNullFields(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	for i, body := range []string{
		`{"id": "n1", "text": "a text put by a client that writes null", "docs": null}`,
		`{"id": "n2", "text": "another text put by a client that writes null", "docs": null, "meta": null, "tokens": null}`,
	} {
		if status, b := postJSON(t, "http://"+addr+"/v1/docs", body); status != http.StatusOK {
			t.Errorf("%s: status %d: %s", body, status, b)
		}
		id := fmt.Sprintf("n%d", i+1)
		if ok, err := d.Has(id); !ok || err != nil {
			t.Errorf("%s: %s not stored: %v", body, id, err)
		}
	}
}

// Ensure that an expire_at already past is taken as such, the zero time
// and one before 1970 too (both were refused as invalid options): the
// document is stored expired, and never returned.
func TestPutExpireAtPast(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	for i, at := range []string{"0001-01-01T00:00:00Z", "1900-01-01T00:00:00Z", "2001-01-01T00:00:00Z"} {
		id := fmt.Sprint("past", i)
		body := fmt.Sprintf(`{"id": %q, "text": "a text that has already expired", "expire_at": %q}`, id, at)
		if status, b := postJSON(t, "http://"+addr+"/v1/docs", body); status != http.StatusOK {
			t.Errorf("expire_at %s: status %d: %s", at, status, b)
		}
		if ok, err := d.Has(id); ok || err != nil {
			t.Errorf("expire_at %s: the document is returned (%v)", at, err)
		}
	}
}

// Ensure that a handler's panic (here a hook's) fails the request with
// 500 and code internal, the server going on, and logs where it happened:
// the log had the panic's value and no stack.
func TestPanicLogged(t *testing.T) {
	d := openFixture(t, 10, nil)
	var log syncBuffer
	o := &Options{
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Hooks: Hooks{Start: func(_ context.Context, op string) {
			if op == "count" {
				panic("a hook's bug")
			}
		}},
	}
	addr := startTCP(t, Handler(d, o), 0)
	resp, err := http.Get("http://" + addr + "/v1/count")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || errorCode(t, resp.Body) != "internal" {
		t.Errorf("status %d, want 500 internal", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the server after a panic: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if got := log.String(); !strings.Contains(got, "a hook's bug") || !strings.Contains(got, "stack=") || !strings.Contains(got, "TestPanicLogged") {
		t.Errorf("the log says no stack of the panic:\n%s", got)
	}
}

// Ensure that a field of the wrong JSON type is named by its JSON path,
// with what was given and what is expected: a put said "JSON field
// \"PutRequest.DocJSON.id\": json: cannot unmarshal number into Go
// struct field putBody.PutRequest.DocJSON.id of type string".
func TestTypeErrorsNameTheField(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/docs", `{"id": 5, "text": "some text"}`, `JSON field "id": number where a string is expected`},
		{"/v1/docs", `{"docs": [{"id": "a", "text": "x"}, {"id": "b", "text": ["x"]}]}`, `docs[1]: JSON field "text": array where a string is expected`},
		{"/v1/query", `{"text": "some text", "threshold": "high"}`, `JSON field "threshold": string where a number is expected`},
		{"/v1/query", `{"text": "some text", "limit": 2.5}`, `JSON field "limit": number 2.5 where an integer is expected`},
		{"/v1/query", `[{"text": "some text"}]`, `the body is a JSON array where an object is expected`}, // NB: it said JSON field ""
	} {
		resp, err := http.Post("http://"+addr+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var e ErrorJSON
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Message != "lshdb: bad request: "+tc.want {
			t.Errorf("%s %s: %d %q, want 400 %q", tc.path, tc.body, resp.StatusCode, e.Error.Message, tc.want)
		}
	}
}

// Ensure that a client that sends its body too slowly gets 408 once the
// server's read timeout passes, and that the request does not run.
func TestSlowClient(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 300*time.Millisecond)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"id": "slow", "text": "a slow document"}`
	fmt.Fprintf(conn, "POST /v1/docs HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	// The rest never comes: the server answers when its deadline passes.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}
	if code := errorCode(t, resp.Body); code != "request_timeout" {
		t.Errorf("code %q", code)
	}
	if ok, _ := d.Has("slow"); ok {
		t.Error("the document was stored")
	}
}

// Ensure that a client that goes away mid-query cancels the query: the
// request's context ends, and the database call made with it returns
// context.Canceled (observed through the hooks, which hold the query
// until the client has gone).
func TestClientGoesAway(t *testing.T) {
	d := openFixture(t, 30, nil)
	started := make(chan struct{})
	type done struct {
		status int
		err    error
	}
	ended := make(chan done, 1)
	var once sync.Once
	o := &Options{Hooks: Hooks{
		Start: func(ctx context.Context, op string) {
			if op != "query" {
				return
			}
			once.Do(func() { close(started) })
			<-ctx.Done() // NB: held until the server notices the client left
		},
		Done: func(ctx context.Context, op string, status int, err error, elapsed time.Duration) {
			if op == "query" {
				ended <- done{status, err}
			}
		},
	}}
	addr := startTCP(t, Handler(d, o), 0)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// 0ad has a near-copy (0ad~): the query has a candidate, so it
	// checks its context before verifying it.
	fmt.Fprintf(conn, "GET /v1/query?id=0ad HTTP/1.1\r\nHost: localhost\r\n\r\n")
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the query did not start")
	}
	conn.Close()
	select {
	case r := <-ended:
		if !errors.Is(r.err, context.Canceled) || r.status != 499 {
			t.Errorf("the query ended with %d %v, want 499 and context.Canceled", r.status, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the query was not cancelled")
	}
}

// Ensure that streams end with an end line, and that a stream that fails
// before it starts is an ordinary error answer.
func TestStreams(t *testing.T) {
	d := openFixture(t, 60, nil)
	h := Handler(d, nil)
	for _, path := range []string{"/v1/pairs", "/v1/clusters", "/v1/pairs?threshold=0.5"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
		if rec.Code != 200 || len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], `{"end":{"lines":`+fmt.Sprint(len(lines)-1)) {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Body.String())
		}
		if strings.Contains(path, "0.5") && !strings.Contains(lines[0], `"expected_recall"`) {
			t.Errorf("%s: no expected_recall below the index's threshold: %s", path, lines[0])
		}
	}
	// An index of storage none: every pair says its jaccard is the
	// estimate, as lshdb pairs --output json does (the API's did not).
	for storage, want := range map[string]bool{db.StorageNone: true, db.StorageText: false, db.StorageSets: false} {
		rec := httptest.NewRecorder()
		Handler(openFixture(t, 60, &db.Options{Storage: storage}), nil).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/pairs", nil))
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		if rec.Code != 200 || len(lines) < 2 {
			t.Fatalf("pairs of a %s index: %d %s", storage, rec.Code, rec.Body)
		}
		for _, l := range lines[:len(lines)-1] {
			var p PairJSON
			if err := json.Unmarshal([]byte(l), &p); err != nil || p.EstimateOnly != want {
				t.Errorf("pairs of a %s index: %s (%v), want estimate_only %v", storage, l, err, want)
				break
			}
		}
		// And so does every cluster (a review's U1).
		rec = httptest.NewRecorder()
		Handler(openFixture(t, 60, &db.Options{Storage: storage}), nil).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/clusters", nil))
		lines = strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		if rec.Code != 200 || len(lines) < 2 {
			t.Fatalf("clusters of a %s index: %d %s", storage, rec.Code, rec.Body)
		}
		for _, l := range lines[:len(lines)-1] {
			var c ClusterJSON
			if err := json.Unmarshal([]byte(l), &c); err != nil || c.EstimateOnly != want {
				t.Errorf("clusters of a %s index: %s (%v), want estimate_only %v", storage, l, err, want)
				break
			}
		}
		// And a put-if-new's duplicate has its estimate, and jaccard
		// null: it said 0 for an identical copy (AC10).
		rec = httptest.NewRecorder()
		copyOf := sampleDocs(t, 1)[0]
		Handler(openFixture(t, 60, &db.Options{Storage: storage}), nil).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new",
			strings.NewReader(fmt.Sprintf("{\"id\":\"copy\",\"text\":%q}\n", copyOf.Text))))
		var pin PutIfNewJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &pin); err != nil || pin.DuplicateOf == nil || *pin.DuplicateOf != copyOf.ID ||
			pin.Estimate == nil || *pin.Estimate != 1 || (pin.Jaccard == nil) != want || !want && *pin.Jaccard != 1 {
			t.Errorf("put-if-new of a copy of %s into a %s index: %s (%v), want its estimate 1 and jaccard %s", copyOf.ID, storage, rec.Body, err, map[bool]string{true: "null", false: "1"}[want])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/pairs?threshold=7", nil))
	if rec.Code != 400 || errorCode(t, rec.Body) != "invalid_options" {
		t.Errorf("pairs at threshold 7: %d %s", rec.Code, rec.Body)
	}
	// put-if-new: a stream of answers, one per document; a refused one
	// does not stop it.
	rec = httptest.NewRecorder()
	body := `{"id": "n1", "text": "a wholly new text about nothing in particular"}
{"id": "", "text": "no id"}
{"id": "0ad-copy", "text": ` + mustJSON(t, sampleDocs(t, 1)[0].Text) + `}
`
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader(body)))
	var got []PutIfNewJSON
	for _, l := range strings.Split(strings.TrimSpace(rec.Body.String()), "\n") {
		var x PutIfNewJSON
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if len(got) != 3 || got[0].DuplicateOf != nil || got[0].Error != nil || got[1].Error == nil || got[1].Error.Code != "invalid_id" ||
		got[2].DuplicateOf == nil || *got[2].DuplicateOf != "0ad" {
		t.Errorf("put-if-new: %s", rec.Body)
	}
	if ok, _ := d.Has("n1"); !ok {
		t.Error("n1 was not stored")
	}
	if ok, _ := d.Has("0ad-copy"); ok {
		t.Error("the duplicate was stored")
	}
	// A malformed line mid-stream ends it with a line that names the
	// document and what became of the rest (an operator's review, S4:
	// a byte offset into the whole body alone); the line after it is not
	// read, and first line bad gets a 400 that says so too.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader(`{"id":"s1","text":"first new doc with words enough"}
{bad
{"id":"s2","text":"second new doc with other words"}
`)))
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "(document 2 of the body, after 1 answered; nothing after it was read)") || !strings.Contains(lines[1], "bad_request") {
		t.Errorf("a malformed second line: %d %s", rec.Code, rec.Body)
	}
	if ok, _ := d.Has("s2"); ok {
		t.Error("the document after a malformed line was stored")
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader("{bad\n")))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "(document 1 of the body, after 0 answered; nothing after it was read)") {
		t.Errorf("a malformed first line: %d %s", rec.Code, rec.Body)
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Ensure that openapi.yaml describes every endpoint the handler serves,
// with its methods, and nothing it does not (besides lshdb serve's
// /metrics).
func TestOpenAPICoversRoutes(t *testing.T) {
	described := map[string]bool{}
	path := ""
	for _, line := range strings.Split(string(OpenAPI), "\n") {
		if p, ok := strings.CutSuffix(line, ":"); ok && strings.HasPrefix(p, "  /") && !strings.HasPrefix(p, "   ") {
			path = strings.TrimSpace(p)
			continue
		}
		for _, m := range []string{"get", "post", "delete", "put", "patch"} {
			if strings.HasPrefix(line, "    "+m+":") && path != "" {
				described[strings.ToUpper(m)+" "+path] = true
			}
		}
		if line != "" && !strings.HasPrefix(line, " ") {
			path = ""
		}
	}
	h := Handler(nil, nil).(*handler)
	served := map[string]bool{"GET /metrics": true}
	for _, r := range h.routes {
		p := r.path
		if p == "/v1/buckets/" {
			p = "/v1/buckets/{band}/{bucket}"
		}
		served[r.method+" "+p] = true
		if !described[r.method+" "+p] {
			t.Errorf("%s %s is not in openapi.yaml", r.method, p)
		}
		if !slices.Contains(Ops, r.op) {
			t.Errorf("%s %s: op %q is not in Ops", r.method, p, r.op)
		}
	}
	for d := range described {
		if !served[d] {
			t.Errorf("openapi.yaml describes %s, which is not served", d)
		}
	}
	// The error codes it lists are the table's.
	flat := strings.Join(strings.Fields(string(OpenAPI)), " ")
	for _, c := range Codes {
		if !strings.Contains(flat, fmt.Sprintf("%s (%d)", c.Code, c.Status)) {
			t.Errorf("openapi.yaml does not list %s (%d)", c.Code, c.Status)
		}
	}
}

// Ensure that a put-if-new stream is bounded per document, not in total:
// a stream many times the limit goes through, and a document over it is
// refused (413 when it is the first, an error line ending the stream
// later), and that /healthz names the owner's pid.
func TestPutIfNewLimit(t *testing.T) {
	d := openFixture(t, 0, nil)
	h := Handler(d, &Options{MaxBodyBytes: 4 << 10})
	var body strings.Builder
	for i := range 100 {
		fmt.Fprintf(&body, "{\"id\": \"doc%d\", \"text\": \"document number %d says %s\"}\n", i, i, strings.Repeat("x", i))
	}
	if body.Len() < 2*(4<<10) {
		t.Fatalf("the stream is only %d bytes", body.Len())
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader(body.String())))
	if n := strings.Count(rec.Body.String(), "\n"); rec.Code != 200 || n != 100 || strings.Contains(rec.Body.String(), "error") {
		t.Fatalf("%d, %d lines: %.500s", rec.Code, n, rec.Body)
	}
	if c, _ := d.Count(); c != 100 {
		t.Errorf("%d documents stored, want 100", c)
	}
	big := fmt.Sprintf("{\"id\": \"big\", \"text\": \"%s\"}\n", strings.Repeat("y", 8<<10))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader(big)))
	if rec.Code != 413 || errorCode(t, rec.Body) != "body_too_large" {
		t.Errorf("a first document over the limit: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs/put-if-new", strings.NewReader("{\"id\": \"small\", \"text\": \"a small one\"}\n"+big)))
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if rec.Code != 200 || len(lines) != 2 || !strings.Contains(lines[1], `"code":"body_too_large"`) {
		t.Errorf("a later document over the limit: %d %q", rec.Code, lines)
	}
	if ok, _ := d.Has("big"); ok {
		t.Error("the document over the limit was stored")
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	var hj HealthJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &hj); err != nil || hj.PID != os.Getpid() || hj.Docs != 101 || hj.Status != "ok" {
		t.Errorf("healthz: %s %v", rec.Body, err)
	}
}

// Ensure that POST /v1/backup writes only under Options.BackupRoot, by
// where a directory really is: a backup below it is made; the root itself,
// a directory beside it, one through ".." and one through a link under the
// root that leads out of it are refused with invalid_options, and nothing
// is made outside.
func TestBackupRoot(t *testing.T) {
	d := openFixture(t, 10, nil)
	_, root, outside := backupDirs(t)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	// NB: a directory others may write, in which one could swap the way
	// for a link while the backup runs (SEC-5); and a link that stays
	// inside the root, followed once, where the backup is made.
	shared, real := filepath.Join(root, "shared"), filepath.Join(root, "real")
	for _, dir := range []string{shared, real} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	addr := startTCP(t, Handler(d, &Options{BackupRoot: root}), 0)
	for _, tc := range []struct {
		dir    string
		status int
		msg    string
	}{
		{filepath.Join(root, "b1"), 200, ""},
		{filepath.Join(shared, "b6"), 400, shared + " may be written by other users"},
		{filepath.Join(root, "in", "b7"), 200, ""},
		{root, 400, "is the server's backup root: give a new directory under it"}, // NB: it said outside the root
		{root + "-x", 400, "is outside the server's backup root"},
		{filepath.Join(root, "..", "b2"), 400, "is outside the server's backup root"},
		{filepath.Join(root, "out", "b3"), 400, "is outside the server's backup root"},
		{filepath.Join(root, "b1"), 400, "exists: a backup makes a new directory\""},
		// NB: a missing parent is not made (AC6: a typo filled a disk).
		{filepath.Join(root, "nosuchday", "b5"), 400, "its parent " + filepath.Join(root, "nosuchday") + " cannot be used"},
	} {
		body, _ := json.Marshal(BackupRequest{Dir: tc.dir})
		resp, err := http.Post("http://"+addr+"/v1/backup", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("backup to %s: status %d, want %d (%s)", tc.dir, resp.StatusCode, tc.status, b)
		} else if tc.status == 400 {
			b, _ := io.ReadAll(resp.Body)
			if code := errorCode(t, bytes.NewReader(b)); code != "invalid_options" || !strings.Contains(string(b), tc.msg) {
				t.Errorf("backup to %s: code %q, want invalid_options and %q: %s", tc.dir, code, tc.msg, b)
			}
		}
		resp.Body.Close()
	}
	if left, _ := os.ReadDir(outside); len(left) > 0 {
		t.Errorf("a refused backup wrote outside the root: %v", left)
	}
	if _, err := os.Stat(filepath.Join(root, "nosuchday")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused backup made its parent: %v", err)
	}
	if left, _ := os.ReadDir(shared); len(left) > 0 {
		t.Errorf("a refused backup wrote where others may write: %v", left)
	}
	if fi, err := os.Lstat(filepath.Join(real, "b7")); err != nil || !fi.IsDir() {
		t.Errorf("the backup through a link inside the root is not where the link led: %v", err)
	}
	b, err := db.Open(filepath.Join(root, "b1"), &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the backup under the root: %v", err)
	}
	defer b.Close()
	if n, err := b.Count(); err != nil || n != 10 {
		t.Errorf("the backup under the root holds %d documents (%v), want 10", n, err)
	}
	// A verified backup says so (a client tells a server that ignored
	// verify from one that verified).
	body, _ := json.Marshal(BackupRequest{Dir: filepath.Join(root, "b4"), Verify: true})
	resp, err := http.Post("http://"+addr+"/v1/backup", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got BackupRequest
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || !got.Verify {
		t.Errorf("a verified backup: status %d, answer %+v (%v), want 200 and verify", resp.StatusCode, got, err)
	}
	if _, err := os.Stat(filepath.Join(root, "b4")); err != nil {
		t.Errorf("the verified backup: %v", err)
	}
}

// Ensure that over TCP a server without a backup root takes no backup
// (a client with the token made directories under /root and /etc), while
// the socket's holder may back up anywhere, and that a directory with a
// control character is refused; and that over TCP with a token, /healthz
// tells a client without it the status alone (not the documents, the pid
// or an error's paths).
func TestBackupAndHealthOverTCP(t *testing.T) {
	d := openFixture(t, 10, nil)
	h := Handler(d, &Options{Token: "s3cret"})
	addr := startTCP(t, h, 0)
	tmp := t.TempDir()
	sock := filepath.Join(tmp, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip("no Unix sockets here:", err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	backup := func(hc *http.Client, base, dir string) (int, string) {
		body, _ := json.Marshal(BackupRequest{Dir: dir})
		req, _ := http.NewRequest("POST", base+"/v1/backup", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := backup(http.DefaultClient, "http://"+addr, filepath.Join(tmp, "over-tcp")); st != 400 || !strings.Contains(b, "only under a backup root") {
		t.Errorf("a backup over TCP without a root: %d %s", st, b)
	}
	if _, err := os.Stat(filepath.Join(tmp, "over-tcp")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused backup made its directory: %v", err)
	}
	if st, b := backup(overSocket, "http://lshdb", filepath.Join(tmp, "over-socket")); st != 200 {
		t.Errorf("a backup through the socket: %d %s", st, b)
	}
	if st, b := backup(overSocket, "http://lshdb", filepath.Join(tmp, "x\n\x1b[31m")); st != 400 || !strings.Contains(b, "control character") {
		t.Errorf("a backup directory with control characters: %d %s", st, b)
	}
	health := func(hc *http.Client, base, token string) map[string]any {
		req, _ := http.NewRequest("GET", base+"/healthz", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %d %v", resp.StatusCode, err)
		}
		return m
	}
	if m := health(http.DefaultClient, "http://"+addr, ""); len(m) != 1 || m["status"] != "ok" {
		t.Errorf("healthz over TCP without the token: %v, want the status alone", m)
	}
	for name, m := range map[string]map[string]any{"with the token": health(http.DefaultClient, "http://"+addr, "s3cret"), "through the socket": health(overSocket, "http://lshdb", "")} {
		if m["status"] != "ok" || m["docs"] != float64(10) || m["pid"] != float64(os.Getpid()) {
			t.Errorf("healthz %s: %v", name, m)
		}
	}
}

// Ensure that a web page cannot use a local server (the operator's
// review: a loopback port without a token took a text/plain POST with a
// foreign Origin and deleted a document, and answered under any Host, so
// a page that rebinds its name to 127.0.0.1 could read the answers): a
// foreign Origin or Sec-Fetch-Site: cross-site is refused with 403
// cross_site on any server, a Host that is not loopback on a TCP port
// without a token too; the same requests from curl or lshdb's client (no
// Origin, a loopback Host), and /healthz, go through; nothing refused is
// applied.
func TestCrossSite(t *testing.T) {
	d := openFixture(t, 30, nil)
	before, _ := d.Count()
	open := startTCP(t, Handler(d, nil), 0)
	_, port, _ := net.SplitHostPort(open)
	withToken := startTCP(t, Handler(d, &Options{Token: "s3cret"}), 0)
	for _, tc := range []struct {
		addr, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{open, "POST", "/v1/docs/delete", `{"ids": ["0ad"]}`, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403},
		{open, "POST", "/v1/docs", `{"id": "x", "text": "a page wrote this"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{open, "GET", "/v1/docs?id=0ad", "", map[string]string{"Host": "evil.example:" + port}, 403},
		{open, "GET", "/v1/docs?id=0ad", "", map[string]string{"Host": "rebound.example"}, 403},
		{open, "GET", "/healthz", "", map[string]string{"Host": "evil.example"}, 200},
		{open, "GET", "/v1/docs?id=0ad", "", map[string]string{"Host": "localhost:" + port}, 200},
		{open, "GET", "/v1/docs?id=0ad", "", map[string]string{"Host": "[::1]:" + port}, 200},
		{open, "GET", "/v1/docs?id=0ad", "", map[string]string{"Origin": "http://" + open}, 200}, // NB: same origin
		{open, "GET", "/v1/docs?id=0ad", "", nil, 200},
		{withToken, "POST", "/v1/docs/delete", `{"ids": ["0ad"]}`, map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer s3cret"}, 403},
		{withToken, "GET", "/v1/docs?id=0ad", "", map[string]string{"Host": "served.example", "Authorization": "Bearer s3cret"}, 200}, // NB: a token, any name
	} {
		req, _ := http.NewRequest(tc.method, "http://"+tc.addr+tc.path, strings.NewReader(tc.body))
		for k, v := range tc.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		code := ""
		if tc.status == 403 {
			code = "cross_site"
		}
		expectAnswer(t, req, tc.status, code, fmt.Sprintf("%s %s %v", tc.method, tc.path, tc.header))
	}
	if n, _ := d.Count(); n != before {
		t.Errorf("a refused request changed the index: %d documents, want %d", n, before)
	}
	// /healthz answers a cross-site or rebound request its status alone:
	// it gave the pid, the document count and the owner (a security
	// review, SEC-6); a request of the server's own site gets them.
	for _, tc := range []struct {
		header map[string]string
		full   bool
	}{
		{map[string]string{"Host": "evil.example"}, false},
		{map[string]string{"Origin": "http://evil.example"}, false},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{nil, true},
	} {
		req, _ := http.NewRequest("GET", "http://"+open+"/healthz", nil)
		for k, v := range tc.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if full := strings.Contains(string(b), `"pid"`); resp.StatusCode != 200 || full != tc.full || !strings.Contains(string(b), `"status":"ok"`) {
			t.Errorf("/healthz with %v: %d %s", tc.header, resp.StatusCode, b)
		}
	}
}

// Ensure that put-if-new's line for a refused document carries only id
// and error (the operator's review: "duplicate_of": null, which the API
// documents as "stored", was on error lines too), and a stored one's
// duplicate_of is null.
func TestPutIfNewErrorLine(t *testing.T) {
	d := openFixture(t, 0, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	body := `{"id":"p5","text":""}` + "\n" + `{"id":"p6","text":"a document with enough words to store"}` + "\n"
	resp, err := http.Post("http://"+addr+"/v1/docs/put-if-new", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 {
		t.Fatalf("answer %s", b)
	}
	var refused, stored map[string]any
	json.Unmarshal([]byte(lines[0]), &refused)
	json.Unmarshal([]byte(lines[1]), &stored)
	if _, ok := refused["duplicate_of"]; ok || refused["error"] == nil || refused["id"] != "p5" {
		t.Errorf("the refused document's line: %s", lines[0])
	}
	if v, ok := stored["duplicate_of"]; !ok || v != nil || stored["error"] != nil {
		t.Errorf("the stored document's line: %s", lines[1])
	}
}

// Ensure that a load or put-if-new body may carry a corpus's other fields
// (the operator's review: a file lshdb gen wrote, with of and edit_rate,
// loaded with lshdb build but was refused over HTTP with 400 unknown
// field): they are ignored, the documents stored.
func TestStreamsIgnoreOtherFields(t *testing.T) {
	d := openFixture(t, 0, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	for path, body := range map[string]string{
		"/v1/load": `{"id":"g1","text":"an original text with words enough to store","url":"http://x"}` + "\n" +
			`{"id":"g2","text":"an original text with words enough to store, copied","of":"g1","edit_rate":0.01}` + "\n",
		"/v1/docs/put-if-new": `{"id":"g3","text":"another text about something else entirely","title":"t"}` + "\n",
	} {
		resp, err := http.Post("http://"+addr+path, "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), `"error"`) {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
	}
	for _, id := range []string{"g1", "g2", "g3"} {
		if ok, err := d.Has(id); !ok || err != nil {
			t.Errorf("%s not stored: %v", id, err)
		}
	}
}

// Ensure that a stream line's field names are matched exactly: a
// corpus's "ID" or "TEXT" column is another field, ignored, and a field
// of the document given twice is refused (encoding/json matched names
// without regard to case and kept the last: the line was stored under
// the "ID" column's value, or with the "TEXT" column's text, where lshdb
// build took "id" and "text"; an SRE review's H2). The oracle: what is
// stored, read back with Get.
func TestStreamsMatchNamesExactly(t *testing.T) {
	d := openFixture(t, 0, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	post := func(path, body string) string {
		resp, err := http.Post("http://"+addr+path, "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprint(resp.StatusCode, " ", string(b))
	}
	post("/v1/docs/put-if-new", `{"id":"corp-1","text":"a corpus line whose metadata has an upper case ID field too","ID":"row-77"}`+"\n")
	post("/v1/load", `{"id":"corp-3","text":"a loaded line whose metadata has an upper case ID field too x","ID":"row-79","TEXT":"another text altogether, not this one"}`+"\n")
	post("/v1/docs/put-if-new", `{"id":"corp-2","text":"another corpus line with a numeric ID column beside it here","ID":78}`+"\n")
	for id, text := range map[string]string{
		"corp-1": "a corpus line whose metadata has an upper case ID field too",
		"corp-2": "another corpus line with a numeric ID column beside it here",
		"corp-3": "a loaded line whose metadata has an upper case ID field too x",
	} {
		doc, err := d.Get(id)
		if err != nil || doc.Text != text {
			t.Errorf("%s: %v, %v; want the line's text", id, doc, err)
		}
	}
	for _, id := range []string{"row-77", "row-79", "78"} {
		if ok, _ := d.Has(id); ok {
			t.Errorf("stored under the ID column's value %q", id)
		}
	}
	if got := post("/v1/docs/put-if-new", `{"id":"dk1","id":"dk2","text":"duplicate keys in one json object here"}`+"\n"); !strings.Contains(got, `given twice`) {
		t.Errorf("a line with id twice: %s", got)
	}
	if got := post("/v1/load", `{"id":7,"text":"an id that is a number"}`+"\n"); !strings.Contains(got, `JSON field \"id\": number`) || !strings.HasPrefix(got, "400") {
		t.Errorf("a line whose id is a number: %s", got)
	}
	for _, id := range []string{"dk1", "dk2"} {
		if ok, _ := d.Has(id); ok {
			t.Errorf("%s stored from a line that gave id twice", id)
		}
	}
	// A null line is named as such, not taken for an empty document (a
	// review's F2).
	for _, path := range []string{"/v1/load", "/v1/docs/put-if-new"} {
		if got := post(path, `{"id":"n1","text":"a line before a null one"}`+"\n"+"null\n"); !strings.Contains(got, "JSON null where an object is expected") {
			t.Errorf("%s of a null line: %s", path, got)
		}
	}
}

// Ensure that utf8Body passes UTF-8 through whatever the reads' sizes (a
// character cut between two reads included) and fails on other bytes,
// naming where they are.
func TestUTF8Body(t *testing.T) {
	for _, tc := range []struct {
		in  string
		bad int64 // -1: valid
	}{
		{"plain ASCII", -1},
		{"caf\u00e9 \u20ac \U0001F600 \u4e2d\u6587", -1},
		{"", -1},
		{"ok\xffok", 2},
		{"\xc3", 0},            // cut at the end
		{"ab\xe2\x82", 2},      // cut at the end
		{"ab\xe2\x82x", 2},     // cut in the middle
		{"\xed\xa0\x80", 0},    // a surrogate
		{"abc\xf0\x9f\x98", 3}, // a 4-byte character cut
		// NB: a lone surrogate escape before invalid bytes in the same
		// read: the bytes before those were given back unscanned, and a
		// stream stored the line.
		{`{"id":"a\ud800"}` + "\n" + `{"id":"b` + "\xff" + `"}`, 8},
	} {
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if one {
				r = iotest.OneByteReader(r)
			}
			b := &utf8Body{r: io.NopCloser(r)}
			got, err := io.ReadAll(b)
			if tc.bad < 0 {
				if err != nil || string(got) != tc.in {
					t.Errorf("%q (one byte a read: %v): %q, %v", tc.in, one, got, err)
				}
				continue
			}
			if !errors.Is(err, errNotUTF8) || !strings.Contains(err.Error(), fmt.Sprintf("byte %d", tc.bad)) {
				t.Errorf("%q (one byte a read: %v): %v, want errNotUTF8 at byte %d", tc.in, one, err, tc.bad)
			}
		}
	}
}

// Ensure that utf8Body refuses the JSON escape of a lone UTF-16 surrogate
// wherever it is and however the reads cut it, and passes pairs and every
// other escape: against a model of random strings made of pieces, and
// against encoding/json, which turns a lone one into U+FFFD (two ids that
// differed there were stored as one) and a pair into its character.
func TestUTF8BodyLoneSurrogates(t *testing.T) {
	type piece struct {
		s    string
		kind int // 0: other; 1: a high surrogate escape; 2: a low one
	}
	pieces := []piece{{"a", 0}, {"\u00e9", 0}, {`\\`, 0}, {`\"`, 0}, {`\n`, 0}, {`\u0041`, 0}, {`\uFFFD`, 0},
		{`\ud83d`, 1}, {`\uD800`, 1}, {`\ude00`, 2}, {`\uDFFF`, 2}, {`\\ud800`, 0}, {"u", 0}}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		b.WriteString(`{"id":"`)
		lone, at := false, -1
		var prev piece
		ps := make([]piece, 1+rng.IntN(8))
		for i := range ps {
			ps[i] = pieces[rng.IntN(len(pieces))]
		}
		for i, p := range ps {
			switch {
			case lone:
			case prev.kind == 1 && p.kind != 2:
				lone, at = true, b.Len()-len(prev.s)
			case p.kind == 2 && prev.kind != 1:
				lone, at = true, b.Len()
			}
			b.WriteString(p.s)
			if p.kind == 2 && prev.kind == 1 {
				p = piece{} // the pair is one character
			}
			prev = p
			if i == len(ps)-1 && p.kind == 1 && !lone {
				lone, at = true, b.Len()-len(p.s)
			}
		}
		b.WriteString(`"}`)
		in := b.String()
		var r io.Reader = strings.NewReader(in)
		if rng.IntN(2) == 0 {
			r = iotest.OneByteReader(r)
		} else {
			r = iotest.HalfReader(r)
		}
		got, err := io.ReadAll(&utf8Body{r: io.NopCloser(r)})
		if lone {
			if !errors.Is(err, errNotUTF8) || !strings.Contains(err.Error(), fmt.Sprintf("byte %d ", at)) || len(got) > at+len(`\ud800\uFFFD`) {
				t.Fatalf("%s: %v (%d bytes read), want errNotUTF8 at byte %d", in, err, len(got), at)
			}
			continue
		}
		if err != nil || string(got) != in {
			t.Fatalf("%s: %v", in, err)
		}
		var v struct{ ID string }
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsRune(v.ID, utf8.RuneError) && !strings.Contains(in, `\uFFFD`) {
			t.Fatalf("%s passed, and decodes to %q", in, v.ID)
		}
	}
}

// Ensure that every answer carries the request's id, the client's own
// when it sent a sane one, and that the request's log line gives it: a
// client's error and the server's log could not be matched (on the
// socket the remote address is "@").
func TestRequestID(t *testing.T) {
	d := openFixture(t, 5, nil)
	var buf bytes.Buffer
	h := Handler(d, &Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	for _, c := range []struct{ sent, want string }{
		{"client-chose-this-0123", "client-chose-this-0123"},
		{"", ""},
		{"has a space", ""},
		{strings.Repeat("x", 129), ""},
	} {
		buf.Reset()
		r := httptest.NewRequest("GET", "/v1/docs?id=nope", nil)
		if c.sent != "" {
			r.Header.Set("X-Request-Id", c.sent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		got := rec.Header().Get("X-Request-Id")
		if c.want != "" && got != c.want || c.want == "" && !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(got) {
			t.Errorf("sent %q: X-Request-Id %q", c.sent, got)
		}
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["request_id"] != got || line["code"] != "not_found" {
			t.Errorf("sent %q: log %s (%v)", c.sent, buf.Bytes(), err)
		}
	}
}

// Ensure that a /healthz that answers ok is logged at DEBUG, not INFO,
// where probes every few seconds filled the log (an SRE's SR5), and that
// the other requests are still logged at INFO. The oracle: the levels of
// the lines of a logger that takes every level, and the lines of one at
// INFO.
func TestHealthzLoggedAtDebug(t *testing.T) {
	d := openFixture(t, 5, nil)
	var all, info bytes.Buffer
	for _, c := range []struct {
		buf   *bytes.Buffer
		level slog.Level
	}{{&all, slog.LevelDebug}, {&info, slog.LevelInfo}} {
		h := Handler(d, &Options{Logger: slog.New(slog.NewJSONHandler(c.buf, &slog.HandlerOptions{Level: c.level}))})
		for _, url := range []string{"/healthz", "/v1/count"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
			if rec.Code != 200 {
				t.Fatalf("%s: %d %s", url, rec.Code, rec.Body)
			}
		}
	}
	levels := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(all.String()), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		levels[fmt.Sprint(line["op"])] = fmt.Sprint(line["level"])
	}
	if levels["healthz"] != "DEBUG" || levels["count"] != "INFO" {
		t.Errorf("levels %v, want healthz at DEBUG and count at INFO", levels)
	}
	if strings.Contains(info.String(), "healthz") || !strings.Contains(info.String(), `"op":"count"`) {
		t.Errorf("at INFO: %s", info.String())
	}
}

// Ensure that a compressed body is refused saying so (it was parsed as
// it came: "malformed JSON at byte 1"), with nothing stored.
func TestContentEncodingRefused(t *testing.T) {
	d := openFixture(t, 5, nil)
	before, _ := d.Count()
	h := Handler(d, nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"id": "zipped", "text": "a compressed document body"}`))
	zw.Close()
	r := httptest.NewRequest("POST", "/v1/docs", &gz)
	r.Header.Set("Content-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `Content-Encoding \"gzip\" is not supported`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	if n, _ := d.Count(); n != before {
		t.Errorf("%d documents, %d before", n, before)
	}
	r = httptest.NewRequest("POST", "/v1/docs", strings.NewReader(`{"id": "plain", "text": "an uncompressed document body"}`))
	r.Header.Set("Content-Encoding", "identity")
	rec = httptest.NewRecorder()
	if h.ServeHTTP(rec, r); rec.Code != 200 {
		t.Errorf("identity: %d %s", rec.Code, rec.Body)
	}
}

// Ensure that a stream that fails after its 200 went out is logged as
// the failure it is (ERROR for the server's own, with stream_failed; it
// was INFO, status 200, a success to whoever reads the log), and that a
// client gone mid-answer (a broken pipe) is code canceled, not internal.
func TestStreamFailureLogged(t *testing.T) {
	var buf bytes.Buffer
	h := &handler{o: Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		err         error
		clientGone  bool
		level, code string
		failed      bool
	}{
		{errors.New("lshdb: something broke"), false, "ERROR", "internal", true},
		{fmt.Errorf("writing: %w", syscall.EPIPE), true, "INFO", "canceled", false},
		// NB: a broken connection to a backend, the client still there.
		{fmt.Errorf("redis: %w", syscall.ECONNRESET), false, "ERROR", "internal", true},
		{db.ErrNotFound, false, "WARN", "not_found", true},
		{context.Canceled, false, "INFO", "canceled", false},
	} {
		buf.Reset()
		r := httptest.NewRequest("GET", "/v1/pairs", nil)
		if c.clientGone {
			r = r.WithContext(gone)
		}
		h.done(r, "pairs", &resp{status: 200}, c.err, 0)
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["level"] != c.level || rec["code"] != c.code || (rec["stream_failed"] == true) != c.failed {
			t.Errorf("%v: logged %v, want level %s, code %s, stream_failed %v", c.err, rec, c.level, c.code, c.failed)
		}

	}
}

// Ensure that a put or query/many of more documents or queries than
// MaxBatch is refused whole with 413 batch_too_large, with nothing
// stored, that one of exactly MaxBatch is taken, and that ids (has,
// delete) are not bounded by it.
func TestMaxBatch(t *testing.T) {
	d := openFixture(t, 10, nil)
	stored, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	addr := startTCP(t, Handler(d, &Options{MaxBatch: 5}), 0)
	post := func(path string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post("http://"+addr+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, ""
		}
		return resp.StatusCode, errorCode(t, resp.Body)
	}
	docs := func(n int) []DocJSON {
		out := make([]DocJSON, n)
		for i := range out {
			out[i] = DocJSON{ID: fmt.Sprintf("new%d", i), Text: fmt.Sprintf("a new document number %d of the batch", i)}
		}
		return out
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("new%d", i)
		}
		return out
	}
	if st, code := post("/v1/docs", PutRequest{Docs: docs(6)}); st != 413 || code != "batch_too_large" {
		t.Fatalf("a put of 6 documents at MaxBatch 5: %d %s, want 413 batch_too_large", st, code)
	}
	if n, _ := d.Count(); n != stored {
		t.Fatalf("the refused put stored %d documents", n-stored)
	}
	// The documents are decoded one by one: their own errors are still
	// the body's, with the document's place.
	for _, body := range []string{`{"docs": [{"id": "x", "text": "t", "bogus": 1}]}`, `{"docs": [{"id": 7.5e999, "text": "t"}]}`, `{"docs": {"id": "x"}}`} {
		resp, err := http.Post("http://"+addr+"/v1/docs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if code := errorCode(t, resp.Body); resp.StatusCode != 400 || code != "bad_request" {
			t.Errorf("%s: %d %s, want 400 bad_request", body, resp.StatusCode, code)
		}
		resp.Body.Close()
	}
	if st, code := post("/v1/docs", PutRequest{Docs: docs(5)}); st != 200 {
		t.Fatalf("a put of 5 documents at MaxBatch 5: %d %s", st, code)
	}
	if n, _ := d.Count(); n != stored+5 {
		t.Fatalf("%d documents after a put of 5 to %d", n, stored)
	}
	// Ids are not documents: a has or delete of more is taken (a delete
	// is atomic, and cannot be split).
	if st, code := post("/v1/docs/has", HasRequest{IDs: ids(6)}); st != 200 {
		t.Errorf("a has of 6 ids: %d %s, want 200", st, code)
	}
	if st, code := post("/v1/docs/delete", DeleteRequest{IDs: append(ids(5), "one more"), IgnoreMissing: true}); st != 200 {
		t.Errorf("a delete of 6 ids: %d %s, want 200", st, code)
	}
	if found, _ := d.HasIDs(ids(5)); slices.Contains(found, true) {
		t.Errorf("the delete of 6 ids left some: %v", found)
	}
	if st, code := post("/v1/docs", PutRequest{Docs: docs(5)}); st != 200 {
		t.Fatalf("a put of 5 documents at MaxBatch 5: %d %s", st, code)
	}
	q := func(n int) []QueryRequest {
		out := make([]QueryRequest, n)
		for i := range out {
			id := fmt.Sprintf("new%d", i%5)
			out[i] = QueryRequest{ID: &id}
		}
		return out
	}
	if st, code := post("/v1/query/many", QueryManyRequest{Queries: q(6)}); st != 413 || code != "batch_too_large" {
		t.Errorf("a query/many of 6 queries: %d %s, want 413 batch_too_large", st, code)
	}
	if st, code := post("/v1/query/many", QueryManyRequest{Queries: q(5)}); st != 200 {
		t.Errorf("a query/many of 5 queries: %d %s", st, code)
	}
	// The queries are refused as they are counted, not once all are
	// decoded: 200,000 empty ones (600 KB of body) took 22 MB or more as
	// structs (a 20 MB body took 1.5 GB).
	// NB: also after a null list under the same key (which gave a
	// second list without the bound), and under the key in other case,
	// which encoding/json takes for it; a put's documents alike.
	list := "[" + strings.Repeat("{},", 199_999) + "{}]"
	h := Handler(d, &Options{MaxBatch: 5})
	// NB: a key given twice, or in two cases, is now refused before the
	// body is decoded (checkKeys): 400 bad_request.
	for _, c := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/query/many", `{"queries": ` + list + `}`, 413, "batch_too_large"},
		{"/v1/query/many", `{"queries": null, "queries": ` + list + `}`, 400, "given twice"},
		{"/v1/query/many", `{"queries": null, "Queries": ` + list + `}`, 400, "differ only in case"},
		{"/v1/docs", `{"docs": null, "docs": ` + list + `}`, 400, "given twice"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
		runtime.ReadMemStats(&after)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.code) {
			t.Errorf("%s of 200,000 at MaxBatch 5 (%.30s): %d %s", c.path, c.body, rec.Code, rec.Body)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 10<<20 {
			t.Errorf("%s: refusing 200,000 (%.30s) allocated %d MB", c.path, c.body, got>>20)
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/params")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p ParamsJSON
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.MaxBatch != 5 {
		t.Errorf("params: max_batch %d (%v), want 5", p.MaxBatch, err)
	}
}

// Ensure that the documents of the puts worked on at once stay within
// MaxInFlight: a put that would go over it waits, and gives up when its
// client goes away, with nothing stored; the room comes back when the
// puts before it end, and many puts of a whole budget each all finish.
func TestMaxInFlight(t *testing.T) {
	d := openFixture(t, 0, nil)
	var mu sync.Mutex
	var errs []error
	h := Handler(d, &Options{MaxBatch: 4, MaxInFlight: 4, Hooks: Hooks{Done: func(_ context.Context, op string, _ int, err error, _ time.Duration) {
		if op == "put" && err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}}})
	addr := startTCP(t, h, 0)
	put := func(ctx context.Context, prefix string, n int) error {
		var req PutRequest
		for i := range n {
			req.Docs = append(req.Docs, DocJSON{ID: fmt.Sprintf("%s%d", prefix, i), Text: fmt.Sprintf("document %d of %s, with a few words", i, prefix)})
		}
		b, _ := json.Marshal(req)
		hr, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/docs", bytes.NewReader(b))
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, errorCode(t, resp.Body))
		}
		return nil
	}
	// A load holds the writer: a put of the whole budget is admitted and
	// waits for the writer; a put of one more document waits for room.
	started, unblock := make(chan struct{}), make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), func(yield func(db.Doc, error) bool) {
			close(started)
			<-unblock
			yield(db.Doc{ID: "loaded", Text: "a document of the load"}, nil)
		}, nil)
		loaded <- err
	}()
	<-started
	first := make(chan error, 1)
	go func() { first <- put(context.Background(), "a", 4) }()
	time.Sleep(200 * time.Millisecond) // NB: for the first to be admitted
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := put(ctx, "b", 1); err == nil {
		t.Fatal("a put over the budget went through while the budget was held")
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(errs)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "waiting for other requests' documents") {
		t.Errorf("the waiting put ended with %v, want one error of waiting for room", errs)
	}
	mu.Unlock()
	close(unblock)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the admitted put: %v", err)
	}
	// Many puts of the whole budget: each waits its turn, none is lost.
	var wg sync.WaitGroup
	failed := make(chan error, 16)
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := put(context.Background(), fmt.Sprintf("c%d-", c), 4); err != nil {
				failed <- err
			}
		}()
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		t.Error(err)
	}
	if found, _ := d.Has("b0"); found {
		t.Error("the put whose client went away while it waited was stored")
	}
	if n, _ := d.Count(); n != 1+4+16*4 {
		t.Errorf("%d documents, want %d (the load's, the first put's and 16 puts of 4)", n, 1+4+16*4)
	}
}

// Ensure that HEAD is answered as GET without its body, except where the
// GET reads the whole index (pairs, scan, clusters, check): a HEAD would
// run it to the end for nothing, so it is refused with 405.
func TestHead(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	for path, want := range map[string]int{"/v1/count": 200, "/v1/params": 200, "/v1/docs?id=nope": 404,
		"/v1/pairs": 405, "/v1/scan": 405, "/v1/clusters": 405, "/v1/check": 405, "/v1/stats": 405, "/v1/buckets": 405} {
		resp, err := http.Head("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("HEAD %s: %d, want %d", path, resp.StatusCode, want)
		}
		if want == 405 && !strings.HasPrefix(resp.Header.Get("Allow"), "GET") {
			t.Errorf("HEAD %s: Allow %q, want GET first", path, resp.Header.Get("Allow"))
		}
	}
}

// syncBuffer is a bytes.Buffer that a server's goroutines may write while
// a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ensure that a body whose connection ended under the read (the client
// gone, or the server closing it at the end of a shutdown) is code
// canceled, not the client's bad request (the log said bad_request with
// "use of closed network connection"), while a malformed one stays a bad
// request.
func TestBodyErrorOfAClosedConnection(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{
		{&net.OpError{Op: "read", Net: "unix", Err: net.ErrClosed}, "canceled"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "canceled"},
		{io.ErrUnexpectedEOF, "bad_request"},
		{&json.SyntaxError{Offset: 3}, "bad_request"},
	} {
		if got := codeOf(bodyError(c.err)).Code; got != c.code {
			t.Errorf("bodyError(%v): code %q, want %q", c.err, got, c.code)
		}
	}
}

// Ensure that a client that goes away in the middle of its body (a load
// killed as it uploads, a put cut short) is logged as canceled (499), not
// as a bad request: both are io.ErrUnexpectedEOF to encoding/json, and
// the log said 400 "the body ends inside its JSON value" for a build
// killed mid-upload. A body whose JSON is cut short, on a connection that
// delivered all it promised, stays a bad request.
func TestBodyCutByItsConnection(t *testing.T) {
	d := openFixture(t, 0, nil)
	var log syncBuffer
	addr := startTCP(t, Handler(d, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}), 0)
	lines := `{"id":"a","text":"the first document of the load"}` + "\n" + `{"id":"b","te`
	for _, c := range []struct {
		path, body, status, code string
	}{
		// Content-Length promises more than the client sends before it
		// closes the connection.
		{"/v1/load", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(lines)+1000, lines), "499", "canceled"},
		{"/v1/docs", fmt.Sprintf("Content-Length: 1000\r\n\r\n%s", `{"id":"c","text":"cut`), "499", "canceled"},
		// A chunk that never ends.
		{"/v1/load", fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n%s", len(lines)+100, lines), "499", "canceled"},
		// The whole body arrives; its JSON is cut short.
		{"/v1/docs", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(`{"id":"c","text":"cut`), `{"id":"c","text":"cut`), "400", "bad_request"},
	} {
		before := strings.Count(log.String(), "lshdb: request")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s", c.path, c.body)
		if c.status == "400" {
			// NB: this client waits for its answer before it goes.
			if _, err := conn.Read(make([]byte, 1)); err != nil {
				t.Errorf("%s: no answer: %v", c.path, err)
			}
		}
		conn.Close()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(log.String(), "lshdb: request") == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		all := strings.Split(strings.TrimSpace(log.String()), "\n")
		last := all[len(all)-1]
		if !strings.Contains(last, "path="+c.path) || !strings.Contains(last, "status="+c.status) || !strings.Contains(last, "code="+c.code) {
			t.Errorf("a %s cut short (%s): logged %s, want status=%s code=%s", c.path, c.code, last, c.status, c.code)
		}
	}
	// Nothing of the cut loads was stored.
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("%d documents stored by loads cut short (%v), want 0", n, err)
	}
}

// Ensure that the server bounds the bytes of text it works on at once
// (MaxInFlightBytes), as it bounds documents: a request over the room
// left waits (and fails when its client goes, giving back its
// documents' room), one larger than the whole runs once nothing else
// does. A document takes about 35 times its text in memory while it is
// signed: three puts of 42 MB took a server to 4.4 GB.
func TestMaxInFlightBytes(t *testing.T) {
	d := openFixture(t, 0, nil)
	h := Handler(d, &Options{MaxInFlight: 10, MaxInFlightBytes: 1000}).(*handler)
	first, err := h.admit(context.Background(), 1, 800)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := h.admit(ctx, 1, 300); err == nil || !strings.Contains(err.Error(), "--max-in-flight-bytes") {
		t.Fatalf("a request over the bytes left: %v, want to wait until its client goes", err)
	}
	if !h.inFlight.TryAcquire(9) {
		t.Fatal("the request that gave up kept its documents' room")
	}
	h.inFlight.Release(9)
	// A request ended before it waits (the server shutting down) is said
	// to have ended, not to have waited for others' documents (there was
	// room for it).
	if _, err := h.admit(ctx, 1, 100); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "waiting") {
		t.Fatalf("a request ended before it waited: %v, want its context's error alone", err)
	}
	if !h.inFlight.TryAcquire(9) || !h.inFlightBytes.TryAcquire(200) {
		t.Fatal("the ended request took room")
	}
	h.inFlight.Release(9)
	h.inFlightBytes.Release(200)
	whole := make(chan func(), 1)
	go func() {
		rel, err := h.admit(context.Background(), 1, 5000)
		if err != nil {
			t.Error(err)
		}
		whole <- rel
	}()
	select {
	case <-whole:
		t.Fatal("a request larger than the whole ran beside another")
	case <-time.After(100 * time.Millisecond):
	}
	first()
	rel := <-whole
	if h.inFlightBytes.TryAcquire(1) {
		t.Fatal("a request larger than the whole ran beside room for another")
	}
	rel()
	if !h.inFlightBytes.TryAcquire(1000) {
		t.Fatal("the room was not given back")
	}
	// A query of a large text waits for room too (one of a few bytes
	// does not: it is not queued behind the writes).
	addr := startTCP(t, h, 0)
	query := func(ctx context.Context, text string) error {
		b, _ := json.Marshal(QueryRequest{Text: &text})
		return postOK(ctx, "http://"+addr+"/v1/query", b)
	}
	big := strings.Repeat("a large query text ", 100_000) // 1.9 MB
	if err := query(context.Background(), "a small query text"); err != nil {
		t.Fatalf("a small query while the bytes are held: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := query(ctx2, big); err == nil {
		t.Fatal("a query of 1.9 MB ran while the bytes were held")
	}
	h.inFlightBytes.Release(1000)
	if err := query(context.Background(), big); err != nil {
		t.Fatalf("a query of 1.9 MB once the bytes are free: %v", err)
	}
}

// Ensure that a put-if-new stream that fails with its body still unread
// (a malformed line among others, a line over the body limit) ends its
// connection cleanly: net/http panicked ("invalid concurrent Body.Read
// call", golang/go#68560) reading the next request of a full-duplex
// connection whose body the handler had left, and logged the stack.
func TestPutIfNewBadLineNoPanic(t *testing.T) {
	d := openFixture(t, 0, nil)
	var serverLog syncBuffer
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler(d, nil), ErrorLog: log.New(&serverLog, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	var body strings.Builder
	body.WriteString(`{"id":"ok1","text":"small text one two three"}` + "\n{bad\n")
	for i := range 200 {
		fmt.Fprintf(&body, `{"id":"r%d","text":"filler %d abc def"}`+"\n", i, i)
	}
	for i := range 3 {
		resp, err := http.Post("http://"+l.Addr().String()+"/v1/docs/put-if-new", "application/x-ndjson", strings.NewReader(body.String()))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"bad_request"`) {
			t.Fatalf("the answer names no bad line: %s", b)
		}
	}
	// A streaming client (chunked) that sends a bad line and waits for
	// its answer before it sends more gets the whole answer, then the
	// end of the connection: closing the body in the handler drained it,
	// and such a client got no answer's end (nothing at all when the
	// bad line came first) until it sent 256 KiB more or went away.
	for _, lines := range []string{`{"id":"ok2","text":"another small text here"}` + "\n{bad\n", "{bad\n"} {
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/docs/put-if-new HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(lines), lines)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		answer, err := io.ReadAll(conn) // NB: to the end of the connection
		conn.Close()
		// NB: the answer's end: its last chunk (a stream) or its
		// Connection: close (a 400 before any line), then the
		// connection's.
		if ended := strings.HasSuffix(string(answer), "\r\n0\r\n\r\n") || strings.Contains(string(answer), "Connection: close"); err != nil || !ended || !strings.Contains(string(answer), "bad_request") {
			t.Errorf("a streaming client with a bad line %q: %v, answer:\n%s", lines, err, answer)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if got := serverLog.String(); strings.Contains(got, "panic") {
		t.Errorf("the server logged a panic:\n%s", got)
	}
}

// Ensure that an answer cut by its connection's close, once the request
// is over for the server (its context done: the client gone, or the
// server shutting down), is logged as the client's going (canceled, at
// INFO), as a broken pipe is: "use of closed network connection" was
// logged as an internal error, at ERROR, at every shutdown with an
// answer in flight. With the request still live, it stays internal. And
// that a request refused for its token is logged at WARN.
func TestDoneConnectionClosed(t *testing.T) {
	closedConn := fmt.Errorf("write: %w", &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed})
	type tc struct {
		name      string
		cancelled bool
		want      []string
		err       error
	}
	for _, c := range []tc{
		{"request over", true, []string{"level=INFO", "code=canceled"}, closedConn},
		{"request live", false, []string{"level=ERROR", "code=internal"}, closedConn},
		// NB: a wrong token, at INFO, read as traffic.
		{"unauthorized", false, []string{"level=WARN", "code=unauthorized"}, fmt.Errorf("%w: the bearer token is not this server's", ErrUnauthorized)},
	} {
		var buf bytes.Buffer
		h := &handler{o: Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}}
		ctx, cancel := context.WithCancel(context.Background())
		if c.cancelled {
			cancel()
		}
		r := httptest.NewRequest("POST", "/v1/docs/has", nil).WithContext(ctx)
		status := 200
		if errors.Is(c.err, ErrUnauthorized) {
			status = 401
		}
		h.done(r, "has", &resp{status: status}, c.err, time.Second)
		cancel()
		for _, w := range c.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: the log line %q lacks %s", c.name, buf.String(), w)
			}
		}
	}
}

// TestHash64Strings: a hash given as a string is decimal, or hex after
// 0x, as documented. It was read with base 0: "0123" was 83 (octal), and
// 0b, 0o and underscores were accepted.
func TestHash64Strings(t *testing.T) {
	for in, want := range map[string]uint64{`"0123"`: 123, `"0010"`: 10, `"123"`: 123, `123`: 123, `"0x10"`: 16, `"0XfF"`: 255, `"18446744073709551615"`: math.MaxUint64, `"0xffffffffffffffff"`: math.MaxUint64} {
		var h Hash64
		if err := h.UnmarshalJSON([]byte(in)); err != nil || uint64(h) != want {
			t.Errorf("Hash64 of %s = %d, %v; want %d", in, uint64(h), err, want)
		}
	}
	for _, in := range []string{`"0b11"`, `"1_000"`, `"0o17"`, `"0x"`, `"-1"`, `"+1"`, `"0x-1"`, `"18446744073709551616"`, `""`, `1.5`} {
		var h Hash64
		if err := h.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("Hash64 of %s = %d, accepted: neither decimal nor hex after 0x", in, uint64(h))
		}
	}
}

// TestOpenAPISchemasCoverFields: every JSON field the server sends or
// reads in the structs below is a property of its schema in openapi.yaml
// (the file lacked log_bytes, recycled_log_bytes, backup's copy and pairs'
// estimate_only, which the server sends), and each enum of names lists
// every name the code gives.
func TestOpenAPISchemasCoverFields(t *testing.T) {
	props := map[string]map[string]bool{} // schema → its properties
	schema, inProps := "", false
	for _, line := range strings.Split(string(OpenAPI), "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		name, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case indent == 4 && strings.HasSuffix(line, ":"):
			schema, inProps = name, false
			props[schema] = map[string]bool{}
		case indent == 6 && schema != "":
			inProps = name == "properties"
			if flow, ok := strings.CutPrefix(strings.TrimSpace(line), "properties: {"); ok {
				// properties: {a: {…}, b: {…}}: the keys at depth 0.
				depth, start := 0, 0
				for i, c := range flow {
					switch {
					case c == '{' || c == '[':
						depth++
					case c == '}' || c == ']':
						depth--
					case c == ':' && depth == 0:
						props[schema][strings.TrimSpace(strings.TrimPrefix(flow[start:i], ","))] = true
					case c == ',' && depth == 0:
						start = i
					}
				}
			}
		case indent == 8 && inProps:
			props[schema][name] = true
		case indent < 4 && line != "":
			schema = ""
		}
	}
	for name, v := range map[string]any{
		"Pair": PairJSON{}, "Cluster": ClusterJSON{}, "Params": ParamsJSON{}, "Info": InfoJSON{},
		"Stats": StatsJSON{}, "Match": MatchJSON{}, "QueryResult": QueryResultJSON{}, "Document": DocumentJSON{},
		"BatchResult": BatchResultJSON{}, "LoadResult": LoadResultJSON{}, "DeleteResult": DeleteResultJSON{},
		"Explain": ExplainJSON{}, "Check": CheckJSON{}, "Repair": RepairJSON{}, "Health": HealthJSON{}, "PairsStats": PairsStatsJSON{},
		"Bucket": BucketJSON{}, "BucketStats": BucketStatsJSON{}, "ByteCounts": ByteCountsJSON{},
		// The requests' bodies.
		"Doc": DocJSON{}, "PutRequest": PutRequest{}, "QueryRequest": QueryRequest{}, "DeleteRequest": DeleteRequest{},
		"PutIfNewLine": PutIfNewJSON{}, "Tune": TuneJSON{},
		// NB: these were inline in their paths, where no test read them:
		// the backup's verify was left out (a review of the API).
		"BackupRequest": BackupRequest{}, "HasRequest": HasRequest{}, "QueryManyRequest": QueryManyRequest{},
	} {
		if props[name] == nil {
			t.Errorf("openapi.yaml has no schema %s", name)
			continue
		}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" || f.Anonymous {
				continue
			}
			if !props[name][tag] {
				t.Errorf("openapi.yaml: schema %s lacks %s (%s.%s)", name, tag, rt.Name(), f.Name)
			}
		}
	}
	// The paths take their request bodies from those schemas.
	for path, schema := range map[string]string{
		"/v1/backup": "BackupRequest", "/v1/docs/delete": "DeleteRequest", "/v1/docs/has": "HasRequest", "/v1/query/many": "QueryManyRequest",
	} {
		sec := string(OpenAPI)
		i := strings.Index(sec, "\n  "+path+":\n")
		if i < 0 {
			t.Errorf("openapi.yaml has no %s", path)
			continue
		}
		sec = sec[i+1:]
		if j := strings.Index(sec, "\n  /"); j >= 0 {
			sec = sec[:j]
		}
		if !strings.Contains(sec, `requestBody:`) || !strings.Contains(sec, `{$ref: "#/components/schemas/`+schema+`"}`) {
			t.Errorf("openapi.yaml's %s does not take its body from the schema %s", path, schema)
		}
	}
	flat := strings.Join(strings.Fields(string(OpenAPI)), " ")
	var schemes []string
	for s := minhash.SchemeFSS; s <= minhash.SchemeDatasketch; s++ {
		schemes = append(schemes, s.String())
	}
	if want := "scheme: {type: string, enum: [" + strings.Join(schemes, ", ") + "]}"; !strings.Contains(flat, want) {
		t.Errorf("openapi.yaml's scheme is not %q", want)
	}
}

// Ensure that POST /v1/clusters takes what a pairs stream holds besides
// pairs for what it is: a header line is skipped, a failed stream's error
// line, a pair after the end line or a line without both ids or without
// its jaccard refused with the value's number. They were taken as the
// pair ("", "") and refused for naming one document twice (a header line
// too), and pairs after an end line went through.
func TestClustersFromLines(t *testing.T) {
	d := openFixture(t, 10, nil)
	base := "http://" + startTCP(t, Handler(d, nil), 0)
	var ids []string
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, doc.ID)
	}
	pair := func(a, b string) string { return fmt.Sprintf(`{"a":%q,"b":%q,"jaccard":0.9}`, a, b) }
	for _, tc := range []struct {
		body   string
		status int
		says   string
	}{
		{`{"header":{"threshold":0.5}}` + "\n" + pair(ids[0], ids[1]) + "\n" + `{"end":{"lines":1}}` + "\n", 200, ""},
		{pair(ids[0], ids[1]) + "\n" + `{"error":{"code":"internal","message":"boom"}}` + "\n", 400, "value 2: the error line of a pairs stream that failed"},
		{pair(ids[0], ids[1]) + "\n" + `{"end":{"lines":1}}` + "\n" + pair(ids[2], ids[3]) + "\n", 400, "value 3: a pair after the stream's end line"},
		{`{"a":"` + ids[0] + `","jaccard":0.9}` + "\n", 400, "value 1: a pair needs both ids"},
		{`{"a":"` + ids[0] + `","b":"` + ids[1] + `","jaccard":0.9,"error":null,"header":null}` + "\n", 200, ""}, // NB: a null field is no field
		// NB: a pair without its jaccard (missing, null, misspelt) was
		// taken at 0, and the answer was 200 with no clusters.
		{pair(ids[0], ids[1]) + "\n" + `{"a":"` + ids[2] + `","b":"` + ids[3] + `"}` + "\n", 400, `value 2: a pair needs its \"jaccard\"`},
		{`{"a":"` + ids[2] + `","b":"` + ids[3] + `","jaccard":null}` + "\n", 400, `value 1: a pair needs its \"jaccard\"`},
		{`{"a":"` + ids[2] + `","b":"` + ids[3] + `","jacard":0.9}` + "\n", 400, `value 1: a pair needs its \"jaccard\"`},
		{`{"a":"` + ids[2] + `","b":"` + ids[3] + `","jaccard":1.5}` + "\n", 400, "value 1: jaccard 1.5 is outside [0, 1]"},
		{`{"a":"` + ids[2] + `","b":"` + ids[3] + `","jaccard":0}` + "\n", 200, ""}, // NB: 0 given is a pair at 0
	} {
		code, body := postJSON(t, base+"/v1/clusters?threshold=0.5", tc.body)
		if code != tc.status || !strings.Contains(string(body), tc.says) {
			t.Errorf("POST /v1/clusters with\n%s: %d %s; want %d %q", tc.body, code, body, tc.status, tc.says)
		}
	}
}

// Ensure that a request the server cut as it shut down is answered 503
// shutdown when the cut is what failed it (a cancelled call), and that
// any other error of that moment stays its own (a 404 was answered 503
// "database is closed", and a client would retry it for ever).
func TestShutdownCut(t *testing.T) {
	h := Handler(openFixture(t, 60, nil), nil)
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/docs?id=missing", 404, "not_found"},
		{"GET", "/v1/query?id=d1&threshold=7", 400, "invalid_options"},
		{"GET", "/v1/buckets?band=99", 400, "invalid_options"},
		{"GET", "/v1/check", 503, "shutdown"},
		{"GET", "/v1/pairs?threshold=0.3", 503, "shutdown"},
	} {
		ctx, cut := context.WithCancelCause(context.Background())
		cut(ErrShutdown)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil).WithContext(ctx))
		var body ErrorJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != c.status || body.Error.Code != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, rec.Code, rec.Body, c.status, c.code)
		}
	}
}

// blockingWriter holds the first write of an answer until release closes.
type blockingWriter struct {
	*httptest.ResponseRecorder
	first, release chan struct{}
	n              int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	if b.n++; b.n == 1 {
		close(b.first)
		<-b.release
	}
	return b.ResponseRecorder.Write(p)
}

// Ensure that a stream the server cuts as it shuts down, once its answer
// began, ends with a shutdown error line: it said "canceled", which a
// client took for its own cancellation (an attached pairs exited 130).
func TestStreamCutMidway(t *testing.T) {
	h := Handler(openFixture(t, 3000, nil), nil)
	ctx, cut := context.WithCancelCause(context.Background())
	bw := &blockingWriter{ResponseRecorder: httptest.NewRecorder(), first: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(bw, httptest.NewRequest("GET", "/v1/scan", nil).WithContext(ctx))
		close(done)
	}()
	<-bw.first
	cut(ErrShutdown)
	close(bw.release)
	<-done
	lines := strings.Split(strings.TrimSpace(bw.Body.String()), "\n")
	if last := lines[len(lines)-1]; bw.Code != 200 || !strings.Contains(last, `"code":"shutdown"`) {
		t.Fatalf("status %d, %d lines, the last %s", bw.Code, len(lines), last)
	}
}

// Ensure that a delete waits its turn among the work in flight, as has
// does with its ids: deletes were the only requests that did not, and
// twelve of 500,000 ids at once took a server from 38 MB to 626 MB (an
// SRE review's H1). While the room is held, a delete gives up when its
// client does, with nothing deleted; once it is released, it deletes.
// The oracle: Has on the index.
func TestDeleteWaitsForRoom(t *testing.T) {
	d := openFixture(t, 0, nil)
	if err := d.Put(db.Doc{ID: "x", Text: "a document the delete waits to delete"}, nil); err != nil {
		t.Fatal(err)
	}
	h := Handler(d, &Options{MaxInFlight: 10}).(*handler)
	addr := startTCP(t, h, 0)
	del := func(ctx context.Context) error {
		return postOK(ctx, "http://"+addr+"/v1/docs/delete", []byte(`{"ids":["x"]}`))
	}
	all := int64(h.o.MaxInFlight) // NB: raised to MaxBatch at least
	if !h.inFlight.TryAcquire(all) {
		t.Fatal("no room at the start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := del(ctx); err == nil {
		t.Fatal("a delete went through while the room was held")
	}
	time.Sleep(100 * time.Millisecond) // NB: for the handler to see its client gone
	if ok, err := d.Has("x"); !ok || err != nil {
		t.Fatalf("the delete that gave up deleted: %v", err)
	}
	h.inFlight.Release(all)
	if err := del(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok, _ := d.Has("x"); ok {
		t.Error("the delete, once admitted, did not delete")
	}
}

// postOK posts body to url, and returns an error unless the answer is
// 200 (the client's, or the status).
func postOK(ctx context.Context, url string, body []byte) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Ensure that /v1/params, /v1/info and /v1/stats of an estimate-only
// (storage none) index give its figures at the threshold, as lshdb info
// and stats --output json do (db.Params.EstimateFigures), where only the
// command computed them: a client of a server read expected_recall, near
// 1, for answers that find a pair at the threshold about half the time.
// An index that verifies gives none of the keys.
func TestEstimateFiguresServed(t *testing.T) {
	for storage, want := range map[string]bool{db.StorageNone: true, db.StorageText: false, db.StorageSets: false} {
		d := openFixture(t, 20, &db.Options{Storage: storage})
		f, ok := d.Params().EstimateFigures()
		if ok != want {
			t.Fatalf("a %s index: EstimateFigures %v", storage, ok)
		}
		h := Handler(d, nil)
		for _, path := range []string{"/v1/params", "/v1/info", "/v1/stats"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			var v struct {
				*EstimateJSON
				Params *struct{ *EstimateJSON } `json:"params"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != 200 || err != nil {
				t.Fatalf("%s of a %s index: %d %v %s", path, storage, rec.Code, err, rec.Body)
			}
			// /v1/params's keys are its own, /v1/info's figures are in
			// its params, /v1/stats gives both, as lshdb stats does.
			var got []*EstimateJSON
			if path != "/v1/info" {
				got = append(got, v.EstimateJSON)
			}
			if path != "/v1/params" {
				if v.Params == nil {
					t.Fatalf("%s of a %s index: no params: %s", path, storage, rec.Body)
				}
				got = append(got, v.Params.EstimateJSON)
			}
			for _, e := range got {
				if !want {
					if e != nil || strings.Contains(rec.Body.String(), "estimate_") {
						t.Errorf("%s of a %s index: %s", path, storage, rec.Body)
					}
					continue
				}
				if e == nil || !e.EstimateOnly || e.EstimateSD != f.SD || e.RecallAtThreshold != f.RecallAtThreshold {
					t.Errorf("%s of a %s index: %s, want %+v", path, storage, rec.Body, f)
				}
			}
		}
	}
}

// Ensure that a request for no route is refused as unauthorized where a
// token is set, and that a path is quoted clipped, in the answer and in
// the log: a client without the token had a 1 MB path written back to it
// and twice to the log, 2 bytes of log for each byte sent (an SRE's
// review). The oracle: the sizes of the answers and of the log.
func TestLongPathsNotEchoed(t *testing.T) {
	d := openFixture(t, 0, nil)
	var log bytes.Buffer
	h := Handler(d, &Options{Token: "s3cret", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	long := "/" + strings.Repeat("a", 1_000_000)
	for _, c := range []struct {
		method, token string
		status        int
	}{{"GET", "", 401}, {"POST", "wrong", 401}, {"GET", "s3cret", 404}, {"DELETE", "s3cret", 404}} {
		log.Reset()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(c.method, long, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != c.status || rec.Body.Len() > 2000 || log.Len() > 2000 {
			t.Errorf("%s of a 1 MB path, token %q: %d, an answer of %d bytes and %d of log; want %d and both short", c.method, c.token, rec.Code, rec.Body.Len(), log.Len(), c.status)
		}
		if c.status == 404 && !strings.Contains(rec.Body.String(), "(1000001 bytes)") {
			t.Errorf("the 404 of a 1 MB path does not say its length: %.300s", rec.Body)
		}
	}
	// healthz needs no token, as before; another route still does.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("healthz without a token: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/healthz", nil))
	if rec.Code != 401 {
		t.Errorf("POST healthz without a token: %d %s, want 401", rec.Code, rec.Body)
	}
}

// Ensure that the read-only token (Options.ReadToken) calls the read
// operations and no write or maintenance one: each write route answers
// 403 forbidden and the index is as it was (its count, a document read
// back, no backup made), where the server's token is served; a wrong
// token is still 401 (a Python client user's PY4: a query-only web
// application held a credential that could delete the index). Every
// operation is either in ReadOps or one of the writes below.
func TestReadToken(t *testing.T) {
	d := openFixture(t, 10, nil)
	// NB: a backup root that holds the backup's directory, and a valid
	// put-if-new stream: either would be applied but for the token.
	root := t.TempDir()
	addr := startTCP(t, Handler(d, &Options{Token: "s3cret", ReadToken: "reader", BackupRoot: root}), 0)
	first := firstDoc(t, d)
	call := func(token, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	id := url.QueryEscape(first.ID)
	backupDir := filepath.Join(root, "bk")
	writes := []struct{ op, method, path, body string }{
		// NB: the load first, so that the puts after it would stay.
		{"load", "POST", "/v1/load?delete_absent=true", `{"id":"only","text":"the only document left"}` + "\n"},
		{"put", "POST", "/v1/docs", `{"docs":[{"id":"new","text":"a new document of the reader"}]}`},
		{"delete", "DELETE", "/v1/docs?id=" + id, ""},
		{"delete", "POST", "/v1/docs/delete", fmt.Sprintf(`{"ids":[%q]}`, first.ID)},
		{"put_if_new", "POST", "/v1/docs/put-if-new", `{"id":"new2","text":"another new document of the reader"}` + "\n"},
		{"repair", "POST", "/v1/repair", ""},
		{"backup", "POST", "/v1/backup", fmt.Sprintf(`{"dir":%q}`, backupDir)},
		{"purge", "POST", "/v1/purge", ""},
		{"compact", "POST", "/v1/compact", ""},
	}
	for _, op := range Ops {
		write := slices.ContainsFunc(writes, func(w struct{ op, method, path, body string }) bool { return w.op == op })
		if op != "unknown" && write == slices.Contains(ReadOps, op) {
			t.Errorf("op %s: in ReadOps %v, a write %v: want exactly one", op, slices.Contains(ReadOps, op), write)
		}
	}
	for _, w := range writes {
		st, body := call("reader", w.method, w.path, w.body)
		if st != http.StatusForbidden || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, "may only read") {
			t.Errorf("%s %s with the read-only token: %d %s", w.method, w.path, st, body)
		}
	}
	if n, err := d.Count(); err != nil || n != 10 {
		t.Errorf("after the refused writes: %d documents, %v; want 10", n, err)
	}
	if got, err := d.Get(first.ID); err != nil || got.Text != first.Text {
		t.Errorf("after the refused writes, %q: %v", first.ID, err)
	}
	if _, err := os.Stat(backupDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused backup made its directory: %v", err)
	}
	for _, id := range []string{"new", "new2", "only"} {
		if ok, err := d.Has(id); ok || err != nil {
			t.Errorf("after the refused writes, %q is stored (%v)", id, err)
		}
	}
	for _, path := range []string{"/v1/count", "/v1/docs?id=" + id, "/v1/query?text=" + url.QueryEscape(first.Text), "/v1/pairs", "/v1/check", "/v1/stats"} {
		if st, body := call("reader", "GET", path, ""); st != 200 {
			t.Errorf("GET %s with the read-only token: %d %.200s", path, st, body)
		}
	}
	if st, body := call("reader", "POST", "/v1/query", fmt.Sprintf(`{"text":%q}`, first.Text)); st != 200 || !strings.Contains(body, first.ID) {
		t.Errorf("POST /v1/query with the read-only token: %d %.200s", st, body)
	}
	if st, body := call("s3cret", "POST", "/v1/docs", `{"docs":[{"id":"new","text":"a new document of the writer"}]}`); st != 200 {
		t.Errorf("put with the server's token: %d %s", st, body)
	}
	if st, _ := call("wrong", "GET", "/v1/count", ""); st != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", st)
	}
	// A read token equal to the token is none: that token writes.
	same := startTCP(t, Handler(d, &Options{Token: "s3cret", ReadToken: " s3cret "}), 0)
	req, _ := http.NewRequest("POST", "http://"+same+"/v1/purge", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("purge with a token that is also the read token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// Ensure that GET /v1/docs?sets=false answers the document without its
// shingle set and signature (a Python client user's PY3: 16 hex digits a
// shingle, 9x a text's bytes), the rest as with them, against the
// default answer and the library's Get; a value that is no boolean is
// 400.
func TestGetWithoutSets(t *testing.T) {
	d := openFixture(t, 5, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	want := firstDoc(t, d)
	get := func(query string) (int, DocumentJSON) {
		resp, err := http.Get("http://" + addr + "/v1/docs?id=" + url.QueryEscape(want.ID) + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out DocumentJSON
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, out
	}
	st, full := get("")
	if st != 200 || len(full.ShingleSet) != len(want.Shingles) || len(full.ShingleSet) == 0 || !slices.Equal(full.Signature, want.Signature) {
		t.Fatalf("GET: %d, %d shingles and %d signature values; want %d and %d", st, len(full.ShingleSet), len(full.Signature), len(want.Shingles), len(want.Signature))
	}
	st, bare := get("&sets=false")
	if st != 200 || len(bare.ShingleSet) != 0 || len(bare.Signature) != 0 || bare.Text == nil || *bare.Text != want.Text ||
		bare.Num != full.Num || bare.Shingles != full.Shingles || bare.Shingles != len(want.Shingles) {
		t.Errorf("GET sets=false: %d %+v; want the document of %+v without its set and signature", st, bare, full)
	}
	if st, again := get("&sets=true"); st != 200 || len(again.ShingleSet) != len(full.ShingleSet) {
		t.Errorf("GET sets=true: %d, %d shingles", st, len(again.ShingleSet))
	}
	if st, _ := get("&sets=maybe"); st != 400 {
		t.Errorf("GET sets=maybe: %d, want 400", st)
	}
}

// firstDoc returns the first document d's scan gives.
func firstDoc(t *testing.T, d *db.DB) *db.StoredDoc {
	t.Helper()
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	t.Fatal("no document")
	return nil
}

// Ensure that Options.QueryTimeout stops a query, or a batch of them,
// that runs past it, with 504 timeout naming the server's flag, and leaves
// a query within it its answer (the oracle: the same query with no
// timeout). A query of a document that shares buckets with many others
// took seconds of both cores (a review of skewed corpora, K5).
func TestQueryTimeout(t *testing.T) {
	d := openFixture(t, 30, nil)
	text := sampleDocs(t, 30)[3].Text
	body := func(path string) string {
		if path == "/v1/query/many" {
			b, _ := json.Marshal(map[string]any{"queries": []map[string]any{{"text": text}, {"text": text}}})
			return string(b)
		}
		b, _ := json.Marshal(map[string]any{"text": text})
		return string(b)
	}
	answer := func(h http.Handler, path string) (int, string) {
		r := httptest.NewRequest("POST", path, strings.NewReader(body(path)))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for _, path := range []string{"/v1/query", "/v1/query/many"} {
		code, want := answer(Handler(d, nil), path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, want)
		}
		if code, got := answer(Handler(d, &Options{QueryTimeout: time.Minute}), path); code != 200 || got != want {
			t.Errorf("%s within its timeout: %d %s, want %s", path, code, got, want)
		}
		code, got := answer(Handler(d, &Options{QueryTimeout: time.Nanosecond}), path)
		if code != http.StatusGatewayTimeout || !strings.Contains(got, `"timeout"`) || !strings.Contains(got, "--query-timeout") {
			t.Errorf("%s past its timeout: %d %s, want 504 timeout naming --query-timeout", path, code, got)
		}
	}
}

// Ensure that a request refused before its body was read (no token, or
// from another site) frees its connection once the refusal is written:
// the server closes it without reading the body the header promised.
// net/http read the body on, for up to the read timeout, and the
// connection stayed busy: 4,100 such connections with no token held
// every slot of serve's TCP bound, and /healthz went unanswered for 30 s
// (a security review, S1). The oracle is the connection's end (EOF), read
// by the client right after the 401 or 403.
//
// The same for /healthz, which needs no token and answered a request
// that promised a body, which net/http then read as slowly as it came:
// 4,200 such peers held every slot (a security review, SEC2-2); and for
// a write refused to the read token.
func TestRefusalFreesTheConnection(t *testing.T) {
	d := openFixture(t, 3, nil)
	srv := httptest.NewServer(Handler(d, &Options{Token: "s3cret", ReadToken: "r3ad"}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ name, request, headers, want string }{
		{"no token", "POST /v1/query", "", "401"},
		{"another site", "POST /v1/query", "Authorization: Bearer s3cret\r\nOrigin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n", "403"},
		{"healthz with a body", "GET /healthz", "", "200"},
		{"a write with the read token", "POST /v1/docs", "Authorization: Bearer r3ad\r\n", "403"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n%s\r\n{", c.request, addr, c.headers)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(conn)
		status, err := br.ReadString('\n')
		if err != nil || !strings.Contains(status, c.want) {
			conn.Close()
			t.Fatalf("%s: %q, %v; want %s", c.name, status, err, c.want)
		}
		// NB: the rest of the answer, then the end of the connection, while
		// the body is still owed.
		_, err = io.Copy(io.Discard, br)
		conn.Close()
		if err != nil {
			t.Errorf("%s: the server kept the connection after its %s, reading the body it refused: %v", c.name, c.want, err)
		}
	}
}

// Ensure that a load with delete_absent and no max_deleted deletes at
// most half of the stored documents, as lshdb build --delete-missing, and
// refuses an empty body unless max_deleted is all: it had no limit, so a
// body cut short, or empty, deleted most or all of the index (a review of
// the API from a client's side, AC11). And that max_deleted takes a
// count, a percentage or all, and refuses 0 (which meant no limit) and
// itself without delete_absent. The oracle: the count and the documents
// of the index after each answer.
func TestLoadDeleteAbsentGuard(t *testing.T) {
	d := openFixture(t, 10, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	var docs []db.Doc
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, db.Doc{ID: doc.ID, Text: doc.Text})
	}
	body := func(ds []db.Doc) string {
		var b strings.Builder
		for _, doc := range ds {
			fmt.Fprintf(&b, "{\"id\":%q,\"text\":%q}\n", doc.ID, doc.Text)
		}
		return b.String()
	}
	count := func() int {
		n, err := d.Count()
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	for _, c := range []struct {
		query string
		keep  int // documents of the body
		code  string
		left  int // documents after the load
	}{
		{"delete_absent=true", 0, "too_many_deletes", 10},
		{"delete_absent=true", 4, "too_many_deletes", 10}, // 6 of 10 > 50%
		{"delete_absent=true&max_deleted=10", 0, "too_many_deletes", 10},
		{"delete_absent=true&max_deleted=100%25", 0, "too_many_deletes", 10},
		{"delete_absent=true&max_deleted=0", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=-1", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=x%25", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=%2B5", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=05", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=1e1%25", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=.5%25", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=100.5%25", 10, "bad_request", 10},
		{"max_deleted=5", 10, "bad_request", 10},
		{"delete_absent=true&max_deleted=1", 8, "too_many_deletes", 10},
		{"delete_absent=true", 5, "", 5},                                   // 5 of 10: 50%
		{"delete_absent=true&max_deleted=20%25", 3, "too_many_deletes", 5}, // 2 of 5 > 20%: limit 1
		{"delete_absent=true&max_deleted=40%25", 3, "", 3},
		{"delete_absent=true&max_deleted=all", 0, "", 0},
	} {
		before := count()
		if before < c.keep {
			t.Fatalf("%s: %d documents stored, fewer than the %d of the body", c.query, before, c.keep)
		}
		st, b := postJSON(t, "http://"+addr+"/v1/load?"+c.query, body(docs[:c.keep]))
		switch {
		case c.code == "" && st != 200:
			t.Errorf("%s with %d of %d documents: %d %s, want 200", c.query, c.keep, before, st, b)
		case c.code != "" && !strings.Contains(string(b), `"code":"`+c.code+`"`):
			t.Errorf("%s with %d of %d documents: %d %s, want %s", c.query, c.keep, before, st, b, c.code)
		}
		if n := count(); n != c.left {
			t.Errorf("%s with %d of %d documents: %d stored after it, want %d", c.query, c.keep, before, n, c.left)
		}
		for _, doc := range docs[:c.left] {
			if got, err := d.Get(doc.ID); err != nil || got.Text != doc.Text {
				t.Errorf("%s: %s after it: %v", c.query, doc.ID, err)
			}
		}
	}
}

// Ensure that an error says whether the same request may succeed later
// (retry): a write refused by an owner that opened the index to read only
// may, once it closes it; one refused by a server started to serve reads
// only may not, nor may a bad request; a waiting server's locked may
// (AC13: the two read_only told apart by their English alone).
func TestErrorRetry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(db.Doc{ID: "a", Text: "a document of the retry test"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	ro, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	put := `{"id":"b","text":"a write the owner refuses"}`
	for _, c := range []struct {
		what  string
		h     http.Handler
		body  string
		code  string
		retry bool
	}{
		{"an owner that reads only", Handler(ro, nil), put, "read_only", true},
		{"a server that serves reads only", Handler(ro, &Options{ServesReadOnly: true}), put, "read_only", false},
		{"a bad request", Handler(ro, nil), `{"id":"b","text":"x","bogus":1}`, "bad_request", false},
		{"a server waiting for its index", WaitingHandler(nil, func() string { return "lshdb insert (pid 1)" }), put, "locked", true},
	} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs", strings.NewReader(c.body)))
		var e ErrorJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != c.code || e.Error.Retry != c.retry {
			t.Errorf("%s: %d %s (%v); want code %s, retry %v", c.what, rec.Code, rec.Body, err, c.code, c.retry)
		}
	}
}

// Ensure that the API writes a similarity with a decimal point: 1.0 for
// identical texts, whose Jaccard is 1 by hand, in the lines of pairs,
// pair groups, clusters, a query, explain and a put-if-new (a reader
// inferring a column's type from its first rows took 1 for an integer,
// and DuckDB then read 0.85 as 1: S10-5).
func TestSimilarityOnTheWire(t *testing.T) {
	d, err := db.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	text := "the quick brown fox jumps over the lazy dog near the river bank every single morning"
	if _, err := d.PutBatch([]db.Doc{{ID: "a", Text: text}, {ID: "b", Text: text}}, nil); err != nil {
		t.Fatal(err)
	}
	h := Handler(d, nil)
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/pairs", "", `"jaccard":1.0`},
		{"GET", "/v1/pairs/groups", "", `"jaccard":1.0`},
		{"GET", "/v1/clusters", "", `"min_jaccard":1.0`},
		{"GET", "/v1/clusters", "", `"duplicate_of":"a","jaccard":1.0}`},
		{"GET", "/v1/query?id=a", "", `"jaccard":1.0,"estimate":1.0`},
		{"GET", "/v1/explain?a=a&b=b", "", `"jaccard":1.0,"estimate":1.0`},
		{"POST", "/v1/docs/put-if-new", fmt.Sprintf("{\"id\":\"c\",\"text\":%q}\n", text), `"jaccard":1.0,"estimate":1.0`},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s %s: %d %s, want %s", c.method, c.path, rec.Code, rec.Body, c.want)
		}
	}
}

// Ensure that /healthz says when the index is served read-only, with the
// refusal a write gets (an attached build waits on it before its load,
// which cannot be sent twice), and says nothing when writes are taken.
// The oracle: a write's own refusal, on the same handler.
func TestHealthSaysReadOnly(t *testing.T) {
	dir := t.TempDir()
	w, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	health := func(h http.Handler) HealthJSON {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		var hj HealthJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &hj); err != nil || rec.Code != 200 || hj.Status != "ok" {
			t.Fatalf("healthz: %d %s", rec.Code, rec.Body)
		}
		return hj
	}
	if hj := health(Handler(w, nil)); hj.ReadOnly != "" {
		t.Errorf("a writable index's health says read_only %q", hj.ReadOnly)
	}
	w.Close()
	ro, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, serves := range []bool{false, true} {
		h := Handler(ro, &Options{ServesReadOnly: serves})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/docs", strings.NewReader(`{"id":"a","text":"some text here"}`)))
		var refusal struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &refusal); err != nil || refusal.Error.Code != "read_only" {
			t.Fatalf("a put to a read-only index: %d %s", rec.Code, rec.Body)
		}
		hj := health(h)
		want := OwnerReadsOnly
		if serves {
			want = ServerReadsOnly
		}
		if hj.ReadOnly != refusal.Error.Message || !strings.HasSuffix(hj.ReadOnly, want) {
			t.Errorf("serves read-only %v: health's read_only %q, want the put's refusal %q, ending %q", serves, hj.ReadOnly, refusal.Error.Message, want)
		}
	}
}

// Ensure that both ttl_ms and expire_at are refused with 400 before any
// answer, on every endpoint that takes them, and nothing is stored:
// put-if-new answered 200 and a lone error line (an API client's review,
// A-1). The oracle: the count of documents before and after.
func TestBothExpiriesRefusedFirst(t *testing.T) {
	d := openFixture(t, 0, nil)
	addr := startTCP(t, Handler(d, nil), 0)
	before, err := d.Count()
	if err != nil {
		t.Fatal(err)
	}
	q := "?ttl_ms=5&expire_at=2030-01-01T00:00:00Z"
	for path, body := range map[string]string{
		"/v1/docs/put-if-new": `{"id":"b1","text":"a text with both expiries given to it"}` + "\n",
		"/v1/load":            `{"id":"b2","text":"another text with both expiries given"}` + "\n",
	} {
		resp, err := http.Post("http://"+addr+path+q, "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "ttl_ms and expire_at are both given") {
			t.Errorf("POST %s%s: %d %s", path, q, resp.StatusCode, b)
		}
	}
	if n, err := d.Count(); err != nil || n != before {
		t.Errorf("%d documents after, %v; want %d", n, err, before)
	}
}

// Ensure that the messages an API client's review found unclear (A-6)
// say what happened: a body that starts with a byte order mark, a query
// past the server's timeout (lshdb's words first), a put-if-new line over
// the bound (which document). Nothing refused is stored (the oracle: the
// count before and after).
func TestMessagesSayWhatHappened(t *testing.T) {
	d := openFixture(t, 0, nil)
	h := Handler(d, &Options{MaxBodyBytes: 1000, QueryTimeout: time.Nanosecond})
	addr := startTCP(t, h, 0)
	before, _ := d.Count()
	post := func(path, body string) (int, string) {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := post("/v1/docs", "\xef\xbb\xbf"+`{"id":"bom","text":"a text after a byte order mark"}`); code != 400 || !strings.Contains(b, "the body starts with a byte order mark (EF BB BF)") {
		t.Errorf("a body with a byte order mark: %d %s", code, b)
	}
	if code, b := post("/v1/query", `{"text":"some words to look for in the index"}`); code != 504 || !strings.Contains(b, `"message":"lshdb: the query ran past the server's query timeout`) {
		t.Errorf("a query past the timeout: %d %s", code, b)
	}
	long := `{"id":"pm2","text":"` + strings.Repeat("long words ", 200) + `"}`
	_, b := post("/v1/docs/put-if-new", `{"id":"pm1","text":"a short document of a few words"}`+"\n"+long+"\n")
	if !strings.Contains(b, "(document 2 of the body, after 1 answered; nothing after it was read)") || !strings.Contains(b, "body_too_large") {
		t.Errorf("put-if-new with a line over the bound: %s", b)
	}
	if n, _ := d.Count(); n != before+1 {
		t.Errorf("%d documents, want %d (pm1 only)", n, before+1)
	}
	// A DELETE's ids go in its query: a body is refused, not ignored.
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+"/v1/docs?id=nope&ignore_missing=true", strings.NewReader(`{"ids":["pm1"]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ok, _ := d.Has("pm1"); resp.StatusCode != 400 || !strings.Contains(string(b2), "DELETE /v1/docs takes its ids in the query") || !ok {
		t.Errorf("DELETE with a body: %d %s (pm1 kept: %v)", resp.StatusCode, b2, ok)
	}
}

// Ensure that MaxMatches bounds the matches a query or a query/many
// answers (the sum over its queries, after its limit): past it 400
// invalid_options that says so, within it the answer (the oracle: 30
// copies of one text, each query matching all 30). 400 ids without a
// limit took a server to 3 GB on an index of near-identical documents
// (a security review, SEC-1).
func TestMaxMatches(t *testing.T) {
	const text = "the same short paragraph stored thirty times under thirty ids"
	d := thirtyCopies(t, text)
	tx := text
	three := QueryManyRequest{Queries: []QueryRequest{{Text: &tx}, {Text: &tx}, {Text: &tx}}}
	for _, c := range []struct {
		max    int
		path   string
		body   any
		status int
	}{
		{50, "/v1/query", QueryRequest{Text: &tx}, 200},
		{29, "/v1/query", QueryRequest{Text: &tx}, 400},
		{89, "/v1/query/many", three, 400},
		{90, "/v1/query/many", three, 200},
		{29, "/v1/query/many", QueryManyRequest{Queries: three.Queries, Limit: 9}, 200},
		{-1, "/v1/query/many", three, 200},
	} {
		b, _ := json.Marshal(c.body)
		rec := httptest.NewRecorder()
		Handler(d, &Options{MaxMatches: c.max}).ServeHTTP(rec, httptest.NewRequest("POST", c.path, bytes.NewReader(b)))
		if rec.Code != c.status {
			t.Errorf("%s at MaxMatches %d: %d %s, want %d", c.path, c.max, rec.Code, rec.Body, c.status)
			continue
		}
		if c.status == 400 {
			if body := rec.Body.String(); !strings.Contains(body, "invalid_options") || !strings.Contains(body, fmt.Sprintf("more than %d matches", c.max)) {
				t.Errorf("%s at MaxMatches %d: %s", c.path, c.max, body)
			}
		}
	}
}

// thirtyCopies returns an index holding text under the 30 ids d0 to d29:
// every query of text matches all 30.
func thirtyCopies(t *testing.T, text string) *db.DB {
	t.Helper()
	d := openFixture(t, 0, nil)
	var docs []db.Doc
	for i := range 30 {
		docs = append(docs, db.Doc{ID: fmt.Sprint("d", i), Text: text})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// Ensure that MaxTextBytes bounds the texts a query or a query/many with
// with_text answers (the sum over its queries): past it 400
// invalid_options that says so, within it the answer; its default bounds
// an answer too. The oracle: 30 copies of one text of known length.
// One query/many of 20 ids answered 697 MB on an index of near-copies (a
// security review, SEC2-4).
func TestMaxTextBytes(t *testing.T) {
	text := strings.Repeat("a long paragraph stored thirty times under thirty ids ", 20)
	d := thirtyCopies(t, text)
	one := int64(30 * len(text))
	tx := text
	three := QueryManyRequest{Queries: []QueryRequest{{Text: &tx}, {Text: &tx}, {Text: &tx}}, WithText: true}
	for _, c := range []struct {
		max    int64
		path   string
		body   any
		status int
	}{
		{one, "/v1/query", QueryRequest{Text: &tx, WithText: true}, 200},
		{one - 1, "/v1/query", QueryRequest{Text: &tx, WithText: true}, 400},
		{one - 1, "/v1/query", QueryRequest{Text: &tx}, 200}, // NB: no text, no bound
		{3*one - 1, "/v1/query/many", three, 400},
		{3 * one, "/v1/query/many", three, 200},
		{-1, "/v1/query/many", three, 200},
		{0, "/v1/query/many", three, 200}, // the default, 64 MiB
	} {
		b, _ := json.Marshal(c.body)
		rec := httptest.NewRecorder()
		Handler(d, &Options{MaxTextBytes: c.max}).ServeHTTP(rec, httptest.NewRequest("POST", c.path, bytes.NewReader(b)))
		if rec.Code != c.status {
			t.Errorf("%s at MaxTextBytes %d: %d %.300s, want %d", c.path, c.max, rec.Code, rec.Body, c.status)
			continue
		}
		if body := rec.Body.String(); c.status == 400 && (!strings.Contains(body, "invalid_options") || !strings.Contains(body, fmt.Sprintf("more than %d bytes", c.max))) {
			t.Errorf("%s at MaxTextBytes %d: %s", c.path, c.max, body)
		}
		if withText := strings.Contains(string(b), `"with_text":true`); c.status == 200 && withText && !strings.Contains(rec.Body.String(), `"text":`) {
			t.Errorf("%s at MaxTextBytes %d: no text in the answer", c.path, c.max)
		}
	}
}

// Ensure that the runs over the whole index (pairs, pairs/groups,
// clusters, stats, buckets, check) wait for room among MaxRuns, giving up when their client goes
// away, and run once a run ends (six pairs runs of 1 GiB each took a
// server to 3.3 GB: a security review, SEC-3); and that a memory budget
// under MinPairsMemory is raised to it (a budget of a byte spilled 33,707
// files: SEC-4), the pairs the same.
func TestMaxRuns(t *testing.T) {
	d := openFixture(t, 200, nil)
	h := Handler(d, &Options{MaxRuns: 1}).(*handler)
	if err := h.runs.Acquire(context.Background(), 1); err != nil { // a run under way
		t.Fatal(err)
	}
	// NB: stats, buckets and check read every posting list too, and
	// took their memory each, as many at once as were asked (a security
	// review, SEC2-1).
	for _, path := range []string{"/v1/pairs?threshold=0.5", "/v1/pairs/groups", "/v1/clusters", "/v1/stats", "/v1/buckets", "/v1/check"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil).WithContext(ctx))
		cancel()
		if rec.Code == http.StatusOK || !strings.Contains(rec.Body.String(), "waiting for other runs over the whole index") {
			t.Errorf("%s beside a run under way, MaxRuns 1: %d %s", path, rec.Code, rec.Body)
		}
	}
	h.runs.Release(1)
	for _, path := range []string{"/v1/stats", "/v1/buckets", "/v1/check"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s once the run ended: %d %.200s", path, rec.Code, rec.Body)
		}
	}
	// top is bounded (MaxTop) for the read token: one of a billion held
	// every posting list (SEC2-1); the bound itself is served. The
	// server's own token is not bounded (the owner's command, attached,
	// was refused: RT11-2), nor is a server without a token.
	ht := Handler(d, &Options{MaxRuns: 1, Token: "s3cret", ReadToken: "r3ad"})
	for _, path := range []string{"/v1/stats", "/v1/buckets"} {
		for _, c := range []struct {
			h           http.Handler
			token       string
			top, status int
		}{
			{ht, "r3ad", MaxTop, 200}, {ht, "r3ad", MaxTop + 1, 400}, {ht, "r3ad", 1_000_000_000, 400},
			{ht, "s3cret", MaxTop + 1, 200}, {h, "", 2 * MaxTop, 200},
		} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", fmt.Sprintf("%s?top=%d", path, c.top), nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			c.h.ServeHTTP(rec, req)
			if rec.Code != c.status || c.status != http.StatusOK && !strings.Contains(rec.Body.String(), `"invalid_options"`) {
				t.Errorf("%s?top=%d with token %q: %d %.200s, want %d", path, c.top, c.token, rec.Code, rec.Body, c.status)
			}
		}
	}
	var answers []string
	for _, path := range []string{"/v1/pairs?threshold=0.5", "/v1/pairs?threshold=0.5&memory=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), `"a"`) < 1 {
			t.Fatalf("%s once the run ended: %d %.200s", path, rec.Code, rec.Body)
		}
		answers = append(answers, rec.Body.String()[:strings.LastIndex(rec.Body.String(), `{"end"`)])
	}
	if answers[0] != answers[1] {
		t.Errorf("pairs at memory=1 differ from the default's")
	}
	if po, err := pairsOptions(url.Values{"memory": {"1"}}); err != nil || po.Memory != MinPairsMemory {
		t.Errorf("memory=1: %+v %v, want the budget raised to %d", po, err, MinPairsMemory)
	}
}

// Ensure that a backup under the root is made where its path was checked:
// with a directory others may write swapped for a link out of the root
// and back, again and again, while backups under it are asked for, no
// backup is made outside the root (a check of one resolution of the path
// and a backup at another made one there within a second: a
// read-through's RT2-1). Each request is refused, as the way is one
// others may change; the oracle is the directory outside, empty.
func TestBackupRootSwapRace(t *testing.T) {
	d := openFixture(t, 10, nil)
	tmp, root, outside := backupDirs(t)
	shared := filepath.Join(root, "shared")
	sub := filepath.Join(shared, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tmp, "probe")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	h := Handler(d, &Options{BackupRoot: root})
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(sub)
			os.Symlink(outside, sub)
			os.Remove(sub)
			os.Mkdir(sub, 0o755)
		}
	}()
	codes := map[int]int{}
	for i, deadline := 0, time.Now().Add(3*time.Second); time.Now().Before(deadline); i++ {
		body, _ := json.Marshal(BackupRequest{Dir: filepath.Join(sub, fmt.Sprint("b", i))})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/backup", bytes.NewReader(body)))
		codes[rec.Code]++
		if left, _ := os.ReadDir(outside); len(left) > 0 {
			close(stop)
			<-swapped
			t.Fatalf("a backup under %s was made outside the root, in %s: %s (answers %v)", sub, outside, left[0].Name(), codes)
		}
	}
	close(stop)
	<-swapped
	if codes[http.StatusOK] > 0 {
		t.Errorf("answers %v: a backup was made through a directory others may write", codes)
	}
}

// backupDirs makes a temporary directory holding a backup root
// ("backups") and a directory beside it ("elsewhere"), and returns the
// three.
func backupDirs(t *testing.T) (tmp, root, outside string) {
	tmp = t.TempDir()
	root, outside = filepath.Join(tmp, "backups"), filepath.Join(tmp, "elsewhere")
	for _, dir := range []string{root, outside} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, root, outside
}

// Ensure that the log lines of refused requests (no token, another
// site's) are bounded: refusalLines a window, and a line at its end
// saying how many went unlogged, while the hooks see every one and every
// other request keeps its line. One client without the token made the
// server write 7 MB of log in 5 s, a line a request (a security review,
// SEC2-8). The oracle: the requests sent, counted.
func TestRefusalsLogBounded(t *testing.T) {
	old := refusalWindow
	refusalWindow = 300 * time.Millisecond
	defer func() { refusalWindow = old }()
	d := openFixture(t, 3, nil)
	var logBuf syncBuffer
	var refusedSeen atomic.Int64
	h := Handler(d, &Options{Token: "s3cret", Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), Hooks: Hooks{Done: func(_ context.Context, _ string, status int, _ error, _ time.Duration) {
		if status == http.StatusUnauthorized {
			refusedSeen.Add(1)
		}
	}}})
	send := func(token, peer string, n int) {
		for range n {
			req := httptest.NewRequest("GET", "/v1/count", nil)
			req.RemoteAddr = peer
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	lines := func(s string) int { return strings.Count(logBuf.String(), s) }
	// One peer's 60 refusals, from connections of their own: its first
	// line and refusalLines more.
	for i := range 50 {
		send("", fmt.Sprintf("192.0.2.1:%d", 40000+i), 1)
	}
	send("wrong", "192.0.2.1:1234", 10)
	send("s3cret", "192.0.2.1:1234", 20)
	if n := lines("status=401"); n != refusalLines+1 {
		t.Errorf("60 refusals of one peer in one window: %d lines, want %d", n, refusalLines+1)
	}
	if n := lines("status=200"); n != 20 {
		t.Errorf("20 requests with the token: %d lines", n)
	}
	if n := refusedSeen.Load(); n != 60 {
		t.Errorf("the hooks saw %d refusals, want 60", n)
	}
	// Another peer's first refusal still has its line, and its second
	// not: the first peer's used the window's lines up (RT11-4: with 10
	// lines for all, a service with a stale token went unseen).
	send("stale", "[2001:db8::7]:5555", 2)
	if n := lines("status=401"); n != refusalLines+2 || lines(`remote=[2001:db8::7]:5555 `) != 1 || lines("refusals_not_logged=49") != 1 {
		t.Errorf("another peer's two refusals after the first's 60: %d lines in all, log:\n%s", n, logBuf.String())
	}
	// The line says the 49 not logged before it, and at the window's
	// end a line says the one after it, with no refusal after it to say
	// so (a read-through, RT11-4).
	time.Sleep(refusalWindow + 100*time.Millisecond)
	if lines("refusals_not_logged=1\n") != 1 {
		t.Errorf("no line of the refusal not logged after the window: log:\n%s", logBuf.String())
	}
	send("", "192.0.2.1:1234", 1)
	if n := lines("status=401"); n != refusalLines+3 || lines("refusals_not_logged") != 2 {
		t.Errorf("the refusal after the window: %d lines, log:\n%s", n, logBuf.String())
	}
	// Past refusalPeers peers in a window, the others' refusals share
	// the window's lines: 100 peers of one refusal each are 64+10 lines.
	time.Sleep(refusalWindow + 100*time.Millisecond)
	before := lines("status=401")
	for i := range 100 {
		send("", fmt.Sprintf("198.51.100.%d:80", i), 1)
	}
	if n := lines("status=401") - before; n != refusalPeers+refusalLines {
		t.Errorf("100 peers' refusals in one window: %d lines, want %d", n, refusalPeers+refusalLines)
	}
}

// Ensure that the decoding of request bodies is admitted by their bytes
// within MaxInFlightBytes: a request whose decoding would pass the room
// left waits (giving up when its client goes away), and is answered once
// the room is back. Bodies were decoded (up to 14 times their bytes)
// before any admission: 6 queries of 62 MB at once took a server to 2.5
// GB (a security review, SEC2-5).
func TestDecodingAdmitted(t *testing.T) {
	d := openFixture(t, 20, nil)
	h := Handler(d, &Options{MaxInFlightBytes: 1000}).(*handler)
	body := `{"text":"` + strings.Repeat("a word of text ", 30) + `"}`
	if err := h.decoding.Acquire(context.Background(), 1000-int64(len(body))+1); err != nil { // others' decoding under way
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(body)).WithContext(ctx))
	cancel()
	if rec.Code == http.StatusOK || !strings.Contains(rec.Body.String(), "waiting for other requests' bodies to be decoded") {
		t.Errorf("a query beside others' decoding: %d %s", rec.Code, rec.Body)
	}
	// A body that fits the room left is decoded at once.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(`{"text":"a word"}`)))
	if rec.Code != http.StatusOK {
		t.Errorf("a small query beside others' decoding: %d %s", rec.Code, rec.Body)
	}
	h.decoding.Release(1000 - int64(len(body)) + 1)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Errorf("the query once the room is back: %d %s", rec.Code, rec.Body)
	}
	// The room is held until the request ends, not given back once the
	// body is decoded: a decoded body waiting for its admission among
	// the work in flight held its memory beside the room given back (12
	// bodies of 62 MB took 2 GB: a read-through, RT11-1).
	many := `{"queries":[` + strings.TrimSuffix(strings.Repeat(`{"text":"`+strings.Repeat("word ", 20)+`"},`, 3), ",") + `]}`
	if err := h.inFlightBytes.Acquire(context.Background(), 1000); err != nil { // admitted work under way
		t.Fatal(err)
	}
	answered := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query/many", strings.NewReader(many)))
		answered <- rec.Code
	}()
	deadline := time.Now().Add(5 * time.Second)
	for h.decoding.TryAcquire(1000 - int64(len(many)) + 1) {
		h.decoding.Release(1000 - int64(len(many)) + 1)
		if time.Now().After(deadline) {
			t.Fatal("the query/many waiting for its admission holds no room for its decoded body")
		}
		time.Sleep(time.Millisecond)
	}
	// NB: past its decoding by now, waiting for its admission.
	time.Sleep(100 * time.Millisecond)
	if h.decoding.TryAcquire(1000 - int64(len(many)) + 1) {
		t.Error("the query/many waiting for its admission gave back the room its decoded body takes")
		h.decoding.Release(1000 - int64(len(many)) + 1)
	}
	h.inFlightBytes.Release(1000)
	if code := <-answered; code != http.StatusOK {
		t.Errorf("the query/many once admitted: %d", code)
	}
	if !h.decoding.TryAcquire(1000) {
		t.Errorf("the room is not all given back once the requests ended")
	}
}
