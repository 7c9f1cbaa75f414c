package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// EvalOptions tune Evaluate.
type EvalOptions struct {
	Expect      bool
	Thresholds  []string
	Notes       []string
	LockConfig  map[string]any
	Backend     string
	Interrupted bool
	// StoppedBy is why a limit stopped the run early (Limits); a valid
	// verdict then becomes unknown: the run did not run its course.
	StoppedBy string
	// Notifications is cluster.Notify.Mode of the run.
	Notifications string
	// CommandRecord is cluster.RecordStatus.Mode of the run.
	CommandRecord string
	// NoPlots skips the plots (matrix cells; see report.RenderOptions).
	NoPlots bool
	// Checked is the history's check already done (the live check), or
	// nil to check the history file.
	Checked *checker.Result
	// Phases times the run's phases up to the check (nil: a saved run's
	// check, timed from now); Evaluate marks check and report.
	Phases *metrics.PhaseTimer
	// Pipe is a driver lock's protocol cost per request (metrics.OpPipe),
	// nil for an in-process lock.
	Pipe *metrics.Latency
}

// Evaluate checks a run directory's history, compares the verdicts with the
// scenario's expectation for lock, evaluates thresholds, renders the report
// into dir and returns the results with the exit code. It is what `run` does
// after the workload and what `check DIR` does on a saved run.
func Evaluate(dir string, s *scenarios.Scenario, lock string, eo EvalOptions) (*metrics.Results, Class, error) {
	hist := history.FileIn(dir)
	pt := eo.Phases
	if pt == nil {
		pt = metrics.NewPhaseTimer()
	}
	cres := eo.Checked
	if cres == nil {
		var err error
		if cres, err = checker.CheckFile(hist, checker.Options{}); err != nil {
			return nil, BadInput, fail(BadInput, "check %s: %w", hist, err)
		}
	}
	pt.Mark("check")
	an, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
	if err != nil {
		return nil, BadInput, fail(BadInput, "analyze %s: %w", hist, err)
	}
	meta, _ := history.RunMeta(hist)
	r := newResults(s, lock, eo, cres, meta, an)
	code := judge(r, s, lock, eo, cres.Verdict)
	r.Phases = &pt.P
	if err := report.RenderWith(dir, r, an, report.RenderOptions{NoPlots: eo.NoPlots}); err != nil {
		return r, Infra, fail(Infra, "render report into %s: %w", dir, err)
	}
	// The report's own time is known only now: results.json again with it.
	pt.Mark("report")
	if err := metrics.WriteJSON(filepath.Join(dir, metrics.ResultsFile), r); err != nil {
		return r, Infra, fail(Infra, "render report into %s: %w", dir, err)
	}
	return r, code, nil
}

// newResults is the run's results before judging: what the run's meta
// says about it, the checker's result and the analysis's numbers.
func newResults(s *scenarios.Scenario, lock string, eo EvalOptions, cres *checker.Result, meta map[string]any, an *metrics.Analysis) *metrics.Results {
	r := &metrics.Results{Scenario: s.Name, Lock: lock, Topology: s.Topology, Seed: s.Seed,
		Verdict: string(cres.Verdict), Checks: map[string]checker.CheckResult{}, LockConfig: eo.LockConfig,
		Events: cres.Events, Notes: append(append([]string{}, eo.Notes...), cres.Notes...), Backend: eo.Backend}
	if r.Backend == "" {
		r.Backend, _ = meta[history.MetaBackend].(string)
	}
	r.RunID, _ = meta[history.MetaRunID].(string)
	r.Server, _ = meta[history.MetaServer].(string)
	r.Image, _ = meta[history.MetaImage].(string)
	r.KeyPrefix, _ = meta[history.MetaKeyPrefix].(string)
	r.Notifications = eo.Notifications
	r.CommandRecord = eo.CommandRecord
	if r.CommandRecord == "" {
		r.CommandRecord, _ = meta[history.MetaCommandRecord].(string)
	}
	r.OwnershipSource = cres.OwnershipSource
	if ns, ok := meta[history.MetaStartNS].(float64); ok && ns > 0 {
		r.StartedAt = time.Unix(0, int64(ns)).UTC()
	}
	r.DurationMS = history.MS(an.EndNS) // run start to the last recorded event
	if cres.Torn {
		r.Notes = append(r.Notes, "the history's last line was torn (the run was killed while writing); it was skipped")
	}
	for name, c := range cres.Checks {
		r.Checks[name] = c
	}
	r.Violations = orEmpty(cres.Violations)
	r.Incidents = orEmpty(cres.Incidents)
	r.LossDetection = cres.LossDetection
	metrics.FillStats(r, an)
	if eo.Pipe != nil && eo.Pipe.Count > 0 {
		r.Stats.LatencyUS[metrics.OpPipe] = *eo.Pipe
	}
	return r
}

