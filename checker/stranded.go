package checker

import (
	"fmt"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// Stranded-key causes (liveness): a key left at the server after every
// lease on it had ended, blocking everyone while nobody held it.
const (
	// CauseRenewedAfterRelease: the key was extended (PEXPIRE) after its
	// holder's lease had ended: a watchdog still renewing a released lease.
	CauseRenewedAfterRelease = "renewed-after-release"
	// CauseKeyWithoutTTL: the key's last write gave it no TTL (a SETNX
	// whose EXPIRE never came).
	CauseKeyWithoutTTL = "key-without-ttl"
	// CauseReleaseNotApplied: the holder released, and no delete of the key
	// reached the server.
	CauseReleaseNotApplied = "release-not-applied"
	// CauseRenewedAfterFailedAcquire: an acquire took the key and returned
	// an error (its caller gave up: a cancelled request), and the key was
	// renewed after by that client's connection: a watchdog started for a
	// lock nobody was told it held (Redisson #2714).
	CauseRenewedAfterFailedAcquire = "renewed-after-failed-acquire"
)

// strandedKey is a key present at the server past TTL + ε after every
// belief on it had ended (at x): nobody could acquire it from x + TTL
// until to (its free, the next grant, or the record's end).
type strandedKey struct {
	from, to   int64
	cause, why string
	clients    []int
}

// strandedAfter says whether key w.k was left at the server after hold
// prev (-1: none) ended every belief on it at x, until y (the next grant;
// the record's end for the last). Only an explained stranding counts: a
// renewal after the lease ended, a write without TTL, a release that
// never reached the server. A key that merely outlived the scenario's TTL
// (a library that sets its own, longer) is not flagged, and neither is a
// span a node fault (a clock jump, a restart, a failover) touched: the
// fault, not the lock, decides a key's life there.
func (m *model) strandedAfter(c *ctx, w *keyWaits, x, y int64, prev int32, tail bool) (strandedKey, bool) {
	allowed := m.ttl + c.o.Epsilon
	if m.ttl == 0 || y-x <= allowed || len(w.kd.srv) == 0 {
		return strandedKey{}, false
	}
	present, since, known := m.keyAtEnd(w.kd, x+allowed)
	if !present || !known {
		return strandedKey{}, false
	}
	// Written again after x: another acquire took it (one that never
	// returned, a client frozen in it). Its lease, not prev's, is the key's
	// now: it strands the key when its client renewed it after the acquire
	// failed, and otherwise only a write that left it without a TTL does.
	rewritten := since > x
	if rewritten || prev < 0 {
		if s, ok := m.orphanStranding(c, w, x, y); ok || prev < 0 {
			return s, ok
		}
	}
	kd := w.kd
	to, freed := m.freedIn(kd, x+allowed, y) // freed: the stranding ended in the record, by a delete or an expiry
	// At the record's end (tail) nothing but the record's own sight says
	// the key was still there: the observer and MONITOR stop with the run,
	// and a release's delete after them is not seen. Only what the record
	// showed after the lease ended (a renewal, a write without TTL seen
	// again) stands there; a missing delete does not.
	seenAfter := freed || !tail || m.recordSawAfter(kd, x+allowed)
	if to-x <= allowed || measure(w.faults, x, to) > 0 {
		return strandedKey{}, false
	}
	key := m.keys[w.k]
	s := strandedKey{from: x + m.ttl, to: to, clients: []int{}}
	who := fmt.Sprintf("client %d", m.holds[prev].client)
	s.clients = append(s.clients, int(m.holds[prev].client))
	if !seenAfter {
		return strandedKey{}, false
	}
	if c, t, ok := m.renewedAfter(kd, x, to); ok && !rewritten {
		s.cause = CauseRenewedAfterRelease
		by := "a connection the record does not name"
		if c >= 0 {
			by = fmt.Sprintf("client %d's connection", c)
			if len(s.clients) == 0 || s.clients[0] != int(c) {
				s.clients = append(s.clients, int(c))
			}
		}
		s.why = fmt.Sprintf("%s's lease on %s ended at %s, and %s was renewed at %s by %s", who, key, sec(x), key, sec(t), by)
	} else if bare := m.writtenWithoutTTL(kd, x+allowed); bare != nil {
		s.cause = CauseKeyWithoutTTL
		by := ""
		if bare.client >= 0 {
			by = fmt.Sprintf(" by client %d's connection", bare.client)
		}
		s.why = fmt.Sprintf("%s was written at %s%s without a TTL, after %s's lease ended at %s", key, sec(bare.h), by, who, sec(x))
		if bare.h < x {
			s.why = fmt.Sprintf("%s was written at %s%s without a TTL, and %s's lease ended at %s", key, sec(bare.h), by, who, sec(x))
		}
	} else if m.holds[prev].how == endReleased && !rewritten && (freed || !tail) {
		s.cause = CauseReleaseNotApplied
		s.why = fmt.Sprintf("%s released %s at %s, and no delete of it reached the server", who, key, sec(x))
	} else {
		return strandedKey{}, false
	}
	return s, true
}

// freedIn is the key's first delete or expiry in [from, y), and whether
// there was one (else y).
func (m *model) freedIn(kd *keyData, from, y int64) (int64, bool) {
	i := sort.Search(len(kd.srv), func(i int) bool { return kd.srv[i].t >= from })
	for ; i < len(kd.srv) && kd.srv[i].t < y; i++ {
		if e := kd.srv[i]; e.kind == srvDel || e.kind == srvExpired {
			return e.t, true
		}
	}
	return y, false
}

// orphanStranding finds, after x and before y, a take of the key by an
// acquire whose client was never told it held it (the acquire failed or
// answered unknown: its caller gave up, a cancelled request), after which
// the key was still there TTL + ε past the acquire's end, not rewritten,
// and renewed by that client's own connection: a renewal started for an
// acquire its caller abandoned. The key is that client's doing from the
// acquire's end + TTL until its delete or expiry, or y. Outside node
// faults only, as for every stranding.
func (m *model) orphanStranding(c *ctx, w *keyWaits, x, y int64) (strandedKey, bool) {
	kd := w.kd
	if !m.useRecord() || len(kd.takes) == 0 || len(kd.failed) == 0 {
		return strandedKey{}, false
	}
	slack, allowed := m.ownSlack(), m.ttl+c.o.Epsilon
	ts := kd.takes
	for i := sort.Search(len(ts), func(i int) bool { return ts[i].t >= x }); i < len(ts) && ts[i].t < y; i++ {
		tk := ts[i]
		f := orphanOf(kd, &tk, slack)
		if f == nil || y-f.end <= allowed {
			continue
		}
		present, since, known := m.keyAtEnd(kd, f.end+allowed)
		if !present || !known || since > f.end+slack {
			continue
		}
		to, _ := m.freedIn(kd, f.end+allowed, y)
		rc, rt, ok := m.renewedAfter(kd, f.end, to)
		if !ok || rc != tk.client || to-f.end <= allowed || measure(w.faults, f.end, to) > 0 {
			continue
		}
		key := m.keys[w.k]
		return strandedKey{from: f.end + m.ttl, to: to, cause: CauseRenewedAfterFailedAcquire, clients: []int{int(tk.client)},
			why: fmt.Sprintf("client %d's acquire of %s returned without the lock at %s, after its %s took the key at %s, and %s was renewed at %s by client %d's connection",
				tk.client, key, sec(f.end), tk.what(), sec(tk.t), key, sec(rt), tk.client)}, true
	}
	return strandedKey{}, false
}

// renewedAfter finds an extension of the key at the server in (x, to):
// the first, with the client whose connection sent it (from the command
// record; -1 where it does not name one).
func (m *model) renewedAfter(kd *keyData, x, to int64) (client int32, t int64, ok bool) {
	i := sort.Search(len(kd.srv), func(i int) bool { return kd.srv[i].t > x })
	for ; i < len(kd.srv) && kd.srv[i].t < to; i++ {
		if kd.srv[i].kind != srvExpire || i > 0 && kd.srv[i-1].kind == srvSet && kd.srv[i].t-kd.srv[i-1].t <= cmdExpiryMargin {
			continue // a SET with PX notifies "expire" after its "set": a write, not a renewal
		}
		t = kd.srv[i].t
		client = -1
		for j := range kd.cmds {
			if c := &kd.cmds[j]; c.op == cmdExpire && c.h > x && c.h <= t+m.lag+cmdExpiryMargin {
				client = c.client
				break
			}
		}
		return client, t, true
	}
	// Without notifications: the command record alone.
	for j := range kd.cmds {
		if c := &kd.cmds[j]; c.op == cmdExpire && c.h > x && c.h < to {
			return c.client, c.h, true
		}
	}
	return -1, 0, false
}

// writtenWithoutTTL: by the command record, the key's last write before t
// left it without a TTL (a SET without one, or a hash write that created
// the key) and nothing gave it one since.
func (m *model) writtenWithoutTTL(kd *keyData, t int64) *cmdEvent {
	var bare *cmdEvent // the write that left the key without a TTL
	absent := true
	for j := range kd.cmds {
		c := &kd.cmds[j]
		if c.h >= t {
			break
		}
		switch c.op {
		case cmdSet:
			if c.nx && !m.setNotified(kd, c.h) {
				continue // refused (MONITOR shows no replies; the notification shows a write)
			}
			bare = nil
			if c.ttl == 0 && c.abs == 0 && !c.keep {
				bare = c
			}
			absent = false
		case cmdHash:
			if absent {
				bare = c
			}
			absent = false
		case cmdExpire:
			bare = nil
		case cmdDel:
			bare, absent = nil, true
		}
	}
	return bare
}

// recordSawAfter: the servers' record has an event of the key after t.
func (m *model) recordSawAfter(kd *keyData, t int64) bool {
	return len(kd.srv) > 0 && kd.srv[len(kd.srv)-1].t > t || len(kd.cmds) > 0 && kd.cmds[len(kd.cmds)-1].h > t
}

// setNotified: a write of the key was notified within the observer's lag
// of harness time t.
func (m *model) setNotified(kd *keyData, t int64) bool {
	i := sort.Search(len(kd.srv), func(i int) bool { return kd.srv[i].t >= t-cmdExpiryMargin })
	for ; i < len(kd.srv) && kd.srv[i].t <= t+m.lag+cmdExpiryMargin; i++ {
		if kd.srv[i].kind == srvSet {
			return true
		}
	}
	return false
}

// judgeStranded reports a stranded key that the liveness gap did not
// already report (no client waited long enough to see it).
func (m *model) judgeStranded(c *ctx, s strandedKey, k int32) {
	key := m.keys[k]
	c.violate(Violation{Check: CheckLiveness, Key: key, Clients: s.clients, AtMS: history.MS(s.from), Window: [2]int64{s.from, s.to}, Cause: s.cause,
		Detail:      fmt.Sprintf("%s stayed at the server for %s past its TTL after every lease on it had ended", key, dur(s.to-s.from)),
		Explanation: s.why + fmt.Sprintf("; nobody could acquire it from %s to %s.", sec(s.from), sec(s.to))}, &c.live.count)
}
