package server

// writeOwn makes a write the server decides on by itself, outside any
// client's command: a delayed stream entry coming due, entries trimmed
// for their age. The write is an ordinary command (argv), so it is
// logged and replayed like a client's, at the record's time, and every
// node and every restart reach the same state (DESIGN principle 2).
//
// On a single node it runs now, is logged, and wakes the clients blocked
// on what it changed. In a cluster only the leader decides: it proposes
// the command, and every node applies it once it is committed; a
// follower does nothing (its leader will). Lock should be held.
func (s *Server) writeOwn(db int, argv ...[]byte) {
	if s.cluster != nil {
		if g := s.groupOfDB(db); g != nil && g.cl.Leading() {
			s.proposeOwn(g, argv...)
		}
		return
	}
	sh := s.shard
	cmd, _ := s.lookupCommand(argv)
	if cmd == nil || cmd.Flags&FlagWrite == 0 {
		panic("server: writeOwn of " + string(argv[0]) + ", not a write command")
	}
	sh.replayW.Reset()
	sh.replayW.Proto = 2
	x := &sh.replayCtx
	*x = Ctx{s: s, w: &sh.replayW, db: sh.dbs[db], argv: argv, cmd: cmd, now: sh.now()}
	cmd.Run(x)
	sh.recount()
	sh.propagate(x)
	s.serveReady()
	s.commit()
}
