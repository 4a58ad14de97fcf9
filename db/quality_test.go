package db

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

// publishedPairs are the all-pairs counts of ../shared/corpora/README.md
// (character 5-shingles, lower-cased, white space collapsed): an
// independent check of the oracle itself.
var publishedPairs = map[string]map[float64]int{
	"kijiji-rome-rent":  {0.5: 11920, 0.8: 10538},
	"spdx-licenses":     {0.5: 3397, 0.8: 686},
	"scancode-licenses": {0.5: 17849, 0.8: 1719},
	"debian-copyright":  {0.5: 3992, 0.8: 937},
	"kjv-verses":        {0.5: 8315, 0.8: 3617},
}

// Ensure that on real corpora (../shared/corpora; skipped when absent),
// querying every document by id finds ≥ 99.5% of the pairs whose exact
// Jaccard reaches t (oracle: the prefix-filter all-pairs join, itself
// checked against the corpora's published counts), that every reported
// score is the exact Jaccard, and that no reported pair is below t.
func TestQualityOnSharedCorpora(t *testing.T) {
	if testing.Short() {
		t.Skip("long: reads the shared corpora")
	}
	if raceEnabled {
		t.Skip("the race detector only slows the queries and the oracle (10 minutes); TestConcurrentQueries and others run queries at once under it")
	}
	names := []string{"kijiji-rome-rent", "spdx-licenses", "debian-copyright"}
	if long() {
		names = append(names, "scancode-licenses", "kjv-verses") // 20 s each on 2 cores
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			docs, sets, index := sharedCorpus(t, name)
			for _, th := range []float64{0.8, 0.5} {
				start := time.Now()
				truth := corpusOracle(name, sets, th)
				if want := publishedPairs[name][th]; len(truth) != want {
					t.Fatalf("t=%v: the oracle finds %d pairs, the corpus README %d", th, len(truth), want)
				}
				oracleTime := time.Since(start)
				// NB: on Pebble, then on a Redis Cluster (TestRedis*'s):
				// the same answers, pair for pair.
				var pebbleFound map[[2]int]float64
				backends := []string{"pebble", "redis"}
				if name == "scancode-licenses" || name == "kjv-verses" {
					// NB: the long-only corpora run on Pebble alone: on
					// Redis they would add about two minutes to CI.
					backends = backends[:1]
				}
				for _, backend := range backends {
					start = time.Now()
					var d *DB
					if backend == "pebble" {
						d = mustOpen(t, t.TempDir(), &Options{Threshold: th, NoSync: true})
					} else {
						d = mustOpen(t, redisURL(t, fmt.Sprintf("-%v", th)), &Options{Threshold: th, NoSync: true})
					}
					batch := make([]Doc, 0, 1000)
					for i, doc := range docs {
						batch = append(batch, Doc{ID: doc.ID, Text: doc.Text})
						if len(batch) == cap(batch) || i == len(docs)-1 {
							if _, err := d.PutBatch(batch, nil); err != nil {
								t.Fatal(err)
							}
							batch = batch[:0]
						}
					}
					build := time.Since(start)
					start = time.Now()
					// NB: the queries on every core, as a server takes
					// them (one at a time took 36 s on scancode-licenses
					// at t = 0.5).
					type match struct {
						i, j    int
						jaccard float64
					}
					workers := runtime.GOMAXPROCS(0)
					matches, cands, errs := make([][]match, workers), make([]int, workers), make([]error, workers)
					var wg sync.WaitGroup
					for w := range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := w; i < len(docs); i += workers {
								res, err := d.QueryID(context.Background(), docs[i].ID, nil)
								if err != nil {
									errs[w] = err
									return
								}
								cands[w] += res.Candidates
								for _, m := range res.Matches {
									j := index[m.ID]
									if exact := minhash.Jaccard(sets[i], sets[j]); m.Jaccard != exact {
										errs[w] = fmt.Errorf("%s ~ %s: reported %v, exact %v", docs[i].ID, m.ID, m.Jaccard, exact)
										return
									}
									if m.Jaccard < th {
										errs[w] = fmt.Errorf("%s ~ %s: %v is below %v", docs[i].ID, m.ID, m.Jaccard, th)
										return
									}
									matches[w] = append(matches[w], match{i, j, m.Jaccard})
								}
							}
						}()
					}
					wg.Wait()
					if err := errors.Join(errs...); err != nil {
						t.Fatal(err)
					}
					found := make(map[[2]int]float64)
					candidates := 0
					for w := range workers {
						candidates += cands[w]
						for _, m := range matches[w] {
							found[[2]int{min(m.i, m.j), max(m.i, m.j)}] = m.jaccard
						}
					}
					queries := time.Since(start)
					hit := 0
					for _, p := range truth {
						if _, ok := found[[2]int{p.A, p.B}]; ok {
							hit++
						}
					}
					if len(found) != hit {
						t.Fatalf("t=%v: %d reported pairs are not in the oracle's answer", th, len(found)-hit)
					}
					// Pairs finds exactly the pairs the queries found, each once.
					start = time.Now()
					pairs := 0
					var st PairsStats
					for p, err := range d.Pairs(context.Background(), &PairsOptions{Stats: &st}) {
						if err != nil {
							t.Fatal(err)
						}
						i, j := index[p.A], index[p.B]
						if found[[2]int{min(i, j), max(i, j)}] != p.Jaccard {
							t.Fatalf("Pairs reported %s ~ %s (%v), which the queries did not", p.A, p.B, p.Jaccard)
						}
						pairs++
					}
					if pairs != len(found) {
						t.Fatalf("Pairs reported %d pairs, the queries %d", pairs, len(found))
					}
					pairsTime := time.Since(start)
					recall := 1.0
					if len(truth) > 0 {
						recall = float64(hit) / float64(len(truth))
					}
					t.Logf("%s on %s, t=%.1f %v: %d docs, %d pairs, recall %.4f, %.1f candidates/query; oracle %v, build %v, %d queries %v, Pairs %v (%d candidates, %d verified)",
						name, backend, th, d.Params().Bands, len(docs), len(truth), recall, float64(candidates)/float64(len(docs)),
						oracleTime.Round(time.Millisecond), build.Round(time.Millisecond), len(docs), queries.Round(time.Millisecond), pairsTime.Round(time.Millisecond),
						st.Candidates, st.Verified)
					if recall < 0.995 {
						t.Errorf("t=%v: recall %.4f < 0.995 (%d of %d pairs)", th, recall, hit, len(truth))
					}
					if backend == "pebble" {
						pebbleFound = found
					} else if !maps.Equal(found, pebbleFound) {
						t.Errorf("t=%v: Redis found %d pairs, Pebble %d, not the same", th, len(found), len(pebbleFound))
					}
					if err := d.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// corpusOracle returns allpairs.Join(sets, th) of the shared corpus name
// (sets as sharedCorpus gives them), computed once per test process:
// TestPairsScancodeRules, TestQualityOnSharedCorpora and
// TestRecallOnEveryCorpus ask for the same joins, and scancode-rules at
// t = 0.5 alone takes about 15 s on 2 cores.
func corpusOracle(name string, sets [][]uint64, th float64) []allpairs.Pair {
	oracles.Lock()
	defer oracles.Unlock()
	key := fmt.Sprintf("%s@%v", name, th)
	truth, ok := oracles.m[key]
	if !ok {
		// NB: the ranking of a corpus's tokens serves every threshold;
		// only the last corpus's is kept.
		if oracles.rankedName != name {
			oracles.rankedName, oracles.ranked = name, allpairs.Rank(sets)
		}
		truth = oracles.ranked.Join(th)
		oracles.m[key] = truth
	}
	return truth
}

var oracles = struct {
	sync.Mutex
	m          map[string][]allpairs.Pair
	rankedName string
	ranked     *allpairs.Ranked
}{m: map[string][]allpairs.Pair{}}

// sharedCorpus loads a shared corpus (skipping the test when ../shared is
// absent) and its shingle sets with the default options, computed here
// independently of the database, and each id's position.
func sharedCorpus(t *testing.T, name string) ([]corpus.Doc, [][]uint64, map[string]int) {
	t.Helper()
	docs, err := corpus.Shared(name, 0)
	if errors.Is(err, corpus.ErrNoShared) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	sets := make([][]uint64, len(docs))
	index := make(map[string]int, len(docs))
	for i, d := range docs {
		sets[i], _ = h.Document(nil, nil, d.Text)
		index[d.ID] = i
	}
	return docs, sets, index
}
