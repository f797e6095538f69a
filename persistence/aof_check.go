package persistence

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/redstream/redstream/server"
)

// AOFFileReport is what CheckAOF found in one file.
type AOFFileReport struct {
	Name    string
	Kind    string // "base" or "incr"
	Size    int64
	Records int64 // records in an increment; keys in a base
	Good    int64 // bytes of whole, valid frames (the whole file when OK)
	Err     error // nil when the file is sound
	Last    bool  // the newest increment
	Torn    bool  // Err is a torn tail, which a start with aof-load-truncated yes cuts by itself
}

// CheckAOF checks the AOF in dir as a start would, without changing
// anything: the manifest against the directory (an error wrapping
// ErrManifest when they disagree), then every file it lists, reporting
// where each stops being valid. onProgress, if not nil, is told the bytes
// checked so far.
func CheckAOF(dir, name string, onProgress func(done, total int64)) ([]AOFFileReport, error) {
	m, err := readCheckedManifest(dir, name)
	if err != nil {
		return nil, err
	}
	var reports []AOFFileReport
	var done, total int64
	for _, f := range manifestFiles(m) {
		if info, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
			total += info.Size()
		}
	}
	if m.base != nil {
		r := checkBase(filepath.Join(dir, m.base.name))
		r.Name = m.base.name
		reports = append(reports, r)
		done += r.Size
	}
	for i, f := range m.incrs {
		last := i == len(m.incrs)-1
		r := checkIncr(filepath.Join(dir, f.name), last, func(n int64) {
			if onProgress != nil {
				onProgress(done+n, total)
			}
		})
		r.Name, r.Last = f.name, last
		reports = append(reports, r)
		done += r.Size
	}
	return reports, nil
}

