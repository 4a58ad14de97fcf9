//go:build unix

// Command postingcost measures what keeping posting lists in Pebble costs
// a stream of synced batches, to choose how incremental inserts should
// write them (issue 13: synced inserts at 70% of the signature-only
// throughput). It writes what lshdb's synced puts write — for each of
// -batches batches of 1,000 documents, a record of -record bytes, an id
// key and one posting in each of 16 bands, committed with Sync — with
// nothing else in the process, and prints the wall and CPU time (user and
// system, of the whole process: the flushes and compactions run by then
// included, and an estimate of those still owed) of each layout:
//
//   - -page-bits 0: a key per band and bucket, one merge operand per
//     posting (lshdb's layout);
//   - -page-bits P: a key per band and P-bit bucket prefix (a "page"),
//     each posting an operand holding its 8-byte bucket and doc number;
//   - -fold F: postings kept in memory for F batches, then written as one
//     operand per key (a page's postings of F batches in one operand), in
//     a batch or, with -ingest, as a sorted table ingested into the LSM.
//
// The operands are merged by concatenation (the layouts are compared, not
// lshdb's posting codec), and -records=false or -postings=false leave
// either out. Run each layout in its own process, alternated:
//
//	go run ./internal/cmd/postingcost [-batches 300] [-page-bits 0] [-fold 0] [-ingest] [-records=true] [-postings=true]
//
// It reads no corpus: buckets are random (as a band's hash of unrelated
// documents is), records are -record bytes of letters.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// bands is lshdb's default number of bands at t = 0.8.
const bands = 16

// concat merges operands by concatenating them, oldest first.
type concat struct{ b []byte }

func (c *concat) MergeNewer(v []byte) error { c.b = append(c.b, v...); return nil }
func (c *concat) MergeOlder(v []byte) error {
	c.b = append(slices.Clone(v), c.b...)
	return nil
}
func (c *concat) Finish(bool) ([]byte, io.Closer, error) { return c.b, nil, nil }

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	batches := flag.Int("batches", 300, "synced batches of 1,000 documents")
	pageBits := flag.Int("page-bits", 0, "0: a key per band and bucket; else a key per band and this many leading bits of the bucket (1..32)")
	fold := flag.Int("fold", 0, "keep postings in memory for this many batches, then write one operand per key (0: each posting as it comes)")
	ingest := flag.Bool("ingest", false, "with -fold: write each fold as a sorted table and ingest it, instead of a batch")
	records := flag.Bool("records", true, "write a record and an id key per document")
	postings := flag.Bool("postings", true, "write the postings")
	recordBytes := flag.Int("record", 700, "bytes of each record")
	flag.Parse()
	if *pageBits < 0 || *pageBits > 32 || *fold < 0 || *batches < 1 || *recordBytes < 0 || *ingest && *fold == 0 {
		fmt.Fprintln(os.Stderr, "postingcost: -page-bits is 0..32, -fold and -record at least 0, -batches at least 1; -ingest needs -fold")
		os.Exit(2)
	}
	if err := run(*batches, *pageBits, *fold, *ingest, *records, *postings, *recordBytes); err != nil {
		fmt.Fprintln(os.Stderr, "postingcost:", err)
		os.Exit(1)
	}
}

func run(batches, pageBits, fold int, ingest, records, postings bool, recordBytes int) error {
	dir, err := os.MkdirTemp("", "postingcost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opts := &pebble.Options{
		MemTableSize:       8 << 20, // lshdb's default
		FormatMajorVersion: pebble.FormatValueSeparation,
		Merger: &pebble.Merger{Name: "concat", Merge: func(_, v []byte) (pebble.ValueMerger, error) {
			return &concat{b: slices.Clone(v)}, nil
		}},
		L0StopWritesThreshold: 40, // lshdb's l0StopWrites
		Logger:                quiet{},
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	opts.EnsureDefaults()
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	record := make([]byte, recordBytes)
	pending := map[string][]byte{} // with -fold: key → its operand
	start, cpu0 := time.Now(), cpuTime()
	doc := uint64(0)
	for bi := range batches {
		b := db.NewBatch()
		for range 1000 {
			doc++
			if records {
				x := rng.Uint64()
				for i := range record {
					record[i] = byte('a' + (x>>(i%61))&7)
				}
				if err := b.Set(binary.BigEndian.AppendUint64([]byte("d"), doc), record, nil); err != nil {
					return err
				}
				if err := b.Set(binary.BigEndian.AppendUint64([]byte("i"), rng.Uint64()), binary.AppendUvarint(nil, doc), nil); err != nil {
					return err
				}
			}
			for band := 0; band < bands && postings; band++ {
				bucket := rng.Uint64()
				key := []byte{'p', byte(band)}
				var op []byte
				if pageBits == 0 {
					key = binary.BigEndian.AppendUint64(key, bucket)
				} else {
					key = binary.BigEndian.AppendUint32(key, uint32(bucket>>(64-pageBits)))
					op = binary.BigEndian.AppendUint64(op, bucket)
				}
				op = binary.AppendUvarint(op, doc)
				if fold > 0 {
					pending[string(key)] = append(pending[string(key)], op...)
				} else if err := b.Merge(key, op, nil); err != nil {
					return err
				}
			}
		}
		if fold > 0 && (bi+1)%fold == 0 {
			if err := writeFold(db, opts, dir, bi, pending, ingest); err != nil {
				return err
			}
			clear(pending)
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
		b.Close()
	}
	if len(pending) > 0 {
		// NB: the last batches' postings, short of a whole fold.
		if err := writeFold(db, opts, dir, batches, pending, ingest); err != nil {
			return err
		}
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	m := db.Metrics()
	// NB: the compactions still owed when the writes end are not in the
	// times: their estimate is printed, to compare the layouts by.
	fmt.Printf("batches %d, page-bits %d, fold %d, ingest %v, records %v, postings %v: %.2f s wall, %.2f s CPU, %.0f documents/s, %d compactions, %.1f MiB of compaction owed\n",
		batches, pageBits, fold, ingest, records, postings, wall.Seconds(), cpu.Seconds(), float64(doc)/wall.Seconds(), m.Compact.Count, float64(m.Compact.EstimatedDebt)/(1<<20))
	return nil
}

// writeFold writes the pending operands, one per key: in one batch, or as
// a sorted table ingested into the LSM.
func writeFold(db *pebble.DB, opts *pebble.Options, dir string, bi int, pending map[string][]byte, ingest bool) error {
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !ingest {
		b := db.NewBatch()
		defer b.Close()
		for _, k := range keys {
			if err := b.Merge([]byte(k), pending[k], nil); err != nil {
				return err
			}
		}
		return b.Commit(pebble.NoSync)
	}
	path := fmt.Sprintf("%s/fold-%d.sst", dir, bi)
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), opts.MakeWriterOptions(len(opts.Levels)-1, db.TableFormat()))
	for _, k := range keys {
		if err := w.Merge([]byte(k), pending[k]); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return db.Ingest(context.Background(), []string{path})
}

// quiet drops Pebble's informational log lines.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quiet) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}
