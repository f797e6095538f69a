package persistence

import (
	"errors"
	"fmt"
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
	DroppedBytes int64         // torn tail cut off the last increment
	Elapsed      time.Duration // wall time of the whole load
}

// Load replays the AOF: the base snapshot through loadBase (nil when the
// caller has no RDB loader yet), then every increment's records through
// apply, logging progress every second. A torn tail of the newest
// increment is cut off (with a warning saying how many bytes) when
// Truncate is set; any other damage stops the load with an error naming
// the file, the offset and the repair command.
func (a *AOF) Load(loadBase func(r io.Reader) error, apply func(server.Record) error) (LoadStats, error) {
	var st LoadStats
	start := time.Now()
	if b := a.manifest.base; b != nil {
		if err := a.loadBase(b.name, loadBase); err != nil {
			return st, err
		}
	}
	total := a.diskIncrBytes()
	p := progress{logger: a.opt.Logger, total: total, start: start, last: start}
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
	a.incrBytes = st.Bytes // the frames; not what was cut off, nor zero fill
	if b := a.manifest.base; b != nil {
		if f, err := a.fs.OpenFile(filepath.Join(a.opt.Dir, b.name), os.O_RDONLY, 0); err == nil {
			if info, err := f.Stat(); err == nil {
				a.baseBytes = info.Size()
			}
			f.Close()
		}
	}
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
func (a *AOF) replayIncr(name string, last bool, apply func(server.Record) error, st *LoadStats, p *progress) (good, dropped int64, err error) {
	path := filepath.Join(a.opt.Dir, name)
	f, err := a.fs.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) && last {
		return 0, 0, nil // created by OpenAOF but never written
	}
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: opening %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	fr := newFrameReader(f)
	for {
		recs, off, err := fr.next()
		if err == io.EOF {
			return off, 0, a.cutZeroFill(f, path, off, info.Size())
		}
		if err != nil {
			return a.damaged(f, path, last, off, info.Size(), err)
		}
		for _, r := range recs {
			if err := apply(r); err != nil {
				return off, 0, fmt.Errorf("persistence: replaying %s at offset %d: %w", path, off, err)
			}
			st.Records++
		}
		p.report(st.Bytes+fr.off, st.Records)
	}
}

// cutZeroFill cuts the preallocated zeros (see preallocate) after the
// last frame, at off, so that writing resumes right after the data.
func (a *AOF) cutZeroFill(f File, path string, off, size int64) error {
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

// damaged decides what a bad frame at off means: the torn tail of the
// newest increment is cut off (if allowed); anything else is refused.
func (a *AOF) damaged(f File, path string, last bool, off, size int64, err error) (int64, int64, error) {
	torn := last && (errors.Is(err, ErrTruncated) || tailIsLastFrame(f, off, size))
	if !torn {
		return off, 0, fmt.Errorf("%w\n  file: %s\n  offset: %d\n  to repair, cut the file at that offset (losing what follows): redstream aof check %s --fix",
			err, path, off, a.opt.Dir)
	}
	if !a.opt.Truncate {
		return off, 0, fmt.Errorf("%w\n  file: %s\n  offset: %d\n  aof-load-truncated is no; to cut the torn tail: redstream aof check %s --fix",
			err, path, off, a.opt.Dir)
	}
	if terr := f.Truncate(off); terr != nil {
		return off, 0, fmt.Errorf("persistence: cutting torn tail of %s: %w", path, terr)
	}
	if serr := f.Sync(); serr != nil {
		return off, 0, serr
	}
	a.opt.Logger.Warn("AOF ends with a torn write (a crash mid-write); cut it off",
		"file", path, "offset", off, "dropped_bytes", size-off, "reason", err.Error())
	return off, size - off, nil
}

// tailIsLastFrame reports whether a corrupt frame at off is the last
// thing in the file: its declared length reaches the end, or what follows
// it, or its declared end, is zero fill (a file extended by a crash
// before its data was written, or preallocated). Then it is a torn write,
// not damage in the middle.
func tailIsLastFrame(f File, off, size int64) bool {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false
	}
	rest := make([]byte, min(size-off, 1<<20))
	n, _ := io.ReadFull(f, rest)
	rest = rest[:n]
	if allZero(rest) {
		return true
	}
	line, _, found := cutLine(rest)
	if !found {
		return true // a header line that never ended: cut short
	}
	n2, _, ok := parseFrameHeader(append(line, '\r', '\n'))
	end := off + int64(len(line)+2+n2)
	return ok && (end >= size || zeroFrom(f, end))
}

// zeroFrom reports whether f holds only zeros from off to its end: the
// preallocated space after a frame torn inside it.
func zeroFrom(f File, off int64) bool {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false
	}
	zeros, err := onlyZeros(f)
	return err == nil && zeros
}

// onlyZeros reads r to its end and reports whether every byte was zero.
func onlyZeros(r io.Reader) (bool, error) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if !allZero(buf[:n]) {
			return false, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

func cutLine(b []byte) (line, rest []byte, found bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], true
		}
	}
	return b, nil, false
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

func (p *progress) report(done, records int64) {
	now := time.Now()
	if now.Sub(p.last) < time.Second {
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
