package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/redstream/redstream/server"
)

// LoadStats describe a finished load.
type LoadStats struct {
	Records      int64         // records replayed
	Bytes        int64         // bytes read from increments
	DroppedBytes int64         // torn tail cut off the last increment (not the fill after it)
	Elapsed      time.Duration // wall time of the whole load
}

// Load replays the AOF: the base snapshot through loadBase (nil when the
// caller has no RDB loader yet), then every increment's records through
// apply, a frame's records at a time (a MULTI/EXEC is one frame, applied
// all at once), logging progress every second. A torn tail of the newest
// increment is cut off (with a warning saying how many bytes) when
// Truncate is set; any other damage stops the load with an error naming
// the file, the offset and the repair command.
func (a *AOF) Load(loadBase func(r io.Reader) error, apply func([]server.Record) error) (LoadStats, error) {
	var st LoadStats
	start := time.Now()
	if b := a.manifest.base; b != nil {
		if err := a.loadBase(b.name, loadBase); err != nil {
			return st, err
		}
	}
	// The increments' progress and rate count from here: the base took
	// its own time, and its keys are not records.
	incrStart := time.Now()
	p := progress{logger: a.opt.Logger, total: a.diskIncrBytes(), start: incrStart, last: incrStart}
	for i, f := range a.manifest.incrs {
		last := i == len(a.manifest.incrs)-1
		n, dropped, err := a.replayIncr(f.name, last, apply, &st, &p)
		st.Bytes += n
		st.DroppedBytes += dropped
		if err != nil {
			return st, err
		}
	}
	a.mu.Lock()
	a.incrBytes = st.Bytes // the frames; not what was cut off, nor fill
	if b := a.manifest.base; b != nil {
		if f, err := a.fs.OpenFile(filepath.Join(a.opt.Dir, b.name), os.O_RDONLY, 0); err == nil {
			if info, err := f.Stat(); err == nil {
				a.baseBytes = info.Size()
			}
			f.Close()
		}
	}
	a.growthBase = a.baseBytes + a.incrBytes
	a.mu.Unlock()
	st.Elapsed = time.Since(start)
	a.opt.Logger.Info("AOF loaded", "records", st.Records, "bytes", st.Bytes,
		"seconds", fmt.Sprintf("%.3f", st.Elapsed.Seconds()))
	return st, nil
}

func (a *AOF) loadBase(name string, loadBase func(io.Reader) error) error {
	if loadBase == nil {
		return fmt.Errorf("persistence: AOF base %s needs an RDB loader", name)
	}
	path := filepath.Join(a.opt.Dir, name)
	f, err := a.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("persistence: opening AOF base: %w", err)
	}
	defer f.Close()
	if err := loadBase(f); err != nil {
		return fmt.Errorf("persistence: loading AOF base %s: %w", path, err)
	}
	return nil
}

func (a *AOF) diskIncrBytes() int64 {
	var total int64
	for _, f := range a.manifest.incrs {
		if fh, err := a.fs.OpenFile(filepath.Join(a.opt.Dir, f.name), os.O_RDONLY, 0); err == nil {
			if st, err := fh.Stat(); err == nil {
				total += st.Size()
			}
			fh.Close()
		}
	}
	return total
}

// replayIncr applies one increment's frames. It returns the bytes of whole
// frames read and the bytes of a torn tail it cut off.
func (a *AOF) replayIncr(name string, last bool, apply func([]server.Record) error, st *LoadStats, p *progress) (good, dropped int64, err error) {
	path := filepath.Join(a.opt.Dir, name)
	f, err := a.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: opening %s: %w", path, err)
	}
	defer f.Close()
	sc, err := scanIncr(f, last, func(recs []server.Record, off, next int64) error {
		if err := apply(recs); err != nil {
			return fmt.Errorf("persistence: replaying %s at offset %d: %w", path, off, err)
		}
		st.Records += int64(len(recs))
		p.report(st.Bytes+next, st.Records)
		return nil
	})
	switch {
	case err != nil:
		return sc.good, 0, err
	case sc.end == endClean:
		return sc.good, 0, a.cutFill(f, path, sc.good, sc.size)
	case sc.end == endTorn && a.opt.Truncate:
		return sc.good, sc.tornEnd - sc.good, a.cutTorn(f, path, sc)
	case sc.end == endTorn:
		return sc.good, 0, fmt.Errorf("%w\n  file: %s\n  offset: %d\n  aof-load-truncated is no; to cut the torn tail (kept in quarantine): %s",
			sc.err, path, sc.good, RepairCommand(a.opt.Dir, a.opt.Name))
	}
	return sc.good, 0, damageError(sc, path, RepairCommand(a.opt.Dir, a.opt.Name))
}

