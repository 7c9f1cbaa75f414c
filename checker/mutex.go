package checker

import (
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// checkMutex: two clients believe they hold the same key at the same
// instant. Per key the holds are swept in order of belief start, keeping the
// two latest-ending beliefs of distinct clients; a hold that starts before
// the other client's belief ended is a violation. O(h log h) per key.
func checkMutex(m *model, c *ctx) (CheckResult, bool) {
	res := CheckResult{Stats: map[string]any{}}
	var count, holds, empty, uncertain int
	var overlapNS, uncertainMax int64
	for k, kd := range m.kd {
		m.index(kd)
		holds += len(kd.holds)
		// a: the belief reaching furthest; b: the furthest of another client.
		a, b := int32(-1), int32(-1)
		for _, hi := range kd.holds {
			h := &m.holds[hi]
			if h.empty {
				empty++
				continue
			}
			prev := a
			if prev >= 0 && m.holds[prev].client == h.client {
				prev = b
			}
			overlapping := prev >= 0 && m.holds[prev].belief > h.start
			if overlapping {
				p := &m.holds[prev]
				if d := min(p.belief, h.belief) - h.start; d <= m.uncertainty(p.client, h.client) {
					// Two workers' clocks may disagree by that much: the
					// overlap may not have happened.
					uncertain++
					uncertainMax = max(uncertainMax, d)
					overlapping = false
				}
			}
			if overlapping {
				p := &m.holds[prev]
				end := min(p.belief, h.belief)
				overlapNS += max(end-h.start, 0)
				cause, expl := "", ""
				if count < c.o.MaxViolations {
					cause, expl = m.cause(int32(k), prev, hi)
				}
				c.violate(Violation{Check: CheckMutex, Key: m.keys[k], Clients: []int{int(p.client), int(h.client)},
					AtMS: history.MS(h.start), Window: [2]int64{h.start, end},
					Detail: fmt.Sprintf("client %d acquired %s at %s while client %d believed it held it (acquired %s, believed until %s)",
						h.client, m.keys[k], sec(h.start), p.client, sec(p.start), sec(p.belief)),
					Cause: cause, Explanation: expl, Lease: m.lease(prev)}, &count)
			}
			switch {
			case a < 0 || h.belief > m.holds[a].belief:
				if a >= 0 && m.holds[a].client != h.client {
					b = a
				}
				a = hi
			case m.holds[a].client != h.client && (b < 0 || h.belief > m.holds[b].belief):
				b = hi
			}
		}
	}
	res.Violations = count
	res.Verdict = verdictOf(count, holds > 0)
	if uncertain > 0 {
		if count == 0 {
			res.Verdict = Unknown
		}
		res.Stats["overlaps_within_clock_uncertainty"] = uncertain
		res.Notes = append(res.Notes, uncertainNote(uncertain, uncertainMax, "overlaps"))
	}
	res.Stats["holds"] = holds
	res.Stats["overlap_ms"] = history.MS(overlapNS)
	if empty > 0 {
		res.Stats["expired_on_arrival"] = empty
		res.Notes = append(res.Notes, fmt.Sprintf("%d leases arrived already past their deadline and were never acted on: no belief, no overlap", empty))
	}
	if holds == 0 {
		res.Notes = append(res.Notes, "no lock was ever acquired: nothing to check")
	}
	if !m.honours {
		res.Notes = append(res.Notes, "clients did not honour Lost/Deadline: beliefs last until the release")
	}
	return res, true
}
