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
