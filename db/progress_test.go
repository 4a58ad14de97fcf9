package db

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lshdb/lshdb/codec"
)

// progressLog records the reports of a WithProgress context.
type progressLog struct {
	mu  sync.Mutex
	all []Progress
}

func (l *progressLog) ctx() context.Context {
	return WithProgress(context.Background(), func(p Progress) {
		l.mu.Lock()
		l.all = append(l.all, p)
		l.mu.Unlock()
	})
}

// check verifies the reports: phases in step order from 1, each ending
// with Done = Total, Done never going back within a phase nor past a
// known Total; it returns the last report of each phase by name.
func (l *progressLog) check(t *testing.T, what string, steps int) map[string]Progress {
	t.Helper()
	ends := map[string]Progress{}
	var cur Progress
	for i, p := range l.all {
		switch {
		case p.Steps != steps:
			t.Fatalf("%s: report %d %+v: %d steps, want %d", what, i, p, p.Steps, steps)
		case p.Phase != cur.Phase:
			if cur.Phase != "" && cur.Done != cur.Total {
				t.Fatalf("%s: phase %q ended at %d of %d", what, cur.Phase, cur.Done, cur.Total)
			}
			if p.Step != cur.Step+1 {
				t.Fatalf("%s: phase %q is step %d after step %d", what, p.Phase, p.Step, cur.Step)
			}
		case p.Done < cur.Done:
			t.Fatalf("%s: %q went back from %d to %d", what, p.Phase, cur.Done, p.Done)
		}
		cur = p
		ends[p.Phase] = p
	}
	if cur.Step != steps || cur.Done != cur.Total {
		t.Fatalf("%s: the last report %+v is not the end of step %d", what, cur, steps)
	}
	return ends
}

// Ensure that Pairs, Clusters, ClustersFrom, Check and Stats report their
// phases through WithProgress, in order, each reaching its total: the
// documents phase counts every stored document, the posting-list phases
// every band (oracles: Count and the banding); the verification phase
// counts the candidate pairs PairsStats reports; and that the results are
// those of a call without a reporter.
func TestProgressReports(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	var docs []Doc
	for i := range 1500 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("document %d of a test corpus, with words %d %d %d", i%400, i%13, i%17, i%400)})
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	n, _ := d.Count()
	bandsN := int64(d.Params().Bands.B) * 64 // sixty-fourths of a band
	var l progressLog
	var st PairsStats
	var got, want int
	for _, err := range d.Pairs(l.ctx(), &PairsOptions{Stats: &st}) {
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	for _, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		want++
	}
	if got != want || want == 0 {
		t.Fatalf("pairs with a reporter %d, without %d", got, want)
	}
	ends := l.check(t, "Pairs", 4)
	if e := ends["reading documents"]; e.Total != int64(n) {
		t.Errorf("documents phase %+v, want %d", e, n)
	}
	if e := ends["reading posting lists (64ths of bands)"]; e.Total != bandsN {
		t.Errorf("bands phase %+v, want %d", e, bandsN)
	}
	// NB: a format 5 index holds every sketch, so every pair the sketches
	// rule out is ruled out before the sort: the phase counts the others.
	if e := ends["verifying candidate pairs"]; e.Total != st.Candidates-st.Filtered || e.Done != e.Total {
		t.Errorf("verification phase %+v, want %d candidates less %d ruled out", e, st.Candidates, st.Filtered)
	}
	l = progressLog{}
	cs, err := d.Clusters(l.ctx(), nil)
	if err != nil || len(cs) == 0 {
		t.Fatalf("clusters %d, %v", len(cs), err)
	}
	// NB: a fifth step, the clustering itself (it showed as the pairs'
	// verification at 100% for the last half of a run). It counts the
	// distinct sets made into clusters (S10-6: it ran 1.5 minutes without
	// a count), here the distinct texts of the clusters' members.
	text := map[string]string{}
	for _, doc := range docs {
		text[doc.ID] = doc.Text
	}
	sets := map[string]bool{}
	for _, c := range cs {
		for _, id := range c.IDs {
			sets[text[id]] = true
		}
	}
	if e := l.check(t, "Clusters", 5)["making clusters"]; e.Step != 5 || e.Total != int64(len(sets)) {
		t.Errorf("Clusters' last phase %+v: want step 5, making clusters, of the %d distinct sets in clusters", e, len(sets))
	}
	// NB: the total is said before the work, not only at the end (which
	// counts what was done): a bar shows it.
	early := func(what string) {
		t.Helper()
		if !slices.ContainsFunc(l.all, func(p Progress) bool {
			return p.Phase == "making clusters" && p.Total == int64(len(sets)) && p.Done == 0
		}) {
			t.Errorf("%s: no report of making clusters with its total %d before its work: %+v", what, len(sets), l.all)
		}
	}
	early("Clusters")
	l = progressLog{}
	if _, err := d.ClustersFrom(l.ctx(), d.Pairs(context.Background(), nil), nil); err != nil {
		t.Fatal(err)
	}
	ends = l.check(t, "ClustersFrom", 3)
	if e := ends["reading pairs"]; e.Total != int64(want) {
		t.Errorf("ClustersFrom read %d pairs, want %d", e.Total, want)
	}
	if e := ends["making clusters"]; e.Total != int64(len(sets)) {
		t.Errorf("ClustersFrom's last phase %+v: want the %d distinct sets in clusters", e, len(sets))
	}
	early("ClustersFrom")
	l = progressLog{}
	if _, err := d.Clusters(l.ctx(), &PairsOptions{Mode: Centers}); err != nil {
		t.Fatal(err)
	}
	if e := l.check(t, "Clusters", 5)["making clusters"]; e.Total < int64(len(sets)) {
		t.Errorf("Clusters' centers: the last phase %+v, want the %d or more distinct sets with a pair", e, len(sets))
	}
	l = progressLog{}
	if rep, err := d.Check(l.ctx()); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
	ends = l.check(t, "Check", 3)
	if ends["checking documents"].Total != int64(n) || ends["checking ids"].Total != int64(n) || ends["checking posting lists (64ths of bands)"].Total != bandsN {
		t.Errorf("check phases %+v", ends)
	}
	l = progressLog{}
	if _, err := d.Stats(l.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	ends = l.check(t, "Stats", 5)
	if ends["sizing docs"].Total != int64(n) || ends["reading posting lists (64ths of bands)"].Total != bandsN {
		t.Errorf("stats phases %+v", ends)
	}
	// Buckets in three steps: the lists read, the hottest ranked, their
	// samples read (SH-2: it was silent after the first).
	l = progressLog{}
	bs, err := d.Buckets(l.ctx(), -1, 3)
	if err != nil {
		t.Fatal(err)
	}
	ends = l.check(t, "Buckets", 3)
	if ends["reading posting lists (64ths of bands)"].Total != bandsN || ends["reading the hottest lists' samples"].Total != int64(len(bs.Hottest)) {
		t.Errorf("buckets phases %+v", ends)
	}
}

