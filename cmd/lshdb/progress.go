package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/schollz/progressbar/v3"
)

// How a long command shows its progress on stderr (--progress): a bar
// redrawn in place, which only a terminal shows as one, or a line every
// --progress-every, which a log file (a nightly job's, a service's
// journal) keeps readable. auto, the default, draws the bar on a
// terminal and writes the lines elsewhere, so that a job that runs for
// hours says it is alive and how far it has come. A command shorter than
// one interval writes no line.
const (
	progressAuto = "auto"
	progressBar  = "bar"
	progressLog  = "log"
	progressNone = "none"
)

// defaultProgressEvery is --progress-every's default.
const defaultProgressEvery = time.Minute

// checkProgressFlags validates --progress and --progress-every.
func (a *app) checkProgressFlags() error {
	switch a.progressMode {
	case progressAuto, progressBar, progressLog, progressNone:
	default:
		return usagef("--progress must be auto, bar, log or none, not %q", a.progressMode)
	}
	if a.progressEvery <= 0 {
		return usagef("--progress-every must be a positive duration (such as 30s or 5m), not %s", a.progressEvery)
	}
	return nil
}

// progressStyle is how this command shows progress: progressBar,
// progressLog or progressNone.
func (a *app) progressStyle() string {
	switch a.progressMode {
	case progressAuto, "": // NB: "": an app made without flags (tests)
		if a.stderrIsTerminal() {
			return progressBar
		}
		return progressLog
	default:
		return a.progressMode
	}
}

// A lineLog writes a progress line to w at most once per every, the first
// one every after it was made: "lshdb: what: <status>, <elapsed> elapsed".
// It is safe for concurrent use.
type lineLog struct {
	w     io.Writer
	what  string
	every time.Duration
	start time.Time
	mu    sync.Mutex
	next  time.Time
}

// newLineLogSince returns the line log of work that started at start
// (its lines' elapsed time counts from it); the first line comes an
// interval from now.
func (a *app) newLineLogSince(what string, start time.Time) *lineLog {
	every := a.progressEvery
	if every <= 0 {
		every = defaultProgressEvery
	}
	return &lineLog{w: a.stderr, what: what, every: every, start: start, next: time.Now().Add(every)}
}

// maybe writes status() as a line if the interval has passed; status is
// only called then.
func (l *lineLog) maybe(status func(elapsed time.Duration) string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		return
	}
	l.next = now.Add(l.every)
	elapsed := now.Sub(l.start)
	fmt.Fprintf(l.w, "lshdb: %s: %s, %s elapsed\n", l.what, status(elapsed), elapsed.Round(time.Second))
}

// fraction describes done of total units (total ≤ 0: not known) of noun
// ("" or " documents") reached in elapsed: the share done and, from a
// second on, the time left at the pace so far, of what (" to read", " in
// this phase"; "": the command's).
func fraction(done, total int64, elapsed time.Duration, unit func(int64) string, noun, what string) string {
	if total <= 0 {
		return unit(done) + noun
	}
	pct := fmt.Sprintf("%.0f%%", 100*float64(done)/float64(total))
	// NB: no estimate before 1% is done: the first chunk of a phase is
	// not its pace ("1024 of 48404301 (0%, about 16h1m53s left)", then 47 s
	// two seconds later).
	if done > 0 && done < total && done*100 >= total {
		if left := time.Duration(float64(elapsed) * float64(total-done) / float64(done)); left >= time.Second {
			pct += fmt.Sprintf(", about %s left%s", left.Round(time.Second), what)
		}
	}
	return fmt.Sprintf("%s of %s%s (%s)", unit(done), unit(total), noun, pct)
}

func countUnit(n int64) string { return strconv.FormatInt(n, 10) }

func byteUnit(n int64) string { return humanBytes(uint64(max(n, 0))) }

// phaseBar returns a.ctx made to report the progress of a long call's
// phases (db.WithProgress: pairs, clusters, check, stats, backup) as
// --progress says: a bar per phase on a terminal's stderr, with the
// phase, its place among the phases, a percentage and the time left, or
// a line every interval saying the same; done clears the bar. An attached
// index reports no progress: nothing is shown.
func (a *app) phaseBar(what string, notes ...phaseNote) (ctx context.Context, done func()) {
	report, done := a.phaseReporter(what, time.Now(), nil, notes...)
	if report == nil {
		return a.ctx, done
	}
	return db.WithProgress(a.ctx, report), done
}

