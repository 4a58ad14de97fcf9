package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
)

// Ensure that a write sent on the socket as its owner stops serving it
// (httpapi.ServeSocket's stop, an owner handing the index over) is either
// answered, or refused before it reaches the owner ("no server
// answers": the dial), never cut in flight with its fate unknown
// (ErrConnectionCut): an attached command can then repeat it on the next
// owner. It was cut about once in 40 handovers (a concurrency review,
// C1): the client sent it on a kept-alive connection that the stopping
// server closed as idle, or dialled the socket just before it closed.
// The oracle: the document is stored exactly when the put was answered.
func TestWriteAsTheOwnerStops(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 60
	}
	d := open(t, nil)
	sock := httpapi.SocketPath(d.Dir())
	rng := rand.New(rand.NewPCG(1, 2))
	cut, refused, answered := 0, 0, 0
	for i := range rounds {
		stop, err := httpapi.ServeSocket(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.Open(sock, nil) // NB: its first call, GET /v1/params, leaves a connection
		if err != nil {
			t.Fatal(err)
		}
		doc := db.Doc{ID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("document %d of the handover test, put as its owner stops", i)}
		// NB: the put as the stop begins (just before or after it), or
		// as the server closes (its socket's name is gone 50 ms before;
		// the client's connection from Open is open, idle).
		var putDelay, stopDelay time.Duration
		switch i % 3 {
		case 0:
			stopDelay = time.Duration(rng.IntN(400)) * time.Microsecond
		case 1:
			putDelay = time.Duration(rng.IntN(400)) * time.Microsecond
		case 2:
			putDelay = 45*time.Millisecond + time.Duration(rng.IntN(10_000))*time.Microsecond
		}
		stopped := make(chan error, 1)
		go func() {
			time.Sleep(stopDelay)
			stopped <- stop(context.Background())
		}()
		time.Sleep(putDelay)
		err = c.Put(doc, nil)
		if serr := <-stopped; serr != nil {
			t.Fatal(serr)
		}
		c.Close()
		stored, herr := d.Has(doc.ID)
		if herr != nil {
			t.Fatal(herr)
		}
		switch {
		case errors.Is(err, client.ErrConnectionCut):
			cut++
			t.Errorf("round %d: the put was cut in flight (stored: %v): %v", i, stored, err)
		case err == nil && !stored:
			t.Fatalf("round %d: the put was answered, and %s is not stored", i, doc.ID)
		case err != nil && stored:
			t.Fatalf("round %d: the put failed (%v), and %s is stored", i, err, doc.ID)
		case err != nil:
			refused++
		default:
			answered++
		}
	}
	t.Logf("%d rounds: %d puts answered, %d refused before they were sent, %d cut", rounds, answered, refused, cut)
}
