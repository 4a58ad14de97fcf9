package docio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// arrowFixture is a Parquet file written by Apache Arrow's Go
// implementation (testdata/parquet-arrow: another writer than parquet-go):
// 240 rows in 3 row groups, snappy, with a string id and text, a nullable
// string, a double, an int32, a nullable list of strings and a struct.
const arrowFixture = "../../testdata/parquet-arrow/docs.parquet"

// readRows reads path with Rows, returning its source and rows (bad
// records' rows included, in order).
func readRows(t *testing.T, path string) (Source, []parquet.Row) {
	t.Helper()
	var src Source
	var rows []parquet.Row
	o := Options{Rows: true, OnSource: func(s Source) error { src = s; return nil }}
	for rec, err := range Read(context.Background(), []string{path}, nil, o) {
		var re *RecordError
		switch {
		case errors.As(err, &re):
			rows = append(rows, re.Row)
		case err != nil:
			t.Fatal(err)
		default:
			if rec.Row == nil {
				t.Fatalf("%s: no row with Options.Rows", rec.Pos())
			}
			rows = append(rows, rec.Row)
		}
	}
	return src, rows
}

// fileRows opens a Parquet file in memory with parquet-go and returns its
// schema and rows.
func fileRows(t *testing.T, b []byte) (*parquet.Schema, []parquet.Row) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rd := parquet.NewReader(f, f.Schema())
	defer rd.Close()
	var rows []parquet.Row
	buf := make([]parquet.Row, 64)
	for {
		n, err := rd.ReadRows(buf)
		for _, r := range buf[:n] {
			rows = append(rows, r.Clone())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f.Schema(), rows
}

// Ensure that rows read from the other writer's file and written back
// with ParquetWriter make a file with the same schema (its text form,
// every leaf's path, type and levels) and the same rows (every value,
// nulls, lists and structs, in order); that a subset of rows round-trips
// too; and that added columns come after the input's, which keep their
// values, with the added values and nulls as written. The oracle is the
// fixture itself, read back with parquet-go.
func TestParquetWriterRoundTripsArrowFile(t *testing.T) {
	src, rows := readRows(t, arrowFixture)
	if src.Format != "parquet" || src.Codec != "snappy" || len(rows) != 240 {
		t.Fatalf("source %+v, %d rows; want parquet, snappy, 240", src, len(rows))
	}
	_, want := fileRows(t, mustRead(t, arrowFixture))
	for i := range want {
		if !want[i].Equal(rows[i]) {
			t.Fatalf("row %d read as %v, the file holds %v", i, rows[i], want[i])
		}
	}
	write := func(rows []parquet.Row, extra []Column, vals func(i int) []any) []byte {
		var buf bytes.Buffer
		pw, err := NewParquetWriter(&buf, src, extra)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if err := pw.Write(r, vals(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	sameLeaves := func(got *parquet.Schema, n int) {
		t.Helper()
		gc, wc := got.Columns(), src.Schema.Columns()
		for i := range n {
			g, _ := got.Lookup(gc[i]...)
			w, _ := src.Schema.Lookup(wc[i]...)
			if !slices.Equal(gc[i], wc[i]) || g.Node.Type().String() != w.Node.Type().String() ||
				g.MaxRepetitionLevel != w.MaxRepetitionLevel || g.MaxDefinitionLevel != w.MaxDefinitionLevel || g.ColumnIndex != w.ColumnIndex {
				t.Fatalf("leaf %d: %v %s r%d d%d, input %v %s r%d d%d", i, gc[i], g.Node.Type(), g.MaxRepetitionLevel, g.MaxDefinitionLevel, wc[i], w.Node.Type(), w.MaxRepetitionLevel, w.MaxDefinitionLevel)
			}
		}
	}
	noVals := func(int) []any { return nil }
	// Every row, no added column: the same schema and rows.
	schema, got := fileRows(t, write(rows, nil, noVals))
	if schema.String() != src.Schema.String() || len(schema.Columns()) != len(src.Schema.Columns()) {
		t.Fatalf("schema\n%s\nwant\n%s", schema, src.Schema)
	}
	sameLeaves(schema, len(src.Schema.Columns()))
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !want[i].Equal(got[i]) {
			t.Fatalf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	// Every third row.
	var sub, subWant []parquet.Row
	for i := 0; i < len(rows); i += 3 {
		sub, subWant = append(sub, rows[i]), append(subWant, want[i])
	}
	_, got = fileRows(t, write(sub, nil, noVals))
	if len(got) != len(subWant) {
		t.Fatalf("subset: %d rows, want %d", len(got), len(subWant))
	}
	for i := range subWant {
		if !subWant[i].Equal(got[i]) {
			t.Fatalf("subset row %d: %v, want %v", i, got[i], subWant[i])
		}
	}
	// Added columns: the input's first, unchanged; then the added ones.
	extra := []Column{{"duplicate_of", "string"}, {"similarity", "double"}, {"cluster_id", "int64"}}
	vals := func(i int) []any {
		if i%2 == 0 {
			return []any{nil, nil, nil}
		}
		return []any{"doc-000", float64(i) / 1000, int64(i)}
	}
	schema, got = fileRows(t, write(rows, extra, vals))
	n := len(src.Schema.Columns())
	if len(schema.Columns()) != n+3 {
		t.Fatalf("%d columns, want %d", len(schema.Columns()), n+3)
	}
	sameLeaves(schema, n)
	fields := schema.Fields()
	for k, c := range extra {
		if f := fields[len(src.Schema.Fields())+k]; f.Name() != c.Name || !f.Optional() {
			t.Fatalf("added field %d: %s optional=%v, want %s", k, f.Name(), f.Optional(), c.Name)
		}
	}
	for i := range want {
		var orig parquet.Row
		added := map[int]parquet.Value{}
		for _, v := range got[i] {
			if v.Column() < n {
				orig = append(orig, v)
			} else {
				added[v.Column()-n] = v
			}
		}
		if !want[i].Equal(orig) {
			t.Fatalf("row %d's input columns: %v, want %v", i, orig, want[i])
		}
		vs := vals(i)
		for k := range extra {
			v := added[k]
			switch {
			case vs[k] == nil && !v.IsNull():
				t.Fatalf("row %d, added %d: %v, want null", i, k, v)
			case vs[k] == nil:
			case extra[k].Kind == "string" && string(v.ByteArray()) != vs[k].(string),
				extra[k].Kind == "double" && v.Double() != vs[k].(float64),
				extra[k].Kind == "int64" && v.Int64() != vs[k].(int64):
				t.Fatalf("row %d, added %d: %v, want %v", i, k, v, vs[k])
			}
		}
	}
	// A column the input has is refused.
	if _, err := NewParquetWriter(io.Discard, src, []Column{{"text", "string"}}); !errors.Is(err, ErrColumnExists) {
		t.Fatalf("an added column named text: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Ensure that the input's key-value metadata (where Arrow, pandas and
// Hugging Face keep their column types) is read and written back: to an
// output of the input's columns, all of it; to one with columns added,
// all but what describes the columns one by one. It was dropped. Oracle:
// the metadata written into the input.
func TestParquetWriterKeepsMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.parquet")
	in := map[string]string{"owner": "nightly", "pandas": `{"columns":[]}`, "ARROW:schema": "c29tZQ==", "huggingface": `{"info":{}}`}
	var opts []parquet.WriterOption
	for k, v := range in {
		opts = append(opts, parquet.KeyValueMetadata(k, v))
	}
	writeParquet(t, path, []pqRow{{"en", "a", "one text", 1}, {"fr", "b", "another text", 2}}, opts...)
	src, rows := readRows(t, path)
	if got := map[string]string{}; len(src.Metadata) != len(in) {
		t.Fatalf("read metadata %v, want %v", src.Metadata, in)
	} else {
		for _, m := range src.Metadata {
			got[m[0]] = m[1]
		}
		if !maps.Equal(got, in) {
			t.Fatalf("read metadata %v, want %v", got, in)
		}
	}
	written := func(extra []Column) map[string]string {
		var buf bytes.Buffer
		pw, err := NewParquetWriter(&buf, src, extra)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			vals := make([]any, len(extra))
			if err := pw.Write(r, vals); err != nil {
				t.Fatal(err)
			}
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range f.Metadata().KeyValueMetadata {
			out[m.Key] = m.Value
		}
		return out
	}
	if got := written(nil); !maps.Equal(got, in) {
		t.Errorf("written with the input's columns: %v, want %v", got, in)
	}
	if got, want := written([]Column{{"duplicate_of", "string"}}), map[string]string{"owner": "nightly"}; !maps.Equal(got, want) {
		t.Errorf("written with a column added: %v, want %v", got, want)
	}
}
