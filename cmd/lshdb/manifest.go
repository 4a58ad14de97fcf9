package main

// --manifest FILE: filter's and export's record of a run. A nightly job
// reads an output with no way to tell tonight's from last night's (a
// failed night leaves last night's in place, rightly), or one made with
// --keep longest from one made with --keep first: the record says how,
// when and from what the outputs beside it were made, and their SHA-256
// tells whether they are still the files it describes (a data
// engineer's review, NV5).

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/spf13/cobra"
)

// manifestVersion is the version of the record's shape: a field's
// meaning never changes within one.
const manifestVersion = 1

// manifestJSON is the record --manifest writes: the header a pairs file
// has (the command, lshdb's version, when it started, the threshold, the
// index's state and parameters, the clustering's mode and keep, --from),
// and what the run read and wrote.
type manifestJSON struct {
	ManifestVersion int `json:"manifest_version"`
	headerBody
	// Finished is when the outputs were complete, before they were put
	// in place.
	Finished       string  `json:"finished"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// DB is --db (a directory made absolute; a Redis URL as given, its
	// password hidden), Server the server attached to (--addr).
	DB     string `json:"db,omitempty"`
	Server string `json:"server,omitempty"`
	// All is export --all (no clustering), Strict filter --strict.
	All    bool `json:"all,omitempty"`
	Strict bool `json:"strict,omitempty"`
	// Inputs are the files filter read, in the order read (a
	// directory's files each), as they were while it read them. Paths,
	// of inputs and outputs, are absolute.
	Inputs  []manifestFile   `json:"inputs,omitempty"`
	Outputs []manifestOutput `json:"outputs"`
	// Summary is the summary line on stderr, Notes the notes (without
	// "lshdb: note: "), Counts their numbers.
	Summary string         `json:"summary"`
	Counts  manifestCounts `json:"counts"`
	Notes   []string       `json:"notes"`
}

// manifestFile is an input file: its size, modification time and
// SHA-256 (of its bytes as stored: compressed, if it is).
type manifestFile struct {
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	Modified string `json:"modified"`
	SHA256   string `json:"sha256"`
}

// manifestOutput is an output: which flag named it, its path ("-":
// stdout), the records written to it, and the size and SHA-256 of the
// bytes written (compressed, if it is: those of the file).
type manifestOutput struct {
	Flag    string `json:"flag"`
	Path    string `json:"path"`
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// manifestCounts are filterCounts' numbers (export has kept, removed,
// clusters and no_text alone).
type manifestCounts struct {
	Read     int64 `json:"read"`
	Kept     int64 `json:"kept"`
	Removed  int64 `json:"removed"`
	Clusters int   `json:"clusters"`
	// Bad records were not read as documents, Blank ones had a blank
	// text, Repeated ones an id read before (Copies of them the same
	// bytes as its first record, Exact of those removed as its
	// duplicates); Unindexed ones an id the index does not hold.
	Bad       int64 `json:"bad"`
	Blank     int64 `json:"blank"`
	Repeated  int64 `json:"repeated"`
	Copies    int64 `json:"copies"`
	Exact     int64 `json:"copies_removed"`
	Unindexed int64 `json:"unindexed"`
	// Outside are removed records whose kept document no input holds
	// (OutsideKept documents).
	Outside     int64 `json:"outside"`
	OutsideKept int64 `json:"outside_kept"`
	// Sampled ids were checked against the index before the clustering,
	// Found of them held; Compared texts compared with their documents',
	// Edited of them different.
	Sampled  int `json:"sampled"`
	Found    int `json:"found"`
	Compared int `json:"compared"`
	Edited   int `json:"edited"`
	// NoText are export's documents written without a text (the index
	// stores none).
	NoText int64 `json:"no_text,omitempty"`
	// Unreadable are the ranges of records export --salvage passed over
	// (it exits 4, the outputs written).
	Unreadable int `json:"unreadable_ranges,omitempty"`
}

func countsOf(n filterCounts) manifestCounts {
	return manifestCounts{Read: n.read, Kept: n.kept, Removed: n.removed, Clusters: n.clusters, Bad: n.bad, Blank: n.blank,
		Repeated: n.repeated, Copies: n.copies, Exact: n.exact, Unindexed: n.unindexed, Outside: n.outside, OutsideKept: n.outsideReps,
		Sampled: n.sampled, Found: n.found, Compared: n.compared, Edited: n.edited}
}

// errInputChanged is filter --manifest's error for an input written
// while filter read it: its outputs are of no one state of it.
var errInputChanged = errors.New("an input changed while filter read it")

// manifest writes one run's record, replaced with the outputs
// (finishSinks): the old record is removed before the first output is
// put in place and the new one put in place after the last, so that a
// record beside the outputs describes them, and none is there while
// they are replaced or when that failed halfway.
type manifest struct {
	path string
	body manifestJSON
	// start is when the run started (body.Started, to the nanosecond).
	start time.Time
	// inputs hashes the inputs as filter reads them (nil: export's).
	inputs *inputSums
	tmp    *os.File
}

// newManifest is the record of command's run on d, started at start,
// from the header a pairs file of the run would have.
func (a *app) newManifest(path string, d index, command string, t float64, start time.Time) (*manifest, error) {
	if path == "" {
		return nil, nil
	}
	h, err := runHeader(d, command, t, start)
	if err != nil {
		return nil, err
	}
	m := &manifest{path: path, start: start, body: manifestJSON{ManifestVersion: manifestVersion, headerBody: h.Header}}
	if a.addr != "" {
		m.body.Server = a.addr
	} else {
		m.body.DB = rediskv.Redact(a.dbDir)
		if !db.IsRedisURL(a.dbDir) {
			m.body.DB = absPath(a.dbDir)
		}
	}
	return m, nil
}

// prepare writes the record beside its path, synced, once the outputs
// are (sinks, flushed): their records, sizes and SHA-256, and the
// inputs'. It fails when an input changed while it was read.
func (m *manifest) prepare(sinks []*sink) error {
	now := time.Now()
	m.body.Finished = now.UTC().Format(time.RFC3339Nano)
	m.body.ElapsedSeconds = elapsedSeconds(now.Sub(m.start))
	m.body.Outputs = m.body.Outputs[:0]
	for _, s := range sinks {
		o := manifestOutput{Flag: s.what, Path: absPath(cmp.Or(s.path, "-")), Records: s.records}
		if s.sum != nil {
			o.Bytes, o.SHA256 = s.sum.n, hex.EncodeToString(s.sum.h.Sum(nil))
		}
		m.body.Outputs = append(m.body.Outputs, o)
	}
	if m.inputs != nil {
		files, err := m.inputs.wait()
		if err != nil {
			return err
		}
		m.body.Inputs = files
	}
	if m.body.Notes == nil {
		m.body.Notes = []string{} // NB: [] in the record, not null: no note
	}
	b, err := marshalJSON(m.body)
	if err != nil {
		return err
	}
	f, err := createTempFor(m.path)
	if err != nil {
		return m.fail(err)
	}
	m.tmp = f
	_, err = f.Write(append(b, '\n'))
	return m.fail(err)
}

// commit puts the record in place when ok and err is nil, else removes
// it; it returns err, named.
func (m *manifest) commit(ok bool, err error) error {
	if m.tmp == nil {
		return err
	}
	return m.fail(commitTemp(m.tmp, m.path, ok, err))
}

// fail names the record in err.
func (m *manifest) fail(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("--manifest %s: %w", escControls(m.path), err)
}

// summer counts and hashes the bytes of an output as they are written.
type summer struct {
	h hash.Hash
	n int64
}

func newSummer() *summer { return &summer{h: sha256.New()} }

func (s *summer) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	return s.h.Write(p)
}

// inputSums hashes filter's inputs as its pass reads them, on a
// goroutine of its own: each file is stated as its reading begins,
// hashed, and stated again at the end; a file whose size or modification
// time changed between is refused (errInputChanged).
type inputSums struct {
	once, stopOnce sync.Once
	// abandoned: the pass failed, and the hashing stops (abandon).
	abandoned atomic.Bool
	names     chan string
	done      chan struct{}
	mu        sync.Mutex
	files     []manifestFile
	// began are the files' states as their reading began, and read
	// their names as read, by index.
	began []os.FileInfo
	read  []string
	err   error
}

func newInputSums() *inputSums {
	return &inputSums{names: make(chan string, 1024), done: make(chan struct{})}
}

// add takes the input name as its reading begins.
func (h *inputSums) add(name string) {
	h.once.Do(func() { go h.run() })
	st, err := os.Stat(name)
	h.mu.Lock()
	h.files = append(h.files, manifestFile{Path: absPath(name)})
	h.began = append(h.began, st)
	h.read = append(h.read, name)
	if err != nil && h.err == nil {
		h.err = fmt.Errorf("%s: %w", escControls(name), err)
	}
	h.mu.Unlock()
	h.names <- name
}

func (h *inputSums) run() {
	defer close(h.done)
	i := 0
	for name := range h.names {
		if h.abandoned.Load() {
			continue // NB: drains the names the reader sent
		}
		sum, st, err := hashFile(name, &h.abandoned)
		h.mu.Lock()
		if err != nil && h.err == nil {
			h.err = fmt.Errorf("%s: %w", escControls(name), err)
		}
		if err == nil {
			h.files[i].SHA256 = sum
			if b := h.began[i]; b != nil && !sameState(b, st) && h.err == nil {
				h.err = changed(name, b, st)
			}
		}
		h.mu.Unlock()
		i++
	}
}

// abandon ends the hashing of a pass that failed or was interrupted,
// without waiting for the files not yet hashed, and waits for its
// goroutine.
func (h *inputSums) abandon() {
	h.abandoned.Store(true)
	h.stop()
}

// stop ends the hashing, once the pass is done, and waits for its
// goroutine.
func (h *inputSums) stop() {
	h.stopOnce.Do(func() {
		h.once.Do(func() { close(h.done) }) // NB: no input read: no goroutine
		close(h.names)
	})
	<-h.done
}

// wait waits for every input's hash, and states each again: it returns
// the inputs, or the first error.
func (h *inputSums) wait() ([]manifestFile, error) {
	h.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	for i := range h.files {
		st, err := os.Stat(h.read[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", escControls(h.read[i]), err)
		}
		if !sameState(h.began[i], st) {
			return nil, changed(h.read[i], h.began[i], st)
		}
		h.files[i].Bytes, h.files[i].Modified = st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano)
	}
	return h.files, nil
}

// hashFile is the SHA-256 of the file name, and its state as it was
// opened; it ends early, with errAbandoned, once abandoned is set.
func hashFile(name string, abandoned *atomic.Bool) (string, os.FileInfo, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, abandonable{f, abandoned}); err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), st, nil
}

// absPath is p made absolute, for a record read from another directory
// ("-", stdout, as it is).
func absPath(p string) string {
	if p == "-" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// errAbandoned ends the hashing of an input whose pass failed.
var errAbandoned = errors.New("abandoned")

// abandonable reads r until abandoned is set.
type abandonable struct {
	r         io.Reader
	abandoned *atomic.Bool
}

func (a abandonable) Read(p []byte) (int, error) {
	if a.abandoned.Load() {
		return 0, errAbandoned
	}
	return a.r.Read(p)
}

// sameState: a and b are one file, of one size and modification time.
func sameState(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func changed(name string, was, now os.FileInfo) error {
	return fmt.Errorf("%w: %s was %d bytes, modified %s, when filter began to read it, and is %d bytes, modified %s: the outputs would be of no one state of it, and nothing was written; run filter again once it is written",
		errInputChanged, escControls(name), was.Size(), was.ModTime().UTC().Format(time.RFC3339Nano), now.Size(), now.ModTime().UTC().Format(time.RFC3339Nano))
}

// checkManifest refuses a --manifest that is standard output, one of the
// outputs, or named for a compression (the record is plain JSON).
func (f *dedupFlags) checkManifest(c *cobra.Command) error {
	if !c.Flags().Changed("manifest") {
		return nil
	}
	switch p := f.manifest; {
	case p == "" || p == "-" || isStdout(p):
		return usagef("--manifest %q: give a file (the record is written beside it and renamed when the outputs are in place)", p)
	case p == f.out || sameFile(p, f.out) || f.removed != "" && (p == f.removed || sameFile(p, f.removed)):
		return usagef("--manifest %s is an output too: give the record a file of its own", escControls(p))
	}
	if z, _ := nameCompression(f.manifest); z != "" {
		return usagef("--manifest %s names a compression (%s): the record is plain JSON; name it .json", escControls(f.manifest), z)
	}
	return nil
}
