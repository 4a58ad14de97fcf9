package docio

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// Sentinel errors: test with errors.Is.
var (
	// ErrBadRecord is matched by every *RecordError: one record is
	// malformed and reading can go on past it.
	ErrBadRecord = errors.New("bad record")
	// ErrUnknownFormat is returned when Options.Format is not one of
	// jsonl, csv, tsv and text.
	ErrUnknownFormat = errors.New("unknown input format")
	// ErrInvalidOptions is returned when an option other than the format
	// is out of range.
	ErrInvalidOptions = errors.New("invalid input options")
	// ErrTruncated is returned when a compressed stream ends before its
	// end marker (a truncated file).
	ErrTruncated = errors.New("the compressed stream ends early (truncated file?)")
	// ErrUnclosedQuote is returned when a CSV or TSV field's opening quote
	// is not closed by the end of the input, lines after the one it opens
	// on: where the records after it start cannot be told, so reading
	// stops (even when bad records are skipped; a quote not closed on the
	// input's last line is a bad record).
	ErrUnclosedQuote = errors.New("a quoted field is not closed")
	// ErrUnsupportedCompression is returned for an input compressed in a
	// format lshdb does not read (xz, bzip2, lz4, zip, 7z): it reads
	// gzip and zstd.
	ErrUnsupportedCompression = errors.New("unsupported compression")
	// ErrArchive is returned for an input that is a tar archive (plain,
	// gzip or zstd): lshdb reads streams of records, not archives.
	ErrArchive = errors.New("an archive, not a stream of records")
	// ErrNoColumn is matched by the error of a CSV, TSV or Parquet input
	// that lacks the id or text column the options name: the options do
	// not fit the file.
	ErrNoColumn = errors.New("no such column")
)

// noColumn marks its error as ErrNoColumn's, its message unchanged.
type noColumn struct{ error }

func (e noColumn) Unwrap() []error { return []error{e.error, ErrNoColumn} }

// Formats are the accepted values of Options.Format ("" = by file name).
var Formats = []string{"jsonl", "csv", "tsv", "text", "parquet"}

// DefaultMaxRecordBytes is the default Options.MaxRecordBytes: 64 MiB (the
// database's default document limit) plus 1 MiB for the id, the JSON
// syntax and escapes.
const DefaultMaxRecordBytes = 65 << 20

// Options say how inputs are read. The zero value reads JSON Lines with
// "id" and "text" fields (or CSV/TSV with "id" and "text" columns, by file
// name).
type Options struct {
	// Format is jsonl, csv, tsv, text or parquet, in any case. Default:
	// "" (by file name: .csv, .tsv, .txt, .parquet, else JSON Lines; a
	// directory: text).
	Format string
	// IDField and TextField are the JSON Lines fields of the id and the
	// text, as dotted paths into nested objects ("meta.url"). Default:
	// "id" and "text".
	IDField, TextField string
	// MetaField, if set, is the JSON Lines field (a dotted path) whose raw
	// JSON value becomes Record.Meta. Default: "" (no metadata).
	MetaField string
	// IDCol and TextCol are the CSV/TSV header names, or the Parquet
	// column names (dotted paths into groups), of the id and text
	// columns. Default: "id" and "text".
	IDCol, TextCol string
	// IDFrom, if set, makes the ids instead of reading them (JSON Lines,
	// CSV, TSV): "line" for the file's base name and the line,
	// "docs.jsonl:12"; "hash" for the hex xxhash64 of the text. Default:
	// "" (the id field or column is required).
	IDFrom string
	// MaxRecordBytes is the longest line, CSV record or text file read;
	// a longer one is a bad record, skipped without being held in
	// memory. Default: DefaultMaxRecordBytes.
	MaxRecordBytes int
	// LongStops makes a JSON Lines, CSV or TSV line longer than
	// MaxRecordBytes end the reading with an error as soon as it passes
	// the limit, instead of being read to its end and yielded as a bad
	// record: for a caller that stops at the first bad record anyway.
	// NB: an input with no line end (/dev/zero, an endless producer) was
	// read for ever, dropped chunk by chunk, by a command bound to fail
	// (a bad-input review, B3).
	LongStops bool
	// Progress, if set, is called with the number of bytes read from the
	// inputs as they are read: the bytes of the files as stored
	// (compressed ones before decompression) and of stdin, so that their
	// sum reaches the files' sizes. It may be called from another
	// goroutine than Read's.
	Progress func(n int64)
	// OnSource, if set, is called as each input starts, before its first
	// record (for CSV/TSV, once its header is read): what it says is the
	// input's shape. An error it returns ends the reading with that error.
	OnSource func(Source) error
	// Rows makes a Parquet input's records carry their row (Record.Row).
	Rows bool
	// SkipText leaves Record.Text empty for a caller that needs the ids
	// and raw records only (lshdb filter): JSON Lines texts are checked
	// as strings but not decoded. Bad records are the same as without it.
	SkipText bool
	// BlankFormat counts format characters (category Cf: zero-width
	// spaces, soft hyphens, byte order marks) as blank, as white space
	// is, in Record.Blank: the characters that minhash.NormalizeNFKC
	// removes, so that a text of them alone is blank to a caller whose
	// index normalizes so (lshdb filter; a multilingual user's U4: the
	// build skipped three such texts as empty, filter's note counted one).
	BlankFormat bool
}

// countingReader reports each read's bytes to add.
type countingReader struct {
	r   io.Reader
	add func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}

// counted returns in, counting its bytes when Options.Progress is set.
func (r *reader) counted(in io.Reader) io.Reader {
	if r.o.Progress == nil {
		return in
	}
	return &countingReader{r: in, add: r.o.Progress}
}

// EnsureDefaults fills the zero fields with their defaults and normalizes
// Format and IDFrom to lower case.
func (o *Options) EnsureDefaults() {
	o.Format = strings.ToLower(strings.TrimSpace(o.Format))
	o.IDFrom = strings.ToLower(strings.TrimSpace(o.IDFrom))
	if o.IDField == "" {
		o.IDField = "id"
	}
	if o.TextField == "" {
		o.TextField = "text"
	}
	if o.IDCol == "" {
		o.IDCol = "id"
	}
	if o.TextCol == "" {
		o.TextCol = "text"
	}
	if o.MaxRecordBytes == 0 {
		o.MaxRecordBytes = DefaultMaxRecordBytes
	}
}

// Validate reports an unknown format (ErrUnknownFormat) or another option
// out of range (ErrInvalidOptions). Call it after EnsureDefaults.
func (o *Options) Validate() error {
	if _, err := ParseFormat(o.Format); err != nil {
		return err
	}
	switch o.IDFrom {
	case "", "line", "hash":
	default:
		return fmt.Errorf("%w: id-from %q: want line or hash", ErrInvalidOptions, o.IDFrom)
	}
	if o.MaxRecordBytes < 1 {
		return fmt.Errorf("%w: MaxRecordBytes %d: must be at least 1", ErrInvalidOptions, o.MaxRecordBytes)
	}
	return nil
}

// ParseFormat returns the format named by s in any case ("" stays "": by
// file name), or an error wrapping ErrUnknownFormat that names s and the
// accepted formats.
func ParseFormat(s string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	if f == "" {
		return "", nil
	}
	for _, ok := range Formats {
		if f == ok {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w %q (want %s)", ErrUnknownFormat, s, strings.Join(Formats, ", "))
}

// Record is one input document and where it came from.
type Record struct {
	ID, Text string
	// IDNumber: the id was read from a JSON number (its digits as
	// written) or an integer Parquet column, not a string.
	IDNumber bool
	// Blank: the text holds nothing but white space (or nothing), so it
	// has no shingles, and a build skips it as empty. Set under SkipText
	// too, where Text is left empty.
	Blank bool
	// textSkipped: Text was left empty (SkipText), and Blank set from
	// the text as written.
	textSkipped bool
	// Meta is the raw JSON of Options.MetaField; nil without it.
	Meta []byte
	// File is the input's path as given ("stdin" for standard input),
	// or for a directory's file the directory joined with its path.
	File string
	// Line is the line where the record starts (1-based); 0 for a text
	// file, which is one record.
	Line int
	// Raw is the record's bytes as read, without its final line end (a
	// CSV record's line ends inside quotes as they were); nil for a text
	// or Parquet file. NB: it
	// aliases the reader's buffer and is valid only until the loop
	// continues: copy it to keep it.
	Raw []byte
	// End is the line end that followed Raw in the input: "\n", "\r\n", or
	// "" (the input's last line, or a text or Parquet file); "\r" where
	// a lone CR ends the input (not taken as data, as in encoding/csv).
	End string
	// Row is a Parquet record's row (all of its columns), with
	// Options.Rows; nil otherwise. It is the caller's to keep.
	Row parquet.Row
}

// Pos returns "FILE:LINE", or FILE for a text file.
func (r *Record) Pos() string { return pos(r.File, r.Line) }

func pos(file string, line int) string {
	if line == 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// RecordError reports a malformed record. It matches ErrBadRecord and its
// cause Err with errors.Is. Raw is a copy of the record's bytes as read
// (nil for one too long to hold, or a text file).
type RecordError struct {
	File string
	Line int
	ID   string // the record's id when it was read, else ""
	Raw  []byte
	// End is the line end that followed Raw, as Record.End.
	End string
	// Row is a Parquet record's row, with Options.Rows; nil otherwise.
	Row parquet.Row
	Err error
}

func (e *RecordError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("%s (id %s): %v", pos(e.File, e.Line), QuoteID(e.ID), e.Err)
	}
	return fmt.Sprintf("%s: %v", pos(e.File, e.Line), e.Err)
}

// isBlank reports whether s holds nothing but white space, and with
// format its format characters (Options.BlankFormat).
func isBlank(s string, format bool) bool {
	if !format {
		return strings.TrimSpace(s) == ""
	}
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }) == ""
}

