package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY returns a pseudo-terminal's controller and terminal ends, or
// skips the test where there is none.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("unlocking the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("naming the pseudo-terminal: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ctl, tty
}

// shellOnTerminal starts lshdb shell on idx in another process whose
// terminal is tty (its home dir), and returns it and what the terminal
// shows (read from ctl).
func shellOnTerminal(t *testing.T, ctl, tty *os.File, dir, idx string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	return shellOnTerminalTo(t, ctl, tty, tty, dir, idx)
}

// shellOnTerminalTo is shellOnTerminal with the shell's stdout out (a
// file, a pipe) instead of the terminal.
func shellOnTerminalTo(t *testing.T, ctl, tty, out *os.File, dir, idx string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	shown := &syncBuffer{}
	go io.Copy(shown, ctl)
	c := lshdbProcess("shell", "--db", idx)
	c.Env = append(c.Env, "TERM=xterm", "HOME="+dir)
	c.Stdin, c.Stdout, c.Stderr = tty, out, tty
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, shown
}

// Ensure that insert, build and dedup reading stdin from a terminal say
// so on stderr (C20), with the format, and that the documents typed (up
// to Ctrl-D) are read; with a file as input, or stdin not a terminal,
// nothing is said.
func TestStdinTerminalNote(t *testing.T) {
	file := filepath.Join(t.TempDir(), "docs.jsonl")
	os.WriteFile(file, []byte(`{"id":"f","text":"from a file, not the terminal"}`+"\n"), 0o644)
	for i, c := range []struct {
		args    []string
		typed   string
		note    string
		summary string // a prefix of stdout
	}{
		{[]string{"insert"}, `{"id":"a","text":"typed at a terminal"}` + "\n", "reading JSON Lines from stdin (Ctrl-D to end)\n", "inserted 1 document"},
		{[]string{"build", "-"}, `{"id":"a","text":"typed at a terminal"}` + "\n", "reading JSON Lines from stdin (Ctrl-D to end)\n", "inserted 1 document"},
		{[]string{"insert", "--format", "csv"}, "id,text\nb,typed as csv\n", "reading CSV from stdin (Ctrl-D to end)\n", "inserted 1 document"},
		{[]string{"insert", file}, "", "", "inserted 1 document"},
	} {
		ctl, tty := openPTY(t)
		if _, err := ctl.Write([]byte(c.typed + "\x04")); err != nil { // Ctrl-D ends the input
			t.Fatal(err)
		}
		var out, errb strings.Builder
		args := append([]string{c.args[0], "--db", filepath.Join(t.TempDir(), fmt.Sprint("index", i))}, c.args[1:]...)
		code := run(context.Background(), args, tty, &out, &errb)
		if code != 0 || errb.String() != c.note || !strings.HasPrefix(out.String(), c.summary) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (want %q)", c.args, code, out.String(), errb.String(), c.note)
		}
	}
	// dedup: the note, then its summary.
	ctl, tty := openPTY(t)
	ctl.Write([]byte(`{"id":"a","text":"typed at a terminal"}` + "\n\x04"))
	var out, errb strings.Builder
	code := run(context.Background(), []string{"dedup", "--db", filepath.Join(t.TempDir(), "dedup")}, tty, &out, &errb)
	if want := "reading JSON Lines from stdin (Ctrl-D to end)\n1 inserted, 0 duplicates of documents stored before them (in the index, or earlier in the input)\n"; code != 0 || errb.String() != want {
		t.Errorf("dedup: exit %d, stderr %q, want %q", code, errb.String(), want)
	}
}

// Ensure that insert and build from files, on a terminal, draw a bar in
// bytes of the input files with a percentage (C19): the total is known
// before reading; from stdin there is no total.
func TestProgressPercentOnTerminal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "docs.jsonl")
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, "{\"id\":\"d%d\",\"text\":\"document %d says something about %d things\"}\n", i, i, i%37)
	}
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range []string{"insert", "build"} {
		ctl, tty := openPTY(t)
		drawn := drain(ctl)
		var out strings.Builder
		code := run(context.Background(), []string{cmd, "--db", filepath.Join(t.TempDir(), fmt.Sprint("index", i)), file}, strings.NewReader(""), &out, tty)
		tty.Close()
		got := drainedTerminal(ctl, drawn)
		if code != 0 || !regexp.MustCompile(cmd+` +[0-9]+% \|`).MatchString(got) {
			t.Errorf("%s of a file on a terminal: exit %d, the terminal got %q", cmd, code, got)
		}
	}
}

