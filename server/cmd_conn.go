package server

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/redstream/redstream/resp"
)

var connectionSpecs = []spec{
	{name: "ping", arity: -1, flags: "fast", group: "connection", since: "1.0.0",
		syntax: "[message]", summary: "Returns the server's liveliness response.", run: pingCommand},
	{name: "echo", arity: 2, flags: "fast", group: "connection", since: "1.0.0",
		syntax: "message", summary: "Returns the given string.", run: echoCommand},
	{name: "quit", arity: -1, flags: "noscript loading stale fast no_auth allow_busy", group: "connection", since: "1.0.0",
		summary: "Closes the connection.", run: quitCommand},
	{name: "reset", arity: 1, flags: "noscript loading stale fast no_auth allow_busy", group: "connection", since: "6.2.0",
		summary: "Resets the connection.", run: resetCommand},
	{name: "auth", arity: -2, flags: "noscript loading stale fast no_auth allow_busy", group: "connection", since: "1.0.0",
		syntax: "[username] password", summary: "Authenticates the connection.", run: authCommand},
	{name: "hello", arity: -1, flags: "noscript loading stale fast no_auth allow_busy", group: "connection", since: "6.0.0",
		syntax: "[protover [AUTH username password] [SETNAME clientname]]", summary: "Handshakes with the server.", run: helloCommand},
	{name: "select", arity: 2, flags: "loading stale fast", group: "connection", since: "1.0.0",
		syntax: "index", summary: "Changes the selected database.", run: selectCommand},
	{name: "client", arity: -2, flags: "", group: "connection", since: "2.4.0", summary: "A container for client connection commands."},
	{name: "client|id", arity: 2, flags: "noscript loading stale", group: "connection", since: "5.0.0",
		summary: "Returns the unique client ID of the connection.", run: clientIDCommand},
	{name: "client|setname", arity: 3, flags: "noscript loading stale", group: "connection", since: "2.6.9",
		syntax: "connection-name", summary: "Sets the connection name.", run: clientSetnameCommand},
	{name: "client|getname", arity: 2, flags: "noscript loading stale", group: "connection", since: "2.6.9",
		summary: "Returns the name of the connection.", run: clientGetnameCommand},
	{name: "client|list", arity: -2, flags: "admin noscript loading stale", group: "connection", since: "2.4.0",
		syntax: "[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]", summary: "Lists open connections.", run: clientListCommand},
	{name: "client|info", arity: 2, flags: "noscript loading stale", group: "connection", since: "6.2.0",
		summary: "Returns information about the connection.", run: clientInfoCommand},
	{name: "client|kill", arity: -3, flags: "admin noscript loading stale", group: "connection", since: "2.4.0",
		syntax: "<ip:port | [ID client-id] [TYPE type] [USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME <YES | NO>] [MAXAGE maxage]>", summary: "Terminates open connections.", run: clientKillCommand},
	{name: "client|setinfo", arity: 4, flags: "noscript loading stale", group: "connection", since: "7.2.0",
		syntax: "<LIB-NAME libname | LIB-VER libver>", summary: "Sets information specific to the client or connection.", run: clientSetinfoCommand},
	{name: "client|no-evict", arity: 3, flags: "admin noscript loading stale", group: "connection", since: "7.0.0",
		syntax: "<ON | OFF>", summary: "Sets the client eviction mode of the connection.", run: clientNoEvictCommand},
	{name: "client|no-touch", arity: 3, flags: "noscript loading stale", group: "connection", since: "7.2.0",
		syntax: "<ON | OFF>", summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", run: clientNoTouchCommand},
	{name: "client|reply", arity: 3, flags: "noscript loading stale", group: "connection", since: "3.2.0",
		syntax: "<ON | OFF | SKIP>", summary: "Instructs the server whether to reply to commands.", run: clientReplyCommand},
	{name: "client|unblock", arity: -3, flags: "admin noscript loading stale", group: "connection", since: "5.0.0",
		syntax: "client-id [TIMEOUT | ERROR]", summary: "Unblocks a client blocked by a blocking command from a different connection.", run: clientUnblockCommand},
	{name: "client|help", arity: 2, flags: "loading stale", group: "connection", since: "5.0.0",
		summary: "Returns helpful text about the different subcommands.", run: clientHelpCommand},
}

func pingCommand(x *Ctx) {
	switch len(x.argv) {
	case 1:
		x.w.Status("PONG")
	case 2:
		x.w.Bulk(x.argv[1])
	default:
		x.error(resp.WrongArity("ping"))
	}
}

func echoCommand(x *Ctx) { x.w.Bulk(x.argv[1]) }

func quitCommand(x *Ctx) {
	x.w.OK()
	x.c.quit = true
}

// resetCommand returns the connection to its state right after connect.
func resetCommand(x *Ctx) {
	c := x.c
	c.multi = nil
	x.s.unwatchAll(c)
	c.db = 0
	c.name = ""
	c.replyMode = replyOn
	c.noEvict, c.noTouch = false, false
	c.readonly = false
	c.out.Proto = 2
	c.authed = x.s.cfg.RequirePass == ""
	c.rd.RequireAuth = !c.authed
	x.w.Status("RESET")
}

func authCommand(x *Ctx) {
	var user, pass []byte
	switch len(x.argv) {
	case 2:
		if x.s.cfg.RequirePass == "" {
			x.error(resp.ErrNoPassword)
			return
		}
		user, pass = []byte("default"), x.argv[1]
	case 3:
		user, pass = x.argv[1], x.argv[2]
	default:
		x.error(resp.ErrSyntax)
		return
	}
	if !x.s.checkPassword(user, pass) {
		x.error(resp.ErrWrongPass)
		return
	}
	x.c.setAuthed()
	x.w.OK()
}

// checkPassword authenticates the only user, "default": any password
// when requirepass is unset (Redis's nopass), else requirepass. Lock
// should be held.
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	want := s.cfg.RequirePass
	return want == "" || subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

func (c *Client) setAuthed() {
	c.authed = true
	c.rd.RequireAuth = false
}

func helloCommand(x *Ctx) {
	c := x.c
	ver := int64(0)
	next := 1
	if len(x.argv) >= 2 {
		v, ok := resp.ParseInt(x.argv[1])
		if !ok {
			x.error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			x.error(resp.ErrNoProto)
			return
		}
		ver, next = v, 2
	}
	var user, pass, name []byte
	hasName := false
	for i := next; i < len(x.argv); i++ {
		more := len(x.argv) - 1 - i
		switch opt := x.argv[i]; {
		case bytes.EqualFold(opt, []byte("AUTH")) && more >= 2:
			user, pass = x.argv[i+1], x.argv[i+2]
			i += 2
		case bytes.EqualFold(opt, []byte("SETNAME")) && more >= 1:
			name, hasName = x.argv[i+1], true
			if msg := validateClientName(name); msg != "" {
				x.error(msg)
				return
			}
			i++
		default:
			x.error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", opt))
			return
		}
	}
	if user != nil {
		if !x.s.checkPassword(user, pass) {
			x.error(resp.ErrWrongPass)
			return
		}
		c.setAuthed()
	}
	if !c.authed {
		x.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if hasName {
		c.name = string(name)
	}
	if ver != 0 {
		c.out.Proto = int(ver)
	}
	w := x.w
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(c.out.Proto))
	w.BulkString("id")
	w.Int(c.id)
	mode, role := "standalone", "master"
	if x.s.cluster != nil {
		mode = "cluster"
		if !x.s.leadsAnyGroup() {
			role = "replica"
		}
	}
	w.BulkString("mode")
	w.BulkString(mode)
	w.BulkString("role")
	w.BulkString(role)
	w.BulkString("modules")
	w.Array(0)
}

// validateClientName returns Redis's error for a name with spaces or
// control characters, or "" if the name is fine.
func validateClientName(name []byte) string {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

func selectCommand(x *Ctx) {
	n, ok := resp.ParseInt(x.argv[1])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	if x.s.cluster != nil && n != 0 {
		x.error(errSelectInCluster)
		return
	}
	if n < 0 || n >= int64(len(x.db.shard.dbs)) {
		x.error(resp.ErrDBIndex)
		return
	}
	x.c.db = int(n)
	x.w.OK()
}

func clientIDCommand(x *Ctx) { x.w.Int(x.c.id) }

func clientSetnameCommand(x *Ctx) {
	if msg := validateClientName(x.argv[2]); msg != "" {
		x.error(msg)
		return
	}
	x.c.name = x.arg(2)
	x.w.OK()
}

func clientGetnameCommand(x *Ctx) {
	if x.c.name == "" {
		x.w.Null()
		return
	}
	x.w.BulkString(x.c.name)
}

func clientSetinfoCommand(x *Ctx) {
	attr := strings.ToLower(x.arg(2))
	if attr != "lib-name" && attr != "lib-ver" {
		x.error(fmt.Sprintf("ERR Unrecognized option '%s'", x.argv[2]))
		return
	}
	for _, ch := range x.argv[3] {
		if ch < '!' || ch > '~' {
			x.error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", attr))
			return
		}
	}
	if attr == "lib-name" {
		x.c.libName = x.arg(3)
	} else {
		x.c.libVer = x.arg(3)
	}
	x.w.OK()
}

// onOff parses an ON|OFF argument, answering a syntax error otherwise.
func onOff(x *Ctx, arg []byte) (on, ok bool) {
	switch {
	case bytes.EqualFold(arg, []byte("on")):
		return true, true
	case bytes.EqualFold(arg, []byte("off")):
		return false, true
	}
	x.error(resp.ErrSyntax)
	return false, false
}

func clientNoEvictCommand(x *Ctx) {
	if on, ok := onOff(x, x.argv[2]); ok {
		x.c.noEvict = on
		x.w.OK()
	}
}

func clientNoTouchCommand(x *Ctx) {
	if on, ok := onOff(x, x.argv[2]); ok {
		x.c.noTouch = on
		x.w.OK()
	}
}

func clientReplyCommand(x *Ctx) {
	switch strings.ToLower(x.arg(2)) {
	case "on":
		x.c.replyMode = replyOn
		x.w.OK()
	case "off":
		x.c.replyMode = replyOff
	case "skip":
		if x.c.replyMode == replyOn {
			x.c.replyMode = replySkipNext
		}
	default:
		x.error(resp.ErrSyntax)
	}
}

func clientUnblockCommand(x *Ctx) {
	id, ok := resp.ParseInt(x.argv[2])
	if !ok {
		x.error(resp.ErrNotInteger)
		return
	}
	withError := false
	if len(x.argv) == 4 {
		switch strings.ToLower(x.arg(3)) {
		case "timeout":
		case "error":
			withError = true
		default:
			x.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	} else if len(x.argv) > 4 {
		x.error(resp.SubcommandSyntax("client", x.argv[1]))
		return
	}
	target := x.s.clients[id]
	if target != nil && x.s.unblockByRequest(target, withError) {
		x.w.Int(1)
	} else {
		x.w.Int(0)
	}
}

func clientListCommand(x *Ctx) {
	var ids map[int64]bool
	for i := 2; i < len(x.argv); i++ {
		switch strings.ToLower(x.arg(i)) {
		case "type":
			if i+1 >= len(x.argv) {
				x.error(resp.ErrSyntax)
				return
			}
			typ := strings.ToLower(x.arg(i + 1))
			if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
				x.error(fmt.Sprintf("ERR Unknown client type '%s'", x.argv[i+1]))
				return
			}
			if typ != "normal" {
				ids = map[int64]bool{} // we have only normal clients
			}
			i++
		case "id":
			if ids == nil {
				ids = map[int64]bool{}
			}
			for i+1 < len(x.argv) {
				id, ok := resp.ParseInt(x.argv[i+1])
				if !ok || id <= 0 {
					x.error("ERR Invalid client ID")
					return
				}
				ids[id] = true
				i++
			}
		default:
			x.error(resp.ErrSyntax)
			return
		}
	}
	var sb strings.Builder
	for _, c := range x.s.sortedClients() {
		if ids == nil || ids[c.id] {
			sb.WriteString(c.infoLine(x.now))
			sb.WriteByte('\n')
		}
	}
	x.w.Verbatim(sb.String())
}

func clientInfoCommand(x *Ctx) { x.w.Verbatim(x.c.infoLine(x.now) + "\n") }

// infoLine is the client's line in CLIENT LIST, field for field Redis's.
// Lock should be held.
func (c *Client) infoLine(nowMs int64) string {
	flags := ""
	if c.multi != nil {
		flags += "x"
	}
	if c.blocked != nil && !c.blocked.done {
		flags += "b"
	}
	if c.casDirty {
		flags += "d"
	}
	if c.unix {
		flags += "U"
	}
	if c.noEvict {
		flags += "e"
	}
	if c.noTouch {
		flags += "T"
	}
	if flags == "" {
		flags = "N"
	}
	multi := -1
	if c.multi != nil {
		multi = len(c.multi.cmds)
	}
	cmd := "NULL"
	if c.lastCmd != nil {
		cmd = c.lastCmd.Name
	}
	now := time.UnixMilli(nowMs)
	held := c.heldOutput()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=0 psub=0 ssub=0 multi=%d watch=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=r cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s io-thread=0",
		c.id, c.raddr, c.laddr, c.fd, c.name, int64(now.Sub(c.created).Seconds()), int64(now.Sub(c.lastInteraction).Seconds()),
		flags, c.db, multi, len(c.watching), c.qbuf.Load(), 16384, held, c.memoryUsage(held), cmd, max(c.out.Proto, 2), c.libName, c.libVer)
}

// clientKillCommand supports the old form (CLIENT KILL addr) and the
// filter form (CLIENT KILL ID n ADDR a ... SKIPME yes).
func clientKillCommand(x *Ctx) {
	if len(x.argv) == 3 {
		addr := x.arg(2)
		for _, c := range x.s.sortedClients() {
			if c.raddr == addr {
				x.s.kill(x.c, c)
				x.w.OK()
				return
			}
		}
		x.error("ERR No such client")
		return
	}
	f, msg := parseKillFilter(x)
	if msg != "" {
		x.error(msg)
		return
	}
	killed := 0
	for _, c := range x.s.sortedClients() {
		if f.matches(x, c) {
			x.s.kill(x.c, c)
			killed++
		}
	}
	x.w.Int(int64(killed))
}

type killFilter struct {
	id          int64
	addr, laddr string
	user        string
	typ         string
	maxAge      int64
	skipMe      bool
}

func parseKillFilter(x *Ctx) (killFilter, string) {
	f := killFilter{skipMe: true}
	if (len(x.argv)-2)%2 != 0 {
		return f, resp.ErrSyntax
	}
	for i := 2; i < len(x.argv); i += 2 {
		val := x.arg(i + 1)
		switch strings.ToLower(x.arg(i)) {
		case "id":
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok || n <= 0 {
				return f, "ERR client-id should be greater than 0"
			}
			f.id = n
		case "addr":
			f.addr = val
		case "laddr":
			f.laddr = val
		case "user":
			if val != "default" {
				return f, fmt.Sprintf("ERR No such user '%s'", val)
			}
			f.user = val
		case "type":
			f.typ = strings.ToLower(val)
			if f.typ != "normal" && f.typ != "master" && f.typ != "replica" && f.typ != "slave" && f.typ != "pubsub" {
				return f, fmt.Sprintf("ERR Unknown client type '%s'", val)
			}
		case "maxage":
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok {
				return f, "ERR maxage is not an integer or out of range"
			}
			if n <= 0 {
				return f, "ERR maxage should be greater than 0"
			}
			f.maxAge = n
		case "skipme":
			switch strings.ToLower(val) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				return f, resp.ErrSyntax
			}
		default:
			return f, resp.ErrSyntax
		}
	}
	return f, ""
}

