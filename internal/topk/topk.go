// Package topk keeps the k best of a stream of values in O(k) memory:
// the hottest posting lists of Buckets, the best pairs of Pairs with a
// limit (db) and of the command's pairs --limit beside a clusters file.
package topk

import "slices"

// Heap keeps the k best values offered (none when k ≤ 0), in a heap whose root is
// the worst one kept: O(k) memory and O(log k) an offer, however many are
// offered. better orders values best first (negative: a before b) and
// must break every tie (by the order offered, say): the heap does not
// keep the order of equals.
type Heap[T any] struct {
	k      int
	better func(a, b T) int
	h      []T
}

// New returns a Heap of the k best by better.
func New[T any](k int, better func(a, b T) int) *Heap[T] {
	return &Heap[T]{k: k, better: better, h: make([]T, 0, max(min(k, 4096), 0))}
}

// worse reports whether h[i] ranks after h[j].
func (t *Heap[T]) worse(i, j int) bool { return t.better(t.h[i], t.h[j]) > 0 }

// Wants reports whether v would be kept: cheaper than offer when making
// v costs (a copy).
func (t *Heap[T]) Wants(v T) bool {
	return len(t.h) < t.k || len(t.h) > 0 && t.better(v, t.h[0]) < 0
}

// Offer keeps v if it is among the k best so far.
func (t *Heap[T]) Offer(v T) {
	if len(t.h) < t.k {
		t.h = append(t.h, v)
		for i := len(t.h) - 1; i > 0 && t.worse(i, (i-1)/2); i = (i - 1) / 2 {
			t.h[i], t.h[(i-1)/2] = t.h[(i-1)/2], t.h[i]
		}
		return
	}
	if len(t.h) == 0 || t.better(v, t.h[0]) >= 0 {
		return // k ≤ 0, or v is no better than the worst kept
	}
	t.h[0] = v
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(t.h) && t.worse(l, w) {
			w = l
		}
		if r < len(t.h) && t.worse(r, w) {
			w = r
		}
		if w == i {
			return
		}
		t.h[i], t.h[w] = t.h[w], t.h[i]
		i = w
	}
}

// Len is the number of values kept.
func (t *Heap[T]) Len() int { return len(t.h) }

// Sorted returns the values kept, best first; t is spent.
func (t *Heap[T]) Sorted() []T {
	slices.SortFunc(t.h, t.better)
	return t.h
}
