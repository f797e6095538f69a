package server

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/redstream/redstream/resp"
)

var dumpSpecs = []spec{
	{name: "dump", arity: 2, flags: "readonly", first: 1, last: 1, step: 1, group: "generic", since: "2.6.0",
		syntax: "key", summary: "Returns a serialized representation of the value stored at a key.", run: dumpCommand},
	{name: "restore", arity: -4, flags: "write denyoom", first: 1, last: 1, step: 1, group: "generic", since: "2.6.0",
		syntax:  "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
		summary: "Creates a key from the serialized representation of a value.", run: restoreCommand},
}

// Codec turns values into DUMP payloads and back: Redis's format (an
// RDB value, its RDB version and a CRC-64), which the persistence layer
// owns; cli plugs it in through Options.Codec. Values are the server's:
// []byte, *listpack.Quicklist or *stream.Stream. Both methods run with
// the keyspace lock held and must not block.
type Codec interface {
	// Dump returns value's payload. It must not change value or keep
	// any reference to it.
	Dump(value any, opt DumpOptions) ([]byte, error)
	// Restore checks payload (footer first, then the whole value in
	// depth) and returns a new value sharing no memory with payload, or
	// an error wrapping ErrDumpPayload or ErrDumpData (a *DumpTypeError
	// for a type redstream does not serve). It never returns a partial
	// value.
	Restore(payload []byte, opt DumpOptions) (any, error)
}

// DumpOptions are the settings a Codec follows, from the configuration.
type DumpOptions struct {
	Compress bool // rdbcompression: LZF-compress long strings
	ListFill int  // list-max-listpack-size
}

// The errors a Codec's Restore wraps; RESTORE answers Redis's text for
// each.
var (
	// ErrDumpPayload: too short, a newer RDB version, or a wrong checksum.
	ErrDumpPayload = errors.New("DUMP payload version or checksum are wrong")
	// ErrDumpData: the footer is right, the value is not.
	ErrDumpData = errors.New("Bad data format")
)

// DumpTypeError is a payload holding a value of a type redstream does
// not serve (a hash, a set...). Redis would load it; RESTORE says why it
// cannot, in a reply that still starts as Redis's "Bad data format".
type DumpTypeError struct {
	Type string // "hash", "set", "sorted set", "module value"
}

func (e *DumpTypeError) Error() string {
	return "Bad data format: the payload holds a " + e.Type + ", and redstream serves strings, lists and streams"
}

func (e *DumpTypeError) Unwrap() error { return ErrDumpData }

const errNoCodec = "ERR DUMP and RESTORE are not available: no payload codec is configured"

func (s *Server) dumpOptions() DumpOptions {
	return DumpOptions{Compress: s.cfg.RDBCompression, ListFill: s.cfg.ListMaxListpackSize}
}

func dumpCommand(x *Ctx) {
	if x.s.codec == nil {
		x.error(errNoCodec)
		return
	}
	o := x.lookup(x.argv[1])
	x.countHit(o != nil)
	if o == nil {
		x.w.Null()
		return
	}
	b, err := x.s.codec.Dump(o.value, x.s.dumpOptions())
	if err != nil {
		x.s.logger.Error("DUMP failed", "key", x.arg(1), "err", err)
		x.error("ERR " + err.Error())
		return
	}
	x.w.Bulk(b)
}

// restoreArgs are RESTORE's options once parsed.
type restoreArgs struct {
	replace, absTTL bool
	idle, freq      int64 // -1: not given
}

