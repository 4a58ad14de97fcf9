package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// attachable are the commands that attach to a served index (the others
// must own it, or take no index).
var attachable = []string{"query", "pairs", "clusters", "info", "stats", "buckets", "bucket", "explain", "check", "tune",
	"get", "insert", "dedup", "delete", "purge", "shell"}

// TestScriptsAttached runs testdata/cmd/scripts as TestScripts does, but
// every line of an attachable command on an existing index runs attached:
// lshdb serve owns $DB for that line and the command goes through its
// socket. The expected outputs are the same files: byte-identical output
// whether a command ran in process or attached.
func TestScriptsAttached(t *testing.T) {
	if testing.Short() {
		// NB: a server per line: over a minute under -race (CI's race
		// step runs -short); the full run covers it.
		t.Skip("a server per line: skipped with -short")
	}
	in, err := filepath.Abs("../../testdata/cmd/inputs")
	if err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "../../testdata/cmd/scripts", func(t *testing.T, path string) {
		gen := scriptInputs(t)
		dbDir := filepath.Join(shortDir(t), "index")
		attached := 0
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			line, stdin, _ := strings.Cut(td.Input, "\n<<<\n")
			line = strings.TrimPrefix(line, "lshdb ")
			line = strings.NewReplacer("$DB", dbDir, "$IN", in, "$GEN", gen).Replace(line)
			args, err := splitWords(line)
			if err != nil {
				t.Fatal(err)
			}
			serve := false
			if manifests, _ := filepath.Glob(filepath.Join(dbDir, "MANIFEST-*")); len(manifests) > 0 && slices.Contains(attachable, args[0]) {
				for i := range args[:len(args)-1] {
					serve = serve || args[i] == "--db" && args[i+1] == dbDir
				}
			}
			var stop func() int
			if serve {
				var log *syncBuffer
				_, _, log, stop = startServe(t, "--db", dbDir)
				defer func() {
					if code := stop(); code != 0 {
						t.Fatalf("serve: exit %d: %s", code, log)
					}
				}()
				attached++
			}
			out, errOut, code := runLine(args, stdin)
			got := transcript(out, errOut, code, strings.NewReplacer(dbDir, "$DB", in, "$IN", gen, "$GEN"))
			// NB: the tables' sizes on disk depend on how the store was
			// opened, not on what it holds: a writable owner flushes the
			// log it replays into a table, a read-only open does not. They
			// are compared without them.
			if serve && got != td.Expected && volatile.ReplaceAllString(got, "…") == volatile.ReplaceAllString(td.Expected, "…") {
				return td.Expected
			}
			return got
		})
		t.Logf("%s: %d lines ran attached", filepath.Base(path), attached)
	})
}
