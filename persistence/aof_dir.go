package persistence

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// What an AOF directory may hold besides the files its manifest lists,
// and what opening it does with each. Nothing is ever deleted at startup:
// a file is moved into the quarantine folder only when the manifest
// proves it a leftover, and any other file the manifest does not explain
// stops the start, naming it, because it may hold acknowledged writes.
//
//	leftover                                  proof
//	<name>.<s>.base.rdb or .incr.aof, s < B   the manifest's base B replaced it
//	<name>.<s>.base.rdb, unlisted, s > B      no manifest ever listed it: a rewrite
//	                                          or a restore wrote it, then stopped
//	                                          before the manifest was replaced (a
//	                                          manifest is never rolled back)
//	<name>.<s>.incr.aof, empty, s > last      a file switch created it, then stopped
//	                                          before listing it (nothing was written)
//	a "type h" file                           the manifest says a rewrite replaced it
//	<name>.*.tmp                              a write through a temporary file that
//	                                          never reached its rename

// dataFile is a file named as ours in an AOF directory.
type dataFile struct {
	name string
	seq  int64
	kind byte // 'b' base, 'i' increment
	size int64
}

// aofDir is what an AOF directory holds that concerns appendfilename name.
type aofDir struct {
	data      []dataFile
	temps     []string // <name>.* ending in .tmp
	manifests []string // *.manifest files of another appendfilename
	maxSeq    int64    // the highest seq any file of ours uses
}

func scanAOFDir(fs FS, dir, name string) (aofDir, error) {
	var d aofDir
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return d, fmt.Errorf("persistence: listing %s: %w", dir, err)
	}
	for _, e := range entries {
		file := e.Name()
		if e.IsDir() {
			continue
		}
		if seq, kind, ok := parseDataName(name, file); ok {
			var size int64
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
			d.data = append(d.data, dataFile{name: file, seq: seq, kind: kind, size: size})
			d.maxSeq = max(d.maxSeq, seq)
			continue
		}
		switch {
		case strings.HasPrefix(file, name+".") && strings.HasSuffix(file, ".tmp"):
			d.temps = append(d.temps, file)
			if seq, _, ok := parseDataName(name, strings.TrimSuffix(file, ".tmp")); ok {
				d.maxSeq = max(d.maxSeq, seq) // never reuse the name of a file in quarantine
			}
		case strings.HasSuffix(file, ".manifest") && file != name+".manifest":
			d.manifests = append(d.manifests, file)
		}
	}
	return d, nil
}

func (d aofDir) has(file string) bool {
	return slices.ContainsFunc(d.data, func(f dataFile) bool { return f.name == file })
}

// leftover is a file the manifest proves is not part of the AOF.
type leftover struct {
	file string
	why  string
}

// leftovers sorts the files of d that m does not list into the ones m
// proves are leftovers (see the table above) and returns them, or the
// error for the first one it cannot explain. m must be valid.
func (d aofDir) leftovers(m manifest) ([]leftover, error) {
	var out []leftover
	for _, f := range m.history {
		if d.has(f.name) {
			out = append(out, leftover{f.name, "the manifest lists it as history (replaced by a rewrite)"})
		}
	}
	for _, t := range d.temps {
		out = append(out, leftover{t, "a temporary file whose write never finished"})
	}
	last := m.lastIncrSeq()
	for _, f := range d.data {
		switch {
		case m.lists(f.name) || slices.ContainsFunc(m.history, func(h aofFile) bool { return h.name == f.name }):
		case m.base != nil && f.seq < m.base.seq:
			out = append(out, leftover{f.name, fmt.Sprintf("replaced by the base %s", m.base.name)})
		case f.kind == 'b':
			out = append(out, leftover{f.name, "a base no manifest listed: a rewrite or restore stopped before listing it"})
		case f.kind == 'i' && f.size == 0 && f.seq > last:
			out = append(out, leftover{f.name, "an empty increment a file switch stopped before listing"})
		default:
			return nil, fmt.Errorf("%s is not listed in the manifest, and nothing shows it is a leftover: it may hold data", f.name)
		}
	}
	return out, nil
}

// lastIncrSeq is the seq of the newest increment (0 without any).
func (m manifest) lastIncrSeq() int64 {
	if len(m.incrs) == 0 {
		return 0
	}
	return m.lastIncr().seq
}

// quarantine moves dir/file into qdir (created if need be), under a name
// that does not overwrite anything there, and makes the move durable.
func quarantine(fs FS, dir, qdir, file string) (string, error) {
	to, err := quarantineSlot(fs, qdir, file)
	if err != nil {
		return "", err
	}
	if err := fs.Rename(filepath.Join(dir, file), to); err != nil {
		return "", err
	}
	if err := fs.SyncDir(qdir); err != nil {
		return "", err
	}
	return to, fs.SyncDir(dir)
}

// quarantineSlot makes the quarantine folder qdir if need be (durably)
// and returns a path in it for file: file, or file with a numbered
// suffix, whichever names nothing there yet.
func quarantineSlot(fs FS, qdir, file string) (string, error) {
	if err := mkdirDurable(fs, qdir); err != nil {
		return "", err
	}
	entries, err := fs.ReadDir(qdir)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, e := range entries {
		taken[e.Name()] = true
	}
	dst := file
	for i := 1; taken[dst] || taken[dst+".tmp"]; i++ {
		dst = fmt.Sprintf("%s.%d", file, i)
	}
	return filepath.Join(qdir, dst), nil
}
