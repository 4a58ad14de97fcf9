package db

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// bandEnt is one posting of a load within its band: the bucket hash and
// the doc number with the removal flag in its low bit (doc<<1 | remove),
// so that postings sort by bucket, then doc, adds before removes.
type bandEnt struct {
	bucket uint64
	doc    uint64
}

func compareBandEnt(a, b bandEnt) int {
	switch {
	case a.bucket < b.bucket:
		return -1
	case a.bucket > b.bucket:
		return 1
	case a.doc < b.doc:
		return -1
	case a.doc > b.doc:
		return 1
	}
	return 0
}

// bandEntBytes is the size of a bandEnt in a run file.
const bandEntBytes = 16

// postSorter sorts a load's postings within a memory budget, band by
// band. Every document adds one posting to each of the B bands, so the
// buffer is cut into one region per band and a posting needs no band
// field (16 bytes, not 24). When a region fills, every region is sorted
// and written to a run file, band after band, with each band's offset
// kept; mergeBands merges one band's segments of every run and its
// region still in memory.
//
// NB: this replaced a comparison sort over (band, bucket, doc) entries:
// sorting a region is one counting pass on the bucket's top bits, which
// are uniform hash bits, and an insertion sort of a few entries per slot.
type postSorter struct {
	fs      vfs.FS
	dir     string
	name    string      // run files are dir/name-NNNNNN.run
	per     int         // capacity of each band's region
	regions [][]bandEnt // regions[band]
	tmp     []bandEnt   // the radix sort's output, one region long
	counts  []int
	runs    []postRun
}

// postRun is a run file: band b's postings are bytes offs[b]:offs[b+1].
type postRun struct {
	path string
	offs []int64
}

func newPostSorter(fs vfs.FS, dir, name string, budget, bands int) *postSorter {
	// NB: the budget holds the regions and the sort's output region.
	per := max(budget/bandEntBytes/(bands+1), 1024)
	return &postSorter{fs: fs, dir: dir, name: name, per: per, regions: make([][]bandEnt, bands)}
}

func (s *postSorter) addPosting(band int, bucket, doc uint64, remove bool) error {
	r := s.regions[band]
	if r == nil {
		// NB: allocated once at full size; pages are touched as they fill.
		r = make([]bandEnt, 0, s.per)
	} else if len(r) == s.per {
		if err := s.spill(); err != nil {
			return err
		}
		r = s.regions[band]
	}
	d := doc << 1
	if remove {
		d |= 1
	}
	s.regions[band] = append(r, bandEnt{bucket, d})
	return nil
}

