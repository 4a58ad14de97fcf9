package client_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/minhash"
)

// sampleDocs returns the first n documents of the debian sample, and for
// every tenth one a near-copy with id ID+"~" and binary metadata.
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
		docs = append(docs, db.Doc{ID: d.ID, Text: d.Text, Meta: []byte("utf-8 meta")})
		if len(docs)%10 == 1 {
			docs = append(docs, db.Doc{ID: d.ID + "~", Text: d.Text + " again", Meta: []byte{0xff, 0, 'm'}})
		}
	}
	return docs
}

// server serves d on a loopback port and on a Unix socket, and returns a
// client of each.
func server(t *testing.T, d *db.DB, o *httpapi.Options, token string) map[string]*client.Client {
	t.Helper()
	h := httpapi.Handler(d, o)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// NB: a Unix socket path is limited to about 104 bytes: a short
	// directory, not t.TempDir().
	sockDir, err := os.MkdirTemp("", "lshdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s.sock")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []net.Listener{tcp, unix} {
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	out := map[string]*client.Client{}
	for name, target := range map[string]string{"tcp": "http://" + tcp.Addr().String(), "unix": sock} {
		c, err := client.Open(target, &client.Options{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		out[name] = c
	}
	return out
}

// serveTCP serves h on a loopback port until the test ends, and returns
// its URL and server.
func serveTCP(t *testing.T, h http.Handler) (string, *http.Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), srv
}

// serveCounting serves srv on a loopback port until the test ends, and
// returns its URL and the count of the connections it accepted (the
// oracle of whether a client kept or renewed its connections).
func serveCounting(t *testing.T, srv *http.Server) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := new(atomic.Int64)
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), conns
}

// oneRequestConn is a server's connection that serves one request and
// then closes as the next arrives, unanswered: a kept-alive connection
// that the server closed (a restart) under the client's next request.
type oneRequestConn struct {
	net.Conn
	seen bool // the first request was answered
	mu   sync.Mutex
}

