package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// Liveness causes.
const (
	CauseNotFreedAfterCrash = "key-not-freed-after-crash"
	CauseNotFreed           = "key-not-freed"
	CauseNoRecovery         = "no-recovery-after-heal"
)

type span struct{ a, b int64 }

// union merges spans (sorted in place) into disjoint ones, in place.
func union(ss []span) []span {
	slices.SortFunc(ss, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	out := ss[:0]
	for _, s := range ss {
		if s.b <= s.a {
			continue
		}
		if n := len(out); n > 0 && s.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, s.b)
			continue
		}
		out = append(out, s)
	}
	return out
}

// minus removes the disjoint sorted spans cut from the disjoint sorted ss.
func minus(ss, cut []span) []span { return minusInto(nil, ss, cut) }

// minusInto is minus appending to out. Each span's first cut is searched,
// so a few spans against a soak's thousands of cuts cost a search each.
func minusInto(out, ss, cut []span) []span {
	j := 0
	for _, s := range ss {
		j += sort.Search(len(cut)-j, func(i int) bool { return cut[j+i].b > s.a })
		a := s.a
		for k := j; k < len(cut) && cut[k].a < s.b; k++ {
			if cut[k].a > a {
				out = append(out, span{a, cut[k].a})
			}
			a = max(a, cut[k].b)
		}
		if a < s.b {
			out = append(out, span{a, s.b})
		}
	}
	return out
}

// measure is the length of the disjoint sorted ss inside [a, b].
func measure(ss []span, a, b int64) int64 {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].b > a })
	var n int64
	for ; i < len(ss) && ss[i].a < b; i++ {
		n += min(ss[i].b, b) - max(ss[i].a, a)
	}
	return n
}

// liveAcc accumulates the liveness check over judged windows.
type liveAcc struct {
	count, attempts   int
	worst, worstFault int64
	lastAttempt       int64
	firstAfterHeal    map[int]int64 // fault id → first acquire ack at or after its heal
}

// judgeLiveness: no key stays unavailable longer than TTL + ε while clients
// want it, acquisitions succeed again after every fault heals, and no client
// starves. Unavailability is the time between the end of one hold (its
// release, loss or last act) and the next acquire ack, counted only while
// some client was trying to acquire the key and could act: not while a
// node-level fault (or the TTL after its heal) was in effect, nor while
// the waiting clients' own faults kept them from acting (paused, cut, their
// acquire commands stalled: waiterBlocks). That unavailability is the
// faults', and is reported as a statistic. A gap is judged in the window of
// the ack that ends it; the gap left open at the end of the record in the
// last window.
func judgeLiveness(m *model, c *ctx) {
	var faultSpans []span
	for _, f := range m.faults {
		if f.clientTarget < 0 && f.applied {
			faultSpans = append(faultSpans, span{f.t, max(f.healT, f.end) + m.ttl})
		}
	}
	faultSpans = union(faultSpans)
	b := m.blocks()
	for k, kd := range m.kd {
		m.judgeKeyLiveness(c, int32(k), kd, faultSpans, b)
	}
	m.firstAcksAfterHeals(&c.live)
}

// keyWaits are the spans in which clients waited for one key: all of them
// (want), outside the node faults' spans (wantNoFault), and of those the
// spans in which a waiter could act (canAct): the waits the lock answers
// for.
type keyWaits struct {
	k                         int32
	kd                        *keyData
	want, wantNoFault, canAct []span
	waiters                   map[int32]bool
	b                         waiterBlocks
	faults                    []span // the node faults' spans (with a TTL after each heal)
}

