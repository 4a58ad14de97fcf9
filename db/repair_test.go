package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Damage of every kind Check tells, done to a Pebble index's keys behind
// its back, then Repair: the index must check clean and answer every
// query, pair and read as an index built afresh from the documents that
// survive (all but the one whose record was made unreadable), and a
// second Repair must find nothing to mend. In each storage mode.
func TestRepairMendsDamage(t *testing.T) {
	for _, storage := range []string{StorageText, StorageSets, StorageNone} {
		t.Run(storage, func(t *testing.T) { testRepairMendsDamage(t, storage) })
	}
}

func testRepairMendsDamage(t *testing.T, storage string) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := func() *Options { return &Options{fs: fs, Storage: storage} }
	rng := rand.New(rand.NewPCG(13, 13))
	var docs []Doc
	var texts []string
	for i := range 300 {
		text := randomText(rng, texts[max(0, len(texts)-40):])
		texts = append(texts, text)
		docs = append(docs, Doc{ID: fmt.Sprintf("d%d", i), Text: text})
	}
	d := mustOpen(t, "db", opts())
	if _, err := d.PutBatch(docs[:200], nil); err != nil {
		t.Fatal(err)
	}
	// Some expire (in a day): the expiry index is checked and mended too.
	if _, err := d.PutBatch(docs[200:], &WriteOptions{TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	get := func(id string) *StoredDoc {
		t.Helper()
		sd, err := d.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		return sd
	}
	keysOf := func(sd *StoredDoc) []uint64 {
		t.Helper()
		ks, err := d.bucketKeys(nil, sd.Signature)
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	d1, d2, d3, d6, d7, d8 := get("d1"), get("d2"), get("d3"), get("d6"), get("d7"), get("d8")
	d1k, d2k, d3k, d7k := keysOf(d1), keysOf(d2), keysOf(d3), keysOf(d7)
	d8rec, ok, err := getCopy(d.pdb, codec.AppendDocKey(nil, d8.Num))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	d210 := get("d210")
	d9 := get("d9")
	recOf := func(id string) []byte {
		t.Helper()
		v, ok, err := getCopy(d.pdb, codec.AppendDocKey(nil, get(id).Num))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return v
	}
	d10rec, d10num := recOf("d10"), get("d10").Num
	var d11rec, d12rec codec.DocRecord
	if err := codec.DecodeDocRecord(recOf("d11"), &d11rec); err != nil {
		t.Fatal(err)
	}
	if err := codec.DecodeDocRecord(recOf("d12"), &d12rec); err != nil {
		t.Fatal(err)
	}
	d12num := get("d12").Num
	counters := d.counters
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	p := rawStore(t, fs, "db")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	merge := func(k []byte, ps ...codec.Posting) {
		t.Helper()
		must(p.Merge(k, codec.AppendPostings(nil, ps), pebble.Sync))
	}
	// Two damaged lists: d1's bucket in band 0, and a bucket no one holds.
	must(p.Merge(codec.AppendPostingKey(nil, 0, d1k[0]), []byte{0xff, 0xff, 0xff}, pebble.Sync))
	must(p.Merge(codec.AppendPostingKey(nil, 3, 12345), []byte{0xff, 0xff, 0xff}, pebble.Sync))
	// A posting of no document, in d2's bucket of band 1.
	merge(codec.AppendPostingKey(nil, 1, d2k[1]), codec.Posting{Doc: counters.NextDoc + 100})
	// d3 removed from its bucket of band 2.
	merge(codec.AppendPostingKey(nil, 2, d3k[2]), codec.Posting{Doc: d3.Num, Remove: true})
	// d5's id lost: its record is kept, and gets it back.
	must(p.Delete(codec.AppendIDKey(nil, "d5"), pebble.Sync))
	// An id naming d6's record.
	must(p.Set(codec.AppendIDKey(nil, "ghost"), codec.EncodeDocNum(d6.Num), pebble.Sync))
	// d7's record unreadable: d7 is lost.
	must(p.Set(codec.AppendDocKey(nil, d7.Num), []byte{2, 0xff, 0xff}, pebble.Sync))
	// An older copy of d8 (a record d8's id does not name), at a doc
	// number above the counters'.
	must(p.Set(codec.AppendDocKey(nil, counters.NextDoc+50), d8rec, pebble.Sync))
	// d210's expiry entry gone, and one of no document.
	must(p.Delete(codec.AppendExpiryKey(nil, d210.ExpiresAt.UnixNano(), d210.Num), pebble.Sync))
	must(p.Set(codec.AppendExpiryKey(nil, d210.ExpiresAt.UnixNano(), counters.NextDoc+200), nil, pebble.Sync))
	// A key of the posting kind that does not parse.
	must(p.Set([]byte{codec.PrefixPosting, 0}, []byte{1, 0}, pebble.Sync))
	// d9 in a bucket of band 4 it is not in.
	merge(codec.AppendPostingKey(nil, 4, 0xdeadbeef), codec.Posting{Doc: d9.Num})
	// A copy of d10's record at a doc number no posting can hold (a key
	// whose top bit flipped).
	must(p.Set(codec.AppendDocKey(nil, 1<<63|d10num), d10rec, pebble.Sync))
	// A copy of d11's record under an id no write takes (not UTF-8).
	d11rec.ID = "d11\xff"
	must(p.Set(codec.AppendDocKey(nil, counters.NextDoc+60), codec.AppendDocRecord(nil, &d11rec), pebble.Sync))
	// Text mode: d12's record says one shingle more than its text gives
	// (elsewhere its stored set is what verification uses: left alone).
	if storage == StorageText {
		d12rec.SetLen++
		must(p.Set(codec.AppendDocKey(nil, d12num), codec.AppendDocRecord(nil, &d12rec), pebble.Sync))
	}
	// Counters that count five more.
	must(p.Set(codec.CountersKey, codec.EncodeCounters(codec.Counters{NextDoc: counters.NextDoc, Live: counters.Live + 5}), pebble.Sync))
	must(p.Close())

	d = mustOpen(t, "db", opts())
	defer func() { d.Close() }()
	if rep, err := d.Check(ctx); err != nil || rep.OK() {
		t.Fatalf("Check of the damaged index: %v, %v; want problems", rep, err)
	}
	// Queries before the repair fill the query cache with lists the
	// repair then changes (d3's lacks d3; d2's names no document): the
	// answers after it must not come from there.
	queried := 0
	for _, doc := range docs {
		if _, err := d.QueryID(ctx, doc.ID, &QueryOptions{Threshold: 0.3}); err == nil {
			queried++
		}
	}
	t.Logf("%d queries answered before the repair", queried)
	res, err := d.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	// What the repair must report, worked out from the damage (the seed
	// keeps d7's buckets apart from the lists damaged otherwise).
	nb := d.bands.B
	for band, k := range d7k {
		if (band == 0 && k == d1k[0]) || (band == 1 && k == d2k[1]) || (band == 2 && k == d3k[2]) || (band == 3 && k == 12345) {
			t.Fatalf("d7 shares a damaged list (band %d): pick other documents", band)
		}
	}
	// Reposted: the live documents of d1's damaged list (what it held is
	// unknown), and d3's posting that a removal hid.
	d1share := 0
	for _, sd := range docs {
		if sd.ID != "d7" && keysOf(get2(t, d, sd.ID))[0] == d1k[0] {
			d1share++
		}
	}
	want := RepairResult{
		Orphans:    1,           // d8's older copy
		Dangling:   1 + nb + 1,  // the posting of no document, d7's, and d9's stray one
		Reposted:   d1share + 1, // see above
		Lost:       []string{"d7", "ghost"},
		Unreadable: 2,                  // d7's record, and d11's copy under an invalid id
		Restored:   1,                  // d5's id
		Lists:      2 + 1 + 1 + nb + 1, // the damaged two, d2's, d3's, d7's, and d9's stray one
		Damaged:    2,                  // the two garbage operands
		Expiry:     2,                  // d210's missing entry, and the one of no document
		BadKeys:    2,                  // the posting key that does not parse, and d10's copy's doc key
		Counters:   true,               // five too many
	}
	if storage == StorageText {
		want.Rewritten, want.RewrittenIDs = 1, []string{"d12"} // from its text
	}
	if res.Orphans != want.Orphans || res.Unreadable != want.Unreadable || res.Restored != want.Restored ||
		!slices.Equal(res.Lost, want.Lost) || res.Damaged != want.Damaged || res.Expiry != want.Expiry ||
		res.BadKeys != want.BadKeys || res.Counters != want.Counters || res.Dangling != want.Dangling ||
		res.Reposted != want.Reposted || res.Lists != want.Lists || res.Rewritten != want.Rewritten || !slices.Equal(res.RewrittenIDs, want.RewrittenIDs) {
		t.Errorf("Repair: %+v\nwant      %+v", res, want)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after Repair: %v, %v", rep, err)
	}
	if res, err := d.Repair(ctx); err != nil || res.Changed() {
		t.Errorf("a second Repair: %+v, %v; want nothing to mend", res, err)
	}

	// The oracle: an index built afresh from the surviving documents.
	var kept []Doc
	for _, sd := range docs {
		if sd.ID != "d7" {
			kept = append(kept, sd)
		}
	}
	fresh := mustOpen(t, "fresh", &Options{fs: fs, Storage: storage})
	defer fresh.Close()
	if _, err := fresh.PutBatch(kept[:199], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.PutBatch(kept[199:], &WriteOptions{TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	compareIndexes(t, d, fresh, kept)
	// Reopened: the repair is durable.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", opts())
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after Repair and a reopen: %v, %v", rep, err)
	}
	compareIndexes(t, d, fresh, kept)
	if _, err := d.Get("d7"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(d7) after its record was removed: %v, want ErrNotFound", err)
	}
	if _, err := d.Get("ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(ghost) after its id was removed: %v, want ErrNotFound", err)
	}
	// Written after the repair: numbered past every record it saw.
	if err := d.Put(Doc{ID: "after", Text: docs[8].Text}, nil); err != nil {
		t.Fatal(err)
	}
	if sd := get2(t, d, "after"); sd.Num <= counters.NextDoc+60 || sd.Num > codec.MaxDocNum {
		t.Errorf("a document put after the repair got doc number %d, at or below a record the repair saw (%d), or past the largest", sd.Num, counters.NextDoc+60)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after a put: %v, %v", rep, err)
	}
}

func get2(t *testing.T, d *DB, id string) *StoredDoc {
	t.Helper()
	sd, err := d.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

// compareIndexes checks that a and b hold the documents docs alike and
// answer alike: every document's text, signature and set, every query by
// id, and every pair.
func compareIndexes(t *testing.T, a, b *DB, docs []Doc) {
	t.Helper()
	ctx := context.Background()
	ca, _ := a.Count()
	cb, _ := b.Count()
	if ca != cb || ca != uint64(len(docs)) {
		t.Fatalf("counts %d and %d, want %d", ca, cb, len(docs))
	}
	for _, doc := range docs {
		x, y := get2(t, a, doc.ID), get2(t, b, doc.ID)
		if x.Text != y.Text || !slices.Equal(x.Signature, y.Signature) || !slices.Equal(x.Shingles, y.Shingles) || !x.ExpiresAt.IsZero() != !y.ExpiresAt.IsZero() {
			t.Fatalf("%s differs: text %q and %q, %d and %d shingles, expiry %v and %v", doc.ID, x.Text, y.Text, len(x.Shingles), len(y.Shingles), x.ExpiresAt, y.ExpiresAt)
		}
		qa, err := a.QueryID(ctx, doc.ID, &QueryOptions{Threshold: 0.3})
		if err != nil {
			t.Fatal(err)
		}
		qb, err := b.QueryID(ctx, doc.ID, &QueryOptions{Threshold: 0.3})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(matchesOf(qa)) != fmt.Sprint(matchesOf(qb)) {
			t.Fatalf("query %s: %v and %v", doc.ID, matchesOf(qa), matchesOf(qb))
		}
	}
	pairsOf := func(d *DB) []Pair {
		var ps []Pair
		for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.3}) {
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		slices.SortFunc(ps, ComparePairs)
		return ps
	}
	pa, pb := pairsOf(a), pairsOf(b)
	if !slices.Equal(pa, pb) {
		t.Fatalf("pairs: %d and %d differ", len(pa), len(pb))
	}
	t.Logf("%d documents, %d pairs alike", len(docs), len(pa))
}

// matchesOf is a query result's ids and scores, in order.
func matchesOf(r *QueryResult) []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, fmt.Sprintf("%s:%.6f", m.ID, m.Jaccard))
	}
	return out
}

