package cli

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redstream/redstream/replication"
	"github.com/redstream/redstream/server"
)

// clusterMode adjusts a cluster-enabled node's configuration: the Raft
// log is its log and Raft snapshots its snapshots, so it keeps no AOF
// and takes no save points of its own (issue 13: no second write-ahead
// log).
func clusterMode(cfg *server.Config, logger *slog.Logger) {
	if !cfg.ClusterEnabled {
		return
	}
	if cfg.AppendOnly || cfg.Save != "" {
		logger.Info("cluster mode: the Raft log replaces the AOF and save points", "appendonly", cfg.AppendOnly, "save", cfg.Save)
	}
	cfg.AppendOnly = false
	cfg.Save = ""
}

// openClusterNode joins srv to its Raft group when cluster-enabled is
// set; it returns nil otherwise.
func openClusterNode(cfg server.Config, srv *server.Server, logger *slog.Logger) (*replication.Node, error) {
	if !cfg.ClusterEnabled {
		return nil, nil
	}
	port := cfg.Port
	for _, a := range srv.Addrs() {
		if tcp, ok := a.(*net.TCPAddr); ok {
			port = tcp.Port
			break
		}
	}
	if port <= 0 {
		return nil, fmt.Errorf("cluster-enabled needs a TCP port")
	}
	bind := "127.0.0.1"
	if len(cfg.Bind) > 0 {
		bind = strings.TrimPrefix(cfg.Bind[0], "-")
	}
	busPort := cfg.ClusterPort
	if busPort == 0 {
		busPort = port + 10000
	}
	announce := cfg.ClusterAnnounceIP
	if announce == "" {
		announce = bind
		if announce == "0.0.0.0" || announce == "*" || announce == "::" {
			announce = "127.0.0.1"
		}
	}
	clientPort := port
	if cfg.ClusterAnnouncePort != 0 {
		clientPort = cfg.ClusterAnnouncePort
	}
	node, err := replication.Open(replication.Config{
		Dir:           cfg.Dir,
		BindAddr:      net.JoinHostPort(bind, strconv.Itoa(busPort)),
		BusAddr:       net.JoinHostPort(announce, strconv.Itoa(busPort)),
		ClientAddr:    net.JoinHostPort(announce, strconv.Itoa(clientPort)),
		NodeTimeout:   time.Duration(cfg.ClusterNodeTimeout) * time.Millisecond,
		SnapshotAfter: uint64(cfg.ClusterSnapshotAfter),
		TrailingLogs:  uint64(cfg.ClusterTrailingLogs),
		Logger:        logger,
	}, srv)
	if err != nil {
		return nil, err
	}
	self := node.Self()
	logger.Info("cluster node ready", "id", self.ID, "bus", self.BusAddr, "addr", self.Addr)
	return node, nil
}
