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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"text/tabwriter"

	"github.com/lshdb/lshdb/db"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		// NB: a soft limit makes the garbage collector work harder as the
		// heap nears it, instead of letting it double past its live data:
		// bulk builds and pairs stay under about 1 GiB. GOMEMLIMIT
		// overrides it.
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// defaultMemoryLimit is the soft memory limit of the command's Go heap.
const defaultMemoryLimit = 768 << 20

// raiseMemoryLimit lifts the soft memory limit for a command that holds
// budget bytes of sorted data, unless GOMEMLIMIT set it.
//
// NB: a live heap at the soft limit makes the collector run without pause:
// a build whose sort budget (1 GiB) exceeded the limit ran 18,000
// collections and took 1.6x as long.
func raiseMemoryLimit(budget int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(max(defaultMemoryLimit, int64(budget)*2+256<<20))
	}
}

// usageError marks an error in how the command was called (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// app is one invocation's state: its streams, global flags, and (in the
// shell) the database it holds open.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dbDir          string
	output         string
	cpuProfile     string
	stopProfile    func()
	shellDB        *db.DB // set inside the shell: commands reuse it
}

// run executes one command line and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if a.stopProfile != nil {
		a.stopProfile()
	}
	return a.exitCode(err)
}

func (a *app) exitCode(err error) int {
	if err == nil {
		return 0
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "lshdb: ") {
		msg = "lshdb: " + msg
	}
	fmt.Fprintln(a.stderr, msg)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, db.ErrInvalidOptions) ||
		strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "invalid argument") || strings.Contains(msg, "required flag") {
		return 2
	}
	return 1
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "lshdb",
		Short:         "Build, query and inspect near-duplicate indexes",
		Long:          "lshdb finds near-duplicate documents: MinHash signatures and LSH banding find candidates, exact Jaccard similarity decides.\nAn index is a directory (--db) holding a Pebble store.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.dbDir, "db", "", "index directory")
	root.PersistentFlags().StringVar(&a.output, "output", "table", "output format: table or json (JSON Lines)")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (for go tool pprof)")
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if a.output != "table" && a.output != "json" {
			return usagef("--output must be table or json, not %q", a.output)
		}
		if a.cpuProfile != "" && a.stopProfile == nil {
			f, err := os.Create(a.cpuProfile)
			if err != nil {
				return err
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
		a.clustersCmd(), a.dedupCmd(), a.getCmd(), a.deleteCmd(), a.statsCmd(), a.bucketsCmd(), a.bucketCmd(),
		a.explainCmd(), a.tuneCmd(), a.checkCmd(), a.purgeCmd(), a.shellCmd(), a.benchCmd(), a.genCmd())
	return root
}

// args returns a cobra.PositionalArgs that wants exactly n arguments.
func nArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d (usage: %s)", c.Name(), n, len(args), c.UseLine())
		}
		return nil
	}
}

func (a *app) needDB() error {
	if a.dbDir == "" {
		return usagef("--db DIR is required")
	}
	return nil
}

// openDB opens the index (or returns the shell's). The caller MUST call
// the returned close function.
func (a *app) openDB(opts *db.Options) (*db.DB, func(), error) {
	if a.shellDB != nil {
		return a.shellDB, func() {}, nil
	}
	if err := a.needDB(); err != nil {
		return nil, nil, err
	}
	d, err := db.Open(a.dbDir, opts)
	if err != nil {
		return nil, nil, err
	}
	return d, func() { d.Close() }, nil
}

// openExisting opens an index that must exist.
func (a *app) openExisting() (*db.DB, func(), error) {
	return a.openDB(&db.Options{MustExist: true})
}

// withIndex runs fn on the existing index and closes it afterwards.
func (a *app) withIndex(fn func(d *db.DB) error) error {
	d, closeDB, err := a.openExisting()
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(d)
}

// emit writes one result: a JSON line, or a table row through tw.
func (a *app) emitJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

func (a *app) table() *tabwriter.Writer { return tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0) }

func (a *app) json() bool { return a.output == "json" }

// stderrIsTerminal reports whether progress bars should be drawn.
func (a *app) stderrIsTerminal() bool {
	f, ok := a.stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
