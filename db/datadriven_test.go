package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// sentinels names the package's sentinel errors for script output.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrNotFound", ErrNotFound}, {"ErrLocked", ErrLocked}, {"ErrParamsMismatch", ErrParamsMismatch},
	{"ErrFormatTooNew", ErrFormatTooNew}, {"ErrCorrupt", ErrCorrupt}, {"ErrEmptyDocument", ErrEmptyDocument},
	{"ErrDocTooLarge", ErrDocTooLarge}, {"ErrInvalidID", ErrInvalidID}, {"ErrClosed", ErrClosed},
	{"ErrInvalidOptions", ErrInvalidOptions}, {"ErrNotIndex", ErrNotIndex}, {"ErrNotExist", ErrNotExist},
	{"ErrReadOnly", ErrReadOnly},
}

func errString(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return fmt.Sprintf("error %s: %v\n", s.name, err)
		}
	}
	return fmt.Sprintf("error: %v\n", err)
}

// TestDataDriven runs the scripts in testdata/db: the API's behaviour
// (put, get, query, delete, upsert, errors) in the style of Pebble's
// datadriven tests. Similarities in the expected output were counted by
// hand from the shingles (see the comments in each script).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "../testdata/db", func(t *testing.T, path string) {
		fs := vfs.NewMem()
		var d *DB
		defer func() {
			if d != nil {
				d.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			arg := func(key string) string {
				if !td.HasArg(key) {
					return ""
				}
				var v string
				td.ScanArgs(t, key, &v)
				return v
			}
			float := func(key string) float64 {
				var f float64
				if td.HasArg(key) {
					td.ScanArgs(t, key, &f)
				}
				return f
			}
			integer := func(key string) int {
				var n int
				if td.HasArg(key) {
					td.ScanArgs(t, key, &n)
				}
				return n
			}
			switch td.Cmd {
			case "open":
				o := &Options{fs: fs, Threshold: float("threshold"), NumPerm: integer("num-perm"),
					StoreText: td.HasArg("store-text"), MaxDocBytes: integer("max-doc-bytes")}
				nd, err := Open("db", o)
				if err != nil {
					return errString(err)
				}
				d = nd
				p := d.Params()
				return fmt.Sprintf("threshold=%v %v k=%d scheme=%v shingles=%v/%d\n", p.Threshold, p.Bands, p.NumPerm, p.Scheme, p.Shingle, p.ShingleSize)
			case "close":
				if err := d.Close(); err != nil {
					return errString(err)
				}
				return "ok\n"
			case "put":
				var err error
				if td.HasArg("meta") {
					_, err = d.PutBatch([]Doc{{ID: arg("id"), Text: td.Input, Meta: []byte(arg("meta"))}}, nil)
				} else {
					err = d.Put(Doc{ID: arg("id"), Text: td.Input}, nil)
				}
				if err != nil {
					return errString(err)
				}
				return "ok\n"
			case "put-batch":
				var docs []Doc
				for _, line := range strings.Split(td.Input, "\n") {
					id, text, _ := strings.Cut(line, ":")
					docs = append(docs, Doc{ID: strings.TrimSpace(id), Text: strings.TrimSpace(text)})
				}
				if _, err := d.PutBatch(docs, nil); err != nil {
					return errString(err)
				}
				return fmt.Sprintf("ok, %d documents\n", len(docs))
			case "delete":
				if err := d.Delete(arg("id"), nil); err != nil {
					return errString(err)
				}
				return "ok\n"
			case "get":
				doc, err := d.Get(arg("id"))
				if err != nil {
					return errString(err)
				}
				text := "(not stored)"
				if doc.HasText {
					text = fmt.Sprintf("%q", doc.Text)
				}
				meta := "(none)"
				if doc.Meta != nil {
					meta = fmt.Sprintf("%q", doc.Meta)
				}
				return fmt.Sprintf("id=%s num=%d shingles=%d signature=%d text=%s meta=%s\n", doc.ID, doc.Num, len(doc.Shingles), len(doc.Signature), text, meta)
			case "has":
				ok, err := d.Has(arg("id"))
				if err != nil {
					return errString(err)
				}
				return fmt.Sprintln(ok)
			case "count":
				n, err := d.Count()
				if err != nil {
					return errString(err)
				}
				return fmt.Sprintln(n)
			case "query", "query-id":
				qo := &QueryOptions{Threshold: float("threshold"), Limit: integer("limit"), EstimateOnly: td.HasArg("estimate-only")}
				var res *QueryResult
				var err error
				if td.Cmd == "query" {
					res, err = d.Query(context.Background(), td.Input, qo)
				} else {
					res, err = d.QueryID(context.Background(), arg("id"), qo)
				}
				if err != nil {
					return errString(err)
				}
				var b strings.Builder
				fmt.Fprintf(&b, "threshold=%v recall=%.4f candidates=%d found=%d\n", res.Threshold, res.ExpectedRecall, res.Candidates, res.Found)
				for _, m := range res.Matches {
					if res.EstimateOnly {
						fmt.Fprintf(&b, "%s estimate=%.4f\n", m.ID, m.Estimate)
					} else {
						fmt.Fprintf(&b, "%s jaccard=%.4f\n", m.ID, m.Jaccard)
					}
				}
				return b.String()
			case "check":
				rep, err := d.Check(context.Background())
				if err != nil {
					return errString(err)
				}
				if !rep.OK() {
					return strings.Join(rep.Problems, "\n") + "\n"
				}
				return fmt.Sprintf("ok: %d docs, %d ids\n", rep.Docs, rep.IDs)
			}
			t.Fatalf("unknown command %q", td.Cmd)
			return ""
		})
	})
}
