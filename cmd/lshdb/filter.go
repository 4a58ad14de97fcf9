package main

// lshdb filter: the input files again, less the near-duplicates a
// clustering drops, every kept record as it was read.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/minhash"
	"github.com/parquet-go/parquet-go"
	"github.com/spf13/cobra"
)

// Errors of filter's inputs and outputs: test with errors.Is.
var (
	// errFilterFormat: an input filter cannot write back (text files), or
	// an output named or compressed in another format than the input's:
	// a usage error (exit 2), as export's and pairs' are.
	errFilterFormat = errors.New("filter cannot write this input format")
	// errInputsDiffer: the inputs of one output differ in format, CSV
	// header or Parquet schema.
	errInputsDiffer = errors.New("the inputs differ in shape")
	// errFieldExists: a record already has a field filter would add.
	errFieldExists = errors.New("the input already has a field that filter adds")
	// errUncopyable: a record that cannot be copied (over the record
	// limit, or a binary file): the output would lose it.
	errUncopyable = errors.New("a record cannot be copied to the output")
	// errNoDocuments: no record of the inputs could be read as a
	// document (the id and text flags differ from the build's), so
	// filter could match none to the index.
	errNoDocuments = errors.New("no record of the inputs could be read as a document")
	// errNoIDs: the inputs' records were read, but none of the ids
	// sampled is in the index (other id flags, or inputs never indexed).
	errNoIDs = errors.New("none of the inputs' ids is in the index")
	// errNoRecords: the inputs hold no record, and the index documents
	// (an upstream that wrote nothing, or blank lines alone).
	errNoRecords = errors.New("the inputs hold no record")
	// errCutShort: a JSON Lines input ends in a line that is not a JSON
	// object and has no line end: a file cut short.
	errCutShort = errors.New("the input ends in the middle of a record")
	// errNotWhole: with --strict, records filter keeps as read,
	// compared with nothing.
	errNotWhole = errors.New("filter cannot deduplicate every record of the inputs")
)

