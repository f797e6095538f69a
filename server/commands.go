package server

import (
	"sort"
	"strings"

	"github.com/redstream/redstream/resp"
)

// Flags describe a command to the dispatcher, COMMAND INFO and ACL
// categories, as Redis's command flags do.
type Flags uint32

// Command flags. Their names are Redis's (COMMAND INFO prints them).
const (
	FlagWrite    Flags = 1 << iota // changes data: goes through Apply and the log
	FlagReadOnly                   // only reads data
	FlagDenyOOM                    // may grow memory: refused over maxmemory
	FlagAdmin                      // administrative
	FlagNoScript
	FlagBlocking // may block the client
	FlagLoading  // allowed while loading data
	FlagStale
	FlagFast    // O(1) or O(log N)
	FlagNoAuth  // allowed before AUTH
	FlagNoMulti // refused inside MULTI
	FlagAllowBusy
	FlagSkipSlowlog
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagWrite, "write"}, {FlagReadOnly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagNoScript, "noscript"}, {FlagBlocking, "blocking"},
	{FlagLoading, "loading"}, {FlagStale, "stale"}, {FlagFast, "fast"},
	{FlagNoAuth, "no_auth"}, {FlagNoMulti, "no_multi"}, {FlagAllowBusy, "allow_busy"},
	{FlagSkipSlowlog, "skip_slowlog"},
}

func parseFlags(s string) Flags {
	var f Flags
	for _, w := range strings.Fields(s) {
		found := false
		for _, fn := range flagNames {
			if fn.name == w {
				f |= fn.f
				found = true
			}
		}
		if !found {
			panic("server: unknown command flag " + w)
		}
	}
	return f
}

// timeoutKind is what a blocking command answers when it cannot block
// (inside MULTI) and finds nothing: the null its non-blocking form gives.
// A real timeout always answers a null array, as in Redis.
type timeoutKind uint8

const (
	timeoutNullArray timeoutKind = iota // *-1 (BLPOP, BLMPOP, XREAD)
	timeoutNull                         // $-1 (BLMOVE, BRPOPLPUSH, BLMOVEM)
)

// Command is one entry of the command table.
type Command struct {
	Name       string // lower-case full name: "get", "client|kill"
	Arity      int    // exact argument count, or -n for "at least n"
	Flags      Flags
	First      int                 // first key position, 0 = no keys
	Last       int                 // last key position, negative counts from the end
	Step       int                 // distance between keys
	Keys       *keySearch          // where the keys are when they move (LMPOP, XREAD)
	Group      string              // docs group: "list", "string", "generic", ...
	Since      string              // Redis version that introduced it
	Summary    string              // one line, for COMMAND DOCS and the README
	Complexity string              // COMMAND DOCS's complexity (complexity.go)
	Syntax     string              // arguments after the name
	Run        func(*Ctx)          // the handler; nil for containers
	Sub        map[string]*Command // subcommands of a container (CLIENT, CONFIG)
	timeout    timeoutKind         // the null answered inside MULTI
	stat       cmdStat             // guarded by the keyspace lock
	parentName string
}

// cmdStat is one command's line in INFO commandstats.
type cmdStat struct {
	calls, usec, rejected, failed int64
}

// timeoutReply writes what a blocking command answers when it cannot
// block (inside MULTI, or during replay) and finds nothing.
func (c *Command) timeoutReply(w *resp.Writer) {
	if c.timeout == timeoutNull {
		w.Null()
	} else {
		w.NullArray()
	}
}

// keyPositions returns the indexes of argv that are keys.
func (c *Command) keyPositions(argv [][]byte) []int {
	var pos []int
	c.eachKey(argv, func(i int) bool { pos = append(pos, i); return true })
	return pos
}

// eachKey calls fn with each index of argv that is a key, in order, until
// fn returns false, and reports whether it went through them all. The
// common first/last/step layout is walked without a list: cluster mode
// asks every command's keys for their slot.
func (c *Command) eachKey(argv [][]byte, fn func(int) bool) bool {
	if c.Keys != nil {
		for _, i := range c.Keys.find(argv) {
			if !fn(i) {
				return false
			}
		}
		return true
	}
	if c.First == 0 {
		return true
	}
	last := c.Last
	if last < 0 {
		last = len(argv) + last
	}
	for i := c.First; i <= last && i < len(argv); i += c.Step {
		if !fn(i) {
			return false
		}
	}
	return true
}

// aclCategories derives Redis's ACL categories from flags and group.
func (c *Command) aclCategories() []string {
	var cats []string
	add := func(s string) { cats = append(cats, "@"+s) }
	if c.Flags&FlagWrite != 0 {
		add("write")
	}
	if c.Flags&FlagReadOnly != 0 {
		add("read")
	}
	switch c.Group {
	case "generic":
		add("keyspace")
	case "transactions":
		add("transaction")
	case "list", "string", "stream", "connection":
		add(c.Group)
	case "cluster":
		if c.parentName == "" && c.Sub == nil { // READONLY, READWRITE, ASKING: a connection's state
			add("connection")
		}
	}
	if c.Flags&FlagAdmin != 0 {
		add("admin")
		add("dangerous")
	}
	if c.Flags&FlagFast != 0 {
		add("fast")
	} else {
		add("slow")
	}
	if c.Flags&FlagBlocking != 0 {
		add("blocking")
	}
	return cats
}

