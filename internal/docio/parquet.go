package docio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// ErrNeedsFile is returned for a Parquet input that is not a regular file
// (stdin, a pipe): Parquet keeps its index at the end of the file, so a
// reader needs to seek.
var ErrNeedsFile = errors.New("parquet input must be a file (it cannot be read from a pipe or stdin)")

// ErrDamagedParquet is a Parquet file whose reading failed inside the
// Parquet library: a damaged file (bytes changed, a page cut short).
var ErrDamagedParquet = errors.New("the Parquet file is damaged: its reader failed")

// safely runs f, a call into the Parquet library, and returns a panic in
// it as an ErrDamagedParquet. NB: parquet-go does not check a damaged
// file's dictionary indexes and byte-array lengths, and panicked ("index
// out of range [114] with length 101") on a file with a few bytes
// changed: lshdb insert died with a Go panic and exit status 2 (a fuzz
// campaign's F1).
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w (%v)", ErrDamagedParquet, p)
		}
	}()
	return f()
}

// parquetMagic starts (and ends) every Parquet file.
var parquetMagic = []byte("PAR1")

// parquet reads the Parquet file f (name for messages): one record per
// row, the id and the text from the columns Options.IDCol and
// Options.TextCol (top-level or dotted paths into groups; text: a string
// or binary column; id: a string, binary or integer column). Record.Line
// is the row's number (1-based) and Record.Raw is nil. A row whose id or
// text is null is a bad record. Parquet's own compression (snappy, gzip,
// zstd, lz4, brotli) is read by the library; a Parquet file inside gzip
// or zstd is not.
func (r *reader) parquet(name string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", name, ErrNeedsFile)
	}
	var pf *parquet.File
	if err := safely(func() (err error) { pf, err = parquet.OpenFile(f, st.Size()); return err }); err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", name, err)
	}
	schema := pf.Schema()
	// NB: a column named with a dot (a flat "meta.url") could not be
	// named, and the message listed it among the columns it said were
	// not there (an input review, IN-5): the whole name is a column, or
	// a path into groups, and both at once is refused, as in JSON Lines.
	var ambiguous []string
	lookup := func(col string) (parquet.LeafColumn, bool) {
		whole, okWhole := schema.Lookup(col)
		path, okPath := schema.Lookup(strings.Split(col, ".")...)
		switch {
		case okWhole && okPath && strings.Contains(col, "."):
			ambiguous = append(ambiguous, col)
		case okWhole:
			return whole, true
		}
		return path, okPath
	}
	textCol, okText := lookup(r.o.TextCol)
	idCol, okID := lookup(r.o.IDCol)
	if len(ambiguous) > 0 {
		return fmt.Errorf("%s: the Parquet schema has both a column %q and that path into its groups: which one to read is not clear (rename one of them first)", name, ambiguous[0])
	}
	if m := r.o.missingColumns(okID, okText); m != "" {
		var cols []string
		for _, path := range schema.Columns() {
			cols = append(cols, strings.Join(path, "."))
		}
		return noColumn{fmt.Errorf("%s: the Parquet schema's columns %q have %s", name, cols, m)}
	}
	check := func(what string, c parquet.LeafColumn, ints bool) error {
		if c.MaxRepetitionLevel > 0 {
			return fmt.Errorf("%s: the %s column %q is repeated (a list): want one value per row", name, what, strings.Join(c.Path, "."))
		}
		want := "strings"
		if ints {
			want = "strings or integers"
		}
		switch k := c.Node.Type().Kind(); {
		case k == parquet.ByteArray, k == parquet.FixedLenByteArray:
		case ints && (k == parquet.Int32 || k == parquet.Int64):
		default:
			return fmt.Errorf("%s: the %s column %q holds %s values: want %s", name, what, strings.Join(c.Path, "."), k, want)
		}
		if a := notTextual(c.Node.Type()); a != "" {
			// NB: read as their raw bytes or integers, a UUID's 16 bytes
			// failed as text that is not UTF-8, and a DECIMAL(10,2)
			// 1234.56 became the id "123456", a date its day number,
			// without a word (an input review, IN-4).
			return fmt.Errorf("%s: the %s column %q holds %s values, whose stored bytes or numbers are not their text: want %s (cast the column to a string first)", name, what, strings.Join(c.Path, "."), a, want)
		}
		return nil
	}
	if err := check("text", textCol, false); err != nil {
		return err
	}
	if okID && r.o.IDFrom == "" {
		if err := check("id", idCol, true); err != nil {
			return err
		}
	}
	codec := ""
	if rgs := pf.Metadata().RowGroups; len(rgs) > 0 && len(rgs[0].Columns) > 0 {
		if c := parquet.LookupCompressionCodec(rgs[0].Columns[0].MetaData.Codec); c.CompressionCodec() != 0 {
			codec = strings.ToLower(c.String())
		}
	}
	var kv [][2]string
	for _, m := range pf.Metadata().KeyValueMetadata {
		kv = append(kv, [2]string{m.Key, m.Value})
	}
	if err := r.onSource(Source{Name: name, Format: "parquet", Schema: schema, Codec: codec, Metadata: kv}); err != nil {
		return err
	}
	rd := parquet.NewReader(f, schema)
	defer rd.Close()
	rows := make([]parquet.Row, 256)
	line := 0
	// NB: progress in bytes of the file, as the share of its rows read.
	var reported int64
	report := func() {
		if r.o.Progress != nil && pf.NumRows() > 0 {
			at := st.Size() * int64(line) / pf.NumRows()
			r.o.Progress(at - reported)
			reported = at
		}
	}
	for {
		var n int
		err := safely(func() (err error) { n, err = rd.ReadRows(rows); return err })
		for _, row := range rows[:n] {
			line++
			if err := r.parquetRow(name, line, row, idCol.ColumnIndex, textCol.ColumnIndex, okID, okID && unsignedInt(idCol.Node.Type())); err != nil {
				return err
			}
		}
		report()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", name, line+1, err)
		}
	}
}

