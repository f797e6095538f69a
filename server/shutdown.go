package server

// Stopping the server, as Redis's prepareForShutdown does: background
// jobs are stopped first, so the final save is the only writer of the RDB
// file; the final save runs with the lock held, so no write lands after
// it; and from the same hold of the lock on, no command runs, so nothing
// is acknowledged that the save (or the AOF's close) does not hold.

// Shutdown prepares the server to stop on a signal: it stops background
// saves and rewrites, saves when save is set, and runs no command from
// then on. The caller then calls Close. It stops even when the save
// fails, and returns that error so the process can exit non-zero.
func (s *Server) Shutdown(save bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.finalSave(save)
	s.stopping = true
	return err
}

// shutdownLocked is SHUTDOWN's part of Shutdown: when the save fails and
// force is not set, it changes nothing (background jobs may start again)
// and reports false. Lock should be held.
func (s *Server) shutdownLocked(save, force bool) bool {
	if err := s.finalSave(save); err != nil && !force {
		s.persist.AbortShutdown()
		return false
	}
	s.stopping = true
	return true
}

// finalSave stops background persistence and, when save is set, writes
// the RDB file. Lock should be held.
func (s *Server) finalSave(save bool) error {
	p := s.persist
	if p == nil {
		return nil
	}
	p.BeginShutdown()
	if !save {
		return nil
	}
	snap := s.FreezeLocked(nil)
	if err := p.Save(snap); err != nil {
		s.logger.Error("error trying to save the DB before shutting down", "err", err)
		return err
	}
	s.SavedLocked(snap)
	return nil
}

// SaveOnShutdown reports whether save points are configured: then a
// signal's shutdown saves first, as Redis's does.
func (s *Server) SaveOnShutdown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	points, _ := parseSavePoints(s.cfg.Save)
	return len(points) > 0
}

// SetLog plugs in the log that makes writes durable. cli opens the AOF
// only after Listen has bound the listeners (nothing in the data
// directory is touched by a server that cannot serve), so the log comes
// after New; it must come before Load or Apply and before Serve.
func (s *Server) SetLog(l Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l
}
