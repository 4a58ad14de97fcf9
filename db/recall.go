package db

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/internal/accuracy"
	"github.com/lshdb/lshdb/minhash"
)

// RecallEstimate is the probability that a pair of documents at a given
// Jaccard similarity becomes a candidate (shares a band), two ways.
type RecallEstimate struct {
	// Threshold is the similarity it is for.
	Threshold float64
	// Curve is the banding's S-curve, 1 − (1 − t^r)^b: exact when the
	// signature's values behave as independent MinHash values, as they do
	// for documents of a few hundred shingles or more with every scheme.
	Curve float64
	// ShortDocs is measured for short documents (8 to 100 shingles, a few
	// words to a few sentences) by sketching random set pairs at about
	// the threshold with the index's scheme: the curve's miss rate scaled
	// by the measured one. Near the banding's threshold fss meets or beats
	// the curve there and classic meets it; oph (indexes made before fss)
	// falls short of it. Far below the threshold, where P is small, fss
	// sits slightly under the curve (a full band is a little rarer than
	// with independent values).
	ShortDocs float64
	// MissRatio is the measured misses over the curve's on short
	// documents (below 1: better than the curve). NaN when the curve
	// expects too few misses to measure, or when not Measured.
	MissRatio float64
	// Measured is false for signatures of more than MaxMeasuredNumPerm
	// values, whose short-document measurement would take minutes (OPH
	// densifies a short set's empty bins in time that grows with k²);
	// ShortDocs is then the curve's value.
	Measured bool
}

// MaxMeasuredNumPerm is the largest signature size MeasureRecall
// measures.
const MaxMeasuredNumPerm = 256

// recallTrials is the number of random set pairs per size that
// MeasureRecall sketches for 128-value signatures: 4,000 for each of
// seven sizes, about 0.2 s. Larger signatures get proportionally fewer.
const recallTrials = 4000

// MeasureRecall returns the expected recall at similarity t (0: the
// index's threshold), from the S-curve and as measured on short
// documents. The measurement is seeded, so it is the same on every call
// for the same parameters. It reads nothing from the store.
func MeasureRecall(p Params, t float64) (RecallEstimate, error) {
	return MeasureRecallContext(context.Background(), p, t)
}

