package main

// Clusters and what nightly jobs archive with them: the keep decision
// (which member to keep, which to drop and why), clusters from a pairs
// file, and the run header of pairs and clusters JSON Lines.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"strings"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/spf13/cobra"
)

// clusterFlags are --mode and --keep, of clusters, pairs --clusters,
// filter and export.
type clusterFlags struct {
	mode, keep string
}

func (f *clusterFlags) add(c *cobra.Command, mode db.ClusterMode) {
	c.Flags().StringVar(&f.mode, "mode", string(mode), "components (connected components of the pairs: chains, a member may be below the threshold to the one kept) or centers (every member is at or above the threshold to the one kept)")
	c.Flags().StringVar(&f.keep, "keep", string(db.KeepFirst), "the member each cluster keeps: first or last (inserted), longest or shortest (by shingle set size; the earliest inserted among equals)")
}

// pairsMemory is the --memory of pairs and clusters: PairsOptions.Memory
// in MiB.
type pairsMemory struct{ mib int }

func (m *pairsMemory) add(c *cobra.Command) {
	c.Flags().IntVar(&m.mib, "memory", db.DefaultPairsMemory>>20, "memory budget in MiB for the candidate pairs, the texts verification reads again (up to a quarter of it), the shingle sets derived from them (another quarter) and the sorted output (half); beyond it they spill to disk: in the index's directory, the sorted output in $TMPDIR (the process holds about 140 bytes a document besides, and the Go heap may take twice what it holds: see help pairs)")
}

// bytes checks the flag (checkMemoryFlag) and returns the budget in
// bytes, or a usage error; a budget above the default lifts the
// command's soft memory limit as build's does.
func (m *pairsMemory) bytes(c *cobra.Command) (int, error) {
	if err := checkMemoryFlag(c, m.mib); err != nil {
		return 0, err
	}
	raiseMemoryLimit(m.mib << 20)
	return m.mib << 20, nil
}

// options returns the flags as db options, or a usage error.
func (f *clusterFlags) options() (db.ClusterMode, db.KeepPolicy, error) {
	mode, keep := db.ClusterMode(f.mode), db.KeepPolicy(f.keep)
	switch mode {
	case db.Components, db.Centers:
	default:
		return "", "", usagef("--mode %q: want components or centers", f.mode)
	}
	switch keep {
	case db.KeepFirst, db.KeepLast, db.KeepLongest, db.KeepShortest:
	default:
		return "", "", usagef("--keep %q: want first, last, longest or shortest", f.keep)
	}
	return mode, keep, nil
}

// keepNote says in words which member a keep policy keeps.
func keepNote(k db.KeepPolicy) string {
	switch k {
	case db.KeepLast:
		return "the latest inserted"
	case db.KeepLongest:
		return "the largest shingle set, the earliest inserted among equals"
	case db.KeepShortest:
		return "the smallest shingle set, the earliest inserted among equals"
	}
	return "the earliest inserted"
}

// headerJSON is the first line of pairs or clusters --output json
// --header: how the file was made. The run's length is known only at its
// end: it is in the last line (runEndJSON).
type headerJSON struct {
	Header headerBody `json:"header"`
}

type headerBody struct {
	// Command is pairs or clusters.
	Command string `json:"command"`
	// Version is the lshdb that wrote the file.
	Version string `json:"lshdb_version"`
	// Started is when the run started, RFC 3339 in UTC.
	Started string `json:"started"`
	// Threshold is the least Jaccard reported; IndexThreshold the one
	// the index's banding was chosen for.
	Threshold      float64 `json:"threshold"`
	IndexThreshold float64 `json:"index_threshold"`
	// PCandidate is P(candidate) at Threshold: the chance that LSH
	// proposes a pair of exactly that Jaccard (1−(1−t^r)^b).
	PCandidate float64 `json:"p_candidate"`
	// Docs are the documents in the index when the run started, and
	// Written the documents ever written to it then (db.Info): a file
	// whose pair differs from the index's was made before a write
	// (absent from the files of earlier builds). NB: written even when
	// 0: a file made on an empty index, read as one of an earlier build,
	// was only warned of once the index held documents.
	Docs    uint64 `json:"docs"`
	Written uint64 `json:"written"`
	// hasWritten is whether a header read from a file has Written.
	hasWritten bool
	// Instance names the index (db.Info): a file made on another index,
	// one built anew in the same place included, is refused even when its
	// counts agree (absent from the files of earlier builds and of
	// indexes made before them).
	Instance string `json:"index_instance,omitempty"`
	headerParams
	// Limit is pairs --limit's: the file holds the best Limit pairs, not
	// all of them, and no clustering takes it.
	Limit int `json:"limit,omitempty"`
	// Mode and Keep are the clustering's (clusters only).
	Mode string `json:"mode,omitempty"`
	Keep string `json:"keep,omitempty"`
	// From is the pairs file the clusters were made from (clusters
	// --from).
	From string `json:"from,omitempty"`
	// Query is what a query asked and found (query only).
	Query *queryHeader `json:"query,omitempty"`
	// EstimateOnly says that the similarities that follow are the
	// signatures' estimates (storage none), as each line says: the
	// header said storage none alone (a recall review).
	EstimateOnly bool `json:"estimate_only,omitempty"`
}

