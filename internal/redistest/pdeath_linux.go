package redistest

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill the node when the test process
// dies (a crash, a timeout's kill), so that no server outlives its test.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
