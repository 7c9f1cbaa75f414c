package checker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Causes from the lock's own commands. With no fault in play, what let a
// second client in is a command of the lock itself, and the servers'
// command record (cmdrecord.go) shows which: the replay notes, command by
// command, the SET NX each client won on each node (ownGrant), each write
// of a client into a hash another client owned (ownForeign), and each INCR
// (ownIncr); a release's own DEL of a key still held is kd.cmdFrees.
// ownCause reads them when a fault does not explain an overlap, and
// fenceCause when a fence is not above an earlier one.

// ownCmd is one command of a client that the own-command causes read.
type ownCmd struct {
	t      int64
	node   int16
	client int32
	owner  int32 // ownForeign: the client whose hash it wrote
	name   string
	tok    string // ownGrants: the token it set
	script bool
}

// what names the command as the checker's sentences do.
func (c *ownCmd) what() string {
	if c.script {
		return "its script's " + c.name
	}
	return c.name
}

// ownSlack is how far a hold's acquire window reaches beyond its invoke
// and ack for the record's commands: the observer's lag between the two
// clocks and the record's own margin.
func (m *model) ownSlack() int64 { return m.lag + cmdExpiryMargin }

// noteOwn records what command s did that the own-command causes need,
// after the replay applied it (before: the key's state as s found it).
func (m *model) noteOwn(kd *keyData, s *cmdStep, before keyState) {
	c, st := s.c, s.st
	if c.client < 0 || !m.masterAt(c.node, c.h) {
		return
	}
	o := ownCmd{t: c.h, node: c.node, client: c.client, owner: -1, name: c.name, script: c.script}
	if c.op == cmdSet && c.nx && c.tok != "" && before.present && !before.unknown && !s.maybe && before.owner != c.client &&
		st.setT != c.h && m.tokAcq[c.tok].res == history.OK {
		// An ok acquire's SET NX that found the key held: refused.
		o.tok, o.owner = c.tok, before.owner
		kd.ownRefused = append(kd.ownRefused, o)
		return
	}
	switch {
	case c.op == cmdHash && s.foreign:
		o.owner = s.owner
		kd.ownForeign = append(kd.ownForeign, o)
	case m.topo == "independent" && c.op == cmdSet && c.nx && st.present && !st.unknown && st.owner == c.client && st.setT == c.h &&
		(!before.present || before.unknown || s.maybe):
		// A SET NX that took the key on this node.
		o.tok = c.tok
		kd.ownGrants = append(kd.ownGrants, o)
	case m.topo == "independent" && c.op == cmdSet && c.nx && c.tok != "" && st.unknown && (before.unknown || s.maybe):
		// One that may have taken it: the key it found may have
		// expired just before.
		o.tok = c.tok
		kd.ownMaybe = append(kd.ownMaybe, o)
	}
}

// noteIncr records an INCR-family command by a client on key (a lock's
// counter: "<prefix>{k0}:fence" is k0's) or on a key its script touched.
func (m *model) noteIncr(key string, c cmdEvent) {
	if c.client < 0 {
		return
	}
	short, ok := m.shortKey(key)
	if !ok {
		return
	}
	if strings.HasPrefix(short, "{") {
		if j := strings.IndexByte(short, '}'); j > 0 {
			short = short[1:j]
		}
	}
	kd := m.kd[m.keyOf(&m.observer, short)]
	kd.ownIncrs = append(kd.ownIncrs, ownCmd{t: c.h, node: c.node, client: c.client, owner: -1, name: c.name, script: c.script})
}

// pruneOwn drops the own-command notes no hold kept from cut on can need:
// those before its acquire window.
func (m *model) pruneOwn(kd *keyData, cut int64) {
	cut -= 2*m.ttl + 1e9 + m.ownSlack()
	old := func(o ownCmd) bool { return o.t < cut }
	kd.ownGrants = slices.DeleteFunc(kd.ownGrants, old)
	kd.ownMaybe = slices.DeleteFunc(kd.ownMaybe, old)
	kd.ownForeign = slices.DeleteFunc(kd.ownForeign, old)
	kd.ownIncrs = slices.DeleteFunc(kd.ownIncrs, old)
	kd.ownRefused = slices.DeleteFunc(kd.ownRefused, old)
}

