package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFileName is the file in a data directory whose lock says which
// process owns the directory; it holds that process's pid.
const LockFileName = "redstream.lock"

// ErrDirLocked means another process holds a data directory's lock.
var ErrDirLocked = errors.New("persistence: the data directory is in use")

// DirLock is the exclusive lock on a data directory: one process at a
// time reads or changes what is in it (DESIGN principle 8). The server
// takes it before it reads or writes any file there, and the admin
// commands that change a data directory take it too. The lock is the
// operating system's (flock), so it dies with its process, kill -9
// included: there is no stale lock to clean up.
type DirLock struct {
	f    *os.File
	path string
}

// LockDir takes dir's lock, creating dir if need be, or fails at once
// with an error wrapping ErrDirLocked that names the holder's pid.
func LockDir(dir string) (*DirLock, error) {
	if err := mkdirDurable(OSFS{}, dir); err != nil {
		return nil, fmt.Errorf("persistence: creating data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("persistence: opening %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf("process %d", pid)
			}
		}
		return nil, fmt.Errorf("%w: %s is locked by %s (%s); stop that process first, "+
			"or give this one another dir", ErrDirLocked, dir, holder, path)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("persistence: writing %s: %w", path, err)
	}
	return &DirLock{f: f, path: path}, nil
}

// Unlock releases the lock. The file stays: removing it could let a
// process that opened it a moment ago lock a file nobody else sees.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
