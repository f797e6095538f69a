package server

import (
	"bytes"
	"time"

	"github.com/redstream/redstream/resp"
)

// lookupCommand finds the command argv names (the subcommand, for a
// container such as CLIENT) and checks its arity. When there is no such
// command, or the arity is wrong, errText is Redis's reply; with a wrong
// arity the command is returned too, so its rejected_calls can count it.
func (s *Server) lookupCommand(argv [][]byte) (cmd *Command, errText string) {
	cmd = lookupName(s.commands, argv[0])
	if cmd == nil {
		return nil, resp.UnknownCommand(argv)
	}
	if cmd.Sub != nil && len(argv) >= 2 {
		sub := lookupName(cmd.Sub, argv[1])
		if sub == nil {
			return nil, resp.UnknownSubcommand(cmd.Name, argv[1])
		}
		cmd = sub
	}
	n := len(argv)
	if (cmd.Arity > 0 && cmd.Arity != n) || n < -cmd.Arity {
		return cmd, resp.WrongArity(cmd.Name)
	}
	return cmd, ""
}

// lookupName finds a command by name in any case. The lower-cased copy
// lives in a stack buffer that never escapes, so the lookup — done for
// every command — allocates nothing.
func lookupName(table map[string]*Command, name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return table[string(bytes.ToLower(name))]
	}
	b := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return table[string(b)]
}