// unsignedInt reports whether t is an unsigned integer type: a logical
// INT(n, false), or the legacy converted UINT_8 to UINT_64.
func unsignedInt(t parquet.Type) bool {
	if lt := t.LogicalType(); lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok {
			return !it.IsSigned
		}
	}
	ct := t.ConvertedType()
	return ct != nil && *ct >= deprecated.Uint8 && *ct <= deprecated.Uint64
}

// parquetRow emits one row as a record; an integer id of an unsigned
// column (idUnsigned) is read as unsigned.
//
// NB: it was read signed: a UINT_64 id of 2^63 or more (a UINT_32 of
// 2^31) became a negative number, the id every output then named.
func (r *reader) parquetRow(name string, line int, row parquet.Row, idIdx, textIdx int, hasID, idUnsigned bool) error {
	var id, text parquet.Value
	var gotID, gotText bool
	for _, v := range row {
		switch c := v.Column(); {
		case c == textIdx:
			text, gotText = v, true
		case hasID && c == idIdx:
			id, gotID = v, true
		}
	}
	out := Record{File: name, Line: line}
	var rerr error
	switch {
	case !gotText || text.IsNull():
		rerr = fmt.Errorf("no text (null)")
	case len(text.ByteArray()) > r.o.MaxRecordBytes:
		rerr = tooLong(len(text.ByteArray()), r.o.MaxRecordBytes)
	case !utf8.Valid(text.ByteArray()):
		// NB: as the JSON Lines and CSV readers: the shingler reads each
		// byte that is not UTF-8 as U+FFFD, and Latin-1 texts that differ
		// only in their accents were one text (a pair of Jaccard 1).
		rerr = notUTF8(r.o.TextCol, append([]byte{'"'}, text.ByteArray()...))
	}
	if rerr == nil {
		out.Text = string(text.ByteArray())
		switch r.o.IDFrom {
		case "line":
			out.ID = lineID(name, line)
		case "hash":
			out.ID = hashID(out.Text)
		default:
			switch {
			case !gotID || id.IsNull():
				rerr = fmt.Errorf("no id (null)")
			case idUnsigned && id.Kind() == parquet.Int32:
				out.ID, out.IDNumber = strconv.FormatUint(uint64(id.Uint32()), 10), true
			case idUnsigned && id.Kind() == parquet.Int64:
				out.ID, out.IDNumber = strconv.FormatUint(id.Uint64(), 10), true
			case id.Kind() == parquet.Int32 || id.Kind() == parquet.Int64:
				out.ID, out.IDNumber = strconv.FormatInt(id.Int64(), 10), true
			default:
				out.ID = string(id.ByteArray())
			}
		}
	}
	if rerr != nil {
		re := badRecord(name, line, out.ID, nil, rerr)
		if r.o.Rows {
			re.Row = row.Clone()
		}
		return r.emit(Record{}, re)
	}
	if r.o.Rows {
		out.Row = row.Clone() // NB: the reader reuses its rows
	}
	return r.emit(out, nil)
}

// notTextual names the Parquet annotation (logical type, or the converted
// type of older writers) of a column of type t whose values' stored form
// is not their text, such as DECIMAL, DATE, TIMESTAMP or UUID; "" for
// strings, enums, JSON, integers and columns without one.
func notTextual(t parquet.Type) string {
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		switch lt.Value.(type) {
		case *format.StringType, *format.EnumType, *format.JsonType, *format.IntType:
			return ""
		}
		return lt.Value.String()
	}
	if ct := t.ConvertedType(); ct != nil {
		if name, ok := map[deprecated.ConvertedType]string{deprecated.Decimal: "DECIMAL", deprecated.Date: "DATE",
			deprecated.TimeMillis: "TIME_MILLIS", deprecated.TimeMicros: "TIME_MICROS", deprecated.TimestampMillis: "TIMESTAMP_MILLIS",
			deprecated.TimestampMicros: "TIMESTAMP_MICROS", deprecated.Interval: "INTERVAL", deprecated.Bson: "BSON"}[*ct]; ok {
			return name
		}
	}
	return ""
}
