package server

import (
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// stats are the counters INFO reports. Guarded by the keyspace lock,
// except the byte counters, atomics that INFO reads without it.
type stats struct {
	connections   int64
	rejectedConns int64
	commands      int64
	expiredKeys   int64
	// Issue 15's counts, taken on every apply (live, AOF replay, a
	// group's followers), so every node of a group shows the same: dead
	// letters (group_policy.go: entries moved out of a PEL past
	// MAXDELIVER or by XNACK FATAL, and moves refused, the entry staying
	// pending), redeliveries and delayed entries released.
	deadLetters, deadLetterFailures int64
	redelivered                     int64 // entries a group policy redelivered (stream_redeliveries)
	delayedOut                      int64 // delayed stream entries released (INFO stream_delayed_released)
	keyspaceHits                    int64
	keyspaceMisses                  int64
	errorReplies                    int64
	errorCodes                      map[string]int64 // errorstats: replies per error code (ERR, WRONGTYPE, ...)
	blockedClients                  int64
	peakUsed                        int64 // the most usedMemory the cron saw (INFO used_memory_peak)
	lastFreezeUsec                  int64 // how long the last snapshot held the lock (INFO latest_fork_usec)
	netIn, netOut                   atomic.Int64

	// Client buffers (outputlimit.go): the largest input and held output
	// seen in each of the last 8 seconds (INFO client_recent_max_*), the
	// largest turn's output since the last sample, what clients use in
	// all (INFO mem_clients_normal, sampled once a second), and how many
	// were closed for passing their output limit.
	peakIn, peakOut           [8]int64
	turnPeakOut               int64
	memClientsNormal          int64
	outputLimitDisconnections int64

	// instantaneous_ops_per_sec: commands per second over the last 16
	// samples of the cron.
	opsSamples [16]float64
	opsIdx     int
	lastOps    int64
	lastSample time.Time
}

// sample records one instantaneous-ops measurement. Lock should be held.
func (st *stats) sample() {
	now := time.Now()
	if !st.lastSample.IsZero() {
		secs := now.Sub(st.lastSample).Seconds()
		if secs > 0 {
			st.opsSamples[st.opsIdx] = float64(st.commands-st.lastOps) / secs
			st.opsIdx = (st.opsIdx + 1) % len(st.opsSamples)
		}
	}
	st.lastSample, st.lastOps = now, st.commands
}

func (st *stats) opsPerSec() int64 {
	var sum float64
	for _, v := range st.opsSamples {
		sum += v
	}
	return int64(sum / float64(len(st.opsSamples)))
}

// countError counts an error reply under its code, the first word of
// its text, as INFO errorstats does. Lock should be held.
func (st *stats) countError(msg string) {
	st.errorReplies++
	code, _, _ := strings.Cut(msg, " ")
	if st.errorCodes == nil {
		st.errorCodes = map[string]int64{}
	}
	if len(st.errorCodes) < 128 || st.errorCodes[code] > 0 { // bounded, as Redis's is
		st.errorCodes[code]++
	}
}

// resetStats is CONFIG RESETSTAT. Lock should be held.
func (s *Server) resetStats() {
	st := &s.stats
	st.connections, st.rejectedConns, st.commands = 0, 0, 0
	st.expiredKeys, st.keyspaceHits, st.keyspaceMisses, st.errorReplies = 0, 0, 0, 0
	st.errorCodes = nil
	st.outputLimitDisconnections, st.redelivered = 0, 0
	st.netIn.Store(0)
	st.netOut.Store(0)
	st.delayedOut = 0
	for _, c := range s.commands {
		c.stat = cmdStat{}
		for _, sub := range c.Sub {
			sub.stat = cmdStat{}
		}
	}
	s.slowlog.reset()
}

func sortClients(cs []*Client) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
}
