package db

import (
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/accuracy"
)

// everyCorpus is every corpus in ../shared/corpora, short texts first,
// with the all-pairs counts its README publishes (character 5-shingles,
// folded), which check the oracle itself.
var everyCorpus = []struct {
	name  string
	pairs map[float64]int
}{
	{"kjv-verses", map[float64]int{0.5: 8315, 0.8: 3617}},
	{"gcide", map[float64]int{0.5: 25843, 0.8: 138}},
	{"scancode-rules", map[float64]int{0.5: 3504697, 0.8: 371174}},
	{"debian-descriptions", map[float64]int{0.5: 1061310, 0.8: 175932}},
	{"kijiji-rome-rent", map[float64]int{0.5: 11920, 0.8: 10538}},
	{"spdx-licenses", map[float64]int{0.5: 3397, 0.8: 686}},
	{"scancode-licenses", map[float64]int{0.5: 17849, 0.8: 1719}},
	{"debian-copyright", map[float64]int{0.5: 3992, 0.8: 937}},
}

// Ensure that the recall promise holds on every shared corpus (skipped
// when ../shared is absent), short documents included: with the default
// scheme, seed and banding of a new index at t = 0.5 and 0.8, at least
// 99.5% of the pairs whose exact Jaccard reaches t share a band. The
// oracle is the prefix-filter all-pairs join over sets computed outside
// the database, itself checked against the counts the corpora's README
// publishes. Sharing a band is what makes a pair a candidate of Pairs and
// of every query, and every candidate is verified exactly, so this is the
// recall of both; TestQualityOnSharedCorpora runs queries and Pairs end
// to end on five of the corpora. (Not here on all eight: at t = 0.5 a
// band on gcide gathers 30,000 entries that share the "[1913 Webster]"
// boilerplate, and Pairs verifies 324 million candidate pairs.) Long
// (LSHDB_LONG=1): about 1.5 minutes on 2 cores, most of it the oracle.
func TestRecallOnEveryCorpus(t *testing.T) {
	if !long() {
		t.Skip("long: every shared corpus, about 1.5 minutes on 2 cores (LSHDB_LONG=1)")
	}
	if raceEnabled {
		t.Skip("single-threaded oracle: the race detector only slows it")
	}
	for _, c := range everyCorpus {
		t.Run(c.name, func(t *testing.T) {
			_, sets, _ := sharedCorpus(t, c.name)
			for _, th := range []float64{0.5, 0.8} {
				start := time.Now()
				truth := corpusOracle(c.name, sets, th)
				if len(truth) != c.pairs[th] {
					t.Fatalf("t=%v: the oracle finds %d pairs, the corpus README %d", th, len(truth), c.pairs[th])
				}
				d := mustOpen(t, t.TempDir(), &Options{Threshold: th, NoSync: true})
				p := d.Params()
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				found, err := accuracy.CorpusRecall(sets, truth, accuracy.Config{Scheme: p.Scheme, K: p.NumPerm, Seed: p.Seed, P: p.Bands})
				if err != nil {
					t.Fatal(err)
				}
				recall := 1.0
				if len(truth) > 0 {
					recall = float64(found) / float64(len(truth))
				}
				t.Logf("%s t=%.1f %v %v: %d docs, %d pairs, recall %.4f (%d missed), the S-curve expects %.4f; %v",
					c.name, th, p.Scheme, p.Bands, len(sets), len(truth), recall, len(truth)-found,
					accuracy.ExpectedRecall(truth, p.Bands), time.Since(start).Round(time.Millisecond))
				if recall < 0.995 {
					t.Errorf("t=%v: recall %.4f < 0.995 (%d of %d pairs)", th, recall, found, len(truth))
				}
			}
		})
	}
}
