package checker

import (
	"fmt"
	"slices"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// CauseFenceIssuedLate: a fence came from a command (INCR) the server ran
// after the key it belongs to had gone and another client's acquire had
// taken it: above that client's fence, though its key was taken before.
const CauseFenceIssuedLate = "fence-issued-late"

// fencingAcc accumulates the fencing check over judged windows.
type fencingAcc struct {
	fenced         bool
	count, checked int
}

// judgeFencing: the resource accepted a write whose fencing token was lower
// than one it had accepted before, or a new owner got a token not greater
// than the previous owner's. Applies only when the lock issues fences. A
// write is judged in the window of its invoke, a hold in that of its
// acquire's invoke.
func judgeFencing(m *model, c *ctx) {
	a := &c.fencing
	if !a.fenced {
		for i := range m.holds {
			if m.holds[i].fence > 0 {
				a.fenced = true
				break
			}
		}
	}
	if !a.fenced {
		return
	}
	for k, kd := range m.kd {
		// An accepted write whose token is lower than that of a write the
		// resource had accepted before it was sent got through stale.
		// Writes whose windows overlap may have been applied in either
		// order.
		ws := make([]int, 0, len(kd.writes))
		for i := range kd.writes {
			if kd.writes[i].ok && kd.writes[i].fence > 0 {
				ws = append(ws, i)
			}
		}
		byAck := slices.Clone(ws)
		sort.SliceStable(byAck, func(i, j int) bool { return kd.writes[byAck[i]].at < kd.writes[byAck[j]].at })
		sort.SliceStable(ws, func(i, j int) bool { return kd.writes[ws[i]].t < kd.writes[ws[j]].t })
		maxW, next := -1, 0
		for _, i := range ws {
			w := &kd.writes[i]
			for next < len(byAck) && kd.writes[byAck[next]].at < w.t {
				if q := byAck[next]; maxW < 0 || kd.writes[q].fence > kd.writes[maxW].fence {
					maxW = q
				}
				next++
			}
			if !m.in(w.t) {
				continue
			}
			a.checked++
			if maxW >= 0 && w.fence < kd.writes[maxW].fence {
				maxF, maxC := kd.writes[maxW].fence, kd.writes[maxW].client
				cause, expl := m.staleTokenCause(int32(k), w.hold, kd.writes[maxW].hold)
				expl = fmt.Sprintf("a stale token (%s < %s) got through: the resource does not enforce fencing.%s", fenceStr(w.fence), fenceStr(maxF), ifs(expl != "", " "+expl))
				c.violate(Violation{Check: CheckFencing, Key: m.keys[k], Clients: []int{int(maxC), int(w.client)}, AtMS: history.MS(w.at),
					Window: [2]int64{w.t, w.at}, Cause: cause,
					Detail:      fmt.Sprintf("the resource accepted client %d's write with token %d at %s after accepting token %d from client %d", w.client, w.fence, sec(w.at), maxF, maxC),
					Explanation: expl}, &a.count)
			}
		}
		// Tokens must follow the order of the grants. A grant happens
		// somewhere between the acquire's invoke and its ack, so a hold
		// whose acquire was invoked after another's ack was certainly
		// granted after it and must carry a greater token. Holds whose
		// windows overlap may have been granted in either order: a
		// client frozen between the server's reply and its ack (a GC
		// pause in acquire) returns with a token older than tokens
		// granted meanwhile, and that is the counter working.
		fencingOrder(m, c, k, kd, &a.count)
	}
}

func resultFencing(m *model, c *ctx) (CheckResult, bool) {
	a := &c.fencing
	if !a.fenced {
		return CheckResult{}, false
	}
	res := CheckResult{Stats: map[string]any{}}
	res.Violations = a.count
	res.Verdict = verdictOf(a.count, true)
	res.Stats["fenced_writes"] = a.checked
	return res, true
}

// fencingOrder flags, on one key, each hold whose token is not greater than
// the greatest token of the holds acked before its acquire was invoked.
func fencingOrder(m *model, c *ctx, k int, kd *keyData, count *int) {
	var hs []int32
	for _, hi := range kd.holds {
		if m.holds[hi].fence > 0 {
			hs = append(hs, hi)
		}
	}
	byAck := slices.Clone(hs)
	sort.SliceStable(byAck, func(i, j int) bool { return m.holds[byAck[i]].start < m.holds[byAck[j]].start })
	sort.SliceStable(hs, func(i, j int) bool { return m.holds[hs[i]].acqT < m.holds[hs[j]].acqT })
	var prev int32 = -1 // the hold with the greatest token among those acked so far
	next := 0
	var flagged map[int32]bool
	for _, hi := range hs {
		h := &m.holds[hi]
		for next < len(byAck) && m.holds[byAck[next]].start < h.acqT {
			if q := byAck[next]; prev < 0 || m.holds[q].fence > m.holds[prev].fence {
				prev = q
			}
			next++
		}
		if prev < 0 || h.fence > m.holds[prev].fence {
			continue
		}
		// Marked whatever the window (fencingByTakes judges a hold in
		// the window of its ack, this in the window of its invoke: a
		// hold flagged here is not flagged there again); reported in the
		// window of its invoke.
		if flagged == nil {
			flagged = map[int32]bool{}
		}
		flagged[hi] = true
		if !m.in(h.acqT) {
			continue
		}
		p := &m.holds[prev]
		cause, expl := m.fenceOrderCause(k, hi, prev)
		c.violate(Violation{Check: CheckFencing, Key: m.keys[k], Clients: []int{int(p.client), int(h.client)}, AtMS: history.MS(h.start),
			Window: [2]int64{p.start, h.start}, Cause: cause, Explanation: expl,
			Detail: fmt.Sprintf("client %d's acquire invoked at %s got token %d, not greater than token %d that client %d had been granted by %s", h.client, sec(h.acqT), h.fence, p.fence, p.client, sec(p.start))}, count)
	}
	m.fencingByTakes(c, k, hs, flagged, count)
}

// fenceOrderCause explains why hold hi's fence is not above hold pi's,
// granted before it: a fault that lost the counter, else the lock's own
// commands (fenceCause).
func (m *model) fenceOrderCause(k int, hi, prev int32) (string, string) {
	h, p := &m.holds[hi], &m.holds[prev]
	cause, expl := CauseUnknown, fmt.Sprintf("the fencing counter went backwards (%d after %d).", h.fence, p.fence)
	for _, f := range m.faults {
		if f.kind == history.FaultIsolateNode && f.applied && f.t <= p.start && max(f.healT, f.end) >= p.start {
			cause, expl = CauseMinorityMaster, fmt.Sprintf("the fencing counter went backwards (%d after %d): token %d came from %s, cut off from the rest of the cluster at %s, and the replica the majority promoted never got that increment.", h.fence, p.fence, p.fence, targetName(f), sec(f.t))
			break
		}
		if (f.kind == history.FaultFailover || f.kind == history.FaultRestartNode || f.kind == history.FaultKillNode) && f.t >= p.start && f.t <= h.start {
			cause, expl = CauseFailover, fmt.Sprintf("the fencing counter went backwards (%d after %d) across the %s at %s: the counter key was lost with the node's data.", h.fence, p.fence, f.kind, sec(f.t))
			if f.kind != history.FaultFailover {
				cause = CauseEmptyRestart
			}
			break
		}
	}
	if cause == CauseUnknown {
		cause, expl = m.fenceCause(int32(k), hi, prev)
	}
	return cause, expl
}

// fencingByTakes judges the fences of key k's fenced holds hs in the
// server's order, where the command record shows when each hold's key was
// taken (takeOf): a hold whose key was taken after another's must carry a
// greater fence, whatever the order its acquire returned in. A lock whose
// token is an INCR after its SET NX, its commands slowed, hands a holder
// whose key had expired meanwhile a fence above its successors' (issue 40:
// 12 after 10 and 11): fencing then lets the stale holder's writes through
// over theirs. flagged are the holds the acquire windows flagged already.
func (m *model) fencingByTakes(c *ctx, k int, hs []int32, flagged map[int32]bool, count *int) {
	type taken struct {
		hi int32
		t  int64
	}
	var ts []taken
	for _, hi := range hs {
		if tk := m.takeOf(hi); tk != nil {
			ts = append(ts, taken{hi, tk.t})
		}
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].t < ts[j].t })
	// Against the holds whose keys were taken in the 2×TTL before: a
	// successor takes the key within about a TTL of its predecessor's take
	// (its key expired, or was released), and a streamed check keeps
	// exactly those holds and their takes (its margin is over 2×TTL), so
	// whole and streamed judge alike.
	look := 2 * m.ttl
	for n, x := range ts {
		h := &m.holds[x.hi]
		var prev int32 = -1 // the greatest fence among the holds whose keys were taken before
		for j := n - 1; j >= 0 && (look == 0 || ts[j].t >= x.t-look); j-- {
			if q := ts[j].hi; ts[j].t < x.t && (prev < 0 || m.holds[q].fence > m.holds[prev].fence) {
				prev = q
			}
		}
		// Judged in the window that has all of its acquire's commands
		// replayed (to its ack plus the record's slack), where a
		// streamed check knows its take as the whole check does.
		if prev >= 0 && h.fence <= m.holds[prev].fence && m.in(h.start+m.ownSlack()) && !flagged[x.hi] {
			p := &m.holds[prev]
			cause, expl := m.lateFenceCause(int32(k), x.hi, prev, x.t)
			if cause == "" {
				cause, expl = m.fenceOrderCause(k, x.hi, prev)
			}
			c.violate(Violation{Check: CheckFencing, Key: m.keys[k], Clients: []int{int(p.client), int(h.client)}, AtMS: history.MS(h.start),
				Window: [2]int64{p.acqT, h.start}, Cause: cause, Explanation: expl,
				Detail: fmt.Sprintf("client %d's key was taken at %s, after client %d's, yet its token %d is not greater than client %d's token %d (in the order the server took the key, per the command record)",
					h.client, sec(x.t), p.client, h.fence, p.client, p.fence)}, count)
		}
	}
}

