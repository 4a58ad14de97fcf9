package db

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Pair is a verified near-duplicate pair: A was inserted before B.
type Pair struct {
	A, B    string
	Jaccard float64
}

// DefaultPairsMemory is the default PairsOptions.Memory: 256 MiB.
const DefaultPairsMemory = 256 << 20

// HotList is the number of distinct shingle sets above which a posting list
// counts as hot in PairsStats.
const HotList = 1000

// PairsOptions adjust Pairs and Clusters. A nil *PairsOptions means the
// defaults.
type PairsOptions struct {
	// Threshold is the least Jaccard reported, in (0, 1]. Default: the
	// database's threshold.
	Threshold float64
	// Memory bounds the candidate pairs held in memory; the rest spill to
	// sorted runs on disk. Default: DefaultPairsMemory (256 MiB).
	Memory int
	// Stats, if set, is filled in when the iteration ends.
	Stats *PairsStats
}

// PairsStats says what a Pairs run did, including the work that stays
// quadratic in a bucket's size.
type PairsStats struct {
	Docs int
	// IdenticalGroups are the groups of two or more documents with equal
	// shingle sets; their IdenticalPairs are reported at Jaccard 1 without
	// verification, and each group takes part in candidate generation once.
	IdenticalGroups int
	IdenticalPairs  int64
	// Lists are the posting lists read; HotLists those with more than
	// HotList distinct sets, LargestList the most distinct sets in one.
	Lists, HotLists, LargestList int
	// Candidates are the candidate pairs of distinct sets generated, over
	// all bands (the quadratic part: Σ m(m−1)/2 over lists of m distinct
	// sets, minus pairs the size filter rules out); Verified the distinct
	// ones checked with exact Jaccard, Matched those that reached the
	// threshold; Reported the pairs yielded (matched pairs of groups
	// expand to every member).
	Candidates, Verified, Matched, Reported int64
	// Spilled reports whether candidate pairs spilled to disk.
	Spilled bool
}

// pairsIndex is what Pairs keeps per document: 24 bytes plus the id.
type pairsIndex struct {
	nums    []uint64  // doc numbers, ascending
	ids     []string  // external ids
	sizes   []uint32  // shingle set sizes
	rep     []int32   // the group representative (first doc with the same set)
	groups  [][]int32 // members of groups with two or more, by representative
	groupOf map[int32]int
}

func (x *pairsIndex) find(n uint64) (int, bool) {
	// NB: doc numbers are dense until deletes and upserts leave gaps; a
	// bulk-built index finds every document at its first guess.
	if len(x.nums) > 0 && n >= x.nums[0] {
		if i := n - x.nums[0]; i < uint64(len(x.nums)) && x.nums[i] == n {
			return int(i), true
		}
	}
	return slices.BinarySearch(x.nums, n)
}

// members returns the documents a representative stands for.
func (x *pairsIndex) members(rep int32) []int32 {
	if g, ok := x.groupOf[rep]; ok {
		return x.groups[g]
	}
	return []int32{rep}
}

func loadPairsIndex(r pebble.Reader) (*pairsIndex, error) {
	x := &pairsIndex{groupOf: map[int32]int{}}
	first := make(map[uint64]int32)
	var derr error
	err := scan(r, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		n, err := codec.ParseDocKey(k)
		var view codec.DocView
		if err == nil {
			view, err = codec.ParseDocView(v)
		}
		if err != nil {
			derr = classify(fmt.Errorf("doc record %x: %w", k, err))
			return
		}
		i := int32(len(x.nums))
		x.nums = append(x.nums, n)
		x.ids = append(x.ids, string(view.ID))
		x.sizes = append(x.sizes, uint32(view.SetLen))
		fp := view.SetFingerprint()
		r, seen := first[fp]
		if !seen {
			first[fp], r = i, i
		}
		x.rep = append(x.rep, r)
		if seen {
			g, ok := x.groupOf[r]
			if !ok {
				g = len(x.groups)
				x.groupOf[r] = g
				x.groups = append(x.groups, []int32{r})
			}
			x.groups[g] = append(x.groups[g], i)
		}
	})
	return x, cmp.Or(derr, err)
}

