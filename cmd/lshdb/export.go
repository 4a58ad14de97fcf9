package main

// lshdb export: the index's documents, less the near-duplicates a
// clustering drops, from the texts it stores.

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
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
	case json.Valid(m):
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
	var threshold float64
	var cf clusterFlags
	var out, removed, from, compress string
	var all bool
	c := &cobra.Command{
		Use: "export --db DIR [--out FILE] [--removed FILE] [--all] [--mode centers|components] [--keep first|last|longest|shortest]",
		Example: `  # The deduplicated corpus, from the texts the index stores
  lshdb export --db idx --out kept.jsonl.zst --removed removed.jsonl

  # Every stored document
  lshdb export --db idx --all --out all.jsonl`,
		Short: "Write the stored documents without their near-duplicates, as JSON Lines",
		Long: `Write the index's documents, in insertion order, less the ones a clustering
drops (each cluster keeps one member: --keep), as JSON Lines of id, text
and meta (the stored metadata: JSON as it was stored, else meta_string or
meta_base64) — the shape insert reads back with --meta-field meta. The
texts are the ones the index stores (the default text storage); a
document whose text was not stored (storage sets or none) is written
without text, and the summary says how many.

--removed FILE writes the removed documents too, each with duplicate_of
(the id kept) and similarity (its exact Jaccard to it). --all writes every
document (no clustering). To keep the original records, every field and
byte as they were, use lshdb filter on the input files instead.

An output file is compressed as its name says (.gz, .zst), written beside
it and renamed when complete. The summary goes to stderr.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			mode, keep, err := cf.options()
			if err != nil {
				return err
			}
			switch compress {
			case "auto", "none", "gzip", "zstd":
			default:
				return usagef("--compress %q: want auto, none, gzip or zstd", compress)
			}
			if all && (removed != "" || from != "") {
				return usagef("--all exports every document: --removed and --from have nothing to do")
			}
			if out != "" && out != "-" && removed != "" && filepath.Clean(out) == filepath.Clean(removed) {
				return usagef("--out and --removed are the same file")
			}
			return a.withIndex(func(d index) error {
				var fates map[string]fate
				nClusters := 0
				if !all {
					rec := recallNote(d, t)
					if from == "" {
						a.warnRecall(d, t, rec)
					}
					po := &db.PairsOptions{Threshold: t, Mode: mode, Keep: keep}
					cs, err := a.clusters(d, from, po)
					if err != nil {
						return interruptNote(err, "export interrupted while clustering: nothing written")
					}
					fates, nClusters = fatesOf(cs), len(cs)
				}
				src := docio.Source{Name: "the index", Format: "jsonl"}
				kept := &sink{what: "--out", path: out, stdout: a.stdout, compress: compress, terminal: a.stdoutIsTerminal()}
				var drop *sink
				if removed != "" {
					drop = &sink{what: "--removed", path: removed, compress: compress, cols: removedCols}
				}
				n, noText, err := a.export(d, fates, src, kept, drop)
				ok := err == nil
				if ferr := kept.finish(ok); ferr != nil {
					err = cmp.Or(err, ferr)
				}
				if drop != nil {
					if ferr := drop.finish(ok); ferr != nil {
						err = cmp.Or(err, ferr)
					}
				}
				if err != nil {
					return interruptNote(err, "export interrupted: no output written")
				}
				if all {
					fmt.Fprintf(a.stderr, "%d documents exported\n", n.kept)
				} else {
					fmt.Fprintf(a.stderr, "%d kept, %d removed in %d clusters (mode %s, keep %s, Jaccard >= %v)\n",
						n.kept, n.removed, nClusters, mode, keep, cmp.Or(t, d.Params().Threshold))
				}
				if noText > 0 {
					fmt.Fprintf(a.stderr, "note: %d documents have no stored text (index storage %s): written without text\n", noText, d.Params().Storage)
				}
				return nil
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "least Jaccard (default: the index's)")
	c.Flags().StringVar(&out, "out", "", "the file of the kept documents (default: stdout)")
	c.Flags().StringVar(&removed, "removed", "", "also write the removed documents to this file, with duplicate_of and similarity")
	c.Flags().BoolVar(&all, "all", false, "export every document, without clustering")
	c.Flags().StringVar(&from, "from", "", "make the clusters from this file of pairs --output json instead of finding the pairs")
	c.Flags().StringVar(&compress, "compress", "auto", "the outputs' compression: auto (a file's by its name, .gz or .zst, else none; stdout: none), none, gzip or zstd")
	cf.add(c, db.Centers)
	return c
}

// export writes the stored documents to the sinks by their fates.
func (a *app) export(d index, fates map[string]fate, src docio.Source, kept, drop *sink) (n filterCounts, noText int64, err error) {
	if err := kept.begin(src); err != nil {
		return n, 0, err
	}
	if drop != nil {
		if err := drop.begin(src); err != nil {
			return n, 0, err
		}
	}
	var buf []byte
	for doc, err := range d.Scan(a.ctx, nil) {
		if err != nil {
			return n, noText, err
		}
		if !doc.HasText {
			noText++
		}
		buf = buf[:0]
		b, err := json.Marshal(exportOf(doc))
		if err != nil {
			return n, noText, err
		}
		buf = escapeJSONControls(append(buf, b...))
		rec := record{raw: buf, end: "\n", file: "document " + doc.ID}
		f, ok := fates[doc.ID]
		switch {
		case ok && f.rep != "":
			n.removed++
			if drop != nil {
				err = drop.write(rec, removedVals(f))
			}
		default:
			n.kept++
			err = kept.write(rec, nil)
		}
		if err != nil {
			return n, noText, err
		}
	}
	return n, noText, nil
}
