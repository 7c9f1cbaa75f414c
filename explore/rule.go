package explore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// Class is what a schedule showed about one check (or, for the schedule,
// the most telling of its checks).
type Class string

const (
	// Finding: the reference passed the check on every seed, its faults
	// taking effect on each, while the lock failed it on at least one.
	Finding Class = "finding"
	// Limit: the reference failed it too: a limit of the design, not of
	// the lock.
	Limit Class = "limit"
	// Untried: the faults did not take effect (on the lock's runs, or on
	// a reference run the finding would rest on): nothing was tested.
	Untried Class = "untried"
	// Passed: the lock passed on every seed its faults took effect.
	Passed Class = "passed"
	// RefIdle: the reference "passed" a check the lock failed, but could
	// not act under the faults: on every seed it acquired nothing while
	// one of them was in effect (each attempt unanswered), while on every
	// run the lock failed the check it acquired at least once under it.
	// Its pass is vacuous, not a finding.
	RefIdle Class = "reference-idle"
	// Known: the lock's screening run failed only checks whose causes are
	// those of findings already confirmed or being shrunk and confirmed;
	// it is not run on the reference and more seeds (it could only show
	// them again) and counts as a duplicate. A schedule the reference
	// would fail too with the same cause (a limit) is counted here, not
	// among the limits.
	Known Class = "known"
	// Errored: the lock's screening run did not run to its verdict (the
	// machine, or a driver that failed to start or answer): nothing was
	// tested. Report.RunErrors says why.
	Errored Class = "errored"
)

// Rate is k failures in n runs with its 95% Wilson interval.
type Rate struct {
	Fails int     `json:"fails"`
	N     int     `json:"n"`
	Low   float64 `json:"ci95_low"`
	High  float64 `json:"ci95_high"`
}

func rateOf(k, n int) Rate {
	lo, hi := metrics.Wilson(k, n)
	return Rate{Fails: k, N: n, Low: lo, High: hi}
}

func (r Rate) String() string {
	return fmt.Sprintf("%d/%d [%.2f, %.2f]", r.Fails, r.N, r.Low, r.High)
}

// Apart reports whether the lock's failure rate is above the reference's
// beyond chance: the lower end of its 95% Wilson interval above the upper
// end of the reference's (5/5 against 0/5 is; 3/5 or 2/5 against 0/5 is
// not, and needs more seeds).
func Apart(lock, ref Rate) bool { return lock.N > 0 && ref.N > 0 && lock.Low > ref.High }

// Verdict is one check's class with both failure rates.
type Verdict struct {
	Check string `json:"check"`
	Class Class  `json:"class"`
	Lock  Rate   `json:"lock"`
	Ref   Rate   `json:"reference"`
	// Cause and Sentence are from the lock's first failing run.
	Cause    string `json:"cause,omitempty"`
	Sentence string `json:"sentence,omitempty"`
	// Reason says, for RefIdle, under which fault the reference could not
	// acquire.
	Reason string `json:"reason,omitempty"`
}

// Classify applies the finding rule to the lock's and the reference's runs
// of one schedule, check by check (checks sorted by name), and returns the
// schedule's class: a finding if any check is one, else a limit, else
// reference-idle (the reference's pass was vacuous: Idle), else untried
// when a failure of the lock could not be judged (the reference's faults
// did not take effect) or nothing was tried, else passed.
func Classify(lockRuns, refRuns []RunResult) (Class, []Verdict) {
	checks := map[string]bool{}
	for _, r := range append(append([]RunResult{}, lockRuns...), refRuns...) {
		for c := range r.Checks {
			checks[c] = true
		}
	}
	names := slices.Sorted(maps.Keys(checks))
	lockTried := false
	for _, r := range lockRuns {
		if r.Err == nil && r.Tried {
			lockTried = true
		}
	}
	var out []Verdict
	has := map[Class]bool{}
	failUntried := false
	for _, c := range names {
		v := Verdict{Check: c}
		lf, ln := 0, 0
		for _, r := range lockRuns {
			if r.Err != nil || r.Checks == nil {
				continue
			}
			ln++
			if r.Checks[c] == "invalid" {
				lf++
				if v.Cause == "" {
					v.Cause, v.Sentence = r.Causes[c], r.Sentences[c]
				}
			}
		}
		rf, rn, rpass := 0, 0, 0
		for _, r := range refRuns {
			if r.Err != nil || r.Checks == nil {
				continue
			}
			rn++
			switch {
			case r.Checks[c] == "invalid":
				rf++
			case r.Checks[c] == "valid" && r.Tried:
				rpass++
			}
		}
		v.Lock, v.Ref = rateOf(lf, ln), rateOf(rf, rn)
		switch {
		case lf == 0 && lockTried:
			v.Class = Passed
		case lf == 0:
			v.Class = Untried
		case rf > 0:
			v.Class = Limit
		case rn > 0 && rpass == rn:
			v.Class = Finding
			if why := Idle(lockRuns, refRuns, c); why != "" {
				v.Class, v.Reason = RefIdle, why
			}
		default:
			v.Class = Untried
			failUntried = true // a failure the reference could not judge
		}
		has[v.Class] = true
		out = append(out, v)
	}
	switch {
	case has[Finding]:
		return Finding, out
	case has[Limit]:
		return Limit, out
	case has[RefIdle]:
		return RefIdle, out
	case failUntried || !has[Passed]:
		return Untried, out
	}
	return Passed, out
}

