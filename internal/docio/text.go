package docio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ErrNotRegular is the cause of the bad record of a directory entry that
// is not a regular file or a symbolic link to one (see Read).
var ErrNotRegular = errors.New("not a regular file")

// ErrNoDocuments marks (errors.Is) the ErrNotRegular record of a
// directory entry that can hold no document: a special file (a pipe, a
// socket, a device), or a symbolic link to nothing or to a special file.
// A directory walk's callers pass over such an entry with a note, as
// they pass over a binary file; a link to a directory is not one of them
// (its documents may be meant).
var ErrNoDocuments = errors.New("no documents")

// noDocuments is an error that matches ErrNoDocuments too.
type noDocuments struct{ error }

func (e noDocuments) Is(target error) bool { return target == ErrNoDocuments }
func (e noDocuments) Unwrap() error        { return e.error }

// errUTF16 is the cause of the bad record that a record file (JSON Lines,
// CSV, TSV) starting with a UTF-16 byte order mark is: what PowerShell's >
// and Notepad's "Unicode" write. NB: it is not ErrBinary, which a
// directory walk passes over as a file of no document's: this one holds
// records, and a build --delete-missing that passed over it would delete
// their documents.
var errUTF16 = errors.New("the file is UTF-16 (it starts with a UTF-16 byte order mark), not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)")

// errUTF32 is errUTF16 for a file that starts with a UTF-32 byte order
// mark (its little-endian form starts as UTF-16's does).
var errUTF32 = errors.New("the file is UTF-32 (it starts with a UTF-32 byte order mark), not UTF-8: convert it first (iconv -f utf-32 -t utf-8 FILE)")

// ErrBinary is the cause of a bad record for a file that is not UTF-8
// text: binary (see IsText), or text with bytes that are not UTF-8
// (ErrNotUTF8 too). A directory walk yields one for each such file it
// meets; callers usually skip them with a note.
var ErrBinary = errors.New("not UTF-8 text (a NUL byte, or over 1% invalid UTF-8, in its first 8 KiB): a binary file, or text in another encoding such as Latin-1 (convert it first: iconv -f latin1 -t utf-8)")

// invalidUTF8 counts the bytes of b that are not part of a valid UTF-8
// sequence.
//
// NB: binary data is mostly invalid (about half its bytes, random), and
// Latin-1 prose has 2-3% accented letters, so 1% tells them apart: a text
// file under it with a stray bad byte (a corrupted character) is text,
// and refused all the same (ErrNotUTF8), as its bytes could not be kept.
func invalidUTF8(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			n++
		}
		b = b[size:]
	}
	return n
}

