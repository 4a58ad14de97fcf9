package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/sync/errgroup"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// Set is a document given as the caller's own set instead of text: tokens
// (words, tags, code tokens) or token hashes it already computed. Build
// one with Tokens or Hashes; the zero Set gives nothing (a Doc without a
// set). Every call that takes a document's content (PutSet, QuerySet,
// Doc.Set in PutBatch and Load, QueryInput in QueryMany) takes either
// form.
//
// How a set becomes elements depends on the index's scheme (see
// minhash.Sketcher.TokenElement and HashElement): for fss, oph and classic
// a token is hashed as a shingle of the same text is (xxhash64 of its
// UTF-8 bytes), so Tokens(strings.Fields(text)...) is the set of a word
// 1-shingle index (normalization none) of text; a caller's hash goes
// through a fixed bijective mix, so any distinct values (small integers
// included) stay distinct. For datasketch, a token is hashed with
// sha1_hash32, and a caller's hash is datasketch's 32-bit hash value.
// Keep to one form in one index: Tokens and Hashes of the same tokens are
// different elements.
type Set struct {
	// NB: one type with two constructors, not two methods per call
	// (PutTokens, PutHashes, QueryTokens, …): a new form adds a
	// constructor, not a method to each call.
	kind   uint8 // 0: no set; setTokens; setHashes
	tokens []string
	hashes []uint64
}

const (
	setTokens = 1 + iota
	setHashes
)

// clone returns a copy of d whose slices (Meta, Signature, Set's) share
// nothing with the caller's: what Load keeps of a document its iterator
// may then reuse the buffers of.
func (d Doc) clone() Doc {
	d.Meta, d.Signature, d.Set = bytes.Clone(d.Meta), slices.Clone(d.Signature), d.Set.clone()
	return d
}

// clone returns a copy of s that shares nothing with the caller's.
func (s Set) clone() Set {
	return Set{kind: s.kind, tokens: slices.Clone(s.tokens), hashes: slices.Clone(s.hashes)}
}

// Tokens returns the set of tokens. The Set keeps the slice: do not modify
// it until the call that takes the Set returns.
func Tokens(tokens ...string) Set { return Set{kind: setTokens, tokens: tokens} }

// Hashes returns the set of the caller's token hashes. The Set keeps the
// slice: do not modify it until the call that takes the Set returns.
func Hashes(hashes ...uint64) Set { return Set{kind: setHashes, hashes: hashes} }

// IsZero reports whether s is the zero Set (no set given).
func (s Set) IsZero() bool { return s.kind == 0 }

// Len returns the number of tokens or hashes given, repeats included.
func (s Set) Len() int { return len(s.tokens) + len(s.hashes) }

// TokenList returns the tokens of a Set built by Tokens (nil otherwise).
func (s Set) TokenList() []string { return s.tokens }

// HashList returns the hashes of a Set built by Hashes (nil otherwise).
func (s Set) HashList() []uint64 { return s.hashes }

// bytes is what the set counts toward Options.MaxDocBytes.
func (s Set) bytes() int {
	n := 8 * len(s.hashes)
	for _, t := range s.tokens {
		n += len(t)
	}
	return n
}

// elements appends s's elements under sk's scheme to dst, sorted and
// distinct.
func (s Set) elements(sk *minhash.Sketcher, dst []uint64) ([]uint64, error) {
	start := len(dst)
	for _, t := range s.tokens {
		dst = append(dst, sk.TokenElement(t))
	}
	for _, h := range s.hashes {
		e, ok := sk.HashElement(h)
		if !ok {
			return dst, fmt.Errorf("%w: hash %#x is outside the %s scheme's range (32-bit values)", ErrInvalidDoc, h, sk.Options().Scheme)
		}
		dst = append(dst, e)
	}
	slices.Sort(dst[start:])
	return append(dst[:start], slices.Compact(dst[start:])...), nil
}

