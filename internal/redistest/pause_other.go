//go:build !unix

package redistest

import (
	"errors"
	"fmt"
)

// errNoPause says that a node cannot be paused here: there is no
// SIGSTOP elsewhere than Unix (nor, in practice, a redis-server).
var errNoPause = errors.New("redistest: pausing a node needs SIGSTOP (Unix)")

// Pause would stop node i until Resume; elsewhere than Unix it fails.
func (c *Cluster) Pause(i int) error { return fmt.Errorf("node %d: %w", i, errNoPause) }

// Resume would continue node i after Pause; elsewhere than Unix it fails.
func (c *Cluster) Resume(i int) error { return fmt.Errorf("node %d: %w", i, errNoPause) }
