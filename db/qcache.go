package db

import (
	"slices"
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
//     A write never changes a record under its number (doc numbers are
//     never reused: an upsert gets a new one, see writeLockedCount and
//     Load); a deleted document's entry is dropped (forget) and could not
//     be asked for anyway: no posting names it. Only Repair rewrites
//     records under their numbers: it drops their entries once its write
//     is visible, and from then on no query whose view is older than the
//     repair caches a record (rewrote: docFloor), or one that read the
//     record as it was would cache it after the drop and answer every
//     later query from it (a reviewer's C1).
//   - a list entry, by posting key: the live doc numbers of the posting
//     list, tagged with the version of the view they were read from (the
//     counters record, read through the query's own iterator). Every write
//     that changes a posting list — PutBatch, DeleteIDs, the expiry sweep
//     (all through commit), Load — writes the counters in the same atomic
//     batch or ingest, and (NextDoc, Live) never repeats and is ordered
//     (newerVersion: NextDoc only grows; with it unchanged, only deletes
//     write, and they lower Live). Before its write becomes visible, a
//     writer records in the cache the version it writes for every list it
//     changes (changing; a load, for all lists: changingAll). A list
//     entry of version v serves a query whose view has version w when the
//     latest recorded change of the list is at or before both v and w: no
//     write between the two changed it, so the list at v is the list at
//     w. A write therefore makes stale only the entries of the lists it
//     changes (with every write making every entry stale, as this cache
//     first did, a mix of 10% synced puts and 90% queries re-read almost
//     every posting list: a quarter of the process's CPU in BenchmarkMixed),
//     and a query with an older iterator never sees a newer list.
//     (PurgeEmptyLists deletes lists without live postings and writes no
//     counters: it changes no list's live doc numbers.)
//
// NB: measured with BenchmarkQuery (100,000 documents, queries near a
// stored one; see the commit that added it), the posting seeks were half of
// a warm query's time and the candidates' seeks, re-shingling and
// signatures a third; a cold candidate still pays all of them.
//
// NB: the cache holds no pointers but its payloads. Its entries live in a
// pointer-free slice per shard, linked by slot numbers, its maps go from
// uint64 to a slot, and each entry's id, metadata, elements, signature or
// posting list are packed into one []uint64 the entry owns. The garbage
// collector therefore scans one slice header per entry (the shard's data)
// and marks one pointer-free object per entry, and nothing else of the
// cache. With the pointer-linked cache this replaced
// (an object with seven pointers per entry, maps of pointers, separate
// id, metadata and slice objects) a GC cycle's mark phase took a median
// 48 ms on a full 64 MiB cache, against 7 ms with no cache and 12-16 ms
// with this layout (BenchmarkMixed under GODEBUG=gctrace=1, one run
// each); while it marks, the collector takes a share of both cores and
// drafts allocating requests into marking, and most of the slowest 2% of
// operations under a mixed load fell in those phases.
type queryCache struct {
	shards [cacheShards]cacheShard
}

const cacheShards = 16

type cacheShard struct {
	mu    sync.Mutex
	docs  map[uint64]int32 // doc number → slot
	lists map[uint64]int32 // listKey → slot
	// ents are the entries by slot; slot 0 is the LRU list's sentinel:
	// ents[0].next is the most recently used.
	ents []cacheEntry
	// data are the entries' payloads by slot (see cacheEntry). A payload
	// is never modified once stored: readers use views of it without a
	// copy, and an evicted payload lives on as long as a reader holds one.
	data     [][]uint64
	free     []int32 // unused slots
	bytes    int64
	maxBytes int64
	// changed holds, by a hash of the listKey (changedSlot), the version
	// of the latest write that changed a list of that slot (recorded
	// before the write became visible): at or after the latest change of
	// each list of the slot, so a list is taken as changed when another
	// of its slot was, never the other way round. floor is the version
	// of the latest write that changed every list (a load).
	//
	// NB: a slot per hash, not a map of lists: a batch of 1,000 new
	// documents changes 16,000 lists, whose map inserts (and the map
	// emptied into floor when full, which made every entry of the shard
	// stale) took 0.48 of the 1.29 CPU-s the writer spent holding its
	// lock in 300 batches of BenchmarkPut with the batches' postings and
	// records left out (an experiment), the posting sort 0.37.
	changed    []codec.Counters
	changedLog uint
	floor      codec.Counters
	// docFloor is the version of the latest repair that rewrote records
	// under their numbers: a doc entry read from an older view is not
	// kept (see rewrote).
	docFloor codec.Counters
	// listHits counts the list entries served, listAcross those of them
	// served to a view of another version than their own, listStale the
	// entries found but not served (changed since, or read before a
	// change).
	listHits, listAcross, listStale, listMisses int64
	docHits, docMisses                          int64
	// seen is the doorkeeper of list entries (seenBefore): a bit per
	// hash of recently offered lists, seenAdds bits set since it was
	// last emptied.
	seen     []uint64
	seenLog  uint
	seenAdds int
}

// cacheEntry is a doc entry or a list entry (list is set). It holds no
// pointer: its variable-length parts are in the shard's data[slot], as
//
//	doc entry:  elems (nElems words), then the signature (nSig uint32s,
//	            two to a word), then the id's bytes and the metadata's
//	            bytes (idLen + metaLen bytes, eight to a word)
//	list entry: the posting list's live doc numbers
type cacheEntry struct {
	prev, next int32
	list       bool
	hasElems   bool // a doc entry's elements were derived (nElems may be 0)
	hasSig     bool
	hasMeta    bool
	key        uint64 // a doc entry's doc number, a list entry's listKey
	size       int64
	version    codec.Counters // list entries
	setLen     int
	expires    int64
	nElems     int32
	nSig       int32
	idLen      int32
	metaLen    int32
}

// cachedDoc is what a doc entry holds. Its slices are never modified once
// cached: readers use them without a copy. NB: id, meta, elems and sig
// returned by getDoc are views of the entry's payload; a reader that keeps
// any of them past the query copies it, so that a kept id does not keep a
// candidate's elements alive.
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

// entryOverhead is the bytes counted for an entry besides its payload:
// the entry, its payload's slice header and its map slot, roughly.
const entryOverhead = int64(unsafe.Sizeof(cacheEntry{})) + 24 + 16

// newQueryCache returns a cache of about maxBytes, or nil (no cache) for
// maxBytes ≤ 0.
func newQueryCache(maxBytes int64) *queryCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &queryCache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.docs = make(map[uint64]int32)
		s.lists = make(map[uint64]int32)
		s.ents = []cacheEntry{{}} // the sentinel, linked to itself
		s.data = [][]uint64{nil}
		s.maxBytes = max(1, maxBytes/cacheShards)
		// NB: about 1/16 of the budget (16 bytes a slot, a power of
		// two): 16,384 slots a shard at the default size, 262,144 in all,
		// the lists of about 16,000 puts of 16 bands.
		s.changedLog = 6
		for s.changedLog < 24 && int64(1)<<(s.changedLog+1)*16*16 <= s.maxBytes {
			s.changedLog++
		}
		s.changed = make([]codec.Counters, 1<<s.changedLog)
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
	return &c.shards[c.listShardIndex(k)]
}