// Ensure that pairs, clusters, check and stats draw a bar per phase on a
// terminal's stderr (the phase, its place among the phases, a
// percentage), and that what they print on stdout is what they print
// without a terminal (the bar never reaches stdout); and that the bar is
// not drawn when stderr is not a terminal (the datadriven scripts'
// byte-identical outputs cover that).
func TestPhaseBarsOnTerminal(t *testing.T) {
	dir := t.TempDir()
	file := barDocs(t, dir, 1000)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, file}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, c := range []struct {
		args  []string
		phase string
	}{
		{[]string{"pairs"}, `pairs 4/4: verifying candidate pairs +[0-9]+% \|`},
		{[]string{"clusters"}, `clusters 1/5: reading documents +[0-9]+% \|.*clusters 5/5: making clusters +[0-9]+% \|`}, // NB: its total comes as it starts
		{[]string{"check"}, `check 3/3: checking posting lists \(64ths of bands\) +[0-9]+% \|`},
		{[]string{"stats"}, `stats 1/5: reading posting lists \(64ths of bands\) +[0-9]+% \|`},
	} {
		ctl, tty := openPTY(t)
		drawn := drain(ctl)
		args := append([]string{c.args[0], "--db", idx}, c.args[1:]...)
		var out strings.Builder
		code := run(context.Background(), args, strings.NewReader(""), &out, tty)
		tty.Close()
		got := drainedTerminal(ctl, drawn)
		want, _, wantCode := runLine(args, "")
		if code != wantCode || out.String() != want || !regexp.MustCompile(c.phase).MatchString(got) {
			t.Errorf("%s on a terminal: exit %d (want %d), stdout equal %v, the terminal got %q", c.args[0], code, wantCode, out.String() == want, got)
		}
	}
}

// drainedTerminal waits for drain's read to fail, once the terminal end
// is closed and everything it showed was read; it closes ctl if that
// takes 10 s. NB: closing ctl right after the terminal end (as the tests
// did) lost what drain had not read yet: under load, the end of a
// command's bars and its summary (a CI run lost clusters' last phase).
func drainedTerminal(ctl *os.File, drawn <-chan string) string {
	select {
	case got := <-drawn:
		return got
	case <-time.After(10 * time.Second):
		ctl.Close()
		return <-drawn
	}
}

// drain reads everything the terminal shows, until ctl is closed (or the
// terminal end is, and what it showed is read), and sends it on the
// channel.
func drain(ctl *os.File) <-chan string {
	drawn := make(chan string, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				drawn <- string(all)
				return
			}
		}
	}()
	return drawn
}

// Ensure that the bars drawn on a narrow terminal stay within its width
// (the oracle: the terminal's own size, set with TIOCSWINSZ, against
// every segment drawn between two \r or \n): 40-cell bars made lines of
// 94 to 120 columns on an 80-column terminal, which wrapped, leaving
// fragments of each redraw behind.
func TestBarsFitTheTerminal(t *testing.T) {
	dir := t.TempDir()
	file := barDocs(t, dir, 3000)
	idx := filepath.Join(dir, "idx")
	// NB: on 40 columns the figures lose the time; on 30 no bar fits,
	// and none is drawn.
	for _, cols := range []uint16{30, 40, 60, 80} {
		for _, args := range [][]string{{"build", "--db", idx, file}, {"pairs", "--db", idx}, {"clusters", "--db", idx}} {
			ctl, tty := openPTY(t)
			ws := struct{ row, col, x, y uint16 }{24, cols, 0, 0}
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
				t.Skipf("sizing the pseudo-terminal: %v", e)
			}
			drawn := drain(ctl)
			var out strings.Builder
			code := run(context.Background(), args, strings.NewReader(""), &out, tty)
			tty.Close()
			got := drainedTerminal(ctl, drawn)
			if code != 0 || cols > 30 && !strings.Contains(got, "%") {
				t.Fatalf("%s on a terminal: exit %d, drew %q", args[0], code, got)
			}
			for _, seg := range strings.FieldsFunc(got, func(r rune) bool { return r == '\r' || r == '\n' }) {
				if n := len([]rune(seg)); n > int(cols) && (strings.Contains(seg, "%") || cols <= 30 && strings.Contains(seg, "|")) {
					t.Errorf("%s on a %d-column terminal drew %d columns: %q", args[0], cols, n, seg)
				}
			}
		}
	}
}

