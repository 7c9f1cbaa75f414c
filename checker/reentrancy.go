package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// judgeReentrancy: hold counts are consistent, a re-entry happens only while
// the client still owns the key, and the key is freed only at depth 0.
//   - a re-entry must report depth = the client's count + 1, or 1 when the
//     lock found its key gone and took it afresh (a hash lock after expiry);
//   - a re-entry that succeeded while another client held the key (by its
//     belief, from a hold it began after the re-entering client's own)
//     re-entered a lock that was no longer the client's;
//   - a del of the key during a release that leaves depth > 0 freed it early.
//
// Runs only when the history shows re-entries.
// Re-entries are judged in the window of their invoke, dels in that of
// their notification.
func judgeReentrancy(m *model, c *ctx) {
	for k, kd := range m.kd {
		m.judgeReentries(c, int32(k), kd)
		m.judgeEarlyFrees(c, int32(k), kd)
	}
}

// judgeReentries: a re-entry (depth > 1) after the client's key expired at
// the server or while another client held it.
func (m *model) judgeReentries(c *ctx, k int32, kd *keyData) {
	a := &c.reent
	// A client's last stale level on k: its next outermost acquires answer
	// the same depth until a release finally frees the key (one leftover
	// level, told once).
	var lastStale map[int32]nested
	for _, r := range kd.nested {
		if !m.in(r.t) {
			continue
		}
		a.n++
		if r.depth == 1 {
			a.fresh++
			continue
		}
		if r.stale {
			p, ok := lastStale[r.client]
			if lastStale == nil {
				lastStale = map[int32]nested{}
			}
			lastStale[r.client] = r
			if ok && p.depth == r.depth && !freshHoldBetween(m, kd, r.client, p.hold, r.hold) {
				a.sameLevel++
				continue
			}
			m.judgeStaleLevel(c, k, kd, r)
			continue
		}
		own := &m.holds[r.hold]
		var expired int64 = -1
		// Expiries seen within the observer's lag of its own ack are the
		// previous owner's key's.
		for i := m.srvFrom(k, own.start+m.lag); i < len(kd.srv) && kd.srv[i].t <= r.t; i++ {
			if s := kd.srv[i]; s.kind == srvExpired && m.masterAt(s.node, s.t) {
				expired = s.t
				break
			}
		}
		// Another client's belief counts only from a hold whose key was
		// taken after the re-entering client's was (in the server's
		// order, not the acks'): one taken before and still believed in
		// when this client acquired is the mutex check's overlap (that
		// client's lease had run out, however late its acquire
		// returned; this one's acquire was granted), and the re-entry
		// went into this client's own, live key.
		o := m.laterHolderAt(k, r.hold, r.at)
		if o < 0 && expired < 0 {
			continue
		}
		var expl string
		cause, why := CauseLocalReentry, ": the hold count was not checked against the server."
		clients := []int{int(r.client)}
		if o >= 0 {
			h := &m.holds[o]
			clients = []int{int(h.client), int(r.client)}
			expl = fmt.Sprintf("client %d re-entered %s at depth %d at %s, but client %d had held it since %s", r.client, m.keys[k], r.depth, sec(r.at), h.client, sec(h.start))
			if oc, oe := m.ownCause(k, o, r.hold, expl); oc != "" {
				// The lock's own commands let client r in while o held
				// (an acquire into o's hash, o's release freeing it).
				cause, expl, why = oc, strings.TrimSuffix(oe, "."), "."
			} else if expired >= 0 {
				expl += fmt.Sprintf("; client %d's key had expired at the server at %s", r.client, sec(expired))
			}
		} else {
			expl = fmt.Sprintf("client %d re-entered %s at depth %d at %s, but its key had expired at the server at %s", r.client, m.keys[k], r.depth, sec(r.at), sec(expired))
		}
		c.violate(Violation{Check: CheckReentrancy, Key: m.keys[k], Clients: clients, AtMS: history.MS(r.at),
			Window: [2]int64{r.t, r.at}, Cause: cause, Explanation: expl + why, Lease: m.lease(r.hold),
			Detail: fmt.Sprintf("re-entry at depth %d by client %d after it had lost the key", r.depth, r.client)}, &a.count)
	}
}

