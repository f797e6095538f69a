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
		if err := cfg.Set(string(words[0]), args); err != nil {
			return fmt.Errorf("%s:%d: %q: %w", name, n, line, describeConfigErr(err))
		}
	}
	return sc.Err()
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
