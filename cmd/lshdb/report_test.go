package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
)

// reportFixture builds an index of the Debian sample (1,277 real package
// descriptions, many near-copies).
func reportFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"build", "--db", dir, "../../testdata/corpora/debian-sample/docs.jsonl"}, ""); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	return dir
}

// chartBars returns the values of the bars of the chart id in page.
func chartBars(t *testing.T, page *xnode, id string) []float64 {
	t.Helper()
	svgs := page.all(func(x *xnode) bool { return x.XMLName.Local == "svg" && x.attr("id") == id })
	if len(svgs) != 1 {
		t.Fatalf("%d charts %q in the page", len(svgs), id)
	}
	var vals []float64
	for _, r := range svgs[0].class("bar") {
		vals = append(vals, r.num(t, "data-value"))
	}
	return vals
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runLine(args, "")
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// Ensure that the report is one well-formed, self-contained page (no
// script, nothing fetched) whose four charts hold what the other commands
// say of the same index: the pairs histogram the bins of lshdb pairs'
// similarities, the cluster sizes those of lshdb clusters, the bucket
// sizes lshdb buckets' histogram, and the S-curve's areas the integrals
// of 1 − (1 − s^r)^b.
func TestReportMatchesCommands(t *testing.T) {
	dir := reportFixture(t)
	out := filepath.Join(t.TempDir(), "r.html")
	const lo = 0.6
	msg := runOK(t, "report", "--db", dir, "--out", out, "--pairs-threshold", "0.6")
	// NB: the terminal's line writes ">=", as every other line of the
	// command does, not the page's "≥" (a newcomer's review, N10).
	if !strings.Contains(msg, "from a pairs run at Jaccard >= 0.6 (") || strings.Contains(msg, "≥") {
		t.Errorf("report's line: %q, want \"a pairs run at Jaccard >= 0.6\" and no ≥", msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := parseXML(t, string(raw))
	selfContained(t, page, string(raw))

	// Pairs: lshdb pairs at 0.6, put in bins of 0.02 by hand.
	var pairs []float64
	for _, line := range strings.Split(strings.TrimSpace(runOK(t, "pairs", "--db", dir, "--threshold", "0.6", "--sort=false", "--output", "json")), "\n") {
		var p struct{ Jaccard float64 }
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p.Jaccard)
	}
	want := make([]float64, 20) // [0.60, 0.62), …, [0.98, 1]
	for _, j := range pairs {
		i := 0
		for i < 19 && j >= lo+float64(i+1)*0.02-1e-9 {
			i++
		}
		want[i]++
	}
	if got := chartBars(t, page, "chart-pairs"); !equalFloats(got, want) {
		t.Errorf("pairs bars %v; lshdb pairs gives %v", got, want)
	}
	if !strings.Contains(msg, strconv.Itoa(len(pairs))+" pairs") {
		t.Errorf("report says %q; lshdb pairs gives %d pairs", msg, len(pairs))
	}

	// Clusters: lshdb clusters' sizes in bins 2, 3, 4-7, 8-15, ….
	var cwant []float64
	for _, line := range strings.Split(strings.TrimSpace(runOK(t, "clusters", "--db", dir, "--output", "json")), "\n") {
		var c struct{ Size int }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		edges := []int{2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024} // bin i holds [edges[i], edges[i+1])
		i := 0
		for c.Size >= edges[i+1] {
			i++
		}
		for len(cwant) <= i {
			cwant = append(cwant, 0)
		}
		cwant[i]++
	}
	if len(cwant) < 3 {
		t.Fatalf("the fixture has clusters in %d size bins; want a few", len(cwant))
	}
	if got := chartBars(t, page, "chart-clusters"); !equalFloats(got, cwant) {
		t.Errorf("cluster bars %v; lshdb clusters gives %v", got, cwant)
	}

	// Buckets: lshdb buckets' histogram (no deletes: no empty lists).
	var bs bucketStatsJSON
	if err := json.Unmarshal([]byte(runOK(t, "buckets", "--db", dir, "--output", "json")), &bs); err != nil {
		t.Fatal(err)
	}
	if bs.Histogram[0] != 0 {
		t.Fatalf("the fixture has %d empty lists", bs.Histogram[0])
	}
	var bwant []float64
	for _, n := range bs.Histogram[1:] {
		bwant = append(bwant, float64(n))
	}
	if got := chartBars(t, page, "chart-buckets"); !equalFloats(got, bwant) {
		t.Errorf("bucket bars %v; lshdb buckets gives %v", got, bwant)
	}

	// The S-curve: the index's b and r (from info), areas by Simpson's rule.
	var in infoJSON
	if err := json.Unmarshal([]byte(runOK(t, "info", "--db", dir, "--output", "json")), &in); err != nil {
		t.Fatal(err)
	}
	// The index's scheme and seed, a row each, as info gives them
	// ("signature scheme, seed | fss, 0" read oddly: NC2-9).
	for _, row := range []string{"<tr><th>signature scheme</th><td>" + in.Scheme + "</td></tr>", fmt.Sprintf("<tr><th>seed</th><td>%d</td></tr>", in.Seed)} {
		if !strings.Contains(string(raw), row) {
			t.Errorf("the page has no row %s", row)
		}
	}
	p := func(s float64) float64 { return sCurve(s, in.Bands, in.Rows) }
	for class, want := range map[string]float64{
		"fp-area": simpson(p, 0, in.Threshold, 2000),
		"fn-area": simpson(func(s float64) float64 { return 1 - p(s) }, in.Threshold, 1, 2000),
	} {
		a := page.class(class)
		if len(a) != 1 {
			t.Fatalf("%d %s", len(a), class)
		}
		if got := a[0].num(t, "data-area"); math.Abs(got-want) > 1e-6 {
			t.Errorf("%s %v; Simpson's rule gives %v", class, got, want)
		}
	}
	// The figures: documents, and the size in human units.
	text := page.text()
	for _, s := range []string{groupDigits(int64(in.Docs)), humanBytes(in.DiskBytes), "b=" + strconv.Itoa(in.Bands) + " r=" + strconv.Itoa(in.Rows)} {
		if !strings.Contains(text, s) {
			t.Errorf("the page does not show %q", s)
		}
	}
	if in.Docs != 1277 {
		t.Errorf("%d documents; the sample has 1277", in.Docs)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var externalRef = regexp.MustCompile(`(?i)url\(|@import|https?://`)

// selfContained fails the test when the page has a script or an
// attribute or style that would fetch something.
func selfContained(t *testing.T, page *xnode, raw string) {
	t.Helper()
	for _, x := range page.all(func(*xnode) bool { return true }) {
		switch x.XMLName.Local {
		case "script", "link", "img", "iframe", "object", "embed":
			t.Errorf("the page has a <%s>", x.XMLName.Local)
		}
		for _, a := range x.Attrs {
			if a.Name.Local == "src" || a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") {
				t.Errorf("<%s %s=%q>", x.XMLName.Local, a.Name.Local, a.Value)
			}
		}
	}
	// NB: the namespace declarations are names, not fetches.
	rest := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns="http://www.w3.org/1999/xhtml"`, "").Replace(raw)
	if m := externalRef.FindString(rest); m != "" {
		t.Errorf("the page refers to something outside it: %q", m)
	}
}

// Ensure that --pairs reads a pairs file (skipping a header record and
// blank lines) into bins counted here by hand, and that the threshold is
// marked where it falls.
func TestReportFromPairsFile(t *testing.T) {
	dir := reportFixture(t)
	tmp := t.TempDir()
	pf := filepath.Join(tmp, "pairs.jsonl")
	// NB: ids of the index (report refuses a pair naming another), the
	// similarities made up: the page bins what the file says.
	os.WriteFile(pf, []byte(strings.NewReplacer(`"x"`, `"0ad"`, `"y"`, `"r-cran-abind"`, `"z"`, `"libace-xml-utils-dev"`,
		`"p"`, `"libactivemq-protobuf-java"`, `"q"`, `"adwaita-icon-theme"`, `"r"`, `"libghc-agda-dev"`).Replace(`{"header":{"threshold":0.5}}
{"a":"x","b":"y","jaccard":0.5}
{"a":"x","b":"z","jaccard":0.51}

{"a":"y","b":"z","jaccard":0.55}
{"a":"p","b":"q","jaccard":0.9}
{"a":"p","b":"r","jaccard":1}
{"a":"q","b":"r","jaccard":1}
{"end":{"lines":6}}
`)), 0o644)
	out := filepath.Join(tmp, "r.html")
	msg := runOK(t, "report", "--db", dir, "--out", out, "--pairs", pf)
	// Default: bins from the file's lowest similarity, 0.5: 25 bins,
	// [0.50,0.52) 2, [0.54,0.56) 1, [0.90,0.92) 1, [0.98,1] 2.
	want := make([]float64, 25)
	want[0], want[2], want[20], want[24] = 2, 1, 1, 2
	raw, _ := os.ReadFile(out)
	page := parseXML(t, string(raw))
	if got := chartBars(t, page, "chart-pairs"); !equalFloats(got, want) {
		t.Errorf("pairs bars %v, want %v", got, want)
	}
	// Clusters of the pairs at >= 0.8: p, q, r (x, y, z are below it).
	if got := chartBars(t, page, "chart-clusters"); !equalFloats(got, []float64{0, 1}) {
		t.Errorf("cluster bars %v, want [0 1] (one cluster of 3)", got)
	}
	// 0.8 (the index threshold) is 15 of the 25 bins from the left.
	marks := page.all(func(x *xnode) bool { return x.XMLName.Local == "svg" && x.attr("id") == "chart-pairs" })[0].class("mark")
	if len(marks) != 1 || math.Abs(marks[0].num(t, "x1")-(marginL+15.0/25*plotW)) > 0.01 {
		t.Errorf("threshold mark %v, want at x %v", marks, marginL+15.0/25*plotW)
	}
	if !strings.Contains(msg, "6 pairs from the pairs file pairs.jsonl (3 at Jaccard >= 0.8)") {
		t.Errorf("report says %q", msg)
	}
	// The same file gzipped, and on stdin, as clusters --from reads it:
	// the same bars (the raw bytes of a .gz were read as JSON, and - was
	// a file name).
	body, _ := os.ReadFile(pf)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	pfz := filepath.Join(tmp, "pairs.jsonl.gz")
	os.WriteFile(pfz, gz.Bytes(), 0o644)
	for _, c := range []struct{ pairs, stdin, says string }{{pfz, "", "the pairs file pairs.jsonl.gz"}, {"-", string(body), "the pairs read from stdin"}} {
		stdout, stderr, code := runLine([]string{"report", "--db", dir, "--out", out, "--pairs", c.pairs}, c.stdin)
		if code != 0 || !strings.Contains(stdout+stderr, "6 pairs from "+c.says) {
			t.Errorf("report --pairs %s: exit %d, %q %q", c.pairs, code, stdout, stderr)
			continue
		}
		raw, _ := os.ReadFile(out)
		if got := chartBars(t, parseXML(t, string(raw)), "chart-pairs"); !equalFloats(got, want) {
			t.Errorf("report --pairs %s: pairs bars %v, want %v", c.pairs, got, want)
		}
	}
	// --pairs-threshold starts the bins there: [0.9, 1] in 5 bins.
	runOK(t, "report", "--db", dir, "--out", out, "--pairs", pf, "--pairs-threshold", "0.9")
	raw, _ = os.ReadFile(out)
	if got := chartBars(t, parseXML(t, string(raw)), "chart-pairs"); !equalFloats(got, []float64{1, 0, 0, 0, 2}) {
		t.Errorf("pairs bars from 0.9: %v, want [1 0 0 0 2]", got)
	}
	// Below the file's lowest similarity (0.5) the page has bins the file
	// cannot fill: a note says so (not above it: the first run said none).
	if _, errOut, code := runLine([]string{"report", "--db", dir, "--out", out, "--pairs", pf, "--pairs-threshold", "0.3"}, ""); code != 0 || !strings.Contains(errOut, "the lowest similarity in "+pf+" is 0.5000") {
		t.Errorf("--pairs-threshold 0.3: exit %d, stderr %q; want a note on the file's lowest similarity", code, errOut)
	}
	if _, errOut, _ := runLine([]string{"report", "--db", dir, "--out", out, "--pairs", pf, "--pairs-threshold", "0.9"}, ""); strings.Contains(errOut, "lowest similarity") {
		t.Errorf("--pairs-threshold 0.9 noted %q", errOut)
	}
	// A file made above the index's threshold (0.8) is refused, as
	// clusters --from refuses it: its pairs at 0.8-0.9 are not in it, and
	// the page counted "3 at Jaccard >= 0.8" and clusters from the rest
	// (review B3).
	high := filepath.Join(tmp, "high.jsonl")
	os.WriteFile(high, bytes.Replace(body, []byte(`"threshold":0.5`), []byte(`"threshold":0.9`), 1), 0o644)
	os.Remove(out)
	if _, errOut, code := runLine([]string{"report", "--db", dir, "--out", out, "--pairs", high}, ""); code != 1 || !strings.Contains(errOut, "holds the pairs at Jaccard >= 0.9") {
		t.Errorf("a pairs file made at 0.9: exit %d, %q; want it refused", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused report wrote %s", out)
	}
}

// Ensure that bad arguments and bad pairs files are refused with an error
// naming the problem, before anything is written, and leave no file
// behind (not even a temporary one).
func TestReportErrors(t *testing.T) {
	dir := reportFixture(t)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "r.html")
	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"report", "--db", dir}, 2, "--out FILE.html is required"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs-threshold", "1.5"}, 2, "--pairs-threshold 1.5 is outside (0, 1]"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs-threshold", "0"}, 2, "--pairs-threshold 0 is outside (0, 1]"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("bad.jsonl", "{\"a\":\"x\",\"b\":\"y\",\"jaccard\":0.9}\nnot json\n")}, 1, "bad.jsonl:2: not a JSON object"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("range.jsonl", "{\"a\":\"x\",\"b\":\"y\",\"jaccard\":1.2}\n")}, 1, "range.jsonl:1: jaccard 1.2 is outside [0, 1]"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("half.jsonl", "{\"a\":\"x\",\"jaccard\":0.9}\n")}, 1, "half.jsonl:1: a pair needs a, b and jaccard"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("self.jsonl", "{\"a\":\"x\",\"b\":\"x\",\"jaccard\":1}\n")}, 1, "self.jsonl:1: a pair of \"x\" with itself"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", filepath.Join(tmp, "absent.jsonl")}, 1, "--pairs " + filepath.Join(tmp, "absent.jsonl") + ": no such file"},
		{[]string{"report", "--db", dir, "--out", out, "--from", filepath.Join(tmp, "absent.jsonl")}, 1, "--from " + filepath.Join(tmp, "absent.jsonl") + ": no such file"},
		// NB: a line with no end was read whole (clusters --from
		// /dev/zero grew to 15 GB: a bad-input review's B2).
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("endless.jsonl", "{\"a\":\"x\",\"b\":\"y\",\"jaccard\":0.9}\n"+strings.Repeat("x", maxPairLine+1))}, 1, "endless.jsonl:2: a line longer than 1048576 bytes"},
		// --from is --pairs, as clusters, export and filter name the file
		// (CL7): the same file read, and the two together refused.
		{[]string{"report", "--db", dir, "--out", out, "--from", write("bad-from.jsonl", "{\"a\":\"x\",\"b\":\"y\",\"jaccard\":0.9}\nnot json\n")}, 1, "bad-from.jsonl:2: not a JSON object"},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", filepath.Join(tmp, "a.jsonl"), "--from", filepath.Join(tmp, "a.jsonl")}, 2, "give --pairs or --from (the same file), not both"},
		// A file without a header made on another index: its ids are not
		// this index's (it drew a page of them).
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("other.jsonl", "{\"a\":\"AGPL-1.0\",\"b\":\"MIT\",\"jaccard\":0.9}\n")}, exitNotFound, `names "AGPL-1.0", which the index does not hold`},
		{[]string{"report", "--db", dir, "--out", out, "--pairs", write("cut.jsonl", "{\"header\":{\"threshold\":0.5}}\n{\"a\":\"x\",\"b\":\"y\",\"jaccard\":0.5}\n")}, 1, "cut.jsonl has the header of pairs --header but no end line"},
		{[]string{"report", "--db", dir, "--out", filepath.Join(tmp, "no", "such", "dir.html")}, 1, "no such file or directory"},
		{[]string{"report", "--db", dir, "--out", tmp}, 1, "cannot write " + tmp + ": it is a directory"},
		// A compressed name: it was written as plain HTML (O3).
		{[]string{"report", "--db", dir, "--out", filepath.Join(tmp, "r.html.gz")}, 2, "names gzip compression, but report writes a page a browser opens as it is"},
		{[]string{"report", "--db", dir, "--out", filepath.Join(tmp, "r.html.ZST")}, 2, "names zstd compression"},
		{[]string{"report", "--db", dir, "--out", filepath.Join(tmp, "r.html.xz")}, 2, "names xz compression"},
		{[]string{"report", "--db", filepath.Join(tmp, "nope"), "--out", out}, 1, "database does not exist"},
	} {
		_, errOut, code := runLine(c.args, "")
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d %q; want exit %d and %q", c.args[3:], code, errOut, c.code, c.msg)
		}
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			t.Errorf("a failed report left %s", e.Name())
		}
	}
	err := (&app{}).readPairs("--pairs", filepath.Join(tmp, "bad.jsonl"), newPairHist(0.8), nil, nil, nil)
	if !errors.Is(err, errBadPairs) {
		t.Errorf("readPairs of a bad file: %v; want errBadPairs", err)
	}
}

// Ensure that report makes the same page attached to a served index as
// in process (but for the line saying when and how long).
func TestReportAttached(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server: skipped with -short")
	}
	dir := reportFixture(t)
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a.html"), filepath.Join(tmp, "b.html")
	msgA := runOK(t, "report", "--db", dir, "--out", a)
	_, _, log, stop := startServe(t, "--db", dir)
	msgB := runOK(t, "report", "--db", dir, "--out", b)
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d: %s", code, log)
	}
	if strings.ReplaceAll(msgA, a, "F") != strings.ReplaceAll(msgB, b, "F") {
		t.Errorf("in process %q, attached %q", msgA, msgB)
	}
	written := regexp.MustCompile(`<p class="sub">Written [^<]*</p>`)
	pa, _ := os.ReadFile(a)
	pb, _ := os.ReadFile(b)
	sa, sb := written.ReplaceAllString(string(pa), ""), written.ReplaceAllString(string(pb), "")
	// NB: the bytes on disk depend on how the store was opened (a writable
	// owner flushes the log it replays into a table); the figures and
	// rows that show them are compared without them.
	sizes := regexp.MustCompile(`[\d.,]+ (B|KiB|MiB|GiB)|\([\d,]+ bytes\)`)
	sa, sb = sizes.ReplaceAllString(sa, "N"), sizes.ReplaceAllString(sb, "N")
	if sa != sb {
		t.Errorf("the attached page differs:\n%s", firstDiff(sa, sb))
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "in process: " + la[i] + "\nattached:   " + lb[i]
		}
	}
	return "lengths differ"
}

// Ensure that every cluster size falls in the bin whose label names a
// range holding it, and every bucket-histogram bin's label the range
// db.BucketStats documents ([2^(i-1), 2^i)).
func TestReportBinLabels(t *testing.T) {
	for n := 2; n <= 5000; n++ {
		lo, hi := labelRange(t, clusterBinLabel(clusterBin(n)))
		if n < lo || n > hi {
			t.Errorf("size %d in bin %q", n, clusterBinLabel(clusterBin(n)))
		}
	}
	for i := 1; i < 20; i++ {
		lo, hi := labelRange(t, bucketBinLabel(i))
		if lo != 1<<(i-1) || hi != 1<<i-1 {
			t.Errorf("bucket bin %d: %q", i, bucketBinLabel(i))
		}
	}
}

// Ensure that a bar's note counts in words that agree with its numbers,
// as worked out by hand: it said "16 posting lists of empty documents"
// and "1 posting lists of 1 documents".
func TestReportBinNotes(t *testing.T) {
	for _, c := range []struct {
		n           int
		label, want string
	}{
		{16, "empty", "16 empty posting lists"},
		{1, "empty", "1 empty posting list"},
		{1, "1", "1 posting list of 1 document"},
		{2, "1", "2 posting lists of 1 document"},
		{1, "2-3", "1 posting list of 2-3 documents"},
		{1200, "8-15", "1,200 posting lists of 8-15 documents"},
	} {
		if got := binNote(c.n, "posting list", "posting lists", c.label); got != c.want {
			t.Errorf("binNote(%d, %q) = %q, want %q", c.n, c.label, got, c.want)
		}
	}
	if got := binNote(1, "cluster", "clusters", "2"); got != "1 cluster of 2 documents" {
		t.Errorf("binNote(1, cluster, 2) = %q", got)
	}
}

func labelRange(t *testing.T, s string) (int, int) {
	t.Helper()
	a, b, ok := strings.Cut(s, "-")
	lo, err := strconv.Atoi(a)
	if err != nil {
		t.Fatalf("label %q", s)
	}
	if !ok {
		return lo, lo
	}
	hi, err := strconv.Atoi(b)
	if err != nil {
		t.Fatalf("label %q", s)
	}
	return lo, hi
}

// Ensure that the components of a few pairs, joined by hand, come out
// with their ids sorted, largest first, and that pairs below the
// threshold join nothing.
func TestReportComponents(t *testing.T) {
	h := newPairHist(0.8)
	for _, p := range []db.Pair{{A: "e", B: "f", Jaccard: 0.9}, {A: "c", B: "d", Jaccard: 1}, {A: "b", B: "c", Jaccard: 0.8},
		{A: "a", B: "b", Jaccard: 0.85}, {A: "f", B: "g", Jaccard: 0.79}, {A: "x", B: "y", Jaccard: 0.95}} {
		h.add(p)
	}
	got := h.comps.clusters()
	want := [][]string{{"a", "b", "c", "d"}, {"e", "f"}, {"x", "y"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("clusters %v, want %v", got, want)
	}
	if h.total != 6 || h.atOrAbove != 5 || h.lowest != 0.79 {
		t.Errorf("total %d, at or above %d, lowest %v", h.total, h.atOrAbove, h.lowest)
	}
}

// Ensure that a histogram that starts above the index threshold still
// gets its clusters from every pair at or above the threshold (the run
// goes down to it), and that the default start never exceeds it.
func TestReportPairsThresholdAboveIndex(t *testing.T) {
	dir := reportFixture(t)
	out := filepath.Join(t.TempDir(), "r.html")
	runOK(t, "report", "--db", dir, "--out", out, "--pairs-threshold", "0.95")
	raw, _ := os.ReadFile(out)
	page := parseXML(t, string(raw))
	bars := chartBars(t, page, "chart-pairs")
	if n := len(bars); n != 3 { // [0.95,0.97), [0.97,0.99), [0.99,1]
		t.Errorf("%d similarity bins from 0.95, want 3", n)
	}
	// The note says the bars show part of the pairs at or above the
	// threshold (the caption counted them all), and no bar is left of it.
	charted := 0.0
	for _, v := range bars {
		charted += v
	}
	all := len(strings.Split(strings.TrimSpace(runOK(t, "pairs", "--db", dir, "--output", "csv")), "\n")) - 1
	if want := fmt.Sprintf("so they show %s of them; the %s between 0.8 and 0.95 are not charted", groupDigits(int64(charted)), groupDigits(int64(all)-int64(charted))); !strings.Contains(string(raw), want) ||
		strings.Contains(string(raw), "undercount") || charted >= float64(all) {
		t.Errorf("the page does not say %q (or says the bars left of the threshold undercount; %v of %d pairs charted)", want, charted, all)
	}
	var want []float64
	for _, line := range strings.Split(strings.TrimSpace(runOK(t, "clusters", "--db", dir, "--output", "json")), "\n") {
		var c struct{ Size int }
		json.Unmarshal([]byte(line), &c)
		i := clusterBin(c.Size)
		for len(want) <= i {
			want = append(want, 0)
		}
		want[i]++
	}
	if got := chartBars(t, page, "chart-clusters"); !equalFloats(got, want) {
		t.Errorf("cluster bars %v; lshdb clusters gives %v", got, want)
	}
	for _, c := range []struct{ t, want float64 }{{0.8, 0.6}, {0.5, 0.3}, {0.25, 0.1}, {0.05, 0.05}, {1, 0.8}} {
		if got := defaultPairsThreshold(c.t); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("defaultPairsThreshold(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// Ensure that the report of an index of storage none says its
// similarities are estimates, and never that candidates are verified
// exactly (it did, beside an estimate-only pairs histogram); a text
// index's report says they are.
func TestReportStorageNoneSaysEstimates(t *testing.T) {
	dir := t.TempDir()
	none, text := filepath.Join(dir, "none"), filepath.Join(dir, "text")
	runOK(t, "create", "--db", none, "--storage", "none")
	for _, idx := range []string{none, text} {
		runOK(t, "insert", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl")
		runOK(t, "report", "--db", idx, "--out", idx+".html")
	}
	page, _ := os.ReadFile(none + ".html")
	if strings.Contains(string(page), "exact Jaccard") || !strings.Contains(string(page), "estimates (storage none)") {
		t.Errorf("the report of a storage none index claims exact verification, or does not say its similarities are estimates")
	}
	page, _ = os.ReadFile(text + ".html")
	if !strings.Contains(string(page), "every candidate is verified with exact Jaccard") || strings.Contains(string(page), "storage none") {
		t.Errorf("the report of a text index does not say candidates are verified exactly")
	}
}

// Ensure that report shows the progress its flags ask for (--progress
// log): of its pairs run, then of its stats, as pairs and stats show
// theirs. It listed the flags and wrote no line, in a run of 53 s.
func TestReportProgress(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	mustRun(t, "build", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl")
	_, errOut, code := runLine([]string{"report", "--db", idx, "--out", filepath.Join(dir, "r.html"), "--progress", "log", "--progress-every", "1ms"}, "")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	pairs := strings.Index(errOut, "lshdb: pairs: ")
	stats := strings.Index(errOut, "lshdb: stats: ")
	if pairs < 0 || stats < pairs {
		t.Fatalf("report --progress log wrote\n%s\nwant lines of its pairs run, then of its stats", errOut)
	}
}

// Two pairs files made with --header, one after the other, are refused
// (a line after the end line), not counted twice: what a review took for
// a gap (pairs counted again) is a file that says how it was made.
func TestReportPairsConcatenatedRefused(t *testing.T) {
	dir := reportFixture(t)
	tmp := t.TempDir()
	one := `{"header":{"threshold":0.5}}
{"a":"0ad","b":"r-cran-abind","jaccard":0.9}
{"end":{"lines":1}}
`
	pf := filepath.Join(tmp, "twice.jsonl")
	os.WriteFile(pf, []byte(one+one), 0o644)
	_, errOut, code := runLine([]string{"report", "--db", dir, "--out", filepath.Join(tmp, "r.html"), "--pairs", pf}, "")
	if code != 1 || !strings.Contains(errOut, "a line after the end line") {
		t.Fatalf("report --pairs of two files one after the other: exit %d, %q", code, errOut)
	}
}

// Ensure that the report counts the live documents, with the expired
// ones awaiting the sweep said apart: it counted them as documents (30,
// of which its pairs and clusters saw 10) and never said "expired"
// (an inspection review's N2). The answer is known by construction: 10
// live copies of one text (45 pairs), 20 distinct texts expired.
func TestReportSaysExpired(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	var expiring, staying strings.Builder
	for i := range 20 {
		fmt.Fprintf(&expiring, "{\"id\":\"x%02d\",\"text\":\"a text that lives a second, and it is number %d of them\"}\n", i, i)
	}
	for i := range 10 {
		fmt.Fprintf(&staying, "{\"id\":\"s%02d\",\"text\":\"another shared text that stays alive for ever and ever\"}\n", i)
	}
	// NB: the lasting ones first, and the sleep counted from the end of
	// the insert of the expiring ones, whose TTL counts from their write:
	// counted from before both inserts, on a loaded machine info ran
	// before they expired (a README review's RM-2). A writable open after
	// they expire would sweep them: none comes, and the insert's own
	// background sweep (every second) ends with it, well within 2 s.
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "-"}, staying.String()); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"insert", "--db", dir, "--ttl", "2s", "-"}, expiring.String()); code != 0 {
		t.Fatal(errOut)
	}
	time.Sleep(2100 * time.Millisecond)
	// info counts them too, said apart (it said "documents: 30").
	if said := runOK(t, "info", "--db", dir); !strings.Contains(said, "documents: 30 (20 of them expired, awaiting the sweep: never returned)\n") {
		t.Errorf("info said %q, want the 20 expired of its 30 documents", said)
	}
	if said := runOK(t, "info", "--db", dir, "--output", "json"); !strings.Contains(said, `"docs":30,"expired":20,`) {
		t.Errorf("info --output json said %q, want 30 docs, 20 expired", said)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	said := runOK(t, "report", "--db", dir, "--out", out)
	if want := "10 documents (and 20 expired, awaiting the sweep), 45 pairs"; !strings.Contains(said, want) {
		t.Errorf("report said %q, want %q", said, want)
	}
	raw, _ := os.ReadFile(out)
	page := string(raw)
	parseXML(t, page)
	// NB: and the expiry index's bytes, in no kind the page showed (a
	// maintainer review's M7): 20 keys of 17 bytes.
	for _, want := range []string{`<b>10</b><span>documents</span>`, "10, and 20 expired awaiting the sweep", "The buckets still hold the 20 expired documents", "manifest+counters", "expiry 340 B"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// Ensure that a report from a headerless pairs file whose lowest
// similarity is above the index threshold says that the file may be short
// of the pairs between, in the page and on stderr: it said "the bars start
// at 0.90 (--pairs-threshold)" of a flag not given, and "the 0 between"
// of pairs the file could not hold (an inspection review's N4). The
// oracle: the pairs run of the index, which holds pairs between.
func TestReportPairsFileAboveThreshold(t *testing.T) {
	dir := reportFixture(t)
	pf := filepath.Join(t.TempDir(), "p.jsonl")
	high := runOK(t, "pairs", "--db", dir, "--threshold", "0.9", "--output", "json")
	all := runOK(t, "pairs", "--db", dir, "--output", "json")
	if strings.Count(all, "\n") <= strings.Count(high, "\n") {
		t.Fatal("the index has no pair between its threshold and 0.9: the test checks nothing")
	}
	os.WriteFile(pf, []byte(high), 0o644)
	out := filepath.Join(t.TempDir(), "r.html")
	_, errOut, code := runLine([]string{"report", "--db", dir, "--out", out, "--pairs", pf}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "above the index threshold") {
		t.Errorf("stderr does not say the file's pairs may be short: %s", errOut)
	}
	raw, _ := os.ReadFile(out)
	page := string(raw)
	if !strings.Contains(page, "The file&#39;s lowest similarity is") || strings.Contains(page, "(--pairs-threshold)") {
		t.Errorf("the page does not say the file may be short of pairs, or names a flag not given")
	}
}

// Ensure that the report counts the pairs of identical documents, which
// it takes as groups (db.PairGroups), as lshdb pairs lists them one by
// one: 40 copies of one text and 25 of a variant near it are 780 + 300 +
// 1,000 pairs, and one cluster. The oracle: lshdb pairs' and lshdb
// clusters' own output on the same index.
func TestReportIdenticalGroups(t *testing.T) {
	var in strings.Builder
	raw, err := os.ReadFile("../../testdata/corpora/debian-sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in.Write(raw)
	for i := range 40 {
		fmt.Fprintf(&in, `{"id":"copy-%02d","text":"a notice copied into every package of the archive, word for word"}`+"\n", i)
	}
	for i := range 25 {
		fmt.Fprintf(&in, `{"id":"copz-%02d","text":"a notice copied into every package of the archive, word for word!"}`+"\n", i)
	}
	dir := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"build", "--db", dir, "-"}, in.String()); code != 0 {
		t.Fatalf("build: %s", errOut)
	}
	var rep struct {
		Pairs    int64 `json:"pairs"`
		PairsAtT int64 `json:"pairs_at_threshold"`
		Clusters int   `json:"clusters"`
	}
	out := filepath.Join(t.TempDir(), "r.html")
	if err := json.Unmarshal([]byte(runOK(t, "report", "--db", dir, "--out", out, "--pairs-threshold", "0.6", "--output", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	count := func(args ...string) (n, copies int64) {
		for _, line := range strings.Split(strings.TrimSpace(runOK(t, args...)), "\n") {
			if line == "" {
				continue
			}
			n++
			if strings.Contains(line, `"copy-`) || strings.Contains(line, `"copz-`) {
				copies++
			}
		}
		return n, copies
	}
	all, copies := count("pairs", "--db", dir, "--threshold", "0.6", "--sort=false", "--output", "json")
	atT, _ := count("pairs", "--db", dir, "--sort=false", "--output", "json")
	clusters, _ := count("clusters", "--db", dir, "--output", "json")
	if copies != 40*39/2+25*24/2+40*25 {
		t.Fatalf("lshdb pairs lists %d pairs of the copies, want %d: the fixture is not what the test expects", copies, 40*39/2+25*24/2+40*25)
	}
	if rep.Pairs != all || rep.PairsAtT != atT || int64(rep.Clusters) != clusters {
		t.Errorf("report: %d pairs, %d at the threshold, %d clusters; lshdb pairs and clusters: %d, %d, %d", rep.Pairs, rep.PairsAtT, rep.Clusters, all, atT, clusters)
	}
	// The page's charts are those of a report from the pairs one by one
	// (a pairs file, read pair by pair).
	pf := filepath.Join(t.TempDir(), "p.jsonl")
	runOK(t, "pairs", "--db", dir, "--threshold", "0.6", "--output", "json", "--header", "--out", pf)
	out2 := filepath.Join(t.TempDir(), "r2.html")
	runOK(t, "report", "--db", dir, "--out", out2, "--pairs", pf, "--pairs-threshold", "0.6")
	pages := [2]*xnode{}
	for i, f := range []string{out, out2} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = parseXML(t, string(raw))
	}
	for _, chart := range []string{"chart-pairs", "chart-clusters"} {
		if a, b := chartBars(t, pages[0], chart), chartBars(t, pages[1], chart); !equalFloats(a, b) {
			t.Errorf("%s: %v from the groups, %v from the pairs file", chart, a, b)
		}
	}
}

// Ensure that every output file whose directory is missing is refused in
// the same words, naming the directory, before any work: pairs and
// clusters said "open X: no such file or directory", filter and export
// "cannot write X: no such file or directory", and --cpuprofile the bare
// "open X" (an operator's review, O7). The oracle: the directory, absent,
// and no file made.
func TestMissingOutputDirectory(t *testing.T) {
	tmp := t.TempDir()
	idx := filepath.Join(tmp, "idx")
	in := filepath.Join("..", "..", "testdata", "corpora", "debian-sample", "docs.jsonl")
	runOK(t, "insert", "--db", idx, in)
	missing := filepath.Join(tmp, "no", "such")
	out := filepath.Join(missing, "out.jsonl")
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--out", []string{"pairs", "--db", idx, "--out", out}},
		{"--out", []string{"clusters", "--db", idx, "--out", out}},
		{"--out", []string{"export", "--db", idx, "--out", out}},
		{"--removed", []string{"export", "--db", idx, "--out", filepath.Join(tmp, "kept.jsonl"), "--removed", out}},
		{"--out", []string{"filter", "--db", idx, "--out", out, in}},
		{"--out", []string{"report", "--db", idx, "--out", filepath.Join(missing, "r.html")}},
		{"--cpuprofile", []string{"pairs", "--db", idx, "--cpuprofile", filepath.Join(missing, "cpu.pprof")}},
	} {
		_, errOut, code := runLine(c.args, "")
		want := c.flag + ": cannot write " + filepath.Join(missing, "") + "/"
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "its directory "+missing+" does not exist") {
			t.Errorf("%v: exit %d %q; want exit 1 and %q, naming the missing directory", c.args, code, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "no")); !os.IsNotExist(err) {
		t.Errorf("a refused output made its directory's parent: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "kept.jsonl")); !os.IsNotExist(err) {
		t.Errorf("export, refused for its --removed, wrote its --out: %v", err)
	}
}

// Ensure that an output named by another user's symbolic link in a
// sticky directory that others may write (/tmp) is refused, before any
// work, where it replaced the file the link named, one of this user's
// (a security review): lshdb resolves the link itself, which Linux's
// fs.protected_symlinks does not see. This user's own link there is
// followed. The oracle: the linked file, unchanged, and the own link's
// target written.
func TestOutputRefusesAStrangersLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a link to another user (lchown)")
	}
	shared, private := filepath.Join(t.TempDir(), "shared"), t.TempDir()
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(private, "victim.txt")
	if err := os.WriteFile(victim, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shared, "out.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil { // nobody's
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"gen", "--n", "20", "--out", link}, "")
	if code != 1 || !strings.Contains(errOut, "a symbolic link of another user's in a shared directory") {
		t.Errorf("gen --out through another user's link: exit %d %q", code, errOut)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "secret" {
		t.Errorf("the linked file after: %.100q %v", b, err)
	}
	// The outputs written with os.Create, not through a temporary file:
	// they wrote over the link's target (a security review, SEC2-6).
	idx := filepath.Join(private, "idx")
	for _, c := range []struct {
		args  []string
		stdin string
		flag  string
	}{
		{[]string{"insert", "--db", idx, "--skip-bad", "--rejects", link, "-"}, "not json\n" + docLine("a", "a good record") + "\n", "--rejects"},
		{[]string{"info", "--db", idx, "--cpuprofile", link}, "", "--cpuprofile"},
		{[]string{"tune", "--threshold", "0.8", "--plot", link}, "", "--plot"},
	} {
		os.Remove(strings.TrimSuffix(link, ".jsonl") + ".svg")
		arg := link
		if c.flag == "--plot" {
			// NB: --plot takes an .svg name.
			arg = strings.TrimSuffix(link, ".jsonl") + ".svg"
			if err := os.Symlink(victim, arg); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(arg, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			c.args[len(c.args)-1] = arg
		}
		_, errOut, code := runLine(c.args, c.stdin)
		if code == 0 || !strings.Contains(errOut, c.flag+": cannot write") || !strings.Contains(errOut, "a symbolic link of another user's in a shared directory") {
			t.Errorf("%s through another user's link: exit %d %q", c.flag, code, errOut)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "secret" {
			t.Errorf("the linked file after %s: %.100q %v", c.flag, b, err)
		}
	}
	// Another user's regular file there is no link: written as any
	// file is (it was refused as a link: a diff review).
	theirs := filepath.Join(shared, "theirs.jsonl")
	if err := os.WriteFile(theirs, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := writable(theirs); err != nil { // pairs', clusters' and report's check before the work
		t.Errorf("another user's file, checked as an output: %v", err)
	}
	if _, errOut, code := runLine([]string{"gen", "--n", "20", "--out", theirs}, ""); code != 0 {
		t.Fatalf("gen --out of another user's file: exit %d %q", code, errOut)
	}
	if b, err := os.ReadFile(theirs); err != nil || strings.Count(string(b), "\n") != 20 {
		t.Errorf("another user's file after: %d lines %v, want 20", strings.Count(string(b), "\n"), err)
	}
	// This user's own link there is followed.
	mine := filepath.Join(private, "mine.jsonl")
	os.WriteFile(mine, nil, 0o644)
	own := filepath.Join(shared, "own.jsonl")
	if err := os.Symlink(mine, own); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"gen", "--n", "20", "--out", own}, ""); code != 0 {
		t.Fatalf("gen --out through this user's link: exit %d %q", code, errOut)
	}
	if b, err := os.ReadFile(mine); err != nil || strings.Count(string(b), "\n") != 20 {
		t.Errorf("the own link's target after: %d lines %v, want 20", strings.Count(string(b), "\n"), err)
	}
}

// Ensure that an output through a symbolic link to a file not yet made
// makes that file, as a shell's redirect does (a link to tonight's dated
// file): pairs, clusters and report refused it as "file exists" at their
// check before the work (a nightly review, NB-1), and the others as a
// link that cannot be reached. A link into a directory that does not
// exist is refused, saying so. The oracle: the same run into a plain
// file, byte for byte, and the link left a link.
func TestOutputThroughALinkToAFileNotYetMade(t *testing.T) {
	dir := t.TempDir()
	idx := docsIndex(t, dir)
	plain := filepath.Join(dir, "plain.jsonl")
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--out", plain}, ""); code != 0 {
		t.Fatal(errOut)
	}
	want, err := os.ReadFile(plain)
	if err != nil || len(want) == 0 {
		t.Fatalf("the plain run's file: %d bytes, %v", len(want), err)
	}
	for _, cmd := range [][]string{{"pairs", "--output", "json"}, {"export", "--all"}} {
		link, target := filepath.Join(dir, cmd[0]+"-link.jsonl"), filepath.Join(dir, cmd[0]+"-tonight.jsonl")
		if err := os.Symlink(filepath.Base(target), link); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runLine(append(cmd, "--db", idx, "--out", link), ""); code != 0 {
			t.Fatalf("%s --out a link to a file not yet made: exit %d %q", cmd[0], code, errOut)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the link after: %v, %v; want it left a link", cmd[0], fi, err)
		}
		got, err := os.ReadFile(target)
		if err != nil || len(got) == 0 {
			t.Fatalf("%s: the link's target: %d bytes, %v", cmd[0], len(got), err)
		}
		if cmd[0] == "pairs" && string(got) != string(want) {
			t.Errorf("pairs through the link wrote %d bytes, into a plain file %d", len(got), len(want))
		}
	}
	for _, cmd := range []string{"pairs", "clusters", "report"} {
		bad := filepath.Join(dir, cmd+"-bad.html")
		if err := os.Symlink(filepath.Join("nodir", "x.html"), bad); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runLine([]string{cmd, "--db", idx, "--out", bad}, ""); code != 1 || !strings.Contains(errOut, "a symbolic link whose target cannot be reached") {
			t.Errorf("%s --out a link into no directory: exit %d %q", cmd, code, errOut)
		}
	}
}

// Ensure that a sorted pairs run whose pairs fit half of --memory needs
// no $TMPDIR (it made its sort's directory there first, and a cron job's
// odd TMPDIR failed it with "stat /nonexistent", naming no setting: a
// nightly review, NB-2), and that a run that does need it says $TMPDIR.
// The oracle: the same run with a working TMPDIR, byte for byte.
func TestSortedPairsNeedNoTmpdir(t *testing.T) {
	dir := t.TempDir()
	idx := docsIndex(t, dir)
	want := filepath.Join(dir, "want.jsonl")
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--out", want}, ""); code != 0 {
		t.Fatal(errOut)
	}
	t.Setenv("TMPDIR", filepath.Join(dir, "nonexistent"))
	got := filepath.Join(dir, "got.jsonl")
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--out", got}, ""); code != 0 {
		t.Fatalf("pairs with a TMPDIR that does not exist: exit %d %q", code, errOut)
	}
	a, aerr := os.ReadFile(want)
	b, berr := os.ReadFile(got)
	if aerr != nil || berr != nil || string(a) != string(b) || len(a) == 0 {
		t.Errorf("pairs with no TMPDIR wrote %d bytes (%v), with one %d (%v)", len(b), berr, len(a), aerr)
	}
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--sort=false", "--output", "json", "--out", got, "--clusters", filepath.Join(dir, "c.jsonl")}, ""); code != 1 || !strings.Contains(errOut, "$TMPDIR") {
		t.Errorf("pairs --clusters with a TMPDIR that does not exist: exit %d %q, want the error to name $TMPDIR", code, errOut)
	}
}

// Ensure that a pairs file that cannot be checked (empty, or with no
// header: what a redirect cut short leaves) is said in a warning, which
// --quiet keeps, and refused by filter --strict, writing nothing: it was
// a note, and a cron job's filter --strict --quiet kept 30,912 records
// of a redirect cut short where 30,577 was the answer, exit 0, nothing
// said (a nightly review, NB-3). The oracle: the outputs and the exit.
func TestUncheckedPairsFileWarnedAndRefusedWhenStrict(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/cmd/inputs/docs.jsonl"
	idx := docsIndex(t, dir)
	empty, headless := filepath.Join(dir, "empty.jsonl"), filepath.Join(dir, "headless.jsonl")
	os.WriteFile(empty, nil, 0o644)
	pairs, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json"}, "")
	if code != 0 || !strings.Contains(pairs, "jaccard") {
		t.Fatalf("pairs: exit %d %q %q", code, pairs, errOut)
	}
	os.WriteFile(headless, []byte(pairs), 0o644)
	out := filepath.Join(dir, "kept.jsonl")
	for _, from := range []string{empty, headless} {
		if _, errOut, code := runLine([]string{"filter", "--db", idx, "--from", from, "--out", out, "--quiet", in}, ""); code != 0 || !strings.Contains(errOut, "lshdb: warning: ") {
			t.Errorf("filter --quiet --from %s: exit %d %q, want 0 and a warning", filepath.Base(from), code, errOut)
		}
		os.Remove(out)
		if _, errOut, code := runLine([]string{"filter", "--db", idx, "--from", from, "--out", out, "--strict", "--quiet", in}, ""); code != 1 || !strings.Contains(errOut, "--strict") {
			t.Errorf("filter --strict --from %s: exit %d %q, want 1 naming --strict", filepath.Base(from), code, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("filter --strict --from %s wrote %s", filepath.Base(from), out)
		}
	}
	if _, errOut, code := runLine([]string{"report", "--db", idx, "--pairs", empty, "--out", filepath.Join(dir, "r.html"), "--quiet"}, ""); code != 0 || !strings.Contains(errOut, "lshdb: warning: ") {
		t.Errorf("report --quiet --pairs of an empty file: exit %d %q, want 0 and a warning", code, errOut)
	}
}

// docsIndex inserts testdata's small corpus into dir/idx and returns
// that index's path.
func docsIndex(t *testing.T, dir string) string {
	t.Helper()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	return idx
}
