package main

// report: one self-contained HTML page about an index, with SVG charts
// (svgchart.go): the S-curve with its error areas, the pair similarities,
// the cluster sizes, the bucket sizes, and the parameters and sizes.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"iter"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/spf13/cobra"
)

// errBadPairs is the error of a --pairs file that is not pairs JSON Lines.
var errBadPairs = errors.New("bad pairs file")

// pairBinWidth is the width of the pair-similarity histogram's bins.
const pairBinWidth = 0.02

// pairFine is the resolution at which pair similarities are counted
// before they are put in bins: the counts take 80 KB whatever the number
// of pairs, and a --pairs file is read once.
const pairFine = 10000

// defaultPairsThreshold is where the similarity histogram starts when
// --pairs-threshold is not given: 0.2 below the index threshold, at least
// 0.1 (and never above the index threshold).
func defaultPairsThreshold(t float64) float64 {
	return min(max(math.Round((t-0.2)*100)/100, 0.1), t)
}

// pairHist counts pair similarities at the resolution 1/pairFine, and
// joins the pairs at or above the index threshold into clusters.
type pairHist struct {
	fine      []int64 // fine[i]: pairs with Jaccard in [i, i+1) / pairFine (i = pairFine: 1)
	total     int64
	atOrAbove int64 // pairs with Jaccard ≥ the index threshold
	lowest    float64
	t         float64
	comps     components
}

func newPairHist(t float64) *pairHist {
	return &pairHist{fine: make([]int64, pairFine+1), lowest: 1, t: t, comps: components{pos: map[string]int32{}}}
}

func (h *pairHist) add(p db.Pair) {
	h.addN(p.Jaccard, 1)
	if p.Jaccard >= h.t {
		h.comps.union(p.A, p.B)
	}
}

// addGroup counts the pairs g stands for (db.PairGroup): a group of m
// identical documents is m(m−1)/2 pairs, counted and joined in O(m).
func (h *pairHist) addGroup(g db.PairGroup) {
	n := g.Pairs()
	if n == 0 {
		return
	}
	h.addN(g.Jaccard, n)
	if g.Jaccard < h.t {
		return
	}
	if g.B == nil {
		for _, id := range g.A[1:] {
			h.comps.union(g.A[0], id)
		}
		return
	}
	// NB: A's and B's members are joined by their own groups (every
	// group of two or more is yielded, at Jaccard 1): their first ones
	// join the two (a step per pair of groups, not one per member).
	h.comps.union(g.A[0], g.B[0])
}

// addN counts n pairs at Jaccard j.
func (h *pairHist) addN(j float64, n int64) {
	h.fine[min(int(math.Floor(j*pairFine+1e-9)), pairFine)] += n
	h.total += n
	h.lowest = min(h.lowest, j)
	if j >= h.t {
		h.atOrAbove += n
	}
}

// pairGroups returns d's pairs grouped (db.DB.PairGroups, or a server's
// GET /v1/pairs/groups), else each pair as a group of its own.
func pairGroups(ctx context.Context, d index, po *db.PairsOptions) iter.Seq2[db.PairGroup, error] {
	if g, ok := d.(interface {
		PairGroups(context.Context, *db.PairsOptions) iter.Seq2[db.PairGroup, error]
	}); ok {
		return g.PairGroups(ctx, po)
	}
	return func(yield func(db.PairGroup, error) bool) {
		for p, err := range d.Pairs(ctx, po) {
			if !yield(db.PairGroup{A: []string{p.A}, B: []string{p.B}, Jaccard: p.Jaccard}, err) {
				return
			}
		}
	}
}

// components is a union-find over document ids: the connected components
// of the pairs at or above the threshold, which is what lshdb clusters
// prints (its tests check that the two agree).
//
// NB: the report joins the pairs of its own pairs run (or file) rather
// than call Clusters, which would run the whole join a second time: on
// 64k Debian descriptions at threshold 0.5 (35M candidate pairs) each
// run took 2 minutes.
type components struct {
	pos    map[string]int32
	ids    []string
	parent []int32
}

func (c *components) node(id string) int32 {
	i, ok := c.pos[id]
	if !ok {
		i = int32(len(c.ids))
		c.pos[id] = i
		c.ids = append(c.ids, id)
		c.parent = append(c.parent, i)
	}
	return i
}

func (c *components) find(i int32) int32 {
	for c.parent[i] != i {
		c.parent[i] = c.parent[c.parent[i]]
		i = c.parent[i]
	}
	return i
}

func (c *components) union(a, b string) {
	ra, rb := c.find(c.node(a)), c.find(c.node(b))
	if ra != rb {
		c.parent[max(ra, rb)] = min(ra, rb)
	}
}

// clusters returns the components, each with its ids sorted, largest
// first (ties: by first id).
func (c *components) clusters() [][]string {
	byRoot := map[int32][]string{}
	for i, id := range c.ids {
		r := c.find(int32(i))
		byRoot[r] = append(byRoot[r], id)
	}
	out := make([][]string, 0, len(byRoot))
	for _, ids := range byRoot {
		slices.Sort(ids)
		out = append(out, ids)
	}
	slices.SortFunc(out, func(a, b []string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a[0], b[0])
	})
	return out
}

// bins returns the counts in bins of pairBinWidth from lo (a multiple of
// 1/pairFine) up to 1, the last bin closed: [lo, lo+w), …, [1−w, 1].
func (h *pairHist) bins(lo float64) []int64 {
	n := max(1, int(math.Ceil((1-lo)/pairBinWidth-1e-9)))
	out := make([]int64, n)
	for i, c := range h.fine {
		if c == 0 {
			continue
		}
		v := float64(i) / pairFine
		if v < lo-1e-12 {
			continue
		}
		out[min(int(math.Floor((v-lo)/pairBinWidth+1e-9)), n-1)] += c
	}
	return out
}

