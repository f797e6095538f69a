package tests

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bbClientLines parses CLIENT LIST / CLIENT INFO text into one field map
// per client.
func bbClientLines(t testing.TB, r Reply) []map[string]string {
	t.Helper()
	if r.Type != '$' && r.Type != '=' {
		t.Fatalf("CLIENT LIST/INFO = %s, want a bulk or verbatim string", r)
	}
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimPrefix(r.Str, "txt:"), "\n") {
		if line == "" {
			continue
		}
		m := map[string]string{}
		for _, f := range strings.Split(line, " ") {
			k, v, _ := strings.Cut(f, "=")
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// bbHelloFields turns a HELLO reply (RESP2 array or RESP3 map) into a
// field → rendered value map.
func bbHelloFields(t testing.TB, r Reply) map[string]string {
	t.Helper()
	if (r.Type != '*' && r.Type != '%') || len(r.Elems) != 14 {
		t.Fatalf("HELLO = %s, want 7 field/value pairs", r)
	}
	m := map[string]string{}
	for i := 0; i < len(r.Elems); i += 2 {
		m[r.Elems[i].Str] = r.Elems[i+1].String()
	}
	return m
}

func TestConnPingEcho(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"PING", bbStatus("PONG")},
		{"ping hello", bbBulk("hello")},
		{"PING \"\"", bbBulk("")},
		{"PING a b", bbArity("ping")},
		{"ECHO hi", bbBulk("hi")},
		{"ECHO \"a b\"", bbBulk("a b")},
		{"ECHO", bbArity("echo")},
		{"ECHO a b", bbArity("echo")},
	})
	// Binary-safe.
	bin := "a\x00b\r\nc"
	if r := rc.Do("ECHO", bin); r.Str != bin || r.Type != '$' {
		t.Errorf("ECHO binary = %s", r)
	}
	if r := rc.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("HELLO 3 = %s", r)
	}
	bbRun(t, rc, []bbStep{
		{"PING", bbStatus("PONG")},
		{"PING x", bbBulk("x")},
	})
	c := s.Client(t)
	if v, err := c.Ping(ctx(t)).Result(); err != nil || v != "PONG" {
		t.Errorf("go-redis PING = %q, %v", v, err)
	}
	if v, err := c.Echo(ctx(t), "hey").Result(); err != nil || v != "hey" {
		t.Errorf("go-redis ECHO = %q, %v", v, err)
	}
}

func TestConnQuit(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	// Pipelined commands after QUIT are not run.
	rc.Send(Encode("SET", "k", "v") + Encode("QUIT") + Encode("SET", "k", "after"))
	if r := rc.Read(); r.String() != bbOK {
		t.Fatalf("SET = %s", r)
	}
	if r := rc.Read(); r.String() != bbOK {
		t.Fatalf("QUIT = %s", r)
	}
	rc.ExpectClosed(5 * time.Second)
	other := s.Raw(t)
	bbRun(t, other, []bbStep{{"GET k", bbBulk("v")}})

	// QUIT is allowed before AUTH.
	sp := StartServer(t, "--requirepass", "pw")
	rp := sp.Raw(t)
	if r := rp.Do("QUIT"); r.String() != bbOK {
		t.Errorf("QUIT before AUTH = %s", r)
	}
	rp.ExpectClosed(5 * time.Second)
}

func TestConnReset(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	other := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SELECT 2", bbOK},
		{"SET indb2 v", bbOK},
		{"CLIENT SETNAME myname", bbOK},
		{"CLIENT NO-EVICT ON", bbOK},
	})
	if r := rc.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("HELLO 3 = %s", r)
	}
	bbRun(t, rc, []bbStep{
		{"WATCH w", bbOK},
		{"MULTI", bbOK},
		{"SET x 1", `+"QUEUED"`},
	})
	if r := rc.Do("RESET"); r.String() != bbStatus("RESET") {
		t.Fatalf("RESET = %s", r)
	}
	bbRun(t, other, []bbStep{{"SET w changed", bbOK}})
	bbRun(t, rc, []bbStep{
		{"EXEC", bbErr("ERR EXEC without MULTI")}, // the transaction is gone
		{"CLIENT GETNAME", bbNilBulk},             // RESP2 again, name cleared
		{"GET indb2", bbNilBulk},                  // back in db 0
		{"EXISTS x", ":0"},                        // the queued SET never ran
		{"MULTI", bbOK},                           // and the WATCH is gone
		{"SET y 1", `+"QUEUED"`},
		{"EXEC", `*1[+"OK"]`},
	})
	if r := rc.Do("CONFIG", "GET", "maxclients"); r.Type != '*' {
		t.Errorf("CONFIG GET after RESET = %s, want a RESP2 array", r)
	}
	info := bbClientLines(t, rc.Do("CLIENT", "INFO"))
	if info[0]["flags"] != "N" || info[0]["db"] != "0" || info[0]["resp"] != "2" || info[0]["name"] != "" {
		t.Errorf("CLIENT INFO after RESET = %v", info[0])
	}
	bbRun(t, rc, []bbStep{{"RESET x", bbArity("reset")}})

	// With requirepass, RESET de-authenticates.
	sp := StartServer(t, "--requirepass", "pw")
	rp := sp.Raw(t)
	bbRun(t, rp, []bbStep{
		{"AUTH pw", bbOK},
		{"GET k", bbNilBulk},
		{"RESET", bbStatus("RESET")},
		{"GET k", bbErr("NOAUTH Authentication required.")},
		{"AUTH pw", bbOK},
		{"GET k", bbNilBulk},
	})
}