func (c *oneRequestConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	seen := c.seen
	c.mu.Unlock()
	if seen && n > 0 {
		// NB: the next request's bytes: the connection ends unanswered
		// (closed at once, the client saw it closed while idle).
		c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

func (c *oneRequestConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.seen = true // NB: answered: the next read is the next request's
	c.mu.Unlock()
	return c.Conn.Write(p)
}

type oneRequestListener struct{ net.Listener }

func (l oneRequestListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &oneRequestConn{Conn: c}, nil
}

// Ensure that a read sent with a body (a query by text) on a kept-alive
// connection that the server closes under it is sent again on a new one,
// as a GET is, and answers; and that a write so cut is ErrConnectionCut,
// not sent again (it may have been applied). It came back as an error
// ("server closed idle connection", or a cut) that a service had to
// retry itself (an HTTP review, HT-4).
func TestReadSentAgainOnAClosedKeptAliveConnection(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	if err := d.Put(db.Doc{ID: "a", Text: "a text of a few words, stored once"}, nil); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpapi.Handler(d, nil)}
	go srv.Serve(oneRequestListener{l})
	t.Cleanup(func() { srv.Close() })
	c, err := client.Open("http://"+l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 5 {
		res, err := c.Query(context.Background(), "a text of a few words, stored once", nil)
		if err != nil || len(res.Matches) != 1 {
			t.Fatalf("query %d on a connection closed under it: %+v, %v; want it sent again, and a's match", i, res, err)
		}
	}
	// A write on the connection the last query left: cut, and not sent
	// again.
	err = c.Put(db.Doc{ID: "b", Text: "another text"}, nil)
	if !errors.Is(err, client.ErrConnectionCut) {
		t.Fatalf("a put cut so: %v; want ErrConnectionCut", err)
	}
	if ok, err := d.Has("b"); err != nil || ok {
		t.Fatalf("the cut put was applied (%v, %v): it was sent again", ok, err)
	}
}

func open(t *testing.T, o *db.Options) *db.DB {
	t.Helper()
	d, err := db.Open(filepath.Join(t.TempDir(), "idx"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// noNaN replaces the NaN that an unmeasured recall carries (NaN is not
// equal to itself).
func noNaN(s *db.Stats) *db.Stats {
	if math.IsNaN(s.Recall.MissRatio) {
		s.Recall.MissRatio = -1
	}
	return s
}

func clusterIDs(cs []db.Cluster) [][]string {
	var out [][]string
	for _, c := range cs {
		out = append(out, append([]string{c.Representative}, c.IDs...))
	}
	return out
}

// clusterViews are the exported fields of clusters.
func clusterViews(cs []db.Cluster) []db.Cluster {
	out := make([]db.Cluster, len(cs))
	for i, c := range cs {
		out[i] = db.Cluster{Representative: c.Representative, IDs: c.IDs, Jaccard: c.Jaccard, MinJaccard: c.MinJaccard}
	}
	return out
}

var errPairsSource = errors.New("the pairs source failed")

// inOrder collects the pairs of seq in the order it yields them.
func inOrder(t *testing.T, seq func(func(db.Pair, error) bool)) []db.Pair {
	t.Helper()
	var out []db.Pair
	for p, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// sortedPairs collects the pairs of seq sorted by ids.
func sortedPairs(t *testing.T, seq func(func(db.Pair, error) bool)) []db.Pair {
	t.Helper()
	ps := inOrder(t, seq)
	slices.SortFunc(ps, func(a, b db.Pair) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) })
	return ps
}

// Ensure that PutIfNewBatch through the client (one request, the
// server's stream) answers what it answers in process, document by
// document: near-duplicates within the batch and of stored documents, an
// id repeated, a replaced document, an empty text and an id that is not
// UTF-8 refused alone; and that both indexes end up the same.
func TestPutIfNewBatchMatchesInProcess(t *testing.T) {
	docs := sampleDocs(t, 300)
	var batch []db.Doc
	for i, d := range docs[100:] {
		batch = append(batch, d)
		if i%7 == 0 { // a near-copy of the document just before
			batch = append(batch, db.Doc{ID: d.ID + "-copy", Text: d.Text + " (copy)"})
		}
		if i%11 == 0 { // a near-copy of a stored document
			s := docs[i%100]
			batch = append(batch, db.Doc{ID: s.ID + "-again", Text: "again: " + s.Text})
		}
	}
	batch = append(batch,
		db.Doc{ID: docs[0].ID, Text: "a new text under a stored id, of owls and oaks and rivers"}, // replaces it
		db.Doc{ID: "blank", Text: "  \n "},                         // refused: empty
		db.Doc{ID: "bad\xff", Text: "a text under a bad id"},       // refused: not UTF-8
		db.Doc{ID: docs[150].ID, Text: docs[150].Text + " edited"}, // an id earlier in the batch
		docs[1], // stored again as it is: replaced, unchanged
		db.Doc{ID: docs[2].ID, Text: docs[2].Text, Meta: []byte(`"new meta"`)}, // unchanged too
	)
	local, remote := open(t, nil), open(t, nil)
	for _, d := range []*db.DB{local, remote} {
		if _, err := d.PutBatch(docs[:100], nil); err != nil {
			t.Fatal(err)
		}
	}
	want, err := local.PutIfNewBatch(context.Background(), batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range server(t, remote, nil, "") {
		got, err := c.PutIfNewBatch(context.Background(), batch, nil)
		if err != nil || len(got) != len(want) {
			t.Fatalf("through the client: %d results, %v; in process %d", len(got), err, len(want))
		}
		dups, replaced, unchanged := 0, 0, 0
		for i := range want {
			g, w := got[i], want[i]
			if !reflect.DeepEqual(g.Match, w.Match) || g.Replaced != w.Replaced || g.Unchanged != w.Unchanged || (g.Err == nil) != (w.Err == nil) {
				t.Fatalf("document %d (%q): through the client %+v %+v, in process %+v %+v", i, batch[i].ID, g, g.Match, w, w.Match)
			}
			for _, s := range []error{db.ErrEmptyDocument, db.ErrInvalidID} {
				if errors.Is(g.Err, s) != errors.Is(w.Err, s) {
					t.Fatalf("document %d (%q): through the client %v, in process %v", i, batch[i].ID, g.Err, w.Err)
				}
			}
			if w.Match != nil {
				dups++
			}
			if w.Replaced {
				replaced++
			}
			// The oracle: a document is unchanged where its id's
			// stored text was the same.
			if want := w.Replaced && i >= len(batch)-2; w.Unchanged != want {
				t.Fatalf("document %d (%q): unchanged %v, replaced %v", i, batch[i].ID, w.Unchanged, w.Replaced)
			}
			if w.Unchanged {
				unchanged++
			}
		}
		if dups < 20 || replaced < 3 || unchanged != 2 {
			t.Fatalf("the batch found %d duplicates, replaced %d and %d unchanged: the test checks too little", dups, replaced, unchanged)
		}
		break // NB: one transport: a second would find the first's documents
	}
	ln, _ := local.Count()
	rn, _ := remote.Count()
	if ln != rn {
		t.Fatalf("in process %d documents, through the client %d", ln, rn)
	}
	for _, d := range batch {
		_, lerr := local.Get(d.ID)
		_, rerr := remote.Get(d.ID)
		if (lerr == nil) != (rerr == nil) {
			t.Fatalf("%q: in process %v, through the client %v", d.ID, lerr, rerr)
		}
	}
}

// Ensure that PutIfNewBatch reads the server's answer to its end: a
// failure after the last document's line (the final sync's) is the
// call's error, with every document's result; a stream cut before it is
// an error too. The client stopped at the last document's line, and a
// failed sync read as success (the maintainer's review).
func TestPutIfNewBatchTrailingFailure(t *testing.T) {
	d := open(t, nil)
	real := httpapi.Handler(d, nil)
	var tail string // what the fake answer ends with after both documents' lines
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/docs/put-if-new" {
			real.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"id":"a","duplicate_of":null,"jaccard":null}`+"\n"+`{"id":"b","duplicate_of":"a","jaccard":0.9}`+"\n"+tail)
	})
	base, _ := serveTCP(t, h)
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	docs := []db.Doc{{ID: "a", Text: "a first text"}, {ID: "b", Text: "a first text!"}}
	for _, k := range []struct {
		tail string
		want error
	}{
		{"", nil},
		{`{"error":{"code":"disk_full","message":"the documents stored were written, but syncing them failed: disk full"}}` + "\n", db.ErrDiskFull},
		// NB: the answer is malformed, not the index corrupt (which
		// lshdb reports as damage, exit 4).
		{`{"id":"c","duplicate_of":null,"jaccard":null}` + "\n", client.ErrMalformedAnswer},
	} {
		tail = k.tail
		res, err := c.PutIfNewBatch(context.Background(), docs, nil)
		if len(res) != 2 || res[0].Match != nil || res[1].Match == nil || res[1].Match.ID != "a" {
			t.Fatalf("after %q: results %+v", k.tail, res)
		}
		if k.want == nil && err != nil || k.want != nil && !errors.Is(err, k.want) {
			t.Fatalf("after %q: %v, want %v", k.tail, err, k.want)
		}
	}
}

// Ensure that the client reads the server's bound on a request body,
// which a caller batching documents (lshdb insert) stays under: its own,
// or -1 for none.
func TestMaxBodyBytes(t *testing.T) {
	d := open(t, nil)
	for _, c := range []struct{ set, want int64 }{{4 << 20, 4 << 20}, {-1, -1}, {-7, -1}} {
		for name, cl := range server(t, d, &httpapi.Options{MaxBodyBytes: c.set}, "") {
			if got := cl.MaxBodyBytes(); got != c.want {
				t.Errorf("%s: a server with MaxBodyBytes %d: the client read %d, want %d", name, c.set, got, c.want)
			}
		}
	}
}

// Ensure that every read answers through the client, over TCP with a
// token and over a Unix socket, exactly what the in-process call answers
// on the same index.
func TestReadsMatchInProcess(t *testing.T) {
	d := open(t, nil)
	docs := sampleDocs(t, 150)
	if _, err := d.PutBatch(docs, &db.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, c := range server(t, d, &httpapi.Options{Token: "tok"}, "tok") {
		t.Run(name, func(t *testing.T) {
			same(t, "Params", c.Params(), d.Params())
			if c.MaxDocBytes() != d.MaxDocBytes() {
				t.Errorf("MaxDocBytes %d, want %d", c.MaxDocBytes(), d.MaxDocBytes())
			}
			if c.MaxBodyBytes() != httpapi.DefaultMaxBodyBytes {
				t.Errorf("MaxBodyBytes %d, want the server's default %d", c.MaxBodyBytes(), httpapi.DefaultMaxBodyBytes)
			}
			n, err := c.Count()
			want, _ := d.Count()
			same(t, "Count", [2]any{n, err}, [2]any{want, nil})
			gi, err := c.Info()
			if err != nil {
				t.Fatal(err)
			}
			wi, _ := d.Info()
			// NB: not the bytes on disk, which a compaction in the
			// background may change between the two calls.
			same(t, "Info", [2]any{gi.Params, gi.Docs}, [2]any{wi.Params, wi.Docs})
			if gi.DiskBytes == 0 {
				t.Error("Info through the client: 0 bytes on disk")
			}
			for _, so := range []*db.ScanOptions{nil, {Sets: true}} {
				var got, want []*db.StoredDoc
				for doc, err := range c.Scan(ctx, so) {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, doc)
				}
				for doc, err := range d.Scan(ctx, so) {
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, doc)
				}
				if len(want) != len(docs) {
					t.Fatalf("Scan in-process: %d documents, want %d", len(want), len(docs))
				}
				same(t, "Scan", got, want)
			}
			for _, id := range []string{docs[0].ID, docs[1].ID, docs[7].ID} {
				got, err := c.Get(id)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := d.Get(id)
				same(t, "Get "+id, got, want)
				ok, err := c.Has(id)
				if !ok || err != nil {
					t.Errorf("Has(%q) = %v, %v", id, ok, err)
				}
			}
			ids := []string{docs[3].ID, "absent", docs[149].ID, docs[3].ID, "absent too"}
			gotHas, err := c.HasIDs(ids)
			wantHas, _ := d.HasIDs(ids)
			same(t, "HasIDs", [2]any{gotHas, err}, [2]any{wantHas, nil})
			if !slices.Equal(wantHas, []bool{true, false, true, true, false}) {
				t.Fatalf("HasIDs in process: %v", wantHas)
			}
			if got, err := c.HasIDs(nil); err != nil || len(got) != 0 {
				t.Errorf("HasIDs(nil) = %v, %v", got, err)
			}
			for _, qo := range []*db.QueryOptions{nil, {Threshold: 0.3}, {Threshold: 0.3, Limit: 2}, {EstimateOnly: true, Threshold: 0.5}} {
				got, err := c.QueryID(ctx, docs[0].ID, qo)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := d.QueryID(ctx, docs[0].ID, qo)
				same(t, "QueryID", got, want)
				got, err = c.Query(ctx, docs[11].Text, qo)
				if err != nil {
					t.Fatal(err)
				}
				want, _ = d.Query(ctx, docs[11].Text, qo)
				same(t, "Query", got, want)
			}
			for _, po := range []*db.PairsOptions{nil, {Threshold: 0.4}} {
				var gs, ws db.PairsStats
				var got, want []db.Pair
				if po != nil {
					po.Stats = &gs
					got = sortedPairs(t, c.Pairs(ctx, po))
					po.Stats = &ws
					want = sortedPairs(t, d.Pairs(ctx, po))
				} else {
					got, want = sortedPairs(t, c.Pairs(ctx, nil)), sortedPairs(t, d.Pairs(ctx, nil))
				}
				if len(want) == 0 {
					t.Fatal("the fixture has no pairs")
				}
				same(t, "Pairs", got, want)
				same(t, "PairsStats", gs, ws)
				gc, err := c.Clusters(ctx, po)
				if err != nil {
					t.Fatal(err)
				}
				wc, _ := d.Clusters(ctx, po)
				same(t, "Clusters", clusterIDs(gc), clusterIDs(wc))
			}
			// The best pairs, kept by the server, in its order.
			for _, limit := range []int{1, 3, 1000} {
				po := &db.PairsOptions{Threshold: 0.4, Limit: limit}
				got, want := inOrder(t, c.Pairs(ctx, po)), inOrder(t, d.Pairs(ctx, po))
				if len(want) == 0 || limit < 1000 && len(want) != limit {
					t.Fatalf("limit %d: %d pairs in process", limit, len(want))
				}
				same(t, fmt.Sprintf("Pairs limit %d", limit), got, want)
			}
			if err := firstErr(c.Pairs(ctx, &db.PairsOptions{Limit: httpapi.MaxPairsLimit + 1})); !errors.Is(err, db.ErrInvalidOptions) {
				t.Errorf("a limit over the server's: %v, want ErrInvalidOptions", err)
			}
			// A memory budget over the server's is refused in both units:
			// bytes (the request's) and MiB (the command's --memory).
			if err := firstErr(c.Pairs(ctx, &db.PairsOptions{Memory: 2 * httpapi.MaxPairsMemory})); !errors.Is(err, db.ErrInvalidOptions) ||
				!strings.Contains(err.Error(), "memory 2147483648 bytes (2048 MiB) exceeds the server's limit of 1073741824 bytes (1024 MiB)") {
				t.Errorf("a memory budget over the server's: %v, want ErrInvalidOptions in bytes and MiB", err)
			}
			// Clusters ignore a limit, as in process (the client sent it
			// to /v1/clusters, which refused it).
			if gc, err := c.Clusters(ctx, &db.PairsOptions{Threshold: 0.4, Limit: 3}); err != nil {
				t.Errorf("Clusters with a limit: %v", err)
			} else if wc, _ := d.Clusters(ctx, &db.PairsOptions{Threshold: 0.4}); !reflect.DeepEqual(clusterIDs(gc), clusterIDs(wc)) {
				t.Errorf("Clusters with a limit differ from those without")
			}
			// Every mode and keep policy, and clusters from the pairs sent
			// in the request's body, carry what the database computes.
			for _, mode := range []db.ClusterMode{db.Components, db.Centers} {
				for _, keep := range []db.KeepPolicy{db.KeepFirst, db.KeepLast, db.KeepLongest, db.KeepShortest} {
					po := &db.PairsOptions{Threshold: 0.4, Mode: mode, Keep: keep}
					want, err := d.Clusters(ctx, po)
					if err != nil {
						t.Fatal(err)
					}
					got, err := c.Clusters(ctx, po)
					if err != nil {
						t.Fatal(err)
					}
					same(t, "Clusters "+string(mode)+" "+string(keep), clusterViews(got), clusterViews(want))
					got, err = c.ClustersFrom(ctx, d.Pairs(ctx, &db.PairsOptions{Threshold: 0.4}), po)
					if err != nil {
						t.Fatal(err)
					}
					same(t, "ClustersFrom "+string(mode)+" "+string(keep), clusterViews(got), clusterViews(want))
				}
			}
			bad := func(yield func(db.Pair, error) bool) { yield(db.Pair{A: docs[0].ID, B: "nobody", Jaccard: 1}, nil) }
			if _, err := c.ClustersFrom(ctx, bad, nil); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("ClustersFrom naming an unknown id: %v, want ErrNotFound", err)
			}
			failing := func(yield func(db.Pair, error) bool) { yield(db.Pair{}, errPairsSource) }
			if _, err := c.ClustersFrom(ctx, failing, nil); !errors.Is(err, errPairsSource) {
				t.Errorf("ClustersFrom of a failing source: %v, want its error", err)
			}
			if name == "unix" {
				ws, _ := d.Stats(ctx, 5)
				// NB: once: Stats measures the recall on short documents
				// (a second or so under -race), and the transport is not
				// what it tests.
				gs, err := c.Stats(ctx, 5)
				if err != nil {
					t.Fatal(err)
				}
				same(t, "Stats", noNaN(gs), noNaN(ws))
			}
			for _, bt := range [][2]int{{-1, 10}, {2, 3}, {0, 0}} {
				got, err := c.Buckets(ctx, bt[0], bt[1])
				if err != nil {
					t.Fatal(err)
				}
				want, _ := d.Buckets(ctx, bt[0], bt[1])
				same(t, "Buckets", got, want)
			}
			hb, _ := d.Buckets(ctx, -1, 1)
			hot := hb.Hottest[0]
			got, err := c.Bucket(hot.Band, hot.Bucket)
			if err != nil || len(got) < 2 {
				t.Fatalf("Bucket: %v %v", got, err)
			}
			wantIDs, _ := d.Bucket(hot.Band, hot.Bucket)
			same(t, "Bucket", got, wantIDs)
			got, err = c.Bucket(0, 12345)
			wantIDs, werr := d.Bucket(0, 12345)
			same(t, "an absent bucket", [2]any{got, err}, [2]any{wantIDs, werr})
			ge, err := c.Explain(docs[0].ID, docs[1].ID)
			if err != nil {
				t.Fatal(err)
			}
			we, _ := d.Explain(docs[0].ID, docs[1].ID)
			same(t, "Explain", ge, we)
			gr, err := c.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wr, _ := d.Check(ctx)
			same(t, "Check", gr, wr)
			if name == "unix" {
				tune, err := c.Tune(ctx, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				p := d.Params()
				if tune.Bands != p.Bands.B || tune.Rows != p.Bands.R || tune.PAtThreshold != p.Bands.Probability(0.5) {
					t.Errorf("Tune: %+v for %v", tune, p.Bands)
				}
			}
		})
	}
}

// Ensure that writes through the client land in the index as the same
// calls in process would: read back in process, and checked clean.
func TestWritesThroughClient(t *testing.T) {
	d := open(t, nil)
	docs := sampleDocs(t, 40)
	c := server(t, d, nil, "")["unix"]
	res, err := c.PutBatch(append(docs, docs[3]), &db.WriteOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "PutBatch", res, db.BatchResult{Stored: len(docs), Repeated: 1})
	for _, doc := range docs {
		got, err := d.Get(doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != doc.Text || !reflect.DeepEqual(got.Meta, doc.Meta) {
			t.Errorf("%s: stored %q %q, want %q %q", doc.ID, got.Text, got.Meta, doc.Text, doc.Meta)
		}
	}
	if err := c.Put(db.Doc{ID: "fox", Text: "The quick brown fox jumps over the lazy dog"}, nil); err != nil {
		t.Fatal(err)
	}
	m, err := c.PutIfNew(db.Doc{ID: "fox2", Text: "The quick brown fox jumps over the lazy dog!"}, nil)
	if err != nil || m == nil || m.ID != "fox" {
		t.Fatalf("PutIfNew of a near-copy: %+v %v", m, err)
	}
	if ok, _ := d.Has("fox2"); ok {
		t.Error("the near-copy was stored")
	}
	m, err = c.PutIfNew(db.Doc{ID: "owl", Text: "An owl hoots at midnight over the silent barn"}, nil)
	if err != nil || m != nil {
		t.Fatalf("PutIfNew of a new text: %+v %v", m, err)
	}
	if ok, _ := d.Has("owl"); !ok {
		t.Error("owl was not stored")
	}
	if err := c.Delete("owl", nil); err != nil {
		t.Fatal(err)
	}
	if ok, _ := d.Has("owl"); ok {
		t.Error("owl was not deleted")
	}
	dr, err := c.DeleteIDs([]string{"fox", "nope", "fox"}, &db.WriteOptions{IgnoreMissing: true})
	same(t, "DeleteIDs", [2]any{dr, err}, [2]any{db.DeleteResult{Deleted: 1, Missing: []string{"nope"}}, nil})
	// An expired document is swept by the server's purge, and counted.
	if err := c.Put(db.Doc{ID: "gone", Text: "a document whose time has already passed"}, &db.WriteOptions{TTL: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	pr, err := c.Purge(context.Background())
	if err != nil || pr.PurgedLists == 0 || pr.SweptExpired > 1 || pr.SweptExpired < 0 {
		t.Errorf("Purge: %+v %v, want lists purged and at most the one expired document swept", pr, err)
	}
	if ok, _ := d.Has("gone"); ok {
		t.Error("the expired document is still there after Purge")
	}
	n, err := c.PurgeEmptyLists(context.Background())
	if err != nil || n != 0 {
		t.Errorf("PurgeEmptyLists after Purge: %d %v, want nothing left", n, err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Errorf("check after the writes: %+v %v", rep, err)
	}
}

// Ensure that the client's errors match db's sentinels with errors.Is, as
// the in-process calls' do, for every error a running index can return.
func TestErrorsMatchSentinels(t *testing.T) {
	d := open(t, &db.Options{MaxDocBytes: 1000})
	if err := d.Put(db.Doc{ID: "a", Text: "some text to find"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(db.Doc{ID: "a\ufffd", Text: "some text to find, and more"}, nil); err != nil {
		t.Fatal(err)
	}
	servers := server(t, d, nil, "")
	c := servers["tcp"]
	// A server whose body limit is below the document: the client refuses
	// it itself, as the index would (the server answered body_too_large).
	small := server(t, d, &httpapi.Options{MaxBodyBytes: 1500}, "")["tcp"]
	ctx := context.Background()
	big := string(make([]byte, 2000))
	far := &db.WriteOptions{ExpireAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	// NB: an empty batch is checked as in process (the server's words
	// for a TTL are its wire's: ttl_ms).
	if _, err := c.PutBatch(nil, &db.WriteOptions{TTL: -time.Second}); !errors.Is(err, db.ErrInvalidOptions) {
		t.Errorf("an empty batch with a negative TTL: %v", err)
	}
	for _, tc := range []struct {
		name   string
		client func() error
		local  func() error
		want   error
	}{
		{"not found", func() error { _, err := c.Get("nope"); return err }, func() error { _, err := d.Get("nope"); return err }, db.ErrNotFound},
		{"invalid id", func() error { _, err := c.Get(""); return err }, func() error { _, err := d.Get(""); return err }, db.ErrInvalidID},
		// NB: an id not UTF-8 sent as JSON became one with U+FFFD: the
		// query answered for another document ("a\ufffd" is stored).
		{"query by an id not UTF-8", func() error { _, err := c.QueryID(ctx, "a\xff", nil); return err },
			func() error { _, err := d.QueryID(ctx, "a\xff", nil); return err }, db.ErrInvalidID},
		{"queries by an id not UTF-8", func() error { _, err := c.QueryMany(ctx, []db.QueryInput{{ID: "a\xff"}}, nil); return err },
			func() error { _, err := d.QueryMany(ctx, []db.QueryInput{{ID: "a\xff"}}, nil); return err }, db.ErrInvalidID},
		{"clusters of a pair with an id not UTF-8", func() error {
			_, err := c.ClustersFrom(ctx, pairSeq(db.Pair{A: "a\xff", B: "a", Jaccard: 0.9}), nil)
			return err
		},
			func() error {
				_, err := d.ClustersFrom(ctx, pairSeq(db.Pair{A: "a\xff", B: "a", Jaccard: 0.9}), nil)
				return err
			}, db.ErrNotFound},
		{"empty document", func() error { return c.Put(db.Doc{ID: "e", Text: "  "}, nil) }, func() error { return d.Put(db.Doc{ID: "e", Text: "  "}, nil) }, db.ErrEmptyDocument},
		{"too large", func() error { return c.Put(db.Doc{ID: "b", Text: big}, nil) }, func() error { return d.Put(db.Doc{ID: "b", Text: big}, nil) }, db.ErrDocTooLarge},
		{"too large for the body", func() error { return small.Put(db.Doc{ID: "b", Text: big}, nil) }, func() error { return d.Put(db.Doc{ID: "b", Text: big}, nil) }, db.ErrDocTooLarge},
		{"too large, if new", func() error { _, err := small.PutIfNew(db.Doc{ID: "b", Text: big}, nil); return err },
			func() error { _, err := d.PutIfNew(db.Doc{ID: "b", Text: big}, nil); return err }, db.ErrDocTooLarge},
		{"too large a set", func() error {
			return small.PutSet("b", db.Tokens(strings.Fields(strings.Repeat("token ", 300))...), nil)
		},
			func() error { return d.PutSet("b", db.Tokens(strings.Fields(strings.Repeat("token ", 300))...), nil) }, db.ErrDocTooLarge},
		{"invalid options", func() error { _, err := c.Query(ctx, "x y z", &db.QueryOptions{Threshold: 2}); return err },
			func() error { _, err := d.Query(ctx, "x y z", &db.QueryOptions{Threshold: 2}); return err }, db.ErrInvalidOptions},
		// NB: an expiry RFC 3339 cannot write (year 10000) was a bad
		// request, "not an RFC 3339 time" (a TTL review's TTL-1).
		{"put expiring after year 9999", func() error { return c.Put(db.Doc{ID: "y", Text: "some text"}, far) },
			func() error { return d.Put(db.Doc{ID: "y", Text: "some text"}, far) }, db.ErrInvalidOptions},
		{"batch expiring after year 9999", func() error { _, err := c.PutBatch([]db.Doc{{ID: "y", Text: "some text"}}, far); return err },
			func() error { _, err := d.PutBatch([]db.Doc{{ID: "y", Text: "some text"}}, far); return err }, db.ErrInvalidOptions},
		{"put-if-new expiring after year 9999", func() error { _, err := c.PutIfNew(db.Doc{ID: "y", Text: "some text"}, far); return err },
			func() error { _, err := d.PutIfNew(db.Doc{ID: "y", Text: "some text"}, far); return err }, db.ErrInvalidOptions},
		{"put-if-new batch expiring after year 9999", func() error {
			_, err := c.PutIfNewBatch(ctx, []db.Doc{{ID: "y", Text: "some text"}}, far)
			return err
		},
			func() error { _, err := d.PutIfNewBatch(ctx, []db.Doc{{ID: "y", Text: "some text"}}, far); return err }, db.ErrInvalidOptions},
		{"load expiring after year 9999", func() error {
			_, err := c.Load(ctx, docSeq(db.Doc{ID: "y", Text: "some text"}), &db.LoadOptions{ExpireAt: far.ExpireAt})
			return err
		},
			func() error {
				_, err := d.Load(ctx, docSeq(db.Doc{ID: "y", Text: "some text"}), &db.LoadOptions{ExpireAt: far.ExpireAt})
				return err
			}, db.ErrInvalidOptions},
		{"delete missing", func() error { return c.Delete("nope", nil) }, func() error { return d.Delete("nope", nil) }, db.ErrNotFound},
		{"explain missing", func() error { _, err := c.Explain("a", "nope"); return err }, func() error { _, err := d.Explain("a", "nope"); return err }, db.ErrNotFound},
		{"bucket band", func() error { _, err := c.Bucket(99, 1); return err }, func() error { _, err := d.Bucket(99, 1); return err }, db.ErrInvalidOptions},
		{"bucket width", func() error { _, err := c.Bucket(0, 1<<40); return err }, func() error { _, err := d.Bucket(0, 1<<40); return err }, db.ErrInvalidOptions},
		{"put-if-new empty", func() error { _, err := c.PutIfNew(db.Doc{ID: "e", Text: " "}, nil); return err },
			func() error { _, err := d.PutIfNew(db.Doc{ID: "e", Text: " "}, nil); return err }, db.ErrEmptyDocument},
		{"pairs threshold", func() error { return firstErr(c.Pairs(ctx, &db.PairsOptions{Threshold: 3})) },
			func() error { return firstErr(d.Pairs(ctx, &db.PairsOptions{Threshold: 3})) }, db.ErrInvalidOptions},
		// NB: through the socket: over TCP a server without a backup
		// root takes no backup.
		{"backup exists", func() error { return servers["unix"].Backup(ctx, d.Dir()) }, func() error { return d.Backup(ctx, d.Dir()) }, db.ErrInvalidOptions},
		// NB: JSON would carry these ids with U+FFFD for the invalid
		// byte: the client refuses them as the index does.
		{"put non-UTF-8 id", func() error { return c.Put(db.Doc{ID: "k\xff", Text: "some text"}, nil) },
			func() error { return d.Put(db.Doc{ID: "k\xff", Text: "some text"}, nil) }, db.ErrInvalidID},
		{"batch non-UTF-8 id", func() error {
			_, err := c.PutBatch([]db.Doc{{ID: "ok", Text: "fine"}, {ID: "k\xfe", Text: "some text"}}, nil)
			return err
		},
			func() error {
				_, err := d.PutBatch([]db.Doc{{ID: "ok", Text: "fine"}, {ID: "k\xfe", Text: "some text"}}, nil)
				return err
			}, db.ErrInvalidID},
		{"put-if-new non-UTF-8 id", func() error { _, err := c.PutIfNew(db.Doc{ID: "k\xff", Text: "some text"}, nil); return err },
			func() error { _, err := d.PutIfNew(db.Doc{ID: "k\xff", Text: "some text"}, nil); return err }, db.ErrInvalidID},
		// NB: the client's storage check ran first and said a text index
		// needs the document's text, which it had.
		{"text and a signature", func() error { return c.Put(db.Doc{ID: "t", Text: "some text", Signature: []uint32{1}}, nil) },
			func() error { return d.Put(db.Doc{ID: "t", Text: "some text", Signature: []uint32{1}}, nil) }, db.ErrInvalidDoc},
		// NB: an empty batch succeeds in process; sent, it read as a
		// request without a document, and failed.
		{"empty batch", func() error { _, err := c.PutBatch([]db.Doc{}, nil); return err },
			func() error { _, err := d.PutBatch([]db.Doc{}, nil); return err }, nil},
		{"nil batch", func() error { _, err := c.PutBatch(nil, nil); return err },
			func() error { _, err := d.PutBatch(nil, nil); return err }, nil},

		{"delete non-UTF-8 id", func() error { return c.Delete("a\xff", nil) }, func() error { return d.Delete("a\xff", nil) }, db.ErrInvalidID},
		{"delete many, one empty", func() error { _, err := c.DeleteIDs([]string{"a", ""}, nil); return err },
			func() error { _, err := d.DeleteIDs([]string{"a", ""}, nil); return err }, db.ErrInvalidID},
		{"delete many, one missing", func() error { _, err := c.DeleteIDs([]string{"a", "nope"}, nil); return err },
			func() error { _, err := d.DeleteIDs([]string{"a", "nope"}, nil); return err }, db.ErrNotFound},
		{"delete many, one non-UTF-8", func() error { _, err := c.DeleteIDs([]string{"a", "b\xff"}, nil); return err },
			func() error { _, err := d.DeleteIDs([]string{"a", "b\xff"}, nil); return err }, db.ErrInvalidID},
		{"has-many empty id", func() error { _, err := c.HasIDs([]string{"a", ""}); return err },
			func() error { _, err := d.HasIDs([]string{"a", ""}); return err }, db.ErrInvalidID},
		{"has-many non-UTF-8 id", func() error { _, err := c.HasIDs([]string{"a\xff"}); return err },
			func() error { _, err := d.HasIDs([]string{"a\xff"}); return err }, db.ErrInvalidID},
		// NB: these the client checks itself: a NaN cannot be sent as
		// JSON, an empty set or signature would reach the server as an
		// empty text, and a nil sequence has nothing to stream.
		{"query threshold NaN", func() error { _, err := c.Query(ctx, "x y z", &db.QueryOptions{Threshold: math.NaN()}); return err },
			func() error { _, err := d.Query(ctx, "x y z", &db.QueryOptions{Threshold: math.NaN()}); return err }, db.ErrInvalidOptions},
		{"query threshold +Inf", func() error { _, err := c.QueryID(ctx, "a", &db.QueryOptions{Threshold: math.Inf(1)}); return err },
			func() error { _, err := d.QueryID(ctx, "a", &db.QueryOptions{Threshold: math.Inf(1)}); return err }, db.ErrInvalidOptions},
		{"query limit negative", func() error { _, err := c.Query(ctx, "x y z", &db.QueryOptions{Limit: -1}); return err },
			func() error { _, err := d.Query(ctx, "x y z", &db.QueryOptions{Limit: -1}); return err }, db.ErrInvalidOptions},
		{"queries threshold NaN", func() error {
			_, err := c.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}}, &db.QueryOptions{Threshold: math.NaN()})
			return err
		},
			func() error {
				_, err := d.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}}, &db.QueryOptions{Threshold: math.NaN()})
				return err
			}, db.ErrInvalidOptions},
		{"query text too large", func() error { _, err := small.Query(ctx, big, nil); return err },
			func() error { _, err := d.Query(ctx, big, nil); return err }, db.ErrDocTooLarge},
		{"queries, second too large", func() error {
			_, err := small.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {Text: big}}, nil)
			return err
		},
			func() error {
				_, err := d.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {Text: big}}, nil)
				return err
			}, db.ErrDocTooLarge},
		{"load nil", func() error { _, err := c.Load(ctx, nil, nil); return err },
			func() error { _, err := d.Load(ctx, nil, nil); return err }, db.ErrInvalidOptions},
		{"signature in a text index", func() error { return c.PutSignature("s", nil, nil) },
			func() error { return d.PutSignature("s", nil, nil) }, db.ErrStorageMode},
		{"set in a text index", func() error { return c.PutSet("s", db.Tokens(), nil) },
			func() error { return d.PutSet("s", db.Tokens(), nil) }, db.ErrStorageMode},
		{"batch, a signature in a text index", func() error {
			_, err := c.PutBatch([]db.Doc{{ID: "ok", Text: "fine text"}, {ID: "s", Signature: make([]uint32, 128)}}, nil)
			return err
		},
			func() error {
				_, err := d.PutBatch([]db.Doc{{ID: "ok", Text: "fine text"}, {ID: "s", Signature: make([]uint32, 128)}}, nil)
				return err
			}, db.ErrStorageMode},
		{"load a signature into a text index", func() error {
			_, err := c.Load(ctx, docSeq(db.Doc{ID: "ok", Text: "fine text"}, db.Doc{ID: "s", Signature: make([]uint32, 128)}), nil)
			return err
		},
			func() error {
				_, err := d.Load(ctx, docSeq(db.Doc{ID: "ok", Text: "fine text"}, db.Doc{ID: "s", Signature: make([]uint32, 128)}), nil)
				return err
			}, db.ErrStorageMode},
		// NB: the server finds these: the position comes back with the
		// error (a DocError or a QueryError), as in process.
		{"batch, third empty", func() error {
			_, err := c.PutBatch([]db.Doc{{ID: "p", Text: "fine text"}, {ID: "q", Text: "more text"}, {ID: "r", Text: "  "}}, nil)
			return err
		},
			func() error {
				_, err := d.PutBatch([]db.Doc{{ID: "p", Text: "fine text"}, {ID: "q", Text: "more text"}, {ID: "r", Text: "  "}}, nil)
				return err
			}, db.ErrEmptyDocument},
		{"query many, second invalid", func() error {
			_, err := c.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {Text: "y", ID: "z"}}, nil)
			return err
		},
			func() error {
				_, err := d.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {Text: "y", ID: "z"}}, nil)
				return err
			}, db.ErrInvalidDoc},
		// NB: a zero query is ErrInvalidDoc and ErrEmptyDocument in
		// process (the second checked below); the server's answer carries
		// one code, and the client gave ErrEmptyDocument only.
		{"query many, second zero", func() error {
			_, err := c.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {}}, nil)
			return err
		},
			func() error {
				_, err := d.QueryMany(ctx, []db.QueryInput{{Text: "x y z"}, {}}, nil)
				return err
			}, db.ErrInvalidDoc},
		{"query many, third not stored", func() error {
			_, err := c.QueryMany(ctx, []db.QueryInput{{ID: "a"}, {Text: "some text"}, {ID: "nope"}}, nil)
			return err
		},
			func() error {
				_, err := d.QueryMany(ctx, []db.QueryInput{{ID: "a"}, {Text: "some text"}, {ID: "nope"}}, nil)
				return err
			}, db.ErrNotFound},
	} {
		cerr, lerr := tc.client(), tc.local()
		if !errors.Is(lerr, tc.want) {
			t.Fatalf("%s: in process %v, want %v", tc.name, lerr, tc.want)
		}
		if !errors.Is(cerr, tc.want) {
			t.Errorf("%s: client %v, want %v", tc.name, cerr, tc.want)
		} else if cerr != nil && cerr.Error() != lerr.Error() {
			t.Errorf("%s: message %q, in process %q", tc.name, cerr, lerr)
		}
		// The position, as a value, where the call in process gives it.
		var lde, cde *db.DocError
		if errors.As(lerr, &lde) && (!errors.As(cerr, &cde) || cde.Index != lde.Index || cde.ID != lde.ID) {
			t.Errorf("%s: client %v: DocError %+v, in process %+v", tc.name, cerr, cde, lde)
		}
		var lqe, cqe *db.QueryError
		if errors.As(lerr, &lqe) && (!errors.As(cerr, &cqe) || cqe.Index != lqe.Index) {
			t.Errorf("%s: client %v: QueryError %+v, in process %+v", tc.name, cerr, cqe, lqe)
		}
		// Every sentinel the error matches in process, it matches through
		// the client.
		// NB: io/fs's too: a backup into a directory that exists is
		// fs.ErrExist in process, and was not through the client.
		for _, s := range []error{db.ErrNotFound, db.ErrInvalidID, db.ErrInvalidDoc, db.ErrEmptyDocument, db.ErrDocTooLarge, db.ErrInvalidOptions, fs.ErrExist, fs.ErrNotExist, fs.ErrPermission} {
			if errors.Is(lerr, s) && !errors.Is(cerr, s) {
				t.Errorf("%s: in process %v matches %v, the client's %v does not", tc.name, lerr, s, cerr)
			}
		}
	}
	// A document the index takes whose request alone is over the server's
	// body limit (900 quotes, 1,800 bytes escaped, against 1,500): the
	// client refuses it as too large, at its place in a batch (the server
	// refused the whole request, and an attached insert --skip-bad
	// stopped there), and Validate says so; a document whose text fits
	// only unescaped goes in.
	quoted := db.Doc{ID: "q", Text: strings.Repeat(`"`, 900)}
	if err := d.Validate(quoted); err != nil {
		t.Fatalf("in process, the quoted document: %v", err)
	}
	var de *db.DocError
	_, err := small.PutBatch([]db.Doc{{ID: "ok", Text: "a short text"}, quoted}, nil)
	if !errors.Is(err, db.ErrDocTooLarge) || !errors.As(err, &de) || de.Index != 1 || !strings.Contains(err.Error(), "--max-body") {
		t.Errorf("a batch with a document over the server's body limit: %v, want ErrDocTooLarge at index 1 naming --max-body", err)
	}
	if err := small.Validate(quoted); !errors.Is(err, db.ErrDocTooLarge) {
		t.Errorf("Validate of a document over the server's body limit: %v, want ErrDocTooLarge", err)
	}
	if err := small.Put(db.Doc{ID: "lt", Text: strings.Repeat("<", 900)}, nil); err != nil {
		t.Errorf("a document of 900 bytes unescaped (the body is sent without HTML escapes): %v", err)
	}
	// A read-only index refuses writes; a full disk refuses them too.
	ro := func(o *db.Options) *client.Client {
		dir := filepath.Join(t.TempDir(), "idx")
		x, err := db.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		x.Put(db.Doc{ID: "a", Text: "a document"}, nil)
		x.Close()
		y, err := db.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { y.Close() })
		return server(t, y, nil, "")["unix"]
	}
	if err := ro(&db.Options{ReadOnly: true}).Put(db.Doc{ID: "b", Text: "another text"}, nil); !errors.Is(err, db.ErrReadOnly) {
		t.Errorf("a put to a read-only index: %v", err)
	}
	if err := ro(&db.Options{DiskReserve: 1 << 60}).Put(db.Doc{ID: "b", Text: "another text"}, nil); !errors.Is(err, db.ErrDiskFull) {
		t.Errorf("a put on a full disk: %v", err)
	}
	// A closed index answers 503 closed, and so does a closed client.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Count(); !errors.Is(err, db.ErrClosed) {
		t.Errorf("count on a closed index: %v", err)
	}
	c.Close()
	if _, err := c.Count(); !errors.Is(err, db.ErrClosed) {
		t.Errorf("count on a closed client: %v", err)
	}
}

func firstErr(seq func(func(db.Pair, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// Ensure that a wrong or missing token fails Open with
// httpapi.ErrUnauthorized, and that a cancelled context ends a call with
// context.Canceled.
func TestTokenAndContext(t *testing.T) {
	d := open(t, nil)
	d.Put(db.Doc{ID: "a", Text: "some text to find"}, nil)
	h := httpapi.Handler(d, &httpapi.Options{Token: "right"})
	base, _ := serveTCP(t, h)
	for _, tok := range []string{"", "wrong", "righ", "right2"} {
		if _, err := client.Open(base, &client.Options{Token: tok}); !errors.Is(err, httpapi.ErrUnauthorized) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
	// A token read from a file keeps its line end, which the server
	// trims from its own: trimmed here too; one with a control character
	// inside is refused naming the token (net/http's "invalid header
	// field value" named the Authorization header).
	for _, tok := range []string{"right\n", "right\r\n", " right "} {
		c, err := client.Open(base, &client.Options{Token: tok})
		if err != nil {
			t.Errorf("token %q: %v", tok, err)
			continue
		}
		c.Close()
	}
	if _, err := client.Open(base, &client.Options{Token: "ri\nght"}); !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), "the token") {
		t.Errorf("a token with a line end inside: %v, want ErrInvalidOptions naming the token", err)
	}
	if _, err := client.Open(base+"/v1", nil); !errors.Is(err, db.ErrInvalidOptions) {
		t.Errorf("an address with a path: %v, want ErrInvalidOptions", err)
	}
	c, err := client.Open(base, &client.Options{Token: "right"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// As in process: ctx's error, and only it (the transport's own
	// report, with the request's URL, was appended).
	if _, err := c.Query(ctx, "some text", nil); !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
		t.Errorf("a cancelled query: %v", err)
	}
	if err := firstErr(c.Pairs(ctx, nil)); !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
		t.Errorf("cancelled pairs: %v", err)
	}
	if _, err := client.Open(base+"/v1", nil); err == nil {
		t.Error("a URL with a path was accepted")
	}
}

// Ensure that Options.Timeout bounds the calls that take no context, and
// only them: it cut PutBatchContext, PutIfNewContext, PutIfNewBatch and
// DeleteIDsContext too (a long PutIfNewBatch stopped part way with some
// documents stored and unanswered), though their contexts had no deadline.
func TestTimeoutSparesContextMethods(t *testing.T) {
	d := open(t, nil)
	h := httpapi.Handler(d, nil)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			time.Sleep(300 * time.Millisecond)
		}
		h.ServeHTTP(w, r)
	})
	base, _ := serveTCP(t, slow)
	c, err := client.Open(base, &client.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	doc := func(id string) db.Doc { return db.Doc{ID: id, Text: "some words of the document " + id} }
	if _, err := c.PutBatch([]db.Doc{doc("a")}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PutBatch past the Timeout: %v, want context.DeadlineExceeded", err)
	}
	if _, err := c.PutBatchContext(ctx, []db.Doc{doc("b")}, nil); err != nil {
		t.Errorf("PutBatchContext: %v", err)
	}
	if _, err := c.PutIfNewContext(ctx, doc("c"), nil); err != nil {
		t.Errorf("PutIfNewContext: %v", err)
	}
	if res, err := c.PutIfNewBatch(ctx, []db.Doc{doc("d"), doc("e")}, nil); err != nil || len(res) != 2 {
		t.Errorf("PutIfNewBatch: %v, %v", res, err)
	}
	if _, err := c.DeleteIDsContext(ctx, []string{"b"}, nil); err != nil {
		t.Errorf("DeleteIDsContext: %v", err)
	}
}

// Ensure that put-if-new streams both ways over a real connection: each
// answer line comes back while the request body is still being sent (a
// dedup client can wait for one answer before sending the next document).
func TestPutIfNewFullDuplex(t *testing.T) {
	d := open(t, nil)
	h := httpapi.Handler(d, nil)
	base, _ := serveTCP(t, h)
	pr, pw := io.Pipe()
	// NB: a server that holds the answers until the body ends would make
	// this test wait forever: bounded, it fails instead.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/docs/put-if-new", pr)
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		got <- result{resp, err}
	}()
	docs := []string{
		`{"id": "fox", "text": "The quick brown fox jumps over the lazy dog"}`,
		`{"id": "fox2", "text": "The quick brown fox jumps over the lazy dog!"}`,
		`{"id": "owl", "text": "An owl hoots at midnight over the silent barn"}`,
	}
	io.WriteString(pw, docs[0]+"\n")
	r := <-got // NB: the headers come with the first answer, before the body ends
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	br := bufio.NewReader(r.resp.Body)
	var lines []httpapi.PutIfNewJSON
	for i := range docs {
		if i > 0 {
			io.WriteString(pw, docs[i]+"\n")
		}
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		var x httpapi.PutIfNewJSON
		if err := json.Unmarshal(line, &x); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, x)
	}
	pw.Close()
	if lines[0].DuplicateOf != nil || lines[1].DuplicateOf == nil || *lines[1].DuplicateOf != "fox" || lines[2].DuplicateOf != nil {
		t.Errorf("answers: %+v", lines)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("after the last answer: %q", rest)
	}
	for id, want := range map[string]bool{"fox": true, "fox2": false, "owl": true} {
		if ok, _ := d.Has(id); ok != want {
			t.Errorf("%s stored: %v, want %v", id, ok, want)
		}
	}
}

