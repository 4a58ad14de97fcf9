package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/minhash"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// createFlags are the creation parameters, shared by create and insert.
type createFlags struct {
	threshold, recall    float64
	numPerm, shingleSize int
	scheme, shingle      string
	bag, storeText       bool
}

func (f *createFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.Float64Var(&f.threshold, "threshold", 0.8, "Jaccard threshold the banding is chosen for, in (0, 1]")
	fs.Float64Var(&f.recall, "recall", 0.99, "target probability that a pair at the threshold shares a band, in (0, 1)")
	fs.IntVar(&f.numPerm, "num-perm", 128, "signature values")
	fs.StringVar(&f.scheme, "scheme", "oph", "signature scheme: oph or classic")
	fs.StringVar(&f.shingle, "shingle", "char", "shingle kind: char or word")
	fs.IntVar(&f.shingleSize, "shingle-size", 0, "shingle size k (default 5 for char, 3 for word)")
	fs.BoolVar(&f.bag, "bag", false, "bag (multiset) shingles: repeats count")
	fs.BoolVar(&f.storeText, "store-text", false, "store each document's text")
}

// options returns db options with only the flags given on the command line
// set, so that an existing index's stored values apply to the rest.
func (f *createFlags) options(c *cobra.Command) (*db.Options, error) {
	o := &db.Options{}
	set := func(name string) bool { return c.Flags().Changed(name) }
	if set("threshold") {
		if !(f.threshold > 0 && f.threshold <= 1) {
			return nil, usagef("--threshold %v is outside (0, 1]", f.threshold)
		}
		o.Threshold = f.threshold
	}
	if set("recall") {
		if !(f.recall > 0 && f.recall < 1) {
			return nil, usagef("--recall %v is outside (0, 1)", f.recall)
		}
		o.Recall = f.recall
	}
	if set("num-perm") {
		if f.numPerm < 1 || f.numPerm > minhash.MaxNumPerm {
			return nil, usagef("--num-perm %d is outside 1..%d", f.numPerm, minhash.MaxNumPerm)
		}
		o.NumPerm = f.numPerm
	}
	if set("scheme") {
		s, err := minhash.ParseScheme(f.scheme)
		if err != nil {
			return nil, usagef("--scheme %q: want oph or classic", f.scheme)
		}
		o.Scheme = s
		if s == minhash.SchemeOPH {
			o.Scheme = 0 // the zero value: no check against a stored classic index
		}
	}
	if set("shingle") {
		k, err := minhash.ParseShingleKind(f.shingle)
		if err != nil {
			return nil, usagef("--shingle %q: want char or word", f.shingle)
		}
		o.Shingle = k
	}
	if set("shingle-size") {
		if f.shingleSize < 1 || f.shingleSize > minhash.MaxK {
			return nil, usagef("--shingle-size %d is outside 1..%d", f.shingleSize, minhash.MaxK)
		}
		o.ShingleSize = f.shingleSize
	}
	o.Bag, o.StoreText = f.bag, f.storeText
	return o, nil
}

func (a *app) printParams(d *db.DB) {
	p := d.Params()
	if a.json() {
		a.emitJSON(map[string]any{"threshold": p.Threshold, "bands": p.Bands.B, "rows": p.Bands.R, "num_perm": p.NumPerm,
			"scheme": p.Scheme.String(), "shingle": p.Shingle.String(), "shingle_size": p.ShingleSize, "bag": p.Bag,
			"store_text": p.StoreText, "seed": p.Seed, "recall_at_threshold": p.Bands.Probability(p.Threshold)})
		return
	}
	fmt.Fprintf(a.stdout, "threshold %v, %v (%d of %d signature values), scheme %v, %v %d-shingles, bag %v, store text %v\n",
		p.Threshold, p.Bands, p.Bands.B*p.Bands.R, p.NumPerm, p.Scheme, p.Shingle, p.ShingleSize, p.Bag, p.StoreText)
	fmt.Fprintf(a.stdout, "P(candidate) at the threshold: %.4f\n", p.Bands.Probability(p.Threshold))
}

func (a *app) createCmd() *cobra.Command {
	var f createFlags
	c := &cobra.Command{
		Use:   "create --db DIR [flags]",
		Short: "Create an empty index with these parameters",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			o, err := f.options(c)
			if err != nil {
				return err
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if names, err := os.ReadDir(a.dbDir); err == nil && len(names) > 0 {
				return fmt.Errorf("%s already exists (open it with the other commands)", a.dbDir)
			}
			d, closeDB, err := a.openDB(o)
			if err != nil {
				return err
			}
			defer closeDB()
			a.printParams(d)
			return nil
		},
	}
	f.add(c)
	return c
}

// inputFlags are the input-format flags of insert, build and dedup.
type inputFlags struct {
	inputOptions
	skipBad bool
}

