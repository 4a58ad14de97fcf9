// Package seqs holds what lshdb's packages need of the sequences
// (iter.Seq2) their callers give them.
package seqs

import "iter"

// Caller returns a caller's sequence as one that stops when its consumer
// stops, even if the caller's own iterator goes on yielding after a yield
// returned false (it is then told false again, and the consumer sees
// nothing more).
//
// NB: a range over such an iterator panics ("continued iteration after
// function for loop body returned false"): a db.Load that stopped at a
// bad document, or at a cancel, panicked where it was to return the
// document's error, and the HTTP client's Load, which reads the sequence
// on a goroutine of its own, took the whole program down (an API
// review's A2). Every range over a sequence a caller gives goes through
// it.
func Caller[K, V any](seq iter.Seq2[K, V]) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		stopped := false
		seq(func(k K, v V) bool {
			if stopped {
				return false
			}
			if !yield(k, v) {
				stopped = true
				return false
			}
			return true
		})
	}
}