// Ensure that SIGTERM ends an interactive shell (liner on a terminal,
// another process) with exit 143, its owner's socket removed: at the
// prompt, with no key pressed, and after an interrupt signal the shell
// absorbed (main's one-shot handler then gone), which says nothing of
// stopping, since nothing stops. Before, the shell took
// every signal for an interrupt and went on, and the second killed the
// process unclosed.
func TestShellTerminated(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, first := range []os.Signal{nil, syscall.SIGINT} {
		ctl, tty := openPTY(t)
		c, shown := shellOnTerminal(t, ctl, tty, dir, idx)
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		prompts := func(n int) {
			t.Helper()
			for deadline := time.Now().Add(30 * time.Second); strings.Count(shown.String(), "lshdb> ") < n; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					c.Process.Kill()
					t.Fatalf("no prompt: %q", shown)
				}
			}
		}
		prompts(1)
		if first != nil {
			c.Process.Signal(first)
			time.Sleep(300 * time.Millisecond)
			select {
			case err := <-exited:
				t.Fatalf("an interrupt at the prompt ended the shell: %v: %q", err, shown)
			default:
			}
			sent := time.Now()
			// The shell still runs statements.
			io.WriteString(ctl, "info\r")
			prompts(2)
			// NB: main's handler said "still stopping after 5s …: a
			// second Ctrl-C kills the process" over the prompt, 5 s after
			// an interrupt the shell had absorbed: nothing was stopping,
			// and a second Ctrl-C killed nothing.
			time.Sleep(time.Until(sent.Add(stopNoteAfter + time.Second)))
			if strings.Contains(shown.String(), "still stopping") {
				t.Errorf("after an interrupt the shell absorbed: %q", shown)
			}
		}
		c.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 143 {
				t.Errorf("after %v, SIGTERM: %v (want exit 143): %q", first, err, shown)
			}
		case <-time.After(20 * time.Second):
			c.Process.Kill()
			t.Fatalf("after %v, SIGTERM did not end the shell: %q", first, shown)
		}
		if _, err := os.Stat(filepath.Join(idx, "lshdb.sock")); !os.IsNotExist(err) {
			t.Errorf("after %v: the socket is left: %v", first, err)
		}
		// NB: what the shell wrote last may still be on its way from the
		// terminal to shown when the process has ended.
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(shown.String(), "interrupted by SIGTERM"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("after %v: the shell does not say why it ended: %q", first, shown)
				break
			}
		}
	}
}

// Ensure that the interactive shell says so when its terminal reports no
// width, in which the line editor reads plain lines and Tab completes
// nothing (a newcomer's review, W11: a tab went in silently), and that
// with a width Tab completes. The oracle: what "inf" and a Tab run, info
// or an unknown command.
func TestShellTerminalWithoutWidth(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for _, cols := range []uint16{0, 120} {
		ctl, tty := openPTY(t)
		ws := struct{ rows, cols, x, y uint16 }{40, cols, 0, 0}
		if cols == 0 {
			ws.rows = 0
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
			t.Skipf("setting the terminal's size: %v", e)
		}
		c, shown := shellOnTerminal(t, ctl, tty, dir, idx)
		waitFor := func(s string) {
			t.Helper()
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(shown.String(), s); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					c.Process.Kill()
					t.Fatalf("%d columns: no %q in %q", cols, s, shown)
				}
			}
		}
		waitFor("lshdb> ")
		io.WriteString(ctl, "inf\t\r")
		if cols == 0 {
			waitFor(`unknown command "inf`)
		} else {
			waitFor("documents: 0")
		}
		if noted := strings.Contains(shown.String(), "the terminal reports no width"); noted != (cols == 0) {
			t.Errorf("%d columns: the note said %v: %q", cols, noted, shown)
		}
		io.WriteString(ctl, "exit\r")
		if err := c.Wait(); err != nil {
			t.Errorf("%d columns: exit: %v: %q", cols, err, shown)
		}
	}
}

