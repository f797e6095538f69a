package replication

import (
	"os"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// TestLogReopensAfterTailTruncation: a follower whose log holds entries
// the new leader never had deletes that suffix (Raft's "clearing log
// suffix"), and must still open its log after a crash. raft-wal v0.4.0
// marked the truncated segment sealed without writing its index, and
// the next start panicked in raft.NewRaft ("sealed segment has no index
// block"; hashicorp/raft-wal#31, fixed in v0.4.1). Found by the kill -9
// leader test in tests/cluster_fault_test.go.
func TestLogReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{'x', byte(i)}})
	}
	if err := log.StoreLogs(entries); err != nil {
		t.Fatal(err)
	}
	if err := log.DeleteRange(8, 10); err != nil { // the suffix a new leader never had
		t.Fatal(err)
	}
	if err := log.StoreLogs([]*raft.Log{{Index: 8, Term: 2, Type: raft.LogCommand, Data: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	// What a kill -9 leaves on disk: the files as they are, not closed.
	// (v0.4.0's Close also left its meta DB locked, so only a copy could
	// be opened again in this process.)
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	log.Close()

	log, err = wal.Open(crashed)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := uint64(1); i <= 8; i++ {
		var got raft.Log
		if err := log.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d after reopening: %v", i, err)
		}
		if want := entries[i-1]; i < 8 && string(got.Data) != string(want.Data) {
			t.Fatalf("entry %d after reopening: %q, want %q", i, got.Data, want.Data)
		}
	}
	if last, err := log.LastIndex(); err != nil || last != 8 {
		t.Fatalf("last index after reopening: %d, %v; want 8", last, err)
	}
}
