package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/internal/accuracy"
	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

// sharedCorpora are the corpora of ../shared/corpora, short texts first.
var sharedCorpora = []string{"kjv-verses", "gcide", "scancode-rules", "debian-descriptions",
	"kijiji-rome-rent", "spdx-licenses", "scancode-licenses", "debian-copyright"}

// corpusRecall prints, for each shared corpus and t = 0.5 and 0.8, the
// candidate recall of every scheme under the default banding for seeds
// 0..seeds−1, with the S-curve's expectation over the corpus's pairs.
func corpusRecall(w io.Writer, k, seeds int) error {
	fmt.Fprintln(w, "| corpus | t | banding | pairs | curve | scheme | mean | min | per seed |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---|---:|---:|---|")
	for _, name := range sharedCorpora {
		docs, err := corpus.Shared(name, 0)
		if err != nil {
			return err
		}
		h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
		if err != nil {
			return err
		}
		sets := make([][]uint64, len(docs))
		for i, d := range docs {
			sets[i], _ = h.Document(nil, nil, d.Text)
		}
		ranked := allpairs.Rank(sets)
		for _, t := range []float64{0.5, 0.8} {
			truth := ranked.Join(t)
			p, err := bands.Choose(k, t, bands.Options{})
			if err != nil {
				return err
			}
			for _, sc := range accuracy.Schemes {
				var each []string
				low, sum := 1.0, 0.0
				for seed := range seeds {
					found, err := accuracy.CorpusRecall(sets, truth, accuracy.Config{Scheme: sc, K: k, Seed: uint64(seed), P: p})
					if err != nil {
						return err
					}
					r := 1.0
					if len(truth) > 0 {
						r = float64(found) / float64(len(truth))
					}
					each = append(each, fmt.Sprintf("%.4f", r))
					low, sum = min(low, r), sum+r
				}
				fmt.Fprintf(w, "| %s | %.1f | %v | %d | %.4f | %v | %.4f | %.4f | %s |\n", name, t, p, len(truth),
					accuracy.ExpectedRecall(truth, p), sc, sum/float64(seeds), low, strings.Join(each, " "))
			}
		}
	}
	return nil
}
