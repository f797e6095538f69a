package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bbCommandEntry finds name in a COMMAND / COMMAND INFO reply.
func bbCommandEntry(r Reply, name string) (Reply, bool) {
	for _, e := range r.Elems {
		if len(e.Elems) == 10 && e.Elems[0].Str == name {
			return e, true
		}
	}
	return Reply{}, false
}

func TestServerCommandIntrospection(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)

	all := rc.Do("COMMAND")
	if all.Type != '*' || len(all.Elems) < 50 {
		t.Fatalf("COMMAND = %d entries (%c), want the whole table", len(all.Elems), all.Type)
	}
	if r := rc.Do("COMMAND", "COUNT"); r.Int != int64(len(all.Elems)) {
		t.Errorf("COMMAND COUNT = %s, COMMAND has %d entries", r, len(all.Elems))
	}
	for _, want := range []struct {
		name, rendered string
	}{
		{"get", `*10[$"get" :2 *2[+"readonly" +"fast"] :1 :1 :1 *3[+"@read" +"@string" +"@fast"]`},
		{"set", `*10[$"set" :-3 *2[+"write" +"denyoom"] :1 :1 :1 *3[+"@write" +"@string" +"@slow"]`},
		{"mset", `*10[$"mset" :-3 *2[+"write" +"denyoom"] :1 :-1 :2 `},
		{"ping", `*10[$"ping" :-1 *1[+"fast"] :0 :0 :0 `},
	} {
		e, ok := bbCommandEntry(all, want.name)
		if !ok {
			t.Errorf("COMMAND has no %s", want.name)
			continue
		}
		if !strings.HasPrefix(e.String(), want.rendered) {
			t.Errorf("COMMAND entry for %s =\n  %s\nwant prefix\n  %s", want.name, e, want.rendered)
		}
	}
	lmpop, ok := bbCommandEntry(all, "lmpop")
	if !ok || !strings.Contains(lmpop.Elems[2].String(), `+"movablekeys"`) {
		t.Errorf("COMMAND entry for lmpop = %s, want the movablekeys flag", lmpop)
	}
	client, ok := bbCommandEntry(all, "client")
	if !ok || len(client.Elems[9].Elems) < 10 {
		t.Errorf("COMMAND entry for client = %s, want its subcommands", client)
	} else if _, ok := bbCommandEntry(client.Elems[9], "client|list"); !ok {
		t.Errorf("client's subcommands lack client|list: %s", client.Elems[9])
	}

	info := rc.Do("COMMAND", "INFO", "get", "CLIENT|LIST")
	if len(info.Elems) != 2 || info.Elems[0].Elems[0].Str != "get" || info.Elems[1].Elems[0].Str != "client|list" {
		t.Errorf("COMMAND INFO get client|list = %s", info)
	}

	// COMMAND DOCS: a map of name → map with summary, since, group.
	if r := rc.Do("HELLO", "3"); r.Type != '%' {
		t.Fatal(r)
	}
	docs := rc.Do("COMMAND", "DOCS", "get", "nosuchcommand")
	if docs.Type != '%' || len(docs.Elems) != 2 || docs.Elems[0].Str != "get" || docs.Elems[1].Type != '%' {
		t.Fatalf("COMMAND DOCS get nosuchcommand = %s", docs)
	}
	doc := map[string]string{}
	for i := 0; i+1 < len(docs.Elems[1].Elems); i += 2 {
		doc[docs.Elems[1].Elems[i].Str] = docs.Elems[1].Elems[i+1].Str
	}
	if doc["summary"] != "Returns the string value of a key." || doc["since"] != "1.0.0" || doc["group"] != "string" {
		t.Errorf("COMMAND DOCS get = %v", doc)
	}
	if r := rc.Do("COMMAND", "DOCS"); r.Type != '%' || len(r.Elems) != 2*len(all.Elems) {
		t.Errorf("COMMAND DOCS = %d elements, want %d", len(r.Elems), 2*len(all.Elems))
	}
	cdocs := rc.Do("COMMAND", "DOCS", "client")
	if !strings.Contains(cdocs.String(), `$"subcommands"`) || !strings.Contains(cdocs.String(), `$"client|kill"`) {
		t.Errorf("COMMAND DOCS client lacks subcommands: %s", cdocs)
	}
	rc.Do("HELLO", "2")

	names := bbStrings(t, rc.Do("COMMAND", "LIST"))
	for _, n := range []string{"get", "set", "lpush", "client", "client|list", "config|get", "command|docs"} {
		if !slices.Contains(names, n) {
			t.Errorf("COMMAND LIST lacks %s", n)
		}
	}
	if got := bbStrings(t, rc.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|*")); !slices.Contains(got, "client|kill") || slices.Contains(got, "get") {
		t.Errorf("COMMAND LIST FILTERBY PATTERN client|* = %v", got)
	}
	if got := bbStrings(t, rc.Do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "list")); !slices.Contains(got, "lpush") || slices.Contains(got, "get") {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT list = %v", got)
	}
	bbRun(t, rc, []bbStep{
		{"COMMAND LIST FILTERBY MODULE foo", "*0[]"},
		{"COMMAND LIST FILTERBY FOO bar", bbSyntax},
		{"COMMAND LIST FOO", bbSyntax},
		{"COMMAND FOO", bbErr("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")},
		{"COMMAND COUNT x", bbArity("command|count")},
	})
	if help := rc.Do("COMMAND", "HELP"); !strings.HasPrefix(help.String(), `*`) || !strings.Contains(help.String(), `+"GETKEYS <full-command>"`) {
		t.Errorf("COMMAND HELP = %s", help)
	}

	// go-redis parses COMMAND to route commands.
	cmds, err := s.Client(t).Command(ctx(t)).Result()
	if err != nil {
		t.Fatalf("go-redis COMMAND: %v", err)
	}
	if g := cmds["get"]; g == nil || g.Arity != 2 || !g.ReadOnly || g.FirstKeyPos != 1 {
		t.Errorf("go-redis COMMAND get = %+v", g)
	}
}

