package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the parts cli plugs in; all are optional.
type Options struct {
	Logger     *slog.Logger
	LogLevel   *slog.LevelVar // the logger's level; CONFIG SET loglevel changes it
	Log        Log            // where applied writes go to become durable; nil: none (see SetLog)
	ConfigFile string         // shown in INFO and the banner
	// PersistenceInfo supplies INFO persistence's AOF and RDB fields.
	PersistenceInfo func() []InfoField
	// Persister saves snapshots and rewrites the AOF; nil: SAVE and
	// friends answer an error.
	Persister Persister
	// Codec makes and reads DUMP/RESTORE payloads; nil: they answer an
	// error.
	Codec Codec
}

// InfoField is one "name:value" line of INFO.
type InfoField struct {
	Name  string
	Value any
}

// Server is a redstream node: its listeners, event loop and clients, the
// command table, configuration and statistics, serving one Shard (the
// keyspace; shard.go).
type Server struct {
	shard *Shard // the keyspace it serves; set once by New

	// Guarded by shard.mu, the node sharing its one shard's lock
	// (shard.go), unless the comment says otherwise.
	cfg          Config
	appendOnly   atomic.Bool // cfg.AppendOnly, for WAITAOF's wait, which runs without the lock
	clients      map[int64]*Client
	startupBytes int64 // the heap in use before any data: INFO used_memory_startup
	// A BGSAVE or BGREWRITEAOF asked while the other runs (cmd_persist.go).
	bgsaveScheduled, rewriteScheduled bool
	stats                             stats
	slowlog                           slowlog
	commands                          map[string]*Command
	shutdownBy                        chan string // receives why the server should stop (SHUTDOWN)
	stopping                          bool        // shutting down: no command runs any more (shutdown.go)
	memLimitFor                       int64       // the maxmemory the Go memory limit was last set for (outputlimit.go)
	sweepFrom                         int         // the db the age sweeper starts its next tick at (retention.go)

	// Not guarded by shard.mu.
	logger      *slog.Logger
	logLevel    *slog.LevelVar
	configFile  string
	persistInfo func() []InfoField
	persist     Persister
	codec       Codec
	cluster     Cluster // the node's first Raft group; nil: it runs alone (cluster.go)
	// The groups this node hosts and the group of each slot (groups.go);
	// guarded by shard.mu.
	groups    []*clusterGroup
	slotGroup []*clusterGroup
	// slotRemote, for a slot whose group this node does not host, is
	// that group as the cluster map describes it (MapSlots): where to
	// redirect. nil with slotGroup nil: no group serves the slot.
	slotRemote []*clusterGroup
	slotTarget []*clusterGroup          // the group a moving slot goes to (moves.go); nil: not moving
	remote     map[uint16]*clusterGroup // the groups slotRemote names, by ID
	seq        uint64                   // the last entry this node proposed to any group (propose.go)
	runID      string
	started    time.Time
	nextID     atomic.Int64
	listeners  []net.Listener
	loop       *eventLoop // serves every client (loop_linux.go)
	closing    atomic.Bool
	closeOnce  sync.Once
	serving    atomic.Bool // Serve has started the cron
	cronDone   chan struct{}
	released   releasedMemory // big buffers dropped, for the cron to return to the OS
}

// New returns a server with cfg; Listen and Serve start it.
func New(cfg Config, opts Options) (*Server, error) {
	if cfg.Databases < 1 {
		return nil, fmt.Errorf("server: databases must be at least 1, got %d", cfg.Databases)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := &Server{
		cfg:         cfg,
		clients:     make(map[int64]*Client),
		commands:    commandTable(),
		shutdownBy:  make(chan string, 1),
		logger:      logger,
		logLevel:    opts.LogLevel,
		configFile:  opts.ConfigFile,
		persistInfo: opts.PersistenceInfo,
		persist:     opts.Persister,
		codec:       opts.Codec,
		runID:       newRunID(),
		started:     time.Now(),
		cronDone:    make(chan struct{}),
	}
	s.shard = newShard(s, cfg.Databases, opts.Log)
	s.slowlog.init()
	runtime.GC() // what is live, not what the startup left for the collector: it varied by megabytes
	s.startupBytes = heapInUse()
	s.memLimitFor = -1
	s.applyConfig()
	if err := s.initLoop(); err != nil {
		return nil, fmt.Errorf("server: event loop: %w", err)
	}
	return s, nil
}

func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// applyConfig applies the settings that act outside the command that
// changed them. Lock should be held (or the server not yet started).
func (s *Server) applyConfig() {
	s.appendOnly.Store(s.cfg.AppendOnly)
	if s.logLevel != nil {
		s.logLevel.Set(LogLevel(s.cfg.LogLevel))
	}
	if s.cfg.MaxMemory != s.memLimitFor {
		setMemoryLimitFor(s.cfg.MaxMemory)
		s.memLimitFor = s.cfg.MaxMemory
	}
}

// Listen opens the configured TCP and unix listeners. A bind address
// prefixed with '-' is skipped when it cannot be bound (e.g. no IPv6).
// Port 0 opens no TCP listener (Redis's way to serve a unix socket
// only); PortRandom takes a free port, the same for every address.
func (s *Server) Listen() error {
	if s.cfg.Port != 0 {
		if err := s.listenTCP(); err != nil {
			return err
		}
	}
	if s.cfg.UnixSocket != "" {
		_ = os.Remove(s.cfg.UnixSocket)
		ln, err := net.Listen("unix", s.cfg.UnixSocket)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("server: listen on unix socket %s: %w", s.cfg.UnixSocket, err)
		}
		_ = os.Chmod(s.cfg.UnixSocket, os.FileMode(s.cfg.UnixSocketPerm))
		s.listeners = append(s.listeners, ln)
	}
	if len(s.listeners) == 0 {
		return ErrNoListener
	}
	return nil
}

