package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/docio"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/peterh/liner"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// inShell annotates the cobra root built for a shell statement.
const inShell = "lshdb-shell"

// shellSpec is one shell command: its usage and the flags it takes (all
// take --output too). Nothing else is accepted: no flag that names another
// index (--db) or a file to read or write (--file, --plot, --cpuprofile).
type shellSpec struct {
	usage string
	flags []string
}

// shellShorts replace the one-line descriptions of commands whose own
// name what the shell does not take (a file).
var shellShorts = map[string]string{
	"query": "Near-duplicates of a stored document or a text",
}

var shellSpecs = map[string]shellSpec{
	"info":     {"info", nil},
	"stats":    {"stats [--top N]", []string{"top"}},
	"buckets":  {"buckets [--band B] [--top N]", []string{"band", "top"}},
	"bucket":   {"bucket BAND BUCKET [--jaccard] [--with-text]", []string{"jaccard", "with-text"}},
	"get":      {"get ID...", nil},
	"query":    {"query (--id ID | --text TEXT) [--threshold T] [--top K] [--estimate-only] [--with-text] [--header]", []string{"id", "text", "threshold", "top", "limit", "estimate-only", "with-text", "header"}},
	"explain":  {"explain ID1 ID2 [--threshold T]", []string{"threshold"}},
	"pairs":    {"pairs [--threshold T] [--limit N] [--stats] [--sort=false] [--header] [--memory MIB]", []string{"threshold", "limit", "stats", "sort", "header", "memory"}},
	"clusters": {"clusters [--threshold T] [--mode components|centers] [--keep first|last|longest|shortest] [--header] [--memory MIB]", []string{"threshold", "mode", "keep", "header", "memory"}},
	"tune":     {"tune [--threshold T]", []string{"threshold"}},
	"check":    {"check", nil},
	"purge":    {"purge", nil},
	"put":      {"put [--ttl D] ID TEXT...", nil},
	"delete":   {"delete [--ignore-missing] ID...", []string{"ignore-missing"}},
}

// shellHelpRows are the lines of help's command list: every shell
// command once (TestShellHelpListsEveryCommand).
var shellHelpRows = [][]string{
	{"info", "stats", "buckets", "bucket", "get"},
	{"query"},
	{"explain", "pairs"},
	{"clusters"},
	{"tune", "check", "purge"},
	{"put", "delete"},
}

// shellCommonFlags are the flags every shell command takes, besides its
// spec's.
var shellCommonFlags = []string{"output", "progress", "progress-every"}

// shellNotTaken are the flags of the shell's commands that the shell
// does not take, and why (every other flag a command has is in its
// shellSpec: TestShellSpecsCoverFlags), by name or as "CMD --NAME".
var shellNotTaken = map[string]string{
	"db":             "another index",
	"addr":           "another index",
	"cpuprofile":     "a file",
	"plot":           "a file",
	"file":           "a file",
	"out":            "a file",
	"from":           "a file",
	"clusters":       "a file", // pairs --clusters FILE
	"repair":         "check --repair is a command of its own",
	"force":          "check --repair's",
	"remove-unnamed": "check --repair's",
	"restore-ids":    "check --repair's",
	"num-perm":       "tune's without an index",
	"recall":         "tune's without an index",
	"scheme":         "tune's without an index",
	"pairs --mode":   "with --clusters FILE only",
	"pairs --keep":   "with --clusters FILE only",
}

// shellExits are the words that leave the shell (as do Ctrl-D and EOF).
var shellExits = []string{"exit", "quit", ".quit", ".exit", `\q`}

// shellCommands are the words the shell completes.
var shellCommands = []string{"info", "stats", "buckets", "bucket", "get", "query", "explain", "pairs", "clusters", "tune", "check", "purge", "put", "delete", "help", "exit", "quit"}

