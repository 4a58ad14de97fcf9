package db

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
)

// loadTexts are near-duplicates of each other (each finds the others at
// 0.5).
var loadTexts = map[string]string{
	"p":  "the quick brown fox jumps over the lazy dog by the river bank today",
	"e":  "the quick brown fox jumps over the lazy dog by the river bank today!",
	"k":  "the quick brown fox jumps over the lazy dog by the river bank, today",
	"n1": "the quick brown fox jumps over the lazy dog by the river bank today.",
	"n2": "the quick brown fox jumps over the lazy dog by the river bank today?",
}

// loadExpiring stores p (permanent), e and k (TTL 1 h), then loads with a
// TTL of 1 s: e (replacing an expiring document), p (replacing a
// permanent one), n1 twice (the last wins) and n2. The model: all five
// are found until the load's expiry, then k alone. It returns the times
// just before and after the load: its expiry is between them, plus 1 s.
func loadExpiring(t *testing.T, d *DB) (before, after time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := d.Put(Doc{ID: "p", Text: loadTexts["p"]}, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e", "k"} {
		if err := d.Put(Doc{ID: id, Text: loadTexts[id] + " (first)"}, &WriteOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	docs := func(ids ...string) func(func(Doc, error) bool) {
		return func(yield func(Doc, error) bool) {
			for _, id := range ids {
				if !yield(Doc{ID: id, Text: loadTexts[id]}, nil) {
					return
				}
			}
		}
	}
	for _, lo := range []*LoadOptions{{TTL: -time.Second}, {TTL: time.Second, ExpireAt: time.Now().Add(time.Hour)}} {
		if _, err := d.Load(ctx, docs("n2"), lo); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Load with %+v: %v, want ErrInvalidOptions", lo, err)
		}
		if ok, err := d.Has("n2"); ok || err != nil {
			t.Fatalf("a refused Load (%+v) stored n2: %v, %v", lo, ok, err)
		}
	}
	before = time.Now()
	res, err := d.Load(ctx, docs("e", "n1", "p", "n1", "n2"), &LoadOptions{TTL: time.Second})
	after = time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 4 || res.Replaced != 2 || res.Repeated != 1 {
		t.Fatalf("Load: %+v, want 4 stored, 2 replaced, 1 repeated", res)
	}
	if v := d.Params().FormatVersion; v != codec.FormatVersion {
		t.Fatalf("after a load with a TTL, format %d; want %d", v, codec.FormatVersion)
	}
	return before, after
}

// checkLoadExpiry checks the index before the load's expiry (all found,
// whole, five expiring) or after it and the sweep (k alone, whole).
func checkLoadExpiry(t *testing.T, d *DB, after bool) {
	t.Helper()
	ctx := context.Background()
	want := slices.Sorted(maps.Keys(loadTexts))
	if after {
		want = []string{"k"}
	}
	if got := queryIDs(t, d, loadTexts["p"]); !slices.Equal(got, want) {
		t.Fatalf("after=%v: Query finds %v, want %v", after, got, want)
	}
	for id, text := range loadTexts {
		doc, err := d.Get(id)
		switch {
		case after && id != "k":
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%s) after the expiry: %v, want ErrNotFound", id, err)
			}
		case err != nil:
			t.Fatalf("Get(%s): %v", id, err)
		case id != "k" && doc.Text != text:
			t.Fatalf("Get(%s) = %q, want the load's %q", id, doc.Text, text)
		}
	}
	rep, err := d.Check(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("after=%v: Check: %+v, %v", after, rep, err)
	}
	if n := len(want); rep.Docs != n || rep.Postings != n*d.Params().Bands.B {
		t.Fatalf("after=%v: %d records, %d postings; want %d documents' worth", after, rep.Docs, rep.Postings, n)
	}
}

// Ensure that Load with a TTL (Pebble, a fake clock) makes every document
// it stores expire together: found until then, never after, swept with
// its postings; that the expiry index stays whole when the load replaces
// documents with and without an expiry of their own (Check: every
// expiring record indexed, no key left for a replaced one), across a
// reopen; and that a TTL out of range stores nothing.
func TestLoadExpiryPebble(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	opts := &Options{fs: vfs.NewMem(), clock: clock.now, ExpirySweep: -1}
	d, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	loadExpiring(t, d)
	checkLoadExpiry(t, d, false)
	st, err := d.Stats(ctx, 0)
	if err != nil || st.Expiring != 5 || st.Expired != 0 {
		t.Fatalf("Stats before the expiry: %d expiring, %d expired (%v); want 5, 0", st.Expiring, st.Expired, err)
	}
	clock.advance(time.Second)
	if n, err := d.SweepExpired(ctx); n != 4 || err != nil {
		t.Fatalf("SweepExpired = %d, %v; want the load's 4", n, err)
	}
	checkLoadExpiry(t, d, true)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = Open("db", opts); err != nil {
		t.Fatal(err)
	}
	checkLoadExpiry(t, d, true)
	if n, err := d.Count(); n != 1 || err != nil {
		t.Fatalf("Count after the sweep = %d, %v", n, err)
	}
}

// Ensure that Load with a TTL on Redis makes every document it stores
// expire together: found until then, never after, swept within the
// sweep's bound (the model as on Pebble; a real clock: Redis expires the
// records itself).
func TestLoadExpiryRedis(t *testing.T) {
	d, err := Open(redisURL(t), &Options{ExpirySweep: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before, after := loadExpiring(t, d)
	if time.Since(before) < 900*time.Millisecond {
		checkLoadExpiry(t, d, false)
	}
	time.Sleep(time.Until(after.Add(time.Second + 10*time.Millisecond)))
	if n, err := d.SweepExpired(context.Background()); n != 4 || err != nil {
		t.Fatalf("SweepExpired = %d, %v; want the load's 4", n, err)
	}
	checkLoadExpiry(t, d, true)
}