// TestServerCommandInfoUnknown: COMMAND INFO answers a null for an
// unknown name — in RESP2 the null bulk string ($-1), as addReplyNull
// does, not the null array.
func TestServerCommandInfoUnknown(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{{"COMMAND INFO nosuchcommand", `*1[$nil]`}})
	rc.Do("HELLO", "3")
	bbRun(t, rc, []bbStep{{"COMMAND INFO nosuchcommand", `*1[_]`}})
}

func TestServerCommandGetkeys(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"COMMAND GETKEYS GET a", `*1[$"a"]`},
		{"COMMAND GETKEYS SET k v EX 10", `*1[$"k"]`},
		{"COMMAND GETKEYS MSET a 1 b 2 c 3", `*3[$"a" $"b" $"c"]`},
		{"COMMAND GETKEYS DEL a b c", `*3[$"a" $"b" $"c"]`},
		{"COMMAND GETKEYS RENAME a b", `*2[$"a" $"b"]`},
		{"COMMAND GETKEYS LMPOP 2 a b LEFT", `*2[$"a" $"b"]`},
		{"COMMAND GETKEYS LMPOP 1 a RIGHT COUNT 5", `*1[$"a"]`},
		{"COMMAND GETKEYS BLMPOP 0 3 a b c LEFT", `*3[$"a" $"b" $"c"]`},
		{"COMMAND GETKEYS BLPOP a b 0", `*2[$"a" $"b"]`},
		{"COMMAND GETKEYS LMOVE src dst LEFT RIGHT", `*2[$"src" $"dst"]`},
		{"COMMAND GETKEYS OBJECT ENCODING k", `*1[$"k"]`},
		{"COMMAND GETKEYS nosuch a", bbErr("ERR Invalid command specified")},
		{"COMMAND GETKEYS GET", bbErr("ERR Invalid number of arguments specified for command")},
		{"COMMAND GETKEYS GET a b", bbErr("ERR Invalid number of arguments specified for command")},
		{"COMMAND GETKEYS PING", bbErr("ERR The command has no key arguments")},
		{"COMMAND GETKEYS CLIENT LIST", bbErr("ERR The command has no key arguments")},
		{"COMMAND GETKEYS", bbArity("command|getkeys")},
	})
}

// TestServerCommandGetkeysErrors holds the GETKEYS errors of Redis's
// getKeysSubcommandImpl: "no key arguments" is checked before the
// arity, and a movable-keys command whose keys cannot be found is
// "Invalid arguments specified for command".
func TestServerCommandGetkeysErrors(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"COMMAND GETKEYS ECHO", bbErr("ERR The command has no key arguments")},
		{"COMMAND GETKEYS LMPOP 0 a LEFT", bbErr("ERR Invalid arguments specified for command")},
		{"COMMAND GETKEYS LMPOP x a LEFT", bbErr("ERR Invalid arguments specified for command")},
		{"COMMAND GETKEYS LMPOP 5 a LEFT", bbErr("ERR Invalid arguments specified for command")},
	})
}

