package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/redstream/redstream/resp"
)

// slowlog keeps the most recent commands slower than
// slowlog-log-slower-than, newest first, as Redis's SLOWLOG does.
type slowlog struct {
	entries []slowEntry // newest first
	nextID  int64
}

type slowEntry struct {
	id     int64
	unix   int64 // seconds
	micros int64
	argv   []string
	addr   string
	name   string
}

// Redis keeps at most 32 arguments of at most 128 bytes each per entry.
const (
	slowlogMaxArgc = 32
	slowlogMaxArg  = 128
)

func (l *slowlog) init() { l.entries = nil }

// record adds x's command if it was slow enough. Lock should be held.
func (l *slowlog) record(s *Server, x *Ctx, elapsed time.Duration) {
	limit := s.cfg.SlowlogSlowerThan
	if limit < 0 || x.cmd.Flags&FlagSkipSlowlog != 0 || elapsed.Microseconds() < limit {
		return
	}
	e := slowEntry{id: l.nextID, unix: x.now / 1000, micros: elapsed.Microseconds()}
	l.nextID++
	secret := secretArgs(x.cmd.Name, x.argv)
	for i, a := range x.argv {
		if secret[i] {
			e.argv = append(e.argv, "(redacted)")
			continue
		}
		if i == slowlogMaxArgc-1 && len(x.argv) > slowlogMaxArgc {
			e.argv = append(e.argv, fmt.Sprintf("... (%d more arguments)", len(x.argv)-i))
			break
		}
		if len(a) > slowlogMaxArg {
			e.argv = append(e.argv, fmt.Sprintf("%s... (%d more bytes)", a[:slowlogMaxArg], len(a)-slowlogMaxArg))
		} else {
			e.argv = append(e.argv, string(a))
		}
	}
	if x.c != nil {
		e.addr, e.name = x.c.raddr, x.c.name
	}
	l.entries = append([]slowEntry{e}, l.entries...)
	if max := s.cfg.SlowlogMaxLen; len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

// secretArgs marks the arguments that carry passwords, which Redis never
// shows in the slow log: AUTH's, HELLO's AUTH pair, CONFIG SET
// requirepass's value.
func secretArgs(cmd string, argv [][]byte) map[int]bool {
	secret := map[int]bool{}
	switch cmd {
	case "auth":
		for i := 1; i < len(argv); i++ {
			secret[i] = true
		}
	case "hello":
		for i := 2; i+2 < len(argv); i++ {
			if strings.EqualFold(string(argv[i]), "auth") {
				secret[i+1], secret[i+2] = true, true
			}
		}
	case "config|set":
		for i := 2; i+1 < len(argv); i += 2 {
			if strings.EqualFold(string(argv[i]), "requirepass") {
				secret[i+1] = true
			}
		}
	}
	return secret
}

func (l *slowlog) len() int { return len(l.entries) }

func (l *slowlog) reset() { l.entries = nil }

// write replies with the newest count entries.
func (l *slowlog) write(w *resp.Writer, count int) {
	n := min(count, len(l.entries))
	w.Array(n)
	for _, e := range l.entries[:n] {
		w.Array(6)
		w.Int(e.id)
		w.Int(e.unix)
		w.Int(e.micros)
		w.Array(len(e.argv))
		for _, a := range e.argv {
			w.BulkString(a)
		}
		w.BulkString(e.addr)
		w.BulkString(e.name)
	}
}
