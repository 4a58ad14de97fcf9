package client_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

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
