package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redstream/redstream/server"
)

func rec(t int64, db int, args ...string) server.Record {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	return server.Record{Time: t, DB: db, Argv: argv}
}

func recString(r server.Record) string {
	return fmt.Sprintf("%d/%d/%q", r.Time, r.DB, r.Argv)
}

// readAll decodes every frame of b.
func readAll(b []byte) ([][]server.Record, error) {
	fr := newFrameReader(bytes.NewReader(b))
	var out [][]server.Record
	for {
		recs, _, err := fr.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		cp := make([]server.Record, len(recs))
		for i, r := range recs {
			argv := make([][]byte, len(r.Argv))
			for j, a := range r.Argv {
				argv[j] = bytes.Clone(a) // records alias the reader's buffer
			}
			cp[i] = server.Record{Time: r.Time, DB: r.DB, Argv: argv}
		}
		out = append(out, cp)
	}
}

func TestFrameRoundTrip(t *testing.T) {
	frames := [][]server.Record{
		{rec(1, 0, "RPUSH", "q", "a", "b")},
		{rec(2, 3, "SET", "k", "v\r\nwith\x00binary")},
		{rec(3, 0, "MULTI-ish", "x"), rec(3, 1, "DEL", "y"), rec(3, 0, "INCR", "z")},
		{rec(4, 0, "SET", "empty", "")},
	}
	var buf, scratch []byte
	for _, f := range frames {
		buf, scratch = appendFrame(buf, scratch, f)
	}
	got, err := readAll(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(frames) {
		t.Fatalf("got %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		for j := range frames[i] {
			if recString(got[i][j]) != recString(frames[i][j]) {
				t.Errorf("frame %d record %d = %s, want %s", i, j, recString(got[i][j]), recString(frames[i][j]))
			}
		}
	}
}

// TestFrameDamage: a file cut anywhere is truncated, never misread; a
// flipped byte anywhere is detected.
func TestAppendHex32(t *testing.T) {
	for _, v := range []uint32{0, 1, 0xf, 0xabcdef, 0x80000000, 0xdeadbeef, 0xffffffff} {
		if got, want := string(appendHex32([]byte("x"), v)), fmt.Sprintf("x%08x", v); got != want {
			t.Errorf("appendHex32(%#x) = %q, want %q", v, got, want)
		}
	}
}

func TestFrameDamage(t *testing.T) {
	var buf, scratch []byte
	for i := range 20 {
		buf, scratch = appendFrame(buf, scratch, []server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))})
	}
	for cut := range len(buf) {
		frames, err := readAll(buf[:cut])
		if err != nil && !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v, want ErrTruncated or nothing", cut, err)
		}
		for i, f := range frames {
			if string(f[0].Argv[2]) != fmt.Sprint(i) {
				t.Fatalf("cut at %d: frame %d read back as %q", cut, i, f[0].Argv[2])
			}
		}
	}
	for pos := range buf {
		bad := bytes.Clone(buf)
		bad[pos] ^= 0x5a
		frames, err := readAll(bad)
		if err == nil {
			t.Fatalf("flipped byte %d went unnoticed (%d frames read)", pos, len(frames))
		}
	}
}

func openTestAOF(t *testing.T, fs FS, policy FsyncPolicy) (*AOF, string) {
	t.Helper()
	dir := t.TempDir()
	if fs == nil {
		fs = OSFS{}
	}
	a, err := OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Fsync: policy, FS: fs, Truncate: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, dir
}

func replay(t *testing.T, dir string, truncate bool) ([]string, LoadStats, error) {
	t.Helper()
	a, err := OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Truncate: truncate,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	st, err := a.Load(nil, PerRecord(func(r server.Record) error { got = append(got, string(r.Argv[2])); return nil }))
	return got, st, err
}

func TestAOFAppendLoad(t *testing.T) {
	a, dir := openTestAOF(t, nil, FsyncAlways)
	if _, err := a.Load(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))})); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, st, err := replay(t, dir, false)
	if err != nil || len(got) != 100 || got[99] != "99" || st.Records != 100 {
		t.Fatalf("replayed %d records (%v), stats %+v", len(got), err, st)
	}
}

