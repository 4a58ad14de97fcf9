package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/rediskv"
	"github.com/lshdb/lshdb/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Ensure that the command on an index on a Redis Cluster (--db
// redis+cluster://…) prints what it prints on a Pebble index, byte for
// byte, line after line of a session (inserts, upserts, deletes, queries,
// get, explain, pairs), and that check (with --repair) finds it whole.
// The oracle is the same session on a directory.
func TestRedisCommandsMatchPebble(t *testing.T) {
	c := redistest.Require(t)
	in, err := filepath.Abs("../../testdata/cmd/inputs")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "index")
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/cmdtest"
	extra := filepath.Join(t.TempDir(), "more.jsonl")
	if err := os.WriteFile(extra, []byte(`{"id": "fox1", "text": "the quick brown fox jumps over the lazy dog again"}
{"id": "fox3", "text": "the quick brown fox jumps over the lazy dog."}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	session := []struct{ line, stdin string }{
		{"create --db $DB --threshold 0.5", ""},
		{"insert --db $DB $IN/docs.jsonl", ""},
		// NB: before any upsert or delete: on Pebble those leave emptied
		// lists until a purge, which Redis deletes at once.
		{"buckets --db $DB --top 3", ""},
		{"buckets --db $DB --band 2 --output json", ""},
		{"insert --db $DB " + extra, ""},
		{"info --db $DB --output json", ""},
		{"query --db $DB --id fox1", ""},
		{"query --db $DB --id fox1 --output json", ""},
		{`query --db $DB --text "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"`, ""},
		{"query --db $DB --id h --top 1 --threshold 0.5 --output json", ""},
		{"query --db $DB --id fox1 --estimate-only", ""},
		{"query --db $DB --id nosuch", ""},
		{"get --db $DB fox3", ""},
		{"get --db $DB --output json fox1", ""},
		{"explain --db $DB h x", ""},
		{"explain --db $DB fox1 fox2 --output json", ""},
		{"pairs --db $DB", ""},
		{"pairs --db $DB --threshold 0.3 --output json", ""},
		{"delete --db $DB fox2", ""},
		{"delete --db $DB fox2", ""},
		{"query --db $DB --id fox1", ""},
		{"dedup --db $DB -", `{"id": "fox4", "text": "the quick brown fox jumps over the lazy dog."}` + "\n" + `{"id": "new", "text": "nothing like any other text here"}` + "\n"},
		{"pairs --db $DB --output csv", ""},
		{"clusters --db $DB --threshold 0.3", ""},
		{"clusters --db $DB --threshold 0.3 --mode centers --keep longest --output json", ""},
		{"filter --db $DB --threshold 0.3 $IN/docs.jsonl", ""},
	}
	for _, s := range session {
		var outs [2]string
		for i, db := range []string{dir, url} {
			args, err := splitWords(strings.NewReplacer("$DB", db, "$IN", in).Replace(s.line))
			if err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runLine(args, s.stdin)
			outs[i] = transcript(out, errOut, code, strings.NewReplacer(db, "$DB", in, "$IN"))
		}
		if outs[0] != outs[1] {
			t.Fatalf("lshdb %s:\n--- on Pebble:\n%s\n--- on Redis:\n%s", s.line, outs[0], outs[1])
		}
	}
	for _, line := range []string{"check --db $DB --repair", "check --db $DB"} {
		args, _ := splitWords(strings.ReplaceAll(line, "$DB", url))
		out, errOut, code := runLine(args, "")
		if code != 0 || !strings.HasSuffix(out, "ok\n") {
			t.Fatalf("lshdb %s: exit %d\n%s%s", line, code, out, errOut)
		}
	}
	// backup makes a Pebble copy of the Redis index, which answers as
	// the index does.
	copyDir := filepath.Join(t.TempDir(), "copy")
	out, errOut, code := runLine([]string{"backup", "--db", url, "--to", copyDir}, "")
	if code != 0 || !strings.HasPrefix(out, "backed up "+url+" to "+copyDir+": ") {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	for _, line := range []string{"pairs --db $DB --threshold 0.3", "query --db $DB --id fox1 --output json", "info --db $DB --output json"} {
		var outs [2]string
		for i, where := range []string{url, copyDir} {
			args, _ := splitWords(strings.ReplaceAll(line, "$DB", where))
			out, errOut, code := runLine(args, "")
			outs[i] = transcript(out, errOut, code, strings.NewReplacer(where, "$DB"))
		}
		if strings.HasPrefix(line, "info") {
			// NB: the copy names the Redis index as its origin, with no
			// state (a copy of Redis is of no one instant).
			origin := `,"origin":{"instance":"I","written":0,"docs":0,"instant":false}`
			if !strings.Contains(outs[1], origin) {
				t.Fatalf("info of the backup of a Redis index lacks %s:\n%s", origin, outs[1])
			}
			outs[1] = strings.Replace(outs[1], origin, "", 1)
		}
		if outs[0] != outs[1] {
			t.Fatalf("lshdb %s:\n--- on Redis:\n%s\n--- on its backup:\n%s", line, outs[0], outs[1])
		}
	}
}

// Ensure that the README's Redis Cluster example runs as written: its
// lshdb lines, on the test's own cluster (the example's start-up lines
// are what redistest does), each exiting 0, and check --repair ending
// "ok".
func TestReadmeRedis(t *testing.T) {
	c := redistest.Require(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "### Past one machine: an index on a Redis Cluster")
	if !ok {
		t.Fatal("README has no Redis Cluster section")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/readme"
	copyDir := filepath.Join(t.TempDir(), "copy")
	t.Chdir("../..")
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "lshdb ") {
			continue // the cluster's start-up, and U=
		}
		line, _, _ = strings.Cut(line, " #") // a comment
		line = strings.ReplaceAll(line, "/tmp/mydocs-copy", copyDir)
		args, err := splitWords(strings.ReplaceAll(strings.TrimPrefix(line, "lshdb "), "$U", url))
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runLine(args, "")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
		}
		if strings.HasPrefix(line, "lshdb check") && !strings.HasSuffix(out, "ok\n") {
			t.Fatalf("%s:\n%s", line, out)
		}
		ran++
	}
	if ran < 6 {
		t.Fatalf("%d lshdb lines ran", ran)
	}
	// The example ends with drop: the index is gone, its copy stays.
	if _, err := db.Open(url, &db.Options{MustExist: true}); !errors.Is(err, db.ErrNotExist) {
		t.Fatalf("the index after drop: %v, want ErrNotExist", err)
	}
	if d, err := db.Open(copyDir, &db.Options{MustExist: true}); err != nil {
		t.Fatalf("the backup copy: %v", err)
	} else if n, err := d.Count(); err != nil || n == 0 {
		t.Fatalf("the backup copy holds %d documents (%v)", n, err)
	} else {
		d.Close()
	}
}

// Ensure that lshdb serve serves an index on Redis on --addr (which it
// then needs: there is no directory for a socket), and that a command
// attached to it (--addr) prints what it prints on the index directly.
func TestServeRedis(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/served"
	if out, errOut, code := runLine([]string{"insert", "--db", url, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatalf("insert: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runLine([]string{"serve", "--db", url}, ""); code != 2 || !strings.Contains(errOut, "give --addr") {
		t.Fatalf("serve without --addr: exit %d, %q", code, errOut)
	}
	sock, tcp, log, stop := startServe(t, "--db", url, "--addr", "127.0.0.1:0")
	defer func() {
		if code := stop(); code != 0 {
			t.Fatalf("serve: exit %d: %s", code, log)
		}
	}()
	if sock != "" || tcp == "" {
		t.Fatalf("serving on socket %q, TCP %q", sock, tcp)
	}
	// NB: --purge-every does nothing on Redis: the start line said 1h.
	if strings.Contains(log.String(), "purge_every") {
		t.Errorf("the start line names purge_every on Redis: %s", log)
	}
	// NB: info attached said "size on disk: 0 B" where it says in
	// process that a Redis index has no files.
	for _, line := range []string{"query --id fox1", "get fox2 --output json", "pairs", "info --output json", "info"} {
		args, _ := splitWords(line)
		direct, errDirect, codeDirect := runLine(append(args, "--db", url), "")
		served, errServed, codeServed := runLine(append(args, "--addr", tcp), "")
		if codeDirect != 0 || codeServed != codeDirect || served != direct {
			t.Fatalf("lshdb %s: direct exit %d\n%s%s\nserved exit %d\n%s%s", line, codeDirect, direct, errDirect, codeServed, served, errServed)
		}
	}
	// NB: a server repaired a Redis index beside every other server's
	// writes, and the message blamed damage to the index's files.
	if out, errOut, code := runLine([]string{"check", "--repair", "--addr", tcp}, ""); code != 1 || !strings.Contains(errOut, "a repair of a Redis index runs in-process") {
		t.Errorf("check --repair attached to a Redis index's server: exit %d\n%s%s", code, out, errOut)
	}
}

// Ensure that a creating command that fails on Redis keeps its new index
// while another process has it open to write (and has written nothing
// yet): it dropped it, and the other process's writes went to an index
// no longer there. Once the other closes, a failed creator drops its own.
func TestRedisFailedCreatorKeepsOthers(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/failedcreator"
	runLine([]string{"drop", "--db", url, "--yes"}, "")
	owner := startPiped(t, "insert", "--db", url, "-")
	waitUntil(t, owner, func() string { return "the index created" }, func() bool {
		_, _, code := runLine([]string{"info", "--db", url}, "")
		return code == 0
	})
	other := startPiped(t, "insert", "--db", url, "-")
	// NB: the other has opened it once it is registered: a read-only
	// handle counts the writers.
	waitUntil(t, other, func() string { return "the other writer open" }, func() bool {
		d, err := db.Open(url, &db.Options{ReadOnly: true, ExpirySweep: -1})
		if err != nil {
			return false
		}
		defer d.Close()
		n, err := d.OtherWriters(context.Background())
		return err == nil && n == 2
	})
	io.WriteString(owner.stdin, "not json\n")
	owner.stdin.Close()
	if err := <-owner.done; err == nil {
		t.Fatalf("the owner's bad line: exit 0: %s", owner.out)
	}
	if !strings.Contains(owner.out.String(), "was kept: another process has it open") {
		t.Fatalf("the owner's output: %s", owner.out)
	}
	io.WriteString(other.stdin, "{\"id\": \"b\", \"text\": \"the other process's document\"}\n")
	other.stdin.Close()
	if err := <-other.done; err != nil {
		t.Fatalf("the other writer: %v: %s", err, other.out)
	}
	if out, errOut, code := runLine([]string{"get", "--db", url, "b"}, ""); code != 0 || !strings.Contains(out, "the other process's document") {
		t.Fatalf("the other's acknowledged document: exit %d: %s%s", code, out, errOut)
	}
	runLine([]string{"drop", "--db", url, "--yes"}, "")
	// Alone, a failed creator drops the index it made.
	if _, _, code := runLine([]string{"insert", "--db", url, "-"}, "not json\n"); code == 0 {
		t.Fatal("a bad line: exit 0")
	}
	if _, errOut, code := runLine([]string{"info", "--db", url}, ""); code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("after a failed create alone: exit %d: %s", code, errOut)
	}
}

// Ensure that drop refuses a Redis index that another handle has open to
// write, leaving it whole, and drops it with --force: it dropped it under
// a running server, which then wrote into an index created again under
// the name with its old parameters (its documents invisible to queries).
func TestRedisDropRefusesWhileOthersWrite(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/dropinuse"
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	w, err := db.Open(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(db.Doc{ID: "a", Text: "a document of a handle that stays open"}, nil); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"drop", "--db", url, "--yes"}, "")
	if code != exitBusy || !strings.Contains(errOut, "has the index open to write in 1 other handle") {
		t.Fatalf("drop under an open writer: exit %d, %q", code, errOut)
	}
	if out, _, code := runLine([]string{"get", "--db", url, "a"}, ""); code != 0 || !strings.Contains(out, "stays open") {
		t.Fatalf("the index after a refused drop: exit %d, %q", code, out)
	}
	if out, errOut, code := runLine([]string{"drop", "--db", url, "--yes", "--force"}, ""); code != 0 || !strings.Contains(out, "dropped the index and its 1 document") {
		t.Fatalf("drop --force: exit %d, %q %q", code, out, errOut)
	}
	if _, err := db.Open(url, &db.Options{MustExist: true}); !errors.Is(err, db.ErrNotExist) {
		t.Fatalf("the index after drop --force: %v, want ErrNotExist", err)
	}
	// The handle left open wrote into an index made again under the
	// name with other parameters (35 bands against its 16), a document
	// no query could find (check said "ok"; a later one found it). Its
	// put is refused now: the counters hold the new index's mark.
	if _, errOut, code := runLine([]string{"create", "--db", url, "--threshold", "0.5"}, ""); code != 0 {
		t.Fatalf("create: exit %d, %q", code, errOut)
	}
	if err := w.Put(db.Doc{ID: "s3", Text: "the quick brown fox jumps over the lazy dog"}, nil); !errors.Is(err, db.ErrNotExist) {
		t.Fatalf("a put through a handle of the dropped index into the one made again: %v, want ErrNotExist", err)
	}
	w.Close()
	out, _, code := runLine([]string{"check", "--db", url}, "")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("check of the index made again: exit %d, %q", code, out)
	}
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
}

// Ensure that check --repair refuses a Redis index that another handle
// has open to write, changing nothing, and repairs it with --force: a
// repair beside a running insert took the records it was writing for a
// stopped write's and removed them, the insert exited 0, and check then
// said ok (a review's R1).
func TestRedisRepairRefusesWhileOthersWrite(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/repairinuse"
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	w, err := db.Open(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Put(db.Doc{ID: "a", Text: "a document of a handle that stays open"}, nil); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runLine([]string{"check", "--db", url, "--repair"}, "")
	if code != exitBusy || !strings.Contains(errOut, "has the index open to write in 1 other handle (last seen") || strings.Contains(out, "repaired") {
		t.Fatalf("repair under an open writer: exit %d, %q %q", code, out, errOut)
	}
	if out, _, code := runLine([]string{"check", "--db", url}, ""); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("check (no repair) beside a writer: exit %d, %q", code, out)
	}
	if out, errOut, code := runLine([]string{"check", "--db", url, "--repair", "--force"}, ""); code != 0 || !strings.Contains(out, "repaired: nothing to mend") {
		t.Fatalf("repair --force: exit %d, %q %q", code, out, errOut)
	}
	w.Close()
	if out, errOut, code := runLine([]string{"check", "--db", url, "--repair"}, ""); code != 0 || !strings.Contains(out, "repaired: nothing to mend") {
		t.Fatalf("repair alone: exit %d, %q %q", code, out, errOut)
	}
	runLine([]string{"drop", "--db", url, "--yes"}, "")
}

// Ensure that a refusal under other writers says which were not seen for
// several heartbeats (a process killed with the index open) and when.
func TestOtherWritersNote(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		seen []time.Time
		want string
	}{
		{[]time.Time{now.Add(-10 * time.Second)}, "1 other handle (last seen 10s ago: alive, most likely; a process that ended while Redis could not be reached, which said so in a warning, is seen no more and passed over once unseen for 5m0s)"},
		{[]time.Time{now.Add(-2 * time.Hour), now.Add(-time.Second)}, "2 other handles, 1 of them not seen for over 1m30s (last seen 2h0m0s ago): a process killed"},
		{[]time.Time{{}, now.Add(-100 * time.Second)}, "2 other handles, 2 of them not seen for over 1m30s (last seen at an unknown time, 1m40s ago)"},
		{slices.Repeat([]time.Time{now.Add(-time.Hour)}, 7), "7 other handles, 7 of them not seen for over 1m30s (last seen 1h0m0s ago, 1h0m0s ago, 1h0m0s ago, 1h0m0s ago, 1h0m0s ago, and 2 more)"},
	} {
		if got := otherWriters(tc.seen, now); !strings.HasPrefix(got, tc.want) {
			t.Errorf("otherWriters(%v) = %q, want it to start %q", tc.seen, got, tc.want)
		}
	}
}

// Ensure that a creating command that fails on Redis because its writes
// found records of a lost index under the name (its manifest, counters
// and first record gone, on a Redis too large for its creation to scan
// for the rest) keeps the index, and with it the lost index's records:
// it dropped the index it had made, and every key of the lost one with
// it (an operator's review, R2: 30,973 keys, 1,999 whole records). The
// oracle: the lost index's record keys, read with a client of its own.
func TestRedisFailedCreatorKeepsLostIndex(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/lostunder"
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	var in strings.Builder
	for i := range 50 {
		fmt.Fprintf(&in, "{\"id\": \"old-%d\", \"text\": \"document %d of the index whose manifest is lost, with words %d\"}\n", i, i, i*7919)
	}
	if out, errOut, code := runLine([]string{"insert", "--db", url, "-"}, in.String()); code != 0 {
		t.Fatalf("insert: exit %d: %s%s", code, out, errOut)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer cc.Close()
	ctx := context.Background()
	// NB: the keys a creation looks up (the counters, the first record,
	// the expiry index), and the manifest.
	for _, k := range append(rediskv.ManifestKeys("lostunder"), "{lshdb:lostunder}:counters", "lshdb:lostunder:d:1", "lshdb:lostunder:x") {
		if err := cc.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// NB: as on a Redis of more keys than a creation scans.
	defer func(n int64) { rediskv.LeftoverScanKeys = n }(rediskv.LeftoverScanKeys)
	rediskv.LeftoverScanKeys = -1
	// NB: numbers 1 and 2: the lost index's record 2 is there.
	_, errOut, code := runLine([]string{"insert", "--db", url, "-"}, "{\"id\": \"new\", \"text\": \"a document of the index created over the lost one\"}\n{\"id\": \"new2\", \"text\": \"another document of the index created over the lost one\"}\n")
	if code == 0 || !strings.Contains(errOut, "was kept: its writes found records of another index") {
		t.Fatalf("an insert creating the index over a lost one's records: exit %d: %s", code, errOut)
	}
	for i := 2; i <= 50; i++ {
		if n, err := cc.Exists(ctx, fmt.Sprintf("lshdb:lostunder:d:%d", i)).Result(); err != nil || n != 1 {
			t.Fatalf("the lost index's record %d after the failed insert: %d keys, %v; want it kept", i, n, err)
		}
	}
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
}

// Ensure that check --repair and drop pass over a writable handle not
// seen for over staleWriter (a process killed with the index open), with
// a note, and still refuse one seen since: one kill -9 of a writer made
// them refuse for good, until given --force (an operator's review, R3).
// The registrations are written by hand, their times on the server's
// clock as lshdb writes them.
func TestRedisStaleWriterPassedOver(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/stalewriter"
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	if out, errOut, code := runLine([]string{"insert", "--db", url, "-"}, "{\"id\": \"a\", \"text\": \"a document of an index whose writer was killed\"}\n"); code != 0 {
		t.Fatalf("insert: exit %d: %s%s", code, out, errOut)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer cc.Close()
	ctx := context.Background()
	now, err := cc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	register := func(age time.Duration) {
		t.Helper()
		if err := cc.HSet(ctx, "lshdb:stalewriter:writers", "killed-writer", now.Add(-age).Unix()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	register(time.Minute)
	if _, errOut, code := runLine([]string{"check", "--db", url, "--repair"}, ""); code == 0 || !strings.Contains(errOut, "in use") {
		t.Fatalf("check --repair beside a writer seen a minute ago: exit %d: %s", code, errOut)
	}
	register(staleWriter + time.Minute)
	if out, errOut, code := runLine([]string{"check", "--db", url, "--repair"}, ""); code != 0 || !strings.Contains(errOut, "1 handle registered to write") || !strings.Contains(errOut, "passed over") {
		t.Fatalf("check --repair beside a writer unseen for %s: exit %d: %s%s", staleWriter+time.Minute, code, out, errOut)
	}
	if out, errOut, code := runLine([]string{"drop", "--db", url, "--yes"}, ""); code != 0 || !strings.Contains(errOut, "passed over") {
		t.Fatalf("drop beside a writer unseen for %s: exit %d: %s%s", staleWriter+time.Minute, code, out, errOut)
	}
	if _, errOut, code := runLine([]string{"info", "--db", url}, ""); code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("info after the drop: exit %d: %s", code, errOut)
	}
}

// Ensure that the advice after Redis lost an index's keys is one way
// that works: with its document numbers gone back, check --repair (not
// "restore a backup, cp -a"); with its manifest gone, drop --yes --force,
// which says it could not count the documents it dropped (it said "its 0
// documents"). An operator's review, R4.
func TestRedisRecoveryAdvice(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/advice"
	runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "{\"id\": \"d%d\", \"text\": \"document %d of an index that loses keys, words %d\"}\n", i, i, i*7919)
	}
	if out, errOut, code := runLine([]string{"insert", "--db", url, "-"}, in.String()); code != 0 {
		t.Fatalf("insert: exit %d: %s%s", code, out, errOut)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer cc.Close()
	ctx := context.Background()
	// The counters' next number set back: the next put's number is taken.
	if err := cc.HSet(ctx, "{lshdb:advice}:counters", "next", 1).Err(); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLine([]string{"insert", "--db", url, "-"}, "{\"id\": \"new\", \"text\": \"a document given a number already taken\"}\n")
	if code == 0 || !strings.Contains(errOut, "check --repair") || strings.Contains(errOut, "cp -a") {
		t.Fatalf("an insert at a number taken: exit %d: %s, want check --repair advised and no directory's restore", code, errOut)
	}
	if out, errOut, code := runLine([]string{"check", "--db", url, "--repair"}, ""); code != 0 {
		t.Fatalf("check --repair: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := runLine([]string{"insert", "--db", url, "-"}, "{\"id\": \"new\", \"text\": \"a document given a number already taken\"}\n"); code != 0 {
		t.Fatalf("the insert after the repair: exit %d: %s%s", code, out, errOut)
	}
	// The manifest lost, and its copies.
	for _, k := range rediskv.ManifestKeys("advice") {
		if err := cc.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code = runLine([]string{"info", "--db", url}, "")
	if code == 0 || !strings.Contains(errOut, "--yes --force removes them") {
		t.Fatalf("info of an index whose manifest is lost: exit %d: %s", code, errOut)
	}
	out, errOut, code := runLine([]string{"drop", "--db", url, "--yes", "--force"}, "")
	if code != 0 || !strings.Contains(out, "could not be counted") {
		t.Fatalf("drop --yes --force of it: exit %d: %s%s", code, out, errOut)
	}
	if left, err := redistest.Keys(ctx, cc, "lshdb:advice:*"); err != nil || len(left) != 0 {
		t.Fatalf("keys left after the drop: %v, %v", left, err)
	}
}

// Ensure that an insert or a build whose Redis index is lost while it
// runs (every key gone, as in a restart without persistence) fails, and
// that its message says the documents it committed went with the index:
// it said "committed N documents" (a build "N documents stored") alone,
// which read as kept, and an operator's resume plan started after them
// (a review). The oracle: the documents the test saw counted in the
// index before it flushed its keys.
func TestRedisInsertIntoALostIndex(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		first int // documents written before the loss
		said  string
	}{
		{"insert", 50, "committed 50 documents through stdin:50 (gone with the index since: write them again once it is restored or made again)"},
		// NB: a build on Redis writes batches of 8,192 documents.
		{"build", 9000, "8192 documents stored before the failure, gone with the index since (Redis lost it: build again once it is restored or made again)"},
	} {
		t.Run(c.cmd, func(t *testing.T) { testRedisWriteIntoALostIndex(t, c.cmd, c.first, c.said) })
	}
}

func testRedisWriteIntoALostIndex(t *testing.T, cmd string, first int, said string) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/lost" + cmd
	t.Cleanup(func() { db.Drop(context.Background(), url) })
	ins := startPiped(t, cmd, "--db", url, "-")
	var before strings.Builder
	for i := range first {
		fmt.Fprintf(&before, "{\"id\":\"a%d\",\"text\":\"document %d, committed before Redis lost the index\"}\n", i, i)
	}
	if _, err := io.WriteString(ins.stdin, before.String()); err != nil {
		t.Fatal(err)
	}
	want := uint64(min(first, 8192))
	count := func() uint64 {
		d, err := db.Open(url, &db.Options{ReadOnly: true})
		if err != nil {
			return 0
		}
		defer d.Close()
		n, _ := d.Count()
		return n
	}
	waitUntil(t, ins, func() string { return fmt.Sprintf("%d documents committed", want) }, func() bool { return count() == want })
	loseRedisIndex(t, url)
	io.WriteString(ins.stdin, "{\"id\":\"b1\",\"text\":\"a document put after Redis lost the index\"}\n")
	ins.stdin.Close()
	err := <-ins.done
	out := ins.out.String()
	if err == nil || !strings.Contains(out, said) || !strings.Contains(out, "the index is gone from Redis") {
		t.Fatalf("a %s whose index was lost: %v\n%.2000s", cmd, err, out)
	}
}

// Ensure that the Redis password may be given in LSHDB_REDIS_PASSWORD
// rather than in --db, where every local user reads it (ps): it could be
// given there alone (an operator's review of Redis, RD6). The oracle: a
// cluster whose nodes require a password, set here, refuses the command
// without it and takes it with the variable; the URLs that hold one, told
// by hand; and the messages, which show the URL as given (no
// xxxxx for a password not in it, so that a command they suggest works).
func TestRedisPasswordFromTheEnvironment(t *testing.T) {
	for u, want := range map[string]bool{
		"redis://127.0.0.1:6379/a":                        false,
		"redis://user@127.0.0.1:6379/a":                   false,
		"redis://:mine@127.0.0.1:6379/a":                  true,
		"redis://user:@127.0.0.1:6379/a":                  true,
		"redis+cluster://127.0.0.1:7000,127.0.0.1:7001/a": false,
	} {
		if got := redisPasswordInURL(u); got != want {
			t.Errorf("redisPasswordInURL(%q) = %v, want %v", u, got, want)
		}
	}
	c := redistest.Require(t) // NB: its own cluster: a password is set on it
	const pw = "an-env-s3cret"
	ctx := context.Background()
	for _, addr := range c.Addrs {
		n := redis.NewClient(&redis.Options{Addr: addr})
		err := n.ConfigSet(ctx, "masterauth", pw).Err()
		if err == nil {
			err = n.ConfigSet(ctx, "requirepass", pw).Err()
		}
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	u := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/pw"
	doc := filepath.Join(t.TempDir(), "doc.jsonl")
	if err := os.WriteFile(doc, []byte(`{"id":"a","text":"a document stored with the password from the environment"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LSHDB_REDIS_PASSWORD", "")
	if _, errOut, code := runLine([]string{"insert", "--db", u, doc}, ""); code == 0 || !strings.Contains(errOut, "NOAUTH") {
		t.Fatalf("insert without the password: exit %d, %q; want NOAUTH refused", code, errOut)
	}
	t.Setenv("LSHDB_REDIS_PASSWORD", pw)
	out, errOut, code := runLine([]string{"insert", "--db", u, doc}, "")
	if code != 0 || strings.Contains(out+errOut, pw) {
		t.Fatalf("insert with LSHDB_REDIS_PASSWORD: exit %d, %q %q", code, out, errOut)
	}
	if out, errOut, code := runLine([]string{"get", "--db", u, "a"}, ""); code != 0 || !strings.Contains(out, "password from the environment") {
		t.Errorf("get with LSHDB_REDIS_PASSWORD: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := runLine([]string{"get", "--db", u, "nope"}, ""); code != exitNotFound || strings.Contains(errOut, pw) {
		t.Errorf("get of a missing id: exit %d, %q; want %d and no password", code, errOut, exitNotFound)
	}
	// NB: a message that names the index names it as given.
	missing := strings.TrimSuffix(u, "/pw") + "/nosuch"
	if _, errOut, code := runLine([]string{"info", "--db", missing}, ""); code == 0 || !strings.Contains(errOut, missing) || strings.Contains(errOut, pw) {
		t.Errorf("info of a missing index: exit %d, %q; want it named as given (%s), and no password", code, errOut, missing)
	}
}

// Ensure that insert on Redis writes a batch again while no replica
// acknowledges it in time, and completes once they answer: it stopped at
// the first such batch, exit 1, where build retried (an operator's review
// of Redis, RD2: a replica's fork for its AOF rewrite stopped a cron
// insert). The oracle: every document of the input reads back with its
// text, the summary counts them all inserted and none replaced (the index
// was empty: a batch written again replaces its documents with
// themselves), and check finds nothing wrong.
func TestRedisInsertRetriesWhileReplicasStall(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/stall"
	t.Cleanup(func() { db.Drop(context.Background(), url) })
	const n = 3000
	texts := make(map[string]string, n)
	var in strings.Builder
	for i := range n {
		id := fmt.Sprint("s", i)
		texts[id] = fmt.Sprintf("document %d of the insert that the stalled replicas hold up, words %d %d", i, i%13, i%17)
		fmt.Fprintf(&in, "{\"id\":%q,\"text\":%q}\n", id, texts[id])
	}
	input := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := lshdbProcess("create", "--db", url).CombinedOutput(); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	// Every replica stopped (the masters are the first three nodes), so
	// that the first batch's write waits for one whatever master it
	// touches.
	for i := 3; i < redistest.Nodes; i++ {
		if err := c.Pause(i); err != nil {
			t.Fatal(err)
		}
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for i := 3; i < redistest.Nodes; i++ {
				c.Resume(i)
			}
		}
	}
	defer resume()
	ins := startPiped(t, "insert", "--db", url, input)
	waitUntil(t, ins, func() string { return "a batch written again" }, func() bool {
		return strings.Contains(ins.out.String(), "writing the batch again")
	})
	resume()
	select {
	case err := <-ins.done:
		if err != nil {
			t.Fatalf("insert through stalled replicas: %v\n%s", err, ins.out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("insert did not end 2 minutes after the replicas resumed:\n%s", ins.out)
	}
	if want := fmt.Sprintf("inserted %d documents (0 replaced stored ones)", n); !strings.Contains(ins.out.String(), want) {
		t.Errorf("insert said:\n%s\nwant %q", ins.out, want)
	}
	d, err := db.Open(url, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := 0
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if texts[doc.ID] != doc.Text {
			t.Errorf("%s: stored %q, want %q", doc.ID, doc.Text, texts[doc.ID])
		}
		got++
	}
	if got != n {
		t.Errorf("%d documents stored, want %d", got, n)
	}
	if out, err := lshdbProcess("check", "--db", url).CombinedOutput(); err != nil {
		t.Errorf("check after the insert: %v\n%s", err, out)
	}
}

// Ensure that a served Redis index lost from under its server (every key
// gone, as in a restart of Redis without persistence) is said gone by
// its reads as by its writes, and by /healthz as a 503 a supervisor
// restarts: its queries answered 200, no match, and /healthz 404 (a
// review of serve, SV3-4).
func TestServeRedisIndexGone(t *testing.T) {
	c := redistest.Require(t)
	url := "redis+cluster://" + strings.Join(c.Addrs, ",") + "/servedgone"
	runLine([]string{"drop", "--db", url, "--yes"}, "")
	if out, errOut, code := runLine([]string{"insert", "--db", url, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatalf("insert: exit %d\n%s%s", code, out, errOut)
	}
	_, tcp, log, stop := startServe(t, "--db", url, "--addr", "127.0.0.1:0")
	defer stop()
	get := func(path string) (int, string) {
		res, err := http.Get(tcp + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if code, body := get("/v1/query?id=fox1"); code != 200 || !strings.Contains(body, `"fox2"`) {
		t.Fatalf("a query before the loss: %d %s", code, body)
	}
	loseRedisIndex(t, url)
	// A write finds the index gone (its manifest), and says so.
	res, err := http.Post(tcp+"/v1/docs", "application/json", strings.NewReader(`{"id":"w1","text":"a document written after the loss"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 404 || !strings.Contains(string(body), `"not_exist"`) {
		t.Fatalf("a put after the loss: %d %s", res.StatusCode, body)
	}
	for _, path := range []string{"/v1/query?text=the+quick+brown+fox+jumps+over+the+lazy+dog", "/v1/docs?id=fox1", "/v1/docs/has?id=fox1", "/v1/scan"} {
		if code, body := get(path); code != 404 || !strings.Contains(body, `"not_exist"`) || !strings.Contains(body, "gone from Redis") {
			t.Errorf("GET %s after the loss: %d %.300s", path, code, body)
		}
	}
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, `"status":"gone"`) {
		t.Errorf("/healthz after the loss: %d %.300s\nlog:\n%s", code, body, log)
	}
}

// loseRedisIndex deletes every key of the Redis index at url, as a
// restart of Redis without persistence loses them.
func loseRedisIndex(t *testing.T, url string) {
	t.Helper()
	s, err := rediskv.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