func TestServerInfo(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SET k v", bbOK},
		{"SET e v EX 100", bbOK},
		{"GET k", bbBulk("v")},
		{"GET nokey", bbNilBulk},
	})
	text := bbInfoText(t, rc)
	var headers []string
	for _, line := range strings.Split(text, "\r\n") {
		if strings.HasPrefix(line, "# ") {
			headers = append(headers, line[2:])
		}
	}
	wantHeaders := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Errorstats", "Cluster", "Keyspace"}
	i := 0
	for _, h := range headers {
		if i < len(wantHeaders) && h == wantHeaders[i] {
			i++
		}
	}
	if i != len(wantHeaders) {
		t.Errorf("INFO section headers = %v, want %v in this order", headers, wantHeaders)
	}
	if slices.Contains(headers, "Commandstats") {
		t.Errorf("default INFO includes Commandstats")
	}
	if !strings.HasSuffix(text, "\r\n") || strings.Contains(text, "\n\n") {
		t.Errorf("INFO lines must end in CRLF")
	}
	info := bbInfo(t, rc)
	for _, f := range []string{
		"redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id", "tcp_port", "uptime_in_seconds", "hz",
		"connected_clients", "blocked_clients", "maxclients",
		"used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak", "maxmemory", "maxmemory_policy", "mem_fragmentation_ratio",
		"loading", "rdb_changes_since_last_save", "rdb_last_save_time", "aof_enabled",
		"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec", "total_net_input_bytes",
		"total_net_output_bytes", "rejected_connections", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
		"role", "connected_slaves", "master_replid", "master_repl_offset",
		"used_cpu_sys", "used_cpu_user", "cluster_enabled", "db0",
	} {
		if _, ok := info[f]; !ok {
			t.Errorf("INFO has no %s field", f)
		}
	}
	checks := map[string]string{
		"redis_mode": "standalone", "role": "master", "cluster_enabled": "0", "tcp_port": strconv.Itoa(s.Port),
		"connected_clients": "1", "blocked_clients": "0", "maxclients": "10000", "maxmemory_policy": "noeviction",
		"keyspace_hits": "1", "keyspace_misses": "1",
	}
	if !strings.HasPrefix(info["db0"], "keys=2,expires=1,") {
		t.Errorf("INFO db0 = %q, want keys=2,expires=1,...", info["db0"])
	}
	for k, v := range checks {
		if info[k] != v {
			t.Errorf("INFO %s = %q, want %q", k, info[k], v)
		}
	}
	if pid, _ := strconv.Atoi(info["process_id"]); pid != s.cmd.Process.Pid {
		t.Errorf("INFO process_id = %s, want %d", info["process_id"], s.cmd.Process.Pid)
	}
	for _, f := range []string{"used_memory", "used_memory_rss", "total_commands_processed", "rdb_changes_since_last_save", "uptime_in_seconds"} {
		if n, err := strconv.ParseInt(info[f], 10, 64); err != nil || (n <= 0 && f != "uptime_in_seconds") {
			t.Errorf("INFO %s = %q, want a positive integer", f, info[f])
		}
	}
	if n, _ := strconv.Atoi(info["rdb_changes_since_last_save"]); n < 2 {
		t.Errorf("rdb_changes_since_last_save = %d after two writes", n)
	}
	if f, err := strconv.ParseFloat(info["used_cpu_sys"], 64); err != nil || f < 0 {
		t.Errorf("used_cpu_sys = %q", info["used_cpu_sys"])
	}
	if _, err := strconv.Atoi(info["instantaneous_ops_per_sec"]); err != nil {
		t.Errorf("instantaneous_ops_per_sec = %q", info["instantaneous_ops_per_sec"])
	}

	// Sections by name, several at once, any case; "all"/"everything"
	// add commandstats.
	two := bbInfoText(t, rc, "server", "CLIENTS")
	if !strings.HasPrefix(two, "# Server\r\n") || !strings.Contains(two, "# Clients\r\n") || strings.Contains(two, "# Memory") {
		t.Errorf("INFO server CLIENTS = %q", two)
	}
	for _, sec := range []string{"all", "everything"} {
		if txt := bbInfoText(t, rc, sec); !strings.Contains(txt, "# Commandstats\r\n") || !strings.Contains(txt, "# Keyspace\r\n") {
			t.Errorf("INFO %s lacks Commandstats or Keyspace", sec)
		}
	}
	if txt := bbInfoText(t, rc, "nosuchsection"); txt != "" {
		t.Errorf("INFO nosuchsection = %q, want empty", txt)
	}
	if txt := bbInfoText(t, rc, "keyspace"); txt != "# Keyspace\r\n"+"db0:"+info["db0"]+"\r\n" {
		t.Errorf("INFO keyspace = %q", txt)
	}

	// RESP3: a verbatim string; go-redis reads it as text.
	r3 := s.Raw(t)
	r3.Do("HELLO", "3")
	if r := r3.Do("INFO", "server"); r.Type != '=' || !strings.HasPrefix(r.Str, "txt:# Server") {
		t.Errorf("RESP3 INFO = %c %.40q, want a txt verbatim string", r.Type, r.Str)
	}
	if txt, err := s.Client(t).Info(ctx(t), "server").Result(); err != nil || !strings.Contains(txt, "redis_version:") {
		t.Errorf("go-redis INFO = %.60q, %v", txt, err)
	}
}

