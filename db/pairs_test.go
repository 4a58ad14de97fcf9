package db

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/minhash"
)

type idPair struct {
	a, b string
	j    float64
}

func collectPairs(t *testing.T, d *DB, po *PairsOptions) []idPair {
	t.Helper()
	var out []idPair
	for p, err := range d.Pairs(context.Background(), po) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, idPair{p.A, p.B, p.Jaccard})
	}
	slices.SortFunc(out, func(x, y idPair) int { return cmp.Or(strings.Compare(x.a, y.a), strings.Compare(x.b, y.b)) })
	return out
}

// Ensure that a hot bucket of identical documents is not quadratic: the
// copies form one group, reported at Jaccard 1 without verification, and
// take part in candidate generation once; the pairs equal brute force.
func TestPairsHotBucketOfIdenticalDocs(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	var docs []Doc
	const copies = 400
	for i := range copies {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy-%03d", i), Text: "the same boilerplate notice, copied everywhere"})
	}
	var texts []string
	for i := range 300 {
		text := randomText(rng, texts)
		texts = append(texts, text)
		docs = append(docs, Doc{ID: fmt.Sprintf("other-%03d", i), Text: text})
	}
	docs = append(docs, Doc{ID: "near-copy", Text: "the same boilerplate notice, copied everywhere!"})
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var st PairsStats
	got := collectPairs(t, d, &PairsOptions{Stats: &st})

	sets := defaultSets(docs)
	var want []idPair
	for _, p := range allpairs.Brute(sets, 0.8) {
		want = append(want, idPair{docs[p.A].ID, docs[p.B].ID, p.Jaccard})
	}
	slices.SortFunc(want, func(x, y idPair) int { return cmp.Or(strings.Compare(x.a, y.a), strings.Compare(x.b, y.b)) })
	// The LSH answer may miss a pair brute force finds (not here: every
	// near pair of this corpus shares a band), never add one.
	if !slices.Equal(got, want) {
		t.Fatalf("Pairs found %d pairs, brute force %d", len(got), len(want))
	}
	// Groups counted here from the sets themselves (the random documents
	// repeat a text now and then too).
	same := map[string]int{}
	for _, s := range sets {
		same[fmt.Sprint(s)]++
	}
	groups, pairs := 0, int64(0)
	for _, k := range same {
		if k > 1 {
			groups++
			pairs += int64(k * (k - 1) / 2)
		}
	}
	if st.IdenticalGroups != groups || st.IdenticalPairs != pairs || pairs < copies*(copies-1)/2 {
		t.Fatalf("stats %+v: want %d groups and %d identical pairs", st, groups, pairs)
	}
	// Without grouping every band's bucket of the copies alone would give
	// 16 × 400·399/2 = 1,276,800 candidates.
	if st.Candidates > 20000 {
		t.Fatalf("%d candidates: the identical copies were not collapsed", st.Candidates)
	}
	t.Logf("%+v", st)
}

// createsFS records the names of the files made through it.
type createsFS struct {
	vfs.FS
	mu    sync.Mutex
	names []string
}

func (f *createsFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f.mu.Lock()
	f.names = append(f.names, f.PathBase(name))
	f.mu.Unlock()
	return f.FS.Create(name, c)
}

// made returns how many files named base were made since the last call.
func (f *createsFS) made(base string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, name := range f.names {
		if name == base {
			n++
		}
	}
	f.names = nil
	return n
}

