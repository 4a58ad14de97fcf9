// Package docfile reads documents from the files that the lshdb command
// reads, as the iterator that db.DB.Load takes: JSON Lines, CSV, TSV and
// Parquet files, text files and directories of them, plain or compressed
// with gzip or zstd (told by content). It is the command's own reader
// (JSON Lines are parsed on every core, BGZF gzip inflated on every
// core), so a Go program's nightly load reads its inputs as `lshdb build`
// does:
//
//	d, err := db.Open(dir, nil)
//	...
//	res, err := d.Load(ctx, docfile.Read(ctx, []string{"corpus.jsonl.gz"}, nil), nil)
//
// The format is Options.Format, or else told by each file's name: .csv,
// .tsv, .txt, .parquet (after a .gz, .bgz, .zst or .zstd suffix), JSON
// Lines otherwise; a directory is one text document per regular file,
// its id the slash-separated path under the directory (hidden names
// skipped), or with Format jsonl, csv, tsv or parquet, a folder of such
// files. JSON Lines ids and texts are fields named by dotted paths
// ("meta.url"), CSV and TSV ones by header names; an id may be a JSON
// string or number (42 is "42").
//
// A malformed record (a line that is not a JSON object, one without its
// id or with an id db.CheckID refuses (empty, or over db.MaxIDBytes; the
// error wraps db.ErrInvalidID too), a text that is not UTF-8, a line
// over Options.MaxRecordBytes, …) is
// yielded as an error wrapping ErrBadRecord that names its file and
// line, and the reading ends there (db.DB.Load stops at it with nothing
// stored), unless Options.OnBad is set, which decides: skip it (return
// nil) or stop.
// Any other error (a missing file, a broken compressed stream, a CSV
// file without its header, ctx ended) is the last thing yielded;
// errors.Is(err, fs.ErrNotExist) holds for a missing file. Options that
// are not valid, or a CSV, TSV or Parquet file without the id or text
// column they name, are an error wrapping db.ErrInvalidOptions. Errors
// are the command's, so they name its flags: --id-col is
// Options.IDCol, --text-col Options.TextCol, --format Options.Format.
//
// Paths are read in order, "-" as standard input (once: a second "-"
// reads nothing more). A directory's ids are its files' paths under it,
// so two directories with files of one path give one id twice, the
// later replacing the earlier in a load (LoadResult.Repeated counts
// them): give them as one directory above both, or make ids with
// Options.IDFrom.
package docfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/docio"
)

// ErrBadRecord is wrapped by the error of a malformed record (see the
// package doc). The error is a *RecordError too.
var ErrBadRecord = docio.ErrBadRecord

// RecordError is a malformed record's error: File and Line say where it
// is (Line is 0 for a text file, which is one record), and it wraps
// ErrBadRecord and its cause.
type RecordError = docio.RecordError

// Options say how the files are read. The zero value (or nil) reads
// JSON Lines with "id" and "text" fields, or CSV, TSV or Parquet with
// "id" and "text" columns, by file name.
type Options struct {
	// Format is jsonl, csv, tsv, text or parquet, in any case. Default:
	// "" (by file name; a directory: text files).
	Format string
	// IDField and TextField are the JSON Lines fields of the id and the
	// text, as dotted paths into nested objects ("meta.url"). Default:
	// "id" and "text".
	IDField, TextField string
	// MetaField, if set, is the JSON Lines field (a dotted path) whose
	// raw JSON value becomes the document's Meta. Default: "" (none).
	MetaField string
	// IDCol and TextCol are the CSV/TSV header names, or the Parquet
	// column names (dotted paths into groups), of the id and the text.
	// Default: "id" and "text".
	IDCol, TextCol string
	// IDFrom, if set, makes the ids instead of reading them (JSON Lines,
	// CSV, TSV): "line" for the file's base name and line
	// ("docs.jsonl:12"), "hash" for the 16 hex digits of the xxhash64 of
	// the text (identical texts share one id). Default: "" (the id field
	// or column is required).
	IDFrom string
	// MaxRecordBytes is the longest line, CSV record or text file read;
	// a longer one is a bad record, skipped without being held in
	// memory. Default: 65 MiB (the command's --max-record-bytes).
	MaxRecordBytes int
	// OnBad, if set, is called with each malformed record's error (a
	// *RecordError) instead of its being yielded: nil skips the record
	// and reading goes on, an error ends the reading with it. Default:
	// nil (the error is yielded, and db.DB.Load stops at it).
	OnBad func(err error) error
}

// Read yields the documents of the files at paths in order, each
// path's as the package doc says; "-" reads standard input. It yields
// ID, Text and (with Options.MetaField) Meta. Blank texts are yielded as
// they are: db.LoadOptions.SkipEmpty skips them, or the load refuses
// them (db.ErrEmptyDocument). Cancelling ctx stops the reading between
// records with an error wrapping ctx.Err().
func Read(ctx context.Context, paths []string, o *Options) iter.Seq2[db.Doc, error] {
	return func(yield func(db.Doc, error) bool) {
		var opts Options
		if o != nil {
			opts = *o
		}
		if len(paths) == 0 {
			yield(db.Doc{}, fmt.Errorf("%w: docfile.Read: no path given (\"-\" reads standard input)", db.ErrInvalidOptions))
			return
		}
		do := docio.Options{Format: opts.Format, IDField: opts.IDField, TextField: opts.TextField, MetaField: opts.MetaField,
			IDCol: opts.IDCol, TextCol: opts.TextCol, IDFrom: opts.IDFrom, MaxRecordBytes: opts.MaxRecordBytes}
		do.EnsureDefaults()
		if err := do.Validate(); err != nil {
			yield(db.Doc{}, fmt.Errorf("%w: docfile: %w", db.ErrInvalidOptions, err))
			return
		}
		for rec, err := range docio.Read(ctx, paths, os.Stdin, do) {
			if err == nil {
				if idErr := db.CheckID(rec.ID); idErr != nil {
					// NB: an empty id ("id":"") was yielded, and the
					// load failed naming the document's position, not
					// its line, beyond OnBad (an API review, API-6).
					err = &RecordError{File: rec.File, Line: rec.Line, ID: rec.ID, Raw: bytes.Clone(rec.Raw), End: rec.End, Err: idErr}
				}
			}
			if errors.Is(err, docio.ErrNoColumn) {
				// NB: the options do not fit the file (an API review,
				// API-7: no sentinel matched it).
				err = fmt.Errorf("%w: %w", db.ErrInvalidOptions, err)
			}
			if err != nil {
				if opts.OnBad != nil && errors.Is(err, docio.ErrBadRecord) {
					if err = opts.OnBad(err); err == nil {
						continue
					}
				}
				yield(db.Doc{}, err)
				return
			}
			if !yield(db.Doc{ID: rec.ID, Text: rec.Text, Meta: rec.Meta}, nil) {
				return
			}
		}
	}
}
