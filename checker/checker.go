// Package checker decides, from a run's history alone, whether a lock kept
// its promises: mutual exclusion, resource safety, fencing, owner-only
// unlock, reentrancy and liveness. Each check answers valid, invalid or
// unknown, with evidence for every violation and its most likely cause.
//
// # What a client believes
//
// A client believes it holds key k from the ack of a successful acquire
// (the event's End) until it invokes the release that frees the key (depth
// 0), or until it records that it learned the lease was lost. When the lock
// promises a validity (the lease's Deadline, extended by each successful
// renewal: renewal sent + TTL) and the clients honour it (run meta
// "honours"), the belief is cut at that deadline — unless the client still
// acted on the resource after it (a pause between its last check and its
// write), in which case the belief lasts until that act finished. A client
// that crashed believes until its last recorded act. A lease that arrives
// with its deadline already past (the client was frozen between the
// server's reply and Acquire's return) and is never acted on starts no
// belief at all: it overlaps nothing, although the key it set still counts
// as the client's at the server.
//
// # Indeterminate operations
//
// An acquire whose outcome is unknown (timeout, broken connection, crash
// right after the reply) may have set the key at the server. The workload
// never acts on it, so it starts no belief; the server may still hold the
// key until its TTL, which liveness sees as unavailability (the observer's
// record shows whether the key was set). An unknown release ends the belief
// at its invoke like any release: the client stops acting then. A check
// that saw no evidence (no lock ever acquired, no write reached the
// resource) answers unknown, never valid; a fault that did not take effect
// makes the whole run unknown.
//
// # Cost
//
// The history is streamed once (history.ScanFile) into compact per-key
// tables (holds, resource writes, server events; no tokens or strings per
// event), then each check sorts its per-key tables: O(n log n) time, and
// memory proportional to the number of holds and writes, not to the size of
// the history file.
package checker

import (
	"fmt"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// Verdict of a check or of the run.
type Verdict string

const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
)

// Check names.
const (
	CheckMutex      = "mutex"
	CheckResource   = "resource"
	CheckFencing    = "fencing"
	CheckUnlock     = "unlock"
	CheckReentrancy = "reentrancy"
	CheckLiveness   = "liveness"
	CheckFaults     = "faults"
)

// AllChecks lists every check in report order (the order of checks).
var AllChecks = func() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.name
	}
	return out
}()

// Options tune the checker.
type Options struct {
	// MaxViolations kept per check with full evidence (all are counted).
	// Default 100.
	MaxViolations int
	// Epsilon is the slack of liveness: a key may stay unavailable for TTL +
	// Epsilon. Default max(TTL/2, 100ms).
	Epsilon int64
	// ObserverLag is how long after the server acted its notification may
	// reach the observer. Default 5ms.
	ObserverLag int64
	// Checks restricts the checks run (default: all that apply).
	Checks []string
}

// CheckResult is one check's outcome.
type CheckResult struct {
	Verdict    Verdict        `json:"verdict"`
	Violations int            `json:"violations"`
	Notes      []string       `json:"notes,omitempty"`
	Stats      map[string]any `json:"stats,omitempty"`
}

// Violation is one piece of evidence against the lock.
type Violation struct {
	Check   string  `json:"check"`
	Key     string  `json:"key"`
	Clients []int   `json:"clients"`
	AtMS    float64 `json:"at_ms"`
	Detail  string  `json:"detail"`
	// Cause is the most likely cause (expired-during-pause, lost-in-failover,
	// deleted-by-non-owner, ...), Explanation one sentence for a person.
	Cause       string   `json:"cause"`
	Explanation string   `json:"explanation"`
	Window      [2]int64 `json:"window_ns"`
	// Lease is the hold whose belief the violation overlapped (the client
	// that believed it held the key too long), when there is one.
	Lease *Lease `json:"lease,omitempty"`
	// FaultID is the fault the cause names (0: none).
	FaultID int `json:"fault_id,omitempty"`
}

