package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"golang.org/x/text/unicode/norm"
)

// StoredDoc is a stored document, as Get and All return it (a Doc is a
// document to store). Every slice and string in it is owned by
// the caller: it can be modified and held indefinitely.
type StoredDoc struct {
	ID string
	// Num is the internal doc number: dense, increasing with insertion,
	// never reused (an upsert gets a new one).
	Num uint64
	// HasText reports whether the text was stored; Text is "" otherwise.
	HasText bool
	Text    string
	// Meta is the opaque metadata stored with the document, or nil.
	Meta []byte
	// Shingles is the sorted, de-duplicated set that verification
	// compares: the 64-bit shingle hashes (re-derived from the text in
	// the default text mode), their high 32 bits in sets mode, nil in
	// none mode.
	Shingles []uint64
	// SetLen is the set's size (distinct shingles): len(Shingles) where
	// the set is kept, and in none mode the size the put recorded (0:
	// unknown, a document put as a signature).
	SetLen int
	// Signature is the MinHash signature (re-derived from the text in
	// text mode).
	Signature []uint32
	// ExpiresAt is when the document expires (WriteOptions.TTL,
	// ExpireAt); the zero time for never.
	ExpiresAt time.Time
}

// getCopy reads key into a fresh slice; ok is false if it is absent.
func getCopy(r pebble.Reader, key []byte) (v []byte, ok bool, err error) {
	val, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify(err)
	}
	v = append([]byte(nil), val...)
	return v, true, classify(closer.Close())
}

// lookup returns the doc number and record of id as v sees them, or an
// error wrapping ErrNotFound. Every id → record read goes through it.
func (db *DB) lookup(v view, id string, rec *docData) (uint64, error) {
	n, err := db.lookupStored(v, id, rec)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			// NB: here, not in lookupStored, which a load calls for
			// every new id (a read-through's R11: 2.2x a miss).
			if hint := otherForm(v, id); hint != "" {
				err = fmt.Errorf("%w%s", err, hint)
			}
		}
		return 0, err
	}
	if compaction.Expired(rec.Expires, db.now().UnixNano()) {
		return 0, fmt.Errorf("%w: %s (expired)%w", ErrNotFound, showID(id), unsaid{errExpired})
	}
	return n, nil
}

// otherForm is, for an id that is not stored, a hint naming the stored
// id that is the same characters in another Unicode normalization form
// (é as one code point, or as e and a combining accent), or "". Ids are
// compared byte for byte, as they must be, but the two look alike in
// every output, and an id typed on a keyboard (NFC) missed one stored
// decomposed with "document not found" alone (a multilingual user's U6).
// Only an id past ASCII has another form; looked up on a miss of a read
// (Get, a query or explain by id), not of a write's check.
func otherForm(v view, id string) string {
	if !utf8.ValidString(id) {
		return ""
	}
	for _, f := range []struct {
		form norm.Form
		name string
	}{{norm.NFC, "NFC"}, {norm.NFD, "NFD"}} {
		other := f.form.String(id)
		if other == id {
			continue
		}
		if _, ok, err := v.docNum(other); err == nil && ok {
			return fmt.Sprintf(" (an id of the same characters in Unicode form %s is stored: %s, written with escapes; ids are compared byte for byte)", f.name, strconv.QuoteToASCII(other))
		}
	}
	return ""
}

// errExpired marks (unsaid) lookup's ErrNotFound of a document whose TTL
// ran out, for a message that names two ids (Explain's).
var errExpired = errors.New("expired")

// IsExpired reports whether err is the ErrNotFound of a document whose
// TTL ran out (one not yet swept: Get, QueryID, Explain, Delete and
// DeleteIDs say "(expired)"), rather than of one never stored or deleted.
// It is false for the errors of package db/client, whose server answers
// an expired document as not_found alone (its message says "(expired)").
func IsExpired(err error) bool { return errors.Is(err, errExpired) }

// missingName is how a message that names several missing ids names id,
// err its lookup's error: with "(expired)" as lookup says it.
func missingName(id string, err error) string {
	if errors.Is(err, errExpired) {
		return showID(id) + " (expired)"
	}
	return showID(id)
}

