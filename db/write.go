package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/internal/arena"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/minhash"
)

// Doc is a document to store: its id, its content as exactly one of
// Text, Set or Signature, and optional metadata.
type Doc struct {
	// ID is the external id: non-empty UTF-8, at most MaxIDBytes bytes.
	ID string
	// Text is the document's text, shingled as the index says. It is read
	// as UTF-8, each byte that is not as U+FFFD (as minhash.Normalize
	// says), and stored as given: texts in another encoding (Latin-1)
	// that differ only in such bytes look identical, so convert them
	// first, or open the handle with Options.StrictUTF8, which refuses
	// them (ErrInvalidDoc). The command's JSON Lines, CSV and TSV
	// readers refuse such a text.
	Text string
	// Set is the document as the caller's tokens or token hashes (Tokens,
	// Hashes) instead of text: see PutSet. Zero: none.
	Set Set
	// Signature is the document as a precomputed signature instead of
	// text: see PutSignature. Nil: none.
	Signature []uint32
	// Meta is opaque metadata stored with the document; nil or empty for
	// none (read back as nil: an empty Meta is stored as none).
	Meta []byte
}

// prepared is a document ready to write: its record and band keys, and
// the shingle set (sorted only where sortedSets says so) and signature
// they were made from.
type prepared struct {
	id      string
	record  []byte
	keys    []uint64
	set     []uint64
	sig     []uint32
	expires int64 // Unix nanoseconds; 0: never (the record holds it too)
}

// now is the time that expiry is measured against.
func (db *DB) now() time.Time { return db.opts.clock() }

// setExpiry sets p's expiry x (0: none), in its record too.
func (p *prepared) setExpiry(x int64) error {
	if x == 0 {
		return nil
	}
	r, err := codec.SetExpiry(nil, p.record, x)
	if err != nil {
		return err
	}
	p.record, p.expires = r, x
	return nil
}

// CheckID reports whether id is one a document may have: an
// ErrInvalidID naming what is wrong (empty, over MaxIDBytes, not UTF-8),
// or nil. A caller holding ids from elsewhere tells with it the ones no
// index holds (lshdb filter's sample).
func CheckID(id string) error { return checkID(id) }

// checkID validates an external id.
func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrInvalidID, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidID, showID(id))
	}
	return nil
}

// Validate runs the checks that Put, PutBatch and Load make on a
// document before hashing it: an empty, over-long (MaxIDBytes) or non-UTF-8
// id is ErrInvalidID, more than one of Text, Set and Signature is
// ErrInvalidDoc, a content and metadata over Options.MaxDocBytes is
// ErrDocTooLarge; a set or a signature the index's storage mode does not
// take is ErrStorageMode, a signature of the wrong length
// ErrInvalidSignature (of an empty set's values only, ErrEmptyDocument),
// a set hash outside the scheme's range ErrInvalidDoc. A reader of many
// documents calls it on each as it reads them, so that its error can
// name where the document came from. It does not hash the text: a
// document with no shingles (ErrEmptyDocument) passes.
func (db *DB) Validate(d Doc) error { return db.validate(&d) }

func (db *DB) validate(d *Doc) error {
	if err := checkID(d.ID); err != nil {
		return err
	}
	if given := btoi(d.Text != "") + btoi(!d.Set.IsZero()) + btoi(d.Signature != nil); given > 1 {
		return fmt.Errorf("%w: %s gives %d of Text, Set and Signature (one at most)", ErrInvalidDoc, showID(d.ID), given)
	}
	if n := len(d.Text) + len(d.Meta) + d.Set.bytes() + 4*len(d.Signature); n > db.opts.MaxDocBytes {
		return fmt.Errorf("%w: %s has %d bytes (at most %d)", ErrDocTooLarge, showID(d.ID), n, db.opts.MaxDocBytes)
	}
	if err := db.checkUTF8(d.Text); err != nil {
		return fmt.Errorf("%w: %s: its text %s", ErrInvalidDoc, showID(d.ID), err)
	}
	// NB: and what the index's storage mode and scheme refuse, which
	// Validate passed and every write refused (an embedder's review,
	// EMB-4): a reader that validated each document had its load fail
	// part way.
	return db.validateGiven(d)
}

