package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Rewriting the AOF without stopping writes:
//
//  1. Under the server's lock, in the same critical section that freezes
//     the keyspace snapshot, Rotate marks the current end of the queued
//     frames: every frame appended after it goes to a new increment.
//     Rotate does no I/O; the writer switches files when it gets there,
//     first adding the new increment to the manifest, so that a crash at
//     any point loads  old base + old increments + new increment.
//  2. In the background, the snapshot is written as the new base (an RDB
//     file), fsync'd and renamed into place.
//  3. FinishRewrite replaces the manifest with  new base + new increment
//     (+ any later ones) and deletes the files it no longer lists.

// ErrRewriteInProgress means BGREWRITEAOF was asked while one runs.
var ErrRewriteInProgress = errors.New("persistence: an AOF rewrite is already in progress")

// rotation is a point in the queued frames where a new increment begins.
type rotation struct {
	at    int    // byte offset into AOF.pending
	frame uint64 // frames queued before it
	file  aofFile
}

// Rotate starts a new increment for the frames appended from now on and
// returns its sequence number, which the base written from a snapshot
// frozen in the same critical section must use (see FinishRewrite). It is
// called with the server's lock held and does no I/O.
func (a *AOF) Rotate() (int64, error) {
	a.mu.Lock()
	if a.rewriting {
		a.mu.Unlock()
		return 0, ErrRewriteInProgress
	}
	a.rewriting = true
	seq := a.nextSeq
	a.nextSeq++
	a.rotations = append(a.rotations, rotation{at: len(a.pending), frame: a.appended,
		file: aofFile{name: incrName(a.opt.Name, seq), seq: seq}})
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}: // the writer makes the switch even if nobody waits
	default:
	}
	return seq, nil
}

// rotateFile switches the writer to the next increment: create it, list
// it in the manifest, and close the current one. It reports whether it
// switched (false: retry on the next tick). Every step may be retried and
// a crash may stop it anywhere: the file exists before any manifest lists
// it, a retry lists it once, and an empty increment no manifest lists is
// a leftover the next start can prove (aof_dir.go). Writes wait
// meanwhile, so it does no more I/O than crash safety needs: under
// always, every frame of the current file is fsync'd already; under
// everysec and no, its unsynced tail is fsync'd in the background, as
// Redis does, rather than holding writes up for as long as a second's
// worth of data takes.
func (a *AOF) rotateFile(r rotation) bool {
	f, err := a.fs.OpenFile(filepath.Join(a.opt.Dir, r.file.name), os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		err = a.fs.SyncDir(a.opt.Dir)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		a.rotateFailed(err)
		return false
	}
	a.manifestMu.Lock()
	m := a.manifest
	if m.lastIncr() != r.file {
		m.incrs = append(slices.Clone(m.incrs), r.file)
	}
	err = writeFileAtomic(a.fs, a.manifestPath(), m.encode())
	if err == nil {
		a.manifest = m
	}
	a.manifestMu.Unlock()
	if err != nil {
		f.Close()
		a.rotateFailed(err)
		return false
	}
	a.fileMu.Lock() // no write or fsync may use the old file past here
	old, oldSize, filled := a.file, a.size, a.filledTo > a.size
	a.file, a.size, a.filledTo, a.cannotFill = f, 0, 0, false
	a.fileMu.Unlock()
	a.mu.Lock()
	unsynced := a.synced < a.written
	a.curBytes = 0
	a.rotations = a.rotations[1:]
	a.recovered() // a failed switch's error goes, even with nothing left to write
	a.notify()
	a.mu.Unlock()
	if !unsynced && !filled {
		old.Close()
		return true
	}
	// In the background, as Redis does with the old file: fsync what
	// everysec left unsynced, cut the preallocated fill (a loader would
	// skip it anyway, so a crash before the cut loses nothing).
	a.background.Add(1)
	go func() {
		defer a.background.Done()
		if filled {
			if err := old.Truncate(oldSize); err != nil {
				a.opt.Logger.Warn("AOF: cannot cut the fill of the previous increment", "err", err)
			}
		}
		if err := syncData(old); err != nil {
			a.opt.Logger.Error("AOF: fsync of the previous increment failed", "err", err)
		}
		old.Close()
	}()
	return true
}

