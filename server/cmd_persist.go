package server

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redstream/redstream/resp"
)

var persistenceSpecs = []spec{
	{name: "save", arity: 1, flags: "admin noscript no_multi", group: "server", since: "1.0.0",
		summary: "Synchronously saves the database(s) to disk.", run: saveCommand},
	{name: "bgsave", arity: -1, flags: "admin noscript", group: "server", since: "1.0.0",
		syntax: "[SCHEDULE]", summary: "Asynchronously saves the database(s) to disk.", run: bgsaveCommand},
	{name: "lastsave", arity: 1, flags: "loading stale fast", group: "server", since: "1.0.0",
		summary: "Returns the Unix timestamp of the last successful save to disk.", run: lastsaveCommand},
	{name: "bgrewriteaof", arity: 1, flags: "admin noscript", group: "server", since: "1.0.0",
		summary: "Asynchronously rewrites the append-only file to disk.", run: bgrewriteaofCommand},
}

// Persister is the durability layer's side of SAVE, BGSAVE, BGREWRITEAOF,
// LASTSAVE, save points and auto-aof-rewrite: the server decides when
// (the policy is configuration, which lives here), the persister knows
// how. Its methods are called with the keyspace lock held: only Save may
// block (it blocks the server, as Redis's SAVE does).
type Persister interface {
	// Save writes snap as the RDB file and returns once it is durable.
	Save(snap *Snapshot) error
	// BackgroundSave writes snap as the RDB file in the background.
	BackgroundSave(snap *Snapshot) error
	// BackgroundRewriteAOF freezes a snapshot with freeze, starting a new
	// AOF increment in the same critical section, and writes it as the
	// new AOF base in the background.
	BackgroundRewriteAOF(freeze func(during func()) *Snapshot) error
	// Status reports saves and rewrites for LASTSAVE, INFO and the cron.
	Status() PersistStatus
	// BeginShutdown stops the background save or rewrite under way
	// (returning once it is gone, its temporary files with it) and
	// starts none until AbortShutdown: the shutdown's own save is then
	// the only writer of the RDB file, and nothing changes the AOF's
	// files after the server has stopped.
	BeginShutdown()
	// AbortShutdown allows background saves and rewrites again, after a
	// SHUTDOWN whose save failed.
	AbortShutdown()
	// StartAOF turns the AOF on (CONFIG SET appendonly yes) with
	// appendfsync policy: it freezes a snapshot with freeze and writes it
	// in the background as the new AOF's base, as a rewrite does; writes
	// are logged from the freeze on, and acknowledged once the AOF holds
	// them.
	StartAOF(policy string, freeze func(during func()) *Snapshot) error
	// StopAOF turns the AOF off (CONFIG SET appendonly no), once what it
	// holds is durable.
	StopAOF() error
	// SetAppendFsync changes the running AOF's appendfsync policy.
	SetAppendFsync(policy string) error
}

// PersistStatus is the state of saves and AOF rewrites.
type PersistStatus struct {
	Saving, Rewriting bool
	LastSave          time.Time // last successful RDB save (or load at startup)
	LastSaveOK        bool      // the last save attempt succeeded
	LastSaveTry       time.Time // last save attempt, successful or not
	AOFEnabled        bool
	AOFBase, AOFSize  int64 // for auto-aof-rewrite
}

// Errors a Persister returns for work already under way.
var (
	ErrSaveInProgress    = errors.New("Background save already in progress")
	ErrRewriteInProgress = errors.New("Background append only file rewriting already in progress")
	ErrAOFDisabled       = errors.New("AOF is disabled (appendonly no)")
)

// applyAOFConfig turns the AOF on or off and changes its fsync policy
// as next asks, for CONFIG SET. It returns the directive that could not
// be applied, and why. Lock should be held.
func (s *Server) applyAOFConfig(next *Config) (string, error) {
	cur, p := &s.cfg, s.persist
	if next.AppendOnly == cur.AppendOnly && (next.AppendFsync == cur.AppendFsync || !cur.AppendOnly) {
		return "", nil
	}
	if p == nil {
		return "appendonly", errors.New("no persistence configured")
	}
	switch {
	case next.AppendOnly && !cur.AppendOnly:
		if s.persistBusy(p.Status()) {
			return "appendonly", errors.New("a background save or AOF rewrite is in progress; try again once it is done")
		}
		err := p.StartAOF(next.AppendFsync, s.shard.FreezeLocked)
		if err != nil {
			s.shard.closeSnapshots() // frozen for an AOF that did not start
		}
		return "appendonly", err
	case !next.AppendOnly:
		return "appendonly", p.StopAOF()
	default:
		return "appendfsync", p.SetAppendFsync(next.AppendFsync)
	}
}

func saveCommand(x *Ctx) {
	p := x.s.persist
	if p == nil {
		x.error("ERR no persistence configured")
		return
	}
	if p.Status().Saving {
		x.error("ERR Background save already in progress")
		return
	}
	snap := x.s.shard.FreezeHeld()
	if err := p.Save(snap); err != nil {
		x.s.logger.Error("SAVE failed", "err", err)
		x.error("ERR")
		return
	}
	x.s.SavedLocked(snap)
	x.w.OK()
}

// One background job at a time, as Redis runs one child at a time: a
// BGSAVE asked during a rewrite (with SCHEDULE, or inside MULTI) and a
// BGREWRITEAOF asked during a save are scheduled, and the cron starts
// them when the running one is done. A snapshot is walked beside the
// server (snapshot.go); these take every database, and a database is
// walked by one snapshot at a time.

