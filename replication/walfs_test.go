package replication

import (
	"testing"

	"github.com/hashicorp/raft-wal/fs"
)

// The Raft log's segments get walFS's sync: if raft-wal's file type
// changed, the wrapping would silently stop and every commit would go
// back to a full fsync.
func TestWalSegmentsSyncTheirData(t *testing.T) {
	dir := t.TempDir()
	vfs := walFS{fs.New()}
	f, err := vfs.Create(dir, "seg", 4096)
	if err != nil {
		t.Fatal(err)
	}
	seg, ok := f.(*segmentWriter)
	if !ok {
		t.Fatalf("Create returned %T, not a segmentWriter", f)
	}
	for i, b := range []string{"one", "two"} {
		if _, err := seg.WriteAt([]byte(b), int64(i*3)); err != nil {
			t.Fatal(err)
		}
		if err := seg.Sync(); err != nil {
			t.Fatal(err)
		}
		if !seg.synced {
			t.Fatal("the first sync (file and directory) did not run")
		}
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := vfs.OpenWriter(dir, "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := w.(*segmentWriter); !ok {
		t.Fatalf("OpenWriter returned %T, not a segmentWriter", w)
	}
	got := make([]byte, 6)
	if _, err := w.ReadAt(got, 0); err != nil || string(got) != "onetwo" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
