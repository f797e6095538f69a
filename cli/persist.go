package cli

import (
	"log/slog"
	"path/filepath"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// durability is the persistence layer cli plugs into the server: the AOF
// when appendonly is on.
type durability struct {
	cfg    server.Config
	aof    *persistence.AOF
	logger *slog.Logger
	loaded time.Time
}

// openDurability opens the AOF (without loading it yet).
func openDurability(cfg server.Config, logger *slog.Logger) (*durability, error) {
	d := &durability{cfg: cfg, logger: logger}
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

// load replays what is on disk into srv and starts accepting appends.
func (d *durability) load(srv *server.Server) error {
	defer func() { d.loaded = time.Now() }()
	if d.aof == nil {
		return nil
	}
	if _, err := d.aof.Load(nil, srv.Apply); err != nil {
		return err
	}
	return d.aof.Start()
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
	f := []server.InfoField{
		{Name: "rdb_bgsave_in_progress", Value: 0},
		{Name: "rdb_last_save_time", Value: d.loaded.Unix()},
		{Name: "rdb_last_bgsave_status", Value: "ok"},
		{Name: "rdb_last_bgsave_time_sec", Value: -1},
		{Name: "rdb_current_bgsave_time_sec", Value: -1},
		{Name: "rdb_saves", Value: 0},
		{Name: "aof_enabled", Value: boolInt(d.aof != nil)},
		{Name: "aof_rewrite_in_progress", Value: 0},
		{Name: "aof_rewrite_scheduled", Value: 0},
		{Name: "aof_last_rewrite_time_sec", Value: -1},
		{Name: "aof_current_rewrite_time_sec", Value: -1},
		{Name: "aof_last_bgrewrite_status", Value: "ok"},
		{Name: "aof_rewrites", Value: 0},
	}
	status := "ok"
	if d.aof != nil {
		st := d.aof.Stats()
		if !st.LastWriteOK {
			status = "err"
		}
		f = append(f,
			server.InfoField{Name: "aof_last_write_status", Value: status},
			server.InfoField{Name: "aof_current_size", Value: st.CurrentSize},
			server.InfoField{Name: "aof_base_size", Value: st.BaseSize},
			server.InfoField{Name: "aof_delayed_fsync", Value: st.DelayedFsyncs})
		return f
	}
	return append(f, server.InfoField{Name: "aof_last_write_status", Value: status})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
