package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Causes a violation can be attributed to.
const (
	CauseFailover = "lost-in-failover"
	// CauseMinorityMaster: the lock was written to a master cut off from
	// the majority, which promoted a replica without it.
	CauseMinorityMaster = "written-to-minority-master"
	CauseEmptyRestart   = "reacquired-after-empty-restart"
	CauseClockJump      = "expired-early-clock-jump"
	CauseClockDrift     = "expired-early-clock-drift"
	CauseNonOwnerDel    = "deleted-by-non-owner"
	// CauseRenewalOverwrote: another client's renewal (a SET without an
	// owner check, arriving after its own key had expired) rewrote the
	// key the owner held: ownership taken without an acquire.
	CauseRenewalOverwrote = "renewal-overwrote-owner"
	// CauseExtendedForeign: another client's renewal (a PEXPIRE without
	// an owner check) extended the key the owner held.
	CauseExtendedForeign = "extended-foreign-lock"
	CausePause           = "expired-during-pause"
	CauseRenewalFailed   = "renewal-failed"
	CausePartitioned     = "holder-partitioned"
	CauseStalled         = "commands-stalled"
	CauseClockSkew       = "client-clock-skew"
	CauseActedLate       = "acted-after-lease-expired"
	CauseExpired         = "expired-while-held"
	CauseLocalReentry    = "local-reentry-after-expiry"
	// CauseReleasedLevelKept: an acquire of a key its client did not hold
	// answered depth > 1: the server kept levels the client had released
	// (a release that never reached it), so the client's last release
	// leaves the key held.
	CauseReleasedLevelKept = "released-level-kept"
	// CauseFailedAcquireKept: as CauseReleasedLevelKept, but the level the
	// server kept was taken by an acquire of the client's that answered
	// failed or unknown (its script ran at the server after the call was
	// cancelled or timed out, by the servers' record), so the client never
	// knew it held it and its next acquire re-entered it.
	CauseFailedAcquireKept = "failed-acquire-level-kept"
	CauseLostUpdate        = "lost-update"
	CauseUnknown           = "unknown"

	// CauseExpiredOnArrival: the lease's deadline had already passed when
	// the acquire returned (a Redlock whose validity was counted from an
	// earlier attempt, a client frozen inside its acquire), and the client
	// went on as the holder.
	CauseExpiredOnArrival = "expired-on-arrival"

	// Causes from the lock's own commands in the servers' command record
	// (ownercause.go): what let another client in when no fault did.

	// CauseMinorityQuorum: on independent masters, an acquire took fewer
	// nodes than a majority (its SET NX won on a minority) and counted it
	// as a quorum.
	CauseMinorityQuorum = "minority-quorum"
	// CauseForeignReentry: an acquire wrote its field (HINCRBY) into a hash
	// another client owned: the owner field was not checked.
	CauseForeignReentry = "foreign-reentry"
	// CauseFreedAboveZero: a release that left depth > 0 deleted the key.
	CauseFreedAboveZero = "freed-above-depth-0"
	// CauseFenceNotMonotonic: a fence not above one granted before, with no
	// fault that lost the counter: it did not come from the counter.
	CauseFenceNotMonotonic = "fence-not-monotonic"
	// CauseNotGranted: the lock returned an acquire as held that the node
	// had not granted: per the command record no write with its token ran
	// by its return (lost in a cut link, queued on a frozen node), or its
	// SET NX found the key held (grant.go).
	CauseNotGranted = "acquire-not-granted"
)

// cause explains why hold b could start while hold a (another client's) was
// still believed: it looks at what the servers reported on the key and at
// the faults and pauses between a's start and b's start.
func (m *model) cause(k int32, ai, bi int32) (string, string) {
	a, b := &m.holds[ai], &m.holds[bi]
	key := m.keys[k]
	ev := m.causeEvidence(k, ai, bi)
	both := fmt.Sprintf("client %d acquired %s at %s while client %d still believed it held it (since %s)", b.client, key, sec(b.start), a.client, sec(a.start))
	if cause, expl := nodeFaultCause(ev.fs, a, both); cause != "" {
		return cause, expl
	}
	if cause, expl := m.ownCause(k, ai, bi, both); cause != "" {
		return cause, expl
	}
	if cause, expl := m.grantCause(k, ai, bi, both); cause != "" {
		return cause, expl
	}
	cause, expl := clientCause(key, a, b, ev, both)
	if cause == CauseUnknown {
		if c, e := m.recordExpiry(k, ai, bi, both); c != "" {
			return c, e
		}
	}
	return cause, expl
}