// liveDocs returns the documents the report's stats counted as expired,
// awaiting the sweep, and the live ones: of one Stats call, not Info's
// count at the start less Stats' expired at the end (a sweep or writes
// between the two, under serve or on Redis, miscounted, down to a
// negative count: a maintainer review's M6).
func liveDocs(rd *reportData) (expired int, live int64) {
	if rd.Stats == nil {
		return 0, int64(rd.Info.Docs)
	}
	return rd.Stats.Expired, max(int64(rd.Stats.Docs)-int64(rd.Stats.Expired), 0)
}

// readPairs counts the pairs of a pairs JSON Lines file (lshdb pairs
// --output json), read as clusters --from reads it (readPairsFile: gzip or
// zstd, or - for stdin; the raw bytes of a compressed file were read as
// JSON, and - was a file name).
func (a *app) readPairs(flag, path string, h *pairHist, d index, now *db.Info, warn func(string)) error {
	// NB: every id is looked up, a batch of pairs at a time, as clusters
	// --from does: a file without a header, made on another index, drew a
	// page of its pairs over this index's documents.
	var batch []db.Pair
	check := func() error {
		ids := make([]string, 0, 2*len(batch))
		for _, p := range batch {
			ids = append(ids, p.A, p.B)
		}
		has, err := d.HasIDs(ids)
		if err != nil {
			return err
		}
		for i, ok := range has {
			if !ok {
				p := batch[i/2]
				return fmt.Errorf("%w: %s: the pair (%q, %q) names %q, which the index does not hold (a pairs file of another index, or of documents deleted since?)", db.ErrNotFound, esc(path), p.A, p.B, ids[i])
			}
		}
		for _, p := range batch {
			h.add(p)
		}
		batch = batch[:0]
		return nil
	}
	// NB: a file made above the index's threshold is refused, as
	// clusters --from refuses it: the page's counts "at Jaccard >= t"
	// and its clusters were the file's, short of the pairs between
	// (review B3).
	t := 0.0
	if now != nil {
		t = now.Params.Threshold
	}
	for p, err := range a.readPairsFile(flag, path, t, now, warn, nil) {
		if err != nil {
			return err
		}
		if batch = append(batch, p); len(batch) == 1000 {
			if err := check(); err != nil {
				return err
			}
		}
	}
	return check()
}

// clusterBin returns the bin of a cluster of n ≥ 2 documents: 2, 3, then
// powers of two (4-7, 8-15, …).
func clusterBin(n int) int {
	if n < 4 {
		return n - 2
	}
	return bits.Len(uint(n)) - 1
}

// clusterBinLabel is the label of bin i of clusterBin.
func clusterBinLabel(i int) string {
	if i < 2 {
		return strconv.Itoa(i + 2)
	}
	return fmt.Sprintf("%d-%d", 1<<i, 1<<(i+1)-1)
}

// binNote is the note of a size chart's bar: n things of the bin's
// label's documents ("1 posting list of 1 document", "16 empty posting
// lists"). NB: it said "16 posting lists of empty documents" and "1
// posting lists of 1 documents".
func binNote(n int, thing, things, label string) string {
	if n != 1 {
		thing = things
	}
	switch label {
	case "empty":
		return fmt.Sprintf("%s empty %s", groupDigits(int64(n)), thing)
	case "1":
		return fmt.Sprintf("%s %s of 1 document", groupDigits(int64(n)), thing)
	}
	return fmt.Sprintf("%s %s of %s documents", groupDigits(int64(n)), thing, label)
}

// bucketBinLabel is the label of bin i of db.BucketStats.Histogram.
func bucketBinLabel(i int) string {
	switch lo, hi := 1<<max(i-1, 0), 1<<i-1; {
	case i == 0:
		return "empty"
	case lo == hi:
		return strconv.Itoa(lo)
	default:
		return fmt.Sprintf("%d-%d", lo, hi)
	}
}

// reportData is what the page shows.
type reportData struct {
	Dir          string
	Info         *db.Info
	Stats        *db.Stats
	Pairs        *pairHist
	PairsLo      float64 // the similarity histogram's first bin
	PairsSource  string  // where the pairs came from, for the page
	PairsFromRun bool
	// PairsLoOfFile: PairsLo is the pairs file's lowest similarity (no
	// --pairs-threshold given).
	PairsLoOfFile bool
	Clusters      [][]string // ids sorted, largest first
	Elapsed       time.Duration
}

