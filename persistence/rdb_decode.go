package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/redstream/redstream/listpack"
)

// DecodeOptions adjusts a Decoder. The zero value is Redis's behaviour for
// what redstream serves, with every check on.
type DecodeOptions struct {
	// SkipUnsupported steps over hashes, sets, sorted sets and module
	// values (returned as Skipped), function libraries and module aux data
	// (counted in Stats) instead of failing with an UnsupportedError.
	SkipUnsupported bool

	// IgnoreChecksum records a checksum mismatch in Checksum instead of
	// failing with ErrRDBChecksum.
	IgnoreChecksum bool

	// ListFill is the list-max-listpack-size used to pack lists stored in
	// encodings without listpack nodes (linked lists, single ziplists);
	// zero means listpack.DefaultFill.
	ListFill int

	// Size is the number of bytes the reader holds, when the caller knows
	// it better than the decoder can find out (it asks an *os.File or a
	// reader with a Len method). A known size lets the decoder reject a
	// length that runs past the end before reading toward it.
	Size int64
}

// An AuxField is a name/value pair from the file's AUX opcodes, such as
// redis-ver or ctime.
type AuxField struct {
	Name, Value string
}

// ChecksumStatus says what became of the file's checksum.
type ChecksumStatus int

const (
	ChecksumUnchecked ChecksumStatus = iota // EOF not reached yet
	ChecksumOK                              // stored and computed agree
	ChecksumDisabled                        // stored as 0: written with rdbchecksum no
	ChecksumMismatch                        // differ (only with IgnoreChecksum)
)

func (s ChecksumStatus) String() string {
	return [...]string{"unchecked", "ok", "disabled", "mismatch"}[s]
}

// Checksum reports the checksum check: its status, the value stored in
// the file and the value computed over it.
type Checksum struct {
	Status           ChecksumStatus
	Stored, Computed uint64
}

// DecodeStats counts what the decoder saw besides the entries it returned.
type DecodeStats struct {
	EmptyKeys       int               // keys with empty values, dropped as Redis drops them
	SkippedFuncs    int               // function libraries skipped
	SkippedModAux   int               // module aux sections skipped
	RedstreamExts   int               // redstream extension aux fields applied
	ResizeDBs       map[int][2]uint64 // RESIZEDB hints by db: keys, expires
	SlotInfoRecords int               // SLOT_INFO records read (and ignored)
}

// A Decoder reads an RDB file one key at a time. Next returns the entries
// in file order and io.EOF after the EOF opcode once the checksum has been
// verified. Any failure is a *DecodeError; after one, Next keeps returning
// it. A Decoder never panics on malformed input, and allocates only in
// proportion to bytes it has actually read.
type Decoder struct {
	r       *rdbReader
	opt     DecodeOptions
	version int
	db      int
	aux     []AuxField
	exts    map[extKey]*streamExt
	stats   DecodeStats
	sum     Checksum
	started bool
	done    bool
	err     error
	key     []byte // key being decoded, for errors
}

// NewDecoder returns a Decoder reading from r. It reads nothing until the
// first call to Next (or Version).
func NewDecoder(r io.Reader, opt *DecodeOptions) *Decoder {
	d := &Decoder{}
	if opt != nil {
		d.opt = *opt
	}
	if d.opt.ListFill == 0 {
		d.opt.ListFill = listpack.DefaultFill
	}
	d.r = newRDBReader(r, d.opt.Size)
	d.exts = map[extKey]*streamExt{}
	d.stats.ResizeDBs = map[int][2]uint64{}
	return d
}

// Version returns the file's RDB version, reading the header if needed.
// The version is returned with any error once the header has been read
// (an unsupported version, a failure further on); it is 0 when the file
// does not start as an RDB file does.
func (d *Decoder) Version() (int, error) {
	err := d.start()
	return d.version, err
}

// Aux returns the aux fields read so far (redstream's own extension fields
// excluded; see the package documentation).
func (d *Decoder) Aux() []AuxField { return d.aux }

// Offset returns the number of bytes consumed so far, for progress.
func (d *Decoder) Offset() int64 { return d.r.off }

// Checksum returns the outcome of the checksum check, which is known once
// Next has returned io.EOF.
func (d *Decoder) Checksum() Checksum { return d.sum }

// Stats returns counts of what the decoder dropped or skipped.
func (d *Decoder) Stats() DecodeStats { return d.stats }

// start reads the nine-byte header, "REDIS" and the version in four
// digits, once.
func (d *Decoder) start() error {
	if d.started {
		return d.err
	}
	d.started = true
	var magic [9]byte
	if err := d.r.full(magic[:], "the header"); err != nil {
		d.err = d.wrap(err)
		return d.err
	}
	v, ok := parseVersion(magic[:])
	switch {
	case !ok:
		d.err = d.wrap(fmt.Errorf("%w: header is %q", ErrNotRDB, magic[:]))
	case v < MinRDBVersion || v > MaxRDBVersion:
		d.err = d.wrap(fmt.Errorf("%w: version %d, this decoder reads %d to %d", ErrRDBVersion, v, MinRDBVersion, MaxRDBVersion))
	}
	d.version = v
	return d.err
}

func parseVersion(m []byte) (int, bool) {
	if string(m[:5]) != "REDIS" {
		return 0, false
	}
	v := 0
	for _, c := range m[5:9] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// wrap gives err its place in the file, unless it already has one.
func (d *Decoder) wrap(err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return err
	}
	key := d.key
	var ue *UnsupportedError
	if errors.As(err, &ue) {
		key = nil // the message names the key already
	}
	return &DecodeError{Offset: d.r.itemOff, DB: d.db, Key: key, Err: err}
}

// Next returns the next entry, or io.EOF after the last one once the
// checksum has been checked.
func (d *Decoder) Next() (*Entry, error) {
	if err := d.start(); err != nil {
		return nil, err
	}
	if d.done {
		return nil, io.EOF
	}
	ent, err := d.next()
	if err == io.EOF {
		d.done = true
		return nil, io.EOF
	}
	if err != nil {
		d.err = d.wrap(err)
		return nil, d.err
	}
	return ent, nil
}

// pending holds what opcodes before a key said about it.
type pending struct {
	start     int64
	expire    int64
	hasExpire bool
	idle      int64
	freq      int
}

// next runs the opcode loop until it has a key to return or meets EOF.
func (d *Decoder) next() (*Entry, error) {
	p := pending{start: -1, idle: -1, freq: -1}
	for {
		d.key = nil
		at := d.r.off
		op, err := d.r.u8("an opcode")
		if err != nil {
			return nil, rdbTruncatedf("file ends before the EOF opcode")
		}
		if p.start < 0 {
			p.start = at
		}
		handled, err := d.opcode(op, &p)
		if err != nil {
			return nil, err
		}
		if op == opEOF {
			return nil, d.finish()
		}
		if handled {
			if op == opAux || op == opSelectDB || op == opResizeDB || op == opSlotInfo ||
				op == opFunction2 || op == opModuleAux {
				p.start = -1 // these are not part of the next key
			}
			continue
		}
		ent, err := d.entry(op, &p)
		if err != nil || ent != nil {
			return ent, err
		}
		p = pending{start: -1, idle: -1, freq: -1} // an empty key was dropped
	}
}

// opcode handles op if it is not a value type, reporting whether it was.
func (d *Decoder) opcode(op byte, p *pending) (bool, error) {
	var err error
	switch op {
	case opEOF:
	case opSelectDB:
		err = d.selectDB()
	case opResizeDB:
		err = d.resizeDB()
	case opExpireMs:
		p.expire, err = d.r.ms("an expiry")
		p.hasExpire = true
	case opExpireSec:
		p.expire, err = d.expireSec()
		p.hasExpire = true
	case opIdle:
		var n uint64
		n, err = d.r.count("an LRU idle time")
		p.idle = int64(min(n, math.MaxInt64))
	case opFreq:
		var b byte
		b, err = d.r.u8("an LFU counter")
		p.freq = int(b)
	case opAux:
		err = d.auxField()
	case opSlotInfo:
		err = d.slotInfo()
	case opModuleAux:
		err = d.moduleAux()
	case opFunction2:
		err = d.function()
	case opFunctionPreGA:
		err = rdbCorruptf("function libraries in the Redis 7.0 release-candidate format are not supported")
	default:
		return false, nil
	}
	return true, err
}

