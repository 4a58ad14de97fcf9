package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// FuzzHandler sends arbitrary methods, paths, query strings and bodies to
// the handler in process. Ensure that it never panics and never answers
// 5xx: on a healthy index, every failure is the request's (4xx).
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct {
		method      uint8
		path, query string
		body        string
	}{
		{0, "/v1/docs", "id=0ad", ""},
		{1, "/v1/docs", "", `{"id":"x","text":"hello there world"}`},
		{1, "/v1/docs", "", `{"docs":[{"id":"y","text":"hello there","meta_base64":"AAE="}],"skip_empty":true}`},
		{1, "/v1/docs/put-if-new", "no_sync=1", "{\"id\":\"z\",\"text\":\"abcdefgh\"}\n{\"id\":\"\"}\n"},
		{1, "/v1/query", "", `{"text":"real-time strategy game","threshold":0.3,"limit":2}`},
		{0, "/v1/query", "id=0ad&estimate_only", ""},
		{1, "/v1/query", "", `{"tokens":["a","b"],"threshold":0.3}`},
		{1, "/v1/query", "", `{"hashes":[1,"0x2","3"]}`},
		{1, "/v1/query", "", `{"signature":[1,2,3]}`},
		{1, "/v1/query/many", "", `{"queries":[{"id":"0ad"},{"text":"game"},{"tokens":["x"]}],"limit":1}`},
		{1, "/v1/docs", "", `{"id":"s","tokens":["a"]}`},
		{0, "/v1/scan", "sets=true", ""},
		{0, "/v1/pairs", "threshold=0.5&memory=100000", ""},
		{0, "/v1/clusters", "", ""},
		{0, "/v1/buckets", "band=1&top=3", ""},
		{0, "/v1/buckets/1/0a0b0c0d", "", ""},
		{0, "/v1/explain", "a=0ad&b=0ad~", ""},
		{0, "/v1/tune", "threshold=0.5", ""},
		{2, "/v1/docs", "id=x&id=y&ignore_missing", ""},
		{1, "/v1/docs/delete", "", `{"ids":["x"],"ignore_missing":true}`},
		{1, "/v1/backup", "", `{"dir":"/nonexistent/b"}`},
		{1, "/v1/purge", "", ""},
		{3, "/healthz", "", ""},
	} {
		f.Add(seed.method, seed.path, seed.query, []byte(seed.body))
	}
	// NB: one index for every input (opening one per input would make the
	// fuzzer crawl), closed when the fuzz test ends.
	root := f.TempDir()
	d, err := db.Open(filepath.Join(root, "idx"), &db.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	if _, err := d.PutBatch(sampleDocs(f, 20), nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method uint8, path, query string, body []byte) {
		// NB: backups go under the fuzzing directory, never elsewhere.
		h := Handler(d, &Options{BackupRoot: filepath.Join(root, "backups"), MaxBodyBytes: 1 << 16})
		methods := []string{"GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS"}
		req := httptest.NewRequest("GET", "/", nil)
		req.Method = methods[int(method)%len(methods)]
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req.URL = &url.URL{Path: path, RawQuery: query}
		req.RequestURI = req.URL.RequestURI()
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s %q: %d %s", req.Method, path, query, body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK && !strings.Contains(rec.Body.String(), `"error"`) {
			t.Fatalf("%s %s: %d without an error body: %s", req.Method, path, rec.Code, rec.Body)
		}
	})
}
