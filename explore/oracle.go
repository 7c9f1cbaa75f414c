package explore

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
)

// RunResult is what one run of a schedule said.
type RunResult struct {
	Lock string
	Seed uint64
	// Checks is check → verdict (valid | invalid | unknown), without the
	// faults check (Tried says that).
	Checks map[string]string
	// Tried: every fault kind of the schedule took effect at least once.
	// A run whose faults did not take effect tested nothing.
	Tried bool
	// Untried says which fault did not take effect, and why.
	Untried string
	// Causes and Sentences are, per invalid check, the cause and the
	// incident sentence of its first violation.
	Causes    map[string]string
	Sentences map[string]string
	// Windows are, per fault kind of the schedule that took effect, what
	// the run's acquires did while it was in effect (nil: not measured, the
	// history unread).
	Windows map[string]Window
	Dir     string
	Err     error
}

// Window is one fault kind's firings that took effect, each from its
// start to its heal (or to the run's end when it was not healed), and the
// acquires answered inside them: granted (ok) and unanswered (unknown: a
// command timeout, a broken connection). A lock that acquired nothing
// under a fault, every attempt unanswered, could not act while it was in
// effect.
type Window struct {
	Firings int `json:"firings"`
	OK      int `json:"ok"`
	Unknown int `json:"unknown"`
	// StalledInAcquire counts, for stall-commands, the acquire commands
	// its firings delayed by their heals' measured effect (-1: not
	// measured, or met on the wire uncounted). A stall of SET delays none
	// of a lock's that acquires with a script: a comparison with such a
	// reference is not like with like.
	StalledInAcquire int `json:"stalled_in_acquire,omitempty"`
}

// Oracle runs a schedule once.
type Oracle interface {
	Run(ctx context.Context, s Schedule, lock string, seed uint64, dir string) RunResult
}

// LockOptioner is an Oracle that runs the lock with options (lock.extra: a
// driver lock's version, say). A finding's saved scenario carries them, so
// that its replay runs the lock as it was explored.
type LockOptioner interface {
	LockOptions() map[string]string
}

// RunnerOracle runs schedules with runner.Run on local servers.
type RunnerOracle struct {
	// Backend: process | embedded | auto (default).
	Backend string
	// LockExtra are the lock's options (lock.extra: a driver lock's
	// version, say), given to the lock and to its reference, which ignores
	// them when it is a built-in.
	LockExtra map[string]string
}

// LockOptions are its LockExtra.
func (o RunnerOracle) LockOptions() map[string]string { return o.LockExtra }

// Run runs s on lock with seed into dir.
func (o RunnerOracle) Run(ctx context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	rr := RunResult{Lock: lock, Seed: seed, Dir: dir}
	sc, err := s.Scenario("explore")
	if err != nil {
		rr.Err = err
		return rr
	}
	sc.Seed = seed
	sc.Lock.Extra = s.LockExtra(o.LockExtra)
	_ = os.RemoveAll(dir)
	out, err := runner.Run(ctx, runner.Options{Scenario: sc, Lock: lock, Out: dir, Setup: runner.Setup{Backend: o.Backend}, NoPlots: true})
	if out == nil || out.Results == nil {
		if err == nil {
			err = fmt.Errorf("run gave no results")
		}
		rr.Err = err
		return rr
	}
	if ctx.Err() != nil || out.Interrupted {
		rr.Err = fmt.Errorf("interrupted")
	}
	rr = FromResults(rr, s, out.Results)
	if out.Dir != "" {
		dir = out.Dir
	}
	if w, err := Windows(history.FileIn(dir), out.Results.Faults); err == nil {
		rr.Windows = w
	}
	return rr
}

// Windows counts, per fault kind, the acquires of the history at path
// answered while a firing of it that took effect was in effect (from its
// start to its heal, or to the run's end); every kind with such a firing
// has an entry.
func Windows(path string, fs []metrics.FaultSummary) (map[string]Window, error) {
	type span struct {
		kind     string
		from, to int64 // to 0: not healed
	}
	var spans []span
	out := map[string]Window{}
	from := int64(math.MaxInt64)
	for _, f := range fs {
		if !f.Applied {
			continue
		}
		sp := span{kind: f.Kind, from: int64(f.AtMS * 1e6)}
		if f.HealedMS > 0 {
			sp.to = int64(f.HealedMS * 1e6)
		}
		spans = append(spans, sp)
		from = min(from, sp.from)
		w := out[f.Kind]
		w.Firings++
		if f.Kind == history.FaultStallCommands {
			w.StalledInAcquire = addStalled(w.StalledInAcquire, f.HealEffect)
		}
		out[f.Kind] = w
	}
	if len(spans) == 0 {
		return out, nil
	}
	_, err := history.ScanWindow(path, from, math.MaxInt64, func(e *history.Event) error {
		if e.Op != history.OpAcquire || e.End == 0 || (e.Result != history.OK && e.Result != history.Unknown) {
			return nil
		}
		for k := range out {
			if !slices.ContainsFunc(spans, func(sp span) bool {
				return sp.kind == k && e.End >= sp.from && (sp.to == 0 || e.End <= sp.to)
			}) {
				continue
			}
			w := out[k]
			if e.Result == history.OK {
				w.OK++
			} else {
				w.Unknown++
			}
			out[k] = w
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addStalled adds a stall's measured acquire commands (its heal's effect)
// to sum: -1 once one firing's count is not known.
func addStalled(sum int, heal map[string]string) int {
	n, err := strconv.Atoi(heal[history.EffectStalledInAcquire])
	if sum < 0 || err != nil || n < 0 || heal[history.EffectStalledOnWire] == "true" {
		return -1
	}
	return sum + n
}

// FromResults reads a run's results into rr.
func FromResults(rr RunResult, s Schedule, r *metrics.Results) RunResult {
	rr.Checks = map[string]string{}
	for c, ch := range r.Checks {
		if c == checker.CheckFaults {
			continue
		}
		rr.Checks[c] = string(ch.Verdict)
	}
	rr.Tried, rr.Untried = tried(s, r.Faults)
	rr.Causes, rr.Sentences = map[string]string{}, map[string]string{}
	for _, v := range r.Violations {
		if _, ok := rr.Causes[v.Check]; !ok {
			rr.Causes[v.Check] = v.Cause
			rr.Sentences[v.Check] = v.Explanation
		}
	}
	seen := map[string]bool{}
	for _, inc := range r.Incidents {
		for c := range inc.Counts {
			if seen[c] {
				continue
			}
			seen[c] = true
			rr.Sentences[c] = inc.Sentence
			if inc.Cause != "" {
				rr.Causes[c] = inc.Cause
			}
		}
	}
	return rr
}

// tried: every kind of the schedule's faults has a firing that took
// effect; else the first that did not, with its reason.
func tried(s Schedule, fs []metrics.FaultSummary) (bool, string) {
	for _, f := range s.Faults {
		why := "never recorded"
		if slices.ContainsFunc(fs, func(x metrics.FaultSummary) bool { return x.Kind == f.Spec.Kind && x.Applied }) {
			continue
		}
		for _, x := range fs {
			if x.Kind == f.Spec.Kind {
				why = x.Effect["reason"]
				if why == "" {
					why = x.Effect["error"]
				}
				break
			}
		}
		return false, f.Spec.Kind + ": " + why
	}
	return true, ""
}