func TestConnAuthWithoutPassword(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"AUTH pw", bbErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")},
		{"AUTH default anything", bbOK}, // the default user is "nopass"
		{"AUTH nobody pw", bbErr("WRONGPASS invalid username-password pair or user is disabled.")},
		{"AUTH a b c", bbSyntax},
		{"AUTH", bbArity("auth")},
		{"GET k", bbNilBulk},
	})
}

func TestConnAuthRequirepass(t *testing.T) {
	s := StartServer(t, "--requirepass", "s3cret")
	rc := s.Raw(t)
	noauth := bbErr("NOAUTH Authentication required.")
	wrongpass := bbErr("WRONGPASS invalid username-password pair or user is disabled.")
	bbRun(t, rc, []bbStep{
		{"GET k", noauth},
		{"PING", noauth},
		{"SET k v", noauth},
		{"CLIENT SETNAME x", noauth},
		{"SELECT 1", noauth},
		{"HELLO", bbErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")},
		{"HELLO 3", bbErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")},
		{"AUTH wrong", wrongpass},
		{"AUTH default wrong", wrongpass},
		{"AUTH nobody s3cret", wrongpass},
		{"GET k", noauth},
		{"AUTH s3cret", bbOK},
		{"GET k", bbNilBulk},
		{"SET k v", bbOK},
		{"AUTH wrong", wrongpass}, // a failed AUTH keeps the earlier login
		{"GET k", bbBulk("v")},
	})
	two := s.Raw(t)
	bbRun(t, two, []bbStep{
		{"AUTH default s3cret", bbOK},
		{"GET k", bbBulk("v")},
	})
	hello := s.Raw(t)
	bbRun(t, hello, []bbStep{{"HELLO 3 AUTH default wrong", wrongpass}})
	r := hello.Do("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "viahello")
	if f := bbHelloFields(t, r); r.Type != '%' || f["proto"] != ":3" {
		t.Fatalf("HELLO 3 AUTH = %s", r)
	}
	bbRun(t, hello, []bbStep{
		{"CLIENT GETNAME", bbBulk("viahello")},
		{"GET k", bbBulk("v")},
	})
	// Clients authenticate through their options.
	good := s.Client(t, func(o *redis.Options) { o.Password = "s3cret" })
	if v, err := good.Get(ctx(t), "k").Result(); err != nil || v != "v" {
		t.Errorf("go-redis with password: GET = %q, %v", v, err)
	}
	bad := s.Client(t, func(o *redis.Options) { o.Password = "nope" })
	if err := bad.Ping(ctx(t)).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("go-redis with a wrong password: %v, want WRONGPASS", err)
	}
	none := s.Client2(t)
	if err := none.Get(ctx(t), "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("go-redis without a password: %v, want NOAUTH", err)
	}
}

func TestConnHello(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	id := bbClientID(t, rc)
	version := bbInfo(t, rc, "server")["redis_version"]

	r := rc.Do("HELLO", "2")
	if r.Type != '*' {
		t.Fatalf("HELLO 2 = %s, want a RESP2 array", r)
	}
	f := bbHelloFields(t, r)
	want := map[string]string{
		"server": bbBulk("redis"), "version": bbBulk(version), "proto": ":2",
		"id": bbInt(id), "mode": bbBulk("standalone"), "role": bbBulk("master"), "modules": "*0[]",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("HELLO field %s = %s, want %s", k, f[k], v)
		}
	}
	keys := []string{}
	for i := 0; i < len(r.Elems); i += 2 {
		keys = append(keys, r.Elems[i].Str)
	}
	if strings.Join(keys, ",") != "server,version,proto,id,mode,role,modules" {
		t.Errorf("HELLO field order = %v", keys)
	}

	r = rc.Do("HELLO", "3")
	if r.Type != '%' || bbHelloFields(t, r)["proto"] != ":3" {
		t.Fatalf("HELLO 3 = %s", r)
	}
	if r := rc.Do("CONFIG", "GET", "maxclients"); r.Type != '%' {
		t.Errorf("CONFIG GET after HELLO 3 = %s, want a RESP3 map", r)
	}
	bbRun(t, rc, []bbStep{
		{"GET nokey", "_"},
		{"HELLO 4", bbErr("NOPROTO unsupported protocol version")},
		{"HELLO 1", bbErr("NOPROTO unsupported protocol version")},
		{"HELLO abc", bbErr("ERR Protocol version is not an integer or out of range")},
		{"HELLO 3 FOO", bbErr("ERR Syntax error in HELLO option 'FOO'")},
		{"HELLO 3 AUTH default", bbErr("ERR Syntax error in HELLO option 'AUTH'")},
		{"HELLO 3 SETNAME", bbErr("ERR Syntax error in HELLO option 'SETNAME'")},
		{"HELLO 3 SETNAME \"a b\"", bbErr("ERR Client names cannot contain spaces, newlines or special characters.")},
		{"GET nokey", "_"}, // failed HELLOs left RESP3 on
	})
	r = rc.Do("HELLO", "2", "SETNAME", "named")
	if r.Type != '*' || bbHelloFields(t, r)["proto"] != ":2" {
		t.Fatalf("HELLO 2 SETNAME = %s", r)
	}
	bbRun(t, rc, []bbStep{
		{"CLIENT GETNAME", bbBulk("named")},
		{"GET nokey", bbNilBulk},
	})
	r = rc.Do("HELLO", "3", "AUTH", "default", "whatever", "SETNAME", "n2")
	if r.Type != '%' {
		t.Fatalf("HELLO 3 AUTH default (nopass) = %s", r)
	}
	if r := rc.Do("CLIENT", "GETNAME"); r.String() != bbBulk("n2") {
		t.Errorf("CLIENT GETNAME = %s", r)
	}

	// go-redis negotiates RESP3 with HELLO 3 and decodes the map.
	c := s.Client(t)
	m, err := c.Do(ctx(t), "HELLO", "3").Result()
	if err != nil {
		t.Fatal(err)
	}
	hm, ok := m.(map[any]any)
	if !ok || hm["server"] != "redis" || hm["proto"] != int64(3) || hm["mode"] != "standalone" {
		t.Errorf("go-redis HELLO 3 = %#v", m)
	}
	if info, err := c.ClientInfo(ctx(t)).Result(); err != nil || info.Resp != 3 {
		t.Errorf("go-redis CLIENT INFO = %+v, %v; want resp=3", info, err)
	}
}

// TestConnHelloNoVersion: HELLO without a version reports the protocol
// in use — 2 on a fresh connection — and does not change it.
func TestConnHelloNoVersion(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	r := rc.Do("HELLO")
	if r.Type != '*' || bbHelloFields(t, r)["proto"] != ":2" {
		t.Errorf("HELLO on a fresh connection = %s, want proto :2 in a RESP2 array", r)
	}
	rc.Do("HELLO", "3")
	r = rc.Do("HELLO")
	if r.Type != '%' || bbHelloFields(t, r)["proto"] != ":3" {
		t.Errorf("HELLO after HELLO 3 = %s, want proto :3 in a RESP3 map", r)
	}
}

func TestConnClientBasics(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	id1 := bbClientID(t, rc)
	id2 := bbClientID(t, s.Raw(t))
	if id2 <= id1 {
		t.Errorf("CLIENT ID of a later connection %d <= %d", id2, id1)
	}
	nameErr := bbErr("ERR Client names cannot contain spaces, newlines or special characters.")
	bbRun(t, rc, []bbStep{
		{"CLIENT GETNAME", bbNilBulk},
		{"CLIENT SETNAME worker-1", bbOK},
		{"CLIENT GETNAME", bbBulk("worker-1")},
		{"CLIENT SETNAME \"a b\"", nameErr},
		{"CLIENT SETNAME \"a\nb\"", nameErr},
		{"CLIENT GETNAME", bbBulk("worker-1")},
		{"CLIENT SETNAME \"\"", bbOK}, // clears it
		{"CLIENT GETNAME", bbNilBulk},
		{"CLIENT SETNAME", bbArity("client|setname")},
		{"CLIENT GETNAME x", bbArity("client|getname")},
		{"CLIENT ID x", bbArity("client|id")},
		{"CLIENT", bbArity("client")},
		{"CLIENT FOO", bbErr("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")},
		{"client foo bar", bbErr("ERR unknown subcommand 'foo'. Try CLIENT HELP.")},
		{"CLIENT SETINFO LIB-NAME mylib", bbOK},
		{"CLIENT SETINFO lib-ver 1.2.3", bbOK},
		{"CLIENT SETINFO FOO bar", bbErr("ERR Unrecognized option 'FOO'")},
		{"CLIENT SETINFO lib-name \"a b\"", bbErr("ERR lib-name cannot contain spaces, newlines or special characters.")},
		{"CLIENT SETINFO lib-name", bbArity("client|setinfo")},
		{"CLIENT NO-EVICT ON", bbOK},
		{"CLIENT NO-EVICT maybe", bbSyntax},
		{"CLIENT NO-TOUCH on", bbOK},
		{"CLIENT NO-TOUCH maybe", bbSyntax},
		{"CLIENT SETNAME me", bbOK},
	})
	info := bbClientLines(t, rc.Do("CLIENT", "INFO"))
	if len(info) != 1 {
		t.Fatalf("CLIENT INFO lines = %v", info)
	}
	for k, v := range map[string]string{
		"id": strconv.FormatInt(id1, 10), "name": "me", "lib-name": "mylib", "lib-ver": "1.2.3",
		"db": "0", "resp": "2", "cmd": "client|info", "user": "default", "flags": "eT",
	} {
		if info[0][k] != v {
			t.Errorf("CLIENT INFO %s=%q, want %q (%v)", k, info[0][k], v, info[0])
		}
	}
	if info[0]["addr"] != rc.Conn.LocalAddr().String() || info[0]["laddr"] != s.Addr {
		t.Errorf("CLIENT INFO addr=%s laddr=%s, want %s %s", info[0]["addr"], info[0]["laddr"], rc.Conn.LocalAddr(), s.Addr)
	}
	for _, field := range []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi", "watch", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp", "lib-name", "lib-ver"} {
		if _, ok := info[0][field]; !ok {
			t.Errorf("CLIENT INFO has no %s field: %v", field, info[0])
		}
	}
	bbRun(t, rc, []bbStep{
		{"CLIENT NO-EVICT off", bbOK},
		{"CLIENT NO-TOUCH OFF", bbOK},
	})
	if info := bbClientLines(t, rc.Do("CLIENT", "INFO")); info[0]["flags"] != "N" {
		t.Errorf("flags after NO-EVICT/NO-TOUCH OFF = %q, want N", info[0]["flags"])
	}

	help := rc.Do("CLIENT", "HELP")
	if help.Type != '*' || len(help.Elems) < 10 || !strings.HasPrefix(help.Elems[0].Str, "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:") {
		t.Errorf("CLIENT HELP = %s", help)
	}
	for _, sub := range []string{"ID", "GETNAME", "SETNAME", "SETINFO", "LIST", "INFO", "KILL", "NO-EVICT", "NO-TOUCH", "REPLY", "UNBLOCK", "HELP"} {
		if !strings.Contains(help.String(), `+"`+sub) {
			t.Errorf("CLIENT HELP does not describe %s", sub)
		}
	}

	// RESP3: CLIENT INFO and LIST are verbatim strings.
	r3 := s.Raw(t)
	r3.Do("HELLO", "3")
	if r := r3.Do("CLIENT", "INFO"); r.Type != '=' || !strings.HasPrefix(r.Str, "txt:id=") {
		t.Errorf("RESP3 CLIENT INFO = %s, want a verbatim txt string", r)
	}
	if r := r3.Do("CLIENT", "LIST"); r.Type != '=' {
		t.Errorf("RESP3 CLIENT LIST = %s, want a verbatim string", r)
	}
}

