package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// durability is the persistence layer cli plugs into the server: the AOF
// (when appendonly is on) as the server's Log, and RDB snapshots as its
// Persister (SAVE, BGSAVE, save points, BGREWRITEAOF, SHUTDOWN SAVE).
//
// Each output file has one writer at a time: saveMu is held by whoever
// writes dbfilename, and the AOF allows one rewrite. Background saves and
// rewrites are jobs the shutdown stops and waits for (BeginShutdown)
// before its own save, and none starts after it.
type durability struct {
	cfg    server.Config
	wal    *aofLog // the server's Log: the AOF while appendonly is on
	logger *slog.Logger
	srv    *server.Server
	// loadSignals hears SIGTERM and SIGINT while the data loads (nil
	// otherwise: export loads without it).
	loadSignals chan os.Signal
	saveMu      sync.Mutex     // held while dbfilename (through its temp file) is written
	jobs        sync.WaitGroup // background saves and rewrites under way

	mu             sync.Mutex
	stopJobs       chan struct{} // closed by BeginShutdown: running jobs give up
	stopped        bool          // no new job starts (shutting down)
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

// errShuttingDown refuses background jobs once the shutdown has begun.
var errShuttingDown = errors.New("the server is shutting down")

// errJobStopped is what a background job's writes fail with once the
// shutdown stopped it.
var errJobStopped = errors.New("stopped by the shutdown")

// newDurability prepares the persistence layer; open opens its files.
func newDurability(cfg server.Config, logger *slog.Logger) *durability {
	return &durability{cfg: cfg, wal: newAOFLog(nil), logger: logger, lastSaveOK: true, rewriteOK: true, lastRewriteSec: -1,
		lastSaveSecs: -1, stopJobs: make(chan struct{})}
}

// quarantineDir is where files are moved instead of being deleted.
func quarantineDir(dataDir string) string { return filepath.Join(dataDir, "quarantine") }

// open opens the AOF (without loading it yet) when appendonly is on.
func (d *durability) open() error {
	if !d.cfg.AppendOnly {
		return nil
	}
	fsync, err := persistence.ParseFsyncPolicy(d.cfg.AppendFsync)
	if err != nil {
		return err
	}
	aof, err := d.openAOF(fsync)
	if err == nil {
		d.wal = newAOFLog(aof)
	}
	return err
}

// openAOF opens the AOF in the data directory.
func (d *durability) openAOF(fsync persistence.FsyncPolicy) (*persistence.AOF, error) {
	return persistence.OpenAOF(persistence.AOFOptions{
		Dir:        d.aofDir(),
		Name:       d.cfg.AppendFileName,
		Fsync:      fsync,
		Logger:     d.logger,
		Truncate:   d.cfg.AOFLoadTruncated,
		Quarantine: quarantineDir(d.cfg.Dir),
	})
}

func (d *durability) aofDir() string { return filepath.Join(d.cfg.Dir, d.cfg.AppendDirName) }

// log is the server.Log to plug in.
func (d *durability) log() server.Log { return d.wal }

func (d *durability) rdbPath() string { return filepath.Join(d.cfg.Dir, d.cfg.DBFilename) }

// load fills srv from disk — the AOF (base snapshot, then increments)
// when appendonly is on, else dump.rdb if there is one — and starts
// accepting appends.
func (d *durability) load(srv *server.Server) error {
	d.srv = srv
	defer func() { d.lastSave = time.Now() }()
	d.loadSignals = make(chan os.Signal, 1)
	notifyLoadSignals(d.loadSignals)
	defer signal.Stop(d.loadSignals)
	d.removeStaleTemps()
	if aof := d.wal.current(); aof != nil {
		apply := applyFrame(srv)
		if _, err := aof.Load(d.rdbLoader("AOF base"), func(recs []server.Record) error {
			if err := d.loadInterrupted(); err != nil {
				return err
			}
			return apply(recs)
		}); err != nil {
			return err
		}
		return aof.Start()
	}
	f, err := os.Open(d.rdbPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := d.rdbLoader("RDB")(f); err != nil {
		return fmt.Errorf("loading %s: %w", d.rdbPath(), diagnose(f, err))
	}
	return nil
}

// notifyLoadSignals makes c hear the signals that stop a load: SIGTERM
// and SIGINT. Tests replace it.
var notifyLoadSignals = func(c chan<- os.Signal) { signal.Notify(c, syscall.SIGTERM, syscall.SIGINT) }

// loadInterrupted returns an error once a signal asked to stop while the
// data loads: the load stops at the next key or frame, and the server
// exits saying why, instead of dying silently (the default action of an
// unhandled SIGTERM) or serving after all.
func (d *durability) loadInterrupted() error {
	select {
	case sig := <-d.loadSignals:
		name := map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		return fmt.Errorf("received %s while loading the data; exiting without serving", name)
	default:
		return nil
	}
}

// applyFrame applies an AOF frame's records as one batch; a command that
// fails stops the load (the log and the state disagree).
func applyFrame(srv *server.Server) func([]server.Record) error {
	return func(recs []server.Record) error {
		applied, err := srv.ApplyBatch(recs, 0)
		for _, a := range applied {
			if err == nil {
				err = a.Err
			}
		}
		return err
	}
}

// rdbLoader returns a function that installs every key of an RDB stream
// into the server, logging progress once a second for large files, and
// its end, as what ("RDB", "AOF base") is loaded.
func (d *durability) rdbLoader(what string) func(io.Reader) error {
	return func(r io.Reader) error {
		var size int64
		var attrs []any
		if f, ok := r.(*os.File); ok {
			attrs = append(attrs, "file", f.Name())
			if info, err := f.Stat(); err == nil {
				size = info.Size()
			}
		}
		start := time.Now()
		put := func(db int, key string, value any, expireAt int64) error {
			if err := d.loadInterrupted(); err != nil {
				return err
			}
			return d.srv.Load(db, key, value, expireAt)
		}
		keys, err := persistence.ReadSnapshot(r, persistence.DecodeOptions{ListFill: d.cfg.ListMaxListpackSize, Size: size},
			put, func(offset int64, keys int) {
				if size > 0 {
					d.logger.Info("loading "+what, "percent", fmt.Sprintf("%.1f", 100*float64(offset)/float64(size)), "keys", keys)
				}
			})
		if err == nil {
			d.logger.Info(what+" loaded", append(attrs, "keys", keys, "bytes", size,
				"seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))...)
		}
		return err
	}
}

// writeRDB writes snap to w in Redis's RDB format.
func (d *durability) writeRDB(w io.Writer, snap *server.Snapshot, aofBase bool) error {
	return persistence.WriteSnapshot(w, snap, persistence.EncodeOptions{
		NoCompression:    !d.cfg.RDBCompression,
		NoChecksum:       !d.cfg.RDBChecksum,
		RedstreamVersion: server.Version,
		AOFBase:          aofBase,
		ListFill:         d.cfg.ListMaxListpackSize,
	})
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

// saveFile writes snap as dump.rdb, durably and atomically. Writes fail
// with errJobStopped once stop is closed.
func (d *durability) saveFile(snap *server.Snapshot, stop <-chan struct{}) error {
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	return persistence.WriteRDBFile(persistence.OSFS{}, d.rdbPath(), d.tempPath(os.Getpid()), func(w io.Writer) error {
		return d.writeRDB(stoppableWriter{w, stop}, snap, false)
	})
}

// stoppableWriter is a background job's output: once stop is closed,
// every write fails, so the job ends at its next write.
type stoppableWriter struct {
	w    io.Writer
	stop <-chan struct{}
}

func (s stoppableWriter) Write(p []byte) (int, error) {
	select {
	case <-s.stop:
		return 0, errJobStopped
	default:
		return s.w.Write(p)
	}
}

// Save writes the RDB file now (SAVE, SHUTDOWN): the caller waits.
func (d *durability) Save(snap *server.Snapshot) error {
	start := time.Now()
	err := d.saveFile(snap, nil)
	d.saved(start, err, false)
	return err
}

// startJob registers a background job, unless the shutdown has begun.
// It returns the channel that tells the job to stop.
func (d *durability) startJob() (<-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil, errShuttingDown
	}
	d.jobs.Add(1)
	return d.stopJobs, nil
}

// BeginShutdown stops the background jobs and waits until they are gone.
func (d *durability) BeginShutdown() {
	d.mu.Lock()
	if !d.stopped {
		d.stopped = true
		close(d.stopJobs)
	}
	d.mu.Unlock()
	d.jobs.Wait()
}

// AbortShutdown lets background jobs start again.
func (d *durability) AbortShutdown() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		d.stopped = false
		d.stopJobs = make(chan struct{})
	}
}

// BackgroundSave writes the RDB file from snap in a goroutine (BGSAVE,
// save points); the server keeps serving meanwhile.
func (d *durability) BackgroundSave(snap *server.Snapshot) error {
	d.mu.Lock()
	saving := d.saving
	d.mu.Unlock()
	if saving {
		return server.ErrSaveInProgress
	}
	stop, err := d.startJob()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.saving, d.saveStarted = true, time.Now()
	d.mu.Unlock()
	d.logger.Info("background saving started")
	go func() {
		backgroundThread()
		defer snap.Close() // a save that stops early must release the writers
		start := time.Now()
		err := d.saveFile(snap, stop)
		d.jobs.Done() // before the server's lock: BeginShutdown waits for this with it held
		if err == nil {
			// The changes leave rdb_changes_since_last_save before INFO
			// stops showing the save, as Redis's parent resets dirty when
			// it reaps the child: a client that saw the save end never
			// sees its changes still counted.
			d.srv.Saved(snap)
		}
		d.saved(start, err, true)
	}()
	return nil
}

// saved records a save's outcome. A background save the shutdown stopped
// did not fail: it leaves the last save's status as it was.
func (d *durability) saved(start time.Time, err error, background bool) {
	if errors.Is(err, errJobStopped) {
		d.mu.Lock()
		d.saving = false
		d.mu.Unlock()
		d.logger.Info("background save stopped by the shutdown; its temporary file is removed", "file", d.rdbPath())
		return
	}
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
}

// BackgroundRewriteAOF freezes a snapshot and starts a new AOF increment
// in one critical section, then writes the snapshot as the AOF's new base.
func (d *durability) BackgroundRewriteAOF(freeze func(during func()) *server.Snapshot) error {
	aof := d.wal.current()
	if aof == nil {
		if d.wal.turningOn() {
			return server.ErrRewriteInProgress
		}
		return server.ErrAOFDisabled
	}
	if aof.Rewriting() {
		return server.ErrRewriteInProgress
	}
	stop, err := d.startJob()
	if err != nil {
		return err
	}
	var seq int64
	var rerr error
	snap := freeze(func() { seq, rerr = aof.Rotate() })
	if rerr != nil {
		d.jobs.Done()
		if errors.Is(rerr, persistence.ErrRewriteInProgress) {
			return server.ErrRewriteInProgress
		}
		return rerr
	}
	d.logger.Info("background append only file rewriting started")
	go func() {
		backgroundThread()
		defer d.jobs.Done()
		defer snap.Close() // a rewrite that stops early must release the writers
		start := time.Now()
		err := aof.FinishRewrite(seq, func(w io.Writer) error { return d.writeRDB(stoppableWriter{w, stop}, snap, true) })
		if errors.Is(err, errJobStopped) {
			d.logger.Info("AOF rewrite stopped by the shutdown; the AOF stays as it was")
			return
		}
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
	if aof := d.wal.current(); aof != nil {
		st.AOFEnabled, st.Rewriting = true, aof.Rewriting()
		st.AOFBase, st.AOFSize = aof.Sizes()
	} else if d.wal.turningOn() {
		st.AOFEnabled, st.Rewriting = true, true
	}
	return st
}

// close flushes and closes; call it after the server stopped appending.
func (d *durability) close() error { return d.wal.close() }

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
		{Name: "aof_enabled", Value: boolInt(st.AOFEnabled)},
		{Name: "aof_rewrite_in_progress", Value: boolInt(st.Rewriting)},
		{Name: "aof_rewrite_scheduled", Value: 0},
		{Name: "aof_last_rewrite_time_sec", Value: d.lastRewriteSec},
		{Name: "aof_current_rewrite_time_sec", Value: -1},
		{Name: "aof_last_bgrewrite_status", Value: status[d.rewriteOK]},
		{Name: "aof_rewrites", Value: d.rewrites},
	}
	d.mu.Unlock()
	aof := d.wal.current()
	if aof == nil {
		return append(f, server.InfoField{Name: "aof_last_write_status", Value: status[d.wal.Err() == nil]})
	}
	as := aof.Stats()
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
