package db_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/minhash"
)

// Store and query documents given as the caller's own tokens (tags, words,
// code tokens) instead of text, in an index that keeps sets: answers are
// exact Jaccard similarities of the token sets.
func ExampleDB_PutSet() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{Storage: db.StorageSets, Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	err = d.PutSet("pkg-a", db.Tokens("go", "database", "lsh", "minhash", "pebble"), nil)
	if err != nil {
		log.Fatal(err)
	}
	err = d.PutSet("pkg-b", db.Tokens("go", "database", "lsh", "minhash", "bolt"), nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := d.QuerySet(context.Background(), db.Tokens("go", "lsh", "minhash", "pebble", "database"), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Matches {
		fmt.Printf("%s %.3f\n", m.ID, m.Jaccard)
	}
	// Output:
	// pkg-a 1.000
	// pkg-b 0.667
}

// A set of the caller's own hashes or ids: any distinct values, small
// integers included, keep their exact Jaccard.
func ExampleHashes() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{Storage: db.StorageSets, Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	if err := d.PutSet("user-1", db.Hashes(1, 2, 3, 4, 5, 6), nil); err != nil {
		log.Fatal(err)
	}
	res, err := d.QuerySet(context.Background(), db.Hashes(1, 2, 3, 4, 5, 7), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %.4f\n", res.Matches[0].ID, res.Matches[0].Jaccard) // 5 shared of 7: 5/7
	// Output: user-1 0.7143
}

// Store and query precomputed signatures, here made as datasketch makes
// them: with the datasketch scheme (seed 1 and 128 values, datasketch's
// defaults), datasketch's MinHash.hashvalues can be stored and queried
// as they are. A none index keeps signatures alone; every answer is an
// estimate.
func ExampleDB_PutSignature() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{Storage: db.StorageNone, Scheme: minhash.SchemeDatasketch, Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	// In Python: m = MinHash(); [m.update(w.encode()) for w in words]; m.hashvalues
	sk, _ := minhash.NewSketcher(minhash.SketchOptions{Scheme: minhash.SchemeDatasketch, Seed: 1})
	signature := func(words ...string) []uint32 {
		var elems []uint64
		for _, w := range words {
			elems = append(elems, sk.TokenElement(w))
		}
		return sk.Sketch(nil, elems)
	}
	err = d.PutSignature("doc-1", signature("minhash", "lsh", "jaccard", "near", "duplicate", "index"), nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := d.QuerySignature(context.Background(), signature("minhash", "lsh", "jaccard", "near", "duplicate", "index"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Matches[0].ID, res.Matches[0].Estimate, res.EstimateOnly)
	// Output: doc-1 1 true
}

// Answer many queries at once, concurrently, on one snapshot; each match
// carries its metadata, and its text when asked.
func ExampleDB_QueryMany() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(dir, &db.Options{Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	_, err = d.PutBatch([]db.Doc{
		{ID: "fox", Text: "The quick brown fox jumps over the lazy dog", Meta: []byte(`{"lang":"en"}`)},
		{ID: "cat", Text: "A completely different sentence about a cat", Meta: []byte(`{"lang":"en"}`)},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	results, err := d.QueryMany(context.Background(), []db.QueryInput{
		{Text: "the quick brown fox jumps over the lazy dog!"},
		{Text: "a completely different sentence about a cat."},
		{ID: "fox"},
	}, &db.QueryOptions{WithText: true})
	if err != nil {
		log.Fatal(err)
	}
	// Query 2 (by id) leaves fox itself out: nothing else is near it. The
	// texts have 39 character 5-shingles, and one more with the final
	// punctuation: 39/40 = 0.975.
	for i, r := range results {
		for _, m := range r.Matches {
			fmt.Printf("query %d: %s %.3f %s %q\n", i, m.ID, m.Jaccard, m.Meta, m.Text)
		}
	}
	// Output:
	// query 0: fox 0.975 {"lang":"en"} "The quick brown fox jumps over the lazy dog"
	// query 1: cat 0.975 {"lang":"en"} "A completely different sentence about a cat"
}
