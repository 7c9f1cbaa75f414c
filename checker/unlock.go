package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// callAt returns the index of the latest call in calls (sorted by invoke
// time, pmax the running maximum of their ends) whose span [t, end+lag]
// contains x and whose client passes want, or -1. The backward scan stops
// where no earlier call lasts until x, so a long call (a release paused for
// seconds) is found however many short ones came after it.
func callAt[T any](calls []T, pmax []int64, span func(*T) (client int32, t, end int64), x, lag int64, want func(int32) bool) int {
	i := sort.Search(len(calls), func(i int) bool { _, t, _ := span(&calls[i]); return t > x }) - 1
	for ; i >= 0 && pmax[i]+lag >= x; i-- {
		if cl, _, end := span(&calls[i]); want(cl) && x <= end+lag {
			return i
		}
	}
	return -1
}

// runningMax fills dst (reused) with the running maximum of the calls' ends.
func runningMax[T any](dst []int64, calls []T, span func(*T) (int32, int64, int64)) []int64 {
	out := slices.Grow(dst[:0], len(calls))[:len(calls)]
	var mx int64
	for i := range calls {
		_, _, end := span(&calls[i])
		mx = max(mx, end)
		out[i] = mx
	}
	return out
}

func releaseSpan(r *release) (int32, int64, int64) { return r.client, r.t, r.end }
func renewalSpan(r *renewal) (int32, int64, int64) { return r.client, r.t, r.end }

// releaserAt returns a release call of a client other than not on key k
// in flight at x, or -1.
func (m *model) releaserAt(k int32, not int32, x, lag int64) int {
	kd := m.kd[k]
	return callAt(kd.releases, kd.relMax, releaseSpan, x, lag, func(c int32) bool { return c != not })
}

// renewerAt is releaserAt for renewal calls.
func (m *model) renewerAt(k int32, not int32, x, lag int64) int {
	kd := m.kd[k]
	return callAt(kd.renewals, kd.renMax, renewalSpan, x, lag, func(c int32) bool { return c != not })
}

// ownCallAt reports whether client had a release or renewal of its own on
// k in flight at x (then the del or pexpire may be its own).
func (m *model) ownCallAt(k int32, client int32, x, lag int64) bool {
	kd := m.kd[k]
	is := func(c int32) bool { return c == client }
	return callAt(kd.releases, kd.relMax, releaseSpan, x, lag, is) >= 0 || callAt(kd.renewals, kd.renMax, renewalSpan, x, lag, is) >= 0
}

// matchWindow is how far apart a server write and the ack of the acquire
// that made it may be observed: notifications reach the observer in the
// server's order but can arrive in bunches, late.
const matchWindow = int64(50e6)

// ownerAt returns the hold whose acquire wrote key k on node at time x (as
// the observer saw it), or -1. Writes of new owners happen in the order of
// their acks, so the writer is the earliest-acked hold that has not yet
// been matched to a write on this node, among those invoked before x and
// acked no earlier than x − matchWindow, not released long before x, and
// whose client was not cut off from the node.
func (m *model) ownerAt(k int32, node int16, x int64, cursor *int) int32 {
	kd := m.kd[k]
	m.index(kd)
	hs := kd.holds
	// The walk's x only grows: the first hold acked at or after
	// x − matchWindow moves forward from where it was.
	i := *cursor
	if i < 0 {
		i = sort.Search(len(hs), func(i int) bool { return m.holds[hs[i]].start >= x-matchWindow })
	}
	for i < len(hs) && m.holds[hs[i]].start < x-matchWindow {
		i++
	}
	*cursor = i
	for n := 0; i < len(hs) && n < 64; i, n = i+1, n+1 {
		h := &m.holds[hs[i]]
		// Cut off from the node by x: no write of its own reached it then,
		// unless its acquire had already returned (the cut came after its
		// write; the notification arrives the observer's lag later: a
		// holder cut right after its acquire, rueidislock's partitioned
		// holder, had its expiry go uncounted by loss detection).
		if h.acqT > x || m.matched(hs[i], node) || (h.how != endOpen && h.endT < x-matchWindow) || m.cutFrom(h.client, node, min(x, h.start-1)) {
			continue
		}
		m.setMatched(hs[i], node, true)
		return hs[i]
	}
	return -1
}