// Ensure that Validate refuses what (*db.DB).Validate refuses, with the
// same message.
func TestValidateMatchesDB(t *testing.T) {
	d := open(t, &db.Options{MaxDocBytes: 100})
	c := server(t, d, nil, "")["unix"]
	for _, doc := range []db.Doc{{ID: "ok", Text: "fine"}, {ID: ""}, {ID: string(make([]byte, db.MaxIDBytes+1))},
		{ID: "\xff"}, {ID: "big", Text: string(make([]byte, 101))}, {ID: "meta", Text: "x", Meta: make([]byte, 100)}} {
		cerr, derr := c.Validate(doc), d.Validate(doc)
		if (cerr == nil) != (derr == nil) || cerr != nil && cerr.Error() != derr.Error() {
			t.Errorf("%.20q: client %v, db %v", doc.ID, cerr, derr)
		}
	}
}

// Ensure that Load through the client is the load in process: the same
// documents (meta and a repeated id included) make the same index, read
// back document by document; and that a failure (an error yielded by the
// input, returned unchanged; a document the server refuses, with its
// sentinel) stores nothing.
func TestLoadThroughClient(t *testing.T) {
	docs := sampleDocs(t, 300)
	docs = append(docs, db.Doc{ID: docs[5].ID, Text: "a later version of the fifth document wins"})
	seq := func(docs []db.Doc, fail error) iter.Seq2[db.Doc, error] {
		return func(yield func(db.Doc, error) bool) {
			for i, d := range docs {
				if fail != nil && i == len(docs)/2 {
					yield(db.Doc{}, fail)
					return
				}
				if !yield(d, nil) {
					return
				}
			}
		}
	}
	local, served := open(t, nil), open(t, nil)
	for _, d := range []*db.DB{local, served} {
		if err := d.Put(db.Doc{ID: "before", Text: "a document stored before the load"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	want, err := local.Load(context.Background(), seq(docs, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := server(t, served, nil, "")["unix"]
	progress := 0
	got, err := c.Load(context.Background(), seq(docs, nil), &db.LoadOptions{Memory: 1 << 20, Progress: func(n int) { progress = n }})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "LoadResult", got, want)
	if progress != len(docs) {
		t.Errorf("progress ended at %d, want %d", progress, len(docs))
	}
	all := func(d *db.DB) []*db.StoredDoc {
		var out []*db.StoredDoc
		for doc, err := range d.All() {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, doc)
		}
		return out
	}
	if a, b := all(local), all(served); !reflect.DeepEqual(a, b) {
		t.Errorf("after the load: %d documents in process, %d through the client", len(a), len(b))
	}
	before, _ := served.Count()
	boom := errors.New("the input broke")
	if _, err := c.Load(context.Background(), seq(sampleDocs(t, 100), boom), nil); !errors.Is(err, boom) {
		t.Errorf("Load of a failing input: %v, want %v", err, boom)
	}
	if _, err := c.Load(context.Background(), seq([]db.Doc{{ID: "ok", Text: "fine text"}, {ID: "", Text: "no id"}}, nil), nil); !errors.Is(err, db.ErrInvalidID) {
		t.Errorf("Load of an empty id: %v, want ErrInvalidID", err)
	}
	// A set into a text index: refused as in process (the client once
	// refused every set and signature, as ErrInvalidDoc).
	if _, err := c.Load(context.Background(), seq([]db.Doc{{ID: "ok", Text: "fine text"}, {ID: "s", Set: db.Tokens("a", "set")}}, nil), nil); !errors.Is(err, db.ErrStorageMode) {
		t.Errorf("Load of a set: %v, want ErrStorageMode", err)
	}
	if _, err := c.Load(context.Background(), seq([]db.Doc{{ID: "x", Text: "fine"}}, nil), &db.LoadOptions{Memory: -1}); !errors.Is(err, db.ErrInvalidOptions) {
		t.Errorf("Load with negative memory: %v, want ErrInvalidOptions", err)
	}
	if after, _ := served.Count(); after != before {
		t.Errorf("failed loads changed the count: %d, was %d", after, before)
	}
	rep, err := served.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Errorf("check after the loads: %+v %v", rep, err)
	}
}

// Ensure that sets, token hashes and signatures go through the client as
// in process: puts through the client leave the same index as puts in
// process (a second index written directly is the model), and QuerySet,
// QuerySignature and QueryMany answer as db.DB does on the same index;
// bad inputs fail with the same sentinels.
func TestSetsAndSignaturesThroughClient(t *testing.T) {
	ctx := context.Background()
	words := func(s string) []string { return strings.Fields(strings.ToLower(s)) }
	docs := sampleDocs(t, 60)
	for _, storage := range []string{db.StorageSets, db.StorageNone} {
		t.Run(storage, func(t *testing.T) {
			d, model := open(t, &db.Options{Storage: storage}), open(t, &db.Options{Storage: storage})
			c := server(t, d, nil, "")["unix"]
			for i, doc := range docs {
				id := fmt.Sprintf("s%02d", i)
				var s db.Set
				if i%2 == 0 {
					s = db.Tokens(words(doc.Text)...)
				} else {
					hs := make([]uint64, 0)
					for _, w := range words(doc.Text) {
						hs = append(hs, uint64(len(w))<<32|uint64(w[0])<<8|uint64(w[len(w)-1]))
					}
					s = db.Hashes(hs...)
				}
				if err := c.PutSet(id, s, nil); err != nil {
					t.Fatal(err)
				}
				if err := model.PutSet(id, s, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i := range docs {
				id := fmt.Sprintf("s%02d", i)
				got, _ := d.Get(id)
				want, _ := model.Get(id)
				got.Num, want.Num = 0, 0
				same(t, "stored "+id, got, want)
			}
			q := db.Tokens(words(docs[4].Text)...)
			for _, qo := range []*db.QueryOptions{nil, {Threshold: 0.3, Limit: 3}} {
				got, err := c.QuerySet(ctx, q, qo)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := d.QuerySet(ctx, q, qo)
				same(t, "QuerySet", got, want)
				if len(want.Matches) == 0 {
					t.Fatal("QuerySet found nothing: the test tests little")
				}
			}
			stored, _ := d.Get("s04")
			if storage == db.StorageNone {
				got, err := c.QuerySignature(ctx, stored.Signature, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := d.QuerySignature(ctx, stored.Signature, nil)
				same(t, "QuerySignature", got, want)
				if err := c.PutSignature("sig", stored.Signature, nil); err != nil {
					t.Fatal(err)
				}
				if err := model.PutSignature("sig", stored.Signature, nil); err != nil {
					t.Fatal(err)
				}
				got2, _ := d.Get("sig")
				want2, _ := model.Get("sig")
				got2.Num, want2.Num = 0, 0
				same(t, "stored signature", got2, want2)
			}
			qs := []db.QueryInput{{Set: q}, {ID: "s07"}, {Signature: stored.Signature}}
			for _, qo := range []*db.QueryOptions{nil, {Threshold: 0.2, EstimateOnly: true}} {
				got, err := c.QueryMany(ctx, qs, qo)
				if err != nil {
					t.Fatal(err)
				}
				want, err := d.QueryMany(ctx, qs, qo)
				if err != nil {
					t.Fatal(err)
				}
				same(t, "QueryMany", got, want)
			}
			// The same sentinels as in process.
			for _, tc := range []struct {
				name     string
				got, exp error
			}{
				{"empty set", func() error { _, err := c.QuerySet(ctx, db.Tokens(), nil); return err }(), func() error { _, err := d.QuerySet(ctx, db.Tokens(), nil); return err }()},
				{"short signature", func() error { _, err := c.QuerySignature(ctx, []uint32{1, 2}, nil); return err }(), func() error { _, err := d.QuerySignature(ctx, []uint32{1, 2}, nil); return err }()},
				{"two inputs", func() error { _, err := c.QueryMany(ctx, []db.QueryInput{{ID: "s01", Text: "x"}}, nil); return err }(), func() error { _, err := d.QueryMany(ctx, []db.QueryInput{{ID: "s01", Text: "x"}}, nil); return err }()},
			} {
				for _, sentinel := range []error{db.ErrEmptyDocument, db.ErrInvalidSignature, db.ErrInvalidDoc} {
					if errors.Is(tc.exp, sentinel) != errors.Is(tc.got, sentinel) {
						t.Errorf("%s: client %v, in process %v (%v)", tc.name, tc.got, tc.exp, sentinel)
					}
				}
				if tc.exp == nil || tc.got == nil {
					t.Errorf("%s: client %v, in process %v: want errors", tc.name, tc.got, tc.exp)
				}
			}
		})
	}
}

// Ensure that a TTL and an expiry time reach the server through PutBatch
// and PutIfNew, over TCP and the socket: the documents are found before
// their expiry and not after it, and a bad time is refused as in process.
func TestClientExpiry(t *testing.T) {
	d := open(t, &db.Options{ExpirySweep: -1})
	for name, c := range server(t, d, nil, "") {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			if _, err := c.PutBatch([]db.Doc{{ID: name + "-ttl", Text: "expires soon, by its ttl"}}, &db.WriteOptions{TTL: 400 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			written := time.Now() // NB: the TTL runs from the server's write, before this
			if _, err := c.PutIfNew(db.Doc{ID: name + "-at", Text: "expires soon, at a time given"}, &db.WriteOptions{ExpireAt: start.Add(400 * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutBatch([]db.Doc{{ID: "x", Text: "never stored"}}, &db.WriteOptions{TTL: time.Second, ExpireAt: start}); !errors.Is(err, db.ErrInvalidOptions) {
				t.Fatalf("both TTL and ExpireAt: %v, want ErrInvalidOptions", err)
			}
			for _, id := range []string{name + "-ttl", name + "-at"} {
				doc, err := c.Get(id)
				if err != nil && time.Since(start) < 400*time.Millisecond {
					t.Fatalf("Get(%s) before its expiry: %v", id, err)
				}
				if err != nil {
					continue
				}
				// The expiry comes back over the wire as the index holds it.
				local, lerr := d.Get(id)
				if lerr == nil && !doc.ExpiresAt.Equal(local.ExpiresAt) {
					t.Fatalf("Get(%s): expires %v over the wire, %v in process", id, doc.ExpiresAt, local.ExpiresAt)
				}
				lo, hi := start.Add(400*time.Millisecond), written.Add(400*time.Millisecond)
				if id == name+"-at" {
					hi = lo // ExpireAt: exactly the time given
				}
				if doc.ExpiresAt.Before(lo.Truncate(time.Millisecond)) || doc.ExpiresAt.After(hi) {
					t.Fatalf("Get(%s) expires at %v, want within [%v, %v]", id, doc.ExpiresAt, lo, hi)
				}
			}
			time.Sleep(time.Until(written.Add(400 * time.Millisecond)))
			for _, id := range []string{name + "-ttl", name + "-at"} {
				if _, err := c.Get(id); !errors.Is(err, db.ErrNotFound) {
					t.Fatalf("Get(%s) after its expiry: %v, want ErrNotFound", id, err)
				}
			}
		})
	}
}

// Ensure that an address of the form HOST:PORT without a scheme is refused
// with ErrInvalidOptions and a message giving the URL meant (it was dialled
// as a socket file of that name), while a socket file of such a name is
// still dialled as a socket.
func TestOpenHostPortWithoutScheme(t *testing.T) {
	_, err := client.Open("127.0.0.1:7072", nil)
	if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), "http://127.0.0.1:7072") {
		t.Fatalf("Open(HOST:PORT): %v, want ErrInvalidOptions naming http://127.0.0.1:7072", err)
	}
	// A file of that name (no server behind it) is tried as a socket.
	t.Chdir(t.TempDir())
	if err := os.WriteFile("localhost:1", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Open("localhost:1", nil); err == nil || errors.Is(err, db.ErrInvalidOptions) {
		t.Fatalf("Open of a file named like HOST:PORT: %v, want a dial error", err)
	}
}

// Ensure that Open reads at most a bound of what an address that is not
// an lshdb server's sends, and says so (an adversarial review's A3: a
// service answering endlessly took 1.88 GB of a command's memory). The
// stand-in answers 200 with an endless JSON-looking stream; the oracle of
// the bound is how much of it the client read.
func TestOpenBoundsAForeignAnswer(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat("[", 64<<10))
		for sent.Load() < 256<<20 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}))
	defer srv.Close()
	_, err := client.Open(srv.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "is over 67108864 bytes") || !strings.Contains(err.Error(), "is "+srv.URL+" an lshdb server?") {
		t.Fatalf("Open of an endless answer: %v, want its bound said", err)
	}
	// NB: what the server wrote into the socket's buffers beyond what the
	// client read is a few MiB at most.
	if n := sent.Load(); n >= 128<<20 {
		t.Fatalf("the server sent %d bytes before the client gave up", n)
	}
	// A real server's parameters within the bound: an index of 60,000
	// stop words, 1.4 MB of them (1 MiB was the bound: a read-through's
	// R3).
	var stop []string
	for i := range 60000 {
		stop = append(stop, fmt.Sprintf("stopword%012d", i))
	}
	d := open(t, &db.Options{Shingle: minhash.ShingleWord, StopWords: stop})
	c := server(t, d, nil, "")["tcp"]
	if got := c.Params().StopWords; len(got) != len(stop) {
		t.Fatalf("the client read %d stop words of %d", len(got), len(stop))
	}
}

// Ensure that ids that are not valid UTF-8 cannot overwrite one another
// through the client (the embedder's review: JSON carried "k\xff" and
// "k\xfe" both as "k\uFFFD", so the second put replaced the first, and
// the caller could not read back either): every write call refuses them
// with ErrInvalidID, nothing is sent, and the stored documents are as
// they were.
func TestClientRefusesNonUTF8IDs(t *testing.T) {
	d := open(t, nil)
	if err := d.Put(db.Doc{ID: "k\uFFFD", Text: "a document whose id is the replacement character"}, nil); err != nil {
		t.Fatal(err)
	}
	c := server(t, d, nil, "")["tcp"]
	seq := func(docs ...db.Doc) iter.Seq2[db.Doc, error] {
		return func(yield func(db.Doc, error) bool) {
			for _, doc := range docs {
				if !yield(doc, nil) {
					return
				}
			}
		}
	}
	for name, write := range map[string]func() error{
		"Put": func() error { return c.Put(db.Doc{ID: "k\xff", Text: "document one text"}, nil) },
		"PutBatch": func() error {
			_, err := c.PutBatch([]db.Doc{{ID: "k\xfe", Text: "document two, unrelated"}}, nil)
			return err
		},
		"PutIfNew":     func() error { _, err := c.PutIfNew(db.Doc{ID: "k\xfd", Text: "document three"}, nil); return err },
		"PutSignature": func() error { return c.PutSignature("k\xfc", make([]uint32, 128), nil) },
		"Load": func() error {
			_, err := c.Load(context.Background(), seq(db.Doc{ID: "fine", Text: "a fine document"}, db.Doc{ID: "k\xfb", Text: "document four"}), nil)
			return err
		},
		"Delete": func() error { return c.Delete("k\xff", nil) },
		"DeleteIDs": func() error {
			_, err := c.DeleteIDs([]string{"fine", "k\xfa"}, &db.WriteOptions{IgnoreMissing: true})
			return err
		},
	} {
		if err := write(); !errors.Is(err, db.ErrInvalidID) {
			t.Errorf("%s of a non-UTF-8 id: %v, want ErrInvalidID", name, err)
		}
	}
	got, err := d.Get("k\uFFFD")
	if err != nil || got.Text != "a document whose id is the replacement character" {
		t.Fatalf("the stored document was touched: %+v %v", got, err)
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Fatalf("count %d %v, want 1: a refused write stored something", n, err)
	}
}

// Ensure that a stream stops at once when its context ends (the
// embedder's review: Pairs went on yielding the ~1,000 pairs already read
// into its buffer, then said "context canceled: context canceled"): the
// first item after the cancel is the error, context.Canceled, said once.
func TestStreamStopsWhenCancelled(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	var docs []db.Doc
	for i := range 200 { // 19,900 pairs at Jaccard 1
		docs = append(docs, db.Doc{ID: fmt.Sprintf("d%03d", i), Text: "one text shared by every document of this test"})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	c := server(t, d, nil, "")["tcp"]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	for _, err := range c.Pairs(ctx, nil) {
		if err != nil {
			if !errors.Is(err, context.Canceled) || strings.Count(err.Error(), "context canceled") != 1 {
				t.Fatalf("after the cancel: %v, want context.Canceled once", err)
			}
			break
		}
		if seen++; seen == 1 {
			cancel()
		} else {
			t.Fatalf("pair %d yielded after the cancel", seen)
		}
	}
	if seen != 1 {
		t.Fatalf("%d pairs, want 1 then the error", seen)
	}
}

// Ensure that a stream whose connection ends mid-answer (a server killed
// during a pairs run) fails with an error that says the answer was cut
// short, after the pairs that came before it, rather than the
// transport's bare "unexpected EOF", or a malformed pair when the cut is
// in the middle of a line (the server writes through a buffer, flushed
// where it fills).
func TestStreamCutShort(t *testing.T) {
	for _, tail := range []string{"", `{"a":"b","b":"c","jac`} {
		t.Run(fmt.Sprintf("tail=%q", tail), func(t *testing.T) { testStreamCutShort(t, tail) })
	}
}

func testStreamCutShort(t *testing.T, tail string) {
	d := open(t, &db.Options{NoSync: true})
	if _, err := d.PutBatch([]db.Doc{{ID: "a", Text: "a text of a few words"}, {ID: "b", Text: "a text of a few words"}}, nil); err != nil {
		t.Fatal(err)
	}
	api := httpapi.Handler(d, nil)
	base, _ := serveTCP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/pairs" {
			api.ServeHTTP(w, r)
			return
		}
		// Two pairs, flushed (chunked: no length), then the connection
		// dropped before the stream's end line.
		io.WriteString(w, `{"a":"a","b":"b","jaccard":1}`+"\n"+`{"a":"b","b":"c","jaccard":0.9}`+"\n"+tail)
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			t.Error(err)
			return
		}
		conn, _, err := rc.Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for _, err := range c.Pairs(context.Background(), nil) {
		if err != nil {
			// NB: ErrConnectionCut too, which a caller retries on: the
			// cut stream matched none of the package's errors (a review).
			if n != 2 || !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "cut short") {
				t.Fatalf("after %d pairs: %v; want the two pairs, then an ErrUnexpectedEOF and ErrConnectionCut that says the answer was cut short", n, err)
			}
			return
		}
		n++
	}
	t.Fatalf("%d pairs and no error: the cut stream was taken for a whole one", n)
}

// Ensure that Close ends a call in flight, as db.DB.Close does: a Pairs
// loop that closed the client after its first pair went on to the
// stream's end (380,000 pairs in a review), with no error. The server
// here sends one pair and then nothing until its request ends; the
// loop must end with db.ErrClosed, and the server's request be cut.
func TestCloseEndsCallsInFlight(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	api := httpapi.Handler(d, nil)
	cut := make(chan struct{})
	base, _ := serveTCP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/pairs" {
			api.ServeHTTP(w, r)
			return
		}
		io.WriteString(w, `{"a":"a","b":"b","jaccard":1}`+"\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Error(err)
			return
		}
		select {
		case <-r.Context().Done():
			close(cut)
		case <-time.After(time.Minute):
		}
	}))
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	start := time.Now()
	for _, err := range c.Pairs(context.Background(), nil) {
		if err != nil {
			if n != 1 || !errors.Is(err, db.ErrClosed) || errors.Is(err, client.ErrConnectionCut) {
				t.Fatalf("after %d pairs: %v; want the pair, then db.ErrClosed", n, err)
			}
			break
		}
		n++
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("%d pairs and no error after Close", n)
	}
	select {
	case <-cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's request was not cut by the client's Close")
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("Pairs ended %v after Close", el)
	}
	if _, err := c.Count(); !errors.Is(err, db.ErrClosed) {
		t.Fatalf("Count after Close: %v, want db.ErrClosed", err)
	}
}

