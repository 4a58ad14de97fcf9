package gen

import (
	"slices"
	"strings"
	"testing"
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
	if strings.Count(a[0].Text, "\n") != 2 {
		t.Fatalf("an original has %d parts", strings.Count(a[0].Text, "\n")+1)
	}
}
