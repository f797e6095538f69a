package stream

// Age retention (XCFGSET key MAXAGE ms [KEEPREF|DELREF|ACKED], beyond
// Redis): entries whose ID time is more than MaxAge ms before now are
// trimmed as XTRIM MINID would, exactly, with the reference policy given.
// "now" is always the caller's (the record's time), so the same writes
// replayed trim the same entries (DESIGN principle 2). The stream only
// remembers the setting and answers what is due; XADD trims by it, and
// the server's sweeper issues XTRIMs for the streams nobody writes to.

// Retention is a stream's age limit. The zero value keeps every entry.
type Retention struct {
	MaxAge int64     // ms; 0: no age limit
	Refs   RefPolicy // what trimming does to PEL references
}

// Retention returns the stream's age limit.
func (s *Stream) Retention() Retention { return s.retention }

// SetRetention replaces the age limit (a MaxAge of 0 turns it off, and
// forgets the policy) and reports whether it changed.
func (s *Stream) SetRetention(r Retention) (changed bool) {
	if r.MaxAge <= 0 {
		r = Retention{}
	}
	changed = r != s.retention
	s.retention = r
	return changed
}

// valid reports whether r could have been set by SetRetention.
func (r Retention) valid() bool {
	return r.MaxAge >= 0 && r.Refs <= Acked && (r.MaxAge > 0 || r.Refs == KeepRef)
}

// cutoff returns the smallest ID young enough to keep at now; ok is false
// when no entry can be too old.
func (r Retention) cutoff(now int64) (ID, bool) {
	if r.MaxAge <= 0 || now-r.MaxAge <= 0 {
		return ID{}, false
	}
	return ID{Ms: uint64(now - r.MaxAge)}, true
}

// ackedCheckLimit bounds how many entries TrimAged looks at, under
// ACKED, for one a group no longer needs, so that an XADD never walks a
// long run of entries a group still holds. Past it, the sweeper trims.
const ackedCheckLimit = 128

// AgeTrimBound returns the MINID of the trim that removes, at time now,
// the entries the age limit no longer allows, and n > 0 when that trim
// would remove any. With limit > 0 the trim looks at no more than limit
// entries (and so removes at most that many, n of them): the MINID is
// then the first entry past them, so that a sweeper's trim does bounded
// work. Under ACKED, entries a group still needs are kept; the MINID
// never goes past the slowest group's last delivered ID, since every
// later entry is needed. Without a limit, and under ACKED, only the
// first ackedCheckLimit too-old entries are looked at for one that may
// go: beyond a longer run of needed ones, n is 0.
func (s *Stream) AgeTrimBound(now int64, limit int) (minID ID, n int) {
	cut, ok := s.retention.cutoff(now)
	if !ok || s.length == 0 || !s.firstID.Less(cut) {
		return ID{}, 0
	}
	acked := s.retention.Refs == Acked && s.groups.Len() > 0
	if acked {
		cut = s.capAtUndelivered(cut)
	} else if limit == 0 {
		return cut, 1 // the first entry is too old: the trim removes it
	}
	visits := limit
	if limit == 0 {
		visits = ackedCheckLimit
	}
	it := s.Range(MinID, MaxID, false)
	defer it.Close()
	for seen := 0; it.Next() && it.ID().Less(cut); seen++ {
		switch {
		case seen == visits && limit > 0:
			return it.ID(), n
		case seen == visits:
			return cut, 0
		case acked && s.Referenced(it.ID()):
			continue
		case limit == 0:
			return cut, 1
		}
		n++
	}
	return cut, n
}

// capAtUndelivered lowers cut to just past the slowest group's last
// delivered ID: entries after it are still to be read by that group.
func (s *Stream) capAtUndelivered(cut ID) ID {
	for _, g := range s.groups.All() {
		next, err := g.lastID.Incr()
		if err == nil && next.Less(cut) {
			cut = next
		}
	}
	return cut
}

// TrimAged trims the entries too old at now (XADD's share of age
// retention), exactly, and returns how many it removed.
func (s *Stream) TrimAged(now int64) int64 {
	minID, n := s.AgeTrimBound(now, 0)
	if n == 0 {
		return 0
	}
	return s.Trim(Trim{Strategy: TrimMinID, MinID: minID, Refs: s.retention.Refs})
}
