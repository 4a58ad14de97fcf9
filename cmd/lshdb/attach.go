package main

// Attach: the commands talk to an index through one interface, which
// *db.DB satisfies in process and *client.Client when another process
// owns the index (lshdb serve) or --addr names a server. One code path:
// what a command prints does not depend on which it got.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/minhash"
)

// index is what the commands need of an index.
type index interface {
	Params() db.Params
	MaxDocBytes() int
	Instance() string
	Validate(d db.Doc) error
	Put(d db.Doc, wo *db.WriteOptions) error
	PutBatch(docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error)
	PutBatchContext(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error)
	PutIfNewContext(ctx context.Context, doc db.Doc, wo *db.WriteOptions) (*db.Match, error)
	PutIfNewBatch(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) ([]db.IfNewResult, error)
	Load(ctx context.Context, docs iter.Seq2[db.Doc, error], lo *db.LoadOptions) (db.LoadResult, error)
	Get(id string) (*db.StoredDoc, error)
	DeleteIDs(ids []string, o *db.WriteOptions) (db.DeleteResult, error)
	DeleteIDsContext(ctx context.Context, ids []string, o *db.WriteOptions) (db.DeleteResult, error)
	Query(ctx context.Context, text string, qo *db.QueryOptions) (*db.QueryResult, error)
	QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error)
	Pairs(ctx context.Context, po *db.PairsOptions) iter.Seq2[db.Pair, error]
	Scan(ctx context.Context, so *db.ScanOptions) iter.Seq2[*db.StoredDoc, error]
	Clusters(ctx context.Context, po *db.PairsOptions) ([]db.Cluster, error)
	Info() (*db.Info, error)
	ClustersFrom(ctx context.Context, seq iter.Seq2[db.Pair, error], po *db.PairsOptions) ([]db.Cluster, error)
	Count() (uint64, error)
	HasIDs(ids []string) ([]bool, error)
	Stats(ctx context.Context, top int) (*db.Stats, error)
	Buckets(ctx context.Context, band, top int) (*db.BucketStats, error)
	Bucket(band int, bucket uint64) ([]string, error)
	Explain(a, b string) (*db.Explanation, error)
	Check(ctx context.Context) (*db.CheckReport, error)
	Repair(ctx context.Context) (db.RepairResult, error)
	PurgeEmptyLists(ctx context.Context) (int, error)
	Purge(ctx context.Context) (db.PurgeResult, error)
	Compact(ctx context.Context) error
	Close() error
}

var (
	_ index = (*db.DB)(nil)
	_ index = (*client.Client)(nil)
	_ index = (*handover)(nil)
)

// clientOptions are the options of an attached command's client: the
// token from LSHDB_TOKEN, and bounds on the first exchange and on each
// call that takes no context (info, get, count, explain, …), so that a
// stopped or stuck server fails the command instead of hanging it. NB:
// once attached, lshdb info waited without end on a server that stopped
// answering (a security review, S3). The long calls (queries, pairs,
// clusters, loads) follow the command's context, which an interrupt ends.
//
// ctx is the command's: an interrupt ends the calls that take no context
// too (client.Options.Context; an attached get waited out its 5 minutes
// after Ctrl-C on a server that did not answer: a review of serve,
// SV3-3).
func clientOptions(ctx context.Context) *client.Options {
	return &client.Options{Token: os.Getenv("LSHDB_TOKEN"), OpenTimeout: attachTimeout, Timeout: attachCallTimeout, Context: ctx}
}

// attachCallTimeout bounds each attached call that takes no context.
const attachCallTimeout = 5 * time.Minute

// attachTimeout is how long a command waits for a server's first answer.
const attachTimeout = 15 * time.Second