// evidence is what cause weighs: the faults near the overlap (one per
// kind), a's key deleted by a release or expired on a server, and a pause
// of either client.
type evidence struct {
	fs               map[string]*fault
	expiredAt, delAt int64
	p, pb            *pause
	// np: the only node was frozen while a held the key, which the server
	// expired as it resumed, before b acquired (nodePaused).
	np  *fault
	ttl int64
	// npAt, cutAt: the expiry np's, cut's story tells.
	npAt, cutAt int64
	// cut: the clients' links to the only node were cut (partition) while
	// a held the key, which expired in the cut (linkCut).
	cut *fault
}

// causeEvidence gathers the evidence on holds ai and bi of key k, from a's
// start (a TTL before it for faults) to b's.
func (m *model) causeEvidence(k int32, ai, bi int32) evidence {
	a, b := &m.holds[ai], &m.holds[bi]
	from, to := a.start, b.start
	var fs = map[string]*fault{}
	for _, f := range m.faults {
		if !f.overlaps(from-m.ttl, to) {
			continue
		}
		// Of several faults of a kind, one aimed at a's client wins, then
		// the latest to start: a node restarted twice lost a's key in the
		// restart after a's acquire, not in the first.
		if prev, ok := fs[f.kind]; ok {
			mine, prevMine := f.clientTarget == int(a.client), prev.clientTarget == int(a.client)
			if prevMine && !mine || prevMine == mine && f.t < prev.t {
				continue
			}
		}
		fs[f.kind] = f
	}
	var expiredAt, delAt int64 = -1, -1
	dels := m.kd[k].badDels
	if m.useRecord() {
		// The record's deletes by another client (the unlock check's
		// evidence), where the observer may have matched none.
		dels = append(slices.Clip(dels), m.kd[k].cmdDels...)
	}
	for _, d := range dels {
		if d.release && d.victim == ai && d.t <= to {
			delAt = d.t
			break
		}
	}
	srv := m.kd[k].srv
	for i := m.srvFrom(k, from); i < len(srv) && srv[i].t <= to+m.ttl; i++ {
		s := srv[i]
		if s.kind == srvExpired && expiredAt < 0 {
			expiredAt = s.t
		}
	}
	var p *pause
	for i, pp := range m.clients[a.client].pauses {
		// From its acquire's invoke: a pause between the replies and the
		// ack (slow-acquire) counts.
		if pp.t <= to && pp.end >= a.acqT {
			p = &m.clients[a.client].pauses[i]
			break
		}
	}
	// The later client may be the one in the wrong: paused inside its own
	// acquire (between the replies and its validity check), it took a lock
	// whose keys had expired meanwhile.
	var pb *pause
	for i, pp := range m.clients[b.client].pauses {
		if pp.t >= b.acqT && pp.t <= b.start {
			pb = &m.clients[b.client].pauses[i]
			break
		}
	}
	np, npAt := m.nodePaused(k, a, b)
	cut, cutAt := m.linkCut(k, a, b)
	return evidence{fs: fs, expiredAt: expiredAt, delAt: delAt, p: p, pb: pb, np: np, npAt: npAt, ttl: m.ttl, cut: cut, cutAt: cutAt}
}

// nodeResumeExpiry: how soon after a frozen node resumes it expires a key
// whose TTL ran out in the freeze (its active expiry runs 10 times a
// second), beyond the observer's lag.
const nodeResumeExpiry = int64(100e6)

// nodePaused is the freeze of the only node (pause-node) that lost hold a's
// key to hold b: a acquired before the node resumed, b after, and the
// server expired the key in the freeze or as the node resumed, before b's
// ack (nil when the record does not show that), with that expiry.
func (m *model) nodePaused(k int32, a, b *hold) (*fault, int64) {
	if m.topo != "single" {
		return nil, -1
	}
	for _, f := range m.faults {
		if f.kind != history.FaultPauseNode || !f.applied || !f.healRecorded || a.start >= f.healT || b.start < f.healT {
			continue
		}
		if t := m.expiryIn(k, max(f.t, a.start), min(f.healT+m.lag+nodeResumeExpiry, b.start+m.lag)); t >= 0 {
			return f, t
		}
	}
	return nil, -1
}

// linkCut is the partition of the only node from the clients (requests
// lost: direction both or to-node) that held hold a off while its key
// expired: a acquired before the cut healed, and the server expired the
// key inside the cut, before b's ack (nil when the record does not show
// that), with that expiry.
func (m *model) linkCut(k int32, a, b *hold) (*fault, int64) {
	if m.topo != "single" {
		return nil, -1
	}
	for _, f := range m.faults {
		if f.kind != history.FaultPartition || !f.applied || !f.healRecorded || a.start >= f.healT || f.dir != "" && f.dir != "both" && f.dir != "to-node" {
			continue
		}
		if t := m.expiryIn(k, max(f.t, a.start), min(f.healT+m.lag, b.start+m.lag)); t >= 0 {
			return f, t
		}
	}
	return nil, -1
}

