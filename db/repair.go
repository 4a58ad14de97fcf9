package db

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/minhash"
)

// RepairResult is what Repair mended.
type RepairResult struct {
	// Orphans are the records no id named, removed: on Redis, a write
	// that stopped before its id or a delete before its record; on
	// Pebble, an older copy of a document whose id names another record.
	Orphans int
	// Dangling are the postings of no live document, removed.
	Dangling int
	// Reposted are the postings live documents were missing, added (a
	// write killed while its postings and id went to their nodes at
	// once: the document answered Get and was missing from queries).
	Reposted int
	// Lost are the ids that named no live record, removed, in order:
	// their records were gone (a key evicted or deleted by hand, a write
	// lost with a node that failed before its replica had it) or, on
	// Pebble, unreadable (Unreadable), so their documents are lost: put
	// them again.
	Lost []string

	// Unnamed (Redis) are the ids of the Orphans that no id named at all,
	// in order: writes that stopped before their id (never acknowledged),
	// or the older copy of a replaced document that was then deleted.
	// Put them again if they should be stored.
	Unnamed []string
	// Unrestored (Redis) are the ids of records no id named that were
	// left as they are, out of every answer, in order: Redis showed that
	// it lost writes (LostWrites), so they may be documents whose id key
	// Redis lost, and neither Options.RestoreLostIDs (check --repair
	// --restore-ids: gives them their ids back) nor RemoveUnnamed
	// (--remove-unnamed: removes them) was set; or RestoreLostIDs was,
	// and Redis, at its maxmemory, had no room for their ids and postings
	// (free memory, and repair again).
	Unrestored []string
	// LostWrites (Redis) says that Redis showed it lost writes, in this
	// repair or in one before it that left records Unrestored: an id
	// whose record is gone, or counters gone or behind the records'
	// numbers. Looked for only where records have no id key.
	LostWrites bool

	// The rest is mended on Pebble only, where it comes from damage to
	// the files (a Pebble index's writes are atomic), not from writes
	// that stopped part way.

	// Unreadable are the records removed because they did not decode, or
	// their document gave no signature (a text that does not give back
	// its stored shingle set): the ids that named them are in Lost.
	Unreadable int
	// Restored are the ids put back for records no id named (a record
	// names its own id): those documents are kept. On Redis only with
	// Options.RestoreLostIDs, for the latest record of each id: where
	// Redis lost id keys, a record no id names may be a document whose
	// id was lost, or the older copy of a document replaced and then
	// deleted, which its id would bring back; no record tells which.
	Restored int
	// Rewritten are the text mode records whose stored set size,
	// fingerprint or sketch disagreed with their text, derived from the
	// text again (a text mode record is its text); RewrittenIDs are their
	// ids, in order: if the text itself was what the damage changed,
	// those documents are now the changed text.
	Rewritten    int
	RewrittenIDs []string
	// Lists are the posting lists written anew from the records (Dangling
	// and Reposted count the postings that changed), Damaged of them
	// unreadable (a merge operand that did not decode: see Check).
	Lists, Damaged int
	// Expiry are the entries of the expiry index removed or added.
	Expiry int
	// BadKeys are the keys of the index's kinds that did not parse,
	// removed.
	BadKeys int
	// Counters reports that the counters record was wrong (its count of
	// documents, or a next document number not above every stored one)
	// and was rewritten.
	Counters bool
	// CountedDocs is how many documents the counters counted before the
	// repair, and StoredDocs how many it found stored (set with
	// Counters). Fewer stored than counted, beyond the ids the repair
	// removed for want of a readable record (Lost: an unreadable record
	// that an id named is there too), is documents gone without a
	// delete: a write-ahead log or a table removed or damaged by hand or
	// by the disk, which only a backup gives back.
	CountedDocs, StoredDocs uint64
	// LogCuts are the logs this handle's open cut, accepting their damage
	// (Options.AcceptLogDamage, as lshdb check --repair opens): the
	// writes their dropped records held are not in the index, and the
	// repair cannot give them back. Each says what the records it could
	// still read held.
	LogCuts []LogCut
}