// phaseReporter is phaseBar's reporter, to be given to db.WithProgress
// (nil when --progress shows nothing), and its done; lines count the
// elapsed time from start. first, when not nil, is the phase already
// under way: the heartbeat's lines say it from the start, where they
// said "running" until report was first called.
//
// NB: a build's stages start this way, after its reading; its heartbeat
// could tick before the first stage was reported and write "build:
// running" between the reading's lines and the stages' (a CI run under
// the race detector did).
func (a *app) phaseReporter(what string, start time.Time, first *db.Progress, notes ...phaseNote) (report func(db.Progress), done func()) {
	// noted is what notes add to p's line ("; read 1.2 GiB of 4.0 GiB"),
	// "" for nothing.
	noted := func(p db.Progress, inPhase time.Duration) string {
		for _, n := range notes {
			if n.phase == p.Phase {
				if s := n.note(inPhase); s != "" {
					return "; " + s
				}
			}
		}
		return ""
	}
	switch a.progressStyle() {
	case progressLog:
		l := a.newLineLogSince(what, start)
		var mu sync.Mutex
		last := first // nil: none reported yet
		phaseStart := time.Now()
		// NB: formatted when a line is written, so that a line of the
		// heartbeat below has the time left as of then.
		status := func(time.Duration) string {
			mu.Lock()
			defer mu.Unlock()
			if last == nil {
				return "running"
			}
			p := *last
			note := noted(p, time.Since(phaseStart))
			if p.Total <= 0 && p.Done == 0 {
				// NB: a phase that counts nothing ("5/5 making
				// clusters: 0").
				return fmt.Sprintf("%d/%d %s%s", p.Step, p.Steps, p.Phase, note)
			}
			return fmt.Sprintf("%d/%d %s: %s%s", p.Step, p.Steps, p.Phase, fraction(p.Done, p.Total, time.Since(phaseStart), countUnit, "", " in this phase"), note)
		}
		report = func(p db.Progress) {
			if a.ctx.Err() != nil {
				return // NB: an interrupted call ends its phase "complete"
			}
			mu.Lock()
			if last == nil || p.Phase != last.Phase {
				phaseStart = time.Now()
			}
			last = &p
			mu.Unlock()
			l.maybe(status)
		}
		// NB: a call that reports nothing for an interval (attached: the
		// owner's progress does not cross the socket) still says it runs,
		// so that a job's log tells a long run from a hung one.
		stop := make(chan struct{})
		var ticking sync.WaitGroup
		ticking.Go(func() {
			t := time.NewTicker(l.every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if a.ctx.Err() == nil {
						l.maybe(status)
					}
				}
			}
		})
		var once sync.Once // NB: pairs calls done twice
		return report, func() {
			once.Do(func() {
				close(stop)
				ticking.Wait() // NB: no line after done
			})
		}
	case progressBar:
	default:
		return nil, func() {}
	}
	var mu sync.Mutex
	var bar *progressbar.ProgressBar
	var barTotal int64
	var barDesc string
	var barStart time.Time
	phase := ""
	finish := func() {
		if bar != nil {
			bar.Finish()
			bar = nil
		}
	}
	report = func(p db.Progress) {
		mu.Lock()
		defer mu.Unlock()
		// NB: a phase whose total comes after its start (making
		// clusters) turns from a spinner into a bar.
		if p.Phase != phase || bar == nil || barTotal <= 0 && p.Total > 0 {
			finish()
			phase = p.Phase
			total := p.Total
			if total <= 0 {
				total = -1 // NB: a spinner: the total is not known ahead
			}
			barTotal = total
			barDesc, barStart = fmt.Sprintf("%s %d/%d: %s", what, p.Step, p.Steps, p.Phase), time.Now()
			bar = progressbar.NewOptions64(total, a.barOptions(barDesc, total, false,
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())...)
		}
		if note := noted(p, time.Since(barStart)); note != "" {
			bar.Describe(barDesc + note)
		}
		bar.Set64(p.Done)
	}
	return report, func() {
		mu.Lock()
		defer mu.Unlock()
		finish()
	}
}

// countBar shows the progress of total items, described by what, as
// --progress says (see progress): set moves it to n, done clears the bar.
func (a *app) countBar(what string, total int) (set func(n int), done func()) {
	return a.countBarSince(what, "written", total, time.Time{})
}

