package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// What a node checks on its disk before Raft starts, because the stores
// it is built on do not:
//
// raft-wal (v0.4.0) verifies only the last batch of its newest segment
// file when it opens, to find a write torn by a crash, and never checks
// a record it reads. A damaged record in the middle of the log would be
// applied as it reads (another value than the one committed, so the node
// diverges for good), and a damaged frame header reads to raft-wal like
// the end of the log: it would silently drop every later record, ones
// this node acknowledged. So every batch of every segment is verified
// here against the checksum its commit frame holds, and a node whose log
// fails, or has good batches past where it stops reading, refuses to
// start. A damaged last batch is what a crash during a write leaves;
// raft-wal drops it, and the node fetches it again from the leader.
//
// raft's FileSnapshotStore verifies a snapshot's checksum when it opens
// one, and Raft then falls back to the next older snapshot. That is only
// sound while the log still holds every entry after the older snapshot;
// past that, raft.NewRaft panics ("log not found") at the first entry the
// node no longer has. So a node whose newest snapshot fails,
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

// walSegment is what a segment file holds.
type walSegment struct {
	batches []walBatch
	// end is where reading stopped: zeros (raft-wal preallocates its
	// files), the end of the file, or a damaged frame header.
	end int64
	// goodAfter is the offset of a good batch past end, or 0: if there
	// is one, what stopped the reading is damage, not a torn last write.
	goodAfter int64
}

// readWALSegment reads a segment file's batches. Frames after the last
// commit frame belong to no batch.
func readWALSegment(path string) (walSegment, error) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) < walFileHeaderLen {
		return walSegment{}, err // too short: nothing was committed to it
	}
	crc := crc32.Checksum(data[:walFileHeaderLen], castagnoli)
	seg := walSegment{}
	seg.batches, seg.end = readWALBatches(data, walFileHeaderLen, crc, -1)
	// Even zeros may not be the end: a damaged frame length can make the
	// reading land in a run of zeros inside a record.
	seg.goodAfter = findGoodBatch(data, seg.end)
	return seg, nil
}

// readWALBatches reads up to max batches (-1: all) from offset, crc
// being the checksum of the current batch's bytes before it. It returns
// them and the offset where it stopped.
func readWALBatches(data []byte, offset int64, crc uint32, max int) ([]walBatch, int64) {
	var batches []walBatch
	var cur walBatch
	for len(batches) != max && offset+walFrameHeaderLen <= int64(len(data)) {
		frame := data[offset : offset+walFrameHeaderLen]
		typ, length := frame[0], binary.LittleEndian.Uint32(frame[4:])
		if !allZero(frame[1:4]) {
			break // reserved bytes: always zero
		}
		switch {
		case typ == walFrameCommit:
			cur.commit, cur.ok = offset, crc == length
			batches = append(batches, cur)
			cur, crc = walBatch{}, 0
			offset += walFrameHeaderLen
			continue
		case typ != walFrameEntry && typ != walFrameIndex, length > walMaxFrameLen:
			return batches, offset
		}
		size := walFrameHeaderLen + int64((length+7)&^7) // the payload and its padding
		if offset+size > int64(len(data)) {
			break
		}
		if typ == walFrameEntry {
			cur.entries = append(cur.entries, offset)
		}
		crc = crc32.Update(crc, castagnoli, data[offset:offset+size])
		offset += size
	}
	return batches, offset
}

// findGoodBatch looks past from for a commit frame followed by a batch
// with records whose checksum holds, and returns the batch's offset, or
// 0. A write torn by a crash leaves no such batch behind it: it was the
// last.
func findGoodBatch(data []byte, from int64) int64 {
	for o := from; o+walFrameHeaderLen <= int64(len(data)); o += walFrameHeaderLen {
		i := bytes.IndexByte(data[o:], walFrameCommit) // fast over the zeros of a preallocated file
		if i < 0 {
			return 0
		}
		o += int64(i) &^ (walFrameHeaderLen - 1) // the frame header it is in, if any
		if o+walFrameHeaderLen > int64(len(data)) || data[o] != walFrameCommit || !allZero(data[o+1:o+4]) {
			continue
		}
		b, _ := readWALBatches(data, o+walFrameHeaderLen, 0, 1)
		if len(b) == 1 && b[0].ok && len(b[0].entries) > 0 {
			return o + walFrameHeaderLen
		}
	}
	return 0
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkLog verifies the Raft log in dir (the wal directory): in each
// segment file, every batch but the last, which a crash may have torn
// (raft-wal leaves it in a file it seals by truncating the log), holds
// its checksum, and no good batch follows where reading stopped.
func checkLog(dir, raftDir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	for _, path := range files {
		seg, err := readWALSegment(path)
		if err != nil {
			return fmt.Errorf("replication: reading the Raft log: %w", err)
		}
		if seg.goodAfter > 0 {
			return fmt.Errorf("%w: Raft log %s: the frame at offset %d is damaged, and good records follow it (at offset %d). %s",
				ErrDamaged, path, seg.end, seg.goodAfter, rejoinAdvice(raftDir))
		}
		for j, b := range seg.batches {
			if !b.ok && j < len(seg.batches)-1 {
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
