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
	"strconv"
	"strings"
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
// debian-descriptions corpus (all 63,956 documents; the sample's 1,277
// when the shared corpora are absent). Two phases, each in process and
// over the socket in the same run:
//
//   - saturation: the 16 clients issue operations back to back (b.N in
//     all); it reports operations per second and the socket's share of
//     in process (x-inproc-ops). Latency here is mostly queueing: with
//     16 clients on 2 cores, the mean is 16 / throughput whatever the
//     transport.
//   - latency: the same 16 clients at a fixed offered load, a quarter and
//     then half of the socket's saturation throughput of this run, for
//     10 s each (LSHDB_MIXED_SECONDS overrides, 60 for the run;
//     LSHDB_MIXED_RATE=R1,R2,… sets the offered loads in operations per
//     second instead, so that runs compare at the same load). Operation i
//     is due at start + i/rate and its latency is measured from when it
//     was due, so a stall counts for every operation it delays (no
//     coordinated omission). It reports p50 and p99 of all operations, of
//     queries and of puts, and of how late an idle client woke for its
//     operation (wake-p50/p99: the timer's and the scheduler's lateness,
//     ~0.3-0.5 ms at the median on a Linux VM, is in every latency of both
//     transports).
//
// Every run starts from the same state: a copy of the loaded index of its
// own, opened afresh (on one index, a later run inherited the earlier
// runs' puts and the compactions they owed). Every put is acknowledged
// synced; after each run the benchmark checks that each one is readable
// and that the copy checks clean. The fixed-load
// runs also report Pebble's write stalls during the run (write-stalls,
// stalled-ms): while one lasts, every put waits, and so do the clients
// that issued them.
//
//	go test -run '^$' -bench Mixed -benchtime 20000x ./db/client/
//	LSHDB_MIXED_SECONDS=60 go test -run '^$' -bench Mixed -benchtime 60s ./db/client/
//
// LSHDB_MIXED_LOG=DIR writes each fixed-load run's operations to
// DIR/TRANSPORT-LOAD.tsv (see mixLogDir), to find what the slowest ones
// waited for.
func BenchmarkMixed(b *testing.B) {
	var docs []db.Doc
	shared, err := corpus.Shared("debian-descriptions", 0)
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
	// NB: LSHDB_BENCH_MEMTABLE_MB sets Options.MemTableSize.
	var opts db.Options
	if v := os.Getenv("LSHDB_BENCH_MEMTABLE_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("LSHDB_BENCH_MEMTABLE_MB=%q is not a positive number of MiB", v)
		}
		opts.MemTableSize = int64(n) << 20
	}
	base, err := db.Open(filepath.Join(dir, "base"), &opts)
	if err != nil {
		b.Fatal(err)
	}
	defer base.Close()
	seq := iter.Seq2[db.Doc, error](func(yield func(db.Doc, error) bool) {
		for _, doc := range docs {
			if !yield(doc, nil) {
				return
			}
		}
	})
	if _, err := base.Load(context.Background(), seq, &db.LoadOptions{SkipEmpty: true}); err != nil {
		b.Fatal(err)
	}
	mx := &mix{docs: docs}
	// phase runs one measurement on a copy of the loaded index of its own
	// (a backup: hard links, made in an instant), opened afresh, in
	// process or through lshdb serve's API on the copy's Unix socket, and
	// then checks that no acknowledged put was lost and that the copy
	// checks clean.
	//
	// NB: every phase starts from the same index. On one index, each
	// phase inherited the puts of those before it and the compactions they
	// owed: the socket's saturation run met 100,000 more documents than
	// the in-process one, and the fixed-load runs ran behind both.
	phases := 0
	phase := func(b *testing.B, transport string, run func(mixer, *db.DB) (mixStats, error)) mixStats {
		phases++
		path := filepath.Join(dir, fmt.Sprintf("phase-%d", phases))
		if err := base.Backup(context.Background(), path); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(path)
		d, err := db.Open(path, &opts)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		var m mixer = d
		if transport == "socket" {
			sock, err := httpapi.ListenSocket(filepath.Join(path, httpapi.SocketName))
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: httpapi.Handler(d, nil)}
			go srv.Serve(sock)
			defer srv.Close()
			c, err := client.Open(filepath.Join(path, httpapi.SocketName), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m = c
		}
		mx.acked = mx.acked[:0]
		st, err := run(m, d)
		if err != nil {
			b.Fatal(err)
		}
		// No acknowledged put is lost.
		if len(mx.acked) == 0 && st.ops >= 10 {
			b.Fatal("no put was acknowledged")
		}
		for _, id := range mx.acked {
			if ok, err := d.Has(id); err != nil || !ok {
				b.Fatalf("the acknowledged put %s is not readable: %v", id, err)
			}
		}
		rep, err := d.Check(context.Background())
		if err != nil || !rep.OK() {
			b.Fatalf("check: %+v %v", rep, err)
		}
		return st
	}
	transports := []string{"inproc", "socket"}
	var inproc, socket float64 // saturation ops/s
	for _, transport := range transports {
		b.Run("saturation/"+transport, func(b *testing.B) {
			st := phase(b, transport, func(m mixer, _ *db.DB) (mixStats, error) {
				return mx.run(transport, m, int64(b.N), 0)
			})
			b.ReportMetric(st.opsPerSec, "ops/s")
			b.ReportMetric(st.p50, "p50-µs")
			b.ReportMetric(st.p99, "p99-µs")
			if transport == "inproc" {
				inproc = st.opsPerSec
			} else {
				socket = st.opsPerSec
				if inproc > 0 {
					b.ReportMetric(st.opsPerSec/inproc, "x-inproc-ops")
				}
			}
		})
	}
	seconds := 10.0
	if v := os.Getenv("LSHDB_MIXED_SECONDS"); v != "" {
		if seconds, err = strconv.ParseFloat(v, 64); err != nil || seconds <= 0 {
			b.Fatalf("LSHDB_MIXED_SECONDS=%q is not a positive number of seconds", v)
		}
	}
	type offered struct {
		name string
		rate float64
	}
	var loads []offered
	if v := os.Getenv("LSHDB_MIXED_RATE"); v != "" {
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(f, 64)
			if err != nil || r <= 0 {
				b.Fatalf("LSHDB_MIXED_RATE=%q: %q is not a positive rate", v, f)
			}
			loads = append(loads, offered{fmt.Sprintf("latency-%.0fops", r), r})
		}
	} else if socket > 0 {
		for _, load := range []float64{0.25, 0.5} {
			loads = append(loads, offered{fmt.Sprintf("latency-%.0f%%", 100*load), socket * load})
		}
	}
	for _, load := range loads {
		rate := load.rate
		for _, transport := range transports {
			var st *mixStats
			b.Run(load.name+"/"+transport, func(b *testing.B) {
				// NB: one fixed-length run whatever b.N (the framework
				// calls with b.N = 1 first): the offered load, not the
				// framework, sets how many operations run.
				if st == nil {
					s := phase(b, transport, func(m mixer, d *db.DB) (mixStats, error) {
						m0, err := d.Metrics()
						if err != nil {
							return mixStats{}, err
						}
						s, err := mx.run(fmt.Sprintf("%s-%s", transport, load.name), m, int64(rate*seconds), rate)
						if err != nil {
							return mixStats{}, err
						}
						m1, err := d.Metrics()
						if err != nil {
							return mixStats{}, err
						}
						s.stalls, s.stallMs = float64(m1.WriteStalls-m0.WriteStalls), float64((m1.WriteStallTime-m0.WriteStallTime).Microseconds())/1e3
						return s, nil
					})
					st = &s
				}
				b.ReportMetric(rate, "offered-ops/s")
				b.ReportMetric(st.opsPerSec, "ops/s")
				b.ReportMetric(st.p50, "p50-µs")
				b.ReportMetric(st.p99, "p99-µs")
				b.ReportMetric(st.queryP50, "query-p50-µs")
				b.ReportMetric(st.queryP99, "query-p99-µs")
				b.ReportMetric(st.putP50, "put-p50-µs")
				b.ReportMetric(st.putP99, "put-p99-µs")
				b.ReportMetric(st.wakeP50, "wake-p50-µs")
				b.ReportMetric(st.wakeP99, "wake-p99-µs")
				b.ReportMetric(st.stalls, "write-stalls")
				b.ReportMetric(st.stallMs, "stalled-ms")
			})
		}
	}
}