// unmatchIfAcquiring: a key removed while its writer's acquire was still in
// flight was a failed attempt undone (redlock retries inside one Acquire),
// so the hold may write the key again and be matched again.
func (m *model) unmatchIfAcquiring(owner map[int16]int32, s srvEvent) {
	if o, ok := owner[s.node]; ok && o >= 0 && s.t < m.holds[o].start {
		m.setMatched(o, s.node, false)
	}
}

// matched reports whether hold hi was matched to a write of its key on
// node: a bit of the hold for the first 64 nodes, a map beyond.
func (m *model) matched(hi int32, node int16) bool {
	if node < 64 {
		return m.holds[hi].matched&(1<<node) != 0
	}
	return m.matchedHi[matchKey{hi, node}]
}

func (m *model) setMatched(hi int32, node int16, on bool) {
	switch {
	case node < 64 && on:
		m.holds[hi].matched |= 1 << node
	case node < 64:
		m.holds[hi].matched &^= 1 << node
	case on:
		if m.matchedHi == nil {
			m.matchedHi = map[matchKey]bool{}
		}
		m.matchedHi[matchKey{hi, node}] = true
	default:
		delete(m.matchedHi, matchKey{hi, node})
	}
}

type matchKey struct {
	hold int32
	node int16
}

// cutFrom reports whether a cut-client fault kept client from node at t.
func (m *model) cutFrom(client int32, node int16, t int64) bool {
	for _, f := range m.faults {
		if f.kind != history.FaultCutClient || f.clientTarget != int(client) || !f.applied || !f.overlaps(t, t) {
			continue
		}
		nodes := f.v.Nodes
		if nodes == "" {
			return true
		}
		for _, n := range strings.Split(nodes, ",") {
			if "n"+strings.TrimSpace(n) == m.nodes[node] {
				return true
			}
		}
	}
	return false
}

// badDel is a server-side change of a key made by a call of a client that
// did not own it.
type badDel struct {
	t       int64
	node    int16
	victim  int32  // hold whose key was changed
	culprit int32  // client whose call changed it
	release bool   // a release deleted it (else a renewal extended it)
	set     bool   // a renewal overwrote it (SET with its own token)
	cmd     string // the command record's command that did it ("" from the observer)
}

// attributeDels walks every key's server record once, in order, up to
// (not including) time upTo, carrying on where the previous call stopped:
// the key's owner on a node is the client whose acquire wrote it last; a del
// (pexpire) while the owner still held it, made during another client's
// release (renewal) and not during one of the owner's own calls, was a
// non-owner unlock.
func (m *model) attributeDels(upTo int64) {
	for k, kd := range m.kd {
		k := int32(k)
		if kd.owner == nil {
			kd.owner = map[int16]int32{} // node → hold that wrote the key last
		}
		owner := kd.owner
		cursor := -1
		for ; kd.walked < len(kd.srv) && kd.srv[kd.walked].t < upTo; kd.walked++ {
			s := kd.srv[kd.walked]
			if !m.masterAt(s.node, s.t) {
				continue
			}
			switch s.kind {
			case srvSet:
				m.attributeSet(k, kd, s, &cursor)
				continue
			case srvExpired:
				if o, ok := owner[s.node]; ok && o >= 0 {
					m.noteLoss(o, s.t, "expired", true)
				}
				m.unmatchIfAcquiring(owner, s)
				delete(owner, s.node)
				continue
			case srvDel:
				m.dels++
			case srvExpire:
			default:
				continue
			}
			o, ok := owner[s.node]
			if s.kind == srvDel {
				m.unmatchIfAcquiring(owner, s)
				delete(owner, s.node)
			}
			if ok && o >= 0 {
				m.attributeChange(k, kd, s, o)
			}
		}
	}
}

