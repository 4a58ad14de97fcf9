package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/schollz/progressbar/v3"
)

// phaseBar returns a.ctx made to draw a bar per phase of a long call on a
// terminal's stderr (db.WithProgress: pairs, clusters, check, stats),
// with the phase, its place among the phases, a percentage and the time
// left; done clears it. Without a terminal it returns a.ctx as it is. An
// attached index reports no progress: no bar is drawn.
func (a *app) phaseBar(what string) (ctx context.Context, done func()) {
	if !a.stderrIsTerminal() {
		return a.ctx, func() {}
	}
	var mu sync.Mutex
	var bar *progressbar.ProgressBar
	phase := ""
	finish := func() {
		if bar != nil {
			bar.Finish()
			bar = nil
		}
	}
	ctx = db.WithProgress(a.ctx, func(p db.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Phase != phase || bar == nil {
			finish()
			phase = p.Phase
			total := p.Total
			if total <= 0 {
				total = -1 // NB: a spinner: the total is not known ahead
			}
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(a.stderr),
				progressbar.OptionSetDescription(fmt.Sprintf("%s %d/%d: %s", what, p.Step, p.Steps, p.Phase)),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		bar.Set64(p.Done)
	})
	return ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		finish()
	}
}

// counter is a bar of a count known ahead, drawn on a terminal's stderr
// (nothing otherwise).
type counter struct{ bar *progressbar.ProgressBar }

// countBar returns a bar of total items described by what.
func (a *app) countBar(what string, total int) *counter {
	if !a.stderrIsTerminal() {
		return &counter{}
	}
	return &counter{progressbar.NewOptions(total, progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())}
}

func (c *counter) set(n int) {
	if c.bar != nil {
		c.bar.Set(n)
	}
}

// done clears the bar.
func (c *counter) done() {
	if c.bar != nil {
		c.bar.Finish()
		c.bar = nil
	}
}
