package cli

import (
	"fmt"

	"github.com/redstream/redstream/persistence"
)

// fromRDBValueExt and toRDBValueExt convert the value types beyond
// strings and lists between the server and the RDB codec.
func fromRDBValueExt(v persistence.Value) (any, error) {
	return nil, fmt.Errorf("cannot load a %T value yet", v)
}

func toRDBValueExt(v any) (persistence.Value, error) {
	return nil, fmt.Errorf("cannot save a %T value yet", v)
}