func TestConnClientList(t *testing.T) {
	s := StartServer(t)
	a, b, c := s.Raw(t), s.Raw(t), s.Raw(t)
	ida, idb, idc := bbClientID(t, a), bbClientID(t, b), bbClientID(t, c)
	bbRun(t, b, []bbStep{
		{"CLIENT SETNAME bee", bbOK},
		{"SELECT 3", bbOK},
		{"WATCH k1 k2", bbOK},
		{"MULTI", bbOK},
		{"GET k1", `+"QUEUED"`},
	})
	lines := bbClientLines(t, a.Do("CLIENT", "LIST"))
	if len(lines) != 3 {
		t.Fatalf("CLIENT LIST has %d lines, want 3: %v", len(lines), lines)
	}
	byID := map[string]map[string]string{}
	for _, l := range lines {
		byID[l["id"]] = l
	}
	la, lb := byID[strconv.FormatInt(ida, 10)], byID[strconv.FormatInt(idb, 10)]
	if la == nil || lb == nil || byID[strconv.FormatInt(idc, 10)] == nil {
		t.Fatalf("CLIENT LIST ids = %v, want %d %d %d", lines, ida, idb, idc)
	}
	if la["cmd"] != "client|list" || la["name"] != "" {
		t.Errorf("own line = %v", la)
	}
	if lb["name"] != "bee" || lb["db"] != "3" || lb["multi"] != "1" || lb["watch"] != "2" || lb["flags"] != "x" {
		t.Errorf("line of the client in MULTI = %v, want name=bee db=3 multi=1 watch=2 flags=x", lb)
	}
	for i := 1; i < len(lines); i++ {
		prev, _ := strconv.Atoi(lines[i-1]["id"])
		cur, _ := strconv.Atoi(lines[i]["id"])
		if prev >= cur {
			t.Errorf("CLIENT LIST is not in ID order: %v", lines)
		}
	}

	only := bbClientLines(t, a.Do("CLIENT", "LIST", "ID", strconv.FormatInt(idc, 10), strconv.FormatInt(ida, 10), "999999"))
	if len(only) != 2 {
		t.Errorf("CLIENT LIST ID c a 999999 = %v, want 2 lines", only)
	}
	if n := len(bbClientLines(t, a.Do("CLIENT", "LIST", "TYPE", "normal"))); n != 3 {
		t.Errorf("CLIENT LIST TYPE normal = %d lines, want 3", n)
	}
	for _, typ := range []string{"pubsub", "replica", "master"} {
		if r := a.Do("CLIENT", "LIST", "TYPE", typ); r.String() != bbBulk("") {
			t.Errorf("CLIENT LIST TYPE %s = %s, want empty", typ, r)
		}
	}
	bbRun(t, a, []bbStep{
		{"CLIENT LIST TYPE foo", bbErr("ERR Unknown client type 'foo'")},
		{"CLIENT LIST ID abc", bbErr("ERR Invalid client ID")},
		{"CLIENT LIST FOO", bbSyntax},
		{"CLIENT LIST TYPE", bbSyntax},
	})
	// CLIENT LIST through go-redis (RESP3 verbatim string).
	gc := s.Client(t)
	txt, err := gc.ClientList(ctx(t)).Result()
	if err != nil || strings.Count(txt, "\n") != 4 || !strings.Contains(txt, "name=bee") {
		t.Errorf("go-redis CLIENT LIST = %q, %v", txt, err)
	}
}

