// Command lshdb builds, queries and inspects lshdb near-duplicate indexes.
//
//	lshdb insert --db DIR docs.jsonl.gz      # create (defaults) and fill an index
//	lshdb clusters --db DIR                  # near-duplicate clusters
//	lshdb query --db DIR --id ID             # near-duplicates of one document
//	lshdb explain --db DIR ID1 ID2           # why two documents match or not
//	lshdb shell --db DIR                     # interactive
//
// Every command goes through package db; run "lshdb help" for the list.
// Exit status: 0 on success, 1 on an error (one line on stderr naming the
// problem), 2 on a usage error.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/lshdb/lshdb/internal/fspath"
	"github.com/lshdb/lshdb/internal/inflate"
	"github.com/lshdb/lshdb/internal/lockholder"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// redisLog takes go-redis's own log lines (a node that does not answer,
// dialled again and again while a master fails over) off stderr: what a
// command's user needs of them is in the error or the retry warning lshdb
// reports. LSHDB_REDIS_LOG=1 shows them.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	if os.Getenv("LSHDB_REDIS_LOG") == "1" {
		fmt.Fprintf(os.Stderr, "lshdb: redis: "+format+"\n", v...)
	}
}

func main() {
	redis.SetLogger(redisLog{})
	// NB: what package db logs (Pebble's errors: a corrupt table found
	// while reading) goes to stderr as the command's own lines do, one
	// "lshdb: " line each, not the log package's dated format.
	slog.SetDefault(slog.New(cliLog{w: &errWriter{w: os.Stderr}}))
	// NB: the log package's lines (net/http's errors) go through it too,
	// as warnings: not dropped as informational.
	slog.SetLogLoggerLevel(slog.LevelWarn)
	if os.Getenv("GOMEMLIMIT") == "" {
		// NB: a soft limit makes the garbage collector work harder as the
		// heap nears it, instead of letting it double past its live data:
		// bulk builds and pairs stay under about 1 GiB. GOMEMLIMIT
		// overrides it.
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	os.Exit(run(signalContext(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// signalEcho is how soon after the first signal the same one again is
// taken for the same stop, not a second: GNU timeout sends SIGTERM to the
// command and then to its process group, which holds the command (kill
// pid, then kill 0), so a command it bounds got it twice within
// microseconds, and half the time a timeout'd serve said "interrupted by
// SIGTERM again: ending now" and skipped its drain (an operator's
// review, O2-2). A person's second Ctrl-C comes later than this.
const signalEcho = 100 * time.Millisecond

// sameSignal reports whether s2, come after the first signal s by since,
// is its echo (signalEcho), not a second signal.
func sameSignal(s, s2 os.Signal, since time.Duration) bool {
	return s2 == s && since < signalEcho
}

// signalContext is the command's context: the first Ctrl-C (or SIGTERM,
// or SIGHUP) cancels it, with the signal as its cause: long work stops at
// its next check and the command reports what it committed, then exits
// 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP). A second signal is said
// (in serve's log, else on stderr) and then kills, its default action
// restored; an interactive shell handles its signals itself.
//
// NB: SIGHUP (the terminal that started serve closed) killed the process
// mid-request, with no drain and its socket left behind. A command
// started with SIGHUP ignored (nohup) keeps it ignored: asking for it
// would undo that.
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigc := make(chan os.Signal, 1)
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	signal.Notify(sigc, sigs...)
	go func() {
		s := <-sigc
		first := time.Now()
		cancel(signalCause{s})
		// NB: the next signal is still caught, to say why the process
		// ends (it ended a draining serve with no line in its log), and
		// then delivered with the default action restored: the process
		// dies by it, with the status that signal gives (143 for
		// SIGTERM).
		go func() {
			for s2 := range sigc {
				if shellRunning.Load() {
					// NB: an interactive shell catches SIGINT, SIGTERM
					// and SIGHUP itself (Ctrl-C cancels a statement, the
					// others end it cleanly): it decides (see below).
					continue
				}
				if sameSignal(s, s2, time.Since(first)) {
					continue
				}
				msg := fmt.Sprintf("lshdb: %v again: ending now, without waiting for the work in progress (acknowledged writes stay)", signalCause{s2})
				if l := stopLog.Load(); l != nil {
					l.Warn(msg)
				} else {
					fmt.Fprintln(os.Stderr, msg)
				}
				signal.Reset(sigs...)
				if p, err := os.FindProcess(os.Getpid()); err == nil {
					p.Signal(s2)
				}
				time.Sleep(time.Second) // NB: delivery is asynchronous
				if n, ok := s2.(syscall.Signal); ok {
					os.Exit(128 + int(n))
				}
				os.Exit(1)
			}
		}()
		// NB: a write that cannot end (a disk full under --disk-reserve
		// -1, where Pebble's flush fails and every write waits for it)
		// does not notice the cancel: a person who pressed Ctrl-C saw
		// nothing happen. Said once the stop takes long.
		time.AfterFunc(stopNoteAfter, func() {
			if s == os.Interrupt && shellRunning.Load() {
				// NB: the shell absorbs an interrupt (it cancels the
				// statement running, if any, and goes on), and keeps
				// SIGINT caught: nothing is stopping, and a second Ctrl-C
				// kills nothing. The note came over its prompt.
				return
			}
			second := "a second Ctrl-C"
			if s != os.Interrupt {
				second = "a second signal"
			}
			msg := fmt.Sprintf("lshdb: still stopping after %v (%v): waiting for the work in progress to end; %s kills the process (acknowledged writes stay)", stopNoteAfter, signalCause{s}, second)
			if l := stopLog.Load(); l != nil {
				l.Warn(msg)
				return
			}
			fmt.Fprintln(os.Stderr, msg)
		})
	}()
	// NB: with SIGPIPE ignored, a write to a closed pipe (lshdb pairs |
	// head) fails with EPIPE instead of killing the process: the command
	// stops at its next write and exits 141 quietly (see exitCode), and a
	// write command first says what it committed.
	signal.Ignore(syscall.SIGPIPE)
	return ctx
}

// stopLog is the logger of a command that logs (serve), which the
// "still stopping" note goes to; nil: stderr.
var stopLog atomic.Pointer[slog.Logger]

// shellRunning is set while an interactive shell runs (see
// signalContext).
var shellRunning atomic.Bool

// stopNoteAfter is how long after a stopping signal the command says it
// is still stopping.
const stopNoteAfter = 5 * time.Second

// defaultMemoryLimit is the soft memory limit of the command's Go heap.
const defaultMemoryLimit = 768 << 20

// raiseMemoryLimit lifts the soft memory limit for a command that holds
// budget bytes of sorted data, unless GOMEMLIMIT set it.
//
// NB: a live heap at the soft limit makes the collector run without pause:
// a build whose sort budget (1 GiB) exceeded the limit ran 18,000
// collections and took 1.6x as long.
func raiseMemoryLimit(budget int) {
	heldBudget.Store(int64(budget))
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(heapLimit(int64(budget)))
	}
}

// heldBudget is the budget of the command's last raiseMemoryLimit, to
// which fitMemoryLimit adds what a read of the whole index holds.
var heldBudget atomic.Int64

// heapLimit is the soft memory limit of a command that holds held bytes:
// twice that, and 256 MiB, at least defaultMemoryLimit.
func heapLimit(held int64) int64 { return max(defaultMemoryLimit, 2*held+256<<20) }

// signalCause is the cause of the command's context when a signal
// cancelled it.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string {
	// NB: by its name: Go's strings made "interrupted by terminated".
	switch c.sig {
	case os.Interrupt:
		return "interrupted by SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	case syscall.SIGHUP:
		return "interrupted by SIGHUP (its terminal closed)"
	}
	return "interrupted by " + c.sig.String()
}

// usageError marks an error in how the command was called (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// isNegativeNumber reports whether w, an argument, is a negative number
// (-1, -0.5), which the flag parser takes for shorthand flags.
func isNegativeNumber(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(w[1:], 64)
	return err == nil && w[1] >= '0' && w[1] <= '9'
}

// negativeArgError is the usage error of an argument w, a negative
// number, that the flag parser took for flags.
func negativeArgError(name, w string) error {
	if name == "bucket" {
		// NB: it said to put it after -- (bucket -- -1), a statement of
		// one argument (an analyst's review of the shell, SH4).
		return usagef("bucket %s: a band is a number from 0, and a bucket hex digits as buckets prints them: neither starts with -", w)
	}
	return usagef("%s %s: an argument that starts with - is read as a flag; put it after -- (%s -- %s)", name, w, name, w)
}

// app is one invocation's state: its streams, global flags, and (in the
// shell) the database it holds open.
type app struct {
	// errLog, when set (serve --log-format json), is the logger the
	// command's error line goes to, in its log's format: it was a plain
	// line amid JSON objects (an operator's soak review, O4).
	errLog         *slog.Logger
	ctx            context.Context // cancelled by an interrupt (in the shell: the statement's)
	root           context.Context // the command's context, whose cause names the signal
	stdin          io.Reader
	stdout, stderr io.Writer
	out            *outWriter // stdout, which remembers its first failed write
	dbDir          string
	// redisPasswordInArgs: --db is a Redis URL with its password in it
	// (visible to every local user: serve warns).
	redisPasswordInArgs bool
	output              string
	diskReserveMiB      int64 // --disk-reserve: 0 the library's default, -1 no check
	cpuProfile          string
	stopProfile         func()
	shellDB             index             // set inside the shell: commands reuse it
	shellJSON           bool              // lshdb shell --output json: every statement's default
	shellPrompt         io.Writer         // where the interactive shell's prompt goes, when not stdout (linePrompter)
	outputAfterClose    bool              // the command writes its output after it closes the index (compact): closing it keeps the output open
	shellProgress       []string          // lshdb shell's --progress and --progress-every, as flags for each statement
	opened              []*db.DB          // the indexes the command opened itself (damageSeen)
	addr                string            // --addr: a server to attach to instead of --db
	pairRows            int64             // the pairs the last pairs output printed
	progressMode        string            // --progress: auto, bar, log or none
	quiet               bool              // --quiet: errors and warnings alone on stderr
	progressEvery       time.Duration     // --progress-every: between two progress lines
	outCommits          *[]deferredCommit // while toFile writes --out: the commits that wait for it
	command             string            // the command running ("lshdb insert"): what /healthz names as the owner (serveOwned)
	dataOutput          bool              // the command's output is data, and it has --out (partialOutput)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &outWriter{w: stdout}
	a := &app{ctx: ctx, root: ctx, stdin: stdin, stdout: out, stderr: &errWriter{w: stderr}, out: out}
	root := a.rootCmd()
	if noCommand(root, args) {
		// NB: cobra printed the help on stdout and exited 0, so that a
		// script running "lshdb $CMD" with CMD empty went on as if the
		// command had run (a newcomer's review).
		root.SetOut(a.stderr)
		root.Help()
		return a.exitCode(usagef("no command given: name one of the commands above"))
	}
	root.SetArgs(args)
	setArgv(root, args)
	err := root.Execute()
	if a.stopProfile != nil {
		a.stopProfile()
	}
	code := a.finish(err)
	if ew, ok := a.stderr.(*errWriter); ok {
		ew.flush()
	}
	return code
}

// noCommand reports whether args name no command and ask for no help or
// version: none at all, "" (a script's "$CMD" left empty), or the root's
// flags alone (lshdb --progress none).
func noCommand(root *cobra.Command, args []string) bool {
	if len(args) == 0 {
		return true
	}
	if slices.ContainsFunc(args, func(a string) bool {
		return a == "-h" || a == "-v" || strings.HasPrefix(a, "--help") || strings.HasPrefix(a, "--version")
	}) {
		return false
	}
	// NB: on a copy of the root: its flags parsed here would stay set.
	fs := pflag.NewFlagSet("lshdb", pflag.ContinueOnError)
	fs.AddFlagSet(root.PersistentFlags())
	fs.AddFlagSet(root.Flags())
	fs.SetOutput(io.Discard)
	if fs.Parse(args) != nil {
		return false // NB: cobra says what is wrong
	}
	return !slices.ContainsFunc(fs.Args(), func(a string) bool { return a != "" })
}

// finish returns the exit status of a command that returned err: err's,
// or, when it succeeded, that of damage its index met in the background
// (damageSeen).
func (a *app) finish(err error) int {
	if err == nil {
		err = a.damageSeen()
	}
	return a.exitCode(err)
}

// damageSeen returns the damage that an index this command opened met
// in the background (db.DB.Corruption), as the command's error: its work
// is stored, but it exited 0 beside a logged checksum error, which a
// nightly job's log keeps and no one reads.
func (a *app) damageSeen() error {
	for _, d := range a.opened {
		if err := d.Corruption(); err != nil {
			return fmt.Errorf("the command's work is stored, but the index met damage in the background (run lshdb check): %w", err)
		}
	}
	return nil
}

// cliLog is the commands' slog handler: warnings and errors, one line
// each, "lshdb: MESSAGE key=value …"; below a warning nothing (Pebble's
// informational messages).
type cliLog struct {
	w     io.Writer
	attrs []slog.Attr
}

func (h cliLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h cliLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("lshdb: ")
	b.WriteString(escControls(plainMessage(r.Message)))
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve().String()
		switch {
		case strings.Contains(v, `"`) || escControls(v) != v:
			v = strconv.Quote(v) // NB: escapes what escControls would
		case strings.ContainsAny(v, " =") || v == "":
			v = `"` + v + `"` // NB: as written (Pebble's bounds are escaped already)
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b.WriteByte('\n')
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h cliLog) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clip(h.attrs), as...)
	return h
}

func (h cliLog) WithGroup(string) slog.Handler { return h }

// outWriter is the command's stdout. After a write fails it fails every
// later write with the same error, without writing, so that a command
// that checks only some of its writes still stops writing.
type outWriter struct {
	w       io.Writer
	err     error
	written uint64 // bytes written

	closedKind string // kind, when closeFile closed it
}

// kind names the output when it is a file ("a file") or a pipe ("a
// pipe"); else (a terminal, a test's buffer) "".
func (o *outWriter) kind() string {
	f, ok := o.w.(*os.File)
	if !ok {
		return o.closedKind
	}
	fi, err := f.Stat()
	switch {
	case err != nil || term.IsTerminal(int(f.Fd())):
		return ""
	case fi.Mode()&fs.ModeNamedPipe != 0:
		return "a pipe"
	case fi.Mode()&fs.ModeSocket != 0:
		return "a socket" // NB: systemd's StandardOutput=socket, ksh's pipelines
	case fi.Mode().IsRegular():
		return "a file"
	}
	return ""
}

func (o *outWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.written += uint64(n)
	if err != nil {
		o.err = err
	}
	return n, err
}

// closeFile ends the output: a file (a pipe, a redirect) is closed, so
// that its reader sees its end before the process exits. A write after
// it fails, and is reported: whatever the writer (a test's buffer too).
func (o *outWriter) closeFile() {
	o.closedKind = o.kind()
	if f, ok := o.w.(*os.File); ok {
		if err := releaseFile(f); err != nil && o.err == nil {
			o.err = err
		}
	}
	o.w = closedOutput{}
}

// closedOutput is the output after closeFile.
type closedOutput struct{}

func (closedOutput) Write([]byte) (int, error) { return 0, os.ErrClosed }

// errWriter is the command's stderr, one write at a time: progress lines
// come from the input's reader goroutines while the command writes its
// notes, and package db's log lines (cliLog) from its own. NB: one lock
// for every errWriter, so that the log's lines, written through one of
// their own, do not cut a progress line either.
type errWriter struct {
	w io.Writer
	// quiet (--quiet) keeps only the lines that begin "lshdb: " and are
	// not notes: errors and warnings; partial holds a line not yet ended.
	quiet   bool
	partial []byte
}

var stderrMu sync.Mutex

func (e *errWriter) Write(p []byte) (int, error) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if !e.quiet {
		return e.w.Write(p)
	}
	e.partial = append(e.partial, p...)
	rest := e.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if line := rest[:i+1]; quietKeeps(line) {
			if _, err := e.w.Write(line); err != nil {
				return 0, err
			}
		}
		rest = rest[i+1:]
	}
	e.partial = append(e.partial[:0], rest...) // NB: the unended line, at the front of one buffer
	return len(p), nil
}

