package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// restoredDataDir returns a data directory holding an RDB fixture as its
// dump.rdb and as its AOF's base.
func restoredDataDir(t *testing.T, rdb string) string {
	t.Helper()
	dir := t.TempDir()
	err := persistence.Restore(fixture(rdb), persistence.RestoreOptions{Dir: dir, DBFilename: "dump.rdb",
		AOFDir: filepath.Join(dir, "appendonlydir"), AOFName: persistence.DefaultAOFName, Quarantine: quarantineDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadDataDir loads dir as a server start does, logging into logs.
func loadDataDir(t *testing.T, dir string, logs *bytes.Buffer) error {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = dir
	logger := slog.New(slog.NewTextHandler(logs, nil))
	d := newDurability(cfg, logger)
	srv, err := server.New(cfg, server.Options{Logger: logger, Persister: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.open(); err != nil {
		t.Fatal(err)
	}
	defer d.close()
	return d.load(srv)
}

// TestLoadLogNamesTheAOFBase: loading the AOF's base is logged as that,
// with its file, not as "RDB loaded" (which is dump.rdb's line).
func TestLoadLogNamesTheAOFBase(t *testing.T) {
	var logs bytes.Buffer
	dir := restoredDataDir(t, "lists.rdb")
	if err := loadDataDir(t, dir, &logs); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.base.rdb")
	if !strings.Contains(logs.String(), `msg="AOF base loaded" file=`+base+" keys=5") || strings.Contains(logs.String(), "RDB loaded") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// TestLoadStopsOnSignal: SIGTERM while the data loads stops the load with
// an error saying so (the server logs it and exits), instead of the
// process dying without a line.
func TestLoadStopsOnSignal(t *testing.T) {
	defer func(f func(chan<- os.Signal)) { notifyLoadSignals = f }(notifyLoadSignals)
	notifyLoadSignals = func(c chan<- os.Signal) { c <- syscall.SIGTERM } // as if it came at once
	var logs bytes.Buffer
	err := loadDataDir(t, restoredDataDir(t, "lists.rdb"), &logs)
	if err == nil || !strings.Contains(err.Error(), "received SIGTERM while loading") {
		t.Fatalf("load under SIGTERM: %v", err)
	}
}
