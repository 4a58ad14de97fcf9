package db

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lshdb/lshdb/codec"
)

// Progress is how far a long call has come: Load, Pairs, PairGroups,
// Clusters, ClustersFrom, Check, Stats, Repair and the Backup of an index
// on Redis report it, through a context made by WithProgress.
type Progress struct {
	// Phase names the work ("reading documents", "verifying candidate
	// pairs", …); Step is its place among Steps, from 1.
	Phase       string
	Step, Steps int
	// Done and Total count the phase's work in its own unit, which the
	// phase's name says where it is not documents: candidate pairs,
	// sixty-fourths of bands (the phases that read or write every band's
	// posting lists: "reading posting lists (64ths of bands)"), Total known when the phase starts (0 when
	// it is not: a Load's documents read). Done reaches Total when the
	// phase ends (Total then set to Done if it was not known).
	Done, Total int64
}

type progressKey struct{}

// WithProgress returns a context that makes the calls given it report
// their progress to fn: at most about ten times a second, and once more
// at the end of each phase (Done = Total). fn runs on the call's
// goroutines, one call at a time; it must be quick. The way net/http's
// httptrace hooks into a request: no method takes an extra argument, and
// a call without it does no progress work at all.
//
// A call through db/client does not report progress. A nil ctx is
// context.Background(), as in every call of the package. A nil fn reports
// nothing (not even to a function an outer WithProgress gave).
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	if ctx == nil {
		// NB: as every call of the package takes a nil context (it
		// panicked in context.WithValue: an API review's A1).
		ctx = context.Background()
	}
	if fn == nil {
		// NB: as httptrace's nil hooks (it was a nil dereference on the
		// call's goroutine); a nil reporter's methods do nothing.
		return context.WithValue(ctx, progressKey{}, (*progress)(nil))
	}
	return context.WithValue(ctx, progressKey{}, &progress{fn: fn})
}

// progress is a WithProgress reporter; its methods do nothing on nil.
type progress struct {
	fn  func(Progress)
	mu  sync.Mutex // fn, cur, steps
	cur Progress
	// steps, when set, is the number of steps a caller's whole run has
	// (Clusters': Pairs' and its own after them): each phase reports it
	// rather than its own work's count.
	steps int
	done  atomic.Int64
	last  atomic.Int64 // unix nanoseconds of the last report
}

// progressOf returns ctx's reporter, or nil.
func progressOf(ctx context.Context) *progress {
	if ctx == nil {
		return nil
	}
	p, _ := ctx.Value(progressKey{}).(*progress)
	return p
}

// progressEvery is the least time between two reports of a phase.
const progressEvery = int64(100 * time.Millisecond)

// phase ends the current phase (reporting it complete) and starts step
// of steps, named name, with total units of work.
func (p *progress) phase(step, steps int, name string, total int64) {
	if p == nil {
		return
	}
	p.end()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur = Progress{Phase: name, Step: step, Steps: max(steps, p.steps), Total: total}
	p.done.Store(0)
	p.last.Store(time.Now().UnixNano())
	p.fn(p.cur)
}

// setSteps makes the phases to come report n steps (0: their own count),
// for a caller that adds steps of its own after those of the work it runs.
func (p *progress) setSteps(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.steps = n
	p.mu.Unlock()
}

// setTotal gives the current phase its total, once it is known (a phase
// started before its caller could count its work), and reports it.
func (p *progress) setTotal(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur.Phase != "" {
		p.cur.Total = n
		p.cur.Done = min(p.done.Load(), n)
		p.fn(p.cur)
	}
}

// add counts n units of the phase's work done; it reports when the last
// report is old enough.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	done := p.done.Add(n)
	now := time.Now().UnixNano()
	if last := p.last.Load(); now-last < progressEvery || !p.last.CompareAndSwap(last, now) {
		return
	}
	if !p.mu.TryLock() {
		return // NB: another goroutine reports
	}
	defer p.mu.Unlock()
	if p.cur.Phase == "" {
		return
	}
	p.cur.Done = done
	if p.cur.Total > 0 {
		p.cur.Done = min(done, p.cur.Total) // NB: a total known ahead may be an estimate
	}
	p.fn(p.cur)
}

// end reports the current phase complete.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur.Phase == "" {
		return
	}
	p.cur.Done = max(p.cur.Total, p.done.Load())
	p.cur.Total = p.cur.Done
	p.fn(p.cur)
	p.cur = Progress{}
}

// counter batches a goroutine's progress: every 1024 units it adds them
// to p, so that a loop over millions of items pays a local increment.
type counter struct {
	p *progress
	n int64
}

func (c *counter) inc() {
	if c.p == nil {
		return
	}
	if c.n++; c.n == 1024 {
		c.p.add(c.n)
		c.n = 0
	}
}

func (c *counter) flush() {
	if c.p != nil && c.n > 0 {
		c.p.add(c.n)
		c.n = 0
	}
}

// bandParts is how finely a scan of posting lists counts its work: the
// phases that read or write every band's lists count sixty-fourths of a
// band. A band's lists are in the order of their buckets, hashes spread
// evenly, so the top six bits of a list's bucket say how far into its band
// the scan is. NB: a band was the unit, counted as a scan entered it: at
// 10 million documents a pairs run showed "0 of 16 (0%)" with no time
// left for its first 15 s a band, then jumped (a review at scale, S10-6).
const bandParts = 64

// bandsPhase names a phase that counts sixty-fourths of bands (bandParts).
func bandsPhase(name string) string { return name + " (64ths of bands)" }

// bandCounter counts the part of the posting lists' key space a scan has
// passed, in bandParts a band, the scan going in key order.
type bandCounter struct {
	p   *progress
	pos int64 // the parts counted, from band 0's first
}

// newBandCounter returns a counter for a scan that starts at band from.
func newBandCounter(p *progress, from int) bandCounter {
	return bandCounter{p: p, pos: int64(from) * bandParts}
}

// at counts the scan as come to the list of bucket (32 bits) of band.
func (c *bandCounter) at(band int, bucket uint32) {
	if c.p == nil {
		return
	}
	if pos := int64(band)*bandParts + int64(bucket>>26); pos > c.pos {
		c.p.add(pos - c.pos)
		c.pos = pos
	}
}

// key is at for a posting-list key of either format: the bucket follows
// the band (codec.PostingKeyBand), its top byte first, in both.
func (c *bandCounter) key(k []byte) {
	if c.p == nil || len(k) < 4 {
		return
	}
	if band, ok := codec.PostingKeyBand(k); ok {
		c.at(band, uint32(k[3])<<24)
	}
}

// upTo counts the scan as done up to band (the first it does not read):
// the rest of the last band it read.
func (c *bandCounter) upTo(band int) { c.at(band, 0) }