// Unwrap returns ErrBadRecord and the cause.
func (e *RecordError) Unwrap() []error { return []error{ErrBadRecord, e.Err} }

// Pos returns "FILE:LINE", or FILE for a text file.
func (e *RecordError) Pos() string { return pos(e.File, e.Line) }

// QuoteID quotes an id for a message, cut to its first 64 bytes, or fewer
// so as not to cut a character in two: a valid CJK id was shown with a
// stray byte ("…旗舰店\xe6"), as if it were damaged (a multilingual
// user's U3). An id of invalid UTF-8 is cut at byte 64.
func QuoteID(id string) string {
	if len(id) > 64 {
		cut := 64
		for i := cut; i > 64-utf8.UTFMax && i > 0; i-- {
			if utf8.RuneStart(id[i]) {
				cut = i
				break
			}
		}
		return fmt.Sprintf("%q… (%d bytes)", id[:cut], len(id))
	}
	return fmt.Sprintf("%q", id)
}

// badRecord returns a *RecordError with a copy of raw.
func badRecord(file string, line int, id string, raw []byte, err error) *RecordError {
	return &RecordError{File: file, Line: line, ID: id, Raw: bytes.Clone(raw), Err: err}
}

// CheckPaths reports the first path (other than "-") that cannot be
// stat'ed, as "input PATH: CAUSE", wrapping the cause (errors.Is(err,
// fs.ErrNotExist) for a missing one), so that a command can refuse before
// it opens anything. NB: it returned os.Stat's error, "stat PATH: no such
// file or directory", which did not say the path was an input (a
// newcomer's review).
func CheckPaths(paths []string) error {
	for _, p := range paths {
		if p == "-" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("input %s: %w", p, err)
		}
	}
	return nil
}

// Read yields the records of each path in order: "-" (or no path at all)
// reads stdin. A bad record yields a *RecordError and reading goes on; any
// other error is the last thing yielded. Cancelling ctx stops the reading
// between records with an error wrapping ctx.Err().
func Read(ctx context.Context, paths []string, stdin io.Reader, o Options) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		o.EnsureDefaults()
		if err := o.Validate(); err != nil {
			yield(Record{}, err)
			return
		}
		if len(paths) == 0 {
			paths = []string{"-"}
		}
		r := &reader{ctx: ctx, o: o, yield: yield, lines: &lineReader{}}
		for _, p := range paths {
			var err error
			if p == "-" {
				err = r.stream("stdin", r.counted(stdin), o.Format, "")
			} else {
				err = r.path(p)
			}
			if err == errStop {
				return
			}
			if err != nil {
				yield(Record{}, err)
				return
			}
		}
	}
}

// errStop ends the reading when the caller's loop breaks.
var errStop = errors.New("docio: stop")

// reader is one Read's state.
type reader struct {
	ctx   context.Context
	o     Options
	yield func(Record, error) bool
	lines *lineReader // reused across files: its buffer
	// lineNames maps the base names of the files read with IDFrom line
	// to the file's name: two with one base name give the same ids.
	lineNames map[string]string
}

// emit yields a record or a bad record; errStop when the loop broke. It
// checks the context first.
func (r *reader) emit(rec Record, err error) error {
	if cerr := r.ctx.Err(); cerr != nil {
		at := pos(rec.File, rec.Line)
		var re *RecordError
		if errors.As(err, &re) {
			at = re.Pos()
		}
		return fmt.Errorf("interrupted before %s: %w", at, cerr)
	}
	if err == nil && !rec.textSkipped {
		rec.Blank = isBlank(rec.Text, r.o.BlankFormat)
	}
	if !r.yield(rec, err) {
		return errStop
	}
	return nil
}

