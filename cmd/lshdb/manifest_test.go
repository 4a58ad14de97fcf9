package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readManifest reads a --manifest record; the test fails when there is
// none or it is not one JSON object with no unknown field.
func readManifest(t *testing.T, path string) manifestJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifestJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

// fileSum is the SHA-256 of a file, and its size.
func fileSum(t *testing.T, path string) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), int64(len(b))
}

// Ensure that filter --manifest records what the run read and wrote, as
// the files themselves say: each output's SHA-256 and size (of the file
// as stored, gzip too) and its records (its lines, decompressed); each
// input's SHA-256, size and time; the counts that add up to the input's
// records; the summary line stderr has; the index's state as info gives
// it; and that a second run with other options replaces the record with
// its outputs.
func TestFilterManifest(t *testing.T) {
	dir := t.TempDir()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	mustRun(t, "gen", "--n", "1500", "--seed", "5", "--out", corpus)
	mustRun(t, "build", "--db", idx, corpus)
	kept, removed, man := filepath.Join(dir, "kept.jsonl.gz"), filepath.Join(dir, "removed.jsonl"), filepath.Join(dir, "run.json")
	before := time.Now()
	_, errOut := mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, "--manifest", man, "--keep", "longest", corpus)
	m := readManifest(t, man)

	inSum, inSize := fileSum(t, corpus)
	st, _ := os.Stat(corpus)
	absCorpus, _ := filepath.Abs(corpus)
	if len(m.Inputs) != 1 || m.Inputs[0] != (manifestFile{Path: absCorpus, Bytes: inSize, Modified: st.ModTime().UTC().Format(time.RFC3339Nano), SHA256: inSum}) {
		t.Errorf("inputs %+v, want the corpus %s of %d bytes, SHA-256 %s", m.Inputs, absCorpus, inSize, inSum)
	}
	lines := map[string]int64{}
	for i, o := range []struct{ flag, path string }{{"--out", kept}, {"--removed", removed}} {
		sum, size := fileSum(t, o.path)
		abs, _ := filepath.Abs(o.path)
		lines[o.flag] = int64(len(splitLines(decompressedFile(t, o.path))))
		if len(m.Outputs) != 2 || m.Outputs[i] != (manifestOutput{Flag: o.flag, Path: abs, Records: lines[o.flag], Bytes: size, SHA256: sum}) {
			t.Errorf("outputs %+v: want %s %s of %d records, %d bytes, SHA-256 %s", m.Outputs, o.flag, abs, lines[o.flag], size, sum)
		}
	}
	c := m.Counts
	read := int64(len(splitLines(decompressedFile(t, corpus))))
	if c.Read != read || c.Kept != lines["--out"] || c.Removed != lines["--removed"] || c.Kept+c.Removed != read || c.Removed == 0 || c.Clusters == 0 {
		t.Errorf("counts %+v: want %d read, %d kept, %d removed", c, read, lines["--out"], lines["--removed"])
	}
	if first, _, _ := strings.Cut(errOut, "\n"); m.Summary != first {
		t.Errorf("summary %q, stderr's line %q", m.Summary, first)
	}
	// The index's state and parameters, as a pairs header of the index
	// says them, and info.
	pairs, _ := mustRun(t, "pairs", "--db", idx, "--output", "json", "--header")
	var h headerJSON
	if err := json.Unmarshal([]byte(strings.SplitN(pairs, "\n", 2)[0]), &h); err != nil {
		t.Fatal(err)
	}
	info, _ := mustRun(t, "info", "--db", idx, "--output", "json")
	if m.Command != "filter" || m.Keep != "longest" || m.Mode != "centers" || m.Docs != 1500 || m.Docs != h.Header.Docs || m.Written != h.Header.Written ||
		m.Instance == "" || m.Instance != h.Header.Instance || !strings.Contains(info, `"instance":"`+m.Instance+`"`) ||
		m.headerParams != h.Header.headerParams || m.Threshold != h.Header.Threshold || m.DB != absPath(idx) || m.ManifestVersion != 1 {
		t.Errorf("the run: %+v; a pairs header %+v", m.headerBody, h.Header)
	}
	started, err1 := time.Parse(time.RFC3339, m.Started)
	finished, err2 := time.Parse(time.RFC3339Nano, m.Finished)
	if err1 != nil || err2 != nil || started.Before(before.Truncate(time.Second)) || finished.Before(started) || finished.After(time.Now()) || m.ElapsedSeconds <= 0 {
		t.Errorf("started %q, finished %q, %v s (%v, %v)", m.Started, m.Finished, m.ElapsedSeconds, err1, err2)
	}
	if m.Notes == nil {
		t.Error("notes is null, not []")
	}

	// Another run, to stdout and without --removed, replaces it.
	out, _ := mustRun(t, "filter", "--db", idx, "--manifest", man, corpus)
	m2 := readManifest(t, man)
	sum := sha256.Sum256([]byte(out))
	if m2.Keep != "first" || len(m2.Outputs) != 1 || m2.Outputs[0] != (manifestOutput{Flag: "--out", Path: "-", Records: int64(len(splitLines([]byte(out)))), Bytes: int64(len(out)), SHA256: hex.EncodeToString(sum[:])}) {
		t.Errorf("the second run's record: keep %s, outputs %+v", m2.Keep, m2.Outputs)
	}
}

