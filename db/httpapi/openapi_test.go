package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// spec is openapi.yaml read as JSON values, with a JSON Schema compiler
// (draft 2020-12, which OpenAPI 3.1's schemas are) that resolves its
// $refs within it.
type spec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by JSON pointer
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	var raw any
	if err := yaml.Unmarshal(OpenAPI, &raw); err != nil {
		t.Fatal(err)
	}
	// NB: through JSON, so that every value is of the types a JSON
	// decoder gives (yaml gives ints, and map keys that may not be
	// strings).
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("openapi.json", v); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return &spec{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// schema compiles the schema at the JSON pointer ptr of the document.
func (s *spec) schema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	if sch := s.schemas[ptr]; sch != nil {
		return sch
	}
	sch, err := s.compiler.Compile("openapi.json#" + ptr)
	if err != nil {
		t.Fatalf("compiling %s: %v", ptr, err)
	}
	s.schemas[ptr] = sch
	return sch
}

// pointer escapes a JSON pointer's token.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// operation finds the path template of path (a {param} matches one
// segment) that the spec has for method.
func (s *spec) operation(path, method string) (template string, op map[string]any) {
	paths, _ := s.doc["paths"].(map[string]any)
	segs := strings.Split(path, "/")
	for tmpl, item := range paths {
		tsegs := strings.Split(tmpl, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		match := true
		for i := range tsegs {
			if tsegs[i] != segs[i] && !strings.HasPrefix(tsegs[i], "{") {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if o, ok := item.(map[string]any)[strings.ToLower(method)].(map[string]any); ok {
			return tmpl, o
		}
	}
	return "", nil
}

// checkAnswer checks an answer of the API against the spec: its status is
// one the operation declares (or its default), its content type the
// response's, and its body (each line of JSON Lines) valid under the
// response's schema. It returns what is wrong.
func (s *spec) checkAnswer(t *testing.T, method, path string, status int, ctype string, body []byte) []string {
	t.Helper()
	tmpl, op := s.operation(path, method)
	if op == nil {
		// NB: a route or method the API does not serve: an Error.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return []string{"no operation in the spec"}
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err == nil {
			err = s.schema(t, "/components/schemas/Error").Validate(inst)
		}
		if err != nil {
			return []string{fmt.Sprintf("not an Error: %v: %.200s", err, body)}
		}
		return nil
	}
	responses := op["responses"].(map[string]any)
	key := strconv.Itoa(status)
	resp, ok := responses[key].(map[string]any)
	if !ok {
		if resp, ok = responses["default"].(map[string]any); !ok {
			return []string{fmt.Sprintf("status %d is not declared (nor a default)", status)}
		}
		key = "default"
	}
	ptr := pointer("paths", tmpl, strings.ToLower(method), "responses", key)
	if ref, ok := resp["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
		resp = s.doc["components"].(map[string]any)["responses"].(map[string]any)[strings.TrimPrefix(ptr, "/components/responses/")].(map[string]any)
	}
	content, _ := resp["content"].(map[string]any)
	mt, _, _ := strings.Cut(ctype, ";")
	mt = strings.TrimSpace(mt)
	if _, ok := content[mt]; !ok {
		return []string{fmt.Sprintf("status %d: content type %q is not declared (%v)", status, ctype, keys(content))}
	}
	if mt != "application/json" && mt != "application/x-ndjson" {
		return nil
	}
	sch := s.schema(t, ptr+pointer("content", mt, "schema"))
	values := [][]byte{body}
	if mt == "application/x-ndjson" {
		values = bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	}
	var problems []string
	for i, v := range values {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
		if err != nil {
			problems = append(problems, fmt.Sprintf("value %d is not JSON: %v: %.200s", i, err, v))
			continue
		}
		if err := sch.Validate(inst); err != nil {
			problems = append(problems, fmt.Sprintf("value %d: %.300s\n  %v", i, v, err))
		}
	}
	return problems
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// apiRequest is a request of TestOpenAPIAnswersValidate and the status it
// asks for (0: 200).
type apiRequest struct {
	method, path, body string
	status             int
}

// Ensure that the API answers as openapi.yaml says, for a request of
// every operation and for refused ones: each status is declared, each
// body (each line of a stream) is valid under its schema, checked by a
// JSON Schema validator (draft 2020-12, OpenAPI 3.1's). The spec's own
// request examples are valid under their schemas. A review of the API
// from a client's side found the batch put's example invalid (PutRequest
// required an id, AC1), every stream line valid under both alternatives
// of its oneOf (End, Cluster, PairGroup and Document required nothing,
// AC2), and undeclared answers of /v1/openapi.yaml and /metrics (AC4).
func TestOpenAPIAnswersValidate(t *testing.T) {
	s := loadSpec(t)
	// The examples of the request bodies.
	for tmpl, item := range s.doc["paths"].(map[string]any) {
		for method, o := range item.(map[string]any) {
			op, ok := o.(map[string]any)
			if !ok {
				continue
			}
			rb, ok := op["requestBody"].(map[string]any)
			if !ok {
				continue
			}
			for mt, c := range rb["content"].(map[string]any) {
				examples, _ := c.(map[string]any)["examples"].(map[string]any)
				for name, ex := range examples {
					sch := s.schema(t, pointer("paths", tmpl, method, "requestBody", "content", mt, "schema"))
					v, _ := json.Marshal(ex.(map[string]any)["value"])
					inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(v))
					if err := sch.Validate(inst); err != nil {
						t.Errorf("%s %s: the example %s is not valid under its schema: %v", method, tmpl, name, err)
					}
				}
			}
		}
	}

	backups := t.TempDir()
	var h http.Handler
	for _, storage := range []string{db.StorageText, db.StorageNone} {
		d := openFixture(t, 60, &db.Options{Storage: storage})
		h = Handler(d, &Options{BackupRoot: backups})
		first := firstDoc(t, d)
		id := url.QueryEscape(first.ID)
		// NB: a storage-none index keeps no text: the fixture's.
		sample := sampleDocs(t, 1)[0].Text
		text := url.QueryEscape(sample)
		copyLine := fmt.Sprintf("{\"id\":\"copy-%s\",\"text\":%q}\n", storage, sample)
		put := fmt.Sprintf(`{"docs":[{"id":"p1-%s","text":"a put of the conformance test"},{"id":"p2-%s","text":"another put of it","meta":"m"}]}`, storage, storage)
		if storage == db.StorageNone {
			put = fmt.Sprintf(`{"id":"p1-%s","text":"a put of the conformance test"}`, storage)
		}
		requests := []apiRequest{
			{"GET", "/healthz", "", 0},
			{"GET", "/v1/openapi.yaml", "", 0},
			{"GET", "/v1/params", "", 0},
			{"GET", "/v1/count", "", 0},
			{"GET", "/v1/docs?id=" + id, "", 0},
			{"GET", "/v1/docs?id=" + id + "&sets=false", "", 0},
			{"GET", "/v1/docs?id=nosuchdoc", "", 404},
			{"POST", "/v1/docs", put, 0},
			{"POST", "/v1/docs", `{"docs":[{"id":"","text":"x"}]}`, 400},
			{"POST", "/v1/docs", `{"id":"x","text":"x","bogus":1}`, 400},
			{"GET", "/v1/docs/has?id=" + id, "", 0},
			{"POST", "/v1/docs/has", fmt.Sprintf(`{"ids":[%q,"nosuchdoc"]}`, first.ID), 0},
			{"POST", "/v1/docs/put-if-new", copyLine + `{"id":"","text":"no id"}` + "\n" + fmt.Sprintf(`{"id":"new-%s","text":"a wholly new text of the conformance test"}`, storage) + "\n", 0},
			{"POST", "/v1/docs/put-if-new", "not json\n", 400},
			{"GET", "/v1/query?id=" + id, "", 0},
			{"GET", "/v1/query?text=" + text + "&threshold=0.5&with_text=true", "", 0},
			{"GET", "/v1/query?id=" + id + "&estimate_only=true", "", 0},
			{"GET", "/v1/query?threshold=7&id=" + id, "", 400},
			{"POST", "/v1/query", fmt.Sprintf(`{"text":%q}`, sample), 0},
			{"POST", "/v1/query/many", fmt.Sprintf(`{"queries":[{"id":%q},{"text":"some text to look for"}]}`, first.ID), 0},
			{"GET", "/v1/pairs?threshold=0.5", "", 0},
			{"GET", "/v1/pairs?limit=3", "", 0},
			{"GET", "/v1/pairs/groups?threshold=0.5", "", 0},
			{"GET", "/v1/scan", "", 0},
			{"GET", "/v1/scan?sets=true", "", 0},
			{"GET", "/v1/clusters?threshold=0.5", "", 0},
			{"GET", "/v1/clusters?threshold=0.5&mode=centers&keep=longest", "", 0},
			{"GET", "/v1/info", "", 0},
			{"GET", "/v1/stats", "", 0},
			{"GET", "/v1/buckets", "", 0},
			{"GET", "/v1/buckets/0/00000000", "", 0},
			{"GET", "/v1/buckets/99999/00000000", "", 400},
			{"GET", "/v1/tune", "", 0},
			{"GET", "/v1/check", "", 0},
			{"POST", "/v1/purge", "", 0},
			{"POST", "/v1/backup", fmt.Sprintf(`{"dir":%q}`, filepath.Join(backups, "bk-"+storage)), 0},
			{"POST", "/v1/backup", fmt.Sprintf(`{"dir":%q}`, filepath.Join(backups, "bk-"+storage)), 400},
			{"POST", "/v1/load", fmt.Sprintf(`{"id":"l1-%s","text":"a load of the conformance test"}`, storage) + "\n", 0},
			{"DELETE", "/v1/docs?id=p1-" + storage, "", 0},
			{"POST", "/v1/docs/delete", `{"ids":["nosuchdoc"]}`, 404},
			{"POST", "/v1/docs/delete", `{"ids":["nosuchdoc"],"ignore_missing":true}`, 0},
			{"POST", "/v1/compact", "", 0},
			{"POST", "/v1/repair", "", 0},
			{"GET", "/v1/nosuchroute", "", 404},
			{"POST", "/healthz", "", 405},
		}
		// The explain of two documents of a pair, when there is one.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/pairs?threshold=0.5&limit=1", nil))
		var p PairJSON
		if err := json.Unmarshal(bytes.SplitN(rec.Body.Bytes(), []byte("\n"), 2)[0], &p); err == nil && p.A != "" {
			requests = append(requests, apiRequest{"GET", "/v1/explain?a=" + url.QueryEscape(p.A) + "&b=" + url.QueryEscape(p.B), "", 0})
		}
		// The clusters of a pairs stream, as GET /v1/pairs sends it.
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/pairs?threshold=0.5", nil))
		requests = append(requests, apiRequest{"POST", "/v1/clusters?threshold=0.5", rec.Body.String(), 0})
		for _, r := range requests {
			req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
			if r.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			u, _ := url.Parse(r.path)
			for _, problem := range s.checkAnswer(t, r.method, u.Path, res.StatusCode, res.Header.Get("Content-Type"), body) {
				t.Errorf("%s index: %s %s: %d: %s", storage, r.method, r.path, res.StatusCode, problem)
			}
			// NB: the status asked for: a request that failed would
			// validate as an Error (a read-through, R3).
			if want := cmp.Or(r.status, 200); res.StatusCode != want {
				t.Errorf("%s index: %s %s: %d, want %d: %.300s", storage, r.method, r.path, res.StatusCode, want, body)
			}
			if res.Header.Get("X-Request-Id") == "" {
				t.Errorf("%s index: %s %s: %d: no X-Request-Id", storage, r.method, r.path, res.StatusCode)
			}
		}
	}
	// A server that waits for its index: /healthz waiting, every other
	// request locked, both 503 with Retry-After (AC3: neither the status
	// nor the header was in the spec, and they had no X-Request-Id).
	wh := WaitingHandler(nil, func() string { return "lshdb insert (pid 4242)" })
	for _, path := range []string{"/healthz", "/v1/count", "/v1/query"} {
		rec := httptest.NewRecorder()
		wh.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		for _, problem := range s.checkAnswer(t, "GET", path, res.StatusCode, res.Header.Get("Content-Type"), body) {
			t.Errorf("waiting: GET %s: %d: %s", path, res.StatusCode, problem)
		}
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || res.Header.Get("X-Request-Id") == "" {
			t.Errorf("waiting: GET %s: %d, Retry-After %q, X-Request-Id %q; want 503 with both", path, res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("X-Request-Id"))
		}
	}
}
