package db

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/minhash"
)

// UpgradeReport says what Upgrade did.
type UpgradeReport struct {
	// From and To are the format versions before and after (equal when
	// the index needed no upgrade and nothing was written: this build
	// reads and writes formats codec.MinFormatVersion and up as they are,
	// and upgrades only text indexes of formats 2 to 4, whose records
	// gain a sketch).
	From, To int
	// Storage is the storage mode of the upgraded index: its own from
	// format 2; for a format 1 index text if it stored every text, sets
	// otherwise.
	Storage string
	// Docs is the number of doc records rewritten.
	Docs int
	// Expired is how many of them are of documents whose TTL had run out,
	// stored until the expiry sweep removes them (Info.Expired), which
	// Upgrade's own handle may do as it closes.
	Expired int
	// Uncompacted says that the old records still take their space: the
	// compaction that frees it at once was skipped for want of room above
	// the reserve, or failed (logged); Pebble's own compactions free it
	// later, or DB.Compact (or Upgrade again) now.
	Uncompacted bool
	// Compacted says that an index of the current format had the old
	// records of an upgrade that stopped after its ingest (killed, or
	// without room to compact), and that they were compacted away now.
	Compacted bool
}

// Upgrade rewrites the index in dir, made by an lshdb of format 1, in the
// current format, in place and atomically: every document record, and
// every posting list under its format 2 key (32 bits of bucket, with a
// delete of its format 1 key), is written into new tables, which are
// ingested together with the new manifest in one Pebble ingest, so the
// index is either wholly old or wholly new after a crash at any point (a
// crash before the ingest leaves temporary tables that the next Open
// removes). Ids are the same in both formats and are kept.
//
// A text index of format 2 to 4 has its doc records rewritten with their
// signature's sketch (format 5, which Pairs reads instead of deriving it
// from every text); each text is re-shingled and checked against its
// record's set size and fingerprint (ErrCorrupt, nothing changed, if it
// does not give them back), and the posting lists are left as they are.
// Indexes of other modes, and of format 5, need nothing.
//
// A format 1 index whose manifest stores text becomes a text index (the
// text is verified against the stored shingle set: a text that does not
// give back its set is ErrCorrupt, and nothing is changed); any other
// becomes a sets index (the 32-bit sets come from the stored 64-bit
// ones; a document whose text was stored keeps it). The index must not be
// open elsewhere (ErrLocked). opts may set handle options (Logger,
// CacheSize, MemTableSize, DiskReserve, NoSync); creation options are
// ignored.
func Upgrade(ctx context.Context, dir string, opts *Options) (*UpgradeReport, error) {
	if IsRedisURL(dir) {
		return nil, fmt.Errorf("%w: Upgrade of a Redis index (a Redis index keeps the format it was created in; its Pairs reads no sketch)", ErrUnsupported)
	}
	var o Options
	if opts != nil {
		o = Options{fs: opts.fs, Logger: opts.Logger, CacheSize: opts.CacheSize, MemTableSize: opts.MemTableSize, DiskReserve: opts.DiskReserve, NoSync: opts.NoSync, ExpirySweep: opts.ExpirySweep, clock: opts.clock}
	}
	o.MustExist, o.upgrading = true, true
	o.PurgeEvery = -1 // NB: no scan of the lists the upgrade replaces
	d, err := Open(dir, &o)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.upgrade(ctx)
}

