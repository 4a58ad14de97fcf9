// Package redistest starts a local Redis Cluster for tests: three masters
// and three replicas on free loopback ports, in a temporary directory,
// made with redis-cli --cluster create, and stopped with their processes
// at the end.
//
// Tests that need it call Require, which skips them when redis-server is
// not installed, unless LSHDB_REQUIRE_REDIS=1 (CI sets it): then it fails
// them, so that a CI run cannot pass by skipping.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ErrNoRedis is returned by Start when redis-server or redis-cli is not
// on PATH.
var ErrNoRedis = errors.New("redis-server and redis-cli are not installed (Debian: apt-get install redis-server)")

// Cluster is a running local Redis Cluster.
type Cluster struct {
	// Addrs are the nodes' host:port, masters first.
	Addrs []string
	dir   string
	procs []*exec.Cmd
	args  [][]string // each node's redis-server command line
}

// Nodes is the cluster's size: 3 masters, each with a replica.
const Nodes = 6

// Start starts a cluster in dir (its nodes' files and logs), ready: every
// slot served and every node agreeing that the cluster is ok. It stops
// what it started when it fails.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		return nil, ErrNoRedis
	}
	ports, err := freePorts(Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	for _, p := range ports {
		nd := filepath.Join(dir, strconv.Itoa(p))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return nil, err
		}
		args := []string{server, "--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--protected-mode", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--appendonly", "no", "--save", "", "--dir", nd, "--logfile", filepath.Join(nd, "log"), "--daemonize", "no"}
		c.args = append(c.args, args)
		cmd := exec.Command(args[0], args[1:]...)
		setParentDeath(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("redis-server on port %d: %w", p, err)
		}
		c.procs = append(c.procs, cmd)
		c.Addrs = append(c.Addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	for _, a := range c.Addrs {
		if err := waitFor(ctx, 10*time.Second, func() error {
			out, err := run(ctx, cli, "-h", "127.0.0.1", "-p", port(a), "ping")
			if err == nil && strings.TrimSpace(out) != "PONG" {
				err = fmt.Errorf("ping: %q", out)
			}
			return err
		}); err != nil {
			return nil, c.failed(fmt.Errorf("node %s did not start: %w", a, err))
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := run(ctx, cli, args...); err != nil {
		return nil, c.failed(fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out))
	}
	for _, a := range c.Addrs {
		if err := waitFor(ctx, 30*time.Second, func() error {
			out, err := run(ctx, cli, "-h", "127.0.0.1", "-p", port(a), "cluster", "info")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") || !strings.Contains(out, fmt.Sprintf("cluster_known_nodes:%d", Nodes)) {
				return fmt.Errorf("cluster info: %s", strings.Join(strings.Fields(out)[:min(6, len(strings.Fields(out)))], " "))
			}
			return nil
		}); err != nil {
			return nil, c.failed(fmt.Errorf("node %s: the cluster is not ready: %w", a, err))
		}
	}
	// NB: a replica that has not finished its first sync is not yet
	// listed by CLUSTER SLOTS: writers that wait for replicas (WAIT)
	// need them all online.
	if err := waitFor(ctx, 30*time.Second, func() error {
		online := 0
		for _, a := range c.Addrs {
			out, err := run(ctx, cli, "-h", "127.0.0.1", "-p", port(a), "info", "replication")
			if err != nil {
				return err
			}
			if strings.Contains(out, "role:master") && strings.Contains(out, "state=online") {
				online++
			}
		}
		if online != Nodes/2 {
			return fmt.Errorf("%d of %d masters have an online replica", online, Nodes/2)
		}
		return nil
	}); err != nil {
		return nil, c.failed(fmt.Errorf("the replicas did not come online: %w", err))
	}
	ok = true
	return c, nil
}

// failed adds the nodes' logs to err.
func (c *Cluster) failed(err error) error {
	var b strings.Builder
	for _, a := range c.Addrs {
		log, _ := os.ReadFile(filepath.Join(c.dir, port(a), "log"))
		if len(log) > 2000 {
			log = log[len(log)-2000:]
		}
		fmt.Fprintf(&b, "\n--- %s log:\n%s", a, log)
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// Stop kills the nodes and waits for them.
func (c *Cluster) Stop() {
	for _, p := range c.procs {
		if p.Process != nil {
			p.Process.Kill()
			p.Wait()
		}
	}
	c.procs = nil
}

// Kill kills node i (an index into Addrs) at once, as a crash would.
func (c *Cluster) Kill(i int) error {
	if i < 0 || i >= len(c.procs) || c.procs[i].Process == nil {
		return fmt.Errorf("no node %d", i)
	}
	err := c.procs[i].Process.Kill()
	c.procs[i].Wait()
	return err
}

// Restart starts node i again after Kill, on its port and files: it
// rejoins the cluster (a replica then syncs from its master anew).
func (c *Cluster) Restart(i int) error {
	if i < 0 || i >= len(c.procs) {
		return fmt.Errorf("no node %d", i)
	}
	cmd := exec.Command(c.args[i][0], c.args[i][1:]...)
	setParentDeath(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	c.procs[i] = cmd
	return nil
}

// Require starts a cluster for the test (or the package: call it from
// TestMain through RequireMain) and stops it when the test ends. Without
// redis-server it skips the test, or fails it when LSHDB_REQUIRE_REDIS=1.
func Require(t testing.TB) *Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "lshdb-redis-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), dir)
	if errors.Is(err, ErrNoRedis) && os.Getenv("LSHDB_REQUIRE_REDIS") != "1" {
		os.RemoveAll(dir)
		t.Skipf("%v: the Redis Cluster tests are skipped (LSHDB_REQUIRE_REDIS=1 makes this a failure)", err)
	}
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		os.RemoveAll(dir)
	})
	return c
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// freePorts returns n loopback ports free now, each with its cluster bus
// port (+10000) free too.
func freePorts(n int) ([]int, error) {
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n && tries < 200; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		if p+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000))
		if err != nil {
			l.Close()
			continue
		}
		held = append(held, l, bus)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found %d free port pairs of %d", len(ports), n)
	}
	return ports, nil
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func waitFor(ctx context.Context, limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
