//go:build linux

package client_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db/client"
)

// Ensure that the client refuses a socket served by another user, before
// it sends anything: in a directory others may write to, one of them put
// a socket of their own in place of the index's and received the token.
// The other user: a copy of this test binary serving a socket as nobody
// (uid 65534), which prints every request's Authorization header; then,
// once the directory is that user's, the socket is taken.
func TestSocketOfAnotherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to serve a socket as another user")
	}
	// NB: not t.TempDir(), whose parent is the test's alone (0700).
	dir, err := os.MkdirTemp("", "lshdb-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "lshdb.sock")
	cmd := exec.Command(bin, "-test.run=^TestHelperServeSocket$")
	cmd.Env = append(os.Environ(), "LSHDB_HELPER_SOCKET="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("cannot run a process as nobody here:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	ready := make(chan bool, 1)
	go func() { ready <- lines.Scan() && lines.Text() == "ready" }()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the helper did not start")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not start")
	}
	_, err = client.Open(sock, &client.Options{Token: "s3cret", OpenTimeout: 10 * time.Second})
	if !errors.Is(err, client.ErrForeignSocket) || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("Open of a socket served as nobody: %v", err)
	}
	// The directory's owner may serve it (root attaching to a service
	// user's index): past the check, the fake server is asked.
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err = client.Open(sock, &client.Options{Token: "s3cret", OpenTimeout: 10 * time.Second}); errors.Is(err, client.ErrForeignSocket) {
		t.Fatalf("Open of a socket served by its directory's owner: %v", err)
	}
	// But for a caller other than root, a socket of another user is an
	// impostor's even in a directory that user owns (a real owner's
	// socket is 0600): a third user, uid 65533, is refused.
	other := exec.Command(bin, "-test.run=^TestHelperOpenSocket$")
	other.Env = append(os.Environ(), "LSHDB_HELPER_OPEN="+sock)
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65533, Gid: 65533}}
	if said, err := other.Output(); !strings.Contains(string(said), "refused:") {
		t.Errorf("uid 65533's Open of uid 65534's socket in its directory: %s %v", said, err)
	}
	cmd.Process.Kill()
	rest, _ := io.ReadAll(out)
	if n := strings.Count(string(rest), "Bearer s3cret"); n != 1 || strings.Contains(string(rest), "other-secret") {
		t.Errorf("the other user's server received the tokens: %s (want root's second open's alone)", rest)
	}
}

// TestHelperOpenSocket opens $LSHDB_HELPER_OPEN with a token (for
// TestSocketOfAnotherUserRefused), and says whether it was refused.
func TestHelperOpenSocket(t *testing.T) {
	sock := os.Getenv("LSHDB_HELPER_OPEN")
	if sock == "" {
		t.Skip("a helper of TestSocketOfAnotherUserRefused")
	}
	_, err := client.Open(sock, &client.Options{Token: "other-secret", OpenTimeout: 10 * time.Second})
	if errors.Is(err, client.ErrForeignSocket) {
		fmt.Println("refused:", err)
	} else {
		fmt.Println("opened:", err)
	}
}

// TestHelperServeSocket serves $LSHDB_HELPER_SOCKET (for
// TestSocketOfAnotherUserRefused), printing each request's
// Authorization header.
func TestHelperServeSocket(t *testing.T) {
	sock := os.Getenv("LSHDB_HELPER_SOCKET")
	if sock == "" {
		t.Skip("a helper of TestSocketOfAnotherUserRefused")
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777)
	fmt.Println("ready")
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("got", r.Header.Get("Authorization"))
		w.Write([]byte(`{}`))
	}))
}