// Ensure that a document too large for a request of its own (under the
// index's MaxDocBytes, over the server's --max-body) is refused before it
// is sent with both db.ErrDocTooLarge and httpapi.ErrBodyTooLarge, so
// that a caller splitting its batches at ErrBodyTooLarge, as
// MaxBodyBytes says, sees it too (it was ErrDocTooLarge alone: a review);
// a batch of small documents over the bound is ErrBodyTooLarge alone.
func TestDocOverTheBodyBound(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	c := server(t, d, &httpapi.Options{MaxBodyBytes: 1500}, "")["tcp"]
	err := c.Put(db.Doc{ID: "big", Text: strings.Repeat("a word ", 300)}, nil)
	if !errors.Is(err, db.ErrDocTooLarge) || !errors.Is(err, httpapi.ErrBodyTooLarge) {
		t.Errorf("one document over the body bound: %v; want ErrDocTooLarge and ErrBodyTooLarge", err)
	}
	var docs []db.Doc
	for i := range 10 {
		docs = append(docs, db.Doc{ID: fmt.Sprint("d", i), Text: strings.Repeat("word ", 40)})
	}
	if _, err := c.PutBatch(docs, nil); !errors.Is(err, httpapi.ErrBodyTooLarge) || errors.Is(err, db.ErrDocTooLarge) {
		t.Errorf("a batch over the body bound: %v; want ErrBodyTooLarge alone", err)
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("%d documents stored, %v; want none", n, err)
	}
	// A batch far over the bound, of documents that each fit, on both
	// transports, again and again: the server answered 413 and cut the
	// body it had not read, and over a Unix socket the client often saw
	// the cut first (ErrConnectionCut, "may have been applied": HT-1).
	for name, c := range server(t, d, &httpapi.Options{MaxBodyBytes: 2 << 20}, "") {
		var big []db.Doc
		for i := range 4 {
			big = append(big, db.Doc{ID: fmt.Sprint("big", i), Text: strings.Repeat(fmt.Sprint("w", i, " "), 1<<20/3)})
		}
		for try := range 10 {
			if _, err := c.PutBatch(big, nil); !errors.Is(err, httpapi.ErrBodyTooLarge) || errors.Is(err, client.ErrConnectionCut) {
				t.Fatalf("%s, try %d: a batch of 4 MiB over a bound of 2 MiB: %v; want ErrBodyTooLarge", name, try, err)
			}
		}
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("%d documents stored, %v; want none", n, err)
	}
}