func TestServerInfoCounters(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"CONFIG RESETSTAT", bbOK},
		{"SET a 1", bbOK},
		{"SET b 2", bbOK},
		{"SET c 3", bbOK},
		{"GET a", bbBulk("1")},
		{"INCR a", ":2"},
		{"RPUSH l x", ":1"},
		{"INCR l", bbWrongType},
	})
	stats := bbInfoText(t, rc, "commandstats")
	lines := map[string]string{}
	for _, line := range strings.Split(stats, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			lines[k] = v
		}
	}
	for cmd, want := range map[string]string{
		"cmdstat_set":  "calls=3,",
		"cmdstat_get":  "calls=1,",
		"cmdstat_incr": "calls=2,",
	} {
		if !strings.HasPrefix(lines[cmd], want) {
			t.Errorf("%s = %q, want prefix %q", cmd, lines[cmd], want)
		}
	}
	if !strings.HasSuffix(lines["cmdstat_incr"], ",rejected_calls=0,failed_calls=1") {
		t.Errorf("cmdstat_incr = %q, want failed_calls=1", lines["cmdstat_incr"])
	}
	if !strings.Contains(lines["cmdstat_config|resetstat"], "calls=1,") {
		t.Errorf("cmdstat_config|resetstat = %q (subcommands are listed as container|sub)", lines["cmdstat_config|resetstat"])
	}
	for _, k := range []string{"usec=", "usec_per_call="} {
		if !strings.Contains(lines["cmdstat_set"], k) {
			t.Errorf("cmdstat_set = %q lacks %s", lines["cmdstat_set"], k)
		}
	}
	info := bbInfo(t, rc, "stats")
	if n, _ := strconv.Atoi(info["total_commands_processed"]); n < 8 {
		t.Errorf("total_commands_processed = %s after 8 commands", info["total_commands_processed"])
	}
	if info["total_error_replies"] != "1" {
		t.Errorf("total_error_replies = %s, want 1", info["total_error_replies"])
	}
	bbRun(t, rc, []bbStep{{"CONFIG RESETSTAT", bbOK}})
	if txt := bbInfoText(t, rc, "commandstats"); strings.Contains(txt, "cmdstat_set") {
		t.Errorf("commandstats after RESETSTAT still has cmdstat_set: %q", txt)
	}
	if n := bbInfoInt(t, rc, "stats", "keyspace_hits"); n != 0 {
		t.Errorf("keyspace_hits after RESETSTAT = %d", n)
	}
}

// TestServerInfoRejectedCalls: a call refused before it runs (wrong
// arity, NOAUTH) counts as rejected_calls of that command, as in Redis.
func TestServerInfoRejectedCalls(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"GET", bbArity("get")},
		{"GET a b", bbArity("get")},
	})
	txt := bbInfoText(t, rc, "commandstats")
	if !strings.Contains(txt, "cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=2,failed_calls=0\r\n") {
		t.Errorf("INFO commandstats after two wrong-arity GETs = %q, want cmdstat_get with rejected_calls=2", txt)
	}
}

// TestServerInfoErrorstats: errors are counted per error code
// (errorstat_WRONGTYPE, errorstat_NOAUTH...), not all as ERR.
func TestServerInfoErrorstats(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"RPUSH l x", ":1"},
		{"GET l", bbWrongType},
		{"INCR l", bbWrongType},
		{"SET", bbArity("set")},
	})
	txt := bbInfoText(t, rc, "errorstats")
	if !strings.Contains(txt, "errorstat_WRONGTYPE:count=2\r\n") || !strings.Contains(txt, "errorstat_ERR:count=1\r\n") {
		t.Errorf("INFO errorstats = %q, want errorstat_ERR:count=1 and errorstat_WRONGTYPE:count=2", txt)
	}
}

// TestServerInfoNetBytes: total_net_input_bytes / total_net_output_bytes
// count the traffic.
func TestServerInfoNetBytes(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	big := strings.Repeat("x", 10000)
	bbRun(t, rc, []bbStep{{"SET k " + big, bbOK}, {"GET k", bbBulk(big)}})
	info := bbInfo(t, rc, "stats")
	in, _ := strconv.Atoi(info["total_net_input_bytes"])
	out, _ := strconv.Atoi(info["total_net_output_bytes"])
	if in < 10000 || out < 10000 {
		t.Errorf("total_net_input_bytes=%s total_net_output_bytes=%s after 10 KB each way", info["total_net_input_bytes"], info["total_net_output_bytes"])
	}
}

