package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that concurrent writers and readers are safe (run with -race) and
// that every query sees one consistent state: two documents always written
// together (in one PutBatch, with identical texts) are found together or
// not at all; the database checks clean at the end.
func TestConcurrentReadersAndWriters(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	const writers, readers, rounds = 3, 3, 150
	var wg sync.WaitGroup
	errc := make(chan error, writers+readers)
	// textOf is the text writer w puts at round i: unique per (w, i).
	textOf := func(w, i int) string {
		return fmt.Sprintf("writer %d round %d ", w, i) + randomText(rand.New(rand.NewPCG(uint64(w), uint64(i))), nil)
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				text := textOf(w, i)
				pair := []Doc{{ID: fmt.Sprintf("w%d-%d-a", w, i%10), Text: text}, {ID: fmt.Sprintf("w%d-%d-b", w, i%10), Text: text}}
				if _, err := d.PutBatch(pair, nil); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for range rounds {
				res, err := d.Query(context.Background(), textOf(rng.IntN(writers), rng.IntN(rounds)), &QueryOptions{Threshold: 1})
				if err != nil {
					errc <- err
					return
				}
				// The twins are written in one batch, so a consistent view
				// has both or neither.
				if n := len(res.Matches); n != 0 && n != 2 {
					errc <- fmt.Errorf("a query saw %d of two documents written together: %v", n, res.Matches)
					return
				}
				if _, err := d.Count(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", rep, err)
	}
}