// inAcquire returns the notes in cs made by hold hi's client during its
// acquire (from its invoke to its ack, with the slack).
func (m *model) inAcquire(cs []ownCmd, hi int32) []ownCmd {
	h := &m.holds[hi]
	var out []ownCmd
	for _, c := range cs {
		if c.client == h.client && c.t >= h.acqT-m.ownSlack() && c.t <= h.start+m.ownSlack() {
			out = append(out, c)
		}
	}
	return out
}

// ownCause explains, from the lock's own commands, how hold bi of key k
// could start while hold ai (another client's) was believed ("" when the
// record shows none of the own-command causes). both is the overlap told.
func (m *model) ownCause(k int32, ai, bi int32, both string) (string, string) {
	if !m.useRecord() {
		return "", ""
	}
	kd := m.kd[k]
	a, b := &m.holds[ai], &m.holds[bi]
	key := m.keys[k]
	// An acquire that wrote into another owner's hash: b's into a's, or a's
	// into a third client's (whose release then deleted it under a).
	for _, hi := range []int32{bi, ai} {
		if fw := m.inAcquire(kd.ownForeign, hi); len(fw) > 0 {
			return CauseForeignReentry, m.foreignWhat(&fw[0], key) + "; " + both + "."
		}
	}
	// a's own release freed the key while a still held it above depth 0.
	for _, f := range kd.cmdFrees {
		if f.client != a.client || f.t < a.start || f.t > b.start+m.ownSlack() || m.inGap(f.node, f.t) {
			continue
		}
		if i := ownPartialRelease(kd, f.client, f.t, m.lag); i >= 0 {
			return CauseFreedAboveZero, m.freedWhat(&f, &kd.releases[i], key) + "; " + both + "."
		}
	}
	if m.topo == "independent" {
		return m.quorumCause(k, ai, bi, both)
	}
	return "", ""
}

// quorumCause: on independent masters, the nodes each hold's acquire took
// (its SET NX that won, per the record) include one short of a majority.
func (m *model) quorumCause(k int32, ai, bi int32, both string) (string, string) {
	kd := m.kd[k]
	a, b := &m.holds[ai], &m.holds[bi]
	ta, na := m.grantNodes(kd, ai)
	tb, nb := m.grantNodes(kd, bi)
	maj := len(m.nodes)/2 + 1
	if len(na) == 0 || len(nb) == 0 || len(na) >= maj && len(nb) >= maj {
		return "", ""
	}
	// Short of a majority for certain only: with the takes the replay
	// cannot tell (a SET NX at its key's expiry), and the nodes whose
	// record broke, the short one may have had its majority (pottery's
	// retry landing as the last holder's keys expired: "quorum of 1 of 5"
	// for a take of all five at the edge of the replay's certainty).
	if len(na) < maj && m.mayHaveTaken(kd, ai, ta, na) >= maj || len(nb) < maj && m.mayHaveTaken(kd, bi, tb, nb) >= maj {
		return "", ""
	}
	q := min(len(na), len(nb))
	return CauseMinorityQuorum, fmt.Sprintf("quorum of %d of %d: client %d held %s while client %d held %s (the nodes each one's SET NX took, per the command record, where a majority is %d); %s.",
		q, len(m.nodes), a.client, m.nodeList(na), b.client, m.nodeList(nb), maj, both)
}

// grantNodes are the nodes on which hold hi's acquire won its SET NX: the
// SETs of the attempt that returned, whose token is tok (each attempt has
// its token; the hold's is the returned token whose SETs ran last before
// its ack; "" and none when no SET of it won).
func (m *model) grantNodes(kd *keyData, hi int32) (tok string, ns []int16) {
	tok = m.grantTok(kd, hi)
	if tok == "" {
		return "", nil
	}
	for _, g := range kd.ownGrants {
		if g.tok == tok && !slices.Contains(ns, g.node) {
			ns = append(ns, g.node)
		}
	}
	return tok, ns
}

