package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// inputFlags are the input flags of insert, build and dedup.
type inputFlags struct {
	docio.Options
	skipBad bool
	rejects string
	// given reports whether a flag was given (not left at its default).
	given func(name string) bool
}

func (f *inputFlags) add(c *cobra.Command) {
	fs := c.Flags()
	f.given = fs.Changed
	fs.StringVar(&f.IDField, "id-field", "id", "JSON Lines: the id field (a dotted path into nested objects: meta.url)")
	fs.StringVar(&f.TextField, "text-field", "text", "JSON Lines: the text field (a dotted path)")
	fs.StringVar(&f.MetaField, "meta-field", "", "JSON Lines: a field (a dotted path) whose JSON value is stored as the document's metadata")
	fs.StringVar(&f.IDCol, "id-col", "id", "CSV/TSV/Parquet: the id column (by header or column name; Parquet: a dotted path into groups)")
	fs.StringVar(&f.TextCol, "text-col", "text", "CSV/TSV/Parquet: the text column (by header or column name)")
	fs.StringVar(&f.IDFrom, "id-from", "", "make the ids instead of reading them: line (FILE:LINE, FILE the base name: two inputs of one base name are refused) or hash (hex xxhash64 of the text)")
	fs.StringVar(&f.Format, "format", "", "input format: "+strings.Join(docio.Formats, ", ")+" (default: by file name; JSON Lines otherwise)")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed records, each named on stderr, instead of stopping at the first")
	fs.StringVar(&f.rejects, "rejects", "", "with --skip-bad: write the skipped records to this file, one per line as read (CSV/TSV rows without their header; over-long records, text files and UTF-16 files are only named), for a re-run")
}

// check validates the flags and the input paths (before any index is
// opened: a typo must not leave an index behind or print a summary).
func (f *inputFlags) check(paths []string) error {
	o := f.Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	if f.rejects != "" && !f.skipBad {
		return usagef("--rejects needs --skip-bad")
	}
	if f.rejects != "" {
		if err := compressionNameFits("--rejects", f.rejects); err != nil {
			return err
		}
	}
	// NB: each taken silently (a bad-input review, B15): an empty name as
	// the default's, and stdin twice as once.
	for _, e := range []struct{ flag, v string }{{"id-field", f.IDField}, {"text-field", f.TextField}, {"id-col", f.IDCol}, {"text-col", f.TextCol}} {
		if strings.TrimSpace(e.v) == "" {
			return usagef("--%s is empty: give the name of the field or column (leave the flag out for its default)", e.flag)
		}
	}
	if n := slices.Index(paths, "-"); n >= 0 && slices.Contains(paths[n+1:], "-") {
		return usagef("the inputs name standard input (-) twice: it is read once")
	}
	if in, ok := outputIsInput(f.rejects, paths); ok {
		// NB: the file was emptied (created) before it was read, and the
		// command exited 0 having read nothing.
		return usagef("--rejects %s is the input %s: it would be emptied before it is read; write the rejects elsewhere", escControls(f.rejects), escControls(in))
	}
	if f.IDFrom != "" && (f.IDField != "id" || f.IDCol != "id") {
		// NB: accepted, and the field named was never read.
		return usagef("--id-from %s makes the ids, and --id-field or --id-col names where to read them: give one or the other", f.IDFrom)
	}
	if f.IDFrom == "line" {
		// NB: before anything is written (docio refuses it too, at the
		// second file, for the files of directories).
		if err := docio.CheckLineIDs(paths, o.Format); err != nil {
			return usageError{err}
		}
	}
	if err := docio.CheckTextIDs(paths, o); err != nil {
		return usageError{err}
	}
	// NB: the files whose kind --format or the name tells are checked
	// before anything is written: refused as each opened, a JSON Lines
	// file after a CSV one stopped an insert that had committed the CSV's
	// documents, exit 2 (a read-through, RT10-6). fitsSource checks the
	// others (stdin, directories) as each opens.
	for _, p := range paths {
		if st, err := os.Stat(p); p == "-" || err != nil || st.IsDir() {
			continue
		}
		format := o.Format // NB: normalized (--format JSONL), as the reader's
		if format == "" {
			format = docio.FormatOf(p)
			if docio.IsParquetFile(p) {
				format = "parquet"
			}
		}
		if err := f.fitsSource(docio.Source{Name: p, Format: format}); err != nil {
			return err
		}
	}
	if f.Format == "" {
		// NB: a folder of dataset shards (Hugging Face's data/) read as
		// one text a file: a build of JSON Lines shards stored one
		// document per shard, of Parquet shards none, and exited 0 (an ML
		// dataset user's ML3). A folder that also holds other files is
		// read as texts, with a note (recordDirNote).
		for _, p := range paths {
			if records, others := dirRecordFiles(p); len(records) > 0 && others == 0 {
				return usagef("%s holds record files only (%s), and a directory's files are read as one text document each: to read their records, give --format jsonl, csv, tsv or parquet, or the files themselves (%s); --format text reads each file as one document", escControls(p), escControls(strings.Join(records[:min(len(records), 3)], ", ")), escControls(filepath.Join(p, filepath.Dir(records[0]), "*")))
			}
		}
	}
	return docio.CheckPaths(paths)
}

