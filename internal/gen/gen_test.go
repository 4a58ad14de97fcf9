package gen

import (
	"slices"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that a corpus is deterministic, has the requested size and copy
// fraction, and that copies derive from earlier originals at their rate
// (rate 0: identical; higher rates change more words).
func TestStream(t *testing.T) {
	sources := []string{"alpha beta gamma delta epsilon", "one two three four five six", "red green blue cyan magenta yellow black"}
	o := Options{Seed: 7, N: 5000, Sources: sources}
	a := slices.Collect(Stream(o))
	b := slices.Collect(Stream(o))
	if !slices.Equal(a, b) || len(a) != 5000 {
		t.Fatalf("not deterministic or wrong size: %d", len(a))
	}
	byID := map[string]Doc{}
	copies := 0
	for _, d := range a {
		byID[d.ID] = d
		if d.Of == "" {
			continue
		}
		copies++
		src, ok := byID[d.Of]
		if !ok || src.Of != "" {
			t.Fatalf("%s copies %q, which is not an earlier original", d.ID, d.Of)
		}
		if d.EditRate == 0 && d.Text != src.Text {
			t.Fatalf("%s: a rate-0 copy differs from its original", d.ID)
		}
	}
	if f := float64(copies) / 5000; f < 0.17 || f > 0.23 {
		t.Fatalf("copy fraction %.3f, want about 0.2", f)
	}
	if c := slices.Collect(Stream(Options{Seed: 8, N: 100, Sources: sources})); slices.Equal(c, a[:100]) {
		t.Fatal("another seed gives the same corpus")
	}
	for _, w := range strings.Fields(a[0].Text) {
		if !strings.Contains(strings.Join(sources, " "), w) {
			t.Fatalf("an original has the word %q, which no source has", w)
		}
	}
}

// Ensure that originals are not near-duplicates of each other by accident,
// even when there are many more originals than sources: the only pairs at
// Jaccard 0.5 or more are copies and their originals (or two copies of one
// original).
func TestOriginalsAreDistinct(t *testing.T) {
	sources, err := corpus.SampleTexts()
	if err != nil {
		t.Fatal(err)
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 1,500 originals from 1,277 sources: every source is used several
	// times over (the scale of a million documents from 64,000 sources).
	var sets [][]uint64
	var origs []Doc
	for d := range Stream(Options{Seed: 3, N: 1500, Sources: sources, CopyFraction: 1e-9}) {
		if d.Of != "" {
			continue
		}
		set, _ := h.Document(nil, nil, d.Text)
		sets = append(sets, set)
		origs = append(origs, d)
	}
	for i := range sets {
		for j := range sets[:i] {
			if jac, ok := minhash.JaccardAtLeast(sets[i], sets[j], 0.5); ok {
				t.Fatalf("originals %s and %s have Jaccard %.3f", origs[j].ID, origs[i].ID, jac)
			}
		}
	}
}
