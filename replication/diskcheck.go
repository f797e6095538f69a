package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/raft"
)

// What a node checks on its disk before Raft starts, because the stores
// it is built on do not:
//
// raft-wal (v0.4.0) verifies only the last batch of its newest segment
// file when it opens, to find a write torn by a crash, and never checks
// a record it reads. A damaged record in the middle of the log would be
// applied as it reads (another value than the one committed) or not at
// all (a hole). So every batch of every segment is verified here against
// the checksum its commit frame holds, and a node whose log fails refuses
// to start. A damaged last batch of the newest segment is what a crash
// during a write leaves; raft-wal drops it, and the node fetches it again
// from the leader.
//
// raft's FileSnapshotStore verifies a snapshot's checksum when it opens
// one, and Raft then falls back to the next older snapshot. That is only
// sound while the log still holds every entry after the older snapshot;
// past that, the node would restore an old keyspace and then panic at the
// first entry it no longer has. So a node whose newest snapshot fails,
// with no older one the log reaches back to, refuses to start.

// A segment file of raft-wal (see its README, "Storage Format"): a 32-byte
// header, then 8-byte-aligned frames, each with an 8-byte header (type,
// 3 reserved bytes, uint32 LE length — or, in a commit frame, the CRC-32C
// of every byte written since the previous commit frame).
const (
	walFileHeaderLen  = 32
	walFrameHeaderLen = 8
	walFrameEntry     = 1
	walFrameIndex     = 2
	walFrameCommit    = 3
	walMaxFrameLen    = 64 << 20 // raft-wal's MaxEntrySize
)

// ErrDamaged is the error a node refuses to start with when its Raft log
// or snapshot fails its checksum.
var ErrDamaged = errors.New("replication: this node's Raft state is damaged")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walBatch is what one fsync of raft-wal wrote: frames, then a commit
// frame.
type walBatch struct {
	entries []int64 // offsets of its entry frames
	commit  int64   // offset of its commit frame
	ok      bool    // the commit frame's checksum matches the bytes
}

// readWALBatches reads a segment file's batches, up to the end of what
// was written: zeros (raft-wal preallocates its files), the end of the
// file, or a frame header that is not one (a torn write, as raft-wal
// reads it too). Frames after the last commit frame belong to no batch.
func readWALBatches(path string) ([]walBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	head := make([]byte, walFileHeaderLen)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, nil // nothing committed yet
	}
	crc := crc32.Checksum(head, castagnoli)
	var batches []walBatch
	var cur walBatch
	offset := int64(walFileHeaderLen)
	frame := make([]byte, walFrameHeaderLen)
	for {
		if _, err := io.ReadFull(r, frame); err != nil {
			return batches, nil
		}
		typ, length := frame[0], binary.LittleEndian.Uint32(frame[4:])
		switch {
		case typ == walFrameCommit:
			cur.commit, cur.ok = offset, crc == length
			batches = append(batches, cur)
			cur, crc = walBatch{}, 0
			offset += walFrameHeaderLen
			continue
		case typ != walFrameEntry && typ != walFrameIndex, length > walMaxFrameLen:
			return batches, nil
		}
		if typ == walFrameEntry {
			cur.entries = append(cur.entries, offset)
		}
		body := make([]byte, (length+7)&^7) // the payload and its padding
		if _, err := io.ReadFull(r, body); err != nil {
			return batches, nil
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, frame), castagnoli, body)
		offset += walFrameHeaderLen + int64(len(body))
	}
}

// checkLog verifies every batch of the Raft log in dir (the wal
// directory) but the newest segment's last, which a crash may have torn.
func checkLog(dir, raftDir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	slices.Sort(files) // named by base index, zero-padded: oldest first
	for i, path := range files {
		batches, err := readWALBatches(path)
		if err != nil {
			return fmt.Errorf("replication: reading the Raft log: %w", err)
		}
		for j, b := range batches {
			if !b.ok && (i < len(files)-1 || j < len(batches)-1) {
				return fmt.Errorf("%w: Raft log %s: the records before offset %d fail their checksum. %s",
					ErrDamaged, path, b.commit, rejoinAdvice(raftDir))
			}
		}
	}
	return nil
}

// checkSnapshots makes sure the snapshot Raft will restore leaves no
// hole between it and the log: the newest verifies, or the log reaches
// back to the one Raft falls back to.
func checkSnapshots(snaps *raft.FileSnapshotStore, logs raft.LogStore, raftDir string) error {
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return err
	}
	if len(metas) > 1 && first > 0 && first <= metas[1].Index+1 {
		return nil // a damaged newest one is replaced by the older one and the log after it
	}
	_, rc, err := snaps.Open(metas[0].ID) // reads it whole, to verify its checksum
	if err != nil {
		path := filepath.Join(raftDir, "snapshots", metas[0].ID, "state.bin")
		return fmt.Errorf("%w: the newest Raft snapshot %s cannot be used (%v), and the Raft log no longer holds what an older one lacks. %s",
			ErrDamaged, path, err, rejoinAdvice(raftDir))
	}
	return rc.Close()
}

// rejoinAdvice says how to bring back a node whose Raft state is damaged.
func rejoinAdvice(raftDir string) string {
	return "This node cannot be trusted to rejoin its group as it is: remove it from the group (redstream cluster del-node), empty " +
		raftDir + ", start it again and add it as a new node (redstream cluster add-node); it then copies the group's state from the leader"
}
