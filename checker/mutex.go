package checker

import (
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// mutexAcc accumulates the mutex check over judged windows.
type mutexAcc struct {
	count, holds, empty, uncertain int
	overlapNS, uncertainMax        int64
}

// judgeMutex: two clients believe they hold the same key at the same
// instant. Per key the holds are swept in order of belief start, keeping the
// two latest-ending beliefs of distinct clients; a hold that starts before
// the other client's belief ended is a violation. O(h log h) per key. Holds
// that started before the window are swept for their beliefs only (they
// were judged in an earlier window).
func judgeMutex(m *model, c *ctx) {
	a := &c.mutex
	for k, kd := range m.kd {
		m.index(kd)
		// x: the belief reaching furthest; y: the furthest of another client.
		x, y := int32(-1), int32(-1)
		for _, hi := range kd.holds {
			h := &m.holds[hi]
			if h.empty {
				if m.in(h.start) {
					a.empty++
				}
				continue
			}
			if m.in(h.start) {
				a.holds++
				prev := x
				if prev >= 0 && m.holds[prev].client == h.client {
					prev = y
				}
				overlapping := prev >= 0 && m.holds[prev].belief > h.start
				if overlapping {
					p := &m.holds[prev]
					if d := min(p.belief, h.belief) - h.start; d <= m.uncertainty(p.client, h.client) {
						// Two workers' clocks may disagree by that much: the
						// overlap may not have happened.
						a.uncertain++
						a.uncertainMax = max(a.uncertainMax, d)
						overlapping = false
					}
				}
				if overlapping {
					p := &m.holds[prev]
					end := min(p.belief, h.belief)
					a.overlapNS += max(end-h.start, 0)
					cause, expl := "", ""
					if a.count < c.o.MaxViolations {
						cause, expl = m.cause(int32(k), prev, hi)
					}
					c.violate(Violation{Check: CheckMutex, Key: m.keys[k], Clients: []int{int(p.client), int(h.client)},
						AtMS: history.MS(h.start), Window: [2]int64{h.start, end},
						Detail: fmt.Sprintf("client %d acquired %s at %s while client %d believed it held it (acquired %s, believed until %s)",
							h.client, m.keys[k], sec(h.start), p.client, sec(p.start), sec(p.belief)),
						Cause: cause, Explanation: expl, Lease: m.lease(prev)}, &a.count)
				}
			}
			switch {
			case x < 0 || h.belief > m.holds[x].belief:
				if x >= 0 && m.holds[x].client != h.client {
					y = x
				}
				x = hi
			case m.holds[x].client != h.client && (y < 0 || h.belief > m.holds[y].belief):
				y = hi
			}
		}
	}
}

func resultMutex(m *model, c *ctx) (CheckResult, bool) {
	a := &c.mutex
	res := CheckResult{Stats: map[string]any{}}
	res.Violations = a.count
	res.Verdict = verdictOf(a.count, a.holds+a.empty > 0)
	if a.uncertain > 0 {
		if a.count == 0 {
			res.Verdict = Unknown
		}
		res.Stats["overlaps_within_clock_uncertainty"] = a.uncertain
		res.Notes = append(res.Notes, uncertainNote(a.uncertain, a.uncertainMax, "overlaps"))
	}
	res.Stats["holds"] = a.holds + a.empty
	res.Stats["overlap_ms"] = history.MS(a.overlapNS)
	if a.empty > 0 {
		res.Stats["expired_on_arrival"] = a.empty
		res.Notes = append(res.Notes, fmt.Sprintf("%d leases arrived already past their deadline and were never acted on: no belief, no overlap", a.empty))
	}
	if a.holds+a.empty == 0 {
		res.Notes = append(res.Notes, "no lock was ever acquired: nothing to check")
	}
	if !m.honours {
		res.Notes = append(res.Notes, "clients did not honour Lost/Deadline: beliefs last until the release")
	}
	return res, true
}