// Ensure that Load reports its four stages through WithProgress, in
// order, each reaching its total: every document read (the input's
// length), every document written resolved (the input less the empty
// ones skipped), every band's posting lists written; and that what it
// stored is what a model of the input says (the last of a repeated id,
// the replaced ones counted).
func TestLoadProgress(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	text := func(i, v int) string {
		return fmt.Sprintf("load progress document %d version %d with words %d %d", i, v, i%7, i%11)
	}
	var stored []Doc
	for i := range 1000 {
		stored = append(stored, Doc{ID: fmt.Sprintf("d%04d", i), Text: text(i, 0)})
	}
	if _, err := d.PutBatch(stored, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	// 3,000 documents: ids d0500..d3499, of which d0500..d0999 are
	// stored (replaced), and d3000..d3499 come twice (the second wins),
	// and one empty document (skipped).
	var in []Doc
	for i := 500; i < 3500; i++ {
		in = append(in, Doc{ID: fmt.Sprintf("d%04d", i), Text: text(i, 1)})
	}
	for i := 3000; i < 3500; i++ {
		in = append(in, Doc{ID: fmt.Sprintf("d%04d", i), Text: text(i, 2)})
	}
	in = append(in, Doc{ID: "empty", Text: ""})
	var l progressLog
	res, err := d.Load(l.ctx(), seqOf(in), &LoadOptions{SkipEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 3000 || res.Replaced != 500 || res.Repeated != 500 || len(res.SkippedEmpty) != 1 {
		t.Fatalf("load %+v, want 3000 stored, 500 replaced, 500 repeated, 1 empty", res)
	}
	ends := l.check(t, "Load", 4)
	if e := ends["reading documents"]; e.Total != int64(len(in)) {
		t.Errorf("reading phase %+v, want %d documents", e, len(in))
	}
	if e := ends["resolving ids (documents)"]; e.Total != int64(len(in)-1) {
		t.Errorf("ids phase %+v, want %d documents", e, len(in)-1)
	}
	if e := ends["writing tables (64ths of bands)"]; e.Total != int64(d.Params().Bands.B)*64 {
		t.Errorf("tables phase %+v, want 64 parts of each of %d bands", e, d.Params().Bands.B)
	}
	if e := ends["ingesting tables"]; e.Total == 0 {
		t.Errorf("ingest phase %+v: no tables", e)
	}
	for _, c := range []struct {
		id   string
		want string
	}{{"d0000", text(0, 0)}, {"d0700", text(700, 1)}, {"d2000", text(2000, 1)}, {"d3200", text(3200, 2)}} {
		doc, err := d.Get(c.id)
		if err != nil || doc.Text != c.want {
			t.Errorf("%s: %q, %v; want %q", c.id, doc.Text, err, c.want)
		}
	}
}

// Ensure that WithProgress with a nil function reports nothing and
// breaks nothing (it was a nil dereference in every call given it), even
// inside a context that reports to another function.
func TestWithProgressNil(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	outer := 0
	ctx := WithProgress(WithProgress(context.Background(), func(Progress) { outer++ }), nil)
	if _, err := d.Load(ctx, seqOf([]Doc{{ID: "a", Text: "a document loaded"}, {ID: "b", Text: "a document loaded too"}}), nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := d.Check(ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
	for _, err := range d.Pairs(ctx, &PairsOptions{Threshold: 0.5}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if outer != 0 {
		t.Errorf("the outer function was called %d times under a nil one", outer)
	}
}

// Ensure that the pairs of identical documents count in the last phase of
// Pairs (with and without a limit), PairGroups and Clusters: its total is
// the candidates verified plus those pairs, and it reaches it; 100,000
// copies of one text, 5e9 pairs, were written while the progress showed
// the sets' phase near its end (a review of skewed corpora, K4). The
// oracles: PairsStats, and the pairs of the copies counted by hand.
func TestProgressCountsIdenticalPairs(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	var docs []Doc
	for i := range 300 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("document %d of a test corpus, with words %d %d", i, i%13, i%17)})
	}
	for i := range 40 {
		docs = append(docs, Doc{ID: fmt.Sprintf("copy%02d", i), Text: "one text copied forty times over, word for word, into the corpus"})
	}
	for i := range 5 {
		docs = append(docs, Doc{ID: fmt.Sprintf("other%d", i), Text: "another text, copied five times, which no other resembles at all"})
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	const identical = 40*39/2 + 5*4/2
	const phase = "pairs of identical documents then verifying candidate pairs"
	// NB: the work counted is read from the reporter at the run's end:
	// the phase's last report is its total whatever was counted (a
	// read-through's R1: with a limit, a group's pairs were counted after
	// the limit cut it, and the bar stalled).
	for _, limit := range []int{0, 7} {
		var l progressLog
		var st PairsStats
		ctx := l.ctx()
		for _, err := range d.Pairs(ctx, &PairsOptions{Stats: &st, Limit: limit}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		e := l.check(t, "Pairs", 4)[phase]
		if st.IdenticalPairs != identical || e.Total != st.Candidates-st.Filtered+identical {
			t.Errorf("limit %d: the last phase %+v, want %d candidates less %d ruled out, plus %d pairs of copies (stats: %d)", limit, e, st.Candidates, st.Filtered, identical, st.IdenticalPairs)
		}
		if done := progressOf(ctx).done.Load(); done != e.Total {
			t.Errorf("limit %d: the last phase counted %d of its %d", limit, done, e.Total)
		}
	}
	var l progressLog
	var st PairsStats
	ctx := l.ctx()
	for _, err := range d.PairGroups(ctx, &PairsOptions{Stats: &st}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if e := l.check(t, "PairGroups", 4)[phase]; e.Total != st.Candidates-st.Filtered+identical || progressOf(ctx).done.Load() != e.Total {
		t.Errorf("PairGroups' last phase %+v, counted %d", e, progressOf(ctx).done.Load())
	}
	l = progressLog{}
	if _, err := d.Clusters(l.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	if e := l.check(t, "Clusters", 5)[phase]; e.Total < identical {
		t.Errorf("Clusters' pairs phase %+v", e)
	}
}

// Ensure that a scan of posting lists counts sixty-fourths of bands as it
// goes, by the top six bits of each list's bucket (a band was the unit,
// and at 10 million documents the count stood still a band at a time:
// S10-6): the counts here are worked out by hand from the keys.
func TestBandCounterParts(t *testing.T) {
	p := &progress{fn: func(Progress) {}}
	p.phase(1, 1, "scan", 16*64)
	key := func(band int, bucket uint64) []byte { return codec.AppendPostingKey(nil, band, bucket) }
	c := newBandCounter(p, 0)
	for _, s := range []struct {
		k    []byte
		want int64
	}{
		{key(0, 0), 0},
		{key(0, 0x03ff_ffff), 0},  // still the first 64th
		{key(0, 0x0400_0000), 1},  // the second
		{key(0, 0x8000_0000), 32}, // half the band
		{key(0, 0xffff_ffff), 63},
		{key(3, 0x4000_0000), 3*64 + 16},                     // bands 1 and 2 had no list
		{key(3, 0x2000_0000), 3*64 + 16},                     // never back
		{[]byte{codec.PrefixPosting, 0}, 3*64 + 16},          // too short: not counted
		{[]byte{'d', 0, 9, 0xff, 0, 0, 0}, 3*64 + 16},        // not a posting list
		{append(key(5, 0), 0, 0, 0, 0), 5 * 64},              // a format 1 key: a 64-bit bucket
		{append(key(5, 0xc000_0000), 1, 2, 3, 4), 5*64 + 48}, // its top bits count
	} {
		c.key(s.k)
		if got := p.done.Load(); got != s.want {
			t.Fatalf("after key %x: %d counted, want %d", s.k, got, s.want)
		}
	}
	c.upTo(8) // the scan's range ends at band 8
	if got := p.done.Load(); got != 8*64 {
		t.Fatalf("up to band 8: %d, want %d", got, 8*64)
	}
	// A second scan, of bands 8 to 16, on another goroutine in Pairs.
	c2 := newBandCounter(p, 8)
	c2.at(8, 0x0800_0000)
	if got := p.done.Load(); got != 8*64+2 {
		t.Fatalf("second scan's first list: %d, want %d", got, 8*64+2)
	}
	c2.at(15, 0xffff_ffff)
	if got := p.done.Load(); got != 15*64+63 {
		t.Fatalf("second scan's last list: %d, want %d", got, 15*64+63)
	}
	c2.upTo(16)
	if got := p.done.Load(); got != 16*64 {
		t.Fatalf("both scans done: %d, want %d", got, 16*64)
	}
	// Without a reporter, nothing is counted and nothing fails.
	var none bandCounter
	none.key(key(1, 1))
	none.upTo(4)
}

// Ensure that Clusters on Redis numbers its phases as one run of four
// steps, each reaching its total: its pairs run, then the three of
// ClustersFrom (they went 1/1, then 1/3 to 3/3), and that the clusters
// are those of ClustersFrom given the pairs of Pairs (the oracle).
func TestRedisClustersProgress(t *testing.T) {
	d := mustOpen(t, redisURL(t), nil)
	defer d.Close()
	var docs []Doc
	for i := range 300 {
		// NB: 60 texts, each five times, every other copy with its last
		// word changed: clusters of near and identical copies.
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("document %d of a test corpus, a body of words long enough that one word changed at its end keeps it near the others: alpha beta gamma delta epsilon %d", i%60, i%2)})
	}
	if _, err := d.PutBatch(docs, &WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	var l progressLog
	cs, err := d.Clusters(l.ctx(), nil)
	if err != nil || len(cs) == 0 {
		t.Fatalf("clusters %d, %v", len(cs), err)
	}
	ends := l.check(t, "Clusters on Redis", 4)
	for step, phase := range map[int]string{1: "verifying candidates", 2: "reading documents", 3: "reading pairs", 4: "making clusters"} {
		if e, ok := ends[phase]; !ok || e.Step != step {
			t.Errorf("phase %q: %+v, want step %d of 4", phase, e, step)
		}
	}
	want, err := d.ClustersFrom(context.Background(), d.Pairs(context.Background(), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(cs, want, func(a, b Cluster) bool { return slices.Equal(a.IDs, b.IDs) }) {
		t.Errorf("Clusters on Redis %v, ClustersFrom of its pairs %v", cs, want)
	}
}
