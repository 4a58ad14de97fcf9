package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Ensure that the main commands' help has examples and that each runs as
// written (exit 0), in order, in a directory holding the files they name.
// A line "printf 'S' | lshdb ARGS" runs with stdin S.
func TestHelpExamples(t *testing.T) {
	docs, err := os.ReadFile("../../testdata/cmd/inputs/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	os.WriteFile("docs.jsonl", docs, 0o644)
	os.WriteFile("pages.csv", []byte("url,body\nhttps://a.example/,a page about a quick brown fox\nhttps://b.example/,a page about a quick brown fox!\n"), 0o644)
	os.Mkdir("notes", 0o755)
	os.WriteFile("notes/a.txt", []byte("the quick brown fox jumps over the lazy dog"), 0o644)
	os.WriteFile("notes/b.txt", []byte("notes on something else entirely"), 0o644)
	os.WriteFile("notes/c.bin", []byte("binary\x00data"), 0o644)
	os.WriteFile("ids.txt", []byte("fox1\nnope\n"), 0o644)
	root := (&app{}).rootCmd()
	for _, name := range []string{"insert", "build", "query", "pairs", "clusters", "shell", "delete", "info", "report"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Example == "" {
			t.Fatalf("%s: no examples (%v)", name, err)
		}
		n := 0
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			stdin := ""
			if rest, ok := strings.CutPrefix(line, "printf '"); ok {
				s, cmd, ok := strings.Cut(rest, "' | ")
				if !ok {
					t.Fatalf("%s: example %q", name, line)
				}
				stdin, line = strings.ReplaceAll(s, `\n`, "\n"), cmd
			}
			args, err := splitWords(line)
			if err != nil || len(args) < 2 || args[0] != "lshdb" || args[1] != name {
				t.Fatalf("%s: example %q is not a line of lshdb %s", name, line, name)
			}
			out, errOut, code := runLine(args[1:], stdin)
			if code != 0 {
				t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errOut)
			}
			n++
		}
		if n < 2 {
			t.Errorf("%s: %d examples, want at least 2", name, n)
		}
	}
}

// Ensure that --db and --cpuprofile are listed by the commands that take
// them and by no other (C25).
func TestHelpNamesOnlyUsedFlags(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want bool
	}{
		{"version", false}, {"gen", false}, {"completion", false},
		{"query", true}, {"tune", true}, {"bench", true}, {"create", true}, {"shell", true},
	} {
		out, errOut, code := runLine([]string{c.cmd, "--help"}, "")
		if code != 0 {
			t.Fatalf("%s --help: exit %d %s", c.cmd, code, errOut)
		}
		for _, flag := range []string{"--db", "--cpuprofile"} {
			if got := strings.Contains(out, flag); got != c.want {
				t.Errorf("%s --help lists %s: %v, want %v", c.cmd, flag, got, c.want)
			}
		}
	}
}

// Ensure that help of a topic that is no command is a usage error, as the
// command itself is (exit 2, said on stderr): it printed the root's help
// on stdout and exited 0 (a scripting operator's CL9); and that the
// root's help lists the exit statuses a script tells apart.
func TestHelpUnknownTopic(t *testing.T) {
	out, errOut, code := runLine([]string{"help", "bogsu"}, "")
	if code != 2 || out != "" || errOut != "lshdb: no help topic \"bogsu\": lshdb help lists the commands\n" {
		t.Errorf("help bogsu: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, _, code := runLine([]string{"bogsu"}, ""); code != 2 {
		t.Errorf("bogsu: exit %d, want 2", code)
	}
	out, errOut, code = runLine([]string{"help", "pairs"}, "")
	if code != 0 || !strings.Contains(out, "lshdb pairs --db DIR") || errOut != "" {
		t.Errorf("help pairs: exit %d, stdout %.80q, stderr %q", code, out, errOut)
	}
	out, _, code = runLine([]string{"help"}, "")
	for _, status := range []int{exitNotFound, exitDamaged, exitFormat, exitBusy, exitPipe} {
		if code != 0 || !strings.Contains(out, fmt.Sprintf(" %d ", status)) {
			t.Errorf("help: exit %d, no status %d in:\n%s", code, status, out)
		}
	}
}