// readCheckedManifest reads the manifest of the AOF in dir and checks it
// against the directory as a start would, changing nothing: a
// disagreement is an error wrapping ErrManifest.
func readCheckedManifest(dir, name string) (manifest, error) {
	fs := OSFS{}
	d, err := scanAOFDir(fs, dir, name)
	if err != nil {
		return manifest{}, err
	}
	m, found, err := readManifest(fs, filepath.Join(dir, name+".manifest"))
	switch {
	case err != nil:
		return m, err
	case !found && len(d.data) == 0:
		return m, fmt.Errorf("persistence: no AOF named %s in %s (no %s.manifest, no data files)", name, dir, name)
	case !found:
		return m, fmt.Errorf("%w: there is no %s.manifest, but %s holds %d AOF files", ErrManifest, name, dir, len(d.data))
	}
	if err := m.validate(name, d.has); err != nil {
		return m, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if _, err := d.leftovers(m); err != nil {
		return m, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	return m, nil
}

// ReplayStats describe what ReplayAOF read.
type ReplayStats struct {
	Records   int64 // records applied
	TornBytes int64 // bytes of a torn last write left out (see aof_frame.go)
}

// ReplayAOF reads the AOF in dir as a start would, without changing
// anything: the base through loadBase, then every increment's frames
// through apply. A torn tail of the newest increment is left out (a
// crash cut that write short, so nothing in it was acknowledged), as a
// start with aof-load-truncated yes cuts it; the fill a crash leaves
// after the last frame ends it cleanly; any other damage is an error
// naming the file, the offset and the repair command.
func ReplayAOF(dir, name string, loadBase func(io.Reader) error, apply func([]server.Record) error) (ReplayStats, error) {
	var st ReplayStats
	m, err := readCheckedManifest(dir, name)
	if err != nil {
		return st, err
	}
	if m.base != nil {
		if err := replayBase(filepath.Join(dir, m.base.name), loadBase); err != nil {
			return st, err
		}
	}
	for i, f := range m.incrs {
		path := filepath.Join(dir, f.name)
		sc, err := replayIncrFile(path, i == len(m.incrs)-1, apply)
		st.Records += sc.records
		switch {
		case err != nil:
			return st, err
		case sc.end == endTorn:
			st.TornBytes = sc.tornEnd - sc.good
		case sc.end == endDamaged:
			return st, damageError(sc, path, RepairCommand(dir, name))
		}
	}
	return st, nil
}

func replayBase(path string, loadBase func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := loadBase(f); err != nil {
		return fmt.Errorf("persistence: loading AOF base %s: %w", path, err)
	}
	return nil
}

func replayIncrFile(path string, last bool, apply func([]server.Record) error) (incrScan, error) {
	f, err := os.Open(path)
	if err != nil {
		return incrScan{}, err
	}
	defer f.Close()
	return scanIncr(f, last, func(recs []server.Record, off, _ int64) error {
		if err := apply(recs); err != nil {
			return fmt.Errorf("persistence: replaying %s at offset %d: %w", path, off, err)
		}
		return nil
	})
}

func manifestFiles(m manifest) []aofFile {
	files := m.incrs
	if m.base != nil {
		files = append([]aofFile{*m.base}, files...)
	}
	return files
}

func checkBase(path string) AOFFileReport {
	r := AOFFileReport{Kind: "base"}
	f, err := os.Open(path)
	if err != nil {
		r.Err = err
		return r
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		r.Size = info.Size()
	}
	dec := NewDecoder(f, &DecodeOptions{Size: r.Size})
	for {
		_, err := dec.Next()
		if err == io.EOF {
			r.Good = r.Size
			return r
		}
		if err != nil {
			r.Err, r.Good = err, dec.Offset()
			return r
		}
		r.Records++
	}
}

func checkIncr(path string, last bool, progress func(int64)) AOFFileReport {
	r := AOFFileReport{Kind: "incr"}
	f, err := os.Open(path)
	if err != nil {
		r.Err = err
		return r
	}
	defer f.Close()
	n := 0
	sc, err := scanIncr(f, last, func(_ []server.Record, _, next int64) error {
		if n++; n%4096 == 0 {
			progress(next)
		}
		return nil
	})
	r.Size, r.Records, r.Good = sc.size, sc.records, sc.good
	switch {
	case err != nil:
		r.Err = err
	case sc.end != endClean:
		r.Err, r.Torn = sc.err, sc.end == endTorn
	default:
		r.Good = r.Size // the fill after the frames is not damage
	}
	return r
}

// CutAOFFile truncates the increment at path at offset and fsyncs it:
// the repair for damage (everything from offset on is lost to the
// server). The bytes it cuts, up to any fill after them, are first kept
// in a file of qdir, whose path it returns.
func CutAOFFile(path string, offset int64, qdir string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	end, err := fillStart(f, offset, info.Size())
	if err != nil {
		return "", err
	}
	kept, err := keepBytes(OSFS{}, f, offset, end, qdir, fmt.Sprintf("%s.cut-at-%d", filepath.Base(path), offset))
	if err != nil {
		return "", fmt.Errorf("keeping the bytes to cut: %w", err)
	}
	if err := f.Truncate(offset); err != nil {
		return kept, err
	}
	return kept, f.Sync()
}

// RebuildManifest writes a new manifest for the AOF in dir from the files
// present, for when the manifest is lost or wrong (ErrManifest): the
// newest base, then every increment from the base's seq on (all of them
// without a base), in order. The old manifest, if any, is kept in qdir.
// It returns what it listed and any gap in the increments' seqs, which
// means writes are lost.
func RebuildManifest(dir, name, qdir string) (string, error) {
	fs := OSFS{}
	d, err := scanAOFDir(fs, dir, name)
	if err != nil {
		return "", err
	}
	var m manifest
	for _, f := range d.data {
		if f.kind == 'b' && (m.base == nil || f.seq > m.base.seq) {
			m.base = &aofFile{name: f.name, seq: f.seq}
		}
	}
	for _, f := range d.data {
		if f.kind == 'i' && (m.base == nil || f.seq >= m.base.seq) {
			m.incrs = append(m.incrs, aofFile{name: f.name, seq: f.seq})
		}
	}
	if m.base == nil && len(m.incrs) == 0 {
		return "", fmt.Errorf("persistence: %s holds no AOF files named %s: nothing to list", dir, name)
	}
	slices.SortFunc(m.incrs, func(x, y aofFile) int { return cmp.Compare(x.seq, y.seq) })
	var says []string
	if m.base != nil {
		says = append(says, "base "+m.base.name)
	}
	next := int64(0)
	if m.base != nil {
		next = m.base.seq
	}
	for _, f := range m.incrs {
		if next != 0 && f.seq != next {
			says = append(says, fmt.Sprintf("MISSING increments %d to %d: their writes are lost", next, f.seq-1))
		}
		says = append(says, "increment "+f.name)
		next = f.seq + 1
	}
	if len(m.incrs) == 0 && m.base != nil {
		says = append(says, fmt.Sprintf("MISSING increment %d: writes after the base are lost", next))
	}
	path := filepath.Join(dir, name+".manifest")
	if _, err := os.Stat(path); err == nil {
		kept, err := quarantine(fs, dir, qdir, name+".manifest")
		if err != nil {
			return "", fmt.Errorf("keeping the old manifest: %w", err)
		}
		says = append(says, "old manifest kept as "+kept)
	}
	return strings.Join(says, "\n"), writeFileAtomic(fs, path, m.encode())
}
