package db

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

// Ensure that a new database signs with fss, the default, that one made
// with oph (every database made before fss) keeps oph when reopened with
// default options, and that asking an oph database for another scheme is
// a MismatchError. The oracle is the estimate of two signatures computed
// outside the database with the scheme expected: a query's Estimate is the
// agreement of the query's and the document's signatures, so it names the
// scheme both were made with.
func TestSchemeOfNewAndExistingDatabases(t *testing.T) {
	const a = "the quick brown fox jumps over the lazy dog"
	const b = "the quick brown fox jumped over the lazy dogs"
	estimate := func(sc minhash.Scheme) float64 {
		h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{Scheme: sc})
		if err != nil {
			t.Fatal(err)
		}
		return minhash.Estimate(h.Signature(nil, a), h.Signature(nil, b))
	}
	if estimate(minhash.SchemeFSS) == estimate(minhash.SchemeOPH) {
		t.Fatal("the two texts do not tell the schemes apart; pick others")
	}
	for _, c := range []struct {
		name   string
		create minhash.Scheme
		want   minhash.Scheme
	}{{"default", 0, minhash.SchemeFSS}, {"oph", minhash.SchemeOPH, minhash.SchemeOPH}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, dir, &Options{Scheme: c.create, Threshold: 0.3})
			if err := d.Put(Doc{ID: "a", Text: a}, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, dir, nil)
			defer d.Close()
			if got := d.Params().Scheme; got != c.want {
				t.Fatalf("reopened scheme %v, want %v", got, c.want)
			}
			res, err := d.Query(context.Background(), b, &QueryOptions{Threshold: 0.01, EstimateOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 1 || res.Matches[0].Estimate != estimate(c.want) {
				t.Fatalf("query matches %+v, want estimate %v (%v)", res.Matches, estimate(c.want), c.want)
			}
		})
	}
	dir := t.TempDir()
	mustOpen(t, dir, &Options{Scheme: minhash.SchemeOPH}).Close()
	var mm *MismatchError
	if _, err := Open(dir, &Options{Scheme: minhash.SchemeClassic}); !errors.As(err, &mm) || mm.Field != "Scheme" {
		t.Fatalf("opening an oph database as classic: %v, want a Scheme MismatchError", err)
	}
}

// Ensure that MeasureRecall reports the S-curve's P(t), computed here by
// hand, beside the short-document measurement, which for fss meets the
// curve and for oph falls below it; that Stats carries it; and that a
// threshold outside (0, 1] is ErrInvalidOptions.
func TestMeasureRecall(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.5})
	defer d.Close()
	p := d.Params()
	want := 1 - math.Pow(1-math.Pow(0.5, float64(p.Bands.R)), float64(p.Bands.B))
	fss, err := MeasureRecall(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fss.Curve-want) > 1e-12 || fss.Threshold != 0.5 || fss.ShortDocs < fss.Curve {
		t.Errorf("fss: %+v, curve by hand %v", fss, want)
	}
	p.Scheme = minhash.SchemeOPH
	oph, err := MeasureRecall(p, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if !(oph.ShortDocs < oph.Curve && oph.MissRatio > 1) {
		t.Errorf("oph: %+v", oph)
	}
	st, err := d.Stats(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Recall != fss {
		t.Errorf("Stats.Recall = %+v, MeasureRecall %+v", st.Recall, fss)
	}
	// Signatures above MaxMeasuredNumPerm are not measured (OPH would take
	// minutes at 8,192 values): the curve stands in, and says so.
	big := p
	big.NumPerm, big.Bands = minhash.MaxNumPerm, bands.Params{B: 398, R: 20}
	if r, err := MeasureRecall(big, 0.8); err != nil || r.Measured || r.ShortDocs != r.Curve || !math.IsNaN(r.MissRatio) {
		t.Errorf("8,192 values: %+v, %v", r, err)
	}
	if !fss.Measured || !oph.Measured {
		t.Error("128-value estimates are not marked measured")
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := MeasureRecall(p, bad); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MeasureRecall(t=%v) = %v, want ErrInvalidOptions", bad, err)
		}
	}
	// Parameters no index could have: no bands, or more rows than values.
	for _, bad := range []Params{{}, {Threshold: 0.8, NumPerm: 16, Bands: bands.Params{B: 4, R: 5}}} {
		if _, err := MeasureRecall(bad, 0.8); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MeasureRecall(%+v) = %v, want ErrInvalidOptions", bad, err)
		}
	}
}