// checkSignature checks a signature given as input against the index.
func (db *DB) checkSignature(sig []uint32) error {
	if len(sig) != db.skOpt.NumPerm {
		return fmt.Errorf("%w: %d values, the index's signatures have %d", ErrInvalidSignature, len(sig), db.skOpt.NumPerm)
	}
	for _, v := range sig {
		if v != minhash.EmptyValue {
			return nil
		}
	}
	return fmt.Errorf("%w: the signature is an empty set's (every value %#x)", ErrEmptyDocument, uint32(minhash.EmptyValue))
}

// prepareGiven is prepare for a document given as a set or a signature.
func (db *DB) prepareGiven(d *Doc, sk *minhash.Sketcher) (prepared, error) {
	var rec codec.DocRecord
	var set []uint64
	var sig []uint32
	// NB: validate checked the storage mode and the signature.
	if d.Signature != nil {
		sig = slices.Clone(d.Signature)
		// NB: a signature put has no set size: SetLen 0 says so (no other
		// write stores an empty set), and its fingerprint is the
		// signature's, so that only equal signatures count as one set.
		rec = codec.DocRecord{ID: d.ID, Meta: d.Meta, Signature: sig, SetFP: codec.SetFingerprint(sig)}
		if len(rec.Meta) == 0 {
			rec.Meta = nil // NB: none (Doc.Meta), as read back
		}
	} else {
		var err error
		if set, err = d.Set.elements(sk, make([]uint64, 0, d.Set.Len())); err != nil {
			return prepared{}, &idError{d.ID, err}
		}
		if len(set) == 0 {
			return prepared{}, fmt.Errorf("%w: %s: an empty set", ErrEmptyDocument, showID(d.ID))
		}
		sig = sk.Sketch(nil, set)
		rec, _ = db.newRecord(d.ID, set, sig, "", false, d.Meta, nil)
	}
	keys, err := db.bucketKeys(make([]uint64, 0, db.bands.B), sig)
	if err != nil {
		return prepared{}, err
	}
	return prepared{id: d.ID, record: codec.AppendDocRecord(nil, &rec), keys: keys, set: set, sig: sig}, nil
}

// PutSet stores the set s under id, replacing any document with that id,
// as Put stores a text: Put(Doc{ID: id, Set: s}, wo). The index must keep
// sets (Options.Storage sets or none; a text index refuses with
// ErrStorageMode). In a sets index, queries verify against the stored set
// exactly (as 32-bit hashes, like every set there); in a none index they
// estimate. An empty set is ErrEmptyDocument.
func (db *DB) PutSet(id string, s Set, wo *WriteOptions) error {
	return db.putOne(context.Background(), Doc{ID: id, Set: s}, wo)
}

// PutSignature stores a precomputed signature under id, replacing any
// document with that id: Put(Doc{ID: id, Signature: sig}, wo). The
// signature must have the index's NumPerm values (ErrInvalidSignature),
// made with the index's scheme and seed (lshdb cannot tell: a signature
// of another scheme finds nothing); with SchemeDatasketch and Seed 1,
// datasketch's MinHash.hashvalues (as uint32s) are such signatures. Only
// a none index keeps signatures alone (ErrStorageMode otherwise): every
// answer about such a document is an estimate, and says so
// (QueryResult.EstimateOnly).
//
// Pairs and Clusters compare a signature put with every other document by
// the estimate: it has no set size, so their size filter passes its pairs.
func (db *DB) PutSignature(id string, sig []uint32, wo *WriteOptions) error {
	if sig == nil {
		sig = []uint32{}
	}
	return db.putOne(context.Background(), Doc{ID: id, Signature: sig}, wo)
}

// QuerySet is Query with the set s as the query: the stored documents
// whose Jaccard similarity to s reaches the threshold, among those that
// share a band with it. It works in every storage mode: a sets index
// compares s with the stored sets (32-bit hashes), a none index
// estimates, and a text index compares s with the shingle sets of the
// stored texts, which is meaningful when the tokens are the index's
// shingles (for example word tokens in a word 1-shingle index; see Set).
func (db *DB) QuerySet(ctx context.Context, s Set, qo *QueryOptions) (*QueryResult, error) {
	if s.IsZero() {
		// NB: the zero Set reads as "no set given" below, which would name
		// an empty query text.
		return nil, fmt.Errorf("%w: query set", ErrEmptyDocument)
	}
	return db.queryOne(ctx, &QueryInput{Set: s}, qo)
}