// Ensure that Pairs gives the same answer when its candidates spill to
// disk, and when the texts it verifies go to a file (beyond a quarter of
// the memory budget) rather than stay in memory, and that stopping early
// releases everything.
func TestPairsSpillAndStop(t *testing.T) {
	fs := &createsFS{FS: vfs.NewMem()}
	d := mustOpen(t, "db", &Options{fs: fs, NoSync: true, Threshold: 0.5})
	defer d.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	var texts []string
	var docs []Doc
	for i := range 1500 {
		text := randomText(rng, texts)
		texts = append(texts, text)
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: text})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	var inMem, spilled PairsStats
	fs.made("sets")
	a := collectPairs(t, d, &PairsOptions{Stats: &inMem})
	if n := fs.made("sets"); n != 0 {
		t.Errorf("with the default budget the texts went to a file (%d made)", n)
	}
	b := collectPairs(t, d, &PairsOptions{Memory: 64 << 10, Stats: &spilled})
	if n := fs.made("sets"); n != 1 {
		t.Errorf("with 16 KiB for the texts, %d files of them made, want 1", n)
	}
	if inMem.Spilled || !spilled.Spilled {
		t.Fatalf("spilled: %v and %v (%d candidates)", inMem.Spilled, spilled.Spilled, spilled.Candidates)
	}
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Fatalf("spilled run found %d pairs, in-memory %d", len(b), len(a))
	}
	n := 0
	for _, err := range d.Pairs(context.Background(), &PairsOptions{Memory: 64 << 10}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 5 {
			break
		}
	}
	if names, _ := d.opts.FS.List("db"); slices.ContainsFunc(names, func(s string) bool { return strings.HasPrefix(s, "lshdb-pairs-") }) {
		t.Fatalf("a stopped Pairs left its files: %v", names)
	}
	if _, err := d.Count(); err != nil {
		t.Fatal(err)
	}
}

// Ensure that Pairs on scancode-rules, the shared corpus of short licence
// notices (the hardest case: tiny texts, thousands of near-identical MIT or
// GPL notices), finds ≥ 99% of the pairs at t = 0.8 and 0.5 against the
// all-pairs oracle (itself checked against the corpus README's counts),
// every score exact, each pair once. Skipped without ../shared, and
// without LSHDB_LONG=1 (about 2 minutes on 2 cores).
func TestPairsScancodeRules(t *testing.T) {
	if testing.Short() || !long() {
		t.Skip("long (LSHDB_LONG=1): about 2 minutes on the shared corpora")
	}
	docs, sets, index := sharedCorpus(t, "scancode-rules")
	batch := make([]Doc, len(docs))
	for i, doc := range docs {
		batch[i] = Doc{ID: doc.ID, Text: doc.Text}
	}
	// NB: at 0.5 the corpus has 3.5 million pairs among thousands of
	// near-identical short notices (53 million candidates): about 2
	// minutes on 2 cores, oracle included.
	thresholds := map[float64]int{0.8: 371174, 0.5: 3504697}
	for th, published := range thresholds {
		start := time.Now()
		truth := corpusOracle("scancode-rules", sets, th)
		if len(truth) != published {
			t.Fatalf("t=%v: the oracle finds %d pairs, the corpus README %d", th, len(truth), published)
		}
		oracle := time.Since(start)
		d := mustOpen(t, t.TempDir(), &Options{Threshold: th})
		start = time.Now()
		if _, err := d.Load(context.Background(), seqOf(batch), &LoadOptions{SkipEmpty: true}); err != nil {
			t.Fatal(err)
		}
		build := time.Since(start)
		start = time.Now()
		var st PairsStats
		var got [][2]int32
		for p, err := range d.Pairs(context.Background(), &PairsOptions{Stats: &st}) {
			if err != nil {
				t.Fatal(err)
			}
			i, j := index[p.A], index[p.B]
			if exact := minhash.Jaccard(sets[i], sets[j]); p.Jaccard != exact || exact < th {
				t.Fatalf("%s ~ %s: reported %v, exact %v", p.A, p.B, p.Jaccard, exact)
			}
			got = append(got, [2]int32{int32(min(i, j)), int32(max(i, j))})
		}
		pairsTime := time.Since(start)
		slices.SortFunc(got, func(x, y [2]int32) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
		if dup := len(got) - len(slices.Compact(slices.Clone(got))); dup > 0 {
			t.Fatalf("t=%v: %d pairs reported twice", th, dup)
		}
		hit := 0
		for _, p := range truth {
			if _, ok := slices.BinarySearchFunc(got, [2]int32{int32(p.A), int32(p.B)}, func(x, y [2]int32) int {
				return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
			}); ok {
				hit++
			}
		}
		recall := float64(hit) / float64(len(truth))
		t.Logf("scancode-rules t=%.1f: %d pairs, recall %.4f; oracle %v, load %v, Pairs %v; %+v",
			th, len(truth), recall, oracle.Round(time.Millisecond), build.Round(time.Millisecond), pairsTime.Round(time.Millisecond), st)
		if recall < 0.99 || hit != len(got) {
			t.Errorf("t=%v: recall %.4f, %d reported pairs outside the oracle's", th, recall, len(got)-hit)
		}
		d.Close()
	}
}

// TestAgree checks agree, which counts eight places at a time, against a
// count of one place at a time, on sketches of every length up to 40 and
// the default 128, with agreements at every position, and bytes that
// differ in only their high or only their low bit.
func TestAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	// The oracle: the places whose values' low 4 bits are equal, one at a
	// time, from the signatures the sketches were made of.
	oracle := func(a, b []uint32) int {
		n := 0
		for i := range a {
			if a[i]%16 == b[i]%16 {
				n++
			}
		}
		return n
	}
	places := []int{127, 128}
	for n := range 41 {
		places = append(places, n)
	}
	for _, n := range places {
		for range 200 {
			a, b := make([]uint32, n), make([]uint32, n)
			for i := range a {
				a[i] = rng.Uint32()
				switch rng.IntN(6) {
				case 0, 1:
					b[i] = a[i]
				case 2:
					b[i] = a[i] ^ 8 // the half-byte's top bit
				case 3:
					b[i] = a[i] ^ 1
				case 4:
					b[i] = a[i] ^ 0x10 // beyond the sketch's bits: agrees
				default:
					b[i] = rng.Uint32()
				}
			}
			sa, sb := codec.AppendSketch(nil, a), codec.AppendSketch(nil, b)
			if got, want := agree(sa, sb, n), oracle(a, b); got != want {
				t.Fatalf("agree(%x, %x, %d) = %d, want %d", sa, sb, n, got, want)
			}
		}
	}
}

