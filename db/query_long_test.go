package db

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

// Ensure that a query by a long text answers as one by a short text is
// answered (its repeats kept), with the exact Jaccard of each match, and
// without holding a hash for each of its shingles' occurrences: a query by
// 30 MB of text held 240 MB of them. The oracles: the same queries with
// the threshold of long texts out of reach, the brute-force Jaccard of the
// sets, and the bytes allocated against the text's length.
func TestQueryLongText(t *testing.T) {
	if testing.Short() {
		t.Skip("queries by 12 MB of text, in -short")
	}
	ctx := context.Background()
	d := mustOpen(t, filepath.Join(t.TempDir(), "idx"), nil)
	defer d.Close()
	para := "The tenant shall keep the premises in good repair and return them in the state in which they were received, fair wear excepted. "
	var b strings.Builder
	for i := range 96_000 { // 12.3 MB
		b.WriteString(para)
		if i%48_000 == 0 {
			fmt.Fprintf(&b, "Clause %d of the lease applies here. ", i/48_000)
		}
	}
	query := b.String()
	docs := []Doc{
		{ID: "para", Text: para},
		{ID: "clause", Text: para + "Clause 0 of the lease applies here. "},
		{ID: "other", Text: "A recipe for bread: flour, water, salt and yeast, kneaded and left to rise overnight."},
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}

	// allocated returns the bytes allocated by a query of query, and its
	// result (two GCs first empty the query scratch's pool).
	allocated := func() (uint64, *QueryResult) {
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := d.Query(ctx, query, &QueryOptions{Threshold: 0.1})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return after.TotalAlloc - before.TotalAlloc, res
	}
	distinctBytes, distinct := allocated()
	defer func(n int) { longQueryText = n }(longQueryText)
	longQueryText = 1 << 62
	elementsBytes, elements := allocated()

	if !reflect.DeepEqual(distinct, elements) {
		t.Errorf("a long query de-duplicated: %+v\nwith its repeats: %+v", distinct, elements)
	}
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	qs := h.Shingler().AppendSet(nil, query)
	want := map[string]float64{}
	for _, doc := range docs {
		if j := minhash.Jaccard(qs, h.Shingler().AppendSet(nil, doc.Text)); j >= 0.1 {
			want[doc.ID] = j
		}
	}
	got := map[string]float64{}
	for _, m := range distinct.Matches {
		got[m.ID] = m.Jaccard
	}
	if !reflect.DeepEqual(got, want) || len(want) != 2 {
		t.Errorf("matches %v, brute force %v", got, want)
	}
	// NB: the text's 12.3 million shingles with repeats are 98 MB of
	// hashes; its distinct ones, a few hundred (in a table of 16 MiB,
	// beside the normalized text's 12 MB).
	if distinctBytes > elementsBytes/3 || elementsBytes < 8*uint64(len(query)) {
		t.Errorf("a query by %d bytes of text allocated %d bytes de-duplicated, %d with its repeats", len(query), distinctBytes, elementsBytes)
	}
	t.Logf("a query by %d bytes of text: %d bytes allocated de-duplicated, %d with its repeats", len(query), distinctBytes, elementsBytes)
}
