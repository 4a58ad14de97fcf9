// Package retry calls a function again while it fails in a way that a
// later try may get past (a Redis master failing over: the cluster takes
// its node timeout plus an election, seconds), waiting longer after each
// failed try, for up to a limit.
//
// It is the one loop of Open's, Drop's and a load's tries on Redis (package
// db) and of lshdb insert's (cmd/lshdb), which were three copies that had
// drifted apart (a read-through's RT5-5); each caller words its own
// errors from what Do returns.
package retry

import (
	"context"
	"time"
)

// Policy is how Do tries.
type Policy struct {
	// First is the wait after the first failed try, doubled after each
	// later one up to Max.
	First, Max time.Duration
	// Limit ends the tries: no wait is begun that would end past Limit
	// after the first try began.
	Limit time.Duration
	// Again reports whether a try's error may pass on a later try; Do
	// returns any other at once, as it is.
	Again func(error) bool
	// Waiting, when set, is told of each failed try that is to be tried
	// again, before its wait.
	Waiting func(err error, wait time.Duration)
}

// GaveUp is Do's error when the tries reached the policy's Limit: the
// last try's error, and how long the tries took.
type GaveUp struct {
	Err   error
	After time.Duration
}

func (e *GaveUp) Error() string { return e.Err.Error() }
func (e *GaveUp) Unwrap() error { return e.Err }

// Interrupted is Do's error when ctx ended while it waited to try again:
// the context's cause, and the last try's error.
type Interrupted struct {
	Cause, Err error
}

func (e *Interrupted) Error() string { return e.Cause.Error() }

// Unwrap gives both, so that errors.Is finds context.Canceled and the
// backend's error alike.
func (e *Interrupted) Unwrap() []error { return []error{e.Cause, e.Err} }

// Do calls f until it succeeds, fails in a way p.Again refuses, or the
// tries reach p.Limit (a *GaveUp), or ctx ends while it waits (an
// *Interrupted). NB: a try is never cut short by Do: f is given ctx by
// its caller, and bounds itself.
func Do(ctx context.Context, p Policy, f func() error) error {
	start := time.Now()
	wait := p.First
	for {
		err := f()
		if err == nil || !p.Again(err) {
			return err
		}
		if ctx.Err() != nil {
			return &Interrupted{Cause: context.Cause(ctx), Err: err}
		}
		if time.Since(start)+wait > p.Limit {
			return &GaveUp{Err: err, After: time.Since(start)}
		}
		if p.Waiting != nil {
			p.Waiting(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &Interrupted{Cause: context.Cause(ctx), Err: err}
		case <-t.C:
		}
		wait = min(2*wait, p.Max)
	}
}