// Repair on a read-only handle, or with a context that has ended, changes
// nothing: the damage is still there for a writable Repair to mend.
func TestRepairRefusals(t *testing.T) {
	fs, d := twoDocIndex(t)
	d.Close()
	p := rawStore(t, fs, "db")
	if err := p.Delete(codec.AppendIDKey(nil, "a"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, "db", &Options{fs: fs, ReadOnly: true})
	if _, err := ro.Repair(context.Background()); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Repair on a read-only handle: %v, want ErrReadOnly", err)
	}
	ro.Close()
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Repair(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Repair with a cancelled context: %v, want context.Canceled", err)
	}
	if ok, err := d.Has("a"); err != nil || ok {
		t.Fatalf("Has(a) before a Repair: %v, %v; want false", ok, err)
	}
	res, err := d.Repair(context.Background())
	if err != nil || res.Restored != 1 || !res.Changed() {
		t.Fatalf("Repair: %+v, %v; want a's id restored", res, err)
	}
	if got, err := d.Get("a"); err != nil || got.Text != "some text here, long enough" {
		t.Fatalf("Get(a) after the repair: %+v, %v", got, err)
	}
}

// A posting of a live document in a bucket it is not in: Check said ok
// (the document was a candidate of every query probing the bucket, and
// the posting was reported only once the document was deleted); Repair
// removes it.
func TestCheckStrayPosting(t *testing.T) {
	fs, d := twoDocIndex(t)
	b, err := d.Get("b")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := d.bucketKeys(nil, b.Signature)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	p := rawStore(t, fs, "db")
	if err := p.Merge(codec.AppendPostingKey(nil, 1, keys[1]^1), codec.AppendPostings(nil, []codec.Posting{{Doc: b.Num}}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	want := fmt.Sprintf("posting list 1/%08x names doc %d (\"b\"), whose bucket in band 1 is %08x", keys[1]^1, b.Num, keys[1])
	if rep, err := d.Check(context.Background()); err != nil || !slices.Equal(rep.Problems, []string{want}) {
		t.Fatalf("Check: %q, %v; want %q", rep.Problems, err, want)
	}
	if res, err := d.Repair(context.Background()); err != nil || res.Dangling != 1 || res.Lists != 1 {
		t.Fatalf("Repair: %+v, %v; want one posting removed from one list", res, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after Repair: %v, %v", rep, err)
	}
}

// Every call with a context returns its error at once when it has ended:
// HasIDsContext answered (it looked every 1,024 ids), and ClustersFrom of
// no pairs returned no clusters and no error.
func TestEndedContextAtOnce(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "some text here, long enough"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if has, err := d.HasIDsContext(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("HasIDsContext with an ended context: %v, %v; want context.Canceled", has, err)
	}
	if cs, err := d.ClustersFrom(ctx, func(func(Pair, error) bool) {}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ClustersFrom of no pairs with an ended context: %v, %v; want context.Canceled", cs, err)
	}
}

// A record whose id no write takes (not UTF-8), named by its id key:
// Check said ok, and Repair removed it; now Check reports what Repair
// mends.
func TestCheckInvalidID(t *testing.T) {
	fs, d := twoDocIndex(t)
	a, err := d.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := getCopy(d.pdb, codec.AppendDocKey(nil, a.Num))
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	var rec codec.DocRecord
	if err := codec.DecodeDocRecord(v, &rec); err != nil {
		t.Fatal(err)
	}
	rec.ID = "a\xff"
	p := rawStore(t, fs, "db")
	b := p.NewBatch()
	b.Set(codec.AppendDocKey(nil, a.Num), codec.AppendDocRecord(nil, &rec), nil)
	b.Delete(codec.AppendIDKey(nil, "a"), nil)
	b.Set(codec.AppendIDKey(nil, "a\xff"), codec.EncodeDocNum(a.Num), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	if rep, err := d.Check(context.Background()); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "an id no write takes") {
		t.Fatalf("Check: %q, %v; want the invalid id", rep.Problems, err)
	}
	if res, err := d.Repair(context.Background()); err != nil || res.Unreadable != 1 || res.BadKeys != 1 {
		t.Fatalf("Repair: %+v, %v", res, err)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after Repair: %v, %v", rep, err)
	}
}

// Ensure that Check names each band of a document that lacks its
// posting, and only those, with more bands than a word holds (70): it
// keeps a bit per band now, where a map of every posting found took 1.6
// GiB at a million documents (a nightly review's B1). The oracle: the
// bands the test removed the document from, by hand.
func TestCheckNamesMissingBands(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs, NumPerm: 140, Bands: 70, Rows: 2})
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "some text here, long enough"}, {ID: "b", Text: "another document altogether"}}, nil); err != nil {
		t.Fatal(err)
	}
	a, err := d.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := d.bucketKeys(nil, a.Signature)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	p := rawStore(t, fs, "db")
	removed := []int{0, 2, 63, 64, 69}
	for _, band := range removed {
		if err := p.Merge(codec.AppendPostingKey(nil, band, keys[band]), codec.AppendPostings(nil, []codec.Posting{{Doc: a.Num, Remove: true}}), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	rep, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, band := range removed {
		want = append(want, fmt.Sprintf("doc %d (\"a\") is missing from its bucket in band %d", a.Num, band))
	}
	got := slices.Clone(rep.Problems)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Check's problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Ensure that a posting list of a band the index has not (a key set by
// hand, a manifest whose band count was damaged) is a problem to Check,
// an ErrCorrupt to Buckets and Stats, and gone after Repair: Buckets and
// Stats panicked (index out of range), and Check skipped it unsaid and
// said ok, while Repair removed it (a review).
func TestPostingListOfNoBand(t *testing.T) {
	ctx := context.Background()
	fs, d := twoDocIndex(t)
	a, err := d.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	nb := d.bands.B
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	p := rawStore(t, fs, "db")
	if err := p.Merge(codec.AppendPostingKey(nil, nb, 0xdeadbeef), codec.AppendPostings(nil, []codec.Posting{{Doc: a.Num}}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	want := fmt.Sprintf("posting list %d/deadbeef is of band %d, and the index has bands 0 to %d", nb, nb, nb-1)
	if _, err := d.Buckets(ctx, -1, 10); !errors.Is(err, ErrCorrupt) || !Repairable(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("Buckets: %v, want a repairable ErrCorrupt naming the list", err)
	}
	if _, err := d.Stats(ctx, 10); !errors.Is(err, ErrCorrupt) || !Repairable(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("Stats: %v, want a repairable ErrCorrupt naming the list", err)
	}
	rep, err := d.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0] != want {
		t.Errorf("Check's problems: %q, want [%q]", rep.Problems, want)
	}
	if _, err := d.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("Check after Repair: %v, %v", rep, err)
	}
	st, err := d.Buckets(ctx, -1, 10)
	if err != nil {
		t.Fatalf("Buckets after Repair: %v", err)
	}
	if got := slices.Max(st.Lists); got != 2 {
		t.Errorf("lists in a band after Repair: %v, want 2 in every band", st.Lists)
	}
}

// Ensure that a manifest or counters record that does not decode is an
// ErrCorrupt that Repairable says Repair cannot mend: Repair needs the
// index open, and Open refuses it. Every command, check --repair
// included, advised check --repair (a review); a record of a document
// that does not decode is still Repairable.
func TestUnreadableManifestIsNotRepairable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"manifest", codec.ManifestKey, []byte{0xde, 0xad, 0xbe, 0xef}},
		{"counters", codec.CountersKey, []byte{1}},
	} {
		fs, d := twoDocIndex(t)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		p := rawStore(t, fs, "db")
		if err := p.Set(tc.key, tc.value, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		for _, o := range []*Options{{fs: fs}, {fs: fs, ReadOnly: true}} {
			_, err := Open("db", o)
			if !errors.Is(err, ErrCorrupt) || Repairable(err) {
				t.Errorf("%s: Open: %v (Repairable), want an ErrCorrupt Repair cannot mend", tc.name, err)
			}
		}
	}
	// A document's record that does not decode: Repair mends it.
	fs, d := twoDocIndex(t)
	a, err := d.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	p := rawStore(t, fs, "db")
	if err := p.Set(codec.AppendDocKey(nil, a.Num), []byte{2, 0xff, 0xff}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	p.Close()
	d = mustOpen(t, "db", &Options{fs: fs})
	defer d.Close()
	if _, err := d.Get("a"); !errors.Is(err, ErrCorrupt) || !Repairable(err) {
		t.Errorf("Get of a record that does not decode: %v (Repairable %v), want a repairable ErrCorrupt", err, Repairable(err))
	}
}

// TestRepairAndAQueryOfAnOlderView runs a Repair that rewrites a record
// (its set size was wrong) while a query whose view predates the repair is
// in flight: that query may answer from the record as it was, but it must
// not leave it in the query cache, where every later query would find it
// (a reviewer's C1). The oracle is the same index reopened, with an empty
// cache.
func TestRepairAndAQueryOfAnOlderView(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := func() *Options { return &Options{fs: fs, Storage: StorageText} }
	a := "the quick brown fox jumps over the lazy dog near the river bank today"
	b := "the quick brown fox jumps over the lazy dog near the river bank tonight"
	d := mustOpen(t, "db", opts())
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: a}, {ID: "b", Text: b}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	wrongSetSize(t, fs, "db", "b")

	d = mustOpen(t, "db", opts())
	q := &QueryOptions{Threshold: 0.3}
	// The repair runs in the first query once its view is open, before it
	// reads the lists and records.
	repaired := false
	queryHashedHook = func() {
		if repaired {
			return
		}
		repaired = true
		res, err := d.Repair(ctx)
		if err != nil {
			t.Error(err)
		}
		if res.Rewritten != 1 {
			t.Errorf("the repair rewrote %d records, want b's", res.Rewritten)
		}
	}
	defer func() { queryHashedHook = nil }()
	if _, err := d.Query(ctx, a, q); err != nil {
		t.Fatal(err)
	}
	if !repaired {
		t.Fatal("the query ran no repair")
	}
	after, err := d.Query(ctx, a, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, "db", opts())
	defer d.Close()
	want, err := d.Query(ctx, a, q)
	if err != nil {
		t.Fatal(err)
	}
	jaccardOfB := func(r *QueryResult) float64 {
		for _, m := range r.Matches {
			if m.ID == "b" {
				return m.Jaccard
			}
		}
		return -1
	}
	if jaccardOfB(want) < 0.3 {
		t.Fatalf("reopened, the query found %+v, no b", want.Matches)
	}
	if got := jaccardOfB(after); got != jaccardOfB(want) {
		t.Fatalf("a query after the repair gave b a Jaccard of %v (-1: not found), want %v as the reopened index does", got, jaccardOfB(want))
	}
}