// Pairs returns every pair of stored documents whose exact Jaccard reaches
// the threshold among those that share a band, each pair once, in no
// particular order, from one snapshot. A is the earlier inserted.
//
// Documents with identical shingle sets are grouped first: their pairs are
// reported at Jaccard 1 without verification and each group is one
// candidate, so thousands of copies of one document do not make a bucket
// quadratic. Candidate pairs are generated band by band, sorted within
// PairsOptions.Memory (spilling to disk), and each distinct pair is
// verified once, on every core. Memory beyond that budget is about 60 bytes
// per document (ids, sizes, groups).
func (db *DB) Pairs(po *PairsOptions) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		if err := db.enter(); err != nil {
			yield(Pair{}, err)
			return
		}
		defer db.mu.RUnlock()
		var o PairsOptions
		if po != nil {
			o = *po
		}
		if o.Threshold == 0 {
			o.Threshold = db.man.Threshold
		}
		if !(o.Threshold > 0 && o.Threshold <= 1) {
			yield(Pair{}, invalid("pairs threshold %v is outside (0, 1]", o.Threshold))
			return
		}
		if o.Memory == 0 {
			o.Memory = DefaultPairsMemory
		}
		st := &PairsStats{}
		if o.Stats != nil {
			defer func() { *o.Stats = *st }()
		}
		if err := db.pairs(o, st, yield); err != nil && !errors.Is(err, errStopped) {
			yield(Pair{}, err)
		}
	}
}

var errStopped = errors.New("lshdb: iteration stopped")

