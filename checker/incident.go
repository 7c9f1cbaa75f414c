package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Incident is one thing that went wrong, told once: the violations that
// share a cause and either the fault that cause names or the lease whose
// belief the others overlapped. One 0.4 s pause of a holder is one incident
// however many acquires and writes it let through; the violations stay in
// Result.Violations as its evidence.
type Incident struct {
	// ID numbers incidents from 1 in order of their start.
	ID int `json:"id"`
	// Sentence tells the incident to a person, from the evidence.
	Sentence string `json:"sentence"`
	Cause    string `json:"cause"`
	// FaultID is the fault the cause names (0: none, e.g. a release that
	// deleted another client's key).
	FaultID int `json:"fault_id,omitempty"`
	// Lease is the hold whose belief the others overlapped, when there is
	// one (the first if several).
	Lease *Lease `json:"lease,omitempty"`
	// Span is [start, end] in run ns: the violations' windows and, for a
	// pause, the pause.
	Span    [2]int64 `json:"span_ns"`
	Clients []int    `json:"clients"`
	Keys    []string `json:"keys"`
	// Counts is how many of the violations kept with evidence it contains,
	// per check (mutex: overlapping pairs of holds, resource: lost writes).
	Counts map[string]int `json:"counts"`
	// Violations are indices into Result.Violations.
	Violations []int `json:"violations"`
}

// Lease identifies a hold: one client's continuous belief that it held a
// key, from the ack of its acquire.
type Lease struct {
	Client     int    `json:"client"`
	Key        string `json:"key"`
	AcquiredNS int64  `json:"acquired_ns"`
	// DeadlineNS is the validity the lock promised (renewals included);
	// 0 = none.
	DeadlineNS int64 `json:"deadline_ns,omitempty"`
	// BelievedToNS is when the client's belief ended (see the package
	// comment).
	BelievedToNS int64 `json:"believed_to_ns"`
}

// lease describes hold hi for a Violation.
func (m *model) lease(hi int32) *Lease {
	if hi < 0 || int(hi) >= len(m.holds) {
		return nil
	}
	h := &m.holds[hi]
	return &Lease{Client: int(h.client), Key: m.keys[h.key], AcquiredNS: h.start, DeadlineNS: h.deadline, BelievedToNS: h.belief}
}

// causeFaults are the fault kinds each cause names.
var causeFaults = map[string][]string{
	CauseFailover:           {history.FaultFailover, history.FaultIsolateNode},
	CauseMinorityMaster:     {history.FaultIsolateNode},
	CauseEmptyRestart:       {history.FaultRestartNode, history.FaultKillNode},
	CauseClockJump:          {history.FaultClockJump},
	CauseClockDrift:         {history.FaultClockDrift},
	CausePause:              {history.FaultPauseClient, history.FaultPauseNode},
	CausePartitioned:        {history.FaultCutClient, history.FaultPartition},
	CauseStalled:            {history.FaultStallCommands},
	CauseClockSkew:          {history.FaultClockSkew},
	CauseNotFreedAfterCrash: {history.FaultCrashClient, history.FaultSigterm},
	CauseNotGranted:         {history.FaultPauseNode, history.FaultPartition, history.FaultCutClient},
}

// clientFault reports whether a fault kind is aimed at one client.
func clientFault(kind string) bool { return history.ClientFault(kind) }

// uncaused are the fault kinds no cause names, and why: they lose a lock
// only through something the checker attributes on its own terms (a
// renewal that failed, a key that expired, a write that arrived late).
// TestEveryFaultKindIsExplained keeps causeFaults and uncaused covering
// history.FaultKinds.
var uncaused = map[string]string{
	history.FaultReplicationLag: "lag alone loses nothing; the failover or restart that follows names the cause",
	history.FaultLatency:        "a slow link shows as renewals that failed or acted-after-lease-expired",
	history.FaultLink:           "one client's slow or cut link shows as renewal-overwrote-owner, renewal-failed or a key that expired",
	history.FaultMigrateSlot:    "MIGRATE moves a key with its TTL: a migration loses nothing; commands it redirects fail and are retried",
	history.FaultCancel:         "a cancelled call loses no key by itself: what a lock leaves behind shows as renewed-after-failed-acquire or key-without-ttl",
	history.FaultThrow:          "a release on the exception path is a release: what an idiom leaves behind shows as renewed-after-release, key-without-ttl or release-not-applied",
}