func (db *DB) upgrade(ctx context.Context) (*UpgradeReport, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if err := db.wmu.lock(cmp.Or(ctx, db.closing)); err != nil {
		return nil, err
	}
	defer db.wmu.Unlock()
	rep := &UpgradeReport{From: db.man.FormatVersion, To: codec.FormatVersion, Storage: db.man.Storage}
	// sketches: a format 2 to 4 text index, whose records only gain their
	// sketch (and, from format 2, the order-independent fingerprint).
	sketches := db.man.FormatVersion >= codec.MinFormatVersion
	if sketches && (db.man.Storage != StorageText || db.man.FormatVersion >= codec.SketchFormatVersion) {
		// NB: nothing to do: this build reads and writes the format as it
		// is (a format 2 index keeps format 2's fingerprint).
		rep.To = db.man.FormatVersion
		if db.manifestNow().UpgradeUncompacted && db.rkv == nil {
			// NB: but the old records that an upgrade stopped after its
			// ingest left: an index killed there stayed at 14x its size,
			// and a second upgrade said it had nothing to do (a
			// compatibility review, C2).
			ctx, cancel := db.opCtx(ctx)
			defer cancel()
			need, err := db.pdb.EstimateDiskUsage(codec.DocPrefix, codec.PostingPrefixEnd)
			if err != nil {
				return nil, classify(err)
			}
			rep.Compacted, rep.Uncompacted = db.compactUpgraded(ctx, int64(need), codec.PostingPrefixEnd)
		}
		return rep, nil
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()

	m := db.man
	m.FormatVersion = codec.FormatVersion
	m.UpgradeUncompacted = true // NB: until the compaction below (see compactUpgraded)
	if m.Instance == "" {
		// NB: an index made before instances gets one with its new
		// format: a pairs file made before it was built anew in its
		// directory (another corpus of the same size) was taken for its
		// own, and clusters --from gave the old corpus's clusters (a
		// compatibility review, C3).
		m.Instance = newInstance()
	}
	if !sketches {
		m.Storage = StorageSets
		if m.StoreText {
			m.Storage = StorageText
		}
	}
	rep.Storage = m.Storage
	enc, err := codec.EncodeManifest(&m)
	if err != nil {
		return nil, err
	}
	old := db.man
	db.man = m // newRecord and the tables' compression follow the new mode
	upgraded := false
	defer func() {
		if !upgraded { // the index is as it was: so is its manifest here
			db.man = old
		}
	}()

	// NB: the new records (and, from format 1, posting lists) are about
	// as large as the old, which stay until the ingest: refused at once
	// without room for them above the reserve, and their tables written
	// through the reserve's check (tempFS). An upgrade that had room to
	// open but not to rewrite failed with a raw "no space left on
	// device", and one that just fitted left the disk full.
	hi := codec.PostingPrefixEnd
	if sketches {
		hi = codec.DocPrefixEnd // the posting lists are left alone
	}
	need, err := db.pdb.EstimateDiskUsage(codec.DocPrefix, codec.DocPrefixEnd)
	var lists uint64
	if err == nil && !sketches {
		// NB: the records and the posting lists, not the ids between
		// them, which are kept.
		lists, err = db.pdb.EstimateDiskUsage(codec.PostingPrefix, codec.PostingPrefixEnd)
		need += lists
	}
	if err != nil {
		return nil, classify(err)
	}
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	conv := v1Converter{h: h}
	if !sketches {
		// NB: format 1's records hold the shingle set, 8 bytes a shingle,
		// which the new ones do not (a text index's hold the text, which
		// compresses): counted as the old records' size, an upgrade of a
		// 364 MiB index was refused for want of 362 MiB (plus the
		// reserve) where it took 47 MiB (a format review, FM-1). The new
		// records' share of the old is measured on a sample, and counted
		// with a margin, uncompressed (so more than they take).
		var oldBytes, newBytes int
		err := scanUpTo(ctx, db.pdb, codec.DocPrefix, codec.DocPrefixEnd, upgradeSample, func(k, v []byte) error {
			n, err := codec.ParseDocKey(k)
			if err == nil {
				var view codec.DocView
				if view, err = codec.ParseDocView(v); err == nil {
					var out []byte
					out, err = conv.convert(db, n, &view, old.FormatVersion)
					oldBytes, newBytes = oldBytes+len(v), newBytes+len(out)
				}
			}
			return err
		})
		if err != nil {
			// NB: the scan below says it, naming the document.
			oldBytes = 0
		}
		if oldBytes > 0 && newBytes < oldBytes {
			need = uint64(float64(need-lists) * min(1, 1.25*float64(newBytes)/float64(oldBytes)))
			need += lists
		}
	}
	if sketches {
		// NB: each record gains a sketch that no compressor shrinks:
		// counted from the old records' size, the new ones on 1.4
		// million short texts took 2.06x the figure, and an upgrade that
		// passed the check filled the disk (a compatibility review, C1).
		need += uint64(db.stored()) * uint64(codec.SketchBytes(db.skOpt.NumPerm)+8)
	}
	if err := db.roomFor(int64(need)); err != nil {
		// NB: a backup reads only the formats this build reads: an index
		// before format 2 is copied as files (the ErrFormat message's
		// advice).
		copyHow := "lshdb backup --to DIR --copy"
		if !sketches {
			copyHow = "cp -a DIR NEWDIR while nothing has it open"
		}
		return nil, fmt.Errorf("%w; the upgrade writes the records anew (about %s) before it drops the old ones: free space, or upgrade a copy on a larger disk (%s)", err, mib(int64(need)), copyHow)
	}
	fs := db.tempFS(db.dir)
	tmp := fs.PathJoin(db.dir, loadTmpDir)
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	defer fs.RemoveAll(tmp)
	lt := loadTables{db: db, fs: fs, dir: tmp, maxBytes: defaultTableBytes}
	records, manifest := lt.seqNoFilter("upgrade-records"), lt.seqNoFilter("upgrade-manifest")
	postings := lt.seq("upgrade-postings")
	defer records.abandon()
	defer manifest.abandon()
	defer postings.abandon()

	snap := db.pdb.NewSnapshot()
	snapOpen := true
	defer func() {
		if snapOpen {
			snap.Close()
		}
	}()
	var (
		out     []byte
		derr    error
		docs    int
		expired int
	)
	now := db.now().UnixNano()
	err = scan(ctx, snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		n, err := codec.ParseDocKey(k)
		if err != nil {
			derr = classify(err)
			return
		}
		view, err := codec.ParseDocView(v)
		if err == nil && compaction.Expired(view.Expires, now) {
			// NB: counted apart: the summary said 2 documents of an
			// index that info then said held 1 (an upgrade review's
			// UPG-5).
			expired++
		}
		if sketches {
			if err == nil {
				err = db.sketchRecord(h, old.FormatVersion, &view, &out)
			}
			if err != nil {
				derr = classify(fmt.Errorf("doc %d: %w", n, err))
			} else if derr = records.set(k, out); derr == nil {
				docs++
			}
			return
		}
		if err != nil {
			derr = classify(fmt.Errorf("doc %d: %w", n, err))
			return
		}
		if out, derr = conv.convert(db, n, &view, old.FormatVersion); derr != nil {
			return
		}
		if derr = records.set(k, out); derr == nil {
			docs++
		}
	})
	// stopped says that a table write refused for want of room left the
	// index as it was (the reserve's check, tempFS).
	stopped := func(err error) error {
		switch {
		case errors.Is(err, ErrDiskFull) && db.opts.DiskReserve < 0:
			// NB: no room was counted (a format review, FM-4: it blamed
			// the count for a disk that had less than it).
			return fmt.Errorf("%w; the upgrade stopped before its new records were ingested, and the index is as it was (format %d): it needs about %s free, and the check of the room before it was off", err, old.FormatVersion, mib(int64(need)))
		case errors.Is(err, ErrDiskFull):
			return fmt.Errorf("%w; the upgrade stopped before its new records were ingested, and the index is as it was (format %d): it needs more than the %s it was counted to need", err, old.FormatVersion, mib(int64(need)))
		}
		return err
	}
	if err = cmp.Or(err, derr); err != nil {
		return nil, stopped(err)
	}
	if !sketches {
		if err := upgradePostings(ctx, snap, postings); err != nil {
			return nil, stopped(err)
		}
	}
	// NB: released before the ingest and the compaction below: a snapshot
	// keeps every record it can see, so the compaction kept the old
	// records beside the new ones (a million-document index stayed at
	// 1.6x its size until later compactions dropped them).
	snap.Close()
	snapOpen = false
	if err := manifest.set(codec.ManifestKey, enc); err != nil {
		return nil, stopped(err)
	}
	var paths []string
	for _, t := range []*tableSeq{records, postings, manifest} {
		p, ferr := t.finish()
		if err = ferr; err != nil {
			break
		}
		paths = append(paths, p...)
	}
	if err != nil {
		return nil, stopped(classify(err))
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	// written: the new tables' size, which the compaction below writes
	// again before it drops the old ones.
	var written int64
	for _, p := range paths {
		if fi, err := fs.Stat(p); err == nil {
			written += fi.Size()
		}
	}
	// NB: one Ingest is atomic: the new records and the new manifest
	// become visible together, with one sequence number.
	// NB: through pebbleWrite, as a Load's ingest (FI-3).
	if err := db.pebbleWrite(func() error { return db.pdb.Ingest(context.Background(), paths) }); err != nil {
		return nil, classify(fmt.Errorf("lshdb: ingesting the upgraded records: %w", unprefixed{err}))
	}
	upgraded, rep.Docs, rep.Expired = true, docs, expired
	// NB: as after a Load: the upgrade is stored, and the flush only
	// tidies; Pebble's Flush waited for ever where flushes could not
	// write, and failed an upgrade that was stored (C3-4).
	if err := db.flushWait(ctx); err != nil {
		db.opts.Logger.Warn("lshdb: the upgrade is stored, but not flushed into the LSM's levels after it (Pebble does it later)", "error", err)
	}
	// The old records and posting lists are shadowed or deleted; a
	// compaction of their ranges frees their space now rather than
	// whenever Pebble gets to it. NB: it writes the live records anew
	// before it removes the old tables: without room for them above the
	// reserve it is left to Pebble (a compaction that filled the disk
	// left every later write refused).
	if upgradeStopHook != nil && upgradeStopHook() {
		return rep, nil // NB: a test's crash here
	}
	_, rep.Uncompacted = db.compactUpgraded(ctx, cmp.Or(written, int64(need)), hi)
	return rep, nil
}

// upgradeStopHook, when set (tests), is called once an upgrade's records
// are ingested; true stops the upgrade there, as a crash would.
var upgradeStopHook func() bool

// compactUpgraded compacts the records (and posting lists, up to hi) that
// an upgrade replaced, with room for need bytes above the reserve, and
// then clears the manifest's UpgradeUncompacted; it reports whether it
// compacted, or left them (logged). The caller holds wmu.
func (db *DB) compactUpgraded(ctx context.Context, need int64, hi []byte) (compacted, left bool) {
	// NB: it writes the live records anew before it removes the old
	// tables: without room for them above the reserve it is left to
	// Pebble (a compaction that filled the disk left every later write
	// refused).
	if err := db.roomFor(need); err != nil {
		db.opts.Logger.Warn("lshdb: upgraded, but the old records stay on disk until Pebble compacts them, for want of room to compact now: free space and run lshdb compact (or lshdb upgrade again)", "err", err)
		return false, true
	}
	if err := db.pdb.Compact(ctx, codec.DocPrefix, hi, true); err != nil {
		db.opts.Logger.Warn("lshdb: upgraded, but compacting the old records failed: they stay on disk until Pebble compacts them (lshdb compact, or lshdb upgrade again)", "err", err)
		return false, true
	}
	if err := db.clearUpgradeMark(); err != nil {
		db.opts.Logger.Warn("lshdb: the old records of the upgrade were compacted, but the manifest still says they are not (the next upgrade or compaction compacts again)", "err", err)
	}
	return true, false
}

// manifestNow is the manifest as stored now: db.man, without its
// UpgradeUncompacted once that was cleared.
func (db *DB) manifestNow() codec.Manifest {
	m := db.man
	if db.upgradeCompacted.Load() {
		m.UpgradeUncompacted = false
	}
	return m
}

// clearUpgradeMark writes the manifest without UpgradeUncompacted, if it
// has it (a synced write). The caller holds wmu.
func (db *DB) clearUpgradeMark() error {
	m := db.manifestNow()
	if !m.UpgradeUncompacted {
		return nil
	}
	m.UpgradeUncompacted = false
	enc, err := codec.EncodeManifest(&m)
	if err != nil {
		return err
	}
	if err := db.pebbleWrite(func() error { return db.pdb.Set(codec.ManifestKey, enc, pebble.Sync) }); err != nil {
		return classify(err)
	}
	db.upgradeCompacted.Store(true)
	return nil
}

// sketchRecord encodes into *out the format 5 record of a text record of
// an index of format old (2 to 4): the same id, text, metadata and expiry,
// with the sketch of the signature its text gives (db.man is format 5's).
// A record without text, or whose text does not give back its stored set
// size and fingerprint, is ErrCorrupt.
func (db *DB) sketchRecord(h *minhash.Hasher, old int, view *codec.DocView, out *[]byte) error {
	if view.Version != 2 {
		return fmt.Errorf("%w: a record of format %d in a format %d index", codec.ErrCorrupt, view.Version, old)
	}
	if !view.HasText {
		return fmt.Errorf("%w: %q of a text index holds no text", ErrCorrupt, view.ID)
	}
	text := string(view.Text)
	var set []uint64
	var sig []uint32
	if old < 3 {
		set, sig = h.Document(nil, nil, text) // format 2's fingerprint is of the sorted set
	} else {
		set, sig = h.DocumentUnsorted(nil, nil, text)
	}
	if len(set) != view.SetLen || codec.FingerprintOf(old, set) != view.SetFingerprint() {
		return fmt.Errorf("%w: %q: its stored text does not give back its stored shingle set (%d shingles, %d stored)", ErrCorrupt, view.ID, len(set), view.SetLen)
	}
	rec, _ := db.newRecord(string(view.ID), set, sig, text, true, view.Meta, nil)
	rec.Expires = view.Expires
	*out = codec.AppendDocRecord((*out)[:0], &rec)
	return nil
}

// upgradePostings writes into t the format 2 posting lists of the format
// 1 ones in snap: each list under its 32-bit bucket key (lists whose
// 64-bit buckets share 32 bits are merged), followed by a point delete of
// each old key. NB: a format 2 key is a prefix of the format 1 keys of its
// bucket, so the new key and the deletes come out in key order, in one
// stream, with no sort.
func upgradePostings(ctx context.Context, snap *pebble.Snapshot, t *tableSeq) error {
	var (
		cur  []byte // the format 2 key being gathered
		docs []codec.Posting
		olds [][]byte
		ps   []codec.Posting
		val  []byte
		derr error
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		if len(docs) > 0 {
			slices.SortFunc(docs, func(a, b codec.Posting) int { return cmp.Compare(a.Doc, b.Doc) })
			docs = slices.Compact(docs)
			val = codec.AppendPostings(val[:0], docs)
			if err := t.set(cur, val); err != nil {
				return err
			}
		}
		for _, k := range olds {
			if err := t.del(k); err != nil {
				return err
			}
		}
		cur, docs, olds = nil, docs[:0], olds[:0]
		return nil
	}
	err := scan(ctx, snap, codec.PostingPrefix, codec.PostingPrefixEnd, func(k, v []byte) {
		if derr != nil {
			return
		}
		band, bucket, err := codec.ParsePostingKeyV1(k)
		if err == nil {
			ps, err = codec.DecodePostings(v, ps[:0])
		}
		if err != nil {
			derr = classify(fmt.Errorf("posting list %x: %w", k, err))
			return
		}
		nk := codec.AppendPostingKey(nil, band, codec.BucketOf(bucket))
		if !bytes.Equal(nk, cur) {
			if derr = flush(); derr != nil {
				return
			}
			cur = nk
		}
		for _, p := range ps {
			if !p.Remove { // a merged list keeps no removals; be safe
				docs = append(docs, codec.Posting{Doc: p.Doc})
			}
		}
		olds = append(olds, bytes.Clone(k))
	})
	if err = cmp.Or(err, derr); err != nil {
		return err
	}
	return flush()
}

// upgradeSample is how many records of a format 1 index an upgrade
// converts first, to count the room the new ones take.
const upgradeSample = 2000

// v1Converter rewrites format 1 records in the format an upgrade writes,
// reusing its buffers.
type v1Converter struct {
	h          *minhash.Hasher
	set, again []uint64
	sig        []uint32
	set32      []uint32
	out        []byte
}

// convert returns the new record of doc n, whose format 1 record is
// view, in c's buffer (valid until the next call), with db.man the new
// manifest; from is the index's format.
func (c *v1Converter) convert(db *DB, n uint64, view *codec.DocView, from int) ([]byte, error) {
	var err error
	if view.Version != 1 {
		err = fmt.Errorf("%w: a record of format %d in a format %d index", codec.ErrCorrupt, view.Version, from)
	}
	if err == nil {
		c.set, err = view.AppendSet(c.set[:0])
	}
	if err != nil {
		return nil, classify(fmt.Errorf("doc %d: %w", n, err))
	}
	c.sig = view.AppendSignature(c.sig[:0])
	text := string(view.Text)
	if db.man.Storage == StorageText {
		if !view.HasText {
			return nil, fmt.Errorf("%w: doc %d (%q) of an index that stores text has none", ErrCorrupt, n, view.ID)
		}
		// NB: verification will re-derive the set from the text: an
		// upgrade that changed an answer would be a silent bug, so the
		// text must give back exactly the stored set.
		if c.again = c.h.Shingler().AppendSet(c.again[:0], text); !slices.Equal(c.again, c.set) {
			return nil, fmt.Errorf("%w: doc %d (%q): its stored text does not give back its stored shingle set (%d shingles, %d stored)", ErrCorrupt, n, view.ID, len(c.again), len(c.set))
		}
	}
	var rec codec.DocRecord
	rec, c.set32 = db.newRecord(string(view.ID), c.set, c.sig, text, view.HasText, view.Meta, c.set32)
	c.out = codec.AppendDocRecord(c.out[:0], &rec)
	return c.out, nil
}