func (f *inputFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.idField, "id-field", "id", "JSON Lines: the id field")
	fs.StringVar(&f.textField, "text-field", "text", "JSON Lines: the text field")
	fs.StringVar(&f.idCol, "id-col", "id", "CSV/TSV: the id column (by header name)")
	fs.StringVar(&f.textCol, "text-col", "text", "CSV/TSV: the text column (by header name)")
	fs.StringVar(&f.format, "format", "", "input format: jsonl, csv or tsv (default: by file name; JSON Lines otherwise)")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed records (reported) instead of stopping at the first")
}

// insertSummary is what insert reports.
type insertSummary struct {
	Inserted   int `json:"inserted"`
	Replaced   int `json:"replaced"`
	Repeated   int `json:"repeated_ids"`
	Empty      int `json:"empty_skipped"`
	BadSkipped int `json:"bad_skipped"`
}

func (a *app) buildCmd() *cobra.Command {
	var cf createFlags
	var in inputFlags
	var memory int
	c := &cobra.Command{
		Use:   "build --db DIR [FILE|DIR|- ...]",
		Short: "Bulk-load documents: sorted SSTables ingested in one atomic step",
		Long: `Bulk-load documents (the same inputs as insert) for large inputs: signatures
on every core, records sorted within --memory (spilling to disk), written as
SSTables and ingested into the index in one step. The index is created with
the creation flags if it does not exist; stored ids are replaced; an id
repeated in the input: the last one wins.

A build is atomic: it is all there or not at all. A malformed record fails the
whole build (nothing is loaded) unless --skip-bad; so does a kill, after which
the index is as it was.`,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := cf.options(c)
			if err != nil {
				return err
			}
			if memory < 1 {
				return usagef("--memory %d: must be at least 1 (MiB)", memory)
			}
			raiseMemoryLimit(memory << 20)
			d, closeDB, err := a.openDB(o)
			if err != nil {
				return err
			}
			defer closeDB()
			var sum insertSummary
			var bar *progressbar.ProgressBar
			if a.stderrIsTerminal() {
				bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription("build"),
					progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
			}
			docs := func(yield func(db.Doc, error) bool) {
				stop := errors.New("stop")
				err := readInputs(args, a.stdin, in.inputOptions, in.skipBad, func(error) { sum.BadSkipped++ }, func(r record) error {
					if !yield(r.doc, nil) {
						return stop
					}
					return nil
				})
				if err != nil && err != stop {
					yield(db.Doc{}, err)
				}
			}
			last := 0
			res, err := d.Load(docs, &db.LoadOptions{Memory: memory << 20, SkipEmpty: true, Progress: func(n int) {
				if bar != nil {
					bar.Add(n - last)
					last = n
				}
			}})
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return err
			}
			sum.Inserted, sum.Replaced, sum.Repeated, sum.Empty = res.Stored, res.Replaced, res.Repeated, len(res.SkippedEmpty)
			a.reportInsert(sum)
			return nil
		},
	}
	cf.add(c)
	in.add(c)
	c.Flags().IntVar(&memory, "memory", db.DefaultLoadMemory>>20, "memory budget for sorted data, in MiB (the process needs about 3x this)")
	return c
}

func (a *app) insertCmd(name string) *cobra.Command {
	var cf createFlags
	var in inputFlags
	short := "Insert or replace documents from files, directories or stdin"
	c := &cobra.Command{
		Use:   name + " --db DIR [FILE|DIR|- ...]",
		Short: short,
		Long: short + `.

Inputs: JSON Lines with id and text fields (gzip-compressed or not, told by
content), CSV or TSV with a header line (--id-col, --text-col), a directory
of text files (id = relative path), or - (or nothing) for stdin. The index
is created with the creation flags if it does not exist.

A document whose text has no shingles (empty or white space) is skipped and
counted. An id repeated in the input: the last one wins, counted. A
malformed record stops the command with an error naming its file and line;
everything before it is committed and reported (--skip-bad skips it
instead).`,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := cf.options(c)
			if err != nil {
				return err
			}
			d, closeDB, err := a.openDB(o)
			if err != nil {
				return err
			}
			defer closeDB()
			var sum insertSummary
			seen := make(map[string]struct{})
			batch := make([]db.Doc, 0, 1000)
			var bar *progressbar.ProgressBar
			if a.stderrIsTerminal() {
				bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription(name),
					progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())
			}
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				res, err := d.PutBatch(batch, &db.WriteOptions{SkipEmpty: true})
				if err != nil {
					return err
				}
				sum.Inserted += res.Stored
				sum.Replaced += res.Replaced
				sum.Empty += len(res.SkippedEmpty)
				if bar != nil {
					bar.Add(len(batch))
				}
				batch = batch[:0]
				return nil
			}
			err = readInputs(args, a.stdin, in.inputOptions, in.skipBad, func(error) { sum.BadSkipped++ }, func(r record) error {
				if _, dup := seen[r.doc.ID]; dup {
					sum.Repeated++
				}
				seen[r.doc.ID] = struct{}{}
				batch = append(batch, r.doc)
				if len(batch) == cap(batch) {
					return flush()
				}
				return nil
			})
			if bar != nil {
				bar.Finish()
			}
			// NB: what was read before an error is committed and reported.
			ferr := flush()
			a.reportInsert(sum)
			return errors.Join(err, ferr)
		},
	}
	cf.add(c)
	in.add(c)
	return c
}