func (a *app) reportCmd() *cobra.Command {
	var out, pairsFile, fromFile string
	var pairsThreshold float64
	c := &cobra.Command{
		Use: "report --db DIR --out FILE.html [--pairs-threshold T | --pairs FILE]",
		Example: `  # A page of charts about an index (one file, opens in any browser)
  lshdb report --db idx --out idx.html

  # Pair similarities from 0.5 up (a pairs file made earlier: --pairs FILE)
  lshdb report --db idx --out idx.html --pairs-threshold 0.5`,
		Short: "Write an HTML page of charts: S-curve, pair similarities, cluster and bucket sizes",
		Long: `Write one self-contained HTML page (inline SVG and CSS: no script, nothing
fetched) about the index: its parameters and sizes; the S-curve
P(candidate | Jaccard) of its banding with the false-positive area (under
the curve below the threshold) and the false-negative area (above it at
and above the threshold) shaded; the histogram of pair similarities; the
sizes of the clusters at the index threshold; the sizes of the buckets.

The pair similarities come from a pairs run at --pairs-threshold (default:
the index threshold minus 0.2, at least 0.1), or from --pairs FILE, the
JSON Lines of lshdb pairs --output json (then --pairs-threshold, if given,
is where the histogram starts; else at the file's lowest similarity).
A file whose header says it was made above the index threshold is
refused: its clusters and counts would miss the pairs between.
Below the index threshold a pair is found with probability P(s) only, so
the bars there undercount. The clusters are the connected components of
the same pairs at or above the index threshold (as lshdb clusters finds
them): the pairs run goes down to the lower of the two thresholds.
Copies of one text (identical shingle sets) are taken as groups: m copies
are m(m-1)/2 pairs, counted at once (also from a served index: GET
/v1/pairs/groups; a --pairs FILE lists them one by one). The bucket sizes and bytes take a scan of
the store (as stats). The page is written to a temporary file and renamed:
a failed run leaves no partial page (an --out naming standard output, a
device or a pipe is written in place).`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out FILE.html is required")
			}
			if out == "-" {
				// NB: it made a file named "-", where - is stdout or stdin
				// everywhere else in the command.
				return usagef("--out - : report writes a file (its name, such as report.html)")
			}
			if err := nameSaysFormat("--out", out, "report writes an HTML page", ".html", ".htm"); err != nil {
				return err
			}
			// NB: a page named .html.gz was written as plain HTML, which
			// zcat refused; every other output compresses as its name says
			// or refuses it (a nightly output review's O3). A browser opens
			// the page as it is: it is not compressed.
			n := strings.ToLower(out)
			for _, z := range slices.Concat(writtenCompressions, unwritableCompressions) {
				if strings.HasSuffix(n, z[0]) {
					return usagef("--out %s names %s compression, but report writes a page a browser opens as it is: name it .html (and compress it afterwards if you must)", escControls(out), z[1])
				}
			}
			if c.Flags().Changed("pairs") && fromFile != "" {
				return usagef("give --pairs or --from (the same file), not both")
			}
			pairsFlag := "--pairs"
			if fromFile != "" {
				pairsFile, pairsFlag = fromFile, "--from"
			}
			if c.Flags().Changed("pairs-threshold") && !(pairsThreshold > 0 && pairsThreshold <= 1) {
				return usagef("--pairs-threshold %v is outside (0, 1]", pairsThreshold)
			}
			// NB: before the run, as pairs and filter check theirs: a
			// missing directory was found once the pairs run and the scan
			// were done.
			if err := writable(out); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			return a.withIndex(func(d index) error {
				start := time.Now()
				in, err := d.Info()
				if err != nil {
					return err
				}
				t := in.Params.Threshold
				rd := reportData{Dir: a.dbDir, Info: in, Pairs: newPairHist(t)}
				if rd.Dir == "" {
					rd.Dir = a.addr
				}
				if pairsFile != "" {
					if err := a.readPairs(pairsFlag, pairsFile, rd.Pairs, d, in, a.warnf); err != nil {
						return err
					}
					rd.PairsSource = "the pairs file " + filepath.Base(pairsFile)
					if pairsFile == "-" {
						rd.PairsSource = "the pairs read from stdin"
					}
					rd.PairsLo = math.Floor(rd.Pairs.lowest/pairBinWidth+1e-9) * pairBinWidth
					rd.PairsLoOfFile = !c.Flags().Changed("pairs-threshold")
					if rd.PairsLoOfFile && rd.Pairs.total > 0 && rd.PairsLo > t {
						a.notef(fmt.Sprintf("the lowest similarity in %s is %.4f, above the index threshold %v: if the file was made at a higher threshold, the pairs between are not in it, and the page's pairs and clusters are short of them (pairs --output json --header writes a header, which report checks)", escControls(pairsFile), rd.Pairs.lowest, t))
					}
					if c.Flags().Changed("pairs-threshold") {
						rd.PairsLo = pairsThreshold
						if rd.Pairs.total > 0 && pairsThreshold < rd.Pairs.lowest {
							// NB: the page said "0 below it" of pairs the file
							// could not hold.
							a.notef(fmt.Sprintf("the lowest similarity in %s is %.4f: the page counts no pair below it because the file holds none (a pairs file made at a higher threshold?), not because there is none; for those, make it with pairs --threshold %v", escControls(pairsFile), rd.Pairs.lowest, pairsThreshold))
						}
					}
				} else {
					rd.PairsLo = defaultPairsThreshold(t)
					if c.Flags().Changed("pairs-threshold") {
						rd.PairsLo = pairsThreshold
					}
					rd.PairsFromRun = true
					// NB: down to the index threshold at least, for the clusters.
					run := min(rd.PairsLo, t)
					rd.PairsSource = fmt.Sprintf("a pairs run at Jaccard ≥ %v", run)
					// NB: with the progress the flags ask for, as pairs shows
					// it: the report's longest step said nothing.
					ctx, barDone := a.phaseBar("pairs")
					// NB: grouped: 100,000 copies of one text are 5
					// billion pairs, which the report went through one by
					// one (no page after 120 s, a review's P3).
					for g, err := range pairGroups(ctx, d, &db.PairsOptions{Threshold: run}) {
						if err != nil {
							barDone()
							return interruptNote(err, "report interrupted: nothing written")
						}
						rd.Pairs.addGroup(g)
					}
					barDone()
				}
				rd.PairsLo = math.Floor(rd.PairsLo*pairFine+1e-6) / pairFine
				rd.Clusters = rd.Pairs.comps.clusters()
				ctx, barDone := a.phaseBar("stats")
				rd.Stats, err = d.Stats(ctx, 10)
				barDone()
				if err != nil {
					return interruptNote(err, "report interrupted: nothing written")
				}
				rd.Elapsed = time.Since(start)
				expired, live := liveDocs(&rd)
				if err := writeFileAtomic(out, func(w io.Writer) error { return writeReport(w, &rd) }); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				if a.json() {
					return a.emitJSON(struct {
						Out      string `json:"out"`
						Docs     uint64 `json:"docs"`
						Pairs    int64  `json:"pairs"`
						PairsAtT int64  `json:"pairs_at_threshold"`
						Clusters int    `json:"clusters"`
						Expired  int    `json:"expired"`
					}{out, uint64(live), rd.Pairs.total, rd.Pairs.atOrAbove, len(rd.Clusters), expired})
				}
				docs := counted(live, "document", "documents")
				if expired > 0 {
					docs += fmt.Sprintf(" (and %d expired, awaiting the sweep)", expired)
				}
				// NB: the page's "≥" as every other line of the command
				// writes it (a newcomer's review, N10).
				// NB: a summary, which --quiet drops (a nightly job runs
				// report from cron: a scripting operator's CL5).
				return a.summaryf("wrote %s: %s, %s from %s (%d at Jaccard >= %v), %s\n",
					out, docs, counted(rd.Pairs.total, "pair", "pairs"), strings.ReplaceAll(rd.PairsSource, "≥", ">="), rd.Pairs.atOrAbove, t, counted(len(rd.Clusters), "cluster", "clusters"))
			})
		},
	}
	c.Flags().StringVar(&out, "out", "", "the HTML file to write (required)")
	c.Flags().StringVar(&pairsFile, "pairs", "", "take pair similarities from this JSON Lines file (lshdb pairs --output json; gzip or zstd, - for stdin) instead of a pairs run")
	// NB: the name clusters, export and filter give a pairs file (a
	// scripting operator's CL7).
	c.Flags().StringVar(&fromFile, "from", "", "the same as --pairs, as clusters, export and filter name a pairs file")
	c.Flags().Float64Var(&pairsThreshold, "pairs-threshold", 0, "the least Jaccard of the similarity histogram (default: the index threshold - 0.2, at least 0.1)")
	return c
}