// judgeStaleLevel: client r.client acquired k holding no lease on it, and
// the lock answered depth r.depth: it counted levels the client had given
// up. Each release of the client's then leaves the key held with nobody
// believing it (a watchdog renews it): the others wait for a lock nobody
// holds. The sentence names the client's last release before, and its
// outcome (one that never reached the server: cancelled, cut).
func (m *model) judgeStaleLevel(c *ctx, k int32, kd *keyData, r nested) {
	prior, relEnd := "", int64(-1)
	for i := len(kd.releases) - 1; i >= 0; i-- {
		if rel := &kd.releases[i]; rel.client == r.client && rel.end <= r.t {
			prior, relEnd = fmt.Sprintf("; its release of %s at %s", m.keys[k], sec(rel.t)), rel.end
			if rel.refused {
				prior += " was refused"
			}
			break
		}
	}
	v := Violation{Check: CheckReentrancy, Key: m.keys[k], Clients: []int{int(r.client)}, AtMS: history.MS(r.at),
		Window: [2]int64{r.t, r.at}, Cause: CauseReleasedLevelKept, Lease: m.lease(r.hold),
		Detail: fmt.Sprintf("client %d's acquire of %s answered depth %d while it held no lease on it", r.client, m.keys[k], r.depth)}
	if tk, a := m.orphanLevel(kd, r.client, relEnd, r.t, r.at); a != nil {
		// The servers' record shows where the level came from: a take of
		// the client's own within an acquire it was told had failed.
		answer := a.answer()
		v.Cause = CauseFailedAcquireKept
		v.Explanation = fmt.Sprintf("client %d acquired %s at %s holding no lease on it, and the lock answered depth %d: its acquire of %s at %s answered %s, yet %s took the key at %s (the servers' record), a level the client never knew it held. Its last release then leaves the key held, with nobody believing it holds it.",
			r.client, m.keys[k], sec(r.at), r.depth, m.keys[k], sec(a.t), answer, tk.what(), sec(tk.t))
	} else {
		if a := lastFailed(kd, r.client, relEnd, r.t); a != nil {
			// No take to prove it (the key was there already): either the
			// release kept its level or this acquire's command ran.
			prior += fmt.Sprintf(", or its acquire of %s at %s, answered %s, counted one all the same", m.keys[k], sec(a.t), a.answer())
		}
		v.Explanation = fmt.Sprintf("client %d acquired %s at %s holding no lease on it, and the lock answered depth %d: it counted %d level(s) the client had released%s. The client's last release then leaves the key held, with nobody believing it holds it.",
			r.client, m.keys[k], sec(r.at), r.depth, r.depth-1, prior)
	}
	c.violate(v, &c.reent.count)
}

// orphanLevel: the last acquire of client's that answered failed or
// unknown after from (its last release's end) and before t (the stale
// acquire's invoke), with a key-take by client's connection after that
// acquire began and by at (the stale acquire's end); nil, nil without the
// servers' record or either. The key was absent then and client's own
// command created it, and the only acquires client made since its release
// are that one, answered without the lock, and the stale one, which found
// the level there (it answered depth > 1): the failed one's command took
// it, however late it reached the server (a link's delay can bring it
// after the call gave up, even inside the next call).
func (m *model) orphanLevel(kd *keyData, client int32, from, t, at int64) (*ownCmd, *attempt) {
	if !m.useRecord() || len(kd.failed) == 0 || len(kd.takes) == 0 {
		return nil, nil
	}
	a := lastFailed(kd, client, from, t)
	if a == nil {
		return nil, nil
	}
	for i := sort.Search(len(kd.takes), func(i int) bool { return kd.takes[i].t > at }) - 1; i >= 0 && kd.takes[i].t >= a.t; i-- {
		if tk := &kd.takes[i]; tk.client == client {
			return tk, a
		}
	}
	return nil, nil
}

// lastFailed is client's last acquire of kd's that answered failed or
// unknown, invoked after from and before t, or nil.
func lastFailed(kd *keyData, client int32, from, t int64) *attempt {
	for j := len(kd.failed) - 1; j >= 0; j-- {
		if f := &kd.failed[j]; f.client == client && f.t > from && f.t < t {
			return f
		}
	}
	return nil
}

func (a *attempt) answer() string {
	if a.unknown {
		return "unknown"
	}
	return "failed"
}