// strictErr is --strict's refusal of what the counts say filter kept
// without comparing it (errNotWhole), or nil.
//
// NB: each is a note without --strict, and a nightly job reads an exit
// status, not notes: it wants to fail on them (a data engineer's review,
// NV1 to NV4).
func (n *filterCounts) strictErr() error {
	var why []string
	if n.unindexed > 0 {
		why = append(why, fmt.Sprintf("%s an id the index does not hold (the first: %q)", counted(n.unindexed, "record has", "records have"), n.firstUnindexed))
	}
	if other := n.repeated - n.copies; other > 0 {
		why = append(why, fmt.Sprintf("%s an id read before with other content", counted(other, "record repeats", "records repeat")))
	}
	if n.edited > 0 {
		why = append(why, fmt.Sprintf("%d of the first %d records compared have another text than their document's (the first: %q)", n.edited, n.compared, n.firstEdited))
	}
	if n.bad > 0 {
		why = append(why, fmt.Sprintf("%s could not be read as documents", counted(n.bad, "record", "records")))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w (--strict): %s; nothing written: insert the inputs as they are (lshdb insert) before filter, or run it without --strict to keep those records as read", errNotWhole, strings.Join(why, "; "))
}

// fate is what a clustering decided for one document.
type fate struct {
	cluster, size int32 // the cluster's number (1-based, largest first) and size
	// rep is the member kept (the representative), or "" for the
	// representative itself.
	rep string
	sim float64 // the exact Jaccard to the representative
}

// fatesOf maps every clustered document to its fate.
func fatesOf(cs []db.Cluster) map[string]fate {
	n := 0
	for _, c := range cs {
		n += len(c.IDs)
	}
	m := make(map[string]fate, n)
	for i, c := range cs {
		for k, id := range c.IDs {
			f := fate{cluster: int32(i + 1), size: int32(len(c.IDs)), sim: c.Jaccard[k]}
			if k > 0 {
				f.rep = c.Representative
			}
			m[id] = f
		}
	}
	return m
}

// The columns (JSON members) filter adds to the records it writes: their
// names and kinds (string, int64 or double).
var (
	// removedCols are the columns of --removed's records.
	removedCols = []docio.Column{{Name: "duplicate_of", Kind: "string"}, {Name: "similarity", Kind: "double"}}
	// annotateCols are the columns --annotate adds to every record.
	annotateCols = []docio.Column{{Name: "cluster_id", Kind: "int64"}, {Name: "cluster_size", Kind: "int64"}, {Name: "duplicate_of", Kind: "string"}, {Name: "similarity", Kind: "double"}}
)

// removedVals are a dropped record's values of removedCols.
func removedVals(f fate) []any { return []any{f.rep, f.sim} }

// annotateVals are a record's values of annotateCols: nulls but the size
// (1) for a record in no cluster, no duplicate_of for a representative.
func annotateVals(f fate, ok bool) []any {
	if !ok {
		return []any{nil, int64(1), nil, nil}
	}
	var dup any
	if f.rep != "" {
		dup = f.rep
	}
	return []any{int64(f.cluster), int64(f.size), dup, f.sim}
}

// sink writes the records of one output (the kept records, or --removed's)
// in the shape of the inputs: the first input's format and compression
// (or --compress, or the output's name), a CSV/TSV header, a Parquet
// schema; with cols added to every record. A file is written beside its
// path and renamed over it when the output is complete.
type sink struct {
	what     string // "--out" or "--removed", for messages
	path     string // "" or "-": stdout
	stdout   io.Writer
	compress string // --compress: auto, none, gzip, zstd
	terminal bool   // stdout is a terminal: never compressed by auto
	cols     []docio.Column
	// idCol is a Parquet input's id column (--id-col), "" when the ids
	// are made (--id-from): an integer one makes duplicate_of an
	// integer column too.
	idCol string
	probe bool // check the inputs' shapes only: nothing is written
	// dup is the index in cols of duplicate_of plus one (0: none), and
	// dupInt whether the Parquet output writes it as int64.
	dup    int
	dupInt bool
	// names are the cols' names, and keys their JSON keys with the
	// colon ("name":), made once.
	names []string
	keys  [][]byte

	started bool
	first   docio.Source
	fields  []string // the first CSV/TSV input's header fields
	tmp     *os.File
	// bw buffers the output and writes it on a goroutine of its own, so
	// that the write calls (as long as the rest of the pass) overlap the
	// reading.
	bw    *docio.AsyncWriter
	zw    io.WriteCloser // the compressor, or nil
	w     io.Writer      // where records go
	pq    *parquetSink
	eol   string // the line end of a record that had none (the input's last line)
	comma byte
	buf   []byte
	// records counts the records written; sum, when --manifest asks
	// for them, the bytes written and their SHA-256.
	records int64
	sum     *summer
}

// compression returns the output's compression: --compress, else a
// file's name (nameCompression: the name says what the file holds), else
// (stdout) the first input's.
func (s *sink) compression(input string) string {
	switch s.compress {
	case "gzip", "zstd":
		return s.compress
	case "none":
		return ""
	}
	if s.path != "" && s.path != "-" {
		// NB: nameWriter's endings: a .gzip name was written plain.
		_, z := nameCompression(s.path)
		return z
	}
	if s.terminal {
		return ""
	}
	return input
}

// outputFormats are the formats an output's name may say (before a .gz
// or .zst; nameFormat): filter writes the input's format back, whatever
// the name.
var outputFormats = map[string]string{".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}

// indexSource is the name of export's source, an index, in a sink's
// checks.
const indexSource = "the index"

// formatNames are the formats' names in messages.
var formatNames = map[string]string{"jsonl": "JSON Lines", "csv": "CSV", "tsv": "TSV", "parquet": "Parquet", "text": "text"}

// nameFits checks the output's name and compression against src, the
// format written: a name that says another format (kept.csv for JSON
// Lines in), or a compression asked for a Parquet output, is refused.
//
// NB: both were ignored, silently: kept.csv held JSON Lines, and
// kept.parquet.gz (or --compress gzip) plain Parquet, a file that
// compresses its own columns.
func (s *sink) nameFits(src docio.Source) error {
	if src.Format == "parquet" {
		if c := s.compression(""); c != "" {
			return usageError{fmt.Errorf("%w: %s is Parquet, written back as Parquet, which compresses its columns itself: %s asks for %s (drop --compress, or the name's .gz or .zst)", errFilterFormat, escControls(src.Name), s.what, c)}
		}
	}
	if s.path == "" || s.path == "-" {
		return nil
	}
	if named := nameFormat(s.path); named != "" && named != src.Format {
		if src.Name == indexSource {
			// NB: export's: it said "filter cannot write this input
			// format … and the index is JSON Lines" (a newcomer's review).
			return usageError{fmt.Errorf("export writes JSON Lines (an object of id, text and meta a line): %s %s names %s (name the output .jsonl, or give it no such extension)", s.what, escControls(s.path), formatNames[named])}
		}
		return usageError{fmt.Errorf("%w: %s %s names %s, but filter writes each input back in its own format, and %s is %s (name the output .%s, or give it no such extension)", errFilterFormat, s.what, escControls(s.path), formatNames[named], escControls(src.Name), cmp.Or(formatNames[src.Format], src.Format), src.Format)}
	}
	return nil
}

// begin takes the shape of an input as its reading starts: the first
// sets the output's, the others must match it.
func (s *sink) begin(src docio.Source) error {
	if s.started {
		return s.same(src)
	}
	switch src.Format {
	case "jsonl", "csv", "tsv", "parquet":
	default:
		return usageError{fmt.Errorf("%w: %s is %s (filter writes back JSON Lines, CSV, TSV and Parquet; for text files use lshdb export)", errFilterFormat, escControls(src.Name), src.Format)}
	}
	s.started, s.first, s.eol = true, src, "\n"
	for i, c := range s.cols {
		s.names = append(s.names, c.Name)
		s.keys = append(s.keys, append(appendJSONValue(nil, c.Name), ':'))
		if c.Name == "duplicate_of" {
			s.dup = i + 1
		}
	}
	if src.Format == "parquet" && s.dup > 0 && s.idCol != "" && integerColumn(src.Schema, s.idCol) {
		// NB: duplicate_of has the id column's type, so that the removed
		// rows join the kept ones as they are (pandas refuses a merge of
		// an int64 column with a string one: an ML dataset user's ML1).
		s.cols = slices.Clone(s.cols)
		s.cols[s.dup-1].Kind = "int64"
		s.dupInt = true
	}
	if src.Format == "csv" || src.Format == "tsv" {
		fields, err := docio.HeaderFields(src)
		if err != nil {
			return fmt.Errorf("%s: the header: %w", escControls(src.Name), err)
		}
		s.fields = fields
		for _, c := range s.cols {
			for _, f := range fields {
				if strings.TrimSpace(f) == c.Name {
					return fmt.Errorf("%w: %s has a column %q", errFieldExists, escControls(src.Name), c.Name)
				}
			}
		}
		s.comma = ','
		if src.Format == "tsv" {
			s.comma = '\t'
		}
		if src.HeaderEnd != "" {
			s.eol = src.HeaderEnd
		}
	}
	if err := s.nameFits(src); err != nil {
		return err
	}
	if s.probe {
		if src.Format == "parquet" {
			// NB: the columns filter adds are checked against the schema.
			_, err := newParquetSink(io.Discard, src, s.cols)
			return err
		}
		return nil
	}
	if src.Format == "parquet" && (s.path == "" || s.path == "-") && s.terminal {
		return usageError{fmt.Errorf("%w: Parquet output to a terminal: give --out FILE", errFilterFormat)}
	}
	if err := s.open(); err != nil {
		return err
	}
	if src.Format == "parquet" {
		pq, err := newParquetSink(s.w, src, s.cols)
		if err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		s.pq = pq
		return nil
	}
	comp := s.compression(src.Compression)
	switch comp {
	case "gzip":
		// NB: BGZF, compressed on every core and read back on every core
		// by lshdb (docio.GzipWriter); any gzip reader reads it.
		zw, err := docio.NewGzipWriter(s.bw, gzip.DefaultCompression)
		if err != nil {
			return err
		}
		s.zw = zw
	case "zstd":
		zw, err := zstd.NewWriter(s.bw)
		if err != nil {
			return err
		}
		s.zw = zw
	}
	if s.zw != nil {
		s.w = s.zw
	}
	if s.fields != nil {
		s.buf = append(s.buf[:0], src.Header...)
		for _, c := range s.cols {
			s.buf = append(s.buf, s.comma)
			s.buf = appendCSVField(s.buf, c.Name, s.comma)
		}
		s.buf = append(s.buf, s.eol...)
		if _, err := s.w.Write(s.buf); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// same checks that a later input has the first one's shape.
func (s *sink) same(src docio.Source) error {
	differ := func(what string) error {
		return fmt.Errorf("%w: %s and %s have different %s: filter them one at a time (one output each)", errInputsDiffer, escControls(s.first.Name), escControls(src.Name), what)
	}
	if src.Format != s.first.Format {
		return differ(fmt.Sprintf("formats (%s, %s)", s.first.Format, src.Format))
	}
	if s.fields != nil {
		fields, err := docio.HeaderFields(src)
		if err != nil || !slices.Equal(fields, s.fields) {
			return differ("headers")
		}
	}
	if src.Format == "parquet" && (src.Schema == nil || s.first.Schema == nil || src.Schema.String() != s.first.Schema.String()) {
		return differ("Parquet schemas")
	}
	return nil
}

// open creates the output: a temporary file beside path, or stdout.
func (s *sink) open() error {
	var w io.Writer = s.stdout
	if s.path != "" && s.path != "-" {
		f, err := createTempFor(s.path)
		if err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		s.tmp, w = f, f
	}
	if s.sum != nil {
		w = io.MultiWriter(w, s.sum) // NB: on the writer's goroutine
	}
	s.bw = docio.NewAsyncWriter(w, 1<<20)
	s.w = s.bw
	return nil
}

// write writes one record: its bytes as read and its line end (or a
// Parquet row), with vals for cols (nil: the record as read).
func (s *sink) write(rec record, vals []any) error {
	if !s.started {
		return fmt.Errorf("%s: a record before its input's shape (a bug)", s.what)
	}
	if s.dup > 0 && vals != nil {
		if rep, ok := vals[s.dup-1].(string); ok {
			switch {
			case s.dupInt:
				n, err := strconv.ParseInt(rep, 10, 64)
				if err != nil {
					return fmt.Errorf("%s: %s: duplicate_of %q is not an integer, as the id column %q is: the index holds ids of other inputs", s.what, rec.pos(), rep, s.idCol)
				}
				vals = slices.Clone(vals)
				vals[s.dup-1] = n
			case rec.idNumber && isJSONNumber(rep):
				// NB: written as the record's own id is, a number (ML1).
				vals = slices.Clone(vals)
				vals[s.dup-1] = jsonNumber(rep)
			}
		}
	}
	s.records++ // NB: a failed write fails the output: the count is never read
	if s.pq != nil {
		return s.fail(s.pq.write(rec, vals))
	}
	end := rec.end
	if end == "" {
		end = s.eol // NB: an input's last line: the next input's first must not join it
	} else {
		s.eol = end
	}
	b := s.buf[:0]
	switch {
	case vals == nil:
		b = append(b, rec.raw...)
	case s.fields != nil:
		b = append(b, rec.raw...)
		for _, v := range vals {
			b = append(b, s.comma)
			b = appendCSVField(b, csvValue(v), s.comma)
		}
	default:
		var err error
		if b, err = s.appendMembers(b, rec, vals); err != nil {
			return err
		}
	}
	b = append(b, end...)
	s.buf = b
	_, err := s.w.Write(b)
	return s.fail(err)
}

// fail names the output in a write error.
func (s *sink) fail(err error) error {
	if err == nil {
		return nil
	}
	name := s.path
	if name == "" || name == "-" {
		return err // NB: as is: a closed pipe (| head) ends the command quietly
	}
	return fmt.Errorf("%s %s: %w", s.what, escControls(name), err)
}

// flush is the first half of finishing an output (finishSinks, then
// commit): when ok, it writes out what is buffered (the compressor's and
// Parquet's ends too) and syncs the file; either way it ends the writer's
// goroutines. The file stays where it is. An output that never started
// (no input record) is still made: empty, or of the first input's
// header.
func (s *sink) flush(ok bool) error {
	if !s.started {
		if !ok {
			return nil
		}
		if err := s.open(); err != nil {
			return err
		}
	}
	var err error
	if ok {
		if s.pq != nil {
			err = s.pq.close()
		}
		if s.zw != nil {
			err = errors.Join(err, s.zw.Close())
		}
		err = errors.Join(err, s.bw.Flush())
	} else if s.zw != nil {
		s.zw.Close() // NB: ends the compressor's goroutines; the file goes
	}
	if s.bw != nil {
		s.bw.Close() // NB: ends the writer's goroutine (after Flush: its error is Flush's)
	}
	if ok && err == nil && s.tmp != nil && !writtenInPlace(s.tmp) {
		err = s.tmp.Sync()
	}
	return err
}

// commit is finish's second half: it renames the flushed file over its
// path when ok and flushErr is nil, else removes it, and returns the
// output's error, named.
func (s *sink) commit(ok bool, flushErr error) error {
	if s.tmp == nil {
		return s.fail(flushErr)
	}
	return s.fail(commitTemp(s.tmp, s.path, ok, flushErr))
}

// record is what filter copies of an input record: its bytes as read and
// the line end after them, or its Parquet row, and where it was read.
type record struct {
	// idNumber: the record's id was a number (docio.Record.IDNumber).
	idNumber bool
	raw      []byte
	end      string
	row      parquet.Row
	// file and line say where it was read (line 0: a Parquet row or an
	// exported document, named by file alone).
	file string
	line int
}

// pos is where the record was read, for messages.
func (r *record) pos() string {
	if r.line == 0 {
		return escControls(r.file)
	}
	return fmt.Sprintf("%s:%d", escControls(r.file), r.line)
}

// appendMembers appends the JSON object rec.raw with the sink's columns
// added as its last members.
func (s *sink) appendMembers(b []byte, rec record, vals []any) ([]byte, error) {
	raw := bytes.TrimRight(rec.raw, " \t\r")
	if len(raw) == 0 || raw[len(raw)-1] != '}' {
		return b, fmt.Errorf("%s: not a JSON object (a bug: it was read as one)", rec.pos())
	}
	if name, ok := docio.MemberOf(raw, s.names); ok {
		return b, fmt.Errorf("%w: %s has a field %q", errFieldExists, rec.pos(), name)
	}
	body := raw[:len(raw)-1]
	b = append(b, body...)
	empty := len(bytes.TrimSpace(bytes.TrimLeft(bytes.TrimSpace(body), "{"))) == 0
	for i, key := range s.keys {
		if i > 0 || !empty {
			b = append(b, ',')
		}
		b = appendJSONValue(append(b, key...), vals[i])
	}
	return append(b, '}'), nil
}

// jsonNumber is a number as written in JSON (a numeric id's digits).
type jsonNumber string

// isJSONNumber reports whether s is a JSON number as written.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// integerColumn reports whether the Parquet schema's column at path (a
// dotted path into groups) holds integers.
func integerColumn(schema *parquet.Schema, path string) bool {
	if schema == nil {
		return false
	}
	leaf, ok := schema.Lookup(strings.Split(path, ".")...)
	if !ok {
		return false
	}
	k := leaf.Node.Type().Kind()
	return k == parquet.Int32 || k == parquet.Int64
}

// appendJSONValue appends v (nil, string, jsonNumber, int64 or float64)
// as JSON, a string as the command's JSON output writes it
// (writeJSONLine).
func appendJSONValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case jsonNumber:
		return append(b, v...)
	case string:
		q, _ := marshalJSON(v) // NB: a string always marshals
		return append(b, escapeJSONControls(q)...)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		return appendSimilarity(b, v) // NB: similarity, the one float
	}
	return append(b, "null"...)
}

// csvValue is v as a CSV field: "" for null.
func csvValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return string(appendSimilarity(nil, v))
	}
	return ""
}