// TestAOFTornTail cuts the last increment mid-frame: the load keeps the
// whole frames, cuts the rest and says how much; with aof-load-truncated
// no it refuses instead.
func TestAOFTornTail(t *testing.T) {
	a, dir := openTestAOF(t, nil, FsyncAlways)
	a.Load(nil, nil)
	a.Start()
	for i := range 10 {
		a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))}))
	}
	a.Close()
	path := filepath.Join(dir, "appendonly.aof.1.incr.aof")
	info, _ := os.Stat(path)
	if err := os.Truncate(path, info.Size()-7); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay(t, dir, false); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "aof check") {
		t.Fatalf("aof-load-truncated no: err = %v, want ErrTruncated naming the repair command", err)
	}
	got, st, err := replay(t, dir, true)
	if err != nil || len(got) != 9 || st.DroppedBytes == 0 {
		t.Fatalf("got %d records, dropped %d bytes, err %v; want 9 and a dropped tail", len(got), st.DroppedBytes, err)
	}
	if got2, _, err := replay(t, dir, false); err != nil || len(got2) != 9 {
		t.Fatalf("after cutting, a strict load read %d records, %v", len(got2), err)
	}
}

// crashImage copies the AOF directory as a crash would leave it: the
// files as they are on disk now, with the AOF still open.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	img := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(img, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestAOFPreallocatedTail: under always the increment is filled ahead of
// its data. After a crash the fill is a clean end, even with
// aof-load-truncated no, and the load cuts it so writing resumes right
// after the data; a frame torn inside it is a torn tail; data after fill
// is damage; Close leaves the file as long as its data.
func TestAOFPreallocatedTail(t *testing.T) {
	a, dir := openTestAOF(t, nil, FsyncAlways)
	a.Load(nil, nil)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))})); err != nil {
			t.Fatal(err)
		}
	}
	name := "appendonly.aof.1.incr.aof"
	img := crashImage(t, dir)
	info, _ := os.Stat(filepath.Join(img, name))
	if info.Size() < preallocChunk {
		t.Fatalf("the increment is %d bytes: not preallocated", info.Size())
	}
	damaged := crashImage(t, img)
	torn := crashImage(t, img)

	got, st, err := replay(t, img, false)
	if err != nil || len(got) != 10 || st.DroppedBytes != 0 {
		t.Fatalf("crash image: %d records, %d dropped, %v; want 10, none, no error", len(got), st.DroppedBytes, err)
	}
	info, _ = os.Stat(filepath.Join(img, name))
	if info.Size() != st.Bytes {
		t.Fatalf("after the load the increment is %d bytes, its frames %d", info.Size(), st.Bytes)
	}

	// A frame torn inside the fill: the tail is cut, the rest loads.
	var frame []byte
	frame, _ = appendFrame(nil, nil, []server.Record{rec(10, 0, "RPUSH", "q", "torn")})
	f, _ := os.OpenFile(filepath.Join(torn, name), os.O_WRONLY, 0)
	f.WriteAt(frame[:len(frame)-4], st.Bytes)
	f.Close()
	if _, _, err := replay(t, torn, false); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
		t.Fatalf("torn frame in the fill, aof-load-truncated no: err = %v, want a refusal", err)
	}
	// The torn bytes are dropped; the fill after them was never data.
	if got, st, err := replay(t, torn, true); err != nil || len(got) != 10 || st.DroppedBytes != int64(len(frame)-4) {
		t.Fatalf("torn frame in the fill: %d records, %d dropped, %v; want 10 and the %d torn bytes dropped",
			len(got), st.DroppedBytes, err, len(frame)-4)
	}

	// A whole frame after some fill: not a crash's doing.
	f, _ = os.OpenFile(filepath.Join(damaged, name), os.O_WRONLY, 0)
	f.WriteAt(frame, st.Bytes+100)
	f.Close()
	if _, _, err := replay(t, damaged, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("data after fill: err = %v, want ErrCorrupt", err)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ = os.Stat(filepath.Join(dir, name))
	if info.Size() != st.Bytes {
		t.Fatalf("after Close the increment is %d bytes, its frames %d", info.Size(), st.Bytes)
	}
}