// Ensure that QueryMany refuses an empty set and an empty signature with
// the errors db.DB.QueryMany gives (ErrEmptyDocument, ErrInvalidSignature),
// as QuerySet and QuerySignature do: the empty list was left out of the
// request, and the server's ErrBadRequest came back (a review). The
// oracle: the embedded index's own QueryMany.
func TestQueryManyEmptySetAndSignature(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	if err := d.Put(db.Doc{ID: "a", Text: "a text of a few words, stored"}, nil); err != nil {
		t.Fatal(err)
	}
	base, _ := serveTCP(t, httpapi.Handler(d, nil))
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []struct {
		in   db.QueryInput
		want error
	}{
		{db.QueryInput{Set: db.Tokens()}, db.ErrEmptyDocument},
		{db.QueryInput{Set: db.Hashes()}, db.ErrEmptyDocument},
		{db.QueryInput{Signature: []uint32{}}, db.ErrInvalidSignature},
	} {
		qs := []db.QueryInput{{ID: "a"}, q.in}
		_, inProcess := d.QueryMany(context.Background(), qs, nil)
		_, got := c.QueryMany(context.Background(), qs, nil)
		var qe *db.QueryError
		if !errors.Is(inProcess, q.want) || !errors.Is(got, q.want) || !errors.As(got, &qe) || qe.Index != 1 || errors.Is(got, httpapi.ErrBadRequest) {
			t.Errorf("QueryMany with %+v: in process %v, through the client %v; want %v for query 1 both ways", q.in, inProcess, got, q.want)
		}
	}
}