// TestConnClientListIdleQbuf: an idle client has no unparsed input, so
// CLIENT LIST shows qbuf=0 for it, as Redis does.
func TestConnClientListIdleQbuf(t *testing.T) {
	s := StartServer(t)
	idle := s.Raw(t)
	id := strconv.FormatInt(bbClientID(t, idle), 10)
	bbRun(t, idle, []bbStep{{"SET k v", bbOK}})
	admin := s.Raw(t)
	last := ""
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		l := bbClientLines(t, admin.Do("CLIENT", "LIST", "ID", id))
		if len(l) == 1 && l[0]["qbuf"] == "0" {
			return
		}
		last = fmt.Sprint(l)
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	t.Errorf("CLIENT LIST line of an idle client = %s, want qbuf=0", last)
}

func TestConnClientKill(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	adminAddr := admin.Conn.LocalAddr().String()

	gone := func(id int64) {
		t.Helper()
		bbWaitFor(t, 5*time.Second, "the killed client to leave CLIENT LIST", func() bool {
			return admin.Do("CLIENT", "LIST", "ID", strconv.FormatInt(id, 10)).Str == ""
		})
	}
	// Old form: CLIENT KILL addr.
	v1 := s.Raw(t)
	id1 := bbClientID(t, v1)
	bbRun(t, admin, []bbStep{
		{"CLIENT KILL " + v1.Conn.LocalAddr().String(), bbOK},
		{"CLIENT KILL 1.2.3.4:5", bbErr("ERR No such client")},
	})
	v1.ExpectClosed(5 * time.Second)
	gone(id1)
	bbRun(t, admin, []bbStep{{"CLIENT KILL " + v1.Conn.LocalAddr().String(), bbErr("ERR No such client")}})

	// Filter form by ID.
	v2 := s.Raw(t)
	id2 := bbClientID(t, v2)
	bbRun(t, admin, []bbStep{
		{"CLIENT KILL ID " + strconv.FormatInt(id2, 10), ":1"},
		{"CLIENT KILL ID 999999", ":0"},
	})
	v2.ExpectClosed(5 * time.Second)
	gone(id2)
	bbRun(t, admin, []bbStep{{"CLIENT KILL ID " + strconv.FormatInt(id2, 10), ":0"}})

	// SKIPME defaults to yes; ADDR of oneself kills nobody.
	bbRun(t, admin, []bbStep{
		{"CLIENT KILL ADDR " + adminAddr, ":0"},
		{"CLIENT KILL ADDR " + adminAddr + " SKIPME yes", ":0"},
		{"PING", bbStatus("PONG")},
	})

	// TYPE normal / LADDR / USER default kill every other client.
	v3, v4 := s.Raw(t), s.Raw(t)
	id3, id4 := bbClientID(t, v3), bbClientID(t, v4)
	bbRun(t, admin, []bbStep{{"CLIENT KILL TYPE normal", ":2"}})
	v3.ExpectClosed(5 * time.Second)
	v4.ExpectClosed(5 * time.Second)
	gone(id3)
	gone(id4)
	v5 := s.Raw(t)
	id5 := bbClientID(t, v5)
	bbRun(t, admin, []bbStep{{"CLIENT KILL LADDR " + s.Addr + " SKIPME yes", ":1"}})
	v5.ExpectClosed(5 * time.Second)
	gone(id5)
	v6 := s.Raw(t)
	id6 := bbClientID(t, v6)
	bbRun(t, admin, []bbStep{{"CLIENT KILL USER default", ":1"}})
	v6.ExpectClosed(5 * time.Second)
	gone(id6)

	bbRun(t, admin, []bbStep{
		{"CLIENT KILL ID abc", bbErr("ERR client-id should be greater than 0")},
		{"CLIENT KILL ID 0", bbErr("ERR client-id should be greater than 0")},
		{"CLIENT KILL ID 1 SKIPME", bbSyntax},
		{"CLIENT KILL FOO bar", bbSyntax},
		{"CLIENT KILL SKIPME maybe", bbSyntax},
		{"CLIENT KILL TYPE foo", bbErr("ERR Unknown client type 'foo'")},
		{"CLIENT KILL", bbArity("client|kill")},
	})

	// SKIPME no: a client may kill itself; it gets the count, then EOF.
	self := s.Raw(t)
	bbRun(t, self, []bbStep{{"CLIENT KILL ADDR " + self.Conn.LocalAddr().String() + " SKIPME no", ":1"}})
	self.ExpectClosed(5 * time.Second)
	bbRun(t, admin, []bbStep{{"PING", bbStatus("PONG")}})
}