// TestAOFCorruptMiddle flips a byte in a frame that has frames after it:
// the load must refuse with the file, the offset and the repair command.
func TestAOFCorruptMiddle(t *testing.T) {
	a, dir := openTestAOF(t, nil, FsyncAlways)
	a.Load(nil, nil)
	a.Start()
	for i := range 10 {
		a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))}))
	}
	a.Close()
	path := filepath.Join(dir, "appendonly.aof.1.incr.aof")
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0xff
	os.WriteFile(path, data, 0o644)
	_, _, err := replay(t, dir, true)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("err = %v, want ErrCorrupt naming %s and an offset", err, path)
	}
}

// countingFS counts fsyncs and can make writes fail with ENOSPC.
type countingFS struct {
	OSFS
	syncs atomic.Int64
	full  atomic.Bool
}

type countingFile struct {
	*os.File
	fs *countingFS
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (f *countingFile) Sync() error { f.fs.syncs.Add(1); return f.File.Sync() }

func (f *countingFile) Write(b []byte) (int, error) {
	if f.fs.full.Load() {
		n, _ := f.File.Write(b[:len(b)/2]) // a partial write, as a disk that fills up mid-way
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

func (f *countingFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.full.Load() {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(b, off)
}

// TestAOFGroupCommit: many concurrent appends under appendfsync always
// share fsyncs, and every one of them is durable when its wait returns.
func TestAOFGroupCommit(t *testing.T) {
	fs := &countingFS{}
	a, dir := openTestAOF(t, fs, FsyncAlways)
	a.Load(nil, nil)
	a.Start()
	const writers, each = 50, 40
	var mu sync.Mutex // stands in for the server's keyspace lock
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				ticket := a.Append([]server.Record{rec(1, 0, "RPUSH", "q", fmt.Sprintf("%d-%d", w, i))})
				mu.Unlock()
				if err := a.Wait(ticket); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	a.Close()
	syncs := fs.syncs.Load()
	if syncs >= writers*each/2 {
		t.Fatalf("%d fsyncs for %d appends: no group commit", syncs, writers*each)
	}
	got, _, err := replay(t, dir, false)
	if err != nil || len(got) != writers*each {
		t.Fatalf("replayed %d of %d records: %v", len(got), writers*each, err)
	}
	t.Logf("%d appends from %d writers took %d fsyncs", writers*each, writers, syncs)
}

func TestAOFDiskFull(t *testing.T) {
	fs := &countingFS{}
	a, dir := openTestAOF(t, fs, FsyncAlways)
	a.Load(nil, nil)
	a.Start()
	if err := a.Wait(a.Append([]server.Record{rec(1, 0, "SET", "k", "before")})); err != nil {
		t.Fatal(err)
	}
	fs.full.Store(true)
	ticket := a.Append([]server.Record{rec(2, 0, "SET", "k", "during")})
	if err := a.Wait(ticket); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("wait during a full disk = %v, want ENOSPC", err)
	}
	if a.Err() == nil {
		t.Fatal("Err() is nil while the disk is full")
	}
	fs.full.Store(false)
	if err := a.Wait(a.Append([]server.Record{rec(3, 0, "SET", "k", "after")})); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	if a.Err() != nil {
		t.Fatalf("Err() = %v after a successful write", a.Err())
	}
	a.Close()
	got, _, err := replay(t, dir, false)
	if err != nil || strings.Join(got, ",") != "before,during,after" {
		t.Fatalf("replayed %v (%v), want before,during,after", got, err)
	}
}

// FuzzFrameReader: arbitrary bytes never panic the reader, and whatever
// it accepts re-encodes to the same bytes.
func FuzzFrameReader(f *testing.F) {
	var seed, scratch []byte
	seed, scratch = appendFrame(seed, scratch, []server.Record{rec(1, 0, "RPUSH", "q", "a")})
	seed, _ = appendFrame(seed, scratch, []server.Record{rec(2, 1, "SET", "k", "v"), rec(2, 1, "DEL", "x")})
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte("#RS 5 00000000\r\nhello"))
	f.Add([]byte("#RS 99999999999 0000000\r\n"))
	f.Add(append(bytes.Clone(seed), fillAt(int64(len(seed)), 100)...))                 // preallocated fill
	f.Add(append(append(bytes.Clone(seed), fillAt(int64(len(seed)), 10)...), seed...)) // data after fill
	f.Add(append(bytes.Clone(seed), make([]byte, 100)...))                             // zeros: damage
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data))
		var again, scratch []byte
		var consumed int64
		var err error
		for {
			var recs []server.Record
			if recs, _, err = fr.next(); err != nil {
				break
			}
			again, scratch = appendFrame(again, scratch, recs)
			consumed = fr.off
		}
		if !bytes.Equal(again, data[:consumed]) {
			t.Fatalf("accepted frames re-encode differently:\n%q\n%q", again, data[:consumed])
		}
		if err == io.EOF && !isFill(data[consumed:], consumed) {
			t.Fatalf("a clean end at %d with data after it: %q", consumed, data[consumed:])
		}
		if err == nil || err == io.EOF {
			return
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("reader error %v is neither ErrCorrupt nor ErrTruncated", err)
		}
	})
}