// askedf writes on stderr what a flag asked for (pairs --stats), which
// --quiet keeps: it dropped the statistics asked for without a word (a
// scripting operator's CL6).
func (a *app) askedf(format string, args ...any) {
	w := a.stderr
	if ew, ok := w.(*errWriter); ok {
		stderrMu.Lock()
		defer stderrMu.Unlock()
		w = ew.w
	}
	fmt.Fprintf(w, format, args...)
}

// flush writes a last line that did not end, if --quiet keeps it.
func (e *errWriter) flush() {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if e.quiet && len(e.partial) > 0 && quietKeeps(e.partial) {
		e.w.Write(append(e.partial, '\n'))
	}
	e.partial = nil
}

// quietKeeps reports whether --quiet keeps a line written on stderr: an
// error or a warning ("lshdb: …"), not a note ("lshdb: note: …"), a
// summary or progress.
func quietKeeps(line []byte) bool {
	return bytes.HasPrefix(line, []byte("lshdb: ")) && !bytes.HasPrefix(line, []byte("lshdb: note:"))
}

// brokenPipe reports whether err is the output's own failed write to a
// closed pipe, saying nothing more: the reader went away (head), which is
// not worth a message. A write command's wrap of it ("committed …;
// stopped: …") is still printed.
//
// NB: by its words as well as by identity: filter and export write
// stdout through a writer of their own, which hands back the failure as
// another value of the same words ("write /dev/stdout: broken pipe" was
// printed after filter … | head).
func (a *app) brokenPipe(err error) bool {
	return a.outErr() != nil && errors.Is(a.out.err, syscall.EPIPE) &&
		(err == nil || err == a.out.err || errors.Is(err, syscall.EPIPE) && err.Error() == a.out.err.Error())
}