// writeFileAtomic writes path through a temporary file in its directory,
// committed (commitTemp) when fn succeeds, removed when it fails, so the
// name never holds part of a file.
func writeFileAtomic(path string, fn func(w io.Writer) error) error {
	f, err := createTempFor(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = fn(bw)
	if err == nil {
		err = bw.Flush()
	}
	return commitTemp(f, path, err == nil, err)
}

// createTempFor creates the temporary file that becomes path
// (commitTemp), named for this process (.NAME.lshdb-PID-N.tmp), after
// removing those of path that processes now gone left: a killed filter,
// export or report (SIGKILL runs no deferred removal) left a hidden file
// of up to its whole output beside it, which nothing removed. An error
// names path, not the temporary name.
//
// A path that is not a regular file is not replaced: a symbolic link is
// followed (its target is written, through a temporary file beside it),
// and a device, FIFO or socket is written in place, not atomically
// (filter --out /dev/full replaced the device with a 212 MB file, and
// exited 0; --out /dev/null as root would have replaced it for the whole
// system). commitTemp knows such a file by outputs.
func createTempFor(path string) (*os.File, error) {
	if fd, ok := streamOf(path); ok {
		f, err := openStream(fd, path)
		if err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", escControls(path), err)
		}
		outputs.Store(f, output{target: path, direct: true})
		return f, nil
	}
	if err := intoIndex(path); err != nil {
		return nil, err
	}
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// NB: another user's link in /tmp chose which file of this
		// user's the output replaced (a security review): refused, as
		// the kernel refuses a shell's redirect through it where
		// fs.protected_symlinks is set.
		if err := refuseStrangersLink(path); err != nil {
			return nil, err
		}
		if target, err = filepath.EvalSymlinks(path); err != nil {
			// NB: /dev/stdout is /proc/self/fd/1, whose target is no
			// path when it is a pipe ("pipe:[N]"): the kernel follows
			// it, and it is written in place.
			if sfi, serr := os.Stat(path); serr == nil && !sfi.Mode().IsRegular() && !sfi.IsDir() {
				target = path
			} else if t, ok := danglingTarget(path); ok {
				target = t
			} else {
				return nil, unreachableLink(path, err)
			}
		}
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		// NB: a directory was found only by the final rename, with the
		// temporary file made beside it (report --out /tmp: "rename
		// /.tmp.lshdb-…tmp /tmp: file exists").
		return nil, fmt.Errorf("cannot write %s: it is a directory (give a file's name)", escControls(path))
	case err == nil && !fi.Mode().IsRegular():
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", escControls(path), err)
		}
		outputs.Store(f, output{target: target, direct: true})
		return f, nil
	}
	f, err := createTemp(target)
	if err != nil {
		return nil, cannotWrite(path, err)
	}
	if target != path {
		outputs.Store(f, output{target: target})
	}
	return f, nil
}

// danglingTarget returns the file that path, a symbolic link to a file
// not yet made, leads to, which an output makes (as a shell's redirect
// does): a link to tonight's dated file. NB: it was refused, as "file
// exists" by the check before the work (a nightly review, NB-1). A link
// to another link, or to a file in a directory that does not exist, is
// not one.
func danglingTarget(path string) (string, bool) {
	l, err := os.Readlink(path)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(l) {
		l = filepath.Join(filepath.Dir(path), l)
	}
	if _, err := os.Lstat(l); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if fi, err := os.Stat(filepath.Dir(l)); err != nil || !fi.IsDir() {
		return "", false
	}
	return l, true
}

// unreachableLink is the error of an output path, a symbolic link, whose
// target cannot be reached (err) and is not one an output makes
// (danglingTarget): in no directory, through another link, or a loop.
func unreachableLink(path string, err error) error {
	to, _ := os.Readlink(path)
	return fmt.Errorf("cannot write %s: a symbolic link whose target cannot be reached (%s): %w", escControls(path), escControls(to), err)
}

// refuseStrangersLink refuses an output path that is another user's
// symbolic link in a shared directory (strangersLink), which createTempFor
// and writable would follow.
func refuseStrangersLink(path string) error {
	if strangersLink(path) {
		return fmt.Errorf("cannot write %s: a symbolic link of another user's in a shared directory, which lshdb does not follow: remove it, or name another file", escControls(path))
	}
	return nil
}

