package persistence

import "encoding/binary"

// Module value opcodes: a module value (and module aux data) is a series
// of typed items, each an opcode then its payload, ended by opcode 0. That
// self-description is what lets a reader without the module step over it.
const (
	moduleOpEOF    = 0
	moduleOpSint   = 1 // a length-encoded integer
	moduleOpUint   = 2 // a length-encoded integer
	moduleOpFloat  = 3 // 4 bytes
	moduleOpDouble = 4 // 8 bytes
	moduleOpString = 5 // a string
)

// skipValue steps over a value of a type redstream does not serve and
// returns its element count when that is cheap to know, else -1.
func (d *Decoder) skipValue(t byte) (int64, error) {
	switch t {
	case typeSet:
		return d.skipCounted("a set", 1, nil)
	case typeHash:
		return d.skipCounted("a hash", 2, nil)
	case typeZset:
		return d.skipCounted("a sorted set", 1, d.skipTextDouble)
	case typeZset2:
		return d.skipCounted("a sorted set", 1, d.skipBinDouble)
	case typeHashMetaPreGA:
		return d.skipCounted("a hash", 2, d.skipLen)
	case typeHashMeta:
		if _, err := d.r.ms("a hash's next field expiry"); err != nil {
			return 0, err
		}
		return d.skipCounted("a hash", 2, d.skipLen)
	case typeModule2:
		return -1, d.skipModule()
	case typeHashLpEx:
		if _, err := d.r.ms("a hash's next field expiry"); err != nil {
			return 0, err
		}
	}
	return d.skipBlob(t)
}

// skipCounted steps over a count, then per item `strs` strings and one
// call of extra (a score, a TTL) before them when extra is set.
func (d *Decoder) skipCounted(what string, strs int, extra func() error) (int64, error) {
	n, err := d.r.count(what + "'s size")
	if err != nil {
		return 0, err
	}
	if err := d.r.countFits(n, uint64(strs), what+"'s size"); err != nil {
		return 0, err
	}
	for range n {
		if extra != nil && strs == 2 { // hash field TTL precedes the field
			if err := extra(); err != nil {
				return 0, err
			}
		}
		for range strs {
			if err := d.r.skipStr("an element of " + what); err != nil {
				return 0, err
			}
		}
		if extra != nil && strs == 1 { // a score follows the member
			if err := extra(); err != nil {
				return 0, err
			}
		}
	}
	return int64(min(n, 1<<62)), nil
}

func (d *Decoder) skipLen() error {
	_, err := d.r.count("a hash field TTL")
	return err
}

func (d *Decoder) skipBinDouble() error {
	_, err := d.r.fixed(8, "a score")
	return err
}

// skipTextDouble steps over an old-style score: a length byte, where 253,
// 254 and 255 stand for NaN, +inf and -inf with nothing after them.
func (d *Decoder) skipTextDouble() error {
	n, err := d.r.u8("a score")
	if err != nil || n >= 253 {
		return err
	}
	return d.r.discard(uint64(n), "a score")
}

// skipBlob steps over the single string a compact encoding (ziplist,
// listpack, intset, zipmap) is stored as, reading its element count from
// the blob's header.
func (d *Decoder) skipBlob(t byte) (int64, error) {
	b, err := d.r.str("an encoded " + typeName(t))
	if err != nil {
		return 0, err
	}
	return blobCount(t, b), nil
}

// blobCount reads the element count in the header of a compact encoding,
// or returns -1 when the header does not say.
func blobCount(t byte, b []byte) int64 {
	per := int64(1)
	switch t {
	case typeHashListpack, typeZsetListpack, typeHashZiplist, typeZsetZiplist:
		per = 2
	case typeHashLpEx, typeHashLpExPreGA:
		per = 3
	}
	switch t {
	case typeSetIntset:
		if len(b) >= 8 {
			return int64(binary.LittleEndian.Uint32(b[4:]))
		}
	case typeHashZiplist, typeZsetZiplist:
		if len(b) >= 10 && binary.LittleEndian.Uint16(b[8:]) != 0xffff {
			return int64(binary.LittleEndian.Uint16(b[8:])) / per
		}
	case typeHashZipmap:
		if len(b) >= 1 && b[0] < 254 {
			return int64(b[0])
		}
	default: // listpacks
		if len(b) >= 6 && binary.LittleEndian.Uint16(b[4:]) != 0xffff {
			return int64(binary.LittleEndian.Uint16(b[4:])) / per
		}
	}
	return -1
}

// skipModule steps over a module value: the module ID, then opcodes.
func (d *Decoder) skipModule() error {
	if _, err := d.r.count("a module ID"); err != nil {
		return err
	}
	return d.skipModuleOps()
}

// skipModuleOps steps over module opcodes and their payloads up to the
// EOF opcode.
func (d *Decoder) skipModuleOps() error {
	for {
		op, err := d.r.count("a module opcode")
		if err != nil {
			return err
		}
		switch op {
		case moduleOpEOF:
			return nil
		case moduleOpSint, moduleOpUint:
			_, err = d.r.count("a module integer")
		case moduleOpFloat:
			_, err = d.r.fixed(4, "a module float")
		case moduleOpDouble:
			_, err = d.r.fixed(8, "a module double")
		case moduleOpString:
			err = d.r.skipStr("a module string")
		default:
			err = rdbCorruptf("unknown module opcode %d", op)
		}
		if err != nil {
			return err
		}
	}
}
