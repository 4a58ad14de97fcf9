package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/peterh/liner"
	"github.com/spf13/pflag"
)

// lines is a prompter that returns its lines (a nil-error string each, or
// an error) and then io.EOF, recording history.
type lines struct {
	items   []any // string or error
	history []string
}

func (l *lines) Prompt(string) (string, error) {
	if len(l.items) == 0 {
		return "", io.EOF
	}
	it := l.items[0]
	l.items = l.items[1:]
	if err, ok := it.(error); ok {
		return "", err
	}
	return it.(string), nil
}

func (l *lines) AppendHistory(s string) { l.history = append(l.history, s) }

// interruptingWriter sends an interrupt on sigs at the first write and
// waits until the running statement's context is cancelled, as a Ctrl-C
// while a statement prints.
type interruptingWriter struct {
	bytes.Buffer
	a    *app
	sigs chan os.Signal
	sig  os.Signal // os.Interrupt when nil
	sent bool
}

func (w *interruptingWriter) Write(p []byte) (int, error) {
	if !w.sent {
		w.sent = true
		w.sigs <- cmp.Or(w.sig, os.Signal(os.Interrupt))
		<-w.a.ctx.Done()
	}
	return w.Buffer.Write(p)
}

// shellApp opens the tie fixture as a shell would and returns its app.
func shellApp(t *testing.T, stdout io.Writer) *app {
	t.Helper()
	d, err := db.Open(tieFixture(t), &db.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &app{ctx: context.Background(), stdout: stdout, stderr: io.Discard, shellDB: d}
}

// Ensure that an interrupt while a statement runs cancels that statement
// only: the shell reports it and runs the next line; Ctrl-C at the prompt
// (ErrPromptAborted) drops the line and keeps the shell; EOF (Ctrl-D)
// leaves it.
func TestShellInterruptKeepsShell(t *testing.T) {
	sigs := make(chan os.Signal)
	w := &interruptingWriter{sigs: sigs}
	a := shellApp(t, w)
	w.a = a
	p := &lines{items: []any{
		"pairs --sort=false --output json",
		liner.ErrPromptAborted,
		"get g0-edit",
		"query --id g3-edit --output json",
	}}
	if err := a.repl(p, sigs); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	for _, want := range []string{
		"error: interrupted after 1 pairs\n",
		"id: g0-edit\ndoc number: 6\n", // 0-based: after g0-0 … g0-4
		// 67 characters: 63 5-shingles, and "!" adds one: J = 63/64.
		`{"id":"g3-0","jaccard":0.984375`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `"jaccard":1.0}`); n != 1 {
		t.Errorf("the interrupted pairs printed %d lines:\n%s", n, out)
	}
	if len(p.history) != 3 {
		t.Errorf("history %q", p.history)
	}
}

// Ensure that SIGTERM while a statement runs cancels it and ends the
// shell, with the signal in the error (exit 143), before the next line.
func TestShellTerminatedInStatement(t *testing.T) {
	sigs := make(chan os.Signal)
	w := &interruptingWriter{sigs: sigs, sig: syscall.SIGTERM}
	a := shellApp(t, w)
	w.a = a
	p := &lines{items: []any{"pairs --sort=false --output json", "get g0-edit"}}
	err := a.repl(p, sigs)
	var sc signalCause
	if !errors.Is(err, context.Canceled) || !errors.As(err, &sc) || sc.sig != syscall.SIGTERM {
		t.Fatalf("repl: %v, want context.Canceled by SIGTERM", err)
	}
	a.root = context.Background()
	if code := a.exitCode(err); code != 143 {
		t.Errorf("exit %d, want 143", code)
	}
	if out := w.String(); !strings.Contains(out, "interrupted after 1 pairs") || strings.Contains(out, "doc number") {
		t.Errorf("the statement was not cancelled, or the next line ran:\n%s", out)
	}
}

// Ensure that the interactive shell leaves once its output is gone (a
// closed pipe): it ran on unseen, writes too, holding the index, until
// exit (a review). The put after the failed write does not run.
func TestShellLeavesWhenOutputIsGone(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"a document of the index"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	d, err := db.Open(idx, &db.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	// A statement that prints, and one whose only output is its error
	// message (it was written after the check, unnoticed: a
	// maintainer's review).
	for _, first := range []string{"get a", "get nosuch"} {
		var errb bytes.Buffer
		a := &app{ctx: context.Background(), stderr: &errb, shellDB: d}
		a.out = &outWriter{w: &failingWriter{err: syscall.EPIPE}}
		a.stdout = a.out
		p := &lines{items: []any{first, "put blind written while the output is gone", "stats"}}
		err = a.repl(p, make(chan os.Signal))
		if !errors.Is(err, syscall.EPIPE) || !strings.Contains(errb.String(), "the shell's output is gone") {
			t.Fatalf("%s: repl: %v, stderr %q; want EPIPE, said", first, err, errb.String())
		}
		if len(p.items) != 2 {
			t.Errorf("%s: %d lines left unread, want 2 (the shell went on)", first, len(p.items))
		}
		if _, err := d.Get("blind"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s: the put after the output went: %v, want ErrNotFound", first, err)
		}
	}
	d.Close()
}

// Ensure that every exit word leaves the shell before the next line runs.
func TestShellExitWords(t *testing.T) {
	for _, word := range []string{"exit", "quit", ".quit", ".exit", `\q`} {
		var out bytes.Buffer
		a := shellApp(t, &out)
		if err := a.repl(&lines{items: []any{word, "stats"}}, make(chan os.Signal)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "documents") {
			t.Errorf("%s: the shell went on:\n%s", word, out.String())
		}
	}
}

// Ensure that a flag naming a file does nothing inside the shell: tune
// --plot creates no file and query --file reads none.
func TestShellWritesNoFile(t *testing.T) {
	dir := fixture(t)
	plot := filepath.Join(t.TempDir(), "curve.svg")
	_, errOut, code := runLine([]string{"shell", "--db", dir}, "tune --plot "+plot+"\nget --cpuprofile "+plot+" fox1\n")
	if code != 1 || !strings.Contains(errOut, "\nlshdb: --plot names a file") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if _, err := os.Stat(plot); !os.IsNotExist(err) {
		t.Fatalf("the shell wrote %s: %v", plot, err)
	}
}

// Ensure that the shell history is saved readable by its owner only, also
// over an older history file that others could read.
func TestSaveHistoryMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lshdb_history")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := saveHistory(path, []string{"put a secret text"}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v", st.Mode(), err)
		}
		os.Remove(path) // the second round creates it
	}
}

