package server

import (
	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// typeName is what TYPE answers for o.
func typeName(o *Object) string {
	switch o.value.(type) {
	case []byte:
		return "string"
	case *listpack.Quicklist:
		return "list"
	case *stream.Stream:
		return "stream"
	}
	return "none"
}

// encodingName is what OBJECT ENCODING answers for o.
func (s *Server) encodingName(o *Object) string {
	switch v := o.value.(type) {
	case []byte:
		switch {
		case !o.rawStr && len(v) <= 20 && isCanonicalInt(v):
			return "int"
		case len(v) <= 44 && !o.rawStr:
			return "embstr"
		}
		return "raw"
	case *listpack.Quicklist:
		return v.Encoding()
	case *stream.Stream:
		return "stream"
	}
	return "unknown"
}

func isCanonicalInt(b []byte) bool {
	_, ok := resp.ParseInt(b)
	return ok
}

// str returns key's string value. ok is false (and WRONGTYPE answered)
// when key holds another type; a missing key gives nil, true.
func (x *Ctx) str(key []byte) (o *Object, v []byte, ok bool) {
	o = x.lookup(key)
	if o == nil {
		x.countHit(false)
		return nil, nil, true
	}
	x.countHit(true)
	v, isStr := o.value.([]byte)
	if !isStr {
		x.error(resp.ErrWrongType)
		return nil, nil, false
	}
	return o, v, true
}

// list returns key's list. ok is false (and WRONGTYPE answered) when key
// holds another type; a missing key gives nil, true.
func (x *Ctx) list(key []byte) (q *listpack.Quicklist, ok bool) {
	o := x.lookup(key)
	if o == nil {
		x.countHit(false)
		return nil, true
	}
	x.countHit(true)
	q, isList := o.value.(*listpack.Quicklist)
	if !isList {
		x.error(resp.ErrWrongType)
		return nil, false
	}
	return q, true
}

// countHit keeps INFO's keyspace_hits/misses for read lookups.
func (x *Ctx) countHit(hit bool) {
	if x.cmd == nil || x.cmd.Flags&FlagReadOnly == 0 {
		return
	}
	if hit {
		x.s.stats.keyspaceHits++
	} else {
		x.s.stats.keyspaceMisses++
	}
}

// cloneBytes copies b into a new slice that is never nil: a string value
// of length zero must still read as a string, not as a missing key.
func cloneBytes(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

// copyValue deep-copies a value for COPY.
func copyValue(v any) any {
	switch v := v.(type) {
	case []byte:
		return cloneBytes(v)
	case *listpack.Quicklist:
		var nodes []listpack.Listpack
		v.Nodes(func(lp listpack.Listpack) bool {
			nodes = append(nodes, append(listpack.Listpack(nil), lp...))
			return true
		})
		c := listpack.QuicklistFromNodes(v.Fill(), nodes)
		c.SetCompressDepth(v.CompressDepth()) // as Redis's copy keeps it
		return c
	case *stream.Stream:
		return v.Clone()
	}
	panic("server: copyValue of unknown type")
}