// mix runs the benchmark's operations and remembers every acknowledged
// put.
type mix struct {
	docs  []db.Doc
	mu    sync.Mutex
	acked []string
}

// mixStats are one run's figures; latencies in µs.
type mixStats struct {
	ops                                          int // operations run
	opsPerSec                                    float64
	p50, p99, queryP50, queryP99, putP50, putP99 float64
	wakeP50, wakeP99                             float64 // rate > 0: how late idle clients woke
	stalls, stallMs                              float64 // Pebble's write stalls during the run, and their time
}

// run issues n operations from 16 clients: every tenth a synced put of a
// new id (named after tag), the others queries by id. With rate 0 the
// clients go back to back; otherwise operation i is due at start + i/rate,
// and its latency counts from then.
func (mx *mix) run(tag string, m mixer, n int64, rate float64) (mixStats, error) {
	const clients = 16
	var next atomic.Int64
	var mu sync.Mutex
	var all, queries, puts, wakes []time.Duration
	var log []opLog
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine, mq, mp, mw []time.Duration
			var ml []opLog
			ctx := context.Background()
			for {
				i := next.Add(1)
				if i > n {
					break
				}
				t0 := time.Now()
				if rate > 0 {
					t0 = start.Add(time.Duration(float64(i-1) / rate * float64(time.Second)))
					if wait := time.Until(t0); wait > 0 {
						// NB: only a client that was idle: one that took
						// the operation late is the backlog, not the timer.
						time.Sleep(wait)
						mw = append(mw, time.Since(t0))
					}
				}
				var err error
				put := i%10 == 0
				if put {
					id := fmt.Sprintf("%s-put-%d", tag, i)
					if err = m.Put(db.Doc{ID: id, Text: mx.docs[int(i)%len(mx.docs)].Text + " (a new version)"}, nil); err == nil {
						mx.mu.Lock()
						mx.acked = append(mx.acked, id)
						mx.mu.Unlock()
					}
				} else {
					_, err = m.QueryID(ctx, mx.docs[int(i)%len(mx.docs)].ID, nil)
				}
				dt := time.Since(t0)
				if mixLogDir != "" {
					ml = append(ml, opLog{due: t0.Sub(start), lat: dt, put: put})
				}
				mine = append(mine, dt)
				if put {
					mp = append(mp, dt)
				} else {
					mq = append(mq, dt)
				}
				if err != nil {
					failed.Store(err)
					break
				}
			}
			mu.Lock()
			all, queries, puts, wakes = append(all, mine...), append(queries, mq...), append(puts, mp...), append(wakes, mw...)
			log = append(log, ml...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return mixStats{}, err
	}
	if mixLogDir != "" && rate > 0 {
		if err := writeOpLog(filepath.Join(mixLogDir, tag+".tsv"), start, log); err != nil {
			return mixStats{}, err
		}
	}
	q := func(lat []time.Duration, p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		slices.Sort(lat)
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds())
	}
	return mixStats{
		ops:       len(all),
		opsPerSec: float64(len(all)) / elapsed.Seconds(),
		p50:       q(all, 0.5), p99: q(all, 0.99),
		queryP50: q(queries, 0.5), queryP99: q(queries, 0.99),
		putP50: q(puts, 0.5), putP99: q(puts, 0.99),
		wakeP50: q(wakes, 0.5), wakeP99: q(wakes, 0.99),
	}, nil
}

// mixLogDir, from LSHDB_MIXED_LOG, is where each fixed-load run writes
// one line per operation, to find when the slowest ones happened (and
// lay them beside GODEBUG=gctrace=1, whose times count from the
// process's start, Pebble's events, or another process's clock): due (ms
// since the run's start), latency (µs), q or p. The first line says when
// the run started, in ms since the process started and in Unix time.
var mixLogDir = os.Getenv("LSHDB_MIXED_LOG")

// processStart is about when the process started (its first package
// initialisations).
var processStart = time.Now()

type opLog struct {
	due, lat time.Duration
	put      bool
}

func writeOpLog(path string, start time.Time, log []opLog) error {
	slices.SortFunc(log, func(a, b opLog) int { return int(a.due - b.due) })
	var b strings.Builder
	fmt.Fprintf(&b, "# run started %.3f ms after the process, at Unix time %d ms\n", float64(start.Sub(processStart).Microseconds())/1e3, start.UnixMilli())
	for _, o := range log {
		kind := "q"
		if o.put {
			kind = "p"
		}
		fmt.Fprintf(&b, "%.3f\t%d\t%s\n", float64(o.due.Microseconds())/1e3, o.lat.Microseconds(), kind)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
