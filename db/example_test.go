package db_test

import (
	"fmt"
	"log"
	"os"

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

	err = d.PutDocs([]db.Doc{
		{ID: "fox-1", Text: "The quick brown fox jumps over the lazy dog"},
		{ID: "fox-2", Text: "The quick brown fox jumps over the lazy dog!"},
		{ID: "cat", Text: "A completely different sentence about a cat"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}

	res, err := d.Query("the quick brown fox jumps over the lazy dog", nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Matches {
		fmt.Printf("%s %.3f\n", m.ID, m.Jaccard)
	}

	res, err = d.QueryID("fox-1", &db.QueryOptions{Threshold: 0.5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("near fox-1:", len(res.Matches), res.Matches[0].ID)
	// Output:
	// fox-1 1.000
	// fox-2 0.975
	// near fox-1: 1 fox-2
}