// path reads one file or directory.
func (r *reader) path(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		if isStore(p) {
			// NB: read as a folder of texts, an index's own files (its
			// OPTIONS file among them) were stored as documents.
			return fmt.Errorf("%s: %w", p, ErrStoreInput)
		}
		return r.dir(p)
	}
	return r.file(p, p, r.o.Format, "")
}

// ErrStoreInput is the error of an input directory that is a Pebble store
// (an lshdb index), not a folder of documents.
var ErrStoreInput = errors.New("an index (a Pebble store), not a folder of documents: give its documents' files (lshdb export --db DIR writes them)")

// isStore reports whether dir holds a Pebble store: an OPTIONS file and a
// MANIFEST file of Pebble's names.
func isStore(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	var options, manifest bool
	for _, e := range ents {
		options = options || strings.HasPrefix(e.Name(), "OPTIONS-")
		manifest = manifest || strings.HasPrefix(e.Name(), "MANIFEST-")
	}
	return options && manifest
}

// file opens a file and reads it in format (by name when ""); as text,
// its id is textID (its base name when "").
func (r *reader) file(path, name, format, textID string) error {
	if err := r.sameLineIDs(name, textID); err != nil {
		return err
	}
	f, err := r.open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if format == "" {
		// NB: a Parquet file is told by its name or its magic number.
		var magic [4]byte
		if n, _ := f.ReadAt(magic[:], 0); formatByName(name) == "parquet" || n == 4 && string(magic[:]) == string(parquetMagic) {
			format = "parquet"
		}
	}
	if format == "parquet" {
		return r.parquet(name, f)
	}
	// NB: mayWait sees the file through the counting reader.
	return r.stream(name, r.counted(f), format, textID)
}

// open opens the file at path. A named pipe's open waits for a writer
// and cannot be interrupted: it is made on a goroutine of its own, and
// open returns when ctx ends (a command with a pipe nobody wrote to held
// on through its first signal: an adversarial review's A2). That goroutine
// waits in the open, and closes the file if it opens later (a writer then
// finds the pipe closed: a command stops instead).
func (r *reader) open(path string) (*os.File, error) {
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened) // NB: unbuffered: a file opened too late is closed
	gone := make(chan struct{})
	go func() {
		f, err := os.Open(path)
		select {
		case ch <- opened{f, err}:
		case <-gone:
			if f != nil {
				f.Close()
			}
		}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-r.ctx.Done():
		close(gone)
		return nil, fmt.Errorf("interrupted while opening %s, a named pipe no process wrote to: %w", path, r.ctx.Err())
	}
}

// waitReader reads an input that may wait for a writer (mayWait) on a
// goroutine of its own, a chunk ahead, so that a read waiting for the
// writer ends when ctx does (with an error wrapping ctx's): one mechanism
// for every reader of such an input (the sniff of its compression, JSON
// Lines' splitter, CSV and text on the caller's goroutine). The goroutine
// then waits in its read until the process ends (and may have taken a
// chunk of an input, stdin, that the process reads again): a command
// stops instead. It reads into two buffers in turn, given back as Read
// empties them.
type waitReader struct {
	ctx  context.Context
	ch   chan waitChunk
	free chan []byte // the buffers the goroutine may read into
	cur  []byte      // the buffer of the last chunk
	rest []byte      // what the last chunk has left
	err  error       // the input's error, once its chunks are read
}

type waitChunk struct {
	b   []byte
	err error
}

