package server

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redstream/redstream/resp"
)

var serverSpecs = []spec{
	{name: "command", arity: -1, flags: "loading stale", group: "server", since: "2.8.13",
		summary: "Returns detailed information about all commands.", run: commandCommand},
	{name: "command|count", arity: 2, flags: "loading stale", group: "server", since: "2.8.13",
		summary: "Returns a count of commands.", run: commandCountCommand},
	{name: "command|info", arity: -2, flags: "loading stale", group: "server", since: "2.8.13",
		syntax: "[command-name [command-name ...]]", summary: "Returns information about one, multiple or all commands.", run: commandInfoCommand},
	{name: "command|docs", arity: -2, flags: "loading stale", group: "server", since: "7.0.0",
		syntax: "[command-name [command-name ...]]", summary: "Returns documentary information about one, multiple or all commands.", run: commandDocsCommand},
	{name: "command|getkeys", arity: -3, flags: "loading stale", group: "server", since: "2.8.13",
		syntax: "command [arg [arg ...]]", summary: "Extracts the key names from an arbitrary command.", run: commandGetkeysCommand},
	{name: "command|list", arity: -2, flags: "loading stale", group: "server", since: "7.0.0",
		syntax: "[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]", summary: "Returns a list of command names.", run: commandListCommand},
	{name: "command|help", arity: 2, flags: "loading stale", group: "server", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: commandHelpCommand},
	{name: "config", arity: -2, flags: "", group: "server", since: "2.0.0", summary: "A container for server configuration commands."},
	{name: "config|get", arity: -3, flags: "admin noscript loading stale", group: "server", since: "2.0.0",
		syntax: "parameter [parameter ...]", summary: "Returns the effective values of configuration parameters.", run: configGetCommand},
	{name: "config|set", arity: -4, flags: "admin noscript loading stale", group: "server", since: "2.0.0",
		syntax: "parameter value [parameter value ...]", summary: "Sets configuration parameters in-flight.", run: configSetCommand},
	{name: "config|rewrite", arity: 2, flags: "admin noscript loading stale", group: "server", since: "2.8.0",
		summary: "Persists the effective configuration to file.", run: configRewriteCommand},
	{name: "config|resetstat", arity: 2, flags: "admin noscript loading stale", group: "server", since: "2.0.0",
		summary: "Resets the server's statistics.", run: configResetstatCommand},
	{name: "config|help", arity: 2, flags: "loading stale", group: "server", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: configHelpCommand},
	{name: "info", arity: -1, flags: "loading stale", group: "server", since: "1.0.0",
		syntax: "[section [section ...]]", summary: "Returns information and statistics about the server.", run: infoCommand},
	{name: "role", arity: 1, flags: "noscript loading stale fast", group: "server", since: "2.8.12",
		summary: "Returns the replication role.", run: roleCommand},
	{name: "time", arity: 1, flags: "loading stale fast", group: "server", since: "2.6.0",
		summary: "Returns the server time.", run: timeCommand},
	{name: "dbsize", arity: 1, flags: "readonly fast", group: "server", since: "1.0.0",
		summary: "Returns the number of keys in the database.", run: dbsizeCommand},
	{name: "flushdb", arity: -1, flags: "write", group: "server", since: "1.0.0",
		syntax: "[ASYNC | SYNC]", summary: "Removes all keys from the current database.", run: flushdbCommand},
	{name: "flushall", arity: -1, flags: "write", group: "server", since: "1.0.0",
		syntax: "[ASYNC | SYNC]", summary: "Removes all keys from all databases.", run: flushallCommand},
	{name: "shutdown", arity: -1, flags: "admin noscript loading stale no_multi allow_busy", group: "server", since: "1.0.0",
		syntax: "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]", summary: "Synchronously saves the database(s) to disk and shuts down the server.", run: shutdownCommand},
	{name: "slowlog", arity: -2, flags: "", group: "server", since: "2.2.12", summary: "A container for slow log commands."},
	{name: "slowlog|get", arity: -2, flags: "admin loading stale", group: "server", since: "2.2.12",
		syntax: "[count]", summary: "Returns the slow log's entries.", run: slowlogGetCommand},
	{name: "slowlog|len", arity: 2, flags: "admin loading stale", group: "server", since: "2.2.12",
		summary: "Returns the number of entries in the slow log.", run: slowlogLenCommand},
	{name: "slowlog|reset", arity: 2, flags: "admin loading stale", group: "server", since: "2.2.12",
		summary: "Clears all entries from the slow log.", run: slowlogResetCommand},
	{name: "slowlog|help", arity: 2, flags: "loading stale", group: "server", since: "6.2.0",
		summary: "Show helpful text about the different subcommands", run: slowlogHelpCommand},
}

