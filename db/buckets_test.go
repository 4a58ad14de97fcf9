package db

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that Buckets' hottest lists are the largest, largest first and
// among equal sizes in key order (band, then bucket), for tops below and
// beyond the number of lists, each with its true size and a sample of its
// members, and that a group of identical documents, whose lists in every
// band hold the same members, is one entry naming its other bands' lists
// in Also (N2-1: the 10 hottest were one group, once per band). The
// oracle: groups of identical texts, whose lists are known, and Bucket's
// members of each list.
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
	for _, band := range []int{-1, 3} {
		for _, top := range []int{1, 3, 6, 7, 1_000_000} {
			bs, err := d.Buckets(context.Background(), band, top)
			if err != nil {
				t.Fatal(err)
			}
			if len(bs.Hottest) != min(top, 6) { // one entry per group
				t.Fatalf("band %d, top %d: %d hottest, want %d", band, top, len(bs.Hottest), min(top, 6))
			}
			for i, h := range bs.Hottest {
				// The sizes, largest first: 6, then 5, …
				if want := 6 - i; h.Size != want {
					t.Fatalf("band %d, top %d: entry %d has size %d, want %d", band, top, i, h.Size, want)
				}
				// Its lists: in every band (of the one band asked for),
				// the first of them in band order, each once, each with
				// the group's members.
				lists := append([]BandBucket{{h.Band, h.Bucket}}, h.Also...)
				want := bands
				if band >= 0 {
					want = 1
				}
				if len(lists) != want || band >= 0 && h.Band != band || band < 0 && h.Band != 0 {
					t.Fatalf("band %d, top %d: entry %d's lists %v", band, top, i, lists)
				}
				seen := map[int]bool{}
				for _, l := range lists {
					members, err := d.Bucket(l.Band, l.Bucket)
					if err != nil || len(members) != h.Size || seen[l.Band] {
						t.Fatalf("band %d, top %d: Bucket(%d, %x) = %v, %v; want %d members, a band once", band, top, l.Band, l.Bucket, members, err, h.Size)
					}
					seen[l.Band] = true
					for _, id := range members {
						if group[id] != h.Size {
							t.Fatalf("band %d, top %d: list %d/%x holds %q of a group of %d", band, top, l.Band, l.Bucket, id, group[id])
						}
					}
				}
				if len(h.Sample) != min(h.Size, SampleSize) {
					t.Fatalf("band %d, top %d: entry %d's sample %v", band, top, i, h.Sample)
				}
				for _, id := range h.Sample {
					if group[id] != h.Size {
						t.Fatalf("band %d, top %d: entry %d (size %d) samples %q of a group of %d", band, top, i, h.Size, id, group[id])
					}
				}
			}
		}
	}
}

