package replication

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"unsafe"

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

// Appends land in blocks already written: raft-wal's fallocate leaves a
// segment's blocks unwritten extents, and a write into one changes
// metadata, which made every commit's fdatasync commit ext4's journal.
// FIEMAP shows which extents are still unwritten.
func TestWalSegmentAppendsLandInWrittenBlocks(t *testing.T) {
	dir := t.TempDir()
	f, err := walFS{fs.New()}.Create(dir, "seg", 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seg := f.(*segmentWriter)
	if _, err := unwrittenRanges(seg.os); err != nil {
		t.Skipf("FIEMAP not supported here: %v", err)
	}
	off := int64(0)
	for i := 0; i < 3000; i++ { // ~3 MiB of appends of varying size
		p := bytes.Repeat([]byte{byte(i)}, 200+i%1500)
		if _, err := seg.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(p))
		// The next append's blocks are written already.
		ranges, err := unwrittenRanges(seg.os)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ranges {
			if r[0] < off+4096 && r[1] > off-int64(len(p)) {
				t.Fatalf("after append %d (to %d), [%d, %d) is still an unwritten extent", i, off, r[0], r[1])
			}
		}
	}
}

// The fill only ever writes zeros where nothing was written, never past
// the file's size, and leaves what raft-wal wrote as it was: checked
// against a model (a byte slice) over random appends, including on a
// segment reopened in the middle.
func TestWalSegmentFillKeepsWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	const size = 3 << 20
	vfs := walFS{fs.New()}
	f, err := vfs.Create(dir, "seg", size)
	if err != nil {
		t.Fatal(err)
	}
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	off := int64(0)
	for i := 0; off < size-64<<10; i++ {
		if i == 500 { // a restart: raft-wal reopens the tail segment
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if f, err = vfs.OpenWriter(dir, "seg"); err != nil {
				t.Fatal(err)
			}
		}
		p := make([]byte, 1+rng.IntN(20000))
		for j := range p {
			p[j] = byte(1 + rng.IntN(255))
		}
		if _, err := f.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		copy(model[off:], p)
		off += int64(len(p))
	}
	defer f.Close()
	got := make([]byte, size+1)
	n, err := f.ReadAt(got, 0)
	if n != size || err != io.EOF {
		t.Fatalf("read %d bytes (%v), want the whole %d-byte file and EOF: the fill grew the file", n, err, size)
	}
	if !bytes.Equal(got[:size], model) {
		t.Fatal("the segment's bytes differ from what was appended followed by zeros")
	}
}

// unwrittenRanges returns f's extents that FIEMAP flags unwritten, as
// [start, end) byte ranges.
func unwrittenRanges(f *os.File) ([][2]int64, error) {
	const (
		fsIocFiemap     = 0xC020660B
		extentUnwritten = 0x800
		fiemapFlagSync  = 0x1
		headerLen       = 32
		extentLen       = 56
		extentsPerCall  = 64
	)
	var out [][2]int64
	start := uint64(0)
	for {
		buf := make([]byte, headerLen+extentsPerCall*extentLen)
		binary.LittleEndian.PutUint64(buf[0:], start)
		binary.LittleEndian.PutUint64(buf[8:], ^uint64(0)-start)
		binary.LittleEndian.PutUint32(buf[16:], fiemapFlagSync)
		binary.LittleEndian.PutUint32(buf[24:], extentsPerCall)
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return nil, errno
		}
		mapped := binary.LittleEndian.Uint32(buf[20:])
		if mapped == 0 {
			return out, nil
		}
		last := false
		for i := uint32(0); i < mapped; i++ {
			e := buf[headerLen+int(i)*extentLen:]
			logical := binary.LittleEndian.Uint64(e[0:])
			length := binary.LittleEndian.Uint64(e[16:])
			flags := binary.LittleEndian.Uint32(e[40:])
			if flags&extentUnwritten != 0 {
				out = append(out, [2]int64{int64(logical), int64(logical + length)})
			}
			start = logical + length
			last = flags&0x1 != 0 // FIEMAP_EXTENT_LAST
		}
		if last {
			return out, nil
		}
	}
}
