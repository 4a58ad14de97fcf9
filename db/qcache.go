package db

import (
	"sync"
	"unsafe"

	"github.com/lshdb/lshdb/codec"
)

// queryCache holds what queries read and derive from the index, so that a
// query whose candidates and buckets were seen recently does not read and
// re-shingle them again. It has two kinds of entries in one byte budget
// (Options.QueryCacheSize), evicted least recently used first:
//
//   - a doc entry, by doc number: the record's id and set size, the
//     candidate's verification elements (text mode: its shingle hashes as
//     the text gives them; sets mode: its widened 32-bit set) once a query
//     derived them, and its signature once a query derived it (a match).
//     A record never changes under its number (doc numbers are never
//     reused: an upsert gets a new one, see writeLockedCount and Load), so
//     a doc entry never goes stale; a deleted document's entry is dropped
//     (forget) and could not be asked for anyway: no posting names it.
//   - a list entry, by posting key: the live doc numbers of the posting
//     list, tagged with the version of the view they were read from (the
//     counters record, read through the query's own iterator). Every write
//     that changes a posting list — PutBatch, DeleteIDs, Load — writes the
//     counters in the same atomic batch or ingest, and (NextDoc, Live)
//     never repeats (NextDoc only grows; with it unchanged, only deletes
//     write, and they lower Live). A list entry serves only a query whose
//     view has the same version, so a write makes every list entry stale
//     at once, with no invalidation to get wrong, and a query with an
//     older iterator never sees a newer list. (PurgeEmptyLists deletes
//     lists without live postings and writes no counters: it changes no
//     list's live doc numbers.)
//
// NB: measured with BenchmarkQuery (100,000 documents, queries near a
// stored one; see the commit that added it), the posting seeks were half of
// a warm query's time and the candidates' seeks, re-shingling and
// signatures a third; a cold candidate still pays all of them.
type queryCache struct {
	shards [cacheShards]cacheShard
}

const cacheShards = 16

type cacheShard struct {
	mu       sync.Mutex
	docs     map[uint64]*cacheEntry
	lists    map[uint64]*cacheEntry // by listKey
	lru      cacheEntry             // sentinel: lru.next is the most recently used
	bytes    int64
	maxBytes int64
}

// cacheEntry is a doc entry or a list entry (list is set).
type cacheEntry struct {
	prev, next *cacheEntry
	size       int64

	list bool
	doc  uint64 // doc entries
	key  uint64 // list entries: listKey

	cachedDoc
	version codec.Counters // list entries
	docs    []uint64       // list entries: the live doc numbers
}

// cachedDoc is what a doc entry holds. Its slices are never modified once
// cached: readers use them without a copy.
type cachedDoc struct {
	id     string
	setLen int
	meta   []byte   // the record's metadata; nil: none
	elems  []uint64 // nil: not derived yet
	sig    []uint32 // nil: not derived yet
	// expires is the record's expiry (Unix nanoseconds; 0: never): a hit
	// after it is no hit.
	expires int64
}

// entryOverhead is the bytes counted for an entry besides its slices and
// id: the entry, its map slot and the slice headers, roughly.
const entryOverhead = int64(unsafe.Sizeof(cacheEntry{})) + 48

// newQueryCache returns a cache of about maxBytes, or nil (no cache) for
// maxBytes ≤ 0.
func newQueryCache(maxBytes int64) *queryCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &queryCache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.docs = make(map[uint64]*cacheEntry)
		s.lists = make(map[uint64]*cacheEntry)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
		s.maxBytes = max(1, maxBytes/cacheShards)
	}
	return c
}

func (c *queryCache) docShard(n uint64) *cacheShard {
	return &c.shards[(n*0x9E3779B97F4A7C15)>>(64-4)]
}

// listKey packs a posting key in a uint64: a bucket is below 2^32
// (codec.BucketOf) and a band below 2^16 (codec.MaxBands). NB: a map of
// uint64 keys takes the runtime's fast path for them.
func listKey(k postingKey) uint64 { return uint64(k.band)<<32 | k.bucket }

func (c *queryCache) listShard(k uint64) *cacheShard {
	return &c.shards[(k*0x9E3779B97F4A7C15)>>(64-4)]
}

// getDoc returns doc n's entry.
func (c *queryCache) getDoc(n uint64) (cachedDoc, bool) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.docs[n]
	if !ok {
		return cachedDoc{}, false
	}
	s.touch(e)
	return e.cachedDoc, true
}

// putDoc caches what d holds of doc n, keeping what the cache already has
// that d lacks. It takes ownership of d's slices.
func (c *queryCache) putDoc(n uint64, d cachedDoc) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.docs[n]; ok {
		if d.elems == nil {
			d.elems = e.elems
		}
		if d.sig == nil {
			d.sig = e.sig
		}
		s.remove(e)
	}
	e := &cacheEntry{doc: n, cachedDoc: d}
	e.size = entryOverhead + int64(len(d.id)) + int64(len(d.meta)) + 8*int64(cap(d.elems)) + 4*int64(cap(d.sig))
	if e.size > s.maxBytes {
		return
	}
	s.docs[n] = e
	s.add(e)
}

// forget drops doc n's entry (the document was deleted or replaced).
func (c *queryCache) forget(n uint64) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.docs[n]; ok {
		s.remove(e)
	}
}

// getList returns the live doc numbers of the posting list k as of
// version, if cached.
func (c *queryCache) getList(pk postingKey, version codec.Counters) ([]uint64, bool) {
	k := listKey(pk)
	s := c.listShard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.lists[k]
	if !ok || e.version != version {
		return nil, false
	}
	s.touch(e)
	return e.docs, true
}

// putList caches the live doc numbers of posting list k as of version,
// unless the cache holds the list as of a later version. It takes
// ownership of docs.
func (c *queryCache) putList(pk postingKey, version codec.Counters, docs []uint64) {
	k := listKey(pk)
	s := c.listShard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.lists[k]; ok {
		if newerVersion(e.version, version) {
			return
		}
		s.remove(e)
	}
	e := &cacheEntry{list: true, key: k, version: version, docs: docs}
	e.size = entryOverhead + 8*int64(cap(docs))
	s.lists[k] = e
	s.add(e)
}

// newerVersion reports whether counters a are of a later state of the
// index than b (see queryCache).
func newerVersion(a, b codec.Counters) bool {
	return a.NextDoc > b.NextDoc || (a.NextDoc == b.NextDoc && a.Live < b.Live)
}

func (s *cacheShard) touch(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	s.pushFront(e)
}

func (s *cacheShard) pushFront(e *cacheEntry) {
	e.prev, e.next = &s.lru, s.lru.next
	e.prev.next, e.next.prev = e, e
}

func (s *cacheShard) add(e *cacheEntry) {
	s.pushFront(e)
	s.bytes += e.size
	for s.bytes > s.maxBytes {
		s.remove(s.lru.prev)
	}
}

func (s *cacheShard) remove(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	s.bytes -= e.size
	if e.list {
		delete(s.lists, e.key)
	} else {
		delete(s.docs, e.doc)
	}
}
