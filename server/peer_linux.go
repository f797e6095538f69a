package server

import (
	"net"
	"syscall"
)

// peerClosed reports whether the peer of conn has already closed or reset
// the connection, without consuming input: it peeks at the socket. A
// blocked client whose FIN or RST has arrived must not be handed an
// element that would then be lost. Control does not take the read lock,
// so this is safe while the client's own goroutine sits in Read.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
		case err != nil:
			closed = true // reset or otherwise broken
		case n == 0:
			closed = true // orderly shutdown: EOF
		}
	})
	return closed || err != nil
}