// appendCSVField appends s as one CSV/TSV field, quoted (RFC 4180) when it
// holds the separator, a quote, a line end or edge spaces.
func appendCSVField(b []byte, s string, comma byte) []byte {
	if !strings.ContainsAny(s, "\"\r\n"+string(comma)) && strings.TrimSpace(s) == s {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

// dedupFlags are the flags filter and export share: the clustering's
// (threshold, mode, keep, a pairs file) and the outputs'.
type dedupFlags struct {
	threshold                    float64
	cf                           clusterFlags
	out, removed, from, compress string
	manifest                     string
	// strict refuses a --from file that cannot be checked (filter
	// --strict): empty, or with no header (a redirect cut short).
	strict bool
}

func (f *dedupFlags) add(c *cobra.Command, outHelp, removedHelp, stdoutCompress string) {
	c.Flags().Float64Var(&f.threshold, "threshold", 0, "least Jaccard (default: the index's)")
	c.Flags().StringVar(&f.out, "out", "", outHelp)
	c.Flags().StringVar(&f.removed, "removed", "", removedHelp)
	c.Flags().StringVar(&f.from, "from", "", "make the clusters from this file of pairs --output json (- for stdin) instead of finding the pairs")
	c.Flags().StringVar(&f.compress, "compress", "auto", "the outputs' compression: auto (a file's by its name, .gz or .zst, else none; stdout's "+stdoutCompress+"), none, gzip or zstd")
	c.Flags().StringVar(&f.manifest, "manifest", "", "also write a JSON record of the run to this file: the index's state and parameters, the clustering's, each input's size, time and SHA-256, each output's records, size and SHA-256, the counts and notes; its old version is removed before the outputs are replaced, and it is written after them")
	f.cf.add(c, db.Centers)
}

// fileKind names the type of a pipe or a socket.
func fileKind(m os.FileMode) string {
	if m&os.ModeSocket != 0 {
		return "a socket"
	}
	return "a pipe"
}

// check validates the flags: the threshold, the mode and keep policy.
func (f *dedupFlags) check(c *cobra.Command) (float64, db.ClusterMode, db.KeepPolicy, error) {
	t, err := thresholdFlag(c, f.threshold)
	if err != nil {
		return 0, "", "", err
	}
	mode, keep, err := f.cf.options()
	if err != nil {
		return 0, "", "", err
	}
	switch f.compress {
	case "auto", "none", "gzip", "zstd":
	default:
		return 0, "", "", usagef("--compress %q: want auto, none, gzip or zstd", f.compress)
	}
	switch {
	case f.removed == "":
	case (f.out == "" || f.out == "-") && isStdout(f.removed):
		// NB: --removed /dev/stdout mixed the two (a review).
		return 0, "", "", usagef("--removed %s is standard output, where the kept documents go: give --out FILE or --removed FILE", f.removed)
	case filepath.Clean(f.out) == filepath.Clean(f.removed) || sameFile(f.out, f.removed) || isStdout(f.out) && isStdout(f.removed):
		return 0, "", "", usagef("--out and --removed are the same file")
	}
	for _, o := range []struct{ flag, path string }{{"--out", f.out}, {"--removed", f.removed}} {
		if err := compressionNameFits(o.flag, o.path); err != nil {
			return 0, "", "", err
		}
	}
	if err := f.checkManifest(c); err != nil {
		return 0, "", "", err
	}
	return t, mode, keep, nil
}

// notInputs refuses an output (--out, --removed) that is one of the
// inputs, by name or as the same file (a link, another path): the output
// replaces its file when complete, so the input would be lost.
func (f *dedupFlags) notInputs(inputs []string) error {
	if f.from != "" && f.from != "-" {
		inputs = append(slices.Clone(inputs), f.from) // NB: read by the clustering
	}
	for _, out := range []struct{ flag, path string }{{"--out", f.out}, {"--removed", f.removed}, {"--manifest", f.manifest}} {
		if in, ok := outputIsInput(out.path, inputs); ok {
			return usagef("%s %s is the input %s: filter would replace the file it reads; write elsewhere", out.flag, escControls(out.path), escControls(in))
		}
	}
	return nil
}

// outputIsInput reports which of inputs the output path out is, or holds
// it (a directory read whole): the same name, the same file under another
// name, or a file inside the directory. "" and "-" (stdout) are none.
func outputIsInput(out string, inputs []string) (string, bool) {
	if out == "" || out == "-" {
		return "", false
	}
	ost, oerr := os.Stat(out)
	aout, aerr := filepath.Abs(out)
	if aerr == nil {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(aout)); err == nil {
			aout = filepath.Join(dir, filepath.Base(aout))
		}
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		if filepath.Clean(in) == filepath.Clean(out) {
			return in, true
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if oerr == nil && os.SameFile(ist, ost) {
			return in, true
		}
		if ist.IsDir() && aerr == nil {
			ain, err := filepath.Abs(in)
			if err == nil {
				if real, err := filepath.EvalSymlinks(ain); err == nil {
					ain = real
				}
				if rel, err := filepath.Rel(ain, aout); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					return in, true
				}
			}
		}
	}
	return "", false
}

// fates clusters d as the flags say, with a recall note on stderr when
// the threshold is below the index's.
func (f *dedupFlags) fates(a *app, d index, t float64, mode db.ClusterMode, keep db.KeepPolicy) (map[string]fate, int, error) {
	rec := recallNote(d, t, false)
	if f.from == "" {
		a.warnRecall(d, t, rec, false)
	}
	var unchecked string
	cs, err := a.clusters(d, f.from, &db.PairsOptions{Threshold: t, Mode: mode, Keep: keep}, func(s string) {
		if f.strict && unchecked == "" {
			unchecked = s
			return
		}
		a.warnf(s)
	})
	if err != nil {
		return nil, 0, err
	}
	if unchecked != "" {
		return nil, 0, fmt.Errorf("%w (--strict): the pairs file is refused, not taken: %s; nothing written: make the file with pairs --output json --header --out FILE, which is checked whole", errNotWhole, unchecked)
	}
	return fatesOf(cs), len(cs), nil
}

// sinks are the outputs: the kept records (with keptCols added) and, with
// --removed, the removed ones.
func (f *dedupFlags) sinks(a *app, keptCols []docio.Column, idCol string) (kept, drop *sink) {
	kept = &sink{what: "--out", path: f.out, stdout: a.stdout, compress: f.compress, terminal: a.stdoutIsTerminal(), cols: keptCols, idCol: idCol}
	if f.removed != "" {
		drop = &sink{what: "--removed", path: f.removed, compress: f.compress, cols: removedCols, idCol: idCol}
	}
	if f.manifest != "" {
		for _, s := range []*sink{kept, drop} {
			if s != nil {
				s.sum = newSummer()
			}
		}
	}
	return kept, drop
}

// finishSinks completes the outputs when err is nil, else removes them;
// it returns err or the first output's failure. The two files are
// replaced both or neither: each is written out and synced first, and
// renamed over its path only once both were. m, when --manifest asks for
// one, is the run's record: written out once the outputs are, its old
// version removed before they are put in place, and put in place after
// them.
//
// NB: each was finished and renamed in turn, and a full disk showed at
// the second's last flush, after the first was in place: tonight's
// removed records beside last night's kept ones, exit 1 (a nightly
// operator's review, N1).
//
// Two renames are not one step: the second file's old version is
// removed before the first rename (removeReplaced).
func finishSinks(err error, kept, drop *sink, m *manifest) error {
	ok := err == nil
	sinks := slices.DeleteFunc([]*sink{kept, drop}, func(s *sink) bool { return s == nil })
	flushed := make([]error, len(sinks))
	for i, s := range sinks {
		if flushed[i] = s.flush(ok); flushed[i] != nil {
			ok = false
		}
	}
	var merr error
	if m != nil {
		if ok {
			merr = m.prepare(sinks)
		}
		if m.inputs != nil && !ok {
			m.inputs.abandon() // NB: a failed pass leaves no hashing behind
		}
		ok = ok && merr == nil
	}
	if ok && len(sinks) == 2 && sinks[0].tmp != nil && !writtenInPlace(sinks[0].tmp) {
		if rerr := removeReplaced(sinks[1].tmp, sinks[1].path); rerr != nil {
			flushed[1], ok = rerr, false
		}
	}
	if m != nil && ok {
		// NB: the old record goes before the first output is replaced: a
		// record beside the outputs is theirs. After the old --removed
		// file, whose removal may fail: the old outputs and record then
		// stay as they were (a read-through's R7).
		if merr = m.fail(removeReplaced(m.tmp, m.path)); merr != nil {
			ok = false
		}
	}
	placed := ok
	for i, s := range sinks {
		if cerr := s.commit(ok, flushed[i]); cerr != nil {
			err, placed = cmp.Or(err, cerr), false
		}
		if i == 0 && ok && sinksRenaming != nil {
			sinksRenaming()
		}
	}
	if m != nil {
		// NB: last, and only once every output is in place.
		if cerr := m.commit(placed, merr); cerr != nil {
			err = cmp.Or(err, cerr)
		}
	}
	return err
}

// sinksRenaming, when a test sets it, runs between the renames of
// finishSinks' two files.
var sinksRenaming func()

// filterCounts are what a filter run did, for its summary line.
type filterCounts struct {
	read, kept, removed int64
	bad                 int64 // records not read as documents (not in the index): kept as read
	blank               int64 // records of a blank text, which a build skips: kept, compared with nothing
	repeated            int64 // records whose id an earlier record had
	// copies are the repeated records that were the same bytes as the
	// first record of their id; exact those of them removed as its
	// duplicates (the others went with their id's fate: removed with a
	// removed id).
	copies, exact int64
	copyKind      string // how copies were compared: byte for byte, or value for value (Parquet rows)
	clusters      int
	// sampled are the ids checked against the index before the
	// clustering (sampleIDs), found those it holds.
	sampled, found int
	// outside are the removed records whose kept document no input
	// record has (the index holds it from other inputs), outsideReps
	// those kept documents.
	outside, outsideReps int64
	// unindexed are the records (each id's first) whose id the index
	// does not hold: kept as read, compared with nothing.
	unindexed      int64
	firstUnindexed string
	// compared, edited and firstEdited are sampleIDs' texts compared.
	compared, edited int
	firstEdited      string
}

func (a *app) filterCmd() *cobra.Command {
	var in inputFlags
	var df dedupFlags
	var annotate, strict bool
	c := &cobra.Command{
		Use: "filter --db DIR [--out FILE] [--removed FILE | --annotate] [--mode centers|components] [--keep first|last|longest|shortest] INPUT...",
		Example: `  # The corpus without its near-duplicates, in its own format
  lshdb build --db idx docs.jsonl.gz
  lshdb filter --db idx --out kept.jsonl.gz --removed removed.jsonl.gz docs.jsonl.gz

  # Every record, with its cluster and what it duplicates
  lshdb filter --db idx --annotate --out annotated.csv docs.csv`,
		Short: "Write the input files again without their near-duplicates",
		Long: `Write the input files again, less the documents a clustering of the index
drops: each cluster keeps one member (--keep) and the others are removed.
Every kept record is written as it was read, byte for byte (its fields,
their order, its line end), in the input's format: JSON Lines, CSV or TSV
(with the input's header), or Parquet (with the input's schema). The
output file is compressed as its name says (.gz for gzip, .zst for zstd,
else not); stdout as the first input; --compress overrides both. A Parquet
output compresses its own columns: a compression asked for it is refused;
so is a name that says another format than the input's (kept.csv for JSON
Lines in).

The index must have been built from these inputs with the same id flags
(--id-field, --id-col, --id-from): records are matched to documents by id.
A record that is not in any cluster is kept, including one the index
refused (a bad record) and one it never saw. The ids of the first 1,000
documents are checked against the index before the clustering: if it
holds none of them, filter fails, writing nothing (other id flags, or
inputs it was not built from). Every record whose id the index lacks is
counted in a note. A record is judged by its document's text: one edited
since the build is judged by the text the index holds (the first 200
records' texts are compared with their documents', and a note counts
those that differ). --strict refuses, writing nothing (exit 1), inputs
with any such record (an edited text beyond those 200 is not seen), or a
record repeating an id with other content, or one not read as a
document: for a nightly job that must not pass on a corpus it could not
wholly deduplicate. Records of blank text are kept as read, with a note,
--strict or not.

--removed FILE writes the removed records in the same format, each with
duplicate_of (the id kept: a number where the ids are numbers, an int64 column where a Parquet id column holds integers) and similarity (its exact Jaccard to it)
added. --annotate writes every record with cluster_id, cluster_size,
duplicate_of and similarity added (null, size 1, outside any cluster);
a record repeated byte for byte (or, with --id-from hash, one that repeats
a text) is marked the duplicate of its first copy (its own id, similarity
1), with its id's cluster (the index's documents: cluster_size does not
count the copies).

--mode centers (the default here) drops only documents at or above the
threshold to the one kept; components drops whole chains. --from takes
the pairs from a file of pairs --output json.

The inputs' shapes (formats, headers, schemas) are checked before the
clustering, and read again after it. Outputs are written beside their
names and renamed when complete; an interrupted or failed run leaves no
partial file. The summary goes to stderr. A gzip output is BGZF (blocked
gzip, as bgzip writes it: any gzip reader reads it), compressed on every
core. A BGZF input is inflated on every core, any other gzip on one:
zstd inputs are read several times faster.`,
		RunE: func(c *cobra.Command, args []string) error {
			t, mode, keep, err := df.check(c)
			if err != nil {
				return err
			}
			if annotate && df.removed != "" {
				return usagef("--annotate writes every record to --out: --removed has nothing to take")
			}
			if len(args) == 0 {
				return usagef("give the input files the index was built from (filter reads them after clustering: files, not stdin)")
			}
			for _, p := range args {
				if p == "-" {
					return usagef("filter reads its inputs after clustering: give files, not stdin")
				}
				// NB: it reads each input three times (its shape, a
				// sample of its ids, the pass that writes): a pipe, such
				// as <(zcat f), gave an empty output and exit 0, and a
				// FIFO hung at its second opening.
				if st, err := os.Stat(p); err == nil && st.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
					return usagef("filter reads its inputs three times, after clustering: %s is not a file (%s): write it to a file first", escControls(p), fileKind(st.Mode()))
				}
			}
			if err := in.check(args); err != nil {
				return err
			}
			if err := df.notInputs(args); err != nil {
				return err
			}
			return a.withIndex(func(d index) error {
				// NB: the inputs' shapes are checked before the clustering,
				// so that one filter cannot write back fails at once.
				names, dropNames := df.sinks(a, nil, "") // NB: their names only: nothing is opened
				if err := checkShapes(a.ctx, args, &in, addedCols(df.removed != "", annotate), names, dropNames); err != nil {
					return err
				}
				docs, err := d.Count()
				if err != nil {
					return err
				}
				// NB: and their ids, so that inputs the index does not
				// hold (other id flags) fail before anything is written,
				// stdout included, not after a copy of the input.
				ids, err := sampleIDs(a.ctx, args, &in, d.HasIDs, d.Get)
				if err != nil {
					return err
				}
				if docs > 0 && ids.sampled > 0 && ids.found == 0 {
					return fmt.Errorf("%w: none of the first %d ids read (the first: %q) is one of the index's %d documents: give the id flags the index was built with (--id-field, --id-col, --id-from), and inputs it was built from", errNoIDs, ids.sampled, ids.first, docs)
				}
				start := time.Now() // NB: the clustering's lines and the reading's count from it
				man, err := a.newManifest(df.manifest, d, "filter", t, start)
				if err != nil {
					return err
				}
				df.strict = strict
				fates, _, err := df.fates(a, d, t, mode, keep)
				if err != nil {
					return interruptNote(err, "filter interrupted while clustering: nothing written")
				}
				var keptCols []docio.Column
				if annotate {
					keptCols = annotateCols
				}
				idCol := in.IDCol
				if in.IDFrom != "" {
					idCol = "" // NB: made ids are strings
				}
				kept, drop := df.sinks(a, keptCols, idCol)
				f := newFilterer(fates, kept, drop, annotate)
				f.textIDs = in.IDFrom == "hash"
				f.n.sampled, f.n.found = ids.sampled, ids.found
				f.n.compared, f.n.edited, f.n.firstEdited = ids.compared, ids.edited, ids.firstEdited
				f.has = d.HasIDs
				if man != nil {
					man.inputs = newInputSums()
					f.inputs = man.inputs
					man.body.Mode, man.body.Keep, man.body.From, man.body.Strict = string(mode), string(keep), df.from, strict
				}
				// NB: nfkc removes format characters, so that a text of
				// them alone is empty to the build (a multilingual user's
				// U4: filter's note counted white space only).
				in.Options.BlankFormat = d.Params().Normalization == minhash.NormalizeNFKC
				err = a.filter(args, &in, f, start)
				f.countOutside()
				if err == nil && strict {
					err = f.n.strictErr()
				}
				if err == nil && docs > 0 && f.n.read == 0 {
					// NB: an empty or blank input wrote an empty output
					// with exit 0 (a data engineer's review, NV4).
					err = fmt.Errorf("%w, and the index holds %s: an empty or blank input (an upstream that wrote nothing?) is refused, writing nothing", errNoRecords, counted(docs, "document", "documents"))
				}
				if err == nil && docs > 0 && f.n.read > 0 && f.n.bad == f.n.read {
					// NB: every record kept as read, none matched to the
					// index: a wrong flag, not a clean corpus.
					err = fmt.Errorf("%w (the index holds %d documents; the first record: %v): give the id and text flags the index was built with (--id-field, --id-col, --id-from, --text-field, --text-col)", errNoDocuments, docs, f.firstBad)
				}
				summary, notes := filterSummary(f.n, cmp.Or(t, d.Params().Threshold), mode, keep), filterNotes(f.n)
				if man != nil {
					man.body.Summary, man.body.Notes, man.body.Counts = summary, notes, countsOf(f.n)
				}
				if err := finishSinks(err, kept, drop, man); err != nil {
					return interruptNote(err, "filter interrupted: no output written")
				}
				fmt.Fprintln(a.stderr, summary)
				for _, note := range notes {
					fmt.Fprintf(a.stderr, "lshdb: note: %s\n", note)
				}
				return nil
			})
		},
	}
	in.add(c)
	c.Flags().Lookup("skip-bad").Hidden = true // NB: filter keeps bad records as read
	c.Flags().Lookup("rejects").Hidden = true
	c.Flags().Lookup("meta-field").Hidden = true
	df.add(c, "the file of the kept records (default: stdout)", "also write the removed records to this file, with duplicate_of and similarity", "as the input")
	c.Flags().BoolVar(&annotate, "annotate", false, "keep every record and add cluster_id, cluster_size, duplicate_of and similarity")
	c.Flags().BoolVar(&strict, "strict", false, "refuse, writing nothing, inputs that filter cannot wholly deduplicate: records the index does not hold, ids repeated with other content, texts other than their documents' (of the first 200 records whose documents keep their text: a sample, not every record), records not read as documents (each kept as read, with a note, without it); records of blank text pass, kept as read; and a --from pairs file that cannot be checked (empty, with no header line, or with an earlier lshdb's header), taken with a warning without it")
	return c
}

