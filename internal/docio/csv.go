package docio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// quoteState follows RFC 4180 quoting across a CSV record's bytes, read
// leniently: only a quote that opens a field starts a quoted field.
type quoteState uint8

const (
	fieldStart  quoteState = iota // at the start of a field
	unquoted                      // inside an unquoted field
	quoted                        // inside a quoted field
	quotedQuote                   // a quote inside a quoted field: its end, or the first of ""
)

func (s quoteState) step(b []byte, comma byte) quoteState {
	for _, c := range b {
		switch s {
		case fieldStart, unquoted:
			switch {
			case c == comma || c == '\n':
				s = fieldStart
			case c == '"' && s == fieldStart:
				s = quoted
			default:
				s = unquoted
			}
		case quoted:
			if c == '"' {
				s = quotedQuote
			}
		case quotedQuote:
			switch {
			case c == '"':
				s = quoted
			case c == comma || c == '\n':
				s = fieldStart
			default:
				s = unquoted
			}
		}
	}
	return s
}

// splitFields splits one complete CSV record (its line ends LF) into
// fields, the same way quoteState reads it. A quote inside an unquoted
// field is kept (5" screens are common), but text after a field's closing
// quote is an error (as in encoding/csv), and so is a quoted field that is
// not closed.
func splitFields(rec []byte, comma byte, dst []string) ([]string, error) {
	var f strings.Builder
	s := fieldStart
	for _, c := range rec {
		switch s {
		case fieldStart, unquoted:
			switch {
			case c == comma:
				dst = append(dst, f.String())
				f.Reset()
				s = fieldStart
			case c == '"' && s == fieldStart:
				s = quoted
			default:
				f.WriteByte(c)
				s = unquoted
			}
		case quoted:
			if c == '"' {
				s = quotedQuote
			} else {
				f.WriteByte(c)
			}
		case quotedQuote:
			switch {
			case c == '"':
				f.WriteByte('"')
				s = quoted
			case c == comma:
				dst = append(dst, f.String())
				f.Reset()
				s = fieldStart
			default:
				return dst, fmt.Errorf("field %d has text after its closing quote (a quote inside a quoted field is written \"\")", len(dst)+1)
			}
		}
	}
	if s == quoted {
		return dst, errors.New("a quoted field is not closed before the end of the input")
	}
	return append(dst, f.String()), nil
}