// Ensure that the history keeps lines of any length, and the lines of
// two shells open at once: liner's reader stopped at the first line over
// 4 KiB (a put of a long text), unsaid, and the shell wrote what it had
// read over the file, losing every line after it; and the last shell to
// leave wrote its own list over the other's lines (a review). The model:
// the lines saved, in order, the last historyLimit of them.
func TestHistoryKeepsLongLinesAndOtherShells(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".lshdb_history")
	long := "put big " + strings.Repeat("x", 25_000)
	var want []string
	save := func(lines ...string) {
		t.Helper()
		if err := saveHistory(path, lines); err != nil {
			t.Fatal(err)
		}
		want = append(want, lines...)
	}
	check := func() {
		t.Helper()
		got, err := readHistory(path)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[max(0, len(want)-historyLimit):]; !slices.Equal(got, w) {
			i := 0
			for i < min(len(got), len(w)) && got[i] == w[i] {
				i++
			}
			t.Fatalf("history of %d lines, want %d (the first %d alike)", len(got), len(w), i)
		}
	}
	save("info", long, "get big --output json", "stats")
	check()
	// Shell A and shell B open at once; A leaves first.
	save("get from-A")
	save("get from-B")
	check()
	// The oldest lines go past the limit.
	for i := range historyLimit {
		want = append(want, fmt.Sprint("get doc", i))
	}
	if err := saveHistory(path, want[len(want)-historyLimit:]); err != nil {
		t.Fatal(err)
	}
	check()
	// A line that is not UTF-8 (written by something else) is skipped.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("get \xff\xfe\n")
	f.Close()
	save("get last")
	check()
	// Saved through a link, the history stays a link.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := saveHistory(link, []string{"get via-link"}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "get via-link")
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link after a save: %v, %v", st.Mode(), err)
	}
	check()
}

// Ensure that the shell refuses a --db that does not exist instead of
// creating an empty index there (a mistyped path).
func TestShellNeedsAnIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "typo")
	_, errOut, code := runLine([]string{"shell", "--db", dir}, "stats\n")
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("shell on a missing index: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the shell created %s: %v", dir, err)
	}
}

