package runner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report"
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
	Phases *report.PhaseTimer
}

// Evaluate checks a run directory's history, compares the verdicts with the
// scenario's expectation for lock, evaluates thresholds, renders the report
// into dir and returns the results with the exit code. It is what `run` does
// after the workload and what `check DIR` does on a saved run.
func Evaluate(dir string, s *scenarios.Scenario, lock string, eo EvalOptions) (*report.Results, Class, error) {
	hist := history.FileIn(dir)
	pt := eo.Phases
	if pt == nil {
		pt = report.NewPhaseTimer()
	}
	cres := eo.Checked
	if cres == nil {
		var err error
		if cres, err = checker.CheckFile(hist, checker.Options{}); err != nil {
			return nil, BadInput, fail(BadInput, "check %s: %w", hist, err)
		}
	}
	pt.Mark("check")
	an, err := report.Analyze(hist, report.AnalyzeOptions{})
	if err != nil {
		return nil, BadInput, fail(BadInput, "analyze %s: %w", hist, err)
	}
	meta, _ := history.RunMeta(hist)
	r := &report.Results{Scenario: s.Name, Lock: lock, Topology: s.Topology, Seed: s.Seed,
		Verdict: string(cres.Verdict), Checks: map[string]report.CheckSummary{}, LockConfig: eo.LockConfig,
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
	verdicts := map[string]string{}
	for name, c := range cres.Checks {
		r.Checks[name] = c
		verdicts[name] = string(c.Verdict)
	}
	r.Violations = []report.ViolationSummary{}
	for _, v := range cres.Violations {
		r.Violations = append(r.Violations, report.ViolationSummary{Check: v.Check, Key: v.Key, Clients: v.Clients,
			AtMS: v.AtMS, Detail: v.Detail, Cause: v.Cause, Explanation: v.Explanation, WindowNS: v.Window,
			Lease: leaseSummary(v.Lease), FaultID: v.FaultID})
	}
	r.Incidents = []report.IncidentSummary{}
	for _, in := range cres.Incidents {
		r.Incidents = append(r.Incidents, report.IncidentSummary{ID: in.ID, Sentence: in.Sentence, Cause: in.Cause,
			FaultID: in.FaultID, Lease: leaseSummary(in.Lease), SpanNS: in.Span, Clients: in.Clients, Keys: in.Keys,
			Counts: in.Counts, Violations: in.Violations})
	}
	r.LossDetection = cres.LossDetection
	report.FillStats(r, an)

	exp := ExpectationFor(s, lock)
	r.Expected = exp
	matched, mismatches := scenarios.Matches(exp, verdicts)
	switch {
	case matched:
		r.Outcome = "as-expected"
	case cres.Verdict == checker.Unknown:
		r.Outcome = "unknown"
	default:
		r.Outcome = "unexpected"
	}
	for _, m := range mismatches {
		r.Notes = append(r.Notes, "not as expected: "+m)
	}

	code := Passed
	if eo.Expect {
		switch r.Outcome {
		case "unknown":
			code = Unknown
		case "unexpected":
			code = Violated
		}
	} else {
		switch cres.Verdict {
		case checker.Invalid:
			code = Violated
		case checker.Unknown:
			code = Unknown
		}
	}
	exprs := append(append([]string{}, s.Thresholds...), eo.Thresholds...)
	r.Thresholds = report.EvalThresholds(exprs, r)
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
	r.Phases = &pt.P
	if err := report.RenderWith(dir, r, an, report.RenderOptions{NoPlots: eo.NoPlots}); err != nil {
		return r, Infra, fail(Infra, "render report into %s: %w", dir, err)
	}
	// The report's own time is known only now: results.json again with it.
	pt.Mark("report")
	if err := report.WriteJSON(filepath.Join(dir, report.ResultsFile), r); err != nil {
		return r, Infra, fail(Infra, "render report into %s: %w", dir, err)
	}
	return r, code, nil
}

func leaseSummary(l *checker.Lease) *report.LeaseSummary {
	if l == nil {
		return nil
	}
	return &report.LeaseSummary{Client: l.Client, Key: l.Key, AcquiredNS: l.AcquiredNS, DeadlineNS: l.DeadlineNS, BelievedToNS: l.BelievedToNS}
}

// CheckDir re-runs the checker on a saved run directory, with the scenario
// saved in it, and re-renders its report.
func CheckDir(dir string, eo EvalOptions) (*report.Results, Class, error) {
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
	if old, err := report.ReadResults(filepath.Join(dir, "results.json")); err == nil {
		eo.LockConfig = old.LockConfig
		if old.Phases != nil && eo.Phases == nil {
			// The run's phases stand; check and report are this check's.
			eo.Phases = report.NewPhaseTimer()
			eo.Phases.P = *old.Phases
		}
		if eo.Backend == "" {
			eo.Backend = old.Backend
		}
	}
	return Evaluate(dir, s, lock, eo)
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xfa017)) }

// RenderDir re-renders a saved run's report from its history and results.json
// without re-checking.
func RenderDir(dir string) (*report.Results, error) {
	r, err := report.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, fail(BadInput, "%w", err)
	}
	an, err := report.Analyze(history.FileIn(dir), report.AnalyzeOptions{})
	if err != nil {
		return nil, fail(BadInput, "%w", err)
	}
	report.FillStats(r, an)
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