func TestServerConfig(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	get := func(pattern string) map[string]string {
		t.Helper()
		r := rc.Do("CONFIG", "GET", pattern)
		m := map[string]string{}
		for i := 0; i+1 < len(r.Elems); i += 2 {
			m[r.Elems[i].Str] = r.Elems[i+1].Str
		}
		return m
	}
	bbRun(t, rc, []bbStep{
		{"CONFIG GET maxclients", `*2[$"maxclients" $"10000"]`},
		{"CONFIG GET nosuchparam", `*0[]`},
		{"CONFIG GET", bbArity("config|get")},
	})
	sl := get("slowlog-*")
	if len(sl) != 2 || sl["slowlog-log-slower-than"] != "10000" || sl["slowlog-max-len"] != "128" {
		t.Errorf("CONFIG GET slowlog-* = %v", sl)
	}
	if m := get("*max-*-size"); m["list-max-listpack-size"] != "-2" || m["list-max-ziplist-size"] != "-2" {
		t.Errorf("CONFIG GET *max-*-size = %v, want the listpack name and its ziplist alias", m)
	}
	if m := get("?imeout"); len(m) != 1 || m["timeout"] != "0" {
		t.Errorf("CONFIG GET ?imeout = %v", m)
	}
	if m := get("*"); len(m) < 20 || m["port"] != strconv.Itoa(s.Port) || m["dir"] == "" || m["databases"] != "16" {
		t.Errorf("CONFIG GET * = %v", m)
	}
	r := rc.Do("CONFIG", "GET", "maxclients", "timeout", "maxclients")
	if len(r.Elems) != 4 {
		t.Errorf("CONFIG GET maxclients timeout maxclients = %s, want each parameter once", r)
	}

	bbRun(t, rc, []bbStep{
		{"CONFIG SET maxclients 123 timeout 7", bbOK},
		{"CONFIG GET maxclients", `*2[$"maxclients" $"123"]`},
		{"CONFIG GET timeout", `*2[$"timeout" $"7"]`},
		// All or nothing: one bad pair and none applies.
		{"CONFIG SET maxclients 200 timeout abc", bbErr("ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer")},
		{"CONFIG SET maxclients 200 nosuch 1", bbErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")},
		{"CONFIG GET maxclients", `*2[$"maxclients" $"123"]`},
		{"CONFIG SET timeout 1 timeout 2", bbErr("ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter")},
		{"CONFIG SET timeout 0 maxclients 10000", bbOK},
		{"CONFIG SET databases 5", bbErr("ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")},
		{"CONFIG SET nosuchparam 1", bbErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosuchparam'")},
		{"CONFIG SET maxclients abc", bbErr("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")},
		{"CONFIG SET maxmemory abc", bbErr("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")},
		{"CONFIG SET protected-mode maybe", bbErr("ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument must be 'yes' or 'no'")},
		{"CONFIG SET maxmemory 100mb", bbOK},
		{"CONFIG GET maxmemory", `*2[$"maxmemory" $"104857600"]`},
		{"CONFIG SET maxmemory 1k", bbOK},
		{"CONFIG GET maxmemory", `*2[$"maxmemory" $"1000"]`},
		{"CONFIG SET maxmemory 0", bbOK},
		{"CONFIG SET list-max-ziplist-size 64", bbOK},
		{"CONFIG GET list-max-listpack-size", `*2[$"list-max-listpack-size" $"64"]`},
		{"CONFIG SET MaxClients 9999", bbOK},
		{"CONFIG GET maxclients", `*2[$"maxclients" $"9999"]`},
		{"CONFIG SET maxclients", bbArity("config|set")},
		{"CONFIG SET maxclients 1 timeout", bbSyntax},
		{"CONFIG RESETSTAT x", bbArity("config|resetstat")},
		{"CONFIG FOO", bbErr("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")},
	})
	if help := rc.Do("CONFIG", "HELP"); !strings.Contains(help.String(), `+"GET <pattern>"`) || !strings.Contains(help.String(), `+"RESETSTAT"`) {
		t.Errorf("CONFIG HELP = %s", help)
	}

	// RESP3: CONFIG GET is a map; go-redis returns map[string]string.
	r3 := s.Raw(t)
	r3.Do("HELLO", "3")
	if r := r3.Do("CONFIG", "GET", "maxclients"); r.String() != `%1[$"maxclients" $"9999"]` {
		t.Errorf("RESP3 CONFIG GET = %s", r)
	}
	m, err := s.Client(t).ConfigGet(ctx(t), "slowlog*").Result()
	if err != nil || len(m) != 2 || m["slowlog-max-len"] != "128" {
		t.Errorf("go-redis CONFIG GET = %v, %v", m, err)
	}
	if err := s.Client2(t).ConfigSet(ctx(t), "timeout", "0").Err(); err != nil {
		t.Errorf("go-redis CONFIG SET: %v", err)
	}
}

func TestServerTime(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	r := rc.Do("TIME")
	if r.Type != '*' || len(r.Elems) != 2 || r.Elems[0].Type != '$' || r.Elems[1].Type != '$' {
		t.Fatalf("TIME = %s, want two bulk strings", r)
	}
	sec, _ := strconv.ParseInt(r.Elems[0].Str, 10, 64)
	usec, err := strconv.ParseInt(r.Elems[1].Str, 10, 64)
	if d := time.Since(time.Unix(sec, usec*1000)); d < -2*time.Second || d > 2*time.Second || err != nil || usec < 0 || usec > 999999 {
		t.Errorf("TIME = %s, %v away from the local clock", r, d)
	}
	bbRun(t, rc, []bbStep{{"TIME x", bbArity("time")}})
	tm, err := s.Client(t).Time(ctx(t)).Result()
	if err != nil || time.Since(tm).Abs() > 2*time.Second {
		t.Errorf("go-redis TIME = %v, %v", tm, err)
	}
}

func TestServerSlowlog(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SLOWLOG LEN", ":0"},
		{"SLOWLOG GET", "*0[]"},
		{"CONFIG SET slowlog-log-slower-than 0", bbOK},
		{"SLOWLOG RESET", bbOK},
		{"CLIENT SETNAME slowpoke", bbOK},
		{"SET k v", bbOK},
	})
	long := strings.Repeat("a", 200)
	args := []string{"RPUSH", "many"}
	for range 40 {
		args = append(args, "e")
	}
	rc.Do(args...)
	rc.Do("SET", "long", long)

	n := rc.Do("SLOWLOG", "LEN")
	if n.Int < 4 {
		t.Fatalf("SLOWLOG LEN = %s with slowlog-log-slower-than 0", n)
	}
	entries := rc.Do("SLOWLOG", "GET", "-1")
	if int64(len(entries.Elems)) < n.Int {
		t.Errorf("SLOWLOG GET -1 = %d entries, LEN said %d", len(entries.Elems), n.Int)
	}
	if e := rc.Do("SLOWLOG", "GET", "3"); len(e.Elems) != 3 {
		t.Fatalf("SLOWLOG GET 3 = %s", e)
	}
	e := entries
	first := e.Elems[0]
	if len(first.Elems) != 6 || first.Elems[0].Type != ':' || first.Elems[1].Type != ':' || first.Elems[2].Type != ':' {
		t.Fatalf("SLOWLOG entry = %s, want id, timestamp, micros, argv, addr, name", first)
	}
	if ts := first.Elems[1].Int; time.Since(time.Unix(ts, 0)).Abs() > 5*time.Second {
		t.Errorf("SLOWLOG timestamp %d is not now", ts)
	}
	var setLong, rpush Reply
	for _, en := range e.Elems {
		switch argv := en.Elems[3].Elems; {
		case argv[0].Str == "SET" && argv[1].Str == "long":
			setLong = en
		case argv[0].Str == "RPUSH":
			rpush = en
		}
	}
	if setLong.Elems == nil || setLong.Elems[3].String() != `*3[$"SET" $"long" $"`+strings.Repeat("a", 128)+`... (72 more bytes)"]` {
		t.Errorf("SLOWLOG entry for a 200-byte argument = %s, want it cut at 128 bytes", setLong)
	}
	if rpush.Elems == nil || len(rpush.Elems[3].Elems) != 32 || rpush.Elems[3].Elems[31].Str != "... (11 more arguments)" {
		t.Errorf("SLOWLOG entry for 42 arguments = %s, want 31 kept and \"... (11 more arguments)\"", rpush)
	}
	if setLong.Elems != nil && (setLong.Elems[4].Str != rc.Conn.LocalAddr().String() || setLong.Elems[5].Str != "slowpoke") {
		t.Errorf("SLOWLOG entry client = %s %s, want %s slowpoke", setLong.Elems[4], setLong.Elems[5], rc.Conn.LocalAddr())
	}
	if e.Elems[0].Elems[0].Int <= e.Elems[1].Elems[0].Int {
		t.Errorf("SLOWLOG ids are not newest first: %d then %d", e.Elems[0].Elems[0].Int, e.Elems[1].Elems[0].Int)
	}

	bbRun(t, rc, []bbStep{
		{"SLOWLOG GET -2", bbErr("ERR count should be greater than or equal to -1")},
		{"SLOWLOG GET abc", bbErr("ERR count should be greater than or equal to -1")},
		{"SLOWLOG LEN x", bbArity("slowlog|len")},
		{"SLOWLOG FOO", bbErr("ERR unknown subcommand 'FOO'. Try SLOWLOG HELP.")},
		{"SLOWLOG", bbArity("slowlog")},
		{"CONFIG SET slowlog-max-len 5", bbOK},
	})
	for range 10 {
		rc.Do("PING")
	}
	bbRun(t, rc, []bbStep{
		{"SLOWLOG LEN", ":5"},
		{"CONFIG SET slowlog-log-slower-than -1", bbOK}, // disabled
		{"SLOWLOG RESET", bbOK},
		{"PING", bbStatus("PONG")},
		{"SLOWLOG LEN", ":0"},
		{"CONFIG SET slowlog-log-slower-than 10000000", bbOK},
		{"SLOWLOG GET 0", "*0[]"},
		{"PING", bbStatus("PONG")},
		{"SLOWLOG LEN", ":0"}, // faster than 10 s: not logged
	})
	if help := rc.Do("SLOWLOG", "HELP"); !strings.Contains(help.String(), `+"RESET"`) {
		t.Errorf("SLOWLOG HELP = %s", help)
	}
}