// lateFenceCause: hold pi's fence, above hold hi's though pi's key was
// taken first, came from an INCR the server ran after hi's acquire took
// the key at takeT (so after pi's own key had gone: the server let hi take
// it): the fence was issued for a lease that had already ended ("" when
// the record shows no such INCR).
func (m *model) lateFenceCause(k, hi, pi int32, takeT int64) (string, string) {
	incs := m.inAcquire(m.kd[k].ownIncrs, pi)
	if len(incs) == 0 {
		return "", ""
	}
	inc := incs[len(incs)-1]
	if inc.t <= takeT {
		return "", ""
	}
	h, p := &m.holds[hi], &m.holds[pi]
	ptake := ""
	if tk := m.takeOf(pi); tk != nil {
		ptake = fmt.Sprintf(" (its %s took %s at %s)", tk.what(), m.keys[k], sec(tk.t))
	}
	return CauseFenceIssuedLate, fmt.Sprintf("client %d's fence %s was issued late: its acquire's %s ran on %s at %s, after its key%s had expired and client %d's acquire had taken %s at %s with fence %s; the lease that fence belongs to had ended before it was issued, and it outranks its successor's, so fencing lets client %d's stale writes through (client %d's acquire returned at %s).",
		p.client, fenceStr(p.fence), inc.what(), m.nodes[inc.node], sec(inc.t), ptake, h.client, m.keys[k], sec(takeT), fenceStr(h.fence), p.client, p.client, sec(p.start))
}
