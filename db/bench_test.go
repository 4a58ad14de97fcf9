package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

// benchDocs returns ≥ 100,000 real documents: debian-descriptions plus
// gcide from ../shared/corpora when present, otherwise the testdata sample
// multiplied by word-level mutations.
var benchDocs = sync.OnceValues(func() ([]Doc, string) {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	var docs []Doc
	add := func(id, text string) {
		if set, _ := h.Document(nil, nil, text); len(set) > 0 { // the DB refuses empty documents
			docs = append(docs, Doc{ID: id, Text: text})
		}
	}
	a, errA := corpus.Shared("debian-descriptions", 0)
	g, errG := corpus.Shared("gcide", 100000-len(a)+1000)
	if errA == nil && errG == nil {
		for _, d := range a {
			add("debian/"+d.ID, d.Text)
		}
		for _, d := range g {
			add("gcide/"+d.ID, d.Text)
		}
		return docs, "debian-descriptions+gcide"
	}
	p, _ := corpus.Testdata("corpora/debian-sample/docs.jsonl")
	sample, err := corpus.Load(p, 0)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; len(docs) < 100000; i++ {
		d := sample[i%len(sample)]
		w := strings.Fields(d.Text)
		for range 1 + rng.IntN(len(w)/4+1) {
			w[rng.IntN(len(w))] = w[rng.IntN(len(w))]
		}
		add(fmt.Sprintf("%s#%d", d.ID, i), strings.Join(w, " "))
	}
	return docs, "generated-from-testdata"
})

// memIndex is the in-memory baseline: the same shingling, signatures and
// banding in Go maps, and the same exact verification.
type memIndex struct {
	h       *minhash.Hasher
	p       bands.Params
	ids     []string
	sets    [][]uint64
	sigs    [][]uint32
	buckets []map[uint64][]int32
}

func newMemIndex(docs []Doc, p bands.Params) *memIndex {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	m := &memIndex{h: h, p: p, buckets: make([]map[uint64][]int32, p.B)}
	for i := range m.buckets {
		m.buckets[i] = map[uint64][]int32{}
	}
	for i, d := range docs {
		set, sig := h.Document(nil, nil, d.Text)
		keys, _ := bands.AppendKeys(nil, sig, p)
		for i := range keys {
			keys[i] = codec.BucketOf(keys[i]) // as the index keys its buckets
		}
		for band, k := range keys {
			m.buckets[band][k] = append(m.buckets[band][k], int32(i))
		}
		m.ids, m.sets, m.sigs = append(m.ids, d.ID), append(m.sets, set), append(m.sigs, sig)
	}
	return m
}

func (m *memIndex) query(text string, t float64) []Match {
	set, sig := m.h.Document(nil, nil, text)
	keys, _ := bands.AppendKeys(nil, sig, m.p)
	for i := range keys {
		keys[i] = codec.BucketOf(keys[i]) // as the index keys its buckets
	}
	shared := map[int32]int{}
	for band, k := range keys {
		for _, i := range m.buckets[band][k] {
			shared[i]++
		}
	}
	var out []Match
	for i, n := range shared {
		if j := minhash.Jaccard(set, m.sets[i]); j >= t {
			out = append(out, Match{ID: m.ids[i], Jaccard: j, Estimate: minhash.Estimate(sig, m.sigs[i]), Bands: n})
		}
	}
	return out
}

// benchIndex is a built database over benchDocs, shared by the benchmarks.
var benchIndex = sync.OnceValues(func() (*DB, error) {
	docs, _ := benchDocs()
	cacheSize, err := benchCacheSize()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir()
	if err != nil {
		return nil, err
	}
	d, err := Open(dir, &Options{CacheSize: cacheSize})
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(docs); i += 1000 {
		if _, err := d.PutBatch(docs[i:min(i+1000, len(docs))], nil); err != nil {
			return nil, err
		}
	}
	// Steady state: everything compacted (operands merged into their base
	// lists), so that the measurements do not race background work.
	if err := d.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return nil, err
	}
	return d, nil
})

func tempDir() (string, error) { return os.MkdirTemp("", "lshdb-bench-") }

// mutatedQueries returns n query texts: documents of docs picked at
// random, each with one word replaced (a near-duplicate of a stored one).
func mutatedQueries(docs []Doc, n int, rng *rand.Rand) []string {
	queries := make([]string, n)
	for i := range queries {
		w := strings.Fields(docs[rng.IntN(len(docs))].Text)
		if len(w) > 3 {
			w[rng.IntN(len(w))] = "mutated"
		}
		queries[i] = strings.Join(w, " ")
	}
	return queries
}