// isTxControl reports commands that run at once even inside MULTI.
func isTxControl(cmd *Command) bool {
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// process runs one request from c, honouring CLIENT REPLY OFF/SKIP for
// whatever it answers, refusals included. Lock should be held; the caller
// commits the log.
func (c *Client) process(argv [][]byte) {
	if c.awaiting > 0 && !c.proposable(argv) {
		c.stashed = cloneArgv(argv) // behind replies still to come (propose.go)
		return
	}
	mark := c.out.Mark()
	skip := !isClientReply(argv) && c.beginReplyMode()
	var marks []queueMark
	if skip {
		marks = c.s.queueMarks()
	}
	c.dispatch(argv)
	if skip {
		c.s.silenceSince(marks)
	}
	if skip && c.blocked == nil {
		c.out.Truncate(mark)
	}
}

func isClientReply(argv [][]byte) bool {
	return len(argv) >= 2 && bytes.EqualFold(argv[0], []byte("client")) && bytes.EqualFold(argv[1], []byte("reply"))
}

// dispatch makes the checks Redis's processCommand makes, then queues the
// command in MULTI or executes it, then serves the clients it unblocked.
func (c *Client) dispatch(argv [][]byte) {
	s := c.s
	if s.stopping {
		// The final save is taken: a command run now could be
		// acknowledged and then lost. Close without answering.
		c.quit = true
		return
	}
	if isHTTPProbe(argv[0]) {
		// Redis drops such a client without answering anything of its
		// pipeline: the replies waiting with this line go too.
		s.logger.Warn("possible cross-protocol attack: closing a client that sent an HTTP request", "addr", c.raddr)
		c.out.Reset()
		c.quit = true
		return
	}
	cmd, errText := s.lookupCommand(argv)
	start := time.Now() // one clock read serves the record time, idle time and stats
	c.lastInteraction = start
	if errText != "" {
		if cmd != nil {
			cmd.stat.rejected++
		}
		c.reject(errText)
		return
	}
	c.lastCmd = cmd
	if msg := s.refusal(c, cmd); msg != "" {
		c.reject(msg)
		cmd.stat.rejected++
		return
	}
	var g *clusterGroup // cluster mode: the group of the command's keys
	slot := -1
	if s.cluster != nil {
		var ok bool
		if slot, ok = c.sameSlot(cmd, argv); !ok {
			c.reject(errCrossSlot)
			cmd.stat.rejected++
			return
		}
		g = s.groupOfSlot(slot)
		if c.asking && cmd.Name != "asking" {
			// ASKING is for one command or, sent before MULTI, for the
			// transaction up to its EXEC or DISCARD, as in Redis: EXEC
			// picks its group then (txGroup).
			inTx := c.multi != nil || cmd.Name == "multi"
			if c.multi != nil && !isTxControl(cmd) {
				c.multi.asking = true
			} else if cmd.Name != "multi" {
				c.asking = false
			}
			if slot >= 0 && !inTx {
				// A client after -ASK, or a mover: a command meant for
				// the target must never reach the source, which may be
				// hosted here too (moves.go).
				if g = s.movingTo(slot); g == nil {
					c.reject(errNotMovingHere)
					cmd.stat.rejected++
					return
				}
			}
		}
	}
	if c.multi != nil && !isTxControl(cmd) {
		c.multi.queue(cmd, argv)
		c.reply().Status("QUEUED")
		return
	}
	if s.cluster != nil && c.routeInCluster(cmd, argv, g, slot, start) {
		return
	}
	x := c.newCtx(cmd, argv, start)
	if g != nil {
		x.db = s.shard.dbs[g.db+c.db] // the group's database (groups.go)
	}
	c.ranCommand = true
	s.execute(x, start)
	if x.blockKeys != nil {
		s.blockClient(c, x)
	}
	s.serveReady()
}

// refusal is why cmd may not run for c now (auth, memory, a failing log,
// MULTI), as Redis's error text, or "". Lock should be held.
func (s *Server) refusal(c *Client, cmd *Command) string {
	switch {
	case s.cfg.RequirePass != "" && !c.authed && cmd.Flags&FlagNoAuth == 0:
		return resp.ErrNoAuth
	case cmd.Flags&FlagDenyOOM != 0 && s.cfg.MaxMemory > 0 && s.usedMemory() > s.cfg.MaxMemory:
		// noeviction: refuse what would grow memory, keep serving the rest.
		return "OOM command not allowed when used memory > 'maxmemory'."
	case cmd.Flags&FlagWrite != 0 && s.shard.log != nil && s.shard.log.Err() != nil:
		// The log cannot take writes (e.g. the disk is full): refuse them
		// rather than acknowledge what cannot be made durable.
		return "MISCONF Errors writing to the AOF file: " + s.shard.log.Err().Error()
	case c.multi != nil && cmd.Flags&FlagNoMulti != 0:
		return "ERR Command not allowed inside a transaction"
	}
	return ""
}

// beginReplyMode reports whether the reply of the command about to run
// must be dropped (CLIENT REPLY OFF or SKIP). Lock should be held.
func (c *Client) beginReplyMode() bool {
	switch c.replyMode {
	case replyOff:
		return true
	case replySkipNext:
		c.replyMode = replySkipThis
		return true
	case replySkipThis:
		c.replyMode = replyOn
	}
	return false
}

// reject answers a request that failed the checks; inside MULTI it also
// dooms the transaction (EXECABORT), as in Redis. Lock should be held.
func (c *Client) reject(msg string) {
	if c.multi != nil {
		c.multi.aborted = true
	}
	c.s.stats.countError(msg)
	c.reply().Error(msg)
}

// newCtx prepares c's reusable context for one command. Lock should be
// held.
func (c *Client) newCtx(cmd *Command, argv [][]byte, start time.Time) *Ctx {
	x := &c.ctx
	*x = Ctx{s: c.s, c: c, w: c.reply(), db: c.s.shard.dbs[c.db], argv: argv, cmd: cmd, now: c.s.shard.nowFrom(start)}
	return x
}

// execute runs a command's handler, queues its write for the log and
// keeps the statistics. Every command — live, in EXEC, re-run for a
// blocked client, or replayed — runs through here. Lock should be held.
func (s *Server) execute(x *Ctx, start time.Time) {
	mark := x.w.Mark()
	x.cmd.Run(x)
	x.db.shard.recount()
	if x.cmd.Flags&FlagWrite != 0 {
		x.db.shard.propagate(x)
	}
	if (x.replay && !x.counted) || x.stillBlocked || x.blockKeys != nil {
		return // a blocking command counts once, when its wait ends
	}
	elapsed := time.Since(start)
	st := &x.cmd.stat
	st.calls++
	st.usec += elapsed.Microseconds()
	if out := x.w.Bytes(); len(out) > mark && out[mark] == '-' {
		st.failed++
		s.stats.countError(string(out[mark+1 : min(len(out), mark+40)]))
	}
	s.stats.commands++
	s.slowlog.record(s, x, elapsed)
}

// isHTTPProbe catches a browser or script speaking HTTP to the port (a
// cross-protocol attack); Redis drops such clients.
func isHTTPProbe(name []byte) bool {
	return bytes.EqualFold(name, []byte("host:")) || bytes.EqualFold(name, []byte("post"))
}
