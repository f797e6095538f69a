package persistence

import (
	"fmt"
)

// entry reads the key and value of type t and returns the entry, or nil
// if the value was empty and dropped (as Redis drops empty keys).
func (d *Decoder) entry(t byte, p *pending) (*Entry, error) {
	typeOff := d.r.off - 1
	key, err := d.r.str("a key")
	if err != nil {
		return nil, err
	}
	d.key = key
	if !knownType(t) {
		d.r.itemOff = typeOff
		return nil, rdbCorruptf("unknown value type %d", t)
	}
	v, err := d.value(t, key)
	if _, ok := err.(*UnsupportedError); ok {
		d.r.itemOff = typeOff // point at the key's type byte
	}
	if err != nil {
		return nil, err
	}
	if err := d.unclaimedExt(key, v); err != nil {
		return nil, err
	}
	if v == nil {
		d.stats.EmptyKeys++
		return nil, nil
	}
	return &Entry{
		DB: d.db, Key: key, Value: v,
		ExpireAt: p.expire, HasExpire: p.hasExpire,
		Idle: p.idle, Freq: p.freq,
		Offset: p.start, Size: d.r.off - p.start,
	}, nil
}

// value reads a value of type t. It returns nil for an empty list, which
// the caller drops.
func (d *Decoder) value(t byte, key []byte) (Value, error) {
	switch t {
	case typeString:
		b, err := d.r.str("a string value")
		return String(b), err
	case typeList, typeListZiplist, typeListQuicklist, typeListQuicklist2:
		l, err := d.list(t)
		if err != nil || len(l) == 0 {
			return nil, err
		}
		return l, nil
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return d.stream(t, key)
	}
	if !d.opt.SkipUnsupported || t == typeModulePreGA {
		return nil, &UnsupportedError{What: typeName(t), Key: key, DB: d.db}
	}
	n, err := d.skipValue(t)
	return Skipped{Kind: typeName(t), RDBType: t, Len: n}, err
}

// knownType reports whether t is a value type some Redis version writes.
func knownType(t byte) bool {
	return t <= typeModule2 || (t >= typeHashZipmap && t <= typeHashLpEx)
}

// function reads (and skips, if allowed) a FUNCTION2 library.
func (d *Decoder) function() error {
	if !d.opt.SkipUnsupported {
		return &UnsupportedError{What: "a function library"}
	}
	d.stats.SkippedFuncs++
	return d.r.skipStr("a function library")
}

// moduleAux reads (and skips, if allowed) MODULE_AUX data: the module ID,
// the "when" field in its UINT opcode, then module opcodes to EOF.
func (d *Decoder) moduleAux() error {
	id, err := d.r.count("a module ID")
	if err != nil {
		return err
	}
	if !d.opt.SkipUnsupported {
		return &UnsupportedError{What: fmt.Sprintf("aux data of module %q", moduleName(id))}
	}
	op, err := d.r.count("a module aux opcode")
	if err != nil {
		return err
	}
	if op != moduleOpUint {
		return rdbCorruptf("module aux data starts with opcode %d, not %d", op, moduleOpUint)
	}
	if _, err := d.r.count("a module aux 'when' field"); err != nil {
		return err
	}
	d.stats.SkippedModAux++
	return d.skipModuleOps()
}

// moduleName decodes the nine-character type name packed, six bits a
// character, above the ten-bit encoding version of a module ID.
func moduleName(id uint64) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var name [9]byte
	id >>= 10
	for i := 8; i >= 0; i-- {
		name[i] = set[id&63]
		id >>= 6
	}
	return string(name[:])
}
