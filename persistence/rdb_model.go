package persistence

import (
	"encoding/binary"
	"fmt"

	"github.com/redstream/redstream/listpack"
)

// An Entry is one key of a snapshot: what Decoder.Next returns and what
// Encoder.WriteEntry takes.
type Entry struct {
	DB    int // the db the key is in (set by Decoder; Encoder uses SelectDB)
	Key   []byte
	Value Value // String, List, *Stream, or Skipped (decoding only)

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

// Value is a key's value: String, List, *Stream or Skipped.
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
func (*Stream) Type() string   { return "stream" }
func (s Skipped) Type() string { return s.Kind }
func (String) sealed()         {}
func (List) sealed()           {}
func (*Stream) sealed()        {}
func (Skipped) sealed()        {}

// Len returns the number of elements in all nodes.
func (l List) Len() int {
	n := 0
	for _, lp := range l {
		n += lp.Len()
	}
	return n
}

// A StreamID is a stream entry ID, ms-seq.
type StreamID struct{ Ms, Seq uint64 }

func (id StreamID) String() string { return fmt.Sprintf("%d-%d", id.Ms, id.Seq) }

// Compare returns -1, 0 or +1 as id is less than, equal to or greater
// than o.
func (id StreamID) Compare(o StreamID) int {
	switch {
	case id.Ms != o.Ms:
		return cmpU64(id.Ms, o.Ms)
	default:
		return cmpU64(id.Seq, o.Seq)
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bytes returns the 16-byte big-endian form RDB stores node keys and PEL
// IDs in, whose byte order is the IDs' numeric order.
func (id StreamID) bytes() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], id.Ms)
	binary.BigEndian.PutUint64(b[8:], id.Seq)
	return b
}

func streamIDFrom(b []byte) StreamID {
	return StreamID{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:16])}
}

// Stream is a stream value as RDB stores it. The decoder guarantees what
// a loader needs to trust it: every node listpack passed
// listpack.Validate(lp, true) and has the stream node layout (master
// entry, then entries whose lp-counts match, flags 0-3, integer fields
// where integers belong); node master IDs and entry IDs strictly
// increase through the stream, entries are not below their node's master
// ID and not above LastID; Length equals the live entries; group and
// consumer names are unique; PEL IDs strictly increase; every consumer
// PEL ID is in its group's PEL and every group PEL entry belongs to
// exactly one consumer.
type Stream struct {
	Nodes        []StreamNode
	Length       uint64   // live (not deleted) entries
	LastID       StreamID // the last ID ever generated (XADD's floor)
	FirstID      StreamID // the first live entry's ID
	MaxDeletedID StreamID // the largest ID deleted (tombstone), or 0-0
	EntriesAdded uint64   // entries ever added
	Groups       []Group
	IDMP         *IDMP // idempotent-producer state, or nil
}

// A StreamNode is one radix-tree node of a stream: the master ID its
// entries are delta-encoded against and the listpack that holds them.
type StreamNode struct {
	Master   StreamID
	Listpack listpack.Listpack
}

// A Group is a consumer group.
type Group struct {
	Name        []byte
	LastID      StreamID // last delivered ID
	EntriesRead int64    // logical reads counter; -1 when unknown
	PEL         []PendingEntry
	Consumers   []Consumer
}

// A PendingEntry is an entry delivered to a consumer and not yet
// acknowledged. Its owner is the Consumer whose PEL lists its ID.
type PendingEntry struct {
	ID            StreamID
	DeliveryTime  int64 // Unix ms of the last delivery
	DeliveryCount uint64
}

// A Consumer is a group member.
type Consumer struct {
	Name       []byte
	SeenTime   int64      // Unix ms of the last attempted read or claim
	ActiveTime int64      // Unix ms of the last successful one (Redis 7.2); SeenTime when unknown
	PEL        []StreamID // the IDs it owns, increasing
}

// IDMP is a stream's idempotent-producer state (Redis 8.6's XADD IDMP /
// IDMPAUTO and XCFGSET). RDB version 10 has no place for it; the encoder
// carries it in an aux field (see the package documentation).
type IDMP struct {
	Duration   uint64 // IDMP-DURATION, seconds
	MaxSize    uint64 // IDMP-MAXSIZE, iids kept per producer
	Added      uint64 // iids-added, lifetime count
	Duplicates uint64 // iids-duplicates, lifetime count
	Producers  []IDMPProducer
}

// An IDMPProducer is one producer's remembered idempotency IDs, oldest
// first.
type IDMPProducer struct {
	PID     []byte
	Entries []IDMPEntry
}

// An IDMPEntry maps an idempotency ID to the stream entry it produced.
type IDMPEntry struct {
	IID  []byte
	ID   StreamID
	Time int64 // Unix ms when it was recorded, for IDMP-DURATION expiry
}
