package db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that Buckets' hottest lists are the largest, largest first and
// among equal sizes in key order (band, then bucket), for tops below and
// beyond the number of lists, each with its true size and a sample of its
// members (the oracle: groups of identical texts, whose lists are known,
// and Bucket's members of each list).
func TestBucketsHottest(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	var docs []Doc
	group := map[string]int{} // id → its group's size
	rng := rand.New(rand.NewPCG(4, 4))
	for size := 1; size <= 6; size++ {
		text := randomText(rng, nil) // NB: unrelated texts: no bucket shared by two groups
		for i := range size {
			id := fmt.Sprintf("g%d-%d", size, i)
			docs = append(docs, Doc{ID: id, Text: text})
			group[id] = size
		}
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	bands := d.Params().Bands.B
	for _, top := range []int{1, 3, bands, 3*bands + 1, 1_000_000} {
		bs, err := d.Buckets(context.Background(), -1, top)
		if err != nil {
			t.Fatal(err)
		}
		lists := 6 * bands // one list per group and band
		if len(bs.Hottest) != min(top, lists) {
			t.Fatalf("top %d: %d hottest lists, want %d", top, len(bs.Hottest), min(top, lists))
		}
		for i, h := range bs.Hottest {
			// The sizes, largest first: 6 in every band, then 5, …
			if want := 6 - i/bands; h.Size != want {
				t.Fatalf("top %d: list %d has size %d, want %d", top, i, h.Size, want)
			}
			if i > 0 && h.Size == bs.Hottest[i-1].Size && h.Band <= bs.Hottest[i-1].Band {
				t.Fatalf("top %d: lists %d and %d of size %d are not in band order", top, i-1, i, h.Size)
			}
			members, err := d.Bucket(h.Band, h.Bucket)
			if err != nil || len(members) != h.Size {
				t.Fatalf("top %d: Bucket(%d, %x) = %v, %v; want %d members", top, h.Band, h.Bucket, members, err, h.Size)
			}
			if len(h.Sample) != min(h.Size, SampleSize) {
				t.Fatalf("top %d: list %d's sample %v", top, i, h.Sample)
			}
			for _, id := range h.Sample {
				if group[id] != h.Size || !slices.Contains(members, id) {
					t.Fatalf("top %d: list %d (size %d) samples %q of a group of %d", top, i, h.Size, id, group[id])
				}
			}
		}
	}
}

// Ensure that the lists deletes emptied (before a purge) are not listed as
// the hottest buckets: with no other list, they were, at size 0.
func TestBucketsHottestSkipsEmptiedLists(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, {ID: "b", Text: "the quick brown fox jumps over the lazy dog!"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteIDs([]string{"a", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := d.Buckets(context.Background(), -1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Hottest) != 0 {
		t.Errorf("the hottest buckets of an index with only emptied lists: %+v", st.Hottest)
	}
}

// Ensure that Buckets under a context cancelled or past its deadline
// fails with its error, as every other long call does, however few the
// lists it would read (it read a small band whole and returned it, nil
// error: the scan looked at the context every 1,024 keys, from the
// 1,024th). The oracle: the same call under a live context succeeds.
func TestBucketsCancelled(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	for i := range 50 {
		if err := d.Put(Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("document %d of a small index", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if bs, err := d.Buckets(context.Background(), 0, 3); err != nil || len(bs.Lists) == 0 {
		t.Fatalf("live context: %+v, %v", bs, err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {past, context.DeadlineExceeded}} {
		for _, band := range []int{0, -1} {
			if bs, err := d.Buckets(c.ctx, band, 3); !errors.Is(err, c.want) {
				t.Errorf("band %d: %+v, %v; want %v", band, bs, err, c.want)
			}
		}
	}
}

// Ensure that scan looks at its context before the first key: a range of
// fewer than 1,024 keys was read whole under a cancelled one (Check,
// Stats and Buckets read through it). The oracle: the same scan under a
// live context calls fn for every key.
func TestScanCancelledBeforeFirstKey(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	for i := range 20 {
		if err := d.Put(Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("document %d of a small index", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := scan(context.Background(), d.pdb, nil, []byte{0xff}, func(k, v []byte) { n++ }); err != nil || n == 0 {
		t.Fatalf("live context: %d keys, %v", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := 0
	if err := scan(ctx, d.pdb, nil, []byte{0xff}, func(k, v []byte) { called++ }); !errors.Is(err, context.Canceled) || called != 0 {
		t.Fatalf("cancelled context: %d of %d keys read, %v", called, n, err)
	}
}
