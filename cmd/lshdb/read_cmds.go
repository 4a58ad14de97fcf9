package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/lshdb/lshdb/db"
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
	var top int
	var estimate bool
	c := &cobra.Command{
		Use:   "query --db DIR (--id ID | --text TEXT | --file PATH) [--threshold T] [--top K]",
		Short: "Near-duplicates of a stored document, a text or a file",
		Args:  nArgs(0),
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
				return usagef("give exactly one of --id, --text and --file")
			}
			if c.Flags().Changed("top") && top < 1 {
				return usagef("--top %d: must be at least 1", top)
			}
			return a.withIndex(func(d *db.DB) error {
				qo := &db.QueryOptions{Threshold: t, Limit: top, EstimateOnly: estimate}
				var res *db.QueryResult
				switch {
				case c.Flags().Changed("id"):
					res, err = d.QueryID(id, qo)
				case c.Flags().Changed("file"):
					b, rerr := os.ReadFile(file)
					if rerr != nil {
						return rerr
					}
					res, err = d.Query(string(b), qo)
				default:
					res, err = d.Query(text, qo)
				}
				if err != nil {
					return err
				}
				if a.json() {
					for _, m := range res.Matches {
						if err := a.emitJSON(m); err != nil {
							return err
						}
					}
					return nil
				}
				tw := a.table()
				fmt.Fprintln(tw, "ID\tJACCARD\tESTIMATE\tBANDS")
				for _, m := range res.Matches {
					fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%d\n", m.ID, m.Jaccard, m.Estimate, m.Bands)
				}
				tw.Flush()
				fmt.Fprintf(a.stdout, "%d matches at Jaccard >= %v among %d candidates (P(candidate) at %v: %.4f)\n",
					len(res.Matches), res.Threshold, res.Candidates, res.Threshold, res.ExpectedRecall)
				return nil
			})
		},
	}
	fs := c.Flags()
	fs.StringVar(&id, "id", "", "query by a stored document's id")
	fs.StringVar(&text, "text", "", "query by a text")
	fs.StringVar(&file, "file", "", "query by a file's contents")
	fs.Float64Var(&threshold, "threshold", 0, "least Jaccard reported (default: the index's)")
	fs.IntVar(&top, "top", 0, "keep only the best K matches (default: all)")
	fs.BoolVar(&estimate, "estimate-only", false, "report signature estimates without exact verification")
	return c
}