// lookupStored is lookup without the expiry check: the document stored
// under id, expired or not, for a writer that must remove it (an expired
// document not yet swept is still stored: its record, postings and id).
func (db *DB) lookupStored(v view, id string, rec *docData) (uint64, error) {
	n, ok, err := v.docNum(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, showID(id))
	}
	n, r, ok, err := idRecord(v, id, n)
	if err != nil {
		return 0, err
	}
	if !ok {
		if v.gone() {
			// NB: deleted between the reads (Redis).
			return 0, fmt.Errorf("%w: %s", ErrNotFound, showID(id))
		}
		return 0, corruptRepairable("id %q names doc %d, which has no record", id, n)
	}
	if err := db.decodeDoc(n, r, rec); err != nil {
		return 0, err
	}
	if err := recordOf(id, n, rec.ID); err != nil {
		return 0, err
	}
	return n, nil
}

// idRecord returns the record of doc n, which v read that id names, and
// the number it is under. With no snapshot (Redis, view.gone), a replace
// of the id between the two reads retires doc n's record once the id
// names the new document: the id is read again, and the record of the
// number it names now (a few times, for an id replaced again meanwhile).
// An id that is gone (deleted, or expired), or that still names n (a
// record that expired before its id, or an orphan that Check reports),
// has no record (ok false). A get or a query by id of an id being replaced answered
// "not found" in 2-5% of reads beside a writer that did nothing but
// replace it (a consistency review's R1).
func idRecord(v view, id string, n uint64) (uint64, []byte, bool, error) {
	for try := 0; ; try++ {
		r, ok, err := v.record(n)
		if err != nil || ok || !v.gone() || try == maxReplacedReads {
			return n, r, ok, err
		}
		now, named, err := v.docNum(id)
		if err != nil || !named || now == n {
			return n, nil, false, err
		}
		n = now
	}
}

// maxReplacedReads bounds idRecord's reads again of an id being
// replaced: one replaced again before each of them (five races lost in
// a row) is answered as not found.
const maxReplacedReads = 4

// recordOf checks that doc n, which id's record names, is id's: a record
// names its id, so the check is free, where an id record that named
// another's doc number answered with that document, and a put or delete
// of the id removed it.
func recordOf(id string, n uint64, recID string) error {
	if recID != id {
		return corruptRepairable("id %q names doc %d, whose record is of %q", id, n, recID)
	}
	return nil
}

func toDocument(n uint64, r *docData) *StoredDoc {
	d := &StoredDoc{ID: r.ID, Num: n, HasText: r.HasText, Text: r.Text, Meta: metaOf(r.Meta), Shingles: r.Set, Signature: r.Signature}
	if len(d.Shingles) == 0 {
		d.Shingles = nil // NB: none mode's, as documented (it was empty, not nil)
	}
	d.SetLen = r.SetLen
	if d.Shingles != nil {
		d.SetLen = len(d.Shingles)
	}
	if r.Expires != 0 {
		d.ExpiresAt = time.Unix(0, r.Expires).UTC()
	}
	return d
}

