// Package arena hands out slices carved from large chunks that it keeps
// for reuse.
//
// NB: a bulk load's records (~10 KB each for a 1.2 KB text) and band keys
// live only until the writer has copied them into an SSTable and a
// sorter; allocating each one made the collector zero and sweep ~10 GB in
// a million-document build.
package arena

// Arena hands out slices of T carved from chunks of Chunk elements (a
// larger request is allocated on its own and not kept). The zero value
// with Chunk set is ready to use; it is not safe for concurrent use.
type Arena[T any] struct {
	Chunk  int // elements per chunk
	chunks [][]T
	cur    int // the chunk being filled
	used   int // elements of chunks[cur] handed out
}

// Alloc returns an empty slice with capacity n, valid until Reset.
func (a *Arena[T]) Alloc(n int) []T {
	if n > a.Chunk {
		// NB: a request no chunk could hold would have walked cur past
		// every chunk left, and the requests after it would have taken
		// new ones: with 1 MiB chunks, a load's records with an
		// occasional 2 MiB one made its arena 7.8x the largest cycle's
		// demand. It is rare enough to allocate alone.
		return make([]T, 0, n)
	}
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if a.used+n <= len(c) {
			s := c[a.used : a.used : a.used+n]
			a.used += n
			return s
		}
		a.cur++
		a.used = 0
	}
	c := make([]T, a.Chunk)
	a.chunks = append(a.chunks, c)
	a.used = n
	return c[:0:n]
}

// Reset makes every chunk available again; the slices handed out before
// MUST no longer be used.
func (a *Arena[T]) Reset() {
	a.cur, a.used = 0, 0
}