// sortedPairs collects Pairs, best first (ties by ids), so output is
// reproducible.
func sortedPairs(d *db.DB, t float64, limit int, st *db.PairsStats) ([]db.Pair, error) {
	var out []db.Pair
	for p, err := range d.Pairs(&db.PairsOptions{Threshold: t, Stats: st}) {
		if err != nil {
			return nil, err
		}
		if p.B < p.A {
			p.A, p.B = p.B, p.A
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y db.Pair) int {
		return cmp.Or(cmp.Compare(y.Jaccard, x.Jaccard), cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (a *app) pairsCmd() *cobra.Command {
	var threshold float64
	var limit int
	var stats, sorted bool
	c := &cobra.Command{
		Use:   "pairs --db DIR [--threshold T] [--limit N] [--stats] [--sort=false]",
		Short: "Every stored pair with exact Jaccard >= T, each once",
		Long: `Every stored pair with exact Jaccard >= T, each once, best first. With
--sort=false the pairs stream out as they are verified, in no particular order
and in bounded memory (for nightly jobs over millions of documents).`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			if !sorted && limit > 0 {
				return usagef("--limit needs the sorted output (drop --sort=false)")
			}
			return a.withIndex(func(d *db.DB) error {
				var st db.PairsStats
				tw := a.table()
				if !a.json() {
					fmt.Fprintln(tw, "A\tB\tJACCARD")
				}
				print := func(p db.Pair) {
					if a.json() {
						a.emitJSON(map[string]any{"a": p.A, "b": p.B, "jaccard": p.Jaccard})
					} else {
						fmt.Fprintf(tw, "%s\t%s\t%.4f\n", p.A, p.B, p.Jaccard)
					}
				}
				if sorted {
					pairs, err := sortedPairs(d, t, limit, &st)
					if err != nil {
						return err
					}
					for _, p := range pairs {
						print(p)
					}
				} else {
					for p, err := range d.Pairs(&db.PairsOptions{Threshold: t, Stats: &st}) {
						if err != nil {
							return err
						}
						print(p)
					}
				}
				if stats {
					fmt.Fprintf(a.stderr, "pairs: %d documents, %d identical groups (%d pairs reported unverified), %d posting lists (%d with over %d distinct sets, largest %d), %d candidate pairs, %d distinct verified, %d matched, %d reported, spilled to disk: %v\n",
						st.Docs, st.IdenticalGroups, st.IdenticalPairs, st.Lists, st.HotLists, db.HotList, st.LargestList, st.Candidates, st.Verified, st.Matched, st.Reported, st.Spilled)
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "least Jaccard (default: the index's)")
	c.Flags().IntVar(&limit, "limit", 0, "print at most this many pairs, the best (default: all)")
	c.Flags().BoolVar(&stats, "stats", false, "report on stderr the work done: identical groups, hot buckets, candidates, verified pairs")
	c.Flags().BoolVar(&sorted, "sort", true, "sort the pairs, best first (holds them all in memory); --sort=false streams them")
	return c
}

func (a *app) clustersCmd() *cobra.Command {
	var threshold float64
	c := &cobra.Command{
		Use:   "clusters --db DIR [--threshold T]",
		Short: "Connected components of the near-duplicate pairs",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := thresholdFlag(c, threshold)
			if err != nil {
				return err
			}
			return a.withIndex(func(d *db.DB) error {
				cs, err := d.Clusters(&db.PairsOptions{Threshold: t})
				if err != nil {
					return err
				}
				for i, cl := range cs {
					if a.json() {
						a.emitJSON(map[string]any{"cluster": i + 1, "size": len(cl.IDs), "ids": cl.IDs})
					} else {
						fmt.Fprintf(a.stdout, "cluster %d (%d documents): %s\n", i+1, len(cl.IDs), strings.Join(cl.IDs, " "))
					}
				}
				if !a.json() {
					fmt.Fprintf(a.stdout, "%d clusters\n", len(cs))
				}
				return nil
			})
		},
	}
	c.Flags().Float64Var(&threshold, "threshold", 0, "least Jaccard (default: the index's)")
	return c
}

func (a *app) statsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stats --db DIR",
		Short: "Parameters, counts, bucket sizes, disk usage, expected recall",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d *db.DB) error {
				st, err := d.Stats(5)
				if err != nil {
					return err
				}
				if a.json() {
					p := st.Params
					return a.emitJSON(map[string]any{"docs": st.Docs, "threshold": p.Threshold, "bands": p.Bands.B, "rows": p.Bands.R,
						"num_perm": p.NumPerm, "scheme": p.Scheme.String(), "shingle": p.Shingle.String(), "shingle_size": p.ShingleSize,
						"expected_recall": st.ExpectedRecall, "posting_lists_per_band": st.Buckets.Lists,
						"bucket_size_histogram": st.Buckets.Histogram, "stored_bytes": st.StoredBytes, "disk_bytes": st.DiskBytes,
						"hottest": st.Buckets.Hottest})
				}
				a.printParams(d)
				fmt.Fprintf(a.stdout, "documents: %d\n", st.Docs)
				total := 0
				for _, n := range st.Buckets.Lists {
					total += n
				}
				fmt.Fprintf(a.stdout, "posting lists: %d (per band: %v)\n", total, st.Buckets.Lists)
				a.printHistogram(st.Buckets.Histogram)
				fmt.Fprintf(a.stdout, "stored bytes: docs %d, ids %d, postings %d, manifest and counters %d; on disk %d\n",
					st.StoredBytes["docs"], st.StoredBytes["ids"], st.StoredBytes["postings"], st.StoredBytes["manifest+counters"], st.DiskBytes)
				a.printHottest(st.Buckets.Hottest)
				return nil
			})
		},
	}
}

func (a *app) printHistogram(h []int) {
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
	tw.Flush()
}

func (a *app) printHottest(hs []db.BucketInfo) {
	if len(hs) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "hottest buckets:")
	tw := a.table()
	fmt.Fprintln(tw, "  BAND\tBUCKET\tSIZE\tSAMPLE")
	for _, h := range hs {
		fmt.Fprintf(tw, "  %d\t%016x\t%d\t%s\n", h.Band, h.Bucket, h.Size, strings.Join(h.Sample, " "))
	}
	tw.Flush()
}