func percentile(ds []time.Duration, p float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// BenchmarkQuery measures query-by-text latency on ≥ 100,000 documents,
// each op one query against lshdb and the same query against the in-memory
// baseline, so that the ratios compare two measurements of the same run.
// Target: p50 and p99 ≤ 1.5× the baseline (warm cache: the 2,000 queries'
// posting lists and candidates, ~40 MB, fit the default query cache).
func BenchmarkQuery(b *testing.B) { benchQuery(b, true) }

// BenchmarkQueryUncached is BenchmarkQuery without the query cache
// (Options.QueryCacheSize < 0): what every query costs whose buckets and
// candidates are cold, with their blocks in the block cache.
func BenchmarkQueryUncached(b *testing.B) { benchQuery(b, false) }

func benchQuery(b *testing.B, cached bool) {
	docs, source := benchDocs()
	d, err := benchIndex()
	if err != nil {
		b.Fatal(err)
	}
	if !cached {
		c := d.qcache
		d.qcache = nil
		defer func() { d.qcache = c }()
	}
	mem := newMemIndex(docs, d.Params().Bands)
	queries := mutatedQueries(docs, 2000, rand.New(rand.NewPCG(2, 2)))
	for range 2 { // warm the cache
		for _, q := range queries {
			d.Query(context.Background(), q, nil)
		}
	}
	b.Logf("%d documents (%s)", len(docs), source)
	var lat, base []time.Duration
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		// NB: the two run in alternating order, so that neither always
		// finds the caches warmed by the other.
		var res *QueryResult
		var want []Match
		var err error
		runDB := func() {
			start := time.Now()
			res, err = d.Query(context.Background(), q, nil)
			lat = append(lat, time.Since(start))
		}
		runMem := func() {
			start := time.Now()
			want = mem.query(q, d.Params().Threshold)
			base = append(base, time.Since(start))
		}
		if i%2 == 0 {
			runDB()
			runMem()
		} else {
			runMem()
			runDB()
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Matches) != len(want) {
			b.Fatalf("lshdb found %d matches, the baseline %d", len(res.Matches), len(want))
		}
	}
	p50, p99, b50, b99 := percentile(lat, .5), percentile(lat, .99), percentile(base, .5), percentile(base, .99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(b50.Microseconds()), "base-p50-µs")
	b.ReportMetric(float64(b99.Microseconds()), "base-p99-µs")
	b.ReportMetric(float64(p50)/float64(b50), "p50-x-base")
	b.ReportMetric(float64(p99)/float64(b99), "p99-x-base")
}

// BenchmarkPut measures synced batches of 1,000 new documents into a
// growing database; each op first computes the same batch's signatures
// alone (the signature-only throughput, same parallelism) and then puts
// it, so the ratio compares two measurements of the same run. Target: put
// throughput ≥ 70% of signature-only (issue 13; x-sig ≤ 1.43), not met:
// x-sig 3.5-3.9 over 300 batches at stop 27, 2.78-2.93 since level 0
// stops writes later (l0StopWrites; stalled-ms is the time writes waited
// for compactions), 2.49-2.57 since a batch's posting operands are a
// sorted slice (postingOps). The bound of the present design: with the
// posting operands left out of the batch (an experiment, not kept: the
// index then answers nothing), 300 batches ran at 100,500-105,600
// documents/s against 43,600-44,300 with them, x-sig 1.41-1.43 against
// 2.52-2.58, in one session: the target needs posting maintenance off the
// synced write and nearly free (an in-memory delta of postings, flushed
// as tables, rebuilt from the records after a crash: estimated x-sig
// 1.6-1.7 with its own upkeep, so not built).
//
// Stop 38 measured the same experiment on the records (text format 5)
// too, two runs each: everything 2.37-2.39 x-sig (35,100-35,200
// documents/s), the postings left out 1.57-1.60 (74,500-78,600), the
// postings and the records left out, ids and counters only, 1.36-1.37
// (102,600-107,900). Records and ids alone are past the target, so no
// posting layout meets it in this design. Before that stop's cuts of the
// write lock's own work (the posting sort by radix, the query cache's
// change records in slots), the same two experiments gave 1.98 and
// 1.86-1.93: the lock's hold, not Pebble, was most of a light write.
//
// NB: every id is new (the op number is part of it): until stop 27 the
// ids repeated after the corpus's ~100 batches, so a longer run measured
// upserts (BenchmarkPutUpsert) without saying so.
//
// NB: the in-loop signature pass runs while the previous batches' flushes
// and compactions run in the background, which slows it: on 2 cores it
// ran at 55,000-68,000 documents/s with Pebble's 4 MiB memtables,
// 91,000 with the default 8 MiB (DefaultMemTableSize), 88,000-103,000
// with 16 MiB and 140,000-175,000 with 64 MiB ones (whose compactions
// are fewer). quiet-sig-docs/s is the same pass over the first ten
// batches before anything is written, and x-quiet-sig the put time
// against it: the ratio without that interference. Run it long enough
// for the index to outgrow its memtables (-benchtime 300x: 300,000
// documents); LSHDB_BENCH_MEMTABLE_MB sets Options.MemTableSize.
func BenchmarkPut(b *testing.B) { benchPut(b, false, false) }

