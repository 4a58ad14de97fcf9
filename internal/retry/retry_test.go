package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

var (
	errPassing = errors.New("a failover")
	errFinal   = errors.New("a refused password")
)

// tries is a function that fails with errs in turn, then succeeds, and
// counts its calls.
type tries struct {
	errs  []error
	calls int
}

func (t *tries) f() error {
	t.calls++
	if t.calls <= len(t.errs) {
		return t.errs[t.calls-1]
	}
	return nil
}

func policy(limit time.Duration, waits *[]time.Duration) Policy {
	return Policy{First: time.Millisecond, Max: 4 * time.Millisecond, Limit: limit,
		Again:   func(err error) bool { return errors.Is(err, errPassing) },
		Waiting: func(_ error, w time.Duration) { *waits = append(*waits, w) },
	}
}

// Ensure that Do tries again after each passing failure, waiting twice as
// long each time up to Max, and returns nil once a try succeeds.
func TestDoTriesAgain(t *testing.T) {
	var waits []time.Duration
	tr := &tries{errs: []error{errPassing, errPassing, errPassing, errPassing}}
	if err := Do(context.Background(), policy(time.Minute, &waits), tr.f); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{1, 2, 4, 4}; tr.calls != 5 || !slices.Equal(waits, mul(want, time.Millisecond)) {
		t.Fatalf("%d calls, waits %v; want 5 calls, waits %v ms", tr.calls, waits, want)
	}
}

func mul(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d * unit
	}
	return out
}

// Ensure that an error Again refuses ends Do at once, as it is.
func TestDoStopsAtAFinalError(t *testing.T) {
	var waits []time.Duration
	tr := &tries{errs: []error{errPassing, errFinal, errPassing}}
	if err := Do(context.Background(), policy(time.Minute, &waits), tr.f); err != errFinal || tr.calls != 2 || len(waits) != 1 {
		t.Fatalf("%v after %d calls and %d waits; want the final error after 2 calls, 1 wait", err, tr.calls, len(waits))
	}
}

// Ensure that Do gives up, with a *GaveUp of the last try's error, before
// a wait that would end past Limit.
func TestDoGivesUpAtTheLimit(t *testing.T) {
	var waits []time.Duration
	tr := &tries{errs: slices.Repeat([]error{errPassing}, 1000)}
	limit := 30 * time.Millisecond
	start := time.Now()
	err := Do(context.Background(), policy(limit, &waits), tr.f)
	took := time.Since(start)
	// NB: g.After may pass the limit by what the last timer overshot (a
	// loaded machine's: 33.6 ms of 30): the waits Do planned may not
	// (below), and the whole call stays near the limit.
	var g *GaveUp
	if !errors.As(err, &g) || !errors.Is(err, errPassing) || g.After > took || took > limit+time.Second {
		t.Fatalf("%v (%+v) after %v; want a GaveUp of the passing error within about %v", err, g, took, limit)
	}
	var sum time.Duration
	for _, w := range waits {
		sum += w
	}
	if sum > limit || tr.calls != len(waits)+1 {
		t.Fatalf("waited %v over %d waits, %d calls: past the limit %v, or a call without its wait", sum, len(waits), tr.calls, limit)
	}
	// NB: and GaveUp.After counts the waits it made (a timer does not end
	// early): After past took, above, could not fail.
	if g.After < sum {
		t.Fatalf("GaveUp after %v, less than the %v it waited", g.After, sum)
	}
}

// Ensure that a context ended while Do waits ends it with an
// *Interrupted that holds the context's cause and the try's error, and
// that one ended before the first try lets that try run once.
func TestDoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var waits []time.Duration
	p := policy(3*time.Hour, &waits)
	p.First, p.Max = time.Hour, time.Hour
	p.Waiting = func(error, time.Duration) { cancel() }
	tr := &tries{errs: []error{errPassing, errPassing}}
	err := Do(ctx, p, tr.f)
	var in *Interrupted
	if !errors.As(err, &in) || !errors.Is(err, context.Canceled) || !errors.Is(err, errPassing) || tr.calls != 1 {
		t.Fatalf("%v after %d calls; want an Interrupted of Canceled and the try's error, after 1 call", err, tr.calls)
	}
	tr = &tries{errs: []error{errPassing}}
	if err := Do(ctx, p, tr.f); !errors.As(err, &in) || tr.calls != 1 {
		t.Fatalf("an ended context: %v after %d calls", err, tr.calls)
	}
}