// filterer sends each input record to its sink by the fates.
type filterer struct {
	fates      map[string]fate
	kept, drop *sink
	annotate   bool
	n          filterCounts
	clusters   map[int32]struct{}
	// seen maps the hash of every id read to the hash of its first
	// record's bytes (0: none, a Parquet row), for repeats.
	seen map[uint64]uint64
	// removedFor counts the removed records by the hash of the id kept
	// in their place, to tell at the end those whose kept document is
	// in no input (outside).
	removedFor map[uint64]int64
	firstBad   error // why the first bad record is one
	// textIDs: the ids are the hashes of the texts (--id-from hash), so
	// a repeated id is a repeated text.
	textIDs bool
	// digest and scratch hash Parquet rows (rowHash).
	digest  *xxhash.Digest
	scratch []byte
	// has tells which ids the index holds (nil: not asked, as in
	// export, whose records are the index's); unasked are the ids of
	// records in no cluster waiting to be asked, in batches, which
	// asking (nil until the first) takes to asker.
	has     func([]string) ([]bool, error)
	unasked []string
	asking  chan []string
	asked   chan error // asker's end: nil, or its first error
	// inputs hashes the inputs as they are read, for --manifest (nil:
	// none asked for, or export's).
	inputs *inputSums
}

// askBatch is how many ids of records in no cluster filter asks the
// index for at once.
const askBatch = 4096

