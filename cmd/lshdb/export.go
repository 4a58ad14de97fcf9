package main

// lshdb export: the index's documents, less the near-duplicates a
// clustering drops, from the texts it stores.

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/spf13/cobra"
)

// exportLine is one line of export: a document as insert reads it back
// (--meta-field meta), or without text when the index did not store it.
type exportLine struct {
	ID         string          `json:"id"`
	Text       *string         `json:"text,omitempty"`
	Meta       json.RawMessage `json:"meta,omitempty"`
	MetaString *string         `json:"meta_string,omitempty"`
	MetaBase64 *string         `json:"meta_base64,omitempty"`
}

// exportOf is doc's export line: its metadata as JSON when it is JSON
// (what insert --meta-field stores), else as a string or base64.
func exportOf(doc *db.StoredDoc) exportLine {
	l := exportLine{ID: doc.ID}
	if doc.HasText {
		l.Text = &doc.Text
	}
	switch m := doc.Meta; {
	case m == nil:
	case json.Valid(m) && utf8.Valid(m):
		// NB: json.Valid takes bytes that are not UTF-8 inside a string,
		// and a Latin-1 value stored by an earlier insert was written
		// back as such, which a JSON reader refuses (an input review,
		// IN-2): base64 below.
		l.Meta = m
	default:
		if s := string(m); utf8.Valid(m) {
			l.MetaString = &s
		} else {
			e := base64.StdEncoding.EncodeToString(m)
			l.MetaBase64 = &e
		}
	}
	return l
}

