package persistence

import (
	"errors"
	"testing"

	"github.com/redstream/redstream/stream"
)

// An age limit travels in extension tag 5 and comes back as written; one
// out of range (a policy no writer uses) is refused when the stream is
// built, not taken.
func TestExtAgeLimit(t *testing.T) {
	for _, tc := range []struct {
		r  stream.Retention
		ok bool
	}{
		{stream.Retention{MaxAge: 1, Refs: stream.DelRef}, true},
		{stream.Retention{MaxAge: 1 << 40, Refs: stream.Acked}, true},
		{stream.Retention{MaxAge: 5, Refs: stream.Acked + 1}, false},
		{stream.Retention{MaxAge: -1}, false}, // a length above int64's
	} {
		st := sampleState()
		st.Retention = tc.r
		e, err := parseExt(appendExt(nil, 0, []byte("k"), st))
		if err != nil {
			t.Fatal(err)
		}
		got := sampleState()
		if err := applyExt(got, e); err != nil {
			t.Fatal(err)
		}
		s, err := stream.FromState(got)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%+v: %v", tc.r, err)
		case tc.ok && s.Retention() != tc.r:
			t.Errorf("%+v came back as %+v", tc.r, s.Retention())
		case !tc.ok && !errors.Is(err, stream.ErrCorrupt):
			t.Errorf("%+v: err %v, want ErrCorrupt", tc.r, err)
		}
	}
}
