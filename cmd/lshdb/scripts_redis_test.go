package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/lshdb/lshdb/internal/redistest"
)

// The lines of a script's expected output that say how the storage keeps
// the index, not what it holds, and what an index on Redis prints for
// them (redisExpected).
var (
	// emptyLists: check counts the lists that deletes and upserts emptied;
	// Pebble keeps them until purge, Redis deletes a set with its last
	// member, so none is ever empty there (and purge has none to purge).
	emptyLists = regexp.MustCompile(`(\d+) posting lists \((\d+) empty\)`)
	emptyJSON  = regexp.MustCompile(`"posting_lists":(\d+),"empty_lists":(\d+)`)
	purged     = regexp.MustCompile(`purged \d+ empty posting lists`)
	// sizes: bytes on disk (info, stats) against memory on the masters.
	sizeOnDisk = regexp.MustCompile(`(?m)^size on disk: .*$`)
	storedDisk = regexp.MustCompile(`(?m)^stored bytes: .*\ntables on disk .*$`)
	storedJSON = regexp.MustCompile(`"stored_bytes":\{[^}]*\},"disk_bytes":N,"table_bytes":\{[^}]*\}`)
	memoryLine = regexp.MustCompile(`(?m)^memory on the masters \(MEMORY USAGE\): .*$`)
	// pairsWork: pairs --stats reports the work its method did, and
	// Redis's is another method (db's redisPairs): the documents and the
	// pairs reported are the same, the work between them is not.
	pairsWork = regexp.MustCompile(`(?m)^(stderr: pairs: \d+ documents, ).*(, \d+ found(?: \(\d+ printed: --limit\))?), .*$`)
)

// redisExpected turns a script's expected output (from a Pebble index)
// into what the same line must print on Redis: the same, but for the
// storage's own lines above. got is normalized alike where it holds
// measured sizes.
func redisExpected(expected string) string {
	s := emptyLists.ReplaceAllStringFunc(expected, func(m string) string {
		g := emptyLists.FindStringSubmatch(m)
		n, _ := strconv.Atoi(g[1])
		e, _ := strconv.Atoi(g[2])
		return fmt.Sprintf("%d posting lists (0 empty)", n-e)
	})
	s = emptyJSON.ReplaceAllStringFunc(s, func(m string) string {
		g := emptyJSON.FindStringSubmatch(m)
		n, _ := strconv.Atoi(g[1])
		e, _ := strconv.Atoi(g[2])
		return fmt.Sprintf(`"posting_lists":%d,"empty_lists":0`, n-e)
	})
	s = purged.ReplaceAllString(s, "purged 0 empty posting lists")
	// NB: a build on Redis is not atomic, and says so when it stopped.
	s = strings.ReplaceAll(s, "nothing loaded (a build is atomic)", "no document stored before the failure (on Redis a build writes batches of documents: it is not atomic, and the batch that failed may be stored in part: lshdb check --repair finishes or removes it)")
	s = sizeOnDisk.ReplaceAllString(s, "storage: Redis (no files of its own; lshdb stats gives the memory its keys take)")
	s = storedDisk.ReplaceAllString(s, "memory on the masters (MEMORY USAGE): …")
	s = pairsWork.ReplaceAllString(s, "$1…$2")
	return storedJSON.ReplaceAllString(s, `"stored_bytes":…`)
}

// TestScriptsRedis runs testdata/cmd/scripts as TestScripts does, with
// $DB an index on a Redis Cluster (a fresh name per script) in place of a
// directory. The expected outputs are the same files, read through
// redisExpected: every line the same but those that size the storage or
// count lists that Pebble keeps empty until a purge.
func TestScriptsRedis(t *testing.T) {
	if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" {
		// NB: the expected files are Pebble's (TestScripts rewrites them);
		// this test would write Redis's normalized output into them.
		t.Skip("-rewrite: TestScriptsRedis never rewrites the scripts")
	}
	c := redistest.Require(t)
	in, err := filepath.Abs("../../testdata/cmd/inputs")
	if err != nil {
		t.Fatal(err)
	}
	n, lines, storageLines := 0, 0, 0
	defer func() {
		t.Logf("%d lines, %d of them with storage lines read through redisExpected", lines, storageLines)
	}()
	datadriven.Walk(t, "../../testdata/cmd/scripts", func(t *testing.T, path string) {
		gen := scriptInputs(t)
		n++
		url := "redis+cluster://" + strings.Join(c.Addrs, ",") + fmt.Sprintf("/script%d", n)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			line, stdin, _ := strings.Cut(td.Input, "\n<<<\n")
			line = strings.TrimPrefix(line, "lshdb ")
			line = strings.NewReplacer("$DB", url, "$IN", in, "$GEN", gen).Replace(line)
			args, err := splitWords(line)
			if err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runLine(args, stdin)
			got := transcript(out, errOut, code, strings.NewReplacer(url, "$DB", in, "$IN", gen, "$GEN"))
			got = memoryLine.ReplaceAllString(got, "memory on the masters (MEMORY USAGE): …")
			got = storedJSON.ReplaceAllString(got, `"stored_bytes":…`)
			got = pairsWork.ReplaceAllString(got, "$1…$2")
			lines++
			if got != td.Expected && got == redisExpected(td.Expected) {
				storageLines++
				return td.Expected
			}
			return got
		})
	})
}
