package client_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/corpus"
)

// mixer is what the mixed benchmark calls.
type mixer interface {
	QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error)
	Put(d db.Doc, wo *db.WriteOptions) error
}

// BenchmarkMixed runs the many-clients mix: 16 concurrent
// clients, 90% queries by id and 10% synced puts, in process and through
// lshdb serve's API over the index's Unix socket, on the shared
// debian-descriptions corpus (20,000 documents; the sample's 1,277 when
// the shared corpora are absent). It reports operations per second, p50
// and p99 latency, and the socket's throughput as a share of in process
// measured in the same run. Every put is acknowledged synced; the
// benchmark checks afterwards that each one is readable.
//
//	go test -run '^$' -bench Mixed -benchtime 60s ./db/client/
func BenchmarkMixed(b *testing.B) {
	var docs []db.Doc
	shared, err := corpus.Shared("debian-descriptions", 20000)
	switch {
	case err == nil:
		for _, d := range shared {
			docs = append(docs, db.Doc{ID: d.ID, Text: d.Text})
		}
	case errors.Is(err, corpus.ErrNoShared):
		docs = sampleDocs(b, 1277)
	default:
		b.Fatal(err)
	}
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
	seq := iter.Seq2[db.Doc, error](func(yield func(db.Doc, error) bool) {
		for _, doc := range docs {
			if !yield(doc, nil) {
				return
			}
		}
	})
	if _, err := d.Load(context.Background(), seq, &db.LoadOptions{SkipEmpty: true}); err != nil {
		b.Fatal(err)
	}
	sock, err := httpapi.ListenSocket(filepath.Join(dir, "idx", httpapi.SocketName))
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: httpapi.Handler(d, nil)}
	go srv.Serve(sock)
	defer srv.Close()
	c, err := client.Open(filepath.Join(dir, "idx", httpapi.SocketName), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var inproc float64 // ops/s in process
	var ackMu sync.Mutex
	var acked []string // every acknowledged put
	for _, bc := range []struct {
		name string
		m    mixer
	}{{"inproc", d}, {"socket", c}} {
		b.Run(bc.name, func(b *testing.B) {
			const clients = 16
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			var failed atomic.Value
			var wg sync.WaitGroup
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					ctx := context.Background()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							break
						}
						t0 := time.Now()
						var err error
						if i%10 == 0 {
							id := fmt.Sprintf("%s-put-%d", bc.name, i)
							if err = bc.m.Put(db.Doc{ID: id, Text: docs[int(i)%len(docs)].Text + " (a new version)"}, nil); err == nil {
								ackMu.Lock()
								acked = append(acked, id)
								ackMu.Unlock()
							}
						} else {
							_, err = bc.m.QueryID(ctx, docs[int(i)%len(docs)].ID, nil)
						}
						mine = append(mine, time.Since(t0))
						if err != nil {
							failed.Store(err)
							break
						}
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			ops := float64(len(lat)) / elapsed.Seconds()
			b.ReportMetric(ops, "ops/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			if bc.name == "inproc" {
				inproc = ops
			} else if inproc > 0 {
				b.ReportMetric(ops/inproc, "x-inproc-ops")
			}
		})
	}
	// No acknowledged put is lost.
	if len(acked) == 0 {
		b.Fatal("no put was acknowledged")
	}
	for _, id := range acked {
		if ok, err := d.Has(id); err != nil || !ok {
			b.Fatalf("the acknowledged put %s is not readable: %v", id, err)
		}
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		b.Fatalf("check: %+v %v", rep, err)
	}
}
