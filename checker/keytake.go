package checker

import (
	"slices"
	"sort"
)

// Key-takes: when the server applied the command that took a hold's key,
// in the server's order. A hold's ack is when its client learned of it,
// which a client slowed or frozen inside its acquire learns late: ordered
// by their acks, a holder whose key was written first, expired and was
// taken by another client looks like that client's successor (issue 40:
// Redisson's RLock, client 1 frozen for a TTL inside its acquire after its
// key was written, client 2's re-entry into its own live key charged as
// local-reentry-after-expiry). The command record's replay notes each write
// that took a key for its client (kd.takes), and takenAt maps a hold to
// the one its acquire made.

// noteTake records command s when it took its key for its client on a
// master: the replay has the client as the key's owner from this command
// on, and the key was not the client's own live key before it (a renewal,
// a re-entry). before is the key's state as s found it. On independent
// masters a take is a majority's, which no one command is: none noted.
func (m *model) noteTake(kd *keyData, s *cmdStep, before keyState) {
	c, st := s.c, s.st
	if c.client < 0 || m.topo == "independent" || c.op != cmdSet && c.op != cmdHash || !m.masterAt(c.node, c.h) {
		return
	}
	if !st.present || st.unknown || st.owner != c.client || st.setT != c.h {
		return
	}
	if before.present && !before.unknown && !s.maybe && before.owner == c.client {
		return
	}
	kd.takes = append(kd.takes, ownCmd{t: c.h, node: c.node, client: c.client, owner: -1, name: c.name, tok: c.tok, script: c.script})
}

// pruneTakes drops the key-takes no hold kept from cut on can need (as
// pruneOwn).
func (m *model) pruneTakes(kd *keyData, cut int64) {
	cut -= 2*m.ttl + 1e9 + m.ownSlack()
	kd.takes = slices.DeleteFunc(kd.takes, func(o ownCmd) bool { return o.t < cut })
}

// takeOf returns the command record's key-take of hold hi: the one write
// that took its key for its client within its acquire (from its invoke to
// its ack, with the record's slack after it), or nil when there is none,
// when there are several (a client whose holds follow each other closely,
// smoke's, has its next acquire's take within the slack of this one's ack;
// a SET NX the replay could not tell refused from taken), or when the
// record had a gap then. A take the record cannot pin to one command is
// no order to judge by: taken as this hold's, another's reordered a
// correct fenced lock's holds and its fences looked out of order.
func (m *model) takeOf(hi int32) *ownCmd {
	if !m.useRecord() {
		return nil
	}
	h := &m.holds[hi]
	ts := m.kd[h.key].takes
	slack := m.ownSlack()
	// Not before the invoke: a take mapped there within the slack is as
	// likely the client's previous acquire's (a take of this acquire the
	// record lost, at its end, left only that one in the window).
	from, to := h.acqT, h.start+slack
	var got *ownCmd
	for i := sort.Search(len(ts), func(i int) bool { return ts[i].t >= from }); i < len(ts) && ts[i].t <= to; i++ {
		if ts[i].client != h.client {
			continue
		}
		if got != nil {
			return nil
		}
		got = &ts[i]
	}
	if got != nil && (m.inGap(got.node, from) || m.gapSince(got.node, from, to)) {
		return nil
	}
	return got
}

// takenAt is when hold hi's acquire took its key: the command record's
// write that took it (record true), else granted (its ack, or the start of
// its client's freeze inside the acquire).
func (m *model) takenAt(hi int32) (t int64, record bool) {
	if c := m.takeOf(hi); c != nil {
		return c.t, true
	}
	return m.granted(&m.holds[hi]), false
}

// laterHolderAt returns the hold of a client other than hold own's that
// was believed at t and took key k after own's acquire took it (takenAt),
// the latest-taken such, or -1. One whose key was taken before own's (a
// stale believer whose lease ran out, however late its ack) is the mutex
// check's overlap, not a sign that own's key was no longer its own.
func (m *model) laterHolderAt(k, own int32, t int64) int32 {
	kd := m.kd[k]
	m.index(kd)
	client := m.holds[own].client
	ot, _ := m.takenAt(own)
	best, bestT := int32(-1), int64(0)
	i := sort.Search(len(kd.holds), func(i int) bool { return m.holds[kd.holds[i]].start > t }) - 1
	for ; i >= 0 && kd.pmax[i] >= t; i-- {
		hi := kd.holds[i]
		h := &m.holds[hi]
		if h.client == client || h.empty || h.belief < t {
			continue
		}
		if ht, _ := m.takenAt(hi); ht >= ot && (best < 0 || ht > bestT) {
			best, bestT = hi, ht
		}
	}
	return best
}
