package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/db"
)

// Ensure that a waiting server answers every request 503 with
// Retry-After: /healthz "waiting", the rest the code "locked" (which
// ErrorOf turns back into db.ErrLocked), and that over TCP with a token
// the holder is named only to a request carrying it (the token or the
// read-only one).
func TestWaitingHandler(t *testing.T) {
	srv := httptest.NewServer(WaitingHandler(&Options{Token: "s3cret", ReadToken: "r3ad", Owner: "lshdb serve"}, func() string { return "lshdb insert (pid 4242)" }))
	defer srv.Close()
	get := func(path, token string) (int, *http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp, string(b)
	}
	for _, c := range []struct {
		path, token string
		told        bool
	}{
		{"/healthz", "", false},
		{"/healthz", "wrong", false},
		{"/healthz", "s3cret", true},
		{"/healthz", "r3ad", true},
		{"/v1/count", "", false},
		{"/v1/docs?id=x", "s3cret", true},
	} {
		status, resp, body := get(c.path, c.token)
		if status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" || !resp.Close {
			t.Errorf("%s (%q): %d %v (closed: %v)", c.path, c.token, status, resp.Header, resp.Close)
		}
		if told := strings.Contains(body, "lshdb insert (pid 4242)"); told != c.told {
			t.Errorf("%s (%q): holder told %v, want %v: %s", c.path, c.token, told, c.told, body)
		}
		if c.path == "/healthz" {
			var h struct{ Status string }
			if err := json.Unmarshal([]byte(body), &h); err != nil || h.Status != "waiting" {
				t.Errorf("%s (%q): %s", c.path, c.token, body)
			}
			continue
		}
		var e ErrorJSON
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != "locked" || !errors.Is(ErrorOf(e.Error.Code), db.ErrLocked) {
			t.Errorf("%s (%q): %s", c.path, c.token, body)
		}
	}
}