func (a *app) shellCmd() *cobra.Command {
	return &cobra.Command{
		Use: "shell --db DIR",
		Example: `  # An interactive shell over the index
  lshdb shell --db idx

  # Scripted: one statement per line on stdin; only their output on stdout
  printf 'stats\nquery --id fox1 --output json\n' | lshdb shell --db idx`,
		Short: "Interactive shell over one index (reads commands from stdin when it is not a terminal)",
		Long: `An interactive shell over one index, which it holds open. Ctrl-C cancels
the running statement (or clears the line being typed) and keeps the shell;
Ctrl-D, exit, quit, .quit, .exit or \q leave. Commands take the flags their help
lists (help CMD); none names another index or a file. Tab completes a
command's name and its flags. History is kept in
~/.lshdb_history (mode 0600). When stdin is not a terminal, the shell runs
one statement per line: stdout gets only their output, and stderr each
statement (after "> ", cut after 256 bytes) and its error, if any. A failed
statement does not stop the script: the statements after it run, and the
shell then exits 1 ("lshdb: N shell commands failed"), whatever their
errors; it stops at an interrupt (exit 130, 143 or 129) and when its
output is closed (exit 141).
Quotes (' or ") hold spaces in a word, where they open it or follow an
= (--text="two words"); inside a word that starts plain a quote is itself
(o'brien). A double-quoted word (or flag value) with
backslash escapes is read as tables print an id with control characters
("odd\tid\x00"), while in single quotes a backslash is itself.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			d, closeDB, err := a.openDB(&db.Options{MustExist: true}) // NB: a mistyped --db must not create an index
			if errors.Is(err, db.ErrReadOnly) || errors.Is(err, fs.ErrPermission) || errors.Is(err, db.ErrDiskFull) {
				// NB: an index that cannot be opened for writing (a
				// read-only filesystem, a directory this user may not
				// write, a full disk) is read, as every read command
				// reads it: the shell failed on it, naming a Go option.
				if rd, rclose, rerr := a.openDB(&db.Options{MustExist: true, ReadOnly: true}); rerr == nil {
					why := "is on a read-only filesystem"
					switch {
					case errors.Is(err, db.ErrDiskFull):
						why = "is on a disk too full to open it for writing"
					case errors.Is(err, fs.ErrPermission):
						why = "is in a directory that this user may not write"
					}
					a.notef(fmt.Sprintf("%s %s: the shell reads it, and put, delete and purge are refused", a.dbDir, why))
					d, closeDB, err = rd, rclose, nil
				}
			}
			if err != nil {
				return err
			}
			defer closeDB()
			a.shellDB = d
			defer func() { a.shellDB = nil }()
			// NB: each statement parses its own flags, --output's default
			// (table) included: the shell's --output json was taken and
			// then not used.
			a.shellJSON = a.json()
			defer func() { a.shellJSON = false }()
			// NB: so are --progress and --progress-every: each
			// statement's root reset them, and bars were drawn under
			// lshdb shell --progress none.
			a.shellProgress = []string{"--progress=" + a.progressMode, "--progress-every=" + a.progressEvery.String()}
			defer func() { a.shellProgress = nil }()
			if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				return a.interactive()
			}
			return a.script(a.stdin)
		},
	}
}

// script runs one statement per line from r, echoing it on stderr; a
// failing statement prints its error on stderr and the script goes on;
// the exit status is 1 if any failed. A signal (SIGINT, SIGTERM, SIGHUP)
// cancels the running statement, or the wait for the next line, and ends
// the script (130, 143, 129): no line read after it runs. A failed write
// of the output ends it too (1).
func (a *app) script(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	failed, lines := 0, 0
	ctx := a.ctx
	interrupted := func() error {
		return fmt.Errorf("shell script ended (%w)%w", context.Cause(ctx), silently{ctx.Err()})
	}
	// NB: the lines are read on a goroutine of their own: a script whose
	// input waited (a pipe kept open, a FIFO) ignored signals in Scan,
	// holding the index, and ran the next line that came, a write
	// included, before it ended (or exited 0 at the input's end). The
	// goroutine reads one line ahead at most; one left blocked in a read
	// ends with the process.
	next := make(chan string)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(next)
		for sc.Scan() {
			select {
			case next <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	eof := false     // the reader has ended: sc is the loop's to read
	quiet := a.quiet // NB: the shell's: each statement parses its own flags
	for first := true; ; first = false {
		var text string
		var ok bool
		select {
		case <-ctx.Done():
			return interrupted()
		case text, ok = <-next:
		}
		if !ok {
			eof = true
			break
		}
		if ctx.Err() != nil {
			return interrupted() // NB: a line and the signal came together
		}
		lines++
		// NB: trailing blanks are kept, as at the prompt: a put's text
		// is the rest of the line as typed (they were cut in a script).
		line := strings.TrimRight(text, "\r")
		if first {
			// NB: a script saved by an editor that writes a byte order
			// mark ran its first statement as "\ufeffinfo", unknown.
			line = strings.TrimPrefix(line, "\ufeff")
		}
		line = strings.TrimLeft(line, " \t")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// NB: the echo and the errors go to stderr, so that stdout holds
		// only the statements' output (S8): printf 'query --id x --output
		// json\n' | lshdb shell --db D | jq works.
		fmt.Fprintf(a.stderr, "> %s\n", echoed(line))
		done, err := a.statement(ctx, line)
		if oerr := a.outErr(); oerr != nil {
			// NB: the output is gone (a closed pipe): nobody would read
			// what the rest of the script prints, so it does not run.
			return cmp.Or(err, oerr)
		}
		if err != nil {
			where := ""
			if quiet {
				// NB: --quiet drops the echo above: the error named no
				// statement (an analyst's review of the shell, SH5).
				where = fmt.Sprintf("line %d: ", lines)
			}
			fmt.Fprintf(a.stderr, "lshdb: %s%s\n", where, escControls(plainMessage(err.Error())))
			failed++
		}
		if ctx.Err() != nil {
			return interrupted()
		}
		if done {
			break
		}
	}
	if ctx.Err() != nil {
		return interrupted() // NB: it exited 0 when the input ended after the signal
	}
	// NB: sc is the reader's until it has ended (not at exit or quit).
	if eof {
		if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
			// NB: it said only "bufio.Scanner: token too long".
			return fmt.Errorf("line %d of the script is over 64 MiB, the longest a statement may be: it and the lines after it did not run", lines+1)
		} else if err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s failed", counted(failed, "shell command", "shell commands"))
	}
	return nil
}

// shellError prints a statement's error at the interactive prompt
// (without the command's "lshdb: " prefix: the shell is lshdb), where
// the prompt goes.
//
// NB: a shell whose output went to a file (lshdb shell > out.txt) wrote
// its errors among the results, and showed none (an analyst's review of
// the shell, SH1). On the terminal they stay on stdout: a statement's
// error that fails to write there is how the shell learns its output is
// gone before the next statement runs (TestShellLeavesWhenOutputIsGone).
func (a *app) shellError(err error) {
	fmt.Fprintf(a.promptOut(), "error: %s\n", escControls(plainMessage(err.Error())))
}

// stdinWithoutWidth reports whether the shell reads a terminal that
// gives its width as 0 columns.
func (a *app) stdinWithoutWidth() bool {
	f, ok := a.stdin.(*os.File)
	if !ok {
		return false
	}
	w, _, err := term.GetSize(int(f.Fd()))
	return err == nil && w <= 0
}

// promptOut is where the interactive shell's prompt goes: stdout, or
// the terminal's stderr when the output is not the terminal.
func (a *app) promptOut() io.Writer {
	if a.shellPrompt != nil {
		return a.shellPrompt
	}
	return a.stdout
}

// linePrompter reads the statements of a terminal whose shell's output
// goes elsewhere (a file, a pipe), the prompt going to the terminal
// (stderr), or of a terminal without a width: the lines are read as the
// terminal gives them.
//
// NB: liner took such a shell for a script in all but its reading: the
// banner and prompts went into the output (an analyst's review of the
// shell, SH1).
type linePrompter struct {
	r     *bufio.Reader
	out   io.Writer
	added []string
}

func (p *linePrompter) Prompt(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	line, err := p.r.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (p *linePrompter) AppendHistory(line string) {
	if n := len(p.added); n == 0 || p.added[n-1] != line {
		p.added = append(p.added, line)
	}
}

// prompter is what the read-eval loop needs of a line editor (liner's
// State; a list of lines in tests).
type prompter interface {
	Prompt(prompt string) (string, error)
	AppendHistory(line string)
}

func (a *app) interactive() error {
	// History persists in ~/.lshdb_history when the home directory allows.
	histPath := ""
	var old []string
	if home, err := os.UserHomeDir(); err == nil {
		histPath = filepath.Join(home, ".lshdb_history")
		if old, err = readHistory(histPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(a.stderr, "lshdb: history not read: %v\n", err)
		}
	}
	var p prompter
	var added func() []string
	banner := a.stdout
	if !a.stdoutIsTerminal() {
		fmt.Fprintln(a.stderr, "lshdb: note: the shell's output is not the terminal: the prompt and errors are shown here, the statements' output goes to the output alone; line editing, history keys and Tab completion are off")
		lp := &linePrompter{r: bufio.NewReader(a.stdin), out: a.stderr}
		p, added, banner = lp, func() []string { return lp.added }, a.stderr
		a.shellPrompt = a.stderr
		defer func() { a.shellPrompt = nil }()
	} else if a.stdinWithoutWidth() {
		// NB: liner cannot edit a line it cannot measure: Tab was typed
		// as a tab, with no word of why (a newcomer's review, W11; some
		// docker exec -t and CI harnesses give such a terminal). It read
		// plain lines too, but put the terminal back in its own mode
		// around each prompt, raw between them: a line typed ahead while
		// a statement ran ended in a carriage return the terminal no
		// longer turned into a newline, and the shell waited for one
		// (exit typed as info ran hung the shell; TestShellTypedAhead).
		// The terminal is left as it is, and does the editing it can.
		fmt.Fprintln(a.stderr, "lshdb: note: the terminal reports no width (0 columns): line editing, history keys and Tab completion are off (stty cols 120 rows 40 gives it one)")
		lp := &linePrompter{r: bufio.NewReader(a.stdin), out: a.stdout}
		p, added = lp, func() []string { return lp.added }
	} else {
		ln := liner.NewLiner()
		defer ln.Close()
		// NB: at the prompt the terminal is raw and Ctrl-C is a key:
		// liner returns ErrPromptAborted, and the loop drops the line.
		// While a statement runs the terminal is cooked and Ctrl-C is
		// SIGINT, which sigs relays to the statement's context.
		ln.SetCtrlCAborts(true)
		ln.SetWordCompleter(shellComplete)
		for _, l := range old {
			ln.AppendHistory(l)
		}
		hist := &sessionHistory{State: ln}
		p, added = hist, func() []string { return hist.added }
	}
	defer func() {
		if histPath != "" {
			if err := saveHistory(histPath, added()); err != nil {
				fmt.Fprintf(a.stderr, "lshdb: history not saved: %v\n", err)
			}
		}
	}()
	// NB: while the shell runs (shellRunning), main's handler leaves
	// every signal after the first to it: a Ctrl-C cancels the statement
	// running, and the shell leaves on Ctrl-D; SIGTERM and SIGHUP end the
	// shell cleanly (exit 143, 129), at the prompt too, where a signal
	// that killed the process left an owner's socket behind.
	shellRunning.Store(true)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)
	fmt.Fprintf(banner, "lshdb shell on %s; type help for commands, exit or Ctrl-D to leave, Ctrl-C cancels\n", esc(rediskv.Redact(cmp.Or(a.dbDir, a.addr))))
	err := a.repl(p, sigs)
	// NB: left set when a signal ended the shell: main's handler gets the
	// same signal, and when the shell had cleared the flag first it took
	// it for a second one and killed the process ("SIGTERM again"), which
	// a loaded machine showed (TestShellTerminated).
	if !errors.As(err, new(signalCause)) {
		shellRunning.Store(false)
	}
	return err
}

// historyLimit is the number of lines the history file keeps (liner's
// scrollback holds as many).
const historyLimit = liner.HistoryLimit

// sessionHistory is the line editor, remembering the lines this session
// added to the history.
type sessionHistory struct {
	*liner.State
	added []string
}

func (h *sessionHistory) AppendHistory(line string) {
	h.State.AppendHistory(line)
	if n := len(h.added); n == 0 || h.added[n-1] != line { // NB: as liner's
		h.added = append(h.added, line)
	}
}

// readHistory returns the last historyLimit lines of the history file at
// path, lines of any length; a line that is not UTF-8 is skipped.
//
// NB: not liner's ReadHistory, which stops at the first line longer than
// 4 KiB (a put of a long text), unsaid: the shell saved what it had read
// over the file, and the history after that line was lost (a review).
func readHistory(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if line = strings.TrimSuffix(line, "\n"); line != "" && utf8.ValidString(line) {
			lines = append(lines, line)
			if len(lines) > 2*historyLimit {
				lines = append(lines[:0], lines[len(lines)-historyLimit:]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return lines[max(0, len(lines)-historyLimit):], nil
}

// saveHistory adds the lines of this session to the history file at
// path, keeping its last historyLimit lines, readable by its owner only:
// it holds the texts of put statements (R15). The file is read again
// first, so that the lines another shell saved since this one began are
// kept (the last shell to leave wrote only its own list over the file:
// a review), and replaced whole (a temporary file renamed over it).
func saveHistory(path string, added []string) error {
	if len(added) == 0 {
		return nil
	}
	lines, err := readHistory(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	lines = append(lines, added...)
	lines = lines[max(0, len(lines)-historyLimit):]
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // NB: a history linked elsewhere stays a link
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // NB: gone once renamed
	// NB: CreateTemp makes it 0600; said again for a umask's sake.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// repl reads statements from p and runs each under a context of its own,
// cancelled by an interrupt on sigs: an interrupt ends the statement, never
// the shell. It returns at EOF (Ctrl-D) or an exit word, and with an error
// (context.Canceled, and the signal as a signalCause) when SIGTERM or
// SIGHUP arrives on sigs or the command's context ends for a reason other
// than an interrupt: a statement running is cancelled first, and the
// prompt is left waiting.
func (a *app) repl(p prompter, sigs <-chan os.Signal) error {
	root := a.ctx
	// NB: statements run under a context that the root's cancel (the first
	// SIGINT, in main) does not reach; the shell cancels them itself.
	base := context.WithoutCancel(root)
	var mu sync.Mutex
	var cancelStmt context.CancelFunc
	cancelRunning := func() {
		mu.Lock()
		if cancelStmt != nil {
			cancelStmt()
		}
		mu.Unlock()
	}
	term := make(chan struct{}) // closed when the shell is to end
	var termOnce sync.Once
	var why error
	terminate := func(cause error) {
		termOnce.Do(func() {
			why = cause
			close(term)
		})
		cancelRunning()
	}
	stopAfter := context.AfterFunc(root, func() {
		// NB: main's handler names the signal in the cause; only an
		// interrupt is the shell's to absorb. (The test was a prefix of
		// the cause's text, which every signal's came to match.)
		var sc signalCause
		if c := context.Cause(root); !errors.As(c, &sc) || sc.sig != os.Interrupt {
			terminate(cmp.Or(c, root.Err()))
		}
	})
	defer stopAfter()
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == os.Interrupt {
					cancelRunning()
				} else {
					terminate(signalCause{s})
				}
			case <-quit:
				return
			}
		}
	}()
	ended := func() error {
		return fmt.Errorf("shell ended (%w): %w", why, context.Canceled)
	}
	type prompted struct {
		line string
		err  error
	}
	for {
		// NB: the prompt waits on its own goroutine, so that a signal
		// ends the shell without a key pressed; the one left waiting
		// ends with the process.
		next := make(chan prompted, 1)
		go func() {
			line, err := p.Prompt("lshdb> ")
			next <- prompted{line, err}
		}()
		var in prompted
		select {
		case in = <-next:
		case <-term:
			fmt.Fprintln(a.promptOut())
			return ended()
		}
		select {
		case <-term:
			return ended()
		default:
		}
		line, err := in.line, in.err
		if errors.Is(err, liner.ErrPromptAborted) {
			continue // Ctrl-C at the prompt: the line is dropped
		}
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(a.promptOut()) // NB: ends the prompt's line
			return nil
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		p.AppendHistory(line)
		if f, ok := a.stdoutFile(); ok && a.shellPrompt != nil && pipeReaderGone(f) {
			// NB: with the output on a pipe (lshdb shell | head), the
			// errors go to the terminal, and nothing failed to write to
			// the dead pipe before the next statement, a put, ran (a
			// read-through's R9): a closed reader is asked for first.
			fmt.Fprintf(a.stderr, "lshdb: the shell's output is gone (its reader closed the pipe): leaving, %q not run\n", echoed(line))
			return &fs.PathError{Op: "write", Path: "standard output", Err: syscall.EPIPE} // NB: exit 141, as a failed write
		}
		ctx, cancel := context.WithCancel(base)
		mu.Lock()
		cancelStmt = cancel
		mu.Unlock()
		done, err := a.statement(ctx, line)
		mu.Lock()
		cancelStmt = nil
		mu.Unlock()
		cancel()
		if err != nil {
			a.shellError(err)
		}
		if oerr := a.outErr(); oerr != nil {
			// NB: the output is gone (lshdb shell | head, a tee killed by
			// Ctrl-C): the shell ran on unseen, writes too, holding the
			// index, until exit (a review). It leaves, and says so where
			// it still can; after the statement's error message, whose
			// write may be the one that failed (a maintainer's review).
			fmt.Fprintf(a.stderr, "lshdb: the shell's output is gone (%v): leaving\n", oerr)
			return oerr
		}
		if done {
			return nil
		}
		select {
		case <-term:
			return ended()
		default:
		}
	}
}

// maxEcho is the longest part of a script's statement that its echo on
// stderr shows.
const maxEcho = 256

// echoed is a script's statement as its echo shows it: escaped, and cut
// after maxEcho bytes with its length. NB: a put of a 9 MB text was
// echoed whole, 9 MB in the job's log for one statement.
func echoed(line string) string {
	if len(line) <= maxEcho {
		return esc(line)
	}
	cut := maxEcho
	for cut > maxEcho-utf8.UTFMax+1 && !utf8.RuneStart(line[cut]) {
		cut-- // NB: at most 3 bytes: a line of bytes that start no rune is cut where it is
	}
	// NB: without the blanks it ends in (esc quotes a word that ends in
	// one, and the cut is not the statement's end).
	return fmt.Sprintf("%s… (%d bytes)", esc(strings.TrimRight(line[:cut], " \t")), len(line))
}

// statement runs one shell line under ctx; done reports that it asked to
// leave the shell.
func (a *app) statement(ctx context.Context, line string) (done bool, err error) {
	saved := a.ctx
	a.ctx = ctx
	defer func() { a.ctx = saved }()
	done, err = a.shellLine(line)
	if errors.Is(err, httpapi.ErrShutdown) {
		// NB: "cut by the server's shutdown: context canceled" did not
		// say what to do (a review).
		err = fmt.Errorf("%w (the server that owned the index stopped during this statement: run it again, and the shell opens the index or attaches to the next server; a write may have completed already)", err)
	}
	return done, err
}

// shellLine runs one shell command. The read commands are the command
// line's own, with the flags shellSpecs lists; put and delete are shell
// forms.
func (a *app) shellLine(line string) (done bool, err error) {
	line = commandSpace(line)
	words, err := splitWords(line)
	if err != nil {
		// NB: put's text is free prose: an apostrophe in it ("don't") is
		// not a quote to close. Its words are taken as typed.
		if f := strings.Fields(line); len(f) > 0 && f[0] == "put" {
			words, err = f, nil
		}
	}
	if err != nil || len(words) == 0 {
		return false, err
	}
	name := words[0]
	if slices.Contains(shellExits, name) {
		if len(words) > 1 {
			// NB: "quit now" left at once, skipping the rest of a script,
			// where any other statement with a stray word fails.
			return false, usagef("%s takes nothing after it (type %s to leave)", name, name)
		}
		return true, nil
	}
	if name == "help" {
		return false, a.shellHelp(words[1:])
	}
	spec, ok := shellSpecs[name]
	if !ok {
		hint := didYouMean(name, shellCommands, "")
		if name == "shell" {
			// NB: it said "unknown command "shell", did you mean help?"
			// (a bad-input review, B15).
			return false, usagef("this is the shell already (type help for its commands, exit or Ctrl-D to leave it)")
		}
		if sub, _, err := a.rootCmd().Find([]string{name}); hint == "" && err == nil && sub.Name() == name {
			// NB: "build" said "unknown command", as if lshdb had none.
			return false, usagef("%s is an lshdb command that the shell does not run: run it as lshdb %s, from another terminal or after leaving the shell (type help for the shell's commands)", name, name)
		}
		return false, usagef("unknown command %q%s (type help)", name, hint)
	}
	if name == "put" {
		if len(words) == 2 && (words[1] == "--help" || words[1] == "-h") {
			return false, a.shellHelp([]string{name})
		}
		id, text, wo, err := parsePut(line)
		if err != nil {
			return false, err
		}
		start := time.Now()
		if err := a.shellDB.Put(db.Doc{ID: id, Text: text}, wo); err != nil {
			return false, err
		}
		if wo != nil {
			a.noteExpired(wo.TTL, start, 1, "it is written")
		}
		if text != "" && (text[0] == '"' || text[0] == '\'') && strings.IndexByte(text[1:], text[0]) < 0 {
			q := text[0]
			// NB: put x "some text, its closing quote forgotten, is
			// stored as typed, its quote kept, as the help says (the
			// rest of the line), where get "x fails; a note catches the
			// typo (a bad-input review, B15).
			a.notef(fmt.Sprintf("the text begins with %c and has no closing one: it was stored as typed, with its %c (a text in quotes is stored without them)", q, q))
		}
		// NB: a JSON line in a shell started with --output json, as a
		// delete's is: a script's stream of JSON lines took a line of
		// text, and jq failed on it (a review). The shell's own
		// --output, not a.json(): a.output is the last statement's
		// flag, and a put after "info --output json" printed JSON.
		if a.shellJSON {
			return false, a.emitJSON(map[string]any{"stored": id})
		}
		fmt.Fprintf(a.stdout, "stored %s\n", tableID(id))
		return false, nil
	}
	root := a.rootCmd()
	root.Annotations = map[string]string{inShell: "1"}
	sub, _, err := root.Find([]string{name})
	if err != nil || sub == root {
		return false, usagef("unknown command %q (type help)", name)
	}
	wantHelp, err := checkShellFlags(name, spec, sub, words[1:])
	if err != nil {
		return false, err
	}
	if wantHelp {
		return false, a.shellHelp([]string{name})
	}
	for _, c := range root.Commands() {
		if s, ok := shellSpecs[c.Name()]; ok {
			c.Use = s.usage
		}
	}
	if a.shellJSON && !slices.ContainsFunc(words, func(w string) bool { return w == "--output" || strings.HasPrefix(w, "--output=") }) {
		words = slices.Insert(words, 1, "--output=json")
	}
	// The shell's progress settings first, so that a statement's own
	// --progress (parsed later) wins.
	words = slices.Insert(words, 1, a.shellProgress...)
	root.SetArgs(words)
	setArgv(root, words)
	return false, root.ExecuteContext(a.ctx)
}

// checkShellFlags refuses any flag of a shell statement that its spec does
// not list; wantHelp reports -h or --help.
func checkShellFlags(name string, spec shellSpec, c *cobra.Command, args []string) (wantHelp bool, err error) {
	if slices.Contains(args, "-") {
		// NB: standard input is the shell's statements (a terminal in
		// raw mode: delete - waited there for ever, deaf to Ctrl-D and
		// Ctrl-C), after -- too.
		return false, usagef("%s -: the shell reads its statements from standard input; give the arguments on the line (or use the lshdb command)", name)
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			break
		}
		if len(w) < 2 || w[0] != '-' {
			continue
		}
		if isNegativeNumber(w) {
			return false, negativeArgError(name, w)
		}
		flag, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if c != nil && strings.HasPrefix(w, "--") {
			// NB: a command's other names of a flag (query --limit).
			flag = string(c.Flags().GetNormalizeFunc()(c.Flags(), flag))
		}
		switch {
		case flag == "h" || flag == "help":
			return true, nil
		case flag == "db":
			return false, usagef("the shell works on the index it opened; --db is not taken (open another index with lshdb shell --db DIR)")
		case slices.Contains(shellCommonFlags, flag) || slices.Contains(spec.flags, flag):
		case name == "check" && flag == "repair":
			// NB: it said "check takes no --repair in the shell", and no
			// more: the damaged-index hints name check --repair.
			// NB: it said to close the shell first; another terminal's
			// check --repair goes through the shell (a review).
			return false, usagef("check --repair is a command of its own: run lshdb check --db DIR --repair in another terminal (it goes through this shell), or after leaving the shell")
		case flag == "cpuprofile" || flag == "plot" || flag == "file":
			return false, usagef("--%s names a file, which the shell does not read or write (use the lshdb command)", flag)
		case !strings.HasPrefix(w, "--") && (flag == "" || c == nil || c.Flags().ShorthandLookup(flag[:1]) == nil || len(flag) > 1 && !hasValue):
			// NB: "get -x8" said "get takes no --x8": a word that starts
			// with one dash is most likely an argument (an id).
			return false, usagef("%s %s: a word that starts with - is read as a flag; put arguments after -- (%s -- %s)", name, w, name, w)
		default:
			// NB: an id of a command that takes ids may start with --:
			// said how to give it, unless the word is a flag mistyped (a
			// review: the hint was there for one dash only).
			hint := didYouMean(flag, slices.Concat(shellCommonFlags, spec.flags), "--")
			also := ""
			if hint == "" && strings.Contains(spec.usage, "ID") && !strings.Contains(spec.usage, "--id ID") && !idsGiven(spec, c, args, i) {
				also = fmt.Sprintf("; an id that starts with - goes after --: %s -- %s", name, w)
			}
			return false, usagef("%s takes no --%s in the shell%s (type help %s%s)", name, flag, hint, name, also)
		}
		// Skip the value of a flag that takes one (--top 3).
		if c != nil && !hasValue {
			if f := c.Flags().Lookup(flag); f != nil && f.NoOptDefVal == "" {
				i++
			} else if f == nil && flag == "output" {
				i++
			}
		}
	}
	return false, nil
}

// idsGiven reports whether args, but for the word at skip, give every
// id spec's usage takes (get ID: one; explain ID1 ID2: two; put and
// delete take more, and never have them all): a flag that is none of
// the command's is then no id that starts with -, and the hint that an
// id goes after -- is wrong (explain A B --estimate-only: an analyst's
// review of the shell, SH4).
func idsGiven(spec shellSpec, c *cobra.Command, args []string, skip int) bool {
	want := 0
	for _, w := range strings.Fields(spec.usage) {
		switch {
		case strings.HasSuffix(w, "..."):
			return false
		case strings.HasPrefix(w, "ID"):
			want++
		}
	}
	got := 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case i == skip:
		case w == "--":
			return got+len(args)-i-1 >= want
		case len(w) > 1 && w[0] == '-':
			flag, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if c != nil && !hasValue {
				if f := c.Flags().Lookup(flag); f != nil && f.NoOptDefVal == "" {
					i++ // its value
				}
			}
		default:
			got++
		}
	}
	return got >= want
}

// shellHelp prints the shell's command list, or one command's usage and
// flags.
func (a *app) shellHelp(args []string) error {
	if len(args) == 0 {
		// NB: the commands' usages are their specs': this list had
		// drifted from them (query's --header, stats' --top: a
		// maintainer review's K6).
		fmt.Fprintln(a.stdout, "commands (help CMD for one; every command but help and put takes --output json, pairs also csv or tsv; put answers in JSON when the shell was started with --output json):")
		for _, row := range shellHelpRows {
			usages := make([]string, len(row))
			for i, name := range row {
				usages[i] = shellSpecs[name].usage
			}
			fmt.Fprintf(a.stdout, "  %s\n", strings.Join(usages, " | "))
		}
		fmt.Fprintln(a.stdout, `  exit (or quit, .quit, .exit, \q, Ctrl-D); Ctrl-C cancels the running statement
  every command also takes --progress and --progress-every (the shell's own by default)`)
		return nil
	}
	if len(args) > 1 {
		// NB: help put extra showed put's help, the rest passed over
		// (a bad-input review, B15).
		return usagef("help takes one command at most: %s", strings.Join(args, " "))
	}
	name := args[0]
	if slices.Contains(shellExits, name) {
		fmt.Fprintln(a.stdout, "usage: exit (or quit, .quit, .exit, \\q, Ctrl-D)\n  leave the shell (its index is closed)")
		return nil
	}
	if name == "help" {
		fmt.Fprintln(a.stdout, "usage: help [CMD]\n  the shell's commands, or one command's usage and flags")
		return nil
	}
	if strings.HasPrefix(name, "-") {
		return usagef("help takes a command's name, not %s (type help)", name)
	}
	spec, ok := shellSpecs[name]
	if !ok {
		hint := didYouMean(name, shellCommands, "")
		if sub, _, err := a.rootCmd().Find([]string{name}); hint == "" && err == nil && sub.Name() == name {
			// NB: as the statement says it: help report said there was
			// no command "report" (an inspection review's SH-8).
			return usagef("%s is an lshdb command that the shell does not run: lshdb help %s, or lshdb %s --help, from another terminal (type help for the shell's commands)", name, name, name)
		}
		return usagef("no command %q%s (type help)", name, hint)
	}
	switch name {
	case "put":
		fmt.Fprintf(a.stdout, "usage: %s\n", spec.usage)
	case "pairs":
		fmt.Fprintf(a.stdout, "usage: %s [--output table|json|csv|tsv]\n", spec.usage)
	default:
		fmt.Fprintf(a.stdout, "usage: %s [--output table|json]\n", spec.usage)
	}
	root := a.rootCmd()
	sub, _, err := root.Find([]string{name})
	if name == "put" || err != nil || sub == root {
		fmt.Fprintln(a.stdout, "  store (insert or replace) one document; the text is the rest of the line as typed\n  (one quoted string: its quotes are taken off, and \"…\" with backslash escapes is\n  the text they spell, as get prints it; in a script too, trailing blanks kept);\n  --ttl D: it expires after D (1h, 30m, 90s): never returned after it, then swept")
		return nil
	}
	fmt.Fprintf(a.stdout, "  %s\n", cmp.Or(shellShorts[name], sub.Short))
	for _, f := range spec.flags {
		if fl := sub.Flags().Lookup(f); fl != nil {
			fmt.Fprintf(a.stdout, "  --%s: %s\n", f, fl.Usage)
		}
	}
	return nil
}

// parsePut reads a put statement: put [--ttl D] [--] ID TEXT. The id is
// a word (quotes may hold spaces); the text is the rest of the line as
// typed, its spaces and tabs kept, unless it is one quoted string, whose
// quotes are taken off (and, in a double-quoted one with escapes, the
// escapes read).
//
// NB: the text was the line's words joined by single spaces: runs of
// spaces and tabs were lost, and get showed another text than typed.
func parsePut(line string) (id, text string, wo *db.WriteOptions, err error) {
	_, rest, _ := nextWord(line) // put
	w, after, err := nextWord(rest)
	if err == nil && (w == "--ttl" || strings.HasPrefix(w, "--ttl=")) {
		v, ok := strings.CutPrefix(w, "--ttl=")
		if !ok {
			if v, after, err = nextWord(after); err != nil || v == "" {
				return "", "", nil, usagef("put --ttl needs a duration (1h, 30m, 90s)")
			}
		}
		ttl, perr := time.ParseDuration(v)
		switch {
		case perr != nil && durationSyntax.MatchString(v):
			// NB: said "want a positive duration" of 99999999h (a
			// bad-input review, B14); Go says "invalid duration" of one
			// past its range.
			return "", "", nil, usagef("put --ttl %q: out of range (a duration is at most %v, about 292 years)", v, time.Duration(math.MaxInt64))
		case perr != nil || ttl <= 0:
			return "", "", nil, usagef("put --ttl %q: want a positive duration (1h, 30m, 90s)", v)
		}
		wo = &db.WriteOptions{TTL: ttl}
		w, after, err = nextWord(after)
	}
	if err == nil && strings.HasPrefix(w, "-") {
		if w != "--" {
			return "", "", nil, usagef("put takes one flag, --ttl: %q (an id that starts with '-' follows --: put -- ID TEXT...)", w)
		}
		w, after, err = nextWord(after)
	}
	if err != nil {
		return "", "", nil, err
	}
	text = strings.TrimRight(strings.TrimLeft(after, " \t"), "\r\n")
	if strings.TrimSpace(text) == "" {
		// NB: an empty id ("") is db's to refuse, by its name.
		return "", "", nil, usagef("put [--ttl D] ID TEXT... (type help put)")
	}
	// NB: a text that is one double-quoted Go string with escapes is the
	// string they spell, as nextWord reads a query's --text (and as get
	// prints a text with control characters): "a\nb" was stored with its
	// backslash, and "say \"hi\"" with its quotes, so that neither was
	// found by a query with the same words.
	if q := goQuoted(text); q == text {
		text, _ = strconv.Unquote(q)
	} else if q := text[0]; len(text) >= 2 && (q == '"' || q == '\'') && text[len(text)-1] == q && !strings.ContainsRune(text[1:len(text)-1], rune(q)) {
		text = text[1 : len(text)-1]
	}
	if err := docio.CheckUTF8(text); err != nil {
		// NB: stored as given, where insert refuses such a text, and
		// export then wrote it changed (each bad byte U+FFFD), so that
		// it did not survive an export and insert (a bad-input review,
		// B6).
		return "", "", nil, usagef("put: the text is %v (insert refuses such a text too)", err)
	}
	return w, text, wo, nil
}

// commandSpace returns line with the ideographic spaces (U+3000) around
// its command word read as spaces: a Japanese input method leaves one
// after a word, and "get　商品-001" was the unknown command
// "get\u3000商品-001" (a multilingual user's S5). A command's name is
// ASCII letters and dashes, so no command is lost; elsewhere an
// ideographic space stays part of its word, as an id may hold one.
func commandSpace(line string) string {
	s := strings.TrimLeft(line, " \t\u3000")
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] == '-') {
		i++
	}
	if i == 0 || !strings.HasPrefix(s[i:], "\u3000") {
		return s
	}
	return s[:i] + " " + strings.TrimLeft(s[i:], "\u3000")
}