// Ensure that a pairs run removes the temporary directories of runs that
// died (a kill -9 leaves one, with its set file, that no read-only command
// removed), and only those: a directory whose lock a run holds stays, even
// when old, and so does one made a moment ago (a run between making its
// directory and locking it). The oracle: the directories present after.
func TestPairsSweepsDeadRuns(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	defer d.Close()
	for i := range 20 {
		text := fmt.Sprintf("a document about the number %d and its neighbours, written out at length", i/2)
		if err := d.Put(Doc{ID: fmt.Sprintf("d%02d", i), Text: text}, &WriteOptions{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleRunAge)
	mkRun := func(name string, mtime time.Time) string {
		p := dir + "/" + name
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+"/sets", make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mkRun("lshdb-pairs-0xc000123456.tmp", old) // NB: the name an older build gave
	deadLocked := mkRun("lshdb-pairs-4242-1.tmp", old)
	os.WriteFile(deadLocked+"/LOCK", nil, 0o644) // NB: a lock file no process holds
	os.Chtimes(deadLocked, old, old)
	fresh := mkRun("lshdb-pairs-4242-2.tmp", time.Now())
	live := mkRun("lshdb-pairs-4242-3.tmp", old)
	lock, err := vfs.Default.Lock(live + "/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	os.Chtimes(live, old, old)
	// NB: the leftovers count in the index's size on disk (four set
	// files of 1,000 bytes).
	if after, err := d.Info(); err != nil || after.DiskBytes < before.DiskBytes+4000 {
		t.Fatalf("size on disk with leftovers: %v, before %d (%v)", after, before.DiskBytes, err)
	}
	want := collectPairs(t, d, nil)
	if len(want) == 0 {
		t.Fatal("no pairs: the test needs some")
	}
	for _, p := range []string{dead, deadLocked} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a dead run's directory %s after a pairs run: %v, want it removed", p, err)
		}
	}
	for _, p := range []string{fresh, live} {
		if _, err := os.Stat(p + "/sets"); err != nil {
			t.Errorf("%s after a pairs run: %v, want it kept", p, err)
		}
	}
	// A run under way whose directory is old: another run leaves it.
	ctx := context.Background()
	n := 0
	for _, err := range d.Pairs(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n > 1 {
			continue
		}
		runs, _ := filepath.Glob(fmt.Sprintf("%s/lshdb-pairs-%d-*.tmp", dir, os.Getpid()))
		if len(runs) != 1 {
			t.Fatalf("this run's directories: %v, want one", runs)
		}
		if err := os.Chtimes(runs[0], old, old); err != nil {
			t.Fatal(err)
		}
		if got := collectPairs(t, d, nil); !slices.Equal(got, want) {
			t.Fatalf("a second run beside the first: %d pairs, want %d", len(got), len(want))
		}
		if _, err := os.Stat(runs[0] + "/LOCK"); err != nil {
			t.Fatalf("the first run's directory after a second run: %v, want it kept", err)
		}
	}
	if n != len(want) {
		t.Fatalf("the first run gave %d pairs, want %d", n, len(want))
	}
	if runs, _ := filepath.Glob(fmt.Sprintf("%s/lshdb-pairs-%d-*.tmp", dir, os.Getpid())); len(runs) != 0 {
		t.Fatalf("directories left by this process's runs: %v", runs)
	}
}

// Ensure that PairsOptions.Limit yields the best pairs in order: the
// first Limit pairs of brute force's, ordered here by Jaccard (highest
// first) and then by the ids (each pair's smaller id first), for limits
// below, at and above the number of pairs, with ties at Jaccard 1 (copies)
// cut by the ids; the stats still count every pair found; a negative
// limit is refused.
func TestPairsLimit(t *testing.T) {
	d := mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
	defer d.Close()
	_, want := groupsFixture(t, d, 5)
	slices.SortFunc(want, func(x, y Pair) int {
		if x.Jaccard != y.Jaccard {
			return cmp.Compare(y.Jaccard, x.Jaccard)
		}
		return cmp.Or(strings.Compare(x.A, y.A), strings.Compare(x.B, y.B))
	})
	if len(want) < 70 || want[len(want)-1].Jaccard == 1 {
		t.Fatalf("the fixture has %d pairs (the last at %v): want copies and near pairs", len(want), want[len(want)-1].Jaccard)
	}
	across, firstAcross := 0, -1
	for i, p := range want {
		if strings.HasPrefix(p.A, "copy") && strings.HasPrefix(p.B, "copz") {
			if across++; firstAcross < 0 {
				firstAcross = i
			}
		}
	}
	if across != 12*9 {
		t.Fatalf("the fixture has %d pairs across the two groups, want %d", across, 12*9)
	}
	for _, limit := range []int{1, 7, 8, 9, 66, 67, firstAcross, firstAcross + 1, firstAcross + 5, firstAcross + 107, firstAcross + 108, len(want) - 1, len(want), len(want) + 5} {
		var st PairsStats
		var got []Pair
		for p, err := range d.Pairs(context.Background(), &PairsOptions{Limit: limit, Stats: &st}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		if w := want[:min(limit, len(want))]; !slices.Equal(got, w) {
			t.Fatalf("Limit %d: %d pairs %v…, want %d %v…", limit, len(got), got[:min(3, len(got))], len(w), w[:min(3, len(w))])
		}
		if st.Reported != int64(len(want)) {
			t.Fatalf("Limit %d: stats report %d pairs found, want %d", limit, st.Reported, len(want))
		}
	}
	var err error
	for _, err = range d.Pairs(context.Background(), &PairsOptions{Limit: -1}) {
		break
	}
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Limit -1: %v, want ErrInvalidOptions", err)
	}
}

// Ensure that Pairs with a Limit ends, as without one, when its loop
// body cancels the context (with context.Canceled) or closes the
// database (with ErrClosed): the best pairs, yielded from memory after
// the run, all came out then, and the iteration ended with no error.
// And that BestPairs refuses an n that is not positive (it panicked).
func TestPairsLimitEndsOnCancelAndClose(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		for _, how := range []string{"cancel", "close"} {
			for _, limit := range []int{0, 100} {
				pairsEndOnCancelOrClose(t, backend, how, limit)
			}
		}
	}
	var errs []error
	for _, err := range BestPairs(nil, 3) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidOptions) {
		t.Errorf("BestPairs(nil): %v, want ErrInvalidOptions alone", errs)
	}
	for _, n := range []int{0, -1} {
		var errs []error
		for _, err := range BestPairs(seqOfPairs(Pair{A: "a", B: "b", Jaccard: 1}), n) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidOptions) {
			t.Errorf("BestPairs(n=%d): %v, want ErrInvalidOptions alone", n, errs)
		}
	}
}

