package server

import (
	"github.com/redstream/redstream/resp"
	"time"
)

var transactionSpecs = []spec{
	{name: "multi", arity: 1, flags: "noscript loading stale fast allow_busy", group: "transactions", since: "1.2.0",
		summary: "Starts a transaction.", run: multiCommand},
	{name: "exec", arity: 1, flags: "noscript loading stale skip_slowlog", group: "transactions", since: "1.2.0",
		summary: "Executes all commands in a transaction.", run: execCommand},
	{name: "discard", arity: 1, flags: "noscript loading stale fast allow_busy", group: "transactions", since: "2.0.0",
		summary: "Discards a transaction.", run: discardCommand},
	{name: "watch", arity: -2, flags: "noscript loading stale fast allow_busy", first: 1, last: -1, step: 1, group: "transactions", since: "2.2.0",
		syntax: "key [key ...]", summary: "Monitors changes to keys to determine the execution of a transaction.", run: watchCommand},
	{name: "unwatch", arity: 1, flags: "noscript loading stale fast allow_busy", group: "transactions", since: "2.2.0",
		summary: "Forgets about watched keys of a transaction.", run: unwatchCommand},
}

// txState is a client's open MULTI: the queued commands and whether a
// queueing error doomed it.
type txState struct {
	cmds    []queuedCmd
	aborted bool
	// slot is where the keys queued so far hash, plus one (0: no keys
	// yet); in cluster mode all of them must share it (cluster.go).
	slot int
	// asking: ASKING came before MULTI, and holds to EXEC, as in Redis:
	// the transaction runs in the group its slot is moving to (moves.go).
	asking bool
}

type queuedCmd struct {
	cmd  *Command
	argv [][]byte
}

// queue adds a command to the transaction; argv is copied because the
// reader's buffer moves on.
func (t *txState) queue(cmd *Command, argv [][]byte) {
	t.cmds = append(t.cmds, queuedCmd{cmd: cmd, argv: cloneArgv(argv)})
}

// watchedKey is one WATCHed key of a client.
type watchedKey struct {
	db             int
	key            string
	expiredAtWatch bool // it had already expired when WATCHed
}

func multiCommand(x *Ctx) {
	if x.c.multi != nil {
		x.error(resp.ErrNestedMulti)
		return
	}
	x.c.multi = &txState{}
	x.w.OK()
}

func discardCommand(x *Ctx) {
	if x.c.multi == nil {
		x.error(resp.ErrDiscardNoMulti)
		return
	}
	x.c.multi = nil
	x.s.unwatchAll(x.c)
	x.w.OK()
}

// execCommand runs the queued commands as one atomic step: they share one
// time, their replies form one array, and their log records go to the log
// in one Append, so replay applies all of them or none.
func execCommand(x *Ctx) {
	c, s := x.c, x.s
	tx := c.multi
	switch {
	case tx == nil:
		x.error(resp.ErrExecNoMulti)
		return
	case tx.aborted:
		c.multi = nil
		s.unwatchAll(c)
		x.error(resp.ErrExecAbort)
		return
	}
	c.multi = nil
	if c.casDirty || s.watchedKeyExpired(c, x.now) {
		s.unwatchAll(c)
		x.w.NullArray()
		return
	}
	s.unwatchAll(c)
	x.w.Array(len(tx.cmds))
	for _, q := range tx.cmds {
		inner := Ctx{s: s, c: c, w: x.w, db: x.db, argv: q.argv, cmd: q.cmd, now: x.now, inExec: true}
		s.execute(&inner, time.Now())
	}
}

func watchCommand(x *Ctx) {
	if x.c.multi != nil {
		x.error(resp.ErrWatchInMulti)
		return
	}
	for _, key := range x.argv[1:] {
		x.s.watch(x.c, x.db, string(key), x.now)
	}
	x.w.OK()
}

func unwatchCommand(x *Ctx) {
	x.s.unwatchAll(x.c)
	x.w.OK()
}

// watch adds key to c's watched keys. Lock should be held.
func (s *Server) watch(c *Client, db *DB, key string, now int64) {
	for _, w := range c.watching {
		if w.db == db.index && w.key == key {
			return
		}
	}
	o := db.keys[key]
	expired := o != nil && o.expireAt != 0 && o.expireAt <= now
	c.watching = append(c.watching, watchedKey{db: db.index, key: key, expiredAtWatch: expired})
	db.watchers[key] = append(db.watchers[key], c)
}

// unwatchAll forgets every key c watches and clears its CAS flag. Lock
// should be held.
func (s *Server) unwatchAll(c *Client) {
	for _, w := range c.watching {
		db := s.shard.dbs[w.db]
		list := db.watchers[w.key]
		for i, other := range list {
			if other == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(db.watchers, w.key)
		} else {
			db.watchers[w.key] = list
		}
	}
	c.watching = nil
	c.casDirty = false
}

// touchWatched marks every client watching key as doomed. Lock should be
// held.
func (s *Server) touchWatched(db *DB, key []byte) {
	if len(db.watchers) == 0 {
		return
	}
	for _, c := range db.watchers[string(key)] {
		c.casDirty = true
	}
}

// touchWatchedByExpiry is touchWatched for a key deleted by expiry: a
// client that WATCHed it after it had already expired is not doomed by
// its removal. Lock should be held.
func (s *Server) touchWatchedByExpiry(db *DB, key string) {
	if len(db.watchers) == 0 {
		return
	}
	for _, c := range db.watchers[key] {
		for _, w := range c.watching {
			if w.db == db.index && w.key == key && !w.expiredAtWatch {
				c.casDirty = true
			}
		}
	}
}

// touchAllWatched dooms clients watching any existing key of db (FLUSHDB,
// FLUSHALL). Lock should be held.
func (s *Server) touchAllWatched(db *DB) {
	for key, clients := range db.watchers {
		if _, ok := db.keys[key]; ok {
			for _, c := range clients {
				c.casDirty = true
			}
		}
	}
}

// watchedKeyExpired reports whether a watched key that was alive at WATCH
// time has expired since, which makes EXEC fail as in Redis. Lock should
// be held.
func (s *Server) watchedKeyExpired(c *Client, now int64) bool {
	for _, w := range c.watching {
		if w.expiredAtWatch {
			continue
		}
		if o := s.shard.dbs[w.db].keys[w.key]; o != nil && o.expireAt != 0 && o.expireAt <= now {
			return true
		}
	}
	return false
}
