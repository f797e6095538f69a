package stream

import "errors"

// ErrInvalidID means an argument is not a stream ID: not "ms-seq" or "ms"
// with numbers in range, or "-"/"+" where only a concrete ID will do.
var ErrInvalidID = errors.New("stream: invalid stream ID")

// ErrIDOverflow means incrementing the largest ID or decrementing 0-0: the
// result would wrap around.
var ErrIDOverflow = errors.New("stream: ID overflow")

// ErrIDNotGreater means the ID of a new entry is not greater than the
// stream's last ID, so adding it would break the order of the stream.
var ErrIDNotGreater = errors.New("stream: ID is equal or smaller than the last ID")

// ErrExhausted means the stream's last ID is the largest possible one:
// no entry can ever be added after it.
var ErrExhausted = errors.New("stream: the last possible ID is used")

// ErrTooLarge means an entry's fields and values add up to more than a
// node can hold (1 GiB).
var ErrTooLarge = errors.New("stream: entry too large")

// ErrSetIDBelowMaxDeleted means SetID was asked for a last ID smaller
// than the largest ID ever deleted.
var ErrSetIDBelowMaxDeleted = errors.New("stream: ID smaller than the max deleted entry ID")

// ErrSetIDBelowTop means SetID was asked for a last ID smaller than the
// ID of the last entry in the stream.
var ErrSetIDBelowTop = errors.New("stream: ID smaller than the last entry")

// ErrEntriesAddedBelowLength means SetID was asked for an entries-added
// counter smaller than the number of entries in the stream.
var ErrEntriesAddedBelowLength = errors.New("stream: entries added smaller than the length")

// ErrCorrupt is wrapped by every error ValidateNode and FromState return:
// the bytes are not a well-formed stream node, or the state given is not
// a consistent stream.
var ErrCorrupt = errors.New("stream: corrupt")