// Ensure that the recall measurement Stats makes is made once for every
// caller that asks at once (a count of measurements), that a Stats whose
// context ends while it waits for it returns at once with the context's
// error, and that Close does not wait for it (a measurement held back by
// a hook, which the test releases only after both returned): eight first
// Stats each made theirs, 0.2 s of a core each, with no look at their
// deadlines, and Close waited for all of them (an embedder's review, E1).
func TestStatsRecallMeasuredOnce(t *testing.T) {
	// NB: parameters no other test measures, so that nothing is
	// remembered for them yet in this process.
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.61, NumPerm: 96, Bands: 24, Rows: 4})
	p := d.Params()
	measured.Delete(recallKey{p.Scheme, p.NumPerm, p.Bands, p.Threshold}) // NB: -count 2
	var made atomic.Int32
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer func() { measureHook = nil }()
	defer releaseOnce() // NB: first, on a failure: the measurement must not block for good
	measureHook = func() {
		made.Add(1)
		<-release
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := d.Stats(ctx, 0)
			errs <- err
		}()
	}
	for deadline := time.Now().Add(time.Minute); made.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no measurement after a minute")
		}
	}
	cancel()
	for range 8 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Stats cancelled while the measurement runs: %v, want context.Canceled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Stats did not return in 30 s after its context was cancelled: it waits for the measurement")
		}
	}
	// NB: a Stats of the handle waits too; Close cancels it.
	go func() {
		_, err := d.Stats(context.Background(), 0)
		errs <- err
	}()
	for deadline := time.Now().Add(time.Minute); d.liveOps() == 0 && len(errs) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no Stats under way after a minute")
		}
	}
	closeWithoutWaiting(t, d, "the measurement")
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Fatalf("Stats while Close ran: %v, want ErrClosed", err)
	}
	releaseOnce()
	r, err := MeasureRecall(p, 0)
	if err != nil || !r.Measured {
		t.Fatalf("after the measurement: %+v, %v", r, err)
	}
	if n := made.Load(); n != 1 {
		t.Fatalf("%d measurements made for one set of parameters, want 1", n)
	}
}

// liveOps is the number of operation contexts in flight (opCtx).
func (db *DB) liveOps() int {
	db.opsMu.Lock()
	defer db.opsMu.Unlock()
	return len(db.ops)
}

