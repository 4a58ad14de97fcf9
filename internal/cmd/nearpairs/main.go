// Command nearpairs is the signatures-and-banding pipeline end to end, in
// memory: it reads a JSON Lines corpus, computes shingle sets and MinHash
// signatures, groups documents by band key, verifies every candidate pair
// with exact Jaccard, and prints the near-duplicate pairs and the recall
// against a brute-force all-pairs oracle.
//
//	go run ./internal/cmd/nearpairs [-t 0.8] [-scheme oph] [-show 10] testdata/corpora/debian-sample/docs.jsonl
//
// It is a demonstration of the minhash and bands packages (no index is
// persisted); the lshdb command supersedes it.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

type pair struct {
	a, b int
	j    float64
}

func main() {
	threshold := flag.Float64("t", 0.8, "Jaccard threshold")
	schemeName := flag.String("scheme", "oph", "signature scheme: oph or classic")
	show := flag.Int("show", 10, "pairs to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: nearpairs [-t 0.8] [-scheme oph|classic] [-show N] FILE.jsonl[.gz]")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *threshold, *schemeName, *show); err != nil {
		fmt.Fprintln(os.Stderr, "nearpairs:", err)
		os.Exit(1)
	}
}

func run(path string, t float64, schemeName string, show int) error {
	docs, err := corpus.Load(path, 0)
	if err != nil {
		return err
	}
	scheme, err := minhash.ParseScheme(schemeName)
	if err != nil {
		return err
	}
	p, err := bands.Choose(minhash.DefaultNumPerm, t, bands.Options{})
	if err != nil {
		return err
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{Scheme: scheme})
	if err != nil {
		return err
	}
	start := time.Now()
	sets := make([][]uint64, len(docs))
	buckets := make(map[uint64][]int)
	var sig []uint32
	var keys []uint64
	for i, d := range docs {
		sets[i], sig = h.Document(nil, sig[:0], d.Text)
		if keys, err = bands.AppendKeys(keys[:0], sig, p); err != nil {
			return err
		}
		for _, k := range keys {
			buckets[k] = append(buckets[k], i)
		}
	}
	seen := make(map[[2]int]bool)
	var found []pair
	for _, ids := range buckets {
		for x := range ids {
			for _, b := range ids[x+1:] {
				a := ids[x]
				if seen[[2]int{a, b}] {
					continue
				}
				seen[[2]int{a, b}] = true
				if j := minhash.Jaccard(sets[a], sets[b]); j >= t {
					found = append(found, pair{a, b, j})
				}
			}
		}
	}
	lsh := time.Since(start)

	start = time.Now()
	truth := 0
	for a := range sets {
		for b := a + 1; b < len(sets); b++ {
			if minhash.Jaccard(sets[a], sets[b]) >= t {
				truth++
			}
		}
	}
	brute := time.Since(start)

	slices.SortFunc(found, func(x, y pair) int {
		return cmp.Or(cmp.Compare(y.j, x.j), cmp.Compare(docs[x.a].ID, docs[y.a].ID), cmp.Compare(docs[x.b].ID, docs[y.b].ID))
	})
	fmt.Printf("%d documents, %v, banding %v (P(%.2f) = %.4f)\n", len(docs), scheme, p, t, p.Probability(t))
	fmt.Printf("LSH: %d candidate pairs verified, %d pairs with Jaccard >= %.2f, in %v\n", len(seen), len(found), t, lsh.Round(time.Millisecond))
	fmt.Printf("brute force: %d pairs with Jaccard >= %.2f, in %v\n", truth, t, brute.Round(time.Millisecond))
	if truth > 0 {
		fmt.Printf("recall: %.4f\n", float64(len(found))/float64(truth))
	}
	for _, f := range found[:min(show, len(found))] {
		fmt.Printf("  %.3f  %s  %s\n", f.j, docs[f.a].ID, docs[f.b].ID)
	}
	return nil
}
