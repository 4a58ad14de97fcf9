package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
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
	made := madeHook(t)
	srv := httptest.NewServer(Handler(d, nil))
	t.Cleanup(srv.Close)

	// NB: with the sets, the answer (about 16 MB) is more than the
	// sockets' buffers hold, so the stream waits for its client.
	_, br, first := stalled(t, srv.URL+"/v1/scan?sets=true")
	waitMade(t, made, "the scan was not read ahead of its client: its snapshot is held while the client does not read")
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
	// NB: no spool file, so that the first scan's reading waits for its
	// client, holding its place (with one, it is read, and its place
	// given back, at once: below).
	h := Handler(d, &Options{MaxScans: 1, MaxSpoolBytes: -1}).(*handler)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	res, _, _ := stalled(t, srv.URL+"/v1/scan?sets=true") // NB: more than the sockets' buffers hold; the first scan is under way
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

// Ensure that a scan's place among MaxScans is given back once its
// snapshot is read, not once a slow client has read the answer: a client
// that reads slowly held it for hours, and the other scans waited,
// unsaid (a read-through, RT12-4).
func TestScanPlaceGivenBackOnceRead(t *testing.T) {
	d := openFixture(t, 2000, nil)
	made := madeHook(t)
	h := Handler(d, &Options{MaxScans: 1}).(*handler)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	stalled(t, srv.URL+"/v1/scan?sets=true")
	waitMade(t, made, "the first scan was not read ahead of its client")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/scan", nil).WithContext(ctx))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `{"end":{"lines":`) {
		t.Errorf("a scan beside one read ahead of its slow client: %d %.300s", rec.Code, rec.Body)
	}
}

