package server

import (
	"strings"

	"github.com/redstream/redstream/resp"
)

// docArg is one argument in COMMAND DOCS, the tree redis-cli builds its
// hints and `help` from. It is parsed from the command's syntax line
// (the docs' syntax_fmt), so the table holds each syntax once.
type docArg struct {
	name     string
	typ      string // key, string, integer, double, pattern, pure-token, oneof, block
	token    string
	optional bool
	multiple bool
	args     []docArg // for oneof and block
}

// parseSyntax turns "key [key ...] <LEFT | RIGHT> [COUNT count]" into
// its argument tree.
func parseSyntax(syntax string) []docArg {
	p := &syntaxParser{words: tokenizeSyntax(syntax)}
	return p.seq("")
}

func tokenizeSyntax(s string) []string {
	for _, b := range []string{"[", "]", "<", ">", "|"} {
		s = strings.ReplaceAll(s, b, " "+b+" ")
	}
	return strings.Fields(s)
}

type syntaxParser struct {
	words []string
	pos   int
}

func (p *syntaxParser) peek() string {
	if p.pos < len(p.words) {
		return p.words[p.pos]
	}
	return ""
}

// seq parses arguments until the closing word (or the end); "|" ends a
// sequence too, so alternatives can be collected by the caller.
func (p *syntaxParser) seq(closing string) []docArg {
	var out []docArg
	for p.pos < len(p.words) {
		w := p.peek()
		switch {
		case w == closing || w == "|":
			return out
		case w == "...":
			p.pos++
			if len(out) > 0 {
				out[len(out)-1].multiple = true
			}
		case w == "[" || w == "<":
			p.pos++
			out = p.group(out, w == "[")
		default:
			p.pos++
			out = append(out, p.word(w))
		}
	}
	return out
}

// group parses "[...]" or "<...>": alternatives become a oneof, several
// arguments a block, and "[key ...]" after key marks key multiple.
func (p *syntaxParser) group(prev []docArg, optional bool) []docArg {
	closing := map[bool]string{true: "]", false: ">"}[optional]
	var alts [][]docArg
	for {
		alts = append(alts, p.seq(closing))
		if p.peek() != "|" {
			break
		}
		p.pos++
	}
	p.pos++ // the closing bracket
	if len(alts) == 1 && len(alts[0]) == 1 && alts[0][0].multiple && len(prev) > 0 && prev[len(prev)-1].name == alts[0][0].name {
		prev[len(prev)-1].multiple = true // "key [key ...]"
		return prev
	}
	var g docArg
	switch {
	case len(alts) > 1:
		g = docArg{name: groupName(alts), typ: "oneof"}
		for _, alt := range alts {
			g.args = append(g.args, single(alt))
		}
	case len(alts[0]) == 1:
		g = alts[0][0]
	default:
		g = docArg{name: groupName(alts), typ: "block", args: alts[0]}
	}
	g.optional = g.optional || optional
	return append(prev, g)
}

func single(args []docArg) docArg {
	if len(args) == 1 {
		return args[0]
	}
	return docArg{name: groupName([][]docArg{args}), typ: "block", args: args}
}

func groupName(alts [][]docArg) string {
	if len(alts) > 0 && len(alts[0]) > 0 {
		return alts[0][0].name
	}
	return "arg"
}

// word parses a token ("COUNT count" or a bare "NX") or a named argument.
func (p *syntaxParser) word(w string) docArg {
	if w != strings.ToUpper(w) || strings.ToLower(w) == w {
		return docArg{name: w, typ: argType(w)}
	}
	if next := p.peek(); next != "" && next == strings.ToLower(next) && !strings.ContainsAny(next, "[]<>|") && next != "..." {
		p.pos++
		return docArg{name: next, typ: argType(next), token: w}
	}
	return docArg{name: strings.ToLower(w), typ: "pure-token", token: w}
}

// argType guesses Redis's argument type from the name used in the syntax.
func argType(name string) string {
	switch name {
	case "key", "source", "destination", "newkey":
		return "key"
	case "pattern":
		return "pattern"
	case "timeout":
		return "double"
	case "count", "index", "slot", "start", "stop", "end", "seconds", "milliseconds", "offset", "numkeys",
		"increment", "decrement", "rank", "num-matches", "len", "client-id", "maxage", "db", "destination-db",
		"unix-time-seconds", "unix-time-milliseconds", "cursor", "exactly", "protover", "numreplicas":
		return "integer"
	}
	return "string"
}

// writeDocArgs writes the arguments as COMMAND DOCS maps.
func writeDocArgs(w *resp.Writer, args []docArg) {
	w.Array(len(args))
	for _, a := range args {
		n := 3
		if a.token != "" {
			n++
		}
		if a.optional || a.multiple {
			n++
		}
		if len(a.args) > 0 {
			n++
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.name)
		w.BulkString("type")
		w.BulkString(a.typ)
		w.BulkString("display_text")
		w.BulkString(a.name)
		if a.token != "" {
			w.BulkString("token")
			w.BulkString(a.token)
		}
		if a.optional || a.multiple {
			var flags []string
			if a.optional {
				flags = append(flags, "optional")
			}
			if a.multiple {
				flags = append(flags, "multiple")
			}
			w.BulkString("flags")
			w.Set(len(flags))
			for _, f := range flags {
				w.Status(f)
			}
		}
		if len(a.args) > 0 {
			w.BulkString("arguments")
			writeDocArgs(w, a.args)
		}
	}
}
