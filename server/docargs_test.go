package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func renderArgs(args []docArg) string {
	var parts []string
	for _, a := range args {
		s := a.typ + ":" + a.name
		if a.token != "" {
			s += "@" + a.token
		}
		if a.optional {
			s += "?"
		}
		if a.multiple {
			s += "*"
		}
		if len(a.args) > 0 {
			s += "(" + renderArgs(a.args) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestParseSyntax(t *testing.T) {
	cases := map[string]string{
		"key":                   "key:key",
		"key [key ...] timeout": "key:key* double:timeout",
		"key [count]":           "key:key integer:count?",
		"numkeys key [key ...] <LEFT | RIGHT> [COUNT count]":       "integer:numkeys key:key* oneof:left(pure-token:left@LEFT pure-token:right@RIGHT) integer:count@COUNT?",
		"key value [NX | XX] [GET]":                                "key:key string:value oneof:nx?(pure-token:nx@NX pure-token:xx@XX) pure-token:get@GET?",
		"cursor [MATCH pattern] [COUNT count] [TYPE type]":         "integer:cursor pattern:pattern@MATCH? integer:count@COUNT? string:type@TYPE?",
		"key element [RANK rank] [COUNT num-matches] [MAXLEN len]": "key:key string:element integer:rank@RANK? integer:num-matches@COUNT? integer:len@MAXLEN?",
	}
	for in, want := range cases {
		if got := renderArgs(parseSyntax(in)); got != want {
			t.Errorf("parseSyntax(%q)\n got %s\nwant %s", in, got, want)
		}
	}
	// Every syntax in the table parses into something for redis-cli.
	for _, d := range CommandDocs() {
		if d.Syntax != "" && len(parseSyntax(d.Syntax)) == 0 {
			t.Errorf("%s: syntax %q parsed to nothing", d.Name, d.Syntax)
		}
	}
	_ = fmt.Sprint
}

// redis_version reports the Redis release whose commands we follow: the
// newest that introduced a command in the table (server/version.go).
func TestRedisVersionIsNewestCommand(t *testing.T) {
	newest := "0.0.0"
	for _, c := range commandTable() {
		for _, cc := range append([]*Command{c}, c.sortedSubs()...) {
			if compareVersions(cc.Since, newest) > 0 {
				newest = cc.Since
			}
		}
	}
	if newest != RedisVersion {
		t.Fatalf("RedisVersion is %s, but the newest command is from %s", RedisVersion, newest)
	}
}

// compareVersions compares dotted version numbers part by part.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