// parseRestoreArgs parses the options after the payload, answering
// errors as Redis does: IDLETIME and FREQ exclude each other (the second
// is a syntax error), and each option's value is checked where it is met.
func parseRestoreArgs(x *Ctx) (a restoreArgs, ok bool) {
	a.idle, a.freq = -1, -1
	for i := 4; i < len(x.argv); i++ {
		more := len(x.argv) - i - 1
		switch opt := strings.ToLower(x.arg(i)); {
		case opt == "replace":
			a.replace = true
		case opt == "absttl":
			a.absTTL = true
		case opt == "idletime" && more >= 1 && a.freq == -1:
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok {
				x.error(resp.ErrNotInteger)
				return a, false
			}
			if n < 0 {
				x.error("ERR Invalid IDLETIME value, must be >= 0")
				return a, false
			}
			a.idle = n
			i++
		case opt == "freq" && more >= 1 && a.idle == -1:
			n, ok := resp.ParseInt(x.argv[i+1])
			if !ok {
				x.error(resp.ErrNotInteger)
				return a, false
			}
			if n < 0 || n > 255 {
				x.error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return a, false
			}
			a.freq = n
			i++
		default:
			x.error(resp.ErrSyntax)
			return a, false
		}
	}
	return a, true
}

// restoreCommand serves RESTORE key ttl payload [REPLACE] [ABSTTL]
// [IDLETIME s] [FREQ f], checking in Redis's order: options, an
// existing key, the TTL, the payload's footer, then its value. The
// value is decoded whole before the keyspace is touched, so a bad
// payload leaves nothing behind.
//
// A relative TTL counts from the record's time. The write is logged as
// RESTORE with the absolute time and ABSTTL, as Redis propagates it, so
// replay sets the same deadline whatever clock replays it; a TTL already
// past creates nothing, and with REPLACE is logged as the DEL it amounts
// to. IDLETIME sets the key's last access that many seconds before the
// record's time. FREQ is checked and then ignored: redstream keeps no LFU
// counters (maxmemory-policy is noeviction), which is what Redis does
// with it under a non-LFU policy.
func restoreCommand(x *Ctx) {
	a, ok := parseRestoreArgs(x)
	if !ok {
		return
	}
	key := x.argv[1]
	if !a.replace && x.lookup(key) != nil {
		x.error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := resp.ParseInt(x.argv[2])
	switch {
	case !ok:
		x.error(resp.ErrNotInteger)
		return
	case ttl < 0:
		x.error("ERR Invalid TTL value, must be >= 0")
		return
	case x.s.codec == nil:
		x.error(errNoCodec)
		return
	}
	value, err := x.s.codec.Restore(x.argv[3], x.s.dumpOptions())
	if err != nil {
		x.restoreError(err)
		return
	}
	at := ttl
	if ttl != 0 && !a.absTTL {
		at = ttl + x.now // wraps past math.MaxInt64 into the past, as in Redis
	}
	if ttl != 0 && at <= x.now {
		// Already expired: nothing is created. Redis deletes the key it
		// replaces all the same, and propagates that as a DEL.
		if a.replace && x.deleteKey(key) {
			x.rewriteLog([]byte("DEL"), key)
		}
		x.w.OK()
		return
	}
	compressLoaded(value, x.s.cfg.ListCompressDepth)
	o := &Object{value: value}
	x.setKey(key, o)
	if ttl != 0 {
		x.db.setExpire(string(key), o, at)
	}
	if a.idle >= 0 {
		o.access = x.now - min(a.idle, math.MaxInt64/2000)*1000
	}
	if ttl != 0 && !a.absTTL {
		argv := append([][]byte(nil), x.argv...)
		argv[2] = strconv.AppendInt(nil, at, 10)
		x.rewriteLog(append(argv, []byte("ABSTTL"))...)
	}
	x.w.OK()
}

// restoreError answers a payload the codec refused.
func (x *Ctx) restoreError(err error) {
	var te *DumpTypeError
	switch {
	case errors.Is(err, ErrDumpPayload):
		x.error("ERR " + ErrDumpPayload.Error())
	case errors.As(err, &te):
		x.error("ERR " + te.Error())
	default:
		x.error("ERR " + ErrDumpData.Error())
	}
	if !x.replay {
		x.s.logger.Debug("RESTORE refused a payload", "key", x.arg(1), "bytes", len(x.argv[3]), "err", err)
	}
}
