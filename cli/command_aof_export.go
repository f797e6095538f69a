package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
	ucli "github.com/urfave/cli/v2"
)

// aofExportCommand is `redstream aof export SRC DST`.
//
// Why a snapshot and not the increments with their fill cut (what aof
// check --fix could do): Redis reads our record annotations ("#T <time>
// <db>") as comments, so it would replay every command at its own time
// and in database 0: XADD * would make new IDs, relative expiries would
// count from the load, keys of other databases would land in 0, and
// commands Redis 7.0 lacks would stop the load. A snapshot of the
// replayed state is what Redis's own rewrite produces, loads in every
// Redis from 7.0 on, and leaves SRC untouched.
func aofExportCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "export",
		Usage:     "write the data of a redstream AOF as a data directory redis-server loads",
		ArgsUsage: "SRC DST",
		Description: "Replays the AOF in SRC (the data directory, or its appenddirname directory) as a start would,\n" +
			"without changing it, and writes what it holds into the data directory DST as dump.rdb and as the\n" +
			"base of a fresh AOF (appendonlydir), both in the RDB format Redis 7.0 and later load: run\n" +
			"`redis-server --dir DST` with appendonly yes or no. A torn last write (a crash cut it short, so it\n" +
			"was never acknowledged) is left out, as a start does. Takes both directories' locks, so it\n" +
			"refuses while a server runs on either; DST must not hold data yet.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "config", Usage: "the source server's config file, for its databases, node sizes and AOF names (default: the defaults)"},
		},
		Action: runAOFExport,
	}
}

func runAOFExport(c *ucli.Context) error {
	if c.NArg() != 2 {
		return fmt.Errorf("usage: redstream aof export SRC DST [--config FILE]")
	}
	cfg := server.DefaultConfig()
	if file := c.String("config"); file != "" {
		if err := loadConfigFile(file, &cfg); err != nil {
			return err
		}
	}
	src, err := findAOFDir(c.Args().Get(0), cfg.AppendFileName)
	if err != nil {
		return err
	}
	dst := c.Args().Get(1)
	for _, dir := range []string{filepath.Dir(filepath.Clean(src)), dst} {
		lock, err := persistence.LockDir(dir)
		if err != nil {
			return err
		}
		defer lock.Unlock()
	}
	dump, aofDir := filepath.Join(dst, cfg.DBFilename), filepath.Join(dst, cfg.AppendDirName)
	if err := refuseExisting(dump, aofDir); err != nil {
		return fmt.Errorf("%w: export into a directory without data", err)
	}
	st, err := exportAOF(cfg, src, dump+".export")
	if err != nil {
		return err
	}
	defer os.Remove(dump + ".export")
	err = persistence.Restore(dump+".export", persistence.RestoreOptions{Dir: dst, DBFilename: cfg.DBFilename,
		AOFDir: aofDir, AOFName: cfg.AppendFileName, Quarantine: quarantineDir(dst)})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "exported %s (%d records) into %s: %s, and the AOF in %s\n", src, st.Records, dst, dump, aofDir)
	if st.TornBytes > 0 {
		fmt.Fprintf(c.App.Writer, "left out a torn last write of %d bytes (a crash cut it short; it was never acknowledged)\n", st.TornBytes)
	}
	return nil
}

// exportAOF replays the AOF in src into a server that serves nobody and
// writes its data to the RDB file out.
func exportAOF(cfg server.Config, src, out string) (persistence.ReplayStats, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(cfg, server.Options{Logger: logger})
	if err != nil {
		return persistence.ReplayStats{}, err
	}
	d := newDurability(cfg, logger)
	d.srv = srv
	st, err := persistence.ReplayAOF(src, cfg.AppendFileName, d.rdbLoader("AOF base"), applyFrame(srv))
	if err != nil {
		return st, err
	}
	snap := srv.Freeze(nil)
	defer snap.Close()
	return st, persistence.WriteRDBFile(persistence.OSFS{}, out, out+".tmp", func(w io.Writer) error {
		return d.writeRDB(w, snap, false)
	})
}

// refuseExisting refuses to install data over any of files.
func refuseExisting(files ...string) error {
	for _, p := range files {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s already exists", p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