// attach connects to the server that owns the index in dir through its
// socket, checking opts' creation parameters against the index's as Open
// would.
func attach(ctx context.Context, dir string, opts *db.Options) (*client.Client, error) {
	c, err := client.OpenContext(ctx, httpapi.SocketPath(dir), clientOptions(ctx))
	if err != nil {
		return nil, err
	}
	if err := checkOptions(opts, c.Params()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connect opens a client of the server at --addr.
func (a *app) connect(opts *db.Options) (*client.Client, error) {
	if a.dbDir != "" {
		return nil, usagef("give --db DIR or --addr URL, not both")
	}
	c, err := client.OpenContext(a.ctx, a.addr, clientOptions(a.ctx))
	if err != nil {
		return nil, err
	}
	if err := checkOptions(opts, c.Params()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkOptions refuses non-zero creation options that differ from an
// attached index's parameters, with the errors db.Open gives.
func checkOptions(o *db.Options, p db.Params) error {
	if o == nil {
		return nil
	}
	check := func(field string, set bool, stored, requested any) error {
		if set && stored != requested {
			return &db.MismatchError{Field: field, Stored: stored, Requested: requested}
		}
		return nil
	}
	return errors.Join(
		check("Threshold", o.Threshold != 0, p.Threshold, o.Threshold),
		check("Recall", o.Recall != 0, p.Recall, o.Recall),
		check("Bands", o.Bands != 0, p.Bands.B, o.Bands),
		check("Rows", o.Rows != 0, p.Bands.R, o.Rows),
		check("NumPerm", o.NumPerm != 0, p.NumPerm, o.NumPerm),
		check("Scheme", o.Scheme != 0, p.Scheme.String(), o.Scheme.String()),
		check("Seed", o.Seed != 0, p.Seed, o.Seed),
		check("Shingle", o.Shingle != 0, p.Shingle.String(), o.Shingle.String()),
		check("ShingleSize", o.ShingleSize != 0, p.ShingleSize, o.ShingleSize),
		check("Bag", o.Bag, p.Bag, o.Bag),
		check("Normalization", o.Normalization != 0, p.Normalization.String(), o.Normalization.String()),
		// NB: a set of the words that can match, as Open compares them
		// (order and repeats were a mismatch here alone: a maintainer
		// review's K5).
		check("StopWords", len(o.StopWords) != 0, stopWordSet(p.StopWords, p.Normalization), stopWordSet(o.StopWords, p.Normalization)),
		check("StoreText", o.StoreText, p.StoreText, o.StoreText),
		check("Storage", o.Storage != "", p.Storage, o.Storage),
	)
}

// stopWordSet is a list of stop words as Open compares it: those that can
// match (minhash.MatchingStopWords), sorted, without repeats.
func stopWordSet(words []string, n minhash.Normalization) string {
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(minhash.MatchingStopWords(words, n)))), ",")
}

// handover is an index attached to another process's server that, when
// that owner goes away between two calls (it ended: its socket is gone or
// refuses connections), opens the index again (in process, now that the
// lock is free, or attached to the next owner) and repeats the call. A
// nightly insert attached to a shorter-lived owner stopped with "dial
// unix …/lshdb.sock: no such file" after the owner's exit.
//
// NB: only a call that never reached the owner is repeated (the dial
// failed, or sending the request did): one cut off in flight may have been applied (a PutIfNew
// repeated would find itself), and returns its error; so does a stream
// (Load, Pairs, Scan, ClustersFrom), which goes to the current index
// without a repeat.
type handover struct {
	reopen func() (index, func(), error)
	// waitReadOnly makes a write wait for an owner that reads only to
	// end (readOnlyOwnerWait), where it failed at once; ctx ends the wait
	// (the command's: an interrupt), and note says that it waits. NB: not
	// in a shell, whose statements have contexts of their own: a person
	// there sees the refusal and may put again.
	waitReadOnly bool
	ctx          context.Context
	note         func(string)
	// health asks the attached owner for its health (socketHealth): a
	// load, which cannot be sent twice, waits with it for an owner that
	// takes writes before it starts (awaitWriter). Nil: it does not wait.
	health func() (httpapi.HealthJSON, error)

	mu     sync.Mutex
	cur    index // what the calls below go to
	close  func()
	closed bool // closeAll ran: nothing is reopened
}

func newHandover(c index, closeC func(), reopen func() (index, func(), error)) *handover {
	return &handover{cur: c, close: closeC, reopen: reopen}
}

// sameParams reports whether p and q are the parameters of one index
// (its format may have moved on: a first TTL makes format 3 into 4).
func sameParams(p, q db.Params) bool {
	return p.Threshold == q.Threshold && p.Recall == q.Recall && p.Bands == q.Bands &&
		p.Scheme == q.Scheme && p.NumPerm == q.NumPerm && p.Seed == q.Seed &&
		p.Shingle == q.Shingle && p.ShingleSize == q.ShingleSize && p.Bag == q.Bag &&
		p.Normalization == q.Normalization && slices.Equal(p.StopWords, q.StopWords) &&
		p.StoreText == q.StoreText && p.Storage == q.Storage
}

// ownerGone reports whether err says the attached owner is gone before
// the request reached it: the socket's dial failed, or sending the
// request did, on a kept-alive connection the stopping owner had closed
// as idle (EPIPE, ECONNRESET: the request was not all sent, so its
// handler, which reads the whole body before it acts, applied nothing;
// CI met it once in eight runs of TestAttachedInsertOutlivesItsOwner).
func ownerGone(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) {
		return false
	}
	return op.Op == "dial" || op.Op == "write" && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET))
}

