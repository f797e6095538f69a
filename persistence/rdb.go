package persistence

import (
	"errors"
	"fmt"
	"strings"
)

// RDB format versions.
const (
	// RDBVersion is the version Encoder writes: 10, what Redis 7.0
	// writes and the newest it loads.
	RDBVersion = 10
	// RDBRedisVersion is the redis-ver field Encoder writes: the Redis
	// release that writes RDBVersion (see server/version.go).
	RDBRedisVersion = "7.0.0"
	// MinRDBVersion and MaxRDBVersion bound what Decoder reads: Redis 6.0
	// (9) to Redis 7.4 (12).
	MinRDBVersion = 9
	MaxRDBVersion = 12
)

// Opcodes: a byte in the position of a value type that is not one.
const (
	opSlotInfo      = 244 // cluster slot sizes: slot, keys, expires
	opFunction2     = 245 // a function library's source
	opFunctionPreGA = 246 // functions as Redis 7.0 release candidates wrote them
	opModuleAux     = 247 // module data outside any key
	opIdle          = 248 // LRU idle seconds of the next key
	opFreq          = 249 // LFU counter of the next key
	opAux           = 250 // a name/value string pair
	opResizeDB      = 251 // key and expire counts of the current db
	opExpireMs      = 252 // expiry of the next key, ms, 8 bytes little-endian
	opExpireSec     = 253 // expiry of the next key, s, 4 bytes little-endian
	opSelectDB      = 254 // the db the following keys belong to
	opEOF           = 255 // end of data; the checksum follows
)

// Value types, as the byte before each key.
const (
	typeString           = 0
	typeList             = 1 // linked list: count, then each element
	typeSet              = 2
	typeZset             = 3
	typeHash             = 4
	typeZset2            = 5
	typeModulePreGA      = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10 // one ziplist holding the whole list
	typeSetIntset        = 11
	typeZsetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14 // node count, then one ziplist per node
	typeStreamListpacks  = 15 // stream without first ID, tombstone and counters
	typeHashListpack     = 16
	typeZsetListpack     = 17
	typeListQuicklist2   = 18 // node count, then container and blob per node
	typeStreamListpacks2 = 19 // adds first ID, max deleted ID, entries added/read
	typeSetListpack      = 20
	typeStreamListpacks3 = 21 // adds consumer active time
	typeHashMetaPreGA    = 22
	typeHashLpExPreGA    = 23
	typeHashMeta         = 24
	typeHashLpEx         = 25
)

// Length and string encodings. The top two bits of a length's first byte
// choose its form; 11 means a specially encoded string follows instead.
const (
	len6Bit   = 0    // 00xxxxxx
	len14Bit  = 1    // 01xxxxxx xxxxxxxx, big-endian
	len32Bit  = 0x80 // then 4 bytes big-endian
	len64Bit  = 0x81 // then 8 bytes big-endian
	lenEncVal = 3    // 11xxxxxx: the low six bits name an encoding
	encInt8   = 0
	encInt16  = 1
	encInt32  = 2
	encLZF    = 3
)

// Quicklist node containers in RDB_TYPE_LIST_QUICKLIST_2.
const (
	containerPlain  = 1 // the node is one element, stored as-is
	containerPacked = 2 // the node is a listpack
)