// attributeSet: a write of the key on a master. The owner's own writes (a
// re-entry's or a release's HINCRBY) keep it the owner; a new owner can
// only write after the key was deleted or expired.
func (m *model) attributeSet(k int32, kd *keyData, s srvEvent, cursor *int) {
	owner := kd.owner
	if o, ok := owner[s.node]; ok && o >= 0 && (s.t <= m.holds[o].heldTo+m.lag || m.ownCallAt(k, m.holds[o].client, s.t, m.lag)) {
		// Unless it was another client's renewal that rewrote the key
		// (a renewal by SET without an owner check): then the owner's
		// lock was taken without an acquire.
		if i := m.foreignRewrite(k, o, s); i >= 0 {
			kd.badDels = append(kd.badDels, badDel{t: s.t, node: s.node, victim: o, culprit: kd.renewals[i].client, set: true})
			m.noteLoss(o, s.t, fmt.Sprintf("overwritten by client %d's renewal", kd.renewals[i].client), true)
		}
		return
	}
	owner[s.node] = m.ownerAt(k, s.node, s.t, cursor)
}

// attributeChange: a del (pexpire) of hold o's key on a master, while o
// may still have held it.
func (m *model) attributeChange(k int32, kd *keyData, s srvEvent, o int32) {
	h := &m.holds[o]
	if s.t > h.heldTo+m.lag || s.t < h.acqT {
		return
	}
	// Any call of the owner's own that may have made the change (allowing
	// for the observer's lag) clears it. Otherwise the culprit is another
	// client's call in flight at the change (within 1 ms), and only when
	// that client's own key had already expired on the node: notifications
	// arrive late and in bunches under load, so the owner matched by
	// timing alone is not evidence enough to accuse a correct release. A
	// change while the owner's acquire was still in flight is its own undo
	// of a failed attempt (redlock releases what it set when it misses the
	// quorum).
	if s.t < h.start || m.ownCallAt(k, h.client, s.t, m.lag) {
		return
	}
	if s.kind == srvDel {
		m.noteLoss(o, s.t, "deleted by another client", true)
	}
	const near = int64(1e6)
	if s.kind == srvDel {
		if i := m.releaserAt(k, h.client, s.t, near); i >= 0 && m.expiredBefore(k, s.node, kd.releases[i].client, kd.releases[i].t, s.t, -1) {
			kd.badDels = append(kd.badDels, badDel{t: s.t, node: s.node, victim: o, culprit: kd.releases[i].client, release: true})
		}
	} else if i := m.renewerAt(k, h.client, s.t, near); i >= 0 && m.expiredBefore(k, s.node, kd.renewals[i].client, kd.renewals[i].t, s.t, kd.renewals[i].own) {
		kd.badDels = append(kd.badDels, badDel{t: s.t, node: s.node, victim: o, culprit: kd.renewals[i].client})
	}
}

// expiredBefore reports whether, on node, key k expired (or was deleted by
// another client's call) between the start of client's latest hold begun
// before call and x: the client's own key was gone when its call changed
// the key.
//
// own, when not -1, is that hold, as pruning kept it for an old call.
func (m *model) expiredBefore(k int32, node int16, client int32, call, x int64, own int32) bool {
	kd := m.kd[k]
	m.index(kd)
	var from int64 = -1
	if own >= 0 {
		from = m.holds[own].start + m.lag
	} else {
		i := sort.Search(len(kd.holds), func(i int) bool { return m.holds[kd.holds[i]].start > call }) - 1
		for n := 0; i >= 0 && n < 4096; i, n = i-1, n+1 {
			if h := &m.holds[kd.holds[i]]; h.client == client {
				// After its ack plus the observer's lag: an expiry seen just
				// before is the previous owner's key, whose end let it in.
				from, own = h.start+m.lag, kd.holds[i]
				break
			}
		}
		if own < 0 && kd.cutHold > math.MinInt64 {
			m.setInexact(fmt.Sprintf("the hold a call of client %d on %s was made in had been pruned", client, m.keys[k]))
		}
	}
	if from < 0 {
		return false
	}
	if from <= kd.cutSrv && m.expSeen[own] != nil {
		// Pruning kept what it dropped of this hold's record.
		if t, ok := m.expSeen[own][node]; ok && t < x {
			return true
		}
		from = kd.cutSrv + 1
	}
	for j := m.srvFrom(k, from); j < len(kd.srv) && kd.srv[j].t < x; j++ {
		if kd.srv[j].kind == srvExpired && kd.srv[j].node == node {
			return true
		}
	}
	// Or another client's call removed it (a chain: a release that deleted
	// the next owner's key makes that owner's own release a foreign one).
	// attributeDels appends in time order, so the earlier ones are here.
	for _, d := range kd.badDels {
		if d.release && d.node == node && d.victim == own && d.t < x {
			return true
		}
	}
	return false
}

