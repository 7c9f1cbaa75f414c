package checker

import (
	"fmt"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// acquire-not-granted: a lock that takes an acquire whose outcome it does
// not know (a timeout: its SET was lost in a cut link, or queued on a
// frozen node) as held believes beside the holder, or holds a key the node
// never gave it. The command record shows it: the acquire returned ok, yet
// no write with its token ran on any node by then, or its SET NX found the
// key held by another client. The record must show the lock writing its
// tokens at all (tokWritten), and be whole over the acquire, answered while
// a fault that leaves commands unanswered was in effect (unansweredWhy).

// acqKey names an acquire that returned ok: its client and its ack.
type acqKey struct {
	client int32
	ack    int64
}

// grantCause: hold bi's acquire, else hold ai's, was not granted when it
// returned ("" when the record does not show that).
func (m *model) grantCause(k int32, ai, bi int32, both string) (string, string) {
	for _, hi := range []int32{bi, ai} {
		if s := m.notGranted(k, hi); s != "" {
			return CauseNotGranted, s + "; " + both + "."
		}
	}
	return "", ""
}

// notGranted tells how hold hi's acquire returned as held although the
// node had not granted it, per the command record ("" when the record
// does not show that).
func (m *model) notGranted(k int32, hi int32) string {
	if !m.useRecord() || !m.tokWritten {
		return ""
	}
	h := &m.holds[hi]
	kd := m.kd[k]
	// Only an acquire answered while a fault left commands unanswered:
	// the record then says why, and a check with no such fault never
	// looks back past what a stream keeps.
	why := m.unansweredWhy(h)
	if why == "" {
		return ""
	}
	tok, ok := m.acqTok[acqKey{h.client, h.start}]
	if !ok {
		if h.start < m.tokCut {
			m.setInexact(fmt.Sprintf("the token of client %d's acquire of %s at %s had been pruned", h.client, m.keys[k], sec(h.start)))
		}
		return ""
	}
	from, to := h.acqT-m.ownSlack(), h.start+m.ownSlack()
	if from <= kd.cutCmd {
		m.setInexact(fmt.Sprintf("the commands of client %d's acquire of %s at %s had been pruned", h.client, m.keys[k], sec(h.start)))
		return ""
	}
	for n := range m.nodes {
		if m.inGap(int16(n), from) || m.gapSince(int16(n), from, to) {
			return ""
		}
	}
	var ran []int
	for i := range kd.cmds {
		c := &kd.cmds[i]
		// By token, on any connection: one the record names no client for
		// (a library's own) may carry it.
		if c.tok != tok || c.op != cmdSet && c.op != cmdHash || c.h < from || c.h > to {
			continue
		}
		if i >= kd.cmdWalked {
			// Not replayed yet: its outcome is not known here.
			m.setInexact(fmt.Sprintf("client %d's write at %s was judged before the record was replayed to it", h.client, sec(c.h)))
			return ""
		}
		ran = append(ran, i)
	}
	lead := fmt.Sprintf("client %d's acquire of %s (%s–%s) returned as held, but the node had not granted it", h.client, m.keys[k], sec(h.acqT), sec(h.start))
	if len(ran) == 0 {
		return fmt.Sprintf("%s: no write with its token ran on any node by then, per the command record%s", lead, why)
	}
	var r *ownCmd
	for _, i := range ran {
		c := &kd.cmds[i]
		j := slices.IndexFunc(kd.ownRefused, func(o ownCmd) bool { return o.t == c.h && o.node == c.node && o.tok == tok })
		if j < 0 {
			return "" // it may have taken the key
		}
		r = &kd.ownRefused[j]
	}
	return fmt.Sprintf("%s: its %s on %s at %s found the key held by client %d and did not take it, per the command record%s",
		lead, r.what(), m.nodes[r.node], sec(r.t), r.owner, why)
}

// unansweredWhy names a fault in effect at hold h's ack that leaves
// commands unanswered: a frozen node, a cut link ("" when none).
func (m *model) unansweredWhy(h *hold) string {
	for _, f := range m.faults {
		if !f.applied || !f.overlaps(h.acqT, h.start) {
			continue
		}
		switch {
		case f.kind == history.FaultPauseNode:
			return fmt.Sprintf(" (%s was frozen from %s: fault %d)", targetName(f), sec(f.t), f.id)
		case f.kind == history.FaultPartition:
			return fmt.Sprintf(" (the clients' links to %s were cut from %s: fault %d)", targetName(f), sec(f.t), f.id)
		case f.kind == history.FaultCutClient && f.clientTarget == int(h.client):
			return fmt.Sprintf(" (client %d was cut off from %s: fault %d)", h.client, sec(f.t), f.id)
		}
	}
	return ""
}
