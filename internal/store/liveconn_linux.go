package store

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// hungUp reports whether the peer of conn closed it or it failed, without
// reading from it: a poll that does not wait, for POLLRDHUP (the peer
// closed its side, even behind data still unread, such as the server's
// last error before it shut down), POLLHUP or POLLERR.
func hungUp(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var revents int16
	err = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, pollErr := unix.Poll(fds, 0); pollErr == nil && n > 0 {
			revents = fds[0].Revents
		}
	})
	return err != nil || revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}