// damageError says where an increment is damaged and how to repair it.
func damageError(sc incrScan, path, repair string) error {
	return fmt.Errorf("%w\n  file: %s\n  offset: %d\n  nothing was changed; to repair, cut the file at that offset "+
		"(what follows is lost to the server, and kept in quarantine): %s", sc.err, path, sc.good, repair)
}

// cutFill cuts the preallocated fill (see preallocate) after the last
// frame, at off, so that writing resumes right after the data.
func (a *AOF) cutFill(f File, path string, off, size int64) error {
	if off == size {
		return nil
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("persistence: cutting the preallocated end of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	a.opt.Logger.Info("AOF: cut the preallocated space after the last record", "file", path, "offset", off, "bytes", size-off)
	return nil
}

// cutTorn cuts a torn tail off the newest increment, first keeping its
// bytes (up to the fill after them) in the quarantine folder.
func (a *AOF) cutTorn(f File, path string, sc incrScan) error {
	kept, err := keepBytes(a.fs, f, sc.good, sc.tornEnd, a.opt.Quarantine, fmt.Sprintf("%s.torn-at-%d", filepath.Base(path), sc.good))
	if err != nil {
		return fmt.Errorf("persistence: keeping the torn tail of %s: %w", path, err)
	}
	if err := f.Truncate(sc.good); err != nil {
		return fmt.Errorf("persistence: cutting torn tail of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	// The fill after the torn bytes (see preallocate) was never data:
	// it is cut too, but not counted as dropped.
	a.opt.Logger.Warn("AOF ends with a torn write (a crash mid-write); cut it off",
		"file", path, "offset", sc.good, "dropped_bytes", sc.tornEnd-sc.good, "fill_bytes", sc.size-sc.tornEnd,
		"kept_in", kept, "reason", sc.err.Error())
	return nil
}

// incrEnd is how an increment's frames end.
type incrEnd int

const (
	endClean   incrEnd = iota // at the end of the file, or where fill runs to it
	endTorn                   // a torn tail: a crash cut the last write short
	endDamaged                // anything else
)

// incrScan is what reading an increment found.
type incrScan struct {
	size    int64 // the file's size
	good    int64 // bytes of whole, valid frames from the start
	records int64
	end     incrEnd
	err     error // why the frames stop, when they do not end cleanly
	tornEnd int64 // endTorn: where the torn bytes end (fill, if any, runs on from here)
}

// scanIncr reads an increment's frames from its start, passes each to
// each (if not nil) with its offset and the next frame's, and judges how
// they end by the rules in aof_frame.go; last says the increment is the
// newest. The error is an I/O error, or each's.
func scanIncr(f File, last bool, each func(recs []server.Record, off, next int64) error) (incrScan, error) {
	var sc incrScan
	info, err := f.Stat()
	if err != nil {
		return sc, err
	}
	sc.size = info.Size()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return sc, err
	}
	fr := newFrameReader(f)
	for {
		recs, off, err := fr.next()
		switch {
		case err == io.EOF:
			sc.good = off
			return sc, nil
		case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated):
			sc.good, sc.err = off, err
			return sc, judgeDamage(f, last, &sc)
		case err != nil:
			return sc, err
		}
		if each != nil {
			if err := each(recs, off, fr.off); err != nil {
				return sc, err
			}
		}
		sc.records += int64(len(recs))
	}
}

// tailCheck is how many bytes at the end of a file judgeDamage looks at
// for zeros: a torn write ends in fill or in its own bytes, which rarely
// end in this many zeros.
const tailCheck = 16

// judgeDamage decides whether the bad frame at sc.good is a torn tail or
// damage, and says why in sc.err.
func judgeDamage(f File, last bool, sc *incrScan) error {
	sc.end = endDamaged
	if !last {
		return nil
	}
	at, found, err := validFrameAfter(f, sc.good, sc.size)
	if err != nil {
		return err
	}
	if found {
		sc.err = fmt.Errorf("%w; a valid frame follows at offset %d, so this is damage, not a torn write", sc.err, at)
		return nil
	}
	n := min(tailCheck, sc.size-sc.good)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, sc.size-n); err != nil && err != io.EOF {
		return err
	}
	if n > 0 && allZero(tail) {
		sc.err = fmt.Errorf("%w; the file ends in zeros, where a torn write ends in fill or in its own bytes: "+
			"the disk lost data that was written", sc.err)
		return nil
	}
	sc.tornEnd, err = fillStart(f, sc.good, sc.size)
	sc.end = endTorn
	return err
}

// validFrameAfter looks for a whole frame with a matching checksum that
// starts after off: proof that the damage at off is not at the end.
func validFrameAfter(f io.ReaderAt, off, size int64) (int64, bool, error) {
	const chunk = 256 << 10
	magic := []byte("#RS ")
	buf := make([]byte, chunk+len(magic)-1)
	for pos := off + 1; pos < size; pos += chunk {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if err != nil && err != io.EOF {
			return 0, false, err
		}
		for i := 0; ; {
			j := bytes.Index(buf[i:n], magic)
			if j < 0 {
				break
			}
			at := pos + int64(i+j)
			ok, err := frameAt(f, at, size)
			if err != nil || ok {
				return at, ok, err
			}
			i += j + 1
		}
	}
	return 0, false, nil
}

// frameAt reports whether a whole frame with a matching checksum starts
// at off.
func frameAt(f io.ReaderAt, off, size int64) (bool, error) {
	head := make([]byte, min(maxFrameHeader, size-off))
	if _, err := f.ReadAt(head, off); err != nil && err != io.EOF {
		return false, err
	}
	end := bytes.Index(head, []byte("\r\n"))
	if end < 0 {
		return false, nil
	}
	n, sum, ok := parseFrameHeader(head[:end+2])
	payload := off + int64(end+2)
	if !ok || payload+int64(n) > size {
		return false, nil
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, payload, int64(n))); err != nil {
		return false, err
	}
	return h.Sum32() == sum, nil
}

