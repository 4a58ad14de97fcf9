package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that `lshdb pairs` on shared corpora (skipped when ../shared is
// absent) reports ≥ 99% of the pairs whose exact Jaccard reaches t (oracle:
// the prefix-filter all-pairs join), every score exact, every pair once,
// none below t. The db package's quality test covers all five corpora
// through the same db.Pairs; this runs the command end to end on one (two
// with LSHDB_LONG=1).
func TestPairsCommandOnSharedCorpora(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the shared corpora")
	}
	names := []string{"kijiji-rome-rent"}
	if os.Getenv("LSHDB_LONG") == "1" {
		names = append(names, "spdx-licenses") // 12 s on 2 cores
	}
	for _, name := range names {
		for _, th := range []string{"0.8", "0.5"} {
			t.Run(name+"/"+th, func(t *testing.T) {
				dir, err := corpus.SharedDir(name)
				if errors.Is(err, corpus.ErrNoShared) {
					t.Skip(err)
				}
				docs, err := corpus.Shared(name, 0)
				if err != nil {
					t.Fatal(err)
				}
				file, _ := filepath.Glob(filepath.Join(dir, "docs.jsonl*"))
				index := filepath.Join(t.TempDir(), "index")
				if _, errOut, code := runLine([]string{"insert", "--db", index, "--threshold", th, file[0]}, ""); code != 0 {
					t.Fatal(errOut)
				}
				out, errOut, code := runLine([]string{"pairs", "--db", index, "--output", "json"}, "")
				if code != 0 {
					t.Fatal(errOut)
				}
				h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
				sets := make([][]uint64, len(docs))
				pos := map[string]int{}
				for i, d := range docs {
					sets[i], _ = h.Document(nil, nil, d.Text)
					pos[d.ID] = i
				}
				var tf float64
				json.Unmarshal([]byte(th), &tf)
				truth := map[[2]int]bool{}
				for _, p := range allpairs.Join(sets, tf) {
					truth[[2]int{p.A, p.B}] = true
				}
				got := map[[2]int]bool{}
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					var p struct {
						A, B    string
						Jaccard float64
					}
					if err := json.Unmarshal([]byte(line), &p); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					i, j := pos[p.A], pos[p.B]
					k := [2]int{min(i, j), max(i, j)}
					if got[k] {
						t.Fatalf("%s ~ %s reported twice", p.A, p.B)
					}
					got[k] = true
					if exact := minhash.Jaccard(sets[i], sets[j]); p.Jaccard != exact || exact < tf {
						t.Fatalf("%s ~ %s: reported %v, exact %v, threshold %v", p.A, p.B, p.Jaccard, exact, tf)
					}
				}
				hit := 0
				for k := range truth {
					if got[k] {
						hit++
					}
				}
				recall := float64(hit) / float64(len(truth))
				t.Logf("%s t=%s: %d pairs, recall %.4f", name, th, len(truth), recall)
				if recall < 0.99 {
					t.Errorf("recall %.4f < 0.99", recall)
				}
			})
		}
	}
}