// queryHeader is what query --output json --header's first line says of
// the query: what it was asked of, and what it found. Found and
// Candidates are there when nothing matched too, and a stream of
// queries (the shell's) splits at each header.
type queryHeader struct {
	// ID is the stored document queried (--id); File the file whose
	// text was (--file); neither for --text.
	ID   *string `json:"id,omitempty"`
	File string  `json:"file,omitempty"`
	// Found is how many documents matched; the lines that follow are the
	// best Top of them (all without --top).
	Found int `json:"found"`
	Top   int `json:"top,omitempty"`
	// Candidates is how many documents shared a band with the query.
	Candidates   int  `json:"candidates"`
	EstimateOnly bool `json:"estimate_only,omitempty"`
}

// runEndJSON is the last line of an output that started with a header.
type runEndJSON struct {
	End runEndBody `json:"end"`
}

// elapsedSeconds is d in seconds to the microsecond, as the JSON lines
// give it: its float64 written whole read 1.9356593069999999 (a
// newcomer's review, NC2-11).
func elapsedSeconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1e6) / 1e6
}

type runEndBody struct {
	// Lines are the data lines between the header and this line.
	Lines int64 `json:"lines"`
	// ElapsedSeconds is the run's wall time, from Started to this line.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Stats is what pairs did (pairs only).
	Stats *pairsStatsJSON `json:"stats,omitempty"`
}

// headerParams are the index's parameters a pairs header names (its
// fields are the header's: JSON promotes them): a file made on an index
// of others is another index's.
type headerParams struct {
	NumPerm     int    `json:"num_perm"`
	Bands       int    `json:"bands"`
	Rows        int    `json:"rows"`
	Scheme      string `json:"scheme"`
	Shingle     string `json:"shingle"`
	ShingleSize int    `json:"shingle_size"`
	Bag         bool   `json:"bag"`
	Storage     string `json:"storage"`
}

func paramsOf(p db.Params) headerParams {
	return headerParams{NumPerm: p.NumPerm, Bands: p.Bands.B, Rows: p.Bands.R, Scheme: p.Scheme.String(), Shingle: p.Shingle.String(),
		ShingleSize: p.ShingleSize, Bag: p.Bag, Storage: p.Storage}
}

func (p headerParams) String() string {
	return fmt.Sprintf("%d signature values, b=%d r=%d, %s, %s %d-shingles, bag %v, storage %s", p.NumPerm, p.Bands, p.Rows, p.Scheme, p.Shingle, p.ShingleSize, p.Bag, p.Storage)
}

// runHeader is the header of a run of command on d at threshold t (0:
// the index's).
func runHeader(d index, command string, t float64, started time.Time) (headerJSON, error) {
	p := d.Params()
	t = cmp.Or(t, p.Threshold)
	in, err := d.Info()
	if err != nil {
		return headerJSON{}, err
	}
	return headerJSON{headerBody{Command: command, Version: version(), Started: started.UTC().Format(time.RFC3339),
		Threshold: t, IndexThreshold: p.Threshold, PCandidate: p.Bands.Probability(t), Docs: in.Docs, Written: in.Written, Instance: in.Instance,
		headerParams: paramsOf(p), EstimateOnly: p.Storage == db.StorageNone}}, nil
}

// writeJSONLine writes v as one JSON line to w, as emitJSON does.
func writeJSONLine(w io.Writer, v any) error {
	b, err := marshalJSON(v)
	if err != nil {
		return err
	}
	b = append(escapeJSONControls(b), '\n')
	_, err = w.Write(b)
	return err
}

// clustersWriter prints clusters as text or JSON lines to w, until ctx
// ends (an interrupt: millions of clusters take a while to print).
type clustersWriter struct {
	ctx  context.Context
	w    io.Writer
	json bool
	mode db.ClusterMode
	keep db.KeepPolicy
	rec  *float64
	// estimates: the similarities are the signatures' estimates (an
	// index of storage none), said on each JSON line (a review's U1: only
	// a note on stderr said so).
	estimates bool
}