// QuerySignature is Query with a precomputed signature as the query (with
// the index's NumPerm values, made with its scheme and seed). With no set
// to compare, every answer is an estimate from the signatures
// (QueryResult.EstimateOnly), in every storage mode.
func (db *DB) QuerySignature(ctx context.Context, sig []uint32, qo *QueryOptions) (*QueryResult, error) {
	if sig == nil {
		sig = []uint32{}
	}
	return db.queryOne(ctx, &QueryInput{Signature: sig}, qo)
}

// errEmptyQuery is the error of a QueryInput that gives nothing:
// ErrInvalidDoc, and ErrEmptyDocument too, without that sentinel's text
// inside the message ("(exactly one; lshdb: document has no shingles)"
// read as a fragment: an embedder's review, E3).
var errEmptyQuery error = alsoIs{fmt.Errorf("%w: the query is empty: give exactly one of Text (not empty), Set, Signature and ID", ErrInvalidDoc), ErrEmptyDocument}

// alsoIs is err, which errors.Is also finds to be also.
type alsoIs struct {
	error
	also error
}

func (e alsoIs) Unwrap() error        { return e.error }
func (e alsoIs) Is(target error) bool { return target == e.also }

// QueryMany answers the queries qs, concurrently (on every core), on one
// snapshot of the index: every answer sees the same documents, whatever
// is written meanwhile (on Pebble: Redis has no snapshot, and each
// answer sees the index as it reads it). results[i] answers qs[i] with the options qo, as
// the single-query call for its input would (Query, QuerySet,
// QuerySignature or QueryID). Every input is checked first: one that is
// invalid fails the call before any is answered, with a *QueryError
// giving its position; so does a query that fails (an id not stored, a
// read error while answering it). The end of ctx stops the call with
// ctx's error (ErrClosed on Close), not a *QueryError.
func (db *DB) QueryMany(ctx context.Context, qs []QueryInput, qo *QueryOptions) ([]*QueryResult, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	q, err := db.queryOptions(qo)
	if err != nil {
		return nil, err
	}
	for i := range qs {
		in := &qs[i]
		if in.given() == 0 {
			// NB: a zero QueryInput is no query (its doc asks for exactly
			// one field), not an empty text: ErrInvalidDoc, as two fields
			// are, and ErrEmptyDocument, which it was.
			return nil, &QueryError{Index: i, Err: errEmptyQuery}
		}
		if err := db.checkInput(in); err != nil {
			return nil, &QueryError{Index: i, Err: err}
		}
	}
	var snap pebble.Reader
	if db.pdb != nil {
		s := db.pdb.NewSnapshot()
		defer s.Close()
		snap = s
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	out := make([]*QueryResult, len(qs))
	var next, held atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range max(1, min(runtime.GOMAXPROCS(0), len(qs))) {
		g.Go(func() error {
			// NB: an iterator is one goroutine's; the snapshot is shared.
			sc := db.scratch.Get().(*queryScratch)
			defer db.putScratch(sc)
			v, release, err := db.openView(gctx, snap, &sc.pv)
			if err != nil {
				return err
			}
			defer release()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(qs) {
					return nil
				}
				if err := ctxErr(gctx); err != nil {
					return err
				}
				res, err := db.answer(gctx, v, &qs[i], q, sc)
				if err != nil {
					if tb := (*textBoundError)(nil); errors.As(err, &tb) {
						return err // NB: the call's bound, not this query's fault
					}
					if cerr := ctxErr(ctx); cerr != nil {
						// NB: the call's end (its context, or Close), not
						// this query's fault: as a *QueryError it named
						// whichever query was answering (an embedder's
						// review, E2).
						return cerr
					}
					return &QueryError{Index: i, Err: err}
				}
				if n := held.Add(int64(len(res.Matches))); q.MaxMatches > 0 && n > int64(q.MaxMatches) {
					return tooManyMatches(int(n), q.MaxMatches, len(qs))
				}
				out[i] = res
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