func (f killFilter) matches(x *Ctx, c *Client) bool {
	switch {
	case f.skipMe && c == x.c:
		return false
	case f.id != 0 && c.id != f.id:
		return false
	case f.addr != "" && c.raddr != f.addr:
		return false
	case f.laddr != "" && c.laddr != f.laddr:
		return false
	case f.user != "" && f.user != "default":
		return false
	case f.typ != "" && f.typ != "normal":
		return false
	case f.maxAge != 0 && time.UnixMilli(x.now).Sub(c.created) < time.Duration(f.maxAge)*time.Second:
		return false
	}
	return true
}

// kill closes another client's connection; killing oneself closes after
// the reply. Lock should be held.
func (s *Server) kill(self, c *Client) {
	if c == self {
		c.quit = true
		return
	}
	// Gone at once, as in Redis: no longer listed, unblocked without a
	// reply, watches dropped.
	s.closeClient(c)
}

// sortedClients lists clients by ID. Lock should be held.
func (s *Server) sortedClients() []*Client {
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	sortClients(out)
	return out
}

func clientHelpCommand(x *Ctx) {
	writeHelp(x.w, "CLIENT", []string{
		"ID", "    Return the ID of the current connection.",
		"GETNAME", "    Return the name of the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
		"LIST [TYPE <type>] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are ID, ADDR, LADDR, USER, TYPE, MAXAGE, SKIPME.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)", "    Will not touch LRU/LFU stats when this mode is on.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
	})
}

// writeHelp writes a container's HELP reply the way Redis formats it.
func writeHelp(w *resp.Writer, container string, lines []string) {
	w.Array(len(lines) + 3)
	w.Status(container + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		w.Status(l)
	}
	w.Status("HELP")
	w.Status("    Print this help.")
}