// Ensure that the shell's put takes prose as typed (an apostrophe is not
// an unclosed quote, spaces and tabs are kept, trailing ones too in a script), refuses a flag instead of storing it as an id, and
// stores an id that starts with '-' after --: the oracle is get's text.
func TestShellPutProse(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx, "--store-text"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx},
		"put a1 don't stop me now\nput w1 col1    col2\tcol3   end\nput \"my id\" \"a quoted text\"\nput --ttl 1h t1  it's   spaced\nput o'brien don't stop\nput --threshold 0.5 hello world\nput -- -x dash id text\nput b1 trailing blanks  \t\r\n")
	if code != 1 || !strings.Contains(errOut, `put takes one flag, --ttl: "--threshold"`) {
		t.Fatalf("shell: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// NB: an id with a blank or a quote is confirmed quoted, as tables
	// show it ("stored my id" read as two words).
	if !strings.Contains(out, "stored \"my id\"\n") || !strings.Contains(out, "stored \"o'brien\"\n") {
		t.Fatalf("shell's confirmations: %q", out)
	}
	got := storedTexts(t, idx)
	// NB: the text as typed, runs of spaces and tabs kept (they were
	// joined by single spaces); one quoted string loses its quotes. An
	// apostrophe inside the id is itself: "o'brien don't" was the id
	// "obrien dont" with the text "stop".
	want := map[string]string{"a1": "don't stop me now", "w1": "col1    col2\tcol3   end", "my id": "a quoted text", "t1": "it's   spaced", "o'brien": "don't stop", "-x": "dash id text", "b1": "trailing blanks  \t"}
	if !maps.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	// A quote after = opens a flag's value; a quote inside a word is
	// itself, in get and delete too.
	out, errOut, code = runLine([]string{"shell", "--db", idx, "--output", "json"}, "get o'brien\nquery --text=\"don't stop me now\" --threshold 0.9\ndelete o'brien\n")
	if code != 0 || !strings.Contains(out, `"text":"don't stop"`) || !strings.Contains(out, `"id":"a1"`) {
		t.Fatalf("shell: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, ok := storedTexts(t, idx)["o'brien"]; ok {
		t.Fatal("delete o'brien left it stored")
	}
}

// Ensure that a put whose text is one double-quoted string with escapes
// stores the text they spell, as query --text reads the same string and
// as get prints it back (a review: "a\nb" kept its backslash, and a text
// with \" kept its quotes, so that neither was found by its own words),
// and that put answers in the shell's own output format, whatever the
// statement before it asked for (after "info --output json", put printed
// JSON). The oracles: get's text, and query by the same string.
func TestShellPutEscapes(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	said := `He said \"hello there my friend\" and then he left the room`
	lines := `first line\nsecond line of the text, long enough`
	script := "put p1 \"" + said + "\"\n" +
		"info --output json\n" +
		"put p2 \"" + lines + "\"\n" +
		"query --text \"" + said + "\" --output json\n" +
		"query --text \"" + lines + "\" --output json\n" +
		"put p3 'single \\n quoted'\n"
	out, errOut, code := runLine([]string{"shell", "--db", idx}, script)
	if code != 0 {
		t.Fatalf("shell: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	want := map[string]string{
		"p1": `He said "hello there my friend" and then he left the room`,
		"p2": "first line\nsecond line of the text, long enough",
		"p3": `single \n quoted`, // NB: single quotes keep a backslash
	}
	if got := storedTexts(t, idx); !maps.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if !strings.Contains(out, "stored p1\n") || !strings.Contains(out, "stored p2\n") || strings.Contains(out, `"stored"`) {
		t.Fatalf("put's answers after a statement with --output json: %s; want the shell's table format", out)
	}
	for _, id := range []string{"p1", "p2"} {
		if !strings.Contains(out, `"id":"`+id+`","jaccard":1`) {
			t.Fatalf("a query by the string %s was put with did not find it at Jaccard 1: %s", id, out)
		}
	}
}

// Ensure that the shell reads an index it cannot open for writing (on a
// read-only filesystem: a tmpfs remounted read-only, which needs root),
// as every read command does, says so, and refuses a put: it failed
// with an error that named Options.ReadOnly, a Go option (a review). The
// oracles: the document stored before the remount, read back, and the
// put's absence afterwards.
func TestShellOnAReadOnlyFilesystem(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	idx := filepath.Join(mnt, "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"shell", "--db", idx}, "put a1 a document stored before the filesystem went read-only\n"); code != 0 {
		t.Fatal(errOut)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "get a1\nput a2 a document the read-only index cannot take\n")
	if code != 1 || !strings.Contains(out, "a document stored before the filesystem went read-only") {
		t.Fatalf("shell on a read-only filesystem: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "lshdb: note: "+idx+" is on a read-only filesystem: the shell reads it, and put, delete and purge are refused\n") || !strings.Contains(errOut, "> put a2 a document the read-only index cannot take\nlshdb: database is open read-only") {
		t.Fatalf("stderr %s; want the note that the shell reads the index, and the put refused", errOut)
	}
	// NB: read by a read command (storedTexts opens it for writing).
	if out, errOut, code := runLine([]string{"info", "--db", idx, "--output", "json"}, ""); code != 0 || !strings.Contains(out, `"docs":1,`) {
		t.Fatalf("count after the refused put: exit %d, %q %s; want 1", code, out, errOut)
	}
}

// Ensure that a script's long statement is echoed on stderr cut, with its
// length (a 9 MB put was echoed whole into the job's log), and that the
// statement itself runs whole: the oracle is get's text.
func TestShellEchoCut(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	text := strings.Repeat("é long text ", 100_000)
	line := "put big " + text
	_, errOut, code := runLine([]string{"shell", "--db", idx}, line+"\nput small a short one\n")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut[:min(len(errOut), 300)])
	}
	cut := line[:maxEcho]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	want := "> " + strings.TrimRight(cut, " ") + fmt.Sprintf("… (%d bytes)\n> put small a short one\n", len(line))
	if errOut != want {
		t.Fatalf("stderr %q\nwant   %q", errOut[:min(len(errOut), 600)], want)
	}
	if got := storedTexts(t, idx); got["big"] != text || got["small"] != "a short one" {
		t.Fatalf("stored %d texts; big: %d bytes, want %d", len(got), len(got["big"]), len(text))
	}
}

// Ensure that a script line over the 64 MiB a statement may take stops
// the script with an error naming the line (it said "bufio.Scanner: token
// too long"), after the statements before it ran.
func TestShellScriptLineTooLong(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	script := "# a comment\nput a short text\nput b " + strings.Repeat("x", 65<<20) + "\nput c not run\n"
	_, errOut, code := runLine([]string{"shell", "--db", idx}, script)
	if code != 1 || !strings.Contains(errOut, "lshdb: line 3 of the script is over 64 MiB, the longest a statement may be: it and the lines after it did not run") {
		t.Fatalf("exit %d, stderr %q", code, errOut[:min(len(errOut), 300)])
	}
	if got := storedTexts(t, idx); !maps.Equal(got, map[string]string{"a": "short text"}) {
		t.Fatalf("stored %q", got)
	}
}

// Ensure that an id printed Go-quoted (it holds control characters or a
// bidirectional override) can be typed back in the shell as printed:
// query shows it, get finds it, delete removes it (it was not found, and
// such a document could not be reached from the shell). A single-quoted
// backslash is itself; a double-quoted word without one is as before.
func TestShellQuotedIDs(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	odd := "odd id/\\..\n\t\u202e\x00z"
	d, err := db.Open(idx, &db.Options{StoreText: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []db.Doc{
		{ID: odd, Text: "a document whose id is odd, with words enough to find"},
		{ID: `a\tb`, Text: "a document whose id has a backslash and a t"},
		{ID: "plain id", Text: "a document with a space in its id"},
	} {
		if err := d.Put(doc, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	shown := strconv.Quote(odd)
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "query --text \"a document whose id is odd, with words enough to find\"\nget "+shown+"\nget 'a\\tb'\nget \"plain id\"\ndelete "+shown+"\n")
	if code != 0 || !strings.Contains(out, shown) || strings.Count(out, "a document whose id is odd") < 1 ||
		!strings.Contains(out, "a backslash and a t") || !strings.Contains(out, "a space in its id") {
		t.Fatalf("shell: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	got := storedTexts(t, idx)
	if _, ok := got[odd]; ok || len(got) != 2 {
		t.Fatalf("after the shell's delete of %s: %q", shown, got)
	}
}

// Ensure that an ideographic space (U+3000) after a shell statement's
// command word separates it from the rest, as a Japanese input method
// leaves one (a multilingual user's S5: "get　商品-001" was an unknown
// command), while one inside an id stays part of it.
func TestShellIdeographicSpace(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	d, err := db.Open(idx, &db.Options{StoreText: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []db.Doc{
		{ID: "商品-001", Text: "最初の商品の説明文です。とても良い商品です。"},
		{ID: "商品\u3000002", Text: "二番目の商品の説明文です。色は青です。"},
	} {
		if err := d.Put(doc, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "get\u3000商品-001\n\u3000get\u3000\u3000\"商品\u3000002\"\ndelete\u3000商品-001\n")
	if code != 0 || !strings.Contains(out, "とても良い商品") || !strings.Contains(out, "色は青です") {
		t.Fatalf("shell: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := storedTexts(t, idx); len(got) != 1 || got["商品\u3000002"] == "" {
		t.Errorf("after delete\u3000商品-001: %q", got)
	}
	for in, want := range map[string]string{"get\u3000x": "get x", "  put\u3000\u3000a b": "put a b", "get a\u3000b": "get a\u3000b", "商品\u3000x": "商品\u3000x", "GET\u3000x": "GET\u3000x"} {
		if got := commandSpace(in); got != want {
			t.Errorf("commandSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

// Ensure that a byte that is not UTF-8 in a shell statement is kept, and
// the id refused as the command line refuses it: it became U+FFFD, and
// get, delete and put acted on the document "caf\ufffd".
func TestShellInvalidUTF8ID(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	d, err := db.Open(idx, &db.Options{StoreText: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Put(db.Doc{ID: "caf\ufffd", Text: "a document whose id really is caf and U+FFFD"}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	// NB: and a text that is not UTF-8, raw or spelled by escapes, which
	// put stored as given where insert refuses it (a bad-input review,
	// B6).
	for _, line := range []string{"get caf\xe9", "delete caf\xe9", "put caf\xe9 some latin-1 text here", "query --id caf\xe9", "get 'caf\xe9'",
		"put okid caf\xe9 latin-1 text", `put okid2 "\xff\xfe bad"`} {
		out, errOut, code := runLine([]string{"shell", "--db", idx}, line+"\n")
		if code != 1 || !strings.Contains(errOut, "not valid UTF-8") {
			t.Errorf("shell %q: exit %d\nstdout %s\nstderr %s", line, code, out, errOut)
		}
	}
	if got := storedTexts(t, idx); len(got) != 1 || got["caf\ufffd"] != "a document whose id really is caf and U+FFFD" {
		t.Fatalf("after the shell's statements: %q", got)
	}
}

// Ensure that the shell's --progress and --progress-every reach its
// statements (each statement's flags were reset to their defaults: bars
// were drawn under --progress none, and no line came every 1ms), and that
// a statement's own --progress wins.
func TestShellProgressFlags(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, c := range []struct {
		flags []string
		stmt  string
		lines bool
	}{
		{[]string{"--progress-every", "1ms"}, "check", true},
		{[]string{"--progress", "none", "--progress-every", "1ms"}, "check", false},
		{[]string{"--progress", "none"}, "check --progress log --progress-every 1ms", true},
		{[]string{"--progress-every", "1ms"}, "check --progress none", false},
	} {
		_, errOut, code := runLine(append([]string{"shell", "--db", idx}, c.flags...), c.stmt+"\n")
		if code != 0 {
			t.Fatalf("%v %q: exit %d: %s", c.flags, c.stmt, code, errOut)
		}
		if got := strings.Contains(errOut, "lshdb: check: 1/3"); got != c.lines {
			t.Errorf("shell %v, %q: progress lines %v, want %v:\n%s", c.flags, c.stmt, got, c.lines, errOut)
		}
	}
}

// A word with one leading dash is reported as the word typed, with the
// way to pass it: "get -x8" said "get takes no --x8", a flag never typed.
func TestShellDashWordHint(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	// NB: "-=x" panicked (a slice of the empty flag name). An lshdb
	// command the shell does not run is named as one ("build" said
	// "unknown command").
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "get -x8\nget --x8\nget -=x\nget -=\nquery --thresold 0.5\nbuild docs.jsonl\nhelp report\n")
	if code != 1 || !strings.Contains(errOut, "get -x8: a word that starts with - is read as a flag; put arguments after -- (get -- -x8)") ||
		!strings.Contains(errOut, "get takes no --x8 in the shell (type help get; an id that starts with - goes after --: get -- --x8)") || !strings.Contains(errOut, "get -=x: a word that starts with -") ||
		!strings.Contains(errOut, "get -=: a word that starts with -") || !strings.Contains(errOut, "query takes no --thresold in the shell, did you mean --threshold? (type help query)\n") ||
		!strings.Contains(errOut, "build is an lshdb command that the shell does not run: run it as lshdb build, from another terminal or after leaving the shell") ||
		// help of such a command names it so too (it said no command
		// "report": an inspection review's SH-8).
		!strings.Contains(errOut, "report is an lshdb command that the shell does not run: lshdb help report") ||
		!strings.Contains(errOut, "7 shell commands failed") {
		t.Fatalf("shell: exit %d\n%s%s", code, out, errOut)
	}
}

// query --with-text names no file: the shell takes it (it said "query
// takes no --with-text in the shell").
func TestShellQueryWithText(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	want, _, _ := runLine([]string{"query", "--db", idx, "--id", "fox1", "--with-text", "--threshold", "0.3"}, "")
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "query --id fox1 --with-text --threshold 0.3\n")
	if code != 0 || !strings.Contains(out, "TEXT") || !strings.Contains(out, strings.TrimSpace(strings.Split(want, "\n")[1])) {
		t.Fatalf("shell query --with-text: exit %d\n%s%s\nwant as the command: %s", code, out, errOut, want)
	}
}

// check --repair in the shell says how to run it (it said only "check
// takes no --repair in the shell", and the damaged-index hints name it).
func TestShellCheckRepairHint(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "check --repair\n")
	if code != 1 || !strings.Contains(errOut, "run lshdb check --db DIR --repair") {
		t.Fatalf("shell check --repair: exit %d\n%s%s", code, out, errOut)
	}
}

// Ensure that the shell splits words as its help says: a quote opens a
// span where a word starts, after = and anywhere in a word that had one;
// inside a word that starts plain it is itself; a double-quoted Go string
// with escapes (a whole word or a flag's value) is what it spells. The
// oracle: each line's words worked out by hand.
func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`get o'brien`, []string{"get", "o'brien"}},
		{`put o'brien don't stop`, []string{"put", "o'brien", "don't", "stop"}},
		{`get "my id" 'sing le'`, []string{"get", "my id", "sing le"}},
		{`query --text="two words" --threshold=0.5`, []string{"query", "--text=two words", "--threshold=0.5"}},
		{`query --text='a "quoted" word'`, []string{"query", `--text=a "quoted" word`}},
		{`'a'"b"`, []string{"ab"}},
		{`'a'b'c d'`, []string{"abc d"}},
		{`'a'"b\tc"`, []string{`ab\tc`}}, // escapes only in a whole word or after =
		{`get "odd\tid\x00"`, []string{"get", "odd\tid\x00"}},
		{`query --id="odd\tid" --top 3`, []string{"query", "--id=odd\tid", "--top", "3"}},
		{`get 'a\tb'`, []string{"get", `a\tb`}},
		{"get\tx  y ", []string{"get", "x", "y"}},
	} {
		got, err := splitWords(c.line)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%s) = %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	for _, line := range []string{`get "open`, `'a'b'c`, `query --text='x`} {
		if got, err := splitWords(line); err == nil {
			t.Errorf("splitWords(%s) = %q, want an unterminated quote", line, got)
		}
	}
}

// Ensure that a signal ends a script waiting for its next line (a pipe
// kept open): no line read after it runs, and the exit status names the
// signal, also when the input ends right after it. The script ignored the
// signal in its read, holding the index, ran the next line (a put), and
// exited 0 when the input then ended (a review's S1).
func TestShellScriptSignalWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
		then string // the input after the signal: a line, or none ("")
	}{
		{"term, then a line", syscall.SIGTERM, 143, "put late a line written after the signal\n"},
		{"hup, then the end", syscall.SIGHUP, 129, ""},
		{"int, then a line", syscall.SIGINT, 130, "put late a line written after the signal\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			a := shellApp(t, &out)
			ctx, cancel := context.WithCancelCause(context.Background())
			a.ctx, a.root = ctx, ctx
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- a.script(pr) }()
			io.WriteString(pw, "put early the line before the signal\n")
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "stored early"); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the first line did not run: %q", out.String())
				}
			}
			cancel(signalCause{tc.sig})
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the script did not end at the signal: it waits for its next line")
			}
			if tc.then != "" {
				go io.WriteString(pw, tc.then)
			}
			pw.Close()
			if code := a.exitCode(err); code != tc.code || !strings.Contains(err.Error(), signalCause{tc.sig}.Error()) {
				t.Errorf("exit %d (%v), want %d naming the signal", code, err, tc.code)
			}
			time.Sleep(50 * time.Millisecond)
			if _, err := a.shellDB.Get("late"); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("a line after the signal ran: Get: %v", err)
			}
		})
	}
}

// Ensure that a shell started with --output json writes JSON lines only,
// put's confirmation too: it was a line of text in the stream ("stored
// d4"), and jq failed on it (a review).
func TestShellJSONPut(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"a document of the index"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx, "--output", "json"}, "put d4 a text put in the shell\nget d4\ndelete d4\n")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q (%v)", l, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 || got[0]["stored"] != "d4" || got[1]["text"] != "a text put in the shell" || got[2]["deleted"] != "d4" {
		t.Errorf("lines %v", got)
	}
}