// judgeKeyLiveness measures the gaps in one key's availability while
// clients waited: between holds, and at the end of the run.
func (m *model) judgeKeyLiveness(c *ctx, k int32, kd *keyData, faultSpans []span, b waiterBlocks) {
	a := &c.live
	m.index(kd)
	want := m.spans[:0]
	var act []span
	waiters := map[int32]bool{}
	for _, f := range kd.failed {
		want = append(want, span{f.t, f.end})
		act = b.own(act, f.client, span{f.t, f.end})
		waiters[f.client] = true
		if m.in(f.t) {
			a.attempts++
			a.lastAttempt = max(a.lastAttempt, f.end)
		}
	}
	grants, order := m.grantOrder(kd)
	for i, hi := range kd.holds {
		h := &m.holds[hi]
		g := grants[i]
		want = append(want, span{h.acqT, g})
		act = b.own(act, h.client, span{h.acqT, g})
		waiters[h.client] = true
		if m.in(h.start) {
			a.attempts++
		}
	}
	if len(want) == 0 {
		return
	}
	m.spans = want
	w := &keyWaits{k: k, kd: kd, want: union(want), canAct: union(act), waiters: waiters, b: b, faults: faultSpans}
	w.wantNoFault = w.want
	if len(faultSpans) > 0 {
		w.wantNoFault = minus(w.want, faultSpans)
		w.canAct = minus(w.canAct, faultSpans)
	}
	var prevEnd int64 = -1
	var prev int32 = -1
	for _, i := range order {
		hi := kd.holds[i]
		h := &m.holds[hi]
		if m.in(h.start) {
			if g := grants[i]; prevEnd >= 0 {
				x, from := m.afterOrphans(c, w, kd, prevEnd, g, prev, hi)
				m.keyGap(c, w, x, g, g, from, hi, false)
			} else if len(kd.failed) > 0 && kd.failed[0].t < h.acqT {
				m.livenessGap(c, w, m.firstTaken(kd, kd.failed[0].t, g), g, prev, hi, nil)
			}
		}
		if to := m.aliveHolding(h); to > prevEnd {
			prevEnd, prev = to, hi
		}
	}
	if !m.final {
		return
	}
	if len(w.want) == 0 {
		return // only instants: acquires answered as they were sent
	}
	last := w.want[len(w.want)-1].b
	switch {
	case prevEnd < 0:
		m.livenessGap(c, w, m.firstTaken(kd, w.want[0].a, last), last, prev, -1, nil)
	case m.holds[prev].how == endOpen && m.crashOf(&m.holds[prev]) == nil:
		// Still believed when the record ends: no gap to judge but the
		// waits', and no stranding.
		if last > prevEnd {
			m.livenessGap(c, w, prevEnd, last, prev, -1, nil)
		}
	default:
		m.keyGap(c, w, prevEnd, last, max(last, m.lastT), prev, -1, true)
	}
}

// afterOrphans splits the gap from x to the grant g at the key-takes of
// acquires whose client never learned of them (an acquire answered
// unknown or failed, its SET applied at the server after the client gave
// up: redislock's last retry, sent just before its deadline, took the key
// 0.7 ms after the client's read timed out, in a CI rehearsal): such a take
// holds the key for its TTL like any hold, and the lock has TTL + ε to free
// it from then. The part before the first such take is judged here; the
// gap goes on from the last one (from: -1, no hold of the history's).
func (m *model) afterOrphans(c *ctx, w *keyWaits, kd *keyData, x, g int64, prev, next int32) (int64, int32) {
	if !m.useRecord() || len(kd.takes) == 0 || len(kd.failed) == 0 {
		return x, prev
	}
	slack := m.ownSlack()
	first, last := int64(-1), int64(-1)
	ts := kd.takes // in the replay's order, as takeOf searches them
	for i := sort.Search(len(ts), func(i int) bool { return ts[i].t > x }); i < len(ts) && ts[i].t < g; i++ {
		tk := ts[i]
		if orphanOf(kd, &tk, slack) == nil {
			continue
		}
		if first < 0 {
			first = tk.t
		}
		last = tk.t
	}
	if first < 0 {
		return x, prev
	}
	m.livenessGap(c, w, x, first, prev, next, nil)
	return last, -1
}