// fillStart returns where the fill that runs to the end of the file
// begins, at or after from (size when it does not end in fill).
func fillStart(f io.ReaderAt, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	end := size
	for end > from {
		n := min(int64(len(buf)), end-from)
		b := buf[:n]
		if _, err := f.ReadAt(b, end-n); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if !isFill(b[i:i+1], end-n+int64(i)) {
				return end - n + int64(i) + 1, nil
			}
		}
		end -= n
	}
	return from, nil
}

// keepBytes copies bytes [from, to) of src into a new file of qdir named
// after name (made unique there), durably, and returns its path. Nothing
// is kept, and "" returned, when the range is empty.
func keepBytes(fs FS, src io.ReaderAt, from, to int64, qdir, name string) (string, error) {
	if to <= from {
		return "", nil
	}
	path, err := quarantineSlot(fs, qdir, name)
	if err != nil {
		return "", err
	}
	_, err = writeFileDurably(fs, path, func(w io.Writer) error {
		_, err := io.Copy(w, io.NewSectionReader(src, from, to-from))
		return err
	})
	return path, err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// progress logs how far a long load has got, once a second.
type progress struct {
	logger *slog.Logger
	total  int64
	start  time.Time
	last   time.Time
}

// progressEvery is how often a long load logs its progress.
var progressEvery = time.Second

func (p *progress) report(done, records int64) {
	now := time.Now()
	if now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(done) / float64(p.total)
	}
	rate := float64(records) / now.Sub(p.start).Seconds()
	p.logger.Info("loading AOF", "percent", fmt.Sprintf("%.1f", pct), "records", records,
		"records_per_sec", int64(rate))
}

// PerRecord adapts a function of one record to Load's apply.
func PerRecord(f func(server.Record) error) func([]server.Record) error {
	return func(recs []server.Record) error {
		for _, r := range recs {
			if err := f(r); err != nil {
				return err
			}
		}
		return nil
	}
}