// TestServerSlowlogRedaction: SLOWLOG must not keep passwords. Redis
// replaces AUTH's and HELLO AUTH's credentials and CONFIG SET
// requirepass's value with "(redacted)".
func TestServerSlowlogRedaction(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"CONFIG SET slowlog-log-slower-than 0", bbOK},
		{"SLOWLOG RESET", bbOK},
		{"AUTH default secretpw1", bbOK},
		{"CONFIG SET requirepass secretpw2", bbOK},
		{"AUTH secretpw2", bbOK},
	})
	if r := rc.Do("HELLO", "2", "AUTH", "default", "secretpw2"); r.Type != '*' {
		t.Fatalf("HELLO 2 AUTH = %s", r)
	}
	log := rc.Do("SLOWLOG", "GET", "-1").String()
	if strings.Contains(log, "secretpw") {
		t.Errorf("SLOWLOG holds a password: %s", log)
	}
	for _, want := range []string{
		`*3[$"AUTH" $"(redacted)" $"(redacted)"]`,
		`*4[$"CONFIG" $"SET" $"requirepass" $"(redacted)"]`,
		`*2[$"AUTH" $"(redacted)"]`,
		`*5[$"HELLO" $"2" $"AUTH" $"(redacted)" $"(redacted)"]`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("SLOWLOG lacks %s", want)
		}
	}
}

