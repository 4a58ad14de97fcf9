package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lshdb/lshdb/db"
	"github.com/peterh/liner"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// shellCommands are the commands the shell accepts (besides help and exit).
var shellCommands = []string{"stats", "buckets", "bucket", "get", "query", "explain", "pairs", "clusters", "tune", "check", "purge", "put", "delete", "help", "exit"}

func (a *app) shellCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "shell --db DIR",
		Short: "Interactive shell over one index (reads commands from stdin when it is not a terminal)",
		Args:  nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			d, closeDB, err := a.openDB(nil)
			if err != nil {
				return err
			}
			defer closeDB()
			a.shellDB = d
			defer func() { a.shellDB = nil }()
			if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				return a.interactive()
			}
			return a.script(a.stdin)
		},
	}
}

// script runs one command per line from r; a failing command prints its
// error and the script goes on; the exit status is 1 if any failed.
func (a *app) script(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	failed := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(a.stdout, "> %s\n", line)
		done, err := a.shellLine(line)
		if err != nil {
			fmt.Fprintf(a.stdout, "error: %v\n", err)
			failed++
		}
		if done {
			break
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d shell commands failed", failed)
	}
	return sc.Err()
}

func (a *app) interactive() error {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetCompleter(func(line string) (out []string) {
		for _, c := range shellCommands {
			if strings.HasPrefix(c, strings.ToLower(line)) {
				out = append(out, c)
			}
		}
		return out
	})
	// History persists in ~/.lshdb_history when the home directory allows.
	histPath := ""
	if home, err := os.UserHomeDir(); err == nil {
		histPath = filepath.Join(home, ".lshdb_history")
		if f, err := os.Open(histPath); err == nil {
			ln.ReadHistory(f)
			f.Close()
		}
	}
	defer func() {
		if histPath == "" {
			return
		}
		if f, err := os.Create(histPath); err == nil {
			ln.WriteHistory(f)
			f.Close()
		}
	}()
	fmt.Fprintf(a.stdout, "lshdb shell on %s; type help for commands, exit to leave\n", a.dbDir)
	for {
		line, err := ln.Prompt("lshdb> ")
		if errors.Is(err, io.EOF) || errors.Is(err, liner.ErrPromptAborted) {
			return nil
		}
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		ln.AppendHistory(line)
		done, err := a.shellLine(line)
		if err != nil {
			fmt.Fprintf(a.stdout, "error: %v\n", err)
		}
		if done {
			return nil
		}
	}
}

// shellLine runs one shell command. The read commands are the command
// line's own (same flags); put and delete are shell forms.
func (a *app) shellLine(line string) (done bool, err error) {
	words, err := splitWords(line)
	if err != nil || len(words) == 0 {
		return false, err
	}
	switch words[0] {
	case "exit", "quit":
		return true, nil
	case "help":
		fmt.Fprintln(a.stdout, `commands: stats | buckets [--band B] [--top N] | bucket BAND BUCKET | get ID
  query (--id ID | --text TEXT) [--threshold T] [--top K] | explain ID1 ID2
  pairs [--limit N] [--threshold T] | clusters | tune | check | purge
  put ID TEXT... | delete ID... | exit`)
		return false, nil
	case "put":
		if len(words) < 3 {
			return false, usagef("put ID TEXT...")
		}
		if err := a.shellDB.Put(words[1], strings.Join(words[2:], " ")); err != nil {
			return false, err
		}
		fmt.Fprintf(a.stdout, "stored %s\n", words[1])
		return false, nil
	case "delete", "stats", "buckets", "bucket", "get", "query", "explain", "pairs", "clusters", "tune", "check", "purge":
	default:
		return false, usagef("unknown command %q (type help)", words[0])
	}
	root := a.rootCmd()
	root.SetArgs(words)
	err = root.Execute()
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, db.ErrInvalidOptions) {
		return false, err
	}
	return false, err
}

// splitWords splits a shell line into words, honouring "double" and
// 'single' quotes.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, usagef("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