// Ensure that a stream whose server is killed before it answers (a
// sorted pairs run sends nothing until its end) says no server answers,
// not only the bare dial error of the transport's retry.
func TestStreamServerGoneBeforeAnswer(t *testing.T) {
	var l net.Listener
	c := cuttingServer(t, &l, func(r *http.Request) bool { return r.URL.Path == "/v1/pairs" }, func() {
		l.Close() // NB: the server is gone: no new connection either
	})
	for _, err := range c.Pairs(context.Background(), nil) {
		if err == nil || !strings.Contains(err.Error(), "no server answers") {
			t.Fatalf("pairs from a server gone before it answered: %v; want an error that says no server answers", err)
		}
		return
	}
	t.Fatal("no pair and no error from a server gone before it answered")
}

// cuttingServer serves a fresh index over TCP, but closes the connection
// of a request that cut selects, unanswered, after calling before; it
// sets *l to its listener and returns a client of it.
func cuttingServer(t *testing.T, l *net.Listener, cut func(*http.Request) bool, before func()) *client.Client {
	t.Helper()
	api := httpapi.Handler(open(t, &db.Options{NoSync: true}), nil)
	var err error
	if *l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cut(r) {
			api.ServeHTTP(w, r)
			return
		}
		before()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})}
	go srv.Serve(*l)
	t.Cleanup(func() { srv.Close() })
	c, err := client.Open("http://"+(*l).Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Ensure that a put whose connection the server closes before it
// answers (a server stopping closes its idle connections; one killed)
// says so, and that the write may or may not have been applied: the
// caller got a bare "connection reset by peer" or "EOF".
func TestPutConnectionClosedBeforeAnswer(t *testing.T) {
	var l net.Listener
	c := cuttingServer(t, &l, func(r *http.Request) bool { return r.Method == http.MethodPost }, func() {})
	_, err := c.PutBatch([]db.Doc{{ID: "a", Text: "a document whose answer never comes"}}, nil)
	if !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "closed the connection before it answered") || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("a put whose connection closed before the answer: %v; want an error that says so", err)
	}
	// A query so cut says it wrote nothing (review O3: it spoke of a
	// write that may have been applied).
	_, err = c.Query(context.Background(), "a query whose answer never comes", nil)
	if !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "closed the connection before it answered") || !strings.Contains(err.Error(), "writes nothing") || strings.Contains(err.Error(), "write may") {
		t.Fatalf("a query whose connection closed before the answer: %v; want an error that says it wrote nothing", err)
	}
	// A repair, a compaction or a purge so cut says it may have run and
	// may run again, not what a document put again does (OP-6).
	for what, call := range map[string]func() error{
		"repair (check --repair)": func() error { _, err := c.Repair(context.Background()); return err },
		"compaction":              func() error { return c.Compact(context.Background()) },
		"purge":                   func() error { _, err := c.Purge(context.Background()); return err },
	} {
		if err := call(); !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "the "+what+" did not answer") || !strings.Contains(err.Error(), "safe to run again") || strings.Contains(err.Error(), "document put again") {
			t.Errorf("a %s whose connection closed before the answer: %v", what, err)
		}
	}
}

// Ensure that a delete and a put-if-new whose connection the server
// closes before it answers say what a repeat of each does, as the README's
// Retries do: a delete sent again fails whole once the first was applied
// unless it ignores missing ids, and put-if-new stores a repeat anew. Both
// were told to write it again, a document put again replacing itself (a
// soak of serve under kill -9, SOAK-2).
func TestWriteCutSaysHowToSendItAgain(t *testing.T) {
	var l net.Listener
	c := cuttingServer(t, &l, func(r *http.Request) bool { return r.Method == http.MethodPost }, func() {})
	_, err := c.DeleteIDs([]string{"a"}, nil)
	if !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "IgnoreMissing") || strings.Contains(err.Error(), "document put again") {
		t.Errorf("a delete whose connection closed before the answer: %v", err)
	}
	_, err = c.PutIfNewBatch(context.Background(), []db.Doc{{ID: "a", Text: "a document whose answer never comes"}}, nil)
	if !errors.Is(err, client.ErrConnectionCut) || !strings.Contains(err.Error(), "ask has which are stored") || strings.Contains(err.Error(), "document put again") {
		t.Errorf("a put-if-new whose connection closed before the answer: %v", err)
	}
}