func TestServerShutdown(t *testing.T) {
	sp := StartServer(t, "--requirepass", "pw")
	rp := sp.Raw(t)
	bbRun(t, rp, []bbStep{{"SHUTDOWN", bbErr("NOAUTH Authentication required.")}})

	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SHUTDOWN ABORT", bbErr("ERR No shutdown in progress.")},
		{"SHUTDOWN FOO", bbSyntax},
		{"MULTI", bbOK},
		{"SHUTDOWN", bbErr("ERR Command not allowed inside a transaction")},
		{"DISCARD", bbOK},
		{"PING", bbStatus("PONG")},
	})
	rc.Send(Encode("SHUTDOWN", "NOSAVE"))
	if r, err := rc.TryRead(10 * time.Second); err == nil {
		t.Errorf("SHUTDOWN replied %s; a successful SHUTDOWN closes the connection without a reply", r)
	}
	select {
	case <-s.Exited():
	case <-time.After(15 * time.Second):
		t.Fatalf("the server did not exit within 15s of SHUTDOWN")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status after SHUTDOWN = %d, want 0\n%s", code, s.Output())
	}
	// The other server was not affected.
	bbRun(t, rp, []bbStep{{"AUTH pw", bbOK}, {"PING", bbStatus("PONG")}})
}

func TestServerUnknownCommandsAndArity(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"foo a b", bbErr("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")},
		{"foo", bbErr("ERR unknown command 'foo', with args beginning with: ")},
		{"FOO \"x y\"", bbErr("ERR unknown command 'FOO', with args beginning with: 'x y' ")},
		{"\"\"", bbErr("ERR unknown command '', with args beginning with: ")},
		{"CLIENT x", bbErr("ERR unknown subcommand 'x'. Try CLIENT HELP.")},
		{"CONFIG x y", bbErr("ERR unknown subcommand 'x'. Try CONFIG HELP.")},
		{"OBJECT x", bbErr("ERR unknown subcommand 'x'. Try OBJECT HELP.")},
		{"COMMAND x", bbErr("ERR unknown subcommand 'x'. Try COMMAND HELP.")},
		{"SLOWLOG x", bbErr("ERR unknown subcommand 'x'. Try SLOWLOG HELP.")},
		{"MEMORY x", bbErr("ERR unknown subcommand 'x'. Try MEMORY HELP.")},
		{"GET", bbArity("get")},
		{"get a b", bbArity("get")},
		{"SET k", bbArity("set")},
		{"LPUSH q", bbArity("lpush")},
		{"CLIENT", bbArity("client")},
		{"CONFIG", bbArity("config")},
		{"CONFIG GET", bbArity("config|get")},
		{"CLIENT KILL", bbArity("client|kill")},
		{"OBJECT ENCODING", bbArity("object|encoding")},
		{"PING", bbStatus("PONG")}, // errors never close the connection
	})
	// Long names and arguments are cut at 128 bytes.
	long := strings.Repeat("z", 200)
	if r := rc.Do(long); r.String() != bbErr("ERR unknown command '"+long[:128]+"', with args beginning with: ") {
		t.Errorf("a 200-byte unknown command = %s", r)
	}
	a, b := "a"+strings.Repeat("x", 100), "b"+strings.Repeat("y", 100)
	if r := rc.Do("foo", a, b, "c"); r.String() != bbErr("ERR unknown command 'foo', with args beginning with: '"+a+"' '"+b[:24]+"' ") {
		t.Errorf("unknown command with long args = %s", r)
	}
}

