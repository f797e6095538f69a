package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// xinfoStreamCommand serves XINFO STREAM key [FULL [COUNT n]]: the
// summary, or with FULL the entries (the first COUNT, default 10, 0 for
// all) and the consumer groups with their PELs (cut at COUNT too).
func xinfoStreamCommand(x *Ctx) {
	s, ok := x.existingStream(x.argv[2])
	if !ok {
		return
	}
	full, count, ok := parseXInfoStream(x)
	if !ok {
		return
	}
	if full {
		writeXInfoFull(x, s, count)
		return
	}
	x.w.Map(16 + retentionFields(s) + delayInfoFields(s))
	writeStreamCounters(x, s)
	x.w.BulkString("groups")
	x.w.Int(int64(s.NumGroups()))
	x.w.BulkString("first-entry")
	writeEdgeEntry(x, s, false)
	x.w.BulkString("last-entry")
	writeEdgeEntry(x, s, true)
}

// writeXInfoFull writes XINFO STREAM FULL: the counters, the first count
// entries (0: all) and the consumer groups.
func writeXInfoFull(x *Ctx, s *stream.Stream, count int) {
	x.w.Map(15 + retentionFields(s) + delayInfoFields(s))
	writeStreamCounters(x, s)
	x.w.BulkString("entries")
	mark, n := x.w.Mark(), 0
	it := s.Range(stream.MinID, stream.MaxID, false)
	for ; (count == 0 || n < count) && it.Next(); n++ {
		writeEntry(x.w, it)
	}
	it.Close()
	x.w.InsertLen(mark, '*', n)
	x.w.BulkString("groups")
	writeFullGroups(x, s, count)
}

// parseXInfoStream parses [FULL [COUNT n]]; a negative count means the
// default, 10.
func parseXInfoStream(x *Ctx) (full bool, count int, ok bool) {
	opts := x.argv[3:]
	if len(opts) == 0 {
		return false, 0, true
	}
	if (len(opts) != 1 && len(opts) != 3) || !eqFold(opts[0], "full") || (len(opts) == 3 && !eqFold(opts[1], "count")) {
		x.error(fmt.Sprintf(errXInfoSubcommand, clipArg(x.argv[1])))
		return false, 0, false
	}
	count = 10
	if len(opts) == 3 {
		n, isInt := resp.ParseInt(opts[2])
		if !isInt {
			x.error(resp.ErrNotInteger)
			return false, 0, false
		}
		if n >= 0 {
			count = int(min(n, 1<<31-1))
		}
	}
	return true, count, true
}

func clipArg(b []byte) []byte {
	if len(b) > 128 {
		return b[:128]
	}
	return b
}

// writeStreamCounters writes the fields the summary and FULL share,
// Redis 8.6's IDMP figures included, and the age limit when there is one.
func writeStreamCounters(x *Ctx, s *stream.Stream) {
	w := x.w
	w.BulkString("length")
	w.Int(int64(s.Len()))
	w.BulkString("radix-tree-keys")
	w.Int(int64(s.Nodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(int64(s.RadixNodes()))
	w.BulkString("last-generated-id")
	writeID(w, s.LastID())
	w.BulkString("max-deleted-entry-id")
	writeID(w, s.MaxDeletedID())
	w.BulkString("entries-added")
	w.Int(int64(s.EntriesAdded()))
	w.BulkString("recorded-first-entry-id")
	writeID(w, s.FirstID())
	st := s.IDMPStats(x.now)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"idmp-duration", st.Duration}, {"idmp-maxsize", st.MaxSize}, {"pids-tracked", int64(st.PIDs)},
		{"iids-tracked", int64(st.IIDs)}, {"iids-added", int64(st.Added)}, {"iids-duplicates", int64(st.Duplicates)},
	} {
		w.BulkString(f.name)
		w.Int(f.v)
	}
	if r := s.Retention(); r.MaxAge > 0 {
		w.BulkString("max-age")
		w.Int(r.MaxAge)
		w.BulkString("max-age-mode")
		w.BulkString(strings.ToLower(refPolicyName(r.Refs)))
	}
	writeDelayInfo(w, s)
}

// retentionFields is how many fields the age limit adds to XINFO STREAM:
// none without one, so a Redis client's reply is Redis's.
func retentionFields(s *stream.Stream) int {
	if s.Retention().MaxAge > 0 {
		return 2
	}
	return 0
}

// writeEdgeEntry writes the first (or last) live entry, or a null.
func writeEdgeEntry(x *Ctx, s *stream.Stream, last bool) {
	it := s.Range(stream.MinID, stream.MaxID, last)
	if !it.Next() {
		x.w.Null()
		return
	}
	writeEntry(x.w, it)
	it.Close()
}

func xinfoHelpCommand(x *Ctx) {
	writeHelp(x.w, "XINFO", []string{
		"CONSUMERS <key> <groupname>", "    Show consumers of <groupname>.",
		"GROUPS <key>", "    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]", "    Show information about the stream.",
	})
}