// judge compares r's verdicts with the scenario's expectation for lock
// (Expected, Outcome), evaluates the thresholds and sets the exit code,
// which it returns. verdict is the checker's overall verdict.
func judge(r *metrics.Results, s *scenarios.Scenario, lock string, eo EvalOptions, verdict checker.Verdict) Class {
	verdicts := map[string]string{}
	for name, c := range r.Checks {
		verdicts[name] = string(c.Verdict)
	}
	r.Expected = ExpectationFor(s, lock)
	matched, mismatches := scenarios.Matches(r.Expected, verdicts)
	switch {
	case matched:
		r.Outcome = "as-expected"
	case verdict == checker.Unknown:
		r.Outcome = "unknown"
	default:
		r.Outcome = "unexpected"
	}
	for _, m := range mismatches {
		r.Notes = append(r.Notes, "not as expected: "+m)
	}
	code := verdictCode(r.Outcome, verdict, eo.Expect)
	exprs := append(append([]string{}, s.Thresholds...), eo.Thresholds...)
	r.Thresholds = metrics.EvalThresholds(exprs, r)
	for _, t := range r.Thresholds {
		if !t.Passed && code == Passed {
			code = Violated
		}
	}
	if eo.Interrupted && code == Passed {
		code = Unknown
	}
	if eo.StoppedBy != "" && r.Verdict == string(checker.Valid) {
		r.Verdict = string(checker.Unknown)
	}
	r.ExitCode = int(code)
	return code
}

// verdictCode is the class of an outcome (with --expect) or of the
// checker's verdict (without).
func verdictCode(outcome string, verdict checker.Verdict, expect bool) Class {
	if expect {
		switch outcome {
		case "unknown":
			return Unknown
		case "unexpected":
			return Violated
		}
		return Passed
	}
	switch verdict {
	case checker.Invalid:
		return Violated
	case checker.Unknown:
		return Unknown
	}
	return Passed
}

// orEmpty is xs, or an empty slice for nil (results.json lists "[]", not
// null).
func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// CheckDir re-runs the checker on a saved run directory, with the scenario
// saved in it, and re-renders its report.
func CheckDir(dir string, eo EvalOptions) (*metrics.Results, Class, error) {
	hist := history.FileIn(dir)
	if _, err := os.Stat(hist); err != nil {
		return nil, BadInput, fail(BadInput, "%s is not a run directory: %w", dir, err)
	}
	meta, err := history.RunMeta(hist)
	if err != nil {
		return nil, BadInput, fail(BadInput, "%w", err)
	}
	sp := filepath.Join(dir, "scenario.yaml")
	b, err := os.ReadFile(sp)
	if err != nil {
		return nil, BadInput, fail(BadInput, "%s is not a run directory: %w", dir, err)
	}
	s, err := scenarios.ParseSaved(b, sp)
	if err != nil {
		return nil, BadInput, fail(BadInput, "%w", err)
	}
	lock, _ := meta[history.MetaLock].(string)
	if lock == "" {
		return nil, BadInput, fail(BadInput, "%s: run event has no %q", hist, history.MetaLock)
	}
	if old, err := metrics.ReadResults(filepath.Join(dir, "results.json")); err == nil {
		eo.LockConfig = old.LockConfig
		if p, ok := old.Stats.LatencyUS[metrics.OpPipe]; ok && eo.Pipe == nil {
			eo.Pipe = &p
		}
		if old.Phases != nil && eo.Phases == nil {
			// The run's phases stand; check and report are this check's.
			eo.Phases = metrics.NewPhaseTimer()
			eo.Phases.P = *old.Phases
		}
		if eo.Backend == "" {
			eo.Backend = old.Backend
		}
	}
	return Evaluate(dir, s, lock, eo)
}

// RenderDir re-renders a saved run's report from its history and results.json
// without re-checking.
func RenderDir(dir string) (*metrics.Results, error) {
	r, err := metrics.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, fail(BadInput, "%w", err)
	}
	an, err := metrics.Analyze(history.FileIn(dir), metrics.AnalyzeOptions{})
	if err != nil {
		return nil, fail(BadInput, "%w", err)
	}
	pipe, measured := r.Stats.LatencyUS[metrics.OpPipe] // the run's, not the history's
	metrics.FillStats(r, an)
	if measured {
		r.Stats.LatencyUS[metrics.OpPipe] = pipe
	}
	if err := report.Render(dir, r, an); err != nil {
		return r, fail(Infra, "%w", err)
	}
	return r, nil
}

func writeFile(path, s string) error {
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
