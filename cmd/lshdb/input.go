package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
)

// errBadInput is wrapped by every input error that names a file and line.
var errBadInput = errors.New("bad input")

// inputOptions say how input files are read.
type inputOptions struct {
	idField, textField string // JSON Lines field names
	idCol, textCol     string // CSV/TSV column names (a header line is required)
	format             string // "", "jsonl", "csv", "tsv": "" = by file name, JSON Lines otherwise
}

// record is one input document and where it came from.
type record struct {
	doc db.Doc
	pos string // file:line
}

// readInputs calls fn for each document of each input in order: files
// (JSON Lines, gzip-compressed or not, told by content; CSV or TSV), a
// directory of text files (id = relative path), or "-" for stdin. A bad
// record stops the reading with an error naming its file and line, unless
// skipBad, in which case onSkip is told and reading goes on.
func readInputs(paths []string, stdin io.Reader, o inputOptions, skipBad bool, onSkip func(error), fn func(record) error) error {
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	for _, p := range paths {
		var err error
		if p == "-" {
			err = readStream("stdin", stdin, o, skipBad, onSkip, fn)
		} else if st, serr := os.Stat(p); serr != nil {
			return fmt.Errorf("%w: %v", errBadInput, serr)
		} else if st.IsDir() {
			err = readDir(p, skipBad, onSkip, fn)
		} else {
			f, oerr := os.Open(p)
			if oerr != nil {
				return fmt.Errorf("%w: %v", errBadInput, oerr)
			}
			err = readStream(p, f, o, skipBad, onSkip, fn)
			f.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func readStream(name string, r io.Reader, o inputOptions, skipBad bool, onSkip func(error), fn func(record) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errBadInput, name, err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<20)
	}
	format := o.format
	if format == "" {
		base := strings.TrimSuffix(strings.ToLower(name), ".gz")
		switch {
		case strings.HasSuffix(base, ".csv"):
			format = "csv"
		case strings.HasSuffix(base, ".tsv"):
			format = "tsv"
		default:
			format = "jsonl"
		}
	}
	if format == "csv" || format == "tsv" {
		return readCSV(name, br, format == "tsv", o, skipBad, onSkip, fn)
	}
	return readJSONL(name, br, o, skipBad, onSkip, fn)
}

func readJSONL(name string, br *bufio.Reader, o inputOptions, skipBad bool, onSkip func(error), fn func(record) error) error {
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			// NB: before parsing, so that a truncated gzip is reported as
			// such and not as the half line it cut.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %s:%d: the compressed stream ends early (truncated file?)", errBadInput, name, line)
			}
			return fmt.Errorf("%w: %s:%d: %v", errBadInput, name, line, err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			rec, perr := parseJSONLine(b, o)
			pos := fmt.Sprintf("%s:%d", name, line)
			if perr != nil {
				perr = fmt.Errorf("%w: %s: %v", errBadInput, pos, perr)
				if !skipBad {
					return perr
				}
				onSkip(perr)
			} else if err := fn(record{rec, pos}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func parseJSONLine(b []byte, o inputOptions) (db.Doc, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return db.Doc{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var d db.Doc
	for _, f := range []struct {
		name string
		dst  *string
	}{{o.idField, &d.ID}, {o.textField, &d.Text}} {
		raw, ok := m[f.name]
		if !ok {
			return db.Doc{}, fmt.Errorf("no %q field", f.name)
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return db.Doc{}, fmt.Errorf("field %q is not a string", f.name)
		}
	}
	return d, nil
}

func readCSV(name string, r io.Reader, tsv bool, o inputOptions, skipBad bool, onSkip func(error), fn func(record) error) error {
	cr := csv.NewReader(r)
	if tsv {
		cr.Comma = '\t'
		cr.LazyQuotes = true
	}
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%w: %s:1: reading the header: %v", errBadInput, name, err)
	}
	idCol, textCol := -1, -1
	for i, h := range header {
		switch strings.TrimSpace(h) {
		case o.idCol:
			idCol = i
		case o.textCol:
			textCol = i
		}
	}
	if idCol < 0 || textCol < 0 {
		return fmt.Errorf("%w: %s:1: the header has no %q or no %q column (set --id-col and --text-col)", errBadInput, name, o.idCol, o.textCol)
	}
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		line, _ := cr.FieldPos(0)
		pos := fmt.Sprintf("%s:%d", name, line)
		if err == nil && (len(row) <= idCol || len(row) <= textCol) {
			err = fmt.Errorf("%d columns, the id and text need %d", len(row), max(idCol, textCol)+1)
		}
		if err != nil {
			err = fmt.Errorf("%w: %s: %v", errBadInput, pos, err)
			if !skipBad {
				return err
			}
			onSkip(err)
			continue
		}
		if err := fn(record{db.Doc{ID: row[idCol], Text: row[textCol]}, pos}); err != nil {
			return err
		}
	}
}

// readDir reads every regular file under dir as one document whose id is
// its slash-separated path relative to dir. A file that is not UTF-8 text
// (a NUL byte, or invalid UTF-8 in its first 8 KiB) is bad input.
func readDir(dir string, skipBad bool, onSkip func(error), fn func(record) error) error {
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %v", errBadInput, err)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w: %v", errBadInput, err)
		}
		head := b[:min(len(b), 8192)]
		if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(trimPartialRune(head, len(b))) {
			err := fmt.Errorf("%w: %s: a binary file, not text", errBadInput, path)
			if !skipBad {
				return err
			}
			onSkip(err)
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		return fn(record{db.Doc{ID: filepath.ToSlash(rel), Text: string(b)}, path})
	})
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