// outErr is the error of the first failed write to stdout, or nil.
func (a *app) outErr() error {
	if a.out == nil {
		return nil
	}
	return a.out.err
}

// The exit statuses besides 0 (done), 1 (an error of no status below), 2
// (a usage error) and 128 + a signal's number (interrupted: 129 SIGHUP,
// 130 SIGINT, 143 SIGTERM). NB: a script told them apart only by
// stderr's words, a retry on a locked index from a document not found
// from damage (a scripting operator's CL3).
const (
	// exitNotFound: a document named is not stored (get, explain, query
	// --id, delete, a pairs file's id): db.ErrNotFound.
	exitNotFound = 3
	// exitDamaged: the index is damaged (db.ErrCorrupt), or check found
	// problems.
	exitDamaged = 4
	// exitFormat: the index's format does not allow the command: one this
	// build does not open, older (db.ErrFormat: lshdb upgrade rewrites it)
	// or newer (db.ErrFormatTooNew: an lshdb that reads it), or a format 2
	// index given a TTL (db.ErrFormat too: its message says what to do,
	// upgrade mending only a text index). NB: they shared 1
	// with every unnamed error, and a rollout script could not tell
	// "needs an upgrade" without parsing stderr (a compatibility review).
	exitFormat = 5
	// exitBusy: another process holds the index (db.ErrLocked: its
	// owner does not answer, or serves it to another user, or the
	// command must own the index itself: upgrade, drop, serve, a
	// salvage; a Redis index in use for drop or check --repair), or owns
	// it to read only while this command writes: the same command may
	// succeed once that process has ended (75 is sysexits' EX_TEMPFAIL).
	exitBusy = 75
	// exitPipe: the output's reader went away (| head), as a shell
	// reports a process that SIGPIPE ended (lshdb ignores the signal and
	// stops at its next write).
	exitPipe = 141
)

// exitStatuses is the root help's list of the exit statuses.
const exitStatuses = `Exit status, for every command: 0 done; 1 an error none of these names
(a missing index or input file, a bad record, a full disk, a store
stopped at a write it could not finish); 2 a usage
error; 3 a document named is not stored; 4 the index is damaged, or check
found problems; 5 the index's format is older than this build opens (lshdb
upgrade rewrites it) or newer, or too old for a TTL (the message says what
to do); 75 the index is busy (another process holds it and does
not serve it, or serves it while this command must own it, as upgrade,
drop, restore and serve must, or serves it reading only to a command that
writes): try again once that process has ended; 141 the output was
closed early (| head); 129, 130, 143 interrupted (SIGHUP, SIGINT,
SIGTERM). A scripted shell exits 1 if any statement failed.`

// problemsFound is check's error when it ran and found problems: exit
// exitDamaged, as damage that stopped it.
type problemsFound struct{ msg string }

func (p problemsFound) Error() string { return p.msg }

