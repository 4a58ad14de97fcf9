package db

// arena hands out slices carved from large chunks that it keeps for
// reuse. A bulk load's records (~10 KB each for a 1.2 KB text) and band
// keys live only until the writer has copied them into an SSTable and a
// sorter; allocating each one made the collector zero and sweep ~10 GB
// in a million-document build.
type arena[T any] struct {
	chunk  int // elements per chunk (a larger request gets one of its own)
	chunks [][]T
	cur    int // the chunk being filled
	used   int // elements of chunks[cur] handed out
}

// alloc returns an empty slice with capacity n, valid until reset.
func (a *arena[T]) alloc(n int) []T {
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
	c := make([]T, max(n, a.chunk))
	a.chunks = append(a.chunks, c)
	a.used = n
	return c[:0:n]
}

// reset makes every chunk available again; slices handed out before
// must no longer be used.
func (a *arena[T]) reset() {
	a.cur, a.used = 0, 0
}