// MeasureRecallContext is MeasureRecall, given up when ctx ends (its
// error is ctx's). A measurement takes about 0.2 s of a core for
// 128-value signatures: each is made once for all the callers that ask
// for it at once, on a goroutine of its own, and remembered (at the
// parameters' own threshold always; at most maxRememberedOther others).
// Measurements at a threshold not the parameters' own (a server's GET
// /v1/tune asks at any) run one at a time, and one whose every caller
// gave up before it started is not made.
func MeasureRecallContext(ctx context.Context, p Params, t float64) (RecallEstimate, error) {
	// NB: nil is context.Background(), as in every call of the package:
	// it panicked here (an embedder's review, EMB-3).
	ctx = orBackground(ctx)
	if t == 0 {
		t = p.Threshold
	}
	if !(t > 0 && t <= 1) {
		return RecallEstimate{}, fmt.Errorf("%w: threshold %v is outside (0, 1]", ErrInvalidOptions, t)
	}
	if err := p.Bands.Validate(p.NumPerm); err != nil {
		return RecallEstimate{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return measureRecall(ctx, p.Scheme, p.NumPerm, p.Bands, t, t == p.Threshold)
}

// measured remembers measureRecall's results (seeded, so the same on
// every call): Stats asks each time at an index's threshold, and a
// measurement takes 0.2 s of a core.
var measured sync.Map // recallKey → *recallFlight

// maxRememberedOther bounds the measurements remembered at thresholds
// that are not their parameters' own (about 200 bytes each): a client
// of GET /v1/tune may ask at any, and each would stay.
const maxRememberedOther = 1024

// rememberedOther counts them; otherSlot lets one of them be measured
// at a time. NB: a server answered each GET /v1/tune at a new threshold
// with a measurement of its own, uncached and not cancellable: a client
// asking at many kept every core busy (a fuzz campaign, F4).
var (
	rememberedOther atomic.Int64
	otherSlot       = make(chan struct{}, 1)
)

type recallKey struct {
	scheme minhash.Scheme
	k      int
	b      bands.Params
	t      float64
}

// measureHook, when set (tests), runs before each measurement that
// measureRecall makes.
var measureHook func()

// recallFlight is one measurement, made once for every caller that asks
// for its key: its result once done is closed. waiters counts the
// callers waiting for it.
type recallFlight struct {
	done    chan struct{}
	waiters atomic.Int32
	e       RecallEstimate
	err     error
}

// measureRecall returns the remembered measurement for the key, making it
// if no caller has yet (on a goroutine of its own, which ctx does not
// end), and waiting for it until ctx ends. own says that t is the
// parameters' own threshold (see MeasureRecallContext). NB: one
// measurement, not one a caller: eight first Stats at once each made
// theirs (1.6 CPU-s on a fresh handle), with no look at their deadlines,
// and Close waited for them (an embedder's review, E1).
func measureRecall(ctx context.Context, scheme minhash.Scheme, k int, b bands.Params, t float64, own bool) (RecallEstimate, error) {
	for {
		e, err := measureRecallOnce(ctx, recallKey{scheme, k, b, t}, own)
		if err != errRecallDropped {
			return e, err
		}
		// NB: a flight dropped as this caller came to wait for it.
	}
}

// errRecallDropped is the result of a flight that no caller waited for
// when its turn came (see measureRecallOnce): a caller that came since
// asks again.
var errRecallDropped = errors.New("lshdb: recall measurement dropped")

func measureRecallOnce(ctx context.Context, key recallKey, own bool) (RecallEstimate, error) {
	if v, ok := measured.Load(key); ok {
		return waitFlight(ctx, v.(*recallFlight)) // NB: no flight made for the asking
	}
	f := &recallFlight{done: make(chan struct{})}
	f.waiters.Add(1) // NB: before the goroutine can look
	if v, loaded := measured.LoadOrStore(key, f); loaded {
		return waitFlight(ctx, v.(*recallFlight))
	}
	// keep: remembered once made (always at the parameters' own
	// threshold; the others while there is room).
	keep := own
	if !own {
		if keep = rememberedOther.Add(1) <= maxRememberedOther; !keep {
			rememberedOther.Add(-1)
		}
	}
	forget := func() {
		measured.Delete(key)
		if keep && !own {
			rememberedOther.Add(-1)
		}
	}
	go func() {
		defer close(f.done)
		if !own {
			// NB: one at a time; once its turn comes, a measurement no
			// caller waits for any longer is dropped, not made.
			otherSlot <- struct{}{}
			defer func() { <-otherSlot }()
			if f.waiters.Load() == 0 {
				f.err = errRecallDropped
				forget()
				return
			}
		}
		if measureHook != nil {
			measureHook()
		}
		if f.e, f.err = measureRecallNow(key.scheme, key.k, key.b, key.t); f.err != nil || !keep {
			forget() // NB: not remembered: the next call measures again
		}
	}()
	return waitFlightCounted(ctx, f)
}

// waitFlight returns f's result once it is done, or ctx's error if ctx
// ends first.
func waitFlight(ctx context.Context, f *recallFlight) (RecallEstimate, error) {
	f.waiters.Add(1)
	return waitFlightCounted(ctx, f)
}

// waitFlightCounted is waitFlight for a caller already counted among
// f's waiters.
func waitFlightCounted(ctx context.Context, f *recallFlight) (RecallEstimate, error) {
	defer f.waiters.Add(-1)
	select {
	case <-f.done:
		return f.e, f.err
	case <-ctx.Done():
		return RecallEstimate{}, ctxErr(ctx)
	}
}

func measureRecallNow(scheme minhash.Scheme, k int, b bands.Params, t float64) (RecallEstimate, error) {
	curve := b.Probability(t)
	if k > MaxMeasuredNumPerm {
		return RecallEstimate{Threshold: t, Curve: curve, ShortDocs: curve, MissRatio: math.NaN()}, nil
	}
	trials := recallTrials * minhash.DefaultNumPerm / max(k, minhash.DefaultNumPerm)
	e, err := accuracy.ShortSetRecall(scheme, k, b, t, trials, 0x7ec411)
	if err != nil {
		return RecallEstimate{}, err
	}
	return RecallEstimate{Threshold: t, Curve: curve, ShortDocs: e.AtThreshold, MissRatio: e.MissRatio, Measured: true}, nil
}