// TestShellSpecsCoverFlags: every flag of a shell command's own command
// is either taken by the shell (its shellSpec) or named in shellNotTaken
// with why, and every flag a spec lists exists. NB: explain gained
// --threshold and pairs and clusters --header while the shell went on
// refusing them ("explain takes no --threshold in the shell").
func TestShellSpecsCoverFlags(t *testing.T) {
	a := &app{ctx: context.Background()}
	root := a.rootCmd()
	for name, spec := range shellSpecs {
		if name == "put" || name == "delete" {
			continue // NB: the shell's own forms, not the commands'
		}
		sub, _, err := root.Find([]string{name})
		if err != nil || sub == root {
			t.Fatalf("shell command %s: no such command", name)
		}
		for _, f := range spec.flags {
			if sub.Flags().Lookup(f) == nil {
				t.Errorf("shell %s lists --%s, which %s does not have", name, f, name)
			}
		}
		sub.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch {
			case f.Name == "help" || slices.Contains(shellCommonFlags, f.Name):
			case slices.Contains(spec.flags, f.Name):
			case shellNotTaken[f.Name] != "" || shellNotTaken[name+" --"+f.Name] != "":
			default:
				t.Errorf("%s --%s: neither taken by the shell (shellSpecs) nor said not to be (shellNotTaken)", name, f.Name)
			}
		})
	}
}