// spec is the compact form the table is written in.
type spec struct {
	name, flags       string
	arity             int
	first, last, step int
	group, since      string
	syntax, summary   string
	run               func(*Ctx)
}

func (sp spec) command() *Command {
	return &Command{
		Name: sp.name, Arity: sp.arity, Flags: parseFlags(sp.flags),
		First: sp.first, Last: sp.last, Step: sp.step,
		Group: sp.group, Since: sp.since, Syntax: sp.syntax, Summary: sp.summary, Run: sp.run,
		Complexity: complexities[sp.name],
	}
}

// commandTable builds the table: every command redstream serves. Each
// server has its own copy because commands carry their statistics.
func commandTable() map[string]*Command {
	m := make(map[string]*Command)
	for _, sp := range allSpecs() {
		c := sp.command()
		if parent, sub, ok := strings.Cut(sp.name, "|"); ok {
			p := m[parent]
			if p.Sub == nil {
				p.Sub = make(map[string]*Command)
			}
			c.parentName = parent
			p.Sub[sub] = c
			continue
		}
		m[c.Name] = c
	}
	for _, c := range m {
		if tk, ok := blockingTimeouts[c.Name]; ok {
			c.timeout = tk
		}
		if ks, ok := movableKeys[c.Name]; ok {
			c.Keys = &ks
		}
	}
	return m
}

// allSpecs lists the commands family by family; each family's specs live
// beside its handlers.
func allSpecs() []spec {
	var all []spec
	for _, family := range [][]spec{
		connectionSpecs, serverSpecs, persistenceSpecs, keyspaceSpecs, dumpSpecs, transactionSpecs, stringSpecs, listSpecs,
		streamSpecs, delaySpecs, groupSpecs, clusterSpecs, waitSpecs,
	} {
		all = append(all, family...)
	}
	return all
}

var blockingTimeouts = map[string]timeoutKind{
	"blpop": timeoutNullArray, "brpop": timeoutNullArray, "blmpop": timeoutNullArray,
	"blmove": timeoutNull, "brpoplpush": timeoutNull, "blmovem": timeoutNull,
	"xread": timeoutNullArray, "xreadgroup": timeoutNullArray,
}

// A keySearch places the keys of a command whose key positions depend on
// its arguments, the way the command's COMMAND key spec describes them to
// clients; COMMAND GETKEYS follows the same description.
//
//   - Keyword "": argv[At] is a count of keys, and the keys follow it
//     (begin_search index At, find_keys keynum 0 1 1): LMPOP, BLMPOP.
//   - Keyword "STREAMS": the keys follow the first STREAMS at or after
//     argv[At] and fill half of what is left, the IDs being the other half
//     (begin_search keyword STREAMS startfrom At, find_keys range -1 1
//     limit 2): XREAD, XREADGROUP.
type keySearch struct {
	At      int
	Keyword string
}

var movableKeys = map[string]keySearch{
	"lmpop":      {At: 1},
	"blmpop":     {At: 2},
	"xread":      {At: 1, Keyword: "STREAMS"},
	"xreadgroup": {At: 4, Keyword: "STREAMS"}, // after GROUP group consumer, which may be named "streams"
}

// find returns the positions of argv's keys; nil when argv is malformed.
func (k keySearch) find(argv [][]byte) []int {
	first, n := 0, 0
	if k.Keyword == "" {
		if k.At >= len(argv) {
			return nil
		}
		count, ok := resp.ParseInt(argv[k.At])
		if !ok || count <= 0 || int(count) > len(argv)-k.At-1 {
			return nil
		}
		first, n = k.At+1, int(count)
	} else {
		for i := k.At; i < len(argv) && first == 0; i++ {
			if strings.EqualFold(string(argv[i]), k.Keyword) {
				first, n = i+1, (len(argv)-i-1)/2
			}
		}
	}
	pos := make([]int, n)
	for j := range pos {
		pos[j] = first + j
	}
	return pos
}

// sortedCommands returns the table's commands by name (for COMMAND and
// the README).
func sortedCommands(m map[string]*Command) []*Command {
	out := make([]*Command, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CommandDoc describes one command for documentation.
type CommandDoc struct {
	Name    string // as users type it: "LPUSH", "CLIENT LIST"
	Group   string
	Since   string
	Syntax  string
	Summary string
}

// CommandDocs lists every command (subcommands as "CONTAINER SUB"),
// grouped and sorted, for the README and `redstream commands`.
func CommandDocs() []CommandDoc {
	var out []CommandDoc
	for _, c := range sortedCommands(commandTable()) {
		if c.Sub == nil {
			out = append(out, c.doc())
			continue
		}
		for _, sub := range c.sortedSubs() {
			out = append(out, sub.doc())
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

func (c *Command) doc() CommandDoc {
	return CommandDoc{
		Name:    strings.ToUpper(strings.ReplaceAll(c.Name, "|", " ")),
		Group:   c.Group,
		Since:   c.Since,
		Syntax:  c.Syntax,
		Summary: c.Summary,
	}
}