// csv reads CSV (comma ',') or TSV (comma '\t') with a header line from
// r.lines, and calls OnSource with src once the header is read.
func (r *reader) csv(src Source, comma byte) error {
	name := src.Name
	state := fieldStart
	r.lines.scan = func(b []byte) { state = state.step(b, comma) }
	// NB: rec joins a record's lines with LF, as it is parsed (a quoted
	// field's line ends read as LF, as encoding/csv does); raw keeps
	// them as they were, for Record.Raw.
	var rec, raw []byte
	var fields, hdr []string // hdr: the header's names, trimmed
	idCol, textCol := -1, -1
	header, columns := true, 0
	for {
		// One record: lines until the quoting is closed.
		start := r.lines.line + 1
		rec, raw = rec[:0], raw[:0]
		end := ""
		total, long, nlines := 0, false, 0
		state = fieldStart
		for {
			b, n, l, err := r.lines.next()
			if err == io.EOF {
				if total == 0 {
					return nil // NB: an empty file has no records, header or not
				}
				break // an unclosed quote at the end: reported below
			}
			if err != nil {
				return err
			}
			total += n
			nlines++
			// NB: the last line end is not the record's (it was counted:
			// a record at the limit was refused).
			if l || total-len(r.lines.end) > r.o.MaxRecordBytes {
				if r.o.LongStops && state == quoted {
					// NB: a quote never closed over endless short lines
					// (yes | insert) was read for ever: the record passes
					// the limit (a read-through's R3).
					return fmt.Errorf("%s:%d: %w: a quoted field runs on past %d bytes, %s; reading stopped there (a stray quote? --skip-bad reads past such a record)", name, start, ErrTooLong, r.o.MaxRecordBytes, plural(nlines, "line", "lines"))
				}
				long = true
				rec, raw = rec[:0], raw[:0]
			} else {
				if total > n { // NB: not the record's first line
					rec = append(rec, '\n')
					raw = append(raw, end...)
				}
				rec = append(rec, b...)
				raw = append(raw, b...)
			}
			end = r.lines.end
			if state != quoted { // NB: a line end outside quotes ends the record
				break
			}
		}
		if state == quoted && nlines > 1 {
			// NB: a stray quote at the start of a field (a TSV text that
			// starts with one, most often) took every line after it into
			// one field: skipped as one bad record, 2,000 rows were lost
			// and the summary said 1. Reading on from the next line would
			// instead make records of a truncated file's multi-line text.
			return fmt.Errorf("%s:%d: %w by the end of the input, %s on: a field that starts with a double quote is a quoted field, in TSV as in CSV (a stray quote? quote the field and double its quotes: \"\"\"Hi,\"\" she said\"); no record after line %d can be read",
				name, start, ErrUnclosedQuote, plural(nlines-1, "line", "lines"), start-1)
		}
		if !long && total > 0 && len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		var rerr error
		fields = fields[:0]
		switch {
		case long:
			rerr = tooLong(total, r.o.MaxRecordBytes)
		case len(rec) > 0 && rec[len(rec)-1] == '\r':
			// NB: a carriage return before the line end, outside quotes
			// (a quoted last field ends in its quote): a CRLF file whose
			// line ends were converted again (CR CR LF). The header's
			// names are trimmed, so it matched, and every row's last
			// field kept the CR: the ids of that column were not their
			// source's (an input review, IN-16).
			rerr = errors.New("the line ends in a carriage return before its line end (CR CR LF: line ends converted twice?): remove it first (sed 's/\\r*$//' FILE)")
		case !header && bytes.HasPrefix(rec, utf8BOM):
			rerr = errors.New("the row starts with a byte order mark (U+FEFF), as a file joined to others with cat does: give each file as an input, or remove it (sed 's/^\\xef\\xbb\\xbf//')")
		default:
			fields, rerr = splitFields(rec, comma, fields)
			if rerr == nil && !header && slices.EqualFunc(fields, hdr, func(f, h string) bool { return strings.TrimSpace(f) == h }) {
				// NB: files joined with cat, each with its header: the
				// next file's header was a document, id "id" (an input
				// review, IN-15). Its names compared as the header's
				// are read (trimmed, unquoted: a read-through's RT10-9);
				// the JSON Lines reader names a joined file's byte order
				// mark, as above.
				rerr = errors.New("the row repeats the header (files joined with cat? give each file as an input)")
			}
		}
		if header {
			if rerr != nil {
				return fmt.Errorf("%s:%d: the header: %w%s", name, start, rerr, jsonLinesHint(rec))
			}
			for i, h := range fields {
				h = strings.TrimSpace(h)
				// NB: both when --id-col and --text-col name one column
				// (its header was said to be missing for the texts).
				for _, c := range []struct {
					name string
					col  *int
				}{{r.o.IDCol, &idCol}, {r.o.TextCol, &textCol}} {
					if h != c.name || c.col == &idCol && r.o.IDFrom != "" {
						continue // NB: ids from lines or hashes: not read
					}
					if *c.col >= 0 {
						// NB: the first was taken without a word.
						return fmt.Errorf("%s:%d: the header names %q twice (columns %d and %d): which one to read is not clear", name, start, h, *c.col+1, i+1)
					}
					*c.col = i
				}
			}
			if m := r.o.missingColumns(idCol >= 0, textCol >= 0); m != "" {
				// NB: the whole line was quoted, hundreds of bytes of a
				// JSON Lines file read as CSV, with no word of what it
				// looked like (a bad-input review, B13).
				shown := strings.Join(fields, string(comma))
				if len(shown) > 200 {
					shown = shown[:200]
					for !utf8.ValidString(shown) {
						shown = shown[:len(shown)-1]
					}
					shown += "…"
				}
				return noColumn{fmt.Errorf("%s:%d: the header %q has %s%s", name, start, shown, m, headerHint(rec, comma))}
			}
			header = false
			columns = len(fields)
			hdr = hdr[:0]
			for _, h := range fields {
				hdr = append(hdr, strings.TrimSpace(h))
			}
			src.Header, src.HeaderEnd = bytes.Clone(raw), end
			if err := r.onSource(src); err != nil {
				return err
			}
			continue
		}
		out := Record{File: name, Line: start, Raw: raw, End: end}
		if rerr == nil && len(fields) != columns {
			// NB: a row with more fields than the header is most often a
			// text with an unquoted comma: taking the field would cut it.
			rerr = fmt.Errorf("%s, the header has %d (quote a field that holds %q)", plural(len(fields), "column", "columns"), columns, string(comma))
			if len(fields) < columns {
				// NB: the hint fits a row with too many fields only.
				rerr = fmt.Errorf("%s, the header has %d (a row cut short, or a line end in a field that is not quoted?)", plural(len(fields), "column", "columns"), columns)
			}
		}
		var err error
		if rerr != nil {
			re := badRecord(name, start, "", raw, rerr)
			re.End = end
			err = r.emit(Record{}, re)
		} else if !utf8.ValidString(fields[textCol]) {
			// NB: as the JSON Lines reader: the shingler reads each byte
			// that is not UTF-8 as U+FFFD, and the texts of a Latin-1 file
			// that differ only in their accents became one text. (notUTF8
			// takes a JSON string as written, from its opening quote.)
			id := ""
			if idCol >= 0 {
				id = fields[idCol]
			}
			re := badRecord(name, start, id, raw, notUTF8(r.o.TextCol, []byte(`"`+fields[textCol])))
			re.End = end
			err = r.emit(Record{}, re)
		} else {
			out.Text = fields[textCol]
			switch r.o.IDFrom {
			case "line":
				out.ID = lineID(name, start)
			case "hash":
				out.ID = hashID(out.Text)
			default:
				out.ID = fields[idCol]
			}
			err = r.emit(out, nil)
		}
		if err != nil {
			return err
		}
	}
}