func (c *queryCache) listShardIndex(k uint64) uint64 {
	return (k * 0x9E3779B97F4A7C15) >> (64 - 4)
}

// getDoc returns doc n's entry; its parts are views of the cache's
// payload (see cachedDoc).
func (c *queryCache) getDoc(n uint64) (cachedDoc, bool) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.docs[n]
	if !ok {
		s.docMisses++
		return cachedDoc{}, false
	}
	s.docHits++
	s.touch(i)
	return s.viewDoc(i), true
}

// putDoc caches what d holds of doc n, read from a view of version,
// keeping what the cache already has that d lacks. It copies d's parts:
// the caller keeps its slices. A view older than the latest repair's keeps
// nothing (see rewrote).
func (c *queryCache) putDoc(n uint64, d cachedDoc, version codec.Counters) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if newerVersion(s.docFloor, version) {
		return
	}
	if i, ok := s.docs[n]; ok {
		if d.elems == nil || d.sig == nil {
			old := s.viewDoc(i)
			if d.elems == nil {
				d.elems = old.elems
			}
			if d.sig == nil {
				d.sig = old.sig
			}
		}
		s.remove(i)
	}
	sigWords := (len(d.sig) + 1) / 2
	byteWords := (len(d.id) + len(d.meta) + 7) / 8
	words := len(d.elems) + sigWords + byteWords
	size := entryOverhead + 8*int64(words)
	if size > s.maxBytes {
		return
	}
	p := make([]uint64, words)
	copy(p, d.elems)
	if len(d.sig) > 0 {
		copy(unsafe.Slice((*uint32)(unsafe.Pointer(&p[len(d.elems)])), len(d.sig)), d.sig)
	}
	if byteWords > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&p[len(d.elems)+sigWords])), 8*byteWords)
		copy(b[copy(b, d.id):], d.meta)
	}
	i := s.alloc(p)
	s.ents[i] = cacheEntry{
		key: n, size: size, setLen: d.setLen, expires: d.expires,
		hasElems: d.elems != nil, hasSig: d.sig != nil, hasMeta: d.meta != nil,
		nElems: int32(len(d.elems)), nSig: int32(len(d.sig)), idLen: int32(len(d.id)), metaLen: int32(len(d.meta)),
	}
	s.docs[n] = i
	s.add(i)
}

