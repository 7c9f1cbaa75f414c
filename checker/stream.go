package checker

import (
	"fmt"
	"math"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// # Streaming
//
// A Stream checks a history as it is read, in bounded memory. Every check
// judges what is anchored in a window of time [from, to) — a hold at its
// acquire, a write at its application, a server change at its notification,
// a gap in availability at the ack that ends it — once every event that
// could bear on it has been read. After each window, pruning drops what no
// later window can need: holds, writes, calls and server events that ended
// more than a margin before the window's end, keeping per key what reaches
// back further (the hold with the latest end, the last applied write, the
// highest fencing token, the owners the server record names, the latest
// unanswered renewal of each client). Memory then depends on concurrency,
// the TTL and the margins, not on the length of the run.
//
// When may `to` advance? Each client records its own steps in program
// order, so no client's later event can start before the end of its last
// one: the window may close up to the earliest of the clients' last
// recorded ends (clients silent for a while aside), less a margin for the
// observer's lag, the TTL and ε, and never past an acquire still held (its
// belief is not final). Events are not re-read, so an event that arrives
// after its time was judged (a fault recorded late, a client back from a
// long silence), or a lookup that reaches past what was dropped, makes the
// streamed result inexact: Inexact says why, and CheckFile then checks the
// file again whole. Results are otherwise identical to checking the whole
// history at once (TestStreamMatchesWhole).

// Stream checks events as they come (see the package comment).
type Stream struct {
	m *model
	c *ctx
	o Options

	events  int
	lastEnd map[int32]int64 // per client (−1: the observer), its last recorded time
	maxSeen int64
	judged  int64 // windows before this are judged (math.MinInt64: none yet)
	since   int   // events since the last window
	// lastWindow: stream time of the last window (Options.every)
	lastWindow int64
	kept       int // table entries after the last pruning
	ready      bool

	// Stats of the pruning, for benchmarks and the live line.
	Windows, PeakKept int
}

// minBatch: windows are judged at most every minBatch events (and never
// more often than the tables kept, so judging stays linear).
const minBatch = 1 << 19

// idle is how long a silent client (crashed, done, or paused that long)
// stops holding the window back: ten TTLs and ε, at least 2 s. Should it
// record again, its events are late and the result inexact.
func (s *Stream) idle() int64 {
	return max(2e9, 10*(s.m.ttl+s.o.Epsilon))
}

// NewStream starts a streaming check.
func NewStream(o Options) *Stream {
	return &Stream{m: newModel(), o: o, lastEnd: map[int32]int64{}, judged: math.MinInt64}
}

// setup fixes the options' defaults once the run's meta is known.
func (s *Stream) setup() {
	if s.ready {
		return
	}
	s.ready = true
	o, m := &s.o, s.m
	if o.MaxViolations <= 0 {
		o.MaxViolations = 100
	}
	if o.ObserverLag <= 0 {
		o.ObserverLag = 5e6
	}
	if o.Epsilon <= 0 {
		o.Epsilon = max(m.ttl/2, 100e6)
	}
	if m.maxUnc > 0 {
		// Server events come from one worker's observer, client steps
		// from every worker's clock: matching them needs the slack of
		// two clocks' error bounds.
		o.ObserverLag += 2 * m.maxUnc
	}
	s.c = &ctx{o: *o, want: map[string]bool{}}
	s.c.live.firstAfterHeal = map[int]int64{}
	for _, n := range o.Checks {
		s.c.want[n] = true
	}
}

// margin is how far behind the clients' progress a window closes, and how
// long after a window an entry that ended is kept: what a check looks at
// around an anchor — the observer's lag and the matching window
// (attributeDels), the TTL after it (causes), the TTL and ε (liveness) —
// with 100 ms to spare.
func (s *Stream) margin() int64 {
	return 100e6 + 2*s.m.ttl + s.o.Epsilon + 4*s.o.ObserverLag + matchWindow
}

// Add reads one event.
func (s *Stream) Add(e *history.Event) {
	s.events++
	m := s.m
	if e.Op == history.OpRun {
		m.add(e)
		s.awaitClients(e)
		return
	}
	if !s.ready {
		s.setup()
	}
	if e.T < s.judged && (e.Op != history.OpCommand || e.Cmd == nil) {
		// (A command's stamp is its server's clock: addCommand checks
		// its harness time.)
		m.setInexact(fmt.Sprintf("a %s event at %s came after that time was judged", e.Op, sec(e.T)))
	}
	m.add(e)
	t := max(e.T, e.End)
	if e.Op == history.OpCommand && e.Cmd != nil && e.Node != "" {
		// On the harness clock, as the clients' events (a node whose
		// clock jumped ahead must not carry the horizon with it).
		t = m.clockOf(m.node(e.Node)).lastH
	}
	s.maxSeen = max(s.maxSeen, t)
	switch e.Op {
	case history.OpFault, history.OpHeal:
	case history.OpServer, history.OpCommand:
		s.lastEnd[-1] = max(s.lastEnd[-1], t)
	default:
		s.lastEnd[int32(e.Client)] = max(s.lastEnd[int32(e.Client)], t)
	}
	s.since++
	if s.o.whole {
		return
	}
	if s.since >= max(s.batch(), s.kept) || s.o.every > 0 && s.since >= 256 && s.maxSeen-s.lastWindow >= s.o.every {
		s.lastWindow = s.maxSeen
		s.window()
	}
}

// awaitClients makes every client the run's meta names hold the window
// back from the workload's start until it records its first step: a client
// whose first acquire takes seconds (waiting behind a frozen holder, say)
// records nothing until it ends, and a window closed meanwhile would judge
// its span without it (slow-acquire on redlock: client 2's failed acquire
// from 0.006 s was recorded at 2.006 s).
func (s *Stream) awaitClients(e *history.Event) {
	n, ok := metaInt(e.Meta[history.MetaClients])
	for c := int32(0); ok && int64(c) < n; c++ {
		if _, seen := s.lastEnd[c]; !seen {
			s.lastEnd[c] = 0
		}
	}
}

func (s *Stream) batch() int {
	if s.o.batch > 0 {
		return s.o.batch
	}
	return minBatch
}

// horizon is how far the next window may close.
func (s *Stream) horizon() int64 {
	m := s.m
	wm := int64(math.MaxInt64)
	for _, t := range s.lastEnd {
		if t >= s.maxSeen-s.idle() {
			wm = min(wm, t)
		}
	}
	if wm == math.MaxInt64 {
		return math.MinInt64
	}
	to := wm - s.margin()
	// A hold still open has no final belief: nothing from its acquire on
	// is judged (unless its client has gone silent: crashed or done).
	for id, cs := range m.clients {
		if s.lastEnd[id] < s.maxSeen-s.idle() {
			continue
		}
		for _, hi := range cs.open.vs {
			to = min(to, m.holds[hi].acqT)
		}
	}
	// A fault whose heal is due and not yet recorded: its heal changes
	// what its window means (liveness discounts it).
	for _, f := range m.faults {
		if f.applied && !f.healRecorded && f.lasts > 0 && s.maxSeen < f.t+f.lasts+s.idle() {
			to = min(to, f.t)
		}
	}
	return to
}

// window judges everything anchored before the horizon, then prunes.
func (s *Stream) window() {
	s.since = 0
	to := s.horizon()
	if to <= s.judged {
		s.kept = s.size()
		return
	}
	m := s.m
	m.prepare(s.o)
	m.attributeDels(to)
	m.attributeCommands(to)
	m.from, m.to = s.judged, to
	m.judge(s.c)
	s.judged = to
	s.Windows++
	s.prune(to - s.margin())
	s.kept = s.size()
	s.PeakKept = max(s.PeakKept, s.kept)
}

// Result judges what is left and returns the answer.
func (s *Stream) Result() *Result {
	s.setup()
	m := s.m
	m.final = true
	for _, f := range m.faults {
		if f.applied && !f.healRecorded && f.t < s.judged {
			m.setInexact(fmt.Sprintf("fault %d (%s) has no heal in the record (the run was cut short), so earlier windows judged it still in effect", f.id, f.kind))
		}
	}
	m.prepare(s.o)
	if m.observerOK {
		m.attributeDels(math.MaxInt64)
	}
	m.attributeCommands(math.MaxInt64)
	m.from, m.to = s.judged, math.MaxInt64
	m.judge(s.c)
	for i := range m.holds {
		m.summarizeLoss(int32(i), &s.c.loss)
	}
	s.PeakKept = max(s.PeakKept, s.size())
	r := m.result(s.c)
	r.Events = s.events
	return r
}

// Inexact says why the streamed result may differ from checking the whole
// history at once ("" when it cannot).
func (s *Stream) Inexact() string { return s.m.inexact }

// Live is the verdict so far: violations found in the windows judged.
type Live struct {
	Events     int       `json:"events"`
	JudgedToNS int64     `json:"judged_to_ns"`
	Violations int       `json:"violations"`
	Verdict    Verdict   `json:"verdict"`
	Kept       int       `json:"kept"`
	Latest     Violation `json:"latest"`
	// Behind: the live checker could not keep up and stopped.
	Behind bool `json:"behind,omitempty"`
}

// Live reports the verdict of what was judged so far.
func (s *Stream) Live() Live {
	l := Live{Events: s.events, JudgedToNS: max(s.judged, 0), Kept: s.kept, Verdict: Valid}
	if s.c != nil {
		c := s.c
		for _, ck := range checks {
			if ck.count != nil {
				l.Violations += ck.count(c)
			}
		}
		if n := len(c.viols); n > 0 {
			l.Latest = c.viols[n-1]
		}
	}
	if l.Violations > 0 {
		l.Verdict = Invalid
	}
	return l
}

// size counts the table entries kept.
func (s *Stream) size() int {
	m := s.m
	n := len(m.holds)
	for _, kd := range m.kd {
		n += len(kd.cmds) + len(kd.writes) + len(kd.srv) + len(kd.releases) + len(kd.renewals) + len(kd.nested) + len(kd.failed)
	}
	return n
}

// prune drops what no window from now on can need: entries that ended
// before cut, keeping per key what reaches back further (see the comment
// at the top).
func (s *Stream) prune(cut int64) {
	m := s.m
	keep, live := s.pruneKeep(cut)
	renum := s.dropHolds(keep)
	m.renumberTables(renum)
	for _, kd := range m.kd {
		m.pruneKey(kd, cut, s.judged, live, renum)
	}
	m.pruneTokens(cut)
}

// pruneKeep marks the holds the next windows need (keep) and those kept
// because they still reach them, not only for one lookup (live: the
// server events since their ack stay too).
func (s *Stream) pruneKeep(cut int64) (keep, live []bool) {
	m := s.m
	keep = make([]bool, len(m.holds))
	live = make([]bool, len(m.holds))
	for i := range m.holds {
		h := &m.holds[i]
		open := h.how == endOpen
		live[i] = open && s.lastEnd[h.client] >= s.maxSeen-s.idle() || max(h.belief, h.heldTo, h.endT, h.relEnd, h.lastAct, h.start) >= cut
		keep[i] = live[i] || open
	}
	for _, kd := range m.kd {
		for _, o := range kd.owner {
			if o >= 0 {
				keep[o] = true
			}
		}
		m.keepLatest(kd, keep, s.judged)
		m.keepRenewals(kd, cut, keep)
		kd.keepWrites(cut, keep)
	}
	return keep, live
}

// keepLatest keeps, among the holds of kd about to go, the one with the
// latest end (liveness measures the next gap from it) and the one with the
// highest token granted (fencing). Liveness takes holds in the order they
// took the key, and a hold not judged yet may have taken it long before its
// ack (its client frozen inside the acquire): every hold granted from the
// earliest such grant on stays, so that the gap before each is measured
// from the same hold as in the whole history (slow-acquire on redlock: a
// hold granted at 0.354 s and acked at 1.98 s found the holds before it
// pruned and measured a 348 ms gap from the key's first wait).
func (m *model) keepLatest(kd *keyData, keep []bool, judged int64) {
	lastEnd, topFence := int32(-1), int32(-1)
	grants, _ := m.grantOrder(kd)
	from := int64(math.MaxInt64) // the earliest grant of a hold not judged yet
	for i, hi := range kd.holds {
		if m.holds[hi].start >= judged {
			from = min(from, grants[i])
		}
	}
	for i, hi := range kd.holds {
		if keep[hi] {
			continue
		}
		h := &m.holds[hi]
		if grants[i] >= from {
			keep[hi] = true
			continue
		}
		if lastEnd < 0 || m.aliveHolding(h) > m.aliveHolding(&m.holds[lastEnd]) {
			lastEnd = hi
		}
		if h.fence > 0 && (topFence < 0 || h.fence > m.holds[topFence].fence) {
			topFence = hi
		}
	}
	if lastEnd >= 0 {
		keep[lastEnd] = true
	}
	if topFence >= 0 {
		keep[topFence] = true
	}
}

// keepRenewals marks the renewals that may still be looked up, and each
// client's latest unanswered one (it may land any time later), kept with
// the hold it was made in.
func (m *model) keepRenewals(kd *keyData, cut int64, keep []bool) {
	latest := map[int32]int{}
	for i := range kd.renewals {
		if r := &kd.renewals[i]; r.unanswered {
			latest[r.client] = i
		}
	}
	for i := range kd.renewals {
		r := &kd.renewals[i]
		r.keep = r.end+m.lag >= cut || r.t >= cut || r.unanswered && latest[r.client] == i
		if !r.keep || !r.unanswered {
			continue
		}
		if r.own < 0 {
			for j := len(kd.holds) - 1; j >= 0; j-- {
				if h := &m.holds[kd.holds[j]]; h.client == r.client && h.start <= r.t {
					r.own = kd.holds[j]
					break
				}
			}
		}
		if r.own >= 0 {
			keep[r.own] = true
		}
	}
}

// keepWrites drops the writes that ended before cut but the last applied
// and the one with the highest accepted token, and keeps the holds of the
// writes kept.
func (kd *keyData) keepWrites(cut int64, keep []bool) {
	var last, top = -1, -1
	ws := kd.writes[:0] // filtered in place: entries only move down
	drop := make([]bool, len(kd.writes))
	for i := range kd.writes {
		w := &kd.writes[i]
		if w.at >= cut || w.t >= cut {
			continue
		}
		drop[i] = true
		if w.ok && (last < 0 || w.at >= kd.writes[last].at) {
			last = i
		}
		if w.ok && w.fence > 0 && (top < 0 || w.fence > kd.writes[top].fence || w.fence == kd.writes[top].fence && w.at < kd.writes[top].at) {
			top = i
		}
	}
	for i := range kd.writes {
		if drop[i] && i != last && i != top {
			continue
		}
		if hi := kd.writes[i].hold; hi >= 0 {
			keep[hi] = true
		}
		ws = append(ws, kd.writes[i])
	}
	kd.writes = ws
}

// dropHolds summarises the losses of the holds not kept, drops them and
// returns each hold's new number (-1: dropped).
func (s *Stream) dropHolds(keep []bool) []int32 {
	m := s.m
	renum := make([]int32, len(m.holds))
	n := int32(0)
	for i := range m.holds {
		if keep[i] {
			renum[i] = n
			m.holds[n] = m.holds[i]
			n++
			continue
		}
		renum[i] = -1
		m.summarizeLoss(int32(i), &s.c.loss)
		h := &m.holds[i]
		kd := m.kd[h.key]
		kd.cutHold = max(kd.cutHold, h.start)
		kd.droppedHeldTo = max(kd.droppedHeldTo, m.aliveHolding(h))
	}
	// summarizeLoss reads m.holds[i] before it is overwritten: holds only
	// move down, and i >= n.
	m.holds = m.holds[:n]
	return renum
}

// renumberTables gives the model's tables outside the keys the holds' new
// numbers.
func (m *model) renumberTables(renum []int32) {
	if len(m.expSeen) > 0 {
		es := map[int32]map[int16]int64{}
		for o, seen := range m.expSeen {
			if r := renum[o]; r >= 0 {
				es[r] = seen
			}
		}
		m.expSeen = es
	}
	if len(m.matchedHi) > 0 {
		hi := map[matchKey]bool{}
		for k := range m.matchedHi {
			if r := renum[k.hold]; r >= 0 {
				hi[matchKey{r, k.node}] = true
			}
		}
		m.matchedHi = hi
	}
	for _, cs := range m.clients {
		for i, hi := range cs.open.vs {
			cs.open.vs[i] = renum[hi]
		}
	}
}

// pruneKey renumbers one key's tables and drops what ended before cut
// (server events and recorded commands from the first hold kept live on).
func (m *model) pruneKey(kd *keyData, cut, judged int64, live []bool, renum []int32) {
	// Server events are kept from the first hold kept live on: causes
	// and expiries are looked up from a hold's ack.
	srvCut := cut
	for _, hi := range kd.holds {
		if live[hi] {
			srvCut = min(srvCut, m.holds[renum[hi]].start)
		}
	}
	kd.renumber(renum)
	// And from the latest hold's start (keepLatest keeps it): the gap after
	// it, and a key stranded since, are judged from the key's state then
	// (the whole run's tail, when no hold came after: cancelled-acquire's
	// stranded keys were key-not-freed, "the servers' record does not
	// show k0", in the streamed check and named in the whole one).
	var latest int32 = -1
	for _, hi := range kd.holds {
		if latest < 0 || m.aliveHolding(&m.holds[hi]) > m.aliveHolding(&m.holds[latest]) {
			latest = hi
		}
	}
	if latest >= 0 {
		srvCut = min(srvCut, m.holds[latest].acqT)
	}
	// Server events: attributed ones before srvCut go.
	i := 0
	for i < kd.walked && kd.srv[i].t < srvCut {
		i++
	}
	m.rememberExpiries(kd, kd.srv[:i])
	if i > 0 {
		kd.cutSrv = max(kd.cutSrv, kd.srv[i-1].t)
		kd.srv = kd.srv[:copy(kd.srv, kd.srv[i:])]
		kd.walked -= i
	}
	// Recorded commands: replayed ones before srvCut go (the replay's
	// state per node carries what they did).
	j := 0
	for j < kd.cmdWalked && kd.cmds[j].h < srvCut {
		j++
	}
	if j > 0 {
		kd.cutCmd = max(kd.cutCmd, kd.cmds[j-1].h)
		kd.cmds = kd.cmds[:copy(kd.cmds, kd.cmds[j:])]
		kd.cmdWalked -= j
	}
	kd.cmdFrees = slices.DeleteFunc(kd.cmdFrees, func(f cmdFree) bool { return f.t < srvCut })
	m.pruneOwn(kd, srvCut)
	// Key-takes: also from where the next gap to judge starts, since
	// liveness splits a gap at the takes of acquires that failed or were
	// not answered (cancelled-in-flight on redsync: a 2.8 s gap from
	// 0.112 s, judged at 2.9 s, lost the orphan take at 0.149 s that the
	// whole check split it at).
	floor := m.gapFloor(kd, judged)
	m.pruneTakes(kd, min(srvCut, floor))
	kd.releases = slices.DeleteFunc(kd.releases, func(r release) bool { return r.end < cut-m.lag })
	// Failed attempts: from the latest end of a dropped hold on
	// (liveness measures each wait from the end of the hold before), less
	// the slack within which an orphan take is matched to them; all while
	// the key was never held.
	slack := m.ownSlack()
	kd.failed = slices.DeleteFunc(kd.failed, func(a attempt) bool { return a.end+slack < min(kd.droppedHeldTo, floor) })
}

// gapFloor is the earliest time a gap liveness has yet to judge on kd can
// start: the end of the hold before each hold not judged yet (in the order
// the holds took the key), or for none the latest end of a hold kept (the
// gap after it).
func (m *model) gapFloor(kd *keyData, judged int64) int64 {
	_, order := m.grantOrder(kd)
	floor, prevEnd := int64(math.MaxInt64), int64(math.MinInt64)
	for _, i := range order {
		h := &m.holds[kd.holds[i]]
		if h.start >= judged {
			floor = min(floor, prevEnd)
		}
		prevEnd = max(prevEnd, m.aliveHolding(h))
	}
	return min(floor, prevEnd)
}

// renumber gives kd's entries their holds' new numbers, dropping those of
// dropped holds, and the renewals not kept.
func (kd *keyData) renumber(renum []int32) {
	kd.holds = renumbered(kd.holds, func(hi *int32) *int32 { return hi }, renum)
	kd.indexed = false
	for i := range kd.writes {
		if hi := kd.writes[i].hold; hi >= 0 {
			kd.writes[i].hold = renum[hi]
		}
	}
	kd.nested = renumbered(kd.nested, func(r *nested) *int32 { return &r.hold }, renum)
	kd.badDels = renumbered(kd.badDels, func(d *badDel) *int32 { return &d.victim }, renum)
	kd.cmdDels = renumbered(kd.cmdDels, func(d *badDel) *int32 { return &d.victim }, renum)
	for node, o := range kd.owner {
		if o >= 0 {
			kd.owner[node] = renum[o]
		}
	}
	rs := kd.renewals[:0]
	for _, r := range kd.renewals {
		if r.own >= 0 {
			r.own = renum[r.own]
		}
		if r.keep {
			rs = append(rs, r)
			continue
		}
		if r.unanswered {
			kd.cutUnanswered = max(kd.cutUnanswered, r.t)
		}
	}
	kd.renewals = rs
}

// rememberExpiries: the holds kept for old unanswered renewals remember
// the first expiry on each node after their ack among the server events
// dropped.
func (m *model) rememberExpiries(kd *keyData, dropped []srvEvent) {
	for _, r := range kd.renewals {
		if r.own < 0 {
			continue
		}
		from := m.holds[r.own].start + m.lag
		for _, e := range dropped {
			if e.kind != srvExpired || e.t < from {
				continue
			}
			if m.expSeen == nil {
				m.expSeen = map[int32]map[int16]int64{}
			}
			seen := m.expSeen[r.own]
			if seen == nil {
				seen = map[int16]int64{}
				m.expSeen[r.own] = seen
			}
			if t, ok := seen[e.node]; !ok || e.t < t {
				seen[e.node] = e.t
			}
		}
	}
}

// renumbered keeps, in place, the entries whose hold is kept, with the
// hold's new number.
func renumbered[T any](xs []T, hold func(*T) *int32, renum []int32) []T {
	out := xs[:0]
	for i := range xs {
		if p := hold(&xs[i]); renum[*p] >= 0 {
			*p = renum[*p]
			out = append(out, xs[i])
		}
	}
	return out
}
