package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
)

// Ensure that a scan is read ahead of a client that reads slowly, so
// that its snapshot is released before the client has read it (a client
// reading 16 KB/s held a snapshot for an hour, and four such scans
// beside a writer took an index from 63 MB to 456 MB on disk: a review
// of serve, SV3-1); that what the client reads is still the snapshot's
// (writes made meanwhile are not in it), every document once, in full;
// and that the spool leaves no file.
func TestScanReadAhead(t *testing.T) {
	d := openFixture(t, 2000, nil)
	want := map[string]string{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		want[doc.ID] = doc.Text
	}
	made := make(chan struct{}, 1)
	spoolMade = func() { made <- struct{}{} }
	defer func() { spoolMade = nil }()
	srv := httptest.NewServer(Handler(d, nil))
	defer srv.Close()

	// NB: with the sets, the answer (about 16 MB) is more than the
	// sockets' buffers hold, so the stream waits for its client.
	res, err := http.Get(srv.URL + "/v1/scan?sets=true")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReaderSize(res.Body, 4<<10)
	first, err := br.ReadBytes('\n') // the client reads a line, then stops
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-made:
	case <-time.After(30 * time.Second):
		t.Fatal("the scan was not read ahead of its client: its snapshot is held while the client does not read")
	}
	// The writes after the snapshot are not in the scan.
	if err := d.Put(db.Doc{ID: "written-after", Text: "a document written after the scan began"}, nil); err != nil {
		t.Fatal(err)
	}
	var gone string
	for id := range want {
		if !strings.HasSuffix(id, "~") {
			gone = id
			break
		}
	}
	if err := d.Delete(gone, nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	lines, ended := 0, false
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(first)+string(rest), "\n"), "\n") {
		var v struct {
			ID   string `json:"id"`
			Text string `json:"text"`
			End  *struct {
				Lines int `json:"lines"`
			} `json:"end"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d: %v: %.200s", lines+1, err, l)
		}
		if v.End != nil {
			ended = v.End.Lines == len(want)
			continue
		}
		if _, dup := got[v.ID]; dup {
			t.Errorf("%s sent twice", v.ID)
		}
		got[v.ID] = v.Text
		lines++
	}
	if !ended || !maps.Equal(got, want) {
		t.Errorf("the scan sent %d documents (end line right: %v), the snapshot held %d", len(got), ended, len(want))
	}
	// The spool's file is gone (removed as it was made, where the system
	// allows it; else once the stream ended).
	entries, err := os.ReadDir(d.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".lshdb-stream-") {
			t.Errorf("the spool left %s", e.Name())
		}
	}
}

// Ensure that at most MaxScans scans are sent at once: one more waits,
// and gives up with its client, and is sent once the first ends.
func TestMaxScans(t *testing.T) {
	d := openFixture(t, 2000, nil)
	h := Handler(d, &Options{MaxScans: 1}).(*handler)
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/v1/scan?sets=true") // NB: more than the sockets' buffers hold
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(res.Body).ReadBytes('\n'); err != nil { // the first scan is under way
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/scan", nil).WithContext(ctx))
	cancel()
	if rec.Code == http.StatusOK || !strings.Contains(rec.Body.String(), "waiting for other scans to end (serve --max-scans)") {
		t.Errorf("a second scan beside the first: %d %.300s", rec.Code, rec.Body)
	}
	res.Body.Close()
	// Once the first scan's stream ends, the next is sent.
	deadline := time.Now().Add(20 * time.Second)
	for {
		rec = httptest.NewRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/scan", nil).WithContext(ctx))
		cancel()
		if rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), `{"end":{"lines":`) || time.Now().After(deadline) {
			break
		}
	}
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `{"end":{"lines":`) {
		t.Errorf("a scan after the first ended: %d %.300s", rec.Code, rec.Body)
	}
}
