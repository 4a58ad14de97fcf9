//go:build linux

package client

import (
	"fmt"
	"net"
	"os"

	"github.com/lshdb/lshdb/db"
	"golang.org/x/sys/unix"
)

// checkPeer refuses a Unix socket connection whose other end runs as
// another user (SO_PEERCRED): in a directory others may write to, one of
// them could put a socket of their own in place of the index's and take
// what is sent, the token first. NB: the index's owner makes its socket
// 0600, so another user than the caller never serves it.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("lshdb: client: asking who serves the socket: %w", cerr)
	}
	if uid := os.Getuid(); int(cred.Uid) != uid {
		return fmt.Errorf("%w: client: the process behind the socket (pid %d) runs as uid %d, not as this one's (%d): not the index's owner, which makes its socket its own alone; nothing was sent (attach as the user that serves the index)", db.ErrInvalidOptions, cred.Pid, cred.Uid, uid)
	}
	return nil
}
