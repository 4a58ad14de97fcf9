package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure that the README's lshdb serve block runs as written from the
// repository's root: the lshdb lines in process (serve ... & S=$! until
// kill $S; wait $S), the curl lines with curl, each exiting 0; every API answer is JSON
// (Lines), and the one the README says fails carries its error code.
func TestReadmeServe(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "### Serving an index")
	if !ok {
		t.Fatal("README has no serve section")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	tmp := shortDir(t)
	// NB: the README's port may be taken on this machine: a free one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().String()
	l.Close()
	t.Chdir("../..")
	var stop func() int
	ran := 0
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(strings.NewReplacer("$T", tmp, "127.0.0.1:7070", port).Replace(line))
		args, err := splitWords(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case line == "" || strings.HasPrefix(line, "T=$(mktemp") || strings.HasPrefix(line, "go build") || strings.HasPrefix(line, "until "):
			continue // the test's own directory, binary, and wait for the server
		case line == "kill $S; wait $S":
			if stop == nil {
				t.Fatal("kill $S with no server")
			}
			if code := stop(); code != 0 {
				t.Fatalf("serve exited %d", code)
			}
			stop = nil
		case strings.HasSuffix(line, " & S=$!"):
			// NB: the server's pid, not its job number: a script's or a
			// paste's second serve was job %2 while the first drained, and
			// the last "kill %1" left it running (a newcomer's N2).
			args = args[:len(args)-2]
			if env, ok := strings.CutPrefix(args[0], "LSHDB_TOKEN="); ok {
				t.Setenv("LSHDB_TOKEN", env)
				args = args[1:]
			}
			if args[0] != filepath.Join(tmp, "lshdb") || args[1] != "serve" {
				t.Fatalf("%q is not a serve line", line)
			}
			_, _, _, stop = startServe(t, args[2:]...)
		case args[0] == "curl":
			out, err := exec.Command(curl, args[1:]...).Output()
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if strings.HasSuffix(args[len(args)-1], "/metrics") {
				if !strings.Contains(string(out), "lshdb_http_requests_total") {
					t.Errorf("%s: %.300s", line, out)
				}
				break
			}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var v map[string]any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Errorf("%s: not JSON: %.300s", line, l)
				}
				_, isErr := v["error"]
				if isErr != strings.Contains(line, "id=nope") {
					t.Errorf("%s: %.300s", line, l)
				}
			}
		case args[0] == filepath.Join(tmp, "lshdb"):
			if out, errOut, code := runLine(args[1:], ""); code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", line, code, out, errOut)
			}
		default:
			t.Fatalf("README serve line %q: not lshdb nor curl", line)
		}
		ran++
	}
	if stop != nil {
		t.Error("the block leaves a server running")
	}
	if ran < 10 {
		t.Errorf("%d lines ran", ran)
	}
}
