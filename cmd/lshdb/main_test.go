package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/klauspost/compress/zstd"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
	"github.com/lshdb/lshdb/internal/inflate"
)

var diskBytes = regexp.MustCompile(`("disk_bytes":|"log_bytes":|"recycled_log_bytes":|on disk |log on disk: |logs kept for reuse: |the live log |logs kept for reuse )\d+(\.\d [KMGTPE]iB| B)?|(size on disk: )[^\n]*`)

// instance matches the random name of an index (db.Info.Instance) as info
// prints it: the scripts show it as I.
var instance = regexp.MustCompile(`("instance":"|(?m)^instance: |this index is instance )[A-Z2-7]{26}`)

// tableBytes matches stats' table sizes, which depend on how Pebble
// flushed and compressed (not on what the index holds): the scripts show
// their numbers as N.
var tableBytes, number = regexp.MustCompile(`"table_bytes":\{[^}]*\}`), regexp.MustCompile(`\d+`)

// transcript is what a script expects of a command line: its stdout, each
// stderr line (paths replaced by names) and the exit status, with what is
// not part of the contract masked: Pebble's estimate of the bytes on disk
// and the tables' sizes (the stored bytes, checked by hand, are).
func transcript(out, errOut string, code int, paths *strings.Replacer) string {
	var b strings.Builder
	b.WriteString(out)
	for _, l := range strings.Split(strings.TrimRight(errOut, "\n"), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "stderr: %s\n", paths.Replace(l))
		}
	}
	fmt.Fprintf(&b, "exit %d\n", code)
	// NB: the whole size line: the part the logs take depends on whether
	// the file system allocates them ahead.
	got := diskBytes.ReplaceAllString(b.String(), "${1}${3}N")
	got = instance.ReplaceAllString(got, "${1}I")
	return tableBytes.ReplaceAllStringFunc(got, func(s string) string { return number.ReplaceAllString(s, "N") })
}

