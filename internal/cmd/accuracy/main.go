// Command accuracy prints the MinHash estimator accuracy table: for both
// schemes, set sizes 3 to 5000 and Jaccard 0.1 to 0.95, the mean and
// variance of the estimate over independent seeds, checked against the
// bounds of the signatures issue (mean within ±0.01 of J; variance within
// 1.25× of J(1−J)/k for classic, and for OPH once sets have k elements).
//
//	go run ./internal/cmd/accuracy [-seeds 2000] [-small-seeds 40000] [-k 128]
//
// It exits 1 if a cell breaks a bound. With -candidates it prints instead
// the measured probability that a pair at Jaccard J becomes a candidate
// (shares a band), for set sizes 5 to 5000, against the S-curve of the
// banding chosen for t = 0.5 and 0.8 (issue 12), and exits 0. With
// -corpora it prints, for every shared corpus (../shared/corpora; it
// exits 1 when absent) at t = 0.5 and 0.8, the fraction of the pairs at or
// above t (all-pairs oracle) that become candidates with each scheme,
// for -seeds signature seeds: the spread a corpus's recall has from one
// seed to the next (about 10 minutes on 2 cores).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lshdb/lshdb/internal/accuracy"
)

func main() {
	spec := accuracy.Spec{Base: 20261121}
	flag.IntVar(&spec.K, "k", 128, "signature size")
	flag.IntVar(&spec.Seeds, "seeds", 2000, "independent trials per cell")
	flag.IntVar(&spec.SmallSeeds, "small-seeds", 40000, "trials for OPH cells with sets smaller than k (larger variance)")
	candidates := flag.Bool("candidates", false, "print the candidate-probability table instead")
	trials := flag.Int("trials", 4000, "trials per cell of the candidate table")
	corpora := flag.Bool("corpora", false, "print recall on the shared corpora by scheme and seed instead")
	corpusSeeds := flag.Int("corpus-seeds", 8, "signature seeds per corpus and scheme, with -corpora")
	flag.Parse()
	start := time.Now()
	if *corpora {
		if err := corpusRecall(os.Stdout, spec.K, *corpusSeeds); err != nil {
			fmt.Fprintln(os.Stderr, "accuracy:", err)
			os.Exit(1)
		}
		fmt.Printf("\n%v\n", time.Since(start).Round(time.Second))
		return
	}
	if *candidates {
		cells, err := accuracy.CandidateTable(spec.K, []float64{0.5, 0.8}, *trials, spec.Base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "accuracy:", err)
			os.Exit(1)
		}
		accuracy.PrintCandidates(os.Stdout, cells)
		fmt.Printf("\n%d cells, %v\n", len(cells), time.Since(start).Round(time.Millisecond))
		return
	}
	cells, err := accuracy.Table(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	accuracy.Print(os.Stdout, cells)
	bad := 0
	for _, c := range cells {
		b := accuracy.BoundsFor(c.Seeds)
		if c.Seeds >= 2000 {
			b = accuracy.Bounds{MeanTol: 0.01, VarRatio: 1.25} // the bounds, unwidened
		}
		for _, p := range b.Check(c) {
			fmt.Printf("FAIL %v size %d J %.3f: %s\n", c.Scheme, c.Size, c.J, p)
			bad++
		}
	}
	fmt.Printf("\n%d cells, %d failures, %v\n", len(cells), bad, time.Since(start).Round(time.Millisecond))
	if bad > 0 {
		os.Exit(1)
	}
}
