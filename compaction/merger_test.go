package compaction

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
)

// model is the expected posting set: a map from doc number to present.
type model map[uint64]bool

func (m model) sorted() []codec.Posting {
	var out []codec.Posting
	for d, ok := range m {
		if ok {
			out = append(out, codec.Posting{Doc: d})
		}
	}
	slices.SortFunc(out, func(a, b codec.Posting) int { return int(a.Doc) - int(b.Doc) })
	return out
}

// randomHistory returns a sequence of operands (oldest first) of random
// adds and removes over a few doc numbers, each doc added at most once
// and removed at most once after its add (doc numbers are never reused),
// and the model's final set.
func randomHistory(rng *rand.Rand) ([][]byte, model) {
	m := model{}
	state := map[uint64]int{} // 0 never added, 1 added, 2 removed
	var ops [][]byte
	for range 1 + rng.IntN(12) {
		var op []codec.Posting
		for d := uint64(1); d <= 20; d++ {
			if rng.IntN(4) != 0 {
				continue
			}
			switch state[d] {
			case 0:
				state[d] = 1
				m[d] = true
				op = append(op, codec.Posting{Doc: d})
			case 1:
				state[d] = 2
				m[d] = false
				op = append(op, codec.Posting{Doc: d, Remove: true})
			}
		}
		ops = append(ops, codec.AppendPostings(nil, op))
	}
	return ops, m
}

// mergeVia runs ops[lo:hi] through a ValueMerger the way Pebble may: it
// starts from one operand and adds the others newer-ward and older-ward
// in a random interleaving.
func mergeVia(t *testing.T, rng *rand.Rand, ops [][]byte, includesBase bool) []byte {
	t.Helper()
	start := rng.IntN(len(ops))
	vm, err := Merger.Merge(nil, ops[start])
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := start-1, start+1
	for lo >= 0 || hi < len(ops) {
		if hi < len(ops) && (lo < 0 || rng.IntN(2) == 0) {
			if err := vm.MergeNewer(ops[hi]); err != nil {
				t.Fatal(err)
			}
			hi++
		} else {
			if err := vm.MergeOlder(ops[lo]); err != nil {
				t.Fatal(err)
			}
			lo--
		}
	}
	out, closer, err := vm.Finish(includesBase)
	if err != nil {
		t.Fatal(err)
	}
	if closer != nil {
		closer.Close()
	}
	return slices.Clone(out)
}

// Ensure that any history of adds and removes, merged in any grouping
// Pebble may choose (partial merges of adjacent runs without the base,
// repeatedly, then a final merge with the base), equals the model's set.
func TestMergerMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 5000 {
		ops, m := randomHistory(rng)
		// Partial compactions: repeatedly replace a run of adjacent
		// operands that does not include the oldest by its partial merge.
		for len(ops) > 1 && rng.IntN(3) != 0 {
			i := 1 + rng.IntN(len(ops)-1)
			j := i + 1 + rng.IntN(len(ops)-i)
			partial := mergeVia(t, rng, ops[i:j], false)
			ops = append(ops[:i], append([][]byte{partial}, ops[j:]...)...)
		}
		// Sometimes a compaction that includes the base.
		if rng.IntN(2) == 0 {
			j := 1 + rng.IntN(len(ops))
			base := mergeVia(t, rng, ops[:j], true)
			ops = append([][]byte{base}, ops[j:]...)
		}
		final := mergeVia(t, rng, ops, true)
		got, err := codec.DecodePostings(final, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.sorted(); !slices.Equal(got, want) {
			t.Fatalf("iteration %d: merged %v, model %v", iter, got, want)
		}
	}
}

// Ensure that a partial merge keeps removals (an older add may still be
// below it) and a merge with the base drops them.
func TestMergerRemovalsAndBase(t *testing.T) {
	add := codec.AppendPostings(nil, []codec.Posting{{Doc: 1}, {Doc: 2}})
	rm := codec.AppendPostings(nil, []codec.Posting{{Doc: 1, Remove: true}})
	if _, err := Merge(nil, [][]byte{rm, {}}, false); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("an empty operand was accepted: %v", err)
	}
	partial, err := Merge(nil, [][]byte{rm}, false)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := codec.DecodePostings(partial, nil); !slices.Equal(ps, []codec.Posting{{Doc: 1, Remove: true}}) {
		t.Fatalf("partial merge lost the removal: %v", ps)
	}
	full, err := Merge(nil, [][]byte{add, rm}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := codec.DecodePostings(full, nil); !slices.Equal(ps, []codec.Posting{{Doc: 2}}) {
		t.Fatalf("merge with base = %v, want doc 2 only", ps)
	}
}