// orphanOf is the failed or unknown acquire of tk's client that key-take
// tk was made within (to slack past its end), or nil: a take no hold
// learned of.
func orphanOf(kd *keyData, tk *ownCmd, slack int64) *attempt {
	for j := range kd.failed {
		if a := &kd.failed[j]; a.client == tk.client && tk.t >= a.t && tk.t <= a.end+slack {
			return a
		}
	}
	return nil
}

// firstTaken is where the key became unavailable in a wait from x to y
// that no earlier hold explains: x, unless the servers' record shows the
// key free then, when it is the key's first write after x (y if none).
// Before that the key was free and the waiters' acquires were only slow
// (a JVM driver's first acquire of a run took 192 ms to write a free key
// in a CI rehearsal, and liveness counted 302 ms from the first attempt).
func (m *model) firstTaken(kd *keyData, x, y int64) int64 {
	present, _, known := m.keyAtEnd(kd, x)
	// Nothing of the key before x, none of it pruned, and the record sees
	// it later: it had never been written.
	never := !known && len(kd.srv) > 0 && kd.cutSrv == math.MinInt64 && m.observerOK
	if present || !known && !never {
		return x
	}
	i := sort.Search(len(kd.srv), func(i int) bool { return kd.srv[i].t >= x })
	for ; i < len(kd.srv) && kd.srv[i].t < y; i++ {
		if kd.srv[i].kind == srvSet {
			return kd.srv[i].t
		}
	}
	return y
}

// keyGap judges the gap after hold prev ended every belief on the key at
// x: its waits until y (liveness), and a stranding until end (the next
// grant, or the record's end for the last gap: tail), reported once: as the
// waits' violation with the stranding's cause, or on its own when no
// client waited long enough to see it.
func (m *model) keyGap(c *ctx, w *keyWaits, x, y, end int64, prev, next int32, tail bool) {
	s, stranded := m.strandedAfter(c, w, x, end, prev, tail)
	var sp *strandedKey
	if stranded {
		sp = &s
	}
	if !m.livenessGap(c, w, x, y, prev, next, sp) && stranded {
		m.judgeStranded(c, s, w.k)
	}
}

// aliveHolding is when hold h stopped keeping its key from the others: its
// release, loss or last act, or, for a hold its client's crash ended, the
// crash. Until it died the crashed client held the key (in the middle of
// its write, say) and the key was rightly unavailable; from then on the
// lock has TTL + ε to free it.
func (m *model) aliveHolding(h *hold) int64 {
	if h.how != endOpen {
		return h.heldTo
	}
	if f := m.crashOf(h); f != nil {
		return max(h.heldTo, f.crashAt)
	}
	return h.heldTo
}

// crashOf is the crash that ended open hold h: the first applied
// crash-client of its client at or after the hold began (nil: none, the
// run ended with it held).
func (m *model) crashOf(h *hold) *fault {
	var first *fault
	for _, f := range m.client(int(h.client)).crashes {
		if f.crashAt >= h.acqT && (first == nil || f.crashAt < first.crashAt) {
			first = f
		}
	}
	return first
}

// grantOrder is each of kd's holds' grant (granted; by index into
// kd.holds) and those indexes in the order the holds took the key, equal
// grants in kd.holds' order: the order liveness walks the holds in, and the
// one the streamed check's pruning keeps them for. In the model's scratch
// buffers, valid until the next call.
//
// The order of the grants, not of the acks: a client frozen inside its
// acquire after its SET took the key acks last, and taken in ack order the
// key it held (until its TTL) looks free between the previous release and a
// later client's grant (simple explored against reentrant: 411 ms "waiting"
// for a key client 1 held frozen from 0.942 s).
func (m *model) grantOrder(kd *keyData) (grants []int64, order []int32) {
	m.index(kd)
	grants, order = m.grants[:0], m.order[:0]
	for i, hi := range kd.holds {
		grants = append(grants, m.granted(&m.holds[hi]))
		order = append(order, int32(i))
	}
	sort.SliceStable(order, func(a, b int) bool { return grants[order[a]] < grants[order[b]] })
	m.grants, m.order = grants, order
	return grants, order
}

