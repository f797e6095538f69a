package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/replication"
	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// serverCommand is `redstream server [config-file] [--directive value ...]`.
// Every configuration directive is also a flag; flags override the file.
func serverCommand() *ucli.Command {
	var flags []ucli.Flag
	for _, name := range server.ParamNames() {
		flags = append(flags, &ucli.StringFlag{Name: name, Usage: "the " + name + " directive"})
	}
	return &ucli.Command{
		Name:      "server",
		Usage:     "run the server",
		ArgsUsage: "[config-file]",
		Description: "Starts a redstream server. Without arguments it listens on 127.0.0.1:6379 and keeps data\n" +
			"under ./data. A redis.conf-style file and --<directive> flags change that.",
		Flags:  flags,
		Action: runServer,
	}
}

func runServer(c *ucli.Context) (err error) {
	cfg, file, err := buildConfig(c)
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	logger, closeLog, err := newLogger(cfg, level, c.App.Writer)
	if err != nil {
		return err
	}
	defer closeLog()
	defer func() {
		if err != nil { // the caller prints it too, but logfile may be the only place anyone looks
			logger.Error("redstream cannot go on", "err", userMessage(err))
		}
	}()
	// The order matters (DESIGN principle 8): the data directory's lock
	// before anything in it is read or changed, then the listeners, then
	// the files. A second server on the same dir, or on a port in use,
	// stops before it touches a file.
	lock, err := persistence.LockDir(cfg.Dir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	logger.Info("redstream starting", "version", server.Version, "redis_compat", server.RedisVersion,
		"pid", os.Getpid(), "config_file", file, "dir", cfg.Dir,
		"appendonly", cfg.AppendOnly, "appendfsync", cfg.AppendFsync)
	clusterMode(&cfg, logger)
	dur := newDurability(cfg, logger)
	srv, err := server.New(cfg, server.Options{Logger: logger, LogLevel: level, ConfigFile: file,
		PersistenceInfo: dur.info, Persister: dur, Codec: persistence.DumpCodec{}})
	if err != nil {
		return err
	}
	// Signals are caught from before the port opens: a client (a test
	// harness, a supervisor) that sees it open may send SIGTERM at once,
	// and the default action would kill the process without a clean stop.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := srv.Listen(); err != nil {
		return explainListenError(err, cfg.Port)
	}
	defer srv.Close(context.Background()) // closes the listeners if the load fails
	if err := dur.open(); err != nil {
		return err
	}
	defer dur.close()
	srv.SetLog(dur.log())
	if cfg.ClusterEnabled {
		node, err := openClusterNode(cfg, srv, logger)
		if err != nil {
			return err
		}
		defer node.Close() // after the server: its last replies may wait on the group
		defer replication.StartProcsGovernor(logger).Stop()
	} else if err := dur.load(srv); err != nil {
		return err
	}
	var addrs []string
	for _, a := range srv.Addrs() {
		addrs = append(addrs, a.Network()+"://"+a.String())
	}
	logger.Info("ready to accept connections", "addr", strings.Join(addrs, ","))
	return serveUntilStopped(srv, dur, logger, sigs)
}

// explainListenError adds to a bind failure how to choose another port,
// and, on Redis's port, the likely culprit: a redis-server the system
// runs as a service (Debian's starts one on 6379 when installed).
func explainListenError(err error, port int) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	hint := fmt.Sprintf("another process listens on port %d", port)
	if port == 6379 {
		hint += " (often a redis-server installed as a system service: " +
			"`systemctl status redis-server` shows it, `sudo systemctl stop redis-server` stops it)"
	}
	return fmt.Errorf("%w\n  %s; to use another port: redstream server --port 6380 (or make run ARGS='--port 6380')", err, hint)
}

// serveUntilStopped serves until SIGTERM/SIGINT (on sigs) or a SHUTDOWN command,
// then closes the server cleanly. On a signal the server saves first
// when save points are set, as Redis does; if that save fails it still
// stops (the AOF, when on, is closed whole), and the exit status says so.
func serveUntilStopped(srv *server.Server, dur *durability, logger *slog.Logger, sigs <-chan os.Signal) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	var saveErr error
	select {
	case sig := <-sigs:
		logger.Warn("received signal, shutting down", "signal", sig.String())
		saveErr = srv.Shutdown(srv.SaveOnShutdown())
	case why := <-srv.ShutdownRequested():
		logger.Warn("shutting down", "reason", why)
	case err := <-served:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := dur.close(); err != nil {
		return fmt.Errorf("shutdown: closing the AOF: %w", err)
	}
	if saveErr != nil {
		return fmt.Errorf("shutdown: the final save failed: %w", saveErr)
	}
	logger.Info("redstream is now ready to exit, bye bye")
	return nil
}

// buildConfig starts from the defaults, applies the config file (the
// first argument, if any), then the flags that were set.
func buildConfig(c *ucli.Context) (server.Config, string, error) {
	cfg := server.DefaultConfig()
	file := ""
	if c.NArg() > 1 {
		return cfg, "", fmt.Errorf("expected at most one config file, got %d arguments", c.NArg())
	}
	if c.NArg() == 1 {
		abs, err := filepath.Abs(c.Args().First())
		if err != nil {
			return cfg, "", err
		}
		file = abs
		if err := loadConfigFile(file, &cfg); err != nil {
			return cfg, "", err
		}
	}
	for _, name := range server.ParamNames() {
		if !c.IsSet(name) {
			continue
		}
		if err := cfg.Set(name, []string{c.String(name)}); err != nil {
			return cfg, "", fmt.Errorf("--%s %q: %w", name, c.String(name), describeConfigErr(err))
		}
	}
	return cfg, file, nil
}

// newLogger builds the structured logger: text lines on stdout, or in
// logfile, at the configured level.
func newLogger(cfg server.Config, level *slog.LevelVar, stdout io.Writer) (*slog.Logger, func(), error) {
	out := stdout
	closeFn := func() {}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("opening logfile: %w", err)
		}
		out, closeFn = f, func() { f.Close() }
	}
	level.Set(server.LogLevel(cfg.LogLevel))
	h := slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})
	return slog.New(h), closeFn, nil
}