func (a *AOF) rotateFailed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.opt.Logger.Error("AOF: cannot start a new increment; retrying", "err", err)
	}
	a.err = fmt.Errorf("persistence: starting a new AOF increment: %w", err)
	// Every frame queued waits behind the switch: none can be written
	// until it succeeds, so their waits fail now (the writer retries on
	// its tick) rather than retry the switch in a loop.
	a.failedTo = a.appended
	a.failures++
	a.stats.LastWriteOK, a.stats.LastWriteErr = false, err.Error()
	a.notify()
}

// FinishRewrite writes the new base with writeBase (the snapshot frozen
// with Rotate's seq, as an RDB) and makes it, with the increments from seq
// on, the whole AOF. On failure the old files stay in charge and the
// rewrite may be retried.
func (a *AOF) FinishRewrite(seq int64, writeBase func(w io.Writer) error) (err error) {
	defer func() {
		a.mu.Lock()
		a.rewriting = false
		a.mu.Unlock()
	}()
	if err := a.awaitRotation(seq); err != nil {
		return err
	}
	name := baseName(a.opt.Name, seq)
	size, err := writeFileDurably(a.fs, filepath.Join(a.opt.Dir, name), writeBase)
	if err != nil {
		return fmt.Errorf("persistence: writing AOF base %s: %w", name, err)
	}
	a.manifestMu.Lock()
	old := a.manifest
	m := manifest{base: &aofFile{name: name, seq: seq}}
	for _, f := range old.incrs {
		if f.seq >= seq {
			m.incrs = append(m.incrs, f)
		}
	}
	err = writeFileAtomic(a.fs, a.manifestPath(), m.encode())
	if err == nil {
		a.manifest = m
	}
	a.manifestMu.Unlock()
	if err != nil {
		// The new base stays: the failure may have come after the rename
		// (the directory's fsync), so the manifest on disk may list it.
		// If it does not, the next start proves it a leftover.
		return fmt.Errorf("persistence: writing the AOF manifest: %w", err)
	}
	a.removeUnlisted(old, m)
	a.mu.Lock()
	a.baseBytes, a.incrBytes = size, a.curBytes // a.size is the writer's own
	a.growthBase = a.baseBytes + a.incrBytes
	a.mu.Unlock()
	return nil
}

// awaitRotation waits until the writer has started increment seq.
func (a *AOF) awaitRotation(seq int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		pending := false
		for _, r := range a.rotations {
			pending = pending || r.file.seq <= seq
		}
		switch {
		case !pending:
			return nil
		case a.closed:
			return ErrClosed
		}
		a.cond.Wait()
	}
}

// removeUnlisted deletes the files old listed and m does not.
func (a *AOF) removeUnlisted(old, m manifest) {
	keep := map[string]bool{}
	if m.base != nil {
		keep[m.base.name] = true
	}
	for _, f := range m.incrs {
		keep[f.name] = true
	}
	files := slices.Clone(old.incrs)
	if old.base != nil {
		files = append(files, *old.base)
	}
	for _, f := range files {
		if !keep[f.name] {
			if err := a.fs.Remove(filepath.Join(a.opt.Dir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				a.opt.Logger.Warn("AOF rewrite: cannot remove an old file", "file", f.name, "err", err)
			}
		}
	}
}

// Sizes returns the AOF's size at the last start or rewrite and its size
// now (base plus every increment), which auto-aof-rewrite compares (and
// INFO shows as aof_base_size and aof_current_size, as Redis does).
func (a *AOF) Sizes() (base, total int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.growthBase, a.baseBytes + a.incrBytes
}

// Rewriting reports whether a rewrite is under way.
func (a *AOF) Rewriting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rewriting
}

// writeFileDurably writes path through a temporary file with write, fsyncs
// and renames it, and fsyncs the directory: the file appears whole or
// not at all. It returns the size written.
func writeFileDurably(fs FS, path string, write func(w io.Writer) error) (int64, error) {
	return writeFileVia(fs, path, path+".tmp", write)
}

// WriteRDBFile writes path (dbfilename) with write through the temporary
// file tmp, as writeFileDurably does: a crash or an error at any step
// leaves the old file or the whole new one, and no temporary file.
func WriteRDBFile(fs FS, path, tmp string, write func(w io.Writer) error) error {
	_, err := writeFileVia(fs, path, tmp, write)
	return err
}

func writeFileVia(fs FS, path, tmp string, write func(w io.Writer) error) (int64, error) {
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: f}
	err = write(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = fs.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		fs.Remove(tmp)
		return 0, err
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