// ask sends unasked to be asked for, flush: and waits for every batch's
// answer, counted in filterCounts.unindexed.
//
// NB: on a goroutine of its own, beside the copying: asked on the
// copying's (a record read and looked up for each id), filter of 200,000
// generated documents took 1.36-1.40x its time.
func (f *filterer) ask(flush bool) error {
	if f.asking == nil && len(f.unasked) > 0 {
		f.asking, f.asked = make(chan []string, 2), make(chan error, 1)
		go f.asker()
	}
	if len(f.unasked) > 0 {
		f.asking <- f.unasked
		f.unasked = make([]string, 0, askBatch)
	}
	if !flush || f.asking == nil {
		return nil
	}
	close(f.asking)
	err := <-f.asked
	f.asking = nil
	return err
}

// asker asks the index for the batches of ids that ask sends, in order,
// and counts those it does not hold; past an error it drains them.
func (f *filterer) asker() {
	var first error
	for ids := range f.asking {
		if first != nil {
			continue
		}
		held, err := f.has(ids)
		if err != nil {
			first = err
			continue
		}
		for i, ok := range held {
			if !ok {
				if f.n.unindexed == 0 {
					f.n.firstUnindexed = ids[i]
				}
				f.n.unindexed++
			}
		}
	}
	f.asked <- first
}

