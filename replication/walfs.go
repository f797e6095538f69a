package replication

import (
	"os"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
	"github.com/redstream/redstream/persistence"
)

// walFS is raft-wal's own file system with one change: a segment's
// syncs after its first use fdatasync, as the AOF does, instead of
// fsync. raft-wal preallocates its segments, so an append changes no
// file size and fdatasync skips the inode timestamps that fsync would
// journal on every commit. The first sync stays raft-wal's, which also
// syncs the directory that holds the new segment.
type walFS struct{ *fs.FS }

func (w walFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	return wrapSegment(w.FS.Create(dir, name, size))
}

func (w walFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	return wrapSegment(w.FS.OpenWriter(dir, name))
}

func wrapSegment(f types.WritableFile, err error) (types.WritableFile, error) {
	if err != nil {
		return nil, err
	}
	switch ff := f.(type) {
	case *fs.File: // a new segment
		return &segmentWriter{WritableFile: f, os: &ff.File}, nil
	case *os.File: // one reopened at start: its directory entry is durable
		return &segmentWriter{WritableFile: f, os: ff, synced: true}, nil
	}
	return f, nil
}

// segmentWriter is one segment file open for writing.
type segmentWriter struct {
	types.WritableFile
	os     *os.File
	synced bool // raft-wal's first sync (file and directory) has run
}

func (s *segmentWriter) Sync() error {
	if !s.synced {
		if err := s.WritableFile.Sync(); err != nil {
			return err
		}
		s.synced = true
		return nil
	}
	return persistence.SyncData(s.os)
}
