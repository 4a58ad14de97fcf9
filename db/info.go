package db

// Info: what an index can say about itself without reading its data.

// Info is the cheap description of a database: its parameters, its
// document count and its size on disk. See [DB.Info].
type Info struct {
	// Params are the parameters stored in the manifest.
	Params Params
	// Docs is the number of stored documents, from the counters the
	// writes keep.
	Docs uint64
	// Written counts the documents ever written (each put, an upsert's
	// included, takes a number never used before). With Docs it tells
	// whether the index was written between two calls: every write changes
	// one of them (a put raises Written, a delete or an expiry sweep lowers
	// Docs), and no two states of an index share both. (On Redis the two
	// are read one after the other: a write under way may show as a state
	// of its own.)
	Written uint64
	// DiskBytes is the space the store's files take on disk, as in
	// [Stats.DiskBytes].
	DiskBytes uint64
}

// Info returns the database's parameters, document count and size on
// disk. Unlike [DB.Stats] it reads no records: the parameters and the
// count are held in memory since Open, and the size is the sum of the
// directory's file sizes, so it answers in microseconds on any index.
func (db *DB) Info() (*Info, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	if db.rkv != nil {
		// NB: the size is the cluster's: the README gives its cost per
		// document; INFO memory on each master tells it.
		// NB: written first: a write raises it before it raises the count.
		w, err := db.rkv.Written(db.closing)
		if err != nil {
			return nil, redisErr(err)
		}
		n, err := db.rkv.Count(db.closing)
		return &Info{Params: db.Params(), Docs: n, Written: w}, redisErr(err)
	}
	c := db.published.Load()
	return &Info{Params: db.Params(), Docs: c.Live, Written: max(c.NextDoc, 1) - 1, DiskBytes: dirBytes(db.opts.FS, db.dir)}, nil
}