// input is one write command's reading: docio's records, validated
// against the index, bad ones skipped and reported or returned.
type input struct {
	a       *app
	f       *inputFlags
	d       index
	rejects *bufio.Writer
	closeR  func() error
	// skipped counts the bad records skipped; passed the files passed
	// over whole (binary files, a dataset's documentation, an index met
	// in a directory): no record of documents, so no bad record (a
	// read-through, RT10-10: a README beside the shards read "1 bad
	// record skipped").
	skipped, passed int
	// read and withMeta count the documents read, and those of them with
	// metadata (--meta-field).
	read, withMeta int
	// onSkip, when set, sees each record skipped as bad.
	onSkip func(re *docio.RecordError)
}

// openInput prepares the reading of a write command's inputs into d. The
// caller MUST call close.
func (a *app) openInput(f *inputFlags, d index) (*input, error) {
	in := &input{a: a, f: f, d: d, closeR: func() error { return nil }}
	if f.rejects != "" {
		if err := intoIndex(f.rejects); err != nil {
			return nil, fmt.Errorf("--rejects: %w", err)
		}
		// NB: os.Create follows a link another user planted in a
		// shared directory such as /tmp, and wrote the rejected records
		// over its target (a security review, SEC2-6).
		if err := refuseStrangersLink(f.rejects); err != nil {
			return nil, fmt.Errorf("--rejects: %w", err)
		}
		w, err := os.Create(f.rejects)
		if err != nil {
			// NB: "open in: is a directory" named no flag (B13).
			return nil, fmt.Errorf("--rejects: %w", cannotWrite(f.rejects, pathCause(err)))
		}
		// NB: compressed as its name says, as every other output is: a
		// .gz was written plain (an input review, IN-7).
		zw, err := nameWriter(w, f.rejects)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("--rejects: %w", err)
		}
		in.rejects = bufio.NewWriter(zw)
		in.closeR = func() error { return errors.Join(in.rejects.Flush(), zw.Close(), w.Close()) }
	}
	return in, nil
}

func (in *input) close() error { return in.closeR() }

// readOptions are the docio options of the inputs' reading: without
// --skip-bad, a line past the record limit stops the reading at once
// (docio.Options.LongStops), as any bad record stops the command.
func (f *inputFlags) readOptions() docio.Options {
	o := f.Options
	o.LongStops = !f.skipBad
	o.OnSource = f.fitsSource
	return o
}

// flagValue is v as a flag's value on a command line: as it is when it
// holds only letters, digits, dots, dashes and underscores, else quoted.
func flagValue(v string) string {
	for _, r := range v {
		if !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(v)
		}
	}
	return v
}