// countBarSince is countBar for the last step of a command whose work
// began at since (not zero): its lines' elapsed time counts from then,
// and the time left is by this step's pace (" in this phase"). verb says
// what was done to the documents counted ("written").
func (a *app) countBarSince(what, verb string, total int, since time.Time) (set func(n int), done func()) {
	switch a.progressStyle() {
	case progressLog:
		stepStart := time.Now()
		l := a.newLineLogSince(what, cmp.Or(since, stepStart))
		left := ""
		if !since.IsZero() {
			left = " in this phase"
		}
		return func(n int) {
			l.maybe(func(time.Duration) string {
				return verb + " " + fraction(int64(n), int64(total), time.Since(stepStart), countUnit, " documents", left)
			})
		}, func() {}
	case progressBar:
	default:
		return func(int) {}, func() {}
	}
	bar := progressbar.NewOptions(total, a.barOptions(what, int64(total), false, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())...)
	return func(n int) { bar.Set(n) }, func() { bar.Finish() }
}

// barWidth is the most cells a progress bar takes.
const barWidth = 40

// barOptions are the options of a progress bar on stderr described by
// desc, of total items (-1: unknown; bytes: shown in bytes), followed by
// more: its writer, its description, and a width that keeps the line
// within the terminal's. NB: the bar library measures the terminal only
// through an *os.File, and stderr is wrapped: its 40-cell bars made lines
// of 94 to 120 columns on an 80-column terminal, which wrapped, and each
// redraw cleared only the last row. A description too long to leave room
// is cut.
func (a *app) barOptions(desc string, total int64, bytes bool, more ...progressbar.Option) []progressbar.Option {
	width := barWidth
	var narrow []progressbar.Option
	if cols := a.stderrWidth(); cols > 0 {
		// NB: what the line holds besides the description and the bar,
		// measured on the bars drawn: "  89% |" and "| (" around the
		// bar, a blank at the end, then "N/N)" or
		// "1.2 GB/3.4 GB, 39 MB/s)", and a time of up
		// to " [1h2m3s:4h5m6s]". A larger guess cut phase names to
		// "build 2/…" on lines of 36-45 of 60 columns.
		digits := len(strconv.FormatInt(max(total, 1), 10))
		stats := 8 + 3 + 2*digits + 2 + 16
		if bytes {
			stats = 8 + 3 + 23 + 16
		}
		// NB: where even the shortest description (9 cells) and bar (5)
		// leave no room for the figures, the time goes, then the bar: on
		// 40 columns the lines took 53, wrapped, and each redraw left a
		// row behind (a review).
		const leastDesc, leastBar = 9, 5
		if cols-1 < leastDesc+leastBar+stats {
			stats -= 16
			narrow = append(narrow, progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(false))
		}
		if cols-1 < leastDesc+leastBar+stats {
			narrow = append(narrow, progressbar.OptionSetVisibility(false))
		}
		room := cols - 1 - stats
		if n := utf8.RuneCountInString(desc); n > room-5 {
			keep := max(room-5-1, 8)
			if n > keep {
				desc = string([]rune(desc)[:keep]) + "…"
			}
		}
		width = min(barWidth, max(room-utf8.RuneCountInString(desc), 5))
	}
	return append(append([]progressbar.Option{progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(width)}, more...), narrow...)
}

// phaseNote adds to the progress of a phase what the command knows of its
// work and the call does not: note, given the time the phase has run,
// returns it ("" for nothing).
type phaseNote struct {
	phase string
	note  func(inPhase time.Duration) string
}

// readMeter counts the bytes read of a file of known size (0: unknown),
// for a phase that counts what it decodes from them: ClustersFrom's
// "reading pairs" counts pairs, whose number it cannot know ahead, and
// at 10 million documents its first line said "reading pairs: 2291712"
// with no total and no time left (a review at scale, S10-6).
type readMeter struct {
	size atomic.Int64 // NB: set by the reader, read by a heartbeat's goroutine
	read atomic.Int64
}

// reader returns r counting into m.
func (m *readMeter) reader(r io.Reader) io.Reader { return meteredReader{r: r, m: m} }

type meteredReader struct {
	r io.Reader
	m *readMeter
}

func (r meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.m.read.Add(int64(n))
	return n, err
}

// note is the meter's phaseNote: "read 120.0 MiB of 1.2 GiB (10%, about
// 2m left to read)", or "read 120.0 MiB" of a size not known; "" before
// anything is read.
func (m *readMeter) note(inPhase time.Duration) string {
	n := m.read.Load()
	if n == 0 {
		return ""
	}
	return "read " + fraction(n, m.size.Load(), inPhase, byteUnit, "", " to read")
}
