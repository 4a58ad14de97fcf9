package docio

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzCSVAgainstEncodingCSV reads CSV input with Read and with
// encoding/csv, the oracle, up to the first record encoding/csv refuses
// (Read is more lenient: a quote inside an unquoted field is data):
// every record Read yields must be the record encoding/csv reads at the
// same line (its id and text columns), and every record encoding/csv
// reads must come out of Read, as a record or as a bad record at its
// line. Read is stricter in places it documents: a bad record for a
// wrong number of fields, an empty id, a text that is not UTF-8 (those
// are not compared), and a lone CR that ends the input is a line end
// there as in encoding/csv.
func FuzzCSVAgainstEncodingCSV(f *testing.F) {
	for _, s := range []string{
		"id,text\na,hello world\n",
		"id,text\r\na,\"x\r\ny, \"\"q\"\"\"\r\nb,z\r\n",
		"text,id\n\"multi\nline\",1\n2 words,2\n",
		"id,text\n\na,b\n\n\nc,d",
		"id,text\na,b\r",
		"id,text\na,\"b\"\r",
		"id,text,extra\n1,two,3\n4,five\n",
		"\xef\xbb\xbfid,text\na,\"unclosed\n",
		"id,text\na,12\" vinyl\n",
		"id,text\na,\"b\"c\n",
		"id,text\n a , b \n",
		"id,text\na,x\ry\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		// The oracle: encoding/csv's records and the line each starts
		// at, up to its first error.
		type rec struct {
			line   int
			fields []string
		}
		body := bytes.TrimPrefix(in, []byte("\xef\xbb\xbf"))
		cr := csv.NewReader(bytes.NewReader(body))
		cr.FieldsPerRecord = -1
		var want []rec
		stop := 1 << 30 // the line of the record encoding/csv refused
		for {
			fields, err := cr.Read()
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				stop = pe.StartLine
			}
			if err != nil {
				break
			}
			line, _ := cr.FieldPos(0)
			want = append(want, rec{line, fields})
		}
		if len(want) == 0 {
			return
		}
		header := want[0].fields
		idCol, textCol := slices.Index(header, "id"), slices.Index(header, "text")
		if idCol < 0 || textCol < 0 || len(header) != len(slicesCompact(header)) {
			return // NB: Read refuses a header without them, or with a name twice
		}
		byLine := map[int]rec{}
		for _, r := range want[1:] {
			byLine[r.line] = r
		}
		seen := map[int]bool{}
		for got, err := range Read(context.Background(), nil, bytes.NewReader(in), Options{Format: "csv"}) {
			var re *RecordError
			if errors.As(err, &re) {
				seen[re.Line] = true
				continue
			}
			if err != nil {
				return // NB: a fatal error (the oracle may read on past it: not compared)
			}
			seen[got.Line] = true
			if got.Line >= stop {
				continue
			}
			w, ok := byLine[got.Line]
			if !ok {
				t.Fatalf("Read yielded %q=%q at line %d, where encoding/csv read no record", got.ID, got.Text, got.Line)
			}
			if len(w.fields) != len(header) || w.fields[idCol] != got.ID || w.fields[textCol] != got.Text {
				t.Fatalf("line %d: Read gave id %q text %q; encoding/csv %q", got.Line, got.ID, got.Text, w.fields)
			}
		}
		for _, r := range want[1:] {
			if seen[r.line] {
				continue
			}
			if len(r.fields) == len(header) && r.fields[idCol] != "" && utf8.ValidString(r.fields[textCol]) {
				t.Fatalf("encoding/csv read %q at line %d; Read gave nothing there", r.fields, r.line)
			}
		}
	})
}

// slicesCompact returns the distinct names of a header.
func slicesCompact(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return slices.Compact(s)
}
