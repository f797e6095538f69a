package persistence

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/stream"
)

// EncodeOptions adjusts an Encoder. The zero value writes what Redis 7.0
// writes with its default configuration.
type EncodeOptions struct {
	NoCompression bool // rdbcompression no: never LZF-compress strings
	NoChecksum    bool // rdbchecksum no: store 0 as the checksum

	RedstreamVersion string    // the redstream-ver aux field; "dev" if empty
	Ctime            time.Time // the ctime aux field; the current time if zero
	UsedMem          int64     // the used-mem aux field
	AOFBase          bool      // the aof-base aux field: this file is an AOF's base
	Aux              []AuxField

	// ListFill is list-max-listpack-size (zero means
	// listpack.DefaultFill). As in Redis, a list node holding a single
	// value too large for a node of that size is written as a plain
	// container.
	ListFill int
}

// ErrEncoderClosed is returned by Encoder methods called after Close.
var ErrEncoderClosed = errors.New("persistence: RDB encoder is closed")

// An Encoder writes an RDB file of version RDBVersion as a stream: the
// header on first use, then SelectDB and WriteEntry calls in any number,
// then Close for the EOF opcode and checksum. Nothing is written out of
// order, so the destination can be a pipe or socket. An Encoder is not
// safe for concurrent use.
type Encoder struct {
	w       *rdbWriter
	opt     EncodeOptions
	plain   *listpack.Quicklist // only asked PlainValue: the plain-node rule for ListFill
	db      int
	started bool
	closed  bool
	ext     []byte
}

// NewEncoder returns an Encoder writing to w. It does not close w.
func NewEncoder(w io.Writer, opt *EncodeOptions) *Encoder {
	e := &Encoder{db: -1}
	if opt != nil {
		e.opt = *opt
	}
	if e.opt.RedstreamVersion == "" {
		e.opt.RedstreamVersion = "dev"
	}
	if e.opt.ListFill == 0 {
		e.opt.ListFill = listpack.DefaultFill
	}
	e.plain = listpack.NewQuicklist(e.opt.ListFill)
	e.w = newRDBWriter(w, !e.opt.NoChecksum, !e.opt.NoCompression)
	return e
}

// Offset returns the number of bytes written so far.
func (e *Encoder) Offset() int64 { return e.w.n }

// check writes the header if it is still due, and reports a closed
// encoder or an earlier write error.
func (e *Encoder) check() error {
	if e.closed {
		return ErrEncoderClosed
	}
	if !e.started {
		e.started = true
		e.header()
	}
	return e.w.err
}

// header writes the magic and the aux fields, in Redis's order, ours
// after them.
func (e *Encoder) header() {
	e.w.raw(fmt.Appendf(nil, "REDIS%04d", RDBVersion))
	ctime := e.opt.Ctime
	if ctime.IsZero() {
		ctime = time.Now()
	}
	aofBase := "0"
	if e.opt.AOFBase {
		aofBase = "1"
	}
	e.aux("redis-ver", RDBRedisVersion)
	e.aux("redis-bits", strconv.Itoa(strconv.IntSize))
	e.aux("ctime", strconv.FormatInt(ctime.Unix(), 10))
	e.aux("used-mem", strconv.FormatInt(e.opt.UsedMem, 10))
	e.aux("aof-base", aofBase)
	e.aux("redstream-ver", e.opt.RedstreamVersion)
	for _, a := range e.opt.Aux {
		e.aux(a.Name, a.Value)
	}
}

func (e *Encoder) aux(name, value string) {
	e.w.u8(opAux)
	e.w.str([]byte(name))
	e.w.str([]byte(value))
}

// SelectDB starts the keys of db: the SELECTDB opcode, then RESIZEDB with
// the key and expiry counts (Redis's sizing hints; zeros are fine).
func (e *Encoder) SelectDB(db int, keys, expires uint64) error {
	if err := e.check(); err != nil {
		return err
	}
	if db < 0 {
		return fmt.Errorf("persistence: db %d is negative", db)
	}
	e.db = db
	e.w.u8(opSelectDB)
	e.w.length(uint64(db))
	e.w.u8(opResizeDB)
	e.w.length(keys)
	e.w.length(expires)
	return e.w.err
}

