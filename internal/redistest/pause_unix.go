//go:build unix

package redistest

import (
	"fmt"
	"syscall"
)

// Pause stops node i (SIGSTOP) until Resume: it answers nothing, as a
// node frozen by its host, and the cluster takes it for failed after the
// node timeout (2 s).
func (c *Cluster) Pause(i int) error {
	if i < 0 || i >= len(c.procs) || c.procs[i].Process == nil {
		return fmt.Errorf("no node %d", i)
	}
	return c.procs[i].Process.Signal(syscall.SIGSTOP)
}

// Resume continues node i after Pause.
func (c *Cluster) Resume(i int) error {
	if i < 0 || i >= len(c.procs) || c.procs[i].Process == nil {
		return fmt.Errorf("no node %d", i)
	}
	return c.procs[i].Process.Signal(syscall.SIGCONT)
}