// Ensure that the record is replaced with the outputs: a failed run
// (--strict refusing an input) leaves last night's record and outputs
// as they were; and while the outputs are put in place, between the two
// renames (sinksRenaming), there is no record, so a record never sits
// beside outputs it does not describe.
func TestFilterManifestReplacedWithTheOutputs(t *testing.T) {
	dir := t.TempDir()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	mustRun(t, "gen", "--n", "600", "--seed", "9", "--out", corpus)
	mustRun(t, "build", "--db", idx, corpus)
	kept, removed, man := filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "removed.jsonl"), filepath.Join(dir, "run.json")
	for _, p := range []string{kept, removed, man} {
		if err := os.WriteFile(p, []byte("last night's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	more := filepath.Join(dir, "more.jsonl")
	b, _ := os.ReadFile(corpus)
	if err := os.WriteFile(more, append(b, `{"id":"never-built","text":"a record the index does not hold"}`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"filter", "--db", idx, "--strict", "--out", kept, "--removed", removed, "--manifest", man, more}, "")
	if code != 1 || !strings.Contains(errOut, "the index does not hold") {
		t.Fatalf("filter --strict of an unindexed record: exit %d: %s", code, errOut)
	}
	for _, p := range []string{kept, removed, man} {
		if b, _ := os.ReadFile(p); string(b) != "last night's\n" {
			t.Errorf("a failed run replaced %s: %.80q", p, b)
		}
	}

	var between error
	sinksRenaming = func() {
		if _, err := os.Stat(man); !errors.Is(err, os.ErrNotExist) {
			between = fmt.Errorf("a record is there while the outputs are replaced: %v", err)
		}
	}
	defer func() { sinksRenaming = nil }()
	mustRun(t, "filter", "--db", idx, "--out", kept, "--removed", removed, "--manifest", man, corpus)
	if between != nil {
		t.Error(between)
	}
	m := readManifest(t, man)
	if sum, _ := fileSum(t, kept); len(m.Outputs) != 2 || m.Outputs[0].SHA256 != sum {
		t.Errorf("the record's outputs %+v, the kept file's SHA-256 %s", m.Outputs, sum)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
		t.Errorf("left beside the outputs: %q", names)
	}
}

// Ensure that an input whose size or time changes between the start of
// its reading and the record is refused (errInputChanged), whether it
// changed before its hash or after it; and that one left alone is
// hashed right.
func TestManifestInputChanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "in.jsonl")
	write := func(s string, mod time.Time) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write("one\n", t0)
	h := newInputSums()
	h.add(p)
	files, err := h.wait()
	want := sha256.Sum256([]byte("one\n"))
	if err != nil || len(files) != 1 || files[0].SHA256 != hex.EncodeToString(want[:]) || files[0].Bytes != 4 || files[0].Modified != "2026-01-02T03:04:05Z" {
		t.Fatalf("an input left alone: %+v, %v", files, err)
	}

	// Changed after its hash: seen at the end.
	write("one\n", t0)
	h = newInputSums()
	h.add(p)
	h.stop() // NB: hashed
	write("one\ntwo\n", t0.Add(time.Second))
	if _, err := h.wait(); !errors.Is(err, errInputChanged) || !strings.Contains(err.Error(), "was 4 bytes") {
		t.Errorf("an input written after its hash: %v", err)
	}

	// Changed as its reading began, the same size: its time says so,
	// whether the hash was taken before or after.
	write("one\n", t0)
	h = newInputSums()
	h.add(p)
	write("two\n", t0.Add(time.Second))
	if _, err := h.wait(); !errors.Is(err, errInputChanged) {
		t.Errorf("an input written before its hash, the same size: %v", err)
	}

	// A run that reads nothing ends with no record of inputs.
	if files, err := newInputSums().wait(); err != nil || len(files) != 0 {
		t.Errorf("no input: %v, %v", files, err)
	}
}