// TestConnClientKillIsImmediate: in Redis a killed client is freed
// before CLIENT KILL replies, so the very next command no longer sees it
// in CLIENT LIST and cannot kill it again.
func TestConnClientKillIsImmediate(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	stale := 0
	for range 50 {
		v := s.Raw(t)
		id := strconv.FormatInt(bbClientID(t, v), 10)
		rep := admin.Do("CLIENT", "KILL", "ID", id)
		list := admin.Do("CLIENT", "LIST", "ID", id)
		again := admin.Do("CLIENT", "KILL", "ID", id)
		if rep.Int != 1 {
			t.Fatalf("CLIENT KILL ID %s = %s", id, rep)
		}
		if list.Str != "" || again.Int != 0 {
			stale++
		}
		v.Conn.Close()
	}
	if stale > 0 {
		t.Errorf("in %d of 50 tries the killed client was still listed or killable right after CLIENT KILL replied", stale)
	}
}

// TestConnClientKillRedis8Errors holds the CLIENT KILL filter errors of
// Redis 7.4+/8 (networking.c clientKillCommand).
func TestConnClientKillRedis8Errors(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"CLIENT KILL MAXAGE abc", bbErr("ERR maxage is not an integer or out of range")},
		{"CLIENT KILL MAXAGE 0", bbErr("ERR maxage should be greater than 0")},
		{"CLIENT KILL MAXAGE -5", bbErr("ERR maxage should be greater than 0")},
		{"CLIENT KILL USER nosuch", bbErr("ERR No such user 'nosuch'")},
		{"CLIENT KILL MAXAGE 1000", ":0"},
	})
}