func (d *Decoder) selectDB() error {
	n, err := d.r.count("a SELECTDB number")
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return rdbCorruptf("SELECTDB %d is not a db number", n)
	}
	d.db = int(n)
	return nil
}

func (d *Decoder) resizeDB() error {
	keys, err := d.r.count("a RESIZEDB key count")
	if err != nil {
		return err
	}
	expires, err := d.r.count("a RESIZEDB expire count")
	if err != nil {
		return err
	}
	d.stats.ResizeDBs[d.db] = [2]uint64{keys, expires}
	return nil
}

func (d *Decoder) expireSec() (int64, error) {
	p, err := d.r.fixed(4, "an expiry in seconds")
	if err != nil {
		return 0, err
	}
	s := int32(uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24)
	return int64(s) * 1000, nil
}

func (d *Decoder) slotInfo() error {
	for _, what := range []string{"a slot number", "a slot key count", "a slot expire count"} {
		if _, err := d.r.count(what); err != nil {
			return err
		}
	}
	d.stats.SlotInfoRecords++
	return nil
}

// auxField reads a name/value pair; redstream's extension fields are
// parsed and held for their key, others are kept for Aux.
func (d *Decoder) auxField() error {
	name, err := d.r.str("an aux field name")
	if err != nil {
		return err
	}
	val, err := d.r.str("an aux field value")
	if err != nil {
		return err
	}
	if string(name) == extAuxName {
		return d.addExt(val)
	}
	d.aux = append(d.aux, AuxField{string(name), string(val)})
	return nil
}

// finish reads the checksum after the EOF opcode and compares it with
// the CRC of everything before it, EOF opcode included.
func (d *Decoder) finish() error {
	computed := d.r.crc
	if err := d.leftoverExts(); err != nil {
		return err
	}
	p, err := d.r.fixed(8, "the checksum")
	if err != nil {
		return rdbTruncatedf("file ends inside the checksum after the EOF opcode")
	}
	stored := uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
		uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
	d.sum = Checksum{Status: ChecksumOK, Stored: stored, Computed: computed}
	switch {
	case stored == 0:
		d.sum.Status = ChecksumDisabled
	case stored != computed:
		d.sum.Status = ChecksumMismatch
		if !d.opt.IgnoreChecksum {
			return fmt.Errorf("%w: expected %#016x (computed over the file), found %#016x", ErrRDBChecksum, computed, stored)
		}
	}
	return io.EOF
}

// DiagnoseDamage refines err, the error decoding the RDB file f of size
// bytes failed with. A file of which a byte was changed usually fails
// long before its checksum is read: as truncated (a length now claims
// more than is left) or as corrupt. If f ends as a whole file does, in
// the EOF opcode and a checksum, and that checksum does not match its
// bytes, the damage is a changed byte, not a cut: the error returned then
// wraps ErrRDBChecksum as well as err, and says so. Any other err is
// returned as it is.
func DiagnoseDamage(f io.ReaderAt, size int64, err error) error {
	if size < 9+1+8 || !(errors.Is(err, ErrRDBTruncated) || errors.Is(err, ErrRDBCorrupt)) {
		return err
	}
	trailer := make([]byte, 9)
	if _, rerr := f.ReadAt(trailer, size-9); rerr != nil || trailer[0] != opEOF {
		return err
	}
	stored := binary.LittleEndian.Uint64(trailer[1:])
	computed, rerr := crc64Of(io.NewSectionReader(f, 0, size-8))
	if rerr != nil || stored == 0 || stored == computed {
		return err
	}
	return &multiWrap{
		msg: fmt.Sprintf("%v: the file ends in the EOF marker and a checksum as a whole file does, but its bytes do not "+
			"match that checksum (stored %#016x, computed %#016x): bytes were changed, and decoding failed at the first "+
			"one it met: %v", ErrRDBChecksum, stored, computed, err),
		errs: []error{ErrRDBChecksum, err},
	}
}

// crc64Of returns the Redis CRC-64 of what r holds.
func crc64Of(r io.Reader) (uint64, error) {
	buf := make([]byte, 64<<10)
	var crc uint64
	for {
		n, err := r.Read(buf)
		crc = UpdateCRC64(crc, buf[:n])
		if err == io.EOF {
			return crc, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