// bbConfFile writes a config file into a fresh directory.
func bbConfFile(t *testing.T, text string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "redstream.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

const bbConfText = `# a redis.conf-style file

maxclients 77
timeout 0
databases 5
requirepass "pass word"
  slowlog-max-len 64  
list-max-ziplist-size 128
proto-max-bulk-len 2mb
`

// bbCheckConfigured checks a server started with bbConfText.
func bbCheckConfigured(t *testing.T, s *Server, maxclients string) {
	t.Helper()
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"GET k", bbErr("NOAUTH Authentication required.")},
		{"AUTH \"pass word\"", bbOK},
		{"CONFIG GET maxclients", `*2[$"maxclients" $"` + maxclients + `"]`},
		{"CONFIG GET databases", `*2[$"databases" $"5"]`},
		{"CONFIG GET slowlog-max-len", `*2[$"slowlog-max-len" $"64"]`},
		{"CONFIG GET list-max-listpack-size", `*2[$"list-max-listpack-size" $"128"]`},
		{"CONFIG GET proto-max-bulk-len", `*2[$"proto-max-bulk-len" $"2097152"]`},
		{"SELECT 4", bbOK},
		{"SELECT 5", bbErr("ERR DB index is out of range")},
	})
	if cf := bbInfo(t, rc, "server")["config_file"]; !strings.HasSuffix(cf, "redstream.conf") || !filepath.IsAbs(cf) {
		t.Errorf("INFO config_file = %q, want the absolute path of the file", cf)
	}
}

// TestServerConfigFile starts the server the way redis-server is started:
// "server <file> --directive value ...", flags after the file and
// overriding it (StartServerWithConfig).
func TestServerConfigFile(t *testing.T) {
	bbCheckConfigured(t, StartServerWithConfig(t, bbConfText), "77")
	bbCheckConfigured(t, StartServerWithConfig(t, bbConfText, "--maxclients", "88"), "88")
}

// TestServerConfigFileFlagsFirst is TestServerConfigFile with the flags
// before the file.
func TestServerConfigFileFlagsFirst(t *testing.T) {
	dir, path := bbConfFile(t, bbConfText)
	first := startProcess(t, dir, []string{"server", "--port", "random", "--dir", dir, path})
	bbCheckConfigured(t, first, "77")
	first.Stop() // one server per data directory
	bbCheckConfigured(t, startProcess(t, dir, []string{"server", "--port", "random", "--dir", dir, "--maxclients", "88", path}), "88")
}

// bbRunBinary runs the redstream binary to completion and returns its
// exit status and output.
func bbRunBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cx, binary, args...)
	out, err := cmd.CombinedOutput()
	if cx.Err() != nil {
		t.Fatalf("redstream %v did not exit within 30s:\n%s", args, out)
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running redstream: %v", err)
		}
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func TestServerConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, conf, line, mention string
	}{
		{"unknown directive", "maxclients 10\n# comment\nnosuchdirective yes\n", ":3", "nosuchdirective"},
		{"bad value", "\n\nmaxclients abc\n", ":3", "maxclients"},
		{"wrong argument count", "timeout\n", ":1", "timeout"},
		{"unbalanced quotes", "requirepass \"abc\n", ":1", "requirepass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := bbConfFile(t, tc.conf)
			code, out := bbRunBinary(t, "server", "--port", "random", "--dir", dir, path)
			if code == 0 {
				t.Fatalf("redstream started with a bad config file (exit 0):\n%s", out)
			}
			if !strings.Contains(out, "redstream.conf"+tc.line) || !strings.Contains(out, tc.mention) {
				t.Errorf("error output does not name %s%s and %q:\n%s", path, tc.line, tc.mention, out)
			}
			if strings.Contains(out, "ready to accept connections") {
				t.Errorf("the server became ready despite the error:\n%s", out)
			}
		})
	}
	// A config file that does not exist is an error too.
	code, out := bbRunBinary(t, "server", "--port", "random", filepath.Join(t.TempDir(), "missing.conf"))
	if code == 0 || !strings.Contains(out, "missing.conf") {
		t.Errorf("missing config file: exit %d, output:\n%s", code, out)
	}
}
