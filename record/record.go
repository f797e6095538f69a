// Package record is redstream's write record: the unit in which every
// write is logged, replayed and replicated (DESIGN principle 2). A record
// is the command as the server applied it, with the time it ran at and
// its database, so that applying the same records in the same order to
// the same state always gives the same state, on any node.
//
// A batch is records back to back. Each record is an annotation line with
// its time (Unix ms) and database, then the command in RESP, so that
// `cat` shows what happened:
//
//	#T <time ms> <db>\r\n                                annotation
//	*3\r\n$5\r\nRPUSH\r\n$4\r\njobs\r\n$5\r\njob:1\r\n   the command
//	#T <time ms> <db>\r\n                                the next record
//	...
//
// The encoding has no integrity check of its own: the AOF wraps each batch
// in a frame with its length and checksum (persistence), and a Raft log
// entry carries one as its data.
package record

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/redstream/redstream/resp"
)

// Record is one write: Argv as the server applied it (the command as the
// client sent it, or rewritten, as BLPOP is logged as LPOP), in database
// DB, at Time (ms since the Unix epoch), which is "now" for the command.
type Record struct {
	Time int64
	DB   int
	Argv [][]byte
}

// ErrMalformed means bytes are not a batch of records.
var ErrMalformed = errors.New("record: malformed batch")

// maxDB bounds a record's database number: more than any configuration
// allows, small enough to be an index.
const maxDB = 1 << 30

// Append appends the encoding of recs, a batch, to dst.
func Append(dst []byte, recs ...Record) []byte {
	for _, r := range recs {
		dst = append(dst, "#T "...)
		dst = strconv.AppendInt(dst, r.Time, 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(r.DB), 10)
		dst = append(dst, '\r', '\n')
		dst = resp.AppendCommand(dst, r.Argv)
	}
	return dst
}

// Parse decodes a whole batch. The records' arguments alias p. An error
// wraps ErrMalformed and says what was wrong.
//
// Every node parses every entry it applies, so this is on the hot path of
// a replicated write: it scans the lines by hand rather than with
// bytes.Cut, and the records' argument lists share a few allocations
// instead of taking one each.
func Parse(p []byte) ([]Record, error) {
	recs := make([]Record, 0, bytes.Count(p, []byte("#T "))) // a hint: data may hold the text too
	var args [][]byte                                        // free room for argument lists
	for len(p) > 0 {
		line, rest, ok := cutLine(p)
		if !ok {
			return nil, fmt.Errorf("%w: record annotation without CRLF", ErrMalformed)
		}
		t, db, ok := parseAnnotation(line)
		if !ok {
			return nil, fmt.Errorf("%w: bad record annotation %q", ErrMalformed, line)
		}
		argc, rest, err := countLine(rest, '*')
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if argc < 1 || argc > int64(len(rest)) {
			return nil, fmt.Errorf("%w: bad argument count %d", ErrMalformed, argc)
		}
		if int64(cap(args)-len(args)) < argc {
			args = make([][]byte, 0, max(argc, 64))
		}
		n := len(args)
		args, p, err = parseArgs(args, argc, rest)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		recs = append(recs, Record{Time: t, DB: db, Argv: args[n:len(args):len(args)]})
	}
	return recs, nil
}

// cutLine splits p at its first CRLF.
func cutLine(p []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(p, '\r')
	if i < 0 || i+1 >= len(p) || p[i+1] != '\n' {
		return nil, nil, false
	}
	return p[:i], p[i+2:], true
}

func parseAnnotation(line []byte) (t int64, db int, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte("#T "))
	if !found {
		return 0, 0, false
	}
	tText, dbText, found := bytes.Cut(rest, []byte{' '})
	if !found {
		return 0, 0, false
	}
	t, ok1 := resp.ParseInt(tText)
	d, ok2 := resp.ParseInt(dbText)
	if !ok1 || !ok2 || d < 0 || d > maxDB {
		return 0, 0, false
	}
	return t, int(d), true
}

// parseArgs appends argc RESP bulk strings read from p to args; they
// alias p.
func parseArgs(args [][]byte, argc int64, p []byte) ([][]byte, []byte, error) {
	for range argc {
		n, q, err := countLine(p, '$')
		if err != nil {
			return nil, nil, err
		}
		if n < 0 || n+2 > int64(len(q)) || q[n] != '\r' || q[n+1] != '\n' {
			return nil, nil, fmt.Errorf("bad bulk of length %d", n)
		}
		args = append(args, q[:n:n])
		p = q[n+2:]
	}
	return args, p, nil
}

func countLine(p []byte, prefix byte) (int64, []byte, error) {
	line, rest, found := cutLine(p)
	if !found || len(line) < 2 || line[0] != prefix {
		return 0, nil, fmt.Errorf("expected '%c' line", prefix)
	}
	n, ok := resp.ParseInt(line[1:])
	if !ok {
		return 0, nil, fmt.Errorf("bad number in %q", line)
	}
	return n, rest, nil
}
