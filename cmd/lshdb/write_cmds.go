package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/internal/rediskv"
	retries "github.com/lshdb/lshdb/internal/retry"
	"github.com/lshdb/lshdb/minhash"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// createFlags are the creation parameters, shared by create and insert.
type createFlags struct {
	threshold, recall    float64
	numPerm, shingleSize int
	scheme, shingle      string
	storage              string
	bag, storeText       bool
	seed                 uint64
	normalization        string
	stopWords            []string
	stopWordsFile        string
	bands, rows          int
}

// verifier returns a check of an opened index against the flags given
// whose value is db.Options' zero value: --scheme fss, --shingle char,
// --bag=false. Open compares only non-zero options with the manifest (zero
// means "the index's own"), so without this check those three would be
// ignored on an index made otherwise.
func (f *createFlags) verifier(c *cobra.Command) func(index) error {
	set := c.Flags().Changed
	return func(d index) error {
		p := d.Params()
		var errs []error
		mismatch := func(flag, field string, stored, requested any) {
			if set(flag) && stored != requested {
				errs = append(errs, &db.MismatchError{Field: field, Stored: stored, Requested: requested})
			}
		}
		mismatch("scheme", "Scheme", p.Scheme.String(), f.scheme)
		mismatch("shingle", "Shingle", p.Shingle.String(), f.shingle)
		mismatch("bag", "Bag", p.Bag, f.bag)
		mismatch("seed", "Seed", p.Seed, f.seed)
		// NB: lower-cased, as a create reads it: --normalization NFKC on
		// an nfkc index was a mismatch (a read-through's R9).
		mismatch("normalization", "Normalization", p.Normalization.String(), strings.ToLower(f.normalization))
		return errors.Join(errs...)
	}
}

func (f *createFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.Float64Var(&f.threshold, "threshold", 0.8, "Jaccard threshold the banding is chosen for, in (0, 1]")
	fs.Float64Var(&f.recall, "recall", 0.99, "target probability that a pair at the threshold shares a band, in (0, 1)")
	fs.IntVar(&f.numPerm, "num-perm", 128, "signature values")
	fs.StringVar(&f.scheme, "scheme", "fss", "signature scheme of a new index: fss, oph, classic or datasketch (signatures equal to the Python datasketch MinHash's, of seed 1 unless --seed)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of a new index's hash functions (default 0; 1 with --scheme datasketch, datasketch's default)")
	fs.StringVar(&f.shingle, "shingle", "char", "shingle kind: char or word (words are runs of non-space characters: keep char for Chinese, Japanese or Thai, where a sentence is one word)")
	fs.IntVar(&f.shingleSize, "shingle-size", 0, "shingle size k (default 5 for char, 3 for word)")
	fs.BoolVar(&f.bag, "bag", false, "bag (multiset) shingles: repeats count")
	fs.StringVar(&f.storage, "storage", "text", "what a new index keeps per document: text (compressed; exact verification re-shingles it), sets (32-bit shingle hashes, no text) or none (signatures only: every similarity is an estimate)")
	fs.BoolVar(&f.storeText, "store-text", false, "with --storage sets or none: keep each document's text too (text storage always does)")
	fs.StringVar(&f.normalization, "normalization", "fold", "text normalization before shingling: fold (lower-cased per code point, each white-space run one space, the ends trimmed; bytes that are not UTF-8 read as U+FFFD), none (the text as it is) or nfkc (fold after Unicode case folding, NFKC and no zero-width characters: for text whose characters are written in more than one way)")
	fs.StringSliceVar(&f.stopWords, "stop-words", nil, "words dropped before word shingling (--shingle word), comma-separated")
	fs.StringVar(&f.stopWordsFile, "stop-words-file", "", "a file of stop words, one per line (blank lines and lines starting with # ignored)")
	fs.IntVar(&f.bands, "bands", 0, "the banding's bands, with --rows (default: chosen from --threshold and --recall)")
	fs.IntVar(&f.rows, "rows", 0, "the rows of each band, with --bands; bands × rows ≤ --num-perm")
}

// options returns db options with only the flags given on the command line
// set, so that an existing index's stored values apply to the rest.
func (f *createFlags) options(c *cobra.Command) (*db.Options, error) {
	o := &db.Options{}
	set := func(name string) bool { return c.Flags().Changed(name) }
	if set("threshold") {
		if !(f.threshold > 0 && f.threshold <= 1) {
			return nil, usagef("--threshold %v is outside (0, 1]", f.threshold)
		}
		o.Threshold = f.threshold
	}
	if set("recall") {
		if err := checkRecall(f.recall); err != nil {
			return nil, err
		}
		if set("bands") || set("rows") {
			// NB: it was taken and ignored (an inspection review's Q3).
			return nil, usagef("--recall chooses a banding, and --bands and --rows give one: give either")
		}
		o.Recall = f.recall
	}
	if set("num-perm") {
		if f.numPerm < 1 || f.numPerm > minhash.MaxNumPerm {
			return nil, usagef("--num-perm %d is outside 1..%d", f.numPerm, minhash.MaxNumPerm)
		}
		o.NumPerm = f.numPerm
	}
	if set("scheme") {
		s, err := minhash.ParseScheme(f.scheme)
		if err != nil || f.scheme == "" {
			return nil, usagef("--scheme %q: want fss, oph, classic or datasketch", f.scheme)
		}
		// NB: fss is the zero value of db.Options.Scheme, which db takes
		// as "the index's own": verifier compares it after opening.
		o.Scheme = s
	}
	if set("shingle") {
		k, err := minhash.ParseShingleKind(f.shingle)
		if err != nil {
			return nil, usagef("--shingle %q: want char or word", f.shingle)
		}
		o.Shingle = k
	}
	if set("shingle-size") {
		if f.shingleSize < 1 || f.shingleSize > minhash.MaxK {
			return nil, usagef("--shingle-size %d is outside 1..%d", f.shingleSize, minhash.MaxK)
		}
		o.ShingleSize = f.shingleSize
	}
	if set("storage") {
		switch f.storage {
		case db.StorageText, db.StorageSets, db.StorageNone:
		default:
			return nil, usagef("--storage %q: want text, sets or none", f.storage)
		}
		o.Storage = f.storage
	}
	if set("seed") {
		if f.seed == 0 && f.scheme == "datasketch" {
			// NB: db takes a Seed of 0 as the scheme's default, 1.
			return nil, usagef("--seed 0 with --scheme datasketch: datasketch's seed 0 is not available (its default is 1); give another seed")
		}
		o.Seed = f.seed
	}
	if set("normalization") {
		n, err := minhash.ParseNormalization(strings.ToLower(f.normalization))
		if err != nil || f.normalization == "" {
			return nil, usagef("--normalization %q: want fold, none or nfkc", f.normalization)
		}
		// NB: fold is the zero value (the index's own): verifier
		// compares it after opening, as --scheme fss.
		o.Normalization = n
	}
	if set("stop-words") || set("stop-words-file") {
		words := slices.Clone(f.stopWords)
		if f.stopWordsFile != "" {
			b, err := readStopWords(f.stopWordsFile)
			if err != nil {
				return nil, err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if w := strings.TrimSpace(line); w != "" && !strings.HasPrefix(w, "#") {
					words = append(words, w)
				}
			}
		}
		if len(words) == 0 {
			return nil, usagef("--stop-words and --stop-words-file give no word")
		}
		o.StopWords = words
	}
	if set("bands") || set("rows") {
		if f.bands < 1 || f.rows < 1 {
			return nil, usagef("--bands and --rows go together, each at least 1 (--bands %d --rows %d)", f.bands, f.rows)
		}
		o.Bands, o.Rows = f.bands, f.rows
	}
	o.Bag, o.StoreText = f.bag, f.storeText
	return o, nil
}

// printParams prints the index's parameters and its expected recall
// (measured here unless rec, from Stats, has it already).
func (a *app) printParams(d index, rec *db.RecallEstimate) error {
	p := d.Params()
	if rec == nil {
		r, err := db.MeasureRecall(p, 0)
		if err != nil {
			return err
		}
		rec = &r
	}
	if a.json() {
		return a.emitJSON(paramsJSON{Threshold: p.Threshold, Bands: p.Bands.B, Rows: p.Bands.R, NumPerm: p.NumPerm,
			Scheme: p.Scheme.String(), Shingle: p.Shingle.String(), ShingleSize: p.ShingleSize, Bag: p.Bag,
			Normalization: p.Normalization.String(), StopWords: nonNil(p.StopWords), StoreText: p.StoreText, Storage: p.Storage, Seed: p.Seed, ExpectedRecall: rec.Curve, ExpectedRecallShortDocs: shortDocs(*rec),
			EstimateJSON: httpapi.EstimateOut(p)})
	}
	fmt.Fprintln(a.stdout, paramsLine(p))
	if err := a.printRecall(*rec, p.Scheme); err != nil {
		return err
	}
	return a.printNoneNote(p)
}

// printNoneNote prints, for an estimate-only (storage none) index, how
// often a pair at or above its threshold is reported: nothing for the
// others.
//
// NB: a none index reports a candidate pair on its estimate, which
// falls below the threshold about half the time for a pair at it: a
// review measured recall 0.52 for J in [0.50, 0.55) where 0.99 was
// printed, and 0.86 in all. info printed P(candidate) alone, and its
// JSON's expected_recall with no sign that it is not the recall (a
// recall review: 69 of 99 pairs found within 0.02 above 0.8).
func (a *app) printNoneNote(p db.Params) error {
	f, ok := p.EstimateFigures()
	if !ok {
		return nil
	}
	sd := f.SD
	_, err := fmt.Fprintf(a.stdout, "storage none: a candidate is reported when its estimate reaches the threshold too (standard deviation %.3f at it): a pair at the threshold about half the time (%.4f with P(candidate)), one %.3f above it about 5 times in 6, one %.3f above it 39 times in 40\n", sd, f.RecallAtThreshold, sd, 2*sd)
	return err
}

// paramsLine is the line of an index's parameters that create, info and
// stats print.
func paramsLine(p db.Params) string {
	stop := ""
	if len(p.StopWords) > 0 {
		stop = fmt.Sprintf(", %d stop words", len(p.StopWords))
	}
	return fmt.Sprintf("threshold %v, %v (%d of %d signature values), scheme %v, seed %d, %v %d-shingles, bag %v, normalization %v%s, %s",
		p.Threshold, p.Bands, p.Bands.B*p.Bands.R, p.NumPerm, p.Scheme, p.Seed, p.Shingle, p.ShingleSize, p.Bag, p.Normalization, stop, storageNote(p))
}

// printRecall prints P(candidate) at the threshold from the S-curve and
// as measured on short documents, with a warning when the measured one
// falls short of the curve.
func (a *app) printRecall(rec db.RecallEstimate, scheme minhash.Scheme) error {
	switch {
	case !rec.Measured:
		_, err := fmt.Fprintf(a.stdout, "P(candidate) at the threshold: %s (S-curve; not measured for short documents above %d signature values)\n",
			probability(rec.Curve), db.MaxMeasuredNumPerm)
		return err
	case math.IsNaN(rec.MissRatio):
		_, err := fmt.Fprintf(a.stdout, "P(candidate) at the threshold: %s (S-curve; too close to 1 to measure a shortfall on short documents)\n", probability(rec.Curve))
		return err
	}
	fmt.Fprintf(a.stdout, "P(candidate) at the threshold: %s (S-curve); %s measured for short documents (8-100 shingles, %v)\n",
		probability(rec.Curve), probability(rec.ShortDocs), scheme)
	// NB: a ratio, not a difference: where P is small (a threshold far
	// below the banding's), fss sits a little under the curve too (its
	// rows agree slightly less together than independent ones), which is
	// no shortfall of the promise at the banding's threshold.
	if rec.MissRatio > 1.1 && scheme != minhash.SchemeFSS {
		fmt.Fprintf(a.stderr, "lshdb: note: %v signatures of short documents miss %.1f times as many pairs at the threshold as the S-curve says; an index made with --scheme fss (the default) does not\n",
			scheme, rec.MissRatio)
	}
	return nil
}

