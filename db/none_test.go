package db

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

// Ensure that on an index of storage none, query by id, explain, dedup
// (PutIfNew) and Pairs report the same pairs: Pairs dropped a pair whose
// set sizes rule it out (J ≤ min/max < t) and the others reported it on
// its estimate alone (a review: exodus 37:15 ~ 37:28 by query and
// explain, not by pairs or clusters). The oracle: Pairs and queries by id
// against each other, and the sizes' bound computed from Explain's set
// sizes. The documents: the debian sample and copies cut to 95%, 85% and
// 75% of their words, so that many candidate pairs are ruled out by size.
func TestNoneModeAgrees(t *testing.T) {
	f, err := os.Open("../testdata/corpora/debian-sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []Doc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && len(docs) < 800 {
		var d struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, Doc{ID: d.ID, Text: d.Text})
		words := strings.Fields(d.Text)
		if len(docs)%4 == 0 && len(words) >= 20 {
			for _, keep := range []int{95, 85, 75} {
				docs = append(docs, Doc{ID: d.ID + "~" + string(rune('0'+keep/10)), Text: strings.Join(words[:len(words)*keep/100], " ")})
			}
		}
	}
	const th = 0.8
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageNone, Threshold: th})
	defer d.Close()
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type pair struct{ a, b string }
	norm := func(a, b string) pair {
		if a > b {
			a, b = b, a
		}
		return pair{a, b}
	}
	fromPairs := map[pair]bool{}
	for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: th}) {
		if err != nil {
			t.Fatal(err)
		}
		fromPairs[norm(p.A, p.B)] = true
	}
	fromQueries := map[pair]bool{}
	for _, doc := range docs {
		res, err := d.QueryID(ctx, doc.ID, &QueryOptions{Threshold: th})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Matches {
			fromQueries[norm(doc.ID, m.ID)] = true
		}
	}
	ruledOut := 0
	for p := range fromQueries {
		e, err := d.Explain(p.a, p.b)
		if err != nil {
			t.Fatal(err)
		}
		small, big := min(e.SetLenA, e.SetLenB), max(e.SetLenA, e.SetLenB)
		if float64(small)/float64(big) < th {
			ruledOut++
			t.Errorf("query reports %v, whose sets of %d and %d shingles rule it out", p, small, big)
		}
		if !e.Found {
			t.Errorf("query reports %v, explain says not found", p)
		}
		if !fromPairs[p] {
			t.Errorf("query reports %v, pairs does not", p)
		}
	}
	for p := range fromPairs {
		if !fromQueries[p] {
			t.Errorf("pairs reports %v, no query by id does", p)
		}
	}
	// The premise: the cut copies make candidates that the sizes rule out.
	sizeOut := 0
	for _, doc := range docs {
		if i := strings.LastIndex(doc.ID, "~7"); i > 0 {
			e, err := d.Explain(doc.ID[:i], doc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if e.SizesRuleOut {
				sizeOut++
				if e.Found {
					t.Errorf("explain %s %s: found, its sizes ruling it out", doc.ID[:i], doc.ID)
				}
			}
		}
	}
	if len(fromPairs) < 20 || sizeOut < 20 {
		t.Fatalf("%d pairs, %d ruled out by size: the premise of this test does not hold", len(fromPairs), sizeOut)
	}
	// Dedup (PutIfNew) answers with a document its sizes do not rule out.
	for _, doc := range docs[:200] {
		m, err := d.PutIfNew(Doc{ID: doc.ID + "-again", Text: doc.Text}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			t.Errorf("dedup of %s's text: no duplicate", doc.ID)
			continue
		}
		if e, err := d.Explain(doc.ID, m.ID); err != nil || e.SizesRuleOut {
			t.Errorf("dedup of %s's text: duplicate of %s, which its sizes rule out (%v)", doc.ID, m.ID, err)
		}
	}
}

// Ensure that Get gives a document's set size on an index of storage none
// (StoredDoc.SetLen), which keeps no set: the size the put counted, as a
// separate hashing of its text counts it (the oracle), and 0 (unknown)
// for a document put as a signature.
func TestNoneModeGetSetLen(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageNone})
	defer d.Close()
	text := "the quick brown fox jumps over the lazy dog, and the quick brown fox jumps again"
	if err := d.Put(Doc{ID: "text", Text: text}, nil); err != nil {
		t.Fatal(err)
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set, sig := h.Document(nil, nil, text)
	if err := d.Put(Doc{ID: "sig", Signature: sig}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := d.Get("text")
	if err != nil {
		t.Fatal(err)
	}
	if got.Shingles != nil || got.SetLen != len(set) || len(set) == 0 {
		t.Fatalf("Get of a text put: Shingles %v, SetLen %d; want nil and %d", got.Shingles, got.SetLen, len(set))
	}
	if got, err = d.Get("sig"); err != nil || got.SetLen != 0 {
		t.Fatalf("Get of a signature put: SetLen %d (%v), want 0 (unknown)", got.SetLen, err)
	}
}