// Result is the checker's answer for a history.
type Result struct {
	Verdict    Verdict                `json:"verdict"`
	Checks     map[string]CheckResult `json:"checks"`
	Violations []Violation            `json:"violations"`
	Events     int                    `json:"events"`
	Torn       bool                   `json:"torn"`
	Notes      []string               `json:"notes,omitempty"`
	// Incidents group Violations: one per cause and fault or lease (see
	// Incident), in order of their start.
	Incidents []Incident `json:"incidents"`
	// LossDetection: how long holders went on believing after the server
	// lost their key (lossdetect.go); nil where not measured.
	LossDetection *LossDetection `json:"loss_detection,omitempty"`
}

// CheckFile streams a history file and checks it.
func CheckFile(path string, o Options) (*Result, error) {
	m := newModel()
	info, err := history.ScanFile(path, func(e *history.Event) error { m.add(e); return nil })
	if err != nil {
		return nil, err
	}
	r := m.check(o)
	r.Events, r.Torn = info.Events, info.Torn
	return r, nil
}

// Check checks events held in memory (tests, embedding).
func Check(events []history.Event, o Options) *Result {
	m := newModel()
	for i := range events {
		m.add(&events[i])
	}
	r := m.check(o)
	r.Events = len(events)
	return r
}

// checkFn runs one check over the model.
type checkFn func(m *model, c *ctx) (CheckResult, bool)

// checks are every check, in report order: adding a check is its name
// above, its line here and its file.
var checks = []struct {
	name string
	fn   checkFn
}{
	{CheckMutex, checkMutex},
	{CheckResource, checkResource},
	{CheckFencing, checkFencing},
	{CheckUnlock, checkUnlock},
	{CheckReentrancy, checkReentrancy},
	{CheckLiveness, checkLiveness},
	{CheckFaults, checkFaults},
}

// ctx is shared state of one checking pass.
type ctx struct {
	o     Options
	viols []Violation
	notes []string
}

func (c *ctx) violate(v Violation, count *int) {
	*count++
	if *count <= c.o.MaxViolations {
		c.viols = append(c.viols, v)
	}
}

func (m *model) check(o Options) *Result {
	if o.MaxViolations <= 0 {
		o.MaxViolations = 100
	}
	if o.ObserverLag <= 0 {
		o.ObserverLag = 5e6
	}
	if o.Epsilon <= 0 {
		o.Epsilon = max(m.ttl/2, 100e6)
	}
	if m.maxUnc > 0 {
		// Server events come from one worker's observer, client steps
		// from every worker's clock: matching them needs the slack of
		// two clocks' error bounds.
		o.ObserverLag += 2 * m.maxUnc
	}
	m.finish(o)
	c := &ctx{o: o}
	want := map[string]bool{}
	for _, n := range o.Checks {
		want[n] = true
	}
	r := &Result{Verdict: Valid, Checks: map[string]CheckResult{}}
	for _, ck := range checks {
		name := ck.name
		if len(want) > 0 && !want[name] {
			continue
		}
		res, applies := ck.fn(m, c)
		if !applies {
			continue
		}
		r.Checks[name] = res
		switch {
		case res.Verdict == Invalid:
			r.Verdict = Invalid
		case res.Verdict == Unknown && r.Verdict == Valid:
			r.Verdict = Unknown
		}
	}
	sort.SliceStable(c.viols, func(i, j int) bool { return c.viols[i].Window[0] < c.viols[j].Window[0] })
	r.Violations = c.viols
	if r.Violations == nil {
		r.Violations = []Violation{}
	}
	r.Incidents = m.incidents(r.Violations)
	r.LossDetection = m.lossDetection()
	r.Notes = append(m.notes, c.notes...)
	if kept, all := len(r.Violations), countViolations(r.Checks); kept < all {
		r.Notes = append(r.Notes, fmt.Sprintf("incidents group the %d violations kept with evidence; %d more were only counted", kept, all-kept))
	}
	if len(r.Checks) == 0 {
		r.Verdict = Unknown
		r.Notes = append(r.Notes, "no check applied to this history")
	}
	return r
}

func verdictOf(violations int, evidence bool) Verdict {
	switch {
	case violations > 0:
		return Invalid
	case !evidence:
		return Unknown
	}
	return Valid
}

// sec formats run ns as seconds for explanations.
func sec(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }
