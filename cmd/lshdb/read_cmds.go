package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/internal/extsort"
	"github.com/lshdb/lshdb/internal/topk"
	"github.com/lshdb/lshdb/minhash"
	"github.com/spf13/cobra"
)

// thresholdFlag validates an optional --threshold.
func thresholdFlag(c *cobra.Command, t float64) (float64, error) {
	if !c.Flags().Changed("threshold") {
		return 0, nil
	}
	if !(t > 0 && t <= 1) {
		return 0, usagef("--threshold %v is outside (0, 1]", t)
	}
	return t, nil
}

func (a *app) queryCmd() *cobra.Command {
	var id, text, file string
	var threshold float64
	var top, limit int
	var estimate, withText, header bool
	c := &cobra.Command{
		Use: "query --db DIR (--id ID | --text TEXT | --file PATH) [--threshold T] [--top K] [--estimate-only] [--with-text] [--header]",
		Example: `  # Near-duplicates of a stored document
  lshdb query --db idx --id fox1

  # Of a text, down to Jaccard 0.5, the best 5
  lshdb query --db idx --text "the quick brown fox jumps over the lazy cat" --threshold 0.5 --top 5

  # Of a file's contents, as JSON Lines, each match with its stored text
  # (and its metadata, which a match always shows)
  lshdb query --db idx --file notes/a.txt --output json --with-text

  # With a first line saying what was asked and found (matches found, kept
  # by --top, candidates: there when nothing matched too), and a last line
  lshdb query --db idx --id fox1 --top 3 --output json --header`,
		Short: "Near-duplicates of a stored document, a text or a file",
		Long: `The stored documents near-duplicate to one given by --id (a stored
document: itself not listed), --text or --file (- for stdin), best first:
each candidate that shares a band bucket with the query is verified by its
exact Jaccard similarity (the shingle sets compared), and reported when it
reaches --threshold (the index's by default; a lower one finds fewer of the
pairs there, as tune --db says). --estimate-only reports the signatures'
estimate without verifying (an index of storage none always does). The
table ends with a line saying what was found among how many candidates,
and the P(candidate) at the threshold; --output json gives one line a
match, and --header a first and a last line. --top K (or --limit K) keeps
the best K.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			given := 0
			for _, name := range []string{"id", "text", "file"} {
				if c.Flags().Changed(name) {
					given++
				}
			}
			if given != 1 {
				if a.shellDB != nil {
					return usagef("give exactly one of --id and --text") // NB: the shell takes no file
				}
				return usagef("give exactly one of --id, --text and --file")
			}
			// NB: --limit is --top's other name. Both given, the last
			// won, and the summary said --limit whichever it was (an
			// inspection review's SH-6).
			limitGiven := c.Flags().Changed("limit")
			if limitGiven {
				if c.Flags().Changed("top") && top != limit {
					return usagef("--top %d and --limit %d disagree: they are two names of one flag; give one", top, limit)
				}
				top = limit
			}
			if (c.Flags().Changed("top") || limitGiven) && top < 0 {
				// NB: named as given.
				// 0 is all, the default, as pairs --limit 0 is (it was
				// refused: a newcomer's N2-5).
				name := "--top"
				if limitGiven {
					name = "--limit"
				}
				return usagef("%s %d: give 0 (all, the default) or more", name, top)
			}
			if header && !a.json() {
				return usagef("--header needs --output json (the table ends with what was found)")
			}
			if c.Flags().Changed("id") {
				// NB: as get's and explain's ids (a maintainer review's M9).
				if err := checkIDArgs([]string{id}); err != nil {
					return err
				}
			}
			if c.Flags().Changed("text") && !utf8.ValidString(text) {
				// NB: each bad byte read as U+FFFD matched another
				// encoding's text as a duplicate (an embedder's review,
				// EMB-9), where insert's readers refuse such a text.
				return usageError{fmt.Errorf("--text is not UTF-8: a text in another encoding such as Latin-1 (convert it first: iconv -f latin1 -t utf-8)")}
			}
			return a.withIndex(func(d index) error {
				started := time.Now()
				rec := recallNote(d, t, estimate)
				a.warnRecall(d, t, rec, estimate)
				qo := &db.QueryOptions{Threshold: t, Limit: top, EstimateOnly: estimate, WithText: withText}
				var res *db.QueryResult
				switch {
				case c.Flags().Changed("id"):
					res, err = d.QueryID(a.ctx, id, qo)
				case c.Flags().Changed("file"):
					b, rerr := a.readAtMost(file, d.MaxDocBytes())
					if rerr != nil {
						return rerr
					}
					name := "--file " + esc(file)
					if file == "-" {
						name = "stdin"
					}
					if !docio.IsText(b) {
						// NB: as insert refuses such a file (a binary was
						// shingled, and answered "0 matches").
						return fmt.Errorf("%s: %w", name, docio.ErrBinary)
					}
					res, err = d.Query(a.ctx, string(b), qo)
					if errors.Is(err, db.ErrEmptyDocument) {
						// NB: it said "query text", not which file (an
						// inspection review's Q7).
						err = fmt.Errorf("%s: %w", name, err)
					}
				default:
					res, err = d.Query(a.ctx, text, qo)
					if errors.Is(err, db.ErrEmptyDocument) {
						// NB: a flag's value, refused as one (exit 2).
						err = usageError{fmt.Errorf("--text: %w", err)}
					}
				}
				// NB: an interrupt that came as the query ended drops its
				// answer too.
				err = cmp.Or(err, a.ctx.Err())
				if err != nil {
					return interruptNote(err, "query interrupted: nothing printed")
				}
				if a.json() {
					if header {
						h, err := runHeader(d, "query", res.Threshold, started)
						if err != nil {
							return err
						}
						q := &queryHeader{Found: res.Found, Candidates: res.Candidates, EstimateOnly: res.EstimateOnly}
						switch {
						case c.Flags().Changed("id"):
							q.ID = &id
						case c.Flags().Changed("file"):
							q.File = file
							if file == "-" {
								q.File = "stdin"
							}
						}
						if res.Found > len(res.Matches) {
							q.Top = top
						}
						h.Header.Query = q
						if err := a.emitJSON(h); err != nil {
							return err
						}
					}
					for _, m := range res.Matches {
						out := matchJSON{ID: m.ID, Estimate: similarity(m.Estimate), Bands: m.Bands, ExpectedRecall: similarityOf(rec)}
						if !res.EstimateOnly {
							out.Jaccard = similarityOf(&m.Jaccard)
						}
						// NB: as get and export write them (JSON as stored,
						// else meta_string or meta_base64).
						l := exportOf(&db.StoredDoc{Meta: m.Meta})
						out.Meta, out.MetaString, out.MetaBase64 = l.Meta, l.MetaString, l.MetaBase64
						// NB: absent for a match stored without its text (an
						// index of sets); a stored text is never empty.
						if withText && m.Text != "" {
							out.Text = &m.Text
						}
						if err := a.emitJSON(out); err != nil {
							return err
						}
					}
					if header {
						return a.emitJSON(runEndJSON{runEndBody{Lines: int64(len(res.Matches)), ElapsedSeconds: elapsedSeconds(time.Since(started))}})
					}
					if len(res.Matches) == 0 {
						// NB: no line at all read as a query that did not
						// run (a newcomer's review, NC2-2); pairs says so too.
						fmt.Fprintf(a.stderr, "no match at Jaccard >= %v among %s\n", res.Threshold, counted(res.Candidates, "candidate", "candidates"))
					}
					return nil
				}
				tw := a.table()
				// NB: a META column when a match has metadata (a URL
				// insert --meta-field kept: one get per match otherwise),
				// a TEXT column with --with-text; each escaped as get
				// escapes them.
				withMeta := slices.ContainsFunc(res.Matches, func(m db.Match) bool { return m.Meta != nil })
				head := "ID\tJACCARD\tESTIMATE\tBANDS"
				if withMeta {
					head += "\tMETA"
				}
				if withText {
					head += "\tTEXT"
				}
				fmt.Fprintln(tw, head)
				for _, m := range res.Matches {
					j := "-"
					if !res.EstimateOnly {
						j = score(m.Jaccard, res.Threshold)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d", tableID(m.ID), j, score(m.Estimate, res.Threshold), m.Bands)
					if withMeta {
						fmt.Fprintf(tw, "\t%s", metaCell(m.Meta))
					}
					if withText {
						cell := "-" // stored without its text
						if m.Text != "" {
							cell = escText(m.Text)
						}
						fmt.Fprintf(tw, "\t%s", cell)
					}
					fmt.Fprintln(tw)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				what := "Jaccard"
				if res.EstimateOnly {
					what = "estimated Jaccard (not verified)"
				}
				found := counted(len(res.Matches), "match", "matches")
				if res.Found > len(res.Matches) {
					flag := "--top"
					if limitGiven {
						flag = "--limit" // NB: the flag given, as a log says it (D-6)
					}
					found = fmt.Sprintf("%d of %d matches (%s)", len(res.Matches), res.Found, flag)
				}
				// NB: an estimate-only answer's expected recall counts its
				// estimate's step too: no longer P(candidate).
				recall := "P(candidate)"
				if res.EstimateOnly {
					recall = "P(found)"
				}
				_, err = fmt.Fprintf(a.stdout, "%s at %s >= %v among %s (%s at %v: %s)\n",
					found, what, res.Threshold, counted(res.Candidates, "candidate", "candidates"), recall, res.Threshold, probability(res.ExpectedRecall))
				a.hotQueryNote(res)
				return err
			})
		},
	}
	fs := c.Flags()
	fs.StringVar(&id, "id", "", "query by a stored document's id")
	fs.StringVar(&text, "text", "", "query by a text")
	fs.StringVar(&file, "file", "", "query by a file's contents (- for stdin)")
	fs.Float64Var(&threshold, "threshold", 0, "least Jaccard reported (default: the index's)")
	fs.IntVar(&top, "top", 0, "keep only the best K matches (0, the default: all; --limit is taken too, as pairs and the HTTP API name it)")
	// NB: --limit was refused as an unknown flag, where pairs and the
	// HTTP API's query call the count so (an inspection review's Q6).
	fs.IntVar(&limit, "limit", 0, "--top's other name, as pairs and the HTTP API name it")
	fs.BoolVar(&estimate, "estimate-only", false, "report signature estimates without exact verification")
	fs.BoolVar(&withText, "with-text", false, "show each match's stored text (a match's metadata is always shown)")
	fs.BoolVar(&header, "header", false, "with --output json: a first line saying what was queried and found (matches found, candidates, threshold, P(candidate)), also when nothing matched, and a last line")
	return c
}

// metaCell is a table's cell of stored metadata: a JSON string's value
// (what insert --meta-field keeps of a string field), other bytes as text
// (JSON as stored), each escaped; base64 when they are not UTF-8, "-" for
// none.
func metaCell(meta []byte) string {
	var str string
	switch l := exportOf(&db.StoredDoc{Meta: meta}); {
	case meta == nil:
		return "-"
	case len(meta) == 0:
		return `""`
	case l.MetaBase64 != nil:
		return "base64:" + *l.MetaBase64
	case l.Meta != nil && json.Unmarshal(l.Meta, &str) == nil:
		return esc(str)
	}
	return esc(string(meta))
}

// interruptNote turns an error that wraps context.Canceled into the one
// line the command ends with (exit 130), saying what was done; other
// errors pass unchanged.
func interruptNote(err error, format string, args ...any) error {
	if !errors.Is(err, context.Canceled) {
		return err
	}
	// NB: the note says what happened; Go's "context canceled" after it
	// said nothing more (build and insert never wrote it; a newcomer's
	// review, N6). errors.Is still finds the cancellation (the exit
	// status).
	return fmt.Errorf("%s%w", fmt.Sprintf(format, args...), silently{err})
}

// pairCmp orders pairs best first: higher Jaccard, then ids (as
// PairsOptions.Limit keeps them).
func pairCmp(x, y db.Pair) int { return db.ComparePairs(x, y) }

// ordered returns p with its ids in byte order, as the sorted output
// shows them.
func ordered(p db.Pair) db.Pair {
	if p.B < p.A {
		p.A, p.B = p.B, p.A
	}
	return p
}

// streamRows is how many table rows pairs --sort=false aligns and writes
// at a time.
const streamRows = 1000

// pairsOut prints pairs as a table or JSON lines. Table rows go through a
// tableWriter that is flushed every streamRows rows, so memory stays bounded
// and output arrives while the pairs are computed; the header comes with
// the first row (or at the end when there is none), never before an error.
// JSON lines and CSV rows are buffered and flushed as often, and also
// pairsFlushDelay after the first line the buffer took, so that a line
// never waits longer for the next ones (JSON lines on a terminal and in
// the shell are flushed at every line).
//
// NB: JSON lines were written one system call each: on scancode-rules at
// t = 0.5 (3.5 million pairs) into a pipe, 40.1 s against 29.1 s for CSV,
// 21.9 s of it in the kernel.
type pairsOut struct {
	a   *app
	rec *float64
	// estimates: the similarities are the signatures' estimates (a none
	// index): each JSON line says so, and the table's column is ESTIMATE.
	estimates bool
	tw        *tableWriter
	cw        *csv.Writer // --output csv or tsv
	// csvTerm: the CSV or TSV goes to a terminal, where each id's
	// control and format characters are escaped (escControls).
	csvTerm bool
	rows    int64
	// jw buffers JSON lines (nil until the first one); every says to
	// flush at each line (a terminal, the shell).
	jw    *bufio.Writer
	line  []byte // appendPairJSON's
	every bool
	// mu guards jw and cw against the timer's flush; timer, when set,
	// flushes them pairsFlushDelay after the first line they took since
	// the last flush.
	mu    sync.Mutex
	timer *time.Timer
}

// pairsFlushDelay is the longest a JSON line or CSV row of pairs waits in
// the buffer: a stretch of verification with no match (minutes, in a
// large run) must not hold back the lines found before it from a reader
// at the end of a pipe.
var pairsFlushDelay = time.Second

// flushLater arms the timer that flushes the lines buffered so far, if it
// is not armed. NB: o.mu is held.
func (o *pairsOut) flushLater() {
	if o.timer == nil {
		o.timer = time.AfterFunc(pairsFlushDelay, o.tick)
	}
}

// tick is the timer's flush. An error sticks in the writer: the next
// flush returns it.
func (o *pairsOut) tick() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.timer = nil
	if o.jw != nil {
		o.jw.Flush()
	} else if o.cw != nil {
		o.cw.Flush()
	}
}

// flushed says the buffers were just flushed: the timer is not needed.
// NB: o.mu is held; a tick already started finds nothing to flush.
func (o *pairsOut) flushed() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// addJSON writes a pair's JSON line: o.line when fast (appendPairJSON
// made it), else pj through encoding/json. NB: o.mu is held.
func (o *pairsOut) addJSON(pj *pairJSON, fast bool) error {
	if o.jw == nil {
		o.jw, o.every = bufio.NewWriterSize(o.a.stdout, 64<<10), o.a.stdoutIsTerminal() || o.a.shellDB != nil
	}
	if fast {
		o.jw.Write(o.line) // NB: an error sticks: Flush returns it
	} else if err := writeJSONLine(o.jw, *pj); err != nil {
		return err
	}
	if o.every || o.rows%streamRows == 0 {
		o.flushed()
		return o.jw.Flush()
	}
	o.flushLater()
	return nil
}

func (o *pairsOut) add(p db.Pair) error {
	o.rows++
	if o.a.json() {
		pj := pairJSON{A: p.A, B: p.B, Jaccard: similarity(p.Jaccard), EstimateOnly: o.estimates, ExpectedRecall: similarityOf(o.rec)}
		if o.estimates {
			pj.Estimate = &pj.Jaccard
		}
		var ok bool
		o.line, ok = appendPairJSON(o.line[:0], &pj)
		o.mu.Lock()
		err := o.addJSON(&pj, ok)
		o.mu.Unlock()
		return err
	}
	if o.a.delimited() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.cw == nil {
			o.csvHeader()
		}
		a, b := p.A, p.B
		if o.csvTerm {
			a, b = escControls(a), escControls(b)
		}
		row := []string{a, b, string(appendSimilarity(nil, p.Jaccard))}
		if o.estimates {
			row = append(row, "true")
		}
		o.cw.Write(row)
		if o.rows%streamRows == 0 {
			o.flushed()
			o.cw.Flush()
			return o.cw.Error()
		}
		o.flushLater()
		return nil
	}
	if o.tw == nil {
		o.tw = o.a.table()
		fmt.Fprintln(o.tw, "A\tB\t"+o.column())
	}
	fmt.Fprintf(o.tw, "%s\t%s\t%.4f\n", tableID(p.A), tableID(p.B), p.Jaccard)
	if o.rows%streamRows == 0 {
		return o.tw.Flush()
	}
	return nil
}

// flush writes the rows still buffered; header says whether to print the
// header of an empty table.
func (o *pairsOut) flush(header bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushed()
	o.a.pairRows = o.rows
	if o.jw != nil {
		return o.jw.Flush()
	}
	if o.a.delimited() {
		if o.cw == nil && header {
			o.csvHeader()
		}
		if o.cw == nil {
			return nil
		}
		o.cw.Flush()
		return o.cw.Error()
	}
	if o.tw == nil && header && !o.a.json() {
		o.tw = o.a.table()
		fmt.Fprintln(o.tw, "A\tB\t"+o.column())
	}
	o.a.pairRows = o.rows
	if o.tw == nil {
		return nil
	}
	return o.tw.Flush()
}

// csvHeader starts the CSV or TSV output with its header row.
//
// NB: raw into a file or a pipe (RFC 4180 keeps an id's bytes), but on a
// terminal an id's escape sequences are escaped, as a table's and a JSON
// line's are: written raw, an id could clear the screen or retitle the
// window (a multilingual user's U2).
func (o *pairsOut) csvHeader() {
	o.cw = csv.NewWriter(o.a.stdout)
	o.csvTerm = o.a.stdoutIsTerminal()
	if o.a.output == "tsv" {
		o.cw.Comma = '\t'
	}
	// NB: jaccard in a none index too (its estimate): a script that
	// takes the column by its name reads every index's pairs. Its rows
	// say estimate_only, as its JSON lines do: the note on stderr alone
	// never reached the file's reader (a nightly output review's O4).
	head := []string{"a", "b", "jaccard"}
	if o.estimates {
		head = append(head, "estimate_only")
	}
	o.cw.Write(head)
}

// column names the similarity in a table: JACCARD, or ESTIMATE in a
// none index.
func (o *pairsOut) column() string {
	if o.estimates {
		return "ESTIMATE"
	}
	return "JACCARD"
}

// stopped returns err, or the command's context error once it has ended:
// the pairs loops check it on every pair, so that an interrupt stops the
// output at once.
func (a *app) stopped(err error) error {
	if err == nil {
		err = a.ctx.Err()
	}
	return err
}

// streamPairs prints the pairs of seq as they come (--sort=false).
func (a *app) streamPairs(seq iter.Seq2[db.Pair, error], rec *float64, estimates bool) error {
	o := &pairsOut{a: a, rec: rec, estimates: estimates}
	for p, err := range seq {
		err = a.stopped(err)
		if err != nil {
			return cmp.Or(o.flush(false), interruptNote(err, "interrupted after %d pairs", o.rows))
		}
		// NB: each pair's ids in order, as the sorted output has them:
		// a fifth came as b,a, and joins on (a, b) with a sorted run's
		// pairs missed them.
		if err := o.add(ordered(p)); err != nil {
			return err
		}
	}
	return o.flush(true)
}

// pairKey encodes p so that byte order is pairCmp's: the Jaccard's bits
// complemented (best first), then A with every 0x00 escaped as 0x00 0x01
// and ended by 0x00 0x00 (so that a shorter A sorts first), then B.
func pairKey(dst []byte, p db.Pair) []byte {
	dst = binary.BigEndian.AppendUint64(dst, ^math.Float64bits(p.Jaccard))
	for i := range len(p.A) {
		if dst = append(dst, p.A[i]); p.A[i] == 0 {
			dst = append(dst, 1)
		}
	}
	dst = append(dst, 0, 0)
	return append(dst, p.B...)
}

// parsePairKey decodes what pairKey encoded.
func parsePairKey(k []byte) db.Pair {
	p := db.Pair{Jaccard: math.Float64frombits(^binary.BigEndian.Uint64(k))}
	k = k[8:]
	var a []byte
	for i := 0; i < len(k); i++ {
		b := k[i]
		if b == 0 {
			if k[i+1] == 0 {
				p.A, p.B = string(a), string(k[i+2:])
				return p
			}
			i++ // an escaped 0x00: 0x00 0x01
		}
		a = append(a, b)
	}
	return p
}

// pairSorter holds the pairs to print sorted: all of them in a heap of
// limit when there is a limit, else in an external sort that spills to a
// temporary directory beyond its memory (sortedPairs).
type pairSorter struct {
	top    *topk.Heap[db.Pair]
	ext    *extsort.KeySorter
	keybuf []byte
}

// sweepTempOfDead removes what pairs runs killed before they could left in
// the system's temporary directory: the files and directories named
// prefix + the pid of a process that is gone (a spill of every pair, a
// sort's runs: gigabytes, which nothing else removed), and untouched for
// ten minutes (NB: a process of another pid namespace sharing the
// directory looks gone; its live spill is written to as it runs).
func sweepTempOfDead(prefix string) {
	dir := os.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !namedForDeadProcess(rest) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func newPairSorter(limit, memory int) (*pairSorter, error) {
	if limit > 0 {
		return &pairSorter{top: topk.New(limit, pairCmp)}, nil
	}
	sweepTempOfDead("lshdb-pairs-sort-") // NB: reads $TMPDIR only if there is one
	// NB: the directory is made at the first spill: pairs that fit half
	// of --memory need no $TMPDIR (a nightly review, NB-2).
	return &pairSorter{ext: extsort.NewKeySorterLazy(vfs.Default, func() (string, error) {
		return os.MkdirTemp("", fmt.Sprintf("lshdb-pairs-sort-%d-", os.Getpid()))
	}, "pairs", memory)}, nil
}

func (s *pairSorter) add(p db.Pair) error {
	if s.top != nil {
		s.top.Offer(p)
		return nil
	}
	s.keybuf = pairKey(s.keybuf[:0], p)
	return s.ext.Add(s.keybuf, 0)
}

// each calls fn for every pair, best first.
func (s *pairSorter) each(fn func(db.Pair) error) error {
	if s.top != nil {
		for _, p := range s.top.Sorted() {
			if err := fn(p); err != nil {
				return err
			}
		}
		return nil
	}
	return s.ext.Iterate(func(k []byte, _ uint64) error { return fn(parsePairKey(k)) })
}

func (s *pairSorter) close() {
	if s.ext != nil {
		s.ext.Close()
		if dir := s.ext.Dir(); dir != "" {
			os.RemoveAll(dir)
		}
	}
}

// sortedPairs prints the pairs of seq best first (ties by ids); with limit
// > 0 only the best limit, kept in a heap of that size; otherwise sorted
// within memory bytes (half of --memory: 128 MiB by default), spilling to
// disk. Nothing is printed before the iteration ends.
func (a *app) sortedPairs(seq iter.Seq2[db.Pair, error], limit, memory int, rec *float64, estimates bool) error {
	sorter, err := newPairSorter(limit, memory)
	if err != nil {
		return err
	}
	defer sorter.close()
	n := 0
	for p, err := range seq {
		err = a.stopped(err)
		if err != nil {
			return interruptNote(err, "interrupted after %d pairs, none printed (the sorted output comes at the end; --sort=false streams)", n)
		}
		n++
		if err := sorter.add(ordered(p)); err != nil {
			// NB: a full /tmp said only "no space left on device".
			return fmt.Errorf("sorting the pairs beyond half of --memory in $TMPDIR (%s; --sort=false needs no room): %w", os.TempDir(), err)
		}
	}
	o := &pairsOut{a: a, rec: rec, estimates: estimates}
	// NB: the printing checks for an interrupt too: it went on to the
	// last pair (tens of seconds of output; in the shell, a statement
	// nothing could stop).
	if err := sorter.each(func(p db.Pair) error {
		if err := a.ctx.Err(); err != nil {
			return interruptNote(err, "interrupted after printing %d of %d pairs", o.rows, n)
		}
		return o.add(p)
	}); err != nil {
		return cmp.Or(o.flush(false), err) // NB: the lines accepted before it go out
	}
	return o.flush(true)
}

func (a *app) pairsCmd() *cobra.Command {
	var threshold float64
	var limit int
	var stats, sorted, header bool
	var clustersFile, out string
	var cf clusterFlags
	var mem pairsMemory
	c := &cobra.Command{
		Use: "pairs --db DIR [--threshold T] [--limit N] [--stats] [--sort=false] [--header] [--out FILE] [--clusters FILE [--mode M] [--keep K]]",
		Example: `  # Every near-duplicate pair, best first
  lshdb pairs --db idx

  # The best 100 down to Jaccard 0.5, with the work done on stderr
  lshdb pairs --db idx --threshold 0.5 --limit 100 --stats

  # Streamed as JSON Lines, unsorted, in bounded memory, with a run header
  lshdb pairs --db idx --sort=false --output json --header

  # Pairs as CSV, and their clusters in the same run
  lshdb pairs --db idx --output csv --clusters clusters.jsonl --mode centers

  # A nightly file: there complete, or not at all
  lshdb pairs --db idx --sort=false --output json --header --out pairs.jsonl.gz`,
		Short: "Every stored pair with exact Jaccard >= T, each once",
		Long: `Every stored pair with exact Jaccard >= T, each once, best first (ties by
ids). With --limit N only the best N, in memory for N pairs. With
--sort=false the pairs stream out as they are verified, in no particular
order and in bounded memory (for nightly jobs over millions of documents).
--output csv or tsv writes a header row (a,b,jaccard) and one row a pair
(on an index of storage none, whose similarities are the signatures'
estimates, a fourth column estimate_only, true on every row). Both
quote as CSV does (RFC 4180, with a tab for the comma in TSV): an id that
holds the separator, a double quote or a line end is written in double
quotes, its quotes doubled, so read them with a CSV reader (Python's
csv, with delimiter="\t" for TSV), not by splitting lines on tabs.
A run needs temporary disk space in the index's directory, removed at the
end: the stored texts of the documents in candidate pairs once they take
over a quarter of --memory (sets mode: their sets, 8 bytes an element; 0.7
GB of texts at a million generated documents of 1.3 KB) and the candidate
pairs that do not fit in --memory, 8 bytes each; and in $TMPDIR (/tmp
unless set) the sorted pairs beyond half of --memory (16 bytes each and
their ids) and, with --clusters, every pair once more (as JSON Lines).
Besides --memory, a run holds about 140 bytes a document, and the Go
heap may take twice what it holds: at a million generated documents, 460
to 520 MB whatever --memory from 2 to 256. A run that was killed leaves
its files: the next pairs run removes those in the index's directory once
they are a minute old (info counts them in the size on disk), and the next
run of the same kind (sorted without --limit, or with --clusters) those in
$TMPDIR once untouched for ten minutes.

Below the index's threshold, fewer pairs share a band: the expected recall
at T is printed on stderr and carried in each JSON line (expected_recall).

--clusters FILE also writes the clusters of all the pairs found (as
clusters --output json --header, with --mode and --keep) to FILE, from
the same run: the pairs are not computed twice. FILE always has a header
line first and an end line last, whatever --output and --header say of
the pairs (a reader skips the lines that have no "ids"). With --output
json --header the pairs' first line says how the output was made
(threshold, parameters, P(candidate), documents) and their last line
({"end": …}) how many lines came and how long the run took.
--out FILE writes the pairs to FILE instead of standard output, there
only once complete: a run that is interrupted or fails leaves no partial
file (a redirect, > FILE, does).`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			started := time.Now()
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			if !sorted && limit > 0 {
				return usagef("--limit needs the sorted output (drop --sort=false)")
			}
			if limit < 0 {
				return usagef("--limit %d: must be at least 0", limit)
			}
			if header && !a.json() {
				return usagef("--header needs --output json")
			}
			mode, keep, err := cf.options()
			if err != nil {
				return err
			}
			memory, err := mem.bytes(c)
			if err != nil {
				return err
			}
			if clustersFile == "" && (c.Flags().Changed("mode") || c.Flags().Changed("keep")) {
				return usagef("--mode and --keep need --clusters FILE")
			}
			if clustersFile == "-" {
				// NB: it made a file named "-"; stdout holds the pairs.
				return usagef("--clusters - : the clusters go to a file (its name, such as clusters.jsonl); stdout holds the pairs (lshdb pairs | lshdb clusters --from - gives the clusters alone)")
			}
			if err := checkOutFile(out); err != nil {
				return err
			}
			if sameFile(out, clustersFile) {
				return usagef("--out and --clusters are the same file")
			}
			if err := outNameFits("--out", "pairs", out, a.output, "table", "json", "csv", "tsv"); err != nil {
				return err
			}
			if clustersFile != "" {
				if err := compressionNameFits("--clusters", clustersFile); err != nil {
					return err
				}
				if err := outNameFits("--clusters", "pairs", clustersFile, "json"); err != nil {
					return err // NB: JSON Lines, whatever --output is (a review, M4)
				}
				// NB: before the run, not after it: a path that cannot be
				// written failed once every pair was out, and the pairs
				// file had no end line.
				if err := writable(clustersFile); err != nil {
					return fmt.Errorf("--clusters: %w", err)
				}
				// NB: the file the pairs go to (--clusters /dev/stdout >
				// out): written beside and renamed over it, it took the
				// name from the pairs, which went to the file unlinked.
				if f, ok := a.stdoutFile(); ok && (out == "" || out == "-") {
					if cfi, err := os.Stat(clustersFile); err == nil && cfi.Mode().IsRegular() {
						if ofi, err := f.Stat(); err == nil && os.SameFile(cfi, ofi) {
							return usagef("--clusters %s is the file the pairs are written to (standard output): give another", escControls(clustersFile))
						}
					}
				}
			}
			return a.toFile(out, func() error {
				return a.withIndex(func(d index) error {
					rec := recallNote(d, t, false)
					a.warnRecall(d, t, rec, false)
					var h headerJSON
					if header || clustersFile != "" {
						if h, err = runHeader(d, "pairs", t, started); err != nil {
							return err
						}
					}
					if header {
						ph := h
						ph.Header.Limit = limit // NB: the clusters file's header has none: it clusters every pair
						if err := a.emitJSON(ph); err != nil {
							return err
						}
					}
					var st db.PairsStats
					// NB: no bar beside pairs streamed to a terminal.
					pctx, barDone := a.ctx, func() {}
					if sorted || !a.stdoutIsTerminal() {
						pctx, barDone = a.phaseBar("pairs")
					}
					defer barDone()
					po := &db.PairsOptions{Threshold: t, Stats: &st, Memory: memory}
					if sorted && limit > 0 && limit <= httpapi.MaxPairsLimit && clustersFile == "" {
						// NB: attached, the owner keeps the best pairs and
						// sends only them (it sent every pair, and the client
						// kept the best).
						po.Limit = limit
					}
					if limit == 0 {
						// NB: 100,000 copies of one text are 5 billion
						// lines, written with no word first (a review of
						// skewed corpora, K3).
						po.OnIdentical = func(groups int, pairs int64, largest int) {
							if pairs >= identicalPairsNote {
								a.noteAboveBar(fmt.Sprintf("%s of documents with identical shingle sets (the largest of %d) %s %d pairs at Jaccard 1, each written on a line of its own: lshdb clusters gives each group once (Ctrl-C stops this run)",
									counted(groups, "group", "groups"), largest, plural(groups, "makes", "make"), pairs))
							}
						}
					}
					seq := untilDone(d.Pairs(pctx, po), barDone)
					var spill *pairSpill
					if clustersFile != "" {
						if spill, err = newPairSpill(); err != nil {
							return err
						}
						defer spill.close()
						seq = spill.tee(seq)
					}
					// NB: in a none index every similarity is the signatures'
					// estimate: said in each result, as query says it.
					estimates := d.Params().Storage == db.StorageNone
					if sorted {
						err = a.sortedPairs(seq, limit, memory/2, rec, estimates)
					} else {
						err = a.streamPairs(seq, rec, estimates)
					}
					if stats && err == nil {
						// NB: with --limit the run still finds every pair; the
						// count printed is the smaller.
						found := fmt.Sprintf("%d found", st.Reported)
						if extra := st.Reported - st.Matched - st.IdenticalPairs; extra > 0 {
							// NB: the counts did not add up on their face (a
							// newcomer's review, N7): a matched pair whose
							// documents stand for groups of identical sets is
							// found once for each pair of their members.
							found += fmt.Sprintf(" (%d more than matched plus unverified: a matched pair whose documents have identical copies is found for every pair of copies)", extra)
						}
						if sorted && limit > 0 && int64(limit) < int64(st.Reported) {
							found += fmt.Sprintf(" (%d printed: --limit)", limit)
						}
						// NB: a none index verifies nothing: its candidates
						// are estimated, and said so (a recall review: "1
						// distinct verified" of an estimate-only run).
						verified, matched := "verified", "matched"
						if d.Params().Storage == db.StorageNone {
							verified, matched = "estimated", "matched by their estimate"
						}
						a.askedf("pairs: %d documents, %s (%s reported unverified), %d posting lists (%d with over %d distinct sets, largest %d), %d candidate pairs, %d ruled out by their signatures, %d distinct %s, %d %s, %s, spilled to disk: %v\n",
							st.Docs, counted(st.IdenticalGroups, "identical group", "identical groups"), counted(st.IdenticalPairs, "pair", "pairs"), st.Lists, st.HotLists, db.HotList, st.LargestList, st.Candidates, st.Filtered, st.Verified, verified, st.Matched, matched, found, st.Spilled)
					}
					if err == nil && a.pairRows == 0 {
						// NB: an empty table is its headings alone, and an empty
						// JSON output nothing: say that the run found none.
						fmt.Fprintf(a.stderr, "no pair at Jaccard >= %v among %s\n", cmp.Or(t, d.Params().Threshold), counted(st.Docs, "document", "documents"))
					}
					if err == nil && st.Verified >= hotPairsVerified && st.Verified > 20*max(st.Matched, 1) {
						// NB: 5,000 documents sharing a footer verified 9.5
						// million pairs for none, 132x the time of 5,000
						// without, and nothing said why (a review of skewed
						// corpora, K2).
						a.notef(fmt.Sprintf("%d candidate pairs were verified for %d matched (%d posting lists with over %d distinct sets): %s",
							st.Verified, st.Matched, st.HotLists, db.HotList, a.hotBucketsAdvice()))
					}
					if err == nil && spill != nil {
						h.Header.Command, h.Header.Mode, h.Header.Keep = "clusters", string(mode), string(keep)
						err = a.clustersTo(d, clustersFile, out, spill, h, &db.PairsOptions{Threshold: t, Mode: mode, Keep: keep}, rec, started)
					}
					if err == nil && header {
						ps := pairsStatsOut(st)
						err = a.emitJSON(runEndJSON{runEndBody{Lines: a.pairRows, ElapsedSeconds: elapsedSeconds(time.Since(started)), Stats: &ps}})
					}
					return err
				})
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "least Jaccard (default: the index's)")
	c.Flags().IntVar(&limit, "limit", 0, "print at most this many pairs, the best (default 0: all)")
	c.Flags().BoolVar(&stats, "stats", false, "report on stderr the work done: identical groups (documents of one set, counted once), posting lists and the largest in distinct sets (not documents, as buckets counts them), candidate pairs (pairs of distinct sets sharing a list whose sizes allow the threshold: fewer as it rises), those their signatures ruled out, the rest verified and matched")
	c.Flags().BoolVar(&sorted, "sort", true, "sort the pairs, best first (within --memory, beyond it on disk in $TMPDIR; the best N in memory with --limit); --sort=false streams them")
	c.Flags().BoolVar(&header, "header", false, "with --output json: a first line saying how the output was made and a last line with the run time")
	c.Flags().StringVar(&out, "out", "", outFlagHelp)
	c.Flags().StringVar(&clustersFile, "clusters", "", "also write the clusters of the pairs (JSON Lines, as clusters --output json --header) to this file, compressed as its name says (.gz, .zst)")
	mem.add(c)
	cf.add(c, db.Components)
	return c
}

func (a *app) statsCmd() *cobra.Command {
	var top int
	c := &cobra.Command{
		Use:   "stats --db DIR [--top N]",
		Short: "Parameters, counts, bucket sizes, disk usage, expected recall",
		Long: `The index's parameters and expected recall, its document count, its posting
lists per band and the histogram of their sizes, the bytes stored by record
kind and on disk (tables and write-ahead log), and the N hottest buckets with
a sample of their members (--top, 5 by default; 0 for none): one row for
lists of several bands that hold mostly the same members, BANDS counting
them among the top × bands largest lists (so a larger --top may count
more; see buckets --help).

It reads every posting list, in one consistent view of the index: on a large
index it takes a while, and shows progress. info says the parameters, the
document count and the size on disk at once, without a scan; buckets lists
the hot buckets of one band; check verifies the index.`,
		Example: `  lshdb stats --db idx
  lshdb stats --db idx --top 20 --output json`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if top < 0 {
				return usagef("--top %d: must be at least 0", top)
			}
			return a.withIndex(func(d index) error {
				ctx, barDone := a.phaseBar("stats")
				st, err := d.Stats(ctx, top)
				barDone()
				if err != nil {
					return interruptNote(err, "stats interrupted: nothing printed")
				}
				sb := storedBytesJSON{Docs: st.StoredBytes["docs"], IDs: st.StoredBytes["ids"], Postings: st.StoredBytes["postings"],
					Expiry: st.StoredBytes["expiry"], ManifestCounters: st.StoredBytes["manifest+counters"]}
				if a.json() {
					p := st.Params
					in, err := d.Info()
					if err != nil {
						return err
					}
					return a.emitJSON(statsJSON{Instance: in.Instance, Docs: st.Docs, Threshold: p.Threshold, Bands: p.Bands.B, Rows: p.Bands.R,
						NumPerm: p.NumPerm, Scheme: p.Scheme.String(), Seed: p.Seed, Shingle: p.Shingle.String(), ShingleSize: p.ShingleSize,
						Bag: p.Bag, Normalization: p.Normalization.String(), StopWords: nonNil(p.StopWords), StoreText: p.StoreText, Storage: p.Storage, FormatVersion: p.FormatVersion,
						ExpectedRecall: st.ExpectedRecall, ExpectedRecallShort: shortDocs(st.Recall), PostingListsPerBand: nonNil(st.Buckets.Lists),
						BucketSizeHistogram: nonNil(st.Buckets.Histogram), StoredBytes: sb, DiskBytes: st.DiskBytes,
						TableBytes: storedBytesJSON{Docs: st.TableBytes["docs"], IDs: st.TableBytes["ids"], Postings: st.TableBytes["postings"],
							Expiry: st.TableBytes["expiry"], ManifestCounters: st.TableBytes["manifest+counters"]}, LogBytes: st.LogBytes, RecycledLogBytes: st.RecycledLogBytes,
						Hottest: bucketsJSON(st.Buckets.Hottest), Expired: st.Expired, Expiring: st.Expiring, EstimateJSON: httpapi.EstimateOut(p)})
				}
				if err := a.printParams(d, &st.Recall); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "documents: %d\n", st.Docs)
				if st.Expired > 0 || st.Expiring > 0 {
					fmt.Fprintf(a.stdout, "expiry: %d expired (awaiting the sweep, never returned), %d set to expire later\n", st.Expired, st.Expiring)
				}
				total := 0
				for _, n := range st.Buckets.Lists {
					total += n
				}
				fmt.Fprintf(a.stdout, "posting lists: %d (per band: %v)\n", total, st.Buckets.Lists)
				a.printHistogram(st.Buckets.Histogram)
				if db.IsRedisURL(a.dbDir) {
					fmt.Fprintf(a.stdout, "memory on the masters (MEMORY USAGE): docs %d, ids %d, postings %d, %smanifest and counters %d; total %s\n",
						sb.Docs, sb.IDs, sb.Postings, expiryBytes(sb.Expiry), sb.ManifestCounters, humanBytes(sb.Docs+sb.IDs+sb.Postings+sb.Expiry+sb.ManifestCounters))
					return a.printHottest(st.Buckets.Hottest, true)
				}
				fmt.Fprintf(a.stdout, "stored bytes: docs %d, ids %d, postings %d, %smanifest and counters %d; on disk %d\n",
					sb.Docs, sb.IDs, sb.Postings, expiryBytes(sb.Expiry), sb.ManifestCounters, st.DiskBytes)
				fmt.Fprintln(a.stdout, tablesLine(st.TableBytes))
				// NB: after small inserts, the tables held nothing and stats
				// read as an empty index.
				// NB: it gave the logs kept for reuse as writes not yet
				// flushed: 14 MB of a 16 MB index that held 2 MB of tables.
				// NB: the live log's part was the logs kept for reuse in
				// bytes allocated less theirs in bytes written: a fresh
				// build's 18 MB of logs, holding 367 bytes, read as writes.
				fmt.Fprintf(a.stdout, "write-ahead log on disk: %d: the live log %d (writes not yet flushed into tables, which it holds until it fills, or the writer closes the index, or it is opened again; and the space allocated ahead for the writes to come), logs kept for reuse %d (as the next logs: their space is reused, not freed)\n",
					st.LogBytes, st.LogBytes-st.RecycledLogBytes, st.RecycledLogBytes)
				return a.printHottest(st.Buckets.Hottest, true)
			})
		},
	}
	c.Flags().IntVar(&top, "top", 5, "how many of the hottest buckets to list (0: none)")
	return c
}

func (a *app) printHistogram(h []int) error {
	if !slices.ContainsFunc(h, func(n int) bool { return n > 0 }) {
		// NB: a heading over nothing, on an empty index (Q7).
		_, err := fmt.Fprintln(a.stdout, "bucket sizes: none (no posting list)")
		return err
	}
	fmt.Fprintln(a.stdout, "bucket sizes:")
	tw := a.table()
	for i, n := range h {
		if n == 0 {
			continue
		}
		lo, hi := 1<<max(i-1, 0), 1<<i-1
		switch {
		case i == 0:
			fmt.Fprintf(tw, "  empty\t%d\n", n)
		case lo == hi:
			fmt.Fprintf(tw, "  %d\t%d\n", lo, n)
		default:
			fmt.Fprintf(tw, "  %d-%d\t%d\n", lo, hi, n)
		}
	}
	return tw.Flush()
}

func (a *app) printHottest(hs []db.BucketInfo, allBands bool) error {
	if len(hs) == 0 {
		return nil
	}
	// NB: one row for a group of lists of mostly the same members: the
	// 10 hottest of the kjv verses were one group of 72 identical verses,
	// once per band (a newcomer's review, N2-1). BANDS counts its lists;
	// of one band (buckets --band) no list is compared with another
	// band's, and a BANDS of 1 said nothing (NF-2). The legend says that
	// a larger --top may count more: one bucket's BANDS of 11 in stats
	// --top 2 and 16 in buckets --top 3 read as the two disagreeing (a
	// newcomer's review, NC2-3).
	title, head := "hottest buckets:", "  BAND\tBUCKET\tSIZE\tSAMPLE"
	if allBands {
		title = "hottest buckets (one row for lists of mostly the same members; BANDS: how many bands hold such a list, of the top × bands largest lists compared: a larger --top may count more):"
		head = "  BAND\tBUCKET\tSIZE\tBANDS\tSAMPLE"
	}
	fmt.Fprintln(a.stdout, title)
	tw := a.table()
	fmt.Fprintln(tw, head)
	for _, h := range hs {
		bands := ""
		if allBands {
			bands = fmt.Sprintf("%d\t", 1+len(h.Also))
		}
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s%s\n", h.Band, bucketHex(h.Bucket), h.Size, bands, idLine(h.Sample))
	}
	return tw.Flush()
}

func (a *app) bucketsCmd() *cobra.Command {
	var band, top int
	c := &cobra.Command{
		Use:   "buckets --db DIR [--band B] [--top N]",
		Short: "Bucket-size histogram and the hottest buckets",
		Long: `The bucket-size histogram and the hottest buckets (posting lists) of one band
or all. A bucket is shown as 8 hex digits, which bucket BAND BUCKET takes.
A bucket's size counts the documents whose TTL has passed until a sweep
removes them (a writable handle, serve's, sweeps every second; lshdb purge
sweeps at once), where bucket lists only the live ones.
The hottest are one row for each hot spot: lists of other bands that hold
mostly the same members (at least half of the smaller list's members in
the larger, estimated) are counted in its BANDS, not listed again (a
group of identical documents is in every band); the row names the
largest of them, and the JSON's also the others. Of rows of one size,
those of more bands come first. Only the top × bands largest lists are
compared: a larger --top may count more bands. With --band, one band is
read, and BANDS is not shown.
With --output json: one object with posting_lists (the lists read),
posting_lists_per_band (null for a band --band did not read),
bucket_size_histogram and hottest. bucket_size_histogram[i] counts the
lists of 2^(i-1) to 2^i - 1 documents (the table's rows 1, 2-3, 4-7, …),
[0] the empty ones.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if top < 0 {
				return usagef("--top %d: must be at least 0", top)
			}
			if band < -1 {
				return usagef("--band %d: give a band (from 0), or -1 for all", band)
			}
			return a.withIndex(func(d index) error {
				ctx, barDone := a.phaseBar("buckets")
				st, err := d.Buckets(ctx, band, top)
				barDone()
				if err != nil {
					return interruptNote(err, "buckets interrupted: nothing printed")
				}
				if a.json() {
					out := bucketStatsJSON{Histogram: nonNil(st.Histogram), Hottest: bucketsJSON(st.Hottest)}
					for i, n := range st.Lists {
						if band < 0 || i == band {
							out.Lists = append(out.Lists, &n)
							out.PostingLists += n
						} else {
							out.Lists = append(out.Lists, nil) // NB: not read: null, not 0
						}
					}
					if out.Lists == nil {
						out.Lists = []*int{}
					}
					if band >= 0 {
						out.Band = &band
					}
					return a.emitJSON(out)
				}
				// NB: the table said neither which band nor how many
				// lists, as the JSON does (an inspection review's Q7).
				lists := 0
				for i, n := range st.Lists {
					if band < 0 || i == band {
						lists += n
					}
				}
				which := fmt.Sprintf("all %d bands", len(st.Lists))
				if band >= 0 {
					which = fmt.Sprintf("band %d", band)
				}
				fmt.Fprintf(a.stdout, "%s: %s\n", which, counted(lists, "posting list", "posting lists"))
				if err := a.printHistogram(st.Histogram); err != nil {
					return err
				}
				return a.printHottest(st.Hottest, band < 0)
			})
		},
	}
	c.Flags().IntVar(&band, "band", -1, "one band (-1: all of them)")
	c.Flags().IntVar(&top, "top", 10, "hottest buckets to list")
	return c
}

func (a *app) bucketCmd() *cobra.Command {
	var withText, jaccard bool
	c := &cobra.Command{
		Use:   "bucket --db DIR BAND BUCKET [--jaccard] [--with-text]",
		Short: "The members of one bucket (BUCKET in hex, as buckets prints it)",
		Long: `The ids of one bucket's members (a posting list), in insertion order, one
per line, each as the shell reads it back: Go-quoted when it holds a blank,
a quote or a control character ("Exodus 6:10"). A script that reads ids
from it takes --output json (lshdb bucket … --output json | jq -r .id).
BUCKET is 8 hex digits, as buckets, stats and explain print it.

--jaccard shows each member's Jaccard to the first member, exact from the
stored sets (estimated from the signatures on an index of storage none),
and a summary: the distinct sets among the members, the least and median
Jaccard, and how many reach the index's threshold. It tells a bucket of
near-duplicates from one of boilerplate that only collides in this band.
--with-text shows each member's stored text. Either reads every member's
record: one read each.`,
		Example: `  # The hottest buckets, then what is in the first and how alike it is
  lshdb buckets --db idx --top 3
  lshdb bucket --db idx 10 bdad9337 --jaccard --with-text`,
		Args: nArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			band, err := strconv.Atoi(args[0])
			if err != nil {
				return usagef("BAND %q is not a number", args[0])
			}
			bucket, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(args[1], "0x"), "0X"), 16, 32)
			if err != nil {
				return usagef("BUCKET %q is not a hexadecimal number of at most 8 digits (as buckets prints it)", args[1])
			}
			return a.withIndex(func(d index) error {
				ids, err := d.Bucket(band, bucket)
				if err != nil {
					return err
				}
				if len(ids) == 0 {
					// NB: stdout stays empty (a script counts lines); the
					// note says the bucket was read and holds nothing.
					fmt.Fprintf(a.stderr, "lshdb: note: band %d bucket %08x holds no document\n", band, bucket)
				}
				if len(ids) == 0 {
					return nil // NB: no header, no summary (NF-5)
				}
				if !withText && !jaccard {
					for _, id := range ids {
						if a.json() {
							err = a.emitJSON(memberJSON{Band: band, Bucket: bucketHex(bucket), ID: id})
						} else {
							_, err = fmt.Fprintln(a.stdout, tableID(id))
						}
						if err != nil {
							return err
						}
					}
					return nil
				}
				// NB: bucket printed ids only, and get took one id:
				// seeing what a hot bucket of 211 holds, and whether
				// they are alike, took 211 commands (a newcomer's
				// review, N2-2).
				return a.bucketMembers(d, band, bucket, ids, withText, jaccard)
			})
		},
	}
	c.Flags().BoolVar(&jaccard, "jaccard", false, "show each member's Jaccard to the first member, and a summary of the bucket")
	c.Flags().BoolVar(&withText, "with-text", false, "show each member's stored text")
	return c
}