func (a *app) exitCode(err error) int {
	if a.brokenPipe(err) {
		return exitPipe
	}
	if err == nil && a.outErr() != nil {
		err = fmt.Errorf("writing the output: %w", a.out.err)
	}
	if err == nil {
		return 0
	}
	msg := err.Error()
	// NB: a message may hold a file name from a directory input or an
	// archive; its control characters are shown escaped (R5). Only
	// cobra's own "unknown command" message spans lines ("Did you mean
	// this?"); each of its lines is escaped.
	line := plainMessage(msg)
	if strings.HasPrefix(line, "unknown command") {
		lines := strings.Split(strings.TrimRight(line, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.ReplaceAll(escControls(l), `\t`, "\t")
		}
		line = strings.Join(lines, "\n")
	} else {
		line = escControls(line)
	}
	if m := mismatchLine(err); m != "" {
		line = escControls(m)
	}
	// NB: not for a handle whose Redis index went under it, which its
	// message tells to close (an insert through it is refused again), for
	// what is not --db's index (notTheIndex: a restore's backup, which no
	// command makes but backup), nor for a restore stopped before its copy
	// took the index's name (which a write does not make anew).
	if errors.Is(err, db.ErrNotExist) && !strings.Contains(line, "since this handle opened it") && !errors.As(err, new(notTheIndex)) && !errors.As(err, new(*db.RestoreStoppedError)) {
		line += " (lshdb create, insert or build makes an index)"
	}
	if errors.Is(err, db.ErrDiskFull) {
		line = optionNames(err, line)
	}
	var logDamage *db.LogDamageError
	if errors.Is(err, db.ErrCorrupt) && !errors.As(err, &logDamage) && !db.Advised(err) {
		// NB: a damaged log's message says what to do (check --repair
		// accepts the loss): "records cannot mend it: restore a backup"
		// after it contradicted it (a maintainer's review).
		//
		// NB: by the kind of damage: every corrupt error advised check
		// --repair, check --repair's own on a table whose checksum fails
		// too, which sent the reader round in a loop.
		if db.Repairable(err) {
			line += "; the index is damaged where its records tell what it should hold: lshdb check --repair mends it (lshdb backup --copy first keeps the index as it is)"
		} else if db.IsRedisURL(a.dbDir) {
			// NB: a directory's steps (cp -a) for an index on Redis (an
			// operator's review, R4).
			line += "; the index is damaged where its records cannot mend it: restore it from a backup (lshdb export --all --db BACKUP, then lshdb insert into a new index; expiries are not kept) or build it again from its inputs"
		} else {
			line += "; the index is damaged where its records cannot mend it: restore a backup of it (lshdb restore --from BACKUP --db DIR --verify, which keeps the damaged index aside; a backup made without --copy on the same disk shares the index's tables, and their damage) or build it again from its inputs"
		}
	}
	if errors.Is(err, context.Canceled) {
		line += a.partialOutput()
	}
	if a.errLog != nil {
		a.errLog.Error("lshdb: " + line)
	} else {
		fmt.Fprintln(a.stderr, "lshdb: "+line)
	}
	if errors.Is(err, context.Canceled) {
		// NB: the shell's own handler names the signal that ended it in
		// err (main's handler takes only the first signal).
		var sc signalCause
		if !errors.As(err, &sc) {
			sc, _ = context.Cause(a.root).(signalCause)
		}
		switch sc.sig {
		case syscall.SIGTERM:
			return 143 // terminated, as a shell reports SIGTERM
		case syscall.SIGHUP:
			return 129 // hung up, as a shell reports SIGHUP
		}
		return 130 // interrupted, as a shell reports SIGINT
	}
	var ue usageError
	// NB: a flag that contradicts the index's parameters (--bands 8 for
	// an index of 16) is a usage error: the command line is what to fix
	// (a bad-input review, B10: it exited 1, as an error of the index).
	if errors.As(err, &ue) || errors.Is(err, db.ErrInvalidOptions) || mismatchLine(err) != "" {
		return 2
	}
	// NB: before cobra's usage errors, which are told by their text: an
	// id or a path holding "required flag" made a document not found, or
	// a locked index, a usage error (a read-through's R1).
	var pe *fs.PathError
	switch {
	case errors.Is(err, syscall.EPIPE) && (errors.Is(a.outErr(), syscall.EPIPE) || errors.As(err, &pe)):
		// NB: a write command's "stored …; stopped: … broken pipe", and
		// an --out file that is a pipe (--out /dev/stdout | head), not
		// the socket of an attached command's server (a *net.OpError).
		return exitPipe
	case errors.Is(err, db.ErrNotFound):
		return exitNotFound
	case errors.Is(err, db.ErrCorrupt) || errors.As(err, new(problemsFound)):
		return exitDamaged
	case errors.Is(err, db.ErrFormat) || errors.Is(err, db.ErrFormatTooNew):
		return exitFormat
	case errors.Is(err, db.ErrLocked) || errors.Is(err, errInUse) || errors.Is(err, httpapi.ErrSocketInUse) ||
		errors.Is(err, db.ErrReadOnly) && (strings.Contains(msg, httpapi.OwnerReadsOnly) || strings.Contains(msg, httpapi.ServerReadsOnly)):
		return exitBusy
	}
	// NB: cobra's own usage errors (an unknown command or flag, a missing
	// argument) are plain errors; they are told by their text.
	if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "invalid argument") || strings.Contains(msg, "required flag") {
		return 2
	}
	return 1
}

// partialOutput says, for an interrupted command whose output is data
// (pairs, clusters, export, filter: the commands with --out), that what
// it wrote to a file or a pipe on standard output is a part: pairs >
// p.jsonl stopped by Ctrl-C left whole lines, the identical sets that
// --sort=false writes first, a file that read as a complete one (a
// review at scale, S10-4). Nothing for a terminal, nothing written,
// --out's file (removed, and never a.out here), or a command whose
// output is a summary, or the shell's statements, each whole (a
// read-through: it said so of dedup's and a shell's).
func (a *app) partialOutput() string {
	if a.out == nil || a.out.written == 0 || !a.dataOutput {
		return ""
	}
	what := a.out.kind()
	if what == "" {
		return ""
	}
	return fmt.Sprintf(" (standard output, %s, holds the %s written before it: a part that may read as whole; --out FILE leaves no part behind)", what, humanBytes(a.out.written))
}