// xsetidCommand serves XSETID key last-id [ENTRIESADDED n]
// [MAXDELETEDID id]. Options are checked before the key, as in Redis.
func xsetidCommand(x *Ctx) {
	last, ok := parseStrictID(x, x.argv[2])
	if !ok {
		return
	}
	added, maxDel, ok := parseXSetIDOptions(x, last)
	if !ok {
		return
	}
	key := x.argv[1]
	s, ok := x.existingStream(key)
	if !ok {
		return
	}
	switch err := s.SetID(last, added, maxDel); {
	case errors.Is(err, stream.ErrSetIDBelowMaxDeleted):
		x.error(errXSetIDMaxDel)
	case errors.Is(err, stream.ErrSetIDBelowTop):
		x.error(errXSetIDTop)
	case errors.Is(err, stream.ErrEntriesAddedBelowLength):
		x.error(errXSetIDLength)
	default:
		x.modified(key)
		x.w.OK()
	}
}

func parseXSetIDOptions(x *Ctx, last stream.ID) (added int64, maxDel stream.ID, ok bool) {
	added = -1
	for i := 3; i < len(x.argv); i += 2 {
		if i+1 >= len(x.argv) {
			x.error(resp.ErrSyntax)
			return 0, maxDel, false
		}
		switch arg := x.argv[i+1]; {
		case eqFold(x.argv[i], "entriesadded"):
			n, isInt := resp.ParseInt(arg)
			if !isInt {
				x.error(resp.ErrNotInteger)
				return 0, maxDel, false
			}
			if n < 0 {
				x.error(errXSetIDAdded)
				return 0, maxDel, false
			}
			added = n
		case eqFold(x.argv[i], "maxdeletedid"):
			if maxDel, ok = parseStrictID(x, arg); !ok {
				return 0, maxDel, false
			}
			if last.Less(maxDel) {
				x.error(errXSetIDMaxDelArg)
				return 0, maxDel, false
			}
		default:
			x.error(resp.ErrSyntax)
			return 0, maxDel, false
		}
	}
	return added, maxDel, true
}

// xcfgsetCommand serves XCFGSET key [IDMP-DURATION s] [IDMP-MAXSIZE n]
// (Redis 8.6) [MAXAGE ms [KEEPREF|DELREF|ACKED]] (ours: age retention,
// retention.go). A change of either IDMP value forgets every remembered
// iid. Setting an age limit trims nothing by itself: the next XADD or
// the sweeper does.
func xcfgsetCommand(x *Ctx) {
	a, ok := parseXCfgSet(x)
	if !ok {
		return
	}
	key := x.argv[1]
	s, ok := x.existingStream(key)
	if !ok {
		return
	}
	changed := s.SetIDMPConfig(a.duration, a.maxSize)
	if a.retention != nil && s.SetRetention(*a.retention) {
		changed = true
		x.db.trackAged(string(key), x.db.keys[string(key)])
	}
	if changed {
		x.modified(key)
	}
	x.w.OK()
}

// xcfgsetArgs are XCFGSET's options; zero IDMP values keep the current
// ones, and a nil retention leaves the age limit as it is.
type xcfgsetArgs struct {
	duration, maxSize int64
	retention         *stream.Retention
}

func parseXCfgSet(x *Ctx) (a xcfgsetArgs, ok bool) {
	if len(x.argv) == 2 {
		x.error(errXCfgSetNothing)
		return a, false
	}
	for i := 2; i < len(x.argv); i += 2 {
		isDuration, isMaxAge := eqFold(x.argv[i], "idmp-duration"), eqFold(x.argv[i], "maxage")
		if (!isDuration && !isMaxAge && !eqFold(x.argv[i], "idmp-maxsize")) || i+1 >= len(x.argv) {
			x.error(resp.ErrSyntax)
			return a, false
		}
		n, isInt := resp.ParseInt(x.argv[i+1])
		switch {
		case !isInt:
			x.error(resp.ErrNotInteger)
			return a, false
		case isMaxAge && n < 0:
			x.error(errXCfgSetMaxAge)
			return a, false
		case isMaxAge:
			r := stream.Retention{MaxAge: n}
			if i+2 < len(x.argv) && isRefPolicyWord(x.argv[i+2]) {
				r.Refs = refPolicy(x.argv[i+2])
				i++
			}
			a.retention = &r
		case isDuration && (n < 1 || n > stream.MaxIDMPDuration):
			x.error(errXCfgSetDuration)
			return a, false
		case !isDuration && (n < 1 || n > stream.MaxIDMPMaxSize):
			x.error(errXCfgSetMaxSize)
			return a, false
		case isDuration:
			a.duration = n
		default:
			a.maxSize = n
		}
	}
	return a, true
}