func commandCommand(x *Ctx) {
	if len(x.argv) > 1 {
		x.error(resp.UnknownSubcommand("command", x.argv[1]))
		return
	}
	cmds := sortedCommands(x.s.commands)
	x.w.Array(len(cmds))
	for _, c := range cmds {
		writeCommandInfo(x.w, c)
	}
}

func commandCountCommand(x *Ctx) { x.w.Int(int64(len(x.s.commands))) }

func commandInfoCommand(x *Ctx) {
	if len(x.argv) == 2 {
		commandCommand(&Ctx{s: x.s, w: x.w, argv: x.argv[:1]})
		return
	}
	x.w.Array(len(x.argv) - 2)
	for _, name := range x.argv[2:] {
		if c := x.s.findCommand(name); c != nil {
			writeCommandInfo(x.w, c)
		} else {
			x.w.Null()
		}
	}
}

// findCommand looks up "name" or "container|sub".
func (s *Server) findCommand(name []byte) *Command {
	n := strings.ToLower(string(name))
	parent, sub, isSub := strings.Cut(n, "|")
	c := s.commands[parent]
	if c == nil || !isSub {
		return c
	}
	return c.Sub[sub]
}

// writeCommandInfo writes one command as COMMAND INFO describes it.
func writeCommandInfo(w *resp.Writer, c *Command) {
	w.Array(10)
	w.BulkString(c.Name)
	w.Int(int64(c.Arity))
	flags := c.flagNames()
	w.Set(len(flags))
	for _, f := range flags {
		w.Status(f)
	}
	first, last, step := c.legacyKeyRange()
	w.Int(int64(first))
	w.Int(int64(last))
	w.Int(int64(step))
	cats := c.aclCategories()
	w.Set(len(cats))
	for _, cat := range cats {
		w.Status(cat)
	}
	w.Set(0) // tips
	writeKeySpecs(w, c)
	subs := c.sortedSubs()
	if len(subs) == 0 {
		w.Set(0) // Redis's reply: an empty set, but an array of subcommands
	} else {
		w.Array(len(subs))
	}
	for _, sub := range subs {
		writeCommandInfo(w, sub)
	}
}

