package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/rediskv"
)

// view is what a read sees of the index: point reads of the id map, the
// document records and the posting lists. It is the read side of the
// storage seam (code-review §1.4): queries, Get, Explain and Bucket read
// through it, so that they run unchanged on Pebble and on Redis.
//
// Pebble's view is one iterator, a consistent point-in-time view by
// itself. Redis's reads the cluster as it is (a cluster has no snapshot)
// and pays a round trip per read, so a caller that knows what it reads
// next says so with prefetchPostings and prefetchRecords, and the Redis
// view reads them all in one pipelined round trip per node.
//
// A view is one goroutine's.
type view interface {
	// docNum returns the doc number of id; ok is false when id is not
	// stored.
	docNum(id string) (n uint64, ok bool, err error)
	// record returns the record of doc n, valid until the next call; ok
	// is false when there is none (on Redis, also when it is being
	// retired: see gone).
	record(n uint64) (v []byte, ok bool, err error)
	// postings appends to dst the doc numbers of the live postings of a
	// posting list (none when it is absent).
	postings(dst []uint64, band int, bucket uint64) ([]uint64, error)
	// version returns the counters the view sees: the tag of the query
	// cache's entries (Pebble only; the cache is off on Redis).
	version() (codec.Counters, error)
	// prefetchPostings says that the caller reads next the posting list
	// of bucket keys[band] in every band; prefetchRecords, the records
	// of nums.
	prefetchPostings(keys []uint64) error
	prefetchRecords(nums []uint64) error
	// gone reports whether a posting may name a document with no record
	// (true on Redis, where a write is several steps: the reader skips
	// such a posting), or whether that is corruption (Pebble).
	gone() bool
}

// pebbleView reads through one Pebble iterator.
type pebbleView struct {
	it   *pebble.Iterator
	kbuf []byte
	ps   []codec.Posting
}

func (v *pebbleView) docNum(id string) (uint64, bool, error) {
	v.kbuf = codec.AppendIDKey(v.kbuf[:0], id)
	b, ok, err := seekExact(v.it, v.kbuf)
	if err != nil || !ok {
		return 0, false, err
	}
	n, err := codec.DecodeDocNum(b)
	return n, err == nil, classify(err)
}

func (v *pebbleView) record(n uint64) ([]byte, bool, error) {
	v.kbuf = codec.AppendDocKey(v.kbuf[:0], n)
	return seekExact(v.it, v.kbuf)
}

func (v *pebbleView) postings(dst []uint64, band int, bucket uint64) ([]uint64, error) {
	v.kbuf = codec.AppendPostingKey(v.kbuf[:0], band, bucket)
	b, ok, err := seekExact(v.it, v.kbuf)
	if err != nil || !ok {
		return dst, err
	}
	if v.ps, err = codec.DecodePostings(b, v.ps[:0]); err != nil {
		return dst, classify(fmt.Errorf("posting list of band %d, bucket %08x: %w", band, bucket, err))
	}
	for _, p := range v.ps {
		if !p.Remove {
			dst = append(dst, p.Doc)
		}
	}
	return dst, nil
}

func (v *pebbleView) version() (codec.Counters, error) { return viewVersion(v.it) }

// NB: Pebble's reads are local: nothing to gain from knowing them ahead.
func (v *pebbleView) prefetchPostings([]uint64) error { return nil }
func (v *pebbleView) prefetchRecords([]uint64) error  { return nil }
func (v *pebbleView) gone() bool                      { return false }

// openView returns a view of the index for one goroutine and the function
// that releases it. On Pebble it reads r (the DB, or a snapshot shared by
// several views); pv, when not nil, is reused for its buffers. On Redis
// its reads use ctx.
func (db *DB) openView(ctx context.Context, r pebble.Reader, pv *pebbleView) (view, func(), error) {
	if db.rkv != nil {
		if err := db.goneRead(); err != nil {
			return nil, nil, err
		}
		return &redisView{ctx: ctx, s: db.rkv}, func() {}, nil
	}
	it, err := db.queryIter(r)
	if err != nil {
		return nil, nil, err
	}
	if pv == nil {
		pv = new(pebbleView)
	}
	pv.it = it
	return pv, func() { it.Close(); pv.it = nil }, nil
}

// redisView reads a Redis index, from what it prefetched where it can.
type redisView struct {
	ctx   context.Context
	s     *rediskv.Store
	lists map[postingKey][]uint64
	recs  map[uint64][]byte
}

func (v *redisView) docNum(id string) (uint64, bool, error) {
	ns, err := v.s.DocNums(v.ctx, []string{id})
	if err != nil {
		return 0, false, redisErr(err)
	}
	return ns[0], ns[0] != 0, nil
}

func (v *redisView) record(n uint64) ([]byte, bool, error) {
	if r, ok := v.recs[n]; ok {
		return r, r != nil, nil
	}
	rs, err := v.s.Records(v.ctx, []uint64{n})
	if err != nil {
		return nil, false, redisErr(err)
	}
	return rs[0], rs[0] != nil, nil
}

func (v *redisView) postings(dst []uint64, band int, bucket uint64) ([]uint64, error) {
	if l, ok := v.lists[postingKey{band, bucket}]; ok {
		return append(dst, l...), nil
	}
	ls, err := v.s.Postings(v.ctx, []rediskv.BandBucket{{Band: band, Bucket: bucket}})
	if err != nil {
		return dst, redisErr(err)
	}
	return append(dst, ls[0]...), nil
}

func (v *redisView) version() (codec.Counters, error) { return codec.Counters{}, nil }

func (v *redisView) prefetchPostings(keys []uint64) error {
	lists := make([]rediskv.BandBucket, len(keys))
	for band, k := range keys {
		lists[band] = rediskv.BandBucket{Band: band, Bucket: k}
	}
	ls, err := v.s.Postings(v.ctx, lists)
	if err != nil {
		return redisErr(err)
	}
	v.lists = make(map[postingKey][]uint64, len(keys))
	for band, k := range keys {
		v.lists[postingKey{band, k}] = ls[band]
	}
	return nil
}

func (v *redisView) prefetchRecords(nums []uint64) error {
	if len(nums) == 0 {
		return nil
	}
	rs, err := v.s.Records(v.ctx, nums)
	if err != nil {
		return redisErr(err)
	}
	v.recs = make(map[uint64][]byte, len(nums))
	for i, n := range nums {
		v.recs[n] = rs[i]
	}
	return nil
}

func (v *redisView) gone() bool { return true }

// keepNamed returns, in order, the xs whose ids name their documents now
// (of gives each one's id and doc number), in one pipelined read: a
// version being replaced, or one a write that stopped part way left, no
// id names.
func keepNamed[T any](v *redisView, xs []T, of func(T) (string, uint64)) ([]T, error) {
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i], _ = of(x)
	}
	now, err := v.s.DocNums(v.ctx, ids)
	if err != nil {
		return nil, redisErr(err)
	}
	k := 0
	for i, x := range xs {
		if _, n := of(x); now[i] == n {
			xs[k] = x
			k++
		}
	}
	clear(xs[k:])
	return xs[:k], nil
}

// errGone says that a posting named a document with no record, on a
// backend where that is a write in progress, not corruption (view.gone).
var errGone = errors.New("lshdb: the document is being written or retired")
