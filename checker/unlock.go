package checker

import (
	"fmt"
	"sort"
)

// callAt returns the index of the latest call in calls (sorted by invoke
// time) whose span [t, end+lag] contains x and whose client passes want, or
// -1. Calls are short, so it looks back a bounded number of them.
func callAt[T any](calls []T, span func(*T) (client int32, t, end int64), x, lag int64, want func(int32) bool) int {
	i := sort.Search(len(calls), func(i int) bool { _, t, _ := span(&calls[i]); return t > x }) - 1
	for n := 0; i >= 0 && n < 64; i, n = i-1, n+1 {
		if cl, _, end := span(&calls[i]); want(cl) && x <= end+lag {
			return i
		}
	}
	return -1
}

func releaseSpan(r *release) (int32, int64, int64) { return r.client, r.t, r.end }
func renewalSpan(r *renewal) (int32, int64, int64) { return r.client, r.t, r.end }

// releaserAt returns a release call of a client other than not on key k
// in flight at x, or -1.
func (m *model) releaserAt(k int32, not int32, x int64) int {
	return callAt(m.kd[k].releases, releaseSpan, x, m.lag, func(c int32) bool { return c != not })
}

// renewerAt is releaserAt for renewal calls.
func (m *model) renewerAt(k int32, not int32, x int64) int {
	return callAt(m.kd[k].renewals, renewalSpan, x, m.lag, func(c int32) bool { return c != not })
}

// ownCallAt reports whether client had a release or renewal of its own on
// k in flight at x (then the del or pexpire may be its own).
func (m *model) ownCallAt(k int32, client int32, x int64) bool {
	is := func(c int32) bool { return c == client }
	return callAt(m.kd[k].releases, releaseSpan, x, m.lag, is) >= 0 || callAt(m.kd[k].renewals, renewalSpan, x, m.lag, is) >= 0
}

// ownerAt returns the hold whose acquire wrote key k on a node at time x:
// the hold with the earliest ack at or after x − lag whose invoke came
// before x. -1 when no acquire explains the write.
func (m *model) ownerAt(k int32, x int64) int32 {
	kd := m.kd[k]
	m.index(kd)
	hs := kd.holds
	i := sort.Search(len(hs), func(i int) bool { return m.holds[hs[i]].start >= x-m.lag })
	for n := 0; i < len(hs) && n < 64; i, n = i+1, n+1 {
		if h := &m.holds[hs[i]]; h.acqT <= x {
			return hs[i]
		}
	}
	return -1
}

// badDel is a server-side change of a key made by a call of a client that
// did not own it.
type badDel struct {
	t       int64
	node    int16
	victim  int32 // hold whose key was changed
	culprit int32 // client whose call changed it
	release bool  // a release deleted it (else a renewal extended it)
}

// attributeDels walks every key's server record once: the key's owner on a
// node is the client whose acquire wrote it last; a del (pexpire) while the
// owner still held it, made during another client's release (renewal) and
// not during one of the owner's own calls, was a non-owner unlock.
func (m *model) attributeDels() {
	m.badDels = make([][]badDel, len(m.kd))
	for k, kd := range m.kd {
		k := int32(k)
		owner := map[int16]int32{} // node → hold that wrote the key last
		for _, s := range kd.srv {
			if !m.masterAt(s.node, s.t) {
				continue
			}
			switch s.kind {
			case srvSet:
				owner[s.node] = m.ownerAt(k, s.t)
				continue
			case srvExpired:
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
				delete(owner, s.node)
			}
			if !ok || o < 0 {
				continue
			}
			h := &m.holds[o]
			if s.t > h.heldTo+m.lag || s.t < h.acqT || m.ownCallAt(k, h.client, s.t) {
				continue
			}
			if s.kind == srvDel {
				if i := m.releaserAt(k, h.client, s.t); i >= 0 {
					m.badDels[k] = append(m.badDels[k], badDel{s.t, s.node, o, kd.releases[i].client, true})
				}
			} else if i := m.renewerAt(k, h.client, s.t); i >= 0 {
				m.badDels[k] = append(m.badDels[k], badDel{s.t, s.node, o, kd.renewals[i].client, false})
			}
		}
	}
}

// checkUnlock: a release or renewal changed a key another owner held (see
// attributeDels). Without an observer the check does not run.
func checkUnlock(m *model, c *ctx) (CheckResult, bool) {
	if !m.observerOK {
		if len(m.observerNo) > 0 {
			c.notes = append(c.notes, "unlock check not run: the backend delivers no keyspace notifications, so what releases removed cannot be seen")
		}
		return CheckResult{}, false
	}
	res := CheckResult{Stats: map[string]any{"server_dels": m.dels}}
	var count int
	for k, bds := range m.badDels {
		key := m.keys[k]
		for _, d := range bds {
			h := &m.holds[d.victim]
			call, what := "release", "deleted"
			if !d.release {
				call, what = "renewal", "extended"
			}
			c.violate(Violation{Check: CheckUnlock, Key: key, Clients: []int{int(d.culprit), int(h.client)},
				AtMS: msOf(d.t), Window: [2]int64{d.t, d.t}, Cause: CauseNonOwnerDel,
				Detail: fmt.Sprintf("client %d's %s %s %s on %s at %s while client %d held it (acquired %s)",
					d.culprit, call, what, key, m.nodes[d.node], sec(d.t), h.client, sec(h.start)),
				Explanation: fmt.Sprintf("client %d no longer owned %s but its %s %s client %d's lock at %s.", d.culprit, key, call, what, h.client, sec(d.t)),
			}, &count)
		}
	}
	res.Violations = count
	res.Verdict = verdictOf(count, len(m.holds) > 0)
	return res, true
}

// masterAt reports whether node was a master at t. Every node is a master
// except under Sentinel, where the first node is until a failover names
// another (the failover fault's effect new_master).
func (m *model) masterAt(node int16, t int64) bool {
	if m.topo != "sentinel" || len(m.nodes) == 0 {
		return true
	}
	master := "n1"
	for _, f := range m.faults {
		if f.kind == "failover" && f.t <= t {
			if nm := f.effect["new_master"]; nm != "" {
				master = nm
			}
		}
	}
	return m.nodes[node] == master
}