// LogCut is a log that an open cut at its damage (RepairResult.LogCuts),
// from a *LogDamageError it accepted.
type LogCut struct {
	// Log is the damaged log's path, Kept its copy as it was ("" for a
	// read-only open, which cut nothing on disk).
	Log, Kept string
	// Manifest: the log is the store's MANIFEST, whose dropped records
	// took the tables they added, with the documents in them (Puts and
	// Deletes are not known).
	Manifest bool
	// Records is how many records were dropped: the damaged one and the
	// whole ones after it (write batches; of a manifest, its edits).
	Records int
	// Puts and Deletes are the ids the dropped records that read put
	// (put those documents again) and deleted (by a delete, or an expiry
	// sweep), in log order; Unread counts the dropped records that did
	// not read (the damaged one among them), whose ids are not known.
	Puts, Deletes []string
	Unread        int
}

// logCut is the LogCut of an accepted damage.
func logCut(d *LogDamageError) LogCut {
	return LogCut{Log: d.Log, Kept: d.Kept, Manifest: d.Manifest, Records: d.Records + 1, Puts: d.Puts, Deletes: d.Deletes, Unread: max(d.Unread, 1)}
}

// Changed reports whether the repair, or the open before it, changed
// anything.
func (r RepairResult) Changed() bool {
	return r.Orphans+r.Dangling+r.Reposted+len(r.Lost)+r.Unreadable+r.Restored+r.Rewritten+r.Lists+r.Expiry+r.BadKeys+len(r.LogCuts) > 0 || r.Counters
}

