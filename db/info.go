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
		n, err := db.rkv.Count(db.closing)
		return &Info{Params: db.Params(), Docs: n}, redisErr(err)
	}
	return &Info{Params: db.Params(), Docs: db.live.Load(), DiskBytes: dirBytes(db.opts.FS, db.dir)}, nil
}
