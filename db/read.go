package db

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"iter"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lshdb/lshdb/codec"
)

// Document is a stored document.
type Document struct {
	ID string
	// Num is the internal doc number: dense, increasing with insertion,
	// never reused (an upsert gets a new one).
	Num uint64
	// HasText reports whether the text was stored; Text is "" otherwise.
	HasText bool
	Text    string
	// Meta is the opaque metadata stored with the document, or nil.
	Meta []byte
	// Shingles is the sorted, de-duplicated shingle set.
	Shingles []uint64
	// Signature is the MinHash signature.
	Signature []uint32
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

// lookup returns the doc number and record of id as it sees them, or an
// error wrapping ErrNotFound. Every id → record read goes through it.
func lookup(it *pebble.Iterator, id string, rec *codec.DocRecord) (uint64, error) {
	v, ok, err := seekExact(it, codec.AppendIDKey(nil, id))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	n, err := codec.DecodeDocNum(v)
	if err != nil {
		return 0, classify(err)
	}
	if v, ok, err = seekExact(it, codec.AppendDocKey(nil, n)); err != nil || !ok {
		return 0, cmp.Or(err, fmt.Errorf("%w: id %q names doc %d, which has no record", ErrCorrupt, id, n))
	}
	if err := codec.DecodeDocRecord(v, rec); err != nil {
		return 0, classify(fmt.Errorf("doc %d: %w", n, err))
	}
	return n, nil
}

func toDocument(n uint64, r *codec.DocRecord) *Document {
	return &Document{ID: r.ID, Num: n, HasText: r.HasText, Text: r.Text, Meta: r.Meta, Shingles: r.Set, Signature: r.Signature}
}

// Get returns the document id, or ErrNotFound.
func (db *DB) Get(id string) (*Document, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if err := checkID(id); err != nil {
		return nil, err
	}
	it, err := db.queryIter()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var rec codec.DocRecord
	n, err := lookup(it, id, &rec)
	if err != nil {
		return nil, err
	}
	return toDocument(n, &rec), nil
}

// Has reports whether a document has id.
func (db *DB) Has(id string) (bool, error) {
	if err := db.enter(); err != nil {
		return false, err
	}
	defer db.mu.RUnlock()
	if err := checkID(id); err != nil {
		return false, err
	}
	_, ok, err := getCopy(db.pdb, codec.AppendIDKey(nil, id))
	return ok, err
}

// Count returns the number of stored documents.
func (db *DB) Count() (uint64, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return db.live.Load(), nil
}

// All iterates over the stored documents in insertion order (doc number),
// as of one snapshot taken when the iteration starts. Stop early by
// breaking out of the loop; an error ends the iteration.
//
//	for doc, err := range db.All() { ... }
func (db *DB) All() iter.Seq2[*Document, error] {
	return func(yield func(*Document, error) bool) {
		if err := db.enter(); err != nil {
			yield(nil, err)
			return
		}
		defer db.mu.RUnlock()
		for doc, err := range db.allLocked() {
			if !yield(doc, err) {
				return
			}
		}
	}
}

// allLocked is All for a caller that holds db.mu.
func (db *DB) allLocked() iter.Seq2[*Document, error] {
	return func(yield func(*Document, error) bool) {
		snap := db.pdb.NewSnapshot()
		defer snap.Close()
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: codec.DocPrefix, UpperBound: codec.DocPrefixEnd})
		if err != nil {
			yield(nil, classify(err))
			return
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			n, err := codec.ParseDocKey(it.Key())
			var rec codec.DocRecord
			if err == nil {
				err = codec.DecodeDocRecord(it.Value(), &rec)
			}
			if err != nil {
				yield(nil, classify(fmt.Errorf("doc record %x: %w", it.Key(), err)))
				return
			}
			rec.Meta = bytes.Clone(rec.Meta) // it.Value() is reused
			if !yield(toDocument(n, &rec), nil) {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(nil, classify(err))
		}
	}
}