// checkUTF8 refuses, with Options.StrictUTF8, a text that is not valid
// UTF-8, in words that follow "its text" or "the query text".
func (db *DB) checkUTF8(text string) error {
	if !db.opts.StrictUTF8 || utf8.ValidString(text) {
		return nil
	}
	at := 0
	for at < len(text) {
		r, n := utf8.DecodeRuneInString(text[at:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		at += n
	}
	// NB: not a wrapped sentinel: the caller says which.
	return fmt.Errorf("is not UTF-8: byte 0x%02x at offset %d of %d (Options.StrictUTF8; convert it first, from Latin-1 or whatever its encoding is)", text[at], at, len(text))
}

// validateGiven checks a document given as a set or a signature against
// the index: its storage mode (ErrStorageMode), a signature's length and
// values (ErrInvalidSignature, ErrEmptyDocument), a set's hashes against
// the scheme's range (ErrInvalidDoc).
func (db *DB) validateGiven(d *Doc) error {
	switch {
	case d.Signature != nil:
		if db.man.Storage != StorageNone {
			kind, call := "text", "Put"
			if db.man.Storage == StorageSets {
				kind, call = "set", "PutSet"
			}
			return fmt.Errorf("%w: %s: a %s index verifies every answer and needs each document's %s; put it (%s), or keep signatures in an index created with Storage none", ErrStorageMode, showID(d.ID), db.man.Storage, kind, call)
		}
		if err := db.checkSignature(d.Signature); err != nil {
			return &idError{d.ID, err}
		}
	case !d.Set.IsZero():
		if db.man.Storage == StorageText {
			return fmt.Errorf("%w: %s: a text index verifies from stored texts and keeps no sets; create the index with Storage sets (exact Jaccard of the sets) or none", ErrStorageMode, showID(d.ID))
		}
		if db.skOpt.Scheme == minhash.SchemeDatasketch {
			for _, h := range d.Set.hashes {
				if h > math.MaxUint32 {
					return &idError{d.ID, fmt.Errorf("%w: hash %#x is outside the %s scheme's range (32-bit values)", ErrInvalidDoc, h, db.skOpt.Scheme)}
				}
			}
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MaxDocBytes returns the largest text plus metadata a document may have
// (Options.MaxDocBytes, resolved).
func (db *DB) MaxDocBytes() int { return db.opts.MaxDocBytes }

// Instance returns the index's instance name (see Info.Instance): empty
// for an index made before lshdb gave one.
func (db *DB) Instance() string { return db.man.Instance }

// prepare computes a document's shingle set, signature, record and band
// keys. It does no I/O.
func (db *DB) prepare(d *Doc, storeText bool) (prepared, error) {
	return db.prepareIn(d, storeText, nil)
}

// scratch holds one bulk-load worker's buffers: the shingle set and
// signature between documents, and arenas for the records and band keys
// of a batch (reset when the batch has been written).
type scratch struct {
	set     []uint64
	sig     []uint32
	set32   []uint32
	records arena.Arena[byte]
	keys    arena.Arena[uint64]
}

func newScratch() *scratch {
	return &scratch{records: arena.Arena[byte]{Chunk: 1 << 20}, keys: arena.Arena[uint64]{Chunk: 1 << 14}}
}

// prepareIn is prepare; with sc, the set and signature are computed in
// sc's buffers and left out of the result (a bulk load needs only the
// record and the keys, and allocating ~10 KB of set per document cost it
// more than the encoding), and the record and keys are carved from sc's
// arenas: valid until they are reset.
func (db *DB) prepareIn(d *Doc, storeText bool, sc *scratch) (prepared, error) {
	if err := db.validate(d); err != nil {
		return prepared{}, err
	}
	h := db.hashers.Get().(*minhash.Hasher)
	defer db.hashers.Put(h)
	if !d.Set.IsZero() || d.Signature != nil {
		return db.prepareGiven(d, h.Sketcher())
	}
	var set []uint64
	var sig []uint32
	// NB: where the record needs no sorted set, de-duplicating it in a
	// hash table instead of sorting it cut a bulk build's CPU time by
	// about a fifth (the sort was a quarter of it at 200,000 generated
	// documents).
	document := h.Document
	if !db.sortedSets() {
		document = h.DocumentUnsorted
	}
	if sc != nil {
		set, sig = document(sc.set[:0], sc.sig[:0], d.Text)
		sc.set, sc.sig = set, sig
	} else {
		// NB: a text of n bytes has at most n character shingles: sizing
		// the set for that (up to 64 Ki elements) saves the copies of
		// growing it.
		set, sig = document(make([]uint64, 0, min(len(d.Text)+1, 1<<16)), nil, d.Text)
	}
	if len(set) == 0 {
		return prepared{}, fmt.Errorf("%w: %s", ErrEmptyDocument, showID(d.ID))
	}
	var rec codec.DocRecord
	if sc != nil {
		rec, sc.set32 = db.newRecord(d.ID, set, sig, d.Text, storeText, d.Meta, sc.set32)
	} else {
		rec, _ = db.newRecord(d.ID, set, sig, d.Text, storeText, d.Meta, nil)
	}
	if sc != nil {
		keys, err := db.bucketKeys(sc.keys.Alloc(db.bands.B), sig)
		if err != nil {
			return prepared{}, err
		}
		return prepared{id: d.ID, record: codec.AppendDocRecord(sc.records.Alloc(codec.MaxDocRecordSize(&rec)), &rec), keys: keys}, nil
	}
	keys, err := db.bucketKeys(make([]uint64, 0, db.bands.B), sig)
	if err != nil {
		return prepared{}, err
	}
	return prepared{id: d.ID, record: codec.AppendDocRecord(nil, &rec), keys: keys, set: set, sig: sig}, nil
}

// prepareEach prepares docs in parallel (sequentially when there are few),
// with one error slot per document. With scratches (a bulk load), each
// worker takes one from it, and the results hold no set or signature and
// alias the scratches returned (see prepareIn), which the caller puts
// back in the pool once it is done with the results.
func (db *DB) prepareEach(docs []Doc, storeText bool, scratches *sync.Pool) ([]prepared, []error, []*scratch) {
	out := make([]prepared, len(docs))
	errs := make([]error, len(docs))
	workers := max(1, min(runtime.GOMAXPROCS(0), (len(docs)+63)/64))
	var used []*scratch
	if scratches != nil {
		used = make([]*scratch, workers)
		for w := range used {
			used[w] = scratches.Get().(*scratch)
			used[w].records.Reset()
			used[w].keys.Reset()
		}
	}
	// NB: the workers take prepareStep documents at a time, where each
	// took every workers-th document: a worker done with its share
	// waited for the other at each chunk of a load, and the two wrote
	// to the same cache lines of out. A build of 300,000 generated
	// documents used 85-90% of 2 cores while it read; alternated, the
	// builds took 0.89x the time (8.2-9.0 s against 8.9-10.0 s), and
	// 3.02x and 3.43x the hashing floor in two benches against 3.98x
	// and 3.49x.
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc *scratch
			if used != nil {
				sc = used[w]
			}
			for {
				first := int(next.Add(prepareStep)) - prepareStep
				if first >= len(docs) {
					break
				}
				for i := first; i < min(first+prepareStep, len(docs)); i++ {
					out[i], errs[i] = db.prepareIn(&docs[i], storeText, sc)
				}
			}
		}()
	}
	wg.Wait()
	return out, errs, used
}

// prepareStep is how many documents a worker of prepareEach takes at a
// time.
const prepareStep = 16

// prepareAll prepares docs in parallel. With skipEmpty, documents with no
// shingles are left out and their ids returned; any other error (and, without
// skipEmpty, an empty document) fails the call, naming the document's
// position: pos[i] for docs[i] when pos is given (the caller's positions,
// of which docs is a part), else i, and none when n, the number of
// documents the caller gave, is 1.
func (db *DB) prepareAll(docs []Doc, pos []int, n int, storeText, skipEmpty bool) ([]prepared, []string, error) {
	preps, errs, _ := db.prepareEach(docs, storeText, nil)
	keep := preps[:0]
	var skipped []string
	for i, err := range errs {
		switch {
		case err == nil:
			keep = append(keep, preps[i])
		case skipEmpty && errors.Is(err, ErrEmptyDocument):
			skipped = append(skipped, docs[i].ID)
		case n > 1:
			id := docs[i].ID
			if pos != nil {
				i = pos[i]
			}
			return nil, nil, &DocError{Index: i, ID: id, Err: err}
		default:
			return nil, nil, err
		}
	}
	return keep, skipped, nil
}

// prepareLastNonEmpty prepares docs, in which ids repeat, for PutBatch
// with SkipEmpty: the document of each id that wins is its last one that
// is not empty; every empty one is skipped (listed, in the order of docs),
// as Load lists them; the others before the winner are repeated (counted).
// Any other error, of a winner or of an earlier copy, fails the call and
// names its position.
func (db *DB) prepareLastNonEmpty(docs []Doc, storeText bool) (_ []prepared, skipped []string, repeated int, _ error) {
	preps, errs, _ := db.prepareEach(docs, storeText, nil)
	for i, err := range errs {
		// NB: the first failing document by position, as Load and
		// PutBatch without SkipEmpty name it (the walk below is from the
		// end).
		if err != nil && !errors.Is(err, ErrEmptyDocument) {
			return nil, nil, 0, &DocError{Index: i, ID: docs[i].ID, Err: err}
		}
	}
	won := make(map[string]bool, len(docs))
	var keep []prepared
	for i := len(docs) - 1; i >= 0; i-- {
		id, err := docs[i].ID, errs[i]
		switch {
		case errors.Is(err, ErrEmptyDocument):
			skipped = append(skipped, id)
		case won[id]:
			repeated++
		default:
			won[id] = true
			keep = append(keep, preps[i])
		}
	}
	slices.Reverse(keep)
	slices.Reverse(skipped)
	return keep, skipped, repeated, nil
}

// Put stores the document d under d.ID, replacing any document with that
// id (an upsert): the old version's postings are removed and the new ones
// added in one atomic batch. The write is synced unless the database was
// opened with NoSync or wo.NoSync. An invalid id (ErrInvalidID), a text
// with no shingles (ErrEmptyDocument), one too large (ErrDocTooLarge)
// or a content the index cannot keep (ErrStorageMode) stores nothing.
// WriteOptions.SkipEmpty is for batches: an empty document given to Put
// is ErrEmptyDocument with it too (a skip would leave a stored version
// in place with nothing to say so), as PutIfNew's is.
func (db *DB) Put(d Doc, wo *WriteOptions) error {
	return db.putOne(context.Background(), d, wo)
}

// PutContext is Put that gives up as PutBatchContext does: when ctx ends
// before it takes the writer lock, or while it waits for it (behind a
// Load), or while it hashes a long text; it then returns ctx's error and
// stores nothing. A request handler calls it with the request's context,
// so that a Put is bounded by the request's.
func (db *DB) PutContext(ctx context.Context, d Doc, wo *WriteOptions) error {
	return db.putOne(ctx, d, wo)
}

// putOne is Put, PutContext, PutSet and PutSignature: PutBatchContext of
// one document, without SkipEmpty.
func (db *DB) putOne(ctx context.Context, d Doc, wo *WriteOptions) error {
	if wo != nil && wo.SkipEmpty {
		w := *wo
		w.SkipEmpty = false
		wo = &w
	}
	_, err := db.PutBatchContext(ctx, []Doc{d}, wo)
	return err
}

// BatchResult reports what PutBatch did.
type BatchResult struct {
	Stored   int // documents written (new or replacing)
	Replaced int // of which replaced a stored document with the same id
	// Repeated counts documents dropped because a later one in the same
	// call had the same id (the last one wins).
	Repeated int
	// SkippedEmpty lists the ids of documents with no shingles that
	// WriteOptions.SkipEmpty skipped.
	SkippedEmpty []string
}

// PutBatch stores documents atomically: all of them or, on any error,
// none (on Pebble: on Redis the batch is written in steps, each
// document seen whole or not at all, and a failed batch may leave some
// stored; see the README's Redis section). A document whose id is already stored replaces it; when an id
// repeats within docs, the result is Put of each in order: the last one
// stored wins (Repeated counts the others, which take no doc number: the
// documents keep their order, but their numbers are not those of Puts
// one by one, or of a Load, where each repeat took one), and one skipped as empty
// (WriteOptions.SkipEmpty) leaves the one before it. Every document is
// checked, an earlier copy of an id too, before
// anything is written: an invalid id (ErrInvalidID), a text with no
// shingles (ErrEmptyDocument) or one too large (ErrDocTooLarge) fails the
// whole call and names the document; with WriteOptions.SkipEmpty,
// documents with no shingles are skipped (and listed in the result)
// instead. Every document is held in memory and prepared before the one
// batch is written: pass thousands at a time, not millions (Load is the
// bulk path).
func (db *DB) PutBatch(docs []Doc, wo *WriteOptions) (BatchResult, error) {
	return db.PutBatchContext(context.Background(), docs, wo)
}

// enterWrite enters the handle for a write of documents, refusing a
// read-only one, and resolves wo (nil: the defaults) and the expiry it
// gives as of now. On success the caller holds db.mu for reading and MUST
// release it (db.mu.RUnlock).
func (db *DB) enterWrite(wo *WriteOptions) (*WriteOptions, int64, error) {
	if err := db.enter(); err != nil {
		return nil, 0, err
	}
	if db.opts.ReadOnly {
		db.mu.RUnlock()
		return nil, 0, ErrReadOnly
	}
	if wo == nil {
		wo = &WriteOptions{}
	}
	expires, err := wo.expires(db.now())
	if err != nil {
		db.mu.RUnlock()
		return nil, 0, err
	}
	return wo, expires, nil
}

// PutBatchContext is PutBatch that gives up when ctx ends before the
// batch is written: before it takes the writer lock, or while it waits for
// it (behind a Load, which holds it for its whole run).
// It then returns ctx's error and stores nothing; documents whose texts
// add up to 1 MiB or more are hashed where ctx can end it too. Once it
// holds the lock the batch is written whatever ctx says, as PutBatch's
// is. A server calls
// it with a request's context, so that a client that went away (an
// interrupted command) does not have its batch applied after it left.
func (db *DB) PutBatchContext(ctx context.Context, docs []Doc, wo *WriteOptions) (BatchResult, error) {
	wo, expires, err := db.enterWrite(wo)
	if err != nil {
		return BatchResult{}, err
	}
	defer db.mu.RUnlock()
	w := *wo // NB: the caller's may change once a cancelled call returned
	pb, err := prepareCancellable(db, ctx, docs, func(docs []Doc) (*PreparedBatch, error) {
		return db.prepareBatch(docs, &w)
	})
	if err != nil {
		return BatchResult{}, err
	}
	return db.putPrepared(ctx, pb, expires)
}

// A PreparedBatch is documents made ready to write by PrepareBatch: each
// one's shingles, signature and record, the work of PutBatch that needs
// no lock. PutPrepared writes it, once.
type PreparedBatch struct {
	db      *DB
	wo      WriteOptions
	preps   []prepared
	res     BatchResult // Repeated and SkippedEmpty
	written atomic.Bool
	// again is, on Redis, the write of a try that failed, which the next
	// try sends again as itself (rediskv.Attempt); againExpires is the
	// expiry that try gave the documents, which its records hold.
	again        *rediskv.Attempt
	againExpires int64
}

// Len is the number of documents the batch writes (an id repeated in the
// documents given once, the empty ones skipped).
func (pb *PreparedBatch) Len() int { return len(pb.preps) }

// PrepareBatch does the part of PutBatch that needs no lock, on every
// core: it checks every document as PutBatch does (the same errors, and
// with wo.SkipEmpty the same skipped documents) and computes each one's
// shingles, signature and record. PutPrepared then writes the batch. A
// writer that prepares its next batch while PutPrepared writes the one
// before (one goroutine each, the writes in order) keeps every core busy:
// lshdb insert does, and BenchmarkPut's pipelined runs measure it. The
// documents and wo are not kept: wo's expiry counts from the write. A
// Close while it hashes texts of 1 MiB or more ends it with ErrClosed (as
// it does Put, PutBatch and PutIfNew), without waiting for the hashing.
func (db *DB) PrepareBatch(docs []Doc, wo *WriteOptions) (*PreparedBatch, error) {
	wo, _, err := db.enterWrite(wo)
	if err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	w := *wo
	return prepareCancellable(db, context.Background(), docs, func(docs []Doc) (*PreparedBatch, error) {
		return db.prepareBatch(docs, &w)
	})
}

// PutPrepared writes a batch PrepareBatch made on this handle, as
// PutBatchContext writes its documents: atomically, each replacing the
// stored document of its id, giving up when ctx ends before it holds the
// writer lock; the documents' expiry (WriteOptions.TTL) counts from now.
// The result is PutBatch's. A batch is written once: again, at the same
// time from two goroutines, or on another handle is ErrInvalidOptions;
// after a write that failed it may be tried again. On Pebble, if the
// failure came after the batch was written (a sync that failed), the
// second write replaces its documents with themselves. On Redis, where a
// failure may leave a write part done (a master failing over), the
// second is the first write sent again (within 5 minutes of it, after a
// Transient failure): it finishes that write, under the same document
// numbers, counts what it replaced once, and leaves nothing for Check to
// find, unless another writer wrote one of its ids between the tries.
func (db *DB) PutPrepared(ctx context.Context, pb *PreparedBatch) (BatchResult, error) {
	switch {
	case pb == nil:
		return BatchResult{}, invalid("PutPrepared of a nil batch (PrepareBatch makes one)")
	case pb.db != db:
		return BatchResult{}, invalid("a prepared batch is written by the handle that prepared it")
	}
	_, expires, err := db.enterWrite(&pb.wo)
	if err != nil {
		return BatchResult{}, err
	}
	defer db.mu.RUnlock()
	if !pb.written.CompareAndSwap(false, true) {
		return BatchResult{}, invalid("the prepared batch is written already (or being written)")
	}
	res, err := db.putPrepared(ctx, pb, expires)
	if err != nil {
		pb.written.Store(false)
	}
	return res, err
}

// prepareBatch is PrepareBatch; the caller holds db.mu for reading.
func (db *DB) prepareBatch(docs []Doc, wo *WriteOptions) (*PreparedBatch, error) {
	pb := &PreparedBatch{db: db, wo: *wo}
	res := &pb.res
	// Last one wins within the call: keep each id's last position.
	last := make(map[string]int, len(docs))
	for i := range docs {
		last[docs[i].ID] = i
	}
	n := len(docs)
	storeText := wo.StoreText || db.man.StoreText
	var skipped []string
	var err error
	switch {
	case len(last) < n && wo.SkipEmpty:
		// NB: a skipped document does not win: an id's last document
		// that is not empty does, as a Put of each document in turn and
		// Load give (the documents are prepared before the repeats are
		// settled).
		pb.preps, skipped, res.Repeated, err = db.prepareLastNonEmpty(docs, storeText)
	case len(last) < n:
		// NB: every copy is prepared, not only the last of each id: an
		// earlier copy that is invalid, empty or too large fails the call,
		// as documented and as Load does (it was dropped unchecked).
		res.Repeated = n - len(last)
		var all []prepared
		if all, _, err = db.prepareAll(docs, nil, n, storeText, false); err == nil {
			pb.preps = all[:0]
			for i := range all {
				if last[docs[i].ID] == i {
					pb.preps = append(pb.preps, all[i])
				}
			}
			clear(all[len(pb.preps):]) // NB: the dropped copies' records, sets and signatures
		}
	default:
		// NB: with SkipEmpty, an empty document is found by preparing it,
		// not by hashing it twice.
		pb.preps, skipped, err = db.prepareAll(docs, nil, n, storeText, wo.SkipEmpty)
	}
	if err != nil {
		return nil, err
	}
	res.SkippedEmpty = skipped
	return pb, nil
}

// putPrepared writes pb with the expiry expires (0: none); the caller
// holds db.mu for reading.
func (db *DB) putPrepared(ctx context.Context, pb *PreparedBatch, expires int64) (BatchResult, error) {
	res := BatchResult{Repeated: pb.res.Repeated, SkippedEmpty: pb.res.SkippedEmpty}
	preps := pb.preps
	if pb.again.Resumable() && pb.againExpires != 0 {
		// NB: sent again, the records must be the first try's, expiry
		// included (rediskv.Attempt).
		expires = pb.againExpires
	}
	if expires != 0 {
		// NB: on copies: the batch's own records stay as prepared, for
		// another try.
		preps = slices.Clone(preps)
		for i := range preps {
			if err := preps[i].setExpiry(expires); err != nil {
				return res, err
			}
		}
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(ctx); err != nil {
		return res, err
	}
	replaced, att, sw, err := db.writeLockedAgain(preps, &pb.wo, pb.again)
	db.wmu.Unlock()
	// NB: Replaced is "of which": set with Stored only (a batch whose
	// sync failed reported replacements of none stored: C3's review).
	if err = cmp.Or(err, sw.wait()); err == nil {
		res.Stored, res.Replaced = len(preps), replaced
	}
	if db.rkv != nil {
		// NB: a batch that failed is sent again as the same write by the
		// next PutPrepared of it (lshdb insert's retry through a
		// failover); one written is over.
		pb.again, pb.againExpires = att, expires
		if err == nil || !Transient(err) {
			// NB: a write refused for good (its numbers held by other
			// records: ErrCountersLost, a full memory) is not sent again
			// as itself: it would meet the same numbers after the repair
			// its error asks for (a read-through, RT3-3).
			db.rkv.Finished(att)
			pb.again, pb.againExpires = nil, 0
		}
	}
	return res, err
}

// writeLockedCount writes prepared documents (unique ids) in one batch,
// and returns how many replaced a stored one. The caller holds db.mu for
// reading and wmu, and waits on the syncWaiter after releasing wmu.
func (db *DB) writeLockedCount(preps []prepared, wo *WriteOptions) (replaced int, sw syncWaiter, err error) {
	replaced, att, sw, err := db.writeLockedAgain(preps, wo, nil)
	if db.rkv != nil {
		// NB: not sent again (a caller's retry is a write of its own).
		db.rkv.Finished(att)
	}
	return replaced, sw, err
}

// writeLockedAgain is writeLockedCount; on Redis, with again (the write
// of a try of the same preps that failed), it sends that write again
// (rediskv.Attempt), and it returns its write, for the caller to send
// again or to say is over (rediskv.Store.Finished).
func (db *DB) writeLockedAgain(preps []prepared, wo *WriteOptions, again *rediskv.Attempt) (replaced int, att *rediskv.Attempt, sw syncWaiter, err error) {
	if db.rkv != nil {
		if replaced, att, err = db.redisWrite(preps, again); err == nil {
			err = db.redisSync(wo)
		}
		return replaced, att, sw, err
	}
	replaced, sw, err = db.writePebble(preps, wo)
	return replaced, nil, sw, err
}

// writePebble is writeLockedCount on Pebble.
func (db *DB) writePebble(preps []prepared, wo *WriteOptions) (replaced int, sw syncWaiter, err error) {
	b := db.pdb.NewBatch()
	defer func() {
		if sw.b == nil {
			b.Close()
		}
	}()
	c := db.counters
	postings := make(postingOps, 0, len(preps)*db.man.Bands)
	bump, err := db.expiryManifest(b, preps)
	if err != nil {
		return 0, sw, err
	}
	olds, err := db.lookupOlds(preps)
	if err != nil {
		return 0, sw, err
	}
	now := db.now().UnixNano()
	for i := range preps {
		p := &preps[i]
		idKey := codec.AppendIDKey(nil, p.id)
		if err := dropOld(b, &olds[i], &postings, &c); err != nil {
			return 0, sw, err
		}
		// NB: an expired document not yet swept is removed as any other,
		// but it was not there to be replaced: it is never returned.
		if olds[i].found && !compaction.Expired(olds[i].expires, now) {
			replaced++
		}
		n := c.NextDoc
		c.NextDoc++
		c.Live++
		if err := b.Set(codec.AppendDocKey(nil, n), p.record, nil); err != nil {
			return 0, sw, err
		}
		if err := b.Set(idKey, codec.EncodeDocNum(n), nil); err != nil {
			return 0, sw, err
		}
		if p.expires != 0 {
			if err := b.Set(codec.AppendExpiryKey(nil, p.expires, n), nil, nil); err != nil {
				return 0, sw, err
			}
		}
		for band, k := range p.keys {
			postings = append(postings, postingOp{postingKey{band, k}, codec.Posting{Doc: n}})
		}
	}
	sw, err = db.commit(b, postings, c, wo, false)
	if err == nil && bump {
		db.expiryFormat.Store(true)
	}
	return replaced, sw, err
}

// expiryManifest adds to b the manifest of format 4 when preps are the
// index's first documents with an expiry (see codec.ExpiryFormatVersion),
// and says whether it did. A format 2 index takes no expiry. The caller
// holds wmu.
func (db *DB) expiryManifest(b *pebble.Batch, preps []prepared) (bool, error) {
	if db.expiryFormat.Load() || !slices.ContainsFunc(preps, func(p prepared) bool { return p.expires != 0 }) {
		return false, nil
	}
	if db.man.FormatVersion < codec.SumFingerprintFormatVersion {
		return false, db.expiryFormatError()
	}
	enc, err := db.expiryManifestBytes()
	if err != nil {
		return false, err
	}
	return true, b.Set(codec.ManifestKey, enc, nil)
}

// expiryManifestBytes encodes the index's manifest at format 4 (at
// least: a manifest of a later format, which takes expiry, keeps it).
func (db *DB) expiryManifestBytes() ([]byte, error) {
	m := db.manifestNow()
	m.FormatVersion = max(m.FormatVersion, codec.ExpiryFormatVersion)
	return codec.EncodeManifest(&m)
}

// expiryFormatError refuses documents with an expiry in an index of
// format 2.
func (db *DB) expiryFormatError() error {
	way := fmt.Sprintf("rewrite it in place with lshdb upgrade --db %s (db.Upgrade), after a backup if it is the only copy", db.dir)
	if db.man.Storage != StorageText {
		// NB: Upgrade rewrites the records of a text index only (it
		// re-derives what format 3 stores from each text); a sets or
		// none index of format 2 stays format 2.
		way = fmt.Sprintf("an index in %s mode of that format cannot be upgraded: build a new one from the documents' sources", db.man.Storage)
		if db.man.StoreText {
			// NB: it holds the texts (a compatibility review, C5).
			// NB: with the index's parameters and its metadata: a bare
			// build made an index of the defaults (0.8 and char
			// shingles for one of 0.6 and words), without metadata (an
			// upgrade review's UPG-2).
			way = fmt.Sprintf("an index in %s mode of that format cannot be upgraded: build a new one from its texts, with its parameters and metadata (lshdb export --db %s --all --out FILE, then %s)", db.man.Storage, db.dir, db.rebuildCommand("NEWDIR", "FILE"))
		}
	}
	return formatError(fmt.Sprintf("lshdb: documents with a TTL need an index of format %d or later, and %s is format %d: %s", codec.SumFingerprintFormatVersion, db.dir, db.man.FormatVersion, way))
}

// rebuildCommand is the lshdb build command that makes, in dir, an index
// of this one's parameters of the export (--all) in file: its banding,
// signatures, shingles and storage, and the metadata export writes as
// "meta".
func (db *DB) rebuildCommand(dir, file string) string {
	m := &db.man
	var b strings.Builder
	// NB: the banding as it is (--recall chose it, and is refused beside
	// --bands and --rows).
	fmt.Fprintf(&b, "lshdb build --db %s --threshold %v --bands %d --rows %d --num-perm %d --scheme %s --seed %d --shingle %s --shingle-size %d --normalization %s",
		dir, m.Threshold, m.Bands, m.Rows, m.NumPerm, m.Scheme, m.Seed, m.ShingleKind, m.ShingleSize, m.Normalization)
	if m.Bag {
		b.WriteString(" --bag")
	}
	if len(m.StopWords) > 0 {
		// NB: quoted for a POSIX shell (Go's %q is not: a$b expanded).
		fmt.Fprintf(&b, " --stop-words '%s'", strings.ReplaceAll(strings.Join(m.StopWords, ","), "'", `'\''`))
	}
	fmt.Fprintf(&b, " --storage %s", m.Storage)
	if m.StoreText && m.Storage != StorageText {
		b.WriteString(" --store-text")
	}
	fmt.Fprintf(&b, " --meta-field meta %s", file)
	return b.String()
}

// formatError is an error that matches ErrFormat (errors.Is) in words of
// its own: ErrFormat's say the build does not read the index, where a
// format 2 index is read, and only a TTL needs a newer one.
type formatError string

func (e formatError) Error() string        { return string(e) }
func (e formatError) Is(target error) bool { return target == ErrFormat }

// setExpiryFormat makes the index format 4 now (a synced write of the
// manifest, unless NoSync), if it is not yet. The caller holds wmu.
func (db *DB) setExpiryFormat() error {
	if db.expiryFormat.Load() {
		return nil
	}
	enc, err := db.expiryManifestBytes()
	if err != nil {
		return err
	}
	if db.rkv != nil {
		err = db.redisReadErr(db.rkv.SetManifest(db.closing, enc)) // NB: one SET: a Close before it is ErrClosed, nothing written
	} else {
		sync := pebble.Sync
		if db.opts.NoSync {
			sync = pebble.NoSync
		}
		err = db.pebbleWrite(func() error { return db.pdb.Set(codec.ManifestKey, enc, sync) })
	}
	if err == nil {
		db.expiryFormat.Store(true)
	}
	return err
}

// Delete removes the document id: its record, its id and its postings, in
// one atomic batch. It returns ErrNotFound if no document has that id
// (unless WriteOptions.IgnoreMissing).
func (db *DB) Delete(id string, wo *WriteOptions) error {
	return db.DeleteContext(context.Background(), id, wo)
}

// DeleteContext is Delete that gives up as DeleteIDsContext does: when ctx
// ends before it takes the writer lock, or while it waits for it; it then
// returns ctx's error and deletes nothing.
func (db *DB) DeleteContext(ctx context.Context, id string, wo *WriteOptions) error {
	_, err := db.DeleteIDsContext(ctx, []string{id}, wo)
	return err
}

// DeleteResult reports what DeleteIDs did.
type DeleteResult struct {
	Deleted int      // documents deleted
	Missing []string // with IgnoreMissing: the ids not stored, in order
}

// DeleteIDs removes the documents ids in one atomic batch: all of them
// or, on any error, none (on Pebble: on Redis the ids are checked first,
// then the documents deleted in steps, and a failure part-way, such as a
// server restarting, may leave some ids gone and their records and
// postings behind, which Repair removes; when such an error comes after
// documents were deleted, the result counts them). An id that is not stored fails the call with
// ErrNotFound naming it, unless WriteOptions.IgnoreMissing; an invalid
// id fails it with ErrInvalidID. An id repeated in ids counts once.
func (db *DB) DeleteIDs(ids []string, o *WriteOptions) (DeleteResult, error) {
	return db.DeleteIDsContext(context.Background(), ids, o)
}

// DeleteIDsContext is DeleteIDs that gives up when ctx ends before it
// takes the writer lock, or while it waits for it (behind a Load): it then
// returns ctx's error and deletes nothing. Once it holds the lock the
// batch is written whatever ctx says. A server calls it with a request's
// context, as PutBatchContext.
func (db *DB) DeleteIDsContext(ctx context.Context, ids []string, o *WriteOptions) (DeleteResult, error) {
	var res DeleteResult
	if err := db.enter(); err != nil {
		return res, err
	}
	defer db.mu.RUnlock()
	if db.opts.ReadOnly {
		return res, ErrReadOnly
	}
	if o == nil {
		o = &WriteOptions{}
	}
	for i, id := range ids {
		if err := checkID(id); err != nil && len(ids) > 1 {
			return res, &DocError{Index: i, ID: id, Err: err}
		} else if err != nil {
			return res, err
		}
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	if err := db.wmu.lock(ctx); err != nil {
		return DeleteResult{}, err
	}
	res, sw, err := db.deleteLocked(ids, o)
	db.wmu.Unlock()
	if err = cmp.Or(err, sw.wait()); err != nil {
		if db.rkv != nil {
			// NB: on Redis a delete can fail after it deleted (Redis lost
			// writes, and an id named another id's record, which is left;
			// or no replica acknowledged it): the result says what was
			// deleted beside the error (it was empty).
			return res, err
		}
		return DeleteResult{}, err
	}
	return res, nil
}

// missingErr is the error of a delete of ids that finds no document of
// id: ErrNotFound, in a DocError giving id's position when ids are more
// than one (as an invalid id's), so that a caller (a client over HTTP
// too) tells which one without parsing the message. It names the stored
// id of the same characters in the other Unicode form, as a read's miss
// does (otherForm, read through v): a delete of an id typed on a
// keyboard missed the one stored decomposed with the words alone.
//
// expired says that id's document is there but past its expiry, not yet
// swept: "(expired)", and IsExpired, as Get and QueryID say it (a TTL
// review's TTL-5: Delete said "not found" alone).
func missingErr(v view, ids []string, id string, expired bool) error {
	err := fmt.Errorf("%w: %s%s", ErrNotFound, showID(id), otherForm(v, id))
	if expired {
		err = fmt.Errorf("%w: %s (expired)%w", ErrNotFound, showID(id), unsaid{errExpired})
	}
	if len(ids) > 1 {
		return &DocError{Index: slices.Index(ids, id), ID: id, Err: err}
	}
	return err
}

// deleteLocked is DeleteIDs' batch. The caller holds db.mu for reading
// and wmu, and waits on the syncWaiter after releasing wmu.
func (db *DB) deleteLocked(ids []string, o *WriteOptions) (res DeleteResult, sw syncWaiter, err error) {
	if db.rkv != nil {
		if res, err = db.redisDelete(ids, o); err == nil && res.Deleted > 0 {
			err = db.redisSync(o)
		}
		return res, sw, err
	}
	b := db.pdb.NewBatch()
	defer func() {
		if sw.b == nil {
			b.Close()
		}
	}()
	c := db.counters
	var postings postingOps
	var old docData
	// NB: removeOld reads the committed state, not the batch: a repeated
	// id would be removed twice.
	seen := make(map[string]struct{}, len(ids))
	var idKey []byte
	it, err := db.writeIter()
	if err != nil {
		return DeleteResult{}, sw, err
	}
	defer it.Close()
	now := db.now().UnixNano()
	var od oldDoc
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		idKey = codec.AppendIDKey(idKey[:0], id)
		if err := db.lookupOld(it, idKey, &old, &od); err != nil {
			return DeleteResult{}, sw, err
		}
		// NB: a document past its expiry, not yet swept, is missing to
		// every read (Get, Has, QueryID): so it is to Delete, which
		// leaves it to the sweeper.
		if !od.found || compaction.Expired(od.expires, now) {
			if o.IgnoreMissing {
				res.Missing = append(res.Missing, id)
				continue
			}
			return DeleteResult{}, sw, missingErr(&pebbleView{it: it}, ids, id, od.found)
		}
		if err := dropOld(b, &od, &postings, &c); err != nil {
			return DeleteResult{}, sw, err
		}
		if err := b.Delete(idKey, nil); err != nil {
			return DeleteResult{}, sw, err
		}
		res.Deleted++
	}
	if res.Deleted == 0 {
		return res, sw, nil
	}
	sw, err = db.commit(b, postings, c, o, true)
	return res, sw, err
}

type postingKey struct {
	band   int
	bucket uint64
}

// postingOps are a write's posting operands, one per document and band
// (an addition, or the removal of a replaced or deleted document), which
// commit groups into one merge operand per list.
//
// NB: a slice sorted once, not a map of lists: a batch of 1,000 new
// documents makes 16,000 lists of one posting each, and the map's inserts
// and small allocations cost more than the sort.
type postingOps []postingOp

type postingOp struct {
	key postingKey
	p   codec.Posting
}

// sorted returns ops ordered by list (band, then bucket) and by document
// within a list, the order of the posting keys and of a list's operand;
// ops' bands are below bands. It may reorder ops itself.
//
// NB: a stable radix sort by bucket, a byte at a time, then by band (a
// counting sort), which keeps the order in which the write appended the
// operands within a list; that order is by document but where a
// replaced document's removal follows an earlier document's addition, so
// each list's run is then put in document order (by insertion when
// short, as most are: most lists of a batch hold one operand). A bucket
// is below 2^32 (codec.BucketOf); were one not, the operands are sorted
// by comparison (byComparison). A batch of 1,000 new documents (16,000
// operands) sorted in 0.43-0.49 ms against 2.35-2.51 ms by comparison
// (0.19x; stop 38, BenchmarkPostingOpsSorted), on the single goroutine
// that holds the write lock.
func (ops postingOps) sorted(bands int) postingOps {
	if len(ops) < 2 {
		return ops
	}
	var count [4][256]int
	bandStart := make([]int, bands+1)
	var high uint64
	for i := range ops {
		k := ops[i].key.bucket
		high |= k
		count[0][byte(k)]++
		count[1][byte(k>>8)]++
		count[2][byte(k>>16)]++
		count[3][byte(k>>24)]++
		bandStart[ops[i].key.band+1]++
	}
	for b := 1; b <= bands; b++ {
		bandStart[b] += bandStart[b-1]
	}
	out := make(postingOps, len(ops))
	if high>>32 != 0 {
		return byComparison(out, ops, bandStart)
	}
	src, dst := ops, out
	for d := range 4 {
		c, shift := &count[d], 8*d
		if c[byte(ops[0].key.bucket>>shift)] == len(ops) {
			continue // every bucket has the same byte d: nothing moves
		}
		pos := 0
		for v := range c {
			c[v], pos = pos, pos+c[v]
		}
		for i := range src {
			v := byte(src[i].key.bucket >> shift)
			dst[c[v]] = src[i]
			c[v]++
		}
		src, dst = dst, src
	}
	placeByBand(dst, src, bandStart)
	// Each list's run in document order, stably: by insertion when short,
	// else by a stable sort. NB: an upsert appends each replaced
	// document's removal after the additions before it, so a list that
	// many replaced documents share (copies of one text) comes out of the
	// radix passes far from document order: insertion alone took 1.8 s
	// for 10,000 such documents, under the write lock.
	for i := 0; i < len(dst); {
		j := i + 1
		for j < len(dst) && dst[j].key == dst[i].key {
			j++
		}
		if run := dst[i:j]; len(run) <= 16 {
			for k := 1; k < len(run); k++ {
				for m := k; m > 0 && run[m].p.Doc < run[m-1].p.Doc; m-- {
					run[m], run[m-1] = run[m-1], run[m]
				}
			}
		} else {
			slices.SortStableFunc(run, func(x, y postingOp) int { return cmp.Compare(x.p.Doc, y.p.Doc) })
		}
		i = j
	}
	return dst
}

// placeByBand copies src into dst by band (a counting sort: start[b] is
// where band b's operands begin), keeping their order within a band.
func placeByBand(dst, src postingOps, start []int) {
	next := slices.Clone(start[:len(start)-1])
	for i := range src {
		b := src[i].key.band
		dst[next[b]] = src[i]
		next[b]++
	}
}

// byComparison is sorted by comparison: ops placed in out by band
// (placeByBand), then each band's operands sorted by bucket and document,
// stably. It is sorted's way for buckets of more than 32 bits, and was
// its only way until stop 38 (BenchmarkPostingOpsSorted's baseline).
func byComparison(out, ops postingOps, start []int) postingOps {
	placeByBand(out, ops, start)
	for b := range len(start) - 1 {
		slices.SortStableFunc(out[start[b]:start[b+1]], func(x, y postingOp) int {
			return cmp.Or(cmp.Compare(x.key.bucket, y.key.bucket), cmp.Compare(x.p.Doc, y.p.Doc))
		})
	}
	return out
}

// removeOld adds to b the removal of the document stored under idKey, if
// any: its record, and a removal posting in each of its buckets (from its
// stored signature). it reads the committed state (writeIter). The caller
// holds wmu.
func (db *DB) removeOld(it *pebble.Iterator, b *pebble.Batch, idKey []byte, old *docData, postings *postingOps, c *codec.Counters) error {
	var o oldDoc
	if err := db.lookupOld(it, idKey, old, &o); err != nil {
		return err
	}
	return dropOld(b, &o, postings, c)
}

// oldDoc is what removing the document an id names takes: its number,
// its buckets and its expiry.
type oldDoc struct {
	found   bool
	n       uint64
	expires int64
	keys    []uint64 // bucket of each band
}

// lookupOld finds the document stored under idKey in the committed state
// (it, a writeIter), if any, and derives its buckets into o (o.keys'
// buffer is reused); scratch is the caller's record buffer.
func (db *DB) lookupOld(it *pebble.Iterator, idKey []byte, scratch *docData, o *oldDoc) error {
	*o = oldDoc{keys: o.keys[:0]}
	v, ok, err := seekExact(it, idKey)
	if err != nil || !ok {
		return err
	}
	n, err := codec.DecodeDocNum(v)
	if err != nil {
		return classify(err)
	}
	rv, ok, err := seekExact(it, codec.AppendDocKey(nil, n))
	if err != nil {
		return classify(fmt.Errorf("doc %d of id %q: %w", n, idKey[1:], err))
	}
	if !ok {
		return fmt.Errorf("%w: id %q names doc %d, which has no record", ErrCorrupt, idKey[1:], n)
	}
	// NB: the derived set is only checked (size, fingerprint), never
	// read in order: no sort.
	scratch.anyOrder = true
	if err := db.decodeDoc(n, rv, scratch); err != nil {
		return err
	}
	if err := recordOf(string(idKey[1:]), n, scratch.ID); err != nil {
		return err
	}
	keys, err := db.bucketKeys(o.keys, scratch.Signature)
	if err != nil {
		return classify(fmt.Errorf("%w: doc %d: %w", codec.ErrCorrupt, n, err))
	}
	o.found, o.n, o.expires, o.keys = true, n, scratch.Expires, keys
	return nil
}

// dropOld adds to b the removal of o, if found: its record, its expiry
// key and a removal posting in each of its buckets.
func dropOld(b *pebble.Batch, o *oldDoc, postings *postingOps, c *codec.Counters) error {
	if !o.found {
		return nil
	}
	for band, k := range o.keys {
		*postings = append(*postings, postingOp{postingKey{band, k}, codec.Posting{Doc: o.n, Remove: true}})
	}
	c.Live--
	if o.expires != 0 {
		if err := b.Delete(codec.AppendExpiryKey(nil, o.expires, o.n), nil); err != nil {
			return err
		}
	}
	return b.Delete(codec.AppendDocKey(nil, o.n), nil)
}

// lookupOlds is lookupOld for the id of every one of preps, on several
// cores when there are many: each replaced document's record is read
// and its text re-shingled to find its buckets, which made a batch of
// upserts one core's work under wmu. It returns the error lookupOld
// gives for the first failing document in preps' order, as one loop
// would. The caller holds wmu (nothing commits meanwhile).
func (db *DB) lookupOlds(preps []prepared) ([]oldDoc, error) {
	olds := make([]oldDoc, len(preps))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(preps)/lookupOldsPerWorker))
	its := make([]*pebble.Iterator, 0, workers)
	defer func() {
		for _, it := range its {
			it.Close()
		}
	}()
	for range workers {
		it, err := db.writeIter()
		if err != nil {
			return nil, err
		}
		its = append(its, it)
	}
	errs := make([]error, len(preps))
	var next atomic.Int64
	var failed atomic.Bool
	// NB: indexes are claimed in order and a claimed one is always looked
	// up, so every index below a failing one was looked up: the first
	// error by index is the one a loop would meet.
	work := func(it *pebble.Iterator) {
		var scratch docData
		var idKey []byte
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= len(preps) {
				return
			}
			idKey = codec.AppendIDKey(idKey[:0], preps[i].id)
			if err := db.lookupOld(it, idKey, &scratch, &olds[i]); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}
	}
	if workers == 1 {
		work(its[0]) // NB: a put of a few documents: no goroutine
	} else {
		var wg sync.WaitGroup
		for _, it := range its {
			wg.Go(func() { work(it) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return olds, nil
}

// lookupOldsPerWorker is the fewest documents lookupOlds gives each
// goroutine: a put of a few documents looks them up inline.
const lookupOldsPerWorker = 64

// writeIter returns the iterator removeOld (lookupOld) reads the committed
// id map and records through. NB: one iterator per batch (and goroutine
// of lookupOlds), with prefix seeks that consult the bloom filters: a Get
// per document (a miss for a new id) built and tore down an iterator
// stack over every level, and was half of a 1,000-document batch's own
// CPU time in BenchmarkPut's profile.
func (db *DB) writeIter() (*pebble.Iterator, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.IDPrefixEnd})
	return it, classify(err)
}

// A syncWaiter is a batch applied (visible) but maybe not yet synced: a
// writer applies its batch under wmu and waits for the WAL's sync after
// releasing it, so that concurrent writers share one fsync (group commit)
// instead of queueing behind each other's. NB: Pebble makes a batch
// visible before its sync whether or not the committer waits; what is
// acknowledged (the call returns nil) is synced.
type syncWaiter struct {
	b  *pebble.Batch
	db *DB
}

// wait waits for the batch's sync and releases it; the zero syncWaiter
// (nothing to wait for) returns nil. A failed sync stops the store
// (logFailed): Pebble's log keeps the failure, and its next rotation, a
// flush at Close among them, crashed the process (a fatal error, not a
// panic: C3-3's test).
func (w syncWaiter) wait() error {
	if w.b == nil {
		return nil
	}
	defer w.b.Close()
	if err := w.b.SyncWait(); err != nil {
		return w.db.logFailed(err)
	}
	return nil
}

// commit adds one merge operand per touched posting list and the counters
// to b, applies it, and publishes the counters. The caller holds wmu; for
// a synced write it then releases wmu and waits on the syncWaiter, which
// owns b from then on (the zero syncWaiter: b is still the caller's).
//
// frees says that the batch removes documents and writes none (a delete,
// a sweep of the expired): it keeps the smaller reserve of writes that
// free space (roomToFree).
func (db *DB) commit(b *pebble.Batch, postings postingOps, c codec.Counters, wo *WriteOptions, frees bool) (syncWaiter, error) {
	return db.commitDropping(b, postings, c, wo, frees, nil)
}

// dropEmptied is the emptiedFunc that reads each list, with lists (an
// iterator of the committed posting lists, under wmu: no operand arrives
// meanwhile), whose postings in the batch are all removals: a list that
// gets an addition is not emptied, and is not read.
func dropEmptied(lists *pebble.Iterator) emptiedFunc {
	return func(key []byte, ps []codec.Posting) (bool, error) {
		if slices.ContainsFunc(ps, func(p codec.Posting) bool { return !p.Remove }) {
			return false, nil
		}
		v, ok, err := seekExact(lists, key)
		if err != nil || !ok {
			return !ok && err == nil, err // no list: a delete leaves no list of removals
		}
		// NB: a list that does not decode keeps its operand, as a
		// delete's: its damage is left for Check to report.
		emptied, err := compaction.EmptiedBy(v, ps)
		return emptied && err == nil, nil
	}
}

// emptiedFunc reports whether the posting list key, with the operand ps
// (its postings of the batch, in document order) merged into it, would
// hold no live posting; the list is then deleted in the batch instead.
type emptiedFunc func(key []byte, ps []codec.Posting) (bool, error)

// commitDropping is commit, except that a list which emptied (when not
// nil) says the batch empties is deleted instead of given an operand.
func (db *DB) commitDropping(b *pebble.Batch, postings postingOps, c codec.Counters, wo *WriteOptions, frees bool, emptied emptiedFunc) (syncWaiter, error) {
	// NB: sorted by list, so that a batch's operands are applied in key
	// order (cheaper memtable inserts) and batches are reproducible, and
	// by document within a list, as a list's operand holds them.
	postings = postings.sorted(db.man.Bands)
	var keys []postingKey // the lists, for the query cache
	if db.qcache != nil {
		keys = make([]postingKey, 0, len(postings))
	}
	var ps []codec.Posting
	var kbuf, vbuf []byte
	var emptiable []postingKey // lists of removals alone, which this batch may empty
	for i := 0; i < len(postings); {
		k := postings[i].key
		ps = ps[:0]
		removals := true
		for ; i < len(postings) && postings[i].key == k; i++ {
			ps = append(ps, postings[i].p)
			removals = removals && postings[i].p.Remove
		}
		if removals && emptied == nil {
			emptiable = append(emptiable, k)
		}
		if db.qcache != nil {
			keys = append(keys, k)
		}
		kbuf = codec.AppendPostingKey(kbuf[:0], k.band, k.bucket)
		if emptied != nil {
			drop, err := emptied(kbuf, ps)
			if err != nil {
				return syncWaiter{}, err
			}
			if drop {
				if err := b.Delete(kbuf, nil); err != nil {
					return syncWaiter{}, err
				}
				continue
			}
		}
		vbuf = codec.AppendPostings(vbuf[:0], ps)
		if err := b.Merge(kbuf, vbuf, nil); err != nil {
			return syncWaiter{}, err
		}
	}
	if err := b.Set(codec.CountersKey, codec.EncodeCounters(c), nil); err != nil {
		return syncWaiter{}, err
	}
	// NB: the batch goes to the WAL and then a memtable, flushed later:
	// about twice its size on disk before compactions. A batch that
	// frees space once compacted (a delete, a sweep of the expired) has
	// the smaller reserve (roomToFree).
	room := db.roomFor
	if frees {
		room = db.roomToFree
	}
	if err := room(2 * int64(b.Len())); err != nil {
		return syncWaiter{}, err
	}
	if db.qcache != nil {
		// NB: before the batch is visible (see queryCache). A batch that
		// then fails records a version no write made; the next write
		// computes its version from the same counters, so the entries
		// this makes stale are at most those of the lists it names and of
		// the lists that share their change slots.
		db.qcache.changing(keys, c)
	}
	var sw syncWaiter
	if wo.NoSync || db.opts.NoSync {
		if err := db.pebbleWrite(func() error { return b.Commit(pebble.NoSync) }); err != nil {
			return syncWaiter{}, err
		}
	} else {
		// NB: an error here comes before the batch enters the commit
		// pipeline (Pebble treats a pipeline failure as fatal, and
		// panics: pebbleWrite), so the caller may still close b.
		if err := db.pebbleWrite(func() error { return db.pdb.ApplyNoSyncWait(b, pebble.Sync) }); err != nil {
			return syncWaiter{}, err
		}
		sw = syncWaiter{b: b, db: db}
	}
	db.setCounters(c)
	db.emptiable.add(emptiable)
	if db.qcache != nil {
		// The removed documents' cached entries can no longer be asked
		// for (no posting names them): free their room. NB: one removal
		// posting per band names each; forget is idempotent.
		for _, op := range postings {
			if op.p.Remove {
				db.qcache.forget(op.p.Doc)
			}
		}
	}
	return sw, nil
}