// Idle says why the reference's pass of check is vacuous, "" when it is
// not: a fault kind under which, on every reference run, no acquire was
// granted and at least one went unanswered, while on every run of the
// lock that failed check at least one was granted; or a stall of commands
// that, by its measured effect, delayed none of the reference's acquire
// commands on any run while it delayed the lock's on every failing run (a
// stall of SET against a reference that acquires with a script: not like
// with like, so not a finding, nor a schedule to shrink toward). The rule is kept
// narrow: a reference that was refused (the key held, as a correct lock
// must refuse) or whose acquires were not measured is not idle, and a
// lock run that failed without acquiring under the fault shows a
// difference the reference's idleness does not explain.
func Idle(lockRuns, refRuns []RunResult, check string) string {
	var failing, refs []RunResult
	for _, r := range lockRuns {
		if r.Err == nil && r.Checks[check] == "invalid" {
			failing = append(failing, r)
		}
	}
	for _, r := range refRuns {
		if r.Err == nil && r.Checks != nil {
			refs = append(refs, r)
		}
	}
	if len(failing) == 0 || len(refs) == 0 {
		return ""
	}
	kinds := map[string]bool{}
	for _, r := range failing {
		for k := range r.Windows {
			kinds[k] = true
		}
	}
kinds:
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		lo, hi, unknown := -1, 0, 0
		for _, r := range failing {
			w, ok := r.Windows[k]
			if !ok || w.OK == 0 {
				continue kinds
			}
			if lo < 0 || w.OK < lo {
				lo = w.OK
			}
			hi = max(hi, w.OK)
		}
		for _, r := range refs {
			w, ok := r.Windows[k]
			if !ok || w.OK > 0 || w.Unknown == 0 {
				continue kinds
			}
			unknown += w.Unknown
		}
		grants := fmt.Sprint(lo)
		if hi != lo {
			grants = fmt.Sprintf("%d-%d", lo, hi)
		}
		return fmt.Sprintf("under %s the reference acquired nothing on %d seed(s) (%d attempts unanswered), the lock %s time(s) on each of its %d failing run(s)",
			k, len(refs), unknown, grants, len(failing))
	}
	return untouched(failing, refs)
}

// untouched says why a stall-commands comparison is vacuous: on every
// reference run its firings delayed none of the reference's acquire
// commands, on every failing run of the lock at least one ("" if not, or
// not measured on some run).
func untouched(failing, refs []RunResult) string {
	k := history.FaultStallCommands
	lo := -1
	for _, r := range failing {
		w, ok := r.Windows[k]
		if !ok || w.StalledInAcquire <= 0 {
			return ""
		}
		if lo < 0 || w.StalledInAcquire < lo {
			lo = w.StalledInAcquire
		}
	}
	for _, r := range refs {
		if w, ok := r.Windows[k]; !ok || w.StalledInAcquire != 0 {
			return ""
		}
	}
	return fmt.Sprintf("%s delayed none of the reference's acquire commands on %d seed(s) and at least %d of the lock's on each of its %d failing run(s): the fault did not touch the reference",
		k, len(refs), lo, len(failing))
}

// FindingsOf are the verdicts of class Finding.
func FindingsOf(vs []Verdict) []Verdict {
	var out []Verdict
	for _, v := range vs {
		if v.Class == Finding {
			out = append(out, v)
		}
	}
	return out
}
