package server

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstream/redstream/resp"
)

// Output a client holds, and Redis's client-output-buffer-limit.
//
// A client's held output is the reply bytes the server keeps for it and
// its peer has not taken yet: CLIENT LIST shows it as omem, INFO as
// client_recent_max_output_buffer and in mem_clients_normal.
//
// The loop writes a turn's output before it runs the client's next turn,
// and runs none while the socket has not taken it all (client.go), so a
// client that stops reading holds one turn's output, not everything it
// asked for. What ends that wait, as in Redis:
//   - timeout: a client idle that long — no command, no input, no write
//     that made progress — is closed (clientsCron);
//   - the limits of the client's class: at the end of each turn (the
//     reply just built) and once a second for every client (the cron; a
//     write that stays stuck, a soft limit that stays exceeded, a limit
//     lowered by CONFIG SET), a client whose held output reaches the
//     hard limit, or stays at or above the soft limit for more than its
//     seconds, is closed and its held output dropped, with Redis's log
//     line.

// Client classes of client-output-buffer-limit, in Redis's order (the
// order CONFIG GET prints them in).
const (
	// ClassNormal is every client redstream has today.
	ClassNormal = iota
	// ClassReplica will apply to the connections a replica reads the
	// write stream from, once replicas speak RESP to a primary
	// (replication/ ships the log through Raft today, not through
	// clients, so nothing holds output under this class yet).
	ClassReplica
	// ClassPubSub will apply to clients in SUBSCRIBE mode, once
	// redstream has pub/sub (and to RESP3 push readers of it).
	ClassPubSub
	numOutputClasses
)

var outputClassNames = [numOutputClasses]string{"normal", "slave", "pubsub"}

// OutputBufferLimit is one class's client-output-buffer-limit: a client
// is closed when its held output reaches Hard bytes, or stays at or above
// Soft bytes for more than SoftSeconds. Zero turns a limit off.
type OutputBufferLimit struct {
	Hard, Soft  uint64
	SoftSeconds int64
}

// defaultOutputLimits are Redis's: none for normal clients, 256mb hard /
// 64mb for 60 s for replicas, 32mb / 8mb for 60 s for pub/sub.
var defaultOutputLimits = [numOutputClasses]OutputBufferLimit{
	ClassNormal:  {},
	ClassReplica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
	ClassPubSub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
}

// Redis's errors for a bad client-output-buffer-limit.
const (
	errObufArgs    = "Wrong number of arguments in buffer limit configuration."
	errObufClass   = "Invalid client class specified in buffer limit configuration."
	errObufSetting = "Error in hard, soft or soft_seconds setting in buffer limit configuration."
)

// formatOutputLimits prints the limits as CONFIG GET does:
// "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
func formatOutputLimits(l *[numOutputClasses]OutputBufferLimit) string {
	var b strings.Builder
	for class, lim := range l {
		if class > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d %d %d", outputClassNames[class], lim.Hard, lim.Soft, lim.SoftSeconds)
	}
	return b.String()
}

// setOutputLimits parses "<class> <hard> <soft> <soft seconds>"
// quadruples into l, all of them or none, as Redis does. A single
// argument is split at each space (CONFIG SET's value; a config file line
// or a flag with one word is split the same way).
func setOutputLimits(l *[numOutputClasses]OutputBufferLimit, args []string) error {
	if len(args) == 1 {
		if args[0] == "" {
			args = nil // Redis splits "" into no arguments: nothing changes
		} else {
			args = strings.Split(args[0], " ")
		}
	}
	if len(args)%4 != 0 {
		return fmt.Errorf("%s", errObufArgs)
	}
	next := *l
	for i := 0; i < len(args); i += 4 {
		class := outputClassByName(args[i])
		if class < 0 {
			return fmt.Errorf("%s", errObufClass)
		}
		hard, okHard := memToULL(args[i+1])
		soft, okSoft := memToULL(args[i+2])
		secs, okSecs := strToSeconds(args[i+3])
		if !okHard || !okSoft || !okSecs {
			return fmt.Errorf("%s", errObufSetting)
		}
		next[class] = OutputBufferLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
	}
	*l = next
	return nil
}

// outputClassByName maps a class name to its class: "replica" and
// "slave" are the same class; "master" has no limits of its own.
func outputClassByName(name string) int {
	switch strings.ToLower(name) {
	case "normal":
		return ClassNormal
	case "slave", "replica":
		return ClassReplica
	case "pubsub":
		return ClassPubSub
	}
	return -1
}