// namedFault finds the fault v's cause names: of the kinds the cause
// stands for, one in effect between the lease's acquire (less a TTL: a
// fault just before may have lost the key) and the end of v's window; for
// a fault aimed at a client, at one of v's clients. One aimed at the
// lease's client wins, then the latest to start. 0 when none.
func (m *model) namedFault(v *Violation) int {
	if v.FaultID > 0 {
		return v.FaultID
	}
	kinds := causeFaults[v.Cause]
	if len(kinds) == 0 {
		return 0
	}
	from, to := v.Window[0], max(v.Window[0], v.Window[1])
	holder := -1
	if v.Lease != nil {
		from, holder = min(from, v.Lease.AcquiredNS), v.Lease.Client
	}
	from -= m.ttl
	var best *fault
	for _, f := range m.faults {
		if !f.applied || !f.overlaps(from, to) || !slices.Contains(kinds, f.kind) {
			continue
		}
		if clientFault(f.kind) && !slices.Contains(v.Clients, f.clientTarget) {
			continue
		}
		if best != nil {
			mine, bestMine := f.clientTarget == holder && holder >= 0, best.clientTarget == holder && holder >= 0
			if bestMine && !mine || bestMine == mine && f.t < best.t {
				continue
			}
		}
		best = f
	}
	if best == nil {
		return 0
	}
	return best.id
}

// incidents groups vs (sorted by window start) into incidents: violations
// with the same cause join when they name the same fault or overlap the
// same lease; violations that name no fault also join others of their
// cause and key whose windows overlap theirs. It also fills each violation's FaultID.
func (m *model) incidents(vs []Violation) []Incident {
	if len(vs) == 0 {
		return []Incident{}
	}
	parent := make([]int, len(vs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	first := map[string]int{}
	join := func(i int, id string) {
		if j, ok := first[id]; ok {
			union(i, j)
		} else {
			first[id] = i
		}
	}
	// Violations that name no fault: per cause and key, chained while their
	// windows overlap (vs is sorted by window start), so a cascade (each
	// plain-DEL release deleting the next owner's key) is one incident.
	type chain struct {
		last int
		end  int64
	}
	loose := map[string]*chain{}
	for i := range vs {
		v := &vs[i]
		v.FaultID = m.namedFault(v)
		if v.FaultID > 0 {
			join(i, fmt.Sprintf("f\x00%s\x00%d", v.Cause, v.FaultID))
		}
		if l := v.Lease; l != nil {
			join(i, fmt.Sprintf("l\x00%s\x00%d\x00%s\x00%d", v.Cause, l.Client, l.Key, l.AcquiredNS))
		}
		if v.FaultID > 0 {
			continue
		}
		id := v.Cause + "\x00" + v.Key
		lo, hi := v.Window[0], max(v.Window[0], v.Window[1])
		if c := loose[id]; c != nil && lo <= c.end {
			union(i, c.last)
			c.last, c.end = i, max(c.end, hi)
			continue
		}
		loose[id] = &chain{i, hi}
	}
	groups := map[int][]int{}
	var roots []int
	for i := range vs {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], i)
	}
	out := make([]Incident, 0, len(roots))
	for _, r := range roots {
		out = append(out, m.incident(vs, groups[r]))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Span[0] < out[j].Span[0] })
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// incident builds one incident from the violations at idx (ascending).
func (m *model) incident(vs []Violation, idx []int) Incident {
	v0 := &vs[idx[0]]
	inc := Incident{Cause: v0.Cause, Counts: map[string]int{}, Violations: idx, Span: v0.Window}
	clients, keys := map[int]bool{}, map[string]bool{}
	for _, i := range idx {
		v := &vs[i]
		inc.Counts[v.Check]++
		inc.Span[0] = min(inc.Span[0], v.Window[0])
		inc.Span[1] = max(inc.Span[1], v.Window[1])
		for _, c := range v.Clients {
			clients[c] = true
		}
		if v.Key != "" {
			keys[v.Key] = true
		}
		if inc.FaultID == 0 {
			inc.FaultID = v.FaultID
		}
		if inc.Lease == nil && v.Lease != nil {
			inc.Lease = v.Lease
		}
	}
	for c := range clients {
		inc.Clients = append(inc.Clients, c)
	}
	sort.Ints(inc.Clients)
	for k := range keys {
		inc.Keys = append(inc.Keys, k)
	}
	sort.Strings(inc.Keys)
	if inc.Clients == nil {
		inc.Clients = []int{}
	}
	if inc.Keys == nil {
		inc.Keys = []string{}
	}
	p, pc := m.incidentPause(&inc)
	if p != nil {
		inc.Span[0] = min(inc.Span[0], p.t)
		inc.Span[1] = max(inc.Span[1], p.end)
	}
	inc.Sentence = m.sentence(&inc, vs, p, pc)
	return inc
}

