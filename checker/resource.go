package checker

import (
	"fmt"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// resourceKind returns the run's protected resource.
func (m *model) resourceKind() string {
	if r, _ := m.meta["resource"].(string); r != "" {
		return r
	}
	return "counter"
}

// resourceAcc accumulates the resource check over judged windows.
type resourceAcc struct {
	count, accepted, rejected, total, uncertain int
	oversold, uncertainMax                      int64
}

// judgeResource: the protected resource shows a lost update or interleaved
// critical sections. Every write is value(read)±1, so per key the accepted
// writes, in the order the resource applied them, must each be based on a
// read made after the previous accepted write was applied. A write whose
// read predates another client's applied write overwrote that write: a lost
// update (for an inventory, a unit sold twice: overselling). Rejected writes
// (a fenced register refusing a stale token) changed nothing and are not
// counted. O(w log w) per key. A write is judged in the window of its
// application.
func judgeResource(m *model, c *ctx) {
	a := &c.resource
	kind := m.resourceKind()
	for k, kd := range m.kd {
		if len(kd.writes) == 0 {
			continue
		}
		ws := make([]int, 0, len(kd.writes))
		for i := range kd.writes {
			w := &kd.writes[i]
			if w.ok {
				ws = append(ws, i)
			}
			if m.in(w.at) {
				a.total++
				if w.ok {
					a.accepted++
				} else {
					a.rejected++
				}
			}
		}
		sort.SliceStable(ws, func(i, j int) bool { return kd.writes[ws[i]].at < kd.writes[ws[j]].at })
		for n := 1; n < len(ws); n++ {
			w, p := &kd.writes[ws[n]], &kd.writes[ws[n-1]]
			if !m.in(w.at) || w.readAt < 0 || p.client == w.client || p.at <= w.readAt {
				continue
			}
			if d := p.at - w.readAt; d <= m.uncertainty(p.client, w.client) {
				a.uncertain++
				a.uncertainMax = max(a.uncertainMax, d)
				continue
			}
			if kind == "inventory" {
				a.oversold++
			}
			if a.count >= c.o.MaxViolations {
				a.count++
				continue
			}
			cause, expl := CauseLostUpdate, ""
			var lease *Lease
			var ha, hb int32 = w.hold, p.hold
			if ha >= 0 && hb >= 0 {
				x, y := ha, hb
				if m.holds[y].start < m.holds[x].start {
					x, y = y, x
				}
				if m.holds[x].belief > m.holds[y].start {
					cause, expl = m.cause(int32(k), x, y)
					lease = m.lease(x)
				}
			}
			what := "lost update"
			if kind == "inventory" {
				what = "oversold"
			}
			detail := fmt.Sprintf("%s: client %d read %d at %s and wrote %d at %s, after client %d's write of %d was applied at %s",
				what, w.client, w.readVal, sec(w.readAt), w.value, sec(w.at), p.client, p.value, sec(p.at))
			if expl == "" {
				expl = fmt.Sprintf("client %d's critical section (read at %s, write at %s) interleaved with client %d's write at %s, so client %d's update was overwritten.",
					w.client, sec(w.readAt), sec(w.at), p.client, sec(p.at), p.client)
			} else {
				expl += fmt.Sprintf(" Client %d's write at %s overwrote client %d's update.", w.client, sec(w.at), p.client)
			}
			c.violate(Violation{Check: CheckResource, Key: m.keys[k], Clients: []int{int(p.client), int(w.client)},
				AtMS: history.MS(w.at), Window: [2]int64{w.readAt, w.at}, Detail: detail, Cause: cause, Explanation: expl, Lease: lease}, &a.count)
		}
	}
}

func resultResource(m *model, c *ctx) (CheckResult, bool) {
	a := &c.resource
	kind := m.resourceKind()
	res := CheckResult{Stats: map[string]any{}}
	res.Violations = a.count
	res.Verdict = verdictOf(a.count, a.accepted > 0)
	if a.uncertain > 0 {
		if a.count == 0 {
			res.Verdict = Unknown
		}
		res.Stats["interleavings_within_clock_uncertainty"] = a.uncertain
		res.Notes = append(res.Notes, uncertainNote(a.uncertain, a.uncertainMax, "interleavings (a write applied after another client's read)"))
	}
	res.Stats["resource"] = kind
	res.Stats["writes"] = a.total
	res.Stats["accepted"] = a.accepted
	res.Stats["rejected"] = a.rejected
	if kind == "inventory" {
		res.Stats["oversold_units"] = a.oversold
	}
	if a.total == 0 {
		res.Notes = append(res.Notes, "no write reached the resource: nothing to check")
	}
	if a.rejected > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the resource rejected %d stale writes (fencing)", a.rejected))
	}
	return res, true
}