// plainMessage returns an error's text without the "lshdb: " that package
// db puts before each of its errors, wherever a wrap left one: at the
// start, after ": " or "; " ("committed …; stopped: lshdb: disk full:
// lshdb: …"), not inside a quoted id. The command prints one itself, so
// that every error line starts with exactly one "lshdb: ".
func plainMessage(msg string) string {
	const prefix = "lshdb: "
	if !strings.Contains(msg, prefix) {
		return msg
	}
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(msg):
			b.WriteByte(c)
			i++
			c = msg[i]
		case c == '"':
			inQuote = !inQuote
		case !inQuote && strings.HasPrefix(msg[i:], prefix) &&
			(i == 0 || strings.HasSuffix(msg[:i], ": ") || strings.HasSuffix(msg[:i], "; ")):
			i += len(prefix) - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "lshdb",
		Short:         "Build, query and inspect near-duplicate indexes",
		Long:          "lshdb finds near-duplicate documents: MinHash signatures and LSH banding find candidates, exact Jaccard similarity decides.\nAn index is a directory (--db) holding a Pebble store, or an index on a Redis Cluster (--db redis+cluster://HOST:PORT,…/NAME).\n\n" + exitStatuses,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(fmt.Sprintf("lshdb {{.Version}} (%s, %s)\n", formatNote(), runtime.Version()))
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// NB: pflag takes -1 for the shorthand flag 1 ("unknown
		// shorthand flag: '1' in -1"): say what was meant.
		if _, w, ok := strings.Cut(err.Error(), "' in "); ok && strings.HasPrefix(err.Error(), "unknown shorthand flag") && isNegativeNumber(w) {
			return negativeArgError(c.Name(), w)
		}
		if m := flagValueMessage(err.Error()); m != "" {
			return usagef("%s", m)
		}
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			// NB: the shell suggested the nearest flag, the command did
			// not (an analyst's review of the shell, SH7).
			var known []string
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					known = append(known, f.Name)
				}
			})
			if hint := didYouMean(name, known, "--"); hint != "" {
				return usagef("%s%s (lshdb %s --help lists its flags)", err.Error(), hint, c.Name())
			}
		}
		return usageError{err}
	})
	root.PersistentFlags().Int64Var(&a.diskReserveMiB, "disk-reserve", 0, "free space, in MiB, below which writes to a Pebble index are refused as a full disk (0: the default, 64 MiB; -1: no check, at the risk of Pebble running out of room mid-write, which can end the process with a fatal error, or stop the index's writes until it is opened again; acknowledged writes are kept)")
	root.PersistentFlags().StringVar(&a.output, "output", "table", "output format: table or json (JSON Lines); pairs also csv or tsv (a long table is aligned 1,000 rows at a time, as they come: json, csv or tsv for a program)")
	root.PersistentFlags().StringVar(&a.progressMode, "progress", progressAuto, "how work shows progress on stderr: auto (a bar on a terminal, else a line every --progress-every), bar, log or none")
	root.PersistentFlags().DurationVar(&a.progressEvery, "progress-every", defaultProgressEvery, "time between two progress lines (--progress log, or auto without a terminal)")
	root.PersistentFlags().BoolVar(&a.quiet, "quiet", false, "print on stderr only errors and warnings (lines beginning \"lshdb: \" that are not notes): no progress, notes or summaries; the summary a write or maintenance command (build, insert, delete, create, compact, purge, backup, restore, upgrade, drop, report) prints on stdout goes too, unless --output json asks for it (for cron jobs: a run that succeeds prints nothing); what a flag asks for (pairs --stats) stays")
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if a.command == "" {
			a.command = c.CommandPath() // NB: the first: a shell's statements run inside "lshdb shell"
			// NB: a command whose output is data (rows, records) has
			// --out; the rest print summaries (partialOutput).
			a.dataOutput = c.Flags().Lookup("out") != nil
		}
		if err := a.checkProgressFlags(); err != nil {
			return err
		}
		if a.quiet {
			// NB: a nightly operator's review, N2: a run that succeeded
			// still wrote its summary and notes, a cron mail every night.
			a.progressMode = progressNone
			if ew, ok := a.stderr.(*errWriter); ok {
				stderrMu.Lock()
				ew.quiet = true
				stderrMu.Unlock()
			}
		}
		if a.diskReserveMiB < -1 || a.diskReserveMiB > math.MaxInt64>>20 {
			// NB: one past it wrapped around to a negative reserve: no check.
			return usagef("--disk-reserve %d: give MiB (at most %d), 0 for the default or -1 for no check", a.diskReserveMiB, int64(math.MaxInt64>>20))
		}
		if flushRoom := int64(8 + 2*db.DefaultMemTableSize>>20); a.diskReserveMiB > 0 && a.diskReserveMiB < flushRoom {
			// NB: a reserve of 2 MiB let an insert fill the disk to 0
			// bytes free (the flush of its writes failing), and the
			// index then opened for writing only once space was freed
			// outside it (a crash-safety review).
			fmt.Fprintf(a.stderr, "lshdb: note: --disk-reserve %d is below the room a flush of the index's writes needs (about %d MiB): a write may fill the disk, and then the index opens for writing only once space is freed outside it\n", a.diskReserveMiB, flushRoom)
		}
		if a.diskReserveMiB == -1 {
			// NB: the riskier choice said no word where a small reserve
			// did (an operator's review, OP-5).
			fmt.Fprintln(a.stderr, "lshdb: note: --disk-reserve -1: no free-space check: a write may fill the disk, and then the index opens for writing only once space is freed outside it")
		}
		if (a.output == "csv" || a.output == "tsv") && c.Name() != "pairs" {
			return usagef("--output %s is for pairs only (use table or json)", a.output)
		}
		if a.output != "table" && a.output != "json" && a.output != "csv" && a.output != "tsv" {
			return usagef("--output must be table or json (pairs: also csv or tsv), not %q", a.output)
		}
		if db.IsRedisURL(a.dbDir) {
			a.redisPasswordInArgs = redisPasswordInURL(a.dbDir)
		}
		if a.dbDir != "" && !db.IsRedisURL(a.dbDir) {
			// NB: as db.Open takes it: "link/../idx" is where the system
			// resolves it, for the socket, the lock's owner and every
			// other file the command finds beside the index too (serve
			// made its socket in the lexical idx/, which did not exist).
			a.dbDir = fspath.ResolveDotDot(a.dbDir)
		}
		if a.cpuProfile != "" && a.stopProfile == nil {
			if err := intoIndex(a.cpuProfile); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := refuseStrangersLink(a.cpuProfile); err != nil { // NB: SEC2-6, see --rejects
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			f, err := os.Create(a.cpuProfile)
			if err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return fmt.Errorf("--cpuprofile: %w", cannotWrite(a.cpuProfile, err))
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return err
			}
			a.stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		}
		return nil
	}
	root.AddCommand(a.createCmd(), a.insertCmd("insert"), a.buildCmd(), a.queryCmd(), a.pairsCmd(),
		a.clustersCmd(), a.filterCmd(), a.exportCmd(), a.dedupCmd(), a.getCmd(), a.deleteCmd(), a.infoCmd(), a.statsCmd(), a.reportCmd(), a.bucketsCmd(), a.bucketCmd(),
		a.explainCmd(), a.tuneCmd(), a.checkCmd(), a.purgeCmd(), a.compactCmd(), a.dropCmd(), a.upgradeCmd(), a.shellCmd(), a.benchCmd(), a.genCmd(), a.versionCmd(),
		a.serveCmd(), a.backupCmd(), a.restoreCmd())
	// NB: --db and --cpuprofile are flags of the commands that use them,
	// not of the root, so that gen, version, help and completion do not
	// list them (C25). Inside the shell the index is the shell's and no
	// flag may name a file (R12, R13): they do not exist there.
	if a.shellDB == nil {
		for _, c := range root.Commands() {
			if !slices.Contains([]string{"gen", "version", "serve", "backup", "restore", "upgrade", "bench", "create"}, c.Name()) {
				c.Flags().StringVar(&a.addr, "addr", "", "attach to the lshdb serve at this URL (http(s)://HOST:PORT; token from $LSHDB_TOKEN) instead of --db")
			}
			if !slices.Contains([]string{"gen", "version"}, c.Name()) {
				c.Flags().StringVar(&a.dbDir, "db", "", "index directory, or an index on Redis: redis+cluster://HOST:PORT,…/NAME (redis://HOST:PORT/NAME for one server)")
				c.Flags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (for go tool pprof)")
			}
		}
	}
	// NB: help of a topic that is no command is a usage error (exit 2, on
	// stderr), as the command itself is: cobra's help printed "Unknown
	// help topic" and the root's help on stdout, and exited 0 (a
	// scripting operator's CL9).
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" && c.Run != nil {
			show := c.Run
			c.Run = nil
			c.RunE = func(c *cobra.Command, args []string) error {
				if found, _, err := c.Root().Find(args); len(args) > 0 && (found == nil || err != nil) {
					return usagef("no help topic %q: lshdb help lists the commands", strings.Join(args, " "))
				}
				show(c, args)
				return nil
			}
		}
	}
	return root
}

// version returns the module version the command was built from:
// a release tag, a pseudo-version from the VCS stamp, or "(devel)".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The command's version and the index format it reads and writes",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if a.json() {
				return a.emitJSON(versionJSON{Version: version(), FormatVersion: codec.FormatVersion, GoVersion: runtime.Version(), Inflater: inflate.Name})
			}
			_, err := fmt.Fprintf(a.stdout, "lshdb %s (%s, %s)\n", version(), formatNote(), runtime.Version())
			return err
		},
	}
}

// nArgs returns a cobra.PositionalArgs that wants exactly n arguments.
// idArgs is nArgs for a command whose n arguments are document ids: an
// id no document can have (empty, too long, not UTF-8) is a usage error
// (exit 2), as any malformed argument, where it was an error of the
// index (exit 1). It wraps db.ErrInvalidID.
func idArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := nArgs(n)(c, args); err != nil {
			return err
		}
		return checkIDArgs(args)
	}
}

