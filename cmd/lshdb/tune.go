package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/minhash"
	"github.com/spf13/cobra"
)

func (a *app) tuneCmd() *cobra.Command {
	var threshold, recall float64
	var numPerm int
	var plot, schemeName string
	c := &cobra.Command{
		Use:   "tune [--threshold T] [--num-perm K] [--recall R] [--scheme S] [--plot FILE.svg] | tune --db DIR [--threshold T]",
		Short: "The banding for a threshold, its S-curve and a P(s) table",
		Long: `The banding (b bands of r rows) that create and build would choose for a
threshold and a recall target, or with --db the banding an index has; its
S-curve P(s) = 1 - (1 - s^r)^b, the chance that a pair at Jaccard s shares a
band and so becomes a candidate; the false-positive and false-negative areas
around the threshold; P(candidate) measured for short documents (sets of 8
to 100 shingles); and a table of P(s). With --db and --threshold, what the
index's banding gives at another threshold (pairs and query take one below
the index's, at that P). --plot writes the S-curve as an SVG picture.`,
		Example: `  # The banding lshdb chooses for 0.7, and its curve
  lshdb tune --threshold 0.7 --plot curve.svg

  # What an index made for 0.8 finds of the pairs at 0.6
  lshdb tune --db idx --threshold 0.6`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			var p bands.Params
			t := threshold
			var indexT float64      // the index's threshold (tune --db)
			var indexRecall float64 // the recall target its banding was chosen for
			scheme, err := minhash.ParseScheme(schemeName)
			if err != nil || schemeName == "" {
				return usagef("--scheme %q: want fss, oph, classic or datasketch", schemeName)
			}
			if a.dbDir != "" || a.shellDB != nil || a.addr != "" {
				// NB: with an index, its banding is fixed: --threshold asks
				// for P(candidate) there (C16: it was ignored silently), and
				// --num-perm and --recall, which choose a banding, are refused.
				for _, name := range []string{"num-perm", "recall"} {
					if c.Flags().Changed(name) {
						return usagef("--%s chooses a banding; an index has its own (drop --db to tune a new one)", name)
					}
				}
				if c.Flags().Changed("scheme") {
					return usagef("--scheme: an index keeps the scheme it was made with (drop --db to tune a new one)")
				}
				d, closeDB, err := a.openExisting()
				if err != nil {
					return err
				}
				defer closeDB()
				p, t, scheme, numPerm = d.Params().Bands, d.Params().Threshold, d.Params().Scheme, d.Params().NumPerm
				indexRecall = d.Params().Recall
				indexT = t
				if c.Flags().Changed("threshold") {
					if !(threshold > 0 && threshold <= 1) {
						return usagef("--threshold %v is outside (0, 1]", threshold)
					}
					t = threshold
				}
			} else {
				if !(threshold > 0 && threshold <= 1) {
					return usagef("--threshold %v is outside (0, 1]", threshold)
				}
				if numPerm < 1 || numPerm > minhash.MaxNumPerm {
					return usagef("--num-perm %d is outside 1..%d", numPerm, minhash.MaxNumPerm)
				}
				// NB: as create refuses it; 0 was taken as the default
				// (0.99), and the banding shown was not for the recall asked.
				if err := checkRecall(recall); err != nil {
					return err
				}
				if p, err = bands.Choose(numPerm, min(threshold, bands.MaxChoiceThreshold), bands.Options{Recall: recall}); err != nil {
					return usageError{err}
				}
			}
			if plot == "-" {
				// NB: it made a file named "-"; stdout holds the table.
				return usagef("--plot - : the picture goes to a file (its name, such as curve.svg); stdout holds the table")
			}
			if err := nameSaysFormat("--plot", plot, "tune draws an SVG picture", ".svg"); err != nil {
				return err
			}
			if plot != "" {
				if err := intoIndex(plot); err != nil {
					return fmt.Errorf("--plot: %w", err)
				}
				if err := refuseStrangersLink(plot); err != nil { // NB: SEC2-6, see --rejects
					return fmt.Errorf("--plot: %w", err)
				}
				f, err := os.Create(plot)
				if err != nil {
					return err
				}
				if err := errors.Join(writeSVG(f, p, t), f.Close()); err != nil {
					return err
				}
			}
			rec, err := db.MeasureRecall(db.Params{Scheme: scheme, NumPerm: numPerm, Bands: p}, min(t, 1))
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(tuneJSON{Bands: p.B, Rows: p.R, Threshold: t, SCurveThreshold: p.Threshold(),
					PAtThreshold: p.Probability(t), PAtThresholdShortDocs: shortDocs(rec), Scheme: scheme.String(), FalsePositiveArea: p.FalsePositiveArea(t),
					FalseNegativeArea: p.FalseNegativeArea(t), Table: p.Table(bands.DefaultTableS)})
			}
			if indexT > 0 {
				// NB: "b=16 r=6 for threshold 0.5" read as a banding chosen
				// for 0.5: it is the index's, chosen for its own threshold.
				// NB: an index of threshold 1 is banded for 0.999, as tune
				// without --db says (a maintainer review's M8).
				// NB: only a banding Open chose: one given at create was
				// said to be chosen (a maintainer review's K13).
				// It was said for every threshold below 1 (an inspection
				// review's Q2): a banding given at create says so.
				chosen := fmt.Sprintf("given at create; the index's threshold is %v", indexT)
				if ch, err := bands.Choose(numPerm, min(indexT, bands.MaxChoiceThreshold), bands.Options{Recall: indexRecall}); err == nil && ch == p {
					chosen = fmt.Sprint("chosen for threshold ", indexT)
					if indexT > bands.MaxChoiceThreshold {
						chosen += fmt.Sprintf(", banded for %v", bands.MaxChoiceThreshold)
					}
				}
				fmt.Fprintf(a.stdout, "the index's %v (%s) at threshold %v: P(%v) = %s, S-curve threshold (1/b)^(1/r) = %.4f\n",
					p, chosen, t, t, probability(p.Probability(t)), p.Threshold())
			} else {
				// NB: a banding for 1 is chosen for 0.999 (no banding
				// is steeper at 1), and was said to be for 1.
				chosen := fmt.Sprint(t)
				if t > bands.MaxChoiceThreshold {
					chosen = fmt.Sprintf("%v (chosen for %v)", t, bands.MaxChoiceThreshold)
				}
				fmt.Fprintf(a.stdout, "%v for threshold %s: P(%v) = %s, S-curve threshold (1/b)^(1/r) = %.4f\n",
					p, chosen, t, probability(p.Probability(t)), p.Threshold())
			}
			if err := a.printRecall(rec, scheme); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "false-positive area %.4f, false-negative area %.4f\n", p.FalsePositiveArea(t), p.FalseNegativeArea(t))
			tw := a.table()
			fmt.Fprintln(tw, "S\tP(candidate)")
			for _, pt := range p.Table(bands.DefaultTableS) {
				fmt.Fprintf(tw, "%.2f\t%s\n", pt.S, probability(pt.P))
			}
			return tw.Flush()
		},
	}
	fs := c.Flags()
	fs.Float64Var(&threshold, "threshold", 0.8, "Jaccard threshold")
	fs.IntVar(&numPerm, "num-perm", 128, "signature values")
	fs.Float64Var(&recall, "recall", 0.99, "target P(candidate) at the threshold")
	fs.StringVar(&schemeName, "scheme", "fss", "signature scheme whose measured recall on short documents to report: fss, oph, classic or datasketch")
	fs.StringVar(&plot, "plot", "", "write the S-curve as an SVG picture to this file")
	return c
}

// writeSVG draws P(s) over [0, 1] with the threshold and P(threshold)
// marked.
func writeSVG(w io.Writer, p bands.Params, t float64) error {
	const W, H, m = 640, 440, 60 // size and margin
	x := func(s float64) float64 { return m + s*(W-2*m) }
	y := func(v float64) float64 { return H - m - v*(H-2*m) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16">S-curve of %s: P(s) = 1 − (1 − s^%d)^%d</text>`+"\n", m, p, p.R, p.B)
	for i := 0; i <= 10; i++ { // grid and tick labels
		v := float64(i) / 10
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x(v), y(0), x(v), y(1))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x(0), y(v), x(1), y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.1f</text>`+"\n", x(v), y(0)+18, v)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.1f</text>`+"\n", x(0)-6, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x(0), y(0), x(1), y(0))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x(0), y(0), x(0), y(1))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">Jaccard similarity s</text>`+"\n", x(0.5), H-16)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">P(candidate)</text>`+"\n", y(0.5), y(0.5))
	var path strings.Builder
	for i := 0; i <= 200; i++ {
		s := float64(i) / 200
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.2f %.2f ", cmd, x(s), y(p.Probability(s)))
	}
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="#1f5fbf" stroke-width="2.5"/>`+"\n", strings.TrimSpace(path.String()))
	pt := p.Probability(t)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c0392b" stroke-dasharray="6 4"/>`+"\n", x(t), y(0), x(t), y(1))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#27ae60" stroke-dasharray="6 4"/>`+"\n", x(0), y(pt), x(1), y(pt))
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="#c0392b"/>`+"\n", x(t), y(pt))
	// NB: left of the line, or right of it where the left has no room
	// (t below about 0.14 drew it off the picture).
	lx := x(t) - 130
	if lx < 0 {
		lx = x(t) + 8
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#c0392b">threshold t = %v</text>`+"\n", lx, y(0.12), t)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#27ae60">expected recall P(t) = %.4f</text>`+"\n", x(0.02), y(pt)-8, pt)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// probability formats a P(candidate) with 4 decimals, and one below 1
// that they would round to 1 as >0.9999: P(0.9) = 0.999995 read as
// 1.0000, a certainty (an inspection review's Q7). Every P(candidate) and
// expected recall the command prints goes through it: tune's header and
// explain said 1.0000 beside a table's >0.9999 (SH-7).
func probability(p float64) string {
	if s := fmt.Sprintf("%.4f", p); p >= 1 || s != "1.0000" {
		return s
	}
	return ">0.9999"
}