// rowHash hashes a Parquet row's values: each one's column, kind, levels,
// whether it is null, its bytes' length and its bytes, so that two rows
// hash alike only if their values are the same.
func (f *filterer) rowHash(row parquet.Row) uint64 {
	if f.digest == nil {
		f.digest = xxhash.New()
	}
	d := f.digest
	d.Reset()
	var buf [32]byte
	for _, v := range row {
		hdr := buf[:0]
		hdr = binary.AppendVarint(hdr, int64(v.Column()))
		hdr = append(hdr, byte(v.Kind()))
		hdr = binary.AppendUvarint(hdr, uint64(v.RepetitionLevel()))
		hdr = binary.AppendUvarint(hdr, uint64(v.DefinitionLevel()))
		if v.IsNull() {
			d.Write(append(hdr, 0))
			continue
		}
		f.scratch = v.AppendBytes(f.scratch[:0])
		d.Write(binary.AppendUvarint(append(hdr, 1), uint64(len(f.scratch))))
		d.Write(f.scratch)
	}
	return d.Sum64()
}

func newFilterer(fates map[string]fate, kept, drop *sink, annotate bool) *filterer {
	return &filterer{fates: fates, kept: kept, drop: drop, annotate: annotate,
		clusters: map[int32]struct{}{}, seen: make(map[uint64]uint64, len(fates)), removedFor: map[uint64]int64{}}
}

// begin starts an input in the outputs.
func (f *filterer) begin(src docio.Source) error {
	// NB: every input has the first one's format (sink.same).
	f.n.copyKind = "byte for byte"
	switch {
	case f.textIDs:
		f.n.copyKind = "of the text (--id-from hash)"
	case src.Format == "parquet":
		f.n.copyKind = "value for value" // NB: rows are compared, not bytes
	}
	if err := f.kept.begin(src); err != nil {
		return err
	}
	if f.drop != nil {
		if err := f.drop.begin(src); err != nil {
			return err
		}
	}
	if f.inputs != nil {
		f.inputs.add(src.Name)
	}
	return nil
}