// Ensure that a key with one operand (most keys: a bucket one document
// fell in) comes out of the ValueMerger as Merge makes it: as it is
// without the base, its removals dropped with it, and a malformed one
// refused when it is read whole.
func TestMergerOneOperand(t *testing.T) {
	lists := [][]codec.Posting{
		{{Doc: 7}},
		{{Doc: 1}, {Doc: 5}, {Doc: 900000}},
		{{Doc: 3, Remove: true}},
		{{Doc: 2}, {Doc: 4, Remove: true}, {Doc: 1 << 40}},
		make([]codec.Posting, 40), // longer than the merger's inline bytes
	}
	for i := range lists[4] {
		lists[4][i] = codec.Posting{Doc: uint64(i*1000 + 1), Remove: i%7 == 3}
	}
	for _, ps := range lists {
		op := codec.AppendPostings(nil, ps)
		for _, base := range []bool{false, true} {
			want, err := Merge(nil, [][]byte{op, codec.AppendPostings(nil, nil)}, base)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := Merger.Merge(nil, op)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := vm.Finish(base)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%v (base %v): ValueMerger gave %x, Merge %x", ps, base, got, want)
			}
		}
	}
	// Doc 5 twice: not strictly increasing. NB: the merger gives a damaged
	// list, which reads refuse, and never an error (Pebble would retry the
	// flush or compaction for ever).
	bad := []byte{1, 2, 10, 0}
	vm, err := Merger.Merge(nil, bad)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := vm.Finish(true)
	if err != nil {
		t.Fatalf("a malformed operand merged with its base: %v", err)
	}
	if _, err := codec.DecodePostings(got, nil); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "repeats doc 5") {
		t.Fatalf("a malformed operand merged with its base gave %x: %v, want a damaged list naming the cause", got, err)
	}
}