// granted is when hold h's acquire took the key, as near as the history
// tells: its ack, or the start of a freeze of its client inside the acquire
// after the reply that took it (in-acquire). From that reply the key was
// the frozen client's: nobody waited for a free key meanwhile.
func (m *model) granted(h *hold) int64 {
	cs := m.clients[h.client]
	if cs == nil {
		return h.start
	}
	ps := cs.pauses
	if !cs.pausesOutOfOrder {
		// In time order: start at the first pause from the acquire on, so
		// a soak's thousands of pauses cost a search per hold, not a scan.
		ps = ps[sort.Search(len(ps), func(i int) bool { return ps[i].t >= h.acqT }):]
	}
	for _, p := range ps {
		if p.point == history.PointInAcquire && p.t >= h.acqT && p.t <= h.start {
			return p.t
		}
		if p.t > h.start && !cs.pausesOutOfOrder {
			break
		}
	}
	return h.start
}

// livenessGap judges the key unavailable in [x, y) while clients waited,
// after hold prev and until hold next (-1: none), on the time in which a
// waiter could act; s, when not nil, is the key's stranding, which names
// the cause. It says whether it reported a violation.
func (m *model) livenessGap(c *ctx, w *keyWaits, x, y int64, prev, next int32, s *strandedKey) bool {
	a := &c.live
	if y <= x {
		return false
	}
	u := measure(w.canAct, x, y)
	a.worstFault = max(a.worstFault, measure(w.want, x, y)-u)
	a.worst = max(a.worst, u)
	allowed := m.ttl + c.o.Epsilon
	if u <= allowed || m.ttl == 0 {
		return false
	}
	key := m.keys[w.k]
	clients := []int{}
	cause, expl := CauseNotFreed, ""
	if prev >= 0 {
		p := &m.holds[prev]
		clients = append(clients, int(p.client))
		expl = fmt.Sprintf("client %d stopped acting on %s at %s", p.client, key, sec(x))
	} else {
		expl = fmt.Sprintf("from %s", sec(x))
	}
	for _, f := range m.faults {
		if endsClient(f.kind) && f.applied && f.crashAt <= y && f.crashAt >= x-allowed {
			cause = CauseNotFreedAfterCrash
			died := "crashed"
			if f.kind == history.FaultSigterm {
				died = "was stopped (SIGTERM) and its process ended"
			}
			expl = fmt.Sprintf("client %d %s at %s%s", f.clientTarget, died, sec(f.crashAt), ifs(f.v.Point != "", " ("+f.v.Point+")"))
			break
		}
	}
	if s != nil && s.cause == CauseRenewedAfterFailedAcquire {
		clients = slices.Clone(s.clients) // the orphan's client, not the hold before it
	}
	if s != nil && cause == CauseNotFreedAfterCrash {
		cause, expl = s.cause, expl+"; "+s.why
	} else if s != nil {
		cause, expl = s.cause, s.why
	} else {
		expl += m.freedSentence(w.kd, key, x, y)
	}
	if next >= 0 {
		clients = append(clients, int(m.holds[next].client))
		expl += fmt.Sprintf("; the next acquire succeeded only at %s", sec(y))
	} else {
		expl += "; no acquire succeeded again before the run ended"
	}
	expl += fmt.Sprintf(": %s of waiting in which a waiter could act, longer than the TTL allows", dur(u))
	if sub := measure(w.wantNoFault, x, y) - u; sub > 0 {
		expl += fmt.Sprintf(" (%s more not counted: %s)", dur(sub), w.b.why(w.waiters, x, y))
	}
	c.violate(Violation{Check: CheckLiveness, Key: key, Clients: clients, AtMS: history.MS(x), Window: [2]int64{x, y}, Cause: cause,
		Detail:      fmt.Sprintf("%s was unavailable for %s while clients waited (allowed: TTL %s + ε %s)", key, dur(u), dur(m.ttl), dur(c.o.Epsilon)),
		Explanation: expl + "."}, &a.count)
	return true
}

