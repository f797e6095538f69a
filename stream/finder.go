package stream

// Finder looks up live entries by ID for commands that fetch many pending
// entries (XCLAIM, XAUTOCLAIM, XREADGROUP history and CLAIM). Looking an
// entry up on its own seeks the radix tree and then walks its node from
// one end; a PEL lists IDs in order, mostly close together, so the Finder
// keeps one iterator and walks forward from the previous entry while the
// next ID is near, and seeks afresh only when it is behind or far ahead.
//
//	f := s.Finder()
//	defer f.Close()
//	for _, id := range ids {
//		if it, ok := f.Find(id); ok {
//			... it.ID(), it.Pair() ...
//		}
//	}
//
// The stream must not be changed while a Finder is in use (PELs may be).
type Finder struct {
	s  *Stream
	it *Iterator
}

// findWalk bounds how many entries Find steps over before it seeks
// instead: a seek costs about a node's worth of steps.
const findWalk = 48

// Finder returns a Finder over s.
func (s *Stream) Finder() *Finder { return &Finder{s: s} }

// Find positions the Finder on the live entry id and returns its
// iterator, ready for ID, NumFields and Pair; ok is false when there is
// no such entry.
func (f *Finder) Find(id ID) (*Iterator, bool) {
	if f.it != nil && !f.it.done && f.it.started && !id.Less(f.it.ID()) {
		for steps := 0; steps < findWalk; steps++ {
			switch c := f.it.ID().Compare(id); {
			case c == 0:
				return f.it, true
			case c > 0:
				return nil, false
			}
			if !f.it.Next() {
				f.it = nil
				return nil, false
			}
		}
	}
	if f.it != nil {
		f.it.Close()
	}
	f.it = f.s.Range(id, MaxID, false)
	if !f.it.Next() {
		f.it = nil
		return nil, false
	}
	return f.it, f.it.ID() == id
}

// Close releases the Finder's iterator.
func (f *Finder) Close() {
	if f.it != nil {
		f.it.Close()
		f.it = nil
	}
}
