package server

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loop's system calls on non-blocking descriptors, made raw: they
// return at once, so telling the Go scheduler about them (entersyscall,
// exitsyscall, and a P handed off and taken back when sysmon sees the
// thread in a syscall) is pure cost — a few percent of the CPU a
// delivered message takes. Only epoll_wait with a timeout, which does
// wait, goes through the scheduler (unix.EpollWait).

// readRaw is read(2) on a non-blocking descriptor.
func readRaw(fd int, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// writeRaw is write(2) on a non-blocking descriptor.
func writeRaw(fd int, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawIO makes read(2) or write(2), trap, on fd with p.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// pollRaw is epoll_wait(2) that does not wait: under load there is
// usually something ready, and the loop then never enters the scheduler.
func pollRaw(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
