//go:build linux

package client

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a Unix socket connection to path whose other end
// runs as another user (SO_PEERCRED), ErrForeignSocket: in a directory others may write to, one of
// them could put a socket of their own in place of the index's and take
// what is sent, the token first. NB: the index's owner makes its socket
// 0600, so another user than the caller never serves it.
func checkPeer(c net.Conn, path string) error {
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
	// NB: the peer may be this process's user or root; and, for root
	// only, the user that owns the directory the socket is in (root
	// attaching to a service user's index). Another caller never reaches
	// a real owner of another user (its socket is 0600): any such peer
	// is an impostor, even in a directory it owns.
	uid := os.Getuid()
	if int(cred.Uid) == uid || cred.Uid == 0 {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(path)); uid == 0 && err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == cred.Uid {
			return nil
		}
	}
	return fmt.Errorf("%w: the process behind %s (pid %d) runs as uid %d, not as this process's user (%d): not the index's owner; nothing was sent (attach as the user that serves the index)", ErrForeignSocket, path, cred.Pid, cred.Uid, uid)
}
