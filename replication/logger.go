package replication

import (
	"bytes"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hcLogger makes hashicorp/raft log through the server's logger.
func hcLogger(logger *slog.Logger, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           hclog.Info,
		Output:          slogWriter{logger},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

type slogWriter struct{ logger *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	switch {
	case bytes.Contains(p, []byte("[ERROR]")):
		level = slog.LevelError
	case bytes.Contains(p, []byte("[WARN]")):
		level = slog.LevelWarn
	}
	w.logger.Log(nil, level, line)
	return len(p), nil
}