// checkIDArgs refuses, as a usage error, the first of the ids given as
// arguments that no document can have.
func checkIDArgs(ids []string) error {
	for _, id := range ids {
		if err := db.CheckID(id); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// usageOf is c's usage line as an error names it: in the shell, its
// form there and where its help is.
func usageOf(c *cobra.Command) string {
	if _, ok := c.Root().Annotations[inShell]; ok {
		return c.Use + "; type help " + c.Name()
	}
	return c.UseLine()
}

// argvKey is the root command's annotation that holds the command line's
// words (setArgv), NUL-separated.
const argvKey = "lshdb-argv"

// setArgv keeps args, the words of root's command line, for valueFollowedBy.
func setArgv(root *cobra.Command, args []string) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[argvKey] = strings.Join(args, "\x00")
}

// valueFollowedBy reports whether the words extra came right after flag
// f's value on c's command line: query --text hello world, whose value
// lacks its quotes. NB: report extra --out x.html was told to quote
// --out "x.html extra" (an inspection review's SH-8). Where the line is
// not known, it says so.
func valueFollowedBy(c *cobra.Command, f *pflag.Flag, extra []string) bool {
	line, ok := c.Root().Annotations[argvKey]
	if !ok {
		return true
	}
	words := strings.Split(line, "\x00")
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		next := -1
		switch {
		case w == "--"+f.Name || f.Shorthand != "" && w == "-"+f.Shorthand:
			next = i + 2
		case strings.HasPrefix(w, "--"+f.Name+"="):
			next = i + 1
		}
		if next >= 0 {
			return next+len(extra) <= len(words) && slices.Equal(words[next:next+len(extra)], extra)
		}
	}
	return false
}

func nArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		use := usageOf(c)
		takes := fmt.Sprintf("%d arguments", n)
		switch n {
		case 0:
			takes = "no arguments"
		case 1:
			takes = "one argument"
		}
		if f := onlyTextFlag(c); f != nil && len(args) > n && valueFollowedBy(c, f, args[n:]) {
			// NB: the usual cause: a flag's value with spaces, unquoted
			// (query --text hello world).
			extra := strings.Join(args[n:], " ")
			return usagef("%s takes %s, got %d: %q (a value with spaces needs quotes: --%s %q; usage: %s)",
				c.Name(), takes, len(args), extra, f.Name, f.Value.String()+" "+extra, use)
		}
		if len(args) > n {
			if err := flagsAfterDash(c, args, fmt.Sprintf("%s takes %s, got %d", c.Name(), takes, len(args))); err != nil {
				return err
			}
		}
		if len(args) > n && c.Name() == "explain" {
			// NB: ids with spaces (every id of a corpus of verses,
			// "Exodus 6:10"), unquoted: a newcomer's first try (N2-6).
			// get takes several ids, and says so itself.
			return usagef("%s takes %s, got %d: ids with spaces need quotes: %s \"FIRST ID\" \"SECOND ID\" (usage: %s)", c.Name(), takes, len(args), c.Name(), use)
		}
		return usagef("%s takes %s, got %d (usage: %s)", c.Name(), takes, len(args), use)
	}
}

// flagsAfterDash refuses, as said, words after -- that name flags of c:
// most likely flags misplaced, as get -- --dash --output json.
func flagsAfterDash(c *cobra.Command, args []string, said string) error {
	if dash := c.ArgsLenAtDash(); dash >= 0 && slices.ContainsFunc(args[dash:], func(w string) bool { return isFlagOf(c, w) }) {
		// NB: get -- --dash --output json said "takes one argument,
		// got 3" and no more (an analyst's review of the shell, SH4).
		return usagef("%s: every word after -- is an argument, a flag too: put the flags before -- (usage: %s)", said, usageOf(c))
	}
	return nil
}

// isFlagOf reports whether the word w names one of c's flags (--name,
// --name=value, or -x for a shorthand): a word after -- that does is
// most likely a flag misplaced, not an id that starts with - (get -- -a
// -b is two ids: a read-through's R10).
func isFlagOf(c *cobra.Command, w string) bool {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		return name != "" && c.Flags().Lookup(name) != nil
	}
	return len(w) == 2 && w[0] == '-' && c.Flags().ShorthandLookup(w[1:]) != nil
}

// onlyTextFlag returns the one string flag given to c, if exactly one was
// (the index's --db and the output's flags aside), else nil.
func onlyTextFlag(c *cobra.Command) *pflag.Flag {
	var only *pflag.Flag
	n := 0
	c.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "db", "output", "progress", "cpuprofile":
			return
		}
		if f.Value.Type() == "string" {
			only = f
			n++
		}
	})
	if n != 1 {
		return nil
	}
	return only
}

func (a *app) needDB() error {
	// NB: --addr names the index too (a server's): insert, build and
	// dedup said "--db DIR is required" with it, which their help said
	// they attach with (a review).
	if a.dbDir == "" && a.addr == "" {
		return usagef("--db DIR is required")
	}
	return nil
}

// openDB opens the index (or returns the shell's). The caller MUST call
// the returned close function.
//
// NB: when another process owns the index and serves it (lshdb serve),
// it attaches to its socket instead, and with --addr to that server.
func (a *app) openDB(opts *db.Options) (index, func(), error) {
	if a.shellDB != nil {
		return a.shellDB, func() {}, nil
	}
	return a.openFresh(opts)
}