func (a *app) bucketsCmd() *cobra.Command {
	var band, top int
	c := &cobra.Command{
		Use:   "buckets --db DIR [--band B] [--top N]",
		Short: "Bucket-size histogram and the hottest buckets",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if top < 0 {
				return usagef("--top %d: must be at least 0", top)
			}
			return a.withIndex(func(d *db.DB) error {
				st, err := d.Buckets(band, top)
				if err != nil {
					return err
				}
				if a.json() {
					for _, h := range st.Hottest {
						a.emitJSON(h)
					}
					return nil
				}
				a.printHistogram(st.Histogram)
				a.printHottest(st.Hottest)
				return nil
			})
		},
	}
	c.Flags().IntVar(&band, "band", -1, "one band (default: all)")
	c.Flags().IntVar(&top, "top", 10, "hottest buckets to list")
	return c
}

func (a *app) bucketCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bucket --db DIR BAND BUCKET",
		Short: "The members of one bucket (BUCKET in hex, as buckets prints it)",
		Args:  nArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			band, err := strconv.Atoi(args[0])
			if err != nil {
				return usagef("BAND %q is not a number", args[0])
			}
			bucket, err := strconv.ParseUint(strings.TrimPrefix(args[1], "0x"), 16, 64)
			if err != nil {
				return usagef("BUCKET %q is not a hexadecimal number", args[1])
			}
			return a.withIndex(func(d *db.DB) error {
				ids, err := d.Bucket(band, bucket)
				if err != nil {
					return err
				}
				for _, id := range ids {
					if a.json() {
						a.emitJSON(map[string]any{"id": id})
					} else {
						fmt.Fprintln(a.stdout, id)
					}
				}
				return nil
			})
		},
	}
}

func (a *app) explainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain --db DIR ID1 ID2",
		Short: "Why two documents match or do not: Jaccard, estimate, colliding bands",
		Args:  nArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d *db.DB) error {
				e, err := d.Explain(args[0], args[1])
				if err != nil {
					return err
				}
				var collide []int
				for i, ok := range e.Collide {
					if ok {
						collide = append(collide, i)
					}
				}
				if a.json() {
					return a.emitJSON(map[string]any{"a": e.A, "b": e.B, "jaccard": e.Jaccard, "estimate": e.Estimate,
						"colliding_bands": collide, "bands": len(e.Collide), "p_candidate": e.Probability,
						"threshold": e.Threshold, "found": e.Found})
				}
				fmt.Fprintf(a.stdout, "%s ~ %s\n", e.A, e.B)
				fmt.Fprintf(a.stdout, "exact Jaccard %.4f, signature estimate %.4f, threshold %v\n", e.Jaccard, e.Estimate, e.Threshold)
				fmt.Fprintf(a.stdout, "bands colliding: %d of %d %v\n", len(collide), len(e.Collide), collide)
				fmt.Fprintf(a.stdout, "P(candidate) at Jaccard %.4f: %.4f\n", e.Jaccard, e.Probability)
				switch {
				case e.Found:
					fmt.Fprintln(a.stdout, "found: they share a band and reach the threshold")
				case len(collide) == 0 && e.Jaccard >= e.Threshold:
					fmt.Fprintln(a.stdout, "missed: above the threshold, but no band collides (a false negative of LSH)")
				case len(collide) > 0:
					fmt.Fprintln(a.stdout, "not reported: they share a band but the exact Jaccard is below the threshold")
				default:
					fmt.Fprintln(a.stdout, "not reported: no band collides and the Jaccard is below the threshold")
				}
				return nil
			})
		},
	}
}

func (a *app) checkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check --db DIR",
		Short: "Full consistency check; exit 1 with the problems if any",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d *db.DB) error {
				rep, err := d.Check()
				if err != nil {
					return err
				}
				if a.json() {
					a.emitJSON(rep)
				} else {
					fmt.Fprintf(a.stdout, "%d documents, %d ids, %d posting lists (%d empty), %d postings\n",
						rep.Docs, rep.IDs, rep.PostingLists, rep.EmptyLists, rep.Postings)
					for _, p := range rep.Problems {
						fmt.Fprintln(a.stdout, "problem:", p)
					}
				}
				if !rep.OK() {
					return errors.New("check found problems")
				}
				if !a.json() {
					fmt.Fprintln(a.stdout, "ok")
				}
				return nil
			})
		},
	}
}
