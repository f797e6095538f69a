package server

import "github.com/redstream/redstream/resp"

// await answers c's command from work, which runs off the loop without
// the keyspace lock: for what waits on the network or another node (a
// Raft membership change). c runs nothing else until the answer is
// written, so its replies stay in order; the loop serves everyone else
// meanwhile. work returns what writes the reply, run under the lock.
// Lock should be held.
func (c *Client) await(work func() (reply func(w *resp.Writer))) {
	c.awaiting++
	c.awaitingOther++
	s := c.s
	go func() {
		reply := work()
		s.shard.mu.Lock()
		defer s.shard.mu.Unlock()
		c.awaiting--
		c.awaitingOther--
		if c.fd < 0 {
			return // gone meanwhile: nobody to answer
		}
		reply(c.reply())
		c.answered()
	}()
}

// answered queues what was just written to c to go out, and its input
// to run, from outside a pass of the loop. Lock should be held.
func (c *Client) answered() {
	c.ranCommand = true
	c.s.loop.markDirty(c)
	if c.awaiting == 0 {
		c.s.loop.markRunnable(c)
	}
}
