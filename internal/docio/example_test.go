package docio_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lshdb/lshdb/internal/docio"
)

// Read yields each record with its position; a bad record is an error the
// loop may skip, and reading goes on.
func ExampleRead() {
	stdin := strings.NewReader(`{"id": 42, "text": "first"}
{"id": "b"}
{"id": "c", "text": "third"}
`)
	var o docio.Options // JSON Lines with "id" and "text": the defaults
	for rec, err := range docio.Read(context.Background(), []string{"-"}, stdin, o) {
		var bad *docio.RecordError
		switch {
		case errors.As(err, &bad):
			fmt.Println("skipped", bad)
		case err != nil:
			fmt.Println("stopped:", err)
			return
		default:
			fmt.Printf("%s %q %q\n", rec.Pos(), rec.ID, rec.Text)
		}
	}
	// Output:
	// stdin:1 "42" "first"
	// skipped stdin:2 (id "b"): no "text" field (--text-field names the text's field)
	// stdin:3 "c" "third"
}