// nextWord returns the first word of s and what follows it: words are
// separated by spaces and tabs, and quotes (' or ") hold spaces, taken
// off the word. A word that is one double-quoted Go string with escapes
// ("odd\tid\x00") is the string they spell, as tables print an id or
// text with control characters; in single quotes a backslash is itself.
//
// NB: an id with a control character was printed quoted, and typed back
// it was not found: such a document could be neither read nor deleted
// from the shell.
func nextWord(s string) (word, rest string, err error) {
	s = strings.TrimLeft(s, " \t")
	if q := goQuoted(s); q != "" {
		w, _ := strconv.Unquote(q)
		return w, s[len(q):], nil
	}
	// NB: a byte at a time (every separator and quote is ASCII): by
	// runes, a byte that is not UTF-8 became U+FFFD, and "get caf\xe9"
	// read, deleted or replaced the document "caf\ufffd".
	//
	// A quote opens a quoted span where a word starts, after an = (a
	// flag's value: --text="two words", --id="odd\tid" with escapes as
	// above) and anywhere in a word that had one ('a'b'c' is abc); in a
	// word that starts plain it is the character itself, as in o'brien.
	// NB: "put o'brien don't stop" opened a span at the first apostrophe
	// and closed it at the second: it stored the id "obrien dont" with the
	// text "stop", unsaid.
	var cur strings.Builder
	var quote byte
	spanned := false // a quoted span of this word closed
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote, spanned = 0, true
			} else {
				cur.WriteByte(c)
			}
		case (c == '"' || c == '\'') && (i == 0 || s[i-1] == '=' || spanned):
			if q := goQuoted(s[i:]); i > 0 && s[i-1] == '=' && q != "" {
				w, _ := strconv.Unquote(q) // a flag's value, after =
				cur.WriteString(w)
				return cur.String(), s[i+len(q):], nil
			}
			quote = c
		case c == ' ' || c == '\t':
			return cur.String(), s[i:], nil
		default:
			cur.WriteByte(c)
		}
	}
	if quote != 0 {
		return "", "", usagef("unterminated quote")
	}
	return cur.String(), "", nil
}

