package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/redstream/redstream/server"
)

// RestoreOptions say where a restore installs an RDB file: the data
// directory's names, as the server's configuration gives them.
type RestoreOptions struct {
	Dir        string // dir
	DBFilename string // dbfilename
	AOFDir     string // dir/appenddirname
	AOFName    string // appendfilename
	Quarantine string // where replaced files go
	FS         FS     // nil: the real file system
	// SkipUnsupported installs src without what redstream does not serve
	// (see CopyServed) instead of verbatim.
	SkipUnsupported bool
}

// Restore installs the RDB file src as the data of a stopped server, so
// that it starts from exactly that snapshot whether appendonly is on or
// off: as dbfilename, and as the base of a new AOF (a manifest listing it
// and one empty increment). The caller must hold the data directory's
// lock. Nothing is deleted: the dbfilename it replaces and the AOF files
// the new manifest no longer lists go to the quarantine folder. Each file
// is replaced by a rename, so a crash at any point leaves the old dump or
// the new one, and the old AOF or the new one (the manifest's rename
// decides; the next start quarantines what it no longer lists).
func Restore(src string, opt RestoreOptions) error {
	content := func(w io.Writer) error { return copyFile(w, src) }
	if opt.SkipUnsupported {
		content = func(w io.Writer) error { return copyServedFile(w, src) }
	}
	fs := opt.FS
	if fs == nil {
		fs = OSFS{}
	}
	if err := mkdirDurable(fs, opt.Dir); err != nil {
		return err
	}
	dump := filepath.Join(opt.Dir, opt.DBFilename)
	if err := keepCopy(fs, dump, opt.Quarantine); err != nil {
		return fmt.Errorf("keeping the old %s: %w", opt.DBFilename, err)
	}
	if _, err := writeFileDurably(fs, dump, content); err != nil {
		return err
	}
	return installAOFBase(fs, content, opt)
}

// InstallAOFBase starts a new AOF in opt.AOFDir whose base is what
// writeBase writes (an RDB): the base, one empty increment, and a
// manifest listing them, written in that order, so a crash at any point
// leaves the old AOF or the whole new one. What the old AOF held goes to
// opt.Quarantine, nothing is deleted. The caller must hold the data
// directory's lock; the AOF is then opened with OpenAOF. This is how
// CONFIG SET appendonly yes turns the AOF on.
func InstallAOFBase(opt RestoreOptions, writeBase func(w io.Writer) error) error {
	fs := opt.FS
	if fs == nil {
		fs = OSFS{}
	}
	if err := mkdirDurable(fs, opt.Dir); err != nil {
		return err
	}
	return installAOFBase(fs, writeBase, opt)
}

// installAOFBase makes content the base of a new AOF in opt.AOFDir, numbered
// after every file there, then moves what the old manifest listed (and
// the old manifest's copy) into quarantine.
func installAOFBase(fs FS, content func(io.Writer) error, opt RestoreOptions) error {
	if err := mkdirDurable(fs, opt.AOFDir); err != nil {
		return err
	}
	d, err := scanAOFDir(fs, opt.AOFDir, opt.AOFName)
	if err != nil {
		return err
	}
	manifestPath := filepath.Join(opt.AOFDir, opt.AOFName+".manifest")
	old, _, _ := readManifest(fs, manifestPath) // a broken one is replaced all the same
	seq := max(d.maxSeq+1, old.nextSeq())
	m := manifest{base: &aofFile{name: baseName(opt.AOFName, seq), seq: seq},
		incrs: []aofFile{{name: incrName(opt.AOFName, seq), seq: seq}}}
	if _, err := writeFileDurably(fs, filepath.Join(opt.AOFDir, m.base.name), content); err != nil {
		return err
	}
	if err := createEmpty(fs, opt.AOFDir, m.incrs[0].name); err != nil {
		return err
	}
	if err := keepCopy(fs, manifestPath, opt.Quarantine); err != nil {
		return fmt.Errorf("keeping the old manifest: %w", err)
	}
	if err := writeFileAtomic(fs, manifestPath, m.encode()); err != nil {
		return err
	}
	for _, f := range d.data {
		if _, err := quarantine(fs, opt.AOFDir, opt.Quarantine, f.name); err != nil {
			return fmt.Errorf("moving the replaced %s into quarantine: %w", f.name, err)
		}
	}
	return nil
}

// createEmpty creates an empty file in dir and makes its name durable.
func createEmpty(fs FS, dir, name string) error {
	f, err := fs.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// keepCopy copies path, if it exists, into qdir (a copy, not a move: the
// file stays in place until a rename replaces it).
func keepCopy(fs FS, path, qdir string) error {
	src, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	kept, err := quarantineSlot(fs, qdir, filepath.Base(path))
	if err != nil {
		return err
	}
	_, err = writeFileDurably(fs, kept, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
	return err
}

// copyFile copies the file src to w.
func copyFile(w io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(w, in)
	return err
}

// copyServedFile writes the RDB file src to w without what redstream
// does not serve (see CopyServed).
func copyServedFile(w io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return CopyServed(w, in)
}

// CopyServed decodes the RDB file src and writes to w an RDB file of what
// redstream serves: every string, list and stream with its expiry, and
// neither the hashes, sets, sorted sets and module values nor the
// function libraries and module aux data. The file must be sound: a
// decoding error or a checksum mismatch stops the copy.
func CopyServed(w io.Writer, src io.Reader) error {
	dec := NewDecoder(src, &DecodeOptions{SkipUnsupported: true})
	enc := NewEncoder(w, &EncodeOptions{RedstreamVersion: server.Version})
	db := -1
	for {
		e, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return enc.Close()
		}
		if err != nil {
			return err
		}
		if _, skipped := e.Value.(Skipped); skipped {
			continue
		}
		if e.DB != db {
			db = e.DB
			if err := enc.SelectDB(db, 0, 0); err != nil {
				return err
			}
		}
		if err := enc.WriteEntry(e); err != nil {
			return err
		}
	}
}
