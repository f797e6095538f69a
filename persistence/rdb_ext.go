package persistence

import (
	"encoding/binary"

	"github.com/redstream/redstream/stream"
)

// Stream state that RDB version 10 has no field for travels in an aux
// field named extAuxName, written just before the key it belongs to.
// Redis ignores aux fields it does not know, so the file still loads
// there; our decoder attaches the state to the key. The layout is in the
// package documentation.
const (
	extAuxName      = "redstream-stream-ext"
	extVersion      = 1
	extTagActive    = 1 // consumer active times
	extTagIDMP      = 2 // idempotent-producer state
	extTagPolicy    = 3 // consumer-group policies and dead-letter counts
	extTagDelayed   = 4 // delayed entries (XADD DELAY / AT) not yet due
	extTagRetention = 5 // age limit (XCFGSET MAXAGE)
)

type extKey struct {
	db  int
	key string
}

// streamExt is one parsed extension field.
type streamExt struct {
	db      int
	key     []byte
	active  map[string]map[string]int64 // group → consumer → active time
	idmp    *stream.IDMPState
	age     *stream.Retention
	delayed []stream.DelayedEntry
	policy  map[string]groupPolicy // group → its policy
}

// groupPolicy is what the policy section holds of one group.
type groupPolicy struct {
	policy stream.Policy
	dead   int64
}

// needsExt reports whether s has state version 10 cannot hold.
func needsExt(s *stream.State) bool {
	if s.IDMP != nil || s.Retention.MaxAge != 0 || len(s.Delayed) > 0 {
		return true
	}
	for _, g := range s.Groups {
		if hasPolicy(&g) {
			return true
		}
		for _, c := range g.Consumers {
			if c.ActiveTime != c.SeenTime {
				return true
			}
		}
	}
	return false
}

// appendExt encodes the extension field value for key in db.
func appendExt(dst []byte, db int, key []byte, s *stream.State) []byte {
	dst = append(dst, extVersion)
	dst = appendLen(dst, uint64(db))
	dst = appendStr(dst, key)
	if body := appendActive(nil, s); body != nil {
		dst = append(dst, extTagActive)
		dst = appendStr(dst, body)
	}
	if s.IDMP != nil {
		dst = append(dst, extTagIDMP)
		dst = appendStr(dst, appendIDMP(nil, s.IDMP))
	}
	if s.Retention.MaxAge != 0 {
		dst = append(dst, extTagRetention)
		dst = appendStr(dst, append(appendLen(nil, uint64(s.Retention.MaxAge)), byte(s.Retention.Refs)))
	}
	if len(s.Delayed) > 0 {
		dst = append(dst, extTagDelayed)
		dst = appendStr(dst, appendDelayed(nil, s.Delayed))
	}
	if body := appendPolicies(nil, s); body != nil {
		dst = append(dst, extTagPolicy)
		dst = appendStr(dst, body)
	}
	return dst
}

// appendDelayed encodes the delayed entries: their count, then each
// one's reserved ID and its fields and values.
func appendDelayed(dst []byte, es []stream.DelayedEntry) []byte {
	dst = appendLen(dst, uint64(len(es)))
	for _, e := range es {
		dst = appendLen(dst, e.ID.Ms)
		dst = appendLen(dst, e.ID.Seq)
		dst = appendLen(dst, uint64(len(e.Fields)))
		for _, f := range e.Fields {
			dst = appendStr(dst, f)
		}
	}
	return dst
}

// parseDelayed reads the delayed-entries section; FromState checks the
// order and the field counts.
func parseDelayed(c *extCursor) []stream.DelayedEntry {
	var es []stream.DelayedEntry
	for range c.count("delayed entry count") {
		e := stream.DelayedEntry{ID: stream.ID{Ms: c.len("delayed entry ID"), Seq: c.len("delayed entry ID")}}
		for range c.count("delayed entry field count") {
			e.Fields = append(e.Fields, c.str("delayed entry field"))
		}
		if c.err != nil {
			return nil
		}
		es = append(es, e)
	}
	return es
}

func hasPolicy(g *stream.GroupState) bool { return !g.Policy.IsZero() || g.DeadLettered != 0 }

// appendPolicies encodes the groups that have a policy or a dead-letter
// count, or returns nil if none has.
func appendPolicies(dst []byte, s *stream.State) []byte {
	var groups []byte
	n := 0
	for _, g := range s.Groups {
		if !hasPolicy(&g) {
			continue
		}
		p := &g.Policy
		groups = appendStr(groups, g.Name)
		groups = appendLen(groups, uint64(p.MaxDeliver))
		groups = appendStr(groups, p.DeadLetter)
		groups = appendLen(groups, uint64(p.AckWait))
		groups = appendLen(groups, uint64(len(p.Backoff)))
		for _, ms := range p.Backoff {
			groups = appendLen(groups, uint64(ms))
		}
		groups = appendLen(groups, uint64(g.DeadLettered))
		n++
	}
	if n == 0 {
		return nil
	}
	return append(appendLen(dst, uint64(n)), groups...)
}

