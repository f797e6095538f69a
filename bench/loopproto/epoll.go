package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// conn is one client of the event loop.
type conn struct {
	fd  int
	in  []byte
	out []byte
}

// serveEpoll is Redis's connection model: one thread waits in epoll_wait,
// reads every ready socket, runs what it read and, before waiting again,
// writes every reply it made (a served waiter's included) with one write
// per socket. No goroutine is parked or woken per request.
func serveEpoll(port int) error {
	runtime.LockOSThread()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	_ = unix.SetsockoptInt(lfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(lfd, 511); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(0)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	conns := map[int]*conn{}
	s := newStore[*conn]()
	var dirty []*conn // have output to write before the next wait
	mark := func(c *conn) {
		if len(c.out) == 0 {
			dirty = append(dirty, c)
		}
	}
	serve := func(w *conn, key, v []byte) { mark(w); w.out = appendPop(w.out, key, v) }
	closeConn := func(c *conn) {
		s.unblock(c)
		delete(conns, c.fd)
		unix.Close(c.fd)
		c.fd = -1
	}
	events := make([]unix.EpollEvent, 128)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if err == unix.EINTR {
			continue
		} else if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				for {
					cfd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
					if err != nil {
						break
					}
					_ = unix.SetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
					conns[cfd] = &conn{fd: cfd}
					_ = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, cfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(cfd)})
				}
				continue
			}
			c := conns[fd]
			if c == nil {
				continue
			}
			r, err := unix.Read(fd, buf)
			if r <= 0 {
				if err != unix.EAGAIN {
					closeConn(c)
				}
				continue
			}
			c.in = append(c.in, buf[:r]...)
			for {
				argv, used := parse(c.in)
				if used == 0 {
					break
				}
				before := len(c.out)
				out, _ := s.run(c, argv, c.out, serve)
				if len(out) > before && before == 0 {
					dirty = append(dirty, c)
				}
				c.out = out
				c.in = c.in[:copy(c.in, c.in[used:])]
			}
		}
		for _, c := range dirty {
			if c.fd >= 0 && len(c.out) > 0 {
				// A short write would need EPOLLOUT; the delivery rows'
				// replies are far below a socket buffer.
				_, _ = unix.Write(c.fd, c.out)
			}
			c.out = c.out[:0]
		}
		dirty = dirty[:0]
	}
}