// expiryIn is the first expiry the server reported of key k (a library's
// own name for it included: keymap.go) in [lo, hi], or -1.
func (m *model) expiryIn(k int32, lo, hi int64) int64 {
	srv := m.kd[k].srv
	for i := m.srvFrom(k, lo); i < len(srv) && srv[i].t <= hi; i++ {
		if srv[i].kind == srvExpired {
			return srv[i].t
		}
	}
	return -1
}

// nodeFaultCause: a fault on the servers lost a's key ("": none did).
func nodeFaultCause(fs map[string]*fault, a *hold, both string) (cause, expl string) {
	switch {
	case fs[history.FaultIsolateNode] != nil && fs[history.FaultIsolateNode].applied:
		f := fs[history.FaultIsolateNode]
		nm := f.v.NewMaster
		if a.start >= f.t {
			return CauseMinorityMaster, fmt.Sprintf("%s was cut off from the rest of the cluster at %s and still took client %d's key (acquired %s); the majority promoted %s, which never got it, so %s.",
				targetName(f), sec(f.t), a.client, sec(a.start), ifElse(nm != "", nm, "a replica"), both)
		}
		return CauseFailover, fmt.Sprintf("%s was cut off from the rest of the cluster at %s; the majority promoted %s, which did not have client %d's key, so %s.",
			targetName(f), sec(f.t), ifElse(nm != "", nm, "a replica"), a.client, both)
	case fs[history.FaultFailover] != nil:
		f := fs[history.FaultFailover]
		nm := f.v.NewMaster
		return CauseFailover, fmt.Sprintf("the master failed over at %s%s; the promoted replica did not have client %d's key, so %s.",
			sec(f.t), ifs(nm != "", " to "+nm), a.client, both)
	case fs[history.FaultRestartNode] != nil && fs[history.FaultRestartNode].v.Mode != "delayed" || fs[history.FaultKillNode] != nil:
		f := fs[history.FaultRestartNode]
		if f == nil {
			f = fs[history.FaultKillNode]
		}
		return CauseEmptyRestart, fmt.Sprintf("%s restarted without client %d's key at %s; %s.", targetName(f), a.client, sec(f.t), both)
	case fs[history.FaultClockJump] != nil:
		f := fs[history.FaultClockJump]
		return CauseClockJump, fmt.Sprintf("%s's clock jumped forward by %s at %s and expired client %d's key early; %s.",
			targetName(f), f.v.Delta, sec(f.t), a.client, both)
	case fs[history.FaultClockDrift] != nil:
		f := fs[history.FaultClockDrift]
		return CauseClockDrift, fmt.Sprintf("%s's clock ran %s× fast and expired client %d's key early; %s.", targetName(f), f.v.Rate, a.client, both)
	}
	return "", ""
}