func (o *clustersWriter) write(cs []db.Cluster) (dropped int, err error) {
	for i, cl := range cs {
		if err := o.ctx.Err(); err != nil {
			return dropped, err
		}
		dropped += len(cl.IDs) - 1
		if o.json {
			line := httpapi.ClusterOut(i+1, cl, o.mode, o.keep, o.rec)
			line.EstimateOnly = o.estimates
			err = writeJSONLine(o.w, line)
		} else {
			var b strings.Builder
			fmt.Fprintf(&b, "cluster %d (%d documents", i+1, len(cl.IDs))
			if o.mode == db.Components {
				fmt.Fprintf(&b, ", weakest pair %.4f", cl.MinJaccard)
			}
			// NB: an id holding a separator of the line is quoted, so that
			// the reader sees where each ends ("y (0.9000), z" read as two
			// members). A quote too, as tables quote it (o'brien was
			// quoted by pairs and bare here; the shell reads both).
			const seps = " \"',;()"
			fmt.Fprintf(&b, "): keep %s; drop", idWord(cl.Representative, seps))
			for k, id := range cl.IDs[1:] {
				sep := ","
				if k == 0 {
					sep = ""
				}
				fmt.Fprintf(&b, "%s %s (%.4f)", sep, idWord(id, seps), cl.Jaccard[k+1])
			}
			b.WriteByte('\n')
			_, err = io.WriteString(o.w, b.String())
		}
		if err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

// clustersNote is the summary line of clusters cs on stderr, dropped the
// documents they drop; estimates: their similarities are estimates
// (storage none).
func clustersNote(cs []db.Cluster, dropped int, t float64, mode db.ClusterMode, keep db.KeepPolicy, estimates bool) string {
	what := "centers: every member is at or above the threshold to the one kept"
	if mode == db.Components {
		// NB: filter and export default to centers (each dropped member
		// at or above the threshold to the one kept): their counts differ
		// from these.
		what = "components: members are linked through pairs at or above the threshold, so a member may be less similar to the one kept (its Jaccard to it is shown); filter and export default to --mode centers"
		// NB: how many: a chain of 100,000 documents, each one word from
		// the last, was one cluster of "99999 documents to drop", 99,982
		// of them below the threshold to the one kept, down to 0.017 (a
		// review of skewed corpora, K6).
		below := 0
		for _, c := range cs {
			for _, j := range c.Jaccard[1:] {
				if j < t {
					below++
				}
			}
		}
		if below > 0 {
			what = fmt.Sprintf("components: members are linked through pairs at or above the threshold, and %d of those to drop are below it to the one kept (its Jaccard to each is shown): --mode centers keeps every member at or above it, as filter and export do by default", below)
		}
	}
	sim := "Jaccard"
	if estimates {
		// NB: the similarities of a storage-none index are estimates (a
		// statistician's review, Q5: the summary said Jaccard).
		sim = "estimated Jaccard (not verified)"
		what = strings.ReplaceAll(what, "its Jaccard", "its estimate")
	}
	return fmt.Sprintf("%s at %s >= %v, %s to drop (%s; kept: %s)", counted(len(cs), "cluster", "clusters"), sim, t, counted(dropped, "document", "documents"), what, keepNote(keep))
}

// pairsFile checks a pairs --output json file as it is read: its header
// line (pairs --header) and end line, if it has them, against its pairs
// and the run that reads it.
type pairsFile struct {
	name   string
	now    *db.Info // the index the file is read against; nil: none
	header *headerBody
	end    *runEndBody
	// endTimed: the end line has elapsed_seconds, as lshdb pairs
	// --header writes it (the API's has none).
	endTimed bool
	pairs    int64
}

// line takes one non-blank line; pair reports whether it is a pair (else
// a header or end line, checked and kept).
func (f *pairsFile) line(n int, t []byte) (pair bool, err error) {
	if f.end != nil {
		return false, fmt.Errorf("%w: %s:%d: a line after the end line", errBadPairs, f.name, n)
	}
	switch {
	case bytes.HasPrefix(t, []byte(`{"header"`)):
		var h headerJSON
		switch err := json.Unmarshal(t, &h); {
		case n != 1:
			return false, fmt.Errorf("%w: %s:%d: a header line that is not the first line of pairs --header", errBadPairs, f.name, n)
		case err != nil:
			return false, fmt.Errorf("%w: %s:%d: a malformed header line (%v): not one pairs --header wrote", errBadPairs, f.name, n, err)
		case h.Header.Command != "pairs" && h.Header.Command != "":
			// NB: one without a command (written by hand, or by a tool of
			// the user's) is taken for what it says it is.
			return false, fmt.Errorf("%w: %s:%d: the header of %q, not of pairs --header", errBadPairs, f.name, n, h.Header.Command)
		}
		var has struct {
			Header struct {
				Written *uint64 `json:"written"`
			} `json:"header"`
		}
		_ = json.Unmarshal(t, &has) // NB: t decoded above
		h.Header.hasWritten = has.Header.Written != nil
		f.header = &h.Header
		if h.Header.Limit > 0 {
			return false, fmt.Errorf("%w: %s was made with pairs --limit %d: it holds the best %s, not all of them; run pairs without --limit", errIncomplete, f.name, h.Header.Limit, counted(h.Header.Limit, "pair", "pairs"))
		}
		// NB: a stale file is refused at its first line, not after a
		// read of gigabytes.
		return false, f.fresh()
	case bytes.HasPrefix(t, []byte(`{"end"`)):
		var e runEndJSON
		if err := json.Unmarshal(t, &e); err != nil {
			return false, fmt.Errorf("%w: %s:%d: not the end line of pairs --header", errBadPairs, f.name, n)
		}
		var timed struct {
			End struct {
				Elapsed *float64 `json:"elapsed_seconds"`
			} `json:"end"`
		}
		_ = json.Unmarshal(t, &timed) // NB: t decoded above
		f.end, f.endTimed = &e.End, timed.End.Elapsed != nil
		return false, nil
	}
	f.pairs++
	return true, nil
}

// fresh refuses a file whose header says it was made on another index
// (another instance, other parameters) or on another state of this one
// (errStalePairs). A header of an earlier build, which only counts the
// documents, is not refused (finish warns of it).
func (f *pairsFile) fresh() error {
	h, now := f.header, f.now
	if h == nil || now == nil {
		return nil
	}
	if h.Instance != "" && now.Instance != "" && h.Instance != now.Instance {
		o := now.Origin
		if o == nil || o.Instance != h.Instance {
			return fmt.Errorf("%w: %s was made on another index (instance %s; this index is instance %s): one built anew in its place, another directory, or a backup of one or the other written since; run pairs again", errStalePairs, f.name, h.Instance, now.Instance)
		}
		// NB: a backup holds what its original held at the copy's
		// instant until it is written: a file of the original in that
		// state holds for it (its counts are then the backup's, which
		// the check below accepts), one of any other state does not.
		switch {
		case !o.Instant:
			return fmt.Errorf("%w: %s was made on the Redis index this one is a backup of, and such a copy is of no one instant of it; run pairs again", errStalePairs, f.name)
		case now.Written != o.Written || now.Docs != o.Docs:
			return fmt.Errorf("%w: %s was made on the index this one is a backup of (instance %s), and this one was written since the backup (it held %d documents of %d written, it holds %d of %d now); run pairs again", errStalePairs, f.name, h.Instance, o.Docs, o.Written, now.Docs, now.Written)
		case h.Written != o.Written || h.Docs != o.Docs:
			return fmt.Errorf("%w: %s was made on the index this one is a backup of (instance %s) when it held %d documents of %d written, and the backup copied it at %d of %d: another state of it; run pairs again", errStalePairs, f.name, h.Instance, h.Docs, h.Written, o.Docs, o.Written)
		}
	}
	// NB: a header without them (by hand, or by a tool of the user's)
	// names no parameters.
	if p := paramsOf(now.Params); h.NumPerm != 0 && h.headerParams != p {
		return fmt.Errorf("%w: %s was made on an index of other parameters (%v; this one has %v): another index; run pairs again", errStalePairs, f.name, h.headerParams, p)
	}
	if !h.hasWritten || now.Written == 0 && h.Written == 0 || h.Written == now.Written && h.Docs == now.Docs {
		return nil
	}
	if h.Written > now.Written {
		return fmt.Errorf("%w: %s was made when the index held %d documents of %d written, and this one holds %d of %d: the file is of a later state of the index than this one (an older copy of it?); run pairs again", errStalePairs, f.name, h.Docs, h.Written, now.Docs, now.Written)
	}
	return fmt.Errorf("%w: %s was made when the index held %d documents of %d written, it holds %d of %d now: the index was written since (a put, a delete, an expiry swept), and the pairs of the documents written or deleted no longer hold; run pairs again", errStalePairs, f.name, h.Docs, h.Written, now.Docs, now.Written)
}

// errIncomplete is the error of a pairs file whose header says it was cut
// short.
var errIncomplete = errors.New("incomplete pairs file")

// errStalePairs is the error of a pairs file made before the index was
// last written.
var errStalePairs = errors.New("stale pairs file")

// finish checks the whole file: a file with a header must end with its
// end line and hold the pairs that line counts (else the run that wrote
// it was interrupted, or the file was cut), must have been made at a
// threshold no higher than t, the clustering's (its pairs below that are
// missing), and not with --limit. Its header was checked against the
// index (f.now) at its line (fresh); one of an earlier build, which only
// counts the documents, is warned of here when the count differs.
func (f *pairsFile) finish(t float64, warn func(string)) error {
	if f.header == nil {
		if f.end != nil {
			// NB: what GET /v1/pairs sends: an end line and no header
			// (it was refused: a review of the API from a client's
			// side, AC14). Its count of lines is checked, its
			// threshold is the caller's to know, as in a file without
			// either. The end line of lshdb pairs --header (timed)
			// without its header is a file that lost the header, whose
			// threshold, limit and index were checked there: refused
			// (a read-through, R1).
			switch {
			case f.endTimed:
				return fmt.Errorf("%w: %s: the end line of pairs --header but no header line (the file lost its first line?); run pairs again", errBadPairs, f.name)
			case f.end.Lines != f.pairs:
				return fmt.Errorf("%w: %s holds %d pairs, its end line says %d: the file was cut or edited; run pairs again", errIncomplete, f.name, f.pairs, f.end.Lines)
			case f.end.Stats != nil && f.end.Stats.Reported > f.end.Lines:
				return fmt.Errorf("%w: %s holds %s of the %d its run found (pairs with a limit): ask for the pairs without one", errIncomplete, f.name, counted(f.end.Lines, "pair", "pairs"), f.end.Stats.Reported)
			}
			return nil
		}
		if f.pairs == 0 && warn != nil {
			// NB: what pairs … > FILE leaves when it fails before its first
			// line (a locked index, a wrong --db) was taken silently as a
			// night without duplicates.
			warn(fmt.Sprintf("%s holds no pairs and no header line: taken as no pairs, though an empty file is also what a pairs run that failed leaves (pairs --output json --header writes a header and an end line even when it finds no pair, and a file of it cut short is refused)", f.name))
		}
		return nil
	}
	h := f.header
	switch {
	case f.end == nil:
		return fmt.Errorf("%w: %s has the header of pairs --header but no end line: the run that wrote it was interrupted, or the file was cut (%d pairs read); run pairs again", errIncomplete, f.name, f.pairs)
	case f.end.Lines != f.pairs:
		return fmt.Errorf("%w: %s holds %d pairs, its end line says %d: the file was cut or edited; run pairs again", errIncomplete, f.name, f.pairs, f.end.Lines)
	case f.end.Stats != nil && f.end.Stats.Reported > f.end.Lines:
		// NB: a file of pairs --limit made by an earlier build, whose
		// header does not say so: its end line's stats count every pair.
		return fmt.Errorf("%w: %s holds %s of the %d its run found (pairs --limit): run pairs without --limit", errIncomplete, f.name, counted(f.end.Lines, "pair", "pairs"), f.end.Stats.Reported)
	case t > 0 && h.Threshold > t+1e-12:
		return fmt.Errorf("%w: %s holds the pairs at Jaccard >= %v, and the clustering asks for >= %v: the pairs between are not in it; make the file with pairs --threshold %v --header (clusters and filter can instead cluster at --threshold %v)", errBadPairs, f.name, h.Threshold, t, t, h.Threshold)
	}
	// NB: the header was checked against the index at its line (fresh).
	// One of an earlier build counts the documents, not the writes: the
	// same count said nothing of a document replaced since, whose old
	// pairs export --from then took for the new text's (an upgrade
	// review's UPG-1: a unique document removed as a 0.985 duplicate).
	if now := f.now; now != nil && warn != nil && !h.hasWritten {
		if h.Docs != now.Docs {
			warn(fmt.Sprintf("%s was made when the index held %d documents, it holds %d now: documents written since are in no pair of it, and those replaced or deleted keep their old pairs; run pairs again", f.name, h.Docs, now.Docs))
		} else {
			warn(fmt.Sprintf("the header of %s counts the index's documents (%d, as now) but not its writes (an earlier lshdb's, or one written by hand): it cannot be checked that the index was not written since (a document replaced keeps its old pairs), and its pairs are taken as they are; run pairs again to be sure", f.name, h.Docs))
		}
	}
	return nil
}

// notef prints a note on stderr.
func (a *app) notef(s string) { fmt.Fprintf(a.stderr, "lshdb: note: %s\n", s) }

// warnf writes a warning: a line --quiet keeps. NB: a pairs file that
// cannot be checked (empty, or with no header) was said in a note, which
// --quiet drops, and a cron job filtered with the pairs of a redirect cut
// short, exit 0 and nothing said (a nightly review, NB-3).
func (a *app) warnf(s string) { fmt.Fprintf(a.stderr, "lshdb: warning: %s\n", s) }

// noteAboveBar is notef while a progress bar may be on stderr's line:
// the note takes the line (the bar is drawn again below it).
func (a *app) noteAboveBar(s string) {
	if a.progressStyle() == progressBar {
		fmt.Fprint(a.stderr, "\r\x1b[2K")
	}
	a.notef(s)
}

// identicalPairsNote is the number of pairs of identical documents from
// which pairs says, before the first, that it writes them all.
var identicalPairsNote int64 = 10_000_000

// readPairsFile yields the pairs of a pairs --output json file, "-" for
// standard input (pairLines); flag is the option that named it, for its
// errors. meter, when not nil, counts the bytes read, of the file's size
// where it has one (a regular file, standard input too).
func (a *app) readPairsFile(flag, path string, t float64, now *db.Info, warn func(string), meter *readMeter) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) {
		var r io.Reader = a.stdin
		name := "stdin"
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				yield(db.Pair{}, fmt.Errorf("%w: %s %s: %w", errBadPairs, flag, esc(path), pathCause(err)))
				return
			}
			defer f.Close()
			r, name = f, path
		}
		if meter != nil {
			if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
				if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
					meter.size.Store(fi.Size())
				}
			}
			r = meter.reader(r)
		}
		// NB: gzip or zstd (pairs … | gzip) and a byte order mark, as
		// every input of the command is read.
		br, release, err := docio.Decoded(name, r)
		if err != nil {
			yield(db.Pair{}, fmt.Errorf("%w: %w", errBadPairs, err))
			return
		}
		defer release()
		for p, err := range pairLines(br, name, t, now, warn) {
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// pairLines yields the pairs of r, the JSON Lines of pairs --output json
// (name names it in errors): each a pair of two ids, not one twice, with
// a Jaccard in [0, 1]; blank lines skipped. A file made with --header is
// checked against now, the index (when not nil), at its header line
// (pairsFile.fresh), and at its end (pairsFile.finish, with t and warn; t
// 0: no threshold check). Every error is errBadPairs, errIncomplete or
// errStalePairs, and the sequence's last.
func pairLines(r io.Reader, name string, t float64, now *db.Info, warn func(string)) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) {
		pf := pairsFile{name: escControls(name), now: now}
		br := bufio.NewReaderSize(r, 64<<10)
		for line := 1; ; line++ {
			b, err := readPairLine(br)
			if errors.Is(err, errLongPairLine) {
				yield(db.Pair{}, fmt.Errorf("%w: %s:%d: %w", errBadPairs, pf.name, line, err))
				return
			}
			if ln := bytes.TrimSpace(b); len(ln) > 0 {
				p, ok, perr := pf.pair(line, ln)
				if perr != nil {
					yield(db.Pair{}, perr)
					return
				}
				if ok && pf.pairs == 1 && pf.header == nil && warn != nil {
					// NB: such a file was taken silently, stale or cut
					// short; said at its first line, before any error.
					warn(fmt.Sprintf("%s has no header line (pairs --output json --header writes one): it cannot be checked against the index, and its pairs are taken as they are", pf.name))
				}
				if ok && !yield(p, nil) {
					return
				}
			}
			if err == io.EOF {
				if ferr := pf.finish(t, warn); ferr != nil {
					yield(db.Pair{}, ferr)
				}
				return
			}
			if err != nil {
				yield(db.Pair{}, fmt.Errorf("%w: %s: %w", errBadPairs, pf.name, err))
				return
			}
		}
	}
}