// memToULL parses a byte size the way Redis's memtoull does for this
// directive: digits, then an optional unit (b, k, kb, m, mb, g, gb, any
// case), no sign. Like the C code it takes no digits as 0 ("mb" is 0),
// saturates an overflowing number and lets the unit's product wrap.
func memToULL(s string) (uint64, bool) {
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1 << 10
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1 << 20
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1 << 30
	default:
		return 0, false
	}
	if i >= 128 {
		return 0, false // longer than Redis's digit buffer
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		if i == 0 {
			n = 0
		} else {
			n = ^uint64(0) // strtoull saturates
		}
	}
	return n * mul, true
}

// strToSeconds parses the soft limit's seconds as Redis does: strtoll
// (leading white space and a sign allowed, nothing after the digits; an
// empty string is 0), stored in a C int, and refused when negative.
func strToSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, false // no digits: strtoll stops at the start
	}
	var n uint64
	saturated := false
	for _, ch := range []byte(t) {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if n > (1<<63)/10 {
			saturated = true
		} else {
			n = n*10 + uint64(ch-'0')
		}
	}
	var v int64
	switch {
	case saturated && neg:
		v = -1 << 63
	case saturated:
		v = 1<<63 - 1
	case !neg && n > 1<<63-1:
		v = 1<<63 - 1
	case neg && n >= 1<<63:
		v = -1 << 63
	case neg:
		v = -int64(n)
	default:
		v = int64(n)
	}
	secs := int64(int32(v)) // C's int: the low 32 bits
	if secs < 0 {
		return 0, false
	}
	return secs, true
}

// outputClass is c's class for the limits. Lock should be held.
func (c *Client) outputClass() int { return ClassNormal }

// heldOutput is the reply bytes held for c that its peer has not taken.
// Lock should be held.
func (c *Client) heldOutput() int64 { return int64(c.out.Len() - c.sent) }

// outputLimitReached checks held against c's class limits, keeping the
// time the soft limit was first seen exceeded, as Redis's
// checkClientOutputBufferLimits does (in whole seconds: the soft limit
// counts as reached once more than its seconds have passed). Lock should
// be held.
func (s *Server) outputLimitReached(c *Client, held int64, now time.Time) bool {
	lim := &s.cfg.ClientOutputBufferLimit[c.outputClass()]
	used := uint64(held)
	hard := lim.Hard != 0 && used >= lim.Hard
	soft := lim.Soft != 0 && used >= lim.Soft
	if soft {
		if c.softLimitSince == 0 {
			c.softLimitSince = now.Unix()
			soft = false
		} else if now.Unix()-c.softLimitSince <= lim.SoftSeconds {
			soft = false
		}
	} else {
		c.softLimitSince = 0
	}
	return soft || hard
}

// checkTurnOutput runs at the end of each of c's turns: it notes the
// output peak for INFO and, when c's output passes its class's limit,
// drops it and marks c to be closed (Redis's asynchronous close: the
// loop closes it instead of writing). Lock should be
// held.
func (c *Client) checkTurnOutput() {
	s := c.s
	held := int64(c.out.Len())
	if held > s.stats.turnPeakOut {
		s.stats.turnPeakOut = held
	}
	lim := &s.cfg.ClientOutputBufferLimit[c.outputClass()]
	if lim.Hard == 0 && lim.Soft == 0 {
		return
	}
	if held = c.heldOutput(); held == 0 {
		return // as Redis: nothing held, nothing to check
	}
	now := c.lastInteraction
	if !s.outputLimitReached(c, held, now) {
		return
	}
	s.logger.Warn(fmt.Sprintf("Client %s scheduled to be closed ASAP for overcoming of output buffer limits.", c.infoLine(now.UnixMilli())))
	s.stats.outputLimitDisconnections++
	s.released.add(cap(c.out.Bytes()))
	c.out = resp.Writer{Proto: c.out.Proto} // dropped, not written
	c.sent = 0
	c.closeASAP = true
}

// clientsCron runs once a second: it samples every client's buffers for
// INFO (recent peaks, mem_clients_normal) and closes the clients whose
// held output is past their class's limit — a write that stays stuck, a
// soft limit that stays exceeded, a limit lowered by CONFIG SET. Lock
// should be held.
func (s *Server) clientsCron(now time.Time) {
	st := &s.stats
	slot := int(now.Unix() % int64(len(st.peakOut)))
	next := (slot + 1) % len(st.peakOut)
	st.peakIn[next], st.peakOut[next] = 0, 0 // as Redis: the next second starts afresh
	st.peakOut[slot] = max(st.peakOut[slot], st.turnPeakOut)
	st.turnPeakOut = 0
	var mem int64
	idle := time.Duration(s.cfg.Timeout) * time.Second
	for _, c := range s.clients {
		if idle > 0 && c.blocked == nil && now.Sub(c.lastInteraction) > idle {
			// As Redis's clientsCronHandleTimeout: a blocked client waits
			// for its own timeout instead.
			s.logger.Debug("Closing idle client", "addr", c.raddr, "unsent", c.heldOutput())
			s.closeClient(c)
			continue
		}
		held := c.heldOutput()
		in := c.qbuf.Load()
		st.peakIn[slot] = max(st.peakIn[slot], in)
		st.peakOut[slot] = max(st.peakOut[slot], held)
		mem += c.memoryUsage(held)
		if held == 0 || !s.outputLimitReached(c, held, now) {
			continue
		}
		s.logger.Warn(fmt.Sprintf("Client %s closed for overcoming of output buffer limits.", c.infoLine(now.UnixMilli())))
		st.outputLimitDisconnections++
		s.kill(nil, c) // what it held goes with it
	}
	st.memClientsNormal = mem
}

