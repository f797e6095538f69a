package server

import (
	"errors"
	"fmt"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// Consumer groups: XGROUP, XREADGROUP (group_read.go), XACK, XACKDEL,
// XNACK, XPENDING, XCLAIM, XAUTOCLAIM (group_claim.go) and XINFO GROUPS /
// CONSUMERS (group_info.go). Every time a command stores (a delivery, a
// claim, a consumer's seen time) is x.now, the record's clock, so that a
// replayed log rebuilds the same PELs.

var groupSpecs = []spec{
	{name: "xgroup", arity: -2, flags: "", group: "stream", since: "5.0.0", summary: "A container for consumer groups commands."},
	{name: "xgroup|create", arity: -5, flags: "write denyoom", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read] [MAXDELIVER max-deliver] [DEADLETTER dead-letter-key] [ACKWAIT ack-wait] [BACKOFF backoff]", summary: "Creates a consumer group.", run: xgroupCreateCommand},
	{name: "xgroup|setpolicy", arity: -6, flags: "write", first: 2, last: 2, step: 1, group: "stream", since: "8.10.0",
		syntax:  "key group [MAXDELIVER max-deliver] [DEADLETTER dead-letter-key] [ACKWAIT ack-wait] [BACKOFF backoff]",
		summary: "Sets what a consumer group does with entries its consumers fail to acknowledge: a cap on deliveries, a dead-letter stream, redelivery (redstream).", run: xgroupSetPolicyCommand},
	{name: "xgroup|setid", arity: -5, flags: "write", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group <id | $> [ENTRIESREAD entries-read]", summary: "Sets the last-delivered ID of a consumer group.", run: xgroupSetIDCommand},
	{name: "xgroup|destroy", arity: 4, flags: "write", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group", summary: "Destroys a consumer group.", run: xgroupDestroyCommand},
	{name: "xgroup|createconsumer", arity: 5, flags: "write denyoom", first: 2, last: 2, step: 1, group: "stream", since: "6.2.0",
		syntax: "key group consumer", summary: "Creates a consumer in a consumer group.", run: xgroupCreateConsumerCommand},
	{name: "xgroup|delconsumer", arity: 5, flags: "write", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group consumer", summary: "Deletes a consumer from a consumer group.", run: xgroupDelConsumerCommand},
	{name: "xgroup|help", arity: 2, flags: "loading stale", group: "stream", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: xgroupHelpCommand},
	{name: "xreadgroup", arity: -7, flags: "write blocking", group: "stream", since: "5.0.0",
		syntax:  "GROUP group consumer [COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] [BLOCK milliseconds] [CLAIM min-idle-time] [NOACK] STREAMS key [key ...] id [id ...]",
		summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", run: xreadgroupCommand},
	{name: "xack", arity: -4, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group id [id ...]", summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", run: xackCommand},
	{name: "xackdel", arity: -6, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "8.2.0",
		syntax: "key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]", summary: "Acknowledges and conditionally deletes one or multiple entries for a stream consumer group.", run: xackdelCommand},
	{name: "xnack", arity: -7, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "8.8.0",
		syntax: "key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT count] [FORCE]", summary: "Releases pending messages back to the group without acknowledging them.", run: xnackCommand},
	{name: "xdelex", arity: -5, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "8.2.0",
		syntax: "key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]", summary: "Deletes one or multiple entries from the stream.", run: xdelexCommand},
	{name: "xpending", arity: -3, flags: "readonly", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group [[IDLE min-idle-time] [WITHDUE] start end count [consumer]]", summary: "Returns the information and entries from a stream consumer group's pending entries list.", run: xpendingCommand},
	{name: "xclaim", arity: -6, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
		syntax:  "key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]",
		summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", run: xclaimCommand},
	{name: "xautoclaim", arity: -6, flags: "write fast", first: 1, last: 1, step: 1, group: "stream", since: "6.2.0",
		syntax:  "key group consumer min-idle-time start [COUNT count] [JUSTID]",
		summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", run: xautoclaimCommand},
	{name: "xinfo|groups", arity: 3, flags: "readonly", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key", summary: "Returns a list of the consumer groups of a stream.", run: xinfoGroupsCommand},
	{name: "xinfo|consumers", arity: 4, flags: "readonly", first: 2, last: 2, step: 1, group: "stream", since: "5.0.0",
		syntax: "key group", summary: "Returns a list of the consumers in a consumer group.", run: xinfoConsumersCommand},
}

// Error replies of the group commands, in Redis's words.
const (
	errNoGroup         = "NOGROUP No such key '%s' or consumer group '%s'"
	errNoGroupRead     = "NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option"
	errNoGroupForKey   = "NOGROUP No such consumer group '%s' for key name '%s'"
	errBusyGroup       = "BUSYGROUP Consumer Group name already exists"
	errXGroupNoKey     = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	errEntriesRead     = "ERR value for ENTRIESREAD must be positive or -1"
	errNumIDs          = "ERR Number of IDs must be a positive integer"
	errNumIDsMismatch  = "ERR The `numids` parameter must match the number of arguments"
	errNackMode        = "ERR mode must be SILENT, FAIL, or FATAL"
	errNackOption      = "ERR Unrecognized XNACK option '%s'"
	errNackIDS         = "ERR syntax error, expected IDS keyword"
	errNackNumIDs      = "ERR numids must be a positive integer"
	errNackNumMismatch = "ERR number of IDs doesn't match numids"
	errNackRetry       = "ERR Invalid RETRYCOUNT value, must be >= 0"
)

// quoteArg formats a key or name for an error as Redis does (%s of a C
// string: it stops at a NUL byte).
func quoteArg(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// groupOf looks up key's stream and the group called name in it. When
// either is missing it answers NOGROUP with errFmt (which takes the key
// and the group, in that order); WRONGTYPE when key holds another type.
func (x *Ctx) groupOf(key, name []byte, errFmt string) (*stream.Stream, *stream.Group, bool) {
	s, ok := x.streamOf(key)
	if !ok {
		return nil, nil, false
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(name)
	}
	if g == nil {
		x.error(fmt.Sprintf(errFmt, quoteArg(key), quoteArg(name)))
		return nil, nil, false
	}
	return s, g, true
}

// parseEntriesRead parses XGROUP's ENTRIESREAD value: -1 (unknown) or >= 0.
func parseEntriesRead(x *Ctx, arg []byte) (int64, bool) {
	n, ok := resp.ParseInt(arg)
	switch {
	case !ok:
		x.error(resp.ErrNotInteger)
		return 0, false
	case n < 0 && n != stream.InvalidEntriesRead:
		x.error(errEntriesRead)
		return 0, false
	}
	return n, true
}

// xgroupOptions parses what follows XGROUP CREATE/SETID key group id:
// MKSTREAM (CREATE only) and ENTRIESREAD n, as Redis does, before the key
// is looked at; with policy (CREATE only) also the policy options.
func xgroupOptions(x *Ctx, policy *policyArgs) (mkstream bool, entriesRead int64, ok bool) {
	create := policy != nil
	entriesRead = stream.InvalidEntriesRead
	for i := 5; i < len(x.argv); i++ {
		if create {
			var isPolicy bool
			var msg string
			if i, isPolicy, msg = policy.parseOption(x, i); msg != "" {
				x.error(msg)
				return false, 0, false
			} else if isPolicy {
				continue
			}
		}
		switch {
		case create && eqFold(x.argv[i], "mkstream"):
			mkstream = true
		case eqFold(x.argv[i], "entriesread") && i+1 < len(x.argv):
			if entriesRead, ok = parseEntriesRead(x, x.argv[i+1]); !ok {
				return false, 0, false
			}
			i++
		default:
			x.error(resp.SubcommandSyntax("xgroup", x.argv[1]))
			return false, 0, false
		}
	}
	return mkstream, entriesRead, true
}

// xgroupTarget looks up the stream an XGROUP subcommand works on; without
// mkstream it must exist. When needGroup is set the group must exist too.
func xgroupTarget(x *Ctx, mkstream, needGroup bool) (s *stream.Stream, g *stream.Group, ok bool) {
	key, name := x.argv[2], x.argv[3]
	if s, ok = x.streamOf(key); !ok {
		return nil, nil, false
	}
	if s == nil {
		if !mkstream {
			x.error(errXGroupNoKey)
			return nil, nil, false
		}
		return nil, nil, true
	}
	g = s.Group(name)
	if g == nil && needGroup {
		x.error(fmt.Sprintf(errNoGroupForKey, quoteArg(name), quoteArg(key)))
		return nil, nil, false
	}
	return s, g, true
}

// xgroupCreateCommand serves XGROUP CREATE key group id|$ [MKSTREAM]
// [ENTRIESREAD n] and the policy options of XGROUP SETPOLICY.
func xgroupCreateCommand(x *Ctx) {
	var policy policyArgs
	mkstream, entriesRead, ok := xgroupOptions(x, &policy)
	if !ok {
		return
	}
	s, _, ok := xgroupTarget(x, mkstream, false)
	if !ok {
		return
	}
	if len(x.argv)-policy.n > 8 { // checked after the key, as Redis does
		x.error(resp.SubcommandSyntax("xgroup", x.argv[1]))
		return
	}
	var id stream.ID
	if arg := x.argv[4]; len(arg) == 1 && arg[0] == '$' {
		if s != nil {
			id = s.LastID()
		}
	} else if id, ok = parseStrictID(x, arg); !ok {
		return
	}
	key := x.argv[2]
	if !policy.checkDeadLetterKey(x, key) {
		return
	}
	if s == nil {
		s = stream.New()
		x.setKey(key, &Object{value: s})
	}
	g, err := s.CreateGroup(x.argv[3], id, entriesRead)
	if errors.Is(err, stream.ErrGroupExists) {
		x.error(errBusyGroup)
		return
	}
	g.SetPolicy(policy.apply(stream.Policy{}))
	x.modified(key)
	x.w.OK()
}

// xgroupSetIDCommand serves XGROUP SETID key group id|$ [ENTRIESREAD n].
// Unlike CREATE it takes "-" and "+" as IDs, as Redis does.
func xgroupSetIDCommand(x *Ctx) {
	_, entriesRead, ok := xgroupOptions(x, nil)
	if !ok {
		return
	}
	s, g, ok := xgroupTarget(x, false, true)
	if !ok {
		return
	}
	if len(x.argv) != 5 && len(x.argv) != 7 {
		x.error(resp.SubcommandSyntax("xgroup", x.argv[1]))
		return
	}
	var id stream.ID
	if arg := x.argv[4]; len(arg) == 1 && arg[0] == '$' {
		id = s.LastID()
	} else {
		var err error
		if id, err = stream.ParseID(arg, 0); err != nil {
			x.error(errStreamID)
			return
		}
	}
	s.SetGroupID(g, id, entriesRead)
	x.modified(x.argv[2])
	x.w.OK()
}

// xgroupDestroyCommand serves XGROUP DESTROY key group. Clients blocked in
// XREADGROUP on the group are woken to find it gone (NOGROUP).
func xgroupDestroyCommand(x *Ctx) {
	s, _, ok := xgroupTarget(x, false, false)
	if !ok {
		return
	}
	if !s.DestroyGroup(x.argv[3]) {
		x.w.Int(0)
		return
	}
	x.modified(x.argv[2])
	x.signalReady(x.argv[2])
	x.w.Int(1)
}

// xgroupCreateConsumerCommand serves XGROUP CREATECONSUMER key group name.
func xgroupCreateConsumerCommand(x *Ctx) {
	_, g, ok := xgroupTarget(x, false, true)
	if !ok {
		return
	}
	if _, created := g.CreateConsumer(x.argv[4], x.now); !created {
		x.w.Int(0)
		return
	}
	x.modified(x.argv[2])
	x.w.Int(1)
}

// xgroupDelConsumerCommand serves XGROUP DELCONSUMER key group name: the
// answer is how many entries the consumer still owned, which leave the
// group PEL with it.
func xgroupDelConsumerCommand(x *Ctx) {
	_, g, ok := xgroupTarget(x, false, true)
	if !ok {
		return
	}
	n, deleted := g.DeleteConsumer(x.argv[4])
	if deleted {
		x.modified(x.argv[2])
	}
	x.w.Int(int64(n))
}

func xgroupHelpCommand(x *Ctx) {
	writeHelp(x.w, "XGROUP", []string{
		"CREATE <key> <groupname> <id|$> [option]",
		"    Create a new consumer group. Options are:",
		"    * MKSTREAM",
		"      Create the empty stream if it does not exist.",
		"    * ENTRIESREAD entries_read",
		"      Set the group's entries_read counter (internal use).",
		"    * MAXDELIVER, DEADLETTER, ACKWAIT, BACKOFF",
		"      Set the group's policy, as SETPOLICY does.",
		"CREATECONSUMER <key> <groupname> <consumer>",
		"    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>",
		"    Remove the specified consumer.",
		"DESTROY <key> <groupname>",
		"    Remove the specified group.",
		"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
		"    Set the current group ID and entries_read counter.",
		"SETPOLICY <key> <groupname> [MAXDELIVER n] [DEADLETTER key] [ACKWAIT ms] [BACKOFF ms[,ms...]]",
		"    Set what the group does with entries its consumers fail (each option given",
		"    replaces that setting): deliver each at most MAXDELIVER times (0: no cap),",
		"    then move it to the DEADLETTER stream (\"\": none, only drop it); redeliver",
		"    an entry not acknowledged within ACKWAIT ms, or the BACKOFF step chosen by",
		"    its delivery count (0 and \"\" turn these off).",
	})
}

// parseIDs parses every argument as a strict ID, answering Redis's error
// at the first that is not one.
func parseIDs(x *Ctx, args [][]byte) ([]stream.ID, bool) {
	ids := make([]stream.ID, 0, len(args))
	for _, a := range args {
		id, ok := parseStrictID(x, a)
		if !ok {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// xackCommand serves XACK key group id...: a missing key or group acks
// nothing. IDs are all parsed before any is acknowledged.
func xackCommand(x *Ctx) {
	key := x.argv[1]
	s, ok := x.streamOf(key)
	if !ok {
		return
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(x.argv[2])
	}
	if g == nil {
		x.w.Int(0)
		return
	}
	ids, ok := parseIDs(x, x.argv[3:])
	if !ok {
		return
	}
	var n int64
	for _, id := range ids {
		if g.Ack(id) {
			n++
		}
	}
	if n > 0 {
		x.modified(key)
	}
	x.w.Int(n)
}

// idsArgs is a parsed [KEEPREF|DELREF|ACKED] IDS numids id... block, as
// XDELEX and XACKDEL take it.
type idsArgs struct {
	policy stream.RefPolicy
	ids    []stream.ID
}

// parseIDsBlock parses argv[from:]: at most one policy word and one IDS
// block, in either order, with Redis's errors.
func parseIDsBlock(x *Ctx, from int) (a idsArgs, ok bool) {
	policySet := false
	for i := from; i < len(x.argv); i++ {
		arg := x.argv[i]
		switch {
		case !policySet && isRefPolicyWord(arg):
			a.policy, policySet = refPolicy(arg), true
		case a.ids == nil && eqFold(arg, "ids") && i+1 < len(x.argv):
			n, isInt := resp.ParseInt(x.argv[i+1])
			if !isInt || n <= 0 {
				x.error(errNumIDs)
				return a, false
			}
			if n > int64(len(x.argv)-i-2) {
				x.error(errNumIDsMismatch)
				return a, false
			}
			if a.ids, ok = parseIDs(x, x.argv[i+2:i+2+int(n)]); !ok {
				return a, false
			}
			i += 1 + int(n)
		default:
			x.error(resp.ErrSyntax)
			return a, false
		}
	}
	if a.ids == nil {
		x.error(resp.ErrSyntax)
		return a, false
	}
	return a, true
}

// isRefPolicyWord reports whether arg is KEEPREF, DELREF or ACKED.
func isRefPolicyWord(arg []byte) bool {
	return eqFold(arg, "keepref") || eqFold(arg, "delref") || eqFold(arg, "acked")
}

func refPolicy(arg []byte) stream.RefPolicy {
	switch {
	case eqFold(arg, "delref"):
		return stream.DelRef
	case eqFold(arg, "acked"):
		return stream.Acked
	}
	return stream.KeepRef
}

// writeMinusOnes answers -1 for every ID: no such key (or group).
func writeMinusOnes(x *Ctx, n int) {
	x.w.Array(n)
	for range n {
		x.w.Int(stream.DelNotFound)
	}
}

// xdelexCommand serves XDELEX key [KEEPREF|DELREF|ACKED] IDS n id...
// (Redis 8.2): per ID, -1 (no such entry), 1 (deleted) or 2 (kept: a
// group still needs it).
func xdelexCommand(x *Ctx) {
	a, ok := parseIDsBlock(x, 2)
	if !ok {
		return
	}
	key := x.argv[1]
	s, ok := x.streamOf(key)
	switch {
	case !ok:
		return
	case s == nil:
		writeMinusOnes(x, len(a.ids))
		return
	}
	x.w.Array(len(a.ids))
	changed := false
	for _, id := range a.ids {
		r, ch := s.DeleteRef(id, a.policy)
		changed = changed || ch
		x.w.Int(int64(r))
	}
	if changed {
		x.modified(key)
	}
}

// xackdelCommand serves XACKDEL key group [KEEPREF|DELREF|ACKED] IDS n
// id... (Redis 8.2): acknowledge each ID in the group, then delete the
// entry as XDELEX would. Per ID: 1 when it was acknowledged or deleted,
// 2 when ACKED keeps it for another group, -1 when neither happened (or
// the key or group does not exist).
func xackdelCommand(x *Ctx) {
	a, ok := parseIDsBlock(x, 3)
	if !ok {
		return
	}
	key := x.argv[1]
	s, ok := x.streamOf(key)
	if !ok {
		return
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(x.argv[2])
	}
	if g == nil {
		writeMinusOnes(x, len(a.ids))
		return
	}
	x.w.Array(len(a.ids))
	changed := false
	for _, id := range a.ids {
		acked := g.Ack(id)
		r, ch := s.DeleteRef(id, a.policy)
		if r == stream.DelNotFound && acked {
			r = stream.DelDeleted
		}
		changed = changed || acked || ch
		x.w.Int(int64(r))
	}
	if changed {
		x.modified(key)
	}
}

// nackArgs is a parsed XNACK.
type nackArgs struct {
	mode  stream.NackMode
	ids   []stream.ID
	retry int64 // -1: no RETRYCOUNT
	force bool
}

// parseXNack parses XNACK key group mode, then IDS numids id... and the
// options RETRYCOUNT n and FORCE before or after it (Redis 8.8).
func parseXNack(x *Ctx) (a nackArgs, ok bool) {
	a.retry = -1
	switch m := x.argv[3]; {
	case eqFold(m, "silent"):
		a.mode = stream.NackSilent
	case eqFold(m, "fail"):
		a.mode = stream.NackFail
	case eqFold(m, "fatal"):
		a.mode = stream.NackFatal
	default:
		x.error(errNackMode)
		return a, false
	}
	for i := 4; i < len(x.argv); i++ {
		var msg string
		if i, msg = a.parseOption(x, i); msg != "" {
			x.error(msg)
			return a, false
		}
	}
	if a.ids == nil {
		x.error(errNackIDS)
		return a, false
	}
	return a, true
}

// parseOption parses the XNACK option at argv[i] and returns the index of
// its last argument, or an error text.
func (a *nackArgs) parseOption(x *Ctx, i int) (int, string) {
	arg := x.argv[i]
	more := len(x.argv) - 1 - i
	switch {
	case a.ids == nil && eqFold(arg, "ids") && more > 0:
		n, isInt := resp.ParseInt(x.argv[i+1])
		if !isInt || n <= 0 {
			return i, errNackNumIDs
		}
		if n > int64(more-1) {
			return i, errNackNumMismatch
		}
		a.ids = make([]stream.ID, 0, n)
		for _, b := range x.argv[i+2 : i+2+int(n)] {
			id, err := stream.ParseStrictID(b, 0)
			if err != nil {
				return i, errStreamID
			}
			a.ids = append(a.ids, id)
		}
		return i + 1 + int(n), ""
	case eqFold(arg, "force"):
		a.force = true
		return i, ""
	case eqFold(arg, "retrycount") && more > 0:
		n, isInt := resp.ParseInt(x.argv[i+1])
		switch {
		case !isInt:
			return i, resp.ErrNotInteger
		case n < 0:
			return i, errNackRetry
		}
		a.retry = n
		return i + 1, ""
	}
	return i, fmt.Sprintf(errNackOption, quoteArg(arg))
}

// xnackCommand serves XNACK (Redis 8.8): each pending ID loses its owner
// and goes to the end of the released entries, which CLAIM hands out
// first; with FORCE an entry of the stream that is not pending becomes a
// released one. It answers how many IDs it released. A blocked
// XREADGROUP CLAIM may now have something to claim, so it is woken.
// FATAL in a group with a dead-letter stream dead-letters each entry at
// once instead (see nackFatal).
func xnackCommand(x *Ctx) {
	a, ok := parseXNack(x)
	if !ok {
		return
	}
	key := x.argv[1]
	s, g, ok := x.groupOf(key, x.argv[2], errNoGroup)
	if !ok {
		return
	}
	var n int64
	for _, id := range a.ids {
		switch {
		case a.mode == stream.NackFatal && g.Policy().DeadLetter != nil && nackFatal(x, s, g, id, a.force):
			n++
		case g.Release(id, a.mode, a.retry):
			n++
		case a.force && s.Has(id):
			g.ForceRelease(id, a.mode, a.retry)
			n++
		}
	}
	if n > 0 {
		x.modified(key)
		x.signalReady(key)
	}
	x.w.Int(n)
}

// nackFatal dead-letters id for XNACK FATAL and reports whether it did.
// With FORCE an entry of the stream that is not pending is dead-lettered
// too, with 0 deliveries; RETRYCOUNT does not matter to an entry that
// will not be retried. When the move is refused (see deadLetter) it
// reports false, and the entry is released as XNACK FATAL does without
// a dead-letter stream.
func nackFatal(x *Ctx, s *stream.Stream, g *stream.Group, id stream.ID, force bool) bool {
	if _, pending := g.PendingEntry(id); !pending {
		if !force || !s.Has(id) {
			return false
		}
		g.ForceRelease(id, stream.NackSilent, -1)
	}
	deadLetter(x, x.argv[1], s, g, id, reasonFatal)
	_, pending := g.PendingEntry(id)
	return !pending
}
