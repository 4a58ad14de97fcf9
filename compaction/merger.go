package compaction

import (
	"cmp"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
)

// MergerName is the name Pebble stores with the database; Pebble refuses
// to open a database whose merger name differs, so a change to the merge
// semantics MUST come with a new name.
const MergerName = "lshdb.postings.v1"

// Merger is the posting-list merge operator to pass in pebble.Options.
var Merger = &pebble.Merger{Name: MergerName, Merge: newMerger}

// newMerger is Merger's Merge: a merger of the operands of key, value the
// first that Pebble gives.
func newMerger(key, value []byte) (pebble.ValueMerger, error) {
	m := &postingMerger{}
	if m.damaged(value) {
		return m, nil
	}
	if len(value) <= len(m.inline) {
		m.first = append(m.inline[:0], value...)
	} else {
		m.first = slices.Clone(value)
	}
	return m, nil
}

// postingMerger accumulates operands. Pebble hands them newest-first
// (MergeOlder) or oldest-first (MergeNewer) around the first one it gave
// (Merger.Merge); Finish puts them oldest-first.
//
// NB: most keys a compaction meets hold one operand (a bucket that one
// document fell in), so the first is kept apart, in the merger itself when
// it is small, and Finish gives it back as it is when there is nothing to
// merge: one allocation a key, where copying it into a list of operands
// and encoding it again took five (BenchmarkPut's compactions spent 2.7
// CPU-s of 26.6 in the merger, 1.4 of them allocating).
type postingMerger struct {
	first  []byte
	inline [24]byte // first's bytes when they fit: a few postings
	older  [][]byte // operands added by MergeOlder, newest first
	newer  [][]byte // operands added by MergeNewer, oldest first
	// damage is why an operand could not be decoded: the result is then
	// a damaged list (codec.AppendDamagedPostings), which every read of
	// it reports. NB: never an error from the merger: Pebble retries a
	// flush or compaction that fails for ever, hundreds of thousands of
	// times a second (an open replaying such an operand from its log
	// never returned), and a read's error would name no key.
	damage error
	// damagedList is an operand that is a damaged list already: the
	// result, as it is (its cause was wrapped again at every merge).
	damagedList []byte
}

// damaged notes value's damage, if any, and reports it.
func (m *postingMerger) damaged(value []byte) bool {
	if codec.IsDamagedPostings(value) {
		m.damage, m.damagedList = codec.ErrCorrupt, slices.Clone(value)
		return true
	}
	if _, err := codec.PostingCount(value); err != nil {
		m.damage = err
		return true
	}
	return false
}

// MergeNewer adds an operand newer than all others. Pebble keeps ownership
// of value, so it is copied.
func (m *postingMerger) MergeNewer(value []byte) error {
	if m.damage != nil || m.damaged(value) {
		return nil
	}
	m.newer = append(m.newer, slices.Clone(value))
	return nil
}

// MergeOlder adds an operand older than all others.
func (m *postingMerger) MergeOlder(value []byte) error {
	if m.damage != nil || m.damaged(value) {
		return nil
	}
	m.older = append(m.older, slices.Clone(value))
	return nil
}

// Finish merges the operands: for each doc number the newest operation
// wins; with includesBase, removals are dropped.
func (m *postingMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if m.damage == nil {
		out, err := m.finish(includesBase)
		if err == nil {
			return out, nil, nil
		}
		// NB: an operand whose header held but whose postings do not
		// decode: damaged too (see damage).
		m.damage = err
	}
	if m.damagedList != nil {
		return m.damagedList, nil, nil
	}
	return codec.AppendDamagedPostings(nil, m.damage.Error()), nil, nil
}

// finish is Finish of operands that all have a posting list's header.
func (m *postingMerger) finish(includesBase bool) ([]byte, error) {
	if len(m.older)+len(m.newer) == 0 {
		// One operand: a well-formed list is already merged (its doc
		// numbers strictly increase), and is the result unless removals
		// are to be dropped.
		if !includesBase {
			return m.first, nil
		}
		removal, err := codec.PostingsHaveRemoval(m.first)
		if err != nil {
			return nil, err
		}
		if !removal {
			return m.first, nil
		}
	}
	ops := make([][]byte, 0, len(m.older)+1+len(m.newer))
	for i := len(m.older) - 1; i >= 0; i-- {
		ops = append(ops, m.older[i])
	}
	ops = append(ops, m.first)
	ops = append(ops, m.newer...)
	return Merge(nil, ops, includesBase)
}

// Merge merges encoded posting operands given oldest first and appends the
// encoded result to dst: the newest operation on each doc number wins, and
// with includesBase (nothing older exists) removals are dropped.
func Merge(dst []byte, ops [][]byte, includesBase bool) ([]byte, error) {
	if len(ops) == 1 && !includesBase {
		return append(dst, ops[0]...), nil
	}
	type entry struct {
		codec.Posting
		age int // index in ops: larger is newer
	}
	var all []entry
	var ps []codec.Posting
	for age, op := range ops {
		var err error
		if ps, err = codec.DecodePostings(op, ps[:0]); err != nil {
			return dst, err
		}
		for _, p := range ps {
			all = append(all, entry{p, age})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.Doc, b.Doc), cmp.Compare(b.age, a.age))
	})
	merged := ps[:0]
	for i, e := range all {
		if i > 0 && all[i-1].Doc == e.Doc {
			continue // an older operation on the same doc
		}
		if e.Remove && includesBase {
			continue
		}
		merged = append(merged, e.Posting)
	}
	return codec.AppendPostings(dst, merged), nil
}

// Purgeable reports whether a posting list, as read (every operand merged),
// holds no live posting: it is empty, or only removals remain (a list read
// before a compaction included its base). Such a list is garbage that only
// a delete can drop: the merge operator cannot (see the package comment).
// The caller MUST make sure no merge operand arrives between reading the
// list and deleting it (db holds its writer lock).
func Purgeable(value []byte) (bool, error) { return EmptiedBy(value, nil) }

// EmptiedBy is Purgeable of the list value once the removals (postings in
// document order, as a write's operand holds them) are merged into it:
// whether it holds no live posting but those they take out. A write that
// empties a list can then delete it in place of writing its operand (the
// expiry sweep does), under the same rule as Purgeable.
func EmptiedBy(value []byte, removals []codec.Posting) (bool, error) {
	ps, err := codec.DecodePostings(value, nil)
	if err != nil {
		return false, err
	}
	i := 0
	for _, p := range ps {
		if p.Remove {
			continue
		}
		for i < len(removals) && removals[i].Doc < p.Doc {
			i++
		}
		if i == len(removals) || removals[i].Doc != p.Doc || !removals[i].Remove {
			return false, nil
		}
	}
	return true, nil
}
