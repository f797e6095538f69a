package persistence

import (
	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/stream"
)

// An Entry is one key of a snapshot: what Decoder.Next returns and what
// Encoder.WriteEntry takes.
type Entry struct {
	DB    int // the db the key is in (set by Decoder; Encoder uses SelectDB)
	Key   []byte
	Value Value // String, List, Stream, or Skipped (decoding only)

	// ExpireAt is the key's expiry as Unix time in milliseconds, when
	// HasExpire is set. A file may hold keys already expired; deciding
	// what to do with them is the loader's business.
	ExpireAt  int64
	HasExpire bool

	// Idle (LRU seconds) and Freq (LFU counter) are the eviction hints
	// Redis writes under an LRU or LFU maxmemory-policy, or -1. Decoder
	// fills them in; Encoder does not write them.
	Idle int64
	Freq int

	// Offset and Size locate the entry in the file, from its first
	// opcode (an expiry, say) to the end of its value. Decoder only.
	Offset, Size int64
}

// Value is a key's value: String, List, Stream or Skipped.
type Value interface {
	// Type returns the Redis type name: "string", "list", "stream", or
	// for a Skipped value the type that was skipped.
	Type() string
	sealed()
}

// String is a string value, whatever its encoding in the file (integer,
// LZF or raw).
type String []byte

// List is a list value as its quicklist nodes, each a listpack that has
// passed listpack.Validate(lp, true). listpack.QuicklistFromNodes builds
// the list from them. Lists stored in older encodings (linked list,
// ziplists) are converted to listpacks by the decoder; a node Redis stored
// as a "plain" container comes back as a listpack of one element.
type List []listpack.Listpack

// Skipped stands for a value DecodeOptions.SkipUnsupported stepped over.
type Skipped struct {
	Kind    string // "hash", "set", "sorted set" or "module value"
	RDBType byte   // the RDB type byte
	Len     int64  // elements (fields for a hash), or -1 if not known cheaply
}

func (String) Type() string    { return "string" }
func (List) Type() string      { return "list" }
func (Stream) Type() string    { return "stream" }
func (s Skipped) Type() string { return s.Kind }
func (String) sealed()         {}
func (List) sealed()           {}
func (Stream) sealed()         {}
func (Skipped) sealed()        {}

// Len returns the number of elements in all nodes.
func (l List) Len() int {
	n := 0
	for _, lp := range l {
		n += lp.Len()
	}
	return n
}

// Stream is a stream value: the live stream itself. The decoder builds
// it with stream.FromState, which checks everything a loader needs to
// trust (node layout, ID order, counters, group and consumer PELs); the
// encoder writes its State.
type Stream struct{ *stream.Stream }
