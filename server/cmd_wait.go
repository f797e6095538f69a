package server

import (
	"time"

	"github.com/redstream/redstream/resp"
)

var waitSpecs = []spec{
	{name: "wait", arity: 3, flags: "noscript", group: "generic", since: "3.0.0",
		syntax: "numreplicas timeout", summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", run: waitCommand},
}

// waitCommand answers how many replicas hold the connection's writes.
// Alone, a node has none. In a group, every write this connection was
// answered has been committed, so a majority holds it: the leader and
// at least half the followers, which is what it answers (hashicorp/raft
// does not show a leader each follower's match index, so it cannot count
// more). When numreplicas asks for more, it waits out the timeout first,
// as Redis does when too few replicas answer (0: until the client goes).
func waitCommand(x *Ctx) {
	want, ok := resp.ParseInt(x.argv[1])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	ms, ok := resp.ParseInt(x.argv[2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	if ms < 0 {
		x.error(resp.ErrTimeoutNegative)
		return
	}
	have := int64(0)
	if cl := x.s.cluster; cl != nil {
		have = int64(len(cl.Members()) / 2)
	}
	if want <= have || x.c == nil || !x.mayBlock() {
		x.w.Int(have)
		return
	}
	c := x.c
	x.c.await(func() func(w *resp.Writer) {
		var timeout <-chan time.Time
		if ms > 0 {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-timeout:
		case <-c.gone:
		}
		return func(w *resp.Writer) { w.Int(have) }
	})
}