// fitsSource refuses an input read by flags of another format: JSON Lines
// name their id and text by --id-field and --text-field, CSV, TSV and
// Parquet by --id-col and --text-col, and an input of one kind given
// only the other kind's flag was read with its own default, the wrong
// field, without a word (an input review, IN-13: --text-col body on JSON
// Lines indexed its "text" field). Both flags given (inputs of both kinds)
// is what the user asked for.
func (f *inputFlags) fitsSource(src docio.Source) error {
	if f.given == nil {
		return nil
	}
	type family struct {
		kind, what    string
		flags, values [2]string // the id's and the text's
	}
	fields := family{"JSON Lines", "field", [2]string{"id-field", "text-field"}, [2]string{f.IDField, f.TextField}}
	cols := family{"CSV, TSV and Parquet", "column", [2]string{"id-col", "text-col"}, [2]string{f.IDCol, f.TextCol}}
	own, other, kind := cols, fields, strings.ToUpper(src.Format)
	switch src.Format {
	case "jsonl":
		own, other, kind = fields, cols, "JSON Lines"
	case "parquet":
		kind = "Parquet"
	case "csv", "tsv":
	default:
		return nil // a text file: its id is its name
	}
	for i, part := range [2]string{"id", "text"} {
		mine, theirs := own.flags[i], other.flags[i]
		if i == 0 && f.IDFrom != "" || !f.given(theirs) || f.given(mine) {
			continue
		}
		return usagef("--%s names the %s of %s inputs, and %s is %s, whose %s --%s names: give --%s %s (or --%s %s, its default, to read that beside the other inputs' --%s)",
			theirs, part+" "+other.what, other.kind, escControls(src.Name), kind, part+" "+own.what, mine, mine, flagValue(other.values[i]), mine, part, theirs)
	}
	return nil
}

// posDoc is a validated document and where it was read.
type posDoc struct {
	doc db.Doc
	pos string // FILE:LINE, or FILE for a text file
}

// dbReason shows a db error without its "lshdb: " prefix (the command
// prints one) and keeps it for errors.Is.
type dbReason struct{ err error }

func (r dbReason) Error() string { return strings.TrimPrefix(r.err.Error(), "lshdb: ") }
func (r dbReason) Unwrap() error { return r.err }

// docs yields the inputs' documents, each checked with db.Validate as it
// is read. A binary file is named on stderr and skipped. With --skip-bad a
// bad record is named on stderr (and written to --rejects) and skipped; without it, it is yielded as a
// *docio.RecordError and the reading stops. Any other error is the last
// thing yielded.
func (in *input) docs(paths []string) iter.Seq2[posDoc, error] {
	return func(yield func(posDoc, error) bool) {
		in.a.stdinNote(paths, in.f.Format)
		in.a.recordDirNote(paths, in.f.Format)
		named := make(map[string]bool, len(paths)) // the inputs given, as docio names them
		for _, p := range paths {
			named[p] = true
			if p == "-" {
				named["stdin"] = true
			}
		}
		if len(paths) == 0 {
			named["stdin"] = true
		}
		for rec, err := range docio.Read(in.a.ctx, paths, in.a.stdin, in.f.readOptions()) {
			var re *docio.RecordError
			if err == nil {
				doc := db.Doc{ID: rec.ID, Text: rec.Text, Meta: rec.Meta}
				if verr := in.d.Validate(doc); verr != nil {
					// NB: the raw record is copied only when it is rejected.
					re = &docio.RecordError{File: rec.File, Line: rec.Line, ID: rec.ID, Raw: bytes.Clone(rec.Raw), Err: dbReason{verr}}
				} else {
					in.read++
					if rec.Meta != nil {
						in.withMeta++
					}
					if !yield(posDoc{doc, rec.Pos()}, nil) {
						return
					}
					continue
				}
			} else if !errors.As(err, &re) {
				yield(posDoc{}, err)
				return
			}
			// NB: a binary file met in a directory walk is named and
			// passed over, with or without --skip-bad (review C11), as is
			// an index in it, and an entry that can hold no document (a
			// pipe, a socket, a link to nothing: a stale lock link failed
			// a nightly build, O2-6). A link to a directory in it is not:
			// its documents may be meant, and a build with
			// --delete-missing that passed over one deleted them. Nor is
			// a binary file given by name: it was passed over, exit 0.
			if !in.f.skipBad && (!passedOver(re) || named[re.File]) {
				yield(posDoc{}, re)
				return
			}
			if werr := in.skip(re); werr != nil {
				yield(posDoc{}, werr)
				return
			}
		}
		if in.f.MetaField != "" && in.read > 0 && in.withMeta == 0 {
			// NB: a misspelt --meta-field stored no metadata, and said
			// nothing (a bad-input review, B15).
			// NB: above a progress bar still drawn; and --meta-field
			// reads JSON Lines only, which a CSV input's note said
			// nothing of (a read-through, R5).
			in.a.noteAboveBar(fmt.Sprintf("no document read has the field %q (--meta-field): none was stored with metadata (it reads JSON Lines only; a dotted path names a nested field: a.b is {\"a\": {\"b\": …}})", in.f.MetaField))
		}
	}
}