// viewDoc decodes slot i's payload into views of it (see cachedDoc),
// without touching the entry. The caller holds s.mu.
func (s *cacheShard) viewDoc(i int32) cachedDoc {
	e, p := &s.ents[i], s.data[i]
	d := cachedDoc{setLen: e.setLen, expires: e.expires}
	if e.hasElems {
		d.elems = p[:e.nElems:e.nElems]
	}
	p = p[e.nElems:]
	if e.hasSig {
		d.sig = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(p))), e.nSig)
	}
	if p = p[(e.nSig+1)/2:]; len(p) > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p))), 8*len(p))
		d.id = unsafe.String(unsafe.SliceData(b), e.idLen)
		if e.hasMeta {
			d.meta = b[e.idLen : e.idLen+e.metaLen : e.idLen+e.metaLen]
		}
	} else if e.hasMeta {
		d.meta = []byte{}
	}
	return d
}

// forget drops doc n's entry (the document was deleted or replaced).
func (c *queryCache) forget(n uint64) {
	s := c.docShard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.docs[n]; ok {
		s.remove(i)
	}
}

// rewrote records that a repair of version rewrote the records of nums
// under their numbers, once its write is visible: it drops their entries,
// and no query whose view is older than version caches a record from then
// on. NB: a query's check (putDoc) and this drop take the shard's lock, so
// an entry a query put from an older view is either dropped here or never
// put.
func (c *queryCache) rewrote(version codec.Counters, nums []uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.docFloor = version
		s.mu.Unlock()
	}
	for _, n := range nums {
		c.forget(n)
	}
}

// getList returns the live doc numbers of the posting list k as of
// version, if cached and unchanged since (see unchanged): a view of the
// cache's payload, never modified.
func (c *queryCache) getList(pk postingKey, version codec.Counters) ([]uint64, bool) {
	k := listKey(pk)
	s := c.listShard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lists[k]
	if !ok {
		s.listMisses++
		return nil, false
	}
	if !s.unchanged(k, s.ents[i].version, version) {
		s.listStale++
		return nil, false
	}
	s.listHits++
	if s.ents[i].version != version {
		s.listAcross++
	}
	s.touch(i)
	p := s.data[i]
	return p[:len(p):len(p)], true
}

// putList caches the live doc numbers of posting list k as of version,
// unless a write changed the list since that version (the entry could
// serve no query), the cache holds the list as of a later version, or
// the list was not offered recently (seenBefore). It copies docs.
func (c *queryCache) putList(pk postingKey, version codec.Counters, docs []uint64) {
	k := listKey(pk)
	s := c.listShard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.unchanged(k, version, version) {
		return // changed since the caller's view: stale for every query
	}
	if i, ok := s.lists[k]; ok {
		if newerVersion(s.ents[i].version, version) {
			return
		}
		s.remove(i)
	} else if !s.seenBefore(k) {
		return
	}
	size := entryOverhead + 8*int64(len(docs))
	if size > s.maxBytes {
		return
	}
	i := s.alloc(slices.Clone(docs))
	s.ents[i] = cacheEntry{list: true, key: k, version: version, size: size}
	s.lists[k] = i
	s.add(i)
}

// seenBefore reports whether list k was offered to the cache recently,
// and notes that it was. NB: a list is cached the second time a query
// reads it (a doorkeeper, as in TinyLFU): most posting lists of a large
// index hold a few documents and are read once in a long while, and
// caching each on its first read made the cache's own copies and
// evictions a sixth of what a query through the API allocated
// (BenchmarkMixed: a quarter of list reads were hits).
func (s *cacheShard) seenBefore(k uint64) bool {
	if s.seen == nil {
		// NB: a bit per 64 bytes of budget (65,536 bits a shard at the
		// default size: about twice the lists the shard can hold),
		// between 1,024 and 2^20 bits.
		s.seenLog = 10
		for s.seenLog < 20 && int64(1)<<(s.seenLog+6) < s.maxBytes {
			s.seenLog++
		}
		s.seen = make([]uint64, (1<<s.seenLog)/64)
	}
	h := (k * 0xBF58476D1CE4E5B9) >> (64 - s.seenLog)
	w, bit := h/64, uint64(1)<<(h%64)
	if s.seen[w]&bit != 0 {
		return true
	}
	// NB: emptied once a quarter of its bits were set, so that "recently"
	// means the last bits/4 new lists of the shard (16,384 at the default
	// size) and false positives stay below a quarter.
	if s.seenAdds++; s.seenAdds > 1<<s.seenLog/4 {
		clear(s.seen)
		s.seenAdds = 0
	}
	s.seen[w] |= bit
	return false
}