// freshHoldBetween: client began a hold of kd's after hold p and before
// hold r (indices into m.holds) — an outermost acquire at depth 1, which
// ends a stale level's run.
func freshHoldBetween(m *model, kd *keyData, client, p, r int32) bool {
	i := sort.Search(len(kd.holds), func(i int) bool { return kd.holds[i] > p })
	for ; i < len(kd.holds) && kd.holds[i] < r; i++ {
		if m.holds[kd.holds[i]].client == client {
			return true
		}
	}
	return false
}

// judgeEarlyFrees: a release that left depth > 0 freed the key (the
// command record's DEL of that client's, else the observer's).
func (m *model) judgeEarlyFrees(c *ctx, k int32, kd *keyData) {
	a := &c.reent
	rec := m.useRecord()
	if rec {
		// The record says whose command freed the key: a release of
		// that client's own that left depth > 0 freed it early.
		for _, f := range kd.cmdFrees {
			if !m.in(f.t) || m.inGap(f.node, f.t) {
				continue
			}
			i := ownPartialRelease(kd, f.client, f.t, m.lag)
			if i < 0 {
				continue
			}
			r := kd.releases[i]
			what := f.name
			if f.script {
				what = "script's " + f.name
			}
			c.violate(Violation{Check: CheckReentrancy, Key: m.keys[k], Clients: []int{int(r.client)}, AtMS: history.MS(f.t),
				Window: [2]int64{r.t, r.end}, Cause: CauseFreedAboveZero,
				Detail: fmt.Sprintf("%s was deleted on %s at %s by client %d's release that left depth %d: its %s, in the server's command record",
					m.keys[k], m.nodes[f.node], sec(f.t), r.client, r.remaining, what),
				Explanation: m.freedWhat(&f, &r, m.keys[k]) + ", per the server's command record."}, &a.count)
		}
	}
	if !m.observerOK {
		return
	}
	for _, s := range kd.srv {
		if s.kind != srvDel || !m.in(s.t) || !m.masterAt(s.node, s.t) || (rec && !m.inGap(s.node, s.t)) {
			continue
		}
		i := partialReleaseAt(kd, s.t, m.lag)
		if i < 0 {
			continue
		}
		r := kd.releases[i]
		c.violate(Violation{Check: CheckReentrancy, Key: m.keys[k], Clients: []int{int(r.client)}, AtMS: history.MS(s.t),
			Window: [2]int64{r.t, r.end}, Cause: CauseFreedAboveZero,
			Detail:      fmt.Sprintf("%s was deleted at %s by client %d's release that left depth %d", m.keys[k], sec(s.t), r.client, r.remaining),
			Explanation: fmt.Sprintf("client %d released one level of %s (depth %d left) but the key was freed.", r.client, m.keys[k], r.remaining)}, &a.count)
	}
}

// reentAcc accumulates the reentrancy check over judged windows.
type reentAcc struct{ n, count, fresh, sameLevel int }

func resultReentrancy(m *model, c *ctx) (CheckResult, bool) {
	a := &c.reent
	if a.n == 0 {
		return CheckResult{}, false
	}
	res := CheckResult{Stats: map[string]any{"reentries": a.n}}
	res.Violations = a.count
	res.Stats["fresh_reacquires"] = a.fresh
	res.Verdict = verdictOf(a.count, true)
	if a.fresh > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d re-entries found the key gone and took it afresh (depth 1)", a.fresh))
	}
	if a.sameLevel > 0 {
		res.Stats["same_kept_level"] = a.sameLevel
		res.Notes = append(res.Notes, fmt.Sprintf("%d later acquires answered a kept level already told (its client's outermost acquires since, at the same depth)", a.sameLevel))
	}
	return res, true
}

// partialReleaseAt returns the release in flight at x (within lag) that left
// depth > 0 and may have deleted the key, or -1. A del is charged to it only
// when no release that frees the key (depth 0) was in flight too, from any
// client: back-to-back releases, or another client's, overlap within the
// observer's lag. Refused releases (not the owner) changed nothing.
func partialReleaseAt(kd *keyData, x, lag int64) int {
	found := -1
	i := sort.Search(len(kd.releases), func(i int) bool { return kd.releases[i].t > x }) - 1
	for ; i >= 0 && kd.relMax[i]+lag >= x; i-- {
		r := &kd.releases[i]
		if r.refused || x > r.end+lag {
			continue
		}
		if r.remaining <= 0 {
			return -1
		}
		if found < 0 {
			found = i
		}
	}
	return found
}