func newWaitReader(ctx context.Context, in io.Reader) *waitReader {
	w := &waitReader{ctx: ctx, ch: make(chan waitChunk), free: make(chan []byte, 2)}
	w.free <- make([]byte, 64<<10)
	w.free <- make([]byte, 64<<10)
	go func() {
		for {
			var b []byte
			select {
			case b = <-w.free:
			case <-ctx.Done():
				return
			}
			n, err := in.Read(b)
			select {
			case w.ch <- waitChunk{b[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *waitReader) Read(p []byte) (int, error) {
	for len(w.rest) == 0 {
		if w.err != nil {
			return 0, w.err
		}
		if w.cur != nil {
			w.free <- w.cur[:cap(w.cur)] // NB: never blocks: two buffers, two places
			w.cur = nil
		}
		select {
		case c := <-w.ch:
			w.cur, w.rest, w.err = c.b, c.b, c.err
		case <-w.ctx.Done():
			return 0, fmt.Errorf("interrupted while waiting for the input: %w", w.ctx.Err())
		}
	}
	n := copy(p, w.rest)
	w.rest = w.rest[n:]
	return n, nil
}

// mayWait reports whether reading in may wait for a writer (a pipe, a
// terminal, a socket, any reader but a regular file): its JSON Lines are
// then passed on as soon as they are read, not held until a chunk fills.
func mayWait(in io.Reader) bool {
	if c, ok := in.(*countingReader); ok {
		in = c.r
	}
	f, ok := in.(*os.File)
	if !ok {
		return true
	}
	st, err := f.Stat()
	return err != nil || !st.Mode().IsRegular()
}

// stream reads one input: it tells and undoes compression, drops a BOM,
// and reads the format (as text, with the id textID, or its base name).
func (r *reader) stream(name string, in io.Reader, format, textID string) error {
	wait := mayWait(in) // NB: a Stat: once per input
	if wait {
		// NB: a read that waits for a writer does not end with ctx: a
		// pipe that stayed open and silent (before its first byte, or
		// after a record), a line that never ends (/dev/zero, a producer
		// that writes no newline), or a CSV quote never closed over
		// endless lines each held a command through its first signal (an
		// adversarial review's A1, A2, a read-through's R4).
		in = newWaitReader(r.ctx, in)
	}
	br, comp, closeFn, err := decompress(name, in, wait)
	if err != nil {
		return err
	}
	if textID == "" && isTar(br, wait) { // NB: a directory's tar is a binary file, passed over
		// NB: read as JSON Lines, each member's first line ran into the
		// tar header before it: bad records, and --skip-bad loaded the
		// rest with exit 0 (an input review, IN-6).
		closeFn()
		what, flags := "a tar archive", "xf"
		if comp != "" {
			what, flags = "a "+comp+"-compressed tar archive", map[string]string{"gzip": "xzf", "zstd": "--zstd -xf"}[comp]
		}
		arg := name
		if name == "stdin" {
			arg = "-"
		}
		return fmt.Errorf("%s is %s (%w); extract it first: tar %s %s, and give its files", name, what, ErrArchive, flags, arg)
	}
	dropBOM(br)
	if format == "" {
		format = formatByName(name)
	}
	if format == "parquet" {
		return fmt.Errorf("%s: %w", name, ErrNeedsFile)
	}
	if m, _ := br.Peek(4); (format == "jsonl" || format == "csv" || format == "tsv") && len(m) >= 2 &&
		(m[0] == 0xff && m[1] == 0xfe || m[0] == 0xfe && m[1] == 0xff || bytes.Equal(m, []byte{0, 0, 0xfe, 0xff})) {
		// NB: a UTF-16 file is one bad record, not read on: each of its
		// lines was named bad, the zero byte after the last one too (a
		// read-through's R19), and a CSV file's were said to have too
		// few fields. UTF-32's mark starts as UTF-16's does.
		closeFn()
		why := errUTF16
		if bytes.Equal(m, []byte{0xff, 0xfe, 0, 0}) || bytes.Equal(m, []byte{0, 0, 0xfe, 0xff}) {
			why = errUTF32
		}
		return r.emit(Record{}, &RecordError{File: name, Err: why})
	}
	if format != "csv" && format != "tsv" { // NB: CSV's once its header is read
		if err := r.onSource(Source{Name: name, Format: format, Compression: comp}); err != nil {
			closeFn()
			return err
		}
	}
	if format == "jsonl" {
		// NB: the JSON Lines reader closes the decompressor itself, when
		// its reading goroutine is done with it.
		return r.jsonl(name, br, closeFn, wait)
	}
	defer closeFn()
	r.lines.reset(name, br, r.o.MaxRecordBytes, r.o.LongStops)
	switch format {
	case "csv":
		return r.csv(Source{Name: name, Format: format, Compression: comp}, ',')
	case "tsv":
		return r.csv(Source{Name: name, Format: format, Compression: comp}, '\t')
	case "text":
		if textID == "" {
			textID = baseName(name)
		}
		return r.text(name, textID, br, comp)
	}
	return fmt.Errorf("%w %q", ErrUnknownFormat, format) // NB: Validate refused it before
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// zstdErrs is a zstd decoder whose errors, but io.EOF and a truncation,
// say they are zstd's.
type zstdErrs struct{ r io.Reader }

func (z zstdErrs) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.HasPrefix(err.Error(), "zstd") {
		err = fmt.Errorf("zstd: %w", err)
	}
	return n, err
}

// bufSize is the read buffer of a stream: a line shorter than it is
// parsed where it lies, a longer one is copied.
const bufSize = 256 << 10

// decompress returns a buffered reader of in's content, decompressed when
// it starts with a gzip or zstd magic number (mayWait: in is a pipe or
// the like, whose content is passed on as it arrives), the compression ("gzip",
// "zstd" or ""), and a function that releases the decompressor.
func decompress(name string, in io.Reader, mayWait bool) (*bufio.Reader, string, func(), error) {
	br := bufio.NewReaderSize(in, 64<<10)
	magic, err := br.Peek(10)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, "", nil, fmt.Errorf("%s: %w", name, err)
	}
	if lower := strings.ToLower(name); len(magic) == 0 && stripCompression(lower) != lower {
		// NB: an empty file named as compressed is no gzip or zstd (both
		// have a header, an empty stream too): what a job that died
		// before it wrote leaves. It was read as an empty input, and a
		// build went on with "nothing inserted", exit 0 (a nightly
		// operator's review, N3).
		return nil, "", nil, fmt.Errorf("%s: %w: the file is empty, where even an empty compressed stream has a header (a write that never happened?)", name, ErrTruncated)
	}
	if c, tool := otherCompression(magic); c != "" {
		// NB: read as text, such a file failed on its first line as "not
		// a JSON object", naming a byte of the compressed stream.
		return nil, "", nil, fmt.Errorf("%s is %s-compressed (%w: lshdb reads gzip and zstd); decompress it first: %s %s", name, c, ErrUnsupportedCompression, tool, name)
	}
	magic = magic[:min(4, len(magic))]
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		// NB: BGZF (bgzip's, lshdb's) on every core, see bgzf.go; other
		// gzip through klauspost's reader, which inflated the
		// 200,000-document generated corpus 1.25x as fast as
		// compress/gzip (133 against 106 MB/s).
		gz, err := newGzipReader(br, mayWait)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: gzip: %w", name, truncated(err))
		}
		return bufio.NewReaderSize(gz, bufSize), "gzip", func() { gz.Close() }, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) || len(magic) == 4 && magic[0]&0xf0 == 0x50 && bytes.Equal(magic[1:], []byte{0x2a, 0x4d, 0x18}):
		// NB: or a skippable frame (RFC 8878 3.1.2), which pzstd and the
		// seekable format write first: such a file was read as JSON.
		// NB: one decoding goroutine: the reader is the bottleneck of a
		// load only when signatures are computed on every other core. A
		// window over 128 MiB is refused, as zstd's own decoder does
		// without --memory: a frame could otherwise ask for 512 MiB.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: zstd: %w", name, err)
		}
		// NB: its errors say "zstd:", as gzip's say "gzip:" ("magic
		// number mismatch" named no format).
		return bufio.NewReaderSize(zstdErrs{zr}, bufSize), "zstd", zr.Close, nil
	}
	return bufio.NewReaderSize(br, bufSize), "", func() {}, nil
}