// bad keeps a record that could not be read as a document, as read;
// why: why not.
func (f *filterer) bad(rec record, why error) error {
	// NB: and no JSON at all: a whole object the build skipped as bad
	// (no text, say) is kept as read, wherever it is (a read-through's
	// R1).
	if f.kept.first.Format == "jsonl" && rec.end == "" && rec.raw != nil && !json.Valid(rec.raw) {
		// NB: a last line with no line end that is no JSON object is a
		// file cut short (an upload, a copy, a disk full): it was kept as
		// read, and the output's last line was no JSON, with exit 0 (a
		// data engineer's review, NV4).
		return fmt.Errorf("%w: %v (a file cut short?): nothing written; give the whole file", errCutShort, why)
	}
	f.n.read++
	f.n.bad++
	f.n.kept++
	var vals []any
	if f.annotate && f.kept.first.Format != "jsonl" {
		vals = annotateVals(fate{}, false) // NB: a bad JSON line takes no members
	}
	return f.kept.write(rec, vals)
}

// take sends the record of document id to its sink; blank: its text is
// blank (a build skips it: in no index, and said apart).
func (f *filterer) take(id string, rec record, blank bool) error {
	f.n.read++
	h := xxhash.Sum64String(id)
	var bh uint64 // the record's bytes' (or row's values') hash, never 0
	switch {
	case rec.raw != nil:
		bh = xxhash.Sum64(rec.raw) | 1
	case rec.row != nil:
		bh = f.rowHash(rec.row) | 1
	}
	first, repeat := f.seen[h]
	if repeat {
		f.n.repeated++
	} else {
		f.seen[h] = bh
	}
	ft, ok := f.fates[id]
	if ok {
		f.clusters[ft.cluster] = struct{}{}
	}
	// NB: a record in no cluster is a document with no near-duplicate,
	// or one the index does not hold (inserted after the build, or never:
	// a later part of the input than the sample checked): kept as read
	// either way, but only the first is deduplicated. They were told
	// apart for the first 1,000 ids alone, and 2,000 records never built,
	// 406 of them near-copies, were kept without a word (a data
	// engineer's review, NV1).
	// NB: not an id no index takes (empty, too long, not UTF-8: a build
	// skipped it as a bad record, and said so), which HasIDs refuses.
	if !ok && !repeat && !blank && f.has != nil && db.CheckID(id) == nil {
		if f.unasked = append(f.unasked, id); len(f.unasked) == askBatch {
			if err := f.ask(false); err != nil {
				return err
			}
		}
	}
	dropped := ok && ft.rep != ""
	// NB: the index holds one document per id, so the records of an id
	// share its fate; but an input that holds a record twice (the same id,
	// the same bytes) would keep both copies of a kept id. A later copy of
	// the first record is removed as its duplicate (similarity 1); with
	// --annotate it is written so marked (it was marked kept, and a user
	// who kept the rows of no duplicate_of got the copies back).
	//
	// NB: with ids made from the texts (--id-from hash), a record that
	// repeats an id repeats its text, whatever its other fields: both
	// were kept, at Jaccard 1 (a review).
	copied := repeat && (bh != 0 && bh == first || f.textIDs)
	if copied {
		f.n.copies++
	}
	if copied && !dropped {
		f.n.removed++
		f.n.exact++
		if f.annotate {
			// NB: cluster_id and cluster_size are its id's (the index's
			// documents: a copy is none of them).
			vals := annotateVals(ft, ok)
			vals[2], vals[3] = id, 1.0
			return f.kept.write(rec, vals)
		}
		if f.drop != nil {
			return f.drop.write(rec, removedVals(fate{rep: id, sim: 1}))
		}
		return nil
	}
	if dropped {
		f.n.removed++
	} else {
		f.n.kept++
	}
	switch {
	case f.annotate:
		return f.kept.write(rec, annotateVals(ft, ok))
	case dropped:
		f.removedFor[xxhash.Sum64String(ft.rep)]++
		if f.drop != nil {
			return f.drop.write(rec, removedVals(ft))
		}
		return nil
	}
	return f.kept.write(rec, nil)
}

// countOutside counts, once every input was read, the removed records
// whose kept document no input record has (filterCounts.outside).
func (f *filterer) countOutside() {
	for rep, n := range f.removedFor {
		if _, ok := f.seen[rep]; !ok {
			f.n.outside += n
			f.n.outsideReps++
		}
	}
}

// readOptions are the docio options of filter's reading of the inputs.
func readOptions(in *inputFlags, onSource func(docio.Source) error) docio.Options {
	o := in.readOptions()
	o.Rows, o.SkipText = true, true
	// NB: a record is copied, never parsed into a document: the index's
	// record limit does not apply, only a bound on memory.
	o.MaxRecordBytes = max(o.MaxRecordBytes, 1<<30)
	if onSource != nil {
		o.OnSource = func(src docio.Source) error {
			if err := in.fitsSource(src); err != nil {
				return err
			}
			return onSource(src)
		}
	}
	return o
}

// idSample is what sampleIDs found.
type idSample struct {
	sampled, found int
	first          string // the first id checked
	// compared are the documents found whose text the index keeps,
	// edited those of them whose text is not the record's, firstEdited
	// the first of these.
	compared, edited int
	firstEdited      string
}

// idSampleSize is how many ids sampleIDs checks.
const idSampleSize = 1000

// textSampleSize is of how many of them, at most, sampleIDs compares the
// texts. NB: a Get each (a request each when attached); it looks for
// inputs edited or made again since the build, not for each edit.
const textSampleSize = 200

// sampleIDs checks the ids of the inputs' first idSampleSize documents
// with text, all at once (has: whether the index holds each id; one
// request when attached). Records that cannot be read as documents,
// repeated ids, ids no index takes (empty, too long, not UTF-8: the build
// skipped them as bad records, and filter keeps them as read) and texts
// with no letter or digit (which the build skips as empty) are not
// counted.
//
// It compares the text of each document found whose text the index keeps
// with the record's (get: the document of an id): filter judges a record
// by its document's text, and 200 records edited since the build gave 253
// exact copies in a kept output, without a word (a data engineer's
// review, NV2).
func sampleIDs(ctx context.Context, paths []string, in *inputFlags, has func([]string) ([]bool, error), get func(string) (*db.StoredDoc, error)) (idSample, error) {
	var s idSample
	// NB: the record limit of a build, not the copying pass's bound of 1
	// GiB (readOptions): a record over it is in no index, and the sample
	// passes over it rather than joining it whole (an adversarial
	// review's A4).
	o := in.Options
	// NB: and it ends at a line past that limit, without reading on to
	// its end: filter of /dev/zero read for ever here (a read-through's
	// R1). The pass that copies the records reads it again, and stops
	// there unless --skip-bad.
	o.LongStops = true
	// NB: each id's text as a hash, of its last record read: the build
	// keeps an id's last record, and a repeat was said to be edited; and
	// texts of up to 64 MiB each, kept whole, took a gigabyte (a
	// read-through's R3, R4).
	at := map[string]int{}
	var ids []string
	var texts []uint64
reading:
	for r, err := range docio.Read(ctx, paths, nil, o) {
		var re *docio.RecordError
		switch {
		case errors.As(err, &re):
			continue
		case errors.Is(err, docio.ErrTooLong):
			break reading
		case err != nil:
			return s, err
		case !hasContent(r.Text) || db.CheckID(r.ID) != nil:
			continue
		}
		if i, ok := at[r.ID]; ok {
			texts[i] = xxhash.Sum64String(r.Text)
			continue
		}
		at[r.ID] = len(ids)
		texts = append(texts, xxhash.Sum64String(r.Text))
		if ids = append(ids, r.ID); len(ids) == idSampleSize {
			break
		}
	}
	if len(ids) == 0 {
		return s, nil
	}
	found, err := has(ids)
	if err != nil {
		return s, err
	}
	s.first, s.sampled = ids[0], len(ids)
	for i, ok := range found {
		if !ok {
			continue
		}
		s.found++
		if s.compared == textSampleSize {
			continue
		}
		doc, err := get(ids[i])
		if errors.Is(err, db.ErrNotFound) {
			continue // NB: deleted since, or expired
		} else if err != nil {
			return s, err
		}
		if !doc.HasText {
			continue
		}
		s.compared++
		if xxhash.Sum64String(doc.Text) != texts[i] {
			if s.edited == 0 {
				s.firstEdited = ids[i]
			}
			s.edited++
		}
	}
	return s, nil
}