func (a *app) exportCmd() *cobra.Command {
	var df dedupFlags
	var all, salvage bool
	c := &cobra.Command{
		Use: "export --db DIR [--out FILE] [--removed FILE] [--all] [--mode centers|components] [--keep first|last|longest|shortest]",
		Example: `  # The deduplicated corpus, from the texts the index stores
  lshdb export --db idx --out kept.jsonl.zst --removed removed.jsonl

  # Every stored document
  lshdb export --db idx --all --out all.jsonl`,
		Short: "Write the stored documents without their near-duplicates, as JSON Lines",
		Long: `Write the index's documents, in insertion order, less the ones a clustering
drops (each cluster keeps one member: --keep), as JSON Lines of id, text
and meta (the stored metadata, when there is any: JSON as it was stored,
else meta_string or meta_base64) — the shape insert reads back with
--meta-field meta. The
texts are the ones the index stores (the default text storage); a
document whose text was not stored (storage sets or none) is written
without text, and the summary says how many.

--removed FILE writes the removed documents too, each with duplicate_of
(the id kept) and similarity (its exact Jaccard to it). --all writes every
document (no clustering). To keep the original records, every field and
byte as they were, use lshdb filter on the input files instead.

An output file is compressed as its name says (.gz, .zst), written beside
it and renamed when complete. The summary goes to stderr.

The clustering and the read of the documents must see one state of the
index: an export attached to a server (or of an index on Redis) that
meets a write between them fails, with its output files left as they were
(a document could be dropped as a copy of one deleted meanwhile). Run it
again once the writers are done, or export a backup.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			t, mode, keep, err := df.check(c)
			if err != nil {
				return err
			}
			if c.Flags().Changed("output") && a.output == "table" {
				// NB: taken, and JSON Lines written (a nightly output
				// review's O7).
				return usagef("--output table: export writes JSON Lines (the shape insert reads back); leave --output out")
			}
			if all && (df.removed != "" || df.from != "") {
				return usagef("--all exports every document: --removed and --from have nothing to do")
			}
			for _, f := range []string{"mode", "keep", "threshold"} {
				if all && c.Flags().Lookup(f) != nil && c.Flags().Changed(f) {
					// NB: taken silently, with no clustering to apply it
					// to (a bad-input review, B15).
					return usagef("--all exports every document, with no clustering: --%s has nothing to do", f)
				}
			}
			if salvage && !all {
				return usagef("--salvage goes with --all: clustering reads the posting lists, which a damaged index may not give")
			}
			return a.withIndex(func(d index) error {
				var fates map[string]fate
				var before *db.Info
				nClusters := 0
				start := time.Now() // NB: the clustering's lines and the writing's count from it
				man, err := a.newManifest(df.manifest, d, "export", t, start)
				if err != nil {
					return err
				}
				if !all {
					if before, err = d.Info(); err != nil {
						return err
					}
					if fates, nClusters, err = df.fates(a, d, t, mode, keep); err != nil {
						return interruptNote(err, "export interrupted while clustering: nothing written")
					}
				}
				if exportScanning != nil {
					exportScanning()
				}
				src := docio.Source{Name: indexSource, Format: "jsonl"}
				kept, drop := df.sinks(a, nil, "")
				n, noText, lost, err := a.export(d, fates, src, kept, drop, salvage, start)
				if err == nil && before != nil {
					err = writtenDuring(d, before, kept)
				}
				summary := fmt.Sprintf("%s exported", counted(n.kept, "document", "documents"))
				if !all {
					summary = fmt.Sprintf("%d kept, %d removed in %s (mode %s, keep %s, Jaccard >= %v)",
						n.kept, n.removed, counted(nClusters, "cluster", "clusters"), mode, keep, cmp.Or(t, d.Params().Threshold))
				}
				var notes []string
				if noText > 0 {
					notes = append(notes, fmt.Sprintf("%d documents have no stored text (index storage %s): written without text", noText, d.Params().Storage))
				}
				if man != nil {
					man.body.All, man.body.Summary, man.body.Notes = all, summary, notes
					if !all {
						man.body.Mode, man.body.Keep, man.body.From = string(mode), string(keep), df.from
					}
					man.body.Counts = manifestCounts{Read: n.read, Kept: n.kept, Removed: n.removed, Clusters: nClusters, NoText: noText, Unreadable: lost.ranges}
				}
				if err = finishSinks(err, kept, drop, man); err != nil {
					return interruptNote(err, "export interrupted: no output written")
				}
				fmt.Fprintln(a.stderr, summary)
				for _, note := range notes {
					fmt.Fprintf(a.stderr, "lshdb: note: %s\n", note)
				}
				if lost.ranges > 0 {
					// NB: the output is complete as far as the index can be
					// read, and kept; the exit status says it is not all.
					return fmt.Errorf("%w: export --salvage passed over %s of unreadable records (%s, named above): the other documents were written",
						db.ErrCorrupt, counted(lost.ranges, "range", "ranges"), counted(lost.ids, "known id", "known ids"))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&salvage, "salvage", false, "with --all, on a damaged index: write every document that can be read, passing over the records of a block that cannot be (each range named on stderr, with the ids the id map gives it), and exit 4 (damage) if any was")
	df.add(c, "the file of the kept documents (default: stdout)", "also write the removed documents to this file, with duplicate_of and similarity", "none")
	c.Flags().BoolVar(&all, "all", false, "export every document, without clustering")
	return c
}

// exportScanning, when a test sets it, runs between export's clustering
// and its scan (a writer meeting the export there).
var exportScanning func()

// errWrittenDuring is export's error when the index was written between
// its clustering and the end of its scan.
var errWrittenDuring = errors.New("the index was written during the export")

// writtenDuring refuses an export whose index was written since before
// (its Info before the clustering): the clusters and the documents read
// are then of two states, and a document could be dropped as a copy of
// one deleted meanwhile, or a new copy kept beside its original. An
// export attached to a server (or of an index on Redis) can meet writers:
// one that deleted 200 clusters' representatives during the run dropped
// 885 documents with no copy left (a nightly output review's O1). Info's
// document count and written count change with every write.
func writtenDuring(d index, before *db.Info, kept *sink) error {
	now, err := d.Info()
	if err != nil {
		return err
	}
	if now.Docs == before.Docs && now.Written == before.Written {
		return nil
	}
	what := "nothing written"
	if kept.path == "" || kept.path == "-" {
		what = "discard what it wrote to stdout"
	}
	return fmt.Errorf("%w (it held %d documents of %d written when the clustering began, %d of %d at the end), so its clusters and the documents it read are of two states: %s, and export again once the writers are done (or export a backup: lshdb backup)",
		errWrittenDuring, before.Docs, before.Written, now.Docs, now.Written, what)
}

// export writes the stored documents to the sinks by their fates, as
// filter writes records, with progress (the documents read of those
// stored; since is when the command's work began: its lines' elapsed time
// counts from it). NB: it showed none, 45% of a 3-million-document
// export's run, while it wrote 3 GB (a review at scale, L2).
func (a *app) export(d index, fates map[string]fate, src docio.Source, kept, drop *sink, salvage bool, since time.Time) (n filterCounts, noText int64, lost salvageLoss, err error) {
	f := newFilterer(fates, kept, drop, false)
	if err := f.begin(src); err != nil {
		return f.n, 0, lost, err
	}
	stored, err := d.Count()
	if err != nil {
		return f.n, 0, lost, err
	}
	set, done := func(int) {}, func() {}
	if stored > 0 {
		set, done = a.countBarSince("export", "read", int(stored), since)
	}
	read := 0
	defer func() { set(read); done() }()
	for doc, err := range d.Scan(a.ctx, &db.ScanOptions{Salvage: salvage}) {
		if dmg := (*db.ScanDamageError)(nil); salvage && errors.As(err, &dmg) {
			lost.ranges++
			lost.ids += len(dmg.IDs)
			fmt.Fprintf(a.stderr, "lshdb: %s\n", escControls(dmg.Error()))
			if len(dmg.IDs) > 0 {
				// NB: at most 100 a range on the terminal: a damaged table
				// index names every id of its table (330 KB in a review).
				ids, more := dmg.IDs, ""
				if len(ids) > 100 {
					ids, more = ids[:100], fmt.Sprintf(" … and %d more", len(dmg.IDs)-100)
				}
				fmt.Fprintf(a.stderr, "lshdb: their ids: %s%s\n", idLine(ids), more)
			}
			continue
		}
		if err != nil {
			return f.n, noText, lost, err
		}
		if read++; read%1024 == 0 {
			set(read)
		}
		if !doc.HasText {
			noText++
		}
		b, err := marshalJSON(exportOf(doc))
		if err != nil {
			return f.n, noText, lost, err
		}
		// NB: file names the document in a message (line 0).
		if err := f.take(doc.ID, record{raw: escapeJSONControls(b), end: "\n", file: doc.ID}, false); err != nil {
			return f.n, noText, lost, err
		}
	}
	return f.n, noText, lost, nil
}

// salvageLoss counts what export --salvage passed over: ranges of doc
// numbers, and the ids known of them.
type salvageLoss struct{ ranges, ids int }