// Ensure that the merger works inside a real Pebble: merges, flushes and
// compactions give the model's set on read.
func TestMergerInPebble(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Merger: Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	key := []byte("p-key")
	ops, m := randomHistory(rng)
	for i, op := range ops {
		if err := db.Merge(key, op, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 4 {
			if err := db.Compact(context.Background(), []byte("a"), []byte("z"), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, closer, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := codec.DecodePostings(v, nil)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := m.sorted(); !slices.Equal(got, want) {
		t.Fatalf("pebble read %v, model %v", got, want)
	}
}

// Ensure that Merge, which runs inside Pebble's compactions on bytes read
// from disk, never panics: operands that all decode merge into a list
// that decodes, with the newest operation on each doc winning; an operand
// that does not decode is refused. The seed also drives a valid history
// checked against the model.
func FuzzMerge(f *testing.F) {
	f.Add(codec.AppendPostings(nil, []codec.Posting{{Doc: 1}, {Doc: 5, Remove: true}}), uint64(1), true)
	f.Add([]byte{0xff, 0xff, 0xff}, uint64(2), false)
	f.Add([]byte{}, uint64(3), true)
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64, includesBase bool) {
		// Arbitrary bytes, cut into up to three operands.
		var ops [][]byte
		rest := raw
		for k := 0; k < 2 && len(rest) > 0; k++ {
			cut := int(seed>>(8*k)) % (len(rest) + 1)
			ops, rest = append(ops, rest[:cut]), rest[cut:]
		}
		ops = append(ops, rest)
		valid := true
		for _, op := range ops {
			if _, err := codec.DecodePostings(op, nil); err != nil || len(op) == 0 {
				valid = false
			}
		}
		out, err := Merge(nil, ops, includesBase)
		if err == nil {
			if _, derr := codec.DecodePostings(out, nil); derr != nil && len(ops) > 1 {
				t.Fatalf("Merge(%x) = %x, which does not decode: %v", ops, out, derr)
			}
		} else if valid {
			t.Fatalf("Merge refused operands that decode: %v", err)
		}
		// The ValueMerger of one operand (its fast path) against Merge's
		// general path, on the whole input: the same postings, or both
		// refuse it (only its header is checked without the base). The
		// ValueMerger never fails (Pebble would retry the flush for
		// ever): it refuses by giving a list that does not decode.
		if len(raw) > 0 {
			vm, err := Merger.Merge(nil, raw)
			if err != nil {
				t.Fatalf("one operand %x: the merger failed: %v", raw, err)
			}
			got, _, err := vm.Finish(includesBase)
			if err != nil {
				t.Fatalf("one operand %x (base %v): the merger failed: %v", raw, includesBase, err)
			}
			// NB: compared decoded: a count or delta written in more
			// bytes than it needs is given back as it is without the base.
			gotPs, verr := codec.DecodePostings(got, nil)
			want, werr := Merge(nil, [][]byte{raw, codec.AppendPostings(nil, nil)}, includesBase)
			wantPs, _ := codec.DecodePostings(want, nil)
			if _, herr := codec.PostingCount(raw); herr != nil && (verr == nil || !errors.Is(verr, codec.ErrCorrupt) || !strings.Contains(verr.Error(), "damaged")) {
				t.Fatalf("one operand %x with a bad header: the merger gave %x (%v), want a damaged list", raw, got, verr)
			}
			switch {
			case verr == nil && werr == nil && !slices.Equal(gotPs, wantPs):
				t.Fatalf("one operand %x (base %v): ValueMerger gave %x, Merge %x", raw, includesBase, got, want)
			case verr != nil && werr == nil:
				t.Fatalf("one operand %x (base %v): ValueMerger refused it (%v), Merge gave %x", raw, includesBase, verr, want)
			case verr == nil && werr != nil && includesBase:
				t.Fatalf("one operand %x with its base: ValueMerger gave %x, Merge refused it (%v)", raw, got, werr)
			}
		}
		// A valid history: the model decides.
		hist, m := randomHistory(rand.New(rand.NewPCG(seed, 7)))
		final, err := Merge(nil, hist, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.DecodePostings(final, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.sorted(); !slices.Equal(got, want) {
			t.Fatalf("merged %v, model %v", got, want)
		}
	})
}

// Ensure that Purgeable calls a list garbage exactly when it holds no
// add: empty, or removals only.
func TestPurgeable(t *testing.T) {
	for _, c := range []struct {
		ps   []codec.Posting
		want bool
	}{
		{nil, true},
		{[]codec.Posting{{Doc: 3, Remove: true}}, true},
		{[]codec.Posting{{Doc: 3, Remove: true}, {Doc: 4}}, false},
		{[]codec.Posting{{Doc: 9}}, false},
	} {
		got, err := Purgeable(codec.AppendPostings(nil, c.ps))
		if err != nil || got != c.want {
			t.Errorf("Purgeable(%v) = %v, %v; want %v", c.ps, got, err, c.want)
		}
	}
	if _, err := Purgeable([]byte{0xff}); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("Purgeable of bad bytes: %v, want ErrCorrupt", err)
	}
}

// Ensure that the expiry rule holds at its edges: a record expires at its
// expiry time, not before; 0 never expires; ExpiresAt prefers an absolute
// time to a TTL.
func TestExpiryRule(t *testing.T) {
	for _, c := range []struct {
		expires, now int64
		want         bool
	}{{0, 1 << 62, false}, {10, 9, false}, {10, 10, true}, {10, 11, true}} {
		if got := Expired(c.expires, c.now); got != c.want {
			t.Errorf("Expired(%d, %d) = %v", c.expires, c.now, got)
		}
	}
	now := time.Unix(100, 0)
	if got := ExpiresAt(now, time.Second, time.Time{}); got != time.Unix(101, 0).UnixNano() {
		t.Errorf("ExpiresAt with a TTL: %d", got)
	}
	if got := ExpiresAt(now, time.Second, time.Unix(500, 0)); got != time.Unix(500, 0).UnixNano() {
		t.Errorf("ExpiresAt with both: %d", got)
	}
	if got := ExpiresAt(now, 0, time.Time{}); got != 0 {
		t.Errorf("ExpiresAt with neither: %d", got)
	}
}

// TestMergerDamagedOperands: an operand that does not decode, wherever it
// comes among the others, makes the result a damaged list, which every
// decoder refuses as ErrCorrupt; the merger itself never fails (Pebble
// retries a failed flush or compaction for ever).
func TestMergerDamagedOperands(t *testing.T) {
	good := codec.AppendPostings(nil, []codec.Posting{{Doc: 3}, {Doc: 9}})
	bad := []byte{0xff, 0xff, 0xff}
	for _, c := range []struct {
		name                string
		first, older, newer []byte
	}{
		{"bad first", bad, good, good},
		{"bad older", good, bad, good},
		{"bad newer", good, good, bad},
		{"a damaged list merged again", codec.AppendDamagedPostings(nil, "earlier"), good, good},
	} {
		for _, base := range []bool{false, true} {
			vm, err := Merger.Merge(nil, c.first)
			if err != nil {
				t.Fatalf("%s: Merge: %v", c.name, err)
			}
			if err := vm.MergeOlder(c.older); err != nil {
				t.Fatalf("%s: MergeOlder: %v", c.name, err)
			}
			if err := vm.MergeNewer(c.newer); err != nil {
				t.Fatalf("%s: MergeNewer: %v", c.name, err)
			}
			out, _, err := vm.Finish(base)
			if err != nil {
				t.Fatalf("%s: Finish: %v", c.name, err)
			}
			if _, err := codec.DecodePostings(out, nil); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "damaged") {
				t.Errorf("%s (base %v): %x decodes as %v, want a damaged list", c.name, base, out, err)
			}
			if _, err := codec.PostingCount(out); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("%s (base %v): PostingCount of the damaged list: %v", c.name, base, err)
			}
			if _, err := Purgeable(out); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("%s (base %v): Purgeable of the damaged list: %v", c.name, base, err)
			}
		}
	}
	// Merged again and again (every flush and compaction of a bucket that
	// still takes writes), a damaged list keeps its first cause as it is:
	// it was wrapped once more at every merge, and cut off at 512 bytes.
	vm, _ := Merger.Merge(nil, []byte{1, 2, 10, 0}) // doc 5 twice
	vm.MergeNewer(good)
	first, _, _ := vm.Finish(true)
	list := first
	for round := range 20 {
		vm, err := Merger.Merge(nil, good)
		if err != nil {
			t.Fatal(err)
		}
		if err := vm.MergeOlder(list); err != nil {
			t.Fatal(err)
		}
		vm.MergeNewer(good)
		if list, _, err = vm.Finish(round%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(list, first) {
		t.Errorf("a damaged list merged 20 times: %q, want it as it was, %q", list, first)
	}
	if _, err := codec.DecodePostings(list, nil); err == nil || !strings.Contains(err.Error(), "repeats doc 5") {
		t.Errorf("the damaged list's cause: %v", err)
	}
}

// Ensure that EmptiedBy says a list is emptied exactly when each of its
// live postings is among the removals (answers worked out by hand), and
// never of a list that does not decode (an error: the expiry sweep then
// writes its removal operand, as a delete does, and leaves the damage to
// Check).
func TestEmptiedBy(t *testing.T) {
	add := func(docs ...uint64) []codec.Posting {
		var ps []codec.Posting
		for _, d := range docs {
			ps = append(ps, codec.Posting{Doc: d})
		}
		return ps
	}
	rm := func(docs ...uint64) []codec.Posting {
		ps := add(docs...)
		for i := range ps {
			ps[i].Remove = true
		}
		return ps
	}
	for _, c := range []struct {
		name     string
		list, ps []codec.Posting
		want     bool
	}{
		{"its one posting removed", add(5), rm(5), true},
		{"all of three removed", add(2, 5, 9), rm(2, 5, 9), true},
		{"more removed than held", add(5), rm(1, 5, 7), true},
		{"one of two left", add(2, 5), rm(5), false},
		{"the first left", add(2, 5), rm(5, 9), false},
		{"the last left", add(2, 5, 9), rm(2, 5), false},
		{"another document removed", add(5), rm(4), false},
		{"no removal", add(5), nil, false},
		{"an empty list", nil, rm(5), true},
		{"only older removals held", rm(3, 4), rm(5), true},
		{"an older removal and a live one", append(rm(3), add(5)...), rm(5), true},
		{"an addition in the batch", add(5), add(5), false},
	} {
		if got, err := EmptiedBy(codec.AppendPostings(nil, c.list), c.ps); err != nil || got != c.want {
			t.Errorf("%s: EmptiedBy(%v, %v) = %v, %v; want %v", c.name, c.list, c.ps, got, err, c.want)
		}
	}
	if got, err := EmptiedBy([]byte{0xff, 1, 2}, rm(5)); got || !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("EmptiedBy of a list that does not decode: %v, %v; want false, ErrCorrupt", got, err)
	}
}