// incidentPause is the pause a pause incident is about: the lease
// holder's pause that overlaps the incident (it was frozen while others
// took its key), else one of another involved client inside its acquire.
func (m *model) incidentPause(inc *Incident) (*pause, int) {
	if inc.Cause != CausePause {
		return nil, -1
	}
	var order []int
	if inc.Lease != nil {
		order = append(order, inc.Lease.Client)
	}
	order = append(order, inc.Clients...)
	from := inc.Span[0]
	if inc.Lease != nil {
		from = min(from, inc.Lease.AcquiredNS)
	}
	for _, c := range order {
		cs := m.clients[int32(c)]
		if cs == nil {
			continue
		}
		for i, p := range cs.pauses {
			if p.end >= from && p.t <= inc.Span[1] {
				return &cs.pauses[i], c
			}
		}
	}
	return nil, -1
}

// sentence tells the incident: what happened to the lease's holder (the
// cause), who acquired meanwhile, whose writes were lost, then anything
// else it contains.
func (m *model) sentence(inc *Incident, vs []Violation, p *pause, pc int) string {
	l := inc.Lease
	if l == nil {
		s := strings.TrimSuffix(vs[inc.Violations[0]].Explanation, ".")
		if s == "" {
			s = vs[inc.Violations[0]].Detail
		}
		return s + "."
	}
	var parts []string
	holder := l.Client
	parts = append(parts, m.whatHappened(inc, vs, p, pc))

	// Acquires that overlapped the lease.
	acq := map[int]bool{}
	nAcq := 0
	var writes, overwritten []string
	other := map[string]int{}
	for _, i := range inc.Violations {
		v := &vs[i]
		switch {
		case v.Check == CheckMutex && v.Lease != nil && *v.Lease == *l && len(v.Clients) == 2:
			nAcq++
			acq[v.Clients[1]] = true
		case v.Check == CheckResource && len(v.Clients) == 2 && v.Clients[1] == holder:
			writes = appendOnce(writes, fmt.Sprintf("client %d's", v.Clients[0]))
		case v.Check == CheckResource && len(v.Clients) == 2 && v.Clients[0] == holder:
			overwritten = appendOnce(overwritten, fmt.Sprintf("client %d", v.Clients[1]))
		case v.Check == CheckUnlock && (inc.Cause == CauseNonOwnerDel || inc.Cause == CauseRenewalOverwrote || inc.Cause == CauseExtendedForeign) && v.Lease != nil && *v.Lease == *l:
			// told by whatHappened
		default:
			other[v.Check]++
		}
	}
	if nAcq > 0 {
		ids := sortedKeys(acq)
		s := fmt.Sprintf("%d %s (%s) acquired %s", len(ids), pluralS(len(ids), "client", "clients"), joinIntsPlain(ids), l.Key)
		if nAcq > len(ids) {
			s += fmt.Sprintf(" %d times", nAcq)
		}
		if p != nil && pc == holder {
			s += " meanwhile"
		} else {
			s += fmt.Sprintf(" while client %d still believed it held it", holder)
		}
		parts = append(parts, s)
	}
	if len(writes) > 0 {
		lead := "it then"
		if p != nil && pc == holder {
			lead = "on resuming it"
		}
		parts = append(parts, fmt.Sprintf("%s wrote over %s update%s", lead, joinAnd(writes), pluralS(len(writes), "", "s")))
	}
	if len(overwritten) > 0 {
		parts = append(parts, fmt.Sprintf("%s, working from a stale read, wrote over client %d's update", joinAnd(overwritten), holder))
	}
	for _, c := range AllChecks {
		if n := other[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", n, c, pluralS(n, "violation", "violations")))
		}
	}
	return strings.Join(parts, "; ") + "."
}