// writable checks that path can be opened for writing, without changing
// it: a file that exists is opened (not truncated); one that does not is
// created and removed again.
func writable(path string) error {
	if err := refuseStrangersLink(path); err != nil {
		return err
	}
	if err := intoIndex(path); err != nil {
		return err
	}
	flag := os.O_WRONLY
	if lfi, err := os.Lstat(path); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			t, ok := danglingTarget(path)
			if !ok {
				return unreachableLink(path, err)
			}
			path = t
		}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		flag |= os.O_CREATE | os.O_EXCL
	case err == nil && fi.IsDir():
		// NB: as createTempFor says it: pairs and clusters said "open
		// DIR: is a directory" (a newcomer's review, N3).
		return fmt.Errorf("cannot write %s: it is a directory (give a file's name)", escControls(path))
	case err == nil && !fi.Mode().IsRegular():
		// NB: a FIFO, a device, /dev/stdout: not opened to check. A FIFO
		// opened and closed here ended its reader, and the real open
		// then waited for another for ever, deaf to SIGTERM.
		return nil
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return cannotWrite(path, err)
	}
	f.Close()
	if flag&os.O_CREATE != 0 {
		os.Remove(path)
	}
	return nil
}

// cannotWrite is the error of an output file that could not be made at
// path, cause err: one wording for every command's outputs, which names
// the directory when it is the one missing. NB: pairs and clusters said
// "open X: no such file or directory" where filter and export said
// "cannot write X: no such file or directory" (an operator's review,
// O7), and neither said that the directory was what was missing.
func cannotWrite(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		if dir := filepath.Dir(path); dir != "" {
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				return fmt.Errorf("cannot write %s: its directory %s does not exist (lshdb makes no directory for an output): %w", escControls(path), escControls(dir), err)
			}
		}
	}
	return fmt.Errorf("cannot write %s: %w", escControls(path), err)
}

// outputs holds, by the file createTempFor returned, an output that is
// not the temporary file of the path given: the target of a symbolic
// link, or a non-regular file written in place (direct).
var outputs sync.Map // *os.File → output

type output struct {
	target string
	direct bool
}

// writtenInPlace reports whether tmp, from createTempFor, is a
// non-regular file written in place (a FIFO, a device: no sync, no
// rename).
func writtenInPlace(tmp *os.File) bool {
	v, ok := outputs.Load(tmp)
	return ok && v.(output).direct
}

// createTemp creates the temporary file that becomes path, locked for
// as long as it is open (lockTemp), after removing those that processes
// now gone left in its directory (sweepDeadTemps). An error is the cause
// alone.
func createTemp(path string) (*os.File, error) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".lshdb-"
	sweepDeadTemps(dir, filepath.Base(path), time.Now())
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*.tmp", prefix, os.Getpid()))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	lockTemp(f)
	return f, nil
}

// staleTempAge is how long another output's temporary file must have
// gone unwritten before sweepDeadTemps removes it: past what a run that
// writes only at its end takes (a sorted pairs, clusters), less than a
// day (a nightly job's killed partial goes the next night).
const staleTempAge = 12 * time.Hour

// sweepDeadTemps removes from dir the hidden temporary files of outputs
// (.NAME.lshdb-PID-….tmp) that killed runs left: those of name, the
// output about to be written, once their process is gone and no process
// holds their lock; those of another name only when that is known (a
// lock could be tried), and after staleTempAge unwritten. NB: only name's
// were removed, so a nightly job writing dated names (pairs-DATE.jsonl)
// kept every killed night's partial, up to a whole output each (a scale
// review's SC-3). The pid alone does not tell on a directory that hosts
// share (NFS): another's live run of this version holds its file's lock
// (where the filesystem carries locks between hosts), and one of an
// earlier version (which took none) has written its file within
// staleTempAge, save a run that writes only at its end (a sorted pairs,
// clusters) and takes longer than that.
func sweepDeadTemps(dir, name string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		i := strings.LastIndex(n, ".lshdb-")
		if !strings.HasPrefix(n, ".") || i < 2 || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if !namedForDeadProcess(n[i+len(".lshdb-"):]) {
			continue
		}
		p := filepath.Join(dir, n)
		held, known := tempHeld(p)
		if held {
			continue
		}
		if n[1:i] != name {
			fi, err := e.Info()
			if !known || err != nil || now.Sub(fi.ModTime()) < staleTempAge {
				continue
			}
		}
		os.Remove(p)
	}
}

// outputMode is the permissions of an output file written to path: an
// existing file's own, else 0666 less the process's umask, as a shell's
// redirect gives. NB: it was 0644 whatever the umask (077 for private
// texts, as the README advises) and whatever the file's mode had been.
func outputMode(path string) fs.FileMode {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return fi.Mode().Perm()
	}
	return 0o666 &^ processUmask
}

// commitTemp ends the temporary file tmp of path (see writeFileAtomic and
// filter's outputs): when ok and err is nil, it syncs it (the data is on
// disk before the name says it is complete), gives it outputMode's
// permissions (CreateTemp makes it 0600), closes it, renames it over path and syncs the directory
// (the rename is durable then); otherwise it closes and removes it. It
// returns err, or the first error of those steps.
// removeReplaced removes the file that commitTemp will rename tmp over
// (path, or the file a link at path names), if there is one: none for an
// output written in place (a device or a FIFO, renamed over nothing).
//
// NB: where a run writes two files, the second's old version goes before
// the first's rename: a run killed between the two renames left
// tonight's first beside last night's second, each whole (a data-safety
// review); it now leaves the second missing, never another run's.
func removeReplaced(tmp *os.File, path string) error {
	if tmp == nil {
		return nil
	}
	if v, found := outputs.Load(tmp); found {
		o := v.(output)
		if o.direct {
			return nil
		}
		path = o.target
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the old %s: %w", escControls(path), err)
	}
	return nil
}