// evidence names the recorded command that made the change, or how the
// observer's match was made.
func (d *badDel) evidence() string {
	if d.cmd != "" {
		return fmt.Sprintf(": its %s, in the server's command record", d.cmd)
	}
	return ": matched by time to a keyspace notification"
}

// judgeUnlock: a release or renewal changed a key another owner held (see
// attributeDels), judged in the window of the change. Without an observer
// the check does not run.
//
// With a command record (cmdrecord.go), its findings are the evidence; the
// observer's stand only where the record has a gap.
func judgeUnlock(m *model, c *ctx) {
	rec := m.useRecord()
	if !m.observerOK && !rec {
		return
	}
	var dels []badDel
	for k, kd := range m.kd {
		key := m.keys[k]
		dels = dels[:0]
		for _, d := range kd.badDels {
			if !rec || m.inGap(d.node, d.t) {
				dels = append(dels, d)
			}
		}
		if rec {
			for _, d := range kd.cmdDels {
				if !m.inGap(d.node, d.t) {
					dels = append(dels, d)
				}
			}
		}
		for _, d := range dels {
			if !m.in(d.t) {
				continue
			}
			h := &m.holds[d.victim]
			call, what, cause := "release", "deleted", CauseNonOwnerDel
			switch {
			case d.set:
				call, what, cause = "renewal", "overwrote", CauseRenewalOverwrote
			case !d.release:
				call, what, cause = "renewal", "extended", CauseExtendedForeign
			}
			expl := fmt.Sprintf("client %d no longer owned %s but its %s %s client %d's lock at %s.", d.culprit, key, call, what, h.client, sec(d.t))
			if f := m.foreignAcquireAt(kd, &d); f != nil {
				// Not a renewal: the acquire's own script, writing into
				// the owner's hash, reset its TTL.
				call, cause = "acquire", CauseForeignReentry
				expl = fmt.Sprintf("%s; its %s %s client %d's lock at %s.", m.foreignWhat(f, key), d.cmd, what, h.client, sec(d.t))
			}
			c.violate(Violation{Check: CheckUnlock, Key: key, Clients: []int{int(d.culprit), int(h.client)},
				AtMS: history.MS(d.t), Window: [2]int64{d.t, d.t}, Cause: cause, Lease: m.lease(d.victim),
				Detail: fmt.Sprintf("client %d's %s %s %s on %s at %s while client %d held it (acquired %s)%s",
					d.culprit, call, what, key, m.nodes[d.node], sec(d.t), h.client, sec(h.start), d.evidence()),
				Explanation: expl,
			}, &c.unlockCount)
		}
	}
}

func resultUnlock(m *model, c *ctx) (CheckResult, bool) {
	if !m.observerOK && !m.useRecord() {
		if len(m.observerNo) > 0 {
			c.notes = append(c.notes, "unlock check not run: the backend delivers no keyspace notifications, so what releases removed cannot be seen")
		}
		return CheckResult{}, false
	}
	res := CheckResult{Stats: map[string]any{"server_dels": m.dels, "source": m.ownershipSource()}}
	res.Violations = c.unlockCount
	seen := m.lockKeysSeen()
	// Deletes sent on a connection that several clients share (a driver
	// process, lock option tasks) have no client: whose lock a client's
	// delete took cannot be said of them. Only those: nothing judged.
	judged := m.nHolds > 0 && seen && !(m.sharedDels > 0 && m.clientDels == 0)
	res.Verdict = verdictOf(c.unlockCount, judged)
	if m.nHolds > 0 && !seen && c.unlockCount == 0 {
		c.notes = append(c.notes, noLockKeyNote("unlock"))
	}
	if m.sharedDels > 0 {
		res.Stats["shared_process_dels"] = m.sharedDels
		c.notes = append(c.notes, fmt.Sprintf("unlock: %d deletes were sent on connections that several clients share (a driver process, lock option tasks), which the servers' record ties to no client: a client's delete of another's lock there is not named (its effect on the holder is still judged by mutex and resource)%s",
			m.sharedDels, ifs(m.clientDels == 0 && c.unlockCount == 0, "; with no other delete judged, unlock is unknown")))
	}
	return res, true
}

