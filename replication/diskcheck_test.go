package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// writeTestLog writes batches batches of three entries each with
// raft-wal, as a node does, and returns the wal directory and its one
// segment file.
func writeTestLog(t *testing.T, batches int) (dir, segment string) {
	t.Helper()
	dir = t.TempDir()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	index := uint64(1)
	for range batches {
		var logs []*raft.Log
		for range 3 {
			logs = append(logs, &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d", index)})
			index++
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Close(), meta.Close()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	if len(files) != 1 {
		t.Fatalf("%d segment files, want 1", len(files))
	}
	return dir, files[0]
}

// writeAt overwrites path at offset with b.
func writeAt(t *testing.T, path string, offset int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

func TestCheckLog(t *testing.T) {
	garbage := []byte{0x5a, 0xa5, 0x01, 0xff, 0x13, 0x37, 0xc0, 0xde, 0x99, 0x42, 0x17, 0x01}
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string, s walSegment)
		damaged bool
	}{
		{"intact", func(*testing.T, string, walSegment) {}, false},
		{"last batch torn: garbage over its records", func(t *testing.T, path string, s walSegment) {
			writeAt(t, path, s.batches[len(s.batches)-1].entries[1], garbage)
		}, false},
		{"last batch torn: garbage over its commit frame", func(t *testing.T, path string, s walSegment) {
			writeAt(t, path, s.batches[len(s.batches)-1].commit, garbage[:8])
		}, false},
		{"middle record's payload", func(t *testing.T, path string, s walSegment) {
			flipByte(t, path, s.batches[2].entries[1]+walFrameHeaderLen+20)
		}, true},
		{"middle frame header's type", func(t *testing.T, path string, s walSegment) {
			flipByte(t, path, s.batches[2].entries[1])
		}, true},
		{"middle frame header's length", func(t *testing.T, path string, s walSegment) {
			flipByte(t, path, s.batches[2].entries[1]+4)
		}, true},
		{"middle commit frame", func(t *testing.T, path string, s walSegment) {
			flipByte(t, path, s.batches[2].commit+5)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := writeTestLog(t, 6)
			seg, err := readWALSegment(path)
			if err != nil || len(seg.batches) != 6 {
				t.Fatalf("the intact log reads as %d batches (%v), want 6", len(seg.batches), err)
			}
			tc.damage(t, path, seg)
			err = checkLog(dir, "DIR/raft")
			if got := errors.Is(err, ErrDamaged); got != tc.damaged {
				t.Fatalf("checkLog = %v; want damaged %v", err, tc.damaged)
			}
		})
	}
}
