package checker

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// The command record (history.OpCommand): every node's commands on the
// run's keys, in the order the node ran them, each with the client whose
// named connection ran it (MONITOR). Where it is complete, the unlock check
// reads who changed a key from it instead of matching keyspace
// notifications to calls by time: replaying a node's commands gives each
// key's owner (the client whose write made it) and expiry (on the server's
// own clock), so a DEL, an overwrite or an extension by another client
// while the key was alive is exact. MONITOR shows no replies: a SET NX's
// outcome is the replay's (the key absent, or expired by its TTL), and
// where the replay cannot tell (a command within cmdExpiryMargin of the
// key's expiry) the key's state is unknown until its next write or delete,
// and nothing is blamed on it meanwhile.
//
// Where the record is incomplete (a node's MONITOR connection broke: a node
// killed or restarted) the key states of that node become unknown, and the
// keyspace observer's findings stand for that node from the gap until
// cmdFallbackAfter past the record's resumption.

// Ownership sources (Result.OwnershipSource).
const (
	SourceCommandRecord = "command-record"
	SourceObserver      = "keyspace-observer"
)

// cmdExpiryMargin: a command this close to a key's expiry may have found it
// present or gone (Redis compares milliseconds, and a script's commands all
// see its start time).
const cmdExpiryMargin = int64(2e6)

// cmdGapNotice: how late a record's break may be stamped after the node
// went (the record's reader notices the closed connection when it is next
// scheduled; on a loaded machine, tens of milliseconds).
const cmdGapNotice = int64(100e6)

// cmdFallbackAfter: how long after a gap's end the observer still speaks for
// its node (key states forgotten at the gap come back with their keys' next
// write).
func (m *model) cmdFallbackAfter() int64 { return max(2*m.ttl, 1e9) }

// What a recorded command did to a key.
const (
	cmdSet     uint8 = iota // SET family: the value is the owner's token
	cmdDel                  // DEL, UNLINK, GETDEL
	cmdExpire               // PEXPIRE family: the TTL changes
	cmdHash                 // HSET, HINCRBY, ...: a hash lock's write
	cmdHDel                 // HDEL: may remove the key
	cmdRestore              // RESTORE, RESTORE-ASKING: a migrated key arrives, its owner not named
)

// cmdEvent is one key change of a recorded command. It has two times. t
// is the server's stamp (on the run clock): the key's expiry on that node
// is counted on it, as the server counts it (after the node's clock jumps
// back, a key really lives longer). h is the harness's time of the command
// (nodeClock.harness): it merges the nodes' records, and is what every
// comparison with the clients' events, the windows and the faults reads.
// A node's own commands keep the record's order on both.
type cmdEvent struct {
	t, h   int64
	node   int16
	client int32
	op     uint8
	nx, xx bool
	keep   bool  // KEEPTTL
	ttl    int64 // ns relative to t; 0 none
	abs    int64 // absolute expiry (PXAT, EXAT, PEXPIREAT) on the run clock; 0 none
	tok    string
	script bool // ran inside a script
	name   string
}

// sharedProcess is the client of a command sent on the connection of a
// driver process several clients share (history.SharedProcessConn): like
// -1, no client's, but a write there is tied to its token's acquirer
// (cmdStep) and the unlock check counts its deletes apart.
const sharedProcess = -2

// keyState is a key on one node as the replay has it.
type keyState struct {
	present, unknown bool
	owner            int32 // client whose write made it (-1: the harness or unknown)
	setT             int64 // when that write ran (harness time)
	exp              int64 // expiry on the node's own clock (server time; 0: none)
	lastT            int64 // the replay's last step on it (harness time)
}

// cmdFree is a client's command that deleted a key present on a master
// (the reentrancy check looks for one in a release that left depth > 0);
// t is harness time.
type cmdFree struct {
	t      int64
	node   int16
	client int32
	name   string
	script bool
}

// cmdGap is a stretch of a node's record that is missing.
type cmdGap struct {
	node     int16
	from, to int64 // to: math.MaxInt64 until the record resumed
	why      string
}