// Ensure that export --manifest records its outputs and counts (no
// inputs), --all with no clustering.
func TestExportManifest(t *testing.T) {
	dir := t.TempDir()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	mustRun(t, "gen", "--n", "500", "--seed", "2", "--out", corpus)
	mustRun(t, "build", "--db", idx, corpus)
	for _, all := range []bool{false, true} {
		out, man := filepath.Join(dir, "out.jsonl.zst"), filepath.Join(dir, "m.json")
		args := []string{"export", "--db", idx, "--out", out, "--manifest", man}
		if all {
			args = append(args, "--all")
		}
		mustRun(t, args...)
		m := readManifest(t, man)
		sum, size := fileSum(t, out)
		n := int64(len(splitLines(decompressedFile(t, out))))
		if len(m.Outputs) != 1 || m.Outputs[0].SHA256 != sum || m.Outputs[0].Bytes != size || m.Outputs[0].Records != n || m.Counts.Kept != n || len(m.Inputs) != 0 || m.Command != "export" || m.All != all {
			t.Errorf("all %v: %+v: want %d records, %d bytes, SHA-256 %s", all, m, n, size, sum)
		}
		if all != (m.Mode == "") || all != (n == 500) {
			t.Errorf("all %v: mode %q, %d documents", all, m.Mode, n)
		}
	}
}

// Ensure that --manifest is refused, before anything is read, where it
// is standard output, an output, an input, or named for a compression.
func TestManifestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	corpus, idx := filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "idx")
	mustRun(t, "gen", "--n", "50", "--out", corpus)
	mustRun(t, "build", "--db", idx, corpus)
	kept := filepath.Join(dir, "kept.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--manifest", "-"}, "give a file"},
		{[]string{"--manifest", ""}, "give a file"},
		{[]string{"--out", kept, "--manifest", kept}, "is an output too"},
		{[]string{"--out", kept, "--removed", filepath.Join(dir, "r.jsonl"), "--manifest", filepath.Join(dir, "r.jsonl")}, "is an output too"},
		{[]string{"--manifest", corpus}, "is the input"},
		{[]string{"--manifest", filepath.Join(dir, "m.json.gz")}, "names a compression"},
	} {
		args := append([]string{"filter", "--db", idx}, tc.args...)
		_, errOut, code := runLine(append(args, corpus), "")
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "[^c]*.json*")); len(names) != 0 {
		t.Errorf("written: %q", names)
	}
}