func pairsEndOnCancelOrClose(t *testing.T, backend, how string, limit int) {
	var d *DB
	if backend == "redis" {
		var err error
		if d, err = Open(redisURL(t, how, fmt.Sprint(limit)), &Options{Threshold: 0.5}); err != nil {
			t.Fatal(err)
		}
	} else {
		d = mustOpen(t, t.TempDir(), &Options{Threshold: 0.5})
	}
	var docs []Doc
	for base := range 20 {
		for c := range 4 {
			docs = append(docs, Doc{ID: fmt.Sprintf("d%02d-%d", base, c),
				Text: fmt.Sprintf("the text of document %d, one of four close copies: %d, with words enough to be near", base, c)})
		}
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []error
	pairs := 0
	for _, err := range d.Pairs(ctx, &PairsOptions{Limit: limit}) {
		if err != nil {
			got = append(got, err)
			continue
		}
		if pairs++; pairs == 3 {
			if how == "cancel" {
				cancel()
			} else {
				d.Close()
			}
		}
	}
	cancel()
	d.Close()
	want := context.Canceled
	if how == "close" {
		want = ErrClosed
	}
	if pairs != 3 || len(got) != 1 || !errors.Is(got[0], want) {
		t.Errorf("%s: %s at the 3rd pair, limit %d: %d pairs, then %v; want 3 and %v", backend, how, limit, pairs, got, want)
	}
}

// seqOfPairs yields ps.
func seqOfPairs(ps ...Pair) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		for _, p := range ps {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// Ensure that breaking out of a Pairs loop after cancelling its context
// ends the iteration quietly: Pairs then handed the cancel's error to the
// loop body that had returned false, and Go panicked ("range function
// continued iteration"), ending the program. The same with a Limit.
func TestPairsBreakAfterCancel(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.5})
	defer d.Close()
	// 200 texts of 40 random words, 10 copies of each with one word
	// changed: near, not identical, so that pairs come from verification.
	rng := rand.New(rand.NewPCG(9, 9))
	var docs []Doc
	for base := range 200 {
		words := make([]string, 40)
		for i := range words {
			words[i] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		for c := range 10 {
			w := slices.Clone(words)
			w[rng.IntN(len(w))] = fmt.Sprintf("copy%d", c)
			docs = append(docs, Doc{ID: fmt.Sprintf("d%03d-%d", base, c), Text: strings.Join(w, " ")})
		}
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	// NB: every round stops at another point of the run; under -short
	// (CI's -race run, where the 20 rounds took 39 s) every fourth.
	step := 1
	if testing.Short() {
		step = 4
	}
	for round := 0; round < 20; round += step {
		for _, limit := range []int{0, 10} {
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			for _, err := range d.Pairs(ctx, &PairsOptions{Limit: limit}) {
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if n++; n == 1+50*round {
					cancel()
					break
				}
			}
			cancel()
		}
	}
}

// groupsFixture stores in d 12 copies of one text, 9 of a text near it
// (their pairs with the first group's are pairs of two groups' members)
// and 200 random texts (rand seed), ids in no insertion order, and
// returns the documents in insertion order and every pair at Jaccard ≥
// 0.8 by brute-force exact Jaccard, the smaller id first.
func groupsFixture(t *testing.T, d *DB, seed uint64) ([]Doc, []Pair) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var docs []Doc
	for i := range 12 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy-%02d", 11-i), Text: "the same boilerplate notice, copied everywhere"})
	}
	for i := range 9 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copz-%02d", 8-i), Text: "the same boilerplate notice, copied everywhere!"})
	}
	var texts []string
	for i := range 200 {
		text := randomText(rng, texts)
		texts = append(texts, text)
		docs = append(docs, Doc{ID: fmt.Sprintf("other-%03d", 199-i), Text: text})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	sets := defaultSets(docs)
	var want []Pair
	for _, p := range allpairs.Brute(sets, 0.8) {
		a, b := docs[p.A].ID, docs[p.B].ID
		if b < a {
			a, b = b, a
		}
		want = append(want, Pair{A: a, B: b, Jaccard: p.Jaccard})
	}
	return docs, want
}