// plural is n and one or many, as n says: "1 line", "2 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// missingColumns says which of the id and text columns an input lacks
// ("" when neither is missing; the id column is not read with IDFrom),
// with the flag that names each: it said "no id or no text column".
func (o *Options) missingColumns(hasID, hasText bool) string {
	var m []string
	if !hasID && o.IDFrom == "" {
		m = append(m, fmt.Sprintf("no %q column for the ids (--id-col names it; --id-from line or hash makes ids)", o.IDCol))
	}
	if !hasText {
		m = append(m, fmt.Sprintf("no %q column for the texts (--text-col names it)", o.TextCol))
	}
	return strings.Join(m, " and ")
}

// jsonLinesHint is what a CSV header error adds when the line looks like
// JSON: a JSON Lines file read as CSV.
func jsonLinesHint(line []byte) string {
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
		return " (the line starts with '{': a JSON Lines file? --format jsonl reads it)"
	}
	return ""
}

// headerHint is jsonLinesHint, or what else a header that names neither
// column looks like: a TSV read as CSV, a CSV read as TSV, or a file
// separated by semicolons, which lshdb does not read (an input review's
// IN-9: each said only that the columns were missing).
func headerHint(line []byte, comma byte) string {
	if h := jsonLinesHint(line); h != "" {
		return h
	}
	switch {
	case comma == ',' && bytes.IndexByte(line, '\t') >= 0:
		return " (the header holds tabs: a TSV file? --format tsv reads it)"
	case comma == '\t' && bytes.IndexByte(line, ',') >= 0:
		return " (the header holds commas: a CSV file? --format csv reads it)"
	case bytes.IndexByte(line, ';') >= 0:
		return " (the header holds semicolons: lshdb reads CSV separated by commas, or TSV; convert the file first)"
	}
	return ""
}