func commitTemp(tmp *os.File, path string, ok bool, err error) error {
	if v, found := outputs.LoadAndDelete(tmp); found {
		o := v.(output)
		if o.direct {
			// NB: a device or FIFO written in place: nothing to rename,
			// nor to remove.
			return errors.Join(err, tmp.Close())
		}
		path = o.target
	}
	if ok && err == nil {
		err = errors.Join(tmp.Sync(), tmp.Chmod(outputMode(path)))
	}
	err = errors.Join(err, tmp.Close())
	if ok && err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if !ok || err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		err = d.Sync()
		d.Close()
	}
	return err
}

// reportCSS is the page's style: readable on a laptop and in print.
const reportCSS = `
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222; background: #fafafa; margin: 0; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 10px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.sub { color: #666; margin: 0 0 16px; }
p.note { color: #444; font-size: 14px; max-width: 900px; line-height: 1.45; }
section { background: #fff; border: 1px solid #e2e2e2; border-radius: 6px; padding: 8px 20px 16px; margin-top: 20px; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 8px 0; }
table { border-collapse: collapse; font-size: 14px; margin: 8px 0; }
th, td { text-align: left; padding: 4px 14px 4px 0; vertical-align: top; }
th { color: #555; font-weight: 600; white-space: nowrap; }
th.num { text-align: right; }
td.nowrap, span.i { white-space: nowrap; }
span.i { unicode-bidi: isolate; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 260px; }
code, .id { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
.figures { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 8px 0 4px; }
.figure b { display: block; font-size: 22px; }
.figure span { color: #666; font-size: 13px; }
`

// idList writes ids for a table cell, escaped, each unbroken (a line
// breaks between ids, not at an id's hyphens) and isolated for the
// bidirectional algorithm (span.i), so that two Hebrew or Arabic ids side
// by side show in their order, not as one right-to-left run (a
// multilingual user's S1).
func idList(ids []string) string {
	var b strings.Builder
	for i, id := range escAll(ids) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, `<span class="i">%s</span>`, html.EscapeString(id))
	}
	return b.String()
}

