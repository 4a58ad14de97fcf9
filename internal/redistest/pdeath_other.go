//go:build !linux

package redistest

import "os/exec"

// setParentDeath does nothing here: Stop kills the nodes.
func setParentDeath(cmd *exec.Cmd) {}
