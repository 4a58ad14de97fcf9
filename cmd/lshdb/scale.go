package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/internal/gen"
	"github.com/lshdb/lshdb/minhash"
	"github.com/spf13/cobra"
)

// genCmd writes a generated corpus for scale tests.
func (a *app) genCmd() *cobra.Command {
	var n int
	var seed uint64
	var copyFraction float64
	var out, prefix, source string
	var upserts, upsertRange int
	c := &cobra.Command{
		Use:   "gen --n N --out FILE.jsonl[.gz|.zst] [--seed S] [--copy-fraction F] [--id-prefix P] [--upserts K --upsert-range M]",
		Short: "Generate a corpus with known near-copies, for scale tests",
		Long: `Generate a corpus for scale tests: originals made of three real texts each
(--source, else debian-descriptions from ../shared/corpora beside a source
checkout, else the sample of 1,277 Debian descriptions built into the
command), and a fraction of near-copies of earlier originals at word-edit
rates 0, 0.01, 0.03 and 0.1. Each line has id and text, and for a copy "of"
(the original's id) and "edit_rate": the ground truth. Deterministic from
the seed. The file is compressed as its name says: gzip for .gz (BGZF,
which lshdb inflates on every core), zstd for .zst, else plain JSON Lines
(--out - writes plain JSON Lines to standard output).

Not a linear scale: every original reuses source texts, so past a few
million documents the same texts meet more often (from the 63,956
debian-descriptions, 10 million documents made lists of 3,660 documents
where 1 million made 415, and 46x the candidate pairs for 10x the pairs
found). Time the bulk path at 10 million on a real corpus, or on
several generated ones with other --source texts.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case n < 1 || out == "":
				return usagef("--n (at least 1) and --out are required")
			case !(copyFraction >= 0 && copyFraction <= 1):
				return usagef("--copy-fraction %v is not a fraction from 0 to 1", copyFraction)
			case upserts < 0 || upsertRange < 0:
				return usagef("--upserts and --upsert-range are counts, 0 or more")
			case upserts > 0 && upsertRange == 0:
				return usagef("--upserts needs --upsert-range: the size of the corpus whose ids the upserts take")
			case upserts > upsertRange:
				return usagef("--upserts %d exceeds --upsert-range %d: the upserts are distinct ids of that corpus", upserts, upsertRange)
			}
			if err := compressionNameFits("--out", out); err != nil {
				return err
			}
			if source != "" && (filepath.Clean(out) == filepath.Clean(source) || sameFile(out, source)) {
				// NB: it replaced the corpus it read (a bad-input
				// review, B7), where filter refuses its own inputs.
				return usagef("--out %s is the --source %s: gen would replace the corpus it reads; write elsewhere", escControls(out), escControls(source))
			}
			sources, what, err := genSources(source)
			if err != nil {
				return err
			}
			if nonBlank := slices.IndexFunc(sources, func(s string) bool { return strings.TrimSpace(s) != "" }); nonBlank < 0 {
				// NB: it exited 0 with an empty file, or documents of
				// empty texts (a bad-input review, B8).
				return fmt.Errorf("--source %s holds no text to make documents of", escControls(what))
			}
			// NB: notes, as every command's begin: "gen: note:" escaped a
			// job's grep for lshdb's notes (a newcomer's review, NC2-10).
			why := ""
			if what == builtinSample {
				why = ": no ../shared/corpora/debian-descriptions beside a source checkout above this directory (--source FILE makes the same corpus from any directory)"
			}
			a.notef(fmt.Sprintf("gen takes its originals from %s (%d texts)%s", what, len(sources), why))
			// NB: written beside its name and renamed when complete, so an
			// interrupted or failed run (Ctrl-C, a full disk) leaves no
			// partial corpus under the name.
			setBar, barDone := a.countBar("gen", n)
			defer barDone()
			write := func(fn func(io.Writer) error) error { return writeFileAtomic(out, fn) }
			if out == "-" {
				// NB: "-" made a file of that name.
				write = func(fn func(io.Writer) error) error {
					bw := bufio.NewWriterSize(a.stdout, 1<<20)
					// NB: the flush's error only when fn had none: both
					// are the same broken pipe after a | head, and joined
					// they were printed twice, not taken for one.
					if err := fn(bw); err != nil {
						return err
					}
					return bw.Flush()
				}
			}
			return write(func(w io.Writer) error {
				// NB: compressed as the name says, as every reader of the
				// file expects (jq, Python, a browser): a name with no
				// compression suffix gets plain JSON Lines.
				zw, err := nameWriter(w, out)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(zw)
				// idAt is the id of the j-th document written: a copy's
				// "of" names its original by the same rule as its own id
				// (it named the default prefix's g… whatever --id-prefix
				// or --upserts made the original's, ids the file lacks).
				idAt := func(j int) string {
					if j < upserts {
						// Every upsert-range/upserts-th id of a corpus made
						// with the default prefix: K distinct existing ids.
						return fmt.Sprintf("g%08d", j*max(upsertRange/max(upserts, 1), 1))
					}
					return fmt.Sprintf("%s%08d", prefix, j)
				}
				i := 0
				for d := range gen.Stream(gen.Options{Seed: seed, N: n, Sources: sources, CopyFraction: copyFraction}) {
					if i%1024 == 0 {
						if err := a.ctx.Err(); err != nil {
							zw.Close() // NB: ends the compressor's goroutines
							return fmt.Errorf("gen: %w after %d documents (%s not written)", err, i, out)
						}
						setBar(i)
					}
					rec := map[string]any{"id": idAt(i), "text": d.Text}
					i++
					if d.Of != "" {
						of, err := strconv.Atoi(d.Of[1:]) // NB: gen's ids are g + the position
						if err != nil {
							return fmt.Errorf("gen: a copy of %q", d.Of)
						}
						rec["of"], rec["edit_rate"] = idAt(of), d.EditRate
					}
					if err := enc.Encode(rec); err != nil {
						zw.Close()
						return err
					}
				}
				return zw.Close()
			})
		},
	}
	c.Flags().IntVar(&n, "n", 0, "documents")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed")
	c.Flags().Float64Var(&copyFraction, "copy-fraction", 0.2, "fraction of near-copies")
	c.Flags().StringVar(&out, "out", "", "output file (- for standard output): JSON Lines; gzip when it ends .gz (BGZF: blocked gzip, read on every core), zstd when it ends .zst")
	c.Flags().StringVar(&prefix, "id-prefix", "g", "id prefix (ids are PREFIX + 8 digits)")
	c.Flags().StringVar(&source, "source", "", "JSON Lines corpus the originals are made of (default: debian-descriptions from ../shared beside a checkout, else the built-in sample)")
	c.Flags().IntVar(&upserts, "upserts", 0, "give the first K documents ids of a default-prefix corpus (upserts)")
	c.Flags().IntVar(&upsertRange, "upsert-range", 0, "the size of that corpus")
	return c
}

// nameWriter returns the writer of an output file name on w (gen's
// corpus, pairs --clusters): gzip for .gz (BGZF, which lshdb inflates on
// every core), zstd for .zst, else w itself (plain JSON Lines). Closing it
// flushes the compressor; it never closes w.
func nameWriter(w io.Writer, name string) (io.WriteCloser, error) {
	switch _, z := nameCompression(name); z {
	case "zstd":
		return zstd.NewWriter(w)
	case "gzip":
		return docio.NewGzipWriter(w, gzip.DefaultCompression)
	}
	return nopCloser{w}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// genSources returns the texts gen makes originals of, and where they
// came from: the file given, the shared corpus beside a source checkout,
// or the sample built into the command (from any directory).
// builtinSample names the texts built into gen, its originals' source
// where no other is.
const builtinSample = "the built-in debian sample"

func genSources(source string) ([]string, string, error) {
	var docs []corpus.Doc
	var err error
	what := source
	if source != "" {
		if docs, err = corpus.Load(source, 0); err != nil {
			return nil, "", fmt.Errorf("--source: %w", err) // NB: "stat X: no such file" named no flag (B13)
		}
	} else if _, rerr := corpus.ModuleRoot(); rerr == nil {
		// NB: named by its absolute path, and the built-in sample with
		// the rule: from a data directory, the same seed gave another
		// corpus (the sample), said only as "the built-in debian
		// sample", where a checkout gave "../shared/…" (a review at
		// scale, SC-2).
		if what, err = corpus.SharedDir("debian-descriptions"); err == nil {
			docs, err = corpus.Shared("debian-descriptions", 0)
		}
		if errors.Is(err, corpus.ErrNoShared) {
			docs, err = nil, nil
		}
	}
	if err != nil {
		return nil, "", err
	}
	if docs == nil && source == "" {
		texts, err := gen.SampleTexts()
		return texts, builtinSample, err
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	return texts, what, nil
}

// floorPipeline measures the hashing floor of an input: the time to
// normalize, shingle and hash every text in memory on every core, which
// is the least any build of it can take. The input is read in batches of
// about 64 MB of text (so memory stays bounded) and only the hashing of
// each batch is timed; the times add up.
func floorPipeline(ctx context.Context, paths []string) (time.Duration, error) {
	const batchBytes = 64 << 20
	workers := runtime.GOMAXPROCS(0)
	shinglers := make([]*minhash.Shingler, workers)
	bufs := make([][]uint64, workers)
	for w := range shinglers {
		shinglers[w], _ = minhash.NewShingler(minhash.Options{})
	}
	var total time.Duration
	hash := func(texts []string) {
		// NB: a collection that the reading started ran beside the
		// hashing and took a core from it: the two measurements of one
		// run differed by up to 1.6x (2.1 s and 1.3 s).
		runtime.GC()
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(texts); i += workers {
					bufs[w] = shinglers[w].AppendHashes(bufs[w][:0], texts[i])
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
	}
	var texts []string
	size := 0
	for rec, err := range docio.Read(ctx, paths, nil, docio.Options{}) {
		if errors.Is(err, docio.ErrBadRecord) {
			continue // skipped silently: this is a measurement
		}
		if err != nil {
			return 0, err
		}
		texts = append(texts, rec.Text)
		if size += len(rec.Text); size >= batchBytes {
			hash(texts)
			texts, size = texts[:0], 0
		}
	}
	hash(texts)
	return total, nil
}

// sigPipeline is the signature-only pipeline over an input, on every core:
// read and parse, then signatures in parallel (Hasher.Signature: shingle
// and sign, no set), nothing stored. It is the baseline that bench --build
// compares a bulk build with.
func sigPipeline(ctx context.Context, paths []string) (int, time.Duration, error) {
	start := time.Now()
	chunks := make(chan []db.Doc, 4)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
			var sig []uint32
			for chunk := range chunks {
				for _, d := range chunk {
					sig = h.Signature(sig[:0], d.Text)
				}
			}
		}()
	}
	n := 0
	chunk := make([]db.Doc, 0, 4096)
	var err error
	for rec, rerr := range docio.Read(ctx, paths, nil, docio.Options{}) {
		if errors.Is(rerr, docio.ErrBadRecord) {
			continue // skipped silently: this is a measurement
		}
		if rerr != nil {
			err = rerr
			break
		}
		chunk = append(chunk, db.Doc{ID: rec.ID, Text: rec.Text})
		n++
		if len(chunk) == cap(chunk) {
			chunks <- chunk
			chunk = make([]db.Doc, 0, 4096)
		}
	}
	chunks <- chunk
	close(chunks)
	wg.Wait()
	return n, time.Since(start), err
}

// buildRound is one build between two signature-only runs.
type buildRound struct {
	SignatureRuns [2]float64 `json:"signature_only_runs_s"`
	SignatureSecs float64    `json:"signature_only_s"`
	SignatureCPU  float64    `json:"signature_only_cpu_s"`
	BuildSecs     float64    `json:"build_s"`
	BuildCPU      float64    `json:"build_cpu_s"`
	BuildXSig     float64    `json:"build_x_signature"`
	BuildXFloor   float64    `json:"build_x_floor"`
	BuildCPUXSig  float64    `json:"build_cpu_x_signature"`
}

// scaleReport is what bench --build measures; the top-level build and
// signature figures are the median round's.
type scaleReport struct {
	Rounds         []buildRound   `json:"rounds"`
	Docs           int            `json:"docs"`
	FloorSecs      float64        `json:"hashing_floor_s"`
	FloorRuns      [2]float64     `json:"hashing_floor_runs_s"`
	BuildXFloor    float64        `json:"build_x_floor"`
	SignatureSecs  float64        `json:"signature_only_s"`
	SignatureRuns  [2]float64     `json:"signature_only_runs_s"`
	BuildSecs      float64        `json:"build_s"`
	BuildXSig      float64        `json:"build_x_signature"`
	SignatureCPU   float64        `json:"signature_only_cpu_s"`
	BuildCPU       float64        `json:"build_cpu_s"`
	BuildCPUXSig   float64        `json:"build_cpu_x_signature"`
	PairsSecs      float64        `json:"pairs_s"`
	PairsXBuild    float64        `json:"pairs_x_build"`
	Pairs          int64          `json:"pairs"`
	PairsStats     pairsStatsJSON `json:"pairs_stats"`
	ExtendSecs     float64        `json:"extend_s,omitempty"`
	ExtendEmptySec float64        `json:"extend_into_empty_s,omitempty"`
	ExtendXEmpty   float64        `json:"extend_x_empty,omitempty"`
	PeakRSSMiB     float64        `json:"peak_rss_mib"`
	// The peaks of the build and of pairs alone (when the system can reset
	// the peak between phases; otherwise 0).
	BuildRSSMiB float64 `json:"build_peak_rss_mib,omitempty"`
	PairsRSSMiB float64 `json:"pairs_peak_rss_mib,omitempty"`
}

// resetPeakRSS returns the process's free memory to the system and
// resets its peak resident set size (Linux 4.0 and later: writing 5 to
// /proc/self/clear_refs), so that the next peakRSS is one phase's peak.
// It reports whether the reset took effect.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns the process's peak resident set size in MiB (Linux).
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb float64
	for line := range strings.Lines(string(b)) {
		if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}
