package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/lshdb/lshdb/db"
)

var diskBytes = regexp.MustCompile(`("disk_bytes":|on disk )\d+`)

// runLine runs one command line in-process (the same cobra tree as the
// binary) and returns stdout, stderr and the exit status.
func runLine(args []string, stdin string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// scriptInputs writes the generated inputs next to the committed ones: a
// gzip of docs.jsonl (with a misleading name, to show detection is by
// content) and a truncated gzip.
func scriptInputs(t *testing.T) string {
	dir := t.TempDir()
	src, err := os.ReadFile("../../testdata/cmd/inputs/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(src)
	w.Close()
	os.WriteFile(filepath.Join(dir, "docs.data"), gz.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "truncated.jsonl.gz"), gz.Bytes()[:gz.Len()/2], 0o644)
	os.WriteFile(filepath.Join(dir, "a-file"), []byte("not a database"), 0o644)
	os.Mkdir(filepath.Join(dir, "not-an-index"), 0o755)
	os.WriteFile(filepath.Join(dir, "not-an-index", "notes.txt"), []byte("x"), 0o644)
	return dir
}

// TestScripts runs testdata/cmd/scripts: each "run" directive's input is
// one command line, "lshdb ARGS" ($DB is a fresh index directory per
// script, $IN the committed inputs, $GEN the generated ones); text after a
// line "<<<" is its stdin. The expected output is stdout, then stderr lines prefixed
// "stderr: ", then the exit status.
func TestScripts(t *testing.T) {
	in, err := filepath.Abs("../../testdata/cmd/inputs")
	if err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "../../testdata/cmd/scripts", func(t *testing.T, path string) {
		gen := scriptInputs(t)
		dbDir := filepath.Join(t.TempDir(), "index")
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			line, stdin, _ := strings.Cut(td.Input, "\n<<<\n")
			if td.Cmd != "run" || !strings.HasPrefix(line, "lshdb ") {
				t.Fatalf("want run with a line \"lshdb ARGS\", got %q %q", td.Cmd, line)
			}
			line = strings.TrimPrefix(line, "lshdb ")
			line = strings.NewReplacer("$DB", dbDir, "$IN", in, "$GEN", gen).Replace(line)
			args, err := splitWords(line)
			if err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runLine(args, stdin)
			var b strings.Builder
			b.WriteString(out)
			for _, l := range strings.Split(strings.TrimRight(errOut, "\n"), "\n") {
				if l != "" {
					l = strings.NewReplacer(dbDir, "$DB", in, "$IN", gen, "$GEN").Replace(l)
					fmt.Fprintf(&b, "stderr: %s\n", l)
				}
			}
			fmt.Fprintf(&b, "exit %d\n", code)
			// Pebble's estimate of the bytes on disk is not part of the
			// contract; the stored bytes (checked by hand) are.
			return diskBytes.ReplaceAllString(b.String(), "${1}N")
		})
	})
}

// Ensure that tune --plot writes a well-formed SVG whose curve is P(s) of
// the printed banding: parsed as XML, the path's points are checked
// against 1 − (1 − s^r)^b computed here.
func TestTunePlotSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curve.svg")
	out, errOut, code := runLine([]string{"tune", "--threshold", "0.8", "--plot", path, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("tune: %d %s", code, errOut)
	}
	var res struct{ Bands, Rows int }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Bands != 16 || res.Rows != 6 {
		t.Fatalf("tune output %q: %v", out, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var root string
	var curve string
	texts := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "text" {
				texts++
			}
			for _, at := range se.Attr {
				if se.Name.Local == "path" && at.Name.Local == "d" {
					curve = at.Value
				}
			}
		}
	}
	if root != "svg" || texts == 0 || curve == "" {
		t.Fatalf("root %q, %d labels, curve %q", root, texts, curve)
	}
	// The plot maps s ∈ [0,1] to x ∈ [60, 580] and P ∈ [0,1] to y ∈ [380, 60].
	points := strings.Fields(strings.NewReplacer("M", "", "L", "").Replace(curve))
	if len(points) != 2*201 {
		t.Fatalf("%d coordinates", len(points))
	}
	for i := 0; i < len(points); i += 2 {
		var x, y float64
		fmt.Sscan(points[i], &x)
		fmt.Sscan(points[i+1], &y)
		s := (x - 60) / 520
		want := 1 - math.Pow(1-math.Pow(s, 6), 16)
		if got := (380 - y) / 320; math.Abs(got-want) > 0.002 {
			t.Fatalf("point %d: P(%.3f) drawn at %.4f, want %.4f", i/2, s, got, want)
		}
	}
}

// Ensure that an index held open elsewhere is refused with a clear message
// (the db package's test covers another process holding it).
func TestLockedIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, errOut, code := runLine([]string{"stats", "--db", dir}, "")
	if code != 1 || !strings.Contains(errOut, "locked by another process") {
		t.Fatalf("stats on a locked index: exit %d, %q", code, errOut)
	}
}

// Ensure that bench measures on a corpus and on an index: every figure is
// present and positive, and the counts are the input's (6 documents, 158
// bytes of text, counted with a script from docs.jsonl).
func TestBench(t *testing.T) {
	out, errOut, code := runLine([]string{"bench", "--corpus", "../../testdata/cmd/inputs/docs.jsonl", "--queries", "50", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("bench --corpus: %d %s", code, errOut)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Docs != 6 || r.Bytes != 158 || r.FloorMBps <= 0 || r.SignatureMBps <= 0 || r.InsertDocsPerSec <= 0 || r.Queries != 50 || r.QueriesPerSec <= 0 {
		t.Fatalf("bench report %+v", r)
	}
	dir := filepath.Join(t.TempDir(), "index")
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code = runLine([]string{"bench", "--db", dir, "--queries", "20", "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("bench --db: %d %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Docs != 6 || r.Queries != 20 {
		t.Fatalf("bench --db report %+v, %v", r, err)
	}
	if _, _, code := runLine([]string{"bench"}, ""); code != 2 {
		t.Fatalf("bench without --corpus or --db: exit %d", code)
	}
}
