package db

import (
	"context"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/minhash"
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
// scheme and banding, an index built with Load at t = 0.5 and 0.8 reports
// through Pairs at least 99.5% of the pairs whose exact Jaccard reaches t,
// every score exact and none below t (precision 1). The oracle is the
// prefix-filter all-pairs join over sets computed outside the database,
// itself checked against the counts the corpora's README publishes. Long
// (LSHDB_LONG=1): the oracle alone takes about 8 minutes on 2 cores.
func TestRecallOnEveryCorpus(t *testing.T) {
	if !long() {
		t.Skip("long: every shared corpus, about 10 minutes on 2 cores (LSHDB_LONG=1)")
	}
	if raceEnabled {
		t.Skip("single-threaded oracle: the race detector only slows it")
	}
	for _, c := range everyCorpus {
		t.Run(c.name, func(t *testing.T) {
			docs, sets, index := sharedCorpus(t, c.name)
			for _, th := range []float64{0.5, 0.8} {
				start := time.Now()
				truth := allpairs.Join(sets, th)
				if len(truth) != c.pairs[th] {
					t.Fatalf("t=%v: the oracle finds %d pairs, the corpus README %d", th, len(truth), c.pairs[th])
				}
				oracle := time.Since(start)
				start = time.Now()
				d := mustOpen(t, t.TempDir(), &Options{Threshold: th, NoSync: true})
				seq := func(yield func(Doc, error) bool) {
					for _, doc := range docs {
						if !yield(Doc{ID: doc.ID, Text: doc.Text}, nil) {
							return
						}
					}
				}
				if _, err := d.Load(context.Background(), seq, nil); err != nil {
					t.Fatal(err)
				}
				build := time.Since(start)
				start = time.Now()
				want := make(map[[2]int]bool, len(truth))
				for _, p := range truth {
					want[[2]int{p.A, p.B}] = true
				}
				var st PairsStats
				hit, reported := 0, 0
				for p, err := range d.Pairs(context.Background(), &PairsOptions{Stats: &st}) {
					if err != nil {
						t.Fatal(err)
					}
					i, j := index[p.A], index[p.B]
					if exact := minhash.Jaccard(sets[i], sets[j]); p.Jaccard != exact || exact < th {
						t.Fatalf("%s ~ %s: reported %v, exact %v, threshold %v", p.A, p.B, p.Jaccard, exact, th)
					}
					reported++
					if want[[2]int{min(i, j), max(i, j)}] {
						hit++
					}
				}
				if hit != reported {
					t.Fatalf("t=%v: %d reported pairs are not in the oracle's answer", th, reported-hit)
				}
				recall := 1.0
				if len(truth) > 0 {
					recall = float64(hit) / float64(len(truth))
				}
				t.Logf("%s t=%.1f %v %v: %d docs, %d pairs, recall %.4f (%d missed), %d candidate pairs; oracle %v, Load %v, Pairs %v",
					c.name, th, d.Params().Scheme, d.Params().Bands, len(docs), len(truth), recall, len(truth)-hit, st.Candidates,
					oracle.Round(time.Millisecond), build.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
				if recall < 0.995 {
					t.Errorf("t=%v: recall %.4f < 0.995 (%d of %d pairs)", th, recall, hit, len(truth))
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
