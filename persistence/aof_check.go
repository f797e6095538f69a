package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// AOFFileReport is what CheckAOF found in one file.
type AOFFileReport struct {
	Name    string
	Kind    string // "base" or "incr"
	Size    int64
	Records int64 // records in an increment; keys in a base
	Good    int64 // bytes of whole, valid frames (the whole file when OK)
	Err     error // nil when the file is sound
	Last    bool  // the newest increment: a torn tail here is a crash, not damage
}

// CheckAOF reads every file the manifest in dir lists, as a load would,
// without applying anything, and reports where each one stops being
// valid. onProgress, if not nil, is told the bytes checked so far.
func CheckAOF(dir, name string, onProgress func(done, total int64)) ([]AOFFileReport, error) {
	m, found, err := readManifest(OSFS{}, filepath.Join(dir, name+".manifest"))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("persistence: no AOF manifest %s.manifest in %s", name, dir)
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
		r := checkIncr(filepath.Join(dir, f.name), func(n int64) {
			if onProgress != nil {
				onProgress(done+n, total)
			}
		})
		r.Name, r.Last = f.name, i == len(m.incrs)-1
		reports = append(reports, r)
		done += r.Size
	}
	return reports, nil
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

func checkIncr(path string, progress func(int64)) AOFFileReport {
	r := AOFFileReport{Kind: "incr"}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return r // listed but never written: empty
	}
	if err != nil {
		r.Err = err
		return r
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		r.Size = info.Size()
	}
	fr := newFrameReader(f)
	for n := 0; ; n++ {
		recs, off, err := fr.next()
		if err == io.EOF {
			r.Good = off
			return r
		}
		if err != nil {
			r.Err, r.Good = err, off
			return r
		}
		r.Records += int64(len(recs))
		if n%4096 == 0 {
			progress(fr.off)
		}
	}
}

// CutAOFFile truncates path at offset and fsyncs it: the repair for a
// damaged tail (everything from offset on is lost).
func CutAOFFile(path string, offset int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(offset); err != nil {
		return err
	}
	return f.Sync()
}

// InstallRDBAsAOFBase makes the RDB file at rdbPath the whole AOF in
// dir: the base of a fresh manifest with one empty increment, so a server
// with appendonly on starts from exactly that snapshot.
func InstallRDBAsAOFBase(rdbPath, dir, name string) error {
	fs := OSFS{}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(rdbPath)
	if err != nil {
		return err
	}
	defer src.Close()
	base := baseName(name, 1)
	if _, err := writeFileDurably(fs, filepath.Join(dir, base), func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return err
	}
	m := manifest{base: &aofFile{name: base, seq: 1}, incrs: []aofFile{{name: incrName(name, 2), seq: 2}}}
	return writeFileAtomic(fs, filepath.Join(dir, name+".manifest"), m.encode())
}