// The errors decoding can fail with. Decoder wraps each in a *DecodeError
// that says where in the file it happened, so test with errors.Is.
var (
	// ErrNotRDB means the file does not start with "REDIS" and a
	// four-digit version.
	ErrNotRDB = errors.New("persistence: not an RDB file")

	// ErrRDBVersion means the file's RDB version is outside
	// MinRDBVersion..MaxRDBVersion.
	ErrRDBVersion = errors.New("persistence: unsupported RDB version")

	// ErrRDBTruncated means the file ends before the item being read does:
	// inside a value, before the EOF opcode or inside the checksum. A
	// length that runs past the end of a file of known size is reported
	// the same way, before anything is allocated for it.
	ErrRDBTruncated = errors.New("persistence: RDB file truncated")

	// ErrRDBChecksum means the CRC-64 stored after the EOF opcode differs
	// from the one computed over the file. The message gives both.
	ErrRDBChecksum = errors.New("persistence: RDB checksum mismatch")

	// ErrRDBCorrupt means the bytes are malformed: an unknown opcode or
	// encoding, a listpack or ziplist that fails validation, a stream
	// whose parts disagree, a length no value can have.
	ErrRDBCorrupt = errors.New("persistence: RDB file corrupt")

	// ErrRDBUnsupported means the file holds something redstream does not
	// serve: a hash, set, sorted set or module value, a function library
	// or module aux data. DecodeOptions.SkipUnsupported steps over them.
	ErrRDBUnsupported = errors.New("persistence: RDB content not served by redstream")
)

// A DecodeError is what Decoder returns when it fails: the underlying
// error (which wraps one of the Err values above) and where it happened.
type DecodeError struct {
	Offset int64  // byte offset of the read or item that failed
	DB     int    // the db selected at that point
	Key    []byte // the key being decoded, or nil between keys
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Key == nil {
		return fmt.Sprintf("%v (at offset %d)", e.Err, e.Offset)
	}
	return fmt.Sprintf("%v (key %q in db %d, at offset %d)", e.Err, e.Key, e.DB, e.Offset)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// An UnsupportedError names a key (or a keyless section) whose type
// redstream does not serve. It wraps ErrRDBUnsupported.
type UnsupportedError struct {
	What string // "hash", "set", "sorted set", "module value", "function library", "module aux data"
	Key  []byte // nil for function libraries and module aux data
	DB   int
}

func (e *UnsupportedError) Error() string {
	const serves = "redstream serves strings, lists and streams"
	if e.Key == nil {
		return fmt.Sprintf("persistence: RDB file holds %s; %s", e.What, serves)
	}
	return fmt.Sprintf("persistence: RDB key %q in db %d is a %s; %s", e.Key, e.DB, e.What, serves)
}

func (e *UnsupportedError) Unwrap() error { return ErrRDBUnsupported }

// rdbCorruptf returns an error wrapping ErrRDBCorrupt.
func rdbCorruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRDBCorrupt}, args...)...)
}

// corruptWrap returns an error wrapping both ErrRDBCorrupt and cause
// (errors.Is finds either), whose message gives the context once:
// "persistence: RDB file corrupt: <context>: <cause without its prefix>".
func corruptWrap(cause error, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	return &multiWrap{
		msg:  fmt.Sprintf("%v: %s: %s", ErrRDBCorrupt, detail, strings.TrimPrefix(cause.Error(), "persistence: ")),
		errs: []error{ErrRDBCorrupt, cause},
	}
}

// multiWrap is an error with its own message wrapping several errors.
type multiWrap struct {
	msg  string
	errs []error
}

func (e *multiWrap) Error() string   { return e.msg }
func (e *multiWrap) Unwrap() []error { return e.errs }

// rdbTruncatedf returns an error wrapping ErrRDBTruncated.
func rdbTruncatedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRDBTruncated}, args...)...)
}

// typeName returns the name of an RDB value type for messages.
func typeName(t byte) string {
	switch t {
	case typeString:
		return "string"
	case typeList, typeListZiplist, typeListQuicklist, typeListQuicklist2:
		return "list"
	case typeSet, typeSetIntset, typeSetListpack:
		return "set"
	case typeZset, typeZset2, typeZsetZiplist, typeZsetListpack:
		return "sorted set"
	case typeHash, typeHashZipmap, typeHashZiplist, typeHashListpack,
		typeHashMetaPreGA, typeHashLpExPreGA, typeHashMeta, typeHashLpEx:
		return "hash"
	case typeModulePreGA, typeModule2:
		return "module value"
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return "stream"
	}
	return fmt.Sprintf("type %d", t)
}
