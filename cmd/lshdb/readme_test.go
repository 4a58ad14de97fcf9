package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure that the README's tour of the command runs as written from the
// repository's root: every line exits 0, and it writes only under $T (a
// temporary directory), never into the repository (review N5).
func TestReadmeTour(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := tourLines(t, string(readme))
	tmp := t.TempDir()
	t.Chdir("../..")
	before := repoFiles(t)
	for _, line := range lines {
		args := shellWords(t, strings.ReplaceAll(line, "$T", tmp))
		switch {
		case len(args) > 0 && args[0] == "T=$(mktemp":
			continue // the test's own temporary directory stands for it
		case len(args) > 0 && args[0] == "go":
			continue // the binary is this test's
		case len(args) == 0 || args[0] != filepath.Join(tmp, "lshdb"):
			t.Fatalf("tour line %q does not run $T/lshdb", line)
		}
		stdin := ""
		if args[1] == "shell" {
			stdin = "stats\nquery --id hunspell-fr\n"
		}
		out, errOut, code := runLine(args[1:], stdin)
		if code != 0 {
			t.Fatalf("%s\nexit %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errOut)
		}
		// NB: bucket ids change with the signature scheme; the tour's
		// bucket must still be one that buckets prints, not an empty one.
		if args[1] == "bucket" && strings.TrimSpace(out) == "" {
			t.Fatalf("%s: the bucket is empty (take one that `buckets --top 5` prints)", line)
		}
	}
	if after := repoFiles(t); after != before {
		t.Fatalf("the tour wrote into the repository:\nbefore %s\nafter  %s", before, after)
	}
}

// tourLines returns the command lines of the README's tour block, without
// their comments.
func tourLines(t *testing.T, readme string) []string {
	_, rest, ok := strings.Cut(readme, "### A tour of the command")
	if !ok {
		t.Fatal("README has no tour")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) < 10 {
		t.Fatalf("the tour has %d lines", len(lines))
	}
	return lines
}

// shellWords splits a command line as sh would for the tour's lines:
// spaces separate words, double quotes group them.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range line {
		switch {
		case r == '"':
			inQuote, have = !inQuote, true
		case r == ' ' && !inQuote:
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if inQuote {
		t.Fatalf("unterminated quote in %q", line)
	}
	if have {
		words = append(words, cur.String())
	}
	return words
}

// repoFiles lists the top level of the working directory.
func repoFiles(t *testing.T) string {
	names, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}