func (c *Command) flagNames() []string {
	var out []string
	for _, fn := range flagNames {
		if c.Flags&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	if c.Keys != nil {
		out = append(out, "movablekeys")
	}
	return out
}

// legacyKeyRange is COMMAND INFO's first/last/step; movable-key
// commands report what is fixed, as Redis does.
func (c *Command) legacyKeyRange() (first, last, step int) {
	if c.Keys != nil {
		return 0, 0, 0
	}
	return c.First, c.Last, c.Step
}

// writeKeySpecs writes where the command's keys are, as COMMAND's key
// specs say it to cluster clients: the movable commands' searches
// (keySearch), one spec per key of a command with a fixed few keys in
// different roles (RENAME source destination), and one range otherwise.
// Every spec's flags are the command's: RW for writes, RO access else.
func writeKeySpecs(w *resp.Writer, c *Command) {
	switch {
	case c.Keys != nil:
		w.Set(1)
		if c.Keys.Keyword != "" {
			writeKeySpec(w, c, "keyword", []any{"keyword", c.Keys.Keyword, "startfrom", c.Keys.At},
				"range", []any{"lastkey", -1, "keystep", 1, "limit", 2})
		} else {
			writeKeySpec(w, c, "index", []any{"index", c.Keys.At},
				"keynum", []any{"keynumidx", 0, "firstkey", 1, "keystep", 1})
		}
	case c.First == 0:
		w.Set(0)
	case c.Last > c.First:
		w.Set((c.Last-c.First)/c.Step + 1)
		for i := c.First; i <= c.Last; i += c.Step {
			writeKeySpec(w, c, "index", []any{"index", i}, "range", []any{"lastkey", 0, "keystep", 1, "limit", 0})
		}
	default:
		last := c.Last
		if last >= 0 {
			last -= c.First
		}
		w.Set(1)
		writeKeySpec(w, c, "index", []any{"index", c.First}, "range", []any{"lastkey", last, "keystep", c.Step, "limit", 0})
	}
}

// writeKeySpec writes one key spec; begin and find are its two searches'
// types and specs, given as name, value pairs (strings or ints).
func writeKeySpec(w *resp.Writer, c *Command, beginType string, begin []any, findType string, find []any) {
	w.Map(3)
	w.BulkString("flags")
	if c.Flags&FlagWrite != 0 {
		w.Set(1)
		w.Status("RW")
	} else {
		w.Set(2)
		w.Status("RO")
		w.Status("access")
	}
	for _, part := range []struct {
		name, kind string
		spec       []any
	}{{"begin_search", beginType, begin}, {"find_keys", findType, find}} {
		w.BulkString(part.name)
		w.Map(2)
		w.BulkString("type")
		w.BulkString(part.kind)
		w.BulkString("spec")
		w.Map(len(part.spec) / 2)
		for _, v := range part.spec {
			switch v := v.(type) {
			case string:
				w.BulkString(v)
			case int:
				w.Int(int64(v))
			}
		}
	}
}

func (c *Command) sortedSubs() []*Command { return sortedCommands(c.Sub) }

func commandDocsCommand(x *Ctx) {
	var cmds []*Command
	if len(x.argv) == 2 {
		cmds = sortedCommands(x.s.commands)
	} else {
		for _, name := range x.argv[2:] {
			if c := x.s.findCommand(name); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	x.w.Map(len(cmds))
	for _, c := range cmds {
		x.w.BulkString(c.Name)
		writeCommandDocs(x.w, c)
	}
}

func writeCommandDocs(w *resp.Writer, c *Command) {
	subs := c.sortedSubs()
	args := parseSyntax(c.Syntax)
	n := 3
	for _, has := range []bool{c.Complexity != "", len(args) > 0, len(subs) > 0} {
		if has {
			n++
		}
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(c.Summary)
	w.BulkString("since")
	w.BulkString(c.Since)
	w.BulkString("group")
	w.BulkString(c.Group)
	if c.Complexity != "" { // Redis leaves out what a command's docs do not give
		w.BulkString("complexity")
		w.BulkString(c.Complexity)
	}
	if len(args) > 0 {
		w.BulkString("arguments")
		writeDocArgs(w, args)
	}
	if len(subs) > 0 {
		w.BulkString("subcommands")
		w.Map(len(subs))
		for _, sub := range subs {
			w.BulkString(sub.Name)
			writeCommandDocs(w, sub)
		}
	}
}

// commandGetkeysCommand checks in Redis's order: the command exists, it
// has keys at all, the arity fits, the keys can be found.
func commandGetkeysCommand(x *Ctx) {
	argv := x.argv[2:]
	cmd, errText := x.s.lookupCommand(argv)
	switch {
	case cmd == nil:
		x.error("ERR Invalid command specified")
		return
	case cmd.First == 0 && cmd.Keys == nil:
		x.error("ERR The command has no key arguments")
		return
	case errText != "":
		x.error("ERR Invalid number of arguments specified for command")
		return
	}
	pos := cmd.keyPositions(argv)
	if len(pos) == 0 {
		x.error("ERR Invalid arguments specified for command")
		return
	}
	x.w.Array(len(pos))
	for _, p := range pos {
		x.w.Bulk(argv[p])
	}
}

func commandListCommand(x *Ctx) {
	var names []string
	for _, c := range sortedCommands(x.s.commands) {
		names = append(names, c.Name)
		for _, sub := range c.sortedSubs() {
			names = append(names, sub.Name)
		}
	}
	if len(x.argv) > 2 {
		if len(x.argv) != 5 || !strings.EqualFold(x.arg(2), "filterby") {
			x.error(resp.ErrSyntax)
			return
		}
		kind := strings.ToLower(x.arg(3))
		if kind != "pattern" && kind != "aclcat" && kind != "module" {
			x.error(resp.ErrSyntax)
			return
		}
		names = filterCommands(x, kind, names)
	}
	x.w.Array(len(names))
	for _, n := range names {
		x.w.BulkString(n)
	}
}

// filterCommands applies COMMAND LIST FILTERBY kind arg.
func filterCommands(x *Ctx, kind string, names []string) []string {
	arg := x.arg(4)
	out := []string{}
	for _, n := range names {
		c := x.s.findCommand([]byte(n))
		keep := false
		switch kind {
		case "pattern":
			keep = globMatch([]byte(arg), []byte(n), true)
		case "aclcat":
			keep = slices.Contains(c.aclCategories(), "@"+strings.ToLower(arg))
		case "module":
			keep = false
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

func commandHelpCommand(x *Ctx) {
	writeHelp(x.w, "COMMAND", []string{
		"(no subcommand)", "    Return details about all Redis commands.",
		"COUNT", "    Return the total number of commands in this Redis server.",
		"LIST", "    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]", "    Return details about multiple Redis commands.",
		"DOCS [<command-name> ...]", "    Return documentation details about multiple Redis commands.",
		"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
	})
}

// configGetCommand answers a plain name as it was typed (as Redis does:
// CONFIG GET MAXCLIENTS returns "MAXCLIENTS") and a glob with the
// parameters' own names.
func configGetCommand(x *Ctx) {
	seen := map[string]bool{}
	var pairs [][2]string
	add := func(name string, p *param) {
		if !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			pairs = append(pairs, [2]string{name, p.get(&x.s.cfg)})
		}
	}
	for _, pat := range x.argv[2:] {
		if !bytes.ContainsAny(pat, "*?[") {
			if p := lookupParam(string(pat)); p != nil {
				add(string(pat), p)
			}
			continue
		}
		for i := range params {
			for _, name := range []string{params[i].name, params[i].alias} {
				if name != "" && globMatch(pat, []byte(name), true) {
					add(name, &params[i])
				}
			}
		}
	}
	x.w.Map(len(pairs))
	for _, kv := range pairs {
		x.w.BulkString(kv[0])
		x.w.BulkString(kv[1])
	}
}

// configSetCommand sets all pairs or none: it applies them to a copy and
// installs the copy only if every one succeeded.
func configSetCommand(x *Ctx) {
	if (len(x.argv)-2)%2 != 0 {
		x.error(resp.ErrSyntax)
		return
	}
	next := x.s.cfg
	next.Bind = slices.Clone(next.Bind)
	seen := map[*param]bool{}
	for i := 2; i < len(x.argv); i += 2 {
		name := x.arg(i)
		p := lookupParam(name)
		if p == nil {
			x.error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", name))
			return
		}
		if !p.mutable {
			x.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", name))
			return
		}
		if seen[p] {
			x.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - duplicate parameter", name))
			return
		}
		seen[p] = true
		if err := p.set(&next, []string{x.arg(i + 1)}); err != nil {
			x.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err))
			return
		}
	}
	if name, err := x.s.applyAOFConfig(&next); err != nil {
		x.error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err))
		return
	}
	x.s.cfg = next
	x.s.applyConfig()
	x.w.OK()
}

func configResetstatCommand(x *Ctx) {
	x.s.resetStats()
	x.w.OK()
}

func configHelpCommand(x *Ctx) {
	writeHelp(x.w, "CONFIG", []string{
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
	})
}

func timeCommand(x *Ctx) {
	now := time.Now()
	x.w.Array(2)
	x.w.BulkInt(now.Unix())
	x.w.BulkInt(int64(now.Nanosecond() / 1000))
}

func dbsizeCommand(x *Ctx) {
	n := 0
	for _, db := range x.keylessDBs() {
		n += db.Len()
	}
	x.w.Int(int64(n))
}

// flushMode validates the optional ASYNC|SYNC argument.
func flushMode(x *Ctx) bool {
	if len(x.argv) > 2 || (len(x.argv) == 2 && !strings.EqualFold(x.arg(1), "async") && !strings.EqualFold(x.arg(1), "sync")) {
		x.error(resp.ErrSyntax)
		return false
	}
	return true
}

func flushdbCommand(x *Ctx) {
	if !flushMode(x) {
		return
	}
	x.s.flush(x.db)
	x.dirty++
	x.w.OK()
}

func flushallCommand(x *Ctx) {
	if !flushMode(x) {
		return
	}
	if x.s.cluster != nil {
		// The entry of one group's log: it empties that group's database,
		// the only one its clients see (keyless.go). The others are other
		// groups' state, which their own logs change.
		x.s.flush(x.db)
	} else {
		for _, db := range x.db.shard.dbs {
			x.s.flush(db)
		}
	}
	x.dirty++
	x.w.OK()
}

// flush empties db, dooming transactions that watch its keys. Lock should
// be held.
func (s *Server) flush(db *DB) {
	s.touchAllWatched(db)
	for key := range db.groupWaits {
		s.shard.signalReady(db, []byte(key)) // their wait ends with NOGROUP
	}
	db.reset()
}

// shutdownCommand saves first when save points are configured or SAVE is
// given (not with NOSAVE), and refuses to stop if that save fails, unless
// FORCE. The AOF is flushed and fsync'd by the shutdown itself.
func shutdownCommand(x *Ctx) {
	var save, nosave, force bool
	for _, a := range x.argv[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			nosave = true
		case "save":
			save = true
		case "now":
		case "force":
			force = true
		case "abort":
			x.error("ERR No shutdown in progress.")
			return
		default:
			x.error(resp.ErrSyntax)
			return
		}
	}
	if nosave && save {
		x.error(resp.ErrSyntax)
		return
	}
	points, _ := parseSavePoints(x.s.cfg.Save)
	// Carried out once the batch lets the lock go (shutdown.go); the
	// reply, if any, comes from there.
	x.c.shutdown = &shutdownRequest{save: !nosave && (save || len(points) > 0), force: force}
}

func slowlogGetCommand(x *Ctx) {
	count := 10
	if len(x.argv) == 3 {
		n, ok := resp.ParseInt(x.argv[2])
		if !ok || n < -1 {
			x.error("ERR count should be greater than or equal to -1")
			return
		}
		count = int(n)
		if n == -1 {
			count = x.s.slowlog.len()
		}
	} else if len(x.argv) > 3 {
		x.error(resp.SubcommandSyntax("slowlog", x.argv[1]))
		return
	}
	x.s.slowlog.write(x.w, count)
}

func slowlogLenCommand(x *Ctx) { x.w.Int(int64(x.s.slowlog.len())) }

func slowlogResetCommand(x *Ctx) {
	x.s.slowlog.reset()
	x.w.OK()
}

func slowlogHelpCommand(x *Ctx) {
	writeHelp(x.w, "SLOWLOG", []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN", "    Return the length of the slowlog.",
		"RESET", "    Reset the slowlog.",
	})
}