// BenchmarkPutPipelined is BenchmarkPut written as lshdb insert writes:
// each batch prepared (PrepareBatch) while the one before is written
// (PutPrepared, on another goroutine), the writes in order. It has no
// in-loop signature pass (run beside a write, it would give the write
// time no one counts): x-quiet-sig is its ratio, against the same
// signature pass over ten batches before anything is written; compare it
// with BenchmarkPut's x-quiet-sig in the same run.
func BenchmarkPutPipelined(b *testing.B) { benchPut(b, false, true) }

// BenchmarkPutUpsert is BenchmarkPut with every document already stored:
// the database first holds the whole corpus, and each op replaces 1,000
// stored documents (the same ids, one word of each text changed), which
// reads each one's old record to withdraw its postings. As the replaced
// records outgrow the block cache those reads dominate: 12,800-15,300
// documents/s over 100 batches with 16 MiB memtables (5,300-6,000 with 4
// MiB), 4,400-4,500 over 300 with 4 or 8 MiB alike. With level 0
// stopping writes at 40 sublevels (l0StopWrites), 18,600-19,600 over 100
// batches with 8 MiB, against 6,900-7,300 at Pebble's 12 in the same
// session, where 10.4 s of the run were write stalls.
func BenchmarkPutUpsert(b *testing.B) { benchPut(b, true, false) }

