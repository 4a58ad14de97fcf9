package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/minhash"
	"github.com/spf13/cobra"
)

// benchReport is what lshdb bench measures, every figure from this run.
type benchReport struct {
	Docs  int   `json:"docs"`
	Bytes int64 `json:"bytes"`
	// The hashing floor (normalize + shingle + one xxhash64 per shingle)
	// and the whole signature pipeline, on one core.
	FloorMBps     float64 `json:"floor_mb_per_s,omitempty"`
	SignatureMBps float64 `json:"signature_mb_per_s,omitempty"`
	SigXFloor     float64 `json:"signature_x_floor,omitempty"`
	// Inserts in synced batches of 1,000 into a fresh index.
	InsertDocsPerSec float64 `json:"insert_docs_per_s,omitempty"`
	// Queries (by text with --corpus, by id with --db), warm.
	Queries       int     `json:"queries"`
	QueryP50us    float64 `json:"query_p50_us"`
	QueryP99us    float64 `json:"query_p99_us"`
	QueriesPerSec float64 `json:"queries_per_s"`
}

func (a *app) benchCmd() *cobra.Command {
	var corpusPath, extendPath string
	var limit, queries, rounds int
	var build bool
	c := &cobra.Command{
		Use:   "bench (--corpus FILE | --db DIR) [--limit N] [--queries Q]",
		Short: "Measure signature, insert and query speed on your own data",
		Long: `Measure on your own data. With --build --corpus FILE [--extend FILE2]:
the hashing floor (normalize, shingle and hash every text in memory on
every core) and the signature-only pipeline over the whole input, then a
bulk build of the same input, pairs at the index threshold, and optionally an
extension, with ratios and the peak RSS (run each size in its own process).
With --rounds N the build runs N times, each between two signature-only
runs, and the median ratio is reported (for noisy machines). A
--cpuprofile of it labels each sample with its phase: go tool pprof
-tagfocus phase=build (or floor, signature-only, pairs, extend).
Otherwise, with --corpus (any insert input): the hashing
floor and the signature pipeline (MB/s, one core), synced inserts in batches
of 1,000 into a fresh temporary index, and queries by text. With --db: queries
by id against an existing index. Figures are from this run only.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			// NB: a flag of the other mode was ignored: --limit under
			// --build ran a bulk build of the whole corpus.
			if build {
				for _, f := range []string{"limit", "queries"} {
					if c.Flags().Changed(f) {
						return usagef("--%s is not for --build, which measures the whole corpus", f)
					}
				}
				if a.dbDir != "" || a.shellDB != nil {
					return usagef("--build measures a build from --corpus into a temporary index: not --db")
				}
				if corpusPath == "" {
					return usagef("--build needs --corpus")
				}
				if rounds < 1 {
					return usagef("--rounds must be at least 1")
				}
				return a.benchBuild(corpusPath, extendPath, rounds)
			}
			for _, f := range []string{"rounds", "extend"} {
				if c.Flags().Changed(f) {
					return usagef("--%s is for --build only", f)
				}
			}
			if (corpusPath == "") == (a.dbDir == "" && a.shellDB == nil) {
				return usagef("give exactly one of --corpus and --db")
			}
			if limit < 1 || queries < 1 {
				return usagef("--limit and --queries must be at least 1")
			}
			rep := benchReport{}
			var d index
			var texts, ids []string
			if corpusPath != "" {
				var docs []db.Doc
				// NB: bad records are skipped: bench measures. The first is
				// named if no document is read: "has no documents" was all
				// a malformed file got (a bad-input review, B13).
				var firstBad error
				for rec, err := range docio.Read(a.ctx, []string{corpusPath}, a.stdin, docio.Options{}) {
					if errors.Is(err, docio.ErrBadRecord) {
						firstBad = cmp.Or(firstBad, err)
						continue
					}
					if err != nil {
						return fmt.Errorf("--corpus: %w", err)
					}
					docs = append(docs, db.Doc{ID: rec.ID, Text: rec.Text})
					if len(docs) == limit {
						break
					}
				}
				if len(docs) == 0 && firstBad != nil {
					return fmt.Errorf("--corpus %s has no document that reads: %w", esc(corpusPath), firstBad)
				}
				if len(docs) == 0 {
					return fmt.Errorf("--corpus %s has no documents", esc(corpusPath))
				}
				for _, doc := range docs {
					rep.Bytes += int64(len(doc.Text))
					texts = append(texts, doc.Text)
				}
				rep.Docs = len(docs)
				rep.FloorMBps, rep.SignatureMBps = hashSpeed(texts, rep.Bytes)
				rep.SigXFloor = rep.FloorMBps / rep.SignatureMBps
				dir, err := a.benchDir()
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				dd, err := db.Open(dir, benchOptions())
				if err != nil {
					return err
				}
				defer dd.Close()
				d = dd
				start := time.Now()
				for i := 0; i < len(docs); i += 1000 {
					if _, err := d.PutBatch(docs[i:min(i+1000, len(docs))], &db.WriteOptions{SkipEmpty: true}); err != nil {
						return err
					}
				}
				rep.InsertDocsPerSec = float64(len(docs)) / time.Since(start).Seconds()
			} else {
				// NB: an index another process owns is measured through its
				// socket (or --addr): what an attached client sees.
				x, closeDB, err := a.openExisting()
				if err != nil {
					return err
				}
				defer closeDB()
				d = x
				for doc, err := range d.Scan(a.ctx, nil) {
					if err != nil {
						return err
					}
					ids = append(ids, doc.ID)
				}
				if len(ids) == 0 {
					return fmt.Errorf("the index is empty")
				}
				rep.Docs = len(ids)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			lat := make([]time.Duration, 0, queries)
			for warm := range 2 { // the first pass warms the cache
				lat = lat[:0]
				start := time.Now()
				for range queries {
					t0 := time.Now()
					var err error
					if texts != nil {
						_, err = d.Query(a.ctx, texts[rng.IntN(len(texts))], nil)
					} else {
						_, err = d.QueryID(a.ctx, ids[rng.IntN(len(ids))], nil)
					}
					if err != nil {
						return err
					}
					lat = append(lat, time.Since(t0))
				}
				if warm == 1 {
					rep.QueriesPerSec = float64(queries) / time.Since(start).Seconds()
				}
			}
			slices.Sort(lat)
			rep.Queries = queries
			rep.QueryP50us = float64(lat[len(lat)/2].Microseconds())
			rep.QueryP99us = float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())
			if a.json() {
				return a.emitJSON(rep)
			}
			fmt.Fprintf(a.stdout, "%d documents", rep.Docs)
			if rep.Bytes > 0 {
				fmt.Fprintf(a.stdout, ", %.1f MB of text\n", float64(rep.Bytes)/1e6)
				fmt.Fprintf(a.stdout, "hashing floor %.1f MB/s, signatures %.1f MB/s (%.2fx the floor), one core\n", rep.FloorMBps, rep.SignatureMBps, rep.SigXFloor)
				fmt.Fprintf(a.stdout, "insert (synced batches of 1,000): %.0f docs/s\n", rep.InsertDocsPerSec)
			} else {
				fmt.Fprintln(a.stdout)
			}
			via := ""
			if _, ok := d.(*db.DB); !ok {
				via = " (through the owner's API: its socket or --addr)"
			}
			fmt.Fprintf(a.stdout, "%d queries%s: p50 %.0f µs, p99 %.0f µs, %.0f queries/s\n", rep.Queries, via, rep.QueryP50us, rep.QueryP99us, rep.QueriesPerSec)
			return nil
		},
	}
	c.Flags().StringVar(&corpusPath, "corpus", "", "a JSON Lines (or CSV/TSV, directory) corpus to measure on")
	c.Flags().IntVar(&limit, "limit", 20000, "use at most this many documents of the corpus")
	c.Flags().IntVar(&queries, "queries", 1000, "queries to time")
	c.Flags().BoolVar(&build, "build", false, "measure the bulk path instead: signature-only pipeline vs build vs pairs over the whole corpus")
	c.Flags().IntVar(&rounds, "rounds", 1, "with --build: build this many times, each between two signature-only runs, and report the median ratio")
	c.Flags().StringVar(&extendPath, "extend", "", "with --build: also time extending the built index by this corpus, against loading it into an empty index")
	return c
}

// phase runs f with the profiler label phase=name, which the goroutines
// f starts inherit: a --cpuprofile of bench --build splits by phase with
// go tool pprof -tagfocus phase=build (floor, signature-only, build,
// pairs, extend, extend-empty). Pebble's background goroutines (flushes
// and compactions) started at Open carry no label.
func phase(ctx context.Context, name string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("phase", name), f)
}

// floorPhase is floorPipeline labelled as the floor.
func floorPhase(ctx context.Context, path string) (t time.Duration, err error) {
	phase(ctx, "floor", func(ctx context.Context) { t, err = floorPipeline(ctx, []string{path}) })
	return t, err
}

// loadDocs bulk-loads the corpus at path into d and returns the time it
// took. Malformed records are skipped silently, as sigPipeline does.
func loadDocs(ctx context.Context, d *db.DB, path string) (time.Duration, error) {
	docs := func(yield func(db.Doc, error) bool) {
		for rec, err := range docio.Read(ctx, []string{path}, nil, docio.Options{}) {
			if errors.Is(err, docio.ErrBadRecord) {
				continue
			}
			if !yield(db.Doc{ID: rec.ID, Text: rec.Text}, err) || err != nil {
				return
			}
		}
	}
	start := time.Now()
	_, err := d.Load(ctx, docs, &db.LoadOptions{SkipEmpty: true})
	return time.Since(start), err
}

// benchDir creates the temporary directory of a bench's indexes under
// $TMPDIR/lshdb-bench/, named for this process, after removing those of
// processes that are gone: a killed bench (SIGKILL runs no deferred
// removal) left up to gigabytes there that nothing removed (R17). The
// path goes to stderr, for a platform that cannot tell a dead process.
//
// NB: $TMPDIR/lshdb-bench is swept only when it is a directory of this
// user that no one else may write. Made with MkdirAll, it was whatever
// another user had put there first: a symbolic link to a directory of
// this user's, whose entries named like "2024-06-01-backup" were removed
// (a security review). Otherwise the bench's directory is a new one of
// its own in $TMPDIR, and nothing is swept.
func (a *app) benchDir() (string, error) {
	base := filepath.Join(os.TempDir(), "lshdb-bench")
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if fi, err := os.Lstat(base); err != nil || !fspath.PrivateDir(fi) {
		dir, err := os.MkdirTemp(os.TempDir(), fmt.Sprintf("lshdb-bench-%d-", os.Getpid()))
		if err == nil {
			fmt.Fprintf(a.stderr, "bench: temporary index in %s (removed at the end; %s is not a private directory of this user, so what killed benches left there is not swept)\n", dir, base)
		}
		return dir, err
	}
	ents, err := os.ReadDir(base)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		// NB: only the names MkdirTemp gave below ("PID-DIGITS").
		if _, rest, _ := strings.Cut(e.Name(), "-"); isDigits(rest) && namedForDeadProcess(e.Name()) {
			if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
				return "", err
			}
		}
	}
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%d-", os.Getpid()))
	if err == nil {
		fmt.Fprintf(a.stderr, "bench: temporary index in %s (removed at the end, or by the next bench)\n", dir)
	}
	return dir, err
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// namedForDeadProcess reports whether name starts with the pid of a
// process that is gone, not this one ("PID-…"): what a killed run left
// (bench's indexes, an output's temporary file).
func namedForDeadProcess(name string) bool {
	p, _, _ := strings.Cut(name, "-")
	pid, err := strconv.Atoi(p)
	return err == nil && pid > 0 && pid != os.Getpid() && processGone(pid)
}

// hashSpeed returns the MB/s of the hashing floor and of the default
// signature pipeline over texts, each timed over at least half a second.
func hashSpeed(texts []string, bytes int64) (floor, sig float64) {
	sh, _ := minhash.NewShingler(minhash.Options{})
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	var hbuf []uint64
	var sbuf []uint32
	measure := func(pass func()) float64 {
		start, n := time.Now(), 0
		for n == 0 || time.Since(start) < 500*time.Millisecond {
			pass()
			n++
		}
		return float64(bytes) * float64(n) / time.Since(start).Seconds() / 1e6
	}
	floor = measure(func() {
		for _, t := range texts {
			hbuf = sh.AppendHashes(hbuf[:0], t)
		}
	})
	sig = measure(func() {
		for _, t := range texts {
			sbuf = h.Signature(sbuf[:0], t)
		}
	})
	return floor, sig
}

// benchBuild measures the bulk path on a corpus: every figure from this
// run, the ratios against the signature-only pipeline on the same cores.
func (a *app) benchBuild(corpusPath, extendPath string, rounds int) error {
	var r scaleReport
	// NB: the signature-only pipeline runs before and after each build (an
	// A-B-A design) and the build is compared with their mean: on a shared
	// machine the same pipeline's wall time varied 1.6x between runs. CPU
	// time (user + system) is reported beside wall time.
	sigRun := func() (time.Duration, time.Duration, error) {
		cpu0 := cpuTime()
		var n int
		var t time.Duration
		var err error
		phase(a.ctx, "signature-only", func(ctx context.Context) { n, t, err = sigPipeline(ctx, []string{corpusPath}) })
		r.Docs = n
		return t, cpuTime() - cpu0, err
	}
	load := func(d *db.DB, path, name string) (t time.Duration, err error) {
		phase(a.ctx, name, func(ctx context.Context) { t, err = loadDocs(ctx, d, path) })
		return t, err
	}
	dir, err := a.benchDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// NB: the hashing floor (the yardstick for a build) runs before
	// the first round and after the last; the rounds compare with the mean.
	floor0, err := floorPhase(a.ctx, corpusPath)
	if err != nil {
		return err
	}
	sigTime, sigCPU, err := sigRun()
	if err != nil {
		return err
	}
	var d *db.DB
	defer func() {
		if d != nil {
			d.Close()
		}
	}()
	for i := range rounds {
		if d != nil {
			// NB: one index on disk at a time (9 GB at a million documents).
			if err := d.Close(); err != nil {
				return err
			}
			d = nil
			if err := os.RemoveAll(dir + "/index"); err != nil {
				return err
			}
		}
		if d, err = db.Open(dir+"/index", benchOptions()); err != nil {
			return err
		}
		reset := resetPeakRSS()
		cpu0 := cpuTime()
		bt, err := load(d, corpusPath, "build")
		if err != nil {
			return err
		}
		bcpu := cpuTime() - cpu0
		if reset {
			r.BuildRSSMiB = max(r.BuildRSSMiB, peakRSS())
		}
		sigTime2, sigCPU2, err := sigRun()
		if err != nil {
			return err
		}
		sig := (sigTime + sigTime2).Seconds() / 2
		cpu := (sigCPU + sigCPU2).Seconds() / 2
		r.Rounds = append(r.Rounds, buildRound{
			SignatureRuns: [2]float64{sigTime.Seconds(), sigTime2.Seconds()},
			SignatureSecs: sig, SignatureCPU: cpu, BuildSecs: bt.Seconds(), BuildCPU: bcpu.Seconds(),
			BuildXSig: bt.Seconds() / sig, BuildCPUXSig: bcpu.Seconds() / cpu,
		})
		if !a.json() && rounds > 1 {
			fmt.Fprintf(a.stdout, "round %d: signature-only %.1fs (mean of %.1fs before and %.1fs after), build %.1fs (%.2fx); CPU time %.1fs vs %.1fs (%.2fx)\n",
				i+1, sig, sigTime.Seconds(), sigTime2.Seconds(), bt.Seconds(), bt.Seconds()/sig, bcpu.Seconds(), cpu, bcpu.Seconds()/cpu)
		}
		sigTime, sigCPU = sigTime2, sigCPU2
	}
	floor1, err := floorPhase(a.ctx, corpusPath)
	if err != nil {
		return err
	}
	r.FloorRuns = [2]float64{floor0.Seconds(), floor1.Seconds()}
	r.FloorSecs = (floor0 + floor1).Seconds() / 2
	for i := range r.Rounds {
		r.Rounds[i].BuildXFloor = r.Rounds[i].BuildSecs / r.FloorSecs
	}
	// The round with the median ratio stands for the run.
	med := slices.Clone(r.Rounds)
	slices.SortFunc(med, func(a, b buildRound) int { return cmp.Compare(a.BuildXSig, b.BuildXSig) })
	m := med[len(med)/2]
	r.SignatureRuns, r.SignatureSecs, r.SignatureCPU = m.SignatureRuns, m.SignatureSecs, m.SignatureCPU
	r.BuildSecs, r.BuildCPU, r.BuildXSig, r.BuildCPUXSig, r.BuildXFloor = m.BuildSecs, m.BuildCPU, m.BuildXSig, m.BuildCPUXSig, m.BuildXFloor
	reset := resetPeakRSS()
	start := time.Now()
	var pst db.PairsStats
	phase(a.ctx, "pairs", func(ctx context.Context) {
		for _, e := range d.Pairs(ctx, &db.PairsOptions{Stats: &pst}) {
			if err = e; err != nil {
				return
			}
			r.Pairs++
		}
	})
	if err != nil {
		return err
	}
	r.PairsStats = pairsStatsOut(pst)
	r.PairsSecs = time.Since(start).Seconds()
	if reset {
		r.PairsRSSMiB = peakRSS()
	}
	r.PairsXBuild = r.PairsSecs / r.BuildSecs
	if extendPath != "" {
		et, err := load(d, extendPath, "extend")
		if err != nil {
			return err
		}
		empty, err := db.Open(dir+"/empty", benchOptions())
		if err != nil {
			return err
		}
		defer empty.Close()
		ft, err := load(empty, extendPath, "extend-empty")
		if err != nil {
			return err
		}
		r.ExtendSecs, r.ExtendEmptySec, r.ExtendXEmpty = et.Seconds(), ft.Seconds(), et.Seconds()/ft.Seconds()
	}
	// NB: the peak since the last reset, or of the process when the
	// system cannot reset it.
	r.PeakRSSMiB = max(peakRSS(), r.BuildRSSMiB, r.PairsRSSMiB)
	if a.json() {
		return a.emitJSON(r)
	}
	what := "mean of"
	if rounds > 1 {
		what = fmt.Sprintf("median round of %d:", rounds)
	}
	fmt.Fprintf(a.stdout, "%d documents: signature-only %.1fs (%s %.1fs before and %.1fs after the build), build %.1fs (%.2fx), pairs %.1fs (%.2fx the build, %d pairs), peak RSS %.0f MiB\n",
		r.Docs, r.SignatureSecs, what, r.SignatureRuns[0], r.SignatureRuns[1], r.BuildSecs, r.BuildXSig, r.PairsSecs, r.PairsXBuild, r.Pairs, r.PeakRSSMiB)
	fmt.Fprintf(a.stdout, "hashing floor (normalize, shingle, hash in memory on %d cores) %.1fs (mean of %.1fs before and %.1fs after): build %.2fx the floor\n",
		runtime.GOMAXPROCS(0), r.FloorSecs, r.FloorRuns[0], r.FloorRuns[1], r.BuildXFloor)
	fmt.Fprintf(a.stdout, "CPU time: signature-only %.1fs, build %.1fs (%.2fx)\n", r.SignatureCPU, r.BuildCPU, r.BuildCPUXSig)
	if r.BuildRSSMiB > 0 {
		fmt.Fprintf(a.stdout, "peak RSS of each phase alone: build %.0f MiB, pairs %.0f MiB\n", r.BuildRSSMiB, r.PairsRSSMiB)
	}
	st := r.PairsStats
	fmt.Fprintf(a.stdout, "pairs: %d identical groups (%d pairs unverified), %d lists (%d hot, largest %d), %d candidates, %d ruled out by sketches, %d distinct verified, %d matched, spilled %v\n",
		st.IdenticalGroups, st.IdenticalPairs, st.Lists, st.HotLists, st.LargestList, st.Candidates, st.Filtered, st.Verified, st.Matched, st.Spilled)
	if extendPath != "" {
		fmt.Fprintf(a.stdout, "extend: %.1fs, into an empty index %.1fs (%.2fx)\n", r.ExtendSecs, r.ExtendEmptySec, r.ExtendXEmpty)
	}
	return nil
}

// benchOptions are the options of bench's own handles: no background
// purge, whose scan of every list a minute after the open would land in
// the figures measured (a read-through's R5).
func benchOptions() *db.Options { return &db.Options{PurgeEvery: -1} }