// masterAt reports whether node was a master at t, so that its
// notifications count. Under Sentinel the first node is master until a
// failover names another (its effect new_master). In a Redis Cluster every
// node the observer hears (it subscribes to the masters it starts with)
// starts as a master; a failover or isolate-node demotes its old master
// from the moment it fires (a replica replays its new master's stream late,
// in bunches, and a cut-off master's writes are dropped) and promotes its
// new master once it is elected.
func (m *model) masterAt(node int16, t int64) bool {
	switch {
	case len(m.nodes) == 0:
		return true
	case m.topo == "sentinel":
		master := "n1"
		for _, f := range m.faults {
			if f.kind == history.FaultFailover && f.t <= t {
				if nm := f.v.NewMaster; nm != "" {
					master = nm
				}
			}
		}
		return m.nodes[node] == master
	case m.topo == "cluster":
		name, is := m.nodes[node], true
		for _, f := range m.faults {
			if f.kind != history.FaultFailover && f.kind != history.FaultIsolateNode {
				continue
			}
			if f.v.OldMaster == name && f.t <= t {
				is = false
			}
			if f.v.NewMaster == name && f.end <= t {
				is = true
			}
		}
		return is
	}
	return true
}

// foreignRewrite returns the renewal of another client that wrote key k
// (event s) while hold o owned it, or -1. The write must fall strictly
// inside the hold (past its acquire and the observer's lag, before it
// ended), be none of the owner's own calls (a release, a renewal, a
// re-entry), and coincide with another client's renewal whose own key had
// expired: in flight then (within 1 ms of its reply), or unanswered (sent
// before and never answered: a command on the wire can land any time
// later). A correct lock never writes a key it does not own, so a write
// left unexplained otherwise is not blamed on anyone.
func (m *model) foreignRewrite(k, o int32, s srvEvent) int {
	h := &m.holds[o]
	if s.t <= h.start+m.lag || s.t > h.heldTo || m.ownCallAt(k, h.client, s.t, m.lag) || m.reentryAt(k, o, s.t) {
		return -1
	}
	kd := m.kd[k]
	const near = int64(1e6)
	i := m.renewerAt(k, h.client, s.t, near)
	if i < 0 {
		// The latest unanswered renewal of another client sent before s.
		for j := sort.Search(len(kd.renewals), func(j int) bool { return kd.renewals[j].t >= s.t }) - 1; j >= 0; j-- {
			if r := &kd.renewals[j]; r.client != h.client && r.unanswered {
				i = j
				break
			}
		}
		if (i < 0 || kd.renewals[i].t < kd.cutUnanswered) && kd.cutUnanswered > math.MinInt64 {
			m.setInexact(fmt.Sprintf("an unanswered renewal on %s that may have landed at %s had been pruned", m.keys[k], sec(s.t)))
		}
	}
	if i < 0 || !m.expiredBefore(k, s.node, kd.renewals[i].client, kd.renewals[i].t, s.t, kd.renewals[i].own) {
		return -1
	}
	return i
}

// reentryAt reports whether hold o's client had a re-entry of k (a nested
// acquire) in flight at x, allowing for the observer's lag.
func (m *model) reentryAt(k, o int32, x int64) bool {
	for _, n := range m.kd[k].nested {
		if n.hold == o && n.t <= x && x <= n.at+m.lag {
			return true
		}
	}
	return false
}

// noLockKeyNote says why check answered unknown: the servers' record named
// no key a client acquired.
func noLockKeyNote(check string) string {
	return check + ": unknown: no command or notification on the lock's keys reached the servers' record: the lock may name its own keys; report them (`keys` in `acquired`, docs/driver-protocol.md)"
}
