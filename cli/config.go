package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/server"
)

// loadConfigFile reads a redis.conf-style file into cfg: one directive per
// line, arguments separated by spaces and quoted as in redis-cli, '#'
// comments. An unknown directive or a bad value stops with an error that
// names the file and line.
func loadConfigFile(path string, cfg *server.Config) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return parseConfig(f, path, cfg)
}

func parseConfig(r io.Reader, name string, cfg *server.Config) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sawSave := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		words, ok := resp.SplitArgs(nil, []byte(line))
		if !ok {
			return fmt.Errorf("%s:%d: unbalanced quotes in %q", name, n, line)
		}
		args := make([]string, len(words)-1)
		for i, w := range words[1:] {
			args[i] = string(w)
		}
		if strings.EqualFold(string(words[0]), "save") {
			args = addSavePoints(cfg, args, sawSave)
			sawSave = true
		}
		if err := cfg.Set(string(words[0]), args); err != nil {
			return fmt.Errorf("%s:%d: %q: %w", name, n, line, describeConfigErr(err))
		}
	}
	return sc.Err()
}

// addSavePoints gives the save points of a config file's save line: as
// in redis.conf, the first save line replaces the defaults, later ones
// add to it (`save 3600 1` then `save 300 100` keeps both), and
// `save ""` clears them.
func addSavePoints(cfg *server.Config, args []string, sawSave bool) []string {
	if !sawSave || (len(args) == 1 && args[0] == "") {
		return args
	}
	cur, _ := cfg.Get("save")
	return append(strings.Fields(cur), args...)
}

func describeConfigErr(err error) error {
	switch err {
	case server.ErrUnknownParam:
		return fmt.Errorf("bad directive or wrong number of arguments: unknown directive")
	case server.ErrParamArgs:
		return fmt.Errorf("bad directive or wrong number of arguments")
	}
	return err
}