// hasContent reports whether text has a letter or a digit.
func hasContent(text string) bool {
	return strings.IndexFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// errShapeRead stops checkShapes' reading of an input at its shape.
var errShapeRead = errors.New("filter: shape read")

// checkShapes reads the shape of each input (its first bytes, a CSV
// header, a Parquet footer) and checks them as the outputs will: the
// format, one header or schema, no column filter would add.
func checkShapes(ctx context.Context, paths []string, in *inputFlags, cols []docio.Column, outs ...*sink) error {
	probe := &sink{what: "--out", cols: cols, probe: true}
	for _, p := range paths {
		for _, err := range docio.Read(ctx, []string{p}, nil, readOptions(in, func(src docio.Source) error {
			if err := probe.begin(src); err != nil {
				return err
			}
			for _, o := range outs {
				if o != nil {
					if err := o.nameFits(src); err != nil {
						return err
					}
				}
			}
			return errShapeRead
		})) {
			if err != nil && !errors.Is(err, errShapeRead) && !errors.Is(err, docio.ErrBadRecord) {
				return err
			}
			break
		}
	}
	return nil
}

// addedCols are the columns filter's outputs add: --annotate's, or
// --removed's, or none.
func addedCols(removed, annotate bool) []docio.Column {
	switch {
	case annotate:
		return annotateCols
	case removed:
		return removedCols
	}
	return nil
}

// filter streams the inputs to the sinks by the fates; since is when the
// command's clustering began (its progress lines' elapsed time counts
// from it).
func (a *app) filter(paths []string, in *inputFlags, f *filterer, since time.Time) error {
	// NB: a bar of the bytes read when every input is a regular file and
	// stderr a terminal (progress sets in.Progress), lines elsewhere.
	add, done := a.stepProgress("filter", "", "records", in, paths, since)
	defer done()
	defer func() {
		// NB: a pass that failed leaves no asker behind (one that ended
		// has none: ask(true) waited for it).
		if f.asking != nil {
			f.unasked = nil
			f.ask(true)
		}
	}()
	for r, err := range docio.Read(a.ctx, paths, a.stdin, readOptions(in, f.begin)) {
		add(1)
		var re *docio.RecordError
		switch {
		case errors.As(err, &re) && (errors.Is(re, docio.ErrNotRegular) || errors.Is(re, docio.ErrStoreInput) || errors.Is(re, docio.ErrNoDocuments)):
			// NB: no record (a directory's link to a directory or to
			// nothing, an index among the inputs): named and passed over,
			// as insert does; it was refused as a record filter could not
			// copy; and a dataset's README beside its shards, which the
			// build passed over (a read-through's RT10-2).
			fmt.Fprintf(a.stderr, "lshdb: skipped %s\n", escControls(re.Error()))
			continue
		case errors.As(err, &re):
			if re.Raw == nil && re.Row == nil {
				return fmt.Errorf("%w: %v", errUncopyable, re)
			}
			if f.firstBad == nil {
				f.firstBad = re
			}
			err = f.bad(record{raw: re.Raw, end: re.End, row: re.Row, file: re.File, line: re.Line}, re)
		case err == nil:
			if r.Blank {
				f.n.blank++
			}
			err = f.take(r.ID, record{idNumber: r.IDNumber, raw: r.Raw, end: r.End, row: r.Row, file: r.File, line: r.Line}, r.Blank)
		}
		if err != nil {
			return err
		}
	}
	f.n.clusters = len(f.clusters)
	return f.ask(true)
}

// filterSummary is filter's summary line, and filterNotes its notes
// (each printed after "lshdb: note: "): on stderr, and in --manifest's
// record.
func filterSummary(n filterCounts, t float64, mode db.ClusterMode, keep db.KeepPolicy) string {
	return fmt.Sprintf("%d kept, %d removed in %s (%s read; mode %s, keep %s, Jaccard >= %v)",
		n.kept, n.removed, counted(n.clusters, "cluster", "clusters"), counted(n.read, "record", "records"), mode, keep, t)
}

func filterNotes(n filterCounts) []string {
	var notes []string
	if n.bad > 0 {
		notes = append(notes, fmt.Sprintf("%s could not be read as documents (as insert would skip them): kept as read", counted(n.bad, "record", "records")))
	}
	if n.blank > 0 {
		// NB: they were kept among the others without a word (an ML
		// dataset user's ML5).
		notes = append(notes, fmt.Sprintf("%s a blank text, which has no shingles (a build skips it as empty): kept as read, compared with nothing", counted(n.blank, "record has", "records have")))
	}
	if n.copies > 0 {
		how := "removed as its duplicates (similarity 1)"
		switch {
		case n.exact == 0:
			how = "each shares its id's fate"
		case n.exact < n.copies:
			how = fmt.Sprintf("%d removed as its duplicates (similarity 1), the others with their id's cluster", n.exact)
		}
		were, their := counted(n.copies, "record was a copy", "records were copies"), "their"
		if n.copies == 1 {
			their = "its"
		}
		notes = append(notes, fmt.Sprintf("%s, %s, of an earlier record with %s id: %s", were, n.copyKind, their, how))
	}
	if other := n.repeated - n.copies; other > 0 {
		notes = append(notes, fmt.Sprintf("%s an id read before with other content: the index holds one document per id (the last written), and every record of an id shares its fate; make ids unique (--id-from line) to tell them apart", counted(other, "record repeats", "records repeat")))
	}
	if n.outside > 0 {
		// NB: the index holds documents of other inputs (an earlier
		// night's build it extends): a cluster may keep one of those, and
		// then the output has no member of it. Right when the inputs are
		// to be deduplicated against the index; a loss of their texts when
		// the document kept is gone from the corpus.
		notes = append(notes, fmt.Sprintf("%s of %s that no input holds, which the index has from other inputs: those clusters have no member in the output (--removed lists such records with duplicate_of; a filter through an index built from these inputs alone keeps one of each cluster)",
			counted(n.outside, "removed record is a near-duplicate", "removed records are near-duplicates"), counted(n.outsideReps, "document", "documents")))
	}
	if n.edited > 0 {
		notes = append(notes, fmt.Sprintf("%d of the first %d records whose document's text the index keeps have another text than it (the first: %q): filter judges a record by its document's text, so a record edited since the build is judged by its old one; insert the inputs as they are (lshdb insert) before filter, or check that the text flags are the build's", n.edited, n.compared, n.firstEdited))
	}
	if n.unindexed > 0 {
		notes = append(notes, fmt.Sprintf("%s an id the index does not hold (the first: %q): kept as read, compared with nothing; insert them (lshdb insert) before filter to deduplicate them too, or check that the index was built from these inputs with the same id flags", counted(n.unindexed, "record has", "records have"), n.firstUnindexed))
	}
	return notes
}