// mayHaveTaken counts the nodes hold hi's acquire may have taken: those
// its SET NX took (ns, of its returned token tok: grantNodes), those where
// that token's SET NX may have (ownMaybe), and those whose record had a gap
// during its acquire.
func (m *model) mayHaveTaken(kd *keyData, hi int32, tok string, ns []int16) int {
	h := &m.holds[hi]
	from, to := h.acqT-m.ownSlack(), h.start+grantClockSlack
	may := slices.Clone(ns)
	for _, g := range kd.ownMaybe {
		if g.client == h.client && (g.tok == tok || tok == "") && g.t >= from && g.t <= to && !slices.Contains(may, g.node) {
			may = append(may, g.node)
		}
	}
	for _, g := range m.cmdGaps {
		if g.from <= to && g.to >= from && !slices.Contains(may, g.node) {
			may = append(may, g.node)
		}
	}
	return len(may)
}

// grantTok is the token of hold hi's returned attempt: of its SET NXs that
// won in its acquire window, the last one's ("" for none).
func (m *model) grantTok(kd *keyData, hi int32) string {
	h := &m.holds[hi]
	tok, last := "", int64(math.MinInt64)
	for _, g := range kd.ownGrants {
		if g.client == h.client && g.t >= h.acqT-m.ownSlack() && g.t <= h.start+grantClockSlack && g.t > last && m.tokAcq[g.tok].res == history.OK {
			tok, last = g.tok, g.t
		}
	}
	return tok
}

// grantClockSlack: a SET that won ran before the acquire's ack; the
// record's server times may read that much later on the run clock.
const grantClockSlack = int64(1e6)

// nodeList names nodes in order of their names.
func (m *model) nodeList(ns []int16) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = m.nodes[n]
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// fenceCause explains why hold hi's fence is not above hold pi's (granted
// before hi's acquire began) when no fault does: the record shows whether
// hi's acquire ran an INCR at all.
func (m *model) fenceCause(k int32, hi, pi int32) (string, string) {
	h, p := &m.holds[hi], &m.holds[pi]
	lead := fmt.Sprintf("fence %s after %s", fenceStr(h.fence), fenceStr(p.fence))
	prev := fmt.Sprintf("client %d's", p.client)
	if p.client == h.client {
		prev = "its own earlier hold's"
	}
	if !m.useRecord() || !m.cmdSeen {
		return CauseFenceNotMonotonic, fmt.Sprintf("%s: client %d's acquire at %s got a fence not above %s, with no fault that lost the counter (no command record to say where it came from).",
			lead, h.client, sec(h.acqT), prev)
	}
	incs := m.inAcquire(m.kd[k].ownIncrs, hi)
	if len(incs) == 0 {
		return CauseFenceNotMonotonic, fmt.Sprintf("%s: not from INCR: client %d's acquire (%s–%s) ran no INCR on any node, per the command record, and its fence is below %s.",
			lead, h.client, sec(h.acqT), sec(h.start), prev)
	}
	c := incs[len(incs)-1]
	return CauseFenceNotMonotonic, fmt.Sprintf("%s: client %d's acquire ran %s on %s at %s, yet its fence is not above %s: the lock did not hand out the counter's value.",
		lead, h.client, c.what(), m.nodes[c.node], sec(c.t), prev)
}

// fenceStr prints a fence as a person reads it: small ones whole, large
// ones (a random 64-bit value) as 1.5e19.
func fenceStr(f uint64) string {
	if f < 1e9 {
		return strconv.FormatUint(f, 10)
	}
	return strings.Replace(strconv.FormatFloat(float64(f), 'g', 2, 64), "e+", "e", 1)
}

// noFaultNear reports whether no applied fault was in effect from a TTL
// before from to to.
func (m *model) noFaultNear(from, to int64) bool {
	for _, f := range m.faults {
		if f.applied && f.overlaps(from-m.ttl, to) {
			return false
		}
	}
	return true
}

// staleTokenCause explains a write with fence lower than one the resource
// accepted before, from the holds that wrote them (wi the stale write's,
// mi the higher one's; -1 unknown): a hold acked after the other with a
// lower fence is the fence's fault (fenceCause); a hold that wrote after
// a later one took the key is the overlap's (cause). Unknown otherwise.
func (m *model) staleTokenCause(k int32, wi, mi int32) (string, string) {
	if wi < 0 || mi < 0 || wi == mi {
		return CauseUnknown, ""
	}
	w, hm := &m.holds[wi], &m.holds[mi]
	switch {
	case w.start > hm.start:
		return m.fenceCause(k, wi, mi)
	case w.client != hm.client && w.belief > hm.start:
		return m.cause(k, wi, mi)
	}
	return CauseUnknown, ""
}