// goQuoted returns the double-quoted Go string with escapes that s
// starts with, when a blank or the end follows it, else "".
func goQuoted(s string) string {
	q, err := strconv.QuotedPrefix(s)
	if err != nil || q[0] != '"' || !strings.ContainsRune(q, '\\') {
		return ""
	}
	if after := s[len(q):]; after != "" && after[0] != ' ' && after[0] != '\t' {
		return ""
	}
	return q
}

// splitWords returns the words of a shell statement (nextWord's).
func splitWords(line string) ([]string, error) {
	var words []string
	for s := line; strings.TrimLeft(s, " \t") != ""; {
		w, rest, err := nextWord(s)
		if err != nil {
			return nil, err
		}
		words, s = append(words, w), rest
	}
	return words, nil
}

// shellComplete is the shell's tab completion (liner's WordCompleter): the
// word under the cursor completes as a command name where it is the
// first (or follows help), and as one of the command's flags where it
// starts with a dash. Ids and texts are not completed.
func shellComplete(line string, pos int) (head string, completions []string, tail string) {
	// NB: liner counts pos in code points, not bytes (its Completer
	// adapter cuts []rune(line)): a text with é before the cursor was cut
	// mid-word (a maintainer review's K3).
	r := []rune(line)
	pos = min(max(pos, 0), len(r))
	before, tail := string(r[:pos]), string(r[pos:])
	start := strings.LastIndexAny(before, " \t") + 1
	head, word := before[:start], before[start:]
	prev := strings.Fields(head)
	var cands []string
	switch {
	case len(prev) == 0 || len(prev) == 1 && prev[0] == "help":
		cands = shellCommands
		word = strings.ToLower(word)
	case strings.HasPrefix(word, "-"):
		spec, ok := shellSpecs[prev[0]]
		if !ok {
			return head, nil, tail
		}
		if prev[0] == "put" {
			cands = []string{"--ttl"}
			break
		}
		for _, f := range slices.Concat(spec.flags, shellCommonFlags, []string{"help"}) {
			cands = append(cands, "--"+f)
		}
	}
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			completions = append(completions, c)
		}
	}
	if len(completions) == 1 && !strings.HasPrefix(tail, " ") {
		// NB: as readline does: qu<Tab>--id gave query--id (an
		// analyst's review of the shell, SH3).
		completions[0] += " "
	}
	return head, completions, tail
}

// didYouMean returns ", did you mean PREFIX+W?" for the words among
// known nearest to typed (a typing slip: at most two edits, or typed a
// prefix of it), or "" when none is.
func didYouMean(typed string, known []string, prefix string) string {
	typed = strings.ToLower(typed)
	var best []string
	bestD := 3 // NB: more than two edits is no slip
	for _, k := range known {
		d := editDistance(typed, k)
		if len(typed) >= 2 && strings.HasPrefix(k, typed) {
			d = min(d, 1)
		}
		switch {
		case d < bestD:
			best, bestD = []string{prefix + k}, d
		case d == bestD && d < 3:
			best = append(best, prefix+k)
		}
	}
	if len(best) == 0 || len(typed) < 3 && bestD > 1 {
		// NB: a word of one or two letters is two edits from every
		// short word.
		return ""
	}
	return ", did you mean " + strings.Join(best, " or ") + "?"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(b)]
}