// sortRegion sorts s.regions[band] in place.
func (s *postSorter) sortRegion(band int) {
	v := s.regions[band]
	if len(v) < 64 {
		slices.SortFunc(v, compareBandEnt)
		return
	}
	if s.tmp == nil {
		s.tmp = make([]bandEnt, s.per)
	}
	// Slots by the top bits of the bucket: one or two entries each.
	b := min(bits.Len(uint(len(v)))-1, 24)
	shift := 64 - b
	if cap(s.counts) < 1<<b+1 {
		s.counts = make([]int, 1<<b+1)
	}
	counts := s.counts[:1<<b+1]
	clear(counts)
	for _, e := range v {
		counts[e.bucket>>shift+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	tmp := s.tmp[:len(v)]
	pos := counts[:1<<b]
	for _, e := range v {
		k := e.bucket >> shift
		tmp[pos[k]] = e
		pos[k]++
	}
	// pos[k] is now the end of slot k, the start of slot k+1.
	start := 0
	for _, end := range pos {
		slot := tmp[start:end]
		if len(slot) > 32 {
			// NB: many equal buckets (copies of one document) or skewed
			// hashes: keep the worst case O(n log n).
			slices.SortFunc(slot, compareBandEnt)
		} else {
			for i := 1; i < len(slot); i++ {
				for j := i; j > 0 && compareBandEnt(slot[j], slot[j-1]) < 0; j-- {
					slot[j], slot[j-1] = slot[j-1], slot[j]
				}
			}
		}
		start = end
	}
	copy(v, tmp)
}

// spill sorts every region and writes them to a run file.
func (s *postSorter) spill() error {
	path := s.fs.PathJoin(s.dir, fmt.Sprintf("%s-%06d.run", s.name, len(s.runs)))
	run := postRun{path: path, offs: make([]int64, len(s.regions)+1)}
	err := writeRun(s.fs, path, func(w *bufio.Writer) {
		var b [bandEntBytes]byte
		off := int64(0)
		for band, r := range s.regions {
			s.sortRegion(band)
			run.offs[band] = off
			for _, e := range r {
				binary.LittleEndian.PutUint64(b[:], e.bucket)
				binary.LittleEndian.PutUint64(b[8:], e.doc)
				w.Write(b[:])
			}
			off += int64(len(r)) * bandEntBytes
			s.regions[band] = r[:0]
		}
		run.offs[len(s.regions)] = off
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, run)
	return nil
}

// seal sorts the postings held in memory; then mergeBands may read the
// sorter. The memory stays held: merged in place, the last postings need
// not be written to a run and read back.
func (s *postSorter) seal() {
	for band := range s.regions {
		s.sortRegion(band)
	}
	s.tmp, s.counts = nil, nil
}

// mergeBands calls fn in order for every posting of the bands [from, to)
// held by the sealed sorters, merging, band by band, the band's segment
// of every run and its region in memory. Several ranges of bands may be
// read at once, from different goroutines.
func mergeBands(sorters []*postSorter, from, to int, fn func(band int, e bandEnt) error) error {
	for band := from; band < to; band++ {
		if err := mergeBand(sorters, band, fn); err != nil {
			return err
		}
	}
	return nil
}

// segment is one sorted source of a band's postings: a run file's
// segment, or a region in memory (when r is nil).
type segment struct {
	mem []bandEnt // the region's unread postings
	r   io.Reader
	c   io.Closer
	buf []byte
	b   []byte // unread bytes of buf
	cur bandEnt
}

// next loads the segment's next posting into cur; ok is false at its end.
func (g *segment) next() (bool, error) {
	if g.r == nil {
		if len(g.mem) == 0 {
			return false, nil
		}
		g.cur, g.mem = g.mem[0], g.mem[1:]
		return true, nil
	}
	if len(g.b) == 0 {
		n, err := io.ReadFull(g.r, g.buf)
		if err == io.EOF {
			return false, nil
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			return false, err
		}
		if n%bandEntBytes != 0 {
			return false, fmt.Errorf("lshdb: a postings run ends inside an entry")
		}
		g.b = g.buf[:n]
	}
	g.cur = bandEnt{binary.LittleEndian.Uint64(g.b), binary.LittleEndian.Uint64(g.b[8:])}
	g.b = g.b[bandEntBytes:]
	return true, nil
}

func (g *segment) close() {
	if g.c != nil {
		g.c.Close()
	}
}

// mergeBand merges band's segments, with a binary heap of segments
// ordered by their current posting.
func mergeBand(sorters []*postSorter, band int, fn func(band int, e bandEnt) error) error {
	var h []*segment
	defer func() {
		for _, g := range h {
			g.close()
		}
	}()
	add := func(g *segment) error {
		ok, err := g.next()
		if err != nil || !ok {
			g.close()
			return err
		}
		h = append(h, g)
		return nil
	}
	for _, s := range sorters {
		for _, run := range s.runs {
			lo, hi := run.offs[band], run.offs[band+1]
			if lo == hi {
				continue
			}
			f, err := s.fs.Open(run.path)
			if err != nil {
				return err
			}
			if err := add(&segment{r: io.NewSectionReader(f, lo, hi-lo), c: f, buf: make([]byte, 64<<10)}); err != nil {
				return err
			}
		}
		if err := add(&segment{mem: s.regions[band]}); err != nil {
			return err
		}
	}
	if len(h) == 1 && h[0].r == nil {
		// NB: the usual case when nothing spilled: no heap needed.
		g := h[0]
		if err := fn(band, g.cur); err != nil {
			return err
		}
		for _, e := range g.mem {
			if err := fn(band, e); err != nil {
				return err
			}
		}
		return nil
	}
	less := func(i, j int) bool { return compareBandEnt(h[i].cur, h[j].cur) < 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			if r := l + 1; r < len(h) && less(r, l) {
				l = r
			}
			if !less(l, i) {
				return
			}
			h[i], h[l] = h[l], h[i]
			i = l
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		g := h[0]
		if err := fn(band, g.cur); err != nil {
			return err
		}
		ok, err := g.next()
		if err != nil {
			return err
		}
		if !ok {
			g.close()
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return nil
}

// close removes the run files and releases the memory.
func (s *postSorter) close() {
	clear(s.regions)
	s.tmp, s.counts = nil, nil
	for _, r := range s.runs {
		s.fs.Remove(r.path)
	}
	s.runs = nil
}