// whatHappened is the cause's part of an incident's sentence.
func (m *model) whatHappened(inc *Incident, vs []Violation, p *pause, pc int) string {
	l := inc.Lease
	c, key := l.Client, l.Key
	f := m.faultBy[inc.FaultID]
	at := ""
	if f != nil {
		at = " at " + sec(f.t)
	}
	ranOut := ""
	if l.DeadlineNS > 0 {
		ranOut = fmt.Sprintf("its lease on %s ran out at %s", key, sec(l.DeadlineNS))
	}
	switch inc.Cause {
	case CausePause:
		if f != nil && f.kind == history.FaultPauseNode && p == nil {
			return fmt.Sprintf("%s was frozen %.2f s from %s while client %d held %s, and the server expired the key as it resumed", faultName(f), float64(f.healT-f.t)/1e9, sec(f.t), c, key)
		}
		return m.pauseHappened(l, p, pc)
	case CauseFailover:
		if f != nil && f.kind == history.FaultIsolateNode {
			return fmt.Sprintf("%s was cut off from the rest of the cluster%s and the replica the majority promoted did not have client %d's key %s", faultName(f), at, c, key)
		}
		return fmt.Sprintf("the master failed over%s and the promoted replica did not have client %d's key %s", at, c, key)
	case CauseMinorityMaster:
		return fmt.Sprintf("%s, cut off from the rest of the cluster%s, granted client %d the key %s, and the replica the majority promoted never got it", faultName(f), at, c, key)
	case CauseEmptyRestart:
		return fmt.Sprintf("%s restarted empty%s, losing client %d's key %s", faultName(f), at, c, key)
	case CauseClockJump, CauseClockDrift:
		return fmt.Sprintf("%s's clock ran ahead%s and expired client %d's key %s early", faultName(f), at, c, key)
	case CauseNonOwnerDel:
		// The unlock check names the release that deleted the key.
		if v := culprit(inc, vs); v != nil {
			return fmt.Sprintf("client %d's release deleted client %d's key %s at %s while client %d held it", v.Clients[0], c, key, sec(v.Window[0]), c)
		}
		return fmt.Sprintf("another client's release deleted client %d's key %s while client %d held it", c, key, c)
	case CauseRenewalOverwrote:
		if v := culprit(inc, vs); v != nil {
			return fmt.Sprintf("client %d's renewal, on the wire after its own key had expired, overwrote client %d's key %s at %s while client %d held it: the lock changed hands without an acquire",
				v.Clients[0], c, key, sec(v.Window[0]), c)
		}
		return fmt.Sprintf("another client's renewal overwrote client %d's key %s while client %d held it", c, key, c)
	case CauseExtendedForeign:
		return fmt.Sprintf("another client's renewal extended client %d's key %s while client %d held it", c, key, c)
	case CauseRenewalFailed:
		return fmt.Sprintf("client %d's renewals of %s failed and the key expired", c, key)
	case CausePartitioned:
		return fmt.Sprintf("client %d was cut off from Redis%s and its key %s expired", c, at, key)
	case CauseStalled:
		return fmt.Sprintf("client %d's commands were delayed%s and its key %s expired", c, at, key)
	case CauseClockSkew:
		if l.DeadlineNS == 0 {
			return fmt.Sprintf("client %d's clock ran at another rate and its lock's timers read it, so its key %s expired while it held it", c, key)
		}
		return fmt.Sprintf("client %d's clock was skewed, so it trusted its lease on %s too long", c, key)
	case CauseActedLate:
		return fmt.Sprintf("client %d acted on the resource after %s", c, orStr(ranOut, "its lease ran out"))
	case CauseExpired:
		return fmt.Sprintf("client %d's key %s expired while it still held it", c, key)
	case CauseLocalReentry:
		return fmt.Sprintf("client %d re-entered %s after its key had expired at the server", c, key)
	case CauseReleasedLevelKept:
		return fmt.Sprintf("client %d acquired %s and the lock counted levels it had released, so its release left the key held", c, key)
	case CauseFailedAcquireKept:
		return fmt.Sprintf("client %d's acquire of %s that answered it had failed left a level at the server, so its later release left the key held", c, key)
	case CauseMinorityQuorum, CauseForeignReentry, CauseFreedAboveZero, CauseFenceNotMonotonic, CauseNotGranted, CauseExpiredOnArrival, CauseFenceIssuedLate:
		if s := ownHappened(inc, vs); s != "" {
			return s
		}
	}
	return fmt.Sprintf("client %d believed it held %s from %s to %s, and nothing in the fault or server record explains how another client got it",
		c, key, sec(l.AcquiredNS), sec(l.BelievedToNS))
}

