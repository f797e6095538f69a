package cli

import (
	"strings"
	"testing"

	"github.com/redstream/redstream/server"
)

// TestConfigFileSaveLinesAccumulate: redis.conf files list one save point
// per line; each later line adds to the first, and `save ""` clears them.
// Keeping only the last line would silently drop save points.
func TestConfigFileSaveLinesAccumulate(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"save 3600 1\nsave 300 100\nsave 60 10000\n", "3600 1 300 100 60 10000"},
		{"save 3600 1 300 100\n", "3600 1 300 100"},
		{"save 3600 1\nsave \"\"\n", ""},
		{"save \"\"\nsave 60 5\n", "60 5"},
	} {
		cfg := server.DefaultConfig()
		if err := parseConfig(strings.NewReader(tc.file), "redis.conf", &cfg); err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		if got, _ := cfg.Get("save"); got != tc.want {
			t.Errorf("%q: save = %q, want %q", tc.file, got, tc.want)
		}
	}
}