// runLine runs one command line in-process (the same cobra tree as the
// binary) and returns stdout, stderr and the exit status.
func runLine(args []string, stdin string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
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
			got := transcript(out, errOut, code, strings.NewReplacer(dbDir, "$DB", in, "$IN", gen, "$GEN"))
			return got
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
// (the db package's test covers another process holding it): here by a
// handle of this process, which it names as such (it said "another
// process").
func TestLockedIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, errOut, code := runLine([]string{"stats", "--db", dir}, "")
	if code != exitBusy || !strings.Contains(errOut, "locked by another handle in this process") {
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
	// bench reads through docio: a bad record is skipped silently, and
	// --limit keeps the first N good ones; bench --build counts the good.
	corpus := filepath.Join(t.TempDir(), "corpus.jsonl")
	os.WriteFile(corpus, []byte(`{"id":"a","text":"one two three four five"}
{"id":"b"}
{"id":"c","text":"six seven eight nine ten"}
{"id":"d","text":"eleven twelve thirteen"}
`), 0o644)
	for _, c := range []struct {
		args []string
		docs int
	}{
		{[]string{"bench", "--corpus", corpus, "--queries", "5", "--limit", "2"}, 2},
		{[]string{"bench", "--corpus", corpus, "--queries", "5"}, 3},
		{[]string{"bench", "--build", "--corpus", corpus}, 3},
	} {
		out, errOut, code := runLine(append(c.args, "--output", "json"), "")
		var r struct{ Docs int }
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Docs != c.docs {
			t.Fatalf("%q: exit %d, %s, %s (want %d docs)", c.args, code, out, errOut, c.docs)
		}
	}
}

// Ensure that lshdb version and lshdb --version name the build and the
// index format this build reads and writes (codec.FormatVersion is 3).
func TestVersion(t *testing.T) {
	want := regexp.MustCompile(`^lshdb (\(devel\)|v\S+) \(index format 5; reads and writes 2 to 5; BGZF inflated by ` + regexp.QuoteMeta(inflate.Name) + `, go\S+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := runLine(args, "")
		if code != 0 || !want.MatchString(out) {
			t.Errorf("lshdb %v: exit %d, %q %q", args, code, out, errOut)
		}
	}
	out, _, code := runLine([]string{"version", "--output", "json"}, "")
	var v versionJSON
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.FormatVersion != codec.FormatVersion || v.Version == "" || v.Inflater != inflate.Name {
		t.Errorf("version --output json: exit %d, %q, %v", code, out, err)
	}
}

// Ensure that gen works outside the source tree (no go.mod above the
// working directory): its originals come from the built-in sample, so the
// corpus equals gen.Stream over the texts of
// testdata/corpora/debian-sample/docs.jsonl read here. And that the file
// is compressed as its name says, read back by the standard library's
// gzip, klauspost's zstd, or as it is.
// Ensure that a copy's ground truth ("of") names its original as the
// file names it, under --id-prefix and --upserts: it named the default
// prefix's g… id, which such a file lacks (or, over a corpus of g… ids,
// an unrelated document). Each "of" is an id earlier in the file whose
// text shares most of the copy's words. And that gen's flags out of
// range are refused.
func TestGenGroundTruthIDs(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, errOut, code := runLine([]string{"gen", "--n", "300", "--seed", "2", "--id-prefix", "t", "--upserts", "20", "--upsert-range", "5000", "--out", "c.jsonl"}, ""); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}
	raw, err := os.ReadFile("c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.Fields(s) {
			m[w] = true
		}
		return m
	}
	texts := map[string]string{}
	copies := 0
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r struct{ ID, Text, Of string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		wantPrefix := "t"
		if i < 20 {
			wantPrefix = "g"
		}
		if !strings.HasPrefix(r.ID, wantPrefix) {
			t.Errorf("line %d: id %q, want the prefix %q", i+1, r.ID, wantPrefix)
		}
		if r.Of != "" {
			copies++
			orig, ok := texts[r.Of]
			if !ok {
				t.Fatalf("line %d (%s): of %q names no earlier document of the file", i+1, r.ID, r.Of)
			}
			a, b := words(orig), words(r.Text)
			shared := 0
			for w := range a {
				if b[w] {
					shared++
				}
			}
			if j := float64(shared) / float64(len(a)+len(b)-shared); j < 0.5 {
				t.Errorf("line %d (%s): of %q shares %.2f of their words", i+1, r.ID, r.Of, j)
			}
		}
		texts[r.ID] = r.Text
	}
	if copies < 30 {
		t.Fatalf("%d copies in 300 documents", copies)
	}
	for _, args := range [][]string{
		{"--copy-fraction", "1.5"}, {"--copy-fraction", "-1"}, {"--upserts", "3"}, {"--upserts", "300", "--upsert-range", "50"},
	} {
		if _, errOut, code := runLine(append([]string{"gen", "--n", "10", "--out", "x.jsonl"}, args...), ""); code != 2 {
			t.Errorf("gen %v: exit %d, want 2 (usage): %s", args, code, errOut)
		}
	}
}

func TestGenOutsideTheTree(t *testing.T) {
	docs, err := corpus.Load("../../testdata/corpora/debian-sample/docs.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, d := range docs {
		sources = append(sources, d.Text)
	}
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name   string
		reader func(io.Reader) (io.Reader, error)
	}{
		{"c.jsonl.gz", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"c.jsonl.zst", func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
		{"c.jsonl", func(r io.Reader) (io.Reader, error) { return r, nil }},
	} {
		out, errOut, code := runLine([]string{"gen", "--n", "50", "--seed", "7", "--out", tc.name}, "")
		// NB: and why, with what gives the same corpus anywhere (a
		// review at scale, SC-2).
		if code != 0 || !strings.Contains(errOut, "the built-in debian sample (1277 texts)") || !strings.Contains(errOut, "--source FILE makes the same corpus from any directory") {
			t.Fatalf("gen %s: exit %d, %q %q", tc.name, code, out, errOut)
		}
		// Notes, as every command's: "gen: note:" escaped a job's grep
		// for lshdb's lines (a newcomer's review, NC2-10); --quiet drops
		// them.
		for _, l := range strings.SplitAfter(strings.TrimSuffix(errOut, "\n"), "\n") {
			if !strings.HasPrefix(l, "lshdb: note: ") {
				t.Errorf("gen %s: a line on stderr that is not a note: %q", tc.name, l)
			}
		}
		if _, errOut, code := runLine([]string{"gen", "--n", "5", "--quiet", "--out", "q-" + tc.name}, ""); code != 0 || errOut != "" {
			t.Errorf("gen --quiet: exit %d, stderr %q", code, errOut)
		}
		raw, err := os.ReadFile(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if plain := tc.name == "c.jsonl"; plain != bytes.HasPrefix(raw, []byte(`{"`)) {
			t.Fatalf("%s starts with %q", tc.name, raw[:min(len(raw), 8)])
		}
		r, err := tc.reader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		dec := json.NewDecoder(r)
		n := 0
		for want := range gen.Stream(gen.Options{Seed: 7, N: 50, Sources: sources}) {
			var got struct{ ID, Text, Of string }
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("%s line %d: %v", tc.name, n+1, err)
			}
			if got.ID != want.ID || got.Text != want.Text || got.Of != want.Of {
				t.Fatalf("%s line %d: %+v, want %+v", tc.name, n+1, got, want)
			}
			n++
		}
		if n != 50 || dec.More() {
			t.Fatalf("%s: %d documents", tc.name, n)
		}
	}
}