// freedSentence says what the servers' record shows of key at the end
// of the wait [x, y): present since a write (never freed, when written
// before x), or free since a delete or an expiry.
func (m *model) freedSentence(kd *keyData, key string, x, y int64) string {
	present, since, known := m.keyAtEnd(kd, y)
	switch {
	case !known:
		return fmt.Sprintf("; the servers' record does not show %s", key)
	case present && since < x:
		return fmt.Sprintf("; %s was never freed by the servers' record", key)
	case present:
		return fmt.Sprintf("; %s was written at %s and not freed since, by the servers' record", key, sec(since))
	}
	return fmt.Sprintf("; %s was free from %s by the servers' record", key, sec(since))
}

// firstAcksAfterHeals: acquisitions succeed again after every fault heals:
// the first ack at or after each heal. Windows come in time order, so a
// heal's first ack found in one window is its first.
func (m *model) firstAcksAfterHeals(a *liveAcc) {
	for _, f := range m.faults {
		if _, found := a.firstAfterHeal[f.id]; found || !f.applied || !f.healRecorded {
			continue
		}
		for _, kd := range m.kd {
			m.index(kd)
			from := max(f.healT, m.from)
			i := sort.Search(len(kd.holds), func(i int) bool { return m.holds[kd.holds[i]].start >= from })
			if i == len(kd.holds) {
				continue
			}
			if st := m.holds[kd.holds[i]].start; m.in(st) {
				if t, ok := a.firstAfterHeal[f.id]; !ok || st < t {
					a.firstAfterHeal[f.id] = st
				}
			}
		}
	}
}

func resultLiveness(m *model, c *ctx) (CheckResult, bool) {
	a := &c.live
	res := CheckResult{Stats: map[string]any{}}
	allowed := m.ttl + c.o.Epsilon
	// Acquisitions succeed again after every fault heals.
	var recoverMax int64
	for _, f := range m.faults {
		if !f.applied || !f.healRecorded {
			continue
		}
		if t, ok := a.firstAfterHeal[f.id]; ok {
			recoverMax = max(recoverMax, t-f.healT)
			continue
		}
		if a.lastAttempt > f.healT+allowed {
			c.violate(Violation{Check: CheckLiveness, Clients: []int{}, AtMS: history.MS(f.healT), Window: [2]int64{f.healT, a.lastAttempt},
				Cause:       CauseNoRecovery,
				FaultID:     f.id,
				Detail:      fmt.Sprintf("no acquire succeeded after %s (fault %d) healed at %s, though clients tried until %s", f.kind, f.id, sec(f.healT), sec(a.lastAttempt)),
				Explanation: fmt.Sprintf("after the %s was healed the lock never became available again.", f.kind)}, &a.count)
		}
	}
	// Starvation. Fairness (Jain's index) is the results' stats.fairness
	// (metrics.Jain), not the check's: one value, computed one way.
	var starved []int32
	for id, cs := range m.clients {
		if id >= 0 && cs.ok == 0 && cs.tried >= 10 {
			starved = append(starved, id)
		}
	}
	sort.Slice(starved, func(i, j int) bool { return starved[i] < starved[j] })
	if len(starved) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("starved clients (10+ attempts, no success): %s", joinInts(starved)))
	}
	res.Stats["max_unavailable_ms"] = history.MS(a.worst)
	res.Stats["max_unavailable_in_faults_ms"] = history.MS(a.worstFault)
	res.Stats["max_recovery_ms"] = history.MS(recoverMax)
	res.Violations = a.count
	res.Verdict = verdictOf(a.count, a.attempts > 0)
	if m.ttl == 0 {
		res.Notes = append(res.Notes, "the history has no ttl_ms: unavailability was measured but not judged")
	}
	return res, true
}

func dur(ns int64) string {
	if ns >= 1e9 {
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	}
	return fmt.Sprintf("%.0f ms", history.MS(ns))
}
