package persistence

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// FS is the file system the AOF uses. Production code uses OSFS; tests
// wrap it to inject failures (a full disk, a torn write) the way pebble's
// errorfs does.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	// SyncDir makes a directory's entries (created and renamed files)
	// durable.
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt // a load's look past damage
	io.Writer
	io.WriterAt // preallocation's zeros, beyond the data
	io.Closer
	Sync() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
	Stat() (os.FileInfo, error)
}

// OSFS is the real file system.
type OSFS struct{}

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// Rename renames a file with os.Rename.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove removes a file with os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// MkdirAll creates a directory with os.MkdirAll.
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

// ReadDir lists a directory with os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// SyncDir fsyncs a directory.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeFileAtomic writes data to path so that a crash at any moment
// leaves either the old file or the new one: write a temporary file,
// fsync it, rename it over path, fsync the directory.
func writeFileAtomic(fs FS, path string, data []byte) error {
	_, err := writeFileDurably(fs, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// mkdirDurable creates dir, and any parent it lacks, and fsyncs the
// parent of each directory it creates: a new directory's entry is only
// durable once its parent is synced, and a power cut that took it away
// would take every file in it too, fsync'd or not.
func mkdirDurable(fs FS, dir string) error {
	dir = filepath.Clean(dir)
	_, err := fs.ReadDir(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fs.SyncDir(parent)
}

// SyncData makes an os.File's written data durable the way the AOF does
// (fdatasync on Linux), for files other packages write: the Raft log's
// segments.
func SyncData(f *os.File) error { return syncData(f) }
