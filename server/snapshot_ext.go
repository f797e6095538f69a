package server

import (
	"fmt"

	"github.com/redstream/redstream/stream"
)

// frozenValueExt and loadableExt extend snapshots to the value types
// beyond strings and lists; each type adds its case here.
func frozenValueExt(v any) any {
	switch v := v.(type) {
	case *stream.Stream:
		return v.Snapshot() // shares its nodes copy-on-write (see Stream.Snapshot)
	}
	panic(fmt.Sprintf("server: no snapshot view for %T", v))
}

func loadableExt(v any) bool {
	_, isStream := v.(*stream.Stream)
	return isStream
}