// clientBaseMemory is what CLIENT LIST counts for every client besides
// its buffers (Redis counts its 16 KB static reply buffer; ours is the
// query buffer's first read).
const clientBaseMemory = 16 << 10

// memoryUsage is c's tot-mem: its held output, its unparsed input and the
// base. Lock should be held.
func (c *Client) memoryUsage(held int64) int64 {
	return clientBaseMemory + c.qbuf.Load() + held
}

// Memory goes back.
//
// A big reply's buffer is garbage once written (flush drops any buffer
// over 1 MB), but Go returns freed memory to the OS lazily: after a burst
// of big replies the process kept gigabytes resident for minutes, for a
// dataset of megabytes, because an idle server allocates nothing, so no
// collection runs and the scavenger has little to return. So the buffers
// dropped are counted, and the cron, without the lock, returns memory
// (debug.FreeOSMemory: a collection, then every free page back) once 64
// MB were dropped, or once some 8 MB were and a second went by without
// more (the end of a burst). A collection costs in proportion to the live
// heap, so it runs at most once a second and at most a fifth of the time
// (by the wall clock, which makes a return during a burst of big replies
// look dearer than it is: allowing a tenth left a 1 GB burst with one).
//
// And the Go memory limit follows maxmemory (setMemoryLimitFor), so that
// the collector runs before garbage takes the process far past it.

const (
	returnAfter      = 64 << 20 // dropped since the last return: return now
	returnQuietAfter = 8 << 20  // dropped, and a quiet second since: return
)

// releasedMemory counts the big buffers dropped since memory was last
// returned. It is added to under the lock and read without it.
type releasedMemory struct {
	bytes atomic.Int64
	last  atomic.Int64 // unix nanoseconds of the last drop
}

// add counts a dropped buffer of n bytes.
func (r *releasedMemory) add(n int) {
	r.bytes.Add(int64(n))
	r.last.Store(time.Now().UnixNano())
}

// memoryReturner is the cron's state for returning memory.
type memoryReturner struct {
	last time.Time     // when memory was last returned
	cost time.Duration // how long that took
}

// run returns freed memory to the OS when enough was dropped (see above).
// Called by the cron without the lock.
func (m *memoryReturner) run(r *releasedMemory, now time.Time) {
	n := r.bytes.Load()
	quiet := now.Sub(time.Unix(0, r.last.Load())) >= time.Second
	if n < returnQuietAfter || (n < returnAfter && !quiet) {
		return
	}
	if now.Sub(m.last) < max(time.Second, 4*m.cost) {
		return
	}
	r.bytes.Add(-n)
	debug.FreeOSMemory()
	m.last = time.Now()
	m.cost = m.last.Sub(now)
}

// memLimit is the Go memory limit the process started with (GOMEMLIMIT,
// or none), which setMemoryLimitFor never raises.
var memLimit struct {
	sync.Mutex
	base int64 // -1: not read yet
}

func init() { memLimit.base = -1 }

// setMemoryLimitFor sets the Go runtime's soft memory limit for a
// maxmemory (0: none): a quarter above it plus 64 MB, for what maxmemory
// does not count (the runtime's own memory, stacks, client buffers), so
// the collector runs harder as the process nears it, instead of letting
// the heap reach twice the live data. It is a soft limit: with more live
// data than it allows, the collector uses at most about half the CPU and
// the process goes past it. The limit is the process's: the last server
// configured sets it.
func setMemoryLimitFor(maxmemory int64) {
	memLimit.Lock()
	defer memLimit.Unlock()
	if memLimit.base < 0 {
		memLimit.base = debug.SetMemoryLimit(-1) // reads it
	}
	limit := memLimit.base
	if maxmemory > 0 && maxmemory <= (math.MaxInt64-64<<20)/5*4 {
		limit = min(limit, maxmemory+maxmemory/4+64<<20)
	}
	debug.SetMemoryLimit(limit)
}