// isTar reports whether br starts with a tar header: the magic "ustar"
// and a NUL (POSIX) or two spaces and a NUL (GNU) at offset 257, and,
// where the whole 512-byte header is there, its checksum right. NB:
// "ustar" alone refused a JSON Lines file whose byte 257 began "custard"
// (a read-through, RT10-5). A pipe's reader (wait) waits for the
// header's bytes only while no line has ended: a record shorter than
// them, trickled in, is read as soon as it ends, as the record reader
// would need its end anyway. NB: it decided on the first bytes there,
// and a tar trickled in, 100 bytes first, was read as JSON Lines (a
// read-through, RT10-7).
func isTar(br *bufio.Reader, wait bool) bool {
	const at, n = 257, 265
	for wait {
		b, _ := br.Peek(br.Buffered()) // NB: what is there, without waiting
		if len(b) >= n {
			break
		}
		if bytes.IndexByte(b, '\n') >= 0 {
			return false // NB: a line ended before a tar header would
		}
		if _, err := br.Peek(len(b) + 1); err != nil { // NB: waits for one byte more
			return false // NB: a stream shorter than a tar header
		}
	}
	m, _ := br.Peek(n)
	if len(m) < n || string(m[at:at+6]) != "ustar\x00" && string(m[at:at+8]) != "ustar  \x00" {
		return false
	}
	if wait && br.Buffered() < 512 {
		return true
	}
	h, _ := br.Peek(512)
	if len(h) < 512 {
		return true // NB: a header cut short is still no stream of records
	}
	sum := 0
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int(c)
	}
	field := strings.Trim(string(h[148:156]), " \x00")
	want, err := strconv.ParseInt(field, 8, 64)
	return err == nil && int(want) == sum
}