// metrics sums the shards' figures.
func (c *queryCache) metrics() QueryCacheMetrics {
	var m QueryCacheMetrics
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		m.Bytes += s.bytes
		m.Docs += int64(len(s.docs))
		m.Lists += int64(len(s.lists))
		m.DocHits += s.docHits
		m.DocMisses += s.docMisses
		m.ListHits += s.listHits
		m.ListStale += s.listStale
		m.ListMisses += s.listMisses
		s.mu.Unlock()
	}
	return m
}

// unchanged reports whether no write changed list k between versions v
// and w: its latest recorded change is at or before both. The caller
// holds s.mu.
func (s *cacheShard) unchanged(k uint64, v, w codec.Counters) bool {
	last := s.floor
	if c := s.changed[s.changedSlot(k)]; newerVersion(c, last) {
		last = c
	}
	return !newerVersion(last, v) && !newerVersion(last, w)
}

// changedSlot is list k's slot in s.changed. NB: a multiplier of its own,
// not the shard's (listShardIndex) or the doorkeeper's (seenBefore), so
// that the lists of one shard spread over its slots.
func (s *cacheShard) changedSlot(k uint64) uint64 {
	return (k * 0x94D049BB133111EB) >> (64 - s.changedLog)
}

// changing records that a write of version changes the posting lists
// keys. The writer calls it before the write becomes visible to any
// query (and holds db.wmu: versions are recorded in order).
//
// NB: the keys are placed by shard first, and each shard locked once: a
// batch of 1,000 new documents changes 16,000 lists, and a lock per list
// was a tenth of the write lock's hold.
func (c *queryCache) changing(keys []postingKey, version codec.Counters) {
	var start [cacheShards + 1]int
	for _, pk := range keys {
		start[c.listShardIndex(listKey(pk))+1]++
	}
	for i := 1; i <= cacheShards; i++ {
		start[i] += start[i-1]
	}
	next := start
	byShard := make([]uint64, len(keys))
	for _, pk := range keys {
		k := listKey(pk)
		i := c.listShardIndex(k)
		byShard[next[i]] = k
		next[i]++
	}
	for i := range c.shards {
		if start[i] == start[i+1] {
			continue
		}
		s := &c.shards[i]
		s.mu.Lock()
		for _, k := range byShard[start[i]:start[i+1]] {
			// NB: versions come in order (the writer holds db.wmu), so
			// the slot's latest is this one.
			s.changed[s.changedSlot(k)] = version
		}
		s.mu.Unlock()
	}
}

// changingAll records that a write of version (a load) changes any
// posting list: every list entry older than it becomes stale.
func (c *queryCache) changingAll(version codec.Counters) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.floor = version
		s.mu.Unlock()
	}
}

// newerVersion reports whether counters a are of a later state of the
// index than b (see queryCache).
func newerVersion(a, b codec.Counters) bool {
	return a.NextDoc > b.NextDoc || (a.NextDoc == b.NextDoc && a.Live < b.Live)
}

// alloc returns a free slot holding payload p; the caller fills its entry.
func (s *cacheShard) alloc(p []uint64) int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.data[i] = p
		return i
	}
	s.ents = append(s.ents, cacheEntry{})
	s.data = append(s.data, p)
	return int32(len(s.ents) - 1)
}

func (s *cacheShard) touch(i int32) {
	e := &s.ents[i]
	s.ents[e.prev].next, s.ents[e.next].prev = e.next, e.prev
	s.pushFront(i)
}

func (s *cacheShard) pushFront(i int32) {
	first := s.ents[0].next
	s.ents[i].prev, s.ents[i].next = 0, first
	s.ents[first].prev, s.ents[0].next = i, i
}

// add links the filled slot i as the most recently used and evicts the
// least recently used entries until the shard is within its budget.
func (s *cacheShard) add(i int32) {
	s.pushFront(i)
	s.bytes += s.ents[i].size
	for s.bytes > s.maxBytes {
		s.remove(s.ents[0].prev)
	}
}

func (s *cacheShard) remove(i int32) {
	e := &s.ents[i]
	s.ents[e.prev].next, s.ents[e.next].prev = e.next, e.prev
	s.bytes -= e.size
	if e.list {
		delete(s.lists, e.key)
	} else {
		delete(s.docs, e.key)
	}
	*e = cacheEntry{}
	s.data[i] = nil
	s.free = append(s.free, i)
}
