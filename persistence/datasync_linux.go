package persistence

import (
	"os"
	"syscall"
)

// syncData makes f's written data durable. On Linux that is fdatasync,
// as Redis uses for its AOF: it skips the timestamps fsync also writes,
// yet still commits the file size an append changed.
func syncData(f File) error {
	if of, ok := f.(*os.File); ok {
		for {
			err := syscall.Fdatasync(int(of.Fd()))
			if err != syscall.EINTR {
				return err
			}
		}
	}
	return f.Sync()
}

// syncDataHoldingP is syncData without telling the Go scheduler that the
// thread is blocked, so the goroutine keeps its P for the call. For a
// short fdatasync that is cheaper: the runtime's monitor takes the P back
// from any system call that blocks for more than about 20 µs, so every
// fsync-always round (0.2 ms on this VM) used to hand its P to another
// thread and take one back after, and kept the monitor waking every 20 µs
// to do so. Holding the P took that cost away (+8% LPUSH with always, 50
// clients). The price: the P runs nothing else until the disk answers,
// and a garbage-collection pause waits for it, so the caller uses this
// only while fsyncs are fast and another P exists to run everything else.
func syncDataHoldingP(f File) error {
	of, ok := f.(*os.File)
	if !ok {
		return f.Sync()
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return err
	}
	errno := syscall.EINTR
	err = rc.Control(func(fd uintptr) {
		for errno == syscall.EINTR {
			_, _, errno = syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		}
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