// newIndexDir says what of --db a write command that creates the index
// and fails removes again: root, the topmost directory of --db that did
// not exist (the index directory itself when its parent exists), or, for
// a directory that existed empty, its contents (emptied); neither when
// the index exists or the shell holds it.
func (a *app) newIndexDir() (root string, emptied bool) {
	if a.shellDB != nil || a.dbDir == "" {
		return "", false
	}
	if db.IsRedisURL(a.dbDir) {
		// NB: on Redis, openForWrite asks the handle whether it created
		// the index (db.DB.Created): other processes may create it too.
		return "", false
	}
	if ents, err := os.ReadDir(a.dbDir); err == nil {
		return "", len(ents) == 0
	}
	for p := filepath.Clean(a.dbDir); ; {
		if _, err := os.Lstat(p); err == nil {
			return root, false
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		root = p
		parent := filepath.Dir(p)
		if parent == p {
			return root, false
		}
		p = parent
	}
}

// removeNewIndex removes the index a failed command created at --db (see
// newIndexDir), closed by now, with db.Drop (under the index's lock, and
// only the index's files), unless documents were written to it meanwhile
// (by commands attached to this one, told they were stored) or another
// process has it open; then the directories above it up to root that the
// command made and that are empty. An empty directory given as --db is
// made again, empty. NB: it took root whole with everything in it:
// others' acknowledged writes, and a sibling index another command had
// built under the same new directory.
func (a *app) removeNewIndex(root string, emptied bool) {
	left := func(why string) {
		fmt.Fprintf(a.stderr, "lshdb: note: the index this command created at %s was kept: %s\n", escControls(a.dbDir), why)
	}
	d, err := db.Open(a.dbDir, &db.Options{ReadOnly: true, MustExist: true, ExpirySweep: -1})
	switch {
	case errors.Is(err, db.ErrLocked):
		left("another process has it open")
		return
	case err != nil:
		left(err.Error())
		return
	}
	in, err := d.Info()
	d.Close()
	switch {
	case err != nil:
		left(err.Error())
		return
	case in.Written > 0 || in.Docs > 0:
		left("other commands wrote " + counted(in.Written, "document", "documents") + " to it meanwhile")
		return
	}
	fi, _ := os.Stat(a.dbDir)
	if err := db.Drop(context.Background(), a.dbDir); err != nil {
		left(err.Error())
		return
	}
	if emptied && fi != nil {
		os.Mkdir(a.dbDir, fi.Mode().Perm())
		return
	}
	removeEmptyParents(a.dbDir, root)
}

// removeEmptyParents removes the directories above dir, up to root, while
// they are empty.
func removeEmptyParents(dir, root string) {
	for p := filepath.Dir(filepath.Clean(dir)); root != "" && len(p) >= len(root) && p != filepath.Dir(p); p = filepath.Dir(p) {
		if os.Remove(p) != nil {
			return
		}
	}
}

// openForWrite opens (or creates) the index for a write command and runs
// verify on it (nil: none; a failed check leaves a new index removed and
// an existing one untouched). finish
// closes it; with keep false, an index this call created is removed (a
// failed create, insert or build leaves no directory behind), unless
// documents were written to it meanwhile (by commands attached to this
// one) or another process has it open. The caller MUST call finish;
// calls after the first do nothing.
func (a *app) openForWrite(o *db.Options, verify func(index) error) (d index, finish func(keep bool), err error) {
	root, emptied := a.newIndexDir()
	redisCreated, created := false, false
	var handle *db.DB
	remove := func() {
		switch {
		case redisCreated && !handle.Created():
			// NB: its writes found records of a lost index under its name
			// (db.DB.Created): a drop deleted them with it.
			fmt.Fprintf(a.stderr, "lshdb: note: the index this command created at %s was kept: its writes found records of another index under its name, which lshdb check --db %s says more of (lshdb drop removes them all)\n", rediskv.Redact(a.dbDir), rediskv.Redact(a.dbDir))
		case redisCreated:
			// NB: on Redis only the process that created the index drops
			// it, and only while it holds no document: another process
			// may have opened it and written to it meanwhile.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// NB: nor while another process has it open to write: one that
			// had not finished its first batch saw the index dropped under
			// it (its writes acknowledged, the index gone).
			n, others, err := redisUse(ctx, a.dbDir)
			if err != nil || n > 0 {
				return
			}
			if others > 0 {
				who := "another process has it"
				if others > 1 {
					who = fmt.Sprintf("%d other processes have it", others)
				}
				fmt.Fprintf(a.stderr, "lshdb: note: the new index %s was kept: %s open to write (lshdb drop removes it)\n", rediskv.Redact(a.dbDir), who)
				return
			}
			if err := db.Drop(ctx, a.dbDir); err != nil && !errors.Is(err, db.ErrNotExist) {
				fmt.Fprintf(a.stderr, "lshdb: removing the index this command created: %v\n", err)
			}
		case created && (root != "" || emptied):
			a.removeNewIndex(root, emptied)
		case root != "":
			// NB: the open failed, or another process made the index
			// first (this command attached to it, or opened it): only
			// the directories this command made that are still empty.
			if err := os.Remove(a.dbDir); err == nil || errors.Is(err, fs.ErrNotExist) {
				removeEmptyParents(a.dbDir, root)
			}
		}
	}
	d, closeDB, err := a.openDB(o)
	if err != nil {
		remove()
		return nil, nil, err
	}
	if h, ok := d.(*db.DB); ok && a.shellDB == nil {
		// NB: this handle made the index (not another process between
		// newIndexDir and the open, whose index this command must leave).
		redisCreated = db.IsRedisURL(a.dbDir) && h.Created()
		created = !db.IsRedisURL(a.dbDir) && h.Created()
		handle = h
	}
	var once sync.Once
	// NB: closeDB stops serving (openDB serves the index it opens:
	// others attach through its socket), then closes the index.
	finish = func(keep bool) {
		once.Do(func() {
			// NB: closed (no longer served) before removeNewIndex reads
			// what was written: a write attached to it could otherwise
			// land after the reading and be removed.
			closeDB()
			if !keep {
				remove()
			}
		})
	}
	if verify != nil {
		if err := verify(d); err != nil {
			finish(false)
			return nil, nil, err
		}
	}
	return d, finish, nil
}

// redisUse returns the documents a Redis index holds and the writable
// handles other processes have open on it (db.OtherWriters).
func redisUse(ctx context.Context, url string) (docs uint64, writers int, err error) {
	d, err := db.Open(url, &db.Options{ReadOnly: true, ExpirySweep: -1})
	if err != nil {
		return 0, 0, err
	}
	defer d.Close()
	if docs, err = d.Count(); err != nil {
		return 0, 0, err
	}
	writers, err = d.OtherWriters(ctx)
	return docs, writers, err
}

// countOf returns the documents of the index at dir, opened read-only.
func countOf(dir string) (uint64, error) {
	d, err := db.Open(dir, &db.Options{ReadOnly: true, ExpirySweep: -1})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return d.Count()
}

func (a *app) createCmd() *cobra.Command {
	var f createFlags
	c := &cobra.Command{
		Use:   "create --db DIR [flags]",
		Short: "Create an empty index with these parameters",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			o, err := f.options(c)
			if err != nil {
				return err
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if names, err := os.ReadDir(a.dbDir); err == nil && len(names) > 0 {
				// NB: an index, or some other directory: the other
				// commands say which, and create should too.
				d, err := db.Open(a.dbDir, &db.Options{ReadOnly: true, MustExist: true})
				if err == nil {
					d.Close()
				} else if errors.Is(err, db.ErrNotIndex) {
					return fmt.Errorf("%w: %s holds other files (%d entries): create makes an index in a new or empty directory", db.ErrNotIndex, a.dbDir, len(names))
				} else if errors.Is(err, db.ErrCorrupt) {
					return fmt.Errorf("%s holds a damaged index: %w", a.dbDir, err)
				}
				return fmt.Errorf("%s already exists (open it with the other commands)", a.dbDir)
			}
			if db.IsRedisURL(a.dbDir) {
				if d, err := db.Open(a.dbDir, &db.Options{ReadOnly: true}); err == nil {
					d.Close()
					return fmt.Errorf("%s already exists (open it with the other commands)", rediskv.Redact(a.dbDir))
				}
			}
			d, finish, err := a.openForWrite(o, nil)
			if err != nil {
				return err
			}
			defer finish(true)
			if a.quiet && !a.json() {
				// NB: its parameters are a summary, which --quiet drops
				// as the other write commands' (a scripting operator's
				// CL5).
				return nil
			}
			return a.printParams(d, nil)
		},
	}
	f.add(c)
	return c
}

// recordLimit is the longest input record (a line of JSON Lines, a CSV
// row, a text file) read for a document of at most d's MaxDocBytes: three
// times it, for JSON's escapes, and a MiB for the id and the syntax. NB:
// JSON may write a character of 3 or 4 UTF-8 bytes as 6 or 12 (\uXXXX,
// a surrogate pair), and Python's json.dumps does by default: a 42 MB
// Chinese document was refused as a line of 84 MB, over a limit of
// MaxDocBytes plus a MiB (a review's P4). The limit only bounds the
// memory a record takes; the document's own limit is checked on its text.
func recordLimit(d index) int {
	return 3*d.MaxDocBytes() + 1<<20
}

// insertSummary is what insert and build report.
type insertSummary struct {
	Inserted int `json:"inserted"`
	Replaced int `json:"replaced"`
	Repeated int `json:"repeated_ids"`
	Empty    int `json:"empty_skipped"`
	// EmptyIDs are the ids of the first emptyIDsShown empty texts
	// skipped: "3 empty texts skipped" named none, and in a 200,000
	// document input they could not be found (a review of skewed
	// corpora, K7).
	EmptyIDs   []string `json:"empty_ids,omitempty"`
	BadSkipped int      `json:"bad_skipped"`
	// PassedOver counts the files passed over whole (see input.passed).
	PassedOver int `json:"files_passed_over,omitempty"`
	// Deleted is what build --delete-missing deleted (absent from the
	// inputs); nil without it.
	Deleted *int `json:"deleted_missing,omitempty"`
	// Compacted is what build --compact did, if it compacted.
	Compacted *compactedJSON `json:"compacted,omitempty"`
}

// compactedJSON is the disk use before and after a compaction.
type compactedJSON struct {
	DiskBytesBefore uint64 `json:"disk_bytes_before"`
	DiskBytesAfter  uint64 `json:"disk_bytes_after"`
}

// compactAfterBuild compacts the index after a build as --compact says
// (auto: when the build replaced at least a quarter as many documents as
// the index now holds), and records it in sum. NB: the build is in
// either way: an interrupted compaction, or a failed one that was asked
// for (always), reports the build's summary, then fails; one that auto
// chose warns.
func (a *app) compactAfterBuild(d index, mode string, res db.LoadResult, sum *insertSummary) error {
	if mode == "never" {
		return nil
	}
	before := diskBytesOf(d)
	if before == 0 {
		return nil // NB: no files: an index on Redis, which frees a replaced key's memory at once
	}
	// NB: a deleted document leaves its record behind as a replaced one
	// does.
	freed := res.Replaced + res.Deleted
	if mode == "auto" {
		live, err := d.Count()
		if err != nil || freed == 0 || uint64(freed)*4 < live {
			return nil // NB: a count that fails only skips the compaction
		}
	}
	// NB: said before the compaction, which can take as long as the
	// build: the summary comes after it, and the log of a job killed
	// meanwhile showed no sign that the build was in (an operator's
	// review, O5).
	freedWhat := "replacing " + counted(res.Replaced, "document", "documents")
	if res.Deleted > 0 {
		freedWhat = fmt.Sprintf("replacing %d and deleting %s", res.Replaced, counted(res.Deleted, "document", "documents"))
	}
	a.notef(fmt.Sprintf("the build is in (%s stored); compacting after %s, to free their space (stopping this keeps the build; lshdb compact does it later)", counted(res.Stored, "document", "documents"), freedWhat))
	ctx, barDone := a.phaseBar("compact")
	err := d.Compact(ctx)
	barDone()
	if err != nil {
		interrupted := errors.Is(err, context.Canceled)
		what := "the build is in, but compacting after it failed (lshdb compact frees the replaced documents' space)"
		if interrupted {
			what = "the build is in, but compacting after it was interrupted (lshdb compact frees the replaced documents' space)"
		}
		if mode == "auto" && !interrupted {
			// NB: a compaction the build chose for itself: its failure (a
			// disk too full for the rewrite) is a warning, and the build,
			// which is in, succeeds; a nightly job would build again.
			a.notef(fmt.Sprintf("%s: %s", what, optionNames(err, plainMessage(err.Error()))))
			return nil
		}
		// NB: the build's summary still comes: its documents are in.
		if rerr := a.reportInsert(*sum); rerr != nil {
			return rerr
		}
		if interrupted {
			return interruptNote(err, "%s", what)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	sum.Compacted = &compactedJSON{DiskBytesBefore: before, DiskBytesAfter: diskBytesOf(d)}
	if !a.json() {
		a.notef(fmt.Sprintf("compacted after %s: %s on disk, %s before (give --compact never to skip this)",
			freedWhat, humanBytes(sum.Compacted.DiskBytesAfter), humanBytes(before)))
	}
	return nil
}

// checkMemoryFlag checks --memory (build, pairs, clusters): mib is at
// least 1 and, when given, at most maxMemoryMiB. NB: the default is not
// held to the machine: it is a bound, not an allocation, and a machine of
// 512 MB ran pairs at it before pairs had the flag.
func checkMemoryFlag(c *cobra.Command, mib int) error {
	if mib < 1 {
		return usagef("--memory %d: must be at least 1 (MiB)", mib)
	}
	if most := maxMemoryMiB(); c.Flags().Changed("memory") && mib > most {
		return usagef("--memory %d MiB is more than half of this machine's memory (at most %d MiB)", mib, most)
	}
	return nil
}

// maxMemoryMiB is the largest --memory accepted: half of the physical
// memory (/proc/meminfo), or 64 GiB where that cannot be read.
func maxMemoryMiB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			var kb int
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil && kb > 0 {
				return max(1, kb/1024/2)
			}
		}
	}
	return 64 << 10
}

// progress shows the progress of a command that reads paths as
// --progress says (a bar on a terminal's stderr, a line every interval
// elsewhere: see phaseBar): add counts documents (a line calls them noun),
// done ends the bar. When every input is a regular file (inputBytes knows
// their total), it counts the bytes read from them instead, with the
// percentage and the time left to read them: in's reader reports them
// (docio.Options.Progress) and add only counts what a line mentions.
func (a *app) progress(name, noun string, in *inputFlags, paths []string) (add func(n int), done func()) {
	return a.stepProgress(name, "", noun, in, paths, time.Time{})
}

// stepProgress is progress for the first step of several, which its
// lines name (step: "1/4 reading"; "" for none). since, when not zero, is
// when the command's work began (its lines' elapsed time counts from it,
// as a build's stages' do): filter's reading comes after its clustering,
// and its lines started a clock of their own, "2s elapsed" after the
// clustering's "26s elapsed" (a review at scale, L3). The time left to
// read is by the pace of the reading alone.
func (a *app) stepProgress(name, step, noun string, in *inputFlags, paths []string, since time.Time) (add func(n int), done func()) {
	total := inputBytes(paths)
	switch a.progressStyle() {
	case progressLog:
		readStart := time.Now()
		l := a.newLineLogSince(name, cmp.Or(since, readStart))
		if step != "" {
			l.what += ": " + step
		}
		var read, docs atomic.Int64
		status := func(time.Duration) string {
			if n := read.Load(); n > total && total > 0 {
				// NB: an input that grows while it is read (a file still
				// being written) has no total to count against.
				return fmt.Sprintf("%d %s; read %s (the inputs grew from %s)", docs.Load(), noun, byteUnit(n), byteUnit(total))
			}
			if total > 0 {
				return fmt.Sprintf("%d %s; read %s", docs.Load(), noun, fraction(read.Load(), total, time.Since(readStart), byteUnit, "", " to read"))
			}
			return fmt.Sprintf("%d %s", docs.Load(), noun)
		}
		if total > 0 {
			in.Progress = func(n int64) {
				read.Add(n)
				l.maybe(status)
			}
		}
		return func(n int) {
			docs.Add(int64(n))
			l.maybe(status)
		}, func() {}
	case progressBar:
	default:
		return func(int) {}, func() {}
	}
	if total > 0 {
		bar := progressbar.NewOptions64(total, a.barOptions(name, total, true,
			progressbar.OptionShowBytes(true), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())...)
		in.Progress = func(n int64) { bar.Add64(n) }
		return func(int) {}, func() { bar.Finish() }
	}
	bar := progressbar.NewOptions64(-1, a.barOptions(name, -1, false,
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish())...)
	return func(n int) { bar.Add(n) }, func() { bar.Finish() }
}