// dir reads every regular file under root: as a text document whose id is
// its slash-separated path relative to root, or in Options.Format when it
// names a record format. Hidden files and folders are skipped. A symbolic
// link to a regular file is read as that file (its id the link's path);
// one to a directory or to nothing, and a special file, are bad records
// (ErrNotRegular): links to directories are not followed, which could
// loop. root itself, given as an input, is followed when it is a link.
func (r *reader) dir(root string) error {
	walk := root
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// NB: a link named as an input (a nightly job's current or latest,
		// a model hub's snapshots/main) is the directory it names:
		// WalkDir does not follow its root, and every document in it was
		// passed over (and with --delete-missing, deleted).
		walk = root + string(filepath.Separator)
	}
	return filepath.WalkDir(walk, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err // NB: a PathError: it names the path
		}
		if path == walk {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() && isStore(path) {
			// NB: an index among the inputs (a folder holding one) is
			// skipped, as a bad record, not read as texts.
			if err := r.emit(Record{}, &RecordError{File: path, Err: ErrStoreInput}); err != nil {
				return err
			}
			return filepath.SkipDir
		}
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			// NB: they were skipped without a word: a tree of links to
			// files (a model hub's cache of snapshots, a stow directory)
			// built an empty index.
			var why error
			switch st, serr := os.Stat(path); {
			case e.Type()&fs.ModeSymlink == 0:
				why = noDocuments{fmt.Errorf("%w: a special file (%s)", ErrNotRegular, e.Type())}
			case serr != nil:
				why = noDocuments{fmt.Errorf("%w: a symbolic link to nothing readable (%v)", ErrNotRegular, serr)}
			case st.IsDir():
				why = fmt.Errorf("%w: a symbolic link to a directory, not followed (links can loop): give the directory itself as an input", ErrNotRegular)
			case !st.Mode().IsRegular():
				why = noDocuments{fmt.Errorf("%w: a symbolic link to a special file (%s)", ErrNotRegular, st.Mode().Type())}
			}
			if why != nil {
				return r.emit(Record{}, &RecordError{File: path, Err: why})
			}
		}
		switch r.o.Format {
		case "jsonl", "csv", "tsv", "parquet":
			// NB: a dataset's README or LICENSE beside its shards, and
			// in a folder of Parquet shards any file that is no Parquet
			// (Spark's _SUCCESS), holds no records: each stopped the
			// read of the shards (an input review, IN-14). Passed over,
			// as a binary file is in a folder of texts.
			if why := notShard(r.o.Format, path); why != "" {
				return r.emit(Record{}, &RecordError{File: path, Err: noDocuments{errors.New(why)}})
			}
			// NB: parquet too: each file was read as a text, refused as
			// binary, and the command inserted nothing with exit 0.
			return r.file(path, path, r.o.Format, "")
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return r.file(path, path, "text", filepath.ToSlash(rel))
	})
}

// text reads a whole stream as one document with this id, up to the
// record limit. A stream that is not UTF-8 text is a bad record, and so
// is one whose decompression (comp: gzip or zstd) fails on its data.
func (r *reader) text(name, id string, in io.Reader, comp string) error {
	max := r.o.MaxRecordBytes
	b, err := readCapped(in, max+1)
	var pe *fs.PathError
	if err != nil && (comp == "" || errors.As(err, &pe) || r.ctx.Err() != nil) {
		return fmt.Errorf("%s: %w", name, truncated(err))
	}
	if err != nil {
		// NB: a text file is one document, and its damaged stream is
		// that record's fault, not the reading's: one cut .gz among a
		// directory's logs stopped the run, --skip-bad or not, where a
		// binary file is passed over (an input review, IN-12). An error
		// of the file's reading (a PathError) still stops it.
		return r.emit(Record{}, &RecordError{File: name, ID: id, Err: fmt.Errorf("the %s stream is damaged: %w", comp, truncated(err))})
	}
	var bad error
	if len(b) > max {
		// NB: the rest is not read: its size is unknown, and the check
		// stays bounded on a compressed bomb.
		bad = fmt.Errorf("%w: more than %d bytes", ErrTooLong, max)
	} else if !IsText(b) {
		bad = ErrBinary
		if bytes.HasPrefix(b, []byte{0xff, 0xfe}) || bytes.HasPrefix(b, []byte{0xfe, 0xff}) {
			// NB: what PowerShell's > and Notepad's "Unicode" write; the
			// message named Latin-1.
			bad = fmt.Errorf("%w; it starts with a UTF-16 byte order mark: convert it first (iconv -f utf-16 -t utf-8)", ErrBinary)
		}
	} else if !utf8.Valid(b) {
		// NB: a few bytes that are not UTF-8 (under IsText's 1%) were
		// stored as U+FFFD: Latin-1 texts that differ only in their
		// accents became one text, a pair at Jaccard 1, and export wrote
		// another text than the file's. The record readers refuse them
		// so (notUTF8).
		bad = notUTF8Text(b)
	}
	if bad != nil {
		return r.emit(Record{}, &RecordError{File: name, ID: id, Err: bad})
	}
	return r.emit(Record{ID: id, Text: string(b), File: name}, nil)
}

