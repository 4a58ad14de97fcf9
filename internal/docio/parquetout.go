package docio

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// ErrColumnExists is returned by NewParquetWriter for an added column
// whose name the input's schema already has.
var ErrColumnExists = errors.New("the schema already has the column")

// Column is a column a ParquetWriter adds to every row: a top-level,
// optional (nullable) leaf of Kind string, int64 or double.
type Column struct {
	Name, Kind string
}

// ParquetWriter writes rows read from a Parquet input (Record.Row, with
// Options.Rows) to a new Parquet file with the input's schema: exactly the
// input's without added columns (the same fields in the same order, the
// same types, logical types, nesting and repetition), or the input's
// followed by the added columns as the root's last fields, so that the
// input's columns keep their indexes and its rows need no remapping.
type ParquetWriter struct {
	w     *parquet.GenericWriter[any]
	extra []int // the added columns' leaf indexes
	kinds []string
	row   parquet.Row
}

// parquetRowGroup is the rows of an output row group: the writer holds a
// row group in memory until it is full.
const parquetRowGroup = 16 << 10

// NewParquetWriter returns a writer of src's rows to w, with the columns
// extra added, compressed with src.Codec (snappy when the input's codec is
// unknown; none when the input had none), with src's key-value metadata
// (with extra, less what describes the columns: columnsMetadata).
func NewParquetWriter(w io.Writer, src Source, extra []Column) (*ParquetWriter, error) {
	if src.Schema == nil {
		return nil, fmt.Errorf("%s: no Parquet schema", src.Name)
	}
	schema := src.Schema
	pw := &ParquetWriter{}
	if len(extra) > 0 {
		fields := append([]parquet.Field(nil), schema.Fields()...)
		for _, c := range extra {
			for _, f := range fields {
				if f.Name() == c.Name {
					return nil, fmt.Errorf("%w: %s has a column %q", ErrColumnExists, src.Name, c.Name)
				}
			}
			var leaf parquet.Node
			switch c.Kind {
			case "string":
				leaf = parquet.String()
			case "int64":
				leaf = parquet.Int(64)
			case "double":
				leaf = parquet.Leaf(parquet.DoubleType)
			default:
				return nil, fmt.Errorf("column %q: kind %q is not string, int64 or double", c.Name, c.Kind)
			}
			// NB: a one-field group names the field.
			fields = append(fields, parquet.Group{c.Name: parquet.Optional(leaf)}.Fields()[0])
			pw.kinds = append(pw.kinds, c.Kind)
		}
		schema = parquet.NewSchema(schema.Name(), orderedGroup{Node: schema, fields: fields})
		n := len(src.Schema.Columns())
		for i := range extra {
			pw.extra = append(pw.extra, n+i)
		}
	}
	codec, err := parquetCodec(src.Codec)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{schema, parquet.Compression(codec), parquet.MaxRowsPerRowGroup(parquetRowGroup)}
	for _, m := range src.Metadata {
		// NB: the input's key-value metadata was dropped, and with it the
		// column types that Arrow, pandas and Hugging Face keep there (a
		// ClassLabel's names, a timezone, a categorical). Those that list
		// the columns are not copied to an output with columns added:
		// they would describe another schema.
		if len(extra) > 0 && columnsMetadata[m[0]] {
			continue
		}
		opts = append(opts, parquet.KeyValueMetadata(m[0], m[1]))
	}
	pw.w = parquet.NewGenericWriter[any](w, opts...)
	return pw, nil
}

// columnsMetadata are the Parquet key-value metadata keys that describe
// a file's columns one by one (NewParquetWriter).
var columnsMetadata = map[string]bool{"ARROW:schema": true, "pandas": true, "huggingface": true}

// parquetCodec returns the codec named name ("" for none).
func parquetCodec(name string) (compress.Codec, error) {
	switch strings.ToLower(name) {
	case "":
		return &parquet.Uncompressed, nil
	case "snappy":
		return &parquet.Snappy, nil
	case "gzip":
		return &parquet.Gzip, nil
	case "zstd":
		return &parquet.Zstd, nil
	case "lz4_raw", "lz4":
		return &parquet.Lz4Raw, nil
	case "brotli":
		return &parquet.Brotli, nil
	}
	return &parquet.Snappy, nil // NB: a codec the library reads but cannot write
}

// Write writes one row with the values of the added columns (string,
// int64 or float64 as their kinds; nil for null), in their order.
func (pw *ParquetWriter) Write(row parquet.Row, extras []any) error {
	if len(extras) != len(pw.extra) {
		return fmt.Errorf("%d values for %d added columns", len(extras), len(pw.extra))
	}
	out := row
	if len(pw.extra) > 0 {
		out = append(pw.row[:0], row...)
		for i, v := range extras {
			var pv parquet.Value
			switch v := v.(type) {
			case nil:
				pv = parquet.NullValue().Level(0, 0, pw.extra[i])
				out = append(out, pv)
				continue
			case string:
				if pw.kinds[i] != "string" {
					return fmt.Errorf("added column %d is %s, not a string", i, pw.kinds[i])
				}
				pv = parquet.ByteArrayValue([]byte(v))
			case int64:
				if pw.kinds[i] != "int64" {
					return fmt.Errorf("added column %d is %s, not an int64", i, pw.kinds[i])
				}
				pv = parquet.Int64Value(v)
			case float64:
				if pw.kinds[i] != "double" {
					return fmt.Errorf("added column %d is %s, not a double", i, pw.kinds[i])
				}
				pv = parquet.DoubleValue(v)
			default:
				return fmt.Errorf("added column %d: a %T", i, v)
			}
			out = append(out, pv.Level(0, 1, pw.extra[i]))
		}
		pw.row = out
	}
	_, err := pw.w.WriteRows([]parquet.Row{out})
	return err
}

// Close flushes the last row group and writes the file's footer.
func (pw *ParquetWriter) Close() error { return pw.w.Close() }

// orderedGroup is a group node whose fields keep the order given
// (parquet.Group sorts them by name): the input's fields, then the added
// ones.
type orderedGroup struct {
	parquet.Node
	fields []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }
