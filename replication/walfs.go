package replication

import (
	"os"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
	"github.com/redstream/redstream/persistence"
)

// walFS is raft-wal's own file system with two changes, both so that a
// commit's sync writes data and no file system metadata:
//
//   - a segment's syncs after its first use fdatasync, as the AOF does,
//     instead of fsync: raft-wal preallocates its segments, so an append
//     changes no file size, and fdatasync skips the inode timestamps that
//     fsync would journal on every commit. The first sync stays
//     raft-wal's, which also syncs the directory that holds the new
//     segment.
//   - a segment is written with zeros a stretch ahead of its appends
//     (fillAhead). raft-wal preallocates with fallocate, which leaves the
//     blocks unwritten extents: the first write into each turns it into a
//     written one, a metadata change, so every commit's fdatasync also
//     committed ext4's journal. Zeros read back as fallocate's unwritten
//     blocks do (raft-wal's reader stops at a zero frame header), so the
//     file means the same; only one sync in a stretch now commits the
//     journal.
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
	var w *segmentWriter
	switch ff := f.(type) {
	case *fs.File: // a new segment
		w = &segmentWriter{WritableFile: f, os: &ff.File}
	case *os.File: // one reopened at start: its directory entry is durable
		w = &segmentWriter{WritableFile: f, os: ff, synced: true}
	default:
		return f, nil
	}
	fi, err := w.os.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	w.size = fi.Size()
	return w, nil
}

// fillAhead is how far ahead of raft-wal's appends a segment is kept
// written with zeros. A stretch costs one journal commit, by the sync of
// the append that fills it, instead of one per sync.
const fillAhead = 1 << 20

// zeros is the fill's source.
var zeros = make([]byte, fillAhead)

// segmentWriter is one segment file open for writing.
type segmentWriter struct {
	types.WritableFile
	os     *os.File
	synced bool  // raft-wal's first sync (file and directory) has run
	size   int64 // the file's (preallocated) size: the fill stops there
	filled int64 // bytes from 0 known written (by raft-wal or the fill)
}

// WriteAt writes p and, once raft-wal's appends come within fillAhead of
// the filled stretch's end, fills the next stretch with zeros. raft-wal
// only appends (and rewrites nothing it has committed), so nothing past
// filled holds data: the fill overwrites only unused space, and on a
// segment reopened at start, only space past the last commit, which
// raft-wal has already decided to overwrite.
func (s *segmentWriter) WriteAt(p []byte, off int64) (int, error) {
	n, err := s.WritableFile.WriteAt(p, off)
	if err != nil {
		return n, err
	}
	end := off + int64(n)
	if end+fillAhead/2 <= s.filled || end >= s.size {
		return n, nil
	}
	from := max(end, s.filled)
	to := min(end+fillAhead, s.size)
	if _, err := s.WritableFile.WriteAt(zeros[:to-from], from); err != nil {
		return n, err
	}
	s.filled = to
	return n, nil
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