// Repair mends what Check finds in an index's structure, from the
// documents' records, and reports what it changed; a clean index is left
// as it is. Run Check after it: what Repair leaves (a record that decodes
// but disagrees with itself, such as a sketch that is not its
// signature's) Check still reports.
//
// On Redis it mends what writes that stopped part way left, and what
// Redis lost: it removes records no id names (Unnamed), or leaves them
// (Unrestored) where Redis shows that it lost writes, or gives them
// their id back (Restored) with Options.RestoreLostIDs; it removes
// postings of no live document and ids whose
// record is gone (Lost: those documents must be put again), and adds the
// postings a live document is missing. Run it with no writer beside it,
// another process's expiry sweep included (this handle's waits): the
// index has no lock to tell it of one, and a write in flight looks half
// done.
//
// On Pebble, whose writes are atomic, there is nothing half done: what
// Check finds is damage (a merge operand that did not decode, a key lost
// or altered on disk), and Repair rebuilds from the records what they
// imply:
//
//   - a text mode record whose stored set size, fingerprint or sketch
//     disagrees with its text is derived from the text again (the text is
//     the document); in sets mode such a record is left as it is (its
//     stored set is all there is), and Check still reports it;
//   - a record that cannot be read (it does not decode, its id is one no
//     write takes, its document gives no signature) is removed, and the
//     ids that named it are reported in Lost: put those documents again;
//     so is a record at a doc number no posting can hold;
//   - an id that names a record of another id is removed; a record no id
//     names gets its id back, unless the id names another record, which
//     is kept (the other is removed, as Orphans);
//   - every posting list whose postings differ from the records' buckets,
//     damaged lists included, is written anew, or deleted when no record
//     is in its bucket;
//   - the expiry index and the counters' values are made to agree.
//
// It all commits in one atomic, synced batch (WriteOptions are not taken:
// Options.NoSync applies), with every other writer of the handle held
// off for the whole repair, as a Load holds them: a progress function
// (WithProgress) that writes waits for the repair, and so until Close. It reads the whole index, as Check does, and holds the records'
// bucket keys (8 bytes per band per document), about 50 bytes and the id
// per document, and the batch of what it writes, in memory. What Open
// refuses (a counters record missing or unreadable, a damaged manifest)
// and damage Pebble itself reports (a block whose checksum fails) it
// cannot reach: restore a backup, or build the index again. On a
// read-only handle it returns ErrReadOnly. On Redis, run it with no other
// writer (OtherWritersSeen, which it does not call): a write in flight
// looks half done, and its documents would be removed.
func (db *DB) Repair(ctx context.Context) (RepairResult, error) {
	if err := db.enter(); err != nil {
		return RepairResult{}, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return RepairResult{}, ErrReadOnly
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(ctx); err != nil {
		return RepairResult{}, err
	}
	defer db.wmu.Unlock()
	if db.rkv != nil {
		// NB: and the handle's own sweep (another process's sweep is a
		// writer beside it: see above).
		db.sweepMu.Lock()
		defer db.sweepMu.Unlock()
		// NB: a repair "put the counters right" of an index gone: it made
		// the counters again, which refused the index's creation as
		// leftovers (a maintainer review's M2).
		if db.gone.Load() {
			return RepairResult{}, db.indexGoneErr()
		}
		rep, err := db.rkv.RepairWith(ctx, rediskv.RepairOptions{RestoreIDs: db.opts.RestoreLostIDs, RemoveUnnamed: db.opts.RemoveUnnamed})
		return RepairResult{Orphans: rep.Orphans, Dangling: rep.Dangling, Reposted: rep.Reposted, Lost: rep.Lost, Unnamed: rep.Unnamed, Unrestored: rep.Unrestored, LostWrites: rep.LostWrites, Restored: rep.Restored, Counters: rep.Counters}, redisErr(err)
	}
	res, err := db.pebbleRepair(ctx)
	// NB: the cuts are the open's, done whatever the repair does.
	for _, d := range db.olderLogDamage {
		res.LogCuts = append(res.LogCuts, logCut(d))
	}
	if d := db.logDamage; d != nil {
		res.LogCuts = append(res.LogCuts, logCut(d))
	}
	if d := db.manifestDamage; d != nil {
		res.LogCuts = append(res.LogCuts, logCut(d))
	}
	return res, err
}

// repairDoc is a readable record, as pebbleRepair knows it.
type repairDoc struct {
	n       uint64
	id      string
	expires int64
	mapped  bool // an id names it
	live    bool // kept (mapped, or given its id back)
}

// pebbleRepair is Repair on Pebble. The caller holds db.mu for reading
// and wmu: nothing writes while it reads a snapshot and writes its batch.
func (db *DB) pebbleRepair(ctx context.Context) (RepairResult, error) {
	var res RepairResult
	if err := ctxErr(ctx); err != nil {
		return res, err
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	b := db.pdb.NewBatch()
	defer b.Close()
	prog := progressOf(ctx)
	defer prog.end()
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	nb := db.bands.B

	// 1. The records: the readable ones, in doc number order, with their
	// bucket keys (nb per record, in keys); the others are removed.
	prog.phase(1, 4, "reading documents", int64(db.stored()))
	done := counter{p: prog}
	var docs []repairDoc
	var keys []uint64
	var rec docData
	maxDoc := uint64(0)
	var ferr error
	del := func(k []byte) {
		if ferr == nil {
			ferr = b.Delete(k, nil)
		}
	}
	put := func(k, v []byte) {
		if ferr == nil {
			ferr = b.Set(k, v, nil)
		}
	}
	var sk []byte
	var rewritten []uint64 // doc numbers
	err := scan(ctx, snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		done.inc()
		n, err := codec.ParseDocKey(k)
		if err != nil || n > codec.MaxDocNum {
			// NB: a number no posting can hold: restored, the record
			// had its lists written wrong and every later write's after.
			res.BadKeys++
			del(k)
			return
		}
		maxDoc = max(maxDoc, n)
		// NB: an id a write would refuse (not UTF-8, too long, empty):
		// given back, it named a document no call could read or delete.
		ok := len(v) > 0 && v[0] == 2 && codec.DecodeDocRecord(v, &rec.DocRecord) == nil && checkID(rec.ID) == nil
		if ok {
			bad := db.complete(h, n, &rec) != nil
			if !bad && rec.Sketch != nil && db.man.Storage == StorageText {
				sk = codec.AppendSketch(sk[:0], rec.Signature)
				bad = !bytes.Equal(rec.Sketch, sk)
			}
			if bad && db.man.Storage == StorageText && rec.HasText {
				// A text mode record is its text: what disagrees with it
				// (the set size, the fingerprint, the sketch) is derived
				// from it again, as a put of it would.
				set, sig := h.Document(nil, nil, rec.Text)
				if len(set) > 0 {
					nr, _ := db.newRecord(rec.ID, set, sig, rec.Text, true, rec.Meta, nil)
					nr.Expires = rec.Expires
					put(k, codec.AppendDocRecord(nil, &nr))
					rec.Signature, bad = sig, false
					res.Rewritten++
					res.RewrittenIDs = append(res.RewrittenIDs, rec.ID)
					rewritten = append(rewritten, n)
				}
			}
			ok = !bad && len(rec.Signature) == db.skOpt.NumPerm
		}
		if ok {
			start := len(keys)
			var kerr error
			if keys, kerr = db.bucketKeys(keys, rec.Signature); kerr != nil || len(keys)-start != nb {
				keys, ok = keys[:start], false
			}
		}
		if !ok {
			res.Unreadable++
			del(k)
			return
		}
		docs = append(docs, repairDoc{n: n, id: rec.ID, expires: rec.Expires})
	})
	if err = cmp.Or(err, ferr); err != nil {
		return RepairResult{}, err
	}
	find := func(n uint64) int {
		if i, ok := slices.BinarySearchFunc(docs, n, func(d repairDoc, n uint64) int { return cmp.Compare(d.n, n) }); ok {
			return i
		}
		return -1
	}

	// 2. The ids: each must name a readable record of its own id.
	done.flush()
	prog.phase(2, 4, "reading ids", int64(len(docs)))
	lost := make(map[string]bool)
	err = scan(ctx, snap, codec.IDPrefix, codec.IDPrefixEnd, func(k, v []byte) {
		done.inc()
		id, err := codec.ParseIDKey(k)
		if err != nil || checkID(id) != nil {
			res.BadKeys++
			del(k)
			return
		}
		i := -1
		if n, err := codec.DecodeDocNum(v); err == nil {
			i = find(n)
		}
		if i < 0 || docs[i].id != id {
			lost[id] = true
			del(k)
			return
		}
		docs[i].mapped, docs[i].live = true, true
	})
	if err = cmp.Or(err, ferr); err != nil {
		return RepairResult{}, err
	}
	// The records no id names: the newest of an id no record keeps gets
	// it back; the others are older copies.
	orphans := make(map[string][]int)
	for i, d := range docs {
		if !d.mapped {
			orphans[d.id] = append(orphans[d.id], i)
		}
	}
	for id, is := range orphans {
		keep := -1
		v, ok, err := getCopy(snap, codec.AppendIDKey(nil, id))
		if err != nil {
			return RepairResult{}, classify(err)
		}
		// NB: named as step 2 keeps a name: a readable record of its id.
		named := false
		if ok {
			n, err := codec.DecodeDocNum(v)
			i := find(n)
			named = err == nil && i >= 0 && docs[i].id == id
		}
		if !named {
			keep = is[len(is)-1] // doc numbers grow: the newest
			docs[keep].live = true
			put(codec.AppendIDKey(nil, id), codec.EncodeDocNum(docs[keep].n))
			delete(lost, id)
			res.Restored++
		}
		for _, i := range is {
			if i != keep {
				del(codec.AppendDocKey(nil, docs[i].n))
				res.Orphans++
			}
		}
	}
	if ferr != nil {
		return RepairResult{}, ferr
	}
	for id := range lost {
		res.Lost = append(res.Lost, id)
	}
	slices.Sort(res.Lost)
	slices.Sort(res.RewrittenIDs)

	// 3. The posting lists, a band at a time: the live documents'
	// (bucket, doc) pairs of the band against its stored lists, in key
	// order; a list that differs is written anew (or deleted, when no
	// document is in its bucket).
	done.flush()
	prog.phase(3, 4, "mending posting lists (bands)", int64(nb))
	type pair struct{ bucket, doc uint64 }
	var pairs []pair
	var ps []codec.Posting
	var want []codec.Posting
	var val []byte
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.PostingPrefix, UpperBound: codec.PostingPrefixEnd})
	if err != nil {
		return RepairResult{}, classify(err)
	}
	defer it.Close()
	valid := it.First()
	seen := 0
	// write sets the list of band's bucket to want (deleting it when
	// empty) and counts it.
	write := func(k []byte, damaged bool) {
		res.Lists++
		if damaged {
			res.Damaged++
		}
		if len(want) == 0 {
			del(k)
			return
		}
		val = codec.AppendPostings(val[:0], want)
		put(k, val)
	}
	for band := range nb {
		if err := ctxErr(ctx); err != nil {
			return RepairResult{}, err
		}
		prog.add(1)
		pairs = pairs[:0]
		for i, d := range docs {
			if d.live {
				pairs = append(pairs, pair{keys[i*nb+band], d.n})
			}
		}
		slices.SortFunc(pairs, func(x, y pair) int { return cmp.Or(cmp.Compare(x.bucket, y.bucket), cmp.Compare(x.doc, y.doc)) })
		j := 0
		// run takes the pairs of the next bucket into want.
		run := func() uint64 {
			bucket := pairs[j].bucket
			want = want[:0]
			for ; j < len(pairs) && pairs[j].bucket == bucket; j++ {
				want = append(want, codec.Posting{Doc: pairs[j].doc})
			}
			return bucket
		}
		for ; valid; valid = it.Next() {
			if seen++; seen%1024 == 0 {
				if err := ctxErr(ctx); err != nil {
					return RepairResult{}, err
				}
			}
			k := it.Key()
			kb, bucket, err := codec.ParsePostingKey(k)
			if err != nil || kb >= nb {
				res.BadKeys++
				del(k)
				continue
			}
			if kb > band {
				break
			}
			// The buckets before this list's that have no list.
			for j < len(pairs) && pairs[j].bucket < bucket {
				bk := run()
				res.Reposted += len(want)
				write(codec.AppendPostingKey(nil, band, bk), false)
			}
			want = want[:0]
			if j < len(pairs) && pairs[j].bucket == bucket {
				run()
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return RepairResult{}, classify(err)
			}
			ps, err = codec.DecodePostings(v, ps[:0])
			if err != nil {
				// NB: what a damaged list held is unknown: every posting
				// of the bucket counts as added.
				res.Reposted += len(want)
				write(slices.Clone(k), true)
				continue
			}
			if dangling, added, same := diffPostings(ps, want); !same {
				res.Dangling += dangling
				res.Reposted += added
				write(slices.Clone(k), false)
			}
		}
		for j < len(pairs) {
			bk := run()
			res.Reposted += len(want)
			write(codec.AppendPostingKey(nil, band, bk), false)
		}
		if ferr != nil {
			return RepairResult{}, ferr
		}
	}
	if err := it.Error(); err != nil {
		return RepairResult{}, classify(err)
	}

	// 4. The expiry index: one key per live expiring record.
	prog.phase(4, 4, "mending the expiry index", 0)
	indexed := make([]bool, len(docs))
	err = scan(ctx, snap, codec.ExpiryPrefix, codec.ExpiryPrefixEnd, func(k, _ []byte) {
		x, n, err := codec.ParseExpiryKey(k)
		if err != nil {
			res.BadKeys++
			del(k)
			return
		}
		if i := find(n); i >= 0 && docs[i].live && docs[i].expires == x && !indexed[i] {
			indexed[i] = true
			return
		}
		res.Expiry++
		del(k)
	})
	if err = cmp.Or(err, ferr); err != nil {
		return RepairResult{}, err
	}
	live := uint64(0)
	for i, d := range docs {
		if !d.live {
			continue
		}
		live++
		if d.expires != 0 && !indexed[i] {
			res.Expiry++
			put(codec.AppendExpiryKey(nil, d.expires, d.n), nil)
		}
	}
	if ferr != nil {
		return RepairResult{}, ferr
	}

	// The counters, and the commit.
	c := db.counters
	if c.Live != live || (maxDoc > 0 && c.NextDoc <= maxDoc) {
		res.Counters = true
		res.CountedDocs, res.StoredDocs = c.Live, live
	}
	if !res.Changed() {
		return res, nil
	}
	// NB: the next doc number goes up by one even when the counters were
	// right: the query cache tells a newer state of the index by them,
	// and a repair that restores documents raises Live with no new doc
	// number (an older state, to the cache).
	c = codec.Counters{NextDoc: max(c.NextDoc, maxDoc+1) + 1, Live: live}
	put(codec.CountersKey, codec.EncodeCounters(c))
	if ferr != nil {
		return RepairResult{}, ferr
	}
	if err := db.roomFor(2 * int64(b.Len())); err != nil {
		return RepairResult{}, err
	}
	if db.qcache != nil {
		db.qcache.changingAll(c)
		for _, n := range rewritten {
			db.qcache.forget(n) // and again once committed: a query between may cache the old
		}
	}
	wo := pebble.Sync
	if db.opts.NoSync {
		wo = pebble.NoSync
	}
	if err := db.pebbleWrite(func() error { return b.Commit(wo) }); err != nil {
		switch {
		case db.damage.stopped.Load() != nil:
			// NB: the store stopped in this commit (pebbleWrite): Pebble
			// applies a batch before it waits for its log write, so this
			// handle's reads may see the repair although it failed. The
			// handle takes it as written (no write comes after a stop):
			// its counters, as Count gives them (a read-through's R4),
			// and the cache, whose versions stay at c, the rewritten
			// records dropped.
			db.setCounters(c)
			if db.qcache != nil {
				db.qcache.rewrote(c, rewritten)
			}
		case db.qcache != nil:
			// NB: nothing became visible: back to the stored version, as
			// a failed load does, or no cached list would be served until
			// later writes caught up with c (a reviewer's C3).
			db.qcache.changingAll(db.counters)
		}
		return RepairResult{}, err
	}
	db.setCounters(c)
	if db.qcache != nil {
		for _, d := range docs {
			if !d.live {
				db.qcache.forget(d.n)
			}
		}
		// NB: a query's cache kept what the record said (its set size),
		// and a query whose view is older than this write may still read
		// it: rewrote drops the entries and keeps such queries from
		// caching the record again.
		db.qcache.rewrote(c, rewritten)
	}
	return res, nil
}

// diffPostings compares a stored list with the postings it should hold
// (sorted by doc, no removals): the stored postings of no document of
// want (removals too), and want's postings the list lacks.
func diffPostings(have, want []codec.Posting) (dangling, added int, same bool) {
	i, j := 0, 0
	for i < len(have) || j < len(want) {
		switch {
		case j == len(want) || (i < len(have) && have[i].Doc < want[j].Doc):
			dangling++
			i++
		case i == len(have) || want[j].Doc < have[i].Doc:
			added++
			j++
		default:
			if have[i].Remove {
				// NB: a removal kept after a full merge: the document is
				// live, its posting missing.
				added++
			}
			i++
			j++
		}
	}
	return dangling, added, dangling == 0 && added == 0
}