// wrongSetSize, with the index at dir closed, makes the record of id say two shingles more than its text gives, a damage
// Repair mends by rewriting the record under its number.
func wrongSetSize(t *testing.T, fs vfs.FS, dir, id string) {
	t.Helper()
	p := rawStore(t, fs, dir)
	defer func() {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	num, closer, err := p.Get(codec.AppendIDKey(nil, id))
	if err != nil {
		t.Fatal(err)
	}
	n, err := codec.DecodeDocNum(num)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	key := codec.AppendDocKey(nil, n)
	raw, closer, err := p.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	var rec codec.DocRecord
	err = codec.DecodeDocRecord(slices.Clone(raw), &rec)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec.SetLen += 2
	if err := p.Set(key, codec.AppendDocRecord(nil, &rec), pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// TestRepairInWhichTheStoreStops: a Repair whose commit fails at its
// write-ahead log write (a full disk, with the reserve off) stops the
// store, and Pebble has applied the batch before it waited for the log:
// the handle's reads see the repair although it failed. The query cache
// must answer as those reads do. It had put every list back at the
// stored version when the commit failed (for a commit that made nothing
// visible, a reviewer's C3), and so served the lists the repair had
// mended as they were before. The error was ErrCorrupt, as Pebble's panic
// kept only the text of the full disk's error. The oracle: b, taken out
// of every list and put back by the repair, found as the handle's own
// Get and brute-force Jaccard give it.
func TestRepairInWhichTheStoreStops(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	fs, refuse := logWritesRefused(mem)
	quiet := slog.New(slog.DiscardHandler)
	opts := func() *Options { return &Options{fs: fs, Logger: quiet, DiskReserve: -1, Storage: StorageText} }
	a := "the quick brown fox jumps over the lazy dog near the river bank today"
	b := "the quick brown fox jumps over the lazy dog near the river bank tonight"
	d := mustOpen(t, "db", opts())
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: a}, {ID: "b", Text: b}}, nil); err != nil {
		t.Fatal(err)
	}
	sb, err := d.Get("b")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := d.bucketKeys(nil, sb.Signature)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// b taken out of every list it is in.
	p := rawStore(t, mem, "db")
	for band, k := range keys {
		if err := p.Merge(codec.AppendPostingKey(nil, band, k), codec.AppendPostings(nil, []codec.Posting{{Doc: sb.Num, Remove: true}}), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	d = mustOpen(t, "db", opts())
	defer d.Close()
	q := &QueryOptions{Threshold: 0.3}
	query := func() *QueryResult {
		t.Helper()
		r, err := d.Query(ctx, a, q)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	listHits := func() int64 {
		t.Helper()
		m, err := d.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		return m.QueryCache.ListHits
	}
	// NB: a list read once is not cached: the second read caches it.
	for range 3 {
		if r := query(); len(r.Matches) != 1 {
			t.Fatalf("b out of its lists, the query found %+v, want a alone", r.Matches)
		}
	}
	if listHits() == 0 {
		t.Fatal("a third query found no list in the cache")
	}
	refuse.On()
	if _, err := d.Repair(ctx); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("the repair on a disk that refuses its log: %v, want ErrDiskFull", err)
	}
	refuse.Off()
	if _, err := d.Get("b"); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, d.Params())
	want := minhash.Jaccard(m.doc(a).set, m.doc(b).set)
	hits := listHits()
	for i := range 3 {
		r := query()
		if len(r.Matches) != 2 || r.Matches[1].ID != "b" || r.Matches[1].Jaccard != want {
			t.Fatalf("query %d after the repair in which the store stopped: %+v, want a and b at %v, as the handle's reads see the repair", i, r.Matches, want)
		}
	}
	if listHits() == hits {
		t.Errorf("after the repair in which the store stopped, no query found a list in the cache (%d hits before and after)", hits)
	}
}

// Ensure that a repair of an index whose records and ids of two documents
// went without a delete (as with a write-ahead log removed by hand: an
// operator's review, DR2) says what the counters counted and what is
// stored, so that the loss can be told: five counted, three stored, and
// nothing else it removed; the postings of the two are removed, and the
// index checks clean.
func TestRepairCountsDocumentsGone(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1})
	docs := fiveDocs()
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var nums []uint64
	for _, id := range []string{"a", "b"} {
		sd, err := d.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		nums = append(nums, sd.Num)
	}
	d.Close()
	p := rawStore(t, fs, "db")
	for i, id := range []string{"a", "b"} {
		if err := p.Delete(codec.AppendDocKey(nil, nums[i]), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := p.Delete(codec.AppendIDKey(nil, id), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	d = mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1})
	defer d.Close()
	ctx := context.Background()
	r, err := d.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Counters || r.CountedDocs != 5 || r.StoredDocs != 3 || r.Unreadable != 0 || len(r.Lost) != 0 || r.Dangling == 0 {
		t.Fatalf("repair: %+v; want the counters rewritten from 5 documents to 3, and the two's postings removed", r)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() || rep.Docs != 3 {
		t.Fatalf("check after the repair: %+v, %v", rep, err)
	}
}