// otherCompression names the compression format that magic, the first
// bytes of an input, starts, among those lshdb does not read, and the
// command that decompresses a file of it to stdout; "" when it is none
// of them.
func otherCompression(magic []byte) (format, tool string) {
	switch {
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return "xz", "xz -dc"
	case len(magic) >= 10 && bytes.HasPrefix(magic, []byte("BZh")) && magic[3] >= '1' && magic[3] <= '9' &&
		(bytes.Equal(magic[4:], []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}) || bytes.Equal(magic[4:], []byte{0x17, 0x72, 0x45, 0x38, 0x50, 0x90})):
		// NB: the block magic (or the end-of-stream one, for an empty
		// file) after "BZh1"-"BZh9", so a text that starts so is text.
		return "bzip2", "bzip2 -dc"
	case bytes.HasPrefix(magic, []byte{0x04, 0x22, 0x4d, 0x18}):
		return "lz4", "lz4 -dc"
	case bytes.HasPrefix(magic, []byte{'P', 'K', 3, 4}):
		return "zip", "unzip -p"
	case bytes.HasPrefix(magic, []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}):
		return "7z", "7z x -so"
	}
	return "", ""
}

// dropBOM skips a UTF-8 byte order mark at br's start.
func dropBOM(br *bufio.Reader) {
	if bom, _ := br.Peek(3); bytes.Equal(bom, utf8BOM) {
		br.Discard(3)
	}
}

// Decoded returns what Read reads of one input named name: in inflated
// (gzip or zstd, by its magic number, within Read's bounds) and without a
// UTF-8 byte order mark, and the function that releases the decompressor.
// What reads a file as insert would (query --file) reads it through this.
func Decoded(name string, in io.Reader) (*bufio.Reader, func(), error) {
	br, _, release, err := decompress(name, in, false)
	if err != nil {
		return nil, nil, err
	}
	dropBOM(br)
	return br, release, nil
}

// truncated marks an unexpected end of a compressed stream with
// ErrTruncated (and keeps the cause).
func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrTruncated, err)
	}
	return err
}

// formatByName tells the format from a file name.
func formatByName(name string) string {
	n := stripCompression(strings.ToLower(name))
	switch {
	case strings.HasSuffix(n, ".csv"):
		return "csv"
	case strings.HasSuffix(n, ".tsv"), strings.HasSuffix(n, ".tab"):
		return "tsv"
	case strings.HasSuffix(n, ".txt"):
		return "text"
	case strings.HasSuffix(n, ".parquet"), strings.HasSuffix(n, ".pq"):
		return "parquet"
	}
	return "jsonl"
}

// stripCompression drops a (lower-case) name's compression suffix.
func stripCompression(n string) string {
	for _, suf := range []string{".gz", ".bgz", ".zst", ".zstd"} {
		n = strings.TrimSuffix(n, suf)
	}
	return n
}

// IsRecordName reports whether a file's name says it holds records (JSON
// Lines, CSV, TSV or Parquet, compressed or not), as a directory's files,
// which are read as one text document each, usually do not.
func IsRecordName(name string) bool {
	n := stripCompression(strings.ToLower(name))
	if strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".ndjson") {
		return true
	}
	switch formatByName(n) {
	case "csv", "tsv", "parquet":
		return true
	}
	return false
}

// IsDocumentationName reports whether a file's name is that of a
// dataset's documentation, which lies beside its record files: its stem
// (the name before its first dot) README, LICENSE (LICENCE), COPYING,
// CITATION, NOTICE, CHANGELOG or AUTHORS, alone or before a '-' or '_'
// (LICENSE-MIT), in any case, and not a record file's name (a
// README.jsonl holds records). NB: prefixes were matched, and a split
// named licenses.jsonl or changelog.csv was passed over (a read-through,
// RT10-1).
func IsDocumentationName(name string) bool {
	if IsRecordName(name) {
		return false
	}
	stem, _, _ := strings.Cut(strings.ToUpper(baseName(name)), ".")
	for _, d := range []string{"README", "LICENSE", "LICENCE", "COPYING", "CITATION", "NOTICE", "CHANGELOG", "AUTHORS"} {
		if rest, ok := strings.CutPrefix(stem, d); ok && (rest == "" || rest[0] == '-' || rest[0] == '_') {
			return true
		}
	}
	return false
}

// FormatOf is the format a file's name says (compression suffixes
// aside): csv, tsv, text, parquet, else jsonl.
func FormatOf(name string) string { return formatByName(name) }

// baseName is the last element of a slash- or OS-separated path.
// sameLineIDs refuses a second file of the same base name with IDFrom
// line: its ids (BASE:LINE) would be the first one's, and its records
// replaced the first one's as "repeated ids" (a/docs.jsonl, b/docs.jsonl).
// A directory's text documents (textID) take no line ids.
func (r *reader) sameLineIDs(name, textID string) error {
	if r.o.IDFrom != "line" || textID != "" {
		return nil
	}
	if r.lineNames == nil {
		r.lineNames = map[string]string{}
	}
	return lineIDsClash(r.lineNames, name)
}

// lineIDsClash adds name to seen (base name → file name) and refuses it
// when another file of seen has its base name.
func lineIDsClash(seen map[string]string, name string) error {
	base := baseName(name)
	if prev, ok := seen[base]; ok && filepath.Clean(prev) != filepath.Clean(name) {
		return fmt.Errorf("%w: --id-from line: %s and %s have the same base name, so their ids (%s:LINE) would be the same: give them other names, or take --id-from hash", ErrInvalidOptions, prev, name, base)
	}
	seen[base] = name
	return nil
}

// CheckLineIDs refuses, before anything is read, two of the files among
// paths that IDFrom line would give the same ids: files given, and the
// files of directories read with the record format format (Read reads
// those as it does, and refuses them at the second file too; stdin aside).
// NB: a directory's clash was found only as its second file opened, after
// the first one's documents were committed (an input review, IN-8).
func CheckLineIDs(paths []string, format string) error {
	seen := map[string]string{}
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case p == "-" || err != nil:
		case !st.IsDir():
			if err := lineIDsClash(seen, p); err != nil {
				return err
			}
		case format == "jsonl" || format == "csv" || format == "tsv" || format == "parquet":
			if err := dirLineIDs(seen, p, format); err != nil {
				return err
			}
		}
	}
	return nil
}

// dirLineIDs is CheckLineIDs of the directory root: its files as the
// reader reads them with a record format (Read's dir): hidden entries,
// indexes, links to directories and to no regular file, and files that
// are no shard (notShard) passed over.
func dirLineIDs(seen map[string]string, root, format string) error {
	walk := root
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		walk = root + string(filepath.Separator)
	}
	return filepath.WalkDir(walk, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil || path == walk:
			return nil // NB: the reading says what is wrong
		case strings.HasPrefix(e.Name(), "."):
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case e.IsDir():
			if isStore(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		}
		if notShard(format, path) != "" {
			return nil
		}
		return lineIDsClash(seen, path)
	})
}

// CheckTextIDs refuses, before anything is read, two files among paths
// read as text (each one document whose id is its base name) that have
// the same base name and are not one file: the later replaced the
// earlier, said only as "1 repeated id"; and one whose base name is the
// id of a file at the top of a directory among paths read as text (its
// path in the directory, its base name there). The same file given twice
// is a repeat, as a JSON Lines file given twice.
func CheckTextIDs(paths []string, o Options) error {
	if o.IDFrom != "" {
		return nil // NB: hash: ids from the texts; line: CheckLineIDs
	}
	type named struct {
		path string
		st   os.FileInfo
	}
	seen := map[string]named{}
	var dirs []string
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case p == "-" || err != nil:
			continue
		case st.IsDir():
			if o.Format == "" || o.Format == "text" {
				dirs = append(dirs, p)
			}
			continue
		}
		if f := cmp.Or(o.Format, formatByName(p)); f != "text" {
			continue
		}
		base := baseName(p)
		if prev, ok := seen[base]; ok && !os.SameFile(prev.st, st) {
			return fmt.Errorf("%w: %s and %s are text files of the same base name, which is the id of each (one document per file): the second would replace the first; give them other names, or give the directory that holds them (its files' ids are their paths in it)", ErrInvalidOptions, prev.path, p)
		}
		seen[base] = named{p, st}
	}
	for _, d := range dirs {
		for base, n := range seen {
			in := filepath.Join(d, base)
			if st, err := os.Stat(in); err == nil && st.Mode().IsRegular() && !os.SameFile(n.st, st) && !strings.HasPrefix(base, ".") {
				return fmt.Errorf("%w: %s and %s (in the directory %s) are text files whose id is the same, %q: the second would replace the first; give them other names", ErrInvalidOptions, n.path, in, d, base)
			}
		}
	}
	return nil
}

func baseName(name string) string {
	if i := strings.LastIndexAny(name, `/`+string(os.PathSeparator)); i >= 0 {
		return name[i+1:]
	}
	return name
}