// answerLost reports whether a write to d that failed with err, sent
// (its context live when it was made), may still have been applied: d is
// another process's (attached) and the failure is not that process's
// answer (a *client.Error) nor one that never reached it (ownerGone),
// such as an owner killed mid-request or the command's own cut.
func answerLost(d index, sent bool, err error) bool {
	var answer *client.Error
	_, local := d.(*db.DB)
	return err != nil && sent && !local && !errors.As(err, &answer) && !ownerGone(err)
}

// current is the index the calls go to now.
func (h *handover) current() index {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// again opens the index anew after a call to d failed with err, if err
// says the owner is gone (or, for a read, read says so, that it was cut
// in flight), and returns the index to repeat the call on (nil: do not
// repeat).
func (h *handover) again(d index, err error, read bool) (index, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// NB: a cut the command made itself (its context) is its context's
	// error, not ErrConnectionCut.
	gone := ownerGone(err) || read && errors.Is(err, client.ErrConnectionCut)
	switch {
	case h.closed:
		return nil, nil
	case h.cur != d && (gone || errors.Is(err, db.ErrClosed)):
		return h.cur, nil // NB: another call reopened it meanwhile (and closed d)
	case !gone:
		return nil, nil
	}
	nd, closeND, oerr := h.reopen()
	if oerr != nil {
		return nil, oerr
	}
	if nd == d {
		return nil, nil
	}
	h.close()
	h.cur, h.close = nd, closeND
	return nd, nil
}

// retry calls call on the current index, and once more on a reopened one
// when the owner was gone.
func retry[T any](h *handover, call func(index) (T, error)) (T, error) {
	return retryCall(h, false, call)
}

// retryRead is retry for a call that writes nothing: it is made again
// also when the owner was killed or stopped while it answered. NB: an
// attached query whose owner was killed mid-request failed with "make it
// again", which the command could do itself (a crash-safety review).
func retryRead[T any](h *handover, call func(index) (T, error)) (T, error) {
	return retryCall(h, true, call)
}

func retryCall[T any](h *handover, read bool, call func(index) (T, error)) (T, error) {
	var wait *readOnlyWait
	for {
		d := h.current()
		v, err := call(d)
		if err != nil {
			nd, oerr := h.again(d, err, read)
			if nd != nil {
				v, err = call(nd)
			} else if oerr != nil {
				return v, fmt.Errorf("%w; its owner ended, and opening the index again failed: %w", err, oerr)
			}
		}
		if read || !h.waitReadOnly || !ownerReadsOnly(err) {
			return v, err
		}
		// NB: the owner is a read command (a query, a check, a long
		// pairs), which serves while it runs: the write waits for it to
		// end, and then goes to the next owner, or opens the index
		// itself. Every write failed at once, exit 75, because someone
		// ran lshdb query just then (a concurrency review, C2).
		if wait == nil {
			wait = h.startReadOnlyWait(err)
		}
		if werr := wait.next(h); werr != nil {
			return v, werr
		}
	}
}

// ownerReadsOnly reports whether err is a write refused by an owner that
// opened the index to read only (a read command), which ends with it; not
// one refused by a server started to serve reads only (serve
// --read-only), which a wait does not mend.
func ownerReadsOnly(err error) bool {
	return errors.Is(err, db.ErrReadOnly) && strings.Contains(err.Error(), httpapi.OwnerReadsOnly)
}

// readOnlyOwnerWait bounds how long a write waits for an owner that reads
// only (ownerReadsOnly) to end.
var readOnlyOwnerWait = 10 * time.Minute

// readOnlyWait is a write's wait for an owner that reads only.
type readOnlyWait struct {
	first    error // the first refusal, which the error at the end names
	start    time.Time
	interval time.Duration
}

// startReadOnlyWait begins a write's wait for the owner that refused it
// with err, and says so.
func (h *handover) startReadOnlyWait(err error) *readOnlyWait {
	if h.note != nil {
		h.note(fmt.Sprintf("%s, which owns the index, opened it to read only: this command's writes wait for it to end (at most %v; interrupt to stop)", ownerName(err), readOnlyOwnerWait))
	}
	return &readOnlyWait{first: err, start: time.Now(), interval: 50 * time.Millisecond}
}

// ownerName is the process that the refusal err names: "lshdb check
// (pid N)" where it can tell.
func ownerName(err error) string {
	// NB: the refusal says "… by the process that serves it (pid N), …"
	// (httpapi's handler).
	if _, rest, ok := strings.Cut(err.Error(), "(pid "); ok {
		if pid, _, ok := strings.Cut(rest, ")"); ok {
			if n, perr := strconv.Atoi(pid); perr == nil {
				name, _ := holderName(n)
				return name
			}
		}
	}
	return "the process that serves it"
}

// next waits before the write is made again, or returns the error that
// ends the wait: its bound passed, or the command was interrupted.
func (w *readOnlyWait) next(h *handover) error {
	if time.Since(w.start) >= readOnlyOwnerWait {
		return fmt.Errorf("%w (waited %v for it to end)", w.first, time.Since(w.start).Round(time.Second))
	}
	if err := h.pause(w.interval, "a write waited for the index's owner, which reads only, to end: nothing more was written"); err != nil {
		return err
	}
	w.interval = min(2*w.interval, time.Second)
	return nil
}

// pause waits d, or returns the interrupt (h.ctx's end) that cut it
// short, saying while what: the waits of a write for its owner.
func (h *handover) pause(d time.Duration, what string) error {
	ctx := h.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w while %s%w", context.Cause(ctx), what, silently{context.Canceled})
	case <-t.C:
		return nil
	}
}