func TestConnClientReply(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	// OFF: nothing comes back until ON, whose +OK is the next reply.
	rc.Send(Encode("CLIENT", "REPLY", "OFF") + Encode("SET", "a", "1") + Encode("GET", "a") + Encode("INCR", "a"))
	rc.Send(Encode("CLIENT", "REPLY", "ON"))
	if r := rc.Read(); r.String() != bbOK {
		t.Fatalf("first reply after CLIENT REPLY OFF...ON = %s, want +OK", r)
	}
	bbRun(t, rc, []bbStep{{"GET a", bbBulk("2")}})
	// SKIP drops exactly the next command's reply.
	rc.Send(Encode("CLIENT", "REPLY", "SKIP") + Encode("SET", "b", "2"))
	bbRun(t, rc, []bbStep{
		{"GET b", bbBulk("2")},
		{"GET b", bbBulk("2")},
		{"CLIENT REPLY maybe", bbSyntax},
		{"CLIENT REPLY", bbArity("client|reply")},
	})
	// SKIP while OFF stays OFF.
	rc.Send(Encode("CLIENT", "REPLY", "OFF") + Encode("CLIENT", "REPLY", "SKIP") + Encode("SET", "c", "3") + Encode("SET", "d", "4"))
	if r := rc.Do("CLIENT", "REPLY", "ON"); r.String() != bbOK {
		t.Fatalf("CLIENT REPLY ON = %s", r)
	}
	bbRun(t, rc, []bbStep{{"MGET c d", `*2[$"3" $"4"]`}})
	if r, err := rc.TryRead(200 * time.Millisecond); err == nil {
		t.Errorf("an extra reply arrived: %s", r)
	}
}