// Get returns the document id, or ErrNotFound (also for an expired one);
// an invalid id (CheckID) is ErrInvalidID.
func (db *DB) Get(id string) (*StoredDoc, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if err := checkID(id); err != nil {
		return nil, err
	}
	v, release, err := db.openView(db.closing, db.pdb, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var rec docData
	n, err := db.lookup(v, id, &rec)
	if err != nil {
		return nil, err
	}
	return toDocument(n, &rec), nil
}

// Has reports whether a document has id.
func (db *DB) Has(id string) (bool, error) {
	found, err := db.HasIDs([]string{id})
	if err != nil {
		return false, err
	}
	return found[0], nil
}

// HasIDs reports for each of ids whether a document has it: what Has
// says of each, in one call (an attached client's one round trip; on
// Redis two pipelines). On Pebble the answers are of one snapshot; on
// Redis, which has none, an id written meanwhile may be answered either
// way. An invalid id fails the call, naming its position (a DocError)
// among several.
func (db *DB) HasIDs(ids []string) ([]bool, error) {
	return db.HasIDsContext(context.Background(), ids)
}

// HasIDsContext is HasIDs that ends when ctx does, with its error (or
// ErrClosed when the database closes), checked every 1,024 ids: a server
// stops a long one when its client goes away.
func (db *DB) HasIDsContext(ctx context.Context, ids []string) ([]bool, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// NB: as every call with a context: one that has ended gets its
	// error at once (it was checked every 1,024 ids only).
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	for i, id := range ids {
		if err := checkID(id); err != nil && len(ids) > 1 {
			return nil, &DocError{Index: i, ID: id, Err: err}
		} else if err != nil {
			return nil, err
		}
	}
	found := make([]bool, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	now := db.now().UnixNano()
	// NB: a record is read for its expiry only when a document of the
	// index has expired (and awaits the sweep): otherwise an id names a
	// live document. Every record read, a text record's block
	// decompressed, made 0.8 of the 0.9 s that filter's check of 170,000
	// ids took (a data engineer's review, NV1). Redis has no snapshot:
	// its records are read. Asked before the view is taken: a sweep
	// after it would hide from this question a document the view holds
	// expired (a read-through's R5).
	expired := true
	if db.rkv == nil {
		var err error
		if expired, err = db.anyExpired(now); err != nil {
			return nil, err
		}
	}
	v, release, err := db.openView(db.closing, db.pdb, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	// NB: on Redis, the ids' doc numbers and then their records in one
	// pipeline each, not two round trips per id.
	var nums []uint64
	if db.rkv != nil {
		if nums, err = db.rkv.DocNums(ctx, ids); err != nil {
			if cerr := ctxErr(ctx); cerr != nil {
				return nil, cerr
			}
			return nil, redisErr(err)
		}
		if err := v.prefetchRecords(slices.DeleteFunc(slices.Clone(nums), func(n uint64) bool { return n == 0 })); err != nil {
			return nil, err
		}
	}
	for i, id := range ids {
		if i%1024 == 1023 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		var n uint64
		ok := true
		if nums != nil {
			n, ok = nums[i], nums[i] != 0
		} else if n, ok, err = v.docNum(id); err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !expired {
			found[i] = true
			continue
		}
		// NB: the record's head too, for its expiry, and no more: lookup
		// would decode it (re-shingling a text mode record's text).
		n, r, ok, err := idRecord(v, id, n)
		if err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		view, err := codec.ParseDocView(r)
		if err != nil {
			return nil, classify(fmt.Errorf("doc %d: %w", n, err))
		}
		found[i] = !compaction.Expired(view.Expires, now)
	}
	return found, nil
}

// Count returns the number of stored documents. It counts the expired
// ones the expiry sweep has not removed yet, which no read returns
// (Info.Expired says how many).
func (db *DB) Count() (uint64, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	if db.rkv != nil {
		n, err := db.rkv.Count(db.closing)
		if err != nil {
			return 0, db.countersErr(err)
		}
		return n, nil
	}
	return db.stored(), nil
}

// All iterates over the stored documents in insertion order (doc number),
// as of one snapshot taken when the iteration starts. Stop early by
// breaking out of the loop; an error ends the iteration.
//
//	for doc, err := range db.All() { ... }
//
// The iteration does not hold the database while the loop body runs: the
// body may call any method, Close included; after Close the iteration ends
// with ErrClosed.
//
// Each document comes with its shingle set and signature, re-derived from
// the text in the default text mode (about the cost of hashing every text
// again); [DB.Scan] without ScanOptions.Sets reads the texts alone.
func (db *DB) All() iter.Seq2[*StoredDoc, error] {
	return db.Scan(context.Background(), &ScanOptions{Sets: true})
}

// ScanOptions say what DB.Scan reads of each document.
type ScanOptions struct {
	// Sets fills StoredDoc.Shingles and Signature, as All does (in text
	// mode, by hashing each text again). Default: false: ID, Num,
	// HasText, Text and Meta only.
	Sets bool
	// Salvage reads past damage, for getting what can be read out of a
	// damaged index that has no backup (lshdb export --salvage): where a
	// block of the records cannot be read (its checksum fails) or a
	// record does not decode, the iteration yields a *ScanDamageError
	// naming the doc numbers it passes over, and their ids where the id
	// map tells them, and goes on with the next readable record if the
	// loop goes on. Default: false: the first error ends the iteration.
	// Not for an index on Redis, which has no blocks (its Scan ignores
	// it).
	Salvage bool
}

// A ScanDamageError is what Scan with ScanOptions.Salvage yields where it
// passes over damage: the doc numbers First to Last (inclusive; some may
// name no document, as deleted ones leave gaps) could not be read. It
// matches ErrCorrupt with errors.Is.
type ScanDamageError struct {
	First, Last uint64
	// IDs are the ids the id map gives to those doc numbers; IDsErr is
	// why they are not all known (the id map damaged too), else nil.
	IDs    []string
	IDsErr error
	// Err is the damage met (an ErrCorrupt).
	Err error
}

func (e *ScanDamageError) Error() string {
	what := fmt.Sprintf("doc %d", e.First)
	if e.Last != e.First {
		what = fmt.Sprintf("docs %d to %d", e.First, e.Last)
	}
	ids := fmt.Sprintf("%d ids", len(e.IDs))
	if len(e.IDs) == 1 {
		ids = "1 id"
	}
	if e.IDsErr != nil {
		ids += fmt.Sprintf(" known (the id map could not be read whole: %v)", firstLine{e.IDsErr})
	}
	return fmt.Sprintf("%s passed over, unreadable (%s): %v", what, ids, firstLine{e.Err})
}

func (e *ScanDamageError) Unwrap() error { return e.Err }

// idsOfDocs returns the ids that the id map of snap gives to doc numbers
// first to last, and the error that stopped its reading, if any.
func idsOfDocs(snap *pebble.Snapshot, first, last uint64) ([]string, error) {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.IDPrefix, UpperBound: codec.IDPrefixEnd})
	if err != nil {
		return nil, classify(err)
	}
	defer it.Close()
	var ids []string
	for ok := it.First(); ok; ok = it.Next() {
		n, err := codec.DecodeDocNum(it.Value())
		if err != nil || n < first || n > last {
			continue
		}
		if id, err := codec.ParseIDKey(it.Key()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, classify(it.Error())
}

// scanRecord decodes the doc record (key k, value v) into rec as Scan
// yields it: completed (sets derived) with sets, else without a
// signature. It returns the record's doc number.
func (db *DB) scanRecord(k, v []byte, sets bool, rec *docData) (uint64, error) {
	n, err := codec.ParseDocKey(k)
	switch {
	case err != nil:
		return n, classify(fmt.Errorf("doc record %x: %w", k, err))
	case sets:
		return n, db.decodeDoc(n, v, rec)
	}
	if err := codec.DecodeDocRecord(v, &rec.DocRecord); err != nil {
		return n, classify(fmt.Errorf("doc %d: %w", n, err))
	}
	rec.Signature = nil
	return n, nil
}

// salvageWindow is how many doc numbers a salvage reads with one
// iterator, and salvageBudget how many reads of a window may fail before
// the salvage stops splitting what fails in it (each failed read of a
// damaged block costs Pebble's search for a flipped bit, about 0.1 s of
// a 32 KiB block). A damaged block of 25 records costs about 60 failed
// reads; a damaged block whose keys run past the records (into the id
// map) fails every read of the doc numbers above it, 6,000 in a review,
// which split one by one took over 5 minutes.
const (
	salvageWindow = 4096
	salvageBudget = 160
	salvageRun    = 64
)

// salvageFrom is Scan's salvage (ScanOptions.Salvage) of the doc
// numbers from lo on, below end, once a read failed on damage: it reads
// windows of doc numbers, each with an iterator bounded to it, so that a
// damaged block is read only by the windows that hold its keys (an
// unbounded seek also reads the first block of each level's next table:
// a damaged one there failed every seek below it, and a failed seek left
// the iterator failing the next: a maintainer's review). A window that
// fails is split in halves, down to single doc numbers, which are passed
// over: consecutive ones make one *ScanDamageError. Once salvageBudget
// reads of a window have failed, what fails in it is passed over whole.
func (db *DB) salvageFrom(ctx context.Context, snap *pebble.Snapshot, lo, end uint64, sets bool, yield func(*StoredDoc, error) bool) {
	var dmg *ScanDamageError // the range being passed over, not yet said
	failures := 0
	// say yields the range being passed over, if any.
	say := func() bool {
		if dmg == nil {
			return true
		}
		d := dmg
		dmg = nil
		d.IDs, d.IDsErr = idsOfDocs(snap, d.First, d.Last)
		return yield(nil, d)
	}
	// lose passes over doc numbers from to to (inclusive).
	lose := func(from, to uint64, err error) bool {
		if dmg != nil && dmg.Last+1 == from {
			dmg.Last = to
			return true
		}
		if !say() {
			return false
		}
		dmg = &ScanDamageError{First: from, Last: to, Err: err}
		return true
	}
	// getEach yields what can be read of doc numbers [from, to), each by
	// a point read. NB: where an iterator fails, a point read may not: a
	// damaged block whose keys run past the records fails every
	// iteration of the doc numbers above it, which other tables hold,
	// where a point read skips that table by its bloom filter (a
	// review's index: 6,000 such documents). After salvageRun point reads
	// in a row fail, the rest is passed over whole.
	getEach := func(from, to uint64, failed error) bool {
		run := 0
		var kbuf []byte
		for n := from; n < to; n++ {
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("lshdb: scan interrupted: %w", err))
				return false
			}
			if run >= salvageRun {
				return lose(n, to-1, failed)
			}
			if err := db.enter(); err != nil {
				yield(nil, err)
				return false
			}
			kbuf = codec.AppendDocKey(kbuf[:0], n)
			v, closer, err := snap.Get(kbuf)
			if errors.Is(err, pebble.ErrNotFound) {
				db.mu.RUnlock()
				run = 0
				continue // NB: no such document (deleted)
			}
			var rec docData
			if err != nil {
				err = classify(err)
			} else {
				_, err = db.scanRecord(kbuf, v, sets, &rec)
			}
			db.mu.RUnlock()
			if err != nil {
				if closer != nil {
					closer.Close()
				}
				if !errors.Is(err, ErrCorrupt) {
					yield(nil, err)
					return false
				}
				run++
				failed = err
				if !lose(n, n, err) {
					return false
				}
				continue
			}
			run = 0
			ok := say()
			if ok && !compaction.Expired(rec.Expires, db.now().UnixNano()) {
				ok = yield(toDocument(n, &rec), nil)
			}
			closer.Close()
			if !ok {
				return false
			}
		}
		return true
	}
	// read yields what can be read of doc numbers [from, to); false
	// ends the scan (the loop stopped, or an error said).
	var read func(from, to uint64) bool
	read = func(from, to uint64) bool {
		if err := ctx.Err(); err != nil {
			yield(nil, fmt.Errorf("lshdb: scan interrupted: %w", err))
			return false
		}
		if err := db.enter(); err != nil {
			yield(nil, err)
			return false
		}
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.AppendDocKey(nil, from), UpperBound: codec.AppendDocKey(nil, to)})
		db.mu.RUnlock()
		if err != nil {
			yield(nil, classify(err))
			return false
		}
		next := from     // the first doc number neither read nor passed over
		var failed error // why the window stopped short
		for ok := it.First(); ok; ok = it.Next() {
			if err := db.enter(); err != nil {
				it.Close()
				yield(nil, err)
				return false
			}
			var rec docData
			n, err := db.scanRecord(it.Key(), it.Value(), sets, &rec)
			db.mu.RUnlock()
			if err != nil && n >= next && errors.Is(err, ErrCorrupt) {
				// NB: one record that does not decode: passed over alone,
				// and the window read on.
				if !lose(n, n, err) {
					it.Close()
					return false
				}
				next = n + 1
				continue
			}
			if err != nil {
				// NB: a key that is no doc key: the window is split as if
				// a block failed.
				failed = err
				break
			}
			next = n + 1
			if !say() {
				it.Close()
				return false
			}
			if compaction.Expired(rec.Expires, db.now().UnixNano()) {
				continue
			}
			if !yield(toDocument(n, &rec), nil) {
				it.Close()
				return false
			}
		}
		if failed == nil {
			failed = classify(it.Error())
		}
		it.Close()
		switch {
		case failed == nil || next >= to:
			return true
		case !errors.Is(failed, ErrCorrupt):
			yield(nil, failed)
			return false
		}
		failures++
		if to-next == 1 || failures > salvageBudget {
			return getEach(next, to, failed)
		}
		mid := next + (to-next)/2
		return read(next, mid) && read(mid, to)
	}
	for from := lo; from < end; from += salvageWindow {
		failures = 0
		if !read(from, min(from+salvageWindow, end)) {
			return
		}
	}
	say()
}