// addCommand reads one OpCommand event.
func (m *model) addCommand(e *history.Event) {
	if e.Detail == history.CmdUnavailable {
		m.cmdOn, m.cmdMode, m.cmdWhy = false, "unavailable", e.Err
		return
	}
	if e.Detail == history.CmdClock {
		m.addClock(e)
		return
	}
	if e.Detail == history.CmdGap || e.Detail == history.CmdResumed {
		n := m.node(e.Node)
		if e.Detail == history.CmdGap {
			m.cmdGaps = append(m.cmdGaps, cmdGap{node: n, from: e.T, to: math.MaxInt64, why: e.Err})
			return
		}
		for i := len(m.cmdGaps) - 1; i >= 0; i-- {
			if g := &m.cmdGaps[i]; g.node == n && g.to == math.MaxInt64 {
				g.to = e.T
				break
			}
		}
		return
	}
	if e.Cmd == nil || len(e.Cmd.Args) == 0 {
		return
	}
	node := m.node(e.Node)
	client := int32(e.Client)
	if client < 0 && history.SharedProcessConn(e.Cmd.Name) {
		client = sharedProcess
	}
	m.cmdSeen = true
	h := m.clockOf(node).harness(e.T)
	if h < m.cmdJudged {
		m.setInexact(fmt.Sprintf("a command on %s at %s was read after the record was replayed past it", e.Node, sec(h)))
	}
	if isScript(e.Cmd.Args[0]) {
		for _, in := range e.Cmd.Inner {
			m.addCmdArgs(in, e.T, h, node, client, true)
		}
		return
	}
	m.addCmdArgs(e.Cmd.Args, e.T, h, node, client, false)
}

func isScript(name string) bool {
	switch strings.ToUpper(name) {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		return true
	}
	return false
}

// shortKey maps a server key to the history's name for it (as
// keyspace.Prefix.Short does), ok false for a key not under the run's
// prefix. A library's own name around a lock key keeps the key in
// brackets without the prefix ("<p>rueidislock:0:<p>{k0}" and
// "lock.<p>{k0}" are "rueidislock:0:{k0}" and "lock.{k0}"): the key
// mapping (keymap.go) reads them as the lock key's.
func (m *model) shortKey(key string) (string, bool) {
	if m.prefix == "" {
		return key, true
	}
	rest, ok := strings.CutPrefix(key, m.prefix)
	if !ok {
		if !strings.Contains(key, m.prefix+"{") {
			return "", false
		}
		rest = key
	}
	if strings.HasPrefix(rest, "{") && strings.IndexByte(rest, '}') == len(rest)-1 {
		return rest[1 : len(rest)-1], true
	}
	return strings.ReplaceAll(rest, m.prefix+"{", "{"), true
}

// addCmdArgs turns one command into the key changes it makes.
func (m *model) addCmdArgs(args []string, t, h int64, node int16, client int32, script bool) {
	if len(args) < 2 {
		return
	}
	name := cmdName(args[0])
	ev := cmdEvent{t: t, h: h, node: node, client: client, script: script, name: name}
	switch name {
	case "SET", "SETNX", "SETEX", "PSETEX":
		if len(args) < 3 {
			return
		}
		m.setArgs(&ev, args)
		m.addCmd(args[1], ev)
	case "MSETNX", "MSET":
		// MSETNX k v [k v ...]: every key set when none exists
		// (redislock's obtain script, then a PEXPIRE). Replayed key by
		// key, each a SET NX of its value (MSET: a SET): exact for one
		// key, which is what a lock sends.
		ev.op, ev.nx = cmdSet, name == "MSETNX"
		for i := 1; i+1 < len(args); i += 2 {
			ev.tok = args[i+1]
			m.addCmd(args[i], ev)
		}
	case "DEL", "UNLINK":
		ev.op = cmdDel
		for _, k := range args[1:] {
			m.addCmd(k, ev)
		}
	case "GETDEL":
		ev.op = cmdDel
		m.addCmd(args[1], ev)
	case "PEXPIRE", "EXPIRE", "PEXPIREAT", "EXPIREAT":
		if len(args) < 3 {
			return
		}
		ev.op = cmdExpire
		m.setExpiry(&ev, name, argNum(args[2]))
		m.addCmd(args[1], ev)
	case "HSET", "HSETNX", "HINCRBY", "HINCRBYFLOAT", "HMSET":
		ev.op = cmdHash
		if len(args) >= 3 {
			ev.tok = args[2]
		}
		m.addCmd(args[1], ev)
	case "HDEL":
		ev.op = cmdHDel
		m.addCmd(args[1], ev)
	case "RESTORE", "RESTORE-ASKING":
		if len(args) < 3 {
			return
		}
		m.restoreArgs(&ev, args)
		m.addCmd(args[1], ev)
	case "MIGRATE":
		ev.op = cmdDel
		for _, k := range migratedKeys(args) {
			m.addCmd(k, ev)
		}
	case "INCR", "INCRBY":
		m.noteIncr(args[1], ev)
	}
}