// Ensure that bench keeps its temporary index under $TMPDIR/lshdb-bench/
// and removes there what a killed bench left (a directory named for a
// process that is gone), keeps a live process's, and leaves nothing of
// its own.
func TestBenchCleansStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	base := filepath.Join(tmp, "lshdb-bench")
	// Linux pids stay below 2^22; pid 1 is always running.
	stale, live := filepath.Join(base, "999999999-123"), filepath.Join(base, "1-456")
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "index"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runLine([]string{"bench", "--build", "--corpus", "../../testdata/cmd/inputs/docs.jsonl", "--output", "json"}, "")
	if code != 0 || !strings.Contains(errOut, "bench: temporary index in "+base) {
		t.Fatalf("bench: %d %q %q", code, out, errOut)
	}
	names := dirNames(t, base)
	if len(names) != 1 || names[0] != "1-456" {
		t.Fatalf("left in %s: %v, want only 1-456", base, names)
	}
}

// Ensure that bench sweeps $TMPDIR/lshdb-bench only when it is a private
// directory of this user: a symbolic link that another user put there
// (to a directory of this user's) had its entries named like a dead
// process's removed, "2024-06-01-backup" among them (a security review),
// and a directory others may write is theirs to fill. The oracle: every
// entry there after the bench, and its index elsewhere.
func TestBenchSweepsOnlyAPrivateDir(t *testing.T) {
	for _, kind := range []string{"link", "shared"} {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		base, victim := filepath.Join(tmp, "lshdb-bench"), filepath.Join(tmp, "victim")
		target := victim
		if kind == "shared" {
			target = base
		}
		for _, n := range []string{"2024-06-01-backup", "999999999-123"} {
			if err := os.MkdirAll(filepath.Join(target, n, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if kind == "link" {
			if err := os.Symlink(victim, base); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Chmod(base, 0o777); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runLine([]string{"bench", "--build", "--corpus", "../../testdata/cmd/inputs/docs.jsonl", "--output", "json"}, "")
		if code != 0 || !strings.Contains(errOut, "bench: temporary index in "+filepath.Join(tmp, "lshdb-bench-")) || !strings.Contains(errOut, "is not a private directory of this user") {
			t.Fatalf("bench with a %s lshdb-bench: %d %q %q", kind, code, out, errOut)
		}
		if names := dirNames(t, target); !slices.Equal(names, []string{"2024-06-01-backup", "999999999-123"}) {
			t.Errorf("bench with a %s lshdb-bench left %v, want every entry", kind, names)
		}
		for _, n := range dirNames(t, tmp) {
			if strings.HasPrefix(n, "lshdb-bench-") {
				t.Errorf("bench with a %s lshdb-bench left its index %s in $TMPDIR", kind, n)
			}
		}
	}
}

// dirNames returns the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Ensure that a command writing an output file (here gen; filter,
// export and report alike) removes the hidden temporary files of that
// output that killed runs left (named for a process that is gone), and
// those of other outputs in its directory once they went unwritten for
// staleTempAge (SC-3: a nightly job writing dated names kept every
// killed night's partial); that it keeps a live process's, another
// output's written lately, and one whose lock a process holds (a live
// run of another host, whose pid means nothing here); and that a file it
// writes holds its lock while it writes.
func TestOutputsSweepDeadRunsTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleTempAge)
	// NB: Linux pids stay below 2^22; pid 1 is always running.
	dead, live := ".c.jsonl.lshdb-999999999-1.tmp", ".c.jsonl.lshdb-1-2.tmp"
	otherDead, otherRecent, otherLive := ".d.jsonl.lshdb-999999999-3.tmp", ".e.jsonl.lshdb-999999999-4.tmp", ".f.jsonl.lshdb-1-5.tmp"
	notOurs := []string{".g.jsonl.tmp", "h.jsonl.lshdb-999999999-6.tmp", ".i.lshdb-backup.tmp"}
	deadHeld, otherHeld := ".c.jsonl.lshdb-999999998-7.tmp", ".j.jsonl.lshdb-999999998-8.tmp"
	for _, n := range append([]string{dead, live, otherDead, otherRecent, otherLive, deadHeld, otherHeld}, notOurs...) {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte("a partial output"), 0o600); err != nil {
			t.Fatal(err)
		}
		if n != otherRecent {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := append([]string{live, otherRecent, otherLive}, notOurs...)
	if _, known := tempHeld(filepath.Join(dir, dead)); known {
		// NB: a process that holds the lock: this one, through another
		// open file (a flock is the open file's, not the process's).
		for _, n := range []string{deadHeld, otherHeld} {
			f, err := os.Open(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lockTemp(f)
			if held, _ := tempHeld(filepath.Join(dir, n)); !held {
				t.Fatalf("%s: not held after lockTemp", n)
			}
		}
		want = append(want, deadHeld, otherHeld)
	} else {
		t.Logf("no file lock on this platform or filesystem: %s and %s go as dead runs' (another's: kept)", deadHeld, otherHeld)
		want = append(want, otherHeld)
	}
	if out, errOut, code := runLine([]string{"gen", "--n", "20", "--out", filepath.Join(dir, "c.jsonl")}, ""); code != 0 {
		t.Fatalf("gen: %d %q %q", code, out, errOut)
	}
	want = append(want, "c.jsonl")
	slices.Sort(want)
	if names := dirNames(t, dir); !slices.Equal(names, want) {
		t.Fatalf("left in the output's directory: %q, want %q", names, want)
	}
	// The file being written holds its lock.
	f, err := createTemp(filepath.Join(dir, "k.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if held, known := tempHeld(f.Name()); known && !held {
		t.Errorf("%s: its lock is not held while it is open", f.Name())
	}
}

// Ensure that plainMessage drops the db package's "lshdb: " wherever a
// wrap left it, and nothing inside a quoted id.
func TestPlainMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"lshdb: document not found: \"x\"", "document not found: \"x\""},
		{"committed 3 documents through a:3; stopped: lshdb: disk full: lshdb: ingesting the load: no space left on device",
			"committed 3 documents through a:3; stopped: disk full: ingesting the load: no space left on device"},
		{"lshdb: lshdb: twice", "twice"},
		{"lshdb: document not found: \"a: lshdb: b\\\" lshdb: c\"", "document not found: \"a: lshdb: b\\\" lshdb: c\""},
		{"stat lshdb.jsonl: no such file", "stat lshdb.jsonl: no such file"},
	} {
		if got := plainMessage(c.in); got != c.want {
			t.Errorf("plainMessage(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// Ensure that every error line starts with exactly one "lshdb: ": a db
// error inside insert's "committed …; stopped: …" (a disk-full error as
// package db builds it, which nests its own prefix), errors from db
// straight, and the scripted shell's error lines (S7), on stderr.
func TestOneLshdbPrefix(t *testing.T) {
	var errb bytes.Buffer
	a := &app{stderr: &errb, out: &outWriter{}}
	dbErr := fmt.Errorf("%w: %w", db.ErrDiskFull, fmt.Errorf("lshdb: ingesting the load: %w", syscall.ENOSPC))
	if code := a.exitCode(stoppedErr("committed 5 documents", "in.jsonl:5", "", dbErr)); code != 1 ||
		errb.String() != "lshdb: committed 5 documents through in.jsonl:5; stopped: disk full: ingesting the load: no space left on device\n" {
		t.Fatalf("insert stopped by a db error: exit %d, %q", code, errb.String())
	}
	dir := fixture(t)
	afile := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(afile, []byte("x"), 0o644)
	for _, c := range []struct {
		args  []string
		stdin string
		want  string // stderr
	}{
		{[]string{"get", "--db", dir, "a: lshdb: b"}, "", "lshdb: document not found: \"a: lshdb: b\"\n"},
		{[]string{"insert", "--db", dir, "--threshold", "0.5", "-"}, "", "lshdb: the index was made with other parameters than the flags give: --threshold 0.8 (given: 0.5); leave them out (an index keeps the parameters it was made with), or give a new --db for an index of these\n"},
		// NB: two differences are one line (it showed a literal \n
		// between them, in the library's field names).
		{[]string{"insert", "--db", dir, "--num-perm", "64", "--shingle", "word", "-"}, "", "lshdb: the index was made with other parameters than the flags give: --num-perm 128 (given: 64), --shingle char (given: word); leave them out (an index keeps the parameters it was made with), or give a new --db for an index of these\n"},
		{[]string{"insert", "--db", afile, "-"}, "", "lshdb: not an lshdb database: " + afile + " is a file\n"},
		{[]string{"shell", "--db", dir}, "get nope\nbucket 99 0\nput \"\" some text\n",
			"> get nope\nlshdb: document not found: \"nope\"\n> bucket 99 0\nlshdb: invalid options: band 99: the index has bands 0 to 15\n" +
				"> put \"\" some text\nlshdb: invalid document id: empty\nlshdb: 3 shell commands failed\n"},
	} {
		out, errOut, _ := runLine(c.args, c.stdin)
		if errOut != c.want {
			t.Errorf("%q: stderr %q, want %q", c.args, errOut, c.want)
		}
		if out != "" {
			t.Errorf("%q: stdout %q", c.args, out)
		}
	}
}

// Ensure that a full disk names --disk-reserve for an index the command
// opened, and the server's flag for one it is attached to (the command's
// own --disk-reserve, which the message named, changed nothing there).
func TestDiskFullNamesWhoseReserve(t *testing.T) {
	msg := "disk full: 10.0 MiB free, and lshdb keeps 64.0 MiB in reserve (Options.DiskReserve): free space"
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %s", db.ErrDiskFull, strings.TrimPrefix(msg, "disk full: ")), "(--disk-reserve MiB changes it)"},
		{&client.Error{Status: 507, Code: "disk_full", Message: msg}, "(the server's: lshdb serve --disk-reserve MiB, at its start)"},
	} {
		var errb bytes.Buffer
		a := &app{stderr: &errb, out: &outWriter{}}
		if code := a.exitCode(c.err); code != 1 || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "Options.") {
			t.Errorf("%v: exit %d, %q; want %q", c.err, code, errb.String(), c.want)
		}
	}
}

// Ensure that a parameter mismatch names every parameter by its flag: the
// banding, normalization and stop words were named by the library's
// fields (Bands, Rows, Normalization, StopWords).
func TestMismatchNamesFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "create", "--db", dir, "--shingle", "word", "--stop-words", "a,the", "--shingle-size", "2")
	_, errOut, code := runLine([]string{"insert", "--db", dir, "--bands", "8", "--rows", "4", "--normalization", "none", "--shingle", "word", "--stop-words", "x,a", "-"}, "")
	want := "lshdb: the index was made with other parameters than the flags give: --bands 16 (given: 8), --rows 6 (given: 4), --normalization fold (given: none), --stop-words a,the (given: a,x); leave them out (an index keeps the parameters it was made with), or give a new --db for an index of these\n"
	if code != 2 || errOut != want {
		t.Fatalf("exit %d, stderr %q\nwant %q", code, errOut, want)
	}
}

// Ensure that a command stopped by SIGTERM exits 143, by SIGINT 130 and by
// SIGHUP 129, as a shell reports them (128 + the signal's number).
func TestSignalExitCodes(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for sig, want := range map[os.Signal]int{syscall.SIGTERM: 143, os.Interrupt: 130, syscall.SIGHUP: 129} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalCause{sig})
		var out, errb bytes.Buffer
		if code := run(ctx, []string{"pairs", "--db", idx}, strings.NewReader(""), &out, &errb); code != want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", sig, code, want, errb.String())
		}
	}
}