// roleCommand answers ROLE as a Redis primary or replica would. A node
// outside a cluster is a master with no replicas. In a cluster the
// group's leader is the master, its followers listed with their Raft
// match index as the acknowledged offset (INFO replication's slaveN
// offset), and a follower is a slave of the leader: "connected" while it
// knows one, "connect" while an election runs. Offsets are Raft log
// indexes. A node hosting several groups answers for the first group it
// leads, and is a slave of the first group's leader if it leads none, as
// CLUSTER NODES shows it.
func roleCommand(x *Ctx) {
	w := x.w
	if x.s.cluster == nil {
		w.Array(3)
		w.BulkString("master")
		w.Int(0)
		w.Array(0)
		return
	}
	cl := x.s.cluster
	for _, g := range x.s.groups {
		if g.cl.Leading() { // a node that leads any group is a master (cluster_topology.go)
			cl = g.cl
			break
		}
	}
	v := viewCluster(x.s, cl)
	st := v.status
	if st.Role == "leader" {
		w.Array(3)
		w.BulkString("master")
		w.Int(int64(st.LastIndex))
		w.Array(len(st.Followers))
		for _, f := range st.Followers {
			host, port := hostPort(f.Addr)
			w.Array(3)
			w.BulkString(host)
			w.BulkString(strconv.Itoa(port))
			w.BulkString(strconv.FormatUint(f.MatchIndex, 10))
		}
		return
	}
	host, port, state := "", 0, "connect"
	if v.leader != nil {
		host, port = hostPort(v.leader.Addr)
		state = "connected"
	}
	w.Array(5)
	w.BulkString("slave")
	w.BulkString(host)
	w.Int(int64(port))
	w.BulkString(state)
	w.Int(int64(st.LastIndex))
}
