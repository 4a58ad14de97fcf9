package db

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/corpus"
)

// BenchmarkQueryMany measures QueryMany of 1,000 text queries against the
// same 1,000 queries asked one by one with Query, both in each op on the
// sample corpus (warm caches), so that the ratio compares two measurements
// of the same run: many-x-loop below 1 is what answering concurrently buys
// (on n cores, at best 1/n).
func BenchmarkQueryMany(b *testing.B) {
	texts, err := corpus.SampleTexts()
	if err != nil {
		b.Fatal(err)
	}
	d := mustOpen(b, b.TempDir(), &Options{NoSync: true})
	defer d.Close()
	docs := make([]Doc, len(texts))
	for i, s := range texts {
		docs[i] = Doc{ID: "d" + strconv.Itoa(i), Text: s}
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	qs := make([]QueryInput, 1000)
	for i := range qs {
		w := strings.Fields(texts[rng.IntN(len(texts))])
		if len(w) > 3 {
			w[rng.IntN(len(w))] = "mutated"
		}
		qs[i] = QueryInput{Text: strings.Join(w, " ")}
	}
	ctx := context.Background()
	if _, err := d.QueryMany(ctx, qs, nil); err != nil { // warm
		b.Fatal(err)
	}
	var many, loop time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := d.QueryMany(ctx, qs, nil); err != nil {
			b.Fatal(err)
		}
		many += time.Since(start)
		start = time.Now()
		for i := range qs {
			if _, err := d.Query(ctx, qs[i].Text, nil); err != nil {
				b.Fatal(err)
			}
		}
		loop += time.Since(start)
	}
	b.ReportMetric(float64(many)/float64(loop), "many-x-loop")
}
