package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
)

// Ensure that killing the owner (SIGKILL) while clients write through it
// loses no acknowledged (synced) write: the next owner starts, removes the
// stale socket, and holds every acknowledged document, and the index
// checks clean.
func TestKillOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL")
	}
	idx := filepath.Join(shortDir(t), "idx")
	owner, c := serveProcess(t, idx, nil)
	defer c.Close()
	sock := filepath.Join(idx, "lshdb.sock")
	// Four writers put synced documents until the owner dies; each
	// acknowledged id is recorded.
	var mu sync.Mutex
	var acked []string
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := c.Put(db.Doc{ID: id, Text: fmt.Sprintf("writer %d wrote document %d before the owner died", w, i)}, nil); err != nil {
					return // the owner is gone
				}
				mu.Lock()
				acked = append(acked, id)
				if len(acked) >= 100 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatal("the writes do not go through")
	}
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	wg.Wait()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the killed owner's socket is gone (the test needs a stale one): %v", err)
	}
	start := time.Now()
	_, _, log, stop := startServe(t, "--db", idx)
	took := time.Since(start)
	t.Logf("the next owner served %v after its start; %d writes were acknowledged", took, len(acked))
	// NB: the issue asks for under a second (37 ms measured on 2 cores);
	// the bound leaves room for a loaded CI machine under -race.
	if took > 10*time.Second {
		t.Errorf("the next owner took %v to serve", took)
	}
	c2, err := client.Open(sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, id := range acked {
		if ok, err := c2.Has(id); err != nil || !ok {
			missing++
		}
	}
	c2.Close()
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes are lost", missing, len(acked))
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve: exit %d %s", code, log)
	}
	_, rep := docsOf(t, idx)
	if !rep.OK() || rep.Docs < len(acked) {
		t.Errorf("check after the kill: %+v", rep)
	}
}

// Ensure that SIGHUP (the terminal that started it closed) stops serve as
// SIGTERM does: it drains, removes its socket, says it stopped and exits
// 0 (a server stopped as asked); it was killed (exit 129), its socket
// left behind.
func TestServeHangUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGHUP")
	}
	idx := filepath.Join(shortDir(t), "idx")
	var stderr strings.Builder
	owner, c := serveProcess(t, idx, &stderr)
	c.Close()
	sock := filepath.Join(idx, "lshdb.sock")
	if err := owner.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := owner.Wait(); err != nil {
		t.Errorf("serve after SIGHUP: %v, want exit 0 (stderr %q)", err, stderr.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("serve left its socket behind after SIGHUP: %v", err)
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("serve said nothing of stopping after SIGHUP: %q", stderr.String())
	}
}

// serveProcess creates the index idx and serves it from another process
// (lshdbProcess; its stderr to stderr, if given), killed when the test
// ends, and returns it with a client of its socket once it answers.
func serveProcess(t *testing.T, idx string, stderr io.Writer) (*exec.Cmd, *client.Client) {
	t.Helper()
	if _, errOut, code := runLine([]string{"create", "--db", idx}, ""); code != 0 {
		t.Fatal(errOut)
	}
	owner := lshdbProcess("serve", "--db", idx)
	owner.Stderr = stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill() })
	sock := filepath.Join(idx, "lshdb.sock")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := client.Open(sock, nil)
		if err == nil {
			return owner, c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owner does not answer: %v", err)
		}
	}
}