func (h *handover) Put(d db.Doc, wo *db.WriteOptions) error {
	_, err := retry(h, func(x index) (struct{}, error) { return struct{}{}, x.Put(d, wo) })
	return err
}

func (h *handover) PutBatch(docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error) {
	return retry(h, func(x index) (db.BatchResult, error) { return x.PutBatch(docs, wo) })
}

func (h *handover) PutBatchContext(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error) {
	return retry(h, func(x index) (db.BatchResult, error) { return x.PutBatchContext(ctx, docs, wo) })
}

func (h *handover) PutIfNewContext(ctx context.Context, doc db.Doc, wo *db.WriteOptions) (*db.Match, error) {
	return retry(h, func(x index) (*db.Match, error) { return x.PutIfNewContext(ctx, doc, wo) })
}

// PutIfNewBatch, repeated on a reopened index when the owner was gone,
// may find there documents the owner stored from the first attempt
// before it went: they are checked again, and replace themselves.
func (h *handover) PutIfNewBatch(ctx context.Context, docs []db.Doc, wo *db.WriteOptions) ([]db.IfNewResult, error) {
	return retry(h, func(x index) ([]db.IfNewResult, error) { return x.PutIfNewBatch(ctx, docs, wo) })
}

func (h *handover) DeleteIDs(ids []string, o *db.WriteOptions) (db.DeleteResult, error) {
	return retry(h, func(x index) (db.DeleteResult, error) { return x.DeleteIDs(ids, o) })
}

func (h *handover) DeleteIDsContext(ctx context.Context, ids []string, o *db.WriteOptions) (db.DeleteResult, error) {
	return retry(h, func(x index) (db.DeleteResult, error) { return x.DeleteIDsContext(ctx, ids, o) })
}

