package db

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// flushBlocker is a file system whose table creations (memtable flushes)
// wait until release is closed.
type flushBlocker struct {
	vfs.FS
	release chan struct{}
}

func (f *flushBlocker) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		<-f.release
	}
	return f.FS.Create(name, cat)
}

// Ensure that a write stall (memtables full while their flush cannot
// finish) is counted in Metrics while it lasts, with its time, and logged
// when it begins and ends; and that the writes it held back are stored
// once it ends.
func TestWriteStallsAreReported(t *testing.T) {
	fs := &flushBlocker{FS: vfs.NewMem(), release: make(chan struct{})}
	var log syncBuffer
	d := mustOpen(t, "idx", &Options{fs: fs, NoSync: true, MemTableSize: 4 << 20, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	defer d.Close()
	// NB: deferred after Close, so it runs first: a failing test must not
	// leave Close waiting for a flush that never ends.
	release := sync.OnceFunc(func() { close(fs.release) })
	defer release()
	if m, err := d.Metrics(); err != nil || m.WriteStalls != 0 || m.WriteStallTime != 0 {
		t.Fatalf("a new index: %d stalls, %v, %v", m.WriteStalls, m.WriteStallTime, err)
	}
	// NB: 256 KiB of random metadata each, so that 64 documents fill 4
	// MiB memtables four times over; in the metadata, not the text, which
	// every put would shingle (80 s of this test under -race).
	rng := rand.NewChaCha8([32]byte{1, 2})
	var docs []Doc
	for i := range 64 {
		meta := make([]byte, 256<<10)
		rng.Read(meta)
		docs = append(docs, Doc{ID: fmt.Sprint("doc", i), Text: fmt.Sprintf("document %d of the stall test", i), Meta: meta})
	}
	done := make(chan error, 1)
	go func() {
		for _, doc := range docs {
			if err := d.Put(doc, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := d.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if m.WriteStalls > 0 {
			time.Sleep(20 * time.Millisecond)
			if m2, _ := d.Metrics(); m2.WriteStallTime < 20*time.Millisecond {
				t.Fatalf("a stall in progress for 20 ms counts %v", m2.WriteStallTime)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("every put returned (%v) with the flushes blocked: no stall", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no write stall after 30 s with the flushes blocked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// NB: a stall is logged once it has lasted stallLogAfter; this one
	// lasts until release.
	for end := time.Now().Add(stallLogAfter + 5*time.Second); !strings.Contains(log.String(), "writes stalled") && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "writes stalled") {
		t.Fatalf("the log says nothing of a stall of over %v:\n%s", stallLogAfter, log.String())
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(docs)) {
		t.Fatalf("Count = %d, %v after the stall; want %d", n, err, len(docs))
	}
	m, err := d.Metrics()
	if err != nil || m.WriteStalls < 1 || m.WriteStallTime < 20*time.Millisecond {
		t.Fatalf("after the stall: %d stalls, %v, %v", m.WriteStalls, m.WriteStallTime, err)
	}
	// NB: Pebble reports the end from the goroutine that ends it; give it
	// a moment after the puts return.
	for end := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "writes resumed") && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "writes resumed") {
		t.Fatalf("the log does not say the writes resumed:\n%s", log.String())
	}
}

// Ensure that a brief stall (a bulk insert's memtable waiting a few
// milliseconds for its flush) is counted but not logged at Info or
// above, and that a long one is logged while it lasts and when it ends.
func TestBriefStallsAreQuiet(t *testing.T) {
	var log syncBuffer
	w := &writeStalls{log: slog.New(slog.NewTextHandler(&log, nil))}
	defer func(old time.Duration) { stallLogAfter = old }(stallLogAfter)
	stallLogAfter = time.Hour // NB: brief however slowly this machine runs it
	w.begin("memtable count limit reached")
	time.Sleep(time.Millisecond)
	w.end()
	if n, d := w.get(); n != 1 || d <= 0 || log.String() != "" {
		t.Fatalf("a brief stall: %d stalls, %v; logged %q, want nothing", n, d, log.String())
	}
	stallLogAfter = 20 * time.Millisecond
	w.begin("L0 file count limit exceeded")
	for end := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "writes stalled") && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	w.end()
	got := log.String()
	if !strings.Contains(got, "level=WARN msg=\"lshdb: pebble: writes stalled\" reason=\"L0 file count limit exceeded\"") || !strings.Contains(got, "writes resumed") {
		t.Fatalf("a long stall logged %q, want its beginning and its end", got)
	}
}
