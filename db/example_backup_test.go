package db_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lshdb/lshdb/db"
)

// Copy a database while it is in use: the copy is a database of its own,
// holding what was stored when Backup ran.
func ExampleDB_Backup() {
	dir, _ := os.MkdirTemp("", "lshdb-example-")
	defer os.RemoveAll(dir)
	d, err := db.Open(filepath.Join(dir, "live"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	d.Put(db.Doc{ID: "fox", Text: "The quick brown fox jumps over the lazy dog"}, nil)

	if err := d.Backup(context.Background(), filepath.Join(dir, "copy")); err != nil {
		log.Fatal(err)
	}
	d.Put(db.Doc{ID: "cat", Text: "A sentence stored after the backup"}, nil) // not in the copy

	cp, err := db.Open(filepath.Join(dir, "copy"), &db.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	n, _ := cp.Count()
	rep, _ := cp.Check(context.Background())
	fmt.Println(n, "document; check ok:", rep.OK())
	// Output: 1 document; check ok: true
}