// Ensure that the spool's files stay within MaxSpoolBytes: past it, the
// scan reads its snapshot as its client takes the answer, and the answer
// is whole. Four clients that never read a scan with its sets had 2 GB
// of spool beside a 23 MB index (a read-through, RT12-1). The oracle is
// the budget itself (none left while the stalled scan holds it, all of
// it back once the scan ends) and the answer, each document once.
func TestSpoolWithinItsBudget(t *testing.T) {
	d := openFixture(t, 2000, nil)
	const budget = 1 << 20
	made := madeHook(t)
	h := Handler(d, &Options{MaxSpoolBytes: budget}).(*handler)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, br, _ := stalled(t, srv.URL+"/v1/scan?sets=true") // NB: about 16 MB
	deadline := time.Now().Add(20 * time.Second)
	// NB: full but for less than two chunks, which the next does not fit.
	for h.spoolBudget.TryAcquire(2 * spoolChunkBytes) {
		h.spoolBudget.Release(2 * spoolChunkBytes)
		if time.Now().After(deadline) {
			t.Fatal("the stalled scan's spool never took its budget")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-made:
		t.Fatal("a scan of 16 MB was read ahead whole within a spool of 1 MiB")
	case <-time.After(500 * time.Millisecond):
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		want++
	}
	if n := strings.Count(string(rest), "\n"); n != want || !strings.Contains(string(rest), fmt.Sprintf(`{"end":{"lines":%d}}`, want)) {
		t.Errorf("the answer read after the stall: %d more lines, want %d and the end line", n, want)
	}
	for deadline := time.Now().Add(20 * time.Second); !h.spoolBudget.TryAcquire(budget); {
		if time.Now().After(deadline) {
			t.Fatal("the spool's budget was not given back at the scan's end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// spoolOf runs spooledStream on seq into a recorder, as the handler does
// (cutErr, then the error or the stream's end); gate, if not nil, holds
// the recorder's first write until it is closed.
func spoolOf(t *testing.T, ctx context.Context, seq func(context.Context) iter.Seq2[string, error], gate chan struct{}) *httptest.ResponseRecorder {
	t.Helper()
	d := openFixture(t, 0, nil)
	h := Handler(d, nil).(*handler)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/scan", nil).WithContext(ctx)
	var rw http.ResponseWriter = rec
	if gate != nil {
		rw = &gatedWriter{ResponseRecorder: rec, gate: gate}
	}
	w := &resp{w: rw, rc: http.NewResponseController(rw), h: h, r: req}
	err := spooledStream(w, ctx, seq, func(s string) any { return map[string]string{"s": s} }, func(n int) any { return EndJSON{EndBody{Lines: n}} }, spoolOpts{dir: t.TempDir(), budget: h.spoolBudget}, nil)
	if err = cutErr(req, err); err != nil && !w.started {
		w.fail(err)
	}
	w.finish()
	return rec
}

type gatedWriter struct {
	*httptest.ResponseRecorder
	gate chan struct{}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.ResponseRecorder.Write(p)
}

// Ensure that a panic while the scan is read ends its stream with an
// error line, the server alive: the maker runs off the handler's
// goroutine, whose recover does not see its panics, and one ended the
// server (a read-through, RT12-2).
func TestSpoolMakerPanic(t *testing.T) {
	seq := func(ctx context.Context) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			yield("a", nil)
			panic("a bug in the scan")
		}
	}
	rec := spoolOf(t, context.Background(), seq, nil)
	if body := rec.Body.String(); !strings.HasPrefix(body, `{"s":"a"}`) || !strings.Contains(body, `"code":"internal"`) || !strings.Contains(body, "a bug in the scan") {
		t.Errorf("a scan that panicked after a line: %d %.400s", rec.Code, body)
	}
}

// Ensure that a stream the server cuts as it shuts down ends with its
// shutdown line, also once every line is made and the client has yet to
// read them (a read-through, RT12-6: no test saw the sender's check).
func TestSpoolCutAfterMade(t *testing.T) {
	ctx, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	made := madeHook(t)
	gate := make(chan struct{})
	seq := func(ctx context.Context) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for i := range 20000 {
				if !yield(fmt.Sprint(i, strings.Repeat("x", 50)), nil) {
					return
				}
			}
		}
	}
	go func() {
		<-made
		cut(ErrShutdown)
		close(gate)
	}()
	rec := spoolOf(t, ctx, seq, gate)
	body := rec.Body.String()
	if !strings.Contains(body, `"code":"shutdown"`) || strings.Contains(body, `{"end":`) {
		t.Errorf("a stream cut once made: %.200s … %s", body, body[max(0, len(body)-300):])
	}
	if errors.Is(ctx.Err(), nil) {
		t.Fatal("unreachable")
	}
}

// Ensure that a pairs stream gives its place among MaxRuns back once its
// pairs are made, not once a slow client has read them: two clients
// reading slowly held both places, and a stats request waited 27 s
// behind them (a review of serve, SV3-1).
func TestPairsPlaceGivenBackOnceMade(t *testing.T) {
	d := openFixture(t, 0, nil)
	var docs []db.Doc
	for i := range 700 {
		docs = append(docs, db.Doc{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("one text shared by every document of the index, but for its number %d", i%3)})
	}
	if _, err := d.PutBatch(docs, &db.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	made := madeHook(t)
	h := Handler(d, &Options{MaxRuns: 1}).(*handler)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	stalled(t, srv.URL+"/v1/pairs?threshold=0.5") // NB: 244,650 pairs, about 20 MB
	waitMade(t, made, "the pairs were not made ahead of their slow client")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/stats", nil).WithContext(ctx))
	if rec.Code != http.StatusOK {
		t.Errorf("stats beside a pairs stream whose pairs are made: %d %.300s", rec.Code, rec.Body)
	}
}

// madeHook sets spoolMade for the test, and returns the channel it
// signals each time a spooled stream's maker is done (once at most
// waiting in it: the later ones are dropped).
func madeHook(t *testing.T) <-chan struct{} {
	made := make(chan struct{}, 1)
	spoolMade = func() {
		select {
		case made <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { spoolMade = nil })
	return made
}

// waitMade waits for a maker to be done, failing the test with why if
// none is within a minute.
func waitMade(t *testing.T, made <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-made:
	case <-time.After(time.Minute):
		t.Fatal(why)
	}
}

// stalled GETs url as a client that reads its answer's first line and
// then stops reading; the answer's reader goes on from there, and the
// body is closed at the test's end if not before. NB: the test closes
// its server with t.Cleanup, before calling stalled: cleanups run last
// first, so the body is closed before the server waits for its request
// (a deferred Close waited for the write timeout).
func stalled(t *testing.T, url string) (*http.Response, *bufio.Reader, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	br := bufio.NewReaderSize(res.Body, 4<<10)
	first, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	return res, br, first
}
