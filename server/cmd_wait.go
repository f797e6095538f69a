package server

import (
	"slices"
	"time"

	"github.com/redstream/redstream/resp"
)

var waitSpecs = []spec{
	{name: "wait", arity: 3, flags: "noscript", group: "generic", since: "3.0.0",
		syntax: "numreplicas timeout", summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", run: waitCommand},
}

// waitCommand answers how many replicas hold the connection's writes.
// Alone, a node has none. In a cluster, for each group the connection
// has written to and this node still leads (the first group if none),
// the leader counts the followers whose Raft logs hold every entry it
// had applied when WAIT came (and so every write this connection was
// answered; an index taken later would chase other clients' writes under
// load); the answer is the smallest count, the replicas that hold the
// writes in every group. A group this node no longer leads is left out:
// its new leader holds those writes and knows their replicas. When
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
	type written struct {
		cl      Cluster
		applied uint64
	}
	var groups []written
	if x.c != nil {
		for _, g := range x.c.wroteTo {
			if g.cl.Leading() {
				groups = append(groups, written{g.cl, g.cl.Status().AppliedIndex})
			}
		}
	}
	if cl := x.s.cluster; len(groups) == 0 && cl != nil {
		groups = append(groups, written{cl, cl.Status().AppliedIndex})
	}
	replicas := func() int64 {
		n := -1
		for _, g := range groups {
			if r := g.cl.Replicas(g.applied); n < 0 || r < n {
				n = r
			}
		}
		return int64(max(n, 0))
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
		if len(groups) > 0 { // a follower's acknowledgement is not an event here: look every millisecond
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

// wrote notes that c sent a write to g (wroteTo). Lock should be held.
func (c *Client) wrote(g *clusterGroup) {
	if !slices.Contains(c.wroteTo, g) {
		c.wroteTo = append(c.wroteTo, g)
	}
}