// Ensure that PairGroups, expanded, yields exactly the pairs that a
// brute-force exact Jaccard finds, each once, with identical sets as one
// group (12 copies: 66 pairs) and two groups near each other as one (12 ×
// 9 pairs), the lists in insertion order; that its stats count the pairs
// as Pairs' do; that a Limit is refused; and that a cancel in the loop
// ends it with context.Canceled, on Pebble and on Redis (where each pair
// is a group of its own).
func TestPairGroups(t *testing.T) {
	for _, backend := range []string{"pebble", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var d *DB
			if backend == "redis" {
				var err error
				if d, err = Open(redisURL(t, "groups"), nil); err != nil {
					t.Fatal(err)
				}
			} else {
				d = mustOpen(t, "db", &Options{fs: vfs.NewMem(), NoSync: true})
			}
			defer d.Close()
			docs, pairs := groupsFixture(t, d, 7)
			order := map[string]int{}
			for i, doc := range docs {
				order[doc.ID] = i
			}
			key := func(a, b string) [2]string {
				if b < a {
					a, b = b, a
				}
				return [2]string{a, b}
			}
			want := map[[2]string]float64{}
			for _, p := range pairs {
				want[key(p.A, p.B)] = p.Jaccard
			}
			var st, pst PairsStats
			got := map[[2]string]float64{}
			groups := 0
			inOrder := func(ids []string) bool {
				return slices.IsSortedFunc(ids, func(a, b string) int { return order[a] - order[b] })
			}
			for g, err := range d.PairGroups(context.Background(), &PairsOptions{Stats: &st}) {
				if err != nil {
					t.Fatal(err)
				}
				groups++
				if !inOrder(g.A) || !inOrder(g.B) || g.B != nil && order[g.A[0]] > order[g.B[0]] {
					t.Errorf("group %v / %v: not in insertion order", g.A, g.B)
				}
				n := int64(0)
				add := func(a, b string) {
					n++
					k := key(a, b)
					if _, dup := got[k]; dup {
						t.Errorf("the pair %v twice", k)
					}
					got[k] = g.Jaccard
				}
				if g.B == nil {
					for i, a := range g.A {
						for _, b := range g.A[i+1:] {
							add(a, b)
						}
					}
				} else {
					for _, a := range g.A {
						for _, b := range g.B {
							add(a, b)
						}
					}
				}
				if n != g.Pairs() {
					t.Errorf("group %v / %v: Pairs() = %d, it stands for %d", g.A, g.B, g.Pairs(), n)
				}
			}
			if len(got) != len(want) {
				t.Errorf("the groups hold %d pairs, brute force finds %d", len(got), len(want))
			}
			for k, j := range want {
				if g, ok := got[k]; !ok || math.Abs(g-j) > 1e-9 {
					t.Errorf("the pair %v: %v (found %v), want Jaccard %v", k, g, ok, j)
				}
			}
			for range d.Pairs(context.Background(), &PairsOptions{Stats: &pst}) {
			}
			if st.Reported != int64(len(want)) || st.Reported != pst.Reported || st.IdenticalPairs != pst.IdenticalPairs {
				t.Errorf("stats: reported %d (Pairs %d, brute force %d), identical %d (Pairs %d)", st.Reported, pst.Reported, len(want), st.IdenticalPairs, pst.IdenticalPairs)
			}
			if backend == "pebble" && groups >= len(want)-66-108+2 {
				t.Errorf("%d groups for %d pairs: the copies are not grouped", groups, len(want))
			}
			for _, err := range d.PairGroups(context.Background(), &PairsOptions{Limit: 3}) {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Errorf("a limit: %v, want ErrInvalidOptions", err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var errs []error
			seen := 0
			for _, err := range d.PairGroups(ctx, nil) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if seen++; seen == 2 {
					cancel()
				}
			}
			if seen != 2 || len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
				t.Errorf("cancelled at the second group: %d groups, errors %v; want 2 and context.Canceled", seen, errs)
			}
		})
	}
}

// defaultSets are the documents' shingle sets under the default options,
// for brute force's exact Jaccard.
func defaultSets(docs []Doc) [][]uint64 {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	sets := make([][]uint64, len(docs))
	for i, doc := range docs {
		sets[i], _ = h.Document(nil, nil, doc.Text)
	}
	return sets
}

// Ensure that the index Pairs reads holds each document's id, number,
// set size, sketch, group and expiry at its position, whether the
// documents were gathered by doc number and packed in place (doc numbers
// dense, or with gaps and then copied to arrays of their own size) or per
// worker and copied: the oracle is each record, read here one by one and
// grouped by its fingerprint, on an index with identical texts, documents
// past their TTL, and then gaps that deletes and upserts left.
func TestPairsIndexSketchesByNumber(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	text := func() string {
		var b strings.Builder
		for range 20 {
			fmt.Fprintf(&b, "w%d ", rng.IntN(5000))
		}
		return b.String()
	}
	put := func(docs []Doc, ttl time.Duration) {
		t.Helper()
		if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	var batch []Doc
	for i := range 6000 {
		tx := text()
		if i%10 == 9 {
			tx = batch[i-1].Text // a group of identical sets
		}
		batch = append(batch, Doc{ID: fmt.Sprintf("d%d", i), Text: tx})
	}
	put(batch[:3000], 0)
	put(batch[3000:3050], time.Hour) // expired at the time read below
	put(batch[3050:], 0)
	// now is when the index is read: the TTL documents have expired.
	now := d.now().Add(2 * time.Hour).UnixNano()
	check := func(stage string, gaps bool) {
		t.Helper()
		type rec struct {
			id     string
			size   uint32
			sketch []byte
			fp     uint64
		}
		var nums, expired []uint64
		recs := map[uint64]rec{}
		scan(context.Background(), d.pdb, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
			n, err := codec.ParseDocKey(k)
			if err != nil {
				t.Fatal(err)
			}
			view, err := codec.ParseDocView(v)
			if err != nil {
				t.Fatal(err)
			}
			if view.Expires != 0 && view.Expires <= now {
				expired = append(expired, n)
				return
			}
			sk, ok := view.AppendSketch(nil)
			if !ok {
				t.Fatalf("doc %d has no sketch", n)
			}
			fp, _ := groupFingerprint(&view, nil)
			nums = append(nums, n)
			recs[n] = rec{string(view.ID), uint32(view.SetLen), sk, fp}
		})
		if len(expired) == 0 || !gaps && len(expired) != 50 {
			t.Fatalf("%s: %d records expired, of the 50 put with a TTL", stage, len(expired))
		}
		span := int(nums[len(nums)-1] - nums[0] + 1)
		if gaps != (len(nums) < span*3/4) {
			t.Fatalf("%s: %d documents over %d numbers", stage, len(nums), span)
		}
		firstOf := map[uint64]int32{}
		places := min(d.skOpt.NumPerm, codec.SketchPlaces)
		for _, live := range []uint64{d.stored(), 0} {
			x, err := loadPairsIndex(context.Background(), d.pdb, now, places, live)
			if err != nil {
				t.Fatal(err)
			}
			if x.byNum != (live > 0) {
				t.Fatalf("%s, live %d: by number %v", stage, live, x.byNum)
			}
			if !slices.Equal(x.nums, nums) || !slices.Equal(x.expired, expired) {
				t.Fatalf("%s, live %d: numbers %v and expired %v, want %v and %v", stage, live, x.nums, x.expired, nums, expired)
			}
			if len(x.ids) != len(nums) || len(x.sizes) != len(nums) || len(x.rep) != len(nums) || len(x.sketched) != len(nums) || len(x.sketches) != len(nums)*x.skBytes {
				t.Fatalf("%s, live %d: %d ids, %d sizes, %d reps, %d sketched, %d sketch bytes for %d documents", stage, live, len(x.ids), len(x.sizes), len(x.rep), len(x.sketched), len(x.sketches), len(nums))
			}
			if gaps && (cap(x.ids) >= span || cap(x.sketches) >= span*x.skBytes) {
				t.Fatalf("%s, live %d: arrays for %d ids and %d sketch bytes hold %d documents of %d numbers", stage, live, cap(x.ids), cap(x.sketches), len(nums), span)
			}
			inGroups := 0
			for i, n := range nums {
				r := recs[n]
				want, seen := firstOf[r.fp]
				if !seen {
					firstOf[r.fp], want = int32(i), int32(i)
				}
				if x.ids[i] != r.id || x.sizes[i] != r.size || x.rep[i] != want {
					t.Fatalf("%s, live %d: document %d (doc %d): id %q, size %d, group of %d; its record: %q, %d, group of %d", stage, live, i, n, x.ids[i], x.sizes[i], x.rep[i], r.id, r.size, want)
				}
				if !x.sketched[i] || !bytes.Equal(x.sketch(int32(i)), r.sketch) {
					t.Fatalf("%s, live %d: document %d (doc %d): sketch %x (known %v), its record's %x", stage, live, i, n, x.sketch(int32(i)), x.sketched[i], r.sketch)
				}
				if ms := x.members(int32(i)); x.rep[i] == int32(i) && len(ms) > 1 {
					inGroups += len(ms)
					for _, m := range ms {
						if recs[nums[m]].fp != r.fp {
							t.Fatalf("%s, live %d: document %d in the group of %d, another set", stage, live, m, i)
						}
					}
				}
			}
			if inGroups < 100 || !gaps && inGroups < 1000 {
				t.Fatalf("%s, live %d: %d documents in groups of identical sets, of the 1,200 put", stage, live, inGroups)
			}
			clear(firstOf)
		}
	}
	check("dense", false)
	var gone []string
	for i := 0; i < 6000; i += 3 {
		gone = append(gone, fmt.Sprintf("d%d", i))
	}
	if _, err := d.DeleteIDs(gone, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	batch = batch[:0]
	for i := 1; i < 6000; i += 7 {
		batch = append(batch, Doc{ID: fmt.Sprintf("d%d", i), Text: text()})
	}
	put(batch, 0)
	check("with gaps", true)
}

// Ensure that a panic in the body of a Pairs or PairGroups loop reaches
// the caller's recover, as it does for All and Scan, with the run's
// workers stopped: they went on reading the set file the unwinding
// closed, and one panicked on it, ending the process (an API review,
// API-1). The oracle: the panic recovered, the goroutines back to their
// count before the run, and a later run's pairs equal to a run's before.
func TestPairsBodyPanicRecovered(t *testing.T) {
	d, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, tries := 3000, 5
	if testing.Short() {
		n, tries = 1000, 2 // NB: the race step runs -short: 100 s at 3000
	}
	var docs []Doc
	for i := range n {
		docs = append(docs, Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("common words shared by many documents here number %d and %d more %d", i%50, i, i/7)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		for _, err := range d.Pairs(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	want := count()
	if want < n/3 {
		t.Fatalf("the fixture has %d pairs: too few to keep the workers busy", want)
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	for _, groups := range []bool{false, true} {
		for range tries {
			got := func() (r any) {
				defer func() { r = recover() }()
				if groups {
					for range d.PairGroups(context.Background(), nil) {
						panic("a bug in the loop body")
					}
				} else {
					for range d.Pairs(context.Background(), nil) {
						panic("a bug in the loop body")
					}
				}
				return nil
			}()
			if got != "a bug in the loop body" {
				t.Fatalf("groups %v: recovered %v, want the body's panic", groups, got)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the panics, %d before", n, before)
	}
	if got := count(); got != want {
		t.Errorf("a run after the panics found %d pairs, %d before", got, want)
	}
}