// maxPairLine is the longest line a pairs file may hold: a pair of two
// ids of the longest (4,096 bytes, each written as up to six escaped) is
// under 50 KB, and a header line is smaller.
const maxPairLine = 1 << 20

// errLongPairLine is readPairLine's error for a line past maxPairLine.
var errLongPairLine = fmt.Errorf("a line longer than %d bytes, which no pair or header is (not a file of pairs --output json?)", maxPairLine)

// readPairLine reads a line of a pairs file, with its line end, as
// bufio.Reader.ReadBytes does, but refuses one longer than maxPairLine.
// NB: ReadBytes held the whole line: clusters --from /dev/zero grew to
// 15 GB, deaf to its first signal (a bad-input review, B2).
func readPairLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxPairLine {
			return nil, errLongPairLine
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// pair reads line n, a non-blank line: a pair (ok), or a header or end
// line (pairsFile.line), or an error.
func (f *pairsFile) pair(n int, ln []byte) (p db.Pair, ok bool, err error) {
	if isPair, err := f.line(n, ln); !isPair || err != nil {
		return p, false, err
	}
	var rec struct {
		A       *string  `json:"a"`
		B       *string  `json:"b"`
		Jaccard *float64 `json:"jaccard"`
	}
	if err := json.Unmarshal(ln, &rec); err != nil {
		// NB: encoding/json's message names Go types or what it tried.
		return p, false, fmt.Errorf("%w: %s:%d: not a JSON object (want a pair of pairs --output json: {\"a\":…,\"b\":…,\"jaccard\":…})", errBadPairs, f.name, n)
	}
	switch {
	case rec.A == nil || rec.B == nil || rec.Jaccard == nil || *rec.A == "" || *rec.B == "":
		return p, false, fmt.Errorf("%w: %s:%d: a pair needs a, b and jaccard", errBadPairs, f.name, n)
	case *rec.A == *rec.B:
		return p, false, fmt.Errorf("%w: %s:%d: a pair of %q with itself", errBadPairs, f.name, n, *rec.A)
	case !(*rec.Jaccard >= 0 && *rec.Jaccard <= 1):
		return p, false, fmt.Errorf("%w: %s:%d: jaccard %v is outside [0, 1]", errBadPairs, f.name, n, *rec.Jaccard)
	}
	return db.Pair{A: *rec.A, B: *rec.B, Jaccard: *rec.Jaccard}, true, nil
}

func (a *app) clustersCmd() *cobra.Command {
	var threshold float64
	var from, out string
	var header bool
	var cf clusterFlags
	var mem pairsMemory
	c := &cobra.Command{
		Use: "clusters --db DIR [--threshold T] [--mode components|centers] [--keep first|last|longest|shortest] [--from PAIRS.jsonl] [--header] [--out FILE]",
		Example: `  # Groups of near-duplicates, largest first, and what to keep of each
  lshdb clusters --db idx

  # Clusters that do not chain, keeping the longest document, as JSON Lines
  lshdb clusters --db idx --mode centers --keep longest --output json`,
		Short: "Clusters of near-duplicates, and the member each keeps",
		Long: `Clusters of near-duplicates, largest first, one per line: the member to keep
(--keep: first or last inserted, longest or shortest by shingle set size,
the earliest inserted among equals)
and the ones to drop, each with its exact Jaccard to the one kept.

--mode components (the default) are connected components of the pairs:
they chain (a ~ b ~ c), so a member may be less similar to the one kept
than the threshold; each cluster shows its weakest pair (min_jaccard in
JSON). --mode centers does not chain: the documents are taken in the keep
order, and one not yet in a cluster keeps every unclustered document it
forms a pair with; every member is at or above the threshold to the one
kept, and no two documents kept form a pair that was found.

--from reads the pairs from a file of pairs --output json instead of
finding them (the index still supplies insertion order, sizes, and the
sets for each member's Jaccard). A file written with --header is checked:
it must end with its end line and hold as many pairs as that line says
(a run that was interrupted leaves neither), at a threshold no higher
than the clustering's, made without --limit, on this index as it is now:
a file made before the index was last written (a put, a delete, an
expiry), or on another index, is refused. A file without a header cannot
be checked, and a note says so: write pairs files with --header. A
summary line goes to stderr (stdout holds the clusters alone). With
--output json --header the first line says how the file was made and the
last line ({"end": …}) how long it took. --out FILE writes the clusters to
FILE instead of standard output, there only once complete: a run that is
interrupted or fails leaves no partial file (a redirect, > FILE, does).`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			started := time.Now()
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			mode, keep, err := cf.options()
			if err != nil {
				return err
			}
			if header && !a.json() {
				return usagef("--header needs --output json")
			}
			if from != "" && c.Flags().Changed("memory") {
				return usagef("--memory bounds the search for pairs, which --from replaces")
			}
			memory := 0
			if from == "" {
				if memory, err = mem.bytes(c); err != nil {
					return err
				}
			}
			if err := checkOutFile(out); err != nil {
				return err
			}
			if err := outNameFits("--out", "clusters", out, a.output, "table", "json"); err != nil {
				return err
			}
			return a.toFile(out, func() error {
				return a.withIndex(func(d index) error {
					rec := recallNote(d, t, false)
					if from == "" {
						a.warnRecall(d, t, rec, false)
					}
					var h headerJSON
					if header {
						if h, err = runHeader(d, "clusters", t, started); err != nil {
							return err
						}
						h.Header.Mode, h.Header.Keep, h.Header.From = string(mode), string(keep), from
					}
					po := &db.PairsOptions{Threshold: t, Mode: mode, Keep: keep, Memory: memory}
					cs, err := a.clusters(d, from, po, nil)
					if err != nil {
						return interruptNote(err, "clusters interrupted: nothing printed")
					}
					if header {
						if err := a.emitJSON(h); err != nil {
							return err
						}
					}
					// NB: buffered (a system call a cluster before), as the
					// --clusters file of pairs is; the clusters are all known
					// before the first is written.
					bw := bufio.NewWriterSize(a.stdout, 64<<10)
					o := &clustersWriter{ctx: a.ctx, w: bw, json: a.json(), mode: mode, keep: keep, rec: rec, estimates: d.Params().Storage == db.StorageNone}
					dropped, err := o.write(cs)
					if err = cmp.Or(bw.Flush(), err); err != nil {
						return interruptNote(err, "clusters interrupted: the first clusters of %d printed", len(cs))
					}
					// NB: in every format, on stderr: a nightly job's log
					// of a JSON run had no count to alert on (a review, B3).
					fmt.Fprintln(a.stderr, clustersNote(cs, dropped, cmp.Or(t, d.Params().Threshold), mode, keep, d.Params().Storage == db.StorageNone))
					if header {
						return a.emitJSON(runEndJSON{runEndBody{Lines: int64(len(cs)), ElapsedSeconds: elapsedSeconds(time.Since(started))}})
					}
					return nil
				})
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "least Jaccard (default: the index's)")
	c.Flags().StringVar(&from, "from", "", "make the clusters from this file of pairs --output json (- for stdin) instead of finding the pairs")
	c.Flags().StringVar(&out, "out", "", outFlagHelp)
	c.Flags().BoolVar(&header, "header", false, "with --output json: a first line saying how the file was made (threshold, parameters, P(candidate), documents) and a last line with the run time")
	mem.add(c)
	cf.add(c, db.Components)
	return c
}

// clusters clusters d (from the pairs file from, if given), with a bar
// on a terminal.
//
// warn is told what cannot be checked of the file (nil: a.warnf).
func (a *app) clusters(d index, from string, po *db.PairsOptions, warn func(string)) ([]db.Cluster, error) {
	if warn == nil {
		warn = a.warnf
	}
	if from != "" {
		now, err := d.Info()
		if err != nil {
			return nil, err
		}
		meter := &readMeter{}
		ctx, barDone := a.phaseBar("clusters", phaseNote{"reading pairs", meter.note})
		defer barDone()
		return d.ClustersFrom(ctx, a.readPairsFile("--from", from, cmp.Or(po.Threshold, d.Params().Threshold), now, warn, meter), po)
	}
	ctx, barDone := a.phaseBar("clusters")
	defer barDone()
	return d.Clusters(ctx, po)
}

// untilDone yields seq, then calls done (before the loop's caller goes on).
func untilDone[T any](seq iter.Seq2[T, error], done func()) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		defer done()
		for v, err := range seq {
			if !yield(v, err) {
				return
			}
		}
	}
}

// pairSpill keeps the pairs of a pairs run in a temporary file (JSON
// Lines), so that pairs --clusters makes the clusters from them after the
// pairs are printed, without a second join or the pairs in memory.
type pairSpill struct {
	f   *os.File
	bw  *bufio.Writer
	err error
}

func newPairSpill() (*pairSpill, error) {
	sweepTempOfDead("lshdb-pairs-")
	f, err := os.CreateTemp("", fmt.Sprintf("lshdb-pairs-%d-*.jsonl", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("keeping the pairs for --clusters in $TMPDIR (%s): %w", os.TempDir(), err)
	}
	return &pairSpill{f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

// tee yields the pairs of seq and writes each to the file.
func (s *pairSpill) tee(seq iter.Seq2[db.Pair, error]) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) {
		for p, err := range seq {
			if err == nil && s.err == nil {
				s.err = writeJSONLine(s.bw, pairJSON{A: p.A, B: p.B, Jaccard: similarity(p.Jaccard)})
			}
			if err == nil && s.err != nil {
				err = fmt.Errorf("writing the pairs for --clusters: %w", s.err)
			}
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

func (s *pairSpill) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// clustersTo writes the clusters of the spilled pairs to path: header h,
// one JSON line a cluster, an end line.
func (a *app) clustersTo(d index, path, pairsOut string, s *pairSpill, h headerJSON, po *db.PairsOptions, rec *float64, started time.Time) error {
	// NB: "the pairs were printed" of pairs --out FILE, which an
	// interrupt leaves unwritten too (a nightly output review's O5).
	stopped := "clusters interrupted: the pairs were printed, no clusters written"
	if pairsOut != "" && pairsOut != "-" {
		stopped = "clusters interrupted: no clusters written"
	}
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("writing the pairs for --clusters: %w", err)
	}
	meter := &readMeter{}
	ctx, barDone := a.phaseBar("clusters", phaseNote{"reading pairs", meter.note})
	cs, err := d.ClustersFrom(ctx, a.readPairsFile("--clusters", s.f.Name(), 0, nil, nil, meter), po)
	barDone()
	if err != nil {
		return interruptNote(err, "%s", stopped)
	}
	// NB: written beside it and renamed, as filter's and export's
	// outputs: a run killed while writing left a file cut short in its
	// place (and one that failed before, last night's).
	f, err := createTempFor(path)
	if err != nil {
		return err
	}
	// NB: compressed as the name says (.gz: BGZF, .zst), as filter's and
	// export's outputs: a clusters.jsonl.gz held plain JSON Lines.
	zw, err := nameWriter(f, path)
	if err != nil {
		return commitTemp(f, path, true, err)
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	o := &clustersWriter{ctx: a.ctx, w: bw, json: true, mode: po.Mode, keep: po.Keep, rec: rec, estimates: d.Params().Storage == db.StorageNone}
	err = writeJSONLine(bw, h)
	dropped := 0
	if err == nil {
		dropped, err = o.write(cs)
	}
	if err == nil {
		err = writeJSONLine(bw, runEndJSON{runEndBody{Lines: int64(len(cs)), ElapsedSeconds: elapsedSeconds(time.Since(started))}})
	}
	if err == nil {
		err = bw.Flush()
	}
	// NB: closed in any case: it ends the compressor's goroutines.
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	commit := func(ok bool) error {
		if !ok {
			commitTemp(f, path, false, nil)
			return fmt.Errorf("--clusters %s was not written either: its pairs were not", escControls(path))
		}
		if err := commitTemp(f, path, true, err); err != nil {
			return interruptNote(fmt.Errorf("%s: %w", path, err), "%s", stopped)
		}
		fmt.Fprintf(a.stderr, "%s: %s\n", escControls(path), clustersNote(cs, dropped, cmp.Or(po.Threshold, d.Params().Threshold), po.Mode, po.Keep, d.Params().Storage == db.StorageNone))
		return nil
	}
	// NB: with pairs --out, after the pairs file: committed first, the
	// clusters were tonight's beside last night's pairs when the pairs'
	// last write failed.
	if err == nil && a.deferOutCommit(f, path, commit) {
		return nil
	}
	return commit(true)
}