// Scan iterates over the stored documents in insertion order from one
// snapshot, as All does; without ScanOptions.Sets it reads only their ids,
// texts and metadata, the cheap way to read every text (lshdb export).
// Cancelling ctx ends the iteration with an error wrapping ctx.Err().
func (db *DB) Scan(ctx context.Context, so *ScanOptions) iter.Seq2[*StoredDoc, error] {
	ctx = orBackground(ctx)
	sets := so != nil && so.Sets
	if db.rkv != nil {
		return db.redisScan(ctx, sets)
	}
	return func(yield func(*StoredDoc, error) bool) {
		if err := db.enter(); err != nil {
			yield(nil, err)
			return
		}
		snap := db.pdb.NewSnapshot()
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.DocPrefixEnd})
		if err != nil {
			snap.Close()
			db.mu.RUnlock()
			yield(nil, classify(err))
			return
		}
		held := db.track(func() { it.Close(); snap.Close() })
		salvage := so != nil && so.Salvage
		end := db.published.Load().NextDoc // NB: every doc number is below it
		db.mu.RUnlock()
		defer db.untrack(held)
		var done uint64 // the last doc number read (salvage)
		for first := true; ; first = false {
			// NB: the handle is held for each step only; Close releases
			// the iterator while the loop body runs, and enter says so.
			if err := db.enter(); err != nil {
				yield(nil, err)
				return
			}
			var ok bool
			if first {
				ok = it.First()
			} else {
				ok = it.Next()
			}
			if !ok {
				err := classify(it.Error())
				db.mu.RUnlock()
				if err != nil && salvage && errors.Is(err, ErrCorrupt) {
					// NB: the rest is read in windows of its own (salvage).
					db.salvageFrom(ctx, snap, max(done+1, 1), end, sets, yield)
					return
				}
				if err != nil {
					yield(nil, err)
				}
				return
			}
			var rec docData
			n, err := db.scanRecord(it.Key(), it.Value(), sets, &rec)
			if err == nil && ctx.Err() != nil {
				err = fmt.Errorf("lshdb: scan interrupted: %w", ctx.Err())
			}
			db.mu.RUnlock()
			if err != nil && salvage && errors.Is(err, ErrCorrupt) {
				db.salvageFrom(ctx, snap, max(done+1, 1), end, sets, yield)
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			done = n
			if compaction.Expired(rec.Expires, db.now().UnixNano()) {
				continue // expired, not yet swept
			}
			if !yield(toDocument(n, &rec), nil) {
				return
			}
		}
	}
}

// metaOf is a record's metadata as the caller's own copy, nil for none:
// an empty Meta is none (Doc.Meta), also in a record written before that
// was said, which holds it as present and empty.
func metaOf(m []byte) []byte {
	if len(m) == 0 {
		return nil
	}
	return bytes.Clone(m)
}