// Ensure that Buckets groups lists of mostly the same members, not only
// the same: a group of 20 identical texts and, for each of 8 texts near
// it, a few copies, which join the group's bucket in the bands where the
// near text collides with it. The oracle: the members of every list that
// Bucket returns, and the exact Jaccard of two lists' members (the
// sketches are exact for lists of up to 32). Every entry's other lists
// share at least half their members with its first; no two entries' first
// lists do, but in the same band; and every list as large as the
// smallest entry's is in an entry.
func TestBucketsHottestGroupsMostlyTheSame(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	base := randomText(rng, nil)
	var docs []Doc
	for i := range 20 {
		docs = append(docs, Doc{ID: fmt.Sprintf("base-%d", i), Text: base})
	}
	words := strings.Fields(base)
	for v := range 8 {
		w := slices.Clone(words)
		w[rng.IntN(len(w))] = fmt.Sprintf("edit%d", v) // one word changed: near, colliding in some bands
		for i := range 1 + v%3 {
			docs = append(docs, Doc{ID: fmt.Sprintf("near%d-%d", v, i), Text: strings.Join(w, " ")})
		}
	}
	for i := range 30 {
		docs = append(docs, Doc{ID: fmt.Sprintf("other-%d", i), Text: randomText(rng, nil)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bands := d.Params().Bands.B
	members := map[BandBucket][]string{}
	var all []BandBucket // every list
	keys := map[string][]uint64{}
	for _, doc := range docs {
		e, err := d.Explain(doc.ID, doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		keys[doc.ID] = e.BandKeysA
	}
	for b := range bands {
		for _, doc := range docs {
			l := BandBucket{b, keys[doc.ID][b]}
			var err error
			if _, ok := members[l]; !ok {
				if members[l], err = d.Bucket(b, l.Bucket); err != nil {
					t.Fatal(err)
				}
				all = append(all, l)
			}
		}
	}
	// shared is the share of the smaller list's members in the larger.
	shared := func(a, b []string) float64 {
		both := 0
		for _, id := range a {
			if slices.Contains(b, id) {
				both++
			}
		}
		return float64(both) / float64(min(len(a), len(b)))
	}
	for _, top := range []int{1, 2, 5} {
		bs, err := d.Buckets(ctx, -1, top)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs.Hottest) != top {
			t.Fatalf("top %d: %d entries", top, len(bs.Hottest))
		}
		first := bs.Hottest[0]
		if len(first.Also) != bands-1 || !strings.HasPrefix(first.Sample[0], "base-") {
			t.Errorf("top %d: the first entry %+v: want the base group's lists in all %d bands", top, first, bands)
		}
		sizes := map[int]bool{first.Size: true}
		for _, o := range first.Also {
			sizes[len(members[o])] = true
		}
		if len(sizes) < 3 {
			t.Fatalf("top %d: the base group's lists are of sizes %v: the near texts joined too few to test", top, sizes)
		}
		listed := map[BandBucket]bool{}
		for i, h := range bs.Hottest {
			head := BandBucket{h.Band, h.Bucket}
			if len(members[head]) != h.Size {
				t.Fatalf("top %d: entry %d: size %d, Bucket has %d", top, i, h.Size, len(members[head]))
			}
			listed[head] = true
			for _, o := range h.Also {
				if j := shared(members[head], members[o]); j < 0.5 || listed[o] {
					t.Errorf("top %d: entry %d (%v) holds %v, which shares %.3f of the smaller's members with it (or listed twice)", top, i, head, o, j)
				}
				listed[o] = true
			}
			for _, e := range bs.Hottest[:i] {
				// NB: a list that an earlier entry's first holds the half
				// of starts an entry of its own only where that entry
				// has a list of its band already.
				held := e.Band == h.Band || slices.ContainsFunc(e.Also, func(o BandBucket) bool { return o.Band == h.Band })
				if j := shared(members[head], members[BandBucket{e.Band, e.Bucket}]); j >= 0.5 && !held {
					t.Errorf("top %d: entries %v and %v are two, sharing %.3f of the smaller's members", top, BandBucket{e.Band, e.Bucket}, head, j)
				}
			}
		}
		least := bs.Hottest[len(bs.Hottest)-1].Size
		for _, l := range all {
			if len(members[l]) > least && !listed[l] {
				// NB: a list larger than the last entry's either joins an
				// entry or makes one of its own before it.
				t.Errorf("top %d: list %v of %d members is in no entry (the last is of %d)", top, l, len(members[l]), least)
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

// Ensure that sketchJaccard is the exact Jaccard of two sets of at most
// sketchSize members, and near it for larger ones (the oracle: the
// Jaccard of the doc-number sets counted directly).
func TestSketchJaccard(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	sketch := func(docs []uint64) []uint64 {
		s := newMemberSketch()
		for _, d := range docs {
			s.add(d)
		}
		return s.sorted()
	}
	for _, n := range []int{1, 5, 20, 32, 200, 5000} {
		for range 20 {
			// Two sets of n drawn from 2n numbers.
			var a, b []uint64
			in := map[uint64]int{}
			for _, x := range rng.Perm(2 * n)[:n] {
				a = append(a, uint64(x))
				in[uint64(x)]++
			}
			for _, x := range rng.Perm(2 * n)[:n] {
				b = append(b, uint64(x))
				in[uint64(x)]++
			}
			both := 0
			for _, c := range in {
				if c == 2 {
					both++
				}
			}
			exact := float64(both) / float64(len(in))
			got := sketchJaccard(sketch(a), sketch(b), n <= sketchSize)
			if n <= sketchSize && got != exact || math.Abs(got-exact) > 0.35 {
				t.Fatalf("n %d: sketchJaccard %.4f, exact %.4f", n, got, exact)
			}
		}
	}
	if got := sketchJaccard(nil, nil, true); got != 0 {
		t.Errorf("sketchJaccard of empty sketches = %v", got)
	}
}