// freedWhat tells release r's command f deleting key above depth 0.
func (m *model) freedWhat(f *cmdFree, r *release, key string) string {
	what := f.name
	if f.script {
		what = "its script's " + f.name
	}
	return fmt.Sprintf("a release's %s freed %s at depth %d: client %d's release at %s left depth %d, yet %s deleted the key on %s at %s",
		f.name, key, r.remaining, r.client, sec(r.t), r.remaining, what, m.nodes[f.node], sec(f.t))
}

// foreignWhat tells a write into another owner's hash.
func (m *model) foreignWhat(f *ownCmd, key string) string {
	return fmt.Sprintf("%s by client %d on client %d's hash %s on %s at %s (%s, in its acquire): the acquire did not check the owner field",
		f.name, f.client, f.owner, key, m.nodes[f.node], sec(f.t), f.what())
}

// ownHappened is an own-command cause's part of an incident's sentence:
// the first of its violations' explanations up to the overlap it explains.
func ownHappened(inc *Incident, vs []Violation) string {
	for _, i := range inc.Violations {
		if v := &vs[i]; v.Cause == inc.Cause && v.Explanation != "" {
			s, _, _ := strings.Cut(v.Explanation, "; ")
			return strings.TrimSuffix(s, ".")
		}
	}
	return ""
}

// foreignAcquireAt is the write into another owner's hash that the same
// script as d (a recorded change by a non-owner that is no release) made,
// or nil: d is then part of an acquire, not a renewal.
func (m *model) foreignAcquireAt(kd *keyData, d *badDel) *ownCmd {
	if d.release || d.set || d.cmd == "" {
		return nil
	}
	for i := range kd.ownForeign {
		if f := &kd.ownForeign[i]; f.t == d.t && f.node == d.node && f.client == d.culprit && f.script {
			return f
		}
	}
	return nil
}

// recordExpiry: where nothing else explains how hold bi started while ai
// was believed, the record may show a's key expiring by its own TTL first:
// a's last write or extension on the node where b's acquire then wrote the
// key set a TTL that ran out before b's write, with no delete in between
// (expired-while-held, told from the commands rather than a notification).
func (m *model) recordExpiry(k int32, ai, bi int32, both string) (string, string) {
	if !m.useRecord() {
		return "", ""
	}
	kd := m.kd[k]
	a, b := &m.holds[ai], &m.holds[bi]
	var bw, aw *cmdEvent
	for i := range kd.cmds[:kd.cmdWalked] {
		c := &kd.cmds[i]
		if c.client == b.client && (c.op == cmdSet || c.op == cmdHash) && c.h >= b.acqT-m.ownSlack() && c.h <= b.start+grantClockSlack {
			bw = c
		}
	}
	if bw == nil || m.inGap(bw.node, bw.h) {
		return "", ""
	}
	for i := range kd.cmds[:kd.cmdWalked] {
		c := &kd.cmds[i]
		if c.node != bw.node || c.h >= bw.h || c.h < a.acqT-m.ownSlack() {
			continue
		}
		switch {
		case c.op == cmdDel && aw != nil:
			return "", "" // deleted after a's last write: not an expiry
		case c.client == a.client && (c.op == cmdSet || c.op == cmdExpire) && (c.ttl != 0 || c.abs != 0):
			aw = c
		}
	}
	if aw == nil {
		return "", ""
	}
	exp := aw.abs
	if exp == 0 {
		exp = aw.t + aw.ttl
	}
	if exp+cmdExpiryMargin >= bw.t {
		return "", ""
	}
	what := aw.name
	if aw.script {
		what = "script's " + aw.name
	}
	return CauseExpired, fmt.Sprintf("client %d's key %s expired on %s at %s by the TTL its %s at %s set, while client %d still believed it held it, and client %d's %s took it at %s (per the command record); %s.",
		a.client, m.keys[k], m.nodes[bw.node], sec(exp), what, sec(aw.h), a.client, b.client, bw.name, sec(bw.h), both)
}