// appendActive encodes the active times that differ from the seen times
// (the decoder's default), or returns nil if none do.
func appendActive(dst []byte, s *stream.State) []byte {
	var groups, body []byte
	n := 0
	for _, g := range s.Groups {
		var cs []byte
		k := 0
		for _, c := range g.Consumers {
			if c.ActiveTime != c.SeenTime {
				cs = appendStr(cs, c.Name)
				cs = binary.LittleEndian.AppendUint64(cs, uint64(c.ActiveTime))
				k++
			}
		}
		if k > 0 {
			groups = appendStr(groups, g.Name)
			groups = appendLen(groups, uint64(k))
			groups = append(groups, cs...)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	body = appendLen(dst, uint64(n))
	return append(body, groups...)
}

func appendIDMP(dst []byte, m *stream.IDMPState) []byte {
	for _, v := range []uint64{uint64(m.Duration), uint64(m.MaxSize), m.Added, m.Duplicates, uint64(len(m.Producers))} {
		dst = appendLen(dst, v)
	}
	for _, p := range m.Producers {
		dst = appendStr(dst, p.PID)
		dst = appendLen(dst, uint64(len(p.IIDs)))
		for _, e := range p.IIDs {
			dst = appendStr(dst, e.IID)
			dst = appendLen(dst, e.ID.Ms)
			dst = appendLen(dst, e.ID.Seq)
			dst = binary.LittleEndian.AppendUint64(dst, uint64(e.Time))
		}
	}
	return dst
}

// extCursor parses an extension value in memory, with a sticky error.
type extCursor struct {
	b   []byte
	err error
}

func (c *extCursor) fail(what string) {
	if c.err == nil {
		c.err = rdbCorruptf("%s field: bad or truncated %s", extAuxName, what)
	}
}

func (c *extCursor) u8(what string) byte {
	if c.err != nil || len(c.b) < 1 {
		c.fail(what)
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *extCursor) len(what string) uint64 {
	if c.err != nil {
		return 0
	}
	n, size, ok := decodeLen(c.b)
	if !ok {
		c.fail(what)
		return 0
	}
	c.b = c.b[size:]
	return n
}

// count reads a length that counts items of at least one byte each.
func (c *extCursor) count(what string) uint64 {
	n := c.len(what)
	if n > uint64(len(c.b)) {
		c.fail(what)
		return 0
	}
	return n
}

func (c *extCursor) str(what string) []byte {
	n := c.count(what)
	if c.err != nil {
		return nil
	}
	s := c.b[:n:n]
	c.b = c.b[n:]
	return s
}

func (c *extCursor) ms(what string) int64 {
	if c.err != nil || len(c.b) < 8 {
		c.fail(what)
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(c.b))
	c.b = c.b[8:]
	return v
}

// parseExt parses an extension field value.
func parseExt(b []byte) (*streamExt, error) {
	c := &extCursor{b: b}
	if v := c.u8("version"); c.err == nil && v != extVersion {
		return nil, rdbCorruptf("%s field has version %d; this decoder reads %d", extAuxName, v, extVersion)
	}
	e := &streamExt{}
	db := c.len("db")
	e.key = c.str("key")
	if db > 1<<31-1 {
		c.fail("db")
	}
	e.db = int(db)
	for c.err == nil && len(c.b) > 0 {
		tag := c.u8("section tag")
		body := &extCursor{b: c.str("section")}
		switch tag {
		case extTagActive:
			e.active = parseActive(body)
		case extTagIDMP:
			e.idmp = parseIDMP(body)
		case extTagRetention:
			e.age = &stream.Retention{MaxAge: int64(body.len("max age")), Refs: stream.RefPolicy(body.u8("max age policy"))}
		case extTagDelayed:
			e.delayed = parseDelayed(body)
		case extTagPolicy:
			e.policy = parsePolicies(body)
		} // other tags are from a later writer: skipped
		if body.err != nil {
			return nil, body.err
		}
	}
	return e, c.err
}

func parseActive(c *extCursor) map[string]map[string]int64 {
	m := map[string]map[string]int64{}
	for range c.count("group count") {
		g := string(c.str("group name"))
		cs := map[string]int64{}
		for range c.count("consumer count") {
			name := string(c.str("consumer name"))
			cs[name] = c.ms("active time")
		}
		m[g] = cs
	}
	return m
}

// parseIDMP reads the IDMP section; settings out of range (a length
// above int64's) are taken as the defaults when the stream is built.
func parseIDMP(c *extCursor) *stream.IDMPState {
	m := &stream.IDMPState{Duration: int64(c.len("IDMP duration")), MaxSize: int64(c.len("IDMP max size")),
		Added: c.len("IDMP added count"), Duplicates: c.len("IDMP duplicate count")}
	for range c.count("producer count") {
		p := stream.IDMPProducer{PID: c.str("producer ID")}
		for range c.count("iid count") {
			e := stream.IDMPRecord{IID: c.str("iid")}
			e.ID = stream.ID{Ms: c.len("entry ID"), Seq: c.len("entry ID")}
			e.Time = c.ms("iid time")
			p.IIDs = append(p.IIDs, e)
		}
		m.Producers = append(m.Producers, p)
	}
	return m
}

// parsePolicies reads the policy section. Values past int64's range
// come out negative, which FromState refuses.
func parsePolicies(c *extCursor) map[string]groupPolicy {
	m := map[string]groupPolicy{}
	for range c.count("group count") {
		name := string(c.str("group name"))
		var gp groupPolicy
		gp.policy.MaxDeliver = int64(c.len("max deliver"))
		gp.policy.DeadLetter = c.str("dead-letter key")
		gp.policy.AckWait = int64(c.len("ack wait"))
		for range c.count("backoff step count") {
			gp.policy.Backoff = append(gp.policy.Backoff, int64(c.len("backoff step")))
		}
		gp.dead = int64(c.len("dead-letter count"))
		m[name] = gp
	}
	return m
}

// addExt parses an extension field and holds it for its key.
func (d *Decoder) addExt(val []byte) error {
	e, err := parseExt(val)
	if err != nil {
		return err
	}
	k := extKey{e.db, string(e.key)}
	if d.exts[k] != nil {
		return rdbCorruptf("two %s fields for key %q in db %d", extAuxName, e.key, e.db)
	}
	d.exts[k] = e
	return nil
}

// takeExt removes and returns the extension held for key, or nil.
func (d *Decoder) takeExt(key []byte) *streamExt {
	k := extKey{d.db, string(key)}
	e := d.exts[k]
	if e != nil {
		delete(d.exts, k)
	}
	return e
}

// applyExt attaches an extension to a stream's state.
func applyExt(s *stream.State, e *streamExt) error {
	if err := applyActive(s, e.active); err != nil {
		return err
	}
	if e.idmp != nil {
		s.IDMP = e.idmp
	}
	if e.age != nil {
		s.Retention = *e.age // stream.FromState refuses one out of range
	}
	s.Delayed = e.delayed
	return applyPolicies(s, e.policy)
}

func applyPolicies(s *stream.State, policies map[string]groupPolicy) error {
	found := 0
	for gi := range s.Groups {
		g := &s.Groups[gi]
		if gp, ok := policies[string(g.Name)]; ok {
			g.Policy, g.DeadLettered = gp.policy, gp.dead
			found++ // a second group of the name: FromState refuses it
		}
	}
	if found < len(policies) {
		return rdbCorruptf("%s field names groups the stream does not have", extAuxName)
	}
	return nil
}

func applyActive(s *stream.State, active map[string]map[string]int64) error {
	done := map[string]bool{}
	for gi := range s.Groups {
		g := &s.Groups[gi]
		cs, ok := active[string(g.Name)]
		if !ok || done[string(g.Name)] { // a second group of the name: FromState refuses it
			continue
		}
		done[string(g.Name)] = true
		n := 0
		for ci := range g.Consumers {
			if t, ok := cs[string(g.Consumers[ci].Name)]; ok {
				g.Consumers[ci].ActiveTime = t
				n++
			}
		}
		if n != len(cs) {
			return rdbCorruptf("%s field names consumers group %q does not have", extAuxName, g.Name)
		}
	}
	if len(done) != len(active) {
		return rdbCorruptf("%s field names groups the stream does not have", extAuxName)
	}
	return nil
}

// unclaimedExt fails if an extension is held for key, which was not a
// stream: only streams carry one.
func (d *Decoder) unclaimedExt(key []byte, v Value) error {
	if d.takeExt(key) == nil {
		return nil
	}
	if v == nil {
		return rdbCorruptf("%s field names an empty list", extAuxName)
	}
	return rdbCorruptf("%s field names a %s, not a stream", extAuxName, v.Type())
}

// leftoverExts fails if an extension field named a key the file lacks.
func (d *Decoder) leftoverExts() error {
	for k := range d.exts {
		return rdbCorruptf("%s field names key %q in db %d, which the file does not hold", extAuxName, k.key, k.db)
	}
	return nil
}

// decodeLen decodes an RDB length (not an encoded-string marker) at the
// start of b, returning it, its size and whether it was well formed.
func decodeLen(b []byte) (n uint64, size int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c>>6 == len6Bit:
		return uint64(c & 0x3f), 1, true
	case c>>6 == len14Bit && len(b) >= 2:
		return uint64(c&0x3f)<<8 | uint64(b[1]), 2, true
	case c == len32Bit && len(b) >= 5:
		return uint64(binary.BigEndian.Uint32(b[1:])), 5, true
	case c == len64Bit && len(b) >= 9:
		return binary.BigEndian.Uint64(b[1:]), 9, true
	}
	return 0, 0, false
}

// appendLen appends n in the RDB length encoding: the shortest of 6, 14,
// 32 or 64 bits.
func appendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|len14Bit<<6, byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(dst, len32Bit), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, len64Bit), n)
}

// appendStr appends a plain string: its length, then its bytes.
func appendStr(dst, s []byte) []byte {
	return append(appendLen(dst, uint64(len(s))), s...)
}