func (db *DB) pairs(o PairsOptions, st *PairsStats, yield func(Pair, error) bool) error {
	t := o.Threshold
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	x, err := loadPairsIndex(snap)
	if err != nil {
		return err
	}
	st.Docs = len(x.nums)
	st.IdenticalGroups = len(x.groups)
	emit := func(a, b int32, j float64) bool {
		if a > b {
			a, b = b, a
		}
		st.Reported++
		return yield(Pair{A: x.ids[a], B: x.ids[b], Jaccard: j}, nil)
	}
	// Identical sets: every pair of a group, at Jaccard 1.
	for _, g := range x.groups {
		for i := range g {
			for _, b := range g[i+1:] {
				st.IdenticalPairs++
				if !emit(g[i], b, 1) {
					return errStopped
				}
			}
		}
	}

	// Candidates: pairs of distinct representatives sharing a list.
	fs := db.opts.FS
	tmp := fs.PathJoin(db.dir, fmt.Sprintf("lshdb-pairs-%p.tmp", st))
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer fs.RemoveAll(tmp)
	sorter := newU64Sorter(fs, tmp, o.Memory)
	defer sorter.close()
	var ps []codec.Posting
	var reps []int32
	var derr error
	inPair := make([]uint64, (len(x.nums)+63)/64) // bit i: doc i is in a candidate pair
	err = scan(snap, codec.PostingPrefix, codec.PostingPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		if ps, derr = codec.DecodePostings(v, ps[:0]); derr != nil {
			derr = classify(fmt.Errorf("posting list %x: %w", k, derr))
			return
		}
		st.Lists++
		reps = reps[:0]
		for _, p := range ps {
			if p.Remove {
				continue
			}
			i, ok := x.find(p.Doc)
			if !ok {
				derr = fmt.Errorf("%w: posting list %x names doc %d, which has no record", ErrCorrupt, k, p.Doc)
				return
			}
			reps = append(reps, x.rep[i])
		}
		slices.Sort(reps)
		reps = slices.Compact(reps)
		st.LargestList = max(st.LargestList, len(reps))
		if len(reps) > HotList {
			st.HotLists++
		}
		for i, a := range reps {
			sa := float64(x.sizes[a])
			for _, b := range reps[i+1:] {
				sb := float64(x.sizes[b])
				if min(sa, sb)/max(sa, sb) < t { // J ≤ min/max: never a pair
					continue
				}
				if derr = sorter.add(uint64(a)<<32 | uint64(b)); derr != nil {
					return
				}
				inPair[a/64] |= 1 << (a % 64)
				inPair[b/64] |= 1 << (b % 64)
				st.Candidates++
			}
		}
	})
	if err = cmp.Or(derr, err); err != nil {
		return err
	}
	st.Spilled = len(sorter.runs) > 0
	sets, err := writeSetFile(fs, fs.PathJoin(tmp, "sets"), snap, x, inPair)
	if err != nil {
		return err
	}
	defer sets.close()

	// Verification: distinct pairs in batches, on every core.
	type job struct{ a, b []int32 }
	type verified struct {
		a, b int32
		j    float64
	}
	jobs := make(chan job, 4)
	results := make(chan []verified, 4)
	done := make(chan struct{})
	var prodErr error
	var distinct int64 // read after results close: the producer is done by then
	go func() {
		defer close(jobs)
		var cur job
		last, have := uint64(0), false
		prodErr = sorter.iterate(func(v uint64) error {
			if have && v == last {
				return nil // the same pair from another band
			}
			last, have = v, true
			distinct++
			cur.a = append(cur.a, int32(v>>32))
			cur.b = append(cur.b, int32(uint32(v)))
			if len(cur.a) == 4096 {
				select {
				case jobs <- cur:
				case <-done:
					return errStopped
				}
				cur = job{}
			}
			return nil
		})
		if prodErr == nil && len(cur.a) > 0 {
			select {
			case jobs <- cur:
			case <-done:
			}
		}
	}()
	var wg sync.WaitGroup
	var werrMu sync.Mutex
	var werr error
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sa, sb []uint64
			var buf []byte
			cached := int32(-1)
			fail := func(err error) {
				werrMu.Lock()
				werr = cmp.Or(werr, err)
				werrMu.Unlock()
			}
			for jb := range jobs {
				var out []verified
				for i := range jb.a {
					a, b := jb.a[i], jb.b[i]
					var err error
					if a != cached {
						if sa, buf, err = sets.read(a, sa[:0], buf); err != nil {
							fail(err)
							break
						}
						cached = a
					}
					if sb, buf, err = sets.read(b, sb[:0], buf); err != nil {
						fail(err)
						break
					}
					if j, ok := minhash.JaccardAtLeast(sa, sb, t); ok {
						out = append(out, verified{a, b, j})
					}
				}
				select {
				case results <- out:
				case <-done:
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	stopped := false
	for batch := range results {
		if stopped {
			continue
		}
		for _, v := range batch {
			st.Matched++
			for _, a := range x.members(v.a) {
				for _, b := range x.members(v.b) {
					if !emit(a, b, v.j) {
						stopped = true
						close(done)
						break
					}
				}
				if stopped {
					break
				}
			}
			if stopped {
				break
			}
		}
	}
	st.Verified = distinct
	if stopped {
		return errStopped
	}
	return cmp.Or(prodErr, werr)
}

// setFile holds the shingle sets of the documents that take part in
// candidate pairs, written in one sequential scan of the doc records, so
// that verification reads a set with one positioned read.
//
// NB: reading the sets with Pebble point lookups instead cost 4x more at a
// million documents: for an index much larger than the block cache nearly
// every lookup misses the cache, reads and checksums a ~10 KB block and the
// index blocks above it, and allocates a cache entry (79% of Pairs' time
// went there). The file takes disk space up to the size of the stored
// sets, in the database's directory, until Pairs ends. Mapping the file
// into memory instead of reading it saved no time and counted every page
// touched in the process's resident set (5.6 GB at a million documents).
type setFile struct {
	fs   vfs.FS
	path string
	f    vfs.File
	off  []int64 // by pairsIndex position: where the set starts (−1: absent)
	x    *pairsIndex
}

// writeSetFile writes the sets of the documents whose bit is set in
// inPair, checking each (sorted, no repeats) once.
func writeSetFile(fs vfs.FS, path string, snap pebble.Reader, x *pairsIndex, inPair []uint64) (*setFile, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	s := &setFile{fs: fs, path: path, f: f, off: make([]int64, len(x.nums)), x: x}
	w := bufio.NewWriterSize(f, 1<<20)
	i, pos := 0, int64(0)
	var check []uint64
	var derr error
	err = scan(snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		if i >= len(x.nums) {
			derr = fmt.Errorf("lshdb: doc records changed during Pairs")
			return
		}
		s.off[i] = -1
		if inPair[i/64]&(1<<(i%64)) != 0 {
			view, err := codec.ParseDocView(v)
			if err == nil {
				check, err = view.AppendSet(check[:0])
			}
			if err != nil {
				derr = classify(fmt.Errorf("doc record %x: %w", k, err))
				return
			}
			s.off[i] = pos
			_, derr = w.Write(view.SetBytes())
			pos += int64(len(view.SetBytes()))
		}
		i++
	})
	if err = cmp.Or(derr, err, w.Flush()); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// read appends document i's set to dst, using buf for the bytes.
func (s *setFile) read(i int32, dst []uint64, buf []byte) ([]uint64, []byte, error) {
	n, off := int64(s.x.sizes[i])*8, s.off[i]
	if off < 0 {
		return dst, buf, fmt.Errorf("lshdb: doc %d is not in the set file", s.x.nums[i])
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return dst, buf, fmt.Errorf("lshdb: reading the set of doc %d: %w", s.x.nums[i], err)
	}
	// NB: no order check: writeSetFile checked every set it wrote.
	dst = slices.Grow(dst[:0], len(buf)/8)[:len(buf)/8]
	for j := range dst {
		dst[j] = binary.LittleEndian.Uint64(buf[8*j:])
	}
	return dst, buf, nil
}

func (s *setFile) close() {
	s.f.Close()
	s.fs.Remove(s.path)
}

// Cluster is a connected component of the near-duplicate pairs.
type Cluster struct {
	// Representative is the earliest inserted member.
	Representative string
	// IDs are the members in insertion order (Representative first).
	IDs []string
}

// Clusters returns the connected components (of two or more documents) of
// the pairs that Pairs reports, largest first (ties by representative's
// insertion order).
func (db *DB) Clusters(po *PairsOptions) ([]Cluster, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	order := make(map[string]uint64)
	for doc, err := range db.allLocked() {
		if err != nil {
			db.mu.RUnlock()
			return nil, err
		}
		order[doc.ID] = doc.Num
	}
	db.mu.RUnlock()
	parent := make(map[string]string)
	var find func(string) string
	find = func(x string) string {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	for p, err := range db.Pairs(po) {
		if err != nil {
			return nil, err
		}
		ra, rb := find(p.A), find(p.B)
		if ra == rb {
			continue
		}
		if order[ra] > order[rb] {
			ra, rb = rb, ra
		}
		parent[ra], parent[rb] = ra, ra // the earlier root represents
	}
	groups := make(map[string][]string)
	for x := range parent {
		r := find(x)
		groups[r] = append(groups[r], x)
	}
	var out []Cluster
	for r, ids := range groups {
		if len(ids) < 2 {
			continue
		}
		slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(order[a], order[b]) })
		out = append(out, Cluster{Representative: r, IDs: ids})
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(len(b.IDs), len(a.IDs)), cmp.Compare(order[a.Representative], order[b.Representative]))
	})
	return out, nil
}
