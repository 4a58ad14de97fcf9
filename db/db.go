package db

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/compaction"
	"github.com/lshdb/lshdb/minhash"
)

// formatMajorVersion pins Pebble's on-disk format. NB: pinned, not
// FormatNewest, so that upgrading Pebble never silently rewrites a user's
// database into a format an older lshdb cannot open; raising it is a
// deliberate change.
const formatMajorVersion = pebble.FormatValueSeparation

// DB is an open lshdb database. Every method is safe for concurrent use.
// The caller MUST call Close.
type DB struct {
	dir   string
	opts  Options
	pdb   *pebble.DB
	popts *pebble.Options // as opened, defaults filled in (Load's SSTables follow them)
	lock  *pebble.Lock
	man   codec.Manifest
	shOpt minhash.Options
	skOpt minhash.SketchOptions
	bands bands.Params

	hashers sync.Pool // *minhash.Hasher

	// mu guards the handle's life: every operation holds it for reading,
	// Close for writing.
	mu     sync.RWMutex
	closed bool

	// wmu serializes writers: a write reads the id map and counters, then
	// commits one batch, with no other writer in between.
	wmu      sync.Mutex
	counters codec.Counters // guarded by wmu
	live     atomic.Uint64  // counters.Live, for lock-free Count
}

// Open opens the database in dir, creating it (and dir) if it does not
// exist, unless opts.MustExist or opts.ReadOnly. A nil opts means the
// defaults. See Options for how options meet the stored parameters.
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
		o.StopWords = slices.Clone(opts.StopWords)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.ensureDefaults()
	if err := prepareDir(o.FS, dir, &o); err != nil {
		return nil, err
	}
	lock, err := pebble.LockDirectory(dir, o.FS)
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lshdb: locking %s: %w", dir, err)
	}
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		FS:                 o.FS,
		Lock:               lock,
		Cache:              cache,
		Merger:             compaction.Merger,
		FormatMajorVersion: formatMajorVersion,
		ReadOnly:           o.ReadOnly,
		Logger:             quietLogger{},
		// NB: Pebble's default reaction to on-disk corruption found while
		// reading is Logger.Fatalf, which would end the user's process; the
		// read itself returns the corruption error, which lshdb reports as
		// ErrCorrupt.
		EventListener: &pebble.EventListener{
			DataCorruption: func(info pebble.DataCorruptionInfo) { quietLogger{}.Errorf("%s", info) },
		},
	}
	for i := range popts.Levels {
		// NB: a query is b point reads of posting lists plus one per
		// candidate; bloom filters let each read skip the levels that do
		// not hold its key (Pebble's default is no filter).
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	popts.EnsureDefaults()
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		lock.Close()
		if strings.Contains(err.Error(), "merger") {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotIndex, dir, err)
		}
		return nil, classify(fmt.Errorf("lshdb: opening %s: %w", dir, err))
	}
	if !o.ReadOnly {
		// The temporary files of a load that was interrupted (crash, kill)
		// before its ingest: the index never saw them.
		// So are the spilled candidates of a Pairs run that was interrupted.
		names, _ := o.FS.List(dir)
		for _, n := range names {
			if n != loadTmpDir && !(strings.HasPrefix(n, "lshdb-pairs-") && strings.HasSuffix(n, ".tmp")) {
				continue
			}
			if err := o.FS.RemoveAll(o.FS.PathJoin(dir, n)); err != nil {
				pdb.Close()
				lock.Close()
				return nil, fmt.Errorf("lshdb: removing an interrupted load's or pairs run's files: %w", err)
			}
		}
	}
	db := &DB{dir: dir, opts: o, pdb: pdb, popts: popts, lock: lock}
	if err := db.loadManifest(); err != nil {
		pdb.Close()
		lock.Close()
		return nil, err
	}
	db.hashers.New = func() any {
		h, err := minhash.NewHasher(db.shOpt, db.skOpt)
		if err != nil {
			// NB: the options were validated when the manifest was loaded.
			panic(fmt.Sprintf("lshdb: hasher from validated options: %v", err))
		}
		return h
	}
	return db, nil
}

// prepareDir checks what dir is before Pebble touches it: refuses a file
// and a non-empty directory that is not a Pebble store, and creates a
// missing one unless the options forbid it.
func prepareDir(fs vfs.FS, dir string, o *Options) error {
	st, err := fs.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if o.MustExist || o.ReadOnly {
			return fmt.Errorf("%w: %s", ErrNotExist, dir)
		}
		return fs.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("lshdb: %w", err)
	case !st.IsDir():
		return fmt.Errorf("%w: %s is a file", ErrNotIndex, dir)
	}
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("lshdb: %w", err)
	}
	if len(names) == 0 {
		if o.MustExist || o.ReadOnly {
			return fmt.Errorf("%w: %s is empty", ErrNotExist, dir)
		}
		return nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest") || n == "LOCK" {
			return nil
		}
	}
	return fmt.Errorf("%w: %s holds files but no database", ErrNotIndex, dir)
}

// loadManifest reads the manifest, or writes it for a new database, and
// derives the pipeline's options from it.
func (db *DB) loadManifest() error {
	v, closer, err := db.pdb.Get(codec.ManifestKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		empty, err := db.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s is a Pebble store without an lshdb manifest", ErrNotIndex, db.dir)
		}
		if db.opts.ReadOnly {
			return fmt.Errorf("%w: %s has no lshdb manifest", ErrNotIndex, db.dir)
		}
		return db.create()
	case err != nil:
		return classify(err)
	}
	m, err := codec.DecodeManifest(v)
	closer.Close()
	if err != nil {
		return classify(err)
	}
	db.man = *m
	if err := db.checkOptions(); err != nil {
		return err
	}
	if err := db.derive(); err != nil {
		return fmt.Errorf("%w: stored parameters: %w", ErrCorrupt, err)
	}
	cv, closer, err := db.pdb.Get(codec.CountersKey)
	if err != nil {
		return classify(fmt.Errorf("lshdb: reading counters: %w", err))
	}
	c, err := codec.DecodeCounters(cv)
	closer.Close()
	if err != nil {
		return classify(err)
	}
	db.counters = c
	db.live.Store(c.Live)
	return nil
}

func (db *DB) isEmpty() (bool, error) {
	it, err := db.pdb.NewIter(nil)
	if err != nil {
		return false, classify(err)
	}
	empty := !it.First()
	return empty, classify(it.Close())
}

// create writes the manifest of a new database from the options.
func (db *DB) create() error {
	o := &db.opts
	m := codec.Manifest{
		FormatVersion: codec.FormatVersion,
		Scheme:        o.Scheme.String(),
		NumPerm:       cmpOr(o.NumPerm, minhash.DefaultNumPerm),
		Seed:          o.Seed,
		ShingleKind:   o.Shingle.String(),
		ShingleSize:   o.ShingleSize,
		Bag:           o.Bag,
		Normalization: o.Normalization.String(),
		StopWords:     o.StopWords,
		Threshold:     cmpOr(o.Threshold, DefaultThreshold),
		Recall:        cmpOr(o.Recall, bands.DefaultRecall),
		StoreText:     o.StoreText,
		Bands:         o.Bands,
		Rows:          o.Rows,
	}
	if m.ShingleSize == 0 {
		m.ShingleSize = minhash.DefaultCharK
		if o.Shingle == minhash.ShingleWord {
			m.ShingleSize = minhash.DefaultWordK
		}
	}
	if m.Bands == 0 {
		t := min(m.Threshold, 0.999) // NB: a threshold of 1 asks for identical sets; band for 0.999
		p, err := bands.Choose(m.NumPerm, t, bands.Options{Recall: m.Recall})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		m.Bands, m.Rows = p.B, p.R
	}
	db.man = m
	if err := db.derive(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	enc, err := codec.EncodeManifest(&m)
	if err != nil {
		return err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	db.counters = codec.Counters{NextDoc: 1}
	if err := b.Set(codec.ManifestKey, enc, nil); err != nil {
		return err
	}
	if err := b.Set(codec.CountersKey, codec.EncodeCounters(db.counters), nil); err != nil {
		return err
	}
	return classify(b.Commit(pebble.Sync))
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// derive builds and validates the pipeline options from the manifest.
func (db *DB) derive() error {
	m := &db.man
	kind, err := minhash.ParseShingleKind(m.ShingleKind)
	if err != nil {
		return err
	}
	norm, err := minhash.ParseNormalization(m.Normalization)
	if err != nil {
		return err
	}
	scheme, err := minhash.ParseScheme(m.Scheme)
	if err != nil {
		return err
	}
	db.shOpt = minhash.Options{Kind: kind, K: m.ShingleSize, Bag: m.Bag, Normalization: norm, StopWords: m.StopWords}
	db.skOpt = minhash.SketchOptions{Scheme: scheme, NumPerm: m.NumPerm, Seed: m.Seed}
	if err := db.shOpt.Validate(); err != nil {
		return err
	}
	if err := db.skOpt.Validate(); err != nil {
		return err
	}
	db.bands = bands.Params{B: m.Bands, R: m.Rows}
	if err := db.bands.Validate(m.NumPerm); err != nil {
		return err
	}
	if m.Bands > codec.MaxBands {
		return fmt.Errorf("%d bands exceed the key format's %d", m.Bands, codec.MaxBands)
	}
	if !(m.Threshold > 0 && m.Threshold <= 1) {
		return fmt.Errorf("threshold %v", m.Threshold)
	}
	return nil
}

// checkOptions refuses non-zero options that differ from the manifest.
func (db *DB) checkOptions() error {
	o, m := &db.opts, &db.man
	check := func(field string, set bool, stored, requested any) error {
		if set && stored != requested {
			return &MismatchError{Field: field, Stored: stored, Requested: requested}
		}
		return nil
	}
	return errors.Join(
		check("Threshold", o.Threshold != 0, m.Threshold, o.Threshold),
		check("Recall", o.Recall != 0, m.Recall, o.Recall),
		check("Bands", o.Bands != 0, m.Bands, o.Bands),
		check("Rows", o.Rows != 0, m.Rows, o.Rows),
		check("NumPerm", o.NumPerm != 0, m.NumPerm, o.NumPerm),
		check("Scheme", o.Scheme != 0, m.Scheme, o.Scheme.String()),
		check("Seed", o.Seed != 0, m.Seed, o.Seed),
		check("Shingle", o.Shingle != 0, m.ShingleKind, o.Shingle.String()),
		check("ShingleSize", o.ShingleSize != 0, m.ShingleSize, o.ShingleSize),
		check("Bag", o.Bag, m.Bag, o.Bag),
		check("Normalization", o.Normalization != 0, m.Normalization, o.Normalization.String()),
		check("StopWords", len(o.StopWords) != 0, strings.Join(m.StopWords, ","), strings.Join(o.StopWords, ",")),
		check("StoreText", o.StoreText, m.StoreText, o.StoreText),
	)
}

// Params describes a database's fixed parameters.
type Params struct {
	Threshold     float64
	Recall        float64
	Bands         bands.Params
	Scheme        minhash.Scheme
	NumPerm       int
	Seed          uint64
	Shingle       minhash.ShingleKind
	ShingleSize   int
	Bag           bool
	Normalization minhash.Normalization
	StopWords     []string
	StoreText     bool
	FormatVersion int
}

// Params returns the database's parameters (as stored in its manifest).
func (db *DB) Params() Params {
	return Params{
		Threshold: db.man.Threshold, Recall: db.man.Recall, Bands: db.bands,
		Scheme: db.skOpt.Scheme, NumPerm: db.skOpt.NumPerm, Seed: db.skOpt.Seed,
		Shingle: db.shOpt.Kind, ShingleSize: db.shOpt.K, Bag: db.shOpt.Bag,
		Normalization: db.shOpt.Normalization, StopWords: slices.Clone(db.shOpt.StopWords),
		StoreText: db.man.StoreText, FormatVersion: db.man.FormatVersion,
	}
}

// Dir returns the database's directory.
func (db *DB) Dir() string { return db.dir }

// Close closes the database. Operations in flight finish first; later
// calls return ErrClosed. Closing twice returns ErrClosed.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	db.closed = true
	err := db.pdb.Close()
	if lerr := db.lock.Close(); err == nil {
		err = lerr
	}
	return classify(err)
}

// enter takes the handle's read lock for an operation; the caller MUST
// call db.mu.RUnlock when it returns nil.
func (db *DB) enter() error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// quietLogger drops Pebble's informational messages and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "lshdb: pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	// NB: Pebble calls Fatalf only for invariant violations inside Pebble,
	// never for bad input, and expects it not to return. A panic (rather
	// than Pebble's default os.Exit) lets an embedding program decide.
	panic(fmt.Sprintf("lshdb: pebble: fatal: "+format, args...))
}
