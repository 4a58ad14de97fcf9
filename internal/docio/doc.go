// Package docio reads the input documents that lshdb's command, tests and
// benchmarks index: JSON Lines, CSV and TSV files, directories of text
// files and standard input, plain or compressed with gzip or zstd.
//
// [Read] walks its inputs in order and yields one [Record] per document
// with the file and line it came from. A malformed record is yielded as a
// *[RecordError] (errors.Is(err, [ErrBadRecord])) and reading goes on, so
// the caller decides whether to stop or skip it; any other error (a missing
// or unreadable file, a broken compressed stream, a CSV file without its
// header, a cancelled context) ends the iteration. Every error names its
// file and wraps its cause: errors.Is(err, fs.ErrNotExist) holds for a
// missing file.
//
// Formats:
//
//   - JSON Lines: one object per line; the id and text are fields named by
//     dotted paths (Options.IDField, Options.TextField: "meta.url" is the
//     field url of the object meta). An id may be a string or a number (a
//     number is kept as written: 42 is "42", 12345678901234567890 keeps
//     every digit). Blank lines are skipped.
//   - CSV and TSV: a header line names the columns (Options.IDCol,
//     Options.TextCol). Quoting is RFC 4180's, read leniently (a quote
//     inside an unquoted field is a character); a quoted field may span
//     lines. TSV is the same with tabs.
//   - Text: a file is one document. A directory (walked in lexical order)
//     is one document per regular file, its id the slash-separated path
//     relative to the directory; hidden files and folders (names starting
//     with '.') are skipped. A symbolic link to a regular file is read as
//     that file; one to a directory or to nothing, and a special file,
//     are bad records (ErrNotRegular). With Options.Format jsonl, csv,
//     tsv or parquet, a directory's files are read in that format
//     instead.
//
// The format is Options.Format, or else told by the name: .csv, .tsv,
// .txt (after a .gz, .bgz, .zst or .zstd suffix), JSON Lines otherwise.
// Compression is told by content, not name: gzip by its magic 1F 8B, zstd
// by 28 B5 2F FD. gzip made of BGZF members (bgzip's, GzipWriter's) is
// inflated on every core, any other gzip on one. A UTF-8 byte-order mark at the start is dropped and CRLF
// line ends are accepted in every format.
//
// Ids without an id field: Options.IDFrom "line" makes every record's id
// its file's base name and line number ("docs.jsonl:12", "stdin:3");
// "hash" makes it the 16 hex digits of the xxhash64 of its text, so that
// identical texts share one id (the last one wins in an index).
//
// Concurrency: JSON Lines are decompressed and cut into chunks of lines
// on one goroutine and parsed on every core (up to 8), a few chunks
// ahead of the caller; the records are still yielded in the input's
// order on the caller's goroutine. A loop that stops early does not wait
// for the goroutine that reads: reading a pipe or a terminal, it stays
// blocked until the writer writes or closes it.
//
// Limits: no line, CSV record or text file longer than
// Options.MaxRecordBytes is held in memory. An over-long record is a bad
// record; the reader skips to the next line without buffering the rest, so
// a small compressed file holding one huge line costs at most about the cap.
package docio
