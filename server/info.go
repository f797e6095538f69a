package server

import (
	"container/list"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// infoSections are INFO's sections in Redis's order; "default" prints the
// ones marked.
var infoSections = []struct {
	name    string
	dflt    bool
	printer func(s *Server, b *strings.Builder)
}{
	{"server", true, infoServer},
	{"clients", true, infoClients},
	{"memory", true, infoMemory},
	{"persistence", true, infoPersistence},
	{"stats", true, infoStats},
	{"replication", true, infoReplication},
	{"cpu", true, infoCPU},
	{"modules", true, func(*Server, *strings.Builder) {}},
	{"commandstats", false, infoCommandstats},
	{"errorstats", true, infoErrorstats},
	{"cluster", true, infoCluster},
	{"keyspace", true, nil}, // infoKeyspace: it depends on the client too
}

func infoCommand(x *Ctx) {
	want := map[string]bool{}
	all, dflt := false, len(x.argv) == 1
	for _, a := range x.argv[1:] {
		switch s := strings.ToLower(string(a)); s {
		case "all", "everything":
			all = true
		case "default":
			dflt = true
		default:
			want[s] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec.name] && !(dflt && sec.dflt) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := strings.ToUpper(sec.name[:1]) + sec.name[1:]
		if sec.name == "cpu" {
			title = "CPU"
		}
		b.WriteString("# " + title + "\r\n")
		if sec.printer == nil {
			infoKeyspace(x, &b)
		} else {
			sec.printer(x.s, &b)
		}
	}
	x.w.Verbatim(b.String())
}

func field(b *strings.Builder, name string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", name, v)
}

func infoServer(s *Server, b *strings.Builder) {
	now := time.Now()
	up := now.Sub(s.started)
	exe, _ := os.Executable()
	field(b, "redis_version", RedisVersion)
	field(b, "redstream_version", Version)
	field(b, "redis_git_sha1", "00000000")
	field(b, "redis_git_dirty", 0)
	mode := "standalone"
	if s.cluster != nil {
		mode = "cluster"
	}
	field(b, "redis_mode", mode)
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", strconv.IntSize)
	field(b, "multiplexing_api", "go-netpoll")
	field(b, "go_version", runtime.Version())
	field(b, "go_maxprocs", runtime.GOMAXPROCS(0)) // a cluster node sizes it by load (replication/procs.go)
	field(b, "process_id", os.Getpid())
	field(b, "process_supervised", "no")
	field(b, "run_id", s.runID)
	field(b, "tcp_port", s.cfg.Port)
	field(b, "server_time_usec", now.UnixMicro())
	field(b, "uptime_in_seconds", int64(up.Seconds()))
	field(b, "uptime_in_days", int64(up.Hours()/24))
	field(b, "hz", s.cfg.Hz)
	field(b, "configured_hz", s.cfg.Hz)
	field(b, "lru_clock", now.Unix()&(1<<24-1))
	field(b, "executable", exe)
	field(b, "config_file", s.configFile)
	field(b, "io_threads_active", 0)
	for i, ln := range s.listeners {
		field(b, fmt.Sprintf("listener%d", i), "name="+ln.Addr().Network()+",bind="+ln.Addr().String())
	}
}

func infoClients(s *Server, b *strings.Builder) {
	watching, watchedKeys, blockingKeys, onNokey := 0, 0, 0, 0
	for _, c := range s.clients {
		if len(c.watching) > 0 {
			watching++
		}
	}
	for _, db := range s.shard.dbs {
		watchedKeys += len(db.watchers)
		blockingKeys += len(db.waiters)
		for _, q := range db.waiters {
			if anyWaitsOnGroup(q) {
				onNokey++
			}
		}
	}
	field(b, "connected_clients", len(s.clients))
	field(b, "cluster_connections", 0)
	field(b, "maxclients", s.cfg.MaxClients)
	var maxIn, maxOut int64
	for i := range s.stats.peakIn {
		maxIn = max(maxIn, s.stats.peakIn[i])
		maxOut = max(maxOut, s.stats.peakOut[i], s.stats.turnPeakOut)
	}
	field(b, "client_recent_max_input_buffer", maxIn)
	field(b, "client_recent_max_output_buffer", maxOut)
	field(b, "blocked_clients", s.stats.blockedClients)
	field(b, "tracking_clients", 0)
	field(b, "pubsub_clients", 0)
	field(b, "watching_clients", watching)
	field(b, "clients_in_timeout_table", len(s.loop.timers)) // blocked with a timeout, as in Redis
	field(b, "total_watched_keys", watchedKeys)
	field(b, "total_blocking_keys", blockingKeys)
	field(b, "total_blocking_keys_on_nokey", onNokey)
}

// anyWaitsOnGroup says whether a client in a key's wait queue runs
// XREADGROUP, whose wait also ends when the key goes away: Redis counts
// such keys as blocking "on nokey".
func anyWaitsOnGroup(q *list.List) bool {
	for e := q.Front(); e != nil; e = e.Next() {
		if waitsOnGroup(e.Value.(*Client).blocked.cmd) {
			return true
		}
	}
	return false
}

func infoMemory(s *Server, b *strings.Builder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := processRSS()
	// used_memory is what maxmemory compares: the keys' and the clients'
	// bytes as counted (memory.go), not the Go heap, which holds garbage
	// until the next collection; used_memory_rss is what the OS gives.
	used := s.usedMemory()
	peak := max(s.stats.peakUsed, used)
	field(b, "used_memory", used)
	field(b, "used_memory_human", humanBytes(used))
	field(b, "used_memory_rss", rss)
	field(b, "used_memory_rss_human", humanBytes(rss))
	field(b, "used_memory_peak", peak)
	field(b, "used_memory_peak_human", humanBytes(peak))
	field(b, "used_memory_startup", s.startupBytes)
	field(b, "used_memory_dataset", s.shard.datasetBytes())
	field(b, "total_system_memory", totalSystemMemory())
	field(b, "total_system_memory_human", humanBytes(totalSystemMemory()))
	field(b, "maxmemory", s.cfg.MaxMemory)
	field(b, "maxmemory_human", humanBytes(s.cfg.MaxMemory))
	field(b, "maxmemory_policy", s.cfg.MaxMemoryPolicy)
	if used > 0 {
		field(b, "mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rss)/float64(used)))
	}
	field(b, "mem_clients_slaves", 0)
	field(b, "mem_clients_normal", s.stats.memClientsNormal) // sampled once a second, as Redis's
	field(b, "mem_allocator", "go-"+runtime.Version())
	field(b, "gc_cycles", ms.NumGC)
	field(b, "lazyfree_pending_objects", 0)
}

func infoPersistence(s *Server, b *strings.Builder) {
	field(b, "loading", 0)
	field(b, "async_loading", 0)
	field(b, "rdb_changes_since_last_save", s.shard.dirty)
	if s.persistInfo == nil {
		field(b, "rdb_bgsave_in_progress", 0)
		field(b, "rdb_last_save_time", s.started.Unix())
		field(b, "rdb_last_bgsave_status", "ok")
		field(b, "aof_enabled", 0)
		field(b, "aof_rewrite_in_progress", 0)
		field(b, "aof_last_write_status", "ok")
		return
	}
	for _, f := range s.persistInfo() {
		switch f.Name {
		case "aof_rewrite_scheduled": // the server schedules; the persister only runs
			f.Value = 0
			if s.rewriteScheduled {
				f.Value = 1
			}
		}
		field(b, f.Name, f.Value)
	}
}

func infoStats(s *Server, b *strings.Builder) {
	st := &s.stats
	field(b, "total_connections_received", st.connections)
	field(b, "total_commands_processed", st.commands)
	field(b, "instantaneous_ops_per_sec", st.opsPerSec())
	field(b, "total_net_input_bytes", st.netIn.Load())
	field(b, "total_net_output_bytes", st.netOut.Load())
	field(b, "rejected_connections", st.rejectedConns)
	field(b, "expired_keys", st.expiredKeys)
	field(b, "stream_delayed_released", st.delayedOut)                  // ours: XADD DELAY/AT entries appended when due
	field(b, "stream_delayed_queued", int64(len(s.shard.delays.items))) // ours: streams queued for their next due time
	field(b, "stream_age_watched", agedStreams(s))                      // ours: streams the age sweeper watches (XCFGSET MAXAGE)
	field(b, "evicted_keys", 0)
	field(b, "keyspace_hits", st.keyspaceHits)
	field(b, "keyspace_misses", st.keyspaceMisses)
	field(b, "pubsub_channels", 0)
	field(b, "pubsub_patterns", 0)
	field(b, "total_error_replies", st.errorReplies)
	field(b, "client_output_buffer_limit_disconnections", st.outputLimitDisconnections)
	field(b, "latest_fork_usec", st.lastFreezeUsec) // redstream does not fork: the snapshot freeze
	field(b, "stream_redeliveries", st.redelivered) // ours: entries a group policy redelivered
	// Beyond Redis: consumer-group dead letters (group_policy.go).
	field(b, "stream_dead_letters", st.deadLetters)
	field(b, "stream_dead_letter_failures", st.deadLetterFailures)
}

func infoReplication(s *Server, b *strings.Builder) {
	if s.cluster != nil {
		infoRaft(s, b)
		return
	}
	field(b, "role", "master")
	field(b, "connected_slaves", 0)
	infoReplicationTail(s, b, 0)
}

// infoRaft is INFO replication in cluster mode: Redis's fields for the
// group's leader (role:master, one slaveN line per follower, its offset
// the follower's Raft match index) or a follower (role:slave, its
// master the leader), then the Raft state under our own names.
func infoRaft(s *Server, b *strings.Builder) {
	v := viewCluster(s, s.cluster)
	st := v.status
	if st.Role == "leader" {
		field(b, "role", "master")
		field(b, "connected_slaves", len(st.Followers))
		for i, f := range st.Followers {
			host, port := hostPort(f.Addr)
			state := "online"
			if f.CatchingUp {
				state = "send_bulk" // Redis's word for a replica still receiving its first copy
			}
			fmt.Fprintf(b, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n",
				i, host, port, state, f.MatchIndex, int64(f.LastContact.Seconds()))
		}
	} else {
		field(b, "role", "slave")
		link := "down"
		if v.leader != nil {
			host, port := hostPort(v.leader.Addr)
			field(b, "master_host", host)
			field(b, "master_port", port)
			link = "up"
		}
		field(b, "master_link_status", link)
		field(b, "slave_repl_offset", st.LastIndex)
		field(b, "slave_read_only", 1)
		field(b, "connected_slaves", 0)
	}
	infoReplicationTail(s, b, st.LastIndex)
	field(b, "raft_state", st.Role)
	field(b, "raft_term", st.Term)
	field(b, "raft_leader_id", st.LeaderID)
	field(b, "raft_commit_index", st.CommitIndex)
	field(b, "raft_applied_index", st.AppliedIndex)
	field(b, "raft_last_index", st.LastIndex)
	if len(s.groups) > 1 {
		// The fields above are the first group's; a node hosting several
		// (a partitioned cluster) shows each, one line per group in the
		// slaveN style.
		field(b, "raft_groups", len(s.groups))
		for _, g := range s.groups {
			gs := g.cl.Status()
			fmt.Fprintf(b, "raft_group%d:state=%s,term=%d,leader_id=%s,preferred_leader_id=%s,commit_index=%d,applied_index=%d,last_index=%d\r\n",
				g.id, gs.Role, gs.Term, gs.LeaderID, gs.PreferredLeader, gs.CommitIndex, gs.AppliedIndex, gs.LastIndex)
		}
	}
}

// infoReplicationTail is what every role prints after its own fields.
func infoReplicationTail(s *Server, b *strings.Builder, offset uint64) {
	field(b, "master_failover_state", "no-failover")
	field(b, "master_replid", s.runID)
	field(b, "master_repl_offset", offset)
	field(b, "second_repl_offset", -1)
	field(b, "repl_backlog_active", 0)
}

func infoCluster(s *Server, b *strings.Builder) {
	enabled := 0
	if s.cluster != nil {
		enabled = 1
	}
	field(b, "cluster_enabled", enabled)
}

func infoCPU(s *Server, b *strings.Builder) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	secs := func(tv syscall.Timeval) string {
		return fmt.Sprintf("%d.%06d", tv.Sec, tv.Usec)
	}
	field(b, "used_cpu_sys", secs(ru.Stime))
	field(b, "used_cpu_user", secs(ru.Utime))
	field(b, "used_cpu_sys_children", "0.000000")
	field(b, "used_cpu_user_children", "0.000000")
}

func infoCommandstats(s *Server, b *strings.Builder) {
	var cmds []*Command
	for _, c := range sortedCommands(s.commands) {
		cmds = append(cmds, c)
		cmds = append(cmds, c.sortedSubs()...)
	}
	for _, c := range cmds {
		st := c.stat
		if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
			continue
		}
		per := 0.0
		if st.calls > 0 {
			per = float64(st.usec) / float64(st.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			c.Name, st.calls, st.usec, per, st.rejected, st.failed)
	}
}

func infoErrorstats(s *Server, b *strings.Builder) {
	codes := make([]string, 0, len(s.stats.errorCodes))
	for code := range s.stats.errorCodes {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", code, s.stats.errorCodes[code])
	}
}

// infoKeyspace has a line for each database with keys; in cluster mode,
// one, db0's, over the databases the client's keyless reads cover
// (keyless.go): database 0 is all its clients see.
func infoKeyspace(x *Ctx, b *strings.Builder) {
	s := x.s
	if s.cluster != nil {
		keys, expires := 0, 0
		for _, db := range x.keylessDBs() {
			keys += db.Len()
			expires += len(db.expires)
		}
		if keys > 0 {
			fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0,subexpiry=0\r\n", keys, expires)
		}
		return
	}
	for _, db := range s.shard.dbs {
		if db.Len() == 0 {
			continue
		}
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0,subexpiry=0\r\n", db.index, db.Len(), len(db.expires))
	}
}

// processRSS reads the resident set size from /proc (0 where there is
// none).
func processRSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func totalSystemMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// humanBytes formats n as Redis's *_human fields do (1.50M, 12.00K).
func humanBytes(n int64) string {
	units := []string{"B", "K", "M", "G", "T", "P"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.2f%s", f, units[i])
}

// agedStreams counts the streams in the age sweeper's sets (a stream
// whose limit was just turned off may stay there until the sweeper next
// passes it).
func agedStreams(s *Server) int64 {
	n := 0
	for _, db := range s.shard.dbs {
		n += db.aged.Len()
	}
	return int64(n)
}
