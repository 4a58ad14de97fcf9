package db_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/lshdb/lshdb/db"
)

// Open a database, store documents, and ask for near-duplicates of a text
// and of a stored document.
func Example() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)

	d, err := db.Open(dir, nil) // creates it: char 5-shingles, 128 values, threshold 0.8
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	_, err = d.PutBatch([]db.Doc{
		{ID: "fox-1", Text: "The quick brown fox jumps over the lazy dog"},
		{ID: "fox-2", Text: "The quick brown fox jumps over the lazy dog!"},
		{ID: "cat", Text: "A completely different sentence about a cat"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}

	res, err := d.Query(context.Background(), "the quick brown fox jumps over the lazy dog", nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Matches {
		fmt.Printf("%s %.3f\n", m.ID, m.Jaccard)
	}

	res, err = d.QueryID(context.Background(), "fox-1", &db.QueryOptions{Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("near fox-1:", len(res.Matches), res.Matches[0].ID)
	// Output:
	// fox-1 1.000
	// fox-2 0.975
	// near fox-1: 1 fox-2
}

// Open an existing database for reading only: a missing one is an error
// (ErrNotExist) instead of a new, empty database.
func ExampleOpen() {
	_, err := db.Open(filepath.Join(os.TempDir(), "no-such-lshdb-index"), &db.Options{ReadOnly: true})
	fmt.Println(errors.Is(err, db.ErrNotExist))
	// Output:
	// true
}

// Bulk-load documents from any iterator in one atomic step, then list
// every near-duplicate pair. Load replaces stored ids; the last of
// repeated ids in the input wins.
func ExampleDB_Load() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	texts := map[string]string{
		"a": "Lorem ipsum dolor sit amet, consectetur adipiscing elit",
		"b": "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
		"c": "Sed ut perspiciatis unde omnis iste natus error sit",
	}
	docs := func(yield func(db.Doc, error) bool) {
		for _, id := range []string{"a", "b", "c"} {
			if !yield(db.Doc{ID: id, Text: texts[id]}, nil) {
				return
			}
		}
	}
	res, err := d.Load(context.Background(), docs, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", res.Stored)
	for p, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s %.3f\n", p.A, p.B, p.Jaccard)
	}
	// Output:
	// stored 3
	// a b 0.981
}

// Group near-duplicates into clusters: connected components of the
// pairs, the earliest inserted member first.
func ExampleDB_Clusters() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	_, err = d.PutBatch([]db.Doc{
		{ID: "v1", Text: "Release notes: fixed a crash when opening large files"},
		{ID: "other", Text: "An unrelated announcement about the spring meeting"},
		{ID: "v2", Text: "Release notes: fixed a crash when opening large files."},
		{ID: "v3", Text: "Release notes: fixed a crash when opening large files!"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	cs, err := d.Clusters(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range cs {
		fmt.Println(c.Representative, c.IDs)
	}
	// Output:
	// v1 [v1 v2 v3]
}

// Store a document only if no near-duplicate is stored: the check and the
// insert are atomic with respect to other writers.
func ExampleDB_PutIfNew() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	for _, doc := range []db.Doc{
		{ID: "first", Text: "Breaking: the river has flooded the old town overnight"},
		{ID: "repost", Text: "BREAKING: the river has flooded the old town overnight"},
	} {
		m, err := d.PutIfNew(doc, nil)
		if err != nil {
			log.Fatal(err)
		}
		if m != nil {
			fmt.Printf("%s not stored: duplicate of %s (%.2f)\n", doc.ID, m.ID, m.Jaccard)
		} else {
			fmt.Printf("%s stored\n", doc.ID)
		}
	}
	// Output:
	// first stored
	// repost not stored: duplicate of first (1.00)
}

// Iterate over every stored document in insertion order, from one
// snapshot; the loop body may call any method of the database.
func ExampleDB_All() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{StoreText: true})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if _, err := d.PutBatch([]db.Doc{{ID: "x", Text: "first text"}, {ID: "y", Text: "second text"}}, nil); err != nil {
		log.Fatal(err)
	}
	for doc, err := range d.All() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(doc.Num, doc.ID, doc.Text)
	}
	// Output:
	// 1 x first text
	// 2 y second text
}

// Every error the package returns for a known condition wraps a sentinel:
// test it with errors.Is, not by its message.
func Example_errorsIs() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = d.Get("missing")
	fmt.Println(errors.Is(err, db.ErrNotFound))
	err = d.Put(db.Doc{ID: "", Text: "an empty id"}, nil)
	fmt.Println(errors.Is(err, db.ErrInvalidID))
	d.Close()
	_, err = d.Count()
	fmt.Println(errors.Is(err, db.ErrClosed))
	// Output:
	// true
	// true
	// true
}

// Stream every near-duplicate pair once, with its exact Jaccard (A is the
// earlier inserted; "orig" and "same" normalize to the same text, an
// identical group); the iteration can be cancelled through its context,
// and Stats says what the run did.
func ExampleDB_Pairs() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	_, err = d.PutBatch([]db.Doc{
		{ID: "orig", Text: "Water boils at one hundred degrees Celsius at sea level"},
		{ID: "copy", Text: "Water boils at one hundred degrees Celsius at sea level."},
		{ID: "same", Text: "water boils at one hundred degrees celsius at sea level"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var st db.PairsStats
	var lines []string
	for p, err := range d.Pairs(context.Background(), &db.PairsOptions{Stats: &st}) {
		if err != nil {
			log.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s %.3f", p.A, p.B, p.Jaccard))
	}
	slices.Sort(lines) // Pairs come in no particular order
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println("identical groups:", st.IdenticalGroups)
	// Output:
	// copy same 0.980
	// orig copy 0.980
	// orig same 1.000
	// identical groups: 1
}

// PairGroups yields the pairs of copies (identical shingle sets) as
// groups: 1,000 copies of a notice are 499,500 pairs to Pairs, one group
// here; and the copies' pairs with a near variant one group more.
func ExampleDB_PairGroups() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{NoSync: true})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	var docs []db.Doc
	for i := range 1000 {
		docs = append(docs, db.Doc{ID: fmt.Sprintf("copy-%04d", i), Text: "This package is free software, licensed under the GNU GPL version 2"})
	}
	docs = append(docs, db.Doc{ID: "variant", Text: "This package is free software, licensed under the GNU GPL version 2."})
	if _, err := d.PutBatch(docs, nil); err != nil {
		log.Fatal(err)
	}
	var lines []string
	var pairs int64
	for g, err := range d.PairGroups(context.Background(), nil) {
		if err != nil {
			log.Fatal(err)
		}
		pairs += g.Pairs()
		lines = append(lines, fmt.Sprintf("%d × %d documents, Jaccard %.3f: %d pairs", len(g.A), len(g.B), g.Jaccard, g.Pairs()))
	}
	slices.Sort(lines) // groups come in no particular order
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println("pairs in all:", pairs)
	// Output:
	// 1000 × 0 documents, Jaccard 1.000: 499500 pairs
	// 1000 × 1 documents, Jaccard 0.984: 1000 pairs
	// pairs in all: 500500
}

// Scan reads every stored text without re-deriving shingle sets and
// signatures: the cheap way to export an index's documents.
func ExampleDB_Scan() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if _, err := d.PutBatch([]db.Doc{{ID: "x", Text: "first text", Meta: []byte(`{"lang":"en"}`)}, {ID: "y", Text: "second text"}}, nil); err != nil {
		log.Fatal(err)
	}
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(doc.ID, doc.Text, string(doc.Meta), doc.Shingles == nil)
	}
	// Output:
	// x first text {"lang":"en"} true
	// y second text  true
}