// TestConnClientReplyRejected: CLIENT REPLY OFF and SKIP also silence
// the errors of commands refused before they run (unknown command, wrong
// arity), and such a refused command is the one SKIP skips.
func TestConnClientReplyRejected(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	rc.Send(Encode("CLIENT", "REPLY", "OFF") + Encode("NOSUCH") + Encode("GET") + Encode("CLIENT", "REPLY", "ON"))
	if r := rc.Read(); r.String() != bbOK {
		t.Errorf("first reply after OFF, NOSUCH, GET, ON = %s, want +OK (Redis sends nothing while OFF)", r)
	}
	rc2 := s.Raw(t)
	rc2.Send(Encode("CLIENT", "REPLY", "SKIP") + Encode("NOSUCH") + Encode("PING", "after"))
	if r := rc2.Read(); r.String() != bbBulk("after") {
		t.Errorf("reply after SKIP, NOSUCH, PING after = %s, want $\"after\"", r)
	}
}

func TestConnClientUnblock(t *testing.T) {
	s := StartServer(t)
	admin := s.Raw(t)
	blocked := s.Raw(t)
	id := bbClientID(t, blocked)
	ids := strconv.FormatInt(id, 10)
	waitBlocked := func() {
		bbWaitFor(t, 5*time.Second, "the client to block", func() bool {
			l := bbClientLines(t, admin.Do("CLIENT", "LIST", "ID", ids))
			return len(l) == 1 && strings.Contains(l[0]["flags"], "b")
		})
	}
	bbRun(t, admin, []bbStep{{"CLIENT UNBLOCK " + ids, ":0"}}) // not blocked

	blocked.Send(Encode("BLPOP", "q", "0"))
	waitBlocked()
	if n := bbInfoInt(t, admin, "clients", "blocked_clients"); n != 1 {
		t.Errorf("blocked_clients = %d, want 1", n)
	}
	bbRun(t, admin, []bbStep{{"CLIENT UNBLOCK " + ids, ":1"}})
	if r := blocked.Read(); r.String() != "*nil" {
		t.Errorf("BLPOP unblocked with TIMEOUT = %s, want *nil", r)
	}

	blocked.Send(Encode("BLPOP", "q", "0"))
	waitBlocked()
	bbRun(t, admin, []bbStep{{"CLIENT UNBLOCK " + ids + " ERROR", ":1"}})
	if r := blocked.Read(); r.String() != bbErr("UNBLOCKED client unblocked via CLIENT UNBLOCK") {
		t.Errorf("BLPOP unblocked with ERROR = %s", r)
	}

	blocked.Send(Encode("BLMOVE", "q", "d", "LEFT", "RIGHT", "0"))
	waitBlocked()
	bbRun(t, admin, []bbStep{{"CLIENT UNBLOCK " + ids + " timeout", ":1"}})
	// Redis answers every list wait that times out with the null array
	// (blocked.c replyToBlockedClientTimedOut), BLMOVE included.
	if r := blocked.Read(); r.String() != "*nil" {
		t.Errorf("BLMOVE unblocked with TIMEOUT = %s, want *nil", r)
	}
	bbRun(t, blocked, []bbStep{{"PING", bbStatus("PONG")}})
	bbRun(t, admin, []bbStep{
		{"CLIENT UNBLOCK 999999", ":0"},
		{"CLIENT UNBLOCK abc", bbNotInt},
		{"CLIENT UNBLOCK " + ids + " FOO", bbErr("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")},
		{"CLIENT UNBLOCK", bbArity("client|unblock")},
	})
	if n := bbInfoInt(t, admin, "clients", "blocked_clients"); n != 0 {
		t.Errorf("blocked_clients = %d, want 0", n)
	}
}

