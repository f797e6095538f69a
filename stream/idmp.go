package stream

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Idempotent production (XADD IDMP / IDMPAUTO, Redis 8.6): each producer
// (pid) has a map of recent idempotency IDs (iids) to the ID of the entry
// each one added. A retried XADD whose (pid, iid) is still remembered adds
// nothing and answers the original entry's ID. An iid is forgotten after
// the stream's duration, or sooner when its producer has more than maxsize
// iids (oldest first). Times come from the caller (the record's clock), so
// replaying the same adds forgets the same iids.

// Bounds and defaults of the per-stream IDMP settings (XCFGSET).
const (
	DefaultIDMPDuration = 100   // seconds an iid is remembered
	DefaultIDMPMaxSize  = 100   // iids remembered per producer
	MaxIDMPDuration     = 86400 // seconds
	MaxIDMPMaxSize      = 10000
)

type idmpState struct {
	duration   int64 // seconds
	maxSize    int64
	producers  map[string]*producer
	added      uint64 // iids ever recorded
	duplicates uint64 // adds answered from the map
}

// producer is one pid's remembered iids, in the order they were added
// (which is also time order: record times never go back).
type producer struct {
	ids   map[string]ID
	queue []iidItem
	head  int // queue[head:] is live
}

type iidItem struct {
	iid string
	at  int64 // ms, when it was added
}

func (d *idmpState) init() {
	d.duration, d.maxSize = DefaultIDMPDuration, DefaultIDMPMaxSize
}

// IDMPLookup returns the entry ID recorded for (pid, iid), if it is still
// remembered at time now (ms), and counts the hit as a duplicate. It also
// forgets pid's iids that have expired by now.
func (s *Stream) IDMPLookup(pid, iid []byte, now int64) (ID, bool) {
	d := &s.idmp
	p := d.producers[string(pid)]
	if p == nil {
		return ID{}, false
	}
	p.expire(now, d.duration)
	if p.len() == 0 {
		delete(d.producers, string(pid))
		return ID{}, false
	}
	id, ok := p.ids[string(iid)]
	if ok {
		d.duplicates++
	}
	return id, ok
}

// IDMPRecord remembers that (pid, iid) added entry id at time now (ms),
// forgetting pid's oldest iid when it has more than the stream's maxsize.
func (s *Stream) IDMPRecord(pid, iid []byte, id ID, now int64) {
	d := &s.idmp
	if d.producers == nil {
		d.producers = make(map[string]*producer)
	}
	p := d.producers[string(pid)]
	if p == nil {
		p = &producer{ids: make(map[string]ID)}
		d.producers[string(pid)] = p
	}
	k := string(iid)
	if _, known := p.ids[k]; known {
		p.ids[k] = id // not reached through XADD, which looks up first
		return
	}
	p.ids[k] = id
	p.queue = append(p.queue, iidItem{iid: k, at: now})
	for int64(p.len()) > d.maxSize {
		p.pop()
	}
	d.added++
}

func (p *producer) len() int { return len(p.queue) - p.head }

// pop forgets the oldest iid.
func (p *producer) pop() {
	delete(p.ids, p.queue[p.head].iid)
	p.queue[p.head] = iidItem{}
	p.head++
	if p.head >= 32 && p.head*2 >= len(p.queue) {
		p.queue = append(p.queue[:0], p.queue[p.head:]...)
		p.head = 0
	}
}

// expire forgets iids older than duration seconds at now.
func (p *producer) expire(now, duration int64) {
	for p.len() > 0 && expired(p.queue[p.head].at, now, duration) {
		p.pop()
	}
}

func expired(at, now, duration int64) bool { return now-at >= duration*1000 }

// IDMPConfig returns the stream's IDMP duration (seconds) and maxsize.
func (s *Stream) IDMPConfig() (duration, maxSize int64) {
	return s.idmp.duration, s.idmp.maxSize
}

// SetIDMPConfig changes the IDMP settings; a value <= 0 keeps the current
// one. If either changes, every remembered iid is forgotten (the lifetime
// counters stay), and changed is true.
func (s *Stream) SetIDMPConfig(duration, maxSize int64) (changed bool) {
	d := &s.idmp
	if duration > 0 && duration != d.duration {
		d.duration, changed = duration, true
	}
	if maxSize > 0 && maxSize != d.maxSize {
		d.maxSize, changed = maxSize, true
	}
	if changed {
		d.producers = nil
	}
	return changed
}

// IDMPStats are the IDMP figures XINFO STREAM reports.
type IDMPStats struct {
	Duration, MaxSize int64
	PIDs              int    // producers with at least one iid remembered
	IIDs              int    // iids remembered, over all producers
	Added             uint64 // iids ever recorded
	Duplicates        uint64 // adds answered from the map
}

// IDMPStats returns the IDMP figures as of now (ms): iids that have
// expired by now are not counted, even if no add has purged them yet.
func (s *Stream) IDMPStats(now int64) IDMPStats {
	d := &s.idmp
	st := IDMPStats{Duration: d.duration, MaxSize: d.maxSize, Added: d.added, Duplicates: d.duplicates}
	for _, p := range d.producers {
		live := p.len()
		for i := p.head; i < len(p.queue) && expired(p.queue[i].at, now, d.duration); i++ {
			live--
		}
		if live > 0 {
			st.PIDs++
			st.IIDs += live
		}
	}
	return st
}

// AutoIID computes the iid IDMPAUTO uses for an entry's fields and values
// (alternating): a digest of the field-value pairs that does not depend on
// their order, so a retry that lists the same pairs in another order is
// still recognised. Each pair is hashed with its lengths (so "ab","c" and
// "a","bc" differ), the pair digests are sorted, and the result is the
// SHA-256 of them all, truncated to 16 bytes.
func AutoIID(fv [][]byte) []byte {
	sums := make([][sha256.Size]byte, 0, len(fv)/2)
	var lens [16]byte
	for i := 0; i+1 < len(fv); i += 2 {
		h := sha256.New()
		binary.BigEndian.PutUint64(lens[:8], uint64(len(fv[i])))
		binary.BigEndian.PutUint64(lens[8:], uint64(len(fv[i+1])))
		h.Write(lens[:])
		h.Write(fv[i])
		h.Write(fv[i+1])
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		sums = append(sums, sum)
	}
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, sum := range sums {
		h.Write(sum[:])
	}
	return h.Sum(nil)[:16]
}

// cloneIDMP deep-copies the IDMP state (for COPY).
func (d *idmpState) clone() idmpState {
	c := *d
	if d.producers == nil {
		return c
	}
	c.producers = make(map[string]*producer, len(d.producers))
	for pid, p := range d.producers {
		q := &producer{ids: make(map[string]ID, len(p.ids)), queue: slices.Clone(p.queue[p.head:])}
		for k, v := range p.ids {
			q.ids[k] = v
		}
		c.producers[pid] = q
	}
	return c
}

// idmpBytes estimates the memory the IDMP state holds.
func (d *idmpState) idmpBytes() int {
	n := 0
	for pid, p := range d.producers {
		n += len(pid) + 64
		for _, it := range p.queue[p.head:] {
			n += 2*len(it.iid) + 80
		}
	}
	return n
}
