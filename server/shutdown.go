package server

// Stopping the server, as Redis's prepareForShutdown does: background
// jobs are stopped first, so the final save is the only writer of the RDB
// file; the final save runs with the lock held, so no write lands after
// it; and from the same hold of the lock on, no command runs, so nothing
// is acknowledged that the save (or the AOF's close) does not hold.
//
// Stopping the background jobs waits for them, and a background save's
// walk takes the lock a chunk at a time (snapshot.go): so that wait is
// made without the lock. SHUTDOWN therefore does its work after its batch
// has let the lock go (Client.shutdownNow), not in its handler.

// shutdownRequest is a SHUTDOWN waiting to be carried out.
type shutdownRequest struct {
	save, force bool
}

// Shutdown prepares the server to stop on a signal: it stops background
// saves and rewrites, saves when save is set, and runs no command from
// then on. The caller then calls Close. It stops even when the save
// fails, and returns that error so the process can exit non-zero.
func (s *Server) Shutdown(save bool) error {
	if s.persist != nil {
		s.persist.BeginShutdown()
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	err := s.finalSave(save)
	s.stopping = true
	return err
}

// shutdownNow carries out c's SHUTDOWN: when the save fails and FORCE
// was not given, nothing changes (background jobs may start again) and
// c gets Redis's error; otherwise the server stops running commands, the
// owner is told to stop it, and c is closed.
func (c *Client) shutdownNow() {
	req, s := c.shutdown, c.s
	c.shutdown = nil
	if s.persist != nil {
		s.persist.BeginShutdown()
	}
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	s.logger.Warn("user requested shutdown", "client", c.raddr) // before the save it causes, as in Redis
	if err := s.finalSave(req.save); err != nil && !req.force {
		s.persist.AbortShutdown()
		s.logger.Warn("shutdown cancelled: the final save failed (SHUTDOWN FORCE stops anyway)", "client", c.raddr)
		c.out.Error("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	s.stopping = true
	select {
	case s.shutdownBy <- "SHUTDOWN command from " + c.raddr:
	default:
	}
	c.quit = true
}

// finalSave writes the RDB file, when save is set, from the keyspace as
// it is: the lock is held from the snapshot to the end of the file. Lock
// should be held, and background jobs stopped.
func (s *Server) finalSave(save bool) error {
	if !save || s.persist == nil {
		return nil
	}
	s.logger.Info("saving the final RDB snapshot before exiting")
	snap := s.shard.FreezeHeld()
	if err := s.persist.Save(snap); err != nil {
		s.logger.Error("error trying to save the DB before shutting down", "err", err)
		return err
	}
	s.SavedLocked(snap)
	return nil
}

// SaveOnShutdown reports whether save points are configured: then a
// signal's shutdown saves first, as Redis's does.
func (s *Server) SaveOnShutdown() bool {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	points, _ := parseSavePoints(s.cfg.Save)
	return len(points) > 0
}

// SetLog plugs in the log that makes writes durable. cli opens the AOF
// only after Listen has bound the listeners (nothing in the data
// directory is touched by a server that cannot serve), so the log comes
// after New; it must come before Load or Apply and before Serve.
func (s *Server) SetLog(l Log) {
	s.shard.mu.Lock()
	defer s.shard.mu.Unlock()
	s.shard.log = l
}