// writeReport writes the page. NB: it is well-formed XML (XHTML syntax:
// every element closed, no named entities but XML's), so that its tests
// parse it with encoding/xml.
func writeReport(w io.Writer, rd *reportData) error {
	var b strings.Builder
	p := rd.Info.Params
	t := p.Threshold
	esc := html.EscapeString
	fp, fn := p.Bands.FalsePositiveArea(t), p.Bands.FalseNegativeArea(t)
	b.WriteString("<!DOCTYPE html>\n")
	b.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>` + "\n")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1"/>` + "\n")
	fmt.Fprintf(&b, "<title>lshdb report: %s</title>\n<style>%s</style>\n</head><body><main>\n", esc(filepath.Base(rd.Dir)), reportCSS)
	fmt.Fprintf(&b, "<h1>lshdb report: <span class=\"id\">%s</span></h1>\n", esc(rd.Dir))
	fmt.Fprintf(&b, "<p class=\"sub\">Written %s by lshdb %s in %s.</p>\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), esc(version()), rd.Elapsed.Round(100*time.Millisecond))

	docsInClusters := 0
	for _, c := range rd.Clusters {
		docsInClusters += len(c)
	}
	b.WriteString(`<div class="figures">` + "\n")
	figure := func(v, label string) {
		fmt.Fprintf(&b, `<div class="figure"><b>%s</b><span>%s</span></div>`+"\n", esc(v), esc(label))
	}
	// NB: the expired documents not yet swept are no answer's: counted
	// as documents, they made the page's figures disagree (30 documents,
	// of which the pairs and clusters saw 10).
	expired, live := liveDocs(rd)
	figure(groupDigits(live), "documents")
	figure(humanBytes(rd.Info.DiskBytes), "on disk")
	figure(groupDigits(rd.Pairs.atOrAbove), fmt.Sprintf("pairs at Jaccard ≥ %v", t))
	figure(groupDigits(int64(len(rd.Clusters))), "clusters")
	figure(groupDigits(int64(docsInClusters)), "documents in clusters")
	figure(fmt.Sprintf("%.4f", p.Bands.Probability(t)), "P(candidate) at the threshold")
	b.WriteString("</div>\n")

	// The index.
	b.WriteString("<section id=\"index\"><h2>The index</h2>\n<table class=\"kv\">\n")
	row := func(k, v string) { fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>\n", esc(k), esc(v)) }
	row("threshold", strconv.FormatFloat(t, 'f', -1, 64))
	row("banding", fmt.Sprintf("%v: %d bands of %d rows (%d of %d signature values)", p.Bands, p.Bands.B, p.Bands.R, p.Bands.B*p.Bands.R, p.NumPerm))
	// NB: a row each: "signature scheme, seed | fss, 0" read oddly (a
	// newcomer's review, NC2-9).
	row("signature scheme", p.Scheme.String())
	row("seed", strconv.FormatUint(uint64(p.Seed), 10))
	row("shingles", fmt.Sprintf("%v %d-shingles, bag %v, normalization %v", p.Shingle, p.ShingleSize, p.Bag, p.Normalization))
	row("storage", strings.TrimPrefix(storageNote(p), "storage "))
	row("index format", strconv.Itoa(p.FormatVersion))
	if expired > 0 {
		row("documents", fmt.Sprintf("%s, and %s expired awaiting the sweep (never returned; lshdb purge sweeps them now)", groupDigits(live), groupDigits(int64(expired))))
	} else {
		row("documents", groupDigits(live))
	}
	row("size on disk", fmt.Sprintf("%s (%s bytes)", humanBytes(rd.Info.DiskBytes), groupDigits(int64(rd.Info.DiskBytes))))
	if st := rd.Stats; st != nil {
		sb, tb := st.StoredBytes, st.TableBytes
		kinds := []string{"docs", "ids", "postings", "manifest+counters"}
		if sb["expiry"] > 0 || tb["expiry"] > 0 {
			// NB: counted in no kind the page showed (a maintainer
			// review's M7), as stats shows it: when there is one.
			kinds = slices.Insert(kinds, 3, "expiry")
		}
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %s", k, humanBytes(sb[k])))
		}
		row("records, as written", strings.Join(parts, ", "))
		// NB: as stats says it: "ids 0 B, postings 0 B" read as an
		// index without them (a read-through's R6 of W5).
		row("tables on disk (compressed), by the kind of each one's first key", tablesByKind(tb, func(n uint64) string { return humanBytes(n) }))
		if !rd.Info.Redis {
			row("write-ahead log on disk", fmt.Sprintf("%s: %s the live log (writes not yet flushed into tables, and the space allocated ahead for the writes to come), %s logs kept for reuse as the next ones", humanBytes(st.LogBytes), humanBytes(st.LogBytes-st.RecycledLogBytes), humanBytes(st.RecycledLogBytes)))
		}
		lists := 0
		for _, n := range st.Buckets.Lists {
			lists += n
		}
		row("posting lists (buckets)", fmt.Sprintf("%s, about %s per band", groupDigits(int64(lists)), groupDigits(int64(math.Round(float64(lists)/float64(max(len(st.Buckets.Lists), 1)))))))
		if st.Recall.Measured {
			row("P(candidate) at t, short documents", fmt.Sprintf("%.4f (measured for 8-100 shingles)", st.Recall.ShortDocs))
		}
	}
	b.WriteString("</table></section>\n")

	// The S-curve.
	b.WriteString("<section id=\"s-curve\"><h2>Candidate probability</h2>\n")
	cc := curveChart{ID: "chart-s-curve", Title: fmt.Sprintf("P(candidate | s) = 1 - (1 - s^%d)^%d, threshold %v", p.Bands.R, p.Bands.B, t),
		P: p.Bands.Probability, T: t, Points: 200, FP: fp, FN: fn}
	b.WriteString(cc.svg())
	// NB: an index of storage none keeps no set to verify with: its
	// similarities are the signatures' estimates (the page said every
	// candidate was verified exactly).
	estimates := p.Storage == db.StorageNone
	verified, kind := "every candidate is verified with exact Jaccard", "exact Jaccard"
	if estimates {
		verified, kind = "this index stores no sets (storage none): candidates are kept or rejected by their signatures' estimate, which errs both ways", "estimated Jaccard"
	}
	fmt.Fprintf(&b, `<p class="note">Two documents become a candidate pair when they agree on all %d rows of at least one of the %d bands: with probability P(s) at Jaccard similarity s. The orange area left of t (%.4f) measures the candidates below the threshold that verification must reject (work, not wrong answers: %s); the red area right of t (%.4f) measures the pairs at or above the threshold that are never candidates (missed). P(t) = %.4f; the curve's usual threshold is (1/b)^(1/r) = %.4f, where P is about 1 − 1/e (it is steepest a little below).</p>`+"\n",
		p.Bands.R, p.Bands.B, fp, verified, fn, p.Bands.Probability(t), p.Bands.Threshold())
	if fn < 0.002 {
		b.WriteString(`<p class="note">The false-negative area is too thin to see at this scale: the banding was chosen for recall at the threshold.</p>` + "\n")
	}
	b.WriteString("</section>\n")

	// Pair similarities.
	bins := rd.Pairs.bins(rd.PairsLo)
	b.WriteString("<section id=\"pairs\"><h2>Pair similarities</h2>\n")
	var pbars []bar
	vals := make([]float64, len(bins))
	for i, n := range bins {
		lo := rd.PairsLo + float64(i)*pairBinWidth
		hi := min(lo+pairBinWidth, 1)
		closing := ")"
		if i == len(bins)-1 {
			closing = "]"
		}
		pbars = append(pbars, bar{Label: strconv.FormatFloat(lo, 'f', 2, 64), Value: float64(n),
			Note: fmt.Sprintf("Jaccard in [%.2f, %.2f%s: %s pairs", lo, hi, closing, groupDigits(n))})
		vals[i] = float64(n)
	}
	mark := (t - rd.PairsLo) / (float64(len(bins)) * pairBinWidth)
	pc := barChart{ID: "chart-pairs", Title: fmt.Sprintf("Pairs by %s similarity (%s pairs from %s)", kind, groupDigits(rd.Pairs.total), rd.PairsSource),
		XLabel: fmt.Sprintf("Jaccard similarity (bins of %v, by lower edge)", pairBinWidth), YLabel: "pairs", Bars: pbars, LogY: skewed(vals),
		Empty: fmt.Sprintf("no pairs at Jaccard ≥ %v", rd.PairsLo)}
	if mark >= 0 && mark <= 1 {
		pc.Mark, pc.MarkLabel = &mark, fmt.Sprintf("threshold %v", t)
	}
	b.WriteString(pc.svg())
	note := fmt.Sprintf("%s pairs at Jaccard ≥ %v (the index threshold), %s below it.", groupDigits(rd.Pairs.atOrAbove), t, groupDigits(rd.Pairs.total-rd.Pairs.atOrAbove))
	if estimates {
		note += " The similarities are the signatures' estimates (storage none): no pair was verified."
	}
	if rd.PairsLo > t && rd.PairsLoOfFile {
		// NB: it said "the bars start at 0.70 (--pairs-threshold)" of a
		// flag not given, and "the 0 between 0.5 and 0.70 are not
		// charted" of pairs the file could not hold: a file made at 0.7
		// was taken for all the pairs at 0.5 (an inspection review's N4).
		note += fmt.Sprintf(" The file's lowest similarity is %.4f, above the index threshold: if it was made at a higher threshold (pairs --threshold), the pairs between %v and %.4f are not in it, and these counts and the clusters below are short of them. pairs --output json --header writes a header, which report checks.", rd.Pairs.lowest, t, rd.Pairs.lowest)
	} else if rd.PairsLo > t {
		// NB: the caption counted every pair at or above t beside bars
		// that start above it, and summed to fewer.
		var charted int64
		for _, n := range bins {
			charted += n
		}
		note += fmt.Sprintf(" The bars start at %.2f (--pairs-threshold), so they show %s of them; the %s between %v and %.2f are not charted, but join the clusters below.",
			rd.PairsLo, groupDigits(charted), groupDigits(rd.Pairs.atOrAbove-charted), t, rd.PairsLo)
	}
	if rd.Pairs.total > 0 && rd.PairsLo < t {
		note += fmt.Sprintf(" A pair below the threshold is found only when it is a candidate, with probability P(s) (%.2f at s = %.2f), so the bars left of the threshold undercount the pairs that exist.", p.Bands.Probability(rd.PairsLo), rd.PairsLo)
	}
	fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n</section>\n", esc(note))

	// Clusters.
	b.WriteString("<section id=\"clusters\"><h2>Clusters</h2>\n")
	var cbins []int
	largest := 0
	for _, c := range rd.Clusters {
		i := clusterBin(len(c))
		for len(cbins) <= i {
			cbins = append(cbins, 0)
		}
		cbins[i]++
		largest = max(largest, len(c))
	}
	var cbars []bar
	vals = vals[:0]
	for i, n := range cbins {
		cbars = append(cbars, bar{Label: clusterBinLabel(i), Value: float64(n), Note: binNote(n, "cluster", "clusters", clusterBinLabel(i))})
		vals = append(vals, float64(n))
	}
	title := fmt.Sprintf("Cluster sizes at Jaccard ≥ %v (%s clusters, largest %s)", t, groupDigits(int64(len(rd.Clusters))), groupDigits(int64(largest)))
	if len(rd.Clusters) == 0 {
		title = fmt.Sprintf("Cluster sizes at Jaccard ≥ %v", t)
	}
	ccb := barChart{ID: "chart-clusters", Title: title, XLabel: "documents in the cluster", YLabel: "clusters", Bars: cbars, LogY: skewed(vals),
		Empty: "no clusters: no pair reaches the threshold"}
	b.WriteString(ccb.svg())
	cnote := "Connected components of the pairs at or above the threshold, as lshdb clusters finds them: two members of one cluster may be less similar than the threshold (chaining). Bins above 3 are powers of two."
	if !rd.PairsFromRun && rd.Pairs.total > 0 && rd.Pairs.lowest > t {
		cnote += fmt.Sprintf(" The pairs file's least similarity is %.4f, above the threshold: pairs between the two are not in it, and clusters may be split.", rd.Pairs.lowest)
	}
	fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(cnote))
	if len(rd.Clusters) > 0 {
		b.WriteString("<table><tr><th class=\"num\">size</th><th>members (the first 8 by id)</th></tr>\n")
		for _, c := range rd.Clusters[:min(len(rd.Clusters), 5)] {
			more := ""
			if len(c) > 8 {
				more = fmt.Sprintf(" … (%s more)", groupDigits(int64(len(c)-8)))
			}
			fmt.Fprintf(&b, "<tr><td class=\"num\">%s</td><td class=\"id\">%s%s</td></tr>\n",
				groupDigits(int64(len(c))), idList(c[:min(len(c), 8)]), more)
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</section>\n")

	// Buckets.
	b.WriteString("<section id=\"buckets\"><h2>Buckets</h2>\n")
	var bbars []bar
	vals = vals[:0]
	var hottest []db.BucketInfo
	if rd.Stats != nil && rd.Stats.Buckets != nil {
		for i, n := range rd.Stats.Buckets.Histogram {
			if i == 0 && n == 0 {
				continue // no empty lists: no bar for them
			}
			bbars = append(bbars, bar{Label: bucketBinLabel(i), Value: float64(n), Note: binNote(n, "posting list", "posting lists", bucketBinLabel(i))})
			vals = append(vals, float64(n))
		}
		hottest = rd.Stats.Buckets.Hottest
	}
	bc := barChart{ID: "chart-buckets", Title: "Bucket sizes (documents per posting list, all bands)", XLabel: "documents in the bucket",
		YLabel: "posting lists", Bars: bbars, LogY: skewed(vals), Empty: "no buckets: the index holds no document"}
	b.WriteString(bc.svg())
	b.WriteString(`<p class="note">A query reads one bucket per band and verifies every other member: large buckets (boilerplate, many copies of one text) make queries and pairs slow. "empty" lists are left by deletes until lshdb purge.</p>` + "\n")
	if expired > 0 {
		fmt.Fprintf(&b, "<p class=\"note\">The buckets still hold the %s expired documents until the sweep removes them (lshdb purge sweeps now).</p>\n", groupDigits(int64(expired)))
	}
	if len(hottest) > 0 {
		b.WriteString("<p class=\"note\">The largest buckets (lshdb bucket BAND BUCKET lists one), one row for each group of mostly the same members: bands counts the bands where it is hot (a group of identical documents is in every band).</p>\n")
		b.WriteString("<table><tr><th class=\"num\">band</th><th>bucket</th><th class=\"num\">size</th><th class=\"num\">bands</th><th>sample (first 5 members)</th></tr>\n")
		for _, h := range hottest {
			fmt.Fprintf(&b, "<tr><td class=\"num\">%d</td><td class=\"id\">%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"id\">%s</td></tr>\n",
				h.Band, bucketHex(h.Bucket), h.Size, 1+len(h.Also), idList(h.Sample))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</section>\n</main></body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
