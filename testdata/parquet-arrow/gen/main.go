// Command gen writes ../docs.parquet, a small Parquet file made by Apache
// Arrow's Go implementation (arrow-go's pqarrow writer), a different
// writer than the parquet-go library lshdb reads and writes Parquet with:
// the fixture of internal/docio's and lshdb filter's Parquet round-trip
// tests. Its texts are made up here from a fixed word list with a seeded
// generator: originals, and copies of earlier originals at a few word
// edits (the near-duplicates filter removes).
//
//	cd testdata/parquet-arrow/gen && go run .            # writes ../docs.parquet
//	go run . -check FILE                                  # reads FILE with arrow-go: schema and rows
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var words = strings.Fields(`river stone window garden letter market winter summer
station bridge mountain forest harbor engine signal paper silver copper
library museum theater school village castle tower valley island meadow
candle mirror ladder basket pocket button needle thread blanket pillow
orange lemon cherry almond pepper ginger butter cheese bread honey
quiet rapid gentle bright narrow hollow steady brave clever curious
build carry follow gather listen measure notice repair travel wander
north south east west morning evening midnight noon yesterday tomorrow
always rarely often seldom nearly almost quite rather simply slowly`)

func main() {
	check := flag.String("check", "", "read this Parquet file with arrow-go and print its schema and row count")
	out := flag.String("out", "../docs.parquet", "the file to write")
	flag.Parse()
	if *check != "" {
		if err := checkFile(*check); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := write(*out); err != nil {
		log.Fatal(err)
	}
}

func write(path string) error {
	strField := func(name string, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: nullable}
	}
	schema := arrow.NewSchema([]arrow.Field{
		strField("id", false),
		strField("text", false),
		strField("url", true),
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "year", Type: arrow.PrimitiveTypes.Int32},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "meta", Type: arrow.StructOf(strField("source", false), strField("lang", true))},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(2026, 11))
	var originals []string
	for i := range 240 {
		var text string
		if i%4 == 3 && len(originals) > 0 {
			// A copy of an earlier original with 0 to 2 words replaced.
			ws := strings.Fields(originals[rng.IntN(len(originals))])
			for range rng.IntN(3) {
				ws[rng.IntN(len(ws))] = words[rng.IntN(len(words))]
			}
			text = strings.Join(ws, " ")
		} else {
			ws := make([]string, 30+rng.IntN(30))
			for k := range ws {
				ws[k] = words[rng.IntN(len(words))]
			}
			text = strings.Join(ws, " ")
			originals = append(originals, text)
		}
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("doc-%03d", i))
		b.Field(1).(*array.StringBuilder).Append(text)
		if i%5 == 0 {
			b.Field(2).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("https://example.org/%d", i))
		}
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 8)
		b.Field(4).(*array.Int32Builder).Append(int32(1990 + i%35))
		lb := b.Field(5).(*array.ListBuilder)
		if i%7 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := range i % 3 {
				lb.ValueBuilder().(*array.StringBuilder).Append(words[(i+k)%len(words)])
			}
		}
		sb := b.Field(6).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append([]string{"web", "books", "mail"}[i%3])
		if i%4 == 0 {
			sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
		} else {
			sb.FieldBuilder(1).(*array.StringBuilder).Append("en")
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(100))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

func checkFile(path string) error {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return err
	}
	defer tbl.Release()
	fmt.Printf("%s\n%d rows, %d row groups\n", tbl.Schema(), tbl.NumRows(), rdr.NumRowGroups())
	return nil
}