// addCmd appends ev to the replay of key (a full key name: nothing when it
// is not the run's).
func (m *model) addCmd(key string, ev cmdEvent) {
	short, ok := m.shortKey(key)
	if !ok {
		return
	}
	k := m.keyOf(&m.observer, short)
	m.kd[k].cmds = append(m.kd[k].cmds, ev)
	m.kd[k].seen = true
}

// argNum is a command's integer argument (0 when it is not one).
func argNum(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

// setArgs reads a SET, SETNX, SETEX or PSETEX (args has key and value).
func (m *model) setArgs(ev *cmdEvent, args []string) {
	name := ev.name
	ev.op, ev.tok = cmdSet, args[2]
	switch name {
	case "SETNX":
		ev.nx = true
	case "SETEX":
		ev.ttl, ev.tok = argNum(args[2])*1e9, args[len(args)-1]
	case "PSETEX":
		ev.ttl, ev.tok = argNum(args[2])*1e6, args[len(args)-1]
	}
	for i := 3; name == "SET" && i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "NX":
			ev.nx = true
		case "XX":
			ev.xx = true
		case "KEEPTTL":
			ev.keep = true
		case "PX", "EX", "PXAT", "EXAT":
			if i+1 < len(args) {
				m.setExpiry(ev, strings.ToUpper(args[i]), argNum(args[i+1]))
				i++
			}
		}
	}
}

// restoreArgs reads a slot migration's copy of a key (RESTORE key ttl
// payload [REPLACE] [ABSTTL] ...): the key is there, with whatever owner it
// had on the source (the payload is a dump, not a token). Replayed as an
// absent key, a SET NX that found it would read as won, and the real
// owner's release as a foreign DEL (cluster-slot-migration/redis-py seed 1).
func (m *model) restoreArgs(ev *cmdEvent, args []string) {
	ev.op = cmdRestore
	abs := false
	for _, a := range args[min(4, len(args)):] {
		abs = abs || strings.EqualFold(a, "ABSTTL")
	}
	switch v := argNum(args[2]); {
	case v > 0 && abs:
		ev.abs = m.unixToRun(v * 1e6)
	case v > 0:
		ev.ttl = v * 1e6
	}
}

// migratedKeys are the keys a MIGRATE host port key|"" db timeout [COPY]
// [REPLACE] [AUTH ...] [KEYS key...] takes off its source (the harness's
// call, not a client's): none with COPY.
func migratedKeys(args []string) []string {
	if len(args) < 6 {
		return nil
	}
	keys := []string{args[3]}
	for i := 6; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "COPY":
			return nil
		case "AUTH":
			i++
		case "AUTH2":
			i += 2
		case "KEYS":
			keys = args[i+1:]
			i = len(args)
		}
	}
	var out []string // not in place: keys shares the event's args
	for _, k := range keys {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// cmdNames are the commands the replay reads, upper-case.
var cmdNames = []string{"SET", "SETNX", "SETEX", "PSETEX", "MSETNX", "MSET", "DEL", "UNLINK", "GETDEL", "PEXPIRE", "EXPIRE", "PEXPIREAT", "EXPIREAT",
	"HSET", "HSETNX", "HINCRBY", "HINCRBYFLOAT", "HMSET", "HDEL", "RESTORE", "RESTORE-ASKING", "MIGRATE"}

// cmdName is a command's name in upper case: one of cmdNames' strings
// when it is one, so that the events kept (a window's worth) do not each
// carry a copy.
func cmdName(s string) string {
	for _, n := range cmdNames {
		if len(n) == len(s) && strings.EqualFold(n, s) {
			return n
		}
	}
	return strings.ToUpper(s)
}

// setExpiry sets ev's expiry from a time argument v in unit (SET's option
// or the EXPIRE command's name): milliseconds or seconds, relative to the
// command or at a unix time.
func (m *model) setExpiry(ev *cmdEvent, unit string, v int64) {
	switch unit {
	case "PX", "PEXPIRE":
		ev.ttl = v * 1e6
	case "EX", "EXPIRE":
		ev.ttl = v * 1e9
	case "PXAT", "PEXPIREAT":
		ev.abs = m.unixToRun(v * 1e6)
	case "EXAT", "EXPIREAT":
		ev.abs = m.unixToRun(v * 1e9)
	}
}

// A node's clock against the harness's. The record marks where the harness
// changed a node's clock (history.CmdClock, cluster/monitor.go placeClock
// says how it finds the place in the node's order): from a marker on, the
// node's clock at harness time h reads h + off + (h - t)×(rate - 1). A
// command's harness time is its stamp read back through the marker before
// it; its stamp stays its server time. The node's own order is never
// changed: a command's harness time is at least its predecessor's on that
// node (a history without markers, written before them, whose node jumped
// back, gets its commands after the jump at the time of the last one
// before, until the stamps catch up: in order, if late).

// clockSeg is one marked setting of a node's clock.
type clockSeg struct {
	t, off int64
	rate   float64
}

// nodeClock is a node's clock settings so far, and the harness time of its
// last command.
type nodeClock struct {
	segs  []clockSeg
	lastH int64
}

// clockOf is node's clock.
func (m *model) clockOf(node int16) *nodeClock {
	for int(node) >= len(m.cmdClocks) {
		m.cmdClocks = append(m.cmdClocks, &nodeClock{lastH: math.MinInt64})
	}
	return m.cmdClocks[node]
}

// addClock reads a history.CmdClock marker.
func (m *model) addClock(e *history.Event) {
	rate := 1.0
	if e.Depth > 0 {
		rate = float64(e.Depth) / history.ClockRateUnit
	}
	nc := m.clockOf(m.node(e.Node))
	nc.segs = append(nc.segs, clockSeg{t: e.T, off: e.Value, rate: rate})
}

// harness is the harness time of the node's next command, stamped s by the
// node: under the latest marker, and never before the node's previous
// command.
func (nc *nodeClock) harness(s int64) int64 {
	h := s
	if n := len(nc.segs); n > 0 {
		g := nc.segs[n-1]
		if g.rate == 1 {
			h = s - g.off
		} else {
			h = int64((float64(s-g.off) + float64(g.t)*(g.rate-1)) / g.rate)
		}
	}
	h = max(h, nc.lastH)
	nc.lastH = h
	return h
}

// server is what the node's clock read at harness time h.
func (nc *nodeClock) server(h int64) int64 {
	for i := len(nc.segs) - 1; i >= 0; i-- {
		if g := nc.segs[i]; g.t <= h {
			return h + g.off + int64(float64(h-g.t)*(g.rate-1))
		}
	}
	return h
}

// unixToRun maps a unix time (ns) to the run clock.
func (m *model) unixToRun(ns int64) int64 {
	start, _ := metaInt(m.meta[history.MetaStartNS])
	return ns - start
}

// inGap reports whether node's record was missing at t (or had just come
// back: its key states were forgotten).
func (m *model) inGap(node int16, t int64) bool {
	for _, g := range m.cmdGaps {
		if g.node == node && t >= g.from && (g.to == math.MaxInt64 || t <= g.to+m.cmdFallbackAfter()) {
			return true
		}
	}
	return false
}

// gapSince reports whether node's record broke in (a, b].
func (m *model) gapSince(node int16, a, b int64) bool {
	for _, g := range m.cmdGaps {
		if g.node == node && g.from > a && g.from <= b {
			return true
		}
	}
	return false
}

// useRecord reports whether the unlock check reads the command record.
func (m *model) useRecord() bool { return m.cmdOn && !m.noRecord }

// attributeCommands replays every key's recorded commands up to (not
// including) upTo, carrying on where the previous call stopped, and records
// each change another client made to a key a client held (kd.cmdDels).
func (m *model) attributeCommands(upTo int64) {
	if !m.useRecord() {
		return
	}
	ps := m.probes()
	m.cmdJudged = max(m.cmdJudged, upTo)
	for k, kd := range m.kd {
		// In harness time across nodes: a probe then sees every node's
		// commands before it. Each node's stream is in its own order
		// already, and its harness times never go back
		// (nodeClock.harness), so the stable sort keeps that order (a
		// server time would not: after a jump back a node's later
		// commands would sort before its earlier ones, issue 33). Only
		// what is not replayed yet moves.
		rest := kd.cmds[kd.cmdWalked:]
		sort.SliceStable(rest, func(i, j int) bool { return rest[i].h < rest[j].h })
		if kd.state == nil {
			kd.state = map[int16]*keyState{}
		}
		for ; kd.cmdWalked < len(kd.cmds) && kd.cmds[kd.cmdWalked].h < upTo; kd.cmdWalked++ {
			c := kd.cmds[kd.cmdWalked]
			m.takeSnaps(kd, ps, c.h-1)
			s := m.cmdStep(kd, c)
			before := *s.st
			m.replay(int32(k), kd, &s)
			m.noteOwn(kd, &s, before)
			m.noteTake(kd, &s, before)
		}
		m.takeSnaps(kd, ps, upTo-1)
	}
}

// cmdStep is one recorded command as the replay sees it: the key's state
// on its node before it, and what that state says of it.
type cmdStep struct {
	c  cmdEvent
	st *keyState
	// maybe: the key may have expired just before c (within
	// cmdExpiryMargin); foreign: c changed a key another client held on a
	// master.
	maybe, foreign bool
	// owner: the key's owner before c; writer: the client c writes for
	// (a replica's copy names its master's writer by the token).
	owner, writer int32
}

// exp is the key's expiry after c (server time), old when c sets none.
func (s *cmdStep) exp(old int64) int64 {
	switch {
	case s.c.abs != 0:
		return s.c.abs
	case s.c.ttl != 0:
		return s.c.t + s.c.ttl
	}
	return old
}

// cmdStep reads the state of c's key on c's node before c (forgetting it
// where the record may miss commands, expiring it where its TTL ran out).
func (m *model) cmdStep(kd *keyData, c cmdEvent) cmdStep {
	st := kd.state[c.node]
	if st == nil {
		st = &keyState{owner: -1}
		kd.state[c.node] = st
	}
	if m.gapSince(c.node, st.lastT, c.h) {
		// Commands may be missing (a SET among them, a restarted node's
		// first owner): unknown, not absent, until a write or a delete
		// says (restart-under-holder/watch-unlock seed 1, docker, in a CI
		// rehearsal: a SET NX after the gap taken as won misled the
		// replay for the rest of the run, and it blamed a release 2.5 s
		// later for deleting another's key).
		*st = keyState{present: true, unknown: true, owner: -1}
	}
	st.lastT = c.h
	// Expired before this command, for certain; or maybe: on the node's
	// own clock.
	s := cmdStep{c: c, st: st}
	if st.present && st.exp != 0 {
		switch {
		case c.t > st.exp+cmdExpiryMargin:
			*st = keyState{owner: -1, lastT: c.h}
		case c.t >= st.exp-cmdExpiryMargin:
			s.maybe = true
		}
	}
	s.owner = st.owner
	alive := st.present && !st.unknown && !s.maybe
	s.foreign = alive && s.owner >= 0 && c.client >= 0 && s.owner != c.client && m.masterAt(c.node, c.h)
	s.writer = c.client
	if s.writer == sharedProcess && c.tok != "" && isWrite(c.op) {
		// A write of a driver process that several clients share, which
		// the harness could not tie to one of them: the client whose
		// acquire reported its token wrote it.
		if ta, ok := m.tokAcq[c.tok]; ok && ta.res == history.OK && ta.client >= 0 {
			s.writer = ta.client
		}
	}
	if s.writer < 0 && c.tok != "" {
		// A replica's copy of a master's write: its token names the
		// writer.
		if w, ok := m.tokOwner[c.tok]; ok {
			s.writer = w.client
		}
	} else if s.writer >= 0 && (c.op == cmdSet || c.op == cmdHash) && c.tok != "" {
		if m.tokOwner == nil {
			m.tokOwner = map[string]tokWriter{}
		}
		m.tokOwner[c.tok] = tokWriter{client: s.writer, t: c.h}
		if m.tokAcq[c.tok].res == history.OK {
			m.tokWritten = true
		}
	}
	return s
}

// replay applies one recorded command to its key's state on its node.
func (m *model) replay(k int32, kd *keyData, s *cmdStep) {
	c, st := s.c, s.st
	switch c.op {
	case cmdSet:
		m.replaySet(k, kd, s)
	case cmdDel:
		if s.foreign {
			m.cmdFound(k, kd, c, st)
		}
		switch {
		case c.client == sharedProcess && st.present:
			m.sharedDels++
		case c.client >= 0 && st.present:
			m.clientDels++
		}
		if st.present && c.client >= 0 && m.masterAt(c.node, c.h) {
			kd.cmdFrees = append(kd.cmdFrees, cmdFree{t: c.h, node: c.node, client: c.client, name: c.name, script: c.script})
		}
		*st = keyState{owner: -1, lastT: c.h}
	case cmdExpire:
		if !st.present {
			return
		}
		if s.foreign {
			m.cmdFound(k, kd, c, st)
		}
		if s.maybe {
			// Whether it found the key is unknown.
			st.unknown = true
		}
		st.exp = s.exp(st.exp)
	case cmdHash:
		switch {
		case !st.present:
			*st = keyState{present: true, owner: s.writer, setT: c.h, lastT: c.h}
		case (st.unknown || s.maybe) && s.owner != s.writer && m.tokAcq[c.tok].res == history.OK:
			// A hash lock's script wrote another owner's field: the
			// key it checked was gone (expired at the edge of the
			// replay's certainty).
			*st = keyState{present: true, owner: s.writer, setT: c.h, lastT: c.h}
		case (st.unknown || s.maybe) && s.owner != s.writer:
			st.unknown = true
		}
	case cmdHDel:
		if st.present {
			st.unknown = true
		}
	case cmdRestore:
		// Present, owner unknown until its next write or delete.
		*st = keyState{present: true, unknown: true, owner: -1, setT: c.h, exp: s.exp(0), lastT: c.h}
	}
}

// replaySet applies a SET-family command: a SET NX whose outcome the
// replay cannot tell takes it from the acquire that returned with its
// token.
func (m *model) replaySet(k int32, kd *keyData, s *cmdStep) {
	c, st := s.c, s.st
	won := m.tokAcq[c.tok].res
	if m.topo == "independent" {
		// A Redlock acquire succeeds on a majority: whether it
		// returned with this token or not says nothing of this node
		// (an attempt short of the quorum may have taken it, and
		// undoes it: slow-acquire/redlock-no-validity seed 2).
		won = history.Unknown
	}
	if won == history.OK && c.nx && retriedWith(kd.cmds[kd.cmdWalked+1:], c, 2*m.ttl) {
		// The same client tried the same token again: some
		// libraries keep one value across an acquire's retries
		// (redsync), so the acquire's success does not say this
		// attempt was the one that took the key.
		won = history.Unknown
	}
	if won == history.OK && c.nx && m.gapSince(c.node, c.h, m.tokAcq[c.tok].t+cmdGapNotice) {
		// The node's record broke before the acquire returned (or just
		// after: the break is stamped when the record notices it): the
		// attempt that won may be among the missing commands, and a
		// library that keeps one token across its retries (redislock)
		// leaves no later attempt here to say so (restart-under-holder/
		// redislock seed 2 in CI: a refused retry taken as the win blamed
		// the real winner's own PEXPIRE).
		won = history.Unknown
	}
	switch {
	case c.nx && (st.unknown || s.maybe) && won == history.OK:
		// The replay cannot tell, but the client's acquire
		// returned with this token: it took the key.
		st.present, st.unknown, st.owner, st.exp, st.setT = true, false, s.writer, s.exp(0), c.h
	case c.nx && (st.unknown || s.maybe) && won == history.Unknown:
		// It may or may not have taken the key.
		st.unknown, st.exp = true, max(st.exp, s.exp(0))
	case c.nx && (st.unknown || s.maybe):
		// No acquire returned with this token: an attempt that
		// failed (each attempt has its own token).
	case c.nx && st.present:
	case c.xx && !st.present:
	default:
		if s.foreign {
			m.cmdFound(k, kd, c, st)
		}
		old := st.exp
		if !c.keep {
			old = 0
		}
		if !st.present || st.unknown || s.maybe || s.owner != s.writer {
			st.setT = c.h
		}
		st.present, st.unknown, st.owner, st.exp = true, false, s.writer, s.exp(old)
	}
}

// retriedWith reports whether later (commands after c, in harness time)
// holds a SET NX by c's client with c's token within horizon of c.
func retriedWith(later []cmdEvent, c cmdEvent, horizon int64) bool {
	for _, d := range later {
		if d.h > c.h+horizon {
			return false
		}
		if d.op == cmdSet && d.nx && d.client == c.client && d.tok == c.tok {
			return true
		}
	}
	return false
}

// cmdFound records a change by c of a key another client's write made
// (state st): the hold of that client that wrote it is the victim.
func (m *model) cmdFound(k int32, kd *keyData, c cmdEvent, st *keyState) {
	victim := m.holdOf(k, st.owner, st.setT)
	if victim < 0 {
		return
	}
	h := &m.holds[victim]
	if c.h > h.heldTo+m.lag {
		// The owner had let go already (it released or learned its loss):
		// no holder was harmed.
		return
	}
	what := c.name
	if c.script {
		what = "script's " + c.name
	}
	d := badDel{t: c.h, node: c.node, victim: victim, culprit: c.client, cmd: what}
	switch c.op {
	case cmdDel:
		d.release = true
		// seen false: the record is exact, not a notification that may be
		// of the previous owner's key.
		m.noteLoss(victim, c.h, fmt.Sprintf("deleted by client %d", c.client), false)
	case cmdSet:
		d.set = true
		m.noteLoss(victim, c.h, fmt.Sprintf("overwritten by client %d", c.client), false)
	}
	kd.cmdDels = append(kd.cmdDels, d)
}

// holdOf returns client's hold of key k whose acquire wrote the key at
// setT (harness time): the one whose acquire call spans setT, allowing for
// the observer's lag between the two clocks' readings, or -1.
func (m *model) holdOf(k, client int32, setT int64) int32 {
	kd := m.kd[k]
	m.index(kd)
	hs := kd.holds
	slack := m.lag
	// Holds are sorted by their ack; the write comes before it, by at
	// most matchWindow (a Redlock acquire acks after every node).
	i := sort.Search(len(hs), func(i int) bool { return m.holds[hs[i]].start > setT+matchWindow }) - 1
	for n := 0; i >= 0 && n < 4096; i, n = i-1, n+1 {
		h := &m.holds[hs[i]]
		if h.client != client {
			continue
		}
		if h.acqT-slack <= setT && setT <= h.start+slack {
			return hs[i]
		}
		if h.start < setT-slack {
			break
		}
	}
	if kd.cutHold >= setT-matchWindow {
		m.setInexact(fmt.Sprintf("the hold that wrote %s at %s had been pruned", m.keys[k], sec(setT)))
	}
	return -1
}

// ownershipSource says what the unlock check read, for the results.
func (m *model) ownershipSource() string {
	if !m.useRecord() {
		why := "no command record in this history"
		switch {
		case m.noRecord:
			why = "the command record was set aside (Options.NoCommandRecord)"
		case m.cmdWhy != "":
			why = m.cmdWhy
		case m.cmdMode != "" && m.cmdMode != "monitor":
			why = "command record " + m.cmdMode
		}
		return SourceObserver + " (" + why + ")"
	}
	if len(m.cmdGaps) == 0 {
		return SourceCommandRecord
	}
	var parts []string
	for _, g := range m.cmdGaps {
		to := "the end"
		if g.to != math.MaxInt64 {
			to = sec(g.to + m.cmdFallbackAfter())
		}
		parts = append(parts, fmt.Sprintf("%s from %s to %s (%s)", m.nodes[g.node], sec(g.from), to, g.why))
	}
	return SourceCommandRecord + "; " + SourceObserver + " where the record has gaps: " + strings.Join(parts, "; ")
}

// Loss detection from the record. A failover's new master holds what
// replication had brought it when it was promoted: the replay of its own
// record (a replica's record shows its master's writes as they arrived)
// says whether a holder's key was there. On independent masters a node
// restarted empty drops its keys: the replay of the others says on how many
// the holder's key still was, and below a majority the lock was lost.

// snapKey is where a probe looked: a fault and a node.
type snapKey struct {
	fault int
	node  int16
}

// snap is a key's state on a node at a probe's time.
type snap struct {
	present, unknown bool
	owner            int32
}

// probes are the moments the record is looked at for losses: the
// promotion of each failover's new master (sentinel, cluster), each
// empty restart of a node (independent), with the nodes to look at.
func (m *model) probes() []probe {
	var out []probe
	for _, f := range m.faults {
		if !f.applied {
			continue
		}
		switch {
		case (m.topo == "sentinel" || m.topo == "cluster") && (f.kind == history.FaultFailover || f.kind == history.FaultIsolateNode) && f.v.NewMaster != "":
			// The promotion: Sentinel kills the new master's normal
			// clients (its MONITOR too) in the transaction that promotes
			// it, so a gap in the new master's record during the fault
			// marks the moment; else the fault's end, when the harness
			// saw it. Replication stops there: what the node holds then
			// is what it keeps.
			n := m.node(f.v.NewMaster)
			t := f.end
			for _, g := range m.cmdGaps {
				if g.node == n && g.from >= f.t && g.from < t {
					t = g.from
				}
			}
			out = append(out, probe{f: f, t: t, nodes: []int16{n}})
		case m.topo == "independent" && (f.kind == history.FaultRestartNode || f.kind == history.FaultKillNode) && f.v.Mode != "aof":
			p := probe{f: f, t: f.t}
			for i := range m.nodes {
				p.nodes = append(p.nodes, int16(i))
			}
			out = append(out, p)
		}
	}
	return out
}

type probe struct {
	f     *fault
	t     int64
	nodes []int16
}

// takeSnaps records key kd's state on each probe's nodes for the probes
// at or before t not yet taken.
func (m *model) takeSnaps(kd *keyData, ps []probe, t int64) {
	for _, p := range ps {
		if p.t > t {
			continue
		}
		for _, n := range p.nodes {
			sk := snapKey{p.f.id, n}
			if _, ok := kd.snaps[sk]; ok {
				continue
			}
			if kd.snaps == nil {
				kd.snaps = map[snapKey]snap{}
			}
			s := snap{owner: -1}
			if st := kd.state[n]; st != nil && st.present {
				s.present, s.unknown, s.owner = true, st.unknown, st.owner
				// The expiry is on the node's clock: the probe's time
				// read on it.
				at := m.clockOf(n).server(p.t)
				switch {
				case st.exp != 0 && at > st.exp+cmdExpiryMargin:
					s.present, s.unknown = false, false
				case st.exp != 0 && at >= st.exp-cmdExpiryMargin:
					s.unknown = true
				}
			}
			// A gap in the node's record before the probe: a write may be
			// missing (the restarted node itself is not counted).
			if m.gapSince(n, math.MinInt64, p.t-1) && m.nodes[n] != p.f.node {
				s.unknown = true
			}
			kd.snaps[sk] = s
		}
	}
}

// recordLoss notes hold hi's loss where the record shows its key absent
// from a promoted master, or from a majority of independent masters after
// a restart.
func (m *model) recordLoss(hi int32) {
	h := &m.holds[hi]
	kd := m.kd[h.key]
	for _, p := range m.probes() {
		if h.empty || !(h.start < p.t && p.t < h.belief) {
			continue
		}
		held, known := 0, true
		for _, n := range p.nodes {
			s, ok := kd.snaps[snapKey{p.f.id, n}]
			if !ok || s.unknown {
				known = false
				break
			}
			if s.present && s.owner == h.client && !(m.topo == "independent" && m.nodes[n] == p.f.node) {
				held++
			}
		}
		if !known {
			continue
		}
		switch m.topo {
		case "independent":
			if q := len(m.nodes)/2 + 1; held < q {
				m.noteLossAt(hi, p.t, fmt.Sprintf("held on %d of %d nodes after %s restarted empty, below the majority (command record)", held, len(m.nodes), targetName(p.f)), false)
			}
		default:
			if held == 0 {
				m.noteLossAt(hi, p.t, fmt.Sprintf("absent on the new master %s after the failover (command record)", m.nodes[p.nodes[0]]), false)
			}
		}
	}
}

// ownPartialRelease returns client's own release of k in flight at x that
// left depth > 0, or -1: the release whose recorded DEL freed the key above
// depth 0. Refused releases changed nothing. The release whose window holds
// x ran the command (the record's time is the server's, on the client's
// timeline); one within lag of x only is taken when no release that left
// depth 0 is also within lag: a client's next release can start within lag
// of the command of its last one (hold 5 ms, think 2 ms: reentrant-expiry,
// seed 1 in a CI rehearsal, where the next cycle's depth-1 release started
// 4.98 ms after the final release's DEL and was blamed for it).
func ownPartialRelease(kd *keyData, client int32, x, lag int64) int {
	near, ambiguous := -1, false
	i := sort.Search(len(kd.releases), func(i int) bool { return kd.releases[i].t > x+lag }) - 1
	for ; i >= 0 && kd.relMax[i]+lag >= x; i-- {
		r := &kd.releases[i]
		if r.client != client || r.refused || x > r.end+lag || x < r.t-lag {
			continue
		}
		switch {
		case r.t <= x && x <= r.end && r.remaining <= 0:
			return -1
		case r.t <= x && x <= r.end:
			return i
		case r.remaining <= 0:
			ambiguous = true
		case near < 0:
			near = i
		}
	}
	if ambiguous {
		return -1
	}
	return near
}
