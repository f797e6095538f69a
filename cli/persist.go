package cli

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// durability is the persistence layer cli plugs into the server: the AOF
// (when appendonly is on) as the server's Log, and RDB snapshots as its
// Persister (SAVE, BGSAVE, save points, BGREWRITEAOF, SHUTDOWN SAVE).
type durability struct {
	cfg    server.Config
	aof    *persistence.AOF
	logger *slog.Logger
	srv    *server.Server

	mu             sync.Mutex
	saving         bool
	lastSave       time.Time
	lastSaveOK     bool
	lastTry        time.Time
	saves          int64
	lastSaveSecs   int64
	saveStarted    time.Time
	rewriteOK      bool
	rewrites       int64
	lastRewriteSec int64
}

// openDurability opens the AOF (without loading it yet).
func openDurability(cfg server.Config, logger *slog.Logger) (*durability, error) {
	d := &durability{cfg: cfg, logger: logger, lastSaveOK: true, rewriteOK: true, lastRewriteSec: -1, lastSaveSecs: -1}
	if !cfg.AppendOnly {
		return d, nil
	}
	policy, err := persistence.ParseFsyncPolicy(cfg.AppendFsync)
	if err != nil {
		return nil, err
	}
	d.aof, err = persistence.OpenAOF(persistence.AOFOptions{
		Dir:      filepath.Join(cfg.Dir, cfg.AppendDirName),
		Name:     cfg.AppendFileName,
		Fsync:    policy,
		Logger:   logger,
		Truncate: cfg.AOFLoadTruncated,
	})
	return d, err
}

// log is the server.Log to plug in (nil when there is none).
func (d *durability) log() server.Log {
	if d.aof == nil {
		return nil
	}
	return d.aof
}

func (d *durability) rdbPath() string { return filepath.Join(d.cfg.Dir, d.cfg.DBFilename) }