// WriteEntry writes one key in the db last selected (db 0 if none was):
// its extension aux field if the value needs one, its expiry, its type,
// its name and its value. ent.DB is not consulted. An empty list is
// skipped, as Redis would drop it on load.
func (e *Encoder) WriteEntry(ent *Entry) error {
	if err := e.check(); err != nil {
		return err
	}
	t, err := valueType(ent.Value)
	if err != nil {
		return fmt.Errorf("persistence: key %q: %w", ent.Key, err)
	}
	if emptyList(ent.Value) {
		return nil
	}
	var st *stream.State
	if s, ok := ent.Value.(Stream); ok {
		st = rdbState(s)
		if needsExt(st) {
			e.ext = appendExt(e.ext[:0], max(e.db, 0), ent.Key, st)
			e.w.u8(opAux)
			e.w.str([]byte(extAuxName))
			e.w.str(e.ext)
		}
	}
	if ent.HasExpire {
		e.w.u8(opExpireMs)
		e.w.ms(ent.ExpireAt)
	}
	e.w.u8(t)
	e.w.str(ent.Key)
	e.value(ent.Value, st)
	return e.w.err
}

// valueType returns the RDB type byte a value is written with.
func valueType(v Value) (byte, error) {
	switch v := v.(type) {
	case String:
		return typeString, nil
	case List, liveList:
		return typeListQuicklist2, nil
	case Stream:
		if v.Stream != nil {
			return typeStreamListpacks2, nil
		}
	}
	return 0, fmt.Errorf("cannot encode a %T value", v)
}

// value writes v; a stream's is st, from rdbState.
func (e *Encoder) value(v Value, st *stream.State) {
	switch v := v.(type) {
	case String:
		e.w.str(v)
	case List:
		e.list(v)
	case liveList:
		e.liveList(v.q)
	case Stream:
		e.stream(st)
	}
}

// list writes the non-empty nodes, each as a plain container holding its
// value if Redis would keep it as a plain node, else as a packed listpack.
func (e *Encoder) list(l List) {
	n := 0
	for _, lp := range l {
		if lp.Len() > 0 {
			n++
		}
	}
	e.w.length(uint64(n))
	for _, lp := range l {
		if lp.Len() > 0 {
			e.node(lp)
		}
	}
}

// node writes one list node: as a plain container holding its value if
// Redis would keep it as a plain node, else as a packed listpack.
func (e *Encoder) node(lp listpack.Listpack) {
	if v, ok := e.plain.PlainValue(lp); ok {
		e.w.length(containerPlain)
		e.w.str(v)
		return
	}
	e.w.length(containerPacked)
	e.w.str(lp)
}

// liveList writes a server list's nodes as list does, except that a
// compressed node is written as the LZF string it already is (whatever
// rdbcompression says: Redis does the same), not decompressed and
// compressed again. A live list has no empty nodes.
func (e *Encoder) liveList(q *listpack.Quicklist) {
	e.w.length(uint64(q.NodeCount()))
	q.StoredNodes(func(lp listpack.Listpack, z []byte, size int) bool {
		if z == nil {
			e.node(lp)
			return true
		}
		e.w.length(containerPacked)
		e.w.lzfStr(z, size)
		return true
	})
}

// emptyList reports whether v is a list without elements, which is not
// written: Redis would drop it on load.
func emptyList(v Value) bool {
	switch v := v.(type) {
	case List:
		return v.Len() == 0
	case liveList:
		return v.q.Len() == 0
	}
	return false
}

// Close writes the EOF opcode and the checksum and flushes. It does not
// close the underlying writer. Calling it again returns ErrEncoderClosed.
func (e *Encoder) Close() error {
	if err := e.check(); err != nil {
		return err
	}
	e.closed = true
	e.w.u8(opEOF)
	sum := e.w.crc
	if !e.w.checksum {
		sum = 0
	}
	e.w.checksum = false // the checksum does not cover itself
	e.w.ms(int64(sum))
	if e.w.err == nil {
		e.w.err = e.w.bw.Flush()
	}
	return e.w.err
}

// A DB is one database to Encode: its number, the RESIZEDB hints and its
// entries. An error yielded by Entries stops the encoding with that error.
type DB struct {
	ID            int
	Keys, Expires uint64
	Entries       iter.Seq2[*Entry, error]
}

// Encode writes a whole RDB file holding dbs to w. A db that yields no
// entries is left out, as Redis leaves out empty dbs.
func Encode(w io.Writer, opt *EncodeOptions, dbs []DB) error {
	e := NewEncoder(w, opt)
	for _, db := range dbs {
		if err := e.encodeDB(db); err != nil {
			return err
		}
	}
	return e.Close()
}

func (e *Encoder) encodeDB(db DB) error {
	selected := false
	for ent, err := range db.Entries {
		if err != nil {
			return err
		}
		if !selected {
			if err := e.SelectDB(db.ID, db.Keys, db.Expires); err != nil {
				return err
			}
			selected = true
		}
		if err := e.WriteEntry(ent); err != nil {
			return err
		}
	}
	return nil
}