// openFresh is openDB without the shell's index: it opens, or attaches.
func (a *app) openFresh(opts *db.Options) (index, func(), error) {
	// NB: a read-only open too: pairs, clusters and filter spill into
	// the index's directory under the reserve, and --disk-reserve did not
	// reach them, while their disk-full error named it.
	var o db.Options
	if opts != nil {
		o = *opts
	}
	opts = a.writeOptions(&o)
	if a.addr != "" {
		c, err := a.connect(opts)
		if err != nil {
			return nil, nil, err
		}
		return c, func() { c.Close() }, nil
	}
	if err := a.needDB(); err != nil {
		return nil, nil, err
	}
	if db.IsRedisURL(a.dbDir) {
		// NB: no lock, no owner, no socket: every process opens a Redis
		// index itself, and many may at once.
		d, err := db.Open(a.dbDir, opts)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	}
	// NB: an owner that is ending stops serving before it releases the
	// lock (it closes the index last): for that moment the index is
	// locked and nothing answers on its socket. Such a holder is retried
	// for handoverWait before the error names it.
	held := newHeldWait()
	for {
		d, err := db.Open(a.dbDir, opts)
		if errors.Is(err, db.ErrLocked) {
			c, cerr := attach(a.ctx, a.dbDir, opts)
			var refused *client.Error
			switch {
			case cerr == nil:
				// NB: should this owner end while the command runs, its
				// calls go on with the next owner (handover). The index
				// must still be there, with the same parameters: one
				// dropped or moved meanwhile is not made anew.
				again := db.Options{}
				if opts != nil {
					again = *opts
				}
				again.MustExist = true
				// NB: and the same index, not one built anew in its place
				// with the same parameters (its instance, see db.Info).
				instance := c.Instance()
				h := newHandover(c, func() { c.Close() }, func() (index, func(), error) {
					d, closeDB, err := a.openFresh(&again)
					if err != nil {
						return nil, nil, err
					}
					if hd, ok := d.(*handover); ok {
						d, closeDB = hd.cur, hd.close // NB: one wrapper, not nested
					}
					if !sameParams(d.Params(), c.Params()) {
						closeDB()
						return nil, nil, fmt.Errorf("%w: the index at %s is not the one this command attached to", db.ErrParamsMismatch, a.dbDir)
					}
					// NB: an index without an instance (made by an earlier
					// build) says nothing either way.
					if now := d.Instance(); instance != "" && now != "" && now != instance {
						closeDB()
						return nil, nil, fmt.Errorf("%w: the index at %s is not the one this command attached to: it was built anew in its place (instance %s, not %s); nothing more was written", errOtherIndex, a.dbDir, now, instance)
					}
					if _, local := d.(*db.DB); local {
						// NB: an operator restarting the server must know who
						// holds the index now (a review, S1: nothing said so).
						// The owner was not always a server: every command
						// that opens an index serves its socket (a review).
						// NB: a serve waits for a batch command, not for a
						// shell (a person's session): it fails beside one
						// (serve's open), which the note had promised it
						// waited for (a review).
						then := "a serve started meanwhile waits for it"
						if a.command == shellOwner {
							then = "a serve started meanwhile fails, naming it, until this shell is left"
						}
						a.notef(fmt.Sprintf("the process that owned %s and served its socket (lshdb serve, or a command such as insert) has ended: this command (pid %d) opened the index itself and goes on; it serves the index's socket until it ends, and %s", escControls(a.dbDir), os.Getpid(), then))
					}
					return d, closeDB, nil
				})
				h.waitReadOnly, h.ctx, h.note = a.command != shellOwner, a.ctx, a.notef
				h.health = func() (httpapi.HealthJSON, error) { return socketHealth(a.dbDir) }
				return h, h.closeAll, nil
			case errors.As(cerr, &refused) || errors.Is(cerr, db.ErrParamsMismatch):
				return nil, nil, cerr // the owner answered, and refused (a token, a parameter)
			case errors.Is(cerr, db.ErrInvalidOptions):
				// NB: the client's own (a token it cannot send): taken for
				// "nothing serves it", it said to kill the healthy owner.
				return nil, nil, cerr
			case errors.Is(cerr, client.ErrForeignSocket):
				// NB: not "nothing serves it": the message then named the
				// socket's process as the index's owner.
				return nil, nil, cerr
			case a.ctx.Err() != nil:
				return nil, nil, fmt.Errorf("%w while waiting for the process that owns %s to answer: nothing was done%w", context.Cause(a.ctx), a.dbDir, silently{context.Canceled})
			case errors.Is(cerr, context.DeadlineExceeded):
				return nil, nil, stuckOwner(err, a.dbDir, attachTimeout)
			}
			// Nothing serves it: the error says who holds it.
			if held.again(a) {
				continue
			}
		}
		if err != nil {
			return nil, nil, lockedHint(err, a.dbDir)
		}
		a.opened = append(a.opened, d)
		// NB: every owner serves, readers too (a long pairs or check):
		// others attach instead of finding the index locked; writes
		// through a read-only owner fail with ErrReadOnly.
		stop := a.serveOwnedOutput(d, !a.outputAfterClose)
		return d, func() {
			// NB: the index stays locked while it closes (a flush, and
			// Pebble's wait for its compactions: seconds after a large
			// build), no longer served: a command that found it so
			// waited 2 s and failed, naming this one as a holder that
			// "does not serve it" (a nightly operator's review, N6). It
			// is said to be closing, and such a command waits for it.
			closing := a.markClosing(d)
			stop()
			d.Close()
			closing()
		}, nil
	}
}

// markClosing says (markStoppingAs) that this command, the owner of the
// index d in a directory, is about to close it, and returns what takes
// that back once it is closed.
func (a *app) markClosing(d index) (done func()) {
	if _, local := d.(*db.DB); !local || a.dbDir == "" || db.IsRedisURL(a.dbDir) {
		return func() {}
	}
	markStoppingAs(a.dbDir, time.Now().Add(ownerCloseWait), cmp.Or(a.command, "lshdb"))
	return func() { os.Remove(stoppingPath(a.dbDir)) }
}

// errOtherIndex is the error of a command whose index was replaced by
// another (built anew in its place) while it ran.
var errOtherIndex = errors.New("lshdb: another index")

// handoverWait is how long a command retries an index that is locked by
// a process that does not serve it (an owner closing it, or a holder
// that never serves) before it fails naming that process.
const handoverWait = 2 * time.Second

// maxStopWait bounds how long a command waits for a serve that says it
// is stopping (lshdb.stopping).
const maxStopWait = 2 * time.Minute

// heldWait is how long a command retries an index locked by a process
// that does not serve it: for handoverWait, or, for a serve that says it
// is stopping, until its drain ends (at most maxStopWait).
type heldWait struct {
	deadline   time.Time
	waitedStop bool
}

func newHeldWait() *heldWait { return &heldWait{deadline: time.Now().Add(handoverWait)} }

// again reports whether to open the index again, having waited a moment
// (and said so once, for a stopping serve); false once the wait is over.
func (w *heldWait) again(a *app) bool {
	if !time.Now().Before(w.deadline) && !w.waitedStop {
		if until, command, ok := stoppingOwner(a.dbDir, lockholder.PID(a.dbDir)); ok {
			w.waitedStop = true
			w.deadline = minTime(until, time.Now().Add(maxStopWait))
			var line string
			if command != "" {
				line = fmt.Sprintf("lshdb: %s, which owned %s, is closing it: waiting for it (until %s at the latest)", escControls(command), escControls(a.dbDir), w.deadline.Format("15:04:05"))
			} else {
				line = fmt.Sprintf("lshdb: the server that owns %s is stopping: waiting for it (until %s at the latest)", escControls(a.dbDir), w.deadline.Format("15:04:05"))
			}
			if l := stopLog.Load(); l != nil {
				// NB: serve's, in its log's format (O4).
				l.Info(line)
			} else {
				fmt.Fprintln(a.stderr, line)
			}
		}
	}
	if !time.Now().Before(w.deadline) {
		return false
	}
	time.Sleep(20 * time.Millisecond)
	return true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// openExisting opens an index that must exist, for reading only.
//
// NB: read-only, so that reading needs no free disk space: a writable open
// writes a new WAL and MANIFEST, and is refused on a nearly full disk
// (db.ErrDiskFull).
func (a *app) openExisting() (index, func(), error) {
	d, closeDB, err := a.openDB(&db.Options{ReadOnly: true})
	if err == nil {
		fitMemoryLimit(d)
	}
	return d, closeDB, err
}

// perDocHeap is about what a read of the whole index holds a document
// (pairs, clusters, filter and export: ids, numbers, sizes, sketches,
// filter's fates): its peak RSS grew by about 148 bytes a document from
// 1 to 10 million generated documents (a review at scale).
const perDocHeap = 160

// fitMemoryLimit lifts the soft memory limit of a command that opened d
// in process to read it, unless GOMEMLIMIT set it, to heapLimit of what
// a read of the whole index holds: perDocHeap a document besides the
// command's budget (raiseMemoryLimit's: pairs' and clusters' --memory,
// raised before the index is opened), and at least the pairs' default
// budget (filter's and export's own clustering). It never lowers it.
//
// NB: at 10 million documents the live heap of pairs, clusters, filter
// and export (1.3 to 2.2 GB) passed the command's 768 MiB, and the
// collector ran without pause: export took 29-30x the CPU of 1 million
// documents, clusters 22x and pairs 19-20x, for 10x the documents, its
// pace falling as its heap grew (a review at scale, S10-2). Reads of a
// small index are not affected.
func fitMemoryLimit(d index) {
	dd, ok := d.(*db.DB)
	if !ok || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	n, err := dd.Count()
	if err != nil {
		return
	}
	held := max(heldBudget.Load(), db.DefaultPairsMemory) + int64(min(n, math.MaxInt64/(4*perDocHeap)))*perDocHeap
	if want := heapLimit(held); want > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(want)
	}
}