// load fills srv from disk — the AOF (base snapshot, then increments)
// when appendonly is on, else dump.rdb if there is one — and starts
// accepting appends.
func (d *durability) load(srv *server.Server) error {
	d.srv = srv
	defer func() { d.lastSave = time.Now() }()
	d.removeStaleTemps()
	if d.aof != nil {
		if _, err := d.aof.Load(d.loadRDB, srv.Apply); err != nil {
			return err
		}
		return d.aof.Start()
	}
	f, err := os.Open(d.rdbPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := d.loadRDB(f); err != nil {
		return fmt.Errorf("loading %s: %w", d.rdbPath(), err)
	}
	return nil
}

// loadRDB installs every key of an RDB stream into the server, logging
// progress once a second for large files.
func (d *durability) loadRDB(r io.Reader) error {
	var size int64
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if info, err := f.Stat(); err == nil {
			size = info.Size()
		}
	}
	dec := persistence.NewDecoder(r, &persistence.DecodeOptions{ListFill: d.cfg.ListMaxListpackSize, Size: size})
	start, last := time.Now(), time.Now()
	keys := 0
	for {
		e, err := dec.Next()
		if err == io.EOF {
			d.logger.Info("RDB loaded", "keys", keys, "bytes", dec.Offset(), "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
			return nil
		}
		if err != nil {
			return err
		}
		value, err := fromRDBValue(e.Value, d.cfg.ListMaxListpackSize)
		if err != nil {
			return fmt.Errorf("key %q: %w", e.Key, err)
		}
		expire := int64(0)
		if e.HasExpire {
			expire = e.ExpireAt
		}
		if err := d.srv.Load(e.DB, string(e.Key), value, expire); err != nil {
			return err
		}
		keys++
		if time.Since(last) >= time.Second && size > 0 {
			last = time.Now()
			d.logger.Info("loading RDB", "percent", fmt.Sprintf("%.1f", 100*float64(dec.Offset())/float64(size)), "keys", keys)
		}
	}
}

// fromRDBValue turns a decoded RDB value into the server's value.
func fromRDBValue(v persistence.Value, fill int) (any, error) {
	switch v := v.(type) {
	case persistence.String:
		return []byte(v), nil
	case persistence.List:
		return listpack.QuicklistFromNodes(fill, v), nil
	}
	return fromRDBValueExt(v)
}

// toRDBValue turns a snapshot's value view into the codec's value.
func toRDBValue(v any) (persistence.Value, error) {
	switch v := v.(type) {
	case []byte:
		return persistence.String(v), nil
	case *listpack.Quicklist:
		var nodes persistence.List
		v.Nodes(func(lp listpack.Listpack) bool { nodes = append(nodes, lp); return true })
		return nodes, nil
	}
	return toRDBValueExt(v)
}

// writeRDB writes snap to w in Redis's RDB format.
func (d *durability) writeRDB(w io.Writer, snap *server.Snapshot, aofBase bool) error {
	opt := &persistence.EncodeOptions{
		NoCompression:    !d.cfg.RDBCompression,
		NoChecksum:       !d.cfg.RDBChecksum,
		RedstreamVersion: server.Version,
		AOFBase:          aofBase,
		ListFill:         d.cfg.ListMaxListpackSize,
		Ctime:            time.UnixMilli(snap.Time),
	}
	var dbs []persistence.DB
	for _, sdb := range snap.DBs {
		if len(sdb.Entries) == 0 {
			continue
		}
		dbs = append(dbs, persistence.DB{ID: sdb.Index, Keys: uint64(len(sdb.Entries)), Expires: uint64(sdb.Expires),
			Entries: snapshotEntries(sdb)})
	}
	return persistence.Encode(w, opt, dbs)
}

func snapshotEntries(sdb server.SnapshotDB) iter.Seq2[*persistence.Entry, error] {
	return func(yield func(*persistence.Entry, error) bool) {
		for _, se := range sdb.Entries {
			v, err := toRDBValue(se.Value)
			e := &persistence.Entry{DB: sdb.Index, Key: []byte(se.Key), Value: v, ExpireAt: se.ExpireAt, HasExpire: se.ExpireAt != 0}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// tempPath is where a save by process pid writes before its rename.
func (d *durability) tempPath(pid int) string {
	return d.rdbPath() + ".temp-" + strconv.Itoa(pid) + ".rdb"
}

// removeStaleTemps deletes the half-written saves of servers that died
// mid-save (kill -9, power loss): nobody will finish or rename them, and
// each can be as large as the dataset. A file whose process still runs
// is left alone: it may be another server's save in progress.
func (d *durability) removeStaleTemps() {
	prefix := d.rdbPath() + ".temp-"
	matches, _ := filepath.Glob(prefix + "*.rdb")
	for _, path := range matches {
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, prefix), ".rdb"))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			d.logger.Info("removing the temporary file of an interrupted save", "file", path)
			os.Remove(path)
		}
	}
}

// saveFile writes snap as dump.rdb, durably and atomically.
func (d *durability) saveFile(snap *server.Snapshot) error {
	path := d.rdbPath()
	tmp := d.tempPath(os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = d.writeRDB(f, snap, false)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Save writes the RDB file now (SAVE, SHUTDOWN): the caller waits.
func (d *durability) Save(snap *server.Snapshot) error {
	start := time.Now()
	err := d.saveFile(snap)
	d.saved(snap, start, err, false)
	return err
}

// BackgroundSave writes the RDB file from snap in a goroutine (BGSAVE,
// save points); the server keeps serving meanwhile.
func (d *durability) BackgroundSave(snap *server.Snapshot) error {
	d.mu.Lock()
	if d.saving {
		d.mu.Unlock()
		return server.ErrSaveInProgress
	}
	d.saving, d.saveStarted = true, time.Now()
	d.mu.Unlock()
	d.logger.Info("background saving started")
	go func() {
		start := time.Now()
		err := d.saveFile(snap)
		d.saved(snap, start, err, true)
	}()
	return nil
}

// saved records a save's outcome. Lock must not be held by the caller.
func (d *durability) saved(snap *server.Snapshot, start time.Time, err error, background bool) {
	d.mu.Lock()
	d.lastTry, d.lastSaveOK = time.Now(), err == nil
	if background {
		d.saving = false
		d.lastSaveSecs = int64(time.Since(start).Seconds())
	}
	if err == nil {
		d.lastSave = time.Now()
		d.saves++
	}
	d.mu.Unlock()
	if err != nil {
		d.logger.Error("saving the RDB snapshot failed", "file", d.rdbPath(), "err", err)
		return
	}
	d.logger.Info("DB saved on disk", "file", d.rdbPath(), "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	if background {
		d.srv.Saved(snap) // takes the server lock; a foreground SAVE's caller accounts for itself
	}
}

// BackgroundRewriteAOF freezes a snapshot and starts a new AOF increment
// in one critical section, then writes the snapshot as the AOF's new base.
func (d *durability) BackgroundRewriteAOF(freeze func(during func()) *server.Snapshot) error {
	if d.aof == nil {
		return server.ErrAOFDisabled
	}
	var seq int64
	var rerr error
	snap := freeze(func() { seq, rerr = d.aof.Rotate() })
	if errors.Is(rerr, persistence.ErrRewriteInProgress) {
		return server.ErrRewriteInProgress
	}
	if rerr != nil {
		return rerr
	}
	d.logger.Info("background append only file rewriting started")
	go func() {
		start := time.Now()
		err := d.aof.FinishRewrite(seq, func(w io.Writer) error { return d.writeRDB(w, snap, true) })
		d.mu.Lock()
		d.rewriteOK = err == nil
		d.lastRewriteSec = int64(time.Since(start).Seconds())
		if err == nil {
			d.rewrites++
		}
		d.mu.Unlock()
		if err != nil {
			d.logger.Error("AOF rewrite failed", "err", err)
			return
		}
		d.logger.Info("background AOF rewrite finished successfully", "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	}()
	return nil
}

// Status reports saves and rewrites to the server.
func (d *durability) Status() server.PersistStatus {
	d.mu.Lock()
	st := server.PersistStatus{Saving: d.saving, LastSave: d.lastSave, LastSaveOK: d.lastSaveOK, LastSaveTry: d.lastTry}
	d.mu.Unlock()
	if d.aof != nil {
		st.AOFEnabled, st.Rewriting = true, d.aof.Rewriting()
		st.AOFBase, st.AOFSize = d.aof.Sizes()
	}
	return st
}

// close flushes and closes; call it after the server stopped appending.
func (d *durability) close() error {
	if d.aof == nil {
		return nil
	}
	return d.aof.Close()
}

// info is INFO persistence's AOF and RDB part, with Redis's names.
func (d *durability) info() []server.InfoField {
	st := d.Status()
	d.mu.Lock()
	status := map[bool]string{true: "ok", false: "err"}
	current := int64(-1)
	if d.saving {
		current = int64(time.Since(d.saveStarted).Seconds())
	}
	f := []server.InfoField{
		{Name: "rdb_bgsave_in_progress", Value: boolInt(d.saving)},
		{Name: "rdb_last_save_time", Value: d.lastSave.Unix()},
		{Name: "rdb_last_bgsave_status", Value: status[d.lastSaveOK]},
		{Name: "rdb_last_bgsave_time_sec", Value: d.lastSaveSecs},
		{Name: "rdb_current_bgsave_time_sec", Value: current},
		{Name: "rdb_saves", Value: d.saves},
		{Name: "aof_enabled", Value: boolInt(d.aof != nil)},
		{Name: "aof_rewrite_in_progress", Value: boolInt(st.Rewriting)},
		{Name: "aof_rewrite_scheduled", Value: 0},
		{Name: "aof_last_rewrite_time_sec", Value: d.lastRewriteSec},
		{Name: "aof_current_rewrite_time_sec", Value: -1},
		{Name: "aof_last_bgrewrite_status", Value: status[d.rewriteOK]},
		{Name: "aof_rewrites", Value: d.rewrites},
	}
	d.mu.Unlock()
	if d.aof == nil {
		return append(f, server.InfoField{Name: "aof_last_write_status", Value: "ok"})
	}
	as := d.aof.Stats()
	return append(f,
		server.InfoField{Name: "aof_last_write_status", Value: status[as.LastWriteOK]},
		server.InfoField{Name: "aof_current_size", Value: st.AOFSize},
		server.InfoField{Name: "aof_base_size", Value: st.AOFBase},
		server.InfoField{Name: "aof_delayed_fsync", Value: as.DelayedFsyncs})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