// Ensure that a call to a server that is gone (over the socket, and over
// TCP) is ErrNoServer, and that a write so refused says it was not
// applied, as nothing was sent; the model: the index holds no document of
// the writes. It said "no server answers (it stopped, or was killed
// before it answered)", which read as maybe applied, with no error to
// match (a soak of serve under kill -9, SOAK-1).
func TestNoServerSaysNothingWasSent(t *testing.T) {
	d := open(t, nil)
	stop, err := httpapi.ServeSocket(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := client.Open(httpapi.SocketPath(d.Dir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpapi.Handler(d, nil)}
	go srv.Serve(l)
	tc, err := client.Open("http://"+l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	for name, c := range map[string]*client.Client{"socket": sc, "tcp": tc} {
		// NB: a read first: over TCP, a write on the kept-alive
		// connection the server closed may have gone out before the
		// client saw it closed (ErrConnectionCut, rightly); a read sent
		// on it is sent again on a new one, which leaves none.
		if _, err := c.Count(); !errors.Is(err, client.ErrNoServer) || strings.Contains(err.Error(), "not applied") {
			t.Errorf("%s: a count with no server: %v; want ErrNoServer", name, err)
		}
		writes := map[string]func() error{
			"put": func() error {
				_, err := c.PutBatch([]db.Doc{{ID: "a", Text: "a document no server takes"}}, nil)
				return err
			},
			"delete": func() error { _, err := c.DeleteIDs([]string{"b"}, nil); return err },
		}
		for what, call := range writes {
			if err := call(); !errors.Is(err, client.ErrNoServer) || !strings.Contains(err.Error(), "was not applied") {
				t.Errorf("%s: a %s with no server: %v; want ErrNoServer saying it was not applied", name, what, err)
			} else if name == "socket" && !strings.Contains(err.Error(), "there is no socket "+httpapi.SocketPath(d.Dir())) {
				// NB: the stopped server removed its socket: said, as a
				// path mistyped is as likely (an inspection review's
				// SH-8: it said only that the server stopped).
				t.Errorf("a %s with no socket: %v; want it to say there is none", what, err)
			}
		}
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("the index holds %d documents (%v) after writes with no server; want 0", n, err)
	}
}

// Ensure that PutBatchContext's (and DeleteIDsContext's) context ends a
// put (a delete) that waits on the server behind a Load (it holds the
// writer lock), and that the server then does not write it once the lock
// is free: an interrupted command's
// batch is not applied after it left; and that the client's other calls
// do not depend on that context. And that OpenTimeout ends Open on a
// server that takes the connection but never answers (one stopped with
// SIGSTOP), with an error that says so.
func TestContextEndsWaitingPut(t *testing.T) {
	d := open(t, nil)
	if err := d.Put(db.Doc{ID: "early", Text: "a document stored before the load, whose delete is interrupted"}, nil); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), func(yield func(db.Doc, error) bool) {
			if yield(db.Doc{ID: "a", Text: "a loaded document, which holds the writer lock"}, nil) {
				close(started)
				<-release
			}
		}, nil)
		loaded <- err
	}()
	<-started
	h := httpapi.Handler(d, nil)
	base, srv := serveTCP(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.OpenContext(ctx, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put, del, pin, pinb := make(chan error, 1), make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() {
		res, err := c.PutIfNewBatch(ctx, []db.Doc{{ID: "late-batch-1", Text: "a first document of a batch whose check was interrupted"}, {ID: "late-batch-2", Text: "a second, as new"}}, nil)
		if len(res) != 0 {
			err = fmt.Errorf("%d results and %w", len(res), err)
		}
		pinb <- err
	}()
	go func() {
		_, err := c.PutBatchContext(ctx, []db.Doc{{ID: "late", Text: "a document whose writer was interrupted"}}, nil)
		put <- err
	}()
	go func() {
		_, err := c.PutIfNewContext(ctx, db.Doc{ID: "late-if-new", Text: "a new document whose check was interrupted"}, nil)
		pin <- err
	}()
	go func() {
		_, err := c.DeleteIDsContext(ctx, []string{"early"}, nil)
		del <- err
	}()
	time.Sleep(100 * time.Millisecond) // NB: the put reaches the server and waits
	cancel()
	select {
	case err := <-put:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the interrupted put: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the put did not return within 10 s of its context's end")
	}
	if err := <-del; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted delete: %v, want context.Canceled", err)
	}
	if err := <-pin; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted put-if-new: %v, want context.Canceled", err)
	}
	if err := <-pinb; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted put-if-new batch: %v, want no result and context.Canceled", err)
	}
	if _, err := c.Count(); err != nil {
		t.Fatalf("Count through the client after its open context ended: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // NB: the server sees the client gone
	close(release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	// NB: Shutdown waits for the handlers still running: the put's, if
	// it went on waiting for the lock.
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get("late"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("Get(late) after the interrupted put: %v, want ErrNotFound (the server wrote it after its client left)", err)
	}
	if _, err := d.Get("late-if-new"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("Get(late-if-new) after the interrupted put-if-new: %v, want ErrNotFound (the server wrote it after its client left)", err)
	}
	for _, id := range []string{"late-batch-1", "late-batch-2"} {
		if _, err := d.Get(id); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("Get(%s) after the interrupted put-if-new batch: %v, want ErrNotFound (the server wrote it after its client left)", id, err)
		}
	}
	if _, err := d.Get("a"); err != nil {
		t.Fatalf("the load: %v", err)
	}
	if _, err := d.Get("early"); err != nil {
		t.Fatalf("Get(early) after the interrupted delete: %v (the server deleted it after its client left)", err)
	}

	// A server that accepts connections and never answers.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			conn, err := mute.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	start := time.Now()
	_, err = client.Open("http://"+mute.Addr().String(), &client.Options{OpenTimeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 200ms") {
		t.Fatalf("Open on a mute server: %v, want a DeadlineExceeded that says so", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Open on a mute server took %v", took)
	}
}

// Ensure that HasIDs asks a server of an earlier lshdb, which answers POST
// /v1/docs/has with method_not_allowed, id by id, with the same answers,
// and that a closed client refuses it as a closed DB does.
func TestHasIDsOfAnEarlierServer(t *testing.T) {
	d := open(t, nil)
	if _, err := d.PutBatch(sampleDocs(t, 20), &db.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	h := httpapi.Handler(d, nil)
	var posts, gets atomic.Int32
	earlier := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/docs/has" {
			if r.Method == "POST" {
				posts.Add(1)
				r = r.Clone(r.Context())
				r.Method = "PATCH" // NB: a method the path does not take, as POST was
			} else {
				gets.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	})
	base, _ := serveTCP(t, earlier)
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := sampleDocs(t, 20)
	ids := []string{docs[0].ID, "absent", docs[19].ID}
	got, err := c.HasIDs(ids)
	want, _ := d.HasIDs(ids)
	if err != nil || !slices.Equal(got, want) || !slices.Equal(want, []bool{true, false, true}) {
		t.Fatalf("HasIDs through an earlier server: %v, %v; in process %v", got, err, want)
	}
	if posts.Load() != 1 || gets.Load() != 3 {
		t.Fatalf("%d POST and %d GET requests, want 1 and then one per id", posts.Load(), gets.Load())
	}
	c.Close()
	if _, err := c.HasIDs(nil); !errors.Is(err, db.ErrClosed) {
		t.Fatalf("HasIDs on a closed client: %v, want ErrClosed", err)
	}
}

// Ensure that Pairs with a limit against a server that does not know the
// parameter (an lshdb before it: "unknown parameter") takes every pair
// and keeps the best in the client, as the call in process orders them.
func TestPairsLimitOldServer(t *testing.T) {
	d := open(t, nil)
	docs := sampleDocs(t, 150)
	if _, err := d.PutBatch(docs, &db.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	h := httpapi.Handler(d, nil)
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/pairs" && r.URL.Query().Has("limit") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"bad_request","message":"lshdb: bad request: unknown parameter \"limit\" (this endpoint takes threshold, memory)"}}`)
			return
		}
		h.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: old}
	go srv.Serve(l)
	defer srv.Close()
	c, err := client.Open("http://"+l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	po := &db.PairsOptions{Threshold: 0.4, Limit: 3}
	got, want := inOrder(t, c.Pairs(context.Background(), po)), inOrder(t, d.Pairs(context.Background(), po))
	if len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Fatalf("an old server, limit 3: %v, in process %v", got, want)
	}
}

// Ensure that the client reads the server's MaxBatch: a PutBatch or
// QueryMany over it is refused with ErrBatchTooLarge and nothing
// changes; ids (HasIDs) are not bounded by it.
func TestMaxBatch(t *testing.T) {
	d := open(t, nil)
	docs := sampleDocs(t, 12)
	if _, err := d.PutBatch(docs[:10], nil); err != nil {
		t.Fatal(err)
	}
	for name, c := range server(t, d, &httpapi.Options{MaxBatch: 3}, "") {
		t.Run(name, func(t *testing.T) {
			if c.MaxBatch() != 3 {
				t.Fatalf("MaxBatch %d, want 3", c.MaxBatch())
			}
			if _, err := c.PutBatch(docs[8:12], nil); !errors.Is(err, httpapi.ErrBatchTooLarge) {
				t.Errorf("a PutBatch of 4: %v, want ErrBatchTooLarge", err)
			}
			qs := make([]db.QueryInput, 4)
			for i := range qs {
				qs[i] = db.QueryInput{ID: docs[i].ID}
			}
			if _, err := c.QueryMany(context.Background(), qs, nil); !errors.Is(err, httpapi.ErrBatchTooLarge) {
				t.Errorf("a QueryMany of 4: %v, want ErrBatchTooLarge", err)
			}
			ids := make([]string, 0, len(docs)+1)
			for _, doc := range docs {
				ids = append(ids, doc.ID)
			}
			ids = append(ids, "never stored")
			got, err := c.HasIDs(ids)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := d.HasIDs(ids)
			same(t, "HasIDs of 13 ids (not bounded by MaxBatch)", got, want)
			if n, _ := d.Count(); n != 10 {
				t.Errorf("%d documents after refused batches, want 10", n)
			}
		})
	}
	// The server refuses what a client that does not check sends.
	srv := httptest.NewServer(httpapi.Handler(d, &httpapi.Options{MaxBatch: 3}))
	defer srv.Close()
	body, _ := json.Marshal(httpapi.PutRequest{Docs: []httpapi.DocJSON{httpapi.DocIn(docs[10]), httpapi.DocIn(docs[11]), httpapi.DocIn(docs[8]), httpapi.DocIn(docs[9])}})
	resp, err := http.Post(srv.URL+"/v1/docs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a put of 4 at MaxBatch 3: status %d, want 413", resp.StatusCode)
	}
	if ok, _ := d.Has(docs[10].ID); ok {
		t.Error("the refused put stored its documents")
	}
}

// pairSeq yields ps.
// Ensure that Load streams signatures into a none index, as in process
// (the client once refused every document that was not a text), and
// that a query by one of them finds the documents stored with it.
func TestLoadSignatures(t *testing.T) {
	d := open(t, &db.Options{Storage: db.StorageNone})
	c := server(t, d, nil, "")["tcp"]
	ctx := context.Background()
	sig := func(seed uint32) []uint32 {
		s := make([]uint32, d.Params().NumPerm)
		for i := range s {
			s[i] = seed*2654435761 + uint32(i)*40503
		}
		return s
	}
	res, err := c.Load(ctx, docSeq(db.Doc{ID: "a", Signature: sig(1)}, db.Doc{ID: "b", Signature: sig(1)}, db.Doc{ID: "c", Signature: sig(2)}), nil)
	if err != nil || res.Stored != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	q, err := c.QuerySignature(ctx, sig(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range q.Matches {
		got = append(got, m.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) || !q.EstimateOnly {
		t.Errorf("query by a's signature: %v (estimate only: %v), want [a b]", got, q.EstimateOnly)
	}
}

func docSeq(docs ...db.Doc) iter.Seq2[db.Doc, error] {
	return func(yield func(db.Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
}

func pairSeq(ps ...db.Pair) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) {
		for _, p := range ps {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// Ensure that a stream read to its end line is read to the answer's end,
// so that its connection is reused: closed at the end line, each stream
// took a connection of its own, and the server's last write could fail
// on a stream the client had read whole, logged and counted as a client
// that went away (review O2).
func TestStreamsReuseTheirConnection(t *testing.T) {
	d := open(t, nil)
	if _, err := d.PutBatch(sampleDocs(t, 50), nil); err != nil {
		t.Fatal(err)
	}
	base, conns := serveCounting(t, &http.Server{Handler: httpapi.Handler(d, nil)})
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Count(); err != nil { // NB: the first connection
		t.Fatal(err)
	}
	for range 3 {
		n := 0
		for _, err := range c.Scan(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		for _, err := range c.Pairs(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n != 50 {
			t.Fatalf("scanned %d documents, want 50", n)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for a count and 6 streams, want 1", n)
	}
}

// Ensure that a request the server cut as it shut down (code shutdown)
// matches httpapi.ErrShutdown and db.ErrClosed, which it was before it
// had a code of its own, and that other codes do not take ErrClosed.
func TestShutdownCodeMatchesClosed(t *testing.T) {
	e := &client.Error{Status: 503, Code: "shutdown", Message: "lshdb: cut by the server's shutdown"}
	if !errors.Is(e, httpapi.ErrShutdown) || !errors.Is(e, db.ErrClosed) {
		t.Fatalf("shutdown: ErrShutdown %v, ErrClosed %v", errors.Is(e, httpapi.ErrShutdown), errors.Is(e, db.ErrClosed))
	}
	if o := (&client.Error{Status: 503, Code: "backend_unavailable"}); errors.Is(o, db.ErrClosed) {
		t.Fatal("backend_unavailable matches db.ErrClosed")
	}
}

// Ensure that a caller's sequence that goes on yielding after it was told
// to stop gets the call's error through the client, as in process: the
// client reads it on a goroutine of its own, where the range panicked and
// took the whole program down (a maintainer review's M1). The oracle:
// the sequence's own error, and the stored documents, unchanged.
func TestClientCallerSeqThatIgnoresStop(t *testing.T) {
	d := open(t, nil)
	if err := d.Put(db.Doc{ID: "kept", Text: "a document stored before the bad load"}, nil); err != nil {
		t.Fatal(err)
	}
	c := server(t, d, nil, "")["unix"]
	stop := errors.New("the sequence's own error")
	rude := func(yield func(db.Doc, error) bool) {
		yield(db.Doc{}, stop)
		for i := range 100 {
			yield(db.Doc{ID: fmt.Sprint("L", i), Text: "a loaded document"}, nil)
		}
	}
	if _, err := c.Load(context.Background(), rude, nil); !errors.Is(err, stop) {
		t.Errorf("Load of a failing sequence: %v, want its error", err)
	}
	rudePairs := func(yield func(db.Pair, error) bool) {
		yield(db.Pair{}, stop)
		for range 100 {
			yield(db.Pair{A: "kept", B: "kept", Jaccard: 1}, nil)
		}
	}
	if _, err := c.ClustersFrom(context.Background(), rudePairs, nil); !errors.Is(err, stop) {
		t.Errorf("ClustersFrom of a failing sequence: %v, want its error", err)
	}
	if n, err := d.Count(); err != nil || n != 1 {
		t.Errorf("after the refused load: %d documents, %v; want 1", n, err)
	}
}

// Ensure that an answer net/http makes itself, in plain text, is told by
// its status: a 4xx is the request's fault (ErrBadRequest, or the code of
// its status), not ErrInternal, which it was (an SRE review's H3); a 5xx
// stays ErrInternal. The oracle: the status each stub answers.
func TestPlainTextAnswersByStatus(t *testing.T) {
	for status, want := range map[int]error{
		http.StatusBadRequest:                  httpapi.ErrBadRequest,
		http.StatusRequestHeaderFieldsTooLarge: httpapi.ErrBadRequest,
		http.StatusRequestEntityTooLarge:       httpapi.ErrBodyTooLarge,
		http.StatusUnauthorized:                httpapi.ErrUnauthorized,
		http.StatusNotFound:                    httpapi.ErrNoRoute,
		http.StatusNotImplemented:              httpapi.ErrBadRequest,
		http.StatusRequestTimeout:              httpapi.ErrRequestTimeout,
		http.StatusServiceUnavailable:          db.ErrClosed,
		http.StatusInternalServerError:         httpapi.ErrInternal,
		http.StatusBadGateway:                  httpapi.ErrInternal,
		http.StatusTooManyRequests:             httpapi.ErrInternal,
	} {
		u, _ := serveTCP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, http.StatusText(status), status)
		}))
		// NB: Open asks the server for its parameters: the first call.
		c, err := client.Open(u, nil)
		if err == nil {
			_, err = c.Count()
			c.Close()
		}
		if !errors.Is(err, want) {
			t.Errorf("a plain-text %d: %v, want %v", status, err, want)
		}
	}
}

// Ensure that a caller's sequence that panics panics on the caller's
// goroutine, as in process, where the caller may recover it: the client
// read it on a goroutine of its own, and the panic took the whole program
// down (a maintainer review's K5). The oracle: the panic's value,
// recovered here.
func TestClientCallerSeqPanics(t *testing.T) {
	d := open(t, nil)
	c := server(t, d, nil, "")["unix"]
	recovered := func(f func()) (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}
	if r := recovered(func() {
		c.Load(context.Background(), func(yield func(db.Doc, error) bool) {
			yield(db.Doc{ID: "a", Text: "a document before the panic"}, nil)
			panic("the sequence's own panic")
		}, nil)
	}); r != "the sequence's own panic" {
		t.Errorf("Load: recovered %v", r)
	}
	if r := recovered(func() {
		c.ClustersFrom(context.Background(), func(yield func(db.Pair, error) bool) {
			panic("the pairs' own panic")
		}, nil)
	}); r != "the pairs' own panic" {
		t.Errorf("ClustersFrom: recovered %v", r)
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Errorf("after the panics: %d documents, %v; want none", n, err)
	}
}

// Ensure that the client's PairGroups, through a server (TCP and the
// socket), yields the groups of db.DB.PairGroups in process: expanded,
// every pair of the client's Pairs once, at its Jaccard, with the stats
// of the run; 30 copies of one text are one group; and that against a
// server without the endpoint (an older lshdb: no_route) it yields each
// pair as a group of its own. The oracle: Pairs through the same client.
func TestPairGroupsThroughServer(t *testing.T) {
	d := open(t, nil)
	docs := sampleDocs(t, 150)
	for i := range 30 {
		docs = append(docs, db.Doc{ID: fmt.Sprintf("copy-%02d", i), Text: "a notice copied into every package, word for word, thirty times"})
	}
	if _, err := d.PutBatch(docs, &db.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	key := func(a, b string) [2]string {
		if b < a {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	expand := func(t *testing.T, seq iter.Seq2[db.PairGroup, error]) (map[[2]string]float64, int, int) {
		got, groups, biggest := map[[2]string]float64{}, 0, 0
		for g, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			groups++
			biggest = max(biggest, len(g.A))
			if g.B == nil {
				for i, a := range g.A {
					for _, b := range g.A[i+1:] {
						got[key(a, b)] = g.Jaccard
					}
				}
				continue
			}
			for _, a := range g.A {
				for _, b := range g.B {
					if _, dup := got[key(a, b)]; dup {
						t.Errorf("the pair %s %s twice", a, b)
					}
					got[key(a, b)] = g.Jaccard
				}
			}
		}
		return got, groups, biggest
	}
	po := func(st *db.PairsStats) *db.PairsOptions { return &db.PairsOptions{Threshold: 0.5, Stats: st} }
	for name, c := range server(t, d, nil, "") {
		t.Run(name, func(t *testing.T) {
			want := map[[2]string]float64{}
			for p, err := range c.Pairs(context.Background(), po(nil)) {
				if err != nil {
					t.Fatal(err)
				}
				want[key(p.A, p.B)] = p.Jaccard
			}
			var st db.PairsStats
			got, groups, biggest := expand(t, c.PairGroups(context.Background(), po(&st)))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the groups hold %d pairs, Pairs %d (or they differ)", len(got), len(want))
			}
			if biggest != 30 || groups >= len(want) || st.Reported != int64(len(want)) {
				t.Errorf("%d groups (the largest of %d) for %d pairs, stats %d reported: want the 30 copies as one group", groups, biggest, len(want), st.Reported)
			}
			for _, err := range c.PairGroups(context.Background(), &db.PairsOptions{Limit: 2}) {
				if !errors.Is(err, db.ErrInvalidOptions) {
					t.Errorf("a limit: %v, want ErrInvalidOptions", err)
				}
			}
		})
	}
	// An older server: no /v1/pairs/groups.
	h := httpapi.Handler(d, nil)
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/pairs/groups" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"no_route","message":"lshdb: no such endpoint: GET /v1/pairs/groups"}}`)
			return
		}
		h.ServeHTTP(w, r)
	})
	url, _ := serveTCP(t, old)
	c, err := client.Open(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, groups, biggest := expand(t, c.PairGroups(context.Background(), po(nil)))
	want, _, _ := expand(t, d.PairGroups(context.Background(), po(nil)))
	if !reflect.DeepEqual(got, want) || groups != len(want) || biggest != 1 {
		t.Errorf("an older server: %d groups (the largest of %d), %d pairs; want %d pairs, each its own group", groups, biggest, len(got), len(want))
	}
}