// ErrNoListener means the configuration opens no listener at all: port 0
// (or no bind address) and no unixsocket.
var ErrNoListener = errors.New("server: configured to not listen anywhere (port is 0 or bind is empty, and unixsocket is not set)")

// listenTCP opens a listener on every bind address.
func (s *Server) listenTCP() error {
	for _, addr := range s.cfg.Bind {
		optional := strings.HasPrefix(addr, "-")
		addr = strings.TrimPrefix(addr, "-")
		port := max(s.cfg.Port, 0) // PortRandom: the system picks
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			if optional {
				continue
			}
			s.closeListeners()
			return fmt.Errorf("server: listen on %s:%d: %w", addr, port, err)
		}
		s.listeners = append(s.listeners, ln)
		if s.cfg.Port == PortRandom {
			s.cfg.Port = ln.Addr().(*net.TCPAddr).Port // the other addresses share it
		}
	}
	return nil
}

// Addrs returns the addresses the server listens on.
func (s *Server) Addrs() []net.Addr {
	var out []net.Addr
	for _, ln := range s.listeners {
		out = append(out, ln.Addr())
	}
	return out
}

// Serve accepts connections on every listener and runs the background
// cron until Close. It returns nil after a clean Close.
func (s *Server) Serve() error {
	if !s.serving.Swap(true) {
		// The loop runs from now on, not from the first client: a node
		// that took the lead of a group with nobody connected yet has
		// its own writes to send (expired keys' deletes, a move's).
		s.shard.mu.Lock()
		s.loop.start()
		s.shard.mu.Unlock()
		go s.cron()
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(s.listeners))
	for _, ln := range s.listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.acceptLoop(ln)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !s.closing.Load() {
			return err
		}
	}
	return nil
}

func (s *Server) acceptLoop(ln net.Listener) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond) // out of descriptors: back off
				continue
			}
			return err
		}
		s.adopt(conn)
	}
}

// ShutdownRequested receives a reason when a client sent SHUTDOWN; the
// owner then calls Close.
func (s *Server) ShutdownRequested() <-chan string { return s.shutdownBy }

// Close stops accepting, disconnects every client, stops the event loop
// and the cron. It is safe to call more than once.
func (s *Server) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.closeOnce.Do(func() {
			s.closing.Store(true)
			s.closeListeners()
			s.loop.stop()
			if s.serving.Swap(true) { // else no cron ever ran: Serve was never called
				<-s.cronDone
			}
		})
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) closeListeners() {
	for _, ln := range s.listeners {
		ln.Close()
	}
	if s.cfg.UnixSocket != "" {
		_ = os.Remove(s.cfg.UnixSocket)
	}
}

// cron runs Redis's periodic jobs — active expiry, stats sampling — and
// our own (the age-retention sweeper), hz times a second until Close.
func (s *Server) cron() {
	defer close(s.cronDone)
	s.shard.mu.Lock()
	hz := s.cfg.Hz
	s.shard.mu.Unlock()
	t := time.NewTicker(time.Second / time.Duration(hz))
	defer t.Stop()
	var lastClients time.Time
	var ret memoryReturner
	for range t.C {
		if s.closing.Load() {
			return
		}
		now := time.Now()
		s.shard.mu.Lock()
		if s.cluster == nil {
			s.activeExpire()
		} else {
			s.proposeExpiries()
		}
		s.sweepAged()
		s.releaseDelayed() // the timer's fallback
		s.stats.sample()
		s.persistCron(now)
		if now.Sub(lastClients) >= time.Second {
			s.clientsCron(now) // every client once a second, as Redis's clientsCron
			lastClients = now
		}
		s.stats.peakUsed = max(s.stats.peakUsed, s.usedMemory())
		if s.cfg.Hz != hz {
			hz = s.cfg.Hz
			t.Reset(time.Second / time.Duration(hz))
		}
		s.shard.mu.Unlock()
		ret.run(&s.released, now) // big replies' memory goes back to the OS
	}
}

// LogLevel maps Redis's log levels onto slog's.
func LogLevel(name string) slog.Level {
	switch name {
	case "debug", "verbose":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	case "nothing":
		return slog.LevelError + 4
	}
	return slog.LevelInfo
}
