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
// # Files
//
// Each check is one file, checker/<name>.go (its judge and result), with
// its test, checker/<name>_test.go, and one line of the checks table
// (checker.go), which also gives the live verdict its count. The model the
// checks read is built in model.go, streamed and pruned in stream.go;
// causes and incidents are cause.go and incident.go; the command record's
// replay is cmdrecord.go.
//
// # Cost
//
// The history is streamed once (history.ScanFile, decoded in a goroutine of
// its own) into compact per-key tables (holds, resource writes, server
// events; no tokens or strings per event). The checks judge it in windows of
// time as it is read and pruning drops what no later window can need
// (stream.go), so memory depends on concurrency, the TTL and the run's
// faults, not on the length of the run; a whole check (Check, or a stream
// that could not be exact) keeps every table: O(n log n) time, memory
// proportional to the holds and writes.
package checker

import (
	"fmt"
	"os"
	"sort"
	"strings"

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
	// NoCommandRecord sets the history's command record aside: the unlock
	// check matches keyspace notifications to calls by time, as for a
	// history without one (the cross-check of the two).
	NoCommandRecord bool

	// whole: judge the whole history in one window at the end (no
	// pruning): Check, and CheckFile's second pass.
	whole bool
	// batch: judge a window every batch events at least (default
	// minBatch); tests make it small to judge many windows.
	batch int
	// every: also judge a window every this much stream time (ns), so
	// that a live check keeps up with a slow run (LiveChecker: 1 s).
	every int64
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
	// OwnershipSource is what the unlock check read: "command-record"
	// (every node's commands with their clients: exact) or
	// "keyspace-observer" (notifications matched to calls by time), with
	// why the record was not used.
	OwnershipSource string `json:"ownership_source,omitempty"`
}

// CheckFile streams a history file and checks it in bounded memory (see
// Stream). Where streaming could not be exact (an event came after its
// time was judged), the file is checked again whole, and the result says
// so in a note.
func CheckFile(path string, o Options) (*Result, error) {
	if compareOn() && !o.whole {
		return checkFileCompared(path, o)
	}
	st := NewStream(o)
	info, err := scanPipelined(path, st.Add)
	if err != nil {
		return nil, err
	}
	r := st.Result()
	if why := st.Inexact(); why != "" {
		o.whole = true
		st = NewStream(o)
		if info, err = scanPipelined(path, st.Add); err != nil {
			return nil, err
		}
		r = st.Result()
		r.Notes = append(r.Notes, "checked whole, not streamed: "+why)
	}
	r.Events, r.Torn = info.Events, info.Torn
	return r, nil
}

// checkFileCompared is CheckFile under CompareEnv: streamed in small
// windows and whole, an error on any difference.
func checkFileCompared(path string, o Options) (*Result, error) {
	so := o
	so.batch = compareBatch
	st := NewStream(so)
	info, err := scanPipelined(path, st.Add)
	if err != nil {
		return nil, err
	}
	streamed := st.Result()
	streamed.Events, streamed.Torn = info.Events, info.Torn
	o.whole = true
	whole, err := CheckFile(path, o)
	if err != nil {
		return nil, err
	}
	if why := st.Inexact(); why != "" {
		fmt.Fprintf(os.Stderr, "lockchaos: %s: %s: streamed check inexact (%s); whole result used\n", CompareEnv, path, why)
		whole.Notes = append(whole.Notes, "checked whole, not streamed: "+why)
		return whole, nil
	}
	if d := Differences(streamed, whole); len(d) > 0 {
		return nil, fmt.Errorf("%s: streamed and whole checks of %s differ (%d windows):\n  %s", CompareEnv, path, st.Windows, strings.Join(d, "\n  "))
	}
	return whole, nil
}