// bucketMembers prints a bucket's members read from their records: with
// jaccard, each one's Jaccard to the first member and a summary (on
// stdout after the table; on stderr with JSON, whose lines are members),
// with withText their texts. A member deleted or expired since the
// bucket was read is passed over, and the summary counts it.
func (a *app) bucketMembers(d index, band int, bucket uint64, ids []string, withText, jaccard bool) error {
	var docs []*db.StoredDoc
	gone := 0
	for _, id := range ids {
		if err := a.ctx.Err(); err != nil {
			return interruptNote(err, "bucket interrupted: nothing printed")
		}
		doc, err := d.Get(id)
		if errors.Is(err, db.ErrNotFound) {
			gone++
			continue
		}
		if err != nil {
			return err
		}
		docs = append(docs, doc)
	}
	// NB: exact where both sets are kept, as explain computes it; an
	// index of storage none keeps signatures only.
	exact := !slices.ContainsFunc(docs, func(doc *db.StoredDoc) bool { return doc.Shingles == nil })
	sims := make([]float64, len(docs))
	sets := map[uint64]bool{}
	for i, doc := range docs {
		if exact {
			sims[i] = minhash.Jaccard(docs[0].Shingles, doc.Shingles)
			sets[setHash(doc.Shingles)] = true
		} else {
			sims[i] = minhash.Estimate(docs[0].Signature, doc.Signature)
		}
	}
	t := d.Params().Threshold
	simName, simHead := "Jaccard", "JACCARD"
	if !exact {
		simName, simHead = "estimated Jaccard (storage none keeps no set: from the signatures)", "ESTIMATE"
	}
	if a.json() {
		for i, doc := range docs {
			out := memberJSON{Band: band, Bucket: bucketHex(bucket), ID: doc.ID}
			if jaccard {
				out.Jaccard = similarityOf(&sims[i])
				if !exact {
					out.Jaccard, out.Estimate = nil, similarityOf(&sims[i])
				}
			}
			if withText && doc.HasText {
				out.Text = &doc.Text
			}
			if err := a.emitJSON(out); err != nil {
				return err
			}
		}
	} else {
		tw := a.table()
		head := "ID"
		if jaccard {
			head += "\t" + simHead
		}
		if withText {
			head += "\tTEXT"
		}
		fmt.Fprintln(tw, head)
		for i, doc := range docs {
			row := tableID(doc.ID)
			if jaccard {
				row += "\t" + score(sims[i], t)
			}
			if withText {
				cell := "-" // stored without its text
				if doc.HasText {
					cell = escText(doc.Text)
				}
				row += "\t" + cell
			}
			fmt.Fprintln(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if withText && len(docs) > 0 && !slices.ContainsFunc(docs, func(doc *db.StoredDoc) bool { return doc.HasText }) {
		// NB: a column of - said nothing of why (NF-9).
		fmt.Fprintf(a.stderr, "lshdb: note: no member's text is stored: the index keeps %s (lshdb create --store-text keeps texts too)\n", storageWords(d.Params().Storage))
	}
	if !jaccard {
		if gone > 0 {
			fmt.Fprintf(a.stderr, "lshdb: note: %s deleted or expired since the bucket was read: not shown\n", counted(gone, "member", "members"))
		}
		return nil
	}
	summary := bucketSummary(docs, sims, len(sets), exact, gone, t, simName)
	if a.json() {
		fmt.Fprintf(a.stderr, "lshdb: note: %s\n", summary)
		return nil
	}
	_, err := fmt.Fprintln(a.stdout, summary)
	return err
}

// storageWords says what an index of a storage mode keeps.
func storageWords(storage string) string {
	switch storage {
	case db.StorageNone:
		return "signatures only (storage none)"
	case db.StorageSets:
		return "shingle sets, not texts (storage sets)"
	}
	return "texts (storage " + storage + ")"
}

// bucketSummary says how alike a bucket's members are: to the first,
// the least and median similarity and how many reach the threshold t.
func bucketSummary(docs []*db.StoredDoc, sims []float64, distinct int, exact bool, gone int, t float64, simName string) string {
	if len(docs) == 0 {
		return fmt.Sprintf("no member left: %s deleted or expired since the bucket was read", counted(gone, "member", "members"))
	}
	var b strings.Builder
	b.WriteString(counted(len(docs), "member", "members"))
	if exact {
		fmt.Fprintf(&b, " in %s", counted(distinct, "distinct set", "distinct sets"))
	}
	if gone > 0 {
		fmt.Fprintf(&b, " (and %d deleted or expired since the bucket was read)", gone)
	}
	if len(docs) > 1 {
		rest := slices.Sorted(slices.Values(sims[1:]))
		reach := len(rest) - sort.SearchFloat64s(rest, t)
		fmt.Fprintf(&b, "; %s to the first member (%s): least %s, median %s; %d of the other %d at or above the threshold %v",
			simName, tableID(docs[0].ID), score(rest[0], t), score(median(rest), t), reach, len(rest), t)
	}
	return b.String()
}

// median is the median of sorted xs (not empty): the mean of the two
// middle values of an even count (it took the upper one: 0.5032 for
// 0.5000 and 0.5032, an inspection review's SH-5).
func median(xs []float64) float64 {
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// setHash is a digest of a shingle set, to count the distinct ones.
func setHash(set []uint64) uint64 {
	h := xxhash.New()
	var buf [8]byte
	for _, x := range set {
		binary.LittleEndian.PutUint64(buf[:], x)
		h.Write(buf[:])
	}
	return h.Sum64()
}

func (a *app) explainCmd() *cobra.Command {
	var threshold float64
	c := &cobra.Command{
		Use:   "explain --db DIR ID1 ID2",
		Short: "Why two documents match or do not: Jaccard, estimate, colliding bands",
		Long: `Why two stored documents match or do not: their exact Jaccard (or the
signature's estimate on a storage none index), the bands whose buckets
they share (and those bands' buckets, which bucket BAND BUCKET lists),
P(candidate) at their Jaccard, and whether a query by either id reports
the other. Each shared bucket's list is read: a band whose list does not
name both (damage: lshdb check) is named, and is no way for the query to
find the other. --threshold gives the verdict for a query, pairs or
clusters run at that threshold (their --threshold) instead of the index's.`,
		Args: idArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("threshold") && !(threshold > 0 && threshold <= 1) {
				return usagef("--threshold %v is outside (0, 1]", threshold)
			}
			return a.withIndex(func(d index) error {
				e, err := d.Explain(args[0], args[1])
				if err != nil {
					return err
				}
				if c.Flags().Changed("threshold") {
					// NB: it had none: its verdict was the index
					// threshold's, where the pairs run asked about was at
					// another (a shell user's review, I2).
					e = e.AtThreshold(threshold)
				}
				// NB: the shared buckets too, as bucket takes them: from
				// "why do these match" to the members of what they share
				// (a newcomer's review, W2).
				collide, buckets := []int{}, []string{}
				for i, ok := range e.Collide {
					if ok {
						collide = append(collide, i)
						buckets = append(buckets, bucketHex(e.BandKeysA[i]))
					}
				}
				if a.json() {
					out := explainJSON{A: e.A, B: e.B, Estimate: similarity(e.Estimate), EstimateOnly: e.EstimateOnly, Threshold: e.Threshold,
						Bands: len(e.Collide), CollidingBands: collide, CollidingBuckets: buckets, UnlistedBands: e.Unlisted, PCandidate: e.Probability, SizesRuleOut: e.SizesRuleOut, Found: e.Found}
					if !e.EstimateOnly {
						out.Jaccard = similarityOf(&e.Jaccard)
					}
					return a.emitJSON(out)
				}
				fmt.Fprintf(a.stdout, "%s ~ %s\n", tableID(e.A), tableID(e.B))
				if e.EstimateOnly {
					fmt.Fprintf(a.stdout, "signature estimate %s (storage none: no exact Jaccard), threshold %v\n", score(e.Estimate, e.Threshold), e.Threshold)
				} else {
					fmt.Fprintf(a.stdout, "exact Jaccard %s, signature estimate %s, threshold %v\n", score(e.Jaccard, e.Threshold), score(e.Estimate, e.Threshold), e.Threshold)
				}
				fmt.Fprintf(a.stdout, "bands colliding: %d of %d %v\n", len(collide), len(e.Collide), collide)
				if len(collide) > 0 {
					shared := make([]string, len(collide))
					for i, band := range collide {
						shared[i] = fmt.Sprintf("%d %s", band, buckets[i])
					}
					fmt.Fprintf(a.stdout, "shared buckets (band bucket, as bucket takes them): %s\n", strings.Join(shared, ", "))
				}
				if len(e.Unlisted) > 0 {
					fmt.Fprintf(a.stdout, "bands whose shared list does not name both: %v (the index's posting lists disagree with its records: lshdb check, then check --repair)\n", e.Unlisted)
				}
				// NB: on an index without sets the Jaccard is the estimate,
				// and every statement says so.
				jaccard := "Jaccard"
				if e.EstimateOnly {
					jaccard = "estimated Jaccard"
				}
				fmt.Fprintf(a.stdout, "P(candidate) at %s %s: %s\n", jaccard, score(e.Jaccard, e.Threshold), probability(e.Probability))
				var verdict string
				switch {
				case e.A == e.B:
					verdict = "the same document: no query by its id and no pair reports it with itself"
				case e.Found:
					verdict = "found: they share a band and reach the threshold"
				case e.SizesRuleOut:
					small, big := min(e.SetLenA, e.SetLenB), max(e.SetLenA, e.SetLenB)
					verdict = fmt.Sprintf("not reported, whatever the estimate: their sets of %d and %d shingles make the Jaccard at most %.4f, below the threshold", small, big, float64(small)/float64(big))
				case len(collide) == 0 && e.Jaccard >= e.Threshold:
					verdict = "missed: above the threshold, but no band collides (a false negative of LSH)"
				case len(collide) > 0 && e.EstimateOnly:
					verdict = "not reported: they share a band but the estimated Jaccard is below the threshold"
				case len(collide) > 0:
					verdict = "not reported: they share a band but the exact Jaccard is below the threshold"
				default:
					verdict = fmt.Sprintf("not reported: no band collides and the %s is below the threshold", jaccard)
				}
				_, err = fmt.Fprintln(a.stdout, verdict)
				return err
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "the verdict for a query or pairs run at this threshold (default: the index's)")
	return c
}

// messageIDs is ids for a message line: the first 20, quoted as ids are in
// messages, and how many more.
func messageIDs(ids []string) string {
	const show = 20
	list := make([]string, 0, show)
	for _, id := range ids[:min(show, len(ids))] {
		list = append(list, docio.QuoteID(id))
	}
	return strings.Join(list, ", ") + moreThan(len(ids), show)
}

// listSome is items for a message line: the first show of them, and how
// many more.
func listSome(items []string, show int) string {
	return strings.Join(items[:min(show, len(items))], ", ") + moreThan(len(items), show)
}

// moreThan is " and N more" for n items of which show are listed.
func moreThan(n, show int) string {
	if n <= show {
		return ""
	}
	return fmt.Sprintf(" and %d more", n-show)
}

// repairSummary is the line check --repair prints: what Repair mended.
func repairSummary(r db.RepairResult, onRedis bool) string {
	if !r.Changed() {
		return "repaired: nothing to mend"
	}
	var parts []string
	add := func(n int, one, many string) {
		if n > 0 {
			parts = append(parts, counted(n, one, many))
		}
	}
	add(r.Unreadable, "unreadable record removed", "unreadable records removed")
	if onRedis {
		add(r.Orphans, "record no id names removed", "records no id names removed")
	} else {
		add(r.Orphans, "record no id names removed (its id names another)", "records no id names removed (their ids name others)")
	}
	add(r.Restored, "id given back to its record", "ids given back to their records")
	add(r.Rewritten, "record derived again from its text", "records derived again from their text")
	add(len(r.Lost), "id whose record is gone removed", "ids whose record is gone removed")
	add(r.Lists, "posting list written anew (or deleted, emptied)", "posting lists written anew (or deleted, emptied)")
	add(r.Damaged, "damaged posting list among them", "damaged posting lists among them")
	add(r.Dangling, "posting of no live document removed", "postings of no live document removed")
	add(r.Reposted, "posting of a live document added (a damaged list's count them all)", "postings of live documents added (a damaged list's count them all)")
	add(r.Expiry, "expiry index entry mended", "expiry index entries mended")
	add(r.BadKeys, "key that did not parse removed", "keys that did not parse removed")
	if r.Counters {
		counters := "the counters rewritten"
		if r.CountedDocs != r.StoredDocs {
			counters += fmt.Sprintf(" (they counted %d documents, %d are stored)", r.CountedDocs, r.StoredDocs)
		}
		// NB: documents counted and gone that this repair did not remove
		// went without a delete: "the counters rewritten" alone hid 1,000
		// acknowledged documents lost with a write-ahead log removed by
		// hand (an operator's review, DR2).
		// NB: an unreadable record that an id named is in Lost too
		// (subtracted twice, a loss went unsaid: a read-through's R2).
		if gone := int64(r.CountedDocs) - int64(r.StoredDocs) - int64(len(r.Lost)); gone > 0 {
			counters += fmt.Sprintf("; %s the counters counted went without a delete (a write-ahead log or a table removed or damaged?): only a backup gives them back", counted(int(gone), "document", "documents"))
		}
		parts = append(parts, counters)
	}
	for _, c := range r.LogCuts {
		parts = append(parts, logCutNote(c))
	}
	return "repaired: " + strings.Join(parts, "; ")
}

// logCutNote says what a log cut at its damage dropped (db.LogCut), for
// the repair's summary.
func logCutNote(c db.LogCut) string {
	if c.Manifest {
		return fmt.Sprintf("the store's manifest %s cut at its damage: %s dropped, with the tables they added (the documents in them are not known: only a backup gives them back)", esc(c.Log), counted(c.Records, "record", "records"))
	}
	return fmt.Sprintf("the write-ahead log %s cut at its damage: %s of acknowledged writes dropped (%s put and %s deleted in those that read, %d unread)",
		esc(c.Log), counted(c.Records, "record", "records"), counted(len(c.Puts), "document", "documents"), counted(len(c.Deletes), "document", "documents"), c.Unread)
}

func (a *app) checkCmd() *cobra.Command {
	var repair, force, restoreIDs, removeUnnamed bool
	c := &cobra.Command{
		Use:   "check --db DIR [--repair]",
		Short: "Full consistency check; exit 4 with the problems if any (damage that stops it too)",
		Long: `Full consistency check; exit 4 with the problems if any, as for damage that stops the check (exit 1: it could not run, a missing index say).

With --repair, first mend what the check would find in the index's
structure, from the documents' records, then check. An index whose newest
write-ahead log is damaged before its end, which every other command
refuses to open (the records after the damage would be dropped unsaid), is
opened accepting that loss: the log is cut at the damage, and a copy of it
as it was is kept beside it (lshdb-damaged-NNNNNN.log). The summary (and
log_cuts in --output json) says what the cut dropped: how many records of
acknowledged writes, the ids the dropped records that still read put (put
them again, listed on stderr) and deleted, and how many did not read. On Redis: what writes
that stopped part way left (a Redis Cluster has no transaction across
keys, so a crash between a write's steps leaves them): records no id
names and postings of no live document are removed, and the postings a
live document is missing added; ids whose record is gone are removed and
listed, as are the ids of records no id names: put those documents again.
Where Redis shows that it lost writes (an id whose record is gone: a master
that came back empty, an evicted key), records no id names may be
documents whose id key Redis lost: they are left as they are and listed,
for you to choose: --restore-ids gives them their ids back (a document
deleted since its id was lost may come back), --remove-unnamed removes
them (put them again from their inputs). Run it there with no writer beside it: another process's writes, or its
expiry sweep, look half done, and their documents would be removed. It is
refused while other processes have the index open to write (as lshdb drop
is), naming when each was last seen; --force repairs under them (one
killed with the index open counts until the index is dropped). On
Pebble, whose writes are atomic, what a check finds is damage to the
files: unreadable records are removed (their ids are listed: put those
documents again), ids that name another's record removed, records no id
names given their id back (or removed as stale copies), text mode records
derived again from their text where their set size or sketch disagrees
with it, damaged or wrong posting lists written anew from the records,
and the expiry index and counters put right, in one atomic write; a
served Pebble index is repaired by its server (a server refuses a Redis
repair). What it leaves the check reports: a block whose checksum fails
is Pebble's to report: restore a backup (see lshdb backup --help) or
build the index again.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if force && !repair {
				return usagef("--force is for --repair on Redis: a check alone writes nothing")
			}
			if (restoreIDs || removeUnnamed) && !repair {
				return usagef("--restore-ids and --remove-unnamed are for --repair on Redis: a check alone writes nothing")
			}
			if restoreIDs && removeUnnamed {
				return usagef("--restore-ids and --remove-unnamed ask opposite things: give one")
			}
			open := a.withIndex
			if repair {
				// NB: with no background sweep: one that expired documents
				// while Repair read the index would see its removals undone.
				open = func(fn func(d index) error) error {
					// NB: a newest write-ahead log damaged before its end
					// (which every other open refuses) is cut at the
					// damage, a copy of it kept; so is a damaged manifest,
					// where the index opens as of its records before the
					// damage.
					d, closeDB, err := a.openDB(&db.Options{MustExist: true, ExpirySweep: -1, PurgeEvery: -1, AcceptLogDamage: true, RestoreLostIDs: restoreIDs, RemoveUnnamed: removeUnnamed})
					if err != nil {
						return err
					}
					defer closeDB()
					if dd, ok := d.(*db.DB); ok && db.IsRedisURL(dd.Dir()) && !force {
						// NB: a repair beside a writer took the records it
						// was writing for a stopped write's and removed
						// them: the writer exited 0, and check said ok.
						seen, err := dd.OtherWritersSeen(a.ctx)
						if err != nil {
							return fmt.Errorf("the processes that have %s open to write could not be counted: %w (add --force to repair it under them)", dd.Dir(), err)
						}
						live := a.liveWriters(seen, time.Now(), dd.Dir())
						if len(live) > 0 {
							return fmt.Errorf("%w: %s has the index open to write in %s: a repair beside a writer removes the documents it is writing, as a stopped write's; stop them first (a server, a shell, a program), or add --force",
								errInUse, dd.Dir(), otherWriters(live, time.Now()))
						}
					}
					if dd, ok := d.(*db.DB); ok && dd.LogDamage() != nil {
						dmg := dd.LogDamage()
						fmt.Fprintf(a.stderr, "lshdb: the newest write-ahead log %s was damaged at byte %d: dropped the damaged record and %s after it (to byte %d), as the log is now cut there; its copy as it was is %s\n",
							dmg.Log, dmg.Offset, counted(dmg.Records, "whole record", "whole records"), dmg.End, dmg.Kept)
					}
					if dd, ok := d.(*db.DB); ok {
						for _, dmg := range dd.OlderLogDamage() {
							fmt.Fprintf(a.stderr, "lshdb: the write-ahead log %s, older than the newest, was damaged at byte %d: cut at byte %d, the start of the damaged record, which dropped it and %s after it in that log (the later logs were replayed whole); its copy as it was is %s\n",
								dmg.Log, dmg.Offset, dmg.Cut, counted(dmg.Records, "whole record", "whole records"), dmg.Kept)
						}
					}
					if dd, ok := d.(*db.DB); ok && dd.ManifestDamage() != nil {
						dmg := dd.ManifestDamage()
						fmt.Fprintf(a.stderr, "lshdb: the store's manifest %s was damaged at byte %d: dropped the damaged record and %s after it (to byte %d), with the tables they added; its copy as it was is %s\n",
							dmg.Log, dmg.Offset, counted(dmg.Records, "whole record", "whole records"), dmg.End, dmg.Kept)
					}
					return fn(d)
				}
			}
			checked := false // the check's own object is written
			// NB: damage that stops the check (Pebble's checksums, a
			// damaged log at open) gave no object at all, and a job that
			// reads one had nothing to read: the damage is its problem.
			// Written within the open's function when the damage stops
			// the check, while the output is open: after it, the output
			// was closed with the index, and the write's "file already
			// closed" replaced the damage (a scripting operator's CL1).
			damageObject := func(err error) {
				if err != nil && !checked && a.json() && errors.Is(err, db.ErrCorrupt) {
					checked = true
					// NB: a failed write leaves the damage the error.
					_ = a.emitJSON(checkJSON{Problems: []string{strings.TrimPrefix(err.Error(), "lshdb: ")}, ProblemCount: 1, Stopped: true})
				}
			}
			err := open(func(d index) (err error) {
				defer func() { damageObject(err) }()
				if repair {
					// NB: a --db redis://… index is opened in-process; one
					// attached to is Pebble's (a server refuses a Redis
					// repair), whose server repairs (POST /v1/repair),
					// holding its writers off.
					dd, inProcess := d.(*db.DB)
					onRedis := inProcess && db.IsRedisURL(dd.Dir())
					ctx, barDone := a.phaseBar("repair")
					r, err := d.Repair(ctx)
					barDone()
					// NB: what a Redis repair that failed part way did is
					// said too: the ids it removed were not listed, and a
					// second repair does not find them again.
					if err == nil || r.Changed() {
						if a.json() {
							if err := a.emitJSON(httpapi.RepairOut(r)); err != nil {
								return err
							}
						} else {
							fmt.Fprintln(a.stdout, repairSummary(r, onRedis))
						}
						why := "was gone (evicted, deleted by hand, or a write lost with a node)"
						if !onRedis {
							why = "was gone or could not be read (damage to the index's files)"
						}
						// NB: on stderr in every output mode.
						if len(r.Lost) > 0 {
							fmt.Fprintf(a.stderr, "lshdb: removed %s whose record %s: put these documents again: %s\n",
								counted(len(r.Lost), "id", "ids"), why, messageIDs(r.Lost))
						}
						if len(r.Unnamed) > 0 {
							fmt.Fprintf(a.stderr, "lshdb: removed the records of %s that no id named (deletes that stopped part way, writes that stopped before their id, or older copies of documents replaced and then deleted): put again those that should be stored (ids being deleted need nothing): %s\n",
								counted(len(r.Unnamed), "id", "ids"), messageIDs(r.Unnamed))
						}
						switch {
						case len(r.Unrestored) > 0 && restoreIDs:
							fmt.Fprintf(a.stderr, "lshdb: left the records of %s without their id: Redis at its maxmemory has no room to give them back: free memory or raise maxmemory (CONFIG SET maxmemory), then run check --repair --restore-ids again: %s\n",
								counted(len(r.Unrestored), "id", "ids"), messageIDs(r.Unrestored))
						case len(r.Unrestored) > 0:
							fmt.Fprintf(a.stderr, "lshdb: left the records of %s that no id names as they are: Redis lost writes (an id whose record was gone, or counters gone or behind), so they may be documents whose id key Redis lost, or writes that stopped before their id, or older copies of documents replaced and then deleted (no record tells which): check --repair --restore-ids gives them their ids back (a document deleted since may come back), check --repair --remove-unnamed removes them (put them again from their inputs): %s\n",
								counted(len(r.Unrestored), "id", "ids"), messageIDs(r.Unrestored))
						}
						// NB: the writes a log cut dropped, as far as its
						// records read (an operator's review, O2-1: no
						// word of them but the open's note).
						for _, c := range r.LogCuts {
							if len(c.Puts) > 0 {
								fmt.Fprintf(a.stderr, "lshdb: the records dropped with %s put %s that the index no longer holds as written: put them again: %s\n",
									esc(c.Log), counted(len(c.Puts), "document", "documents"), messageIDs(c.Puts))
							}
							if len(c.Deletes) > 0 {
								fmt.Fprintf(a.stderr, "lshdb: the records dropped with %s deleted %s (by a delete, or the expiry sweep) that may be back: delete them again if they were deleted: %s\n",
									esc(c.Log), counted(len(c.Deletes), "document", "documents"), messageIDs(c.Deletes))
							}
							if c.Unread > 0 && !c.Manifest {
								fmt.Fprintf(a.stderr, "lshdb: %s dropped with %s did not read: what %s is not known: the inputs written since the last backup, or the backup, give it back\n",
									counted(c.Unread, "record", "records"), esc(c.Log), map[bool]string{true: "it wrote", false: "they wrote"}[c.Unread == 1])
							}
						}
						if len(r.RewrittenIDs) > 0 {
							fmt.Fprintf(a.stderr, "lshdb: derived %s from their stored text again (what the record said of it disagreed with it): check their text: %s\n",
								counted(len(r.RewrittenIDs), "document's record", "documents' records"), messageIDs(r.RewrittenIDs))
						}
					}
					if err != nil {
						if inProcess && !onRedis {
							return interruptNote(err, "repair interrupted: nothing changed (it writes in one atomic batch)")
						}
						return interruptNote(err, "repair interrupted: it may have mended part of what it found; run check")
					}
				}
				ctx, barDone := a.phaseBar("check")
				rep, err := d.Check(ctx)
				barDone()
				if err != nil {
					return interruptNote(err, "check interrupted: no verdict")
				}
				if a.json() {
					out := checkJSON{Docs: rep.Docs, IDs: rep.IDs, PostingLists: rep.PostingLists, EmptyLists: rep.EmptyLists,
						Postings: rep.Postings, Problems: rep.Problems, ProblemCount: rep.ProblemCount, OK: rep.OK(), Expired: rep.Expired}
					if out.Problems == nil {
						out.Problems = []string{}
					}
					checked = true
					if err := a.emitJSON(out); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(a.stdout, "%s, %s, %s (%d empty), %s\n",
						counted(rep.Docs, "document", "documents"), counted(rep.IDs, "id", "ids"), counted(rep.PostingLists, "posting list", "posting lists"), rep.EmptyLists, counted(rep.Postings, "posting", "postings"))
					if rep.Expired > 0 {
						fmt.Fprintf(a.stdout, "%s past their expiry, not yet swept: no read returns them, and count and info count them until a writable open (or lshdb purge) sweeps them\n", counted(rep.Expired, "document", "documents"))
					}
					for _, p := range rep.Problems {
						fmt.Fprintln(a.stdout, "problem:", esc(p))
					}
					if rep.ProblemCount > len(rep.Problems) {
						fmt.Fprintf(a.stdout, "%s in all, the first %d listed\n", counted(rep.ProblemCount, "problem", "problems"), len(rep.Problems))
					}
				}
				if !rep.OK() {
					// NB: it named no way out.
					if repair {
						return problemsFound{"check found problems after the repair: what the records cannot mend; restore a backup of the index, or build it again"}
					}
					return problemsFound{"check found problems: lshdb check --repair mends what the records imply (lshdb backup --copy first keeps the index as it is); what it cannot, restore a backup or build the index again"}
				}
				if !a.json() {
					_, err = fmt.Fprintln(a.stdout, "ok")
				}
				return err
			})
			damageObject(err) // damage at open
			return err
		},
	}
	c.Flags().BoolVar(&repair, "repair", false, "first mend what the check would find in the index's structure, from the records (on Redis: with no writer beside it)")
	c.Flags().BoolVar(&force, "force", false, "with --repair on Redis: repair even while other processes have the index open to write")
	c.Flags().BoolVar(&restoreIDs, "restore-ids", false, "with --repair on Redis: give records that no id names their ids back (where Redis lost id keys; a document deleted since may come back)")
	c.Flags().BoolVar(&removeUnnamed, "remove-unnamed", false, "with --repair on Redis: remove records that no id names, where Redis lost writes too (their documents are put again from their inputs)")
	return c
}

// pathCause is err without the *fs.PathError around it, whose "open
// PATH: …" did not say which of the command's files PATH was: the caller
// names it (a maintainer's review).
func pathCause(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readAtMost reads the file named path (- for stdin) if it holds at most
// max bytes, and refuses it with db.ErrDocTooLarge otherwise, having read
// max+1 bytes: query --file /dev/zero read until the process ran out of
// memory, and a 134 MB file took 290 MB before the index refused it.
func (a *app) readAtMost(path string, max int) ([]byte, error) {
	var f io.Reader = a.stdin
	// NB: every error names the file as "--file PATH" (a newcomer's
	// review, N4: a directory read "/tmp: read /tmp: is a directory").
	name := "stdin"
	if path != "-" {
		// NB: - is stdin, as for every other input of the command.
		name = "--file " + esc(path)
		file, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, pathCause(err))
		}
		defer file.Close()
		if fi, err := file.Stat(); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s: it is a directory (give a file's name)", name)
		}
		f = file
	}
	// NB: as insert reads it (docio): a gzip or zstd file inflated (it
	// was shingled as its compressed bytes, and refused as binary), a
	// byte order mark dropped (with it, a short file did not find itself).
	r, release, err := docio.Decoded(name, f)
	if err != nil {
		return nil, err
	}
	defer release()
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// NB: "unexpected EOF", where insert says what it means (a
		// bad-input review, B13).
		err = fmt.Errorf("%w: %w", docio.ErrTruncated, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, pathCause(err))
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %s holds more than %d bytes, the most a query text may have", db.ErrDocTooLarge, name, max)
	}
	return b, nil
}

// hotQueryNote notes on stderr a query that read many candidates for few
// matches: one of a corpus whose documents share a long text (a template,
// boilerplate) read 170,000 of them for none, 100x the time of a query of
// a corpus without, and said nothing of why (a review of skewed corpora,
// K2).
func (a *app) hotQueryNote(res *db.QueryResult) {
	if res.Candidates < hotQueryCandidates || res.Candidates < 20*max(res.Found, 1) {
		return
	}
	a.notef(fmt.Sprintf("%d candidates were read for %s: the query shares buckets with many documents it does not match; %s",
		res.Candidates, counted(res.Found, "match", "matches"), a.hotBucketsAdvice()))
}

// hotBucketsAdvice says, for query's and pairs' notes, what makes
// documents share buckets they do not match in, and what to do.
func (a *app) hotBucketsAdvice() string {
	return fmt.Sprintf("documents that hold one long text in common (a template, boilerplate) share buckets they do not match in; lshdb buckets --db %s shows the largest, and the texts without their common part, or an index with more rows per band (lshdb tune), make fewer candidates", esc(a.dbDir))
}

// hotQueryCandidates is the least candidates of a query that hotQueryNote
// notes, and hotPairsVerified the least verified pairs of a pairs run
// that pairs notes so (vars for the tests).
var (
	hotQueryCandidates       = 10_000
	hotPairsVerified   int64 = 1_000_000
)
