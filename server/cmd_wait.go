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
// Alone, a node has none. In a cluster, the leader of the group the
// connection last wrote to (the first group if it wrote nothing) counts
// the followers whose Raft logs hold every entry it had applied when
// WAIT came (and so every write this connection was answered; an index
// taken later would chase other clients' writes under load). When
// numreplicas asks for more, it waits until that many do or the timeout
// passes (0: until the client goes), as Redis waits for its replicas'
// acknowledgements.
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
	cl := x.s.cluster
	if x.c != nil && x.c.proposingTo != nil {
		cl = x.c.proposingTo.cl // the group its last write went to (groups.go)
	}
	var applied uint64
	if cl != nil {
		applied = cl.Status().AppliedIndex
	}
	replicas := func() int64 {
		if cl == nil {
			return 0
		}
		return int64(cl.Replicas(applied))
	}
	have := replicas()
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
		var poll <-chan time.Time
		if cl != nil { // a follower's acknowledgement is not an event here: look every millisecond
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			poll = t.C
		}
		for {
			select {
			case <-timeout:
				return func(w *resp.Writer) { w.Int(replicas()) }
			case <-c.gone:
				return func(w *resp.Writer) { w.Int(have) }
			case <-poll:
				if n := replicas(); n >= want {
					return func(w *resp.Writer) { w.Int(n) }
				}
			}
		}
	})
}