// clientCause: what happened to a's client, or to a's key on the server,
// explains the overlap with b.
func clientCause(key string, a, b *hold, ev evidence, both string) (string, string) {
	fs, expiredAt, delAt, p, pb := ev.fs, ev.expiredAt, ev.delAt, ev.p, ev.pb
	acted := ""
	if a.actAfter > 0 {
		acted = fmt.Sprintf(" and acted on the resource until %s", sec(a.actAfter))
	}
	switch {
	case delAt >= 0:
		return CauseNonOwnerDel, fmt.Sprintf("another client's release deleted client %d's key %s at %s; %s.", a.client, key, sec(delAt), both)
	case pb != nil && (p == nil || p.end < a.start):
		return CausePause, fmt.Sprintf("client %d was paused inside its acquire of %s (%s–%s), after the replies and before its validity check; its keys expired meanwhile and client %d acquired at %s; client %d then believed it held %s from %s.",
			b.client, key, sec(pb.t), sec(pb.end), a.client, sec(a.start), b.client, key, sec(b.start))
	case p != nil:
		// The template needs an end of the lease: the server's expiry,
		// else the promised validity, else the TTL it had (issue 40: "'s
		// lease on k0 while it was paused").
		exp := " ran out (no expiry of it in the server's record)"
		if ev.ttl > 0 {
			exp = fmt.Sprintf(" ran out (its TTL, %s; no expiry of it in the server's record)", dur(ev.ttl))
		}
		if expiredAt >= 0 {
			exp = fmt.Sprintf(" expired at %s", sec(expiredAt))
		} else if a.deadline > 0 {
			exp = fmt.Sprintf(" ran out at %s (its promised validity)", sec(a.deadline))
		}
		return CausePause, fmt.Sprintf("client %d's lease on %s%s while it was paused (%s–%s); client %d acquired at %s; client %d resumed at %s%s.",
			a.client, key, exp, sec(p.t), sec(p.end), b.client, sec(b.start), a.client, sec(p.end), acted)
	case ev.np != nil:
		f := ev.np
		return CausePause, fmt.Sprintf("%s was frozen from %s to %s (%.1f×TTL) while client %d held %s (acquired %s); the server expired the key at %s, as the node resumed, and client %d acquired it at %s while client %d still believed it held it%s.",
			targetName(f), sec(f.t), sec(f.healT), float64(f.healT-f.t)/float64(max(ev.ttl, 1)), a.client, key, sec(a.start), sec(ev.npAt), b.client, sec(b.start), a.client, acted)
	case a.lateDeadline > 0:
		return CauseExpiredOnArrival, fmt.Sprintf("client %d's lease on %s arrived already past its deadline: its acquire returned at %s, its validity had ended at %s; it went on as the holder%s; %s.",
			a.client, key, sec(a.start), sec(a.lateDeadline), acted, both)
	case b.lateDeadline > 0 && b.actAfter > 0:
		return CauseExpiredOnArrival, fmt.Sprintf("client %d's lease on %s arrived already past its deadline: its acquire returned at %s, its validity had ended at %s; it acted on the resource anyway, until %s, while client %d held %s (since %s).",
			b.client, key, sec(b.start), sec(b.lateDeadline), sec(b.actAfter), a.client, key, sec(a.start))
	case a.renewBad > 0:
		return CauseRenewalFailed, fmt.Sprintf("client %d's renewals failed (%d refused or unanswered) and its key expired; %s.", a.client, a.renewBad, both)
	case fs[history.FaultCutClient] != nil && fs[history.FaultCutClient].clientTarget == int(a.client) && fs[history.FaultCutClient].v.Nodes == "":
		return CausePartitioned, fmt.Sprintf("client %d was cut off from Redis at %s and its key expired; %s.", a.client, sec(fs[history.FaultCutClient].t), both)
	case ev.cut != nil:
		f := ev.cut
		return CausePartitioned, fmt.Sprintf("every client was cut off from %s from %s to %s (partition, %s) and client %d's key expired at %s while it still held it; %s.",
			targetName(f), sec(f.t), sec(f.healT), ifElse(f.dir == "", "both", f.dir), a.client, sec(ev.cutAt), both)
	case fs[history.FaultStallCommands] != nil && fs[history.FaultStallCommands].clientTarget == int(a.client):
		return CauseStalled, fmt.Sprintf("client %d's commands were delayed by %s and its key expired; %s.", a.client, fs[history.FaultStallCommands].v.Delay, both)
	case fs[history.FaultClockSkew] != nil && fs[history.FaultClockSkew].clientTarget == int(a.client) && skewRead(fs[history.FaultClockSkew], a):
		return CauseClockSkew, skewSentence(fs[history.FaultClockSkew], a, both)
	case a.actAfter > 0:
		return CauseActedLate, fmt.Sprintf("client %d acted on the resource at %s, after its lease's validity ended at %s; %s.", a.client, sec(a.actAfter), sec(a.deadline), both)
	case expiredAt >= 0:
		return CauseExpired, fmt.Sprintf("client %d's key %s expired at %s while it still held it; %s.", a.client, key, sec(expiredAt), both)
	}
	return CauseUnknown, both + "; nothing in the fault or server record explains it."
}

// skewRead reports whether a clock-skew fault on a's client could have
// made a trust its lease too long: the lock's lease arithmetic reads the
// client's clock. A lock that reports a lease deadline counts its validity
// on it; a clock running at another rate stretches any timer the lock
// reads on it (its renewals). A constant offset on a lock that reports no
// deadline (it only sets server TTLs) changes nothing it counts.
func skewRead(f *fault, a *hold) bool {
	if a.deadline > 0 {
		return true
	}
	r, err := strconv.ParseFloat(f.v.Rate, 64)
	return err == nil && r > 0 && r != 1
}

// skewSentence tells how a clock-skew fault on a's client let b in.
func skewSentence(f *fault, a *hold, both string) string {
	rate := ifs(f.v.Rate != "", fmt.Sprintf(" (rate %s×)", f.v.Rate))
	if a.deadline > 0 {
		return fmt.Sprintf("client %d's clock was skewed%s from %s and its lock counts the lease's validity on that clock, so it trusted its lease (to %s by its clock) too long; %s.",
			a.client, rate, sec(f.t), sec(a.deadline), both)
	}
	return fmt.Sprintf("client %d's clock ran at another rate%s from %s and its lock's timers (its renewals) read that clock, so its key expired while it held it; %s.",
		a.client, rate, sec(f.t), both)
}

func targetName(f *fault) string {
	if f.node != "" {
		return "node " + f.node
	}
	if f.target != "" {
		return f.target
	}
	return "a node"
}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func ifs(c bool, s string) string {
	if c {
		return s
	}
	return ""
}

// joinInts formats client ids.
func joinInts(xs []int32) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}