// pauseHappened tells an incident caused by client pc's pause p (pc is the
// lease's client, or the later client paused inside its acquire).
func (m *model) pauseHappened(l *Lease, p *pause, pc int) string {
	c, key := l.Client, l.Key
	if p == nil {
		return fmt.Sprintf("client %d was paused while it held %s", c, key)
	}
	d := p.end - p.t
	ttl := ""
	if m.ttl > 0 {
		ttl = fmt.Sprintf(" (%.1f×TTL)", float64(d)/float64(m.ttl))
	}
	where := ""
	if p.point != "" {
		where = " at " + p.point
	}
	if pc != c {
		return fmt.Sprintf("client %d was paused %.2f s%s%s inside its acquire of %s, and took the key after it had expired and client %d had acquired it",
			pc, float64(d)/1e9, ttl, where, key, c)
	}
	s := fmt.Sprintf("client %d was paused %.2f s%s%s from %s, while holding %s", c, float64(d)/1e9, ttl, where, sec(p.t), key)
	if l.DeadlineNS > 0 && l.DeadlineNS < p.end {
		s += fmt.Sprintf("; its lease ran out at %s", sec(l.DeadlineNS))
	}
	return s
}

// culprit is the unlock violation of inc against its lease that names the
// other client (whose release or renewal changed the key), or nil.
func culprit(inc *Incident, vs []Violation) *Violation {
	for _, i := range inc.Violations {
		if v := &vs[i]; v.Check == CheckUnlock && v.Lease != nil && *v.Lease == *inc.Lease && len(v.Clients) == 2 {
			return v
		}
	}
	return nil
}

func faultName(f *fault) string {
	if f == nil {
		return "a node"
	}
	return targetName(f)
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func pluralS(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func appendOnce(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func joinIntsPlain(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func countViolations(cs map[string]CheckResult) int {
	n := 0
	for _, c := range cs {
		n += c.Violations
	}
	return n
}
