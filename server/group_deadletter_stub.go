package server

import "github.com/redstream/redstream/stream"

// TEMPORARY until the dead-letter branch is merged: drops the entry.
func deadLetter(x *Ctx, key []byte, s *stream.Stream, g *stream.Group, id stream.ID, reason string) {
	g.Ack(id)
	x.modified(key)
}
