package client_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
)

// queryer is what the benchmark calls: *db.DB or *client.Client.
type queryer interface {
	QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error)
}

// BenchmarkQueryID measures QueryID in process and through the API over
// the index's Unix socket and over loopback TCP, on the same index
// (the debian sample's first 1,000 documents and their near-copies),
// cycling through the stored ids, from as many goroutines as
// GOMAXPROCS. The socket and TCP figures report their ratio to the
// in-process time measured in the same run (x-inproc).
func BenchmarkQueryID(b *testing.B) {
	dir, err := os.MkdirTemp("", "lshdb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := db.Open(filepath.Join(dir, "idx"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	docs := sampleDocs(b, 1000)
	if _, err := d.PutBatch(docs, &db.WriteOptions{NoSync: true}); err != nil {
		b.Fatal(err)
	}
	h := httpapi.Handler(d, nil)
	sock, err := httpapi.ListenSocket(filepath.Join(dir, "idx", httpapi.SocketName))
	if err != nil {
		b.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range []net.Listener{sock, tcp} {
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		defer srv.Close()
	}
	cs, err := client.Open(filepath.Join(dir, "idx", httpapi.SocketName), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	ct, err := client.Open("http://"+tcp.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ct.Close()
	var inproc float64 // ns/op in process, for the ratios
	for _, bc := range []struct {
		name string
		q    queryer
	}{{"inproc", d}, {"socket", cs}, {"tcp", ct}} {
		b.Run(bc.name, func(b *testing.B) {
			var next atomic.Int64
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := docs[int(next.Add(1))%len(docs)].ID
					if _, err := bc.q.QueryID(ctx, id, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if bc.name == "inproc" {
				inproc = ns
			} else if inproc > 0 {
				b.ReportMetric(ns/inproc, "x-inproc")
			}
		})
	}
}

// BenchmarkPutIfNew measures dedup's write path: 256 new documents (the
// words of the debian sample's texts, shuffled: no two alike) checked and
// stored, synced, one PutIfNew at a time against one PutIfNewBatch, in
// process and through the API over the index's Unix socket, each on an
// index of its own, all four in every iteration. It reports each one's
// documents a second and the batch's speed-up over single calls
// (x-one-inproc, x-one-socket) measured in the same run.
func BenchmarkPutIfNew(b *testing.B) {
	dir := b.TempDir()
	sample := sampleDocs(b, 1000)
	var words []string
	for _, d := range sample {
		words = append(words, strings.Fields(d.Text)...)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	batchOf := func(op int) []db.Doc {
		docs := make([]db.Doc, 256)
		for i := range docs {
			w := make([]string, 40)
			for j := range w {
				w[j] = words[rng.IntN(len(words))]
			}
			docs[i] = db.Doc{ID: fmt.Sprintf("d%d-%d", op, i), Text: strings.Join(w, " ")}
		}
		return docs
	}
	type ifNew interface {
		PutIfNewContext(ctx context.Context, doc db.Doc, wo *db.WriteOptions) (*db.Match, error)
		PutIfNewBatch(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) ([]db.IfNewResult, error)
	}
	open := func(name string, served bool) ifNew {
		d, err := db.Open(filepath.Join(dir, name), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { d.Close() })
		if !served {
			return d
		}
		sock, err := httpapi.ListenSocket(filepath.Join(dir, name, httpapi.SocketName))
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: httpapi.Handler(d, nil)}
		go srv.Serve(sock)
		b.Cleanup(func() { srv.Close() })
		c, err := client.Open(filepath.Join(dir, name, httpapi.SocketName), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	modes := []struct {
		name  string
		d     ifNew
		batch bool
		took  time.Duration
	}{
		{"inproc-one", open("a", false), false, 0}, {"inproc-batch", open("b", false), true, 0},
		{"socket-one", open("c", true), false, 0}, {"socket-batch", open("d", true), true, 0},
	}
	ctx := context.Background()
	n := 0
	for b.Loop() {
		docs := batchOf(n)
		n++
		for i := range modes {
			m := &modes[i]
			start := time.Now()
			if m.batch {
				res, err := m.d.PutIfNewBatch(ctx, docs, nil)
				if err != nil || len(res) != len(docs) {
					b.Fatal(len(res), err)
				}
			} else {
				for _, doc := range docs {
					if _, err := m.d.PutIfNewContext(ctx, doc, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			m.took += time.Since(start)
		}
	}
	for _, m := range modes {
		b.ReportMetric(float64(n*256)/m.took.Seconds(), m.name+"-docs/s")
	}
	b.ReportMetric(float64(modes[0].took)/float64(modes[1].took), "x-one-inproc")
	b.ReportMetric(float64(modes[2].took)/float64(modes[3].took), "x-one-socket")
}