func (a *app) reportInsert(s insertSummary) {
	if a.json() {
		a.emitJSON(s)
		return
	}
	fmt.Fprintf(a.stdout, "inserted %d documents (%d replaced stored ones); %d repeated ids in the input (last one wins), %d empty texts skipped, %d bad records skipped\n",
		s.Inserted, s.Replaced, s.Repeated, s.Empty, s.BadSkipped)
}

func (a *app) dedupCmd() *cobra.Command {
	var in inputFlags
	c := &cobra.Command{
		Use:   "dedup --db DIR [FILE|DIR|- ...]",
		Short: "Insert each input document unless a stored one is a near-duplicate",
		RunE: func(c *cobra.Command, args []string) error {
			d, closeDB, err := a.openDB(nil)
			if err != nil {
				return err
			}
			defer closeDB()
			tw := a.table()
			if !a.json() {
				fmt.Fprintln(tw, "ID\tDUPLICATE_OF\tJACCARD")
			}
			err = readInputs(args, a.stdin, in.inputOptions, in.skipBad, func(e error) { fmt.Fprintf(a.stderr, "lshdb: skipped: %v\n", e) }, func(r record) error {
				m, err := d.PutIfNew(r.doc, nil)
				if errors.Is(err, db.ErrEmptyDocument) {
					fmt.Fprintf(a.stderr, "lshdb: skipped %s: %v\n", r.pos, err)
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: %w", r.pos, err)
				}
				if a.json() {
					out := map[string]any{"id": r.doc.ID, "duplicate_of": nil, "jaccard": nil}
					if m != nil {
						out["duplicate_of"], out["jaccard"] = m.ID, m.Jaccard
					}
					return a.emitJSON(out)
				}
				if m != nil {
					fmt.Fprintf(tw, "%s\t%s\t%.4f\n", r.doc.ID, m.ID, m.Jaccard)
				} else {
					fmt.Fprintf(tw, "%s\t-\t-\n", r.doc.ID)
				}
				return nil
			})
			tw.Flush()
			return err
		},
	}
	in.add(c)
	return c
}

func (a *app) getCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get --db DIR ID",
		Short: "Show a stored document",
		Args:  nArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d *db.DB) error {
				doc, err := d.Get(args[0])
				if err != nil {
					return err
				}
				if a.json() {
					out := map[string]any{"id": doc.ID, "num": doc.Num, "shingles": len(doc.Shingles)}
					if doc.HasText {
						out["text"] = doc.Text
					}
					if doc.Meta != nil {
						out["meta"] = string(doc.Meta)
					}
					return a.emitJSON(out)
				}
				fmt.Fprintf(a.stdout, "id: %s\ndoc number: %d\nshingles: %d\n", doc.ID, doc.Num, len(doc.Shingles))
				if doc.HasText {
					fmt.Fprintf(a.stdout, "text: %s\n", doc.Text)
				} else {
					fmt.Fprintln(a.stdout, "text: (not stored)")
				}
				return nil
			})
		},
	}
}

func (a *app) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete --db DIR ID ...",
		Short: "Delete documents",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("delete needs at least one id")
			}
			return a.withIndex(func(d *db.DB) error {
				var errs []error
				for _, id := range args {
					if err := d.Delete(id, nil); err != nil {
						errs = append(errs, err)
						continue
					}
					if a.json() {
						a.emitJSON(map[string]any{"deleted": id})
					} else {
						fmt.Fprintf(a.stdout, "deleted %s\n", id)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

func (a *app) purgeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "purge --db DIR",
		Short: "Delete the emptied posting lists that deletes and upserts leave behind",
		Long: `Delete the posting lists that hold no document any more (check counts them
as empty lists). Nothing a query or pairs returns changes; writers wait while
it runs.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d *db.DB) error {
				n, err := d.PurgeEmptyLists()
				if err != nil {
					return err
				}
				if a.json() {
					return a.emitJSON(map[string]any{"purged_lists": n})
				}
				fmt.Fprintf(a.stdout, "purged %d empty posting lists\n", n)
				return nil
			})
		},
	}
}