// Ensure that an index made with NormalizeNFKC keeps it (a reopen with no
// options shingles as its creation did) and finds a text's other forms at
// Jaccard 1, where a default index finds none of them at 0.8: the forms a
// quality review found apart (combining accents, full-width letters,
// ligatures, a zero-width space). The oracle: minhash's own Jaccard of the
// sets under each normalization.
func TestNFKCIndex(t *testing.T) {
	ctx := context.Background()
	base := "The café on the corner serves a déjà-vu of fine coffee every morning"
	forms := []Doc{
		{ID: "nfd", Text: "The cafe\u0301 on the corner serves a de\u0301ja\u0300-vu of \ufb01ne coffee every morning"},
		{ID: "wide", Text: "Ｔｈｅ ｃａｆé ｏｎ ｔｈｅ ｃｏｒｎｅｒ ｓｅｒｖｅｓ ａ ｄéｊà-ｖｕ ｏｆ ｆｉｎｅ ｃｏｆｆｅｅ ｅｖｅｒｙ ｍｏｒｎｉｎｇ"},
		{ID: "zwsp", Text: "The café on the cor\u200bner serves a déjà-vu of fine cof\u200bfee every morning"},
	}
	for _, c := range []struct {
		n    minhash.Normalization
		want int // matches of the base text at 0.8
	}{{minhash.NormalizeNFKC, len(forms)}, {minhash.NormalizeFold, 0}} {
		dir := t.TempDir()
		d := mustOpen(t, dir, &Options{Normalization: c.n})
		if _, err := d.PutBatch(forms, nil); err != nil {
			t.Fatal(err)
		}
		d.Close()
		d = mustOpen(t, dir, &Options{MustExist: true})
		if got := d.Params().Normalization; got != c.n {
			t.Fatalf("reopened, the index's normalization is %v, want %v", got, c.n)
		}
		res, err := d.Query(ctx, base, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := minhash.NewHasher(minhash.Options{Normalization: c.n}, minhash.SketchOptions{})
		a, _ := h.Document(nil, nil, base)
		for _, m := range res.Matches {
			i := slices.IndexFunc(forms, func(f Doc) bool { return f.ID == m.ID })
			b, _ := h.Document(nil, nil, forms[i].Text)
			if want := minhash.Jaccard(a, b); m.Jaccard != want {
				t.Errorf("%v: %s at %v, want %v", c.n, m.ID, m.Jaccard, want)
			}
		}
		if len(res.Matches) != c.want {
			t.Errorf("%v: %d matches of the base text (%+v), want %d", c.n, len(res.Matches), res.Matches, c.want)
		}
		d.Close()
	}
}

// Ensure that measurements at thresholds other than the parameters' own
// (what a server's GET /v1/tune asks) are made once and remembered, run
// one at a time, and that one whose caller gave up before its turn is
// not made: each request made a measurement of its own, uncached and
// not cancellable (a fuzz campaign, F4). The answers are checked against
// measurements made directly (measureRecallNow).
func TestMeasureRecallOtherThresholds(t *testing.T) {
	// NB: parameters no other test measures.
	p := Params{Scheme: minhash.SchemeFSS, NumPerm: 80, Bands: bands.Params{B: 20, R: 4}, Threshold: 0.7}
	ts := []float64{0.31, 0.47, 0.53}
	for _, x := range ts {
		measured.Delete(recallKey{p.Scheme, p.NumPerm, p.Bands, x}) // NB: -count 2
	}
	var made atomic.Int32
	entered := make(chan float64, 8)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer func() { measureHook = nil }()
	defer releaseOnce()
	var current atomic.Value
	measureHook = func() {
		made.Add(1)
		entered <- current.Load().(float64)
		<-release
	}
	type answer struct {
		e   RecallEstimate
		err error
	}
	ask := func(ctx context.Context, x float64) chan answer {
		c := make(chan answer, 1)
		go func() {
			e, err := MeasureRecallContext(ctx, p, x)
			c <- answer{e, err}
		}()
		return c
	}
	current.Store(ts[0])
	first := ask(context.Background(), ts[0])
	if x := <-entered; x != ts[0] {
		t.Fatalf("measured %v first, want %v", x, ts[0])
	}
	// NB: while the first runs, a second threshold waits its turn; its
	// caller gives up, and it is not made once the first is done.
	ctx, cancel := context.WithCancel(context.Background())
	second := ask(ctx, ts[1])
	time.Sleep(50 * time.Millisecond)
	if n := made.Load(); n != 1 {
		t.Fatalf("%d measurements at once, want 1", n)
	}
	cancel()
	select {
	case a := <-second:
		if !errors.Is(a.err, context.Canceled) {
			t.Fatalf("a measurement given up: %v, want context.Canceled", a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a caller that gave up still waits after 30 s")
	}
	releaseOnce()
	a := <-first
	want, err := measureRecallNow(p.Scheme, p.NumPerm, p.Bands, ts[0])
	if a.err != nil || err != nil || a.e.ShortDocs != want.ShortDocs || !a.e.Measured {
		t.Fatalf("at %v: %+v, %v; measured directly %+v, %v", ts[0], a.e, a.err, want, err)
	}
	// NB: the slot is free once the dropped flight had its turn.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := measured.Load(recallKey{p.Scheme, p.NumPerm, p.Bands, ts[1]}); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the measurement given up is still under way, or was kept, after 30 s")
		}
	}
	if n := made.Load(); n != 1 {
		t.Fatalf("%d measurements, want 1: the one given up was made", n)
	}
	// NB: remembered: asked again, no measurement. A nil context is
	// context.Background() (EMB-3: it panicked).
	//lint:ignore SA1012 a nil context is what this checks
	if again, err := MeasureRecallContext(nil, p, ts[0]); err != nil || again != a.e {
		t.Fatalf("asked again: %+v, %v; want %+v", again, err, a.e)
	}
	for _, x := range ts[1:] {
		current.Store(x)
		e, err := MeasureRecallContext(context.Background(), p, x)
		<-entered
		want, werr := measureRecallNow(p.Scheme, p.NumPerm, p.Bands, x)
		if err != nil || werr != nil || e.ShortDocs != want.ShortDocs || e.Curve != want.Curve {
			t.Fatalf("at %v: %+v, %v; measured directly %+v, %v", x, e, err, want, werr)
		}
	}
	if n := made.Load(); n != 3 {
		t.Fatalf("%d measurements, want 3 (one a threshold)", n)
	}
}
