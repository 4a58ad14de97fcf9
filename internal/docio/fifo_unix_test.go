//go:build unix

package docio

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// Ensure that a context that ends stops the open of a named pipe that no
// process writes to: the open waits for a writer, and a command given
// such a pipe held on through its first signal (an adversarial review's
// A2).
func TestReadStopsOpeningASilentPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := readUntilEnd(t, ctx, []string{path}, nil, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a named pipe nobody writes to: %v, want context.Canceled", err)
	}
}