// Ensure that pairs --output csv and tsv escape the ids' escape sequences
// on a terminal, as a table does (written raw, an id could clear the
// screen or retitle the window: a multilingual user's U2), and keep the
// ids' bytes into a pipe or a file (RFC 4180). The oracle: the bytes the
// terminal got, and the raw ids read back from the piped CSV.
func TestDelimitedPairsOnTerminal(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	title, clear := "esc\x1b]0;pwned-title\a", "clr\x1b[2J\x1b[31mRED"
	docs := fmt.Sprintf("{\"id\":%q,\"text\":\"the quick brown fox jumps over the lazy dog again\"}\n{\"id\":%q,\"text\":\"the quick brown fox jumps over the lazy dog again!\"}\n", title, clear)
	docs = strings.ReplaceAll(strings.ReplaceAll(docs, `\x1b`, `\u001b`), `\a`, `\u0007`)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, docs); code != 0 {
		t.Fatal(errOut)
	}
	for _, format := range []string{"csv", "tsv"} {
		ctl, tty := openPTY(t)
		drawn := drain(ctl)
		var errOut strings.Builder
		code := run(context.Background(), []string{"pairs", "--db", idx, "--output", format}, strings.NewReader(""), tty, &errOut)
		tty.Close()
		got := drainedTerminal(ctl, drawn)
		if code != 0 || strings.ContainsAny(got, "\x1b\a") || !strings.Contains(got, `clr\x1b[2J\x1b[31mRED`) || !strings.Contains(got, `esc\x1b]0;pwned-title\a`) {
			t.Errorf("pairs --output %s on a terminal: exit %d %q, the terminal got %q", format, code, errOut.String(), got)
		}
		out, errS, code := runLine([]string{"pairs", "--db", idx, "--output", format}, "")
		rows, err := csv.NewReader(strings.NewReader(strings.ReplaceAll(out, "\t", ","))).ReadAll()
		if code != 0 || err != nil || len(rows) != 2 || !slices.Contains(rows[1], title) || !slices.Contains(rows[1], clear) {
			t.Errorf("pairs --output %s into a pipe: exit %d %q %v, rows %q", format, code, errS, err, rows)
		}
	}
}

// Ensure that an interactive shell whose output is not the terminal (a
// file) shows its prompt, banner and errors on the terminal (stderr) and
// writes only the statements' output to the file, with a note of what is
// off (an analyst's review of the shell, SH1: they went into the file,
// and the terminal showed nothing); and that on a terminal with a width
// a unique Tab completion ends with a space (SH3: qu<Tab>--id gave
// query--id). The oracles: the file's bytes, and the statement run.
func TestShellOutputNotTheTerminal(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"the one document of the index"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	ctl, tty := openPTY(t)
	setTermSize(t, tty, 40, 120)
	outPath := filepath.Join(dir, "out.txt")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	c, shown := shellOnTerminalTo(t, ctl, tty, out, dir, idx)
	waitShown(t, c, shown, "lshdb> ")
	io.WriteString(ctl, "get nope\r")
	waitShown(t, c, shown, `error: document not found: "nope"`)
	io.WriteString(ctl, "get a\r")
	io.WriteString(ctl, "exit\r")
	if err := c.Wait(); err != nil {
		t.Fatalf("exit: %v: %q", err, shown)
	}
	b, _ := os.ReadFile(outPath)
	if !strings.Contains(string(b), "id: a\n") || strings.Contains(string(b), "lshdb") || strings.Contains(string(b), "error") {
		t.Errorf("the output file holds %q: want get a's answer alone", b)
	}
	if s := shown.String(); !strings.Contains(s, "lshdb shell on") || !strings.Contains(s, "the shell's output is not the terminal") || strings.Contains(s, "id: a") {
		t.Errorf("the terminal showed %q: want the banner, the note and no answer", s)
	}

	// A unique completion ends with a space.
	ctl, tty = openPTY(t)
	setTermSize(t, tty, 40, 120)
	c, shown = shellOnTerminal(t, ctl, tty, dir, idx)
	waitShown(t, c, shown, "lshdb> ")
	io.WriteString(ctl, "que\t--id a\r")
	waitShown(t, c, shown, "matches at Jaccard") // NB: query --id a ran (an error, query--id, never shows it)
	if s := shown.String(); strings.Contains(s, "error:") {
		t.Errorf("que<Tab>--id a: %q", s)
	}
	io.WriteString(ctl, "exit\r")
	if err := c.Wait(); err != nil {
		t.Errorf("exit: %v: %q", err, shown)
	}
}

