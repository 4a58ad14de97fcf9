package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
)

// volatile matches what differs between two identical indexes on disk:
// file sizes, which compactions and logs decide, and the indexes' random
// instance names.
var recycledLogs = regexp.MustCompile(`,"recycled_log_bytes":\d+`)

var volatile = regexp.MustCompile(`("disk_bytes":|"log_bytes":|on disk )\d+(\.\d [KMGTPE]iB| B)?|(size|log) on disk: [^\n]*|"table_bytes":\{[^}]*\}|tables on disk \(compressed\)[^\n]*|("instance":"|instance: )[A-Z2-7]{26}`)

// Ensure that the commands print, attached to a served index (through
// its socket, and through --addr with a token), exactly what they print
// in process on an identical index (stdout, stderr and exit status), and
// that writes through them leave the two indexes with the same documents.
func TestAttachMatchesInProcess(t *testing.T) {
	local, served := twinIndexes(t)
	out, _, _ := runLine([]string{"buckets", "--db", local, "--top", "1", "--output", "json"}, "")
	var bs struct {
		Hottest []struct {
			Band   int    `json:"band"`
			Bucket string `json:"bucket"`
		} `json:"hottest"`
	}
	if err := json.Unmarshal([]byte(out), &bs); err != nil || len(bs.Hottest) == 0 {
		t.Fatalf("buckets: %q %v", out, err)
	}
	band, bucket := strings.TrimSpace(strings.Split(string(mustMarshal(t, bs.Hottest[0].Band)), "\n")[0]), bs.Hottest[0].Bucket
	_, tcp, log, stop := startServe(t, "--db", served, "--addr", "127.0.0.1:0", "--token", "tok")
	t.Setenv("LSHDB_TOKEN", "tok")
	run := func(target string, viaAddr bool, args []string, stdin string) string {
		full := append([]string{}, args...)
		if args[0] != "shell" || !viaAddr {
			if viaAddr {
				full = append(full, "--addr", tcp)
			} else {
				full = append(full, "--db", target)
			}
		}
		out, errOut, code := runLine(full, stdin)
		s := "stdout:\n" + out + "stderr:\n" + errOut + "exit " + string(rune('0'+code))
		s = strings.ReplaceAll(s, target, "$DB")
		// NB: the logs kept for reuse are the handle's own: a read-only
		// open counts the log it replayed, the owner its own.
		s = recycledLogs.ReplaceAllString(s, "")
		return volatile.ReplaceAllString(s, "…")
	}
	reads := [][]string{
		{"info"}, {"info", "--output", "json"},
		{"stats"}, {"stats", "--output", "json"},
		{"query", "--id", "fox1"}, {"query", "--id", "fox1", "--threshold", "0.3", "--output", "json"},
		{"query", "--text", "the quick brown fox jumped over the lazy dog", "--top", "1"},
		{"query", "--id", "fox1", "--estimate-only"}, {"query", "--id", "nope"}, {"query", "--id", "fox1", "--threshold", "0.1"},
		{"pairs"}, {"pairs", "--output", "json", "--threshold", "0.5", "--stats"}, {"pairs", "--limit", "1"},
		{"clusters"}, {"clusters", "--output", "json", "--threshold", "0.3"},
		{"buckets", "--top", "3"}, {"buckets", "--band", "1", "--output", "json"}, {"buckets", "--band", "99"},
		{"bucket", band, bucket}, {"bucket", band, bucket, "--output", "json"},
		{"explain", "fox1", "fox2"}, {"explain", "fox1", "fox2", "--output", "json"}, {"explain", "fox1", "nope"},
		{"get", "fox1"}, {"get", "fox1", "--output", "json"}, {"get", ""},
		{"check"}, {"check", "--output", "json"},
		{"tune"}, {"tune", "--threshold", "0.5", "--output", "json"},
		{"filter", "../../testdata/cmd/inputs/docs.jsonl"}, {"filter", "--annotate", "--mode", "components", "../../testdata/cmd/inputs/docs.jsonl"},
		{"export"}, {"export", "--all"},
	}
	for _, args := range reads {
		want := run(local, false, args, "")
		if got := run(served, false, args, ""); got != want {
			t.Errorf("lshdb %s attached through the socket:\n%s\nin process:\n%s", strings.Join(args, " "), got, want)
		}
		if testing.Short() && len(args) > 1 {
			continue // NB: -short (CI's race step): --addr for the one-word lines only
		}
		if got := run(local, true, args, ""); got != want {
			t.Errorf("lshdb %s attached through --addr:\n%s\nin process:\n%s", strings.Join(args, " "), got, want)
		}
	}
	// An attached filter checks its sample of ids in one request (it made
	// one per id), and the ids of records in no cluster in one more (per
	// 4,096): two per filter run above.
	filters := 8
	if testing.Short() {
		filters = 4
	}
	if n := strings.Count(log.String(), " op=has "); n != filters {
		t.Errorf("%d has requests for %d attached filter runs:\n%s", n, filters, log)
	}
	// bench measures queries through the socket (timings vary: the
	// report's shape and document count are checked).
	out, errOut, code := runLine([]string{"bench", "--db", served, "--queries", "20", "--output", "json"}, "")
	var rep struct{ Docs, Queries int }
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Queries != 20 || rep.Docs < 5 {
		t.Errorf("bench attached: exit %d %s %s", code, out, errOut)
	}
	writes := []struct {
		args  []string
		stdin string
	}{
		{[]string{"delete", "fox2", "cat"}, ""},
		{[]string{"delete", "nope"}, ""},
		{[]string{"delete", "-", "--ignore-missing"}, "x\nnope\n"},
		{[]string{"insert", "../../testdata/cmd/inputs/docs.csv"}, ""},
		{[]string{"insert", "--threshold", "0.5", "../../testdata/cmd/inputs/docs.jsonl"}, ""},
		{[]string{"insert", "--skip-bad", "../../testdata/cmd/inputs/missing-text.jsonl"}, ""},
		{[]string{"dedup", "../../testdata/cmd/inputs/docs.jsonl"}, ""},
		{[]string{"dedup", "--output", "json", "../../testdata/cmd/inputs/docs.tsv"}, ""},
		{[]string{"build", "../../testdata/cmd/inputs/docs.tsv"}, ""},
		{[]string{"build", "-"}, `{"id":"b1","text":"built through a stream"}` + "\n" + `{"id":"b2","text":"another built document"}` + "\n"},
		{[]string{"build", "../../testdata/cmd/inputs/missing-text.jsonl"}, ""},
		{[]string{"build", "-"}, `{"id":"","text":"an empty id fails the whole build"}` + "\n"},
		{[]string{"build", "--skip-bad", "../../testdata/cmd/inputs/missing-text.jsonl"}, ""},
		{[]string{"purge"}, ""},
		{[]string{"shell"}, "stats\nquery --id fox1\nput owl an owl hoots at midnight\ndelete h\nget owl --output json\n"},
		{[]string{"check", "--output", "json"}, ""},
	}
	for _, w := range writes {
		want := run(local, false, w.args, w.stdin)
		if got := run(served, false, w.args, w.stdin); got != want {
			t.Errorf("lshdb %s attached:\n%s\nin process:\n%s", strings.Join(w.args, " "), got, want)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	// The attached runs went through the server, every operation of them.
	for _, op := range []string{"stats", "query", "pairs", "clusters", "scan", "buckets", "bucket", "explain", "get", "check", "put", "put_if_new", "delete", "purge", "load"} {
		if !strings.Contains(log.String(), "op="+op+" ") {
			t.Errorf("the server served no %s", op)
		}
	}
	a, ra := docsOf(t, local)
	b, rb := docsOf(t, served)
	if !reflect.DeepEqual(a, b) || !ra.OK() || !rb.OK() {
		t.Errorf("after the writes: %d documents in process, %d attached; checks %v %v", len(a), len(b), ra.OK(), rb.OK())
	}
}

// Ensure that insert, build and dedup attach with --addr, as their help
// says, and print what they print in process, with the same documents
// stored: they said "--db DIR is required" (a review).
func TestWritesThroughAddr(t *testing.T) {
	local, served := twinIndexes(t)
	_, tcp, log, stop := startServe(t, "--db", served, "--addr", "127.0.0.1:0", "--token", "tok")
	t.Setenv("LSHDB_TOKEN", "tok")
	for _, w := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"insert", "../../testdata/cmd/inputs/docs.csv"}, ""},
		{[]string{"insert", "-"}, `{"id":"i1","text":"inserted through the server's address"}` + "\n"},
		{[]string{"build", "-"}, `{"id":"b1","text":"built through the server's address"}` + "\n" + `{"id":"b2","text":"another document built through it"}` + "\n"},
		{[]string{"dedup", "--output", "json", "../../testdata/cmd/inputs/docs.jsonl"}, ""},
	} {
		wantOut, wantErr, wantCode := runLine(append(slices.Clone(w.args), "--db", local), w.stdin)
		gotOut, gotErr, gotCode := runLine(append(slices.Clone(w.args), "--addr", tcp), w.stdin)
		if gotCode != 0 || gotCode != wantCode || gotOut != wantOut || gotErr != wantErr {
			t.Errorf("lshdb %s --addr: exit %d\n%s%s\nin process: exit %d\n%s%s", strings.Join(w.args, " "), gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	a, ra := docsOf(t, local)
	b, rb := docsOf(t, served)
	if !reflect.DeepEqual(a, b) || !ra.OK() || !rb.OK() {
		t.Errorf("after the writes: %d documents in process, %d through --addr; checks %v %v", len(a), len(b), ra.OK(), rb.OK())
	}
}

// twinIndexes makes two indexes of the same documents (the commands'
// docs.jsonl): one for commands in process, one to serve.
func twinIndexes(t *testing.T) (local, served string) {
	root := shortDir(t)
	local, served = filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, dir := range []string{local, served} {
		if _, errOut, code := runLine([]string{"insert", "--db", dir, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
			t.Fatal(errOut)
		}
	}
	return local, served
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Ensure that an attached command without the server's token is refused
// with the server's answer, that --db and --addr together are a usage
// error, and that a creation flag that differs from the served index's
// parameters is refused as in process.
func TestAttachRefusals(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	_, tcp, _, _ := startServe(t, "--db", idx, "--addr", "127.0.0.1:0", "--token", "tok")
	t.Setenv("LSHDB_TOKEN", "")
	for _, args := range [][]string{{"stats", "--db", idx}, {"stats", "--addr", tcp}} {
		if _, errOut, code := runLine(args, ""); code != 1 || !strings.Contains(errOut, "unauthorized") {
			t.Errorf("%v without a token: exit %d %s", args, code, errOut)
		}
	}
	// A token with a line end inside: the client's own error, not "a
	// process holds it and does not serve it: kill it" (a review's S2).
	t.Setenv("LSHDB_TOKEN", "to\nk")
	for _, args := range [][]string{{"stats", "--db", idx}, {"stats", "--addr", tcp}} {
		if _, errOut, code := runLine(args, ""); code != 2 || !strings.Contains(errOut, "LSHDB_TOKEN") || strings.Contains(errOut, "kill") {
			t.Errorf("%v with a line end in the token: exit %d %s", args, code, errOut)
		}
	}
	t.Setenv("LSHDB_TOKEN", "tok\r\n")
	if _, errOut, code := runLine([]string{"stats", "--db", idx}, ""); code != 0 {
		t.Errorf("a token with a line end after it: exit %d %s", code, errOut)
	}
	t.Setenv("LSHDB_TOKEN", "tok")
	if _, errOut, code := runLine([]string{"stats", "--db", idx, "--addr", tcp}, ""); code != 2 {
		t.Errorf("--db and --addr: exit %d %s", code, errOut)
	}
	_, errOut, code := runLine([]string{"insert", "--db", idx, "--num-perm", "64", "../../testdata/cmd/inputs/docs.jsonl"}, "")
	if code != 2 || !strings.Contains(errOut, "--num-perm 128 (given: 64)") {
		t.Errorf("a mismatching parameter: exit %d %s", code, errOut)
	}
	if out, errOut, code := runLine([]string{"query", "--addr", tcp, "--id", "fox1"}, ""); code != 0 || !strings.Contains(out, "fox2") {
		t.Errorf("query --addr: exit %d %s %s", code, out, errOut)
	}
	// upgrade must own the index, and says so (its help's example was
	// read as upgrading a served index: O2-4).
	if _, errOut, code := runLine([]string{"upgrade", "--db", idx}, ""); code != exitBusy || !strings.Contains(errOut, "upgrade rewrites the index and must own it") || !strings.Contains(errOut, "stop lshdb serve first") {
		t.Errorf("upgrade beside serve: exit %d %s", code, errOut)
	}
}

// Ensure that while a build loads into an index (owning it), other
// commands attach to it and answer from the index as it was before the
// load, and after the build from the index with everything loaded: never
// a part of the load.
func TestAttachDuringBuild(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var buildErr bytes.Buffer
	go func() {
		var out bytes.Buffer
		done <- run(context.Background(), []string{"build", "--db", idx, "-"}, pr, &out, &buildErr)
	}()
	// The build reads its input as it comes: the first documents are in
	// its hands (the pipe has no buffer) before the index answers below.
	for i := range 200 {
		fmt.Fprintf(pw, "{\"id\": \"new%d\", \"text\": \"a new document number %d for the load\"}\n", i, i)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Open(filepath.Join(idx, "lshdb.sock"), nil)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build does not serve the index: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, errOut, code := runLine([]string{"stats", "--db", idx, "--output", "json"}, "")
	if code != 0 || !strings.HasPrefix(out, `{"docs":6,`) {
		t.Errorf("stats during the build: exit %d %.80s %s", code, out, errOut)
	}
	if _, errOut, code := runLine([]string{"get", "--db", idx, "new0"}, ""); code != exitNotFound || !strings.Contains(errOut, "not found") {
		t.Errorf("a document of the load, during it: exit %d %s", code, errOut)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("build: exit %d %s", code, buildErr.String())
	}
	out, _, code = runLine([]string{"stats", "--db", idx, "--output", "json"}, "")
	if code != 0 || !strings.HasPrefix(out, `{"docs":206,`) {
		t.Errorf("stats after the build: exit %d %.80s", code, out)
	}
	if _, err := os.Lstat(filepath.Join(idx, "lshdb.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the build left its socket: %v", err)
	}
}

// insertOutlivingServe makes an index of n generated documents' worth
// (seed), serves it in this process, attaches an insert in another
// process, writes it the first half of the documents' lines, waits until
// the owner holds all of them, and stops the serve (served, if not nil,
// runs while it serves). It returns the index, its socket's path, the
// lines, the first half's length and the insert, whose input is open.
//
// NB: all of the first half, not some: a batch still under way when the
// owner stops may or may not have been written, and the insert then ends
// saying so (by design); the handover is what the tests are about.
func insertOutlivingServe(t *testing.T, n, seed int, served func(idx string)) (idx, sock string, lines []byte, half int, ins *piped) {
	t.Helper()
	dir := shortDir(t)
	idx = filepath.Join(dir, "idx")
	in := filepath.Join(dir, "in.jsonl")
	mustRun(t, "gen", "--n", fmt.Sprint(n), "--seed", fmt.Sprint(seed), "--out", in)
	lines, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "create", "--db", idx)
	sock, _, log, stop := startServe(t, "--db", idx)
	if served != nil {
		served(idx)
	}
	ins = startPiped(t, "insert", "--db", idx, "-")
	half = firstHalf(lines)
	if _, err := ins.stdin.Write(lines[:half]); err != nil {
		t.Fatal(err)
	}
	firstN := uint64(bytes.Count(lines[:half], []byte("\n")))
	waitCount(t, sock, ins, func(got uint64) bool { return got >= firstN })
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	return idx, sock, lines, half, ins
}

// Ensure that an insert attached to another process's server goes on
// when that owner ends in the middle of it: its next batch finds the
// socket gone, opens the index itself (the lock is free) and carries on,
// and every document of its input is stored, with a clean check. Before,
// it stopped with "dial unix …/lshdb.sock: no such file or directory"
// after the owner's batches, exit 1.
func TestAttachedInsertOutlivesItsOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("an insert in another process (-short)")
	}
	const n = 6000
	idx, _, lines, half, ins := insertOutlivingServe(t, n, 5, nil)
	if _, err := ins.stdin.Write(lines[half:]); err != nil {
		// NB: the insert ended: its output says why once it has exited.
		select {
		case <-ins.done:
		case <-time.After(10 * time.Second):
		}
		t.Fatalf("the rest of the input: %v; the insert said %q", err, ins.out)
	}
	ins.stdin.Close()
	if err := <-ins.done; err != nil {
		t.Fatalf("the insert, after its owner ended: %v %s", err, ins.out)
	}
	d := openReadOnly(t, idx)
	if got, err := d.Count(); err != nil || got != n {
		t.Errorf("%d documents, %v; want all %d", got, err, n)
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Errorf("check: %+v %v", rep, err)
	}
}

// Ensure that a serve restarted while an attached insert holds the index
// (it took the index over when the serve before it stopped) waits for the
// insert to end, saying so, and then serves; and that the insert says it
// took the index over (an operator's review, S1: the restarted serve
// exited at once as locked, and the service stayed down for as long as
// the insert ran; the insert said nothing). The oracle: /healthz's owner
// and pid at each step, and the count of the input's documents.
func TestServeWaitsForTheCommandThatTookOver(t *testing.T) {
	if testing.Short() {
		t.Skip("an insert and a serve in other processes (-short)")
	}
	const n = 3000
	idx, sock, lines, half, ins := insertOutlivingServe(t, n, 8, func(idx string) {
		if pid, serving, owner := ownerHealth(idx); !serving || pid != os.Getpid() || owner != serveOwner {
			t.Fatalf("the first serve: /healthz says pid %d (serving %v), owner %q", pid, serving, owner)
		}
	})
	defer ins.cmd.Process.Kill()
	// The rest, with the input left open: the insert takes the index over
	// and holds it until its input ends.
	if _, err := ins.stdin.Write(lines[half:]); err != nil {
		t.Fatalf("the rest of the input: %v; the insert said %q", err, ins.out)
	}
	waitUntil(t, ins, func() string { return "no note of the takeover: " + ins.out.String() }, func() bool {
		return strings.Contains(ins.out.String(), "opened the index itself and goes on")
	})
	waitUntil(t, ins, func() string { return "the insert does not serve the index" }, func() bool {
		pid, serving, owner := ownerHealth(idx)
		return serving && pid == ins.cmd.Process.Pid && owner == "lshdb insert"
	})
	var serveLog syncBuffer
	srv := lshdbProcess("serve", "--db", idx, "--addr", "127.0.0.1:0")
	srv.Stdout, srv.Stderr = &serveLog, &serveLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-srvDone:
		case <-time.After(30 * time.Second):
			srv.Process.Kill()
		}
	}()
	waitUntil(t, nil, func() string { return "the new serve does not say it waits: " + serveLog.String() }, func() bool {
		select {
		case err := <-srvDone:
			t.Fatalf("the new serve ended (%v) while the insert held the index: %s", err, serveLog.String())
		default:
		}
		return strings.Contains(serveLog.String(), "waiting for the command that holds the index to end")
	})
	// Its TCP address answers while it waits: 503, /healthz "waiting"
	// naming the insert, the API "locked" (it refused connections).
	m := regexp.MustCompile(`tcp=(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(serveLog.String())
	if m == nil {
		t.Fatalf("the waiting line names no TCP address: %s", serveLog.String())
	}
	tcp := m[1]
	getJSON := func(path string) (int, http.Header, map[string]any) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(tcp + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, resp.Header, v
	}
	status, hdr, health := getJSON("/healthz")
	if status != http.StatusServiceUnavailable || health["status"] != "waiting" || hdr.Get("Retry-After") == "" ||
		!strings.Contains(fmt.Sprint(health["error"]), fmt.Sprintf("lshdb insert (pid %d)", ins.cmd.Process.Pid)) || health["pid"] != float64(srv.Process.Pid) {
		t.Errorf("/healthz over TCP while serve waits: %d %v %v", status, hdr, health)
	}
	status, _, answer := getJSON("/v1/count")
	if e, _ := answer["error"].(map[string]any); status != http.StatusServiceUnavailable || e["code"] != "locked" {
		t.Errorf("/v1/count over TCP while serve waits: %d %v", status, answer)
	}
	// The insert stopped for 3 s (its /healthz unanswered, its lock
	// held, as while it closes after a large insert): the serve waits on
	// (a review, M1: it gave up after 2 s, as locked).
	if err := stopProcess(ins.cmd.Process); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := continueProcess(ins.cmd.Process); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srvDone:
		t.Fatalf("the new serve ended (%v) while the insert held the index, unanswering: %s", err, serveLog.String())
	default:
	}
	ins.stdin.Close()
	if err := <-ins.done; err != nil {
		t.Fatalf("the insert: %v %s", err, ins.out)
	}
	waitUntil(t, nil, func() string { return "the new serve does not serve: " + serveLog.String() }, func() bool {
		select {
		case err := <-srvDone:
			t.Fatalf("the new serve ended (%v) once the insert had: %s", err, serveLog.String())
		default:
		}
		pid, serving, owner := ownerHealth(idx)
		return serving && pid == srv.Process.Pid && owner == serveOwner
	})
	c, err := client.Open(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Count(); err != nil || got != n {
		t.Fatalf("%d documents, %v; want all %d", got, err, n)
	}
	// The same address serves the index now.
	if status, _, health := getJSON("/healthz"); status != http.StatusOK || health["status"] != "ok" || health["docs"] != float64(n) || health["pid"] != float64(srv.Process.Pid) {
		t.Errorf("/healthz over TCP once serve serves: %d %v", status, health)
	}
}

// Ensure that a serve stopped by SIGTERM while it waits for the command
// that holds the index exits 0, as a serve stopped once it serves does,
// saying so (an operator's soak review, O3: it exited 143, and systemctl
// stop left the unit failed). The oracle: the exit status, and the
// index's documents once the insert ends.
func TestServeStoppedWhileItWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("an insert and a serve in other processes (-short)")
	}
	idx := filepath.Join(shortDir(t), "idx")
	mustRun(t, "create", "--db", idx)
	ins := startPiped(t, "insert", "--db", idx, "-")
	defer ins.cmd.Process.Kill()
	waitUntil(t, ins, func() string { return "the insert does not serve the index" }, func() bool {
		pid, serving, _ := ownerHealth(idx)
		return serving && pid == ins.cmd.Process.Pid
	})
	srv := startPiped(t, "serve", "--db", idx, "--addr", "127.0.0.1:0")
	defer srv.cmd.Process.Kill()
	waitUntil(t, srv, func() string { return "the serve does not say it waits: " + srv.out.String() }, func() bool {
		return strings.Contains(srv.out.String(), "waiting for the command that holds the index to end")
	})
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		if err != nil || !strings.Contains(srv.out.String(), "stopped while waiting for the process that holds the index") {
			t.Errorf("serve stopped by SIGTERM while it waits: %v, %s", err, srv.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop: %s", srv.out)
	}
	// Its TCP address, taken while it waited, is let go.
	if m := regexp.MustCompile(`tcp=http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(srv.out.String()); m == nil {
		t.Errorf("the waiting line names no TCP address: %s", srv.out)
	} else if l, err := net.Listen("tcp", m[1]); err != nil {
		t.Errorf("the address of the serve that stopped: %v", err)
	} else {
		l.Close()
	}
	if _, err := io.WriteString(ins.stdin, `{"id":"a","text":"the quick brown fox"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	ins.stdin.Close()
	if err := <-ins.done; err != nil {
		t.Fatalf("the insert: %v %s", err, ins.out)
	}
	if out, _ := mustRun(t, "get", "--db", idx, "--output", "json", "a"); !strings.Contains(out, "the quick brown fox") {
		t.Errorf("get a: %s", out)
	}
}

// Ensure that a serve started while a shell holds the index does not wait
// for it (a person's session may last days) but fails within the
// handover's wait, naming it (a review, M2).
func TestServeDoesNotWaitForAShell(t *testing.T) {
	if testing.Short() {
		t.Skip("a shell in another process (-short)")
	}
	idx := filepath.Join(shortDir(t), "idx")
	mustRun(t, "create", "--db", idx)
	sh := startPiped(t, "shell", "--db", idx)
	defer func() {
		sh.stdin.Close()
		<-sh.done
	}()
	if _, err := io.WriteString(sh.stdin, "count\n"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, sh, func() string { return "the shell does not serve the index: " + sh.out.String() }, func() bool {
		pid, serving, owner := ownerHealth(idx)
		return serving && pid == sh.cmd.Process.Pid && owner == shellOwner
	})
	_, errOut, code := runLine([]string{"serve", "--db", idx}, "")
	if code != exitBusy || !strings.Contains(errOut, fmt.Sprintf("lshdb shell (pid %d) owns it", sh.cmd.Process.Pid)) {
		t.Fatalf("serve beside a shell: exit %d %s", code, errOut)
	}
}

// Ensure that a shell attached to another process's server goes on when
// that owner ends (its next statement opens the index itself: it went on
// failing with a closed index, for every later statement), and that an
// attached insert whose owner ended and whose index was moved away
// meanwhile fails rather than making a new empty index where it was.
func TestHandoverShellAndMovedIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("a shell and an insert in other processes (-short)")
	}
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	doc, _ := mustRun(t, "get", "--db", idx, "fox1", "--output", "json")

	// The shell.
	_, _, log, stop := startServe(t, "--db", idx)
	sh := startPiped(t, "shell", "--db", idx)
	waitFor := func(n int) {
		t.Helper()
		waitUntil(t, nil, func() string { return fmt.Sprintf("%d answers wanted, the shell printed:\n%s", n, sh.out) },
			func() bool { return strings.Count(sh.out.String(), strings.TrimSpace(doc)) >= n })
	}
	io.WriteString(sh.stdin, "get fox1 --output json\n")
	waitFor(1)
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	io.WriteString(sh.stdin, "get fox1 --output json\n")
	waitFor(2)
	io.WriteString(sh.stdin, "get fox1 --output json\n")
	waitFor(3)
	sh.stdin.Close()
	if err := <-sh.done; err != nil {
		t.Fatalf("the shell after its owner ended: %v\n%s", err, sh.out)
	}
	// NB: a serve fails beside a shell (TestServeDoesNotWaitForAShell):
	// the note had said that one started meanwhile waited for it.
	if out := sh.out.String(); !strings.Contains(out, "opened the index itself and goes on") || !strings.Contains(out, "a serve started meanwhile fails, naming it, until this shell is left") {
		t.Errorf("the shell's note when it took the index over: %s", out)
	}

	// The insert, whose index moves away while no one owns it.
	sock, _, log, stop := startServe(t, "--db", idx)
	c, err := client.Open(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.Count()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	ins := startPiped(t, "insert", "--db", idx, "-")
	// More than a batch (1,000 documents), so that some are committed
	// through the owner.
	var buf bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&buf, "{\"id\":\"new%d\",\"text\":\"document number %d of the insert whose index moves away\"}\n", i, i)
	}
	lines := buf.Bytes()
	half := firstHalf(lines)
	if _, err := ins.stdin.Write(lines[:half]); err != nil {
		t.Fatal(err)
	}
	// NB: all of the first half committed through the owner: the insert
	// has nothing left to commit (a pause commits what was read) that
	// could open the index itself before it moves.
	firstN := uint64(bytes.Count(lines[:half], []byte("\n")))
	waitCount(t, sock, ins, func(n uint64) bool { return n >= before+firstN })
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	if err := os.Rename(idx, idx+".moved"); err != nil {
		t.Fatal(err)
	}
	ins.stdin.Write(lines[half:])
	ins.stdin.Close()
	if err := <-ins.done; err == nil {
		t.Errorf("the insert succeeded with its index moved away: %s", ins.out)
	}
	if _, err := os.Stat(idx); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the insert made %s anew: %v (%s)", idx, err, ins.out)
	}

	// The insert, whose index is built anew in its place (the same
	// parameters) while no one owns it.
	if err := os.Rename(idx+".moved", idx); err != nil {
		t.Fatal(err)
	}
	sock, _, log, stop = startServe(t, "--db", idx)
	if c, err = client.Open(sock, nil); err != nil {
		t.Fatal(err)
	}
	mid, err := c.Count()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	for i := range 3000 { // NB: ids of its own: the counts must grow
		fmt.Fprintf(&buf, "{\"id\":\"again%d\",\"text\":\"document number %d of the insert whose index is built anew\"}\n", i, i)
	}
	lines = buf.Bytes()
	half = firstHalf(lines)
	ins = startPiped(t, "insert", "--db", idx, "-")
	if _, err := ins.stdin.Write(lines[:half]); err != nil {
		t.Fatal(err)
	}
	// NB: all of it committed through the owner, as above.
	firstN = uint64(bytes.Count(lines[:half], []byte("\n")))
	waitCount(t, sock, ins, func(n uint64) bool { return n >= mid+firstN })
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	if err := os.Rename(idx, idx+".old"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	ins.stdin.Write(lines[half:])
	ins.stdin.Close()
	if err := <-ins.done; err == nil || !strings.Contains(ins.out.String(), "built anew in its place") {
		t.Errorf("the insert whose index was built anew: %v, %s; want it refused", err, ins.out)
	}
	// NB: its last batch reached no owner (the socket's dial failed):
	// not "perhaps written".
	if strings.Contains(ins.out.String(), "perhaps") {
		t.Errorf("the insert whose index was built anew says its last batch may have been written: %s", ins.out)
	}
	d := openReadOnly(t, idx)
	if n, err := d.Count(); err != nil || n != before {
		t.Errorf("the index built anew holds %d documents, %v; want its own %d", n, err, before)
	}
}

// Ensure that a pairs or scan stream whose owner is gone before its
// request reaches it (a server killed after the command attached) is
// made again on the index opened anew, as a query is: it failed with
// "no server answers", the index free (review O5).
func TestHandoverStreamsWhenOwnerGone(t *testing.T) {
	dir := filepath.Join(shortDir(t), "idx")
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := []db.Doc{{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, {ID: "b", Text: "the quick brown fox jumps over the lazy dog!"}, {ID: "c", Text: "something else entirely"}}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	stop, err := httpapi.ServeSocket(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two clients, one for each stream: each must meet the owner gone.
	var cs []*client.Client
	for range 2 {
		c, err := client.Open(httpapi.SocketPath(dir), nil)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	// The owner ends: its socket goes, the index is free.
	stop(context.Background())
	d.Close()
	reopened := 0
	handover := func(c *client.Client) *handover {
		return newHandover(c, func() { c.Close() }, reopenReadOnly(dir, &reopened))
	}
	h := handover(cs[0])
	var pairs []db.Pair
	for p, err := range h.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatalf("pairs with the owner gone: %v", err)
		}
		pairs = append(pairs, p)
	}
	h.closeAll()
	if len(pairs) != 1 || pairs[0].A != "a" || pairs[0].B != "b" || reopened != 1 {
		t.Errorf("pairs %v, reopened %d times; want (a, b) and 1", pairs, reopened)
	}
	h = handover(cs[1])
	defer h.closeAll()
	n := 0
	for _, err := range h.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatalf("scan with the owner gone: %v", err)
		}
		n++
	}
	if n != 3 || reopened != 2 {
		t.Errorf("scanned %d documents, reopened %d times in all; want 3 and 2", n, reopened)
	}
}

// reopenReadOnly is a handover's reopen in these tests: the index in dir,
// read-only, counting the opens in *n.
func reopenReadOnly(dir string, n *int) func() (index, func(), error) {
	return func() (index, func(), error) {
		*n++
		d, err := db.Open(dir, &db.Options{ReadOnly: true})
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	}
}

// cutOwner is an attached index whose owner closes every connection
// before it answers (killed or stopping mid-request), as the client says
// it: its calls fail with the connection's error.
type cutOwner struct {
	index
	err error
}

func (c cutOwner) Query(context.Context, string, *db.QueryOptions) (*db.QueryResult, error) {
	return nil, c.err
}
func (c cutOwner) Get(string) (*db.StoredDoc, error)  { return nil, c.err }
func (c cutOwner) Put(db.Doc, *db.WriteOptions) error { return c.err }
func (c cutOwner) Pairs(context.Context, *db.PairsOptions) iter.Seq2[db.Pair, error] {
	return func(yield func(db.Pair, error) bool) { yield(db.Pair{}, c.err) }
}

// Ensure that a read whose owner was cut in flight (killed mid-request)
// is made again on the index opened anew, and its answer is the index's:
// an attached query failed with "make it again" (a crash-safety review);
// and that a write so cut, a cut the command made itself (Ctrl-C) and
// an answer of the owner's are not made again.
func TestHandoverRepeatsReadsCutInFlight(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutBatch([]db.Doc{{ID: "a", Text: "the quick brown fox jumps over the lazy dog"}, {ID: "b", Text: "the quick brown fox jumps over the lazy dog!"}}, nil); err != nil {
		t.Fatal(err)
	}
	d.Close()
	// NB: as the client says it (TestPutConnectionClosedBeforeAnswer).
	cut := fmt.Errorf("%w (it is stopping, or was killed or restarted): the call writes nothing; make it again: %w", client.ErrConnectionCut, &net.OpError{Op: "read", Net: "unix", Err: syscall.ECONNRESET})
	reopened := 0
	owner := func(err error) *handover {
		return newHandover(cutOwner{err: err}, func() {}, reopenReadOnly(dir, &reopened))
	}
	h := owner(cut)
	res, err := h.Query(context.Background(), "the quick brown fox jumps over the lazy dog", nil)
	if err != nil || len(res.Matches) != 2 || reopened != 1 {
		t.Fatalf("a query cut in flight: %+v, %v, reopened %d times; want a and b, once", res, err, reopened)
	}
	h.closeAll()
	h = owner(fmt.Errorf("%w: %w", client.ErrConnectionCut, io.ErrUnexpectedEOF))
	var pairs []db.Pair
	for p, err := range h.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatalf("pairs cut before their first: %v", err)
		}
		pairs = append(pairs, p)
	}
	h.closeAll()
	if len(pairs) != 1 || reopened != 2 {
		t.Fatalf("pairs cut before their first: %v, reopened %d times in all; want (a, b), twice", pairs, reopened)
	}
	for _, c := range []struct {
		what string
		err  error
		call func(h *handover) error
	}{
		{"a put cut in flight", cut, func(h *handover) error { return h.Put(db.Doc{ID: "c", Text: "c"}, nil) }},
		{"a get the command cut", fmt.Errorf("%w: %w", context.Canceled, io.EOF), func(h *handover) error { _, err := h.Get("a"); return err }},
		{"the owner's answer", &client.Error{Status: 503, Code: "shutdown", Message: "shutting down"}, func(h *handover) error { _, err := h.Get("a"); return err }},
	} {
		h := owner(c.err)
		if err := c.call(h); !errors.Is(err, c.err) || reopened != 2 {
			t.Errorf("%s: %v, reopened %d times in all; want its error, and no reopening", c.what, err, reopened)
		}
		h.closeAll()
	}
}

// Ensure that a command attached to a server compares --stop-words as
// Open does, as a set (order and repeats were a mismatch attached alone:
// a maintainer review's K5). Oracle: the same commands on the index
// opened in process.
func TestAttachStopWordsAsASet(t *testing.T) {
	idx := filepath.Join(shortDir(t), "idx")
	in := "../../testdata/cmd/inputs/docs.jsonl"
	mustRun(t, "create", "--db", idx, "--shingle", "word", "--stop-words", "the,a")
	cases := []struct {
		words string
		code  int
	}{{"a,the,the", 0}, {"the,a", 0}, {"an", 2}}
	for _, c := range cases {
		if _, errOut, code := runLine([]string{"insert", "--db", idx, "--stop-words", c.words, in}, ""); code != c.code {
			t.Fatalf("in process, --stop-words %s: exit %d, want %d: %s", c.words, code, c.code, errOut)
		}
	}
	startServe(t, "--db", idx)
	for _, c := range cases {
		if _, errOut, code := runLine([]string{"insert", "--db", idx, "--stop-words", c.words, in}, ""); code != c.code {
			t.Errorf("attached, --stop-words %s: exit %d, want %d as in process: %s", c.words, code, c.code, errOut)
		}
	}
}

// Ensure that an export attached to a server refuses to replace its
// outputs when the index was written between its clustering and the end
// of its scan (a delete of a cluster's representative dropped its copies
// with nothing kept: a nightly output review's O1), and writes them when
// it was not. Oracle: the outputs' bytes before the run, and the control
// run's kept ids.
func TestExportRefusesAnIndexWrittenDuringIt(t *testing.T) {
	dir := shortDir(t)
	idx := filepath.Join(dir, "idx")
	mustRun(t, "insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl")
	startServe(t, "--db", idx)
	out, removed := filepath.Join(dir, "k.jsonl"), filepath.Join(dir, "r.jsonl")
	for _, f := range []string{out, removed} {
		if err := os.WriteFile(f, []byte("last night's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { exportScanning = nil })
	exportScanning = func() {
		if _, errOut, code := runLine([]string{"delete", "--db", idx, "fox1"}, ""); code != 0 {
			t.Errorf("the delete during the export: exit %d: %s", code, errOut)
		}
	}
	_, errOut, code := runLine([]string{"export", "--db", idx, "--out", out, "--removed", removed}, "")
	if code != 1 || !strings.Contains(errOut, "the index was written during the export (it held 6 documents of 6 written when the clustering began, 5 of 6 at the end)") || !strings.Contains(errOut, "nothing written") {
		t.Errorf("export with a delete during it: exit %d: %s", code, errOut)
	}
	for _, f := range []string{out, removed} {
		if b, _ := os.ReadFile(f); string(b) != "last night's\n" {
			t.Errorf("%s was replaced: %q", f, b)
		}
	}
	exportScanning = nil
	if _, errOut, code := runLine([]string{"export", "--db", idx, "--out", out, "--removed", removed}, ""); code != 0 {
		t.Fatalf("export without a writer: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "last night's") || !strings.Contains(string(b), `"fox2"`) || strings.Contains(string(b), `"fox1"`) {
		t.Errorf("export without a writer wrote:\n%s", b)
	}
}

// Ensure that a serve started while another serves the index, which is
// signalled a moment later, waits for it and then serves: a serve
// restarted before the old one had said it was stopping failed at once,
// and the index stayed unserved (a server operator's review, S1). The
// oracle: which process the index's socket answers for, and the exits.
func TestServeRestartedBeforeTheOldOneStops(t *testing.T) {
	if testing.Short() {
		t.Skip("two servers in other processes (-short)")
	}
	idx := filepath.Join(shortDir(t), "idx")
	mustRun(t, "create", "--db", idx)
	old := startPiped(t, "serve", "--db", idx)
	defer old.cmd.Process.Kill()
	waitUntil(t, old, func() string { return "the first serve does not serve: " + old.out.String() }, func() bool {
		pid, serving, _ := ownerHealth(idx)
		return serving && pid == old.cmd.Process.Pid
	})
	next := startPiped(t, "serve", "--db", idx)
	defer func() {
		next.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-next.done:
		case <-time.After(30 * time.Second): // NB: or read already, by a failure
		}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-next.done:
		t.Fatalf("the second serve, with the first serving and not yet signalled, ended at once: %v\n%s", err, next.out)
	default:
	}
	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-old.done; err != nil {
		t.Fatalf("the first serve: %v\n%s", err, old.out)
	}
	waitUntil(t, next, func() string { return "the second serve does not serve: " + next.out.String() }, func() bool {
		pid, serving, _ := ownerHealth(idx)
		return serving && pid == next.cmd.Process.Pid
	})
}

// Ensure that an attached write waits for an owner that opened the index
// to read only (a read command such as check, which serves its socket
// while it runs) to end, saying so, and then writes on the index it left,
// where every write failed at once, exit 75, because someone ran a query
// just then (a concurrency review, C2); and that the wait is bounded
// (readOnlyOwnerWait), ending in that refusal, with nothing written. The
// oracle: the documents stored, read after both.
func TestWriteWaitsForAReadOnlyOwner(t *testing.T) {
	dir := filepath.Join(shortDir(t), "idx")
	mustRun(t, "insert", "--db", dir, "../../testdata/cmd/inputs/docs.jsonl")
	input := filepath.Join(t.TempDir(), "new.jsonl")
	if err := os.WriteFile(input, []byte(`{"id":"waited","text":"a document written once the read-only owner ended"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOwner := func() (release func()) {
		ro, err := db.Open(dir, &db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		stop, err := httpapi.ServeSocket(ro, &httpapi.Options{Owner: "lshdb check"})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			stop(context.Background())
			ro.Close()
		}
	}
	stored := func(id string) bool {
		d := openReadOnly(t, dir)
		defer d.Close()
		ok, err := d.Has(id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// Bounded: refused once the wait is over, exit 75, nothing written.
	defer func(w time.Duration) { readOnlyOwnerWait = w }(readOnlyOwnerWait)
	readOnlyOwnerWait = 300 * time.Millisecond
	release := readOwner()
	_, errOut, code := runLine([]string{"insert", "--db", dir, input}, "")
	release()
	if code != exitBusy || !strings.Contains(errOut, "wait for it to end") || !strings.Contains(errOut, "reads only") || !strings.Contains(errOut, "waited") {
		t.Fatalf("an insert beside a read-only owner past the wait: exit %d %s", code, errOut)
	}
	if stored("waited") {
		t.Fatal("the refused insert stored its document")
	}
	// So is an attached build, whose load streams its input: it waits
	// before it starts, as its owner's health says it reads only (it
	// failed at once), from stdin too, which cannot be read twice.
	release = readOwner()
	_, errOut, code = runLine([]string{"build", "--db", dir, "-"}, `{"id":"waited","text":"a document written once the read-only owner ended"}`+"\n")
	release()
	if code != exitBusy || !strings.Contains(errOut, "wait for it to end") || !strings.Contains(errOut, "reads only") || !strings.Contains(errOut, "waited") {
		t.Fatalf("a build beside a read-only owner past the wait: exit %d %s", code, errOut)
	}
	if stored("waited") {
		t.Fatal("the refused build stored its document")
	}

	// The owner ends during the wait: the write goes on.
	readOnlyOwnerWait = time.Minute
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"build", "--db", dir, "-"}, `{"id":"waited","text":"a document written once the read-only owner ended"}` + "\n"},
		{[]string{"delete", "--db", dir, "waited"}, ""},
		{[]string{"insert", "--db", dir, input}, ""},
	} {
		release = readOwner()
		released := make(chan struct{})
		go func() {
			time.Sleep(500 * time.Millisecond)
			release()
			close(released)
		}()
		_, errOut, code = runLine(c.args, c.stdin)
		select {
		case <-released:
		default:
			t.Fatalf("%s ended before the read-only owner did: exit %d %s", c.args[0], code, errOut)
		}
		if code != 0 || !strings.Contains(errOut, "wait for it to end") {
			t.Fatalf("%s that waited for a read-only owner: exit %d %s", c.args[0], code, errOut)
		}
		if want := c.args[0] != "delete"; stored("waited") != want {
			t.Fatalf("after %s that waited: stored %v, want %v", c.args[0], !want, want)
		}
		t.Logf("%s's notes: %s", c.args[0], errOut)
	}
}

// Ensure that a load's wait for a writer asks an owner that gives no
// health (not gone: a timeout under load) three times more, a moment
// apart, and then lets the load go, and that an interrupt ends those
// moments at once, with nothing written. The oracles: the number of
// times it asked, and the error.
func TestAwaitWriterUnanswered(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		if interrupted {
			cancel()
		}
		h := newHandover(struct{ index }{}, func() {}, func() (index, func(), error) {
			return nil, nil, errors.New("reopened: the owner was not gone")
		})
		h.waitReadOnly, h.ctx = true, ctx
		asked := 0
		h.health = func() (httpapi.HealthJSON, error) {
			asked++
			return httpapi.HealthJSON{}, errors.New("no answer")
		}
		err := h.awaitWriter()
		cancel()
		switch {
		case !interrupted && (err != nil || asked != 4):
			t.Errorf("asked %d times, %v: want 4 and the load let go", asked, err)
		case interrupted && (!errors.Is(err, context.Canceled) || asked != 1 || !strings.Contains(err.Error(), "nothing was written")):
			t.Errorf("interrupted: asked %d times, %v: want once, and the interrupt", asked, err)
		}
	}
}
