package db

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkRedis compares the Redis Cluster backend with Pebble on the
// same machine and the same documents (benchDocs: real texts), in one
// run: a bulk load, then queries by text (each document's text with one
// word changed). It reports both throughputs, their ratios (redis-x:
// Redis over Pebble), the round trips (pipelines sent to nodes) per
// query, and the masters' memory per document. The cluster is local
// (3 masters, 3 replicas on loopback): a network adds its round-trip
// time to each of a query's round trips. LSHDB_BENCH_REDIS_DOCS sets the
// number of documents (default 20,000). Run with -benchtime 1x.
func BenchmarkRedis(b *testing.B) {
	all, source := benchDocs()
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("LSHDB_BENCH_REDIS_DOCS")); err == nil && v > 0 {
		n = v
	}
	docs := all[:min(n, len(all))]
	u := redisURL(b)
	queries := mutatedQueries(docs, 1000, rand.New(rand.NewPCG(5, 5)))
	seq := func(yield func(Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
	b.Logf("%d documents (%s)", len(docs), source)
	for b.Loop() {
		dir := b.TempDir()
		p, err := Open(dir, &Options{QueryCacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		r, err := Open(u, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		mem0, err := r.rkv.UsedMemory(ctx)
		if err != nil {
			b.Fatal(err)
		}
		load := func(d *DB) time.Duration {
			start := time.Now()
			if _, err := d.Load(ctx, seq, nil); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		pLoad, rLoad := load(p), load(r)
		mem1, err := r.rkv.UsedMemory(ctx)
		if err != nil {
			b.Fatal(err)
		}
		query := func(d *DB) (p50, p99, total time.Duration) {
			var lat []time.Duration
			start := time.Now()
			for _, q := range queries {
				s := time.Now()
				if _, err := d.Query(ctx, q, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(s))
			}
			total = time.Since(start)
			return percentile(lat, .5), percentile(lat, .99), total
		}
		pipes0 := r.rkv.Pipelines()
		r50, r99, rTotal := query(r)
		trips := float64(r.rkv.Pipelines()-pipes0) / float64(len(queries))
		p50, p99, pTotal := query(p)
		// Both answer alike (the model test proves it; this keeps the
		// benchmark honest).
		for _, q := range queries[:50] {
			a, err1 := p.Query(ctx, q, nil)
			c, err2 := r.Query(ctx, q, nil)
			if err1 != nil || err2 != nil || sameMatches(c.Matches, a.Matches) != nil {
				b.Fatalf("the backends answer %q differently: %v %v", q, err1, err2)
			}
		}
		// A nightly pairs run: on Redis, on Pebble, and on a Pebble copy
		// made by Backup (the time of the copy counted in).
		pairs := func(d *DB) (int, time.Duration) {
			start := time.Now()
			n := 0
			for _, err := range d.Pairs(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			return n, time.Since(start)
		}
		pn, pPairs := pairs(p)
		rn, rPairs := pairs(r)
		copyDir := b.TempDir() + "/copy"
		start := time.Now()
		if err := r.Backup(ctx, copyDir); err != nil {
			b.Fatal(err)
		}
		rBackup := time.Since(start)
		c, err := Open(copyDir, &Options{MustExist: true})
		if err != nil {
			b.Fatal(err)
		}
		cn, cPairs := pairs(c)
		c.Close()
		if pn != rn || pn != cn {
			b.Fatalf("pairs: Pebble %d, Redis %d, Redis's copy %d", pn, rn, cn)
		}
		p.Close()
		r.Close()
		b.ReportMetric(rPairs.Seconds()/pPairs.Seconds(), "redis-pairs-x-pebble")
		b.ReportMetric(rBackup.Seconds(), "redis-backup-s")
		b.ReportMetric((rBackup+cPairs).Seconds()/rPairs.Seconds(), "backup+pairs-x-redis-pairs")
		docsPerSec := func(d time.Duration) float64 { return float64(len(docs)) / d.Seconds() }
		b.ReportMetric(docsPerSec(pLoad), "pebble-load-docs/s")
		b.ReportMetric(docsPerSec(rLoad), "redis-load-docs/s")
		b.ReportMetric(docsPerSec(rLoad)/docsPerSec(pLoad), "redis-x-load")
		qps := func(d time.Duration) float64 { return float64(len(queries)) / d.Seconds() }
		b.ReportMetric(qps(pTotal), "pebble-queries/s")
		b.ReportMetric(qps(rTotal), "redis-queries/s")
		b.ReportMetric(qps(rTotal)/qps(pTotal), "redis-x-queries")
		b.ReportMetric(float64(p50.Microseconds()), "pebble-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), "pebble-p99-µs")
		b.ReportMetric(float64(r50.Microseconds()), "redis-p50-µs")
		b.ReportMetric(float64(r99.Microseconds()), "redis-p99-µs")
		b.ReportMetric(trips, "round-trips/query")
		b.ReportMetric(float64(mem1-mem0)/float64(len(docs)), "redis-bytes/doc")
	}
}
