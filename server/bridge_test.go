package server

import (
	"io"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// handleConn serves conn, any net.Conn (a net.Pipe end, a scripted fake),
// until the server closes the client, and returns once everything the
// server wrote has reached conn. The loop serves sockets only, so a
// socket pair stands between: two goroutines copy conn's input into one
// end and the other end's output back to conn.
func (s *Server) handleConn(conn net.Conn) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	if err := unix.SetNonblock(fds[1], true); err != nil {
		panic(err)
	}
	near := os.NewFile(uintptr(fds[0]), "bridge")
	nearConn, err := net.FileConn(near)
	near.Close()
	if err != nil {
		panic(err)
	}
	c := s.adoptFD(addrOnly{conn}, fds[1])
	if c == nil {
		nearConn.Close()
		conn.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the server's output, until it closes its end
		defer wg.Done()
		_, _ = io.Copy(conn, nearConn)
	}()
	go func() { // the client's input, until it ends or the server closed
		_, _ = io.Copy(nearConn, conn)
		_ = nearConn.(*net.UnixConn).CloseWrite()
	}()
	<-c.gone
	wg.Wait()
	nearConn.Close()
	conn.Close()
}

// addrOnly is conn seen only for its addresses: adoptFD closes what it
// is given, and the bridge still needs conn.
type addrOnly struct{ net.Conn }

func (addrOnly) Close() error { return nil }

// sync orders what the event loop did before the reply a test just read
// before what the test does next. The reply came through a socket, which
// the race detector does not see as synchronisation; the loop writes
// replies holding the lock, so taking it after the reply arrived is.
func (s *Server) sync() {
	s.shard.mu.Lock()
	s.shard.mu.Unlock() //nolint:staticcheck // an empty critical section is the point
}