// TestAOFRewrite: frames before Rotate are replaced by the new base,
// frames after it stay in the new increment; a crash between Rotate and
// FinishRewrite loads old base + every increment, losing nothing.
func TestAOFRewrite(t *testing.T) {
	a, dir := openTestAOF(t, nil, FsyncAlways)
	a.Load(nil, nil)
	a.Start()
	push := func(from, to int) {
		for i := from; i < to; i++ {
			if err := a.Wait(a.Append([]server.Record{rec(int64(i), 0, "RPUSH", "q", fmt.Sprint(i))})); err != nil {
				t.Fatal(err)
			}
		}
	}
	push(0, 10)
	seq, err := a.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Rotate(); !errors.Is(err, ErrRewriteInProgress) {
		t.Fatalf("second Rotate during a rewrite: %v, want ErrRewriteInProgress", err)
	}
	push(10, 15)
	// Crash here: the manifest lists the old increment and the new one.
	got, _, err := replay(t, dir, false)
	if err != nil || len(got) != 15 || got[14] != "14" {
		t.Fatalf("before FinishRewrite a load replays %d records (%v), want all 15", len(got), err)
	}
	err = a.FinishRewrite(seq, func(w io.Writer) error { _, err := w.Write([]byte("BASE")); return err })
	if err != nil {
		t.Fatal(err)
	}
	push(15, 17)
	a.Close()
	var base string
	b, err := OpenAOF(AOFOptions{Dir: dir, Name: "appendonly.aof", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var after []string
	_, err = b.Load(func(r io.Reader) error { data, _ := io.ReadAll(r); base = string(data); return nil },
		PerRecord(func(r server.Record) error { after = append(after, string(r.Argv[2])); return nil }))
	if err != nil || base != "BASE" || strings.Join(after, ",") != "10,11,12,13,14,15,16" {
		t.Fatalf("after the rewrite: base %q, increments %v (%v); want BASE then 10..16", base, after, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".1.") {
			t.Errorf("old file %s was not removed", e.Name())
		}
	}
}

// Both fdatasync paths report what the system call says: success on an
// open file, an error (never a hang or a panic) on a closed one.
func TestSyncData(t *testing.T) {
	for name, sync := range map[string]func(File) error{"syncData": syncData, "syncDataHoldingP": syncDataHoldingP} {
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("data"); err != nil {
			t.Fatal(err)
		}
		if err := sync(f); err != nil {
			t.Errorf("%s on an open file: %v", name, err)
		}
		f.Close()
		if err := sync(f); err == nil {
			t.Errorf("%s on a closed file: no error", name)
		}
	}
}
