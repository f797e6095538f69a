package persistence

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
	"unsafe"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/server"
	"github.com/redstream/redstream/stream"
)

// Between the server's values and RDB files: what a save, an AOF
// rewrite's base, a load and (to come) a Raft snapshot all use. The
// server holds strings as []byte, lists as *listpack.Quicklist and
// streams as *stream.Stream; the codec's values are String, List and
// Stream (which is the *stream.Stream itself).

// WriteSnapshot writes snap to w as an RDB file with opt (Ctime is set
// from the snapshot's time). It reads every database's keys to the end,
// which releases the snapshot; the caller closes it on error.
func WriteSnapshot(w io.Writer, snap *server.Snapshot, opt EncodeOptions) error {
	opt.Ctime = time.UnixMilli(snap.Time)
	var dbs []DB
	for _, sdb := range snap.DBs {
		dbs = append(dbs, DB{ID: sdb.Index, Keys: uint64(sdb.Keys), Expires: uint64(sdb.Expires),
			Entries: snapshotEntries(snap, sdb.Index)})
	}
	return Encode(w, &opt, dbs)
}

// snapshotEntries turns a snapshot's keys into the codec's entries. The
// encoder writes each entry before it asks for the next and keeps nothing
// of it, so one Entry and the key's own bytes serve every key, and a list
// is written straight from its nodes (compressed ones as they are): a save
// of a million small keys then makes little garbage, and seldom starts a
// collection that the clients' latency would feel.
func snapshotEntries(snap *server.Snapshot, db int) iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		var e Entry
		for se := range snap.Entries(db) {
			var v Value
			var err error
			if q, ok := se.Value.(*listpack.Quicklist); ok {
				v = liveList{q}
			} else {
				v, err = ToValue(se.Value)
			}
			e = Entry{DB: db, Key: unsafe.Slice(unsafe.StringData(se.Key), len(se.Key)), Value: v,
				ExpireAt: se.ExpireAt, HasExpire: se.ExpireAt != 0}
			if !yield(&e, err) || err != nil {
				return
			}
		}
	}
}

// ReadSnapshot decodes the RDB file r and hands every key to put, as the
// server's value (lists filled to listFill, list-max-listpack-size). It
// calls progress, if not nil, about once a second with the bytes read and
// the keys put so far, and returns the keys put.
func ReadSnapshot(r io.Reader, opt DecodeOptions, put server.Put, progress func(offset int64, keys int)) (int, error) {
	dec := NewDecoder(r, &opt)
	keys, last := 0, time.Now()
	for {
		e, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, err
		}
		value, err := FromValue(e.Value, opt.ListFill)
		if err != nil {
			return keys, fmt.Errorf("key %q: %w", e.Key, err)
		}
		expire := int64(0)
		if e.HasExpire {
			expire = e.ExpireAt
		}
		if err := put(e.DB, string(e.Key), value, expire); err != nil {
			return keys, err
		}
		keys++
		if progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			progress(dec.Offset(), keys)
		}
	}
}

// FromValue turns a decoded value into the server's value; lists get
// nodes of listFill (list-max-listpack-size).
func FromValue(v Value, listFill int) (any, error) {
	switch v := v.(type) {
	case String:
		return []byte(v), nil
	case List:
		return listpack.QuicklistFromNodes(listFill, v), nil
	case Stream:
		return v.Stream, nil
	}
	return nil, fmt.Errorf("cannot load a %T value", v)
}

// ToValue turns a snapshot's value view into the codec's value.
func ToValue(v any) (Value, error) {
	switch v := v.(type) {
	case []byte:
		return String(v), nil
	case *listpack.Quicklist:
		return List(v.Listpacks()), nil
	case *stream.Stream:
		return Stream{v}, nil
	}
	return nil, fmt.Errorf("cannot save a %T value", v)
}

// liveList is a server list (a snapshot's view) that the encoder writes
// node by node, storing compressed nodes without decompressing them, as
// Redis does. Only snapshotEntries makes one.
type liveList struct{ q *listpack.Quicklist }

func (liveList) Type() string { return "list" }
func (liveList) sealed()      {}