func TestConnSelect(t *testing.T) {
	s := StartServer(t)
	rc := s.Raw(t)
	bbRun(t, rc, []bbStep{
		{"SELECT 15", bbOK},
		{"SET k v", bbOK},
		{"SELECT 16", bbErr("ERR DB index is out of range")},
		{"SELECT -1", bbErr("ERR DB index is out of range")},
		{"SELECT 1.0", bbNotInt},
		{"SELECT x", bbNotInt},
		{"SELECT 0 1", bbArity("select")},
		{"GET k", bbBulk("v")}, // failed SELECTs kept db 15
	})
	info := bbClientLines(t, rc.Do("CLIENT", "INFO"))
	if info[0]["db"] != "15" {
		t.Errorf("CLIENT INFO db=%s, want 15", info[0]["db"])
	}
}

// TestConnHalfCloseRunsEverything: a client that pipelines more commands
// than one turn runs (128) and then closes its sending side still gets
// every reply, as from Redis, which runs what it read before it sees
// the end of the input. (The event loop reads that end in a later pass
// than the data; it used to drop the commands a turn's bound had left.)
func TestConnHalfCloseRunsEverything(t *testing.T) {
	s := StartServer(t)
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 1000
	var req strings.Builder
	for i := range n {
		req.WriteString(Encode("RPUSH", "halfclose", strconv.Itoa(i)))
	}
	if _, err := conn.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the replies: %v", err)
	}
	if replies := strings.Count(string(got), "\r\n"); replies != n {
		t.Fatalf("got %d replies before the server closed, want %d", replies, n)
	}
	if r := s.Raw(t).Do("LLEN", "halfclose"); r.Int != n {
		t.Fatalf("LLEN = %s, want %d", r, n)
	}
}

// TestConnQuitAfterHeldOutput: QUIT pipelined behind a reply bigger than
// the socket takes closes the connection once the client has read it
// all. (The loop closed a QUIT client only when its output went in one
// write; one that had to wait for the socket to drain stayed open.)
func TestConnQuitAfterHeldOutput(t *testing.T) {
	s := StartServer(t, "--appendonly", "no", "--save", "")
	admin := s.Raw(t)
	mb := strings.Repeat("x", 1<<20)
	for range 32 {
		admin.Do("RPUSH", "big", mb)
	}
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(Encode("CLIENT", "SETNAME", "stuck") + Encode("LRANGE", "big", "0", "-1") + Encode("QUIT"))); err != nil {
		t.Fatal(err)
	}
	// Wait until the server holds output for it: the socket is full.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var omem int64 = -1
		for _, c := range bbClientLines(t, admin.Do("CLIENT", "LIST")) {
			if c["name"] == "stuck" {
				omem, _ = strconv.ParseInt(c["omem"], 10, 64)
			}
		}
		if omem > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never held output for the client (omem %d)", omem)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("after %d bytes: %v (want the replies, then the connection closed)", len(got), err)
	}
	if !strings.HasSuffix(string(got), "+OK\r\n") || len(got) < 32<<20 {
		t.Fatalf("read %d bytes ending %q, want the 32 MB LRANGE and QUIT's +OK", len(got), got[max(0, len(got)-20):])
	}
}
