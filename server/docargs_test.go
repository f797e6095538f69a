package server

import (
	"fmt"
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
