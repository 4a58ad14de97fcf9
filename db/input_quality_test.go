package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/corpus"
)

// wordTokens is the tokenizer of the set-input quality tests: lower-cased
// white-space-separated words, punctuation kept.
func wordTokens(text string) []string { return strings.Fields(strings.ToLower(text)) }

// tokenIDSets returns each token list as the sorted, distinct ids of its
// tokens in a dictionary: sets over the token strings themselves, with no
// hashing, for the oracle.
func tokenIDSets(lists [][]string) [][]uint64 {
	dict := map[string]uint64{}
	out := make([][]uint64, len(lists))
	for i, l := range lists {
		for _, tok := range l {
			id, ok := dict[tok]
			if !ok {
				id = uint64(len(dict))
				dict[tok] = id
			}
			out[i] = append(out[i], id)
		}
		slices.Sort(out[i])
		out[i] = slices.Compact(out[i])
	}
	return out
}

// setQuality puts every token list as a Set into a sets index, queries
// every one with QueryMany, and compares the pairs found with the oracle's
// (exact Jaccard over the token strings): it returns the recall and fails
// the test on any reported pair whose Jaccard is not the oracle's.
func setQuality(t *testing.T, lists [][]string, truth []allpairs.Pair, th float64) float64 {
	t.Helper()
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Threshold: th, NoSync: true})
	defer d.Close()
	docs := make([]Doc, len(lists))
	qs := make([]QueryInput, len(lists))
	for i, l := range lists {
		docs[i] = Doc{ID: fmt.Sprint(i), Set: Tokens(l...)}
		qs[i] = QueryInput{Set: Tokens(l...)}
	}
	for i := 0; i < len(docs); i += 5000 {
		if _, err := d.PutBatch(docs[i:min(i+5000, len(docs))], &WriteOptions{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.QueryMany(context.Background(), qs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[[2]int]float64, len(truth))
	for _, p := range truth {
		want[[2]int{p.A, p.B}] = p.Jaccard
	}
	found := 0
	for a, r := range res {
		for _, m := range r.Matches {
			var b int
			fmt.Sscan(m.ID, &b)
			if b <= a {
				continue // each pair once, from its lower index; a itself is a match
			}
			j, ok := want[[2]int{a, b}]
			if !ok || j != m.Jaccard {
				t.Fatalf("pair (%d, %d) reported at %v; the oracle says %v (found: %v)", a, b, m.Jaccard, j, ok)
			}
			found++
		}
	}
	if len(truth) == 0 {
		t.Fatal("the oracle finds no pair: the test proves nothing")
	}
	return float64(found) / float64(len(truth))
}

// Ensure that QuerySet with word tokens finds the pairs that a brute-force
// Jaccard over the same tokens finds (recall ≥ 0.99), each with its exact
// Jaccard, on the always-present sample corpus.
func TestSetQualitySample(t *testing.T) {
	texts, err := corpus.SampleTexts()
	if err != nil {
		t.Fatal(err)
	}
	lists := make([][]string, 0, len(texts))
	for _, s := range texts {
		if w := wordTokens(s); len(w) > 0 {
			lists = append(lists, w)
		}
	}
	const th = 0.6
	truth := allpairs.Brute(tokenIDSets(lists), th)
	recall := setQuality(t, lists, truth, th)
	t.Logf("%d token sets, %d pairs at J ≥ %v, recall %.4f", len(lists), len(truth), th, recall)
	if recall < 0.99 {
		t.Fatalf("recall %.4f < 0.99", recall)
	}
}

// Ensure the same on ../shared/corpora/kjv-verses (31,102 verses; skipped
// when absent, and without LSHDB_LONG=1): the oracle is the exact all-pairs join over the token
// strings (internal/allpairs, checked against brute force by its own tests).
func TestSetQualityKJV(t *testing.T) {
	if testing.Short() || !long() || raceEnabled {
		t.Skip("long (LSHDB_LONG=1, no -race): 31,102 verses, about 6 s on 2 cores")
	}
	docs, err := corpus.Shared("kjv-verses", 0)
	if errors.Is(err, corpus.ErrNoShared) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	lists := make([][]string, len(docs))
	for i, d := range docs {
		lists[i] = wordTokens(d.Text)
	}
	const th = 0.7
	truth := allpairs.Join(tokenIDSets(lists), th)
	recall := setQuality(t, lists, truth, th)
	t.Logf("%d verses, %d pairs at J ≥ %v, recall %.4f", len(lists), len(truth), th, recall)
	if recall < 0.99 {
		t.Fatalf("recall %.4f < 0.99", recall)
	}
}