// Ensure that gen never leaves part of a corpus under its name: an
// interrupted run (the context cancelled as Ctrl-C does) exits 130 and
// leaves an existing file as it was, a run whose rename fails (the name
// is a directory) reports it, and neither leaves a temporary file behind.
func TestGenLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "c.jsonl.gz")
	if err := os.WriteFile(out, []byte("the previous corpus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause{os.Interrupt})
	var o, e bytes.Buffer
	if code := run(ctx, []string{"gen", "--n", "5000", "--seed", "3", "--out", out}, strings.NewReader(""), &o, &e); code != 130 || !strings.Contains(e.String(), "not written") {
		t.Fatalf("interrupted gen: exit %d, %q", code, e.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "the previous corpus\n" {
		t.Fatalf("the existing file after an interrupted gen: %q, %v", b, err)
	}
	sub := filepath.Join(dir, "a-directory")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLine([]string{"gen", "--n", "200", "--seed", "3", "--out", sub}, ""); code != 1 || !strings.Contains(errOut, "a-directory") {
		t.Fatalf("gen over a directory: exit %d, %q", code, errOut)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Fatalf("the directory holds %q, want only c.jsonl.gz and a-directory", got)
	}
}

// Ensure that what package db logs reaches stderr as the commands' own
// lines: "lshdb: " and the message once, attributes as key=value, a value
// with spaces in quotes as written, one with quotes or control characters
// quoted and escaped, nothing below a warning.
func TestCLILog(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(cliLog{w: &b}).With("file", "/idx/000004.sst")
	log.Info("lshdb: pebble: compacting")
	log.Error("lshdb: pebble: data corruption", "bounds", `[d\x00, d\x01]`, "error", "a \"quoted\" word\n", "n", 3)
	want := `lshdb: pebble: data corruption file=/idx/000004.sst bounds="[d\x00, d\x01]" error="a \"quoted\" word\n" n=3` + "\n"
	if b.String() != want {
		t.Fatalf("logged\n%s\nwant\n%s", b.String(), want)
	}
}

// Ensure that an error of a damaged index says what to do about it, on
// its one line.
func TestCorruptHint(t *testing.T) {
	var errb bytes.Buffer
	a := &app{ctx: context.Background(), root: context.Background(), stderr: &errWriter{w: &errb}}
	if code := a.exitCode(fmt.Errorf("%w: block 12: checksum mismatch", db.ErrCorrupt)); code != exitDamaged {
		t.Fatalf("exit %d", code)
	}
	if got := errb.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "lshdb: database is corrupt: block 12: checksum mismatch; ") || !strings.Contains(got, "restore a backup") {
		t.Fatalf("stderr %q", got)
	}
}

// Ensure that a flag value that does not parse is named with what was
// expected, exit 2, not with Go's parser message
// ("strconv.ParseFloat: parsing "abc": invalid syntax").
func TestFlagValueMessages(t *testing.T) {
	dir := fixture(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"clusters", "--db", dir, "--threshold", "abc"}, `lshdb: --threshold "abc": not a number` + "\n"},
		{[]string{"query", "--db", dir, "--id", "x", "--top", "1.5"}, `lshdb: --top "1.5": not a whole number` + "\n"},
		{[]string{"query", "--db", dir, "--id", "x", "--top", "99999999999999999999"}, `lshdb: --top "99999999999999999999": out of range` + "\n"},
		{[]string{"insert", "--db", dir, "--ttl", "5x", "-"}, `lshdb: --ttl "5x": not a duration such as 90s, 30m or 1h` + "\n"},
		{[]string{"insert", "--db", dir, "--ttl", "100000000h", "-"}, `lshdb: --ttl "100000000h": out of range (a duration is at most 2562047h47m16.854775807s, about 292 years)` + "\n"},
		// An explicit 0 (or a value that rounds to it) made documents that
		// never expire, where the shell's put refused it.
		{[]string{"insert", "--db", dir, "--ttl", "0", "-"}, "lshdb: --ttl 0s is no time: give a positive duration (1h, 30m, 90s), or no --ttl for documents that do not expire\n"},
		{[]string{"dedup", "--db", dir, "--ttl", "0.1ns", "-"}, "lshdb: --ttl 0s is no time: give a positive duration (1h, 30m, 90s), or no --ttl for documents that do not expire\n"},
		{[]string{"build", "--db", dir, "--ttl=0s", "-"}, "lshdb: --ttl 0s is no time: give a positive duration (1h, 30m, 90s), or no --ttl for documents that do not expire\n"},
		{[]string{"pairs", "--db", dir, "--sort=maybe"}, `lshdb: --sort "maybe": not true or false` + "\n"},
		// NB: quoted once (pflag quotes the value), a float out of range,
		// a negative value of an unsigned flag.
		{[]string{"clusters", "--db", dir, "--threshold", "a\"b\tc"}, `lshdb: --threshold "a\"b\tc": not a number` + "\n"},
		{[]string{"clusters", "--db", dir, "--threshold", "1e999"}, `lshdb: --threshold "1e999": out of range` + "\n"},
		{[]string{"create", "--db", filepath.Join(t.TempDir(), "x"), "--seed=-1"}, `lshdb: --seed "-1": not a whole number, 0 or more` + "\n"},
		{[]string{"info", "--db", dir, "--disk-reserve", "8796093022208"}, "lshdb: --disk-reserve 8796093022208: give MiB (at most 8796093022207), 0 for the default or -1 for no check\n"},
	} {
		_, errOut, code := runLine(c.args, "")
		if code != 2 || errOut != c.want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", c.args, code, errOut, c.want)
		}
	}
}

