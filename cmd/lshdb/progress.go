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

// countBar draws a bar of total items, described by what, on a
// terminal's stderr (none otherwise), as progress does for inputs: set
// moves it to n, done clears it.
func (a *app) countBar(what string, total int) (set func(n int), done func()) {
	if !a.stderrIsTerminal() {
		return func(int) {}, func() {}
	}
	bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	return func(n int) { bar.Set(n) }, func() { bar.Finish() }
}