// Ensure that a salvage scan through a server is refused as the index
// held by another process (db.ErrLocked), what it is to every command
// that must open the index itself, not as invalid options (a usage
// error to lshdb export: a read-through's R5).
func TestSalvageScanIsLocked(t *testing.T) {
	d := open(t, nil)
	for name, c := range server(t, d, nil, "") {
		for _, err := range c.Scan(context.Background(), &db.ScanOptions{Salvage: true}) {
			if !errors.Is(err, db.ErrLocked) || errors.Is(err, db.ErrInvalidOptions) {
				t.Errorf("%s: a salvage scan: %v, want ErrLocked", name, err)
			}
			break
		}
	}
}

// Ensure that an address that is neither a socket's path nor an
// http(s):// URL with a host is refused at the open with
// ErrInvalidOptions, saying what an address is: ftp://x:1 was dialled as
// a socket file and the error blamed a server that stopped, and http://
// failed at the first call with net/http's "no Host in request URL" (a
// bad-input review, B12). A server's HOST:PORT with no scheme was
// refused so already.
func TestOpenRefusesAddresses(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"ftp://x:1", "http:// or https:// (not ftp://)"},
		{"HTTP2://host:80", "(not HTTP2://)"},
		{"HTTP://", "no host"}, // NB: a scheme in capitals is the scheme
		{"http://", "no host"},
		{"https:///path", "no host"},
		{"127.0.0.1:7072", "http://127.0.0.1:7072"},
		{"http://127.0.0.1:7072/v1", "with no path"},
		{"", "no address"}, // NB: not ErrInvalidOptions (an API review, API-12)
	} {
		cl, err := client.OpenContext(context.Background(), c.addr, nil)
		if err == nil {
			cl.Close()
		}
		if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidOptions saying %q", c.addr, err, c.want)
		}
	}
	// A negative timeout was taken as none (API-12).
	for _, o := range []*client.Options{{Timeout: -1}, {OpenTimeout: -time.Second}} {
		if _, err := client.Open("http://127.0.0.1:7072", o); !errors.Is(err, db.ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", *o, err)
		}
	}
}

// Ensure that Load's MaxDeletedPercent reaches the server (as
// max_deleted=P%) and limits the load there as it does in process: 3 of
// 10 is over 20% and leaves the index as it was, 2 is at it; that no
// limit with DeleteAbsent is all, not the server's 50%; and that both
// limits at once are refused before anything is sent. The oracle: the
// index's count and documents after each answer.
func TestLoadMaxDeletedPercent(t *testing.T) {
	d := open(t, nil)
	c := server(t, d, nil, "")["tcp"]
	ctx := context.Background()
	var docs []db.Doc
	for i := range 10 {
		docs = append(docs, db.Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("the %d document of the client's percentage test", i)})
	}
	if _, err := c.Load(ctx, docSeq(docs...), nil); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n, err := d.Count()
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	_, err := c.Load(ctx, docSeq(docs[:7]...), &db.LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 20})
	if !errors.Is(err, db.ErrTooManyDeletes) || !strings.Contains(err.Error(), "limit of 2 (20% of 10 stored)") {
		t.Fatalf("deleting 3 of 10 at 20%%: %v", err)
	}
	if n := count(); n != 10 {
		t.Fatalf("%d documents after a refused load, want 10", n)
	}
	if _, err := c.Load(ctx, docSeq(docs[:8]...), &db.LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 20, MaxDeleted: 2}); !errors.Is(err, db.ErrInvalidOptions) {
		t.Fatalf("both limits: %v, want ErrInvalidOptions", err)
	}
	if res, err := c.Load(ctx, docSeq(docs[:8]...), &db.LoadOptions{DeleteAbsent: true, MaxDeletedPercent: 20}); err != nil || res.Deleted != 2 || count() != 8 {
		t.Fatalf("deleting 2 of 10 at 20%%: %+v %v, %d left", res, err, count())
	}
	if res, err := c.Load(ctx, docSeq(docs[:1]...), &db.LoadOptions{DeleteAbsent: true}); err != nil || res.Deleted != 7 || count() != 1 {
		t.Fatalf("deleting 7 of 8 with no limit: %+v %v, %d left", res, err, count())
	}
	if got, err := d.Get(docs[0].ID); err != nil || got.Text != docs[0].Text {
		t.Fatalf("the document kept: %+v %v", got, err)
	}
}

// Ensure that Info through the client counts the expired documents
// awaiting the sweep as the in-process call does (db.Info.Expired): 3 of
// 5 put with a TTL that has passed, the sweep off.
func TestInfoCountsExpired(t *testing.T) {
	d := open(t, &db.Options{ExpirySweep: -1})
	docs := sampleDocs(t, 5)
	if _, err := d.PutBatch(docs[:3], &db.WriteOptions{TTL: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBatch(docs[3:], nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	for name, c := range server(t, d, nil, "") {
		gi, err := c.Info()
		if err != nil {
			t.Fatal(err)
		}
		if gi.Docs != 5 || gi.Expired != 3 {
			t.Errorf("%s: Info through the client: %d documents, %d expired; want 5, 3 of them expired", name, gi.Docs, gi.Expired)
		}
	}
}

// Ensure that the client's error carries the server's word that the
// request may be sent again unchanged (Retry) and how long to wait first
// (its Retry-After), which a Go service follows as the README says (an
// HTTP review, HT-5): a server waiting for its index answers "locked",
// retry, after 5 s; a document not found is no reason to retry.
func TestErrorSaysRetry(t *testing.T) {
	base, _ := serveTCP(t, httpapi.WaitingHandler(nil, func() string { return "lshdb insert (pid 1)" }))
	_, err := client.Open(base, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "locked" || !ce.Retry || ce.RetryAfter != 5*time.Second || !errors.Is(err, db.ErrLocked) {
		t.Fatalf("Open of a waiting server: %#v (%v); want locked, Retry, RetryAfter 5s", ce, err)
	}
	d := open(t, nil)
	c := server(t, d, nil, "")["tcp"]
	_, err = c.Get("absent")
	if !errors.As(err, &ce) || ce.Retry || ce.RetryAfter != 0 || !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("Get of an absent id: %#v (%v); want not_found, no retry", ce, err)
	}
}

// Ensure that QueryOptions.MaxMatches bounds a call through the client as
// it does in process (the oracle: the embedded index's answer, error or
// not, for each bound): it was ignored, and a call the index refuses
// answered every match (an HTTP review, HT-2).
func TestMaxMatchesAsInProcess(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	var docs []db.Doc
	for i := range 6 {
		docs = append(docs, db.Doc{ID: fmt.Sprint("d", i), Text: "the same long text of many words that every copy holds, number " + strings.Repeat("x", i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	c := server(t, d, nil, "")["tcp"]
	ctx := context.Background()
	qs := []db.QueryInput{{Text: docs[0].Text}, {Text: docs[1].Text}}
	for _, bound := range []int{-1, 0, 2, 5, 6, 11, 12} {
		qo := &db.QueryOptions{Threshold: 0.5, MaxMatches: bound}
		want, werr := d.Query(ctx, docs[0].Text, qo)
		got, gerr := c.Query(ctx, docs[0].Text, qo)
		if errors.Is(werr, db.ErrInvalidOptions) != errors.Is(gerr, db.ErrInvalidOptions) || (werr == nil) != (gerr == nil) {
			t.Fatalf("Query, MaxMatches %d: in process %v, through the client %v", bound, werr, gerr)
		}
		if werr == nil && len(got.Matches) != len(want.Matches) {
			t.Fatalf("Query, MaxMatches %d: %d matches, in process %d", bound, len(got.Matches), len(want.Matches))
		}
		wantMany, werr := d.QueryMany(ctx, qs, qo)
		gotMany, gerr := c.QueryMany(ctx, qs, qo)
		if errors.Is(werr, db.ErrInvalidOptions) != errors.Is(gerr, db.ErrInvalidOptions) || (werr == nil) != (gerr == nil) {
			t.Fatalf("QueryMany, MaxMatches %d: in process %v, through the client %v", bound, werr, gerr)
		}
		if werr == nil && len(gotMany) != len(wantMany) {
			t.Fatalf("QueryMany, MaxMatches %d: %d results, in process %d", bound, len(gotMany), len(wantMany))
		}
	}
}

// Ensure that the client refuses a text that is not UTF-8, as a handle
// with StrictUTF8 does in process (ErrInvalidDoc, nothing stored): sent as
// JSON its bad bytes arrived as U+FFFD, and a server of such an index
// stored an altered text, two Latin-1 texts then matching at 1.0 (a
// read-through's RT8-2). The oracle: the embedded handle's answers and
// its count.
func TestTextNotUTF8IsRefused(t *testing.T) {
	d := open(t, &db.Options{StrictUTF8: true})
	c := server(t, d, nil, "")["tcp"]
	ctx := context.Background()
	latin1 := "caf\xe9 au lait with cr\xe8me br\xfbl\xe9e and more words"
	doc := db.Doc{ID: "l1", Text: latin1}
	for _, tc := range []struct {
		name          string
		client, local func() error
	}{
		{"Put", func() error { return c.Put(doc, nil) }, func() error { return d.Put(doc, nil) }},
		{"PutBatch", func() error { _, err := c.PutBatch([]db.Doc{{ID: "ok", Text: "some text here"}, doc}, nil); return err },
			func() error { _, err := d.PutBatch([]db.Doc{{ID: "ok", Text: "some text here"}, doc}, nil); return err }},
		{"PutIfNew", func() error { _, err := c.PutIfNew(doc, nil); return err }, func() error { _, err := d.PutIfNew(doc, nil); return err }},
		{"Validate", func() error { return c.Validate(doc) }, func() error { return d.Validate(doc) }},
		{"Load", func() error { _, err := c.Load(ctx, docSeq(doc), nil); return err }, func() error { _, err := d.Load(ctx, docSeq(doc), nil); return err }},
		{"Query", func() error { _, err := c.Query(ctx, latin1, nil); return err }, func() error { _, err := d.Query(ctx, latin1, nil); return err }},
		{"QueryMany", func() error { _, err := c.QueryMany(ctx, []db.QueryInput{{Text: latin1}}, nil); return err },
			func() error { _, err := d.QueryMany(ctx, []db.QueryInput{{Text: latin1}}, nil); return err }},
	} {
		if err := tc.local(); !errors.Is(err, db.ErrInvalidDoc) {
			t.Fatalf("%s in process: %v, want ErrInvalidDoc (the oracle)", tc.name, err)
		}
		if err := tc.client(); !errors.Is(err, db.ErrInvalidDoc) || !strings.Contains(err.Error(), "not UTF-8") {
			t.Errorf("%s through the client: %v, want ErrInvalidDoc saying the text is not UTF-8", tc.name, err)
		}
	}
	res, err := c.PutIfNewBatch(ctx, []db.Doc{doc}, nil)
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, db.ErrInvalidDoc) {
		t.Errorf("PutIfNewBatch through the client: %+v, %v; want the document refused, ErrInvalidDoc", res, err)
	}
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("after every refusal the index holds %d documents (%v), want 0", n, err)
	}
}

// Ensure that the client closes an idle connection to a URL before the
// server would (half its idle timeout, which /v1/params gives), so that a
// write is never sent on one just as the server closes it: 5 of 800 puts
// sent a second apart to a server of --idle-timeout 1s failed with their
// fate unknown (an operator's review, SV-1). The oracle is the server's
// own count of the connections it accepted: a write after an idle time
// between the two timeouts comes on a new connection.
func TestIdleConnectionClosedBeforeTheServerDoes(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	const idle = 600 * time.Millisecond
	base, conns := serveCounting(t, &http.Server{Handler: httpapi.Handler(d, &httpapi.Options{IdleTimeout: idle}), IdleTimeout: idle})
	c, err := client.Open(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Put(db.Doc{ID: "a", Text: "the first of two writes"}, nil); err != nil {
		t.Fatal(err)
	}
	before := conns.Load()
	time.Sleep(idle * 3 / 4) // NB: past the client's half, before the server's whole
	if err := c.Put(db.Doc{ID: "b", Text: "the second of two writes"}, nil); err != nil {
		t.Fatal(err)
	}
	if after := conns.Load(); after != before+1 {
		t.Errorf("the write after %v idle came on a connection the server had %v to close: %d connections before it, %d after; want a new one", idle*3/4, idle, before, after)
	}
	// And at once after a call: the connection is kept.
	if err := c.Put(db.Doc{ID: "c", Text: "a third write at once"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != before+1 {
		t.Errorf("a write at once after another took a new connection: %d, want %d", n, before+1)
	}
}

// Ensure that a client reaches a server that a proxy publishes under a
// path (https://lb/lshdb, the prefix stripped: refused as "an address
// with a path", an operator's review SV-6), and one given as its index's
// directory (its socket: dialled as a socket itself, it said no server
// answered, SV-5). The oracle: the index in process, written through
// each and read back.
func TestOpenUnderAPrefixAndByDirectory(t *testing.T) {
	d := open(t, &db.Options{NoSync: true})
	h := httpapi.Handler(d, nil)
	base, _ := serveTCP(t, http.StripPrefix("/lshdb", h))
	c, err := client.Open(base+"/lshdb/", nil)
	if err != nil {
		t.Fatalf("a server under /lshdb: %v", err)
	}
	defer c.Close()
	if err := c.Put(db.Doc{ID: "p", Text: "a document sent through the prefix"}, nil); err != nil {
		t.Fatal(err)
	}
	if doc, err := d.Get("p"); err != nil || doc.Text != "a document sent through the prefix" {
		t.Errorf("the put under the prefix: %+v, %v", doc, err)
	}

	dir, err := os.MkdirTemp("", "lshdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", httpapi.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	cd, err := client.Open(dir, nil)
	if err != nil {
		t.Fatalf("a served index's directory: %v", err)
	}
	defer cd.Close()
	if got, err := cd.Get("p"); err != nil || got.Text != "a document sent through the prefix" {
		t.Errorf("p through the directory's socket: %+v, %v", got, err)
	}
	if _, err := client.Open(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), httpapi.SocketName) {
		t.Errorf("a directory served by nothing: %v, want the error to name its %s", err, httpapi.SocketName)
	}
}
