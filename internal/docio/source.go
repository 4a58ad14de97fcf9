package docio

import (
	"bytes"

	"github.com/parquet-go/parquet-go"
)

// Source describes one input as its reading starts, for a caller that
// writes records back in the input's own shape (lshdb filter): its
// format, its compression, a CSV/TSV header as read, a Parquet schema.
type Source struct {
	// Name is the input as Record.File names it.
	Name string
	// Format is jsonl, csv, tsv, text or parquet.
	Format string
	// Compression is "gzip" or "zstd" for a compressed stream, else "".
	Compression string
	// Header is a CSV/TSV input's header record as read (a quoted field
	// may span lines: their ends as in the input), without its line end;
	// HeaderEnd is that line end ("\n", "\r\n", or "" at the end of the
	// input).
	Header    []byte
	HeaderEnd string
	// Schema is a Parquet input's schema, and Codec the compression of
	// its first column chunk ("" when uncompressed or unknown).
	Schema *parquet.Schema
	Codec  string
	// Metadata is a Parquet input's key-value metadata (its footer's, in
	// order: an Arrow schema, pandas' or Hugging Face's column types).
	Metadata [][2]string
}

// onSource calls Options.OnSource, if set.
func (r *reader) onSource(s Source) error {
	if r.o.OnSource == nil {
		return nil
	}
	return r.o.OnSource(s)
}

// MemberOf returns one of keys (the first met) that the JSON object obj, a record's
// Raw as Read yielded it (checked JSON), has as a top-level member, in one
// pass over its members.
func MemberOf(obj []byte, keys []string) (key string, ok bool) {
	eachMember(obj, func(k, _ []byte) bool {
		for _, want := range keys {
			if keyIs(k, want) {
				key, ok = want, true
				return false
			}
		}
		return true
	})
	return key, ok
}

// HeaderFields returns the fields of a CSV or TSV source's header, as the
// reader split them (not trimmed).
func HeaderFields(s Source) ([]string, error) {
	comma := byte(',')
	if s.Format == "tsv" {
		comma = '\t'
	}
	// NB: the reader splits a record whose line ends are LF.
	return splitFields(bytes.ReplaceAll(s.Header, []byte("\r\n"), []byte("\n")), comma, nil)
}