// barDocs writes n short documents (near-duplicates in groups, so that
// pairs and clusters have work) as dir/docs.jsonl and returns its path.
func barDocs(t *testing.T, dir string, n int) string {
	t.Helper()
	file := filepath.Join(dir, "docs.jsonl")
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"id\":\"d%d\",\"text\":\"document %d says something about %d things and more\"}\n", i, i%300, i%37)
	}
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// Ensure that every label of tune's picture starts inside it (the
// threshold's was drawn at x = -44 for t = 0.05, an inspection review's
// N1), and that a banding for threshold 1 says it was chosen for 0.999
// (N8). The picture is 640 wide.
func TestTunePlotLabelsInside(t *testing.T) {
	for _, th := range []string{"0.05", "0.1", "0.5", "0.99"} {
		path := filepath.Join(t.TempDir(), "curve.svg")
		if _, errOut, code := runLine([]string{"tune", "--threshold", th, "--plot", path}, ""); code != 0 {
			t.Fatalf("tune: %d %s", code, errOut)
		}
		raw, _ := os.ReadFile(path)
		for _, m := range regexp.MustCompile(`<text x="(-?[0-9.]+)"`).FindAllStringSubmatch(string(raw), -1) {
			if x, _ := strconv.ParseFloat(m[1], 64); x < 0 || x > 640 {
				t.Errorf("threshold %s: a label at x = %v, outside the picture", th, x)
			}
		}
	}
	if out := runOK(t, "tune", "--threshold", "1"); !strings.Contains(out, "for threshold 1 (chosen for 0.999)") {
		t.Errorf("tune --threshold 1 says: %s", out)
	}
	idx := filepath.Join(t.TempDir(), "idx")
	runOK(t, "create", "--db", idx, "--threshold", "1")
	if out := runOK(t, "tune", "--db", idx); !strings.Contains(out, "(chosen for threshold 1, banded for 0.999)") {
		t.Errorf("tune --db of an index of threshold 1 says: %s", out)
	}
	// NB: not of a banding given at create (a maintainer review's K13).
	given := filepath.Join(t.TempDir(), "given")
	runOK(t, "create", "--db", given, "--threshold", "1", "--bands", "4", "--rows", "32")
	if out := runOK(t, "tune", "--db", given); strings.Contains(out, "banded for 0.999") {
		t.Errorf("tune --db of an index given its banding says: %s", out)
	}
	// Nor below 1 (an inspection review's Q2): b=10 r=5 is not what the
	// recall-first choice takes for 0.6 (tune without --db, the oracle).
	given = filepath.Join(t.TempDir(), "given6")
	runOK(t, "create", "--db", given, "--threshold", "0.6", "--bands", "10", "--rows", "5")
	if out := runOK(t, "tune", "--threshold", "0.6"); strings.Contains(out, "b=10 r=5 ") {
		t.Fatalf("the choice for 0.6 is b=10 r=5 after all: %s", out)
	}
	if out := runOK(t, "tune", "--db", given); strings.Contains(out, "chosen") || !strings.Contains(out, "(given at create; the index's threshold is 0.6)") {
		t.Errorf("tune --db of an index given b=10 r=5 at 0.6 says: %s", out)
	}
	// And create refuses --recall beside a banding it would ignore (Q3),
	// making nothing.
	refused := filepath.Join(t.TempDir(), "refused")
	if _, errOut, code := runLine([]string{"create", "--db", refused, "--bands", "10", "--rows", "5", "--recall", "0.9"}, ""); code != 2 || !strings.Contains(errOut, "--recall chooses a banding") {
		t.Errorf("create --bands --rows --recall: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("the refused create left %s: %v", refused, err)
	}
}

// Ensure that a command that writes an index asks for --db before it
// looks at its inputs: lshdb insert idx a.jsonl (--db forgotten) said
// "stat idx: no such file or directory" (a newcomer's review).
func TestDBBeforeInputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(file, []byte(`{"id":"a","text":"a document"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"insert", "build", "dedup"} {
		_, errOut, code := runLine([]string{cmd, filepath.Join(dir, "idx"), file}, "")
		if code != 2 || errOut != "lshdb: --db DIR is required\n" {
			t.Errorf("%s without --db: exit %d, %q", cmd, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "idx")); err == nil {
		t.Error("an index was made")
	}
}

// Ensure that a missing input is named as an input, before any index is
// made: the commands said os.Stat's "stat a.jsonl: no such file or
// directory" (a newcomer's review).
func TestMissingInputIsNamed(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a.jsonl")
	for _, cmd := range []string{"insert", "build", "dedup", "filter"} {
		_, errOut, code := runLine([]string{cmd, "--db", filepath.Join(dir, "idx"), missing}, "")
		if want := "lshdb: input " + missing + ": no such file or directory\n"; code != 1 || errOut != want {
			t.Errorf("%s of a missing input: exit %d, %q, want 1, %q", cmd, code, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "idx")); err == nil {
		t.Error("an index was made")
	}
	// NB: and query's --file and clusters' --from, which said "open
	// PATH: …" (a maintainer's review).
	idx := threeDocIndex(t, "a", "c")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--db", idx, "--file", missing}, "lshdb: --file " + missing + ": no such file or directory\n"},
		{[]string{"clusters", "--db", idx, "--from", missing}, "lshdb: bad pairs file: --from " + missing + ": no such file or directory\n"},
	} {
		if _, errOut, code := runLine(c.args, ""); code != 1 || errOut != c.want {
			t.Errorf("%s of a missing file: exit %d, %q, want 1, %q", c.args[0], code, errOut, c.want)
		}
	}
}

// Ensure that lshdb with no command is a usage error, its help on stderr:
// it printed the help on stdout and exited 0, and a script running
// "lshdb $CMD" with CMD empty went on (a newcomer's review). The help
// asked for still goes to stdout with exit 0.
func TestNoCommand(t *testing.T) {
	// NB: and "" (a quoted "$CMD" left empty), and the root's flags alone
	// (a maintainer's review).
	for _, args := range [][]string{nil, {""}, {"--progress", "none"}, {"--output", "json", ""}} {
		out, errOut, code := runLine(args, "")
		if code != 2 || out != "" || !strings.Contains(errOut, "Available Commands:") || !strings.HasSuffix(errOut, "lshdb: no command given: name one of the commands above\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr ending %q", args, code, out, errOut[max(0, len(errOut)-80):])
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"--progress", "none", "-h"}} {
		out, errOut, code := runLine(args, "")
		if code != 0 || !strings.Contains(out, "Available Commands:") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q", args, code, len(out), errOut)
		}
	}
}

// Ensure that tune's table shows a P(candidate) below 1 that rounds to 1
// as >0.9999, not 1.0000 (an inspection review's Q7). Oracle: the
// S-curve 1-(1-s^r)^b by hand for b=16 r=6 (tune's choice at 0.8).
func TestTuneProbabilityBelowOne(t *testing.T) {
	for p, want := range map[float64]string{1: "1.0000", 0.999995: ">0.9999", 0.99994: "0.9999", 0.9923: "0.9923", 0: "0.0000"} {
		if got := probability(p); got != want {
			t.Errorf("probability(%v) = %q, want %q", p, got, want)
		}
	}
	out := runOK(t, "tune", "--threshold", "0.8")
	p := 1 - math.Pow(1-math.Pow(0.9, 6), 16) // 0.999995
	if !strings.Contains(out, "b=16 r=6") || p >= 1 || !regexp.MustCompile(`(?m)^0\.90\s+>0\.9999$`).MatchString(out) || !regexp.MustCompile(`(?m)^1\.00\s+1\.0000$`).MatchString(out) {
		t.Errorf("tune (P(0.9) = %v):\n%s", p, out)
	}
	// Its header too, where tune --threshold 0.9 on the index's banding
	// (b=16 r=6) said P(0.9) = 1.0000 beside the table's >0.9999 (an
	// inspection review's SH-7).
	dir := filepath.Join(t.TempDir(), "idx")
	runOK(t, "create", "--db", dir)
	if out := runOK(t, "tune", "--db", dir, "--threshold", "0.9"); !strings.Contains(out, "P(0.9) = >0.9999") {
		t.Errorf("tune --db at 0.9 (P = %v):\n%s", p, out)
	}
}

// Ensure that bucket --jaccard's median of an even count is the mean of
// the two middle values (it took the upper: an inspection review's SH-5).
// Oracle: by hand.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{0.5}, 0.5}, {[]float64{0.5, 0.5032}, 0.5016}, {[]float64{0.1, 0.2, 0.9}, 0.2}, {[]float64{0.1, 0.2, 0.4, 0.9}, 0.3}} {
		if got := median(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// Ensure that each exit status comes from the error it names, whatever
// the words of its message: an id or path holding cobra's "required
// flag" was a usage error (2); a closed pipe written through an --out
// file (--out /dev/stdout | head) is 141 as through stdout, and the
// socket of an attached command's server is not (a read-through's R1,
// R4).
func TestExitStatuses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: %q", db.ErrNotFound, "required flag"), exitNotFound},
		{fmt.Errorf("%w by another process: /tmp/required flag/idx", db.ErrLocked), exitBusy},
		{fmt.Errorf("%w: doc 3: required flag", db.ErrCorrupt), exitDamaged},
		{problemsFound{"check found problems"}, exitDamaged},
		{fmt.Errorf("%w: /x/required flag has index format 1", db.ErrFormat), exitFormat},
		{fmt.Errorf("opening: %w", db.ErrFormatTooNew), exitFormat},
		{&fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}, exitPipe},
		{fmt.Errorf("writing pairs: %w", &fs.PathError{Op: "write", Path: "out.jsonl", Err: syscall.EPIPE}), exitPipe},
		{&net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("write", syscall.EPIPE)}, 1},
		{fmt.Errorf("%w: the request's token may only read", httpapi.ErrForbidden), 1},
		{fmt.Errorf("%w by the process that serves it (pid 7), %s", db.ErrReadOnly, httpapi.OwnerReadsOnly), exitBusy},
		{fmt.Errorf("%w: /mnt/ro/idx", db.ErrReadOnly), 1},
		{errors.New(`required flag(s) "db" not set`), 2},
		{errors.New("unknown flag: --bogus"), 2},
	} {
		a := &app{ctx: context.Background(), root: context.Background(), stderr: &errWriter{w: io.Discard}}
		if got := a.exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	// The whole command: a document whose id reads as a usage error.
	dir := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "create", "--db", dir)
	if _, errOut, code := runLine([]string{"get", "--db", dir, "required flag"}, ""); code != exitNotFound {
		t.Errorf("get \"required flag\": exit %d %s", code, errOut)
	}
}

// Ensure that a command reading an index in process lifts the soft memory
// limit to twice what a read of the whole index holds (perDocHeap a
// document and the pairs' default budget, and 256 MiB), never lowers it,
// and leaves it to GOMEMLIMIT when that is set: at 10 million documents
// the heap of pairs, clusters, filter and export passed the command's
// 768 MiB and the collector ran without pause (S10-2); and that it adds
// that to the budget a command gave (pairs --memory), not beside it. The
// oracle: the limit worked out by hand from the index's count.
func TestReadLiftsMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer heldBudget.Store(heldBudget.Load())
	heldBudget.Store(0) // NB: no budget given (an earlier command's, in process)
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	d, err := db.Open(idx, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, _ := d.Count()
	want := 2*(int64(n)*perDocHeap+db.DefaultPairsMemory) + 256<<20
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(defaultMemoryLimit)
	fitMemoryLimit(d)
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("limit %d after a read of %d documents, want %d", got, n, want)
	}
	debug.SetMemoryLimit(want + 1)
	if fitMemoryLimit(d); debug.SetMemoryLimit(-1) != want+1 {
		t.Error("a read lowered a higher limit")
	}
	// A budget of 1 GiB given first (pairs --memory 1024): 2 x (1 GiB +
	// 160 bytes a document) + 256 MiB.
	raiseMemoryLimit(1 << 30)
	fitMemoryLimit(d)
	if got, want := debug.SetMemoryLimit(-1), 2*(1<<30+int64(n)*160)+256<<20; got != want {
		t.Errorf("limit %d after a read of %d documents with a budget of 1 GiB, want %d", got, n, want)
	}
	heldBudget.Store(0)
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(defaultMemoryLimit)
	if fitMemoryLimit(d); debug.SetMemoryLimit(-1) != defaultMemoryLimit {
		t.Error("a read changed the limit GOMEMLIMIT set")
	}
}