// passedOver reports whether re is a file passed over whole, never a
// record of documents: a binary file, an index met in a directory walk,
// an entry that can hold no document (a pipe, a link to nothing).
func passedOver(re *docio.RecordError) bool {
	return errors.Is(re, docio.ErrBinary) || errors.Is(re, docio.ErrStoreInput) || errors.Is(re, docio.ErrNoDocuments)
}

// skip reports a skipped record on stderr and writes it to --rejects.
func (in *input) skip(re *docio.RecordError) error {
	if passedOver(re) {
		in.passed++
	} else {
		in.skipped++
	}
	fmt.Fprintf(in.a.stderr, "lshdb: skipped %s\n", escControls(re.Error()))
	if in.onSkip != nil {
		in.onSkip(re)
	}
	if in.rejects == nil || re.Raw == nil {
		return nil
	}
	in.rejects.Write(re.Raw)
	if err := in.rejects.WriteByte('\n'); err != nil {
		return fmt.Errorf("--rejects %s: %w", in.f.rejects, err)
	}
	return nil
}

// interrupted is the error of a write command stopped by Ctrl-C or
// SIGTERM: it says what was committed and matches context.Canceled (exit
// 130).
type interrupted struct{ msg string }

func (e interrupted) Error() string { return "interrupted: " + e.msg }
func (e interrupted) Unwrap() error { return context.Canceled }

// recordDirNote notes, for each directory input read without --format
// (each of its files one text document), record files among its first
// entries: an operator who drops nightly JSON Lines files into a folder
// and gives the folder gets one huge document per file.
func (a *app) recordDirNote(paths []string, format string) {
	if format != "" {
		return
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		names, _ := dirRecordFiles(p)
		if len(names) == 0 {
			continue
		}
		more := ""
		if len(names) > 1 {
			more = fmt.Sprintf(" and %d more", len(names)-1)
		}
		fmt.Fprintf(a.stderr, "lshdb: note: %s holds record files (%s%s), which are read as one text document each, as every file of a directory is: to read their records, give the files themselves or --format jsonl, csv, tsv or parquet\n", p, names[0], more)
	}
}

// dirRecordFiles returns the record files (docio.IsRecordName, or
// Parquet by content) of the
// directory p as the reader walks it, and how many other regular files
// it holds, a dataset's documentation (docio.IsDocumentationName) and
// names that start with "_" not counted; none for a path that is no directory.
func dirRecordFiles(p string) (records []string, others int) {
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return nil, 0
	}
	// NB: as the reader walks it: subdirectories too, hidden entries
	// skipped, links followed to files. Only the top level's regular
	// files were counted: four record files were said to be two (a
	// nightly operator's review, N4).
	// NB: WalkDir does not follow a root that is a link (the reader
	// does): a link to the night's folder had no note (a maintainer
	// review's K2). Its path with a separator is the folder's.
	root := p
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		root = p + string(filepath.Separator)
	}
	filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == root {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		regular := e.Type().IsRegular()
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(path)
			regular = err == nil && st.Mode().IsRegular()
		}
		switch {
		case regular && (docio.IsRecordName(e.Name()) || docio.IsParquetFile(path)):
			// NB: a Parquet shard without the name (Spark's part-00000)
			// too (a read-through's RT10-4).
			rel, _ := filepath.Rel(root, path)
			records = append(records, rel)
		case regular && !docio.IsDocumentationName(e.Name()) && !strings.HasPrefix(e.Name(), "_"):
			// NB: a dataset's README beside data/*.parquet made the
			// folder one of texts, and its README the index's only
			// document, exit 0 (an input review, IN-14); nor are the
			// markers Spark and Hadoop write beside their part files
			// (_SUCCESS), which they take for hidden.
			others++
		}
		return nil
	})
	return records, others
}

// stdinNote tells a person at a terminal that the command waits for them
// (C20): when stdin is among the inputs (none given, or -) and is a
// terminal, one line on stderr names the format and how to end it.
func (a *app) stdinNote(paths []string, format string) {
	if len(paths) > 0 && !slices.Contains(paths, "-") {
		return
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return
	}
	what := "JSON Lines"
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "csv", "tsv":
		what = strings.ToUpper(strings.TrimSpace(format))
	case "text":
		what = "text"
	}
	fmt.Fprintf(a.stderr, "reading %s from stdin (Ctrl-D to end)\n", what)
}
