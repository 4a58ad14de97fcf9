package db

import (
	"context"
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
	d := mustOpenB(b, b.TempDir(), &Options{NoSync: true})
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