// TestShellExplainThreshold: explain --threshold in the shell says what
// the command says.
func TestShellExplainThreshold(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, th := range []string{"0.3", "0.95"} {
		want, errOut, code := runLine([]string{"explain", "--db", idx, "--threshold", th, "fox1", "fox2"}, "")
		if code != 0 {
			t.Fatalf("explain: exit %d: %s", code, errOut)
		}
		out, errOut, code := runLine([]string{"shell", "--db", idx}, "explain fox1 fox2 --threshold "+th+"\n")
		if code != 0 || out != want {
			t.Fatalf("shell explain --threshold %s: exit %d\n%s%s\nwant as the command:\n%s", th, code, out, errOut, want)
		}
	}
}

// TestShellComplete: tab completion of commands and of each command's
// flags, the cursor anywhere on the line.
func TestShellComplete(t *testing.T) {
	for _, c := range []struct {
		line       string
		pos        int // -1: the end
		head, tail string
		want       []string
	}{
		{"", -1, "", "", shellCommands},
		{"ex", -1, "", "", []string{"explain", "exit"}},
		{"Q", -1, "", "", []string{"query", "quit"}},
		{"help cl", -1, "help ", "", []string{"clusters "}}, // NB: a unique completion ends with a space (SH3)
		{"query --th", -1, "query ", "", []string{"--threshold "}},
		{"query --id a --w", -1, "query --id a ", "", []string{"--with-text "}},
		{"explain a b --", -1, "explain a b ", "", []string{"--threshold", "--output", "--progress", "--progress-every", "--help"}},
		{"pairs --s --threshold 0.5", len("pairs --s"), "pairs ", " --threshold 0.5", []string{"--stats", "--sort"}},
		{"put --t", -1, "put ", "", []string{"--ttl "}},
		{"query --text é --hea", -1, "query --text é ", "", []string{"--header "}},                                                              // NB: pos counts code points
		{"query --text 東京 --w --top 3", utf8.RuneCountInString("query --text 東京 --w"), "query --text 東京 ", " --top 3", []string{"--with-text"}}, // NB: a space follows already,
		{"get fo", -1, "get ", "", nil},        // NB: ids are not completed
		{"nosuch --t", -1, "nosuch ", "", nil}, // an unknown command has no flags
		{"info --x", -1, "info ", "", nil},
	} {
		pos := c.pos
		if pos < 0 {
			pos = utf8.RuneCountInString(c.line) // NB: liner's pos counts code points
		}
		head, got, tail := shellComplete(c.line, pos)
		if head != c.head || tail != c.tail || !slices.Equal(got, c.want) {
			t.Errorf("shellComplete(%q, %d) = %q, %q, %q; want %q, %q, %q", c.line, pos, head, got, tail, c.head, c.want, c.tail)
		}
	}
}

// TestShellDidYouMean: a typing slip in a command or flag name gets the
// nearest names (at most two edits, or a prefix); other words none.
func TestShellDidYouMean(t *testing.T) {
	for _, c := range []struct{ typed, want string }{
		{"explan", ", did you mean explain?"},
		{"sats", ", did you mean stats?"},
		{"bukets", ", did you mean buckets?"},
		{"clust", ", did you mean clusters?"},
		{"x", ""},
		{"zzzzzz", ""},
		{"quiet", ", did you mean quit?"},
	} {
		if got := didYouMean(c.typed, shellCommands, ""); got != c.want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
	if got := didYouMean("thresold", []string{"threshold", "top", "text"}, "--"); got != ", did you mean --threshold?" {
		t.Errorf("a flag: %q", got)
	}
	// Distances counted by hand.
	for _, c := range []struct {
		a, b string
		want int
	}{{"kitten", "sitting", 3}, {"", "abc", 3}, {"flaw", "lawn", 2}, {"same", "same", 0}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := runLine([]string{"shell", "--db", idx}, "sats\nquery --id a --thresold 0.5\n")
	if code != 1 || !strings.Contains(errOut, `unknown command "sats", did you mean stats? (type help)`) ||
		!strings.Contains(errOut, "query takes no --thresold in the shell, did you mean --threshold? (type help query)") {
		t.Fatalf("shell: exit %d\n%s", code, errOut)
	}
}

// TestShellHelpListsEveryCommand: help's command list names every shell
// command once, with its spec's usage (the list had drifted from them:
// a maintainer review's K6).
func TestShellHelpListsEveryCommand(t *testing.T) {
	var listed []string
	for _, row := range shellHelpRows {
		listed = append(listed, row...)
	}
	slices.Sort(listed)
	if want := slices.Sorted(maps.Keys(shellSpecs)); !slices.Equal(listed, want) {
		t.Errorf("help lists %q, the shell has %q", listed, want)
	}
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "create", "--db", idx)
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "help\n")
	if code != 0 {
		t.Fatalf("help: exit %d: %s", code, errOut)
	}
	for name, spec := range shellSpecs {
		if !strings.Contains(out, spec.usage) {
			t.Errorf("help does not list %s as %q:\n%s", name, spec.usage, out)
		}
	}
}

// Ensure that the shell's and the command's hints for a word that starts
// with - fit the statement (an analyst's review of the shell, SH4): a
// flag that is none of explain's, after its two ids, gets no "an id goes
// after --" (the ids are there), but one before the second id does; a
// negative bucket is said to be no bucket, not to go after --; and
// flags after -- are said to be arguments.
func TestShellDashHints(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"one document"}`+"\n"+`{"id":"b","text":"another document"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	for _, c := range []struct {
		stmt, want, not string
	}{
		{"explain a b --estimate-only", "explain takes no --estimate-only in the shell", "goes after --"},
		{"explain a --estimate-only", "an id that starts with - goes after --: explain -- --estimate-only", ""},
		{"get --dash", "an id that starts with - goes after --: get -- --dash", ""},
		{"bucket 0 -1", "neither starts with -", "bucket -- -1"},
		{"get -- --dash --output json", "every word after -- is an argument, a flag too: put the flags before --", ""},
	} {
		_, errOut, code := runLine([]string{"shell", "--db", idx}, c.stmt+"\n")
		if code != 1 || !strings.Contains(errOut, c.want) || c.not != "" && strings.Contains(errOut, c.not) {
			t.Errorf("%s: exit %d %q; want %q", c.stmt, code, errOut, c.want)
		}
	}
	// The command says the same.
	if _, errOut, code := runLine([]string{"bucket", "--db", idx, "0", "-1"}, ""); code != 2 || !strings.Contains(errOut, "neither starts with -") {
		t.Errorf("lshdb bucket 0 -1: exit %d %q", code, errOut)
	}
	if _, errOut, code := runLine([]string{"get", "--db", idx, "--", "a", "--output", "json"}, ""); code != 2 || !strings.Contains(errOut, "put the flags before --") {
		t.Errorf("lshdb get -- a --output json: exit %d %q", code, errOut)
	}
	// Words after -- that are no flag of get are ids (R10): not stored.
	if _, errOut, code := runLine([]string{"get", "--db", idx, "--", "-a", "-b"}, ""); code != 3 || strings.Contains(errOut, "flags before --") {
		t.Errorf("lshdb get -- -a -b: exit %d %q", code, errOut)
	}
	// A mistyped flag gets the nearest, as in the shell (SH7); a word
	// near none gets none.
	for _, c := range []struct{ flag, want string }{{"--idd", ", did you mean --id?"}, {"--treshold", ", did you mean --threshold?"}, {"--zzzzzz", ""}} {
		_, errOut, code := runLine([]string{"query", "--db", idx, c.flag, "a"}, "")
		if code != 2 || !strings.Contains(errOut, "unknown flag: "+c.flag+c.want) || c.want == "" && strings.Contains(errOut, "did you mean") {
			t.Errorf("lshdb query %s: exit %d %q", c.flag, code, errOut)
		}
	}
}

// Ensure that a scripted shell under --quiet, which drops the echo of
// each statement, names the line of a failed statement in its error
// (an analyst's review of the shell, SH5): the oracle is the script's
// own line numbers, a comment and a blank line counted.
func TestShellQuietNamesTheLine(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"one document"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := runLine([]string{"shell", "--db", idx, "--quiet"}, "get a\n# a comment\n\nget nope\n")
	if code != 1 || !strings.Contains(errOut, "lshdb: line 4: document not found") || strings.Contains(errOut, "> get") {
		t.Errorf("exit %d: %q", code, errOut)
	}
	_, errOut, _ = runLine([]string{"shell", "--db", idx}, "get nope\n")
	if !strings.Contains(errOut, "> get nope\nlshdb: document not found") {
		t.Errorf("without --quiet: %q", errOut)
	}
}