// scanPipelined reads path in a goroutine of its own (decompressing and
// decoding) while add folds the events in: on two cores the check costs
// about the larger of the two, not their sum.
func scanPipelined(path string, add func(*history.Event)) (history.ScanInfo, error) {
	const batch = 4096
	ch := make(chan []history.Event, 8)
	free := make(chan []history.Event, 10)
	var info history.ScanInfo
	var err error
	go func() {
		defer close(ch)
		buf := make([]history.Event, 0, batch)
		info, err = history.ScanFile(path, func(e *history.Event) error {
			buf = append(buf, *e)
			if len(buf) == batch {
				ch <- buf
				select {
				case buf = <-free:
					buf = buf[:0]
				default:
					buf = make([]history.Event, 0, batch)
				}
			}
			return nil
		})
		if len(buf) > 0 {
			ch <- buf
		}
	}()
	// Every batch is taken (the reader never stops early), so the
	// goroutine always ends.
	for b := range ch {
		for i := range b {
			add(&b[i])
		}
		clear(b)
		select {
		case free <- b:
		default:
		}
	}
	return info, err
}

// Check checks events held in memory (tests, embedding), whole.
func Check(events []history.Event, o Options) *Result {
	o.whole = true
	st := NewStream(o)
	for i := range events {
		st.Add(&events[i])
	}
	r := st.Result()
	r.Events = len(events)
	return r
}

// checks are every check, in report order: adding a check is its name
// above, its line here and its file (checker/<name>.go, with its test).
// judge runs on every judged window (stream.go), result once at the end;
// count is how many violations the judged windows found so far (the live
// verdict, Stream.Live, sums it over the table).
var checks = []struct {
	name   string
	judge  func(m *model, c *ctx)
	result func(m *model, c *ctx) (CheckResult, bool)
	count  func(c *ctx) int
}{
	{CheckMutex, judgeMutex, resultMutex, func(c *ctx) int { return c.mutex.count }},
	{CheckResource, judgeResource, resultResource, func(c *ctx) int { return c.resource.count }},
	{CheckFencing, judgeFencing, resultFencing, func(c *ctx) int { return c.fencing.count }},
	{CheckUnlock, judgeUnlock, resultUnlock, func(c *ctx) int { return c.unlockCount }},
	{CheckReentrancy, judgeReentrancy, resultReentrancy, func(c *ctx) int { return c.reent.count }},
	{CheckLiveness, judgeLiveness, resultLiveness, func(c *ctx) int { return c.live.count }},
	{CheckFaults, nil, resultFaults, nil},
}

// ctx is shared state of one checking pass: the options, the violations
// kept and each check's accumulator.
type ctx struct {
	o     Options
	want  map[string]bool
	viols []Violation
	notes []string

	mutex       mutexAcc
	resource    resourceAcc
	fencing     fencingAcc
	unlockCount int
	reent       reentAcc
	live        liveAcc
	loss        lossAcc
}

func (c *ctx) violate(v Violation, count *int) {
	*count++
	if *count <= c.o.MaxViolations {
		c.viols = append(c.viols, v)
	}
}

func (c *ctx) runs(name string) bool { return len(c.want) == 0 || c.want[name] }

// judge runs every check on the window [m.from, m.to).
func (m *model) judge(c *ctx) {
	for _, ck := range checks {
		if ck.judge != nil && c.runs(ck.name) {
			ck.judge(m, c)
		}
	}
}

// result gathers the checks' answers once the last window is judged.
func (m *model) result(c *ctx) *Result {
	r := &Result{Verdict: Valid, Checks: map[string]CheckResult{}}
	for _, ck := range checks {
		name := ck.name
		if !c.runs(name) {
			continue
		}
		res, applies := ck.result(m, c)
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
	r.LossDetection = m.lossDetection(&c.loss)
	r.OwnershipSource = m.ownershipSource()
	if m.badEvents > 0 {
		m.notes = append(m.notes, fmt.Sprintf("%d fault events had no fault record and were ignored", m.badEvents))
	}
	if r.LossDetection != nil && r.LossDetection.Losses == 0 && m.nHolds > 0 && !m.lockKeysSeen() {
		// No loss found where nothing of the lock's keys was seen is
		// not "no loss".
		r.LossDetection = nil
		c.notes = append(c.notes, "loss detection not measured: no command or notification on the lock's keys reached the servers' record (the lock may name its own keys: report them, `keys` in `acquired`)")
	}
	c.notes = append(c.notes, m.keyMapNotes()...)
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