// loadProgress shows a load's progress (build) as --progress
// says: the input read (progress), then the load's stages after it
// (phaseBar's: resolving ids, writing tables, ingesting), which take
// minutes when millions of stored documents are replaced. add counts
// documents read; done ends whichever is shown.
//
// NB: the reading is "1/4" where the stages after it are shown (a build
// in this process, on Pebble), as they are "2/4" to "4/4": its lines'
// time left, to read, was taken for the build's (a nightly review's B2).
func (a *app) loadProgress(in *inputFlags, paths []string, staged bool) (ctx context.Context, add func(n int), done func()) {
	start := time.Now()
	step := ""
	if staged {
		step = "1/4 reading"
	}
	add, readDone := a.stepProgress("build", step, "documents", in, paths, time.Time{})
	var endRead sync.Once
	var phases func(db.Progress)
	phasesDone := func() {}
	ctx = db.WithProgress(a.ctx, func(p db.Progress) {
		// NB: reports come one at a time (db.WithProgress), so phases is
		// made once, by the first report after the reading.
		if p.Step < 2 {
			return // the input's own progress shows the reading
		}
		if phases == nil {
			endRead.Do(readDone)
			if phases, phasesDone = a.phaseReporter("build", start, &p); phases == nil {
				phases = func(db.Progress) {}
			}
		}
		phases(p)
	})
	return ctx, add, func() {
		endRead.Do(readDone)
		phasesDone()
	}
}

// inputBytes returns the total size of the input files, or -1 when one of
// them is not a regular file (stdin, a directory, a pipe): then the total
// is not known before reading.
func inputBytes(paths []string) int64 {
	if len(paths) == 0 {
		return -1
	}
	var total int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if p == "-" || err != nil || !st.Mode().IsRegular() {
			return -1
		}
		total += st.Size()
	}
	return total
}

func (a *app) buildCmd() *cobra.Command {
	var cf createFlags
	var in inputFlags
	var memory int
	var ttl time.Duration
	var compact, maxDelete string
	var deleteMissing bool
	var minDocs int
	c := &cobra.Command{
		Use: "build --db DIR [FILE|DIR|- ...]",
		Example: `  # Bulk-load a large input (gzip or zstd is told by content)
  lshdb build --db big docs.jsonl

  # Sort within 256 MiB, skipping malformed records
  lshdb build --db big --memory 256 --skip-bad docs.jsonl notes

  # Tonight's corpus, whole: the index then holds its documents and no
  # others (those gone since the last build are deleted)
  lshdb build --db big --delete-missing docs.jsonl`,
		Short: "Bulk-load documents: sorted SSTables ingested in one atomic step",
		Long: `Bulk-load documents (the same inputs as insert) for large inputs: signatures
on every core, records written straight into SSTables, postings and ids
sorted within --memory (spilling to disk), and everything ingested into the
index in one step. The index is created with
the creation flags if it does not exist; stored ids are replaced; an id
repeated in the input: the last one wins.

A build is atomic: it is all there or not at all (on Redis it writes
batches, and a failure leaves the batches before it stored). A malformed record (named
by file and line) fails the whole build and nothing is loaded, unless
--skip-bad skips it; so does Ctrl-C or a kill, after which the index is as it
was (a new index is removed again, unless commands attached to this one
wrote to it meanwhile; after a kill -9 it is left empty, or, killed in its
first milliseconds, a store without an index in it, which the next insert or
build makes into one).

A build that replaces stored documents leaves their old records in the
store until compactions reach them, which a process that ends with the
build never gives them time for: a nightly reload of the same documents
doubled the disk it took. With --compact auto (the default) a build
that replaced at least a quarter as many documents as the index holds
then rewrites the store (as lshdb compact; 300,000 replaced generated
documents: 458 MiB on disk became 237 MiB in 0.16x the build's time).
On Redis, which frees a replaced key's memory at once, it does nothing.
Ctrl-C or SIGTERM during that rewrite stops it, and the command exits
130 or 143 as for any interrupt, but the build is in: stderr says so
("the build is in, but compacting after it was interrupted").

--delete-missing makes the index hold the inputs' documents and no others:
every stored document whose id is in no input is deleted, in the same
atomic step (a nightly build of a corpus whose documents come and go;
without it a build only adds and replaces). A record skipped as empty is
in no input: its stored document is deleted too. A record skipped as bad
(--skip-bad), or a directory's file passed over as binary, whose id was
read, and is in no other record, fails the build, loading nothing, when
that id is stored, as does one whose id could not be read (a line that
is not JSON): a damaged line must not delete yesterday's document (fix
the record, or delete the document with lshdb delete).
--max-delete refuses, loading nothing, a build that would delete more than
a count or a percentage of the index's documents (default 50%, at least
one document; "all" lifts it), and an input that holds no document: an
input cut short, or the wrong one, does not empty the index. Not on
Redis.

--min-docs N refuses, loading nothing, inputs that hold fewer than N
documents to store (records skipped as empty or bad, and earlier copies
of a repeated id, do not count): a night's upstream that wrote nothing,
or blank texts, or a file cut short, fails the job (exit 1) instead of
building an empty or partial index with exit 0. Not on Redis.`,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := cf.options(c)
			if err != nil {
				return err
			}
			if err := checkMemoryFlag(c, memory); err != nil {
				return err
			}
			if err := checkTTL(c, ttl); err != nil {
				return err
			}
			if compact != "auto" && compact != "always" && compact != "never" {
				return usagef("--compact %q: must be auto, always or never", compact)
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if err := in.check(args); err != nil {
				return err
			}
			maxDel, err := parseMaxDelete(maxDelete)
			if err != nil {
				return err
			}
			if c.Flags().Changed("max-delete") && !deleteMissing {
				return usagef("--max-delete without --delete-missing (a build deletes nothing without it)")
			}
			if minDocs < 0 {
				return usagef("--min-docs %d: give a count of records, 0 for no check", minDocs)
			}
			if minDocs > 0 && db.IsRedisURL(a.dbDir) {
				return usagef("--min-docs is not supported on Redis (a build there writes batches, not one atomic step)")
			}
			if deleteMissing && db.IsRedisURL(a.dbDir) {
				return usagef("--delete-missing is not supported on Redis (a build there writes batches, not one atomic step): delete the ids that left the corpus with lshdb delete --from FILE --ignore-missing")
			}
			raiseMemoryLimit(memory << 20)
			d, finish, err := a.openForWrite(o, cf.verifier(c))
			if err != nil {
				return err
			}
			defer finish(true)
			in.MaxRecordBytes = recordLimit(d)
			inp, err := a.openInput(&in, d)
			if err != nil {
				finish(false)
				return err
			}
			defer inp.close()
			var guard *skipGuard
			// NB: without --skip-bad too when a directory is read: a
			// binary file in it is passed over all the same, and a text
			// file that came to read as one (saved as UTF-16) had its
			// stored document deleted, exit 0.
			if deleteMissing && (in.skipBad || slices.ContainsFunc(args, isDir)) {
				guard = &skipGuard{}
				inp.onSkip = guard.skip
			}
			docs := func(yield func(db.Doc, error) bool) {
				n := 0
				for pd, err := range inp.docs(args) {
					if guard != nil && err == nil {
						guard.seen(pd.doc.ID)
					}
					if !yield(pd.doc, err) || err != nil {
						return
					}
					n++
				}
				if guard != nil {
					if err := guard.check(d); err != nil {
						yield(db.Doc{}, err)
						return
					}
				}
				// NB: --min-docs is the load's MinStored: it counted the
				// records read here, and a night of blank texts, all
				// skipped, built an empty index with exit 0 (a nightly
				// operator's review, N1; before that, B4: an empty input).
				if n == 0 && deleteMissing && maxDelete != "all" {
					// NB: the least limit is 1 document, so an empty input
					// (a night's upstream that wrote nothing) emptied an
					// index of one; an error fails the load, nothing done.
					yield(db.Doc{}, errors.New("the inputs held no document, and --delete-missing would delete every stored one (--max-delete all does)"))
				}
			}
			lo := &db.LoadOptions{Memory: memory << 20, SkipEmpty: true, TTL: ttl, DeleteAbsent: deleteMissing, MinStored: minDocs}
			if deleteMissing {
				// NB: the percentage is of the documents stored when the
				// load takes the writer lock, counted there: counted
				// here, a write between the count and the load changed
				// what the limit was of.
				lo.MaxDeleted, lo.MaxDeletedPercent = maxDel.count, maxDel.percent
			}
			if h, ok := d.(*handover); ok {
				// NB: the wait for an owner that reads only comes before
				// the load's progress and clock: it showed as "0%
				// read", and counted in the build's time.
				if err := h.awaitWriter(); err != nil {
					finish(false)
					return err
				}
			}
			_, inProcess := d.(*db.DB)
			ctx, add, done := a.loadProgress(&in, args, inProcess && !db.IsRedisURL(a.dbDir))
			last := 0
			lo.Progress = func(n int) {
				add(n - last)
				last = n
			}
			// NB: attached, the load runs in the owner's process: the
			// input is read here and streamed to it.
			start := time.Now()
			res, err := d.Load(ctx, docs, lo)
			done()
			if err != nil {
				finish(false)
				what := "nothing loaded (a build is atomic)"
				if db.IsRedisURL(a.dbDir) {
					// NB: not atomic there: the batches before the
					// failure stay, and none had been written.
					what = "no document stored before the failure (on Redis a build writes batches of documents: it is not atomic, and the batch that failed may be stored in part: lshdb check --repair finishes or removes it)"
				}
				switch {
				case res.Stored > 0 && errors.Is(err, db.ErrNotExist):
					// NB: as insert's (below): Redis lost the index.
					what = fmt.Sprintf("%s stored before the failure, gone with the index since (Redis lost it: build again once it is restored or made again)", counted(res.Stored, "document", "documents"))
				case res.Stored > 0:
					// NB: on Redis a load writes batches (db.Load). The
					// one that failed may be stored in part (a review: 873
					// documents of it were, uncounted here).
					what = fmt.Sprintf("%s stored before the failure, and maybe part of the batch that failed (on Redis a build writes batches of documents: it is not atomic; lshdb check --repair finishes or removes what the failed batch left)", counted(res.Stored, "document", "documents"))
				}
				var re *docio.RecordError
				switch {
				case errors.Is(err, context.Canceled):
					return interrupted{what + "; re-run it"}
				case errors.As(err, &re):
					return fmt.Errorf("%s; stopped at %w (--skip-bad skips malformed records, --rejects FILE keeps them)", what, re)
				case errors.Is(err, db.ErrTooManyDeletes):
					return fmt.Errorf("%s: %w (--max-delete %s; check the inputs, or raise it: a count, a percentage, or all)", what, err, maxDelete)
				case errors.Is(err, db.ErrTooFewDocuments):
					return fmt.Errorf("%s: %w (--min-docs %d; check the inputs)", what, err, minDocs)
				}
				var ce *client.Error
				if _, local := d.(*db.DB); !local && !errors.As(err, &ce) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)) {
					// NB: the owner went away under the load: it may have
					// ingested it first ("nothing loaded" was a guess, with
					// the request's URL). net.ErrClosed: the owner killed as
					// the request was written.
					return fmt.Errorf("the process that owns the index went away during the build, which it may or may not have stored (lshdb info tells; a build can be run again)%w", silently{err})
				}
				return fmt.Errorf("%s: %w", what, err)
			}
			if err := inp.close(); err != nil {
				return err
			}
			sum := insertSummary{Inserted: res.Stored, Replaced: res.Replaced, Repeated: res.Repeated,
				Empty: len(res.SkippedEmpty), EmptyIDs: res.SkippedEmpty[:min(len(res.SkippedEmpty), emptyIDsShown)], BadSkipped: inp.skipped, PassedOver: inp.passed}
			if deleteMissing {
				sum.Deleted = &res.Deleted
			}
			if err := a.compactAfterBuild(d, compact, res, &sum); err != nil {
				return err
			}
			err = a.reportInsert(sum)
			if err == nil {
				a.noteExpired(ttl, start, res.Stored, "the build starts")
			}
			if err != nil && !errors.Is(err, syscall.EPIPE) { // NB: a closed pipe (| head) ends the command quietly
				// NB: it said only "write /dev/stdout: no space left on
				// device", and a job retried a build that was in (a
				// nightly operator's review, N2).
				err = fmt.Errorf("the build is in (%s stored), but its summary could not be written: %w", counted(res.Stored, "document", "documents"), err)
			}
			return err
		},
	}
	cf.add(c)
	in.add(c)
	c.Flags().StringVar(&compact, "compact", "auto", "rewrite the store after the build to free the replaced documents' space: auto (when it replaced at least a quarter as many documents as the index holds), always or never")
	c.Flags().IntVar(&memory, "memory", db.DefaultLoadMemory>>20, "memory budget for sorted data, in MiB (the process needs about 3x this; at most half of the machine's memory)")
	c.Flags().DurationVar(&ttl, "ttl", 0, "every document of the build expires this long after the build starts (1h, 30m, 90s): never returned after it, then swept")
	c.Flags().BoolVar(&deleteMissing, "delete-missing", false, "also delete every stored document whose id is in no input, in the same atomic step: the index holds the inputs' documents only")
	c.Flags().IntVar(&minDocs, "min-docs", 0, "refuse, loading nothing, inputs that hold fewer than this many documents to store (empty, bad and repeated records not counted: an empty, blank or cut-short upstream file); 0: no check")
	c.Flags().StringVar(&maxDelete, "max-delete", "50%", "with --delete-missing: refuse, loading nothing, to delete more than this many documents (a count, a percentage of the index's documents, or all)")
	return c
}

// maxDelete is build --max-delete: a count or a percentage, 0 for none.
type maxDelete struct {
	count   int
	percent float64
}

// parseMaxDelete reads --max-delete: N, P% or all.
func parseMaxDelete(s string) (maxDelete, error) {
	bad := usagef("--max-delete %q: a count (1000), a percentage of the index's documents (10%%), or all", s)
	zero := usagef("--max-delete %s: a build with --delete-missing deletes what is in no input; leave --delete-missing out to delete nothing", s)
	switch {
	case s == "all":
		return maxDelete{}, nil
	case strings.HasSuffix(s, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err == nil && p == 0 {
			return maxDelete{}, zero
		}
		if err != nil || !(p > 0 && p <= 100) {
			return maxDelete{}, bad
		}
		if p == 100 {
			return maxDelete{}, nil
		}
		return maxDelete{percent: p}, nil
	}
	n, err := strconv.Atoi(s)
	if err == nil && n == 0 {
		return maxDelete{}, zero
	}
	if err != nil || n < 1 {
		return maxDelete{}, bad
	}
	return maxDelete{count: n}, nil
}

// inserter writes a stream of documents in batches and keeps insert's
// counts the way build counts: each id once, whatever batch it is in.
type inserter struct {
	d index
	// ctx ends a batch waiting to be written (an interrupt)
	commitCtx
	ttl     time.Duration // --ttl: the documents expire this long after their batch is written
	sum     insertSummary
	ids     map[string]uint8 // idWritten
	copies  int              // documents of the batches written, less the empty ones skipped: the repeats are those past each id's first
	batch   []db.Doc
	bytes   int    // of the batch's ids, texts and metadata
	last    string // position of the batch's last document
	through string // position of the last committed document
	// doubt is the position of the last document of a batch sent to an
	// owner whose answer was lost: it may have been written.
	doubt string
	add   func(int)
	// inflight is the batch being written while the next one is read and
	// prepared (in process: writeAhead), nil when none.
	inflight *inflightBatch
}

// inflightBatch is a batch written on its own goroutine; done is closed
// when res and err are set.
type inflightBatch struct {
	batch []db.Doc
	last  string
	done  chan struct{}
	res   db.BatchResult
	err   error
}

// insertRetry is how long insert writes a batch again while its write
// fails in a way a retry may get past (db.Transient), as Load does.
var insertRetry = time.Minute

// putRetrying writes pb, and again while the write fails in a way a retry
// may get past (db.Transient: a Redis master failing over, a replica slow
// to acknowledge), for up to insertRetry: an insert stopped there, exit
// 1, where a build retried through it (a Redis review, RD2: a replica's
// fork for its AOF rewrite stopped a cron insert). Each try after the
// first sends the first one's write again (PutPrepared of the same
// batch): what a try that stopped part way wrote is the batch's, and what
// it replaced is counted once.
func putRetrying(ctx context.Context, p preparer, pb *db.PreparedBatch) (res db.BatchResult, err error) {
	err = retries.Do(ctx, retries.Policy{
		First: 50 * time.Millisecond, Max: 2 * time.Second, Limit: insertRetry,
		Again: db.Transient,
		Waiting: func(err error, wait time.Duration) {
			slog.Warn("lshdb: a Redis write failed; writing the batch again", "err", err, "after", wait)
		},
	}, func() (err error) {
		res, err = p.PutPrepared(ctx, pb)
		return err
	})
	var gaveUp *retries.GaveUp
	var stopped *retries.Interrupted
	switch {
	case errors.As(err, &gaveUp):
		err = fmt.Errorf("%w (the batch was written again for %v)", gaveUp.Err, gaveUp.After.Round(time.Second))
	case errors.As(err, &stopped):
		// NB: the interrupt, as every other write of the command says
		// it (it said the backend's error).
		err = fmt.Errorf("%w (while a failed write was retried: %v)", stopped.Cause, stopped.Err)
	}
	return res, err
}

// preparer is an index that prepares a batch apart from writing it
// (db.DB; not a client: its server prepares).
type preparer interface {
	PrepareBatch(docs []db.Doc, wo *db.WriteOptions) (*db.PreparedBatch, error)
	PutPrepared(ctx context.Context, pb *db.PreparedBatch) (db.BatchResult, error)
}

// idWritten marks an id (inserter.ids) that a batch of the run wrote.
const idWritten uint8 = 1

func (w *inserter) put(pd posDoc) error {
	// NB: a batch is also bounded by its bytes: attached, it is one
	// request, and 1,000 documents of 100 KB were over the server's
	// bound on a body (httpapi.DefaultMaxBodyBytes, 65 MiB).
	size := len(pd.doc.ID) + len(pd.doc.Text) + len(pd.doc.Meta)
	if len(w.batch) > 0 && w.bytes+size > batchBytes(w.d) {
		if err := w.send(); err != nil {
			return err
		}
	}
	w.batch = append(w.batch, pd.doc)
	w.bytes += size
	w.last = pd.pos
	if len(w.batch) == cap(w.batch) {
		return w.send()
	}
	return nil
}

// maxBatchBytes bounds the bytes of the documents of one of insert's
// batches: half the default bound on a request body, which the JSON's
// escapes and fields fill out.
const maxBatchBytes = httpapi.DefaultMaxBodyBytes / 2

// batchBytes is the bound on the bytes of one of insert's batches into d:
// maxBatchBytes, or half the bound on a request body of d's server when
// it is lower (lshdb serve --max-body 8MiB: batches of 1,000 documents
// of 10 KB were refused, and the insert failed).
func batchBytes(d index) int {
	if b, ok := d.(interface{ MaxBodyBytes() int64 }); ok {
		if n := b.MaxBodyBytes(); n > 0 {
			return int(min(n/2, maxBatchBytes))
		}
	}
	return maxBatchBytes
}

// batchDocs is the number of documents of one of insert's batches into
// d: 1,000, or the server's bound on a batch when it is lower (lshdb
// serve --max-batch).
func batchDocs(d index) int {
	if b, ok := d.(interface{ MaxBatch() int }); ok {
		if n := b.MaxBatch(); n > 0 {
			return min(n, 1000)
		}
	}
	return 1000
}

// stallFlushAfter is how long insert, reading standard input, holds a
// document read but not committed before it commits the batch so far: a
// stream that pauses or trickles (tail -f, a slow producer) has what it
// sent stored and visible, rather than held until a batch of 1,000
// fills. NB: counted from the batch's first document, not the last: a
// line every 50 ms never paused for 200 ms, and waited for the 1,000th.
const stallFlushAfter = 200 * time.Millisecond

// batcher is what putAll and putStream write to: insert's batches or
// dedup's.
type batcher interface {
	put(pd posDoc) error // adds a document, committing the batch when it is full
	flush() error        // commits the batch
	pending() int        // documents in the batch
	keepOn(parent context.Context)
}

// commitCtx is a batcher's context for its commits: the command's, and
// after an interrupt one that does not end (keepOn), for the batch of
// what was read.
type commitCtx struct{ ctx context.Context }

func (c *commitCtx) keepOn(parent context.Context) { c.ctx = context.WithoutCancel(parent) }

// putAll puts the documents of docs into w (stream: as putStream does,
// committing what an idle input has given), then commits the last batch,
// and returns the read or put error that stopped it. NB: the documents
// read before a bad record, a read error or an interrupt are good: they
// are committed (after an interrupt, whatever a second one says: the
// default action of a second signal ends the process).
func (a *app) putAll(w batcher, docs iter.Seq2[posDoc, error], stream bool) error {
	var readErr, putErr error
	if stream {
		readErr, putErr = putStream(a.ctx, w, docs)
	} else {
		for pd, err := range docs {
			if err != nil {
				readErr = err
				break
			}
			if putErr = w.put(pd); putErr != nil {
				break
			}
		}
	}
	if putErr == nil {
		if a.ctx.Err() != nil {
			w.keepOn(a.ctx)
		}
		putErr = w.flush()
	}
	return cmp.Or(putErr, readErr)
}

func (w *inserter) pending() int { return len(w.batch) }

// putStream puts the documents of docs as w.put does until they end or
// ctx does (an interrupt), reading them on another goroutine so that the batch read so far is committed when the
// input pauses for stallFlushAfter. It returns the read error or the put
// error that stopped it. NB: when a put fails, the reader may be blocked
// reading a pipe: it is told to stop and waited for a moment, not for
// ever (the command ends with the error).
func putStream(ctx context.Context, w batcher, docs iter.Seq2[posDoc, error]) (readErr, putErr error) {
	type item struct {
		pd  posDoc
		err error
	}
	ch := make(chan item, 64)
	stop := make(chan struct{})
	go func() {
		defer close(ch)
		for pd, err := range docs {
			select {
			case ch <- item{pd, err}:
			case <-stop:
				return
			}
		}
	}()
	// quit tells the reader to stop and waits for it a moment.
	quit := func(err error) (error, error) {
		close(stop)
		select {
		case <-drained(ch):
		case <-time.After(time.Second):
		}
		return nil, err
	}
	timer := time.NewTimer(stallFlushAfter)
	timer.Stop()
	defer timer.Stop()
	armed := false
	for {
		var tick <-chan time.Time
		if armed {
			tick = timer.C
		}
		select {
		case it, ok := <-ch:
			switch {
			case !ok:
				return nil, nil
			case it.err != nil:
				return it.err, nil // NB: the reader ends after an error
			}
			if err := w.put(it.pd); err != nil {
				return quit(err)
			}
			switch {
			case w.pending() == 0 && armed: // committed: a full batch
				timer.Stop()
				armed = false
			case w.pending() > 0 && !armed: // the batch's first document
				timer.Reset(stallFlushAfter)
				armed = true
			}
		case <-tick:
			armed = false
			if err := w.flush(); err != nil {
				return quit(err)
			}
		case <-ctx.Done():
			// NB: an interrupt while the input is idle (a pipe whose
			// writer waits, a fifo): the reader may wait in a read for
			// ever, so the command goes on without it, with what it has
			// read (the caller commits the batch). It waited for the
			// input's end, and exited 0.
		drain:
			for {
				select {
				case it, ok := <-ch:
					if !ok || it.err != nil {
						break drain
					}
					if err := w.put(it.pd); err != nil {
						close(stop)
						return nil, err
					}
				default:
					break drain
				}
			}
			close(stop)
			return ctx.Err(), nil
		}
	}
}

// drained empties ch in the background and closes the returned channel
// when ch is closed.
func drained[T any](ch <-chan T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	return done
}

// flush commits the batch, and waits for the one written before it.
func (w *inserter) flush() error {
	return cmp.Or(w.send(), w.wait())
}

// send commits the batch. In process, it is prepared here (on every core)
// while the batch before it is written, then written on a goroutine of
// its own while the next one is read and prepared: the writes stay in
// order, one at a time, and a batch is written only once every batch
// before it was (an error of one is returned by the next send, or by
// wait, and nothing after it is written). NB: 100,000 generated documents
// into a non-empty index took a median 5.6 s against 6.5 s written one
// batch at a time (five alternated runs each, 2 cores; 60,000 short
// debian-descriptions texts showed no difference beyond the machine's
// noise). Attached, the server prepares: the batch is written now.
func (w *inserter) send() error {
	if len(w.batch) == 0 {
		return nil
	}
	wo := &db.WriteOptions{SkipEmpty: true, TTL: w.ttl}
	p, ok := w.d.(preparer)
	if !ok {
		sent := w.ctx.Err() == nil
		res, err := w.d.PutBatchContext(w.ctx, w.batch, wo)
		if err != nil {
			if answerLost(w.d, sent, err) {
				w.doubt = w.last
			}
			return err
		}
		w.account(w.batch, w.last, res)
		w.batch, w.bytes = w.batch[:0], 0
		return nil
	}
	pb, err := p.PrepareBatch(w.batch, wo)
	if err = cmp.Or(w.wait(), err); err != nil {
		return err
	}
	f := &inflightBatch{batch: w.batch, last: w.last, done: make(chan struct{})}
	ctx := w.ctx
	go func() {
		defer close(f.done)
		f.res, f.err = putRetrying(ctx, p, pb)
	}()
	w.inflight = f
	w.batch, w.bytes = make([]db.Doc, 0, cap(w.batch)), 0
	return nil
}

// wait waits for the batch being written, if any, and counts it.
func (w *inserter) wait() error {
	f := w.inflight
	if f == nil {
		return nil
	}
	<-f.done
	w.inflight = nil
	if f.err != nil {
		return f.err
	}
	w.account(f.batch, f.last, f.res)
	return nil
}

// account counts a batch written, whose last document is at position
// last. NB: PutBatch counts a document that replaces one an earlier batch
// of this insert wrote as replaced; those are taken back out, so that
// "replaced" means stored before the command.
func (w *inserter) account(batch []db.Doc, last string, res db.BatchResult) {
	// NB: an id is stored by the batch when one of its copies is not
	// empty (SkippedEmpty lists each empty copy): an id with an empty
	// copy and a stored one was not counted, and insert said 1 document
	// where it stored 2 (a nightly review's NQ-1).
	empty := make(map[string]int, len(res.SkippedEmpty))
	for _, id := range res.SkippedEmpty {
		empty[id]++
	}
	copies := make(map[string]int, len(batch))
	if len(empty) > 0 {
		for _, doc := range batch {
			copies[doc.ID]++
		}
	}
	rewrites := 0
	counted := make(map[string]bool, len(batch))
	for _, doc := range batch {
		if counted[doc.ID] || empty[doc.ID] > 0 && copies[doc.ID] <= empty[doc.ID] {
			continue
		}
		counted[doc.ID] = true
		if w.ids[doc.ID]&idWritten != 0 {
			rewrites++
		} else {
			w.ids[doc.ID] |= idWritten
			w.sum.Inserted++
		}
	}
	w.sum.Replaced += res.Replaced - rewrites
	w.sum.Empty += len(res.SkippedEmpty)
	// NB: an empty copy is no repeat, as build counts (Load): insert
	// counted every copy read after the first (NQ-1).
	w.copies += len(batch) - len(res.SkippedEmpty)
	w.sum.Repeated = w.copies - w.sum.Inserted
	if n := emptyIDsShown - len(w.sum.EmptyIDs); n > 0 {
		w.sum.EmptyIDs = append(w.sum.EmptyIDs, res.SkippedEmpty[:min(n, len(res.SkippedEmpty))]...)
	}
	w.add(len(batch))
	w.through = last
}

func (a *app) insertCmd(name string) *cobra.Command {
	var cf createFlags
	var in inputFlags
	var ttl time.Duration
	short := "Insert or replace documents from files, directories or stdin"
	c := &cobra.Command{
		Use: name + " --db DIR [FILE|DIR|- ...]",
		Example: `  # Create an index (default parameters) and fill it from a JSON Lines file
  lshdb insert --db idx docs.jsonl

  # A CSV file with columns url and body, into a new index for Jaccard >= 0.7
  lshdb insert --db idx2 --threshold 0.7 --format csv --id-col url --text-col body pages.csv

  # A directory of text files (ids: their paths); binary ones, pipes and links to nothing are named and skipped
  lshdb insert --db idx notes

  # Skip malformed records, keeping them in rejects.jsonl for a re-run
  lshdb insert --db idx --skip-bad --rejects rejects.jsonl docs.jsonl`,
		Short: short,
		Long: short + `.

Inputs: JSON Lines with id and text fields, CSV or TSV with a header line
(--id-col, --text-col), Parquet, a text file (--format text, or .txt: one
document, id = its name), a directory of text files (id = relative path;
hidden files skipped, links to files followed; one of record files only is refused: --format reads their records), or - (or nothing) for
stdin; gzip or zstd
compressed or not, told by content. The index is created with the
creation flags if it does not exist.

A document whose text has no shingles (empty or white space) is skipped and
counted. An id repeated in the input: the last one wins, counted. A
malformed record (a bad id or one too large included) stops the command
with an error naming its file and line; every document before it is
committed ("committed N documents through FILE:LINE"). --skip-bad skips
it instead, naming it on stderr, and --rejects FILE keeps it. Ctrl-C stops
after committing what was read and says where to continue.`,
		RunE: func(c *cobra.Command, args []string) error {
			o, err := cf.options(c)
			if err != nil {
				return err
			}
			if err := checkTTL(c, ttl); err != nil {
				return err
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if err := in.check(args); err != nil {
				return err
			}
			d, finish, err := a.openForWrite(o, cf.verifier(c))
			if err != nil {
				return err
			}
			defer finish(true)
			in.MaxRecordBytes = recordLimit(d)
			inp, err := a.openInput(&in, d)
			if err != nil {
				finish(false)
				return err
			}
			defer inp.close()
			add, done := a.progress(name, "documents", &in, args)
			// NB: a batch under way when an interrupt comes is given a
			// moment to be answered (its answer says it was written, as
			// in process), then cut: one waiting behind another writer
			// (a load, through an owner) does not hold the command.
			bctx, stopGrace := afterGrace(a.ctx, interruptGrace)
			defer stopGrace()
			w := &inserter{d: d, commitCtx: commitCtx{bctx}, ttl: ttl, ids: make(map[string]uint8), batch: make([]db.Doc, 0, batchDocs(d)), add: add}
			start := time.Now()
			err = a.putAll(w, inp.docs(args), len(args) == 0 || slices.Contains(args, "-"))
			done()
			w.sum.BadSkipped, w.sum.PassedOver = inp.skipped, inp.passed
			if err == nil {
				err = inp.close()
			}
			if err != nil {
				finish(w.sum.Inserted > 0)
				maybe := ""
				if w.doubt != "" {
					maybe = fmt.Sprintf(", and perhaps the next batch, through %s (the answer of the process that owns the index was lost: it may have written them)", w.doubt)
				}
				if w.sum.Inserted > 0 && db.IsRedisURL(a.dbDir) && errors.Is(err, db.ErrNotExist) {
					// NB: the index they went into is gone (Redis lost
					// it): counted as committed, they read as kept, and a
					// resume plan started after them (a review).
					maybe += " (gone with the index since: write them again once it is restored or made again)"
				}
				return stoppedErr("committed "+counted(w.sum.Inserted, "document", "documents"), w.through, maybe, err)
			}
			if err := a.reportInsert(w.sum); err != nil {
				return err
			}
			a.noteExpired(ttl, start, w.sum.Inserted, "its batch is written")
			return nil
		},
	}
	cf.add(c)
	in.add(c)
	c.Flags().DurationVar(&ttl, "ttl", 0, "the documents expire this long after they are written (1h, 30m, 90s): never returned after it, then swept")
	return c
}

// interruptGrace is how long a write under way when an interrupt comes
// may take to be answered before it is cut.
const interruptGrace = 2 * time.Second

// afterGrace returns a context that ends grace after parent does (with
// parent's cause), and the function that releases it.
func afterGrace(parent context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	var timer *time.Timer
	var mu sync.Mutex
	stop := context.AfterFunc(parent, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(grace, func() { cancel(context.Cause(parent)) })
	})
	return ctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}

// stoppedErr is the error of insert or dedup stopped by err after
// committing what done says, through the input position through: it says
// where to go on.
func stoppedErr(done, through, maybe string, err error) error {
	if through != "" {
		done += " through " + through
	}
	// NB: what may have been written after through: the advice below
	// (the records after through) puts it again, which is harmless (a
	// document put again replaces itself).
	done += maybe
	var re *docio.RecordError
	switch {
	case errors.Is(err, context.Canceled):
		if through == "" {
			return interrupted{done + "; re-run it"}
		}
		// NB: there is no resume flag: the rest is the input after that
		// record (tail -n +N for JSON Lines); the whole input again also
		// does, each document put again replacing itself.
		if maybe != "" {
			return interrupted{done + "; re-run with the records after " + through}
		}
		return interrupted{done + "; re-run with the records after it"}
	case errors.As(err, &re):
		// NB: the flags that pass it over, as build says them (a
		// newcomer's review, N5: insert stopped at a dangling link in a
		// directory without naming --skip-bad).
		return fmt.Errorf("%s; stopped at %w (--skip-bad skips malformed records, --rejects FILE keeps them)", done, re)
	case errors.Is(err, httpapi.ErrBodyTooLarge):
		// NB: an attached command's batch (or a document in it) over the
		// serving owner's limit: said without naming the limit.
		return fmt.Errorf("%s; stopped: %w (the serving owner's --max-body; a document larger than it cannot be sent)", done, err)
	case errors.Is(err, db.ErrBackend), errors.Is(err, db.ErrAccessDenied):
		// NB: "committed 0 documents" of a Redis batch whose replicas did
		// not answer in time, though it was stored: a failed Redis write
		// may be stored, whole or in part.
		// NB: the insert again stores every document, but not what the
		// part written left (records no id names, postings of none):
		// only a repair removes that (a Redis review, RD3-2, where the
		// advice was "insert it again, or run check --repair").
		return fmt.Errorf("%s; stopped: %w (the batch it stopped in may be stored, whole or in part: insert it again, which stores every document, then lshdb check; what the part written left, check --repair removes, with no writer beside it)", done, err)
	}
	return fmt.Errorf("%s; stopped: %w", done, err)
}

// emptyIDsShown is how many of the ids of the empty texts skipped an
// insert or a build names.
const emptyIDsShown = 10

func (a *app) reportInsert(s insertSummary) error {
	if s.Inserted+s.Repeated+s.Empty+s.BadSkipped+s.PassedOver == 0 {
		// NB: an empty input is no error (a night with nothing new), but a
		// job whose upstream wrote an empty file should hear of it.
		a.notef("the inputs held no record: nothing was inserted")
	}
	passed := ""
	if s.PassedOver > 0 {
		passed = ", " + counted(s.PassedOver, "file", "files") + " passed over (named above)"
	}
	text := fmt.Sprintf("inserted %s (%s)%s; %s in the input (last one wins), %s skipped, %s skipped%s\n",
		counted(s.Inserted, "document", "documents"), counted(s.Replaced, "replaced a stored one", "replaced stored ones"), deletedNote(s.Deleted), counted(s.Repeated, "repeated id", "repeated ids"),
		counted(s.Empty, "empty text", "empty texts"), counted(s.BadSkipped, "bad record", "bad records"), passed)
	if a.json() {
		err := a.emitJSON(s)
		a.saySummaryHere(err, text)
		return err
	}
	if len(s.EmptyIDs) > 0 {
		more := ""
		if s.Empty > len(s.EmptyIDs) {
			more = fmt.Sprintf(" and %d more", s.Empty-len(s.EmptyIDs))
		}
		a.notef(fmt.Sprintf("skipped as empty (no shingles: no text, or white space or stop words alone): %s%s", strings.Join(escAll(s.EmptyIDs), ", "), more))
	}
	return a.summaryf("%s", text)
}

// deletedNote is the insert summary's word of the stored documents
// --delete-missing deleted ("" without it).
func deletedNote(n *int) string {
	if n == nil {
		return ""
	}
	return fmt.Sprintf("; deleted %s in no input", counted(*n, "stored document", "stored documents"))
}

// summaryf writes a write or maintenance command's summary on stdout,
// unless --quiet: a cron job whose run succeeds prints nothing (an
// operator's review, DR6: upgrade's went on printing). JSON output is
// written whatever --quiet says: a caller asked for it.
//
// A summary that a closed standard output does not take (| true, a log
// pipe gone) is said on stderr: the work is done, and the exit status
// (141, which says nothing more of a closed pipe) alone did not tell a
// committed build from one stopped part way (an operator's review,
// O2-5). Another write error is the caller's to say.
func (a *app) summaryf(format string, args ...any) error {
	if a.quiet {
		return nil
	}
	_, err := fmt.Fprintf(a.stdout, format, args...)
	a.saySummaryHere(err, fmt.Sprintf(format, args...))
	return err
}

// saySummaryHere says summary on stderr when err, the failed write of a
// command's summary (or of what stands for it: JSON, a list of ids), is
// a closed pipe's (see summaryf).
func (a *app) saySummaryHere(err error, summary string) {
	if errors.Is(err, syscall.EPIPE) && !a.quiet {
		fmt.Fprintf(a.stderr, "lshdb: %s (said here: standard output did not take it: %v)\n", strings.TrimSuffix(summary, "\n"), pathCause(err))
	}
}

// deduper checks and stores dedup's documents in batches, and writes a
// row for each, in the input's order. NB: a batch is one PutIfNewBatch,
// synced once: a document at a time was one sync each, the bulk of a
// nightly dedup's time on a disk whose sync takes milliseconds (and one
// request each when attached).
type deduper struct {
	a         *app
	d         index
	commitCtx // as inserter's
	ttl       time.Duration
	// the batch: documents, their input positions, their bytes
	batch []db.Doc
	pos   []string
	bytes int
	tw    *tableWriter
	// stream: the input is stdin, whose rows go out with each batch
	stream bool
	// estimates: the index is of storage none, whose matches are the
	// signatures' estimates
	estimates bool
	// headed: the table's header is written (with the first row, not
	// before an error; none in JSON)
	headed bool
	rows   int
	// what was done: documents stored (of which replacing one with their
	// id stored before the run), stored again under an id this run stored
	// (repeated), duplicates found, empty texts skipped
	stored, replaced, repeated, dups, empty int
	ids                                     map[string]bool // stored by this run
	// dupsOf holds, by the id of the stored document they matched, the
	// documents of this run skipped as its near-duplicates; orphans
	// counts those whose matched id a later record of the run stored
	// again (another text), and orphan names the first: their texts are
	// in no document of the index (a nightly output review's O2).
	dupsOf  map[string]skippedDups
	orphans int
	orphan  [2]string // a skipped id, and the id it matched
	through string    // position of the last document decided: stored, a duplicate, or empty
	doubt   string    // of the last one of a batch whose answer was lost (see inserter)
	add     func(int)
}

// dedupBatch is the most documents of one of dedup's batches. NB: the
// index's writer lock is held while a batch is checked (each document
// against the others stored before it), which other writers wait for.
const dedupBatch = 256

func (w *deduper) pending() int { return len(w.batch) }

// skippedDups are the documents of a dedup run skipped as near-duplicates
// of one stored id: how many, and the first (the example the orphans'
// warning names).
type skippedDups struct {
	n     int
	first string
}

// orphaned records that id was stored again in this run: unless its
// content is unchanged (the same shingle set), the documents skipped
// earlier as its near-duplicates are now in no document of the index.
func (w *deduper) orphaned(id string, unchanged bool) {
	dups, ok := w.dupsOf[id]
	if !ok || unchanged {
		return // NB: still the near-duplicates of the id's document (D-2)
	}
	if w.orphans == 0 {
		w.orphan = [2]string{dups.first, id}
	}
	w.orphans += dups.n
	delete(w.dupsOf, id)
}

// orphansNote warns of the orphans, on stderr.
func (w *deduper) orphansNote() {
	if w.orphans == 0 {
		return
	}
	more := ""
	if w.orphans > 1 {
		more = fmt.Sprintf(" and %d more", w.orphans-1)
	}
	fmt.Fprintf(w.a.stderr, "lshdb: warning: %s skipped as near-duplicates (%s, of %s%s) of a document whose id a later record of the input stored again, with another text: their texts are in no document of the index now; give their records to dedup again to check them against the index as it is\n",
		counted(w.orphans, "document", "documents"), docio.QuoteID(w.orphan[0]), docio.QuoteID(w.orphan[1]), more)
}

// replacedNote says how many of the documents stored replaced one stored
// before the run under their id (a re-run of an input: each is checked
// against the others, and stored again unless another is a
// near-duplicate).
func (w *deduper) replacedNote() string {
	if w.replaced == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them replacing a stored document with the same id)", w.replaced)
}

func (w *deduper) put(pd posDoc) error {
	size := len(pd.doc.ID) + len(pd.doc.Text) + len(pd.doc.Meta)
	if len(w.batch) > 0 && w.bytes+size > batchBytes(w.d) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	w.batch = append(w.batch, pd.doc)
	w.pos = append(w.pos, pd.pos)
	w.bytes += size
	if len(w.batch) == dedupBatch {
		return w.flush()
	}
	return nil
}

// flush checks and stores the batch, and writes its rows. A document the
// index refuses (other than an empty one, skipped and named) stops the
// command once the batch's rows are written: the documents after it in
// the batch were checked and perhaps stored, as the rows say.
func (w *deduper) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	sent := w.ctx.Err() == nil
	res, err := w.d.PutIfNewBatch(w.ctx, w.batch, &db.WriteOptions{TTL: w.ttl})
	if answerLost(w.d, sent, err) {
		w.doubt = w.pos[len(w.pos)-1]
	}
	// NB: counted first, then written: an output that fails at a row
	// does not leave the batch's later documents stored uncounted.
	var docErr error
	for i, r := range res {
		switch {
		case errors.Is(r.Err, db.ErrEmptyDocument):
			w.empty++
			w.through = w.pos[i]
			fmt.Fprintf(w.a.stderr, "lshdb: skipped %s (id %s): %v\n", escControls(w.pos[i]), docio.QuoteID(w.batch[i].ID), dbReason{r.Err})
		case r.Err != nil:
			docErr = cmp.Or(docErr, fmt.Errorf("%s: %w", w.pos[i], r.Err))
		case r.Match == nil && w.ids[w.batch[i].ID]:
			// NB: it replaced the one of its id stored earlier in this
			// run: the last one stored wins, as insert's last one.
			w.repeated++
			w.orphaned(w.batch[i].ID, r.Unchanged)
			w.through = w.pos[i]
		case r.Match == nil:
			w.ids[w.batch[i].ID] = true
			w.stored++
			if r.Replaced {
				w.replaced++
				w.orphaned(w.batch[i].ID, r.Unchanged)
			}
			w.through = w.pos[i]
		default:
			// NB: decided too: the stop's "through" named the last one
			// stored, before the duplicates its rows had answered.
			w.dups++
			dups := w.dupsOf[r.Match.ID]
			if dups.n == 0 {
				dups.first = w.batch[i].ID
			}
			dups.n++
			w.dupsOf[r.Match.ID] = dups
			w.through = w.pos[i]
		}
	}
	w.add(len(res))
	for i, r := range res {
		if r.Err != nil {
			continue
		}
		if err := w.row(w.batch[i].ID, r.Match); err != nil {
			return err
		}
	}
	if w.stream && !w.a.json() && len(res) > 0 {
		// NB: a stream (stdin) is answered batch by batch, as its
		// documents come, not once 1,000 rows are aligned.
		if err := w.tw.Flush(); err != nil {
			return err
		}
	}
	w.batch, w.pos, w.bytes = w.batch[:0], w.pos[:0], 0
	return cmp.Or(err, docErr)
}

// row writes the row of document id: its duplicate, or none (stored).
func (w *deduper) row(id string, m *db.Match) error {
	w.header()
	w.rows++
	var err error
	switch {
	case w.a.json():
		// NB: a struct, not a map: the id first, as every command's lines.
		// NB: a none index's match is an estimate, said as query says
		// it (jaccard null, estimate): its Jaccard, never computed, was
		// written as 0.
		out := struct {
			ID          string      `json:"id"`
			DuplicateOf *string     `json:"duplicate_of"`
			Jaccard     *similarity `json:"jaccard"`
			Estimate    *similarity `json:"estimate,omitempty"`
		}{ID: id}
		if m != nil {
			out.DuplicateOf = &m.ID
			if w.estimates {
				out.Estimate = similarityOf(&m.Estimate)
			} else {
				out.Jaccard = similarityOf(&m.Jaccard)
			}
		}
		err = w.a.emitJSON(out)
	case m != nil && w.estimates:
		fmt.Fprintf(w.tw, "%s\t%s\t%.4f\n", tableID(id), tableID(m.ID), m.Estimate)
	case m != nil:
		fmt.Fprintf(w.tw, "%s\t%s\t%.4f\n", tableID(id), tableID(m.ID), m.Jaccard)
	default:
		fmt.Fprintf(w.tw, "%s\t-\t-\n", tableID(id))
	}
	// NB: the table is aligned and written streamRows rows at a time, as
	// pairs does: bounded memory, and a closed output stops the work.
	if err == nil && !w.a.json() && w.rows%streamRows == 0 {
		err = w.tw.Flush()
	}
	return err
}

func (w *deduper) header() {
	if !w.headed {
		if w.estimates {
			fmt.Fprintln(w.tw, "ID\tDUPLICATE_OF\tESTIMATE")
		} else {
			fmt.Fprintln(w.tw, "ID\tDUPLICATE_OF\tJACCARD")
		}
		w.headed = true
	}
}

func (a *app) dedupCmd() *cobra.Command {
	var in inputFlags
	var ttl time.Duration
	c := &cobra.Command{
		Use:   "dedup --db DIR [FILE|DIR|- ...]",
		Short: "Insert each input document unless a stored one is a near-duplicate",
		Long: `Insert each input document unless the index already holds a near-duplicate
of it (Jaccard at or above the index's threshold), in input order: a
document is also compared with those inserted before it from the same
input. It prints one line per document: its id, and the id it duplicates
with their exact Jaccard (JSON: duplicate_of and jaccard, null when it was
inserted); a summary on stderr.

A document whose id is stored already is compared with the other stored
documents, not with its own stored version: unless another is near, it
replaces it (a second run over the same input inserts its documents again
as replacements). Each check and insert is atomic within this process.

A missing index is created with the default parameters (threshold 0.8):
make it first with lshdb create for others.`,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTTL(c, ttl); err != nil {
				return err
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if err := in.check(args); err != nil {
				return err
			}
			d, finish, err := a.openForWrite(nil, nil)
			if err != nil {
				return err
			}
			defer finish(true)
			in.MaxRecordBytes = recordLimit(d)
			inp, err := a.openInput(&in, d)
			if err != nil {
				return err
			}
			defer inp.close()
			add, done := a.progress("dedup", "documents", &in, args)
			// NB: as insert's batches: a batch under way when an
			// interrupt comes is given a moment to be answered, then cut
			// (one waiting behind a load in the owner does not hold the
			// command).
			bctx, stopGrace := afterGrace(a.ctx, interruptGrace)
			defer stopGrace()
			w := &deduper{a: a, d: d, commitCtx: commitCtx{bctx}, ttl: ttl, tw: a.table(), headed: a.json(), add: add, ids: make(map[string]bool), dupsOf: make(map[string]skippedDups), estimates: d.Params().Storage == db.StorageNone}
			w.stream = len(args) == 0 || slices.Contains(args, "-")
			start := time.Now()
			err = a.putAll(w, inp.docs(args), w.stream)
			done()
			if err == nil {
				w.header()
				err = inp.close()
			}
			err = cmp.Or(err, w.tw.Flush())
			if err != nil {
				finish(w.stored > 0)
				maybe := ""
				if w.doubt != "" {
					maybe = fmt.Sprintf(", and perhaps some of the next batch, through %s (the answer of the process that owns the index was lost: it may have stored them)", w.doubt)
				}
				return stoppedErr("stored "+counted(w.stored, "document", "documents")+w.replacedNote(), w.through, maybe, err)
			}
			// NB: on stderr, in both output formats: stdout stays the
			// table or the JSON lines (C23).
			// NB: one parenthesis for both counts: "(2 records
			// skipped) (1 file passed over)" read as two afterthoughts.
			var passed []string
			if n := inp.skipped + w.empty; n > 0 {
				passed = append(passed, counted(n, "record", "records")+" skipped")
			}
			if inp.passed > 0 {
				passed = append(passed, counted(inp.passed, "file", "files")+" passed over")
			}
			skipped := ""
			if len(passed) > 0 {
				skipped = " (" + strings.Join(passed, ", ") + ")"
			}
			repeated := ""
			if w.repeated > 0 {
				repeated = fmt.Sprintf(", %d stored again under an id stored earlier in the input (the last one stored wins)", w.repeated)
			}
			if w.stored+w.dups+w.repeated+w.empty+inp.skipped+inp.passed == 0 {
				a.notef("the inputs held no record: nothing was inserted")
			}
			// NB: a duplicate may be of a document stored earlier in the
			// same input: "of stored documents" read as of the index's
			// alone.
			fmt.Fprintf(a.stderr, "%d inserted%s, %s of documents stored before them (in the index, or earlier in the input)%s%s\n", w.stored, w.replacedNote(), counted(w.dups, "duplicate", "duplicates"), repeated, skipped)
			w.orphansNote()
			a.noteExpired(ttl, start, w.stored, "its batch is written")
			return nil
		},
	}
	in.add(c)
	c.Flags().DurationVar(&ttl, "ttl", 0, "the documents inserted expire this long after they are written (1h, 30m, 90s): never returned after it, then swept; a stored near-duplicate that holds one back keeps its own expiry")
	return c
}

func (a *app) getCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get --db DIR ID...",
		Short: "Show stored documents (quote an id with spaces: get \"Exodus 6:10\")",
		Long: `Show stored documents: each id's text, metadata, set size and expiry.
Several ids are shown in the order given, a blank line between them (with
--output json, one object per line). An id not stored fails the command
(exit 3) after the others are shown. Quote an id that holds spaces:
get "Exodus 6:10" is one id, get Exodus 6:10 two.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("get needs an id, or several (usage: %s)", usageOf(c))
			}
			if err := flagsAfterDash(c, args, fmt.Sprintf("get of %d ids", len(args))); err != nil {
				return err
			}
			return checkIDArgs(args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d index) error {
				// NB: get took one id: seeing the 211 members of a hot
				// bucket took 211 commands (a newcomer's review, N2-2).
				docs := make([]*db.StoredDoc, len(args))
				var missing, named []string // the ids not found; as a message names them
				var missingErr error        // the first missing id's
				for i, id := range args {
					doc, err := d.Get(id)
					if errors.Is(err, db.ErrNotFound) {
						missing = append(missing, id)
						missingErr = cmp.Or(missingErr, err)
						name := docio.QuoteID(id)
						if db.IsExpired(err) {
							name += " (expired)"
						}
						named = append(named, name)
						continue
					}
					if err != nil {
						return err
					}
					docs[i] = doc
				}
				if len(missing) > 0 && len(args) > 1 {
					// NB: ids with spaces (every id of a corpus of
					// verses, "Exodus 6:10"), unquoted: a newcomer's
					// first try (N2-6). Nothing is shown for them. A run
					// of up to 4 words, one of them not stored, is looked
					// for as one id (get "Genesis 1:1" Exodus 6:10: NF-7).
					for i := range args {
						for j := i + 2; j <= min(i+4, len(args)); j++ {
							run := args[i:j]
							if !slices.ContainsFunc(run, func(w string) bool { return slices.Contains(missing, w) }) {
								continue
							}
							joined := strings.Join(run, " ")
							if _, err := d.Get(joined); err == nil {
								return usagef("get %s asks for %d ids, and %q is stored: an id with spaces needs quotes: get %q",
									strings.Join(args, " "), len(args), joined, joined)
							}
						}
					}
				}
				shown := 0
				for _, doc := range docs {
					if doc == nil {
						continue
					}
					if shown++; shown > 1 && !a.json() {
						fmt.Fprintln(a.stdout)
					}
					if err := a.printDoc(doc); err != nil {
						return err
					}
				}
				switch {
				case len(missing) == 1:
					// NB: Get's own error, which says "(expired)" of a
					// document whose TTL ran out (an upgrade review's
					// UPG-3: it said "document not found" alone).
					return missingErr
				case len(missing) > 1:
					return fmt.Errorf("%w: %d of the %d ids: %s", db.ErrNotFound, len(missing), len(args), listSome(named, 20))
				}
				return nil
			})
		},
	}
}

// printDoc writes a stored document as get shows it: a table of its
// fields, or one line of JSON (export's form for its metadata).
func (a *app) printDoc(doc *db.StoredDoc) error {
	// NB: an index of storage none keeps no shingle set (Shingles is
	// nil), but the size its put counted (a shell user's review, I4: it
	// showed none); a signature put's is unknown, not 0.
	var shingles any = doc.SetLen
	if doc.SetLen == 0 {
		shingles = nil
	}
	if a.json() {
		out := map[string]any{"id": doc.ID, "num": doc.Num, "shingles": shingles}
		if doc.HasText {
			out["text"] = doc.Text
		}
		// NB: as export writes it (JSON as stored, else meta_string or
		// meta_base64): a JSON value was given as a string holding it.
		if l := exportOf(doc); l.Meta != nil {
			out["meta"] = l.Meta
		} else if l.MetaString != nil {
			out["meta_string"] = *l.MetaString
		} else if l.MetaBase64 != nil {
			out["meta_base64"] = *l.MetaBase64
		}
		if !doc.ExpiresAt.IsZero() {
			out["expires_at"] = doc.ExpiresAt.Format(time.RFC3339Nano)
		}
		return a.emitJSON(out)
	}
	switch {
	case doc.Shingles == nil && shingles == nil:
		shingles = "(unknown: put as a signature; storage none keeps no set)"
	case doc.Shingles == nil:
		shingles = fmt.Sprintf("%d (the set itself is not stored: storage none)", doc.SetLen)
	}
	fmt.Fprintf(a.stdout, "id: %s\ndoc number: %d\nshingles: %v\n", tableID(doc.ID), doc.Num, shingles)
	if !doc.ExpiresAt.IsZero() {
		fmt.Fprintf(a.stdout, "expires: %s\n", doc.ExpiresAt.Format(time.RFC3339))
	}
	// NB: the metadata was shown in JSON only.
	if l := exportOf(doc); l.Meta != nil || l.MetaString != nil {
		fmt.Fprintf(a.stdout, "meta: %s\n", esc(string(doc.Meta)))
	} else if l.MetaBase64 != nil {
		fmt.Fprintf(a.stdout, "meta (base64): %s\n", *l.MetaBase64)
	}
	var err error
	if doc.HasText {
		_, err = fmt.Fprintf(a.stdout, "text: %s\n", escText(doc.Text))
	} else {
		// NB: not "text: (not stored)", which a document whose text is
		// that printed too (an inspection review's SH-4): a text's line
		// begins "text: ", and this one cannot.
		_, err = fmt.Fprintln(a.stdout, "text not stored (the index's storage keeps no text)")
	}
	return err
}

// readIDs reads ids one per line (CRLF accepted, blank lines skipped).
func readIDs(r io.Reader, name string) ([]string, error) {
	// NB: gzip or zstd and a byte order mark, as every input of the
	// command is read (a gzipped list was refused as an id "\x1f\x8b…").
	br, release, err := docio.Decoded(name, r)
	if err != nil {
		return nil, err
	}
	defer release()
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), db.MaxIDBytes+8)
	var ids []string
	line := 1
	for ; sc.Scan(); line++ {
		// NB: a line of white space alone is blank, as in JSON Lines: it
		// was read as an id of spaces, which failed the whole delete with
		// 'document not found: "  "' (an adversarial review's A6). An id
		// with spaces around other characters is kept as it is.
		if id := strings.TrimSuffix(sc.Text(), "\r"); strings.TrimSpace(id) != "" {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%w: %s:%d: longer than an id may be (%d bytes): a file of ids holds one per line", db.ErrInvalidID, name, line, db.MaxIDBytes)
	} else if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	return ids, nil
}

func (a *app) deleteCmd() *cobra.Command {
	var from string
	var ignoreMissing bool
	c := &cobra.Command{
		Use: "delete --db DIR (ID ... | - | --from FILE)...",
		Example: `  # Delete two documents (all or none: both must be stored)
  lshdb delete --db idx fox2 cat

  # Delete the ids listed in a file, one per line, passing over missing ones
  lshdb delete --db idx --from ids.txt --ignore-missing`,
		Short: "Delete documents, all or none",
		Long: `Delete documents by id: the ids given as arguments, read from stdin (one
per line; a line of white space alone is skipped) for -, and read from
--from FILE; given together, all of them. The
delete is atomic: an id that is not stored deletes nothing and fails the
command, unless --ignore-missing. On Redis the ids are checked first, then
deleted in steps: a delete that fails part-way (a server restarting) may
have deleted some; run it again with --ignore-missing, then check --repair.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 && from == "" {
				if _, ok := c.Root().Annotations[inShell]; ok {
					return usagef("delete needs ids as arguments (delete ID...)")
				}
				return usagef("delete needs ids: arguments, - for stdin, or --from FILE")
			}
			var ids []string
			for _, arg := range args {
				if arg != "-" {
					if err := checkIDArgs([]string{arg}); err != nil {
						return err
					}
					ids = append(ids, arg)
					continue
				}
				more, err := readIDs(a.stdin, "stdin")
				if err != nil {
					return err
				}
				ids = append(ids, more...)
			}
			if from == "-" && slices.Contains(args, "-") {
				return usagef("delete reads stdin once: give - as an argument or --from -, not both")
			}
			if from != "" {
				// NB: - is stdin, as for every flag that names a file
				// to read (a scripting operator's CL4: "open -: no such
				// file or directory").
				var f io.ReadCloser = io.NopCloser(a.stdin)
				name := "stdin"
				if from != "-" {
					var err error
					if f, err = os.Open(from); err != nil {
						return fmt.Errorf("--from %s: %w", esc(from), pathCause(err))
					}
					name = from
				}
				more, err := readIDs(f, name)
				f.Close()
				if err != nil {
					return err
				}
				ids = append(ids, more...)
			}
			if len(ids) == 0 {
				// NB: an empty --from file said nothing at all.
				a.notef("no ids given: nothing deleted")
				return nil
			}
			return a.withWritableIndex(db.Options{}, func(d index) error {
				// NB: an interrupt ends a deletion still waiting for the
				// writer lock (behind a load): nothing is deleted.
				res, err := d.DeleteIDsContext(a.ctx, ids, &db.WriteOptions{IgnoreMissing: ignoreMissing})
				if err != nil && a.ctx.Err() != nil {
					if _, local := d.(*db.DB); !local {
						return fmt.Errorf("interrupted before the process that owns the index answered: the deletion was not made if it was still waiting, and was if it was under way (lshdb get tells)%w", silently{err})
					}
					return fmt.Errorf("interrupted: nothing deleted%w", silently{err})
				}
				if errors.Is(err, db.ErrNotFound) && !ignoreMissing {
					// NB: the id is the message's; its position among the
					// arguments (the library's DocError) is not.
					var de *db.DocError
					if errors.As(err, &de) {
						err = de.Err
					}
					// NB: the library names the first; a nightly list of
					// thousands gave no idea how many (counted, best effort).
					more := ""
					if has, herr := d.HasIDs(ids); herr == nil {
						missing := map[string]bool{}
						for i, ok := range has {
							if !ok {
								missing[ids[i]] = true
							}
						}
						if len(missing) > 1 {
							more = fmt.Sprintf(", and %d more of the ids are not stored", len(missing)-1)
						}
					}
					return fmt.Errorf("%w (nothing deleted%s: a delete is all or nothing; --ignore-missing passes over the ids not stored)", err, more)
				}
				if err != nil && (errors.Is(err, db.ErrBackend) || errors.Is(err, db.ErrAccessDenied)) && db.IsRedisURL(a.dbDir) {
					// NB: the error said only Redis's words (LOADING), and
					// info still counted the documents whose ids were gone
					// (a review's R2).
					return fmt.Errorf("%w (on Redis a delete is made in steps: some of the ids may be deleted, their records and postings left; run the delete again with --ignore-missing, then lshdb check --db %s --repair)", err, rediskv.Redact(a.dbDir))
				}
				if err != nil {
					return err
				}
				missing := make(map[string]bool, len(res.Missing))
				for i, id := range res.Missing {
					missing[id] = true
					// NB: a nightly list of gone ids, run again, named
					// each of thousands on stderr and counted none.
					if i < maxMissingNamed {
						fmt.Fprintf(a.stderr, "lshdb: not found (ignored): %s\n", docio.QuoteID(id))
					}
				}
				summary := ""
				if len(ids) > 1 && ignoreMissing {
					summary = fmt.Sprintf("deleted %s; %s not stored (ignored)", counted(res.Deleted, "document", "documents"), counted(len(res.Missing), "id", "ids"))
					if len(res.Missing) > maxMissingNamed {
						summary += fmt.Sprintf(", the first %d named above", maxMissingNamed)
					}
				}
				for _, id := range ids {
					if missing[id] {
						continue
					}
					missing[id] = true // NB: a repeated id is reported once
					if a.json() {
						err = a.emitJSON(map[string]any{"deleted": id})
					} else if !a.quiet {
						_, err = fmt.Fprintf(a.stdout, "deleted %s\n", tableID(id))
					}
					if err != nil {
						// NB: all of them are deleted, not the ones listed.
						a.saySummaryHere(err, "deleted "+counted(res.Deleted, "document", "documents"))
						return err
					}
				}
				if summary != "" {
					a.notef(summary)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&from, "from", "", "read the ids from this file, one per line (- for stdin)")
	c.Flags().BoolVar(&ignoreMissing, "ignore-missing", false, "delete the ids that are stored and pass over the others")
	return c
}

// maxMissingNamed is how many ids not stored delete --ignore-missing
// names on stderr; a note counts them all.
const maxMissingNamed = 20

func (a *app) purgeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "purge --db DIR",
		Short: "Delete the emptied posting lists that deletes and upserts leave behind",
		Long: `Delete the posting lists that hold no document any more (check counts them
as empty lists), after removing the documents whose TTL has passed (insert
--ttl; an open index sweeps them every second anyway). Nothing a query or
pairs returns changes; writers wait only while each batch of 4,096 emptied
lists is deleted.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			// NB: with no background sweep: the one a handle starts at Open
			// took the expired documents first, and purge said it swept
			// none. (Attached, the owner's sweeper runs as it does.)
			a.outputAfterClose = true // NB: the summary comes after the reopen below
			var summary func() error
			err := a.withWritableIndex(db.Options{ExpirySweep: -1}, func(d index) error {
				// NB: Purge counts the expired documents it sweeps (purge
				// said only how many lists it deleted, and the documents
				// were gone).
				res, err := d.Purge(a.ctx)
				if err != nil && (res.SweptExpired > 0 || res.PurgedLists > 0) {
					// NB: a purge refused partway (a full disk) said
					// nothing of what it had done (a review).
					return fmt.Errorf("%w (before it stopped, it swept %s and purged %d empty posting lists, which stay done)", err, counted(max(res.SweptExpired, 0), "expired document", "expired documents"), res.PurgedLists)
				}
				if err != nil {
					return err
				}
				summary = func() error {
					if a.json() {
						out := map[string]any{"purged_lists": res.PurgedLists}
						if res.SweptExpired >= 0 {
							out["swept_expired"] = res.SweptExpired
						}
						return a.emitJSON(out)
					}
					if res.SweptExpired >= 0 {
						return a.summaryf("swept %s; purged %d empty posting lists\n", counted(res.SweptExpired, "expired document", "expired documents"), res.PurgedLists)
					}
					return a.summaryf("purged %d empty posting lists\n", res.PurgedLists)
				}
				if _, local := d.(*db.DB); !local || a.shellDB != nil || db.IsRedisURL(a.dbDir) {
					s := summary
					summary = nil
					return s()
				}
				return nil
			})
			if err != nil || summary == nil {
				return err
			}
			a.freeLogs()
			return summary()
		},
	}
}

func (a *app) compactCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compact --db DIR",
		Short: "Free the space of deleted and replaced documents now",
		Long: `Rewrite the whole index so that the space of the documents deleted, replaced
or expired, and of the posting lists they emptied (deleted first, as lshdb
purge does), is freed now, rather than whenever the store's background
compactions reach it: a nightly build that replaces most of the index leaves
the old records on disk until then (220,000 documents loaded five times took
2.8 times the room of one load). It takes a fraction of a build's time
(0.2-0.4x on 200,000-300,000 generated documents), on every core; queries and
writes go on meanwhile. An index on Redis needs none (it frees a deleted key at
once).`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if db.IsRedisURL(a.dbDir) {
				// NB: it said "compacted: 0 B on disk, 0 B before".
				a.notef("an index on Redis needs no compaction (Redis frees a deleted key's memory at once): nothing done")
				return nil
			}
			// NB: the size before the command opens the index: opening it
			// to write replays its write-ahead log into tables, and a
			// compact after inserts and deletes said "375.8 KiB on disk,
			// 375.8 KiB before" of a directory that had taken 907 KB.
			// NB: counted as Info counts the size after (allocated
			// blocks): by apparent sizes, a write-ahead log preallocated
			// after the compaction made it "9.0 MiB on disk, 353.4 KiB
			// before".
			pre := db.DirBytes(a.dbDir)
			var before uint64
			var local, reopen bool
			a.outputAfterClose = true // NB: the summary comes after the reopen below
			err := a.withWritableIndex(db.Options{}, func(d index) error {
				before = diskBytesOf(d)
				if _, local = d.(*db.DB); local && pre > 0 {
					// NB: attached, the owner's own count (the walk also
					// counted its running pairs' temporary files).
					before = pre
				}
				ctx, barDone := a.phaseBar("compact")
				err := d.Compact(ctx)
				barDone()
				if err != nil {
					return interruptNote(err, "compact interrupted: the index is as it was, or partly compacted")
				}
				if reopen = local && a.shellDB == nil; reopen {
					return nil // NB: said once the logs are freed, below
				}
				return a.compactedSummary(d, before)
			})
			if err != nil || !reopen {
				return err
			}
			// NB: the purge before the compaction writes through the
			// write-ahead log, and Pebble keeps up to four logs of about
			// 9 MiB for reuse, which only an open deletes: compact said
			// "50.8 MiB on disk (35.2 MiB of it write-ahead logs), 58.9
			// MiB before" of 15 MiB of tables, and a second compact 15.6
			// MiB (an operator's lifecycle review, LC1). Opened again to
			// write, the index keeps its live log alone.
			d, err := a.openToFreeLogs()
			if err != nil {
				// NB: another process opened it meanwhile (its open frees
				// them), or it cannot be opened now: the size as it is.
				after := db.DirBytes(a.dbDir)
				if a.json() {
					return a.emitJSON(compactedJSON{DiskBytesBefore: before, DiskBytesAfter: after})
				}
				return a.summaryf("compacted: %s on disk, %s before\n", humanBytes(after), humanBytes(before))
			}
			defer d.Close()
			return a.compactedSummary(d, before)
		},
	}
}

// openToFreeLogs opens the index again to write, once a command that
// owned it (compact, purge) has closed it: Pebble's open deletes the
// write-ahead logs it kept for reuse, which the command's purge filled
// (up to four of about 9 MiB), and the index keeps its live log alone.
// The caller closes the handle.
func (a *app) openToFreeLogs() (*db.DB, error) {
	return db.Open(a.dbDir, a.writeOptions(&db.Options{MustExist: true, ExpirySweep: -1, PurgeEvery: -1}))
}

// freeLogs is openToFreeLogs, closed at once; an index that another
// process opened meanwhile (whose open frees them) is left to it.
func (a *app) freeLogs() {
	if d, err := a.openToFreeLogs(); err == nil {
		d.Close()
	}
}

// compactedSummary prints compact's summary: d's size now, and before.
func (a *app) compactedSummary(d index, before uint64) error {
	after := diskBytesOf(d)
	if a.json() {
		return a.emitJSON(compactedJSON{DiskBytesBefore: before, DiskBytesAfter: after})
	}
	logs := ""
	if in, err := d.Info(); err == nil && significantLogs(in) {
		// NB: a small index's compact said "15.6 MiB on disk,
		// 15.6 MiB before" of 2 MiB of tables, and read as if
		// it did nothing.
		//
		// NB: attached, the process that serves the index
		// keeps its logs, allocated ahead for its writes: a
		// 768 KiB index "compacted" to 9.3 MiB, said to be
		// "what compaction leaves", where help and info say
		// a compact frees them.
		logs = fmt.Sprintf(" (%s of it write-ahead logs, allocated ahead or kept for reuse)", humanBytes(in.LogBytes))
		if _, local := d.(*db.DB); !local {
			logs = fmt.Sprintf(" (%s of it write-ahead logs, allocated ahead for its writes by the process that serves the index, which keeps them: a compact run when no process serves it frees them)", humanBytes(in.LogBytes))
		}
	}
	return a.summaryf("compacted: %s on disk%s, %s before\n", humanBytes(after), logs, humanBytes(before))
}

// diskBytesOf is the space d's files take (0 if it cannot say).
func diskBytesOf(d index) uint64 {
	in, err := d.Info()
	if err != nil {
		return 0
	}
	return in.DiskBytes
}

func (a *app) dropCmd() *cobra.Command {
	var yes, force bool
	c := &cobra.Command{
		Use:   "drop --db DIR --yes",
		Short: "Delete an index and every document in it",
		Long: `Delete the index and every document in it: its directory, or on Redis every
key of its name (--db redis+cluster://…/NAME; other indexes on the cluster are
untouched). It refuses what is not an lshdb index, a directory that also
holds files that are not the index's (it names them: move them out
first), and a directory another process holds. On Redis nothing holds an
index: drop refuses one that other processes have open to write (a
server, a shell, a program), since they would go on writing into it, and
into an index created again under its name, with their old parameters
(their documents then invisible to its queries); --force drops it under
them (a process killed with the index open counts until it is dropped).
Nothing asks again: --yes says you mean it.`,
		Example: `  lshdb drop --db old-index --yes
  lshdb drop --db redis+cluster://127.0.0.1:7000/scratch --yes`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if a.shellDB != nil {
				return usagef("drop needs the index to itself: run it outside the shell")
			}
			if err := a.needDB(); err != nil {
				return err
			}
			if !yes {
				return usagef("drop deletes %s and every document in it: add --yes to confirm", rediskv.Redact(a.dbDir))
			}
			// NB: the count first, for the message; Drop opens the index
			// again (and refuses it if another process took it meanwhile).
			n := uint64(0)
			known := false // n is the index's count
			var cerr error // why it is not, where the index opened
			var writers []time.Time
			var werr error // why the other writers could not be counted
			if d, err := db.Open(a.dbDir, &db.Options{ReadOnly: true, ExpirySweep: -1}); err == nil {
				n, cerr = d.Count()
				known = cerr == nil
				writers, werr = d.OtherWritersSeen(a.ctx)
				d.Close()
			} else if errors.Is(err, db.ErrInvalidOptions) {
				// NB: a URL no index can have (a name with a '*'): it
				// said the writers could not be counted, and to add
				// --force, which then said the URL is bad (an operator's
				// review of Redis, RC-4).
				return err
			} else if !errors.Is(err, db.ErrNotExist) {
				werr = err
			}
			if db.IsRedisURL(a.dbDir) && werr != nil && !force {
				// NB: a check that failed is no check: the drop went ahead
				// under live writers, unsaid.
				return fmt.Errorf("the processes that have %s open to write could not be counted: %w (add --force to drop it under them)", rediskv.Redact(a.dbDir), werr)
			}
			if live := a.liveWriters(writers, time.Now(), rediskv.Redact(a.dbDir)); len(live) > 0 && !force {
				return fmt.Errorf("%w: %s has the index open to write in %s (a server, a shell, a program: stop them first; one killed with it open counts for %s after it was last seen, or add --force)",
					errInUse, rediskv.Redact(a.dbDir), otherWriters(live, time.Now()), staleWriter)
			}
			if err := lockedHint(db.Drop(a.ctx, a.dbDir), a.dbDir); err != nil {
				return err
			}
			if !known {
				// NB: an index that did not open (its manifest or counters
				// lost): it said "its 0 documents" after deleting 2,626
				// documents' keys (an operator's review, R4).
				if a.json() {
					return a.emitJSON(map[string]any{"dropped": rediskv.Redact(a.dbDir), "docs": nil})
				}
				why := "it did not open"
				if cerr != nil {
					why = escControls(cerr.Error())
				}
				err := a.summaryf("dropped the index (its documents could not be counted: %s)\n", why)
				return err
			}
			if a.json() {
				return a.emitJSON(map[string]any{"dropped": rediskv.Redact(a.dbDir), "docs": n})
			}
			err := a.summaryf("dropped the index and its %s\n", counted(n, "document", "documents"))
			return err
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "confirm: delete the index and every document in it")
	c.Flags().BoolVar(&force, "force", false, "on Redis: drop the index even while other processes have it open to write")
	return c
}

// isDir reports whether path is a directory (or a link to one).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// checkTTL refuses a --ttl that is negative, or given as 0: the
// documents would not expire (0 is no TTL, the flag's default), where a
// script that computed it, or a unit that rounds to it (0.1ns), meant
// them to; the shell's put --ttl refuses it too.
func checkTTL(c *cobra.Command, ttl time.Duration) error {
	if ttl < 0 {
		return usagef("--ttl %v is negative (a duration such as 1h, 30m or 90s)", ttl)
	}
	if ttl == 0 && c.Flags().Changed("ttl") {
		return usagef("--ttl %s is no time: give a positive duration (1h, 30m, 90s), or no --ttl for documents that do not expire", c.Flags().Lookup("ttl").Value)
	}
	return nil
}

// noteExpired notes, after a write command that stored n documents with
// ttl, that the command took longer than ttl since start (before its
// first write): the documents written first may have expired already, and
// then no read returns them. NB: "inserted 5 documents" of --ttl 1ns,
// none of which could be read (a bad-input review, B15).
func (a *app) noteExpired(ttl time.Duration, start time.Time, n int, from string) {
	if took := time.Since(start); ttl > 0 && n > 0 && took >= ttl {
		a.notef(fmt.Sprintf("--ttl %v is shorter than this command took (%v): what it wrote first may have expired already (a document expires %v after %s), and then no read returns it", ttl, took.Round(time.Millisecond), ttl, from))
	}
}

// errInUse is the error of drop and check --repair when other handles
// have a Redis index open to write.
var errInUse = errors.New("the index is in use")

// staleWriter is how long a writable handle of a Redis index may go
// unseen (db.OtherWritersSeen: each says it is alive every
// db.WriterHeartbeat) before drop and check --repair take it for a
// process killed with the index open, and go on. NB: they refused for good
// after a single kill -9 of a writer, until given --force, which then
// became a habit that defeats the guard (an operator's review, R3).
const staleWriter = 10 * db.WriterHeartbeat

// liveWriters returns the times of seen (db.OtherWritersSeen) of the
// handles seen within staleWriter of now (and of those whose time is not
// known), and says on stderr how many others it passes over.
func (a *app) liveWriters(seen []time.Time, now time.Time, index string) []time.Time {
	var live []time.Time
	var oldest time.Time
	stale := 0
	for _, at := range seen {
		if !at.IsZero() && now.Sub(at) > staleWriter {
			stale++
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
			continue
		}
		live = append(live, at)
	}
	if stale > 0 {
		fmt.Fprintf(a.stderr, "lshdb: note: %s registered to write %s not seen for over %s (the oldest %s ago) taken for processes killed with the index open, and passed over\n",
			counted(stale, "handle", "handles"), index, staleWriter, now.Sub(oldest).Round(time.Second))
	}
	return live
}

// otherWriters describes, for a refusal, the writable handles other than
// its own that have a Redis index open: how many, when each was last seen
// (db.OtherWritersSeen), and what one long silent likely is.
func otherWriters(seen []time.Time, now time.Time) string {
	var ages, alive []string
	silent := 0
	for _, at := range seen {
		age := "at an unknown time"
		if !at.IsZero() {
			d := max(now.Sub(at), 0)
			age = d.Round(time.Second).String() + " ago"
			if d <= 3*db.WriterHeartbeat {
				// NB: alive, its age said too: a process that ended while
				// Redis could not be reached looks alive for its last
				// heartbeats, and the refusal said nothing of when (an
				// operator's review of Redis, RD3).
				if len(alive) < 5 {
					alive = append(alive, age)
				}
				continue
			}
		}
		silent++
		if len(ages) < 5 {
			ages = append(ages, age)
		}
	}
	s := counted(len(seen), "other handle", "other handles")
	if silent == 0 && len(alive) > 0 {
		more := ""
		if len(seen) > len(alive) {
			more = fmt.Sprintf(", and %d more", len(seen)-len(alive))
		}
		s += fmt.Sprintf(" (last seen %s%s: alive, most likely; a process that ended while Redis could not be reached, which said so in a warning, is seen no more and passed over once unseen for %s)", strings.Join(alive, ", "), more, staleWriter)
	}
	if silent > 0 {
		more := ""
		if silent > len(ages) {
			more = fmt.Sprintf(", and %d more", silent-len(ages))
		}
		s += fmt.Sprintf(", %d of them not seen for over %s (last seen %s%s): a process killed with the index open (passed over once unseen for %s), or one of an lshdb older than the heartbeat (seen at its open only)",
			silent, 3*db.WriterHeartbeat, strings.Join(ages, ", "), more, staleWriter)
	}
	return s
}

func (a *app) upgradeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "upgrade --db DIR",
		Short: "Rewrite an index made by an older lshdb in the current format, in place",
		Long: `Rewrite an index made by an older lshdb (index format 1) in the current
format, in place and atomically: after a crash at any point the index is
either wholly old or wholly new. Format 1 indexes that stored every text
become text indexes (verification re-shingles the stored text); the others
become sets indexes (32-bit shingle sets, no text). Posting lists are
rewritten under their format 2 keys; ids are kept. A text index of format
2 to 4 has its records rewritten with their signature's sketch (format 5,
which pairs and clusters read instead of re-shingling every candidate's
text), each text checked against its record; its posting lists are kept.
Any other index is left as it is (this build reads and writes it in its own
format). It needs free space for the records written anew until it ends
(on short texts about twice the old records: each gains a 64-byte sketch),
and is refused first, having written nothing, when it has not that much.
An index made before instances gets one (lshdb info shows it). An
upgrade stopped once its new records are in (killed) leaves the old ones
on disk: lshdb info says so, and lshdb upgrade again, or lshdb compact,
frees them.

An upgrade cannot be undone: an lshdb older than this one refuses the
upgraded index ("database format is newer than this build"). Copy it
first if an older build must go on reading it: an index before format 2
with cp -a while nothing has it open (lshdb backup reads only the formats
this build reads, and refuses it), one of format 2 to 4 with lshdb backup
--db DIR --to COPY; and upgrade once every build that reads it is this one
or newer.`,
		Example: "  # An index before format 2, with nothing running on it\n  cp -a old-index old-index.before-upgrade\n  lshdb upgrade --db old-index\n  # A text index of format 2 to 4: a backup, which may be taken while it is served,\n  # then the upgrade, which must own it (stop lshdb serve first)\n  lshdb backup --db idx --to idx.before-upgrade\n  lshdb upgrade --db idx",
		Args:    nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if a.shellDB != nil {
				return usagef("upgrade needs the index to itself: run it outside the shell")
			}
			if err := a.needDB(); err != nil {
				return err
			}
			// NB: the handle's options, --disk-reserve's included: nil
			// made the flag do nothing here, and its own error message
			// offered it.
			rep, err := db.Upgrade(a.ctx, a.dbDir, a.writeOptions(&db.Options{}))
			err = lockedHint(err, a.dbDir)
			if errors.Is(err, db.ErrLocked) {
				// NB: its help's example was read as upgrading a served
				// index (an operator's review, O2-4).
				err = fmt.Errorf("upgrade rewrites the index and must own it, with nothing else open on it (stop lshdb serve first; a backup may be taken while it is served): %w", err)
			}
			if err != nil {
				return interruptNote(err, "upgrade interrupted: the index is as it was")
			}
			if a.json() {
				return a.emitJSON(upgradeJSON{From: rep.From, To: rep.To, Storage: rep.Storage, Docs: rep.Docs, Expired: rep.Expired, Uncompacted: rep.Uncompacted, Compacted: rep.Compacted})
			}
			if rep.From == rep.To && rep.Compacted {
				return a.summaryf("index format %d needs no upgrade: the old records of an upgrade stopped before it compacted them were compacted away\n", rep.To)
			}
			if rep.From == rep.To && !rep.Uncompacted {
				err = a.summaryf("index format %d needs no upgrade: nothing to do\n", rep.To)
				return err
			}
			if rep.From == rep.To {
				err = a.summaryf("index format %d needs no upgrade\n", rep.To)
			} else {
				expired := ""
				if rep.Expired > 0 {
					expired = fmt.Sprintf(" (%d of them expired, which the sweep removes)", rep.Expired)
				}
				err = a.summaryf("upgraded index format %d to %d: %d documents%s, storage %s\n", rep.From, rep.To, rep.Docs, expired, rep.Storage)
			}
			if err == nil && rep.Uncompacted {
				a.notef("the old records still take their space on disk (no room to compact them now, or the compaction failed: see above); lshdb compact frees it once there is room")
			}
			return err
		},
	}
}

// upgradeJSON is the output of upgrade --output json.
type upgradeJSON struct {
	From    int    `json:"from_format"`
	To      int    `json:"to_format"`
	Storage string `json:"storage"`
	Docs    int    `json:"docs"`
	// Expired: of docs, those whose TTL had run out, which the sweep
	// removes (db.UpgradeReport).
	Expired int `json:"expired,omitempty"`
	// Uncompacted: the old records still take their space (db.UpgradeReport).
	Uncompacted bool `json:"uncompacted,omitempty"`
	// Compacted: the old records of an upgrade stopped before it
	// compacted them were compacted away now (db.UpgradeReport).
	Compacted bool `json:"compacted,omitempty"`
}

// checkRecall refuses a --recall outside (0, 1), in create and tune alike.
func checkRecall(r float64) error {
	if !(r > 0 && r < 1) {
		return usagef("--recall %v is outside (0, 1)", r)
	}
	return nil
}

// skipGuard keeps build --delete-missing from deleting a stored document
// whose record was skipped as bad (--skip-bad; review B2) or whose file
// a directory walk passed over as binary: each skipped id that is in no
// loaded record, and is stored, fails the build. NB: the loaded ids are
// kept as 64-bit hashes, 8 bytes a document, only when a record can be
// skipped (--skip-bad, or a directory among the inputs); a collision
// (about n²/2⁶⁵) takes a skipped id for a loaded one, as before this
// guard.
type skipGuard struct {
	loaded  []uint64
	skipped []*docio.RecordError
	// unnamed are the skipped records whose id could not be read (a line
	// that is not JSON, cut short): any stored document may be theirs
	// (review N1).
	unnamed []*docio.RecordError
}

func (g *skipGuard) seen(id string) { g.loaded = append(g.loaded, xxhash.Sum64String(id)) }

func (g *skipGuard) skip(re *docio.RecordError) {
	switch {
	case errors.Is(re, db.ErrInvalidID), re.ID != "" && db.CheckID(re.ID) != nil:
		// NB: an id no document can have (db.Validate refused it, or
		// the name of a binary file passed over, not UTF-8): nothing
		// stored is its, and HasIDs refuses to look it up (review M2;
		// a Latin-1 file name failed every build).
	case re.ID != "":
		g.skipped = append(g.skipped, &docio.RecordError{File: re.File, Line: re.Line, ID: re.ID})
	case passedOver(re):
		// NB: never a record of documents.
	default:
		g.unnamed = append(g.unnamed, &docio.RecordError{File: re.File, Line: re.Line})
	}
}

// check returns an error naming the skipped records whose stored
// documents the build would delete.
func (g *skipGuard) check(d index) error {
	if n := len(g.unnamed); n > 0 {
		at := make([]string, n)
		for i, re := range g.unnamed {
			at[i] = re.Pos() // NB: FILE for a file read whole (text, binary)
		}
		return fmt.Errorf("%s skipped as bad before %s id could be read (%s): --delete-missing would delete the stored %s, whichever it is; fix the records (--rejects writes them out), and build again",
			counted(n, "record was", "records were"), plural(n, "its", "their"), listSome(at, 3), plural(n, "document it names", "documents they name"))
	}
	if len(g.skipped) == 0 {
		return nil
	}
	slices.Sort(g.loaded)
	var ids []string
	var recs []*docio.RecordError
	for _, re := range g.skipped {
		if _, ok := slices.BinarySearch(g.loaded, xxhash.Sum64String(re.ID)); !ok {
			ids = append(ids, re.ID)
			recs = append(recs, re)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	has, err := d.HasIDs(ids)
	if err != nil {
		return fmt.Errorf("looking up the ids of the records skipped as bad: %w", err)
	}
	var named []string
	seen := map[string]bool{}
	for i, re := range recs {
		if has[i] && !seen[re.ID] {
			seen[re.ID] = true
			named = append(named, fmt.Sprintf("%s (id %s)", re.Pos(), docio.QuoteID(re.ID)))
		}
	}
	if n := len(named); n > 0 {
		return fmt.Errorf("the records skipped as bad hold %s that no other record holds: %s; --delete-missing would delete %s: fix the records, or delete the documents with lshdb delete, and build again",
			counted(n, "stored id", "stored ids"), listSome(named, 3), plural(n, "its document", "their documents"))
	}
	return nil
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxStopWordsFile is the largest --stop-words-file read: lists of stop
// words are a few KB (a few hundred words a language).
const maxStopWordsFile = 1 << 20

// readStopWords reads a --stop-words-file of at most maxStopWordsFile
// bytes. NB: it was read whole: /dev/zero grew a create by 170 MB/s,
// deaf to its first signal, and a corpus given by mistake made each of
// its lines a stop word (a bad-input review, B4).
func readStopWords(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--stop-words-file: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStopWordsFile+1))
	switch {
	case err != nil:
		return nil, usagef("--stop-words-file: %v", err)
	case len(b) > maxStopWordsFile:
		return nil, usagef("--stop-words-file %s: larger than %d bytes, more than any list of stop words (one word a line): not the corpus itself?", escControls(path), maxStopWordsFile)
	}
	return b, nil
}