// notUTF8Text is the error of a text file that is mostly UTF-8 but not
// all: it names the first bad byte and its offset.
func notUTF8Text(b []byte) error {
	at := firstInvalid(b)
	return notUTF8Error{b[at], at}
}

// CheckUTF8 returns nil when text is valid UTF-8, else ErrNotUTF8
// naming its first bad byte and that byte's offset (as a text file's is
// named): for text that reaches lshdb another way than a reader's, as the
// shell's put.
func CheckUTF8(text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	return notUTF8Text([]byte(text))
}

// firstInvalid returns the offset of b's first byte that is not part of
// a valid UTF-8 sequence, len(b) when there is none.
func firstInvalid(b []byte) int {
	at := 0
	for at < len(b) {
		r, size := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		at += size
	}
	return at
}

// ErrNotUTF8 is the error of a text file that reads as text (IsText)
// but is not all valid UTF-8: a bad record, which matches ErrBinary too,
// so that a directory walk passes it over as it does a binary file.
var ErrNotUTF8 = errors.New("not valid UTF-8")

// notUTF8Error is ErrNotUTF8 with the first bad byte and its offset.
type notUTF8Error struct {
	b  byte
	at int
}

func (e notUTF8Error) Error() string {
	return fmt.Sprintf("%s (byte 0x%02x at offset %d): text in another encoding, such as Latin-1? convert it first (iconv -f latin1 -t utf-8)", ErrNotUTF8, e.b, e.at)
}

func (e notUTF8Error) Is(target error) bool { return target == ErrNotUTF8 || target == ErrBinary }

// IsText reports whether b reads as UTF-8 text: no NUL byte, and at most
// 1% invalid UTF-8, in its first 8 KiB (see ErrBinary).
func IsText(b []byte) bool {
	head := b[:min(len(b), 8192)]
	return bytes.IndexByte(head, 0) < 0 && invalidUTF8(trimPartialRune(head, len(b)))*100 <= len(head)
}

// trimPartialRune drops a rune cut by the 8 KiB head window.
func trimPartialRune(head []byte, total int) []byte {
	if len(head) == total {
		return head
	}
	for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
		if utf8.Valid(head) {
			return head
		}
		head = head[:len(head)-1]
	}
	return head
}

// readCapped reads up to limit bytes of r. NB: in blocks joined once at
// the end, not by io.ReadAll's growing buffer, whose garbage would cost
// several times the limit on a huge input.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	var blocks [][]byte
	n := 0
	for n < limit {
		blk := make([]byte, min(1<<20, limit-n))
		m := 0
		var err error
		for m < len(blk) && err == nil {
			var k int
			k, err = r.Read(blk[m:])
			m += k
		}
		if m > 0 {
			blocks = append(blocks, blk[:m])
			n += m
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err // NB: io.ErrUnexpectedEOF here is a truncated stream
		}
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	out := make([]byte, 0, n)
	for _, blk := range blocks {
		out = append(out, blk...)
	}
	return out, nil
}

// notShard says why the file at path, met in a directory read with the
// record format format (Options.Format), is no file of its records: a Parquet
// file is one by its magic number, whatever its name; else a dataset's
// documentation (IsDocumentationName, or any Markdown file), or, in
// Parquet, a file without the magic number not named so; "" for a shard.
func notShard(format, path string) string {
	if (format == "parquet" || !IsRecordName(path)) && IsParquetFile(path) {
		return "" // NB: read as its format says: a Parquet file under --format jsonl is refused there
	}
	if IsDocumentationName(path) || strings.HasSuffix(strings.ToLower(path), ".md") {
		return fmt.Sprintf("a dataset's documentation, not a %s file of records: passed over", format)
	}
	if format != "parquet" || formatByName(path) == "parquet" {
		return ""
	}
	return "not a Parquet file (no .parquet name, no Parquet magic number): passed over"
}

// IsParquetFile reports whether the file at path starts with Parquet's
// magic number.
func IsParquetFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	return n == 4 && string(magic[:]) == string(parquetMagic)
}