func benchPut(b *testing.B, upsert, pipelined bool) {
	docs, _ := benchDocs()
	dir := b.TempDir()
	d, err := Open(dir, &Options{MemTableSize: benchMemTableSize(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var quiet time.Duration
	quietN := 0
	for i := 0; i+1000 <= len(docs) && quietN < 10_000; i += 1000 {
		start := time.Now()
		if _, _, err := d.prepareAll(docs[i:i+1000], nil, 1000, false, false); err != nil {
			b.Fatal(err)
		}
		quiet += time.Since(start)
		quietN += 1000
	}
	rng := rand.New(rand.NewPCG(3, 3))
	if upsert {
		for i := 0; i < len(docs); i += 1000 {
			if _, err := d.PutBatch(docs[i:min(i+1000, len(docs))], &WriteOptions{NoSync: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var sig, put time.Duration
	var inflight chan error // the write of the batch before (pipelined)
	n, op := 0, 0
	for b.Loop() {
		var batch []Doc
		if upsert {
			at := rng.IntN(len(docs) - 1000)
			batch = slices.Clone(docs[at : at+1000])
			for j := range batch {
				w := strings.Fields(batch[j].Text)
				w[rng.IntN(len(w))] = fmt.Sprintf("upsert%d", op)
				batch[j].Text = strings.Join(w, " ")
			}
		} else {
			i := op * 1000 % (len(docs) - 1000)
			batch = slices.Clone(docs[i : i+1000])
			for j := range batch {
				batch[j].ID = fmt.Sprintf("%s@%d", batch[j].ID, op) // a new id, whatever the run's length
			}
		}
		op++
		if pipelined {
			start := time.Now()
			pb, err := d.PrepareBatch(batch, nil)
			if err != nil {
				b.Fatal(err)
			}
			if inflight != nil {
				if err := <-inflight; err != nil {
					b.Fatal(err)
				}
			}
			inflight = make(chan error, 1)
			go func() {
				_, err := d.PutPrepared(context.Background(), pb)
				inflight <- err
			}()
			put += time.Since(start)
			n += len(batch)
			continue
		}
		start := time.Now()
		if _, _, err := d.prepareAll(batch, nil, len(batch), false, false); err != nil {
			b.Fatal(err)
		}
		sig += time.Since(start)
		start = time.Now()
		if _, err := d.PutBatch(batch, nil); err != nil {
			b.Fatal(err)
		}
		put += time.Since(start)
		n += len(batch)
	}
	if inflight != nil {
		start := time.Now()
		if err := <-inflight; err != nil {
			b.Fatal(err)
		}
		put += time.Since(start)
	}
	b.ReportMetric(float64(n)/put.Seconds(), "docs/s")
	// NB: while Pebble stalls writes (level 0 or the memtables full,
	// compactions behind), every put waits (see l0StopWrites).
	if m, err := d.Metrics(); err == nil {
		b.ReportMetric(float64(m.WriteStallTime.Milliseconds()), "stalled-ms")
	}
	if !pipelined {
		b.ReportMetric(float64(n)/sig.Seconds(), "sig-docs/s")
		b.ReportMetric(float64(put)/float64(sig), "x-sig")
	}
	quietRate := float64(quietN) / quiet.Seconds()
	b.ReportMetric(quietRate, "quiet-sig-docs/s")
	b.ReportMetric(quietRate/(float64(n)/put.Seconds()), "x-quiet-sig")
}

// BenchmarkDiskUsage reports the stored bytes per document by record kind
// (keys and values as written, before Pebble's block compression) and the
// bytes on disk per document after a full compaction.
func BenchmarkDiskUsage(b *testing.B) {
	d, err := benchIndex()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := d.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
			b.Fatal(err)
		}
	}
	n, _ := d.Count()
	for _, kind := range []struct {
		name   string
		lo, hi []byte
	}{{"doc", codec.DocPrefix, codec.DocPrefixEnd}, {"id", codec.IDPrefix, codec.IDPrefixEnd}, {"posting", codec.PostingPrefix, codec.PostingPrefixEnd}} {
		total := 0
		scan(context.Background(), d.pdb, kind.lo, kind.hi, func(k, v []byte) { total += len(k) + len(v) })
		b.ReportMetric(float64(total)/float64(n), kind.name+"-B/doc")
	}
	b.ReportMetric(float64(dirBytes(d.opts.FS, d.dir))/float64(n), "disk-B/doc")
}

// benchMemTableSize is Options.MemTableSize for the write benchmarks:
// LSHDB_BENCH_MEMTABLE_MB, else the default.
func benchMemTableSize(b *testing.B) int64 {
	n, err := envMiB("LSHDB_BENCH_MEMTABLE_MB", 0)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchCacheSize is the block cache of the benchmark index: 512 MiB, more
// than its ~320 MB of data, so that "warm cache" means every block cached
// (LSHDB_BENCH_CACHE_MB overrides it, e.g. 64 for the default cache).
func benchCacheSize() (int64, error) { return envMiB("LSHDB_BENCH_CACHE_MB", 512<<20) }

// envMiB is the size in MiB that the environment variable name gives, in
// bytes; def when it is unset.
func envMiB(name string, def int64) (int64, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive number of MiB", name, v)
	}
	return int64(n) << 20, nil
}

// BenchmarkLoadTables measures how fast a load writes its SSTables in the
// row-block format it uses (Pebblev4) and in the database's own columnar
// one: records of 9,000 random bytes, and posting lists of one posting.
func BenchmarkLoadTables(b *testing.B) {
	d, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	rec := make([]byte, 9000)
	for i := range rec {
		rec[i] = byte(rng.Uint32())
	}
	buckets := make([]uint64, 200000)
	for i := range buckets {
		buckets[i] = rng.Uint64()
	}
	slices.Sort(buckets)
	formats := []struct {
		name string
		tf   sstable.TableFormat
	}{{"rows", sstable.TableFormatPebblev4}, {"columns", d.pdb.TableFormat()}}
	write := func(b *testing.B, tf sstable.TableFormat, fill func(t *tableSeq) error) {
		for range b.N {
			t := loadTables{db: d, fs: vfs.Default, dir: b.TempDir(), maxBytes: defaultTableBytes}.seq("bench")
			t.wopts.TableFormat = tf
			if err := fill(t); err != nil {
				b.Fatal(err)
			}
			if _, err := t.finish(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, f := range formats {
		b.Run("records/"+f.name, func(b *testing.B) {
			b.SetBytes(int64(len(rec)) * 10000)
			write(b, f.tf, func(t *tableSeq) error {
				var k []byte
				for i := range uint64(10000) {
					k = codec.AppendDocKey(k[:0], i)
					if err := t.set(k, rec); err != nil {
						return err
					}
				}
				return nil
			})
		})
		b.Run("postings/"+f.name, func(b *testing.B) {
			write(b, f.tf, func(t *tableSeq) error {
				var k, v []byte
				for i, bk := range buckets {
					k = codec.AppendPostingKey(k[:0], 3, bk)
					v = codec.AppendPostings(v[:0], []codec.Posting{{Doc: uint64(i)}})
					if err := t.merge(k, v); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