// persistBusy reports whether a background save or rewrite runs. Lock
// should be held.
func (s *Server) persistBusy(st PersistStatus) bool {
	return st.Saving || st.Rewriting || s.shard.snap != nil
}

// startBackgroundSave freezes a snapshot and hands it to the persister.
// Lock should be held.
func (s *Server) startBackgroundSave() error {
	snap := s.shard.FreezeLocked(nil)
	if err := s.persist.BackgroundSave(snap); err != nil {
		snap.closeLocked()
		return err
	}
	return nil
}

// startRewrite has the persister freeze a snapshot and rewrite the AOF
// from it. Lock should be held.
func (s *Server) startRewrite() error {
	err := s.persist.BackgroundRewriteAOF(s.shard.FreezeLocked)
	if err != nil {
		s.shard.closeSnapshots() // frozen for a rewrite that did not start
	}
	return err
}

func bgsaveCommand(x *Ctx) {
	p := x.s.persist
	schedule := len(x.argv) == 2 && strings.EqualFold(x.arg(1), "schedule")
	if len(x.argv) > 2 || (len(x.argv) == 2 && !schedule) {
		x.error(resp.ErrSyntax)
		return
	}
	if p == nil {
		x.error("ERR no persistence configured")
		return
	}
	st := p.Status()
	switch {
	case st.Saving:
		x.error("ERR Background save already in progress")
	case x.s.persistBusy(st) || x.inExec:
		if !schedule && !x.inExec {
			x.error("ERR Another child process is active (AOF?): can't BGSAVE right now. " +
				"Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
			return
		}
		x.s.bgsaveScheduled = true
		x.w.Status("Background saving scheduled")
	default:
		if err := x.s.startBackgroundSave(); err != nil {
			x.error("ERR " + err.Error())
			return
		}
		x.w.Status("Background saving started")
	}
}

func lastsaveCommand(x *Ctx) {
	if x.s.persist == nil {
		x.w.Int(x.s.started.Unix())
		return
	}
	x.w.Int(x.s.persist.Status().LastSave.Unix())
}

func bgrewriteaofCommand(x *Ctx) {
	p := x.s.persist
	if p == nil {
		x.error("ERR no persistence configured")
		return
	}
	st := p.Status()
	switch {
	case !st.AOFEnabled:
		x.error("ERR " + ErrAOFDisabled.Error())
	case st.Rewriting:
		x.error("ERR Background append only file rewriting already in progress")
	case x.s.persistBusy(st) || x.inExec:
		x.s.rewriteScheduled = true
		x.w.Status("Background append only file rewriting scheduled")
	default:
		if err := x.s.startRewrite(); err != nil {
			x.error("ERR " + err.Error())
			return
		}
		x.w.Status("Background append only file rewriting started")
	}
}

// savePoint is one "save <seconds> <changes>" rule.
type savePoint struct {
	seconds int64
	changes int64
}

// parseSavePoints parses the save directive ("3600 1 300 100", or "" for
// none).
func parseSavePoints(s string) ([]savePoint, bool) {
	words := strings.Fields(s)
	if len(words)%2 != 0 {
		return nil, false
	}
	var out []savePoint
	for i := 0; i < len(words); i += 2 {
		secs, err1 := strconv.ParseInt(words[i], 10, 64)
		changes, err2 := strconv.ParseInt(words[i+1], 10, 64)
		if err1 != nil || err2 != nil || secs < 1 || changes < 0 {
			return nil, false
		}
		out = append(out, savePoint{secs, changes})
	}
	return out, true
}

// persistCron applies the save points and auto-aof-rewrite, as Redis's
// serverCron does: a BGSAVE when enough changes are old enough (not
// sooner than 5 s after a failed one), an AOF rewrite when the AOF has
// grown enough past its last base. Lock should be held.
func (s *Server) persistCron(now time.Time) {
	p := s.persist
	if p == nil || s.stopping {
		return
	}
	st := p.Status()
	if s.persistBusy(st) {
		return
	}
	switch {
	case s.rewriteScheduled:
		s.rewriteScheduled = false
		s.logger.Info("starting the scheduled AOF rewrite")
		if err := s.startRewrite(); err != nil {
			s.logger.Warn("AOF rewrite did not start", "err", err)
		}
		return
	case s.bgsaveScheduled:
		s.bgsaveScheduled = false
		s.logger.Info("starting the scheduled background save")
		if err := s.startBackgroundSave(); err != nil {
			s.logger.Warn("background save did not start", "err", err)
		}
		return
	}
	if s.shard.dirty > 0 && (st.LastSaveOK || now.Sub(st.LastSaveTry) > 5*time.Second) {
		points, _ := parseSavePoints(s.cfg.Save)
		for _, sp := range points {
			if s.shard.dirty >= sp.changes && now.Sub(st.LastSave) >= time.Duration(sp.seconds)*time.Second {
				s.logger.Info("save point reached; saving in the background", "changes", s.shard.dirty, "seconds", sp.seconds)
				if err := s.startBackgroundSave(); err != nil {
					s.logger.Warn("background save did not start", "err", err)
				}
				return
			}
		}
	}
	if st.AOFEnabled && s.cfg.AutoAOFRewritePercentage > 0 && st.AOFSize > s.cfg.AutoAOFRewriteMinSize {
		base := max(st.AOFBase, 1)
		if growth := (st.AOFSize - base) * 100 / base; growth >= s.cfg.AutoAOFRewritePercentage {
			s.logger.Info("starting automatic AOF rewrite", "growth_percent", growth, "size", st.AOFSize)
			if err := s.startRewrite(); err != nil {
				s.logger.Warn("AOF rewrite did not start", "err", err)
			}
		}
	}
}
