package db

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
)

// BenchmarkPairsClusters runs Pairs and Clusters on the same index of
// generated documents, so that Clusters' cost reads as a ratio to Pairs'
// measured in the same run (it runs the same join and adds union-find).
func BenchmarkPairsClusters(b *testing.B) {
	texts, err := corpus.SampleTexts()
	if err != nil {
		b.Fatal(err)
	}
	d := mustOpen(b, b.TempDir(), &Options{NoSync: true})
	defer d.Close()
	docs := func(yield func(Doc, error) bool) {
		for g := range gen.Stream(gen.Options{Seed: 5, N: 20000, Sources: texts}) {
			if !yield(Doc{ID: g.ID, Text: g.Text}, nil) {
				return
			}
		}
	}
	if _, err := d.Load(context.Background(), docs, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("pairs", func(b *testing.B) {
		for b.Loop() {
			for _, err := range d.Pairs(context.Background(), nil) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	// NB: the same with a progress reporter (what the command's bar uses):
	// compare with "pairs" in the same run.
	b.Run("pairs-progress", func(b *testing.B) {
		reports := 0
		ctx := WithProgress(context.Background(), func(Progress) { reports++ })
		for b.Loop() {
			for _, err := range d.Pairs(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(reports)/float64(b.N), "reports/op")
	})
	b.Run("clusters", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Clusters(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPairsLimitHotGroup measures Pairs with a Limit of 5 on 20,000
// copies of one text, their ids in no order, near 1,000 variants of it:
// every pair of the group's and of its members with each variant went
// through the heap of the best (5 s and more), and then the group's
// members were sorted by id again for each variant (8.2 s against 1.2 s
// once per group, a maintainer's M1).
func BenchmarkPairsLimitHotGroup(b *testing.B) {
	base := strings.Repeat("a notice copied into every file of the project, word for word, ", 3)
	var docs []Doc
	for i := range 20000 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy-%06d", (i*7919)%20000), Text: base})
	}
	for i := range 1000 {
		docs = append(docs, Doc{ID: fmt.Sprintf("variant-%04d", i), Text: base + fmt.Sprint(" variant ", i)})
	}
	d := mustOpen(b, b.TempDir(), &Options{Threshold: 0.7, NoSync: true})
	defer d.Close()
	if _, err := d.Load(context.Background(), seqOf(docs), nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		n := 0
		for _, err := range d.Pairs(context.Background(), &PairsOptions{Limit: 5}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 5 {
			b.Fatalf("%d pairs, want 5", n)
		}
	}
}
