package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
)

// TestProgressLines runs a build, a pairs run and gen with progress lines
// (--progress log, as a nightly job without a terminal gets them every
// minute) at a short interval, and checks each line against what the run
// did: counts that never go back and never pass the input's, shares
// within 0-100%, the input's real size as the total.
func TestProgressLines(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	// NB: 5,000 with -short, as under the race detector in CI, where
	// 20,000 took 52 s: at a line a millisecond, still dozens of lines.
	n := 20000
	if testing.Short() {
		n = 5000
	}
	if _, errOut, code := runLine([]string{"gen", "--n", strconv.Itoa(n), "--seed", "5", "--out", corpus, "--progress", "log", "--progress-every", "1ms"}, ""); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	} else {
		checkCounts(t, errOut, regexp.MustCompile(`^lshdb: gen: written (\d+) of `+strconv.Itoa(n)+` documents \(\d+%(?:, about \S+ left)?\), \S+ elapsed$`), "lshdb: gen:", n)
	}
	st, err := os.Stat(corpus)
	if err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "idx")
	out, errOut, code := runLine([]string{"build", "--db", idx, "--progress", "log", "--progress-every", "1ms", corpus}, "")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("inserted %d documents", n)) {
		t.Fatalf("build: exit %d: %s%s", code, out, errOut)
	}
	// NB: the reading is stage 1 of 4 (a nightly review's B2: its time
	// left was taken for the build's).
	build := regexp.MustCompile(`^lshdb: build: 1/4 reading: (\d+) documents; read (.+) of (.+) \((\d+)%(?:, about \S+ left[a-z ]*)?\), \S+ elapsed$`)
	// NB: after the reading, the load's stages (resolving ids, writing
	// tables, ingesting) have lines of their own, in order.
	stage := regexp.MustCompile(`^lshdb: build: ([2-4])/4 ([a-z0-9 ()]+): (\d+) of (\d+) \(\d+%(?:, about \S+ left in this phase)?\), \S+ elapsed$`)
	ro, err := db.Open(idx, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stageTotals := map[string]string{"2": strconv.Itoa(n), "3": strconv.Itoa(64 * ro.Params().Bands.B)} // 64ths of bands
	ro.Close()
	var docs []int
	var shares []int
	lastStage, lastDone := 1, 0
	for _, line := range progressLines(errOut, "lshdb: build:") {
		if m := stage.FindStringSubmatch(line); m != nil {
			step, _ := strconv.Atoi(m[1])
			done, _ := strconv.Atoi(m[3])
			total, _ := strconv.Atoi(m[4])
			if step < lastStage || step == lastStage && done < lastDone || done > total {
				t.Fatalf("a build stage went back or past its total: %q after stage %d at %d", line, lastStage, lastDone)
			}
			if want, ok := stageTotals[m[1]]; ok && m[4] != want {
				t.Fatalf("stage %s's total %s, want %s: %q", m[1], m[4], want, line)
			}
			lastStage, lastDone = step, done
			continue
		}
		m := build.FindStringSubmatch(line)
		if m == nil || lastStage > 1 {
			t.Fatalf("a build progress line (after stage %d): %q", lastStage, line)
		}
		if m[3] != humanBytes(uint64(st.Size())) {
			t.Fatalf("the build's total %q, the input has %s: %q", m[3], humanBytes(uint64(st.Size())), line)
		}
		n, _ := strconv.Atoi(m[1])
		p, _ := strconv.Atoi(m[4])
		docs, shares = append(docs, n), append(shares, p)
	}
	if len(docs) == 0 || lastStage != 4 {
		t.Fatalf("no build progress line (or none of its last stage) at a 1ms interval:\n%s", errOut)
	}
	for i := range docs {
		if docs[i] > n || shares[i] > 100 || i > 0 && (docs[i] < docs[i-1] || shares[i] < shares[i-1]) {
			t.Fatalf("build progress went back or past the input: documents %v, shares %v", docs, shares)
		}
	}
	_, errOut, code = runLine([]string{"pairs", "--db", idx, "--progress", "log", "--progress-every", "1ms", "--threshold", "0.5"}, "")
	if code != 0 {
		t.Fatalf("pairs: exit %d: %s", code, errOut)
	}
	// NB: a phase that counts nothing has no count ("5/5 making
	// clusters: 0" said nothing).
	pairs := regexp.MustCompile(`^lshdb: pairs: (\d)/(\d) ([a-z0-9 ()]+)(?:: (\d+)(?: of (\d+) \((\d+)%(?:, about \S+ left in this phase)?\))?)?, \S+ elapsed$`)
	lines := progressLines(errOut, "lshdb: pairs:")
	if len(lines) == 0 {
		t.Fatalf("no pairs progress line at a 1ms interval:\n%s", errOut)
	}
	phased := false
	for _, line := range lines {
		m := pairs.FindStringSubmatch(line)
		if m == nil && !phased && regexp.MustCompile(`^lshdb: pairs: running, \S+ elapsed$`).MatchString(line) {
			// NB: the heartbeat of an interval before the first phase
			// (opening the index, its temporary directory): the CI
			// machine took more than the 1ms interval there.
			continue
		}
		if m == nil {
			t.Fatalf("a pairs progress line: %q", line)
		}
		phased = true
		if regexp.MustCompile(`: 0, \S+ elapsed$`).MatchString(line) {
			t.Fatalf("a count of nothing: %q", line)
		}
		if m[1] > m[2] {
			t.Fatalf("step %s of %s: %q", m[1], m[2], line)
		}
		if m[5] != "" {
			done, _ := strconv.Atoi(m[4])
			total, _ := strconv.Atoi(m[5])
			if done > total {
				t.Fatalf("done past the total: %q", line)
			}
		}
	}
	// clusters --from reads a pairs file, whose pairs it cannot count
	// ahead: its lines say the bytes read of the file's size (S10-6: "2/2
	// reading pairs: 2291712" at 10 million documents, no total, no time
	// left). The oracle: the file's size; the bytes never go back.
	// NB: its pairs over and over (a repeat counts once), some megabytes,
	// so that the reading lasts some of the lines' milliseconds.
	pairsOut, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json"}, "")
	if code != 0 || pairsOut == "" {
		t.Fatalf("pairs: exit %d: %s", code, errOut)
	}
	pf := filepath.Join(dir, "p.jsonl")
	if err := os.WriteFile(pf, []byte(strings.Repeat(pairsOut, (4<<20)/len(pairsOut)+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	pst, err := os.Stat(pf)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runLine([]string{"clusters", "--db", idx, "--from", pf, "--progress", "log", "--progress-every", "1ms", "--out", filepath.Join(dir, "clusters.txt")}, "")
	if code != 0 {
		t.Fatalf("clusters --from: exit %d: %s", code, errOut)
	}
	// NB: the phase's count, and at its end its total ("72387 of 72387
	// (100%)", a CI run), then the bytes read.
	readLine := regexp.MustCompile(`^lshdb: clusters: 2/3 reading pairs(?:: \d+(?: of \d+ \(\d+%\))?)?; read (.+) of (.+) \(\d+%(?:, about \S+ left to read)?\), \S+ elapsed$`)
	var reads []string
	for _, line := range progressLines(errOut, "lshdb: clusters: 2/3") {
		if m := readLine.FindStringSubmatch(line); m != nil {
			if m[2] != humanBytes(uint64(pst.Size())) {
				t.Fatalf("the pairs file's size %s, it has %s: %q", m[2], humanBytes(uint64(pst.Size())), line)
			}
			reads = append(reads, m[1])
		} else if !regexp.MustCompile(`^lshdb: clusters: 2/3 reading pairs, \S+ elapsed$`).MatchString(line) {
			t.Fatalf("a line of reading pairs: %q", line) // NB: before the first bytes, none
		}
	}
	if len(reads) == 0 {
		t.Fatalf("no line of reading pairs says the bytes read:\n%s", errOut)
	}
	// filter counts the records it reads; insert from a pipe (no total)
	// the documents it stored.
	_, errOut, code = runLine([]string{"filter", "--db", idx, "--progress", "log", "--progress-every", "1ms", "--out", filepath.Join(dir, "kept.jsonl"), corpus}, "")
	if code != 0 {
		t.Fatalf("filter: exit %d: %s", code, errOut)
	}
	checkCounts(t, errOut, regexp.MustCompile(`^lshdb: filter: (\d+) records; read .+ of .+ \(\d+%(?:, about \S+ left to read)?\), \S+ elapsed$`), "lshdb: filter:", n)
	// export counts the documents it read of those stored.
	_, errOut, code = runLine([]string{"export", "--db", idx, "--progress", "log", "--progress-every", "1ms", "--out", filepath.Join(dir, "exported.jsonl")}, "")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	checkCounts(t, errOut, regexp.MustCompile(`^lshdb: export: read (\d+) of `+strconv.Itoa(n)+` documents \(\d+%(?:, about \S+ left in this phase)?\), \S+ elapsed$`), "lshdb: export:", n)
	stdin, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runLine([]string{"insert", "--db", idx, "--progress", "log", "--progress-every", "1ms", "-"}, string(stdin))
	if code != 0 {
		t.Fatalf("insert: exit %d: %s", code, errOut)
	}
	checkCounts(t, errOut, regexp.MustCompile(`^lshdb: insert: (\d+) documents, \S+ elapsed$`), "lshdb: insert:", n)
	// none: no line; bad flags: usage errors naming the flag.
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--progress", "none", "--progress-every", "1ms", "--threshold", "0.5"}, ""); code != 0 || len(progressLines(errOut, "lshdb: pairs:")) != 0 {
		t.Fatalf("--progress none: exit %d, %q", code, errOut)
	}
	for _, bad := range [][]string{{"--progress", "often"}, {"--progress-every", "0s"}, {"--progress-every", "-1m"}} {
		if _, errOut, code := runLine(append([]string{"info", "--db", idx}, bad...), ""); code != 2 || !strings.Contains(errOut, bad[0]) {
			t.Fatalf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}

// checkCounts checks the progress lines of errOut that start with prefix:
// each matches re, whose first group is a count that never goes back and
// never passes max, and the last one counted something.
func checkCounts(t *testing.T, errOut string, re *regexp.Regexp, prefix string, max int) {
	t.Helper()
	lines := progressLines(errOut, prefix)
	if len(lines) == 0 {
		t.Fatalf("no %s progress line at a 1ms interval:\n%s", prefix, errOut)
	}
	last := 0
	for _, line := range lines {
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("a progress line: %q", line)
		}
		n, _ := strconv.Atoi(m[1])
		if n < last || n > max {
			t.Fatalf("%q after %d (at most %d)", line, last, max)
		}
		last = n
	}
	if last == 0 {
		t.Fatalf("the last %s line counted nothing: %q", prefix, lines[len(lines)-1])
	}
}

// Ensure that a progress line's share and time left are what the pace so
// far gives, worked by hand: 1 of 4 in 10 s leaves 30 s.
func TestFraction(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{1, 4, 10 * time.Second, "1 of 4 (25%, about 30s left to read)"},
		{3, 4, 90 * time.Second, "3 of 4 (75%, about 30s left to read)"},
		{4, 4, 90 * time.Second, "4 of 4 (100%)"},
		{0, 4, 90 * time.Second, "0 of 4 (0%)"},        // no pace yet
		{999, 1000, time.Second, "999 of 1000 (100%)"}, // under a second left
		{7, 0, time.Second, "7"},                       // no total
		{2, 3, 2 * time.Minute, "2 of 3 (67%, about 1m0s left to read)"},
		{1024, 48404301, 2 * time.Second, "1024 of 48404301 (0%)"},                           // under 1%: not its pace yet
		{484044, 48404301, time.Second, "484044 of 48404301 (1%, about 1m39s left to read)"}, // 1%
	} {
		if got := fraction(tc.done, tc.total, tc.elapsed, countUnit, "", " to read"); got != tc.want {
			t.Errorf("fraction(%d, %d, %v) = %q, want %q", tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
	if got := fraction(48<<10, 3<<20, time.Second, byteUnit, "", ""); got != "48.0 KiB of 3.0 MiB (2%, about 1m3s left)" {
		t.Errorf("bytes: %q", got)
	}
}

// progressLines returns errOut's lines that start with prefix.
func progressLines(errOut, prefix string) []string {
	var lines []string
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, prefix) {
			lines = append(lines, line)
		}
	}
	return lines
}

// Ensure that a long call that reports no progress (attached: the owner's
// does not cross the socket) still writes a line each interval, and that
// one that reports some writes it.
func TestPhaseLinesWithoutProgress(t *testing.T) {
	errb := checkPhaseLines(t, "check", `^lshdb: check: running, \S+ elapsed$`, func(a *app) func() {
		_, done := a.phaseBar("check")
		return done
	})
	// After done, no more lines.
	n := len(errb.String())
	time.Sleep(20 * time.Millisecond)
	if len(errb.String()) != n {
		t.Fatalf("lines after done: %q", errb.String()[n:])
	}
	// An interrupted call's phases end "complete": no line says so.
	ctx, cancel := context.WithCancel(context.Background())
	errb.Reset()
	a := &app{ctx: ctx, stderr: &errWriter{w: errb}, progressMode: progressLog, progressEvery: time.Nanosecond}
	pctx, done := a.phaseBar("pairs")
	cancel()
	d, err := db.Open(filepath.Join(t.TempDir(), "idx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(db.Doc{ID: "a", Text: "a few words of text"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, err := range d.Pairs(pctx, nil) {
		if err == nil {
			t.Fatal("pairs under a cancelled context gave a pair")
		}
	}
	done()
	if strings.Contains(errb.String(), "%)") {
		t.Fatalf("an interrupted call's progress lines: %q", errb.String())
	}
}

// Ensure that a phase that counts nothing (clusters' last, "making
// clusters") is named without a count: its lines said "5/5 making
// clusters: 0" for as long as it ran.
func TestPhaseLineWithoutCount(t *testing.T) {
	checkPhaseLines(t, "clusters", `^lshdb: clusters: 5/5 making clusters, \S+ elapsed$`, func(a *app) func() {
		report, done := a.phaseReporter("clusters", time.Now(), nil)
		report(db.Progress{Phase: "making clusters", Step: 5, Steps: 5})
		return done
	})
}

// Ensure that a phase's note (a file's bytes read) is added to its lines,
// with the share and the time left at the phase's pace: 1 KiB of 4 KiB
// read in the phase's first moments leaves a time under the second a line
// shows, so none is said.
func TestPhaseLineNote(t *testing.T) {
	m := &readMeter{}
	m.size.Store(4096)
	r := m.reader(strings.NewReader(strings.Repeat("x", 1024)))
	if n, err := io.Copy(io.Discard, r); n != 1024 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	checkPhaseLines(t, "clusters", `^lshdb: clusters: 2/3 reading pairs: 10; read 1\.0 KiB of 4\.0 KiB \(25%\), \S+ elapsed$`, func(a *app) func() {
		report, done := a.phaseReporter("clusters", time.Now(), nil, phaseNote{"reading pairs", m.note}, phaseNote{"another phase", func(time.Duration) string { return "never" }})
		report(db.Progress{Phase: "reading pairs", Step: 2, Steps: 3, Done: 10})
		return done
	})
	// Nothing read: no note.
	if got := (&readMeter{}).note(time.Second); got != "" {
		t.Errorf("a meter that read nothing: %q", got)
	}
	// A size not known: the bytes alone.
	u := &readMeter{}
	u.read.Store(3 << 20)
	if got := u.note(time.Second); got != "read 3.0 MiB" {
		t.Errorf("a meter of no size: %q, want %q", got, "read 3.0 MiB")
	}
}

// checkPhaseLines starts a call's progress with start on an app that
// writes a line every millisecond (--progress log), ends it (start's
// done) 30 intervals later, and checks that it wrote lines and that
// each of what's matches want. It returns what was written.
func checkPhaseLines(t *testing.T, what, want string, start func(a *app) (done func())) *bytes.Buffer {
	t.Helper()
	var errb bytes.Buffer
	done := start(&app{ctx: context.Background(), stderr: &errWriter{w: &errb}, progressMode: progressLog, progressEvery: time.Millisecond})
	time.Sleep(30 * time.Millisecond)
	done()
	lines := progressLines(errb.String(), "lshdb: "+what+":")
	if len(lines) == 0 {
		t.Fatal("no line in 30 intervals")
	}
	re := regexp.MustCompile(want)
	for _, line := range lines {
		if !re.MatchString(line) {
			t.Fatalf("a progress line of %s: %q, want %s", what, line, want)
		}
	}
	return &errb
}

// Ensure that the lines of a step that follows a command's clustering
// (filter's reading, export's writing) count the elapsed time from the
// command's start, one clock for its lines, and the time left from the
// step's own pace: filter's reading said "2s elapsed" after the
// clustering's "26s elapsed" (a review at scale, L3). The oracle: a
// command begun 90 s before, and a step of 40 ms that is half done, whose
// time left at its pace is under the second a line shows (at the
// command's pace it would be 90 s).
func TestStepLinesCountFromTheCommand(t *testing.T) {
	begun := time.Now().Add(-90 * time.Second)
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"filter", "export"} {
		var errb bytes.Buffer
		a := &app{ctx: context.Background(), stderr: &errWriter{w: &errb}, progressMode: progressLog, progressEvery: time.Millisecond}
		var in inputFlags
		var add func(int)
		if step == "filter" {
			add, _ = a.stepProgress("filter", "", "records", &in, []string{file}, begun)
		} else {
			add, _ = a.countBarSince("export", "read", 10, begun)
		}
		time.Sleep(40 * time.Millisecond)
		if step == "filter" {
			in.Progress(500)
			add(1)
		} else {
			add(5)
		}
		lines := progressLines(errb.String(), "lshdb: "+step+":")
		if len(lines) != 1 {
			t.Fatalf("%s: lines %q, want one", step, lines)
		}
		if !strings.HasSuffix(lines[0], "(50%), 1m30s elapsed") {
			t.Errorf("%s: %q, want half done, no time left (under a second at the step's pace), 1m30s elapsed (the command's)", step, lines[0])
		}
	}
}

// TestPhaseLineFirstPhase: a reporter made with the phase under way (a
// build's stages after its reading) says that phase from its first line,
// even before report is called; it said "running" (a CI run's failure of
// TestProgressLines).
func TestPhaseLineFirstPhase(t *testing.T) {
	checkPhaseLines(t, "build", `^lshdb: build: 2/4 resolving ids: 3 of 10 \(30%(?:, about \S+ left in this phase)?\), \S+ elapsed$`, func(a *app) func() {
		_, done := a.phaseReporter("build", time.Now(), &db.Progress{Phase: "resolving ids", Step: 2, Steps: 4, Done: 3, Total: 10})
		return done
	})
}