func (h *handover) Get(id string) (*db.StoredDoc, error) {
	return retryRead(h, func(x index) (*db.StoredDoc, error) { return x.Get(id) })
}

func (h *handover) HasIDs(ids []string) ([]bool, error) {
	return retryRead(h, func(x index) ([]bool, error) { return x.HasIDs(ids) })
}

func (h *handover) Query(ctx context.Context, text string, qo *db.QueryOptions) (*db.QueryResult, error) {
	return retryRead(h, func(x index) (*db.QueryResult, error) { return x.Query(ctx, text, qo) })
}

func (h *handover) QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error) {
	return retryRead(h, func(x index) (*db.QueryResult, error) { return x.QueryID(ctx, id, qo) })
}

func (h *handover) Count() (uint64, error) {
	return retryRead(h, func(x index) (uint64, error) { return x.Count() })
}

func (h *handover) Params() db.Params { return h.current().Params() }
func (h *handover) MaxDocBytes() int  { return h.current().MaxDocBytes() }

// MaxBodyBytes is the current server's bound on a request body, as
// client.Client's: -1 (none) once the index is open in process.
func (h *handover) MaxBodyBytes() int64 {
	if b, ok := h.current().(interface{ MaxBodyBytes() int64 }); ok {
		return b.MaxBodyBytes()
	}
	return -1
}

// MaxBatch is the current server's bound on the documents of a batch, as
// client.Client's: -1 (none) once the index is open in process.
func (h *handover) MaxBatch() int {
	if b, ok := h.current().(interface{ MaxBatch() int }); ok {
		return b.MaxBatch()
	}
	return -1
}
func (h *handover) Instance() string        { return h.current().Instance() }
func (h *handover) Validate(d db.Doc) error { return h.current().Validate(d) }
func (h *handover) Info() (*db.Info, error) {
	return retryRead(h, func(x index) (*db.Info, error) { return x.Info() })
}
func (h *handover) Explain(a, b string) (*db.Explanation, error) {
	return retryRead(h, func(x index) (*db.Explanation, error) { return x.Explain(a, b) })
}

func (h *handover) Bucket(band int, bucket uint64) ([]string, error) {
	return retryRead(h, func(x index) ([]string, error) { return x.Bucket(band, bucket) })
}

func (h *handover) Buckets(ctx context.Context, band, top int) (*db.BucketStats, error) {
	return retryRead(h, func(x index) (*db.BucketStats, error) { return x.Buckets(ctx, band, top) })
}

func (h *handover) Stats(ctx context.Context, top int) (*db.Stats, error) {
	return retryRead(h, func(x index) (*db.Stats, error) { return x.Stats(ctx, top) })
}

func (h *handover) Check(ctx context.Context) (*db.CheckReport, error) {
	return retryRead(h, func(x index) (*db.CheckReport, error) { return x.Check(ctx) })
}

func (h *handover) Repair(ctx context.Context) (db.RepairResult, error) {
	return retry(h, func(x index) (db.RepairResult, error) { return x.Repair(ctx) })
}

func (h *handover) PurgeEmptyLists(ctx context.Context) (int, error) {
	return retry(h, func(x index) (int, error) { return x.PurgeEmptyLists(ctx) })
}

func (h *handover) Purge(ctx context.Context) (db.PurgeResult, error) {
	return retry(h, func(x index) (db.PurgeResult, error) { return x.Purge(ctx) })
}

func (h *handover) Compact(ctx context.Context) error {
	_, err := retry(h, func(x index) (struct{}, error) { return struct{}{}, x.Compact(ctx) })
	return err
}

func (h *handover) Clusters(ctx context.Context, po *db.PairsOptions) ([]db.Cluster, error) {
	return retryRead(h, func(x index) ([]db.Cluster, error) { return x.Clusters(ctx, po) })
}

func (h *handover) ClustersFrom(ctx context.Context, seq iter.Seq2[db.Pair, error], po *db.PairsOptions) ([]db.Cluster, error) {
	return h.current().ClustersFrom(ctx, seq, po)
}

// Load goes to the current index, without a repeat (it streams its
// input). NB: its caller waits for an owner that takes writes first
// (awaitWriter: build, before its progress starts); asked here too, the
// owner's health was asked twice a load.
func (h *handover) Load(ctx context.Context, docs iter.Seq2[db.Doc, error], lo *db.LoadOptions) (db.LoadResult, error) {
	return h.current().Load(ctx, docs, lo)
}

// awaitWriter waits, before a write that cannot be made twice (a load
// streams its input), while the attached owner reads only and will end
// (a query, a check, a pairs): as a write that can be made again waits
// after its refusal (retryCall), for up to readOnlyOwnerWait, saying so;
// an owner gone meanwhile is replaced by the next (again). It returns the
// owner's refusal once the wait is over, or the interrupt that ended it.
//
// NB: an attached build failed at once (exit 75) beside someone's query,
// where insert, delete and dedup had come to wait (C2). What the owner
// says of itself is asked first (its health's read_only): the load's
// refusal came after it had read a megabyte of the input, which stdin
// cannot give again.
func (h *handover) awaitWriter() error {
	if !h.waitReadOnly || h.health == nil {
		return nil
	}
	var wait *readOnlyWait
	unanswered := 0
	for {
		d := h.current()
		if _, local := d.(*db.DB); local {
			return nil
		}
		hj, err := h.health()
		if err != nil {
			nd, oerr := h.again(d, err, false)
			switch {
			case oerr != nil:
				return oerr
			case nd != nil:
				continue
			case unanswered < 3:
				// NB: not gone, but no health (a timeout under load): asked
				// again, a moment later, before the load is sent.
				unanswered++
				if err := h.pause(time.Duration(unanswered)*200*time.Millisecond, "asking the index's owner whether it takes writes: nothing was written"); err != nil {
					return err
				}
				continue
			}
			return nil // NB: the load says what is wrong
		}
		refusal := readOnlyHealth{hj.ReadOnly}
		if !ownerReadsOnly(refusal) {
			return nil // NB: writes taken, or served read-only for good: the load's answer says so
		}
		if wait == nil {
			wait = h.startReadOnlyWait(refusal)
		}
		if werr := wait.next(h); werr != nil {
			return werr
		}
	}
}

// readOnlyHealth is the refusal an owner's health says a write gets
// (HealthJSON.ReadOnly): ErrReadOnly, in the owner's words.
type readOnlyHealth struct{ msg string }

func (e readOnlyHealth) Error() string {
	return strings.TrimPrefix(e.msg, "lshdb: ") // NB: db's prefix: the command prints one
}

func (e readOnlyHealth) Is(target error) bool { return e.msg != "" && target == db.ErrReadOnly }

func (h *handover) Pairs(ctx context.Context, po *db.PairsOptions) iter.Seq2[db.Pair, error] {
	return retryStream(h, func(x index) iter.Seq2[db.Pair, error] { return x.Pairs(ctx, po) })
}

func (h *handover) Scan(ctx context.Context, so *db.ScanOptions) iter.Seq2[*db.StoredDoc, error] {
	return retryStream(h, func(x index) iter.Seq2[*db.StoredDoc, error] { return x.Scan(ctx, so) })
}

// retryStream is retry for a stream that reads: one whose request never
// reached its owner, or was cut before it answered (its first item is
// that error), is made again on the reopened index, as a query is (review
// O5: pairs failed, with the index free). One that yielded is not made
// again: its caller has its first part.
func retryStream[T any](h *handover, call func(index) iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		d := h.current()
		first := true
		for v, err := range call(d) {
			if err != nil && first {
				nd, oerr := h.again(d, err, true) // NB: nothing yielded yet
				if nd != nil {
					for v, err := range call(nd) {
						if !yield(v, err) {
							return
						}
					}
					return
				}
				if oerr != nil {
					err = fmt.Errorf("%w; its owner ended, and opening the index again failed: %w", err, oerr)
				}
			}
			first = false
			if !yield(v, err) {
				return
			}
		}
	}
}

// closeAll closes the current index.
func (h *handover) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.close()
	}
}

func (h *handover) Close() error {
	h.closeAll()
	return nil
}
