package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
)

// A program that embeds an index opts in to serving it on the index's
// socket, so that the lshdb command (and db/client) attach to it while
// the program runs.
func ExampleServeSocket() {
	// NB: a short directory: a Unix socket path is at most ~104 bytes.
	dir, err := os.MkdirTemp("", "lshdb")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	d, err := db.Open(filepath.Join(dir, "idx"), nil)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	if err := d.Put(db.Doc{ID: "fox", Text: "the quick brown fox jumps over the lazy dog"}, nil); err != nil {
		panic(err)
	}
	stop, err := httpapi.ServeSocket(d, nil)
	if err != nil {
		panic(err)
	}

	// Another process (here, the same one) attaches: lshdb get --db DIR fox
	// does the same.
	c, err := client.Open(httpapi.SocketPath(d.Dir()), nil)
	if err != nil {
		panic(err)
	}
	doc, err := c.Get("fox")
	if err != nil {
		panic(err)
	}
	fmt.Println(doc.ID, doc.Num)
	c.Close()

	// Stop serving before closing the index: the socket goes away.
	if err := stop(context.Background()); err != nil {
		panic(err)
	}
	_, err = os.Lstat(httpapi.SocketPath(d.Dir()))
	fmt.Println("socket removed:", errors.Is(err, os.ErrNotExist))
	// Output:
	// fox 1
	// socket removed: true
}
