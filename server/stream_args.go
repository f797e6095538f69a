package server

import (
	"slices"

	"github.com/redstream/redstream/resp"
	"github.com/redstream/redstream/stream"
)

// addTrimArgs are the options XADD and XTRIM share, and XADD's own.
type addTrimArgs struct {
	trim       stream.Trim
	trimAt     int   // argv index of the MAXLEN/MINID threshold
	opAt       int   // argv index of "~" or "=", -1 if absent
	limitAts   []int // argv indexes of LIMIT keywords (their count follows)
	limitGiven bool

	// XADD only.
	noMkStream bool
	refGiven   bool   // KEEPREF, DELREF or ACKED seen (trim.Refs holds which)
	pid, iid   []byte // IDMP producer and idempotency ID; iid nil for IDMPAUTO
	idAt       int    // argv index of the ID
	auto       bool   // "*"
	id         stream.ID
	seqGiven   bool  // false for "ms-*"
	delayGiven bool  // DELAY or AT seen
	due        int64 // unix ms the entry is due at (DELAY: the record's time plus the delay)
}

// parseAddTrim parses the options of XADD (up to and including the ID)
// or XTRIM, in Redis's order and with Redis's errors. It answers the error
// itself and returns ok false on failure.
func parseAddTrim(x *Ctx, xadd bool) (a addTrimArgs, ok bool) {
	a.opAt, a.trimAt = -1, -1
	i := 2
	for ; i < len(x.argv); i++ {
		next, msg, stop := a.parseOption(x, i, xadd)
		if msg != "" {
			x.error(msg)
			return a, false
		}
		if i = next; stop {
			break
		}
	}
	a.idAt = i
	if msg := a.finishTrim(x, xadd); msg != "" {
		x.error(msg)
		return a, false
	}
	return a, true
}

// parseOption parses the option at argv[i]. It returns the index of its
// last argument, an error text, and whether the options are over (XADD's
// ID was reached; the ID itself is parsed here too).
func (a *addTrimArgs) parseOption(x *Ctx, i int, xadd bool) (last int, msg string, stop bool) {
	more := len(x.argv) - 1 - i
	opt := x.argv[i]
	switch {
	case xadd && len(opt) == 1 && opt[0] == '*':
		a.auto = true
		return i, "", true
	case more > 0 && (eqFold(opt, "maxlen") || eqFold(opt, "minid")):
		i, msg = a.parseStrategy(x, i)
	case more > 0 && eqFold(opt, "limit"):
		i, msg = a.parseLimit(x, i)
	case xadd && eqFold(opt, "nomkstream"):
		a.noMkStream = true
	case !a.refGiven && isRefPolicyWord(opt):
		a.refGiven, a.trim.Refs = true, refPolicy(opt) // one policy at most
	case xadd && more > 0 && eqFold(opt, "idmpauto"):
		i, msg = a.parseIDMP(x, i, true)
	case xadd && more > 1 && eqFold(opt, "idmp"):
		i, msg = a.parseIDMP(x, i, false)
	case xadd && more > 0 && (eqFold(opt, "delay") || eqFold(opt, "at")):
		i, msg = a.parseDelay(x, i)
	case xadd:
		return i, a.parseAddID(opt), true
	default:
		msg = resp.ErrSyntax
	}
	return i, msg, false
}

// parseStrategy parses MAXLEN|MINID [=|~] threshold at argv[i].
func (a *addTrimArgs) parseStrategy(x *Ctx, i int) (int, string) {
	if a.trim.Strategy != stream.TrimNone {
		return i, errTrimBoth
	}
	maxlen := eqFold(x.argv[i], "maxlen")
	a.trim.Approx = false
	if more := len(x.argv) - 1 - i; more >= 2 {
		if next := x.argv[i+1]; len(next) == 1 && (next[0] == '~' || next[0] == '=') {
			a.trim.Approx = next[0] == '~'
			a.opAt = i + 1
			i++
		}
	}
	i++
	a.trimAt = i
	if !maxlen {
		id, err := stream.ParseStrictID(x.argv[i], 0)
		if err != nil {
			return i, errStreamID
		}
		a.trim.Strategy, a.trim.MinID = stream.TrimMinID, id
		return i, ""
	}
	n, ok := resp.ParseInt(x.argv[i])
	switch {
	case !ok:
		return i, resp.ErrNotInteger
	case n < 0:
		return i, errTrimMaxLen
	}
	a.trim.Strategy, a.trim.MaxLen = stream.TrimMaxLen, uint64(n)
	return i, ""
}

// parseLimit parses LIMIT count at argv[i].
func (a *addTrimArgs) parseLimit(x *Ctx, i int) (int, string) {
	n, ok := resp.ParseInt(x.argv[i+1])
	switch {
	case !ok:
		return i, resp.ErrNotInteger
	case n < 0:
		return i, errTrimLimit
	}
	a.trim.Limit, a.limitGiven = n, true
	a.limitAts = append(a.limitAts, i)
	return i + 1, ""
}

// parseIDMP parses IDMPAUTO pid or IDMP pid iid at argv[i].
func (a *addTrimArgs) parseIDMP(x *Ctx, i int, auto bool) (int, string) {
	if a.pid != nil {
		return i, errIDMPTwice
	}
	pid := x.argv[i+1]
	if len(pid) == 0 {
		if auto {
			return i, errIDMPAutoEmptyPID
		}
		return i, errIDMPEmptyPID
	}
	a.pid = pid
	if auto {
		return i + 1, ""
	}
	if len(x.argv[i+2]) == 0 {
		return i, errIDMPEmptyIID
	}
	a.iid = x.argv[i+2]
	return i + 2, ""
}

// parseAddID parses XADD's explicit ID, which IDMP does not allow.
func (a *addTrimArgs) parseAddID(arg []byte) string {
	id, seqGiven, err := stream.ParseAddID(arg)
	if err != nil {
		return errStreamID
	}
	if a.pid != nil {
		return errIDMPExplicitID
	}
	if a.delayGiven {
		return errDelayExplicitID
	}
	a.id, a.seqGiven = id, seqGiven
	return ""
}

// finishTrim checks how the trim options combine and sets the default
// LIMIT of an approximate trim: a hundred nodes' worth of entries.
func (a *addTrimArgs) finishTrim(x *Ctx, xadd bool) string {
	switch {
	case a.trim.Limit != 0 && a.trim.Strategy == stream.TrimNone:
		return errTrimLimitAlone
	case !xadd && a.trim.Strategy == stream.TrimNone:
		return errTrimNoStrategy
	case a.limitGiven && !a.trim.Approx:
		return errTrimLimitExact
	case a.limitGiven:
		return ""
	case a.trim.Approx:
		limit := approxTrimNodesLimit * int64(x.s.cfg.StreamNodeMaxEntries)
		if limit <= 0 {
			limit = 10000
		}
		a.trim.Limit = min(limit, approxTrimMaxLimit)
	default:
		a.trim.Limit = 0
	}
	return ""
}

// isLimitAt reports whether argv[i] is a LIMIT keyword of the trim.
func (a *addTrimArgs) isLimitAt(i int) bool { return slices.Contains(a.limitAts, i) }