// withIndex runs fn on the existing index, opened read-only, and closes it
// afterwards.
func (a *app) withIndex(fn func(d index) error) error {
	d, closeDB, err := a.openExisting()
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(d)
}

// withWritableIndex is withIndex for a command that writes, opened with
// o (MustExist set).
func (a *app) withWritableIndex(o db.Options, fn func(d index) error) error {
	o.MustExist = true
	d, closeDB, err := a.openDB(&o)
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(d)
}

func (a *app) table() *tableWriter { return newTableWriter(a.stdout) }

func (a *app) json() bool { return a.output == "json" }

// delimited reports whether the output is CSV or TSV (pairs).
func (a *app) delimited() bool { return a.output == "csv" || a.output == "tsv" }

// stderrIsTerminal reports whether progress bars should be drawn.
func (a *app) stdoutIsTerminal() bool {
	if a.out == nil {
		return false
	}
	f, ok := a.out.w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stdoutFile returns the command's standard output when it is a file.
func (a *app) stdoutFile() (*os.File, bool) {
	if a.out == nil {
		return nil, false
	}
	f, ok := a.out.w.(*os.File)
	return f, ok
}

func (a *app) stderrIsTerminal() bool {
	f, ok := a.stderrFile()
	return ok && term.IsTerminal(int(f.Fd()))
}

// stderrFile is the file stderr writes to, if it is one.
func (a *app) stderrFile() (*os.File, bool) {
	w := a.stderr
	if e, ok := w.(*errWriter); ok {
		w = e.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// stderrWidth is the width of the terminal stderr writes to, 0 when it
// is none or does not say.
func (a *app) stderrWidth() int {
	f, ok := a.stderrFile()
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return max(width, 0)
}

// formatNote says which index formats this build writes and reads: new
// indexes are codec.FormatVersion; an older one keeps its format (a
// format 3 one becomes codec.ExpiryFormatVersion at its first document
// with a TTL).
func formatNote() string {
	return fmt.Sprintf("index format %d; reads and writes %d to %d; BGZF inflated by %s",
		codec.FormatVersion, codec.MinFormatVersion, codec.MaxFormatVersion, inflate.Name)
}

// mismatchFlags names the creation flag of each db.MismatchError field.
var mismatchFlags = map[string]string{
	"Threshold": "--threshold", "Recall": "--recall", "NumPerm": "--num-perm", "Scheme": "--scheme",
	"Seed": "--seed", "Shingle": "--shingle", "ShingleSize": "--shingle-size", "Bag": "--bag",
	"Storage": "--storage", "StoreText": "--store-text", "Bands": "--bands", "Rows": "--rows",
	"Normalization": "--normalization", "StopWords": "--stop-words",
}

// mismatchLine is the message of an error made of the parameters a
// command's flags gave that differ from the index's (db.MismatchError,
// one or several), in flags: "" for any other error. NB: the library's
// own message names its Options fields, not the flags.
func mismatchLine(err error) string {
	var ms []*db.MismatchError
	var walk func(error)
	walk = func(e error) {
		if m, ok := e.(*db.MismatchError); ok {
			ms = append(ms, m)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	walk(err)
	if len(ms) == 0 {
		return ""
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		name := mismatchFlags[m.Field]
		if name == "" {
			name = m.Field
		}
		parts[i] = fmt.Sprintf("%s %v (given: %v)", name, m.Stored, m.Requested)
	}
	return fmt.Sprintf("the index was made with other parameters than the flags give: %s; leave them out (an index keeps the parameters it was made with), or give a new --db for an index of these", strings.Join(parts, ", "))
}

// badFlagValue is pflag's message for a value that does not parse.
var badFlagValue = regexp.MustCompile(`^invalid argument ("(?:[^"\\]|\\.)*") for "(.*)" flag: (.*)$`)

// flagValueMessage rewords pflag's message for a flag value that does not
// parse ("invalid argument "abc" for "--threshold" flag:
// strconv.ParseFloat: parsing "abc": invalid syntax") as what was
// expected; "" for any other message.
func flagValueMessage(msg string) string {
	m := badFlagValue.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	// NB: pflag quotes the value (%q): quoted again, it was escaped twice.
	value, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	flag, why := m[2], m[3]
	if strings.HasSuffix(why, "value out of range") {
		return fmt.Sprintf("%s %q: out of range", flag, value)
	}
	var want string
	switch {
	case strings.HasPrefix(why, "strconv.ParseFloat"):
		want = "a number"
	case strings.HasPrefix(why, "strconv.ParseUint"):
		want = "a whole number, 0 or more"
	case strings.HasPrefix(why, "strconv.ParseInt"):
		want = "a whole number"
	case strings.HasPrefix(why, "strconv.ParseBool"):
		want = "true or false"
	case strings.HasPrefix(why, "time:") && durationSyntax.MatchString(value):
		// NB: Go says "invalid duration" of one past its range too.
		return fmt.Sprintf("%s %q: out of range (a duration is at most %v, about 292 years)", flag, value, time.Duration(math.MaxInt64))
	case strings.HasPrefix(why, "time:"):
		want = "a duration such as 90s, 30m or 1h"
	default:
		return ""
	}
	return fmt.Sprintf("%s %q: not %s", flag, value, want)
}

// durationSyntax matches what time.ParseDuration reads, range aside.
var durationSyntax = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// writeOptions sets, in o (made if nil), what the global flags say of an
// open: --disk-reserve (a read-only one spills pairs under it).
func (a *app) writeOptions(o *db.Options) *db.Options {
	if o == nil {
		o = &db.Options{}
	}
	switch {
	case a.diskReserveMiB > 0:
		o.DiskReserve = a.diskReserveMiB << 20
	case a.diskReserveMiB < 0:
		o.DiskReserve = -1
	}
	return o
}

// notTheIndex marks an error (db.ErrNotExist) of a missing index that is
// not the one --db names (a restore's backup): the hint that create,
// insert or build makes one does not fit it. It was told by the words of
// its message (a read-through's R15).
type notTheIndex struct{ error }

func (e notTheIndex) Unwrap() error { return e.error }

// optionNames names the command's flag where msg, the message of err,
// names the library option it sets; for an error a server reported (an
// attached command), the server's flag.
func optionNames(err error, msg string) string {
	if ce := (*client.Error)(nil); errors.As(err, &ce) {
		// NB: an attached command's own --disk-reserve, which the message
		// named, changes nothing: the server's reserve applies.
		return strings.ReplaceAll(msg, "(Options.DiskReserve)", "(the server's: lshdb serve --disk-reserve MiB, at its start)")
	}
	msg = strings.ReplaceAll(msg, "(RestoreOptions.DiskReserve)", "(Options.DiskReserve)")
	return strings.ReplaceAll(msg, "(Options.DiskReserve)", "(--disk-reserve MiB changes it)")
}

// redisPasswordInURL reports whether the Redis URL u holds a password (on
// the command line, which every local user may read: ps; serve warns).
// NB: LSHDB_REDIS_PASSWORD gives one instead (rediskv.PasswordEnv): the
// password could be given in --db alone (an operator's review of Redis,
// RD6).
func redisPasswordInURL(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return strings.Contains(u, "@") // NB: db.Open names what is wrong with it
	}
	_, has := parsed.User.Password()
	return has
}
