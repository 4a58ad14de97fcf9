package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// expiryTexts are near-duplicates: each finds the others.
var expiryTexts = map[string]string{
	"a": "the quick brown fox jumps over the lazy dog by the river bank today",
	"b": "the quick brown fox jumps over the lazy dog by the river bank today!",
	"c": "the quick brown fox jumps over the lazy dog by the river bank, today",
	"d": "the quick brown fox jumps over the lazy dog by the river bank today.",
}

// queryIDs returns the ids a query by text finds, sorted.
func queryIDs(t *testing.T, d *DB, text string) []string {
	t.Helper()
	res, err := d.Query(context.Background(), text, &QueryOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range res.Matches {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// putExpiring puts a (TTL 1 s), b (no TTL), c (ExpireAt now + 1 s), and d
// with a TTL that a later put without one makes permanent again.
func putExpiring(t *testing.T, d *DB, now time.Time) {
	t.Helper()
	for _, p := range []struct {
		id string
		wo *WriteOptions
	}{{"a", &WriteOptions{TTL: time.Second}}, {"b", nil}, {"c", &WriteOptions{ExpireAt: now.Add(time.Second)}},
		{"d", &WriteOptions{TTL: time.Second}}, {"d", nil}} {
		if err := d.Put(Doc{ID: p.id, Text: expiryTexts[p.id]}, p.wo); err != nil {
			t.Fatal(err)
		}
	}
}

// Ensure that on Pebble (a fake clock) a document put with a TTL is found
// until its expiry and never after it, by every read (Query, QueryID,
// Get, Has, All, Bucket, Pairs, Explain), is removed with its postings by
// the sweep and not before, and that the index checks clean throughout and
// after a reopen (the model: the documents without a TTL).
func TestExpiryPebble(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	opts := &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	// NB: the next four wrapped around the int64 of Unix nanoseconds (a
	// write failed in the codec, or stored an expiry in the past: the
	// document was gone at once; year 9999 was "before 1970"). A time
	// before 1970 is past, and taken (TestPastExpireAtReplaces).
	for _, wo := range []*WriteOptions{{TTL: -time.Second}, {TTL: time.Second, ExpireAt: clock.now()},
		{TTL: 250 * 365 * 24 * time.Hour}, {TTL: time.Duration(math.MaxInt64)},
		{ExpireAt: time.Date(2600, 1, 1, 0, 0, 0, 0, time.UTC)}, {ExpireAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}} {
		if err := d.Put(Doc{ID: "x", Text: "some text"}, wo); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Put with %+v: %v, want ErrInvalidOptions", wo, err)
		}
	}
	if v := d.Params().FormatVersion; v != codec.FormatVersion {
		t.Fatalf("a new index has format %d, want %d", v, codec.FormatVersion)
	}
	putExpiring(t, d, clock.now())
	// A new index takes expiry as it is (a format 3 one becomes format 4:
	// TestFormat3TakesExpiry).
	if v := d.Params().FormatVersion; v != codec.FormatVersion {
		t.Fatalf("after a put with a TTL, format %d; want %d", v, codec.FormatVersion)
	}
	all := []string{"a", "b", "c", "d"}
	if got := queryIDs(t, d, expiryTexts["a"]); !slices.Equal(got, all) {
		t.Fatalf("before the expiry: %v", got)
	}
	clock.advance(999 * time.Millisecond)
	if got := queryIDs(t, d, expiryTexts["a"]); !slices.Equal(got, all) {
		t.Fatalf("a millisecond before the expiry: %v", got)
	}
	// NB: Info counts the expired not yet swept (it gave Docs alone, which
	// counts them): none a millisecond before.
	if in, err := d.Info(); err != nil || in.Docs != 4 || in.Expired != 0 {
		t.Fatalf("Info a millisecond before the expiry: %+v, %v; want 4 documents, none expired", in, err)
	}
	clock.advance(time.Millisecond)
	live := []string{"b", "d"}
	check := func(when string) {
		t.Helper()
		if got := queryIDs(t, d, expiryTexts["a"]); !slices.Equal(got, live) {
			t.Fatalf("%s: Query finds %v, want %v", when, got, live)
		}
		res, err := d.QueryID(ctx, "b", &QueryOptions{Threshold: 0.5})
		if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "d" {
			t.Fatalf("%s: QueryID(b) = %+v, %v", when, res, err)
		}
		// Both expired: each named so, as one is (an inspection
		// review's Q5: "neither "a" nor "c""), until the sweep removed
		// them.
		expired := " (expired)"
		if when == "swept" || when == "after a delete" {
			expired = ""
		}
		if _, err := d.Explain("a", "c"); !errors.Is(err, ErrNotFound) || !strings.HasSuffix(err.Error(), `neither "a"`+expired+` nor "c"`+expired) {
			t.Fatalf("%s: Explain(a, c): %v", when, err)
		}
		if _, err := d.Explain("a", "nosuch"); !errors.Is(err, ErrNotFound) || !strings.HasSuffix(err.Error(), `neither "a"`+expired+` nor "nosuch"`) {
			t.Fatalf("%s: Explain(a, nosuch): %v", when, err)
		}
		for _, id := range []string{"a", "c"} {
			if _, err := d.Get(id); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: Get(%s): %v, want ErrNotFound", when, id, err)
			}
			if ok, err := d.Has(id); ok || err != nil {
				t.Fatalf("%s: Has(%s) = %v, %v", when, id, ok, err)
			}
			if _, err := d.QueryID(ctx, id, nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: QueryID(%s): %v, want ErrNotFound", when, id, err)
			}
			if _, err := d.Explain(id, "b"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: Explain(%s, b): %v, want ErrNotFound", when, id, err)
			}
			// NB: missing to Delete too, which leaves it to the sweeper.
			if err := d.Delete(id, nil); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: Delete(%s): %v, want ErrNotFound", when, id, err)
			}
			if res, err := d.DeleteIDs([]string{id}, &WriteOptions{IgnoreMissing: true}); err != nil || res.Deleted != 0 || !slices.Equal(res.Missing, []string{id}) {
				t.Fatalf("%s: DeleteIDs(%s, IgnoreMissing) = %+v, %v", when, id, res, err)
			}
		}
		var ids []string
		for doc, err := range d.All() {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, doc.ID)
		}
		if !slices.Equal(ids, live) {
			t.Fatalf("%s: All yields %v", when, ids)
		}
		var pairs [][2]string
		for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
			if err != nil {
				t.Fatal(err)
			}
			pairs = append(pairs, [2]string{min(p.A, p.B), max(p.A, p.B)})
		}
		if !slices.Equal(pairs, [][2]string{{"b", "d"}}) {
			t.Fatalf("%s: Pairs %v", when, pairs)
		}
		doc, err := d.Get("b")
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := d.bucketKeys(nil, doc.Signature)
		members, err := d.Bucket(0, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(members)
		var want []string // the live documents in b's band-0 bucket
		for _, id := range live {
			o, err := d.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if k, _ := d.bucketKeys(nil, o.Signature); k[0] == keys[0] {
				want = append(want, id)
			}
		}
		if !slices.Equal(members, want) {
			t.Fatalf("%s: Bucket members %v, want %v", when, members, want)
		}
		// NB: and Check counts the expired not yet swept (a data-safety
		// review: it said nothing of them, which Count counts).
		rep, err := d.Check(ctx)
		if wantExpired := len(all) - len(live); err != nil || !rep.OK() || rep.Expired != wantExpired && expired != "" || rep.Expired != 0 && expired == "" {
			t.Fatalf("%s: Check %+v, %v; want %d expired", when, rep, err, map[bool]int{true: wantExpired, false: 0}[expired != ""])
		}
		// Info's count of the expired is Check's, and of its Docs.
		if in, err := d.Info(); err != nil || in.Expired != uint64(rep.Expired) || in.Docs != uint64(len(live)+rep.Expired) {
			t.Fatalf("%s: Info %+v, %v; want %d documents, %d of them expired", when, in, err, len(live)+rep.Expired, rep.Expired)
		}
	}
	check("expired, not swept")
	st, err := d.Stats(ctx, 0)
	if err != nil || st.Expired != 2 || st.Expiring != 0 || st.Docs != 4 {
		t.Fatalf("Stats before the sweep: expired %d, expiring %d, docs %d, %v; want 2, 0, 4", st.Expired, st.Expiring, st.Docs, err)
	}
	postings := func() int {
		rep, err := d.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Postings
	}
	before := postings()
	// Reopened: the expiry is stored.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	check("expired, reopened")
	if v := d.Params().FormatVersion; v != codec.FormatVersion {
		t.Fatalf("reopened, format %d; want %d", v, codec.FormatVersion)
	}
	// NB: Purge sweeps them first, and counts them.
	if res, err := d.Purge(ctx); res.SweptExpired != 2 || err != nil {
		t.Fatalf("Purge = %+v, %v; want 2 swept", res, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() || rep.EmptyLists != 0 {
		t.Fatalf("Check after Purge: %+v, %v; want no empty list left", rep, err)
	}
	if n, err := d.Count(); n != 2 || err != nil {
		t.Fatalf("Count after the sweep = %d, %v", n, err)
	}
	if after := postings(); after != before-2*d.Params().Bands.B {
		t.Fatalf("the sweep left %d postings of %d; want the two documents' %d removed", after, before, 2*d.Params().Bands.B)
	}
	check("swept")
	if n, err := d.SweepExpired(ctx); n != 0 || err != nil {
		t.Fatalf("a second sweep = %d, %v; want nothing", n, err)
	}
	// Deleting an expiring document, and replacing one, drops its entry.
	if err := d.Put(Doc{ID: "e", Text: expiryTexts["a"]}, &WriteOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("e", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Stats(ctx, 0); err != nil || st.Expiring != 0 {
		t.Fatalf("Stats after deleting an expiring document: expiring %d, %v", st.Expiring, err)
	}
	check("after a delete")
}

// Ensure that the background sweep removes an expired document within its
// bound (Options.ExpirySweep after the expiry) on Pebble, with a fake
// clock.
func TestExpiryBackgroundSweepPebble(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d, err := Open("db", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	putExpiring(t, d, clock.now())
	clock.advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, err := d.Count(); err != nil {
			t.Fatal(err)
		} else if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background sweep did not remove the expired documents in 10 s (its interval is 10 ms)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check after the sweep: %+v, %v", rep, err)
	}
}

// Ensure that on Redis a document put with a TTL of 1 s is gone from
// queries after it, and that the background sweep removes its postings
// within the bound (ExpirySweep, 1 s, after the expiry), with the index
// checking clean before and after.
func TestExpiryRedis(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	start := time.Now()
	putExpiring(t, d, start)
	written := time.Now() // NB: a TTL runs from the write, before this
	if got := queryIDs(t, d, expiryTexts["a"]); len(got) != 4 && time.Since(start) < time.Second {
		t.Fatalf("before the expiry: %v", got)
	}
	// NB: Check here, with expiring documents and nothing yet due, not
	// while the sweep is due: the background sweeper is a writer, and
	// Check (like Pebble's, which reads a snapshot) wants none beside it.
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check before the expiry: %+v, %v", rep, err)
	}
	time.Sleep(time.Until(written.Add(time.Second)))
	live := []string{"b", "d"}
	if got := queryIDs(t, d, expiryTexts["a"]); !slices.Equal(got, live) {
		t.Fatalf("after the expiry: Query finds %v, want %v", got, live)
	}
	if _, err := d.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(a) after its expiry: %v", err)
	}
	// Swept: the postings are the two live documents' (Check counts
	// them; it says the index is whole before the expiry and after the
	// sweep).
	bound := written.Add(time.Second + compactionSweepBound)
	want := 2 * d.Params().Bands.B
	for {
		rep, err := d.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Postings == want {
			break
		}
		// NB: a second of slack for a loaded machine.
		if time.Now().After(bound.Add(time.Second)) {
			t.Fatalf("%d postings %v after the put, past the sweep's bound; want %d", rep.Postings, time.Since(start), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("postings swept %v after the put (TTL 1 s)", time.Since(start).Round(time.Millisecond))
	if n, err := d.Count(); n != 2 || err != nil {
		t.Fatalf("Count after the sweep = %d, %v", n, err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check after the sweep: %+v, %v", rep, err)
	}
}

// compactionSweepBound is the sweep's documented bound past an expiry: one
// interval.
const compactionSweepBound = time.Second

// Ensure that on Redis too a document past its expiry, not yet swept, is
// missing to Delete as to every read: ErrNotFound, or Missing with
// IgnoreMissing, and still there for the sweeper.
func TestExpiredDeleteRedis(t *testing.T) {
	u := redisURL(t, "expired-delete")
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d, err := Open(u, &Options{clock: clock.now, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(Doc{ID: "e", Text: "a document that expires in a second"}, &WriteOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "k", Text: "a document that stays for good"}, nil); err != nil {
		t.Fatal(err)
	}
	if in, err := d.Info(); err != nil || in.Docs != 2 || in.Expired != 0 {
		t.Fatalf("Info before the expiry: %+v, %v; want 2 documents, none expired", in, err)
	}
	clock.advance(2 * time.Second)
	// NB: counted until the sweep, and said so.
	if in, err := d.Info(); err != nil || in.Docs != 2 || in.Expired != 1 {
		t.Fatalf("Info after the expiry: %+v, %v; want 2 documents, 1 of them expired", in, err)
	}
	if _, err := d.Get("e"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of the expired document: %v, want ErrNotFound", err)
	}
	if err := d.Delete("e", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of the expired document: %v, want ErrNotFound", err)
	}
	res, err := d.DeleteIDs([]string{"e", "k"}, &WriteOptions{IgnoreMissing: true})
	if err != nil || res.Deleted != 1 || !slices.Equal(res.Missing, []string{"e"}) {
		t.Fatalf("DeleteIDs(e, k, IgnoreMissing) = %+v, %v; want k deleted, e missing", res, err)
	}
}

// Ensure that a write over an id whose document expired but is not yet
// swept removes it as it removes a live one, by PutBatch and by Load
// alike, but does not count it as replaced (it was never there to be
// read); and that the new document is what the id then gives.
func TestReplacedSkipsExpired(t *testing.T) {
	for _, how := range []string{"PutBatch", "Load"} {
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		d, err := Open("db", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: "gone", Text: expiryTexts["a"]}, &WriteOptions{TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: "live", Text: expiryTexts["b"]}, nil); err != nil {
			t.Fatal(err)
		}
		clock.advance(2 * time.Second)
		docs := []Doc{{ID: "gone", Text: expiryTexts["c"]}, {ID: "live", Text: expiryTexts["d"]}}
		var stored, replaced int
		if how == "PutBatch" {
			res, err := d.PutBatch(docs, nil)
			if err != nil {
				t.Fatal(err)
			}
			stored, replaced = res.Stored, res.Replaced
		} else {
			res, err := d.Load(context.Background(), seqOf(docs), nil)
			if err != nil {
				t.Fatal(err)
			}
			stored, replaced = res.Stored, res.Replaced
		}
		if stored != 2 || replaced != 1 {
			t.Errorf("%s over an expired and a live document: %d stored, %d replaced; want 2 and 1", how, stored, replaced)
		}
		for _, doc := range docs {
			if got, err := d.Get(doc.ID); err != nil || got.Text != doc.Text {
				t.Errorf("%s: Get(%s) = %+v, %v", how, doc.ID, got, err)
			}
		}
		if n, err := d.Count(); err != nil || n != 2 {
			t.Errorf("%s: Count = %d, %v; want 2", how, n, err)
		}
		// Nothing of the expired document is left (a load left its record
		// and postings under no id: Check reported them, and the sweeper
		// could not remove them).
		if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
			t.Errorf("%s: Check = %+v, %v", how, rep, err)
		}
		if n, err := d.SweepExpired(context.Background()); err != nil || n != 0 {
			t.Errorf("%s: SweepExpired = %d, %v; want nothing left to sweep", how, n, err)
		}
		d.Close()
	}
}

// Ensure that the sample of a hot list (Buckets, Stats) names no expired
// document, as Bucket does not, while its size still counts the postings
// that the sweep has not yet removed (as documented).
func TestBucketsSampleSkipsExpired(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d, err := Open("db", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	text := "the quick brown fox jumps over the lazy dog"
	if err := d.Put(Doc{ID: "live", Text: text}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "gone", Text: text}, &WriteOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock.advance(2 * time.Second)
	bs, err := d.Buckets(context.Background(), 0, 1)
	if err != nil || len(bs.Hottest) != 1 {
		t.Fatalf("Buckets = %+v, %v", bs, err)
	}
	h := bs.Hottest[0]
	if h.Size != 2 || !slices.Equal(h.Sample, []string{"live"}) {
		t.Errorf("the hot list: size %d, sample %v; want 2 postings, sample [live]", h.Size, h.Sample)
	}
	if ids, err := d.Bucket(h.Band, h.Bucket); err != nil || !slices.Equal(ids, []string{"live"}) {
		t.Errorf("Bucket = %v, %v; want [live]", ids, err)
	}
	st, err := d.Stats(context.Background(), 1)
	if err != nil || len(st.Buckets.Hottest) != 1 || !slices.Equal(st.Buckets.Hottest[0].Sample, []string{"live"}) {
		t.Errorf("Stats' hot list: %+v, %v; want the sample [live]", st.Buckets.Hottest, err)
	}
}

// Ensure that a write with an ExpireAt already past is accepted and acts
// as a delete of the id's stored document (never returned again) that
// counts until the sweep removes it, as ExpireAt's documentation says
// (the model: the documents written without an expiry).
func TestPastExpireAtReplaces(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d, err := Open("db", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, id := range []string{"a", "b"} {
		if err := d.Put(Doc{ID: id, Text: expiryTexts[id]}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(Doc{ID: "a", Text: expiryTexts["a"]}, &WriteOptions{ExpireAt: clock.now().Add(-time.Hour)}); err != nil {
		t.Fatalf("Put with an ExpireAt an hour past: %v", err)
	}
	if _, err := d.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(a) after a put expired at once: %v, want ErrNotFound", err)
	}
	if got := queryIDs(t, d, expiryTexts["a"]); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Query finds %v, want [b]", got)
	}
	if n, err := d.Count(); n != 2 || err != nil {
		t.Fatalf("Count before the sweep = %d, %v; want 2 (the expired one counts until swept)", n, err)
	}
	if n, err := d.SweepExpired(ctx); n != 1 || err != nil {
		t.Fatalf("SweepExpired = %d, %v; want 1", n, err)
	}
	if n, err := d.Count(); n != 1 || err != nil {
		t.Fatalf("Count after the sweep = %d, %v; want 1", n, err)
	}
	// NB: a time before 1970 is past too (it was refused).
	if err := d.Put(Doc{ID: "b", Text: expiryTexts["b"]}, &WriteOptions{ExpireAt: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatalf("Put with an ExpireAt in 1900: %v", err)
	}
	if _, err := d.Get("b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(b) after a put that expired in 1900: %v, want ErrNotFound", err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("Check: %+v %v", rep, err)
	}
}

// Ensure that on Redis a background sweep cut short by Close (every
// short command's: the sweep starts at Open) leaves nothing behind: a
// batch it claimed is finished. It removed the expiry entries, then lost
// the rest to the cancel: the documents' postings and their place in the
// count stayed for good (no sweep found them again), and Check failed
// until a Repair (8 runs in 10 of a review's insert, then purge).
func TestRedisSweepCutByClose(t *testing.T) {
	u := redisURL(t)
	d, err := Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	var keep, expiring []Doc
	for i := range 10 {
		keep = append(keep, Doc{ID: fmt.Sprintf("keep-%d", i), Text: fmt.Sprintf("a document that stays, number %d of ten", i)})
	}
	for i := range 4000 {
		expiring = append(expiring, Doc{ID: fmt.Sprintf("x-%d", i), Text: fmt.Sprintf("a document that expires in a second, number %d, %d", i, i*7919)})
	}
	if _, err := d.PutBatch(keep, nil); err != nil {
		t.Fatal(err)
	}
	for c := range slices.Chunk(expiring, 1000) {
		if _, err := d.PutBatch(c, &WriteOptions{TTL: time.Second, NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	written := time.Now()
	d.Close()
	time.Sleep(time.Until(written.Add(1100 * time.Millisecond)))
	for i := range 20 {
		d, err := Open(u, nil) // NB: its background sweep starts at once
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%5) * 300 * time.Microsecond)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err = Open(u, &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if _, err := d.SweepExpired(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(keep)) {
		t.Errorf("after the sweeps: Count %d, %v; want %d", n, err, len(keep))
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("after the sweeps: Check %d problems %q…, %v", rep.ProblemCount, rep.Problems[:min(3, len(rep.Problems))], err)
	}
}

// postingLists returns the posting lists in d's store, empty or not: the
// live doc numbers of each, by key.
func postingLists(t *testing.T, d *DB) map[string][]uint64 {
	t.Helper()
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.PostingPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	lists := map[string][]uint64{}
	for ok := it.First(); ok; ok = it.Next() {
		ps, err := codec.DecodePostings(it.Value(), nil)
		if err != nil {
			t.Fatalf("list %x: %v", it.Key(), err)
		}
		live := []uint64{}
		for _, p := range ps {
			if !p.Remove {
				live = append(live, p.Doc)
			}
		}
		lists[string(it.Key())] = live
	}
	return lists
}

// sameListsAsIndexOf fails t unless d holds exactly the posting lists of
// an index of docs alone (the oracle: such an index built on its own,
// where docs take the doc numbers d gave them first), each with the same
// live postings; d's postings of doc numbers above others (documents put
// later that share docs' lists), if not 0, are not compared.
func sameListsAsIndexOf(t *testing.T, d *DB, docs []Doc, others uint64) {
	t.Helper()
	oracle := mustOpen(t, "oracle", &Options{fs: vfs.NewMem()})
	defer oracle.Close()
	if _, err := oracle.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	got, want := postingLists(t, d), postingLists(t, oracle)
	if len(got) != len(want) {
		t.Fatalf("%d posting lists; an index of the documents left has %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if others != 0 {
			g = slices.DeleteFunc(slices.Clone(g), func(n uint64) bool { return n > others })
		}
		if !ok || !slices.Equal(g, w) {
			t.Fatalf("list %x: %v (present %v); an index of the documents left has %v", k, g, ok, w)
		}
	}
}

// Ensure that the sweep deletes the posting lists it empties: after 1,500
// expiring documents are swept, the store holds exactly the lists of an
// index of the 300 that stay, each with the same live postings (the
// oracle: such an index built on its own; many lists the sweep touches
// hold documents of both, as loadDocs has near-copies), Check finds no empty list, and a purge finds nothing to do. They
// were left for PurgeEmptyLists, which serve never runs: under a TTL
// workload, 4.5 of 4.6 million lists were empty after 2.5 minutes.
func TestSweepDropsEmptiedLists(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d, err := Open("db", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	docs := loadDocs(1800)
	stay, expire := docs[:300], docs[300:]
	for i := range expire {
		expire[i].ID = fmt.Sprint("x-", i)
	}
	if _, err := d.PutBatch(stay, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(expire); i += 100 {
		if _, err := d.PutBatch(expire[i:i+100], &WriteOptions{TTL: time.Duration(1+i/100) * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(time.Hour)
	if n, err := d.SweepExpired(context.Background()); err != nil || n != len(expire) {
		t.Fatalf("swept %d, %v; want %d", n, err, len(expire))
	}
	// NB: both stored the 300 first, under the same doc numbers.
	sameListsAsIndexOf(t, d, stay, 0)
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() || rep.EmptyLists != 0 {
		t.Fatalf("check: %+v, %v", rep, err)
	}
	if n, err := d.PurgeEmptyLists(context.Background()); err != nil || n != 0 {
		t.Fatalf("purge after the sweep: %d lists, %v", n, err)
	}
}

// Ensure that ClustersFrom of pairs found before one of their documents
// expired says so: the file is stale. It said the index did not hold the
// document, as of a pairs file of another index (an expiry changes
// neither count a pairs file's header holds until the sweep).
func TestClustersFromExpiredMember(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d := mustOpen(t, "mem", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1})
	defer d.Close()
	ctx := context.Background()
	if err := d.Put(Doc{ID: "a", Text: expiryTexts["a"]}, &WriteOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "b", Text: expiryTexts["b"]}, nil); err != nil {
		t.Fatal(err)
	}
	var pairs []Pair
	for p, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	if len(pairs) != 1 {
		t.Fatalf("pairs: %v", pairs)
	}
	from := func(yield func(Pair, error) bool) {
		for _, p := range pairs {
			if !yield(p, nil) {
				return
			}
		}
	}
	if cs, err := d.ClustersFrom(ctx, from, &PairsOptions{Threshold: 0.5}); err != nil || len(cs) != 1 {
		t.Fatalf("before the expiry: %v, %v", cs, err)
	}
	clock.advance(2 * time.Second)
	_, err := d.ClustersFrom(ctx, from, &PairsOptions{Threshold: 0.5})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `names "a", which has expired since the pairs were found`) {
		t.Fatalf("after the expiry: %v", err)
	}
	// Swept, it is gone: what the counts of a file's header tell.
	if n, err := d.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if _, err := d.ClustersFrom(ctx, from, &PairsOptions{Threshold: 0.5}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "which the index does not hold") {
		t.Fatalf("after the sweep: %v", err)
	}
}

// Ensure that Stats sizes the expiry index as a kind of its own: its keys
// were counted in no kind (an inspection review's N7). The oracle: one
// key of codec.ExpiryKeyLen bytes and no value per document with a TTL,
// and none once they are deleted.
func TestStatsCountsTheExpiryIndex(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	for i := range 7 {
		if err := d.Put(Doc{ID: fmt.Sprint("t", i), Text: fmt.Sprint("a document with a time to live, number ", i)}, &WriteOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(Doc{ID: "kept", Text: "a document that never expires"}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := d.Stats(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.StoredBytes["expiry"], uint64(7*codec.ExpiryKeyLen); got != want {
		t.Errorf("expiry index: %d bytes, want %d (7 keys of %d)", got, want, codec.ExpiryKeyLen)
	}
	if _, err := d.DeleteIDs([]string{"t0", "t1", "t2", "t3", "t4", "t5", "t6"}, nil); err != nil {
		t.Fatal(err)
	}
	if st, err = d.Stats(context.Background(), 0); err != nil || st.StoredBytes["expiry"] != 0 {
		t.Errorf("after the deletes: %d bytes of expiry index, %v; want 0", st.StoredBytes["expiry"], err)
	}
}

// Ensure that the background sweep's failures are said without a line a
// tick (serve sweeps every second; a Redis failover wrote a warning a
// second: an operator's review, R7): the first at once, then one line a
// sweepLogEvery with the count since the last, and the first success
// after them. The oracle: the lines a model of that rule gives for a
// timeline of failures, checked on report itself, and on a handle whose
// sweeps fail 30 times in a row.
func TestSweepFailuresSaidOnce(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	var f sweepFailures
	t0 := time.Unix(1_000_000, 0)
	boom := errors.New("boom")
	// One failure a second for 150 s, then a success: the first said,
	// then at 60 s (59 more) and 120 s (60 more), then the success.
	for s := 0; s < 150; s++ {
		f.report(log, boom, t0.Add(time.Duration(s)*time.Second))
	}
	// Another error is said at once, then not again within the minute.
	f.report(log, errors.New("bang"), t0.Add(150*time.Second))
	f.report(log, errors.New("bang"), t0.Add(151*time.Second))
	f.report(log, nil, t0.Add(152*time.Second))
	f.report(log, nil, t0.Add(153*time.Second))
	want := []string{
		`level=WARN msg="lshdb: sweeping expired documents" err=boom`,
		`level=WARN msg="lshdb: sweeping expired documents still fails" err=boom failures_since_last_said=60 failing_for=1m0s`,
		`level=WARN msg="lshdb: sweeping expired documents still fails" err=boom failures_since_last_said=60 failing_for=2m0s`,
		`level=WARN msg="lshdb: sweeping expired documents still fails" err=bang failures_since_last_said=30 failing_for=2m30s`,
		`level=INFO msg="lshdb: sweeping expired documents works again" failed_for=2m32s failures=152`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); !slices.Equal(got, want) {
		t.Fatalf("lines said:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Errors that alternate (a failover's) are each said once, then a
	// line a minute: twenty in twenty seconds were twenty lines (a
	// maintainer review's K4).
	buf.Reset()
	f = sweepFailures{}
	for s := 0; s < 80; s++ {
		err := []error{errors.New("connection refused"), errors.New("LOADING")}[s%2]
		f.report(log, err, t0.Add(time.Duration(s)*time.Second))
	}
	want = []string{
		`level=WARN msg="lshdb: sweeping expired documents" err="connection refused"`,
		`level=WARN msg="lshdb: sweeping expired documents still fails" err=LOADING failures_since_last_said=1 failing_for=1s`,
		`level=WARN msg="lshdb: sweeping expired documents still fails" err=LOADING failures_since_last_said=60 failing_for=1m1s`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); !slices.Equal(got, want) {
		t.Fatalf("alternating errors said:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A handle whose sweeps fail 30 times, then succeed.
	var mu sync.Mutex
	var lines syncBuffer
	failures := 0
	fault := func() error {
		mu.Lock()
		defer mu.Unlock()
		if failures < 30 {
			failures++
			return boom
		}
		return nil
	}
	d, err := Open("db", &Options{fs: vfs.NewMem(), ExpirySweep: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&lines, nil)), sweepFault: fault})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(lines.String(), "works again") {
		if time.Now().After(deadline) {
			t.Fatalf("no success said in 30 s: %s", lines.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.Close()
	out := lines.String()
	if n := strings.Count(out, "level=WARN"); n != 1 || !strings.Contains(out, "failures=30") {
		t.Fatalf("30 failures within a minute said in %d warnings (want 1), then %q", n, out)
	}
}

// Ensure that SweepExpired gives up when its ctx ends while it waits for
// the writer lock behind a Load, and sweeps nothing: it waited for the
// whole Load, then swept and returned nil (a maintainer's review, C3-1).
// The oracle: Info's count of expired documents, and a sweep after the
// Load, which removes the one.
func TestSweepEndsWithItsContextBehindALoad(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	d := mustOpen(t, "idx", &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1, PurgeEvery: -1})
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: expiryTexts["a"]}, &WriteOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour)
	release, started := make(chan struct{}), make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), func(yield func(Doc, error) bool) {
			close(started)
			<-release
			yield(Doc{ID: "z", Text: expiryTexts["b"]}, nil)
		}, &LoadOptions{})
		loaded <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	swept := make(chan error, 1)
	go func() { _, err := d.SweepExpired(ctx); swept <- err }()
	select {
	case err := <-swept:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("SweepExpired = %v; want its ctx's DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SweepExpired waits for the Load after its ctx ended")
	}
	close(release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if info, err := d.Info(); err != nil || info.Expired != 1 {
		t.Errorf("after the Load: Info.Expired %v, %v; want the one not swept", info, err)
	}
	if n, err := d.SweepExpired(context.Background()); n != 1 || err != nil {
		t.Errorf("a sweep after the Load removed %d, %v; want 1", n, err)
	}
}

// Ensure that Metrics' ExpiredSwept counts a sweep's documents as each
// batch commits, not at the sweep's end: a sweep of 300,000 documents
// that expired together ran 80 s with ExpiredSwept and ExpirySweeps at 0
// and ExpiryOverdue growing, which the metrics' docs read as a sweep that
// fails or is off (a TTL review's TTL-3). The oracle: the count the clock
// sees at each batch's start (the sweep reads it once a batch), against
// the batches' sizes (compaction.SweepBatch).
func TestExpiredSweptCountsEachBatch(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	var d *DB
	var mu sync.Mutex
	var seen []uint64 // ExpiredSwept at each reading of the clock, once sweeping
	var sweeping atomic.Bool
	opts := &Options{fs: vfs.NewMem(), NoSync: true, ExpirySweep: -1, clock: func() time.Time {
		if sweeping.Load() {
			mu.Lock()
			seen = append(seen, d.counts.swept.Load())
			mu.Unlock()
		}
		return clock.now()
	}}
	d = mustOpen(t, "db", opts)
	n := 2*compaction.SweepBatch + 100
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document number %d, which expires with all the others", i)}
	}
	if _, err := d.Load(context.Background(), seqOf(docs), &LoadOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour)
	sweeping.Store(true)
	swept, err := d.SweepExpired(context.Background())
	sweeping.Store(false)
	mu.Lock()
	defer mu.Unlock()
	if err != nil || swept != n {
		t.Fatalf("SweepExpired: %d, %v; want %d", swept, err, n)
	}
	if !slices.Contains(seen, uint64(compaction.SweepBatch)) || !slices.Contains(seen, uint64(2*compaction.SweepBatch)) {
		t.Errorf("ExpiredSwept during the sweep: %v; want %d after the first batch and %d after the second", seen, compaction.SweepBatch, 2*compaction.SweepBatch)
	}
	if m, err := d.Metrics(); err != nil || m.ExpiredSwept != uint64(n) || m.ExpirySweeps != 1 || m.ExpiryOverdue != 0 {
		t.Fatalf("Metrics after the sweep: swept %d, sweeps %d, overdue %v (%v); want %d, 1, 0", m.ExpiredSwept, m.ExpirySweeps, m.ExpiryOverdue, err, n)
	}
}

// Ensure that Delete and DeleteIDs of a document past its expiry, not yet
// swept, say "(expired)" and match IsExpired, as Get does, and one never
// stored does not (a TTL review's TTL-5: Delete said "not found" alone),
// on Pebble and on Redis; the delete leaves the document to the sweep.
func TestDeleteOfTheExpiredSaysSo(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		t.Run(backend, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			dir := "db"
			opts := &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1}
			if backend == "redis" {
				// NB: the fake clock is ahead of the servers', which keep
				// the records: the handle's clock alone says they expired.
				dir, opts = redisURL(t), &Options{clock: clock.now, ExpirySweep: -1}
			}
			d := mustOpen(t, dir, opts)
			if err := d.Put(Doc{ID: "live", Text: "a document that stays for ever"}, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Put(Doc{ID: "gone", Text: "a document that lives a minute"}, &WriteOptions{TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			clock.advance(time.Hour)
			if _, err := d.Get("gone"); !IsExpired(err) {
				t.Fatalf("Get: %v, want it expired (the oracle)", err)
			}
			err := d.Delete("gone", nil)
			if !errors.Is(err, ErrNotFound) || !IsExpired(err) || !strings.Contains(err.Error(), `"gone" (expired)`) {
				t.Errorf("Delete: %v, want ErrNotFound, (expired)", err)
			}
			_, err = d.DeleteIDs([]string{"live", "gone"}, nil)
			var de *DocError
			if !errors.Is(err, ErrNotFound) || !IsExpired(err) || !errors.As(err, &de) || de.Index != 1 {
				t.Errorf("DeleteIDs: %v, want ErrNotFound, (expired), of document 1", err)
			}
			if err := d.Delete("never", nil); !errors.Is(err, ErrNotFound) || IsExpired(err) {
				t.Errorf("Delete of an id never stored: %v, want ErrNotFound, not expired", err)
			}
			if _, err := d.Get("live"); err != nil {
				t.Fatalf("the refused DeleteIDs deleted live: %v", err)
			}
			if n, err := d.SweepExpired(context.Background()); err != nil || n != 1 {
				t.Fatalf("the sweep after: %d, %v; want the expired document", n, err)
			}
		})
	}
}