// Ensure that an interactive shell whose output is a pipe that its
// reader closed leaves before the next statement runs, a put included:
// with the errors on the terminal, nothing failed to write before it (a
// read-through's R9). The oracle: the document the put would store.
func TestShellLeavesWhenItsPipeIsClosed(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"a","text":"the one document of the index"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	ctl, tty := openPTY(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, shown := shellOnTerminalTo(t, ctl, tty, pw, dir, idx)
	pw.Close()
	waitShown(t, c, shown, "lshdb> ")
	pr.Close() // the reader goes
	io.WriteString(ctl, "put blind written while the output is gone\r")
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 141 || !strings.Contains(shown.String(), "the shell's output is gone") {
			t.Errorf("exit %v: %q", err, shown)
		}
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		t.Fatalf("the shell did not leave: %q", shown)
	}
	if _, errOut, code := runLine([]string{"get", "--db", idx, "blind"}, ""); code != 3 {
		t.Errorf("the put ran: get blind: exit %d %s", code, errOut)
	}
}

// setTermSize gives the terminal tty rows and cols, or skips the test.
func setTermSize(t *testing.T, tty *os.File, rows, cols uint16) {
	t.Helper()
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Skipf("setting the terminal's size: %v", e)
	}
}

// waitShown waits up to 30 s for the terminal to show s, and kills the
// shell c and fails the test if it does not.
func waitShown(t *testing.T, c *exec.Cmd, shown *syncBuffer, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(shown.String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.Process.Kill()
			t.Fatalf("no %q on the terminal: %q", s, shown)
		}
	}
}

// Ensure that a line typed while a statement runs is read as the next
// statement, on a terminal that reports no width as on one that does.
// The shell read plain lines on a width of 0 columns, but its line
// editor put the terminal in raw mode between prompts: exit typed ahead
// ended in a carriage return the terminal no longer turned into a
// newline, and the shell waited for one (it hung a CI run). The
// statement here is held running: its output, get's 512 KiB text, goes
// to a second terminal the test reads only after typing exit. The
// oracle: the shell ends, exit 0, having written the whole text.
func TestShellTypedAhead(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	text := strings.Repeat("typed ahead ", 512<<10/12)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, `{"id":"big","text":"`+text+`"}`+"\n"); code != 0 {
		t.Fatal(errOut)
	}
	for _, cols := range []uint16{0, 120} {
		ctl, tty := openPTY(t)
		outCtl, outTTY := openPTY(t)
		setTermSize(t, tty, cols/3, cols)
		setTermSize(t, outTTY, cols/3, cols)
		c, shown := shellOnTerminalTo(t, ctl, tty, outTTY, dir, idx)
		// The prompt is on the output's terminal: read up to it, then
		// nothing until exit is typed.
		out := &syncBuffer{}
		resume := make(chan struct{})
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			b := make([]byte, 4096)
			for paused := false; ; {
				n, err := outCtl.Read(b)
				out.Write(b[:n])
				if err != nil {
					return
				}
				if !paused && strings.Contains(out.String(), "lshdb> ") {
					paused = true
					<-resume
				}
			}
		}()
		waitShown(t, c, out, "lshdb> ")
		io.WriteString(ctl, "get big\r")
		// NB: the shell has read the line when the terminal holds no
		// input; its answer then fills the output's terminal, and get
		// waits to write the rest.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var n int32
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
				t.Fatalf("the terminal's input: %v", e)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				c.Process.Kill()
				t.Fatalf("%d columns: get big not read: %q", cols, shown)
			}
		}
		time.Sleep(300 * time.Millisecond)
		io.WriteString(ctl, "exit\r")
		time.Sleep(100 * time.Millisecond)
		close(resume)
		exited := make(chan error, 1)
		go func() { exited <- c.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%d columns: exit: %v: %q", cols, err, shown)
			}
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			t.Fatalf("%d columns: exit typed while get ran did not end the shell: %q", cols, shown)
		}
		outTTY.Close()
		<-copied
		if got := strings.Count(out.String(), "typed ahead"); got != strings.Count(text, "typed ahead") {
			t.Errorf("%d columns: the output holds %d of the text's %d phrases", cols, got, strings.Count(text, "typed ahead"))
		}
	}
}