// Clusters from pairs found before (a pairs file of a nightly run, or
// pairs filtered by other rules): the index supplies the keep order and
// each member's exact Jaccard to the one kept.
func ExampleDB_ClustersFrom() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	_, err = d.PutBatch([]db.Doc{
		{ID: "v1", Text: "Release notes: fixed a crash when opening large files"},
		{ID: "v2", Text: "Release notes: fixed a crash when opening large files."},
		{ID: "other", Text: "An unrelated announcement about the spring meeting"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	pairs := func(yield func(db.Pair, error) bool) {
		// NB: 49 shingles shared of 50: 0.98, recomputed from the sets.
		yield(db.Pair{A: "v2", B: "v1", Jaccard: 1}, nil)
	}
	cs, err := d.ClustersFrom(context.Background(), pairs, &db.PairsOptions{Keep: db.KeepLast})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range cs {
		fmt.Printf("keep %s, drop %s (Jaccard %.3f)\n", c.Representative, c.IDs[1], c.Jaccard[1])
	}
	// Output:
	// keep v2, drop v1 (Jaccard 0.980)
}

// Info answers at once from the manifest and the store's metadata:
// parameters, document count and size on disk.
func ExampleDB_Info() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{Threshold: 0.7})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(db.Doc{ID: "a", Text: "a short text to count"}, nil); err != nil {
		log.Fatal(err)
	}
	info, err := d.Info()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Docs, info.Params.Threshold, info.DiskBytes > 0)
	// Output:
	// 1 0.7 true
}
