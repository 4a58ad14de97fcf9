package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/minhash"
)

// CheckReport is the result of a consistency check.
type CheckReport struct {
	Docs         int // doc records
	IDs          int // id-map entries
	PostingLists int // posting lists (keys), empty ones included
	EmptyLists   int // posting lists with no postings (left by deletes)
	Postings     int // postings over all lists
	// Expired counts the documents past their expiry (TTL) that the
	// sweep has not removed yet: no read returns them, and Count counts
	// them until a writable handle's sweep (Pebble; 0 on Redis, whose
	// keys expire themselves). Not a problem.
	Expired int
	// Problems lists the inconsistencies found, the first MaxProblems of
	// them; empty means the database checks clean.
	Problems []string
	// ProblemCount is the number of inconsistencies found, those past
	// the first MaxProblems (not listed) included.
	ProblemCount int
}

// MaxProblems bounds CheckReport.Problems.
const MaxProblems = 100

// OK reports whether the check found no problem.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

func (r *CheckReport) problem(format string, args ...any) {
	r.ProblemCount++
	if len(r.Problems) < MaxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check verifies the whole database against its invariants, on one
// snapshot: every record decodes; a text mode record's text re-shingles
// to its stored set size and fingerprint, and gives the signature its
// postings are checked against (sets and none mode store the signature:
// a 32-bit set cannot give it again); every id maps to a record with that
// id and every record is mapped; every posting names a stored document;
// every document is in all b of its buckets; the counters agree. It reads
// everything, so it takes time proportional to the database. The error is
// for I/O failures; inconsistencies are in the report.
//
// In a classic index of sets or none mode it also reports each stored
// all-zero signature of a set: an lshdb before 2026-12 gave it to
// any set holding the hash 0, and such a document is not found by its
// near-duplicates without 0 (put it again; Repair leaves it). A text mode
// record's signature is derived again, so there the postings of the old
// signature are what Check reports, and Repair mends.
//
// On Redis there is no snapshot: the keys are read as they are, and a
// write made by another handle while Check runs may be reported as an
// inconsistency (a record no id names yet). Check a Redis index with no
// writer beside it, and check again before a Repair acts on a report.
//
// The trust boundary: Pebble's block checksums catch damage on disk, and
// Check what the index's own invariants can tell. A shingle set altered in
// place (by a bug, or a crafted store with valid checksums) into another
// sorted set is caught only when the change alters the signature
// recomputed from it: a changed shingle that is no bin's minimum goes
// unseen, and Jaccard scores then use the altered set. Records carry no
// checksum of their own.
func (db *DB) Check(ctx context.Context) (*CheckReport, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: a context that has ended gets its error at once, as from every
	// other call (a small index was checked whole before the first of
	// the checks every few thousand records).
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if db.rkv != nil {
		return db.redisCheck(ctx)
	}
	snap := db.pdb.NewSnapshot()
	defer snap.Close()
	rep := &CheckReport{}
	now := db.now().UnixNano()
	prog := progressOf(ctx)
	defer prog.end()
	prog.phase(1, 3, "checking documents", int64(db.stored()))
	done := counter{p: prog}
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)

	// Doc records: decode, re-sketch, and remember id and band keys.
	type docInfo struct {
		id      string
		keys    []uint64
		expires int64
		// inBand has bit b set once the document's posting is found in
		// its bucket of band b.
		//
		// NB: a bit per band, where a map held every posting found (a
		// member of band, bucket and doc): check of 1,000,000 documents
		// of 16 bands peaked at 1.6 GiB (a nightly review's B1).
		inBand []uint64
	}
	docs := make(map[uint64]docInfo)
	maxDoc := uint64(0)
	var rec docData
	var sk []byte
	err := scan(ctx, snap, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		done.inc()
		rep.Docs++
		n, err := codec.ParseDocKey(k)
		if err != nil {
			rep.problem("bad doc key %x", k)
			return
		}
		if n > codec.MaxDocNum {
			rep.problem("doc key %x: a doc number past the largest a posting holds", k)
			return
		}
		maxDoc = max(maxDoc, n)
		if len(v) == 0 {
			rep.problem("doc %d: an empty record", n)
			return
		}
		if v[0] != 2 {
			rep.problem("doc %d: a record of format %d in a format %d index", n, v[0], db.man.FormatVersion)
			return
		}
		if err := codec.DecodeDocRecord(v, &rec.DocRecord); err != nil {
			rep.problem("doc %d: %v", n, err)
			return
		}
		// NB: such a document can be neither read nor deleted by id
		// (Repair removes it).
		if err := checkID(rec.ID); err != nil {
			rep.problem("doc %d: an id no write takes: %v", n, err)
		}
		// NB: complete re-shingles a text mode record's text and checks it
		// against the stored set size and fingerprint.
		if err := db.complete(h, n, &rec); err != nil {
			rep.problem("%v", err)
			return
		}
		// NB: a signature put (PutSignature, none mode) has no set: its
		// record says SetLen 0; any other document has a non-empty set.
		if rec.SetLen == 0 && !(db.man.Storage == StorageNone && rec.Signature != nil && !rec.HasText) {
			rep.problem("doc %d (%q) has an empty shingle set", n, rec.ID)
		}
		if rec.Set32 != nil && codec.FingerprintOf(db.man.FormatVersion, rec.Set32) != rec.SetFP {
			rep.problem("doc %d (%q): the stored set does not match its fingerprint", n, rec.ID)
		}
		if len(rec.Signature) != db.skOpt.NumPerm {
			rep.problem("doc %d (%q): a signature of %d values (the index has %d)", n, rec.ID, len(rec.Signature), db.skOpt.NumPerm)
		} else if db.skOpt.Scheme == minhash.SchemeClassic && rec.SetLen > 0 && !slices.ContainsFunc(rec.Signature, func(v uint32) bool { return v != 0 }) {
			// NB: an older lshdb's classic gave a set holding the hash 0
			// the all-zero signature (a core review's CR-1): it shares
			// no band with its near-copies without 0, and every band
			// with any other such set. A set's true signature is all zero
			// with probability about (n/2^32)^k. A signature put as it is
			// (PutSignature: no set) is the caller's, and not flagged. In
			// text mode the signature is not stored: it is derived again,
			// and its postings are the ones missing.
			rep.problem("doc %d (%q): the all-zero signature an older lshdb's classic scheme gave a set holding the hash 0; its near-duplicates without 0 are not found: put the document again", n, rec.ID)
		}
		if rec.Sketch != nil {
			// NB: Pairs rules pairs out by the stored sketch alone: one
			// that is not its signature's would lose pairs silently.
			if sk = codec.AppendSketch(sk[:0], rec.Signature); !bytes.Equal(rec.Sketch, sk) {
				rep.problem("doc %d (%q): the stored sketch is not its signature's", n, rec.ID)
			}
			// NB: a sketch where the format or the mode has none would
			// make an older build, which this format promises, refuse it.
			if db.man.FormatVersion < codec.SketchFormatVersion || db.man.Storage != StorageText {
				rep.problem("doc %d (%q): a sketch in a format %d %s index", n, rec.ID, db.man.FormatVersion, db.man.Storage)
			}
		}
		keys, err := db.bucketKeys(nil, rec.Signature)
		if err != nil {
			rep.problem("doc %d (%q): %v", n, rec.ID, err)
		}
		docs[n] = docInfo{rec.ID, keys, rec.Expires, make([]uint64, (len(keys)+63)/64)}
		if compaction.Expired(rec.Expires, now) {
			rep.Expired++
		}
	})
	if err != nil {
		return nil, err
	}
	// The expiry index: one key per expiring record, naming its expiry.
	indexed := 0
	err = scan(ctx, snap, codec.ExpiryPrefix, codec.ExpiryPrefixEnd, func(k, _ []byte) {
		x, n, err := codec.ParseExpiryKey(k)
		if err != nil {
			rep.problem("bad expiry key %x", k)
			return
		}
		d, ok := docs[n]
		switch {
		case !ok:
			rep.problem("the expiry index names doc %d, which has no record", n)
		case d.expires != x:
			rep.problem("the expiry index has doc %d (%q) expire at %d, its record at %d", n, d.id, x, d.expires)
		default:
			indexed++
		}
	})
	if err != nil {
		return nil, err
	}
	expiring := 0
	for _, d := range docs {
		if d.expires != 0 {
			expiring++
		}
	}
	if expiring != indexed {
		rep.problem("%d records expire, %d of them are in the expiry index", expiring, indexed)
	}

	// Id map: every id names a record with that id, once.
	done.flush()
	prog.phase(2, 3, "checking ids", int64(len(docs)))
	mapped := make(map[uint64]bool, len(docs))
	err = scan(ctx, snap, codec.IDPrefix, codec.IDPrefixEnd, func(k, v []byte) {
		done.inc()
		rep.IDs++
		id, err := codec.ParseIDKey(k)
		if err != nil {
			rep.problem("bad id key %x", k)
			return
		}
		n, err := codec.DecodeDocNum(v)
		if err != nil {
			rep.problem("id %q: %v", id, err)
			return
		}
		d, ok := docs[n]
		switch {
		case !ok:
			rep.problem("id %q names doc %d, which has no record", id, n)
		case d.id != id:
			rep.problem("id %q names doc %d, whose id is %q", id, n, d.id)
		case mapped[n]:
			rep.problem("doc %d is named by two ids", n)
		}
		mapped[n] = true
	})
	if err != nil {
		return nil, err
	}
	for n, d := range docs {
		if !mapped[n] {
			rep.problem("doc %d (%q) has no id-map entry", n, d.id)
		}
	}

	// Posting lists: every posting names a record; collect membership.
	var ps []codec.Posting
	done.flush()
	prog.phase(3, 3, bandsPhase("checking posting lists"), int64(db.bands.B)*bandParts)
	bands := newBandCounter(prog, 0)
	err = scan(ctx, snap, codec.PostingPrefix, codec.PostingPrefixEnd, func(k, v []byte) {
		bands.key(k)
		rep.PostingLists++
		band, bucket, err := codec.ParsePostingKey(k)
		if err != nil {
			rep.problem("bad posting key %x", k)
			return
		}
		if band >= db.bands.B {
			// NB: skipped unsaid, where check --repair removed it (a
			// review: check said ok, then repair removed 244,868 lists).
			rep.problem("posting list %d/%08x is of band %d, and the index has bands 0 to %d", band, bucket, band, db.bands.B-1)
			return
		}
		if ps, err = codec.DecodePostings(v, ps[:0]); err != nil {
			rep.problem("posting list %d/%08x: %v", band, bucket, err)
			return
		}
		if len(ps) == 0 {
			rep.EmptyLists++
		}
		for _, p := range ps {
			rep.Postings++
			if p.Remove {
				rep.problem("posting list %d/%08x keeps a removal of doc %d after a full merge", band, bucket, p.Doc)
				continue
			}
			if d, ok := docs[p.Doc]; !ok {
				rep.problem("posting list %d/%08x names doc %d, which has no record", band, bucket, p.Doc)
			} else if band < len(d.keys) && d.keys[band] != bucket {
				// NB: a query that probes the list got the document as a
				// candidate; it was reported only once the document was
				// deleted (a posting of no record).
				rep.problem("posting list %d/%08x names doc %d (%q), whose bucket in band %d is %08x", band, bucket, p.Doc, d.id, band, d.keys[band])
			} else if band < len(d.keys) {
				d.inBand[band/64] |= 1 << (band % 64)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for n, d := range docs {
		for band := range d.keys {
			if d.inBand[band/64]&(1<<(band%64)) == 0 {
				rep.problem("doc %d (%q) is missing from its bucket in band %d", n, d.id, band)
			}
		}
	}

	// Counters.
	cv, ok, err := getCopy(snap, codec.CountersKey)
	if err != nil {
		return nil, err
	}
	if !ok {
		rep.problem("the counters record is missing")
	} else if c, err := codec.DecodeCounters(cv); err != nil {
		rep.problem("counters: %v", err)
	} else {
		if c.Live != uint64(len(docs)) {
			rep.problem("the counters say %d documents, %d records are stored", c.Live, len(docs))
		}
		if len(docs) > 0 && c.NextDoc <= maxDoc {
			rep.problem("the next doc number %d is not above the largest stored, %d", c.NextDoc, maxDoc)
		}
	}
	return rep, nil
}

// scan calls fn for every key in [lo, hi) of r.
func scan(ctx context.Context, r pebble.Reader, lo, hi []byte, fn func(k, v []byte)) error {
	return scanUpTo(ctx, r, lo, hi, -1, func(k, v []byte) error { fn(k, v); return nil })
}

// scanUpTo is scan of the first limit keys (all of them: negative) that
// stops at fn's first error, and returns it.
func scanUpTo(ctx context.Context, r pebble.Reader, lo, hi []byte, limit int, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return classify(err)
	}
	n := 0
	for ok := it.First(); ok && n != limit; ok = it.Next() {
		// NB: from the first key, then every 1,024: a range of fewer
		// keys was read whole under a cancelled context (Buckets of a
		// small band returned its result and no error).
		if n++; n%1024 == 1 {
			if err := ctxErr(ctx); err != nil {
				it.Close()
				return err
			}
		}
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return classify(errors.Join(it.Error(), it.Close()))
}
