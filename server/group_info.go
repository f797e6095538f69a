package server

import (
	"fmt"

	"github.com/redstream/redstream/stream"
)

// XINFO GROUPS and XINFO CONSUMERS, and the groups part of XINFO STREAM
// FULL.

// writeReadCounter writes a group's entries-read, or null when unknown.
func writeReadCounter(x *Ctx, g *stream.Group) {
	if n := g.EntriesRead(); n != stream.InvalidEntriesRead {
		x.w.Int(n)
	} else {
		x.w.Null()
	}
}

// writeLag writes a group's lag, or null when it cannot be known.
func writeLag(x *Ctx, s *stream.Stream, g *stream.Group) {
	if lag, ok := s.Lag(g); ok {
		x.w.Int(lag)
	} else {
		x.w.Null()
	}
}

// xinfoGroupsCommand serves XINFO GROUPS key.
func xinfoGroupsCommand(x *Ctx) {
	s, ok := x.existingStream(x.argv[2])
	if !ok {
		return
	}
	x.w.Array(s.NumGroups())
	s.EachGroup(func(g *stream.Group) bool {
		x.w.Map(6 + policyInfoFields(g))
		x.w.BulkString("name")
		x.w.Bulk(g.Name())
		x.w.BulkString("consumers")
		x.w.Int(int64(g.NumConsumers()))
		x.w.BulkString("pending")
		x.w.Int(int64(g.Pending()))
		x.w.BulkString("last-delivered-id")
		writeID(x.w, g.LastID())
		x.w.BulkString("entries-read")
		writeReadCounter(x, g)
		x.w.BulkString("lag")
		writeLag(x, s, g)
		writePolicyInfo(x, g)
		return true
	})
}

// xinfoConsumersCommand serves XINFO CONSUMERS key group: idle counts
// from the last attempt to read or claim, inactive from the last success
// (-1 if none yet), both at the command's time.
func xinfoConsumersCommand(x *Ctx) {
	s, ok := x.existingStream(x.argv[2])
	if !ok {
		return
	}
	g := s.Group(x.argv[3])
	if g == nil {
		x.error(fmt.Sprintf(errNoGroupForKey, quoteArg(x.argv[3]), quoteArg(x.argv[2])))
		return
	}
	x.w.Array(g.NumConsumers())
	g.EachConsumer(func(c *stream.Consumer) bool {
		inactive := c.ActiveTime()
		if inactive != -1 {
			inactive = x.now - inactive
		}
		x.w.Map(4)
		x.w.BulkString("name")
		x.w.Bulk(c.Name())
		x.w.BulkString("pending")
		x.w.Int(int64(c.Pending()))
		x.w.BulkString("idle")
		x.w.Int(max(x.now-c.SeenTime(), 0))
		x.w.BulkString("inactive")
		x.w.Int(inactive)
		return true
	})
}

// writeFullGroups writes XINFO STREAM FULL's groups: each with its
// counters, its PEL and its consumers with theirs, the PELs cut at count
// entries (0: all).
func writeFullGroups(x *Ctx, s *stream.Stream, count int) {
	x.w.Array(s.NumGroups())
	s.EachGroup(func(g *stream.Group) bool {
		x.w.Map(8 + policyInfoFields(g))
		x.w.BulkString("name")
		x.w.Bulk(g.Name())
		x.w.BulkString("last-delivered-id")
		writeID(x.w, g.LastID())
		x.w.BulkString("entries-read")
		writeReadCounter(x, g)
		x.w.BulkString("lag")
		writeLag(x, s, g)
		x.w.BulkString("pel-count")
		x.w.Int(int64(g.Pending()))
		x.w.BulkString("nacked-count")
		x.w.Int(int64(g.Released()))
		writePolicyInfo(x, g)
		x.w.BulkString("pending")
		writeFullPEL(x, g, nil, count)
		x.w.BulkString("consumers")
		x.w.Array(g.NumConsumers())
		g.EachConsumer(func(c *stream.Consumer) bool {
			x.w.Map(5)
			x.w.BulkString("name")
			x.w.Bulk(c.Name())
			x.w.BulkString("seen-time")
			x.w.Int(c.SeenTime())
			x.w.BulkString("active-time")
			x.w.Int(c.ActiveTime())
			x.w.BulkString("pel-count")
			x.w.Int(int64(c.Pending()))
			x.w.BulkString("pending")
			writeFullPEL(x, g, c, count)
			return true
		})
		return true
	})
}

// writeFullPEL writes a PEL for XINFO STREAM FULL: the group's rows are
// [id, consumer, delivery time, deliveries] (a released entry has the
// empty name and time 0), a consumer's [id, delivery time, deliveries].
func writeFullPEL(x *Ctx, g *stream.Group, c *stream.Consumer, count int) {
	mark, n := x.w.Mark(), 0
	g.EachPending(c, stream.MinID, stream.MaxID, func(pe stream.PendingEntry) bool {
		if count > 0 && n >= count {
			return false
		}
		if c == nil {
			x.w.Array(4)
			writeID(x.w, pe.ID)
			if pe.Consumer != nil {
				x.w.Bulk(pe.Consumer.Name())
			} else {
				x.w.Bulk(nil)
			}
		} else {
			x.w.Array(3)
			writeID(x.w, pe.ID)
		}
		x.w.Int(pe.DeliveryTime)
		x.w.Int(pe.DeliveryCount)
		n++
		return true
	})
	x.w.InsertLen(mark, '*', n)
}
