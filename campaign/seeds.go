package campaign

import (
	"context"
	"fmt"
	"github.com/lockchaos/lockchaos/runner"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// MaxSeeds bounds a seed list (a typo like 1-100000 should not start a day
// of runs).
const MaxSeeds = 1000

// ParseSeeds reads a seed list: "1-10", "1,3,5", "1-3,7" (ascending or not;
// duplicates are an error, seed 0 is not a seed: the scenario default is 1).
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	add := func(v uint64) error {
		if seen[v] {
			return fmt.Errorf("seed %d is listed twice", v)
		}
		seen[v] = true
		out = append(out, v)
		if len(out) > MaxSeeds {
			return fmt.Errorf("more than %d seeds", MaxSeeds)
		}
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseSeed(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseSeed(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%q: range ends before it starts", part)
			}
			if b-a >= MaxSeeds {
				return nil, fmt.Errorf("%q: more than %d seeds", part, MaxSeeds)
			}
		}
		for v := a; v <= b; v++ {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func parseSeed(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%q is not a seed (a positive integer, or a range like 1-10)", s)
	}
	return v, nil
}

// RepeatSeeds is the seeds of n repeats: n seeds from first (the scenario's seed,
// or the one given), so that 10 repeats of a default scenario is seeds 1-10.
func RepeatSeeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// SeedDir is a seed's run directory under a multi-seed run or cell.
func SeedDir(dir string, seed uint64) string { return filepath.Join(dir, fmt.Sprintf("seed-%d", seed)) }

// Summarize aggregates finished seed runs against exp. expect picks the
// exit code rule as for one run: the outcome (true) or the verdicts.
func Summarize(scenario, lock string, exp map[string]string, runs []SeedRun, expect bool) *SeedSummary {
	s := &SeedSummary{Scenario: scenario, Lock: lock, Runs: runs, Expected: exp, Rates: map[string][]Rate{}, Verdicts: map[string]int{}}
	counts := map[string]map[string]int{}
	n := 0
	failed, unknownSeed, unexpectedSeed, thresholdFail := false, false, false, false
	for _, r := range runs {
		s.Seeds = append(s.Seeds, r.Seed)
		if r.Verdict == "" {
			failed = true
			s.Verdicts["error"]++
			continue
		}
		n++
		s.Verdicts[r.Verdict]++
		unknownSeed = unknownSeed || r.Outcome == "unknown"
		unexpectedSeed = unexpectedSeed || r.Outcome == "unexpected"
		// A seed whose verdicts matched but whose exit code says violated
		// failed a threshold.
		thresholdFail = thresholdFail || (r.Outcome == "as-expected" && runner.Class(r.ExitCode) == runner.Violated && expect)
		for c, v := range r.Checks {
			if counts[c] == nil {
				counts[c] = map[string]int{}
			}
			counts[c][v]++
		}
	}
	for c, m := range counts {
		first := "invalid"
		if w, err := scenarios.ParseWant(scenarios.WantFor(exp, c)); err == nil && w.Verdict != "any" {
			first = w.Verdict
		}
		var vs []string
		for v := range m {
			vs = append(vs, v)
		}
		sort.Slice(vs, func(i, j int) bool {
			if (vs[i] == first) != (vs[j] == first) {
				return vs[i] == first
			}
			return vs[i] < vs[j]
		})
		if m[first] == 0 {
			vs = append([]string{first}, vs...)
		}
		for _, v := range vs {
			lo, hi := metrics.Wilson(m[v], n)
			s.Rates[c] = append(s.Rates[c], Rate{Verdict: v, Hits: m[v], N: n, Low: lo, High: hi})
		}
	}
	matched, bad := scenarios.MatchRates(exp, counts, n)
	s.Mismatches = bad
	switch {
	case failed:
		s.Outcome = "error"
	case matched:
		s.Outcome = "as-expected"
	case unknownSeed && !unexpectedSeed:
		s.Outcome = "unknown"
	default:
		s.Outcome = "unexpected"
	}
	s.ExitCode = int(seedsClass(s.Outcome, runs, expect, thresholdFail))
	return s
}

// seedsClass is how a seeded run came out: with expect the outcome over
// the seeds (or a seed's failed threshold) decides, else, as for one run,
// the verdicts; the worst seed wins.
func seedsClass(outcome string, runs []SeedRun, expect, thresholdFail bool) runner.Class {
	class := runner.Passed
	switch {
	case expect && (outcome == "unexpected" || outcome == "error" || thresholdFail):
		class = runner.Violated
	case expect && outcome == "unknown":
		class = runner.Unknown
	case !expect:
		// As for one run: the verdicts decide; the worst seed wins.
		for _, r := range runs {
			switch rc := runner.Class(r.ExitCode); {
			case r.Verdict == "" || rc == runner.Violated:
				class = runner.Violated
			case rc != runner.Passed && class == runner.Passed:
				class = runner.Unknown
			}
		}
	}
	return class
}

// seedRunOf turns one seed's Run outcome into its SeedRun.
func seedRunOf(seed uint64, dir string, out *runner.Outcome, err error) SeedRun {
	sr := SeedRun{Seed: seed, Dir: dir, Attempts: 1}
	if out == nil || out.Results == nil {
		sr.Outcome, sr.Error, sr.ExitCode = "error", fmt.Sprint(err), int(runner.ClassOf(err))
		return sr
	}
	r := out.Results
	sr.Verdict, sr.Outcome, sr.ExitCode = r.Verdict, r.Outcome, int(out.Class)
	sr.Checks = map[string]string{}
	for n, c := range r.Checks {
		sr.Checks[n] = string(c.Verdict)
	}
	if err != nil {
		sr.Error = err.Error()
		if sr.Outcome == "as-expected" {
			sr.Outcome = "unknown"
		}
	}
	return sr
}

// RunSeeds runs o once per seed, each in SeedDir(o.Out, seed), then writes
// the aggregate (seeds.json, seeds.md and an index report.html) into o.Out.
// onSeed, when set, is called after each seed.
func RunSeeds(ctx context.Context, o runner.Options, seeds []uint64, onSeed func(SeedRun, *runner.Outcome)) (*SeedSummary, error) {
	if o.Scenario == nil {
		return nil, fail(runner.BadInput, "no scenario")
	}
	if len(seeds) == 0 {
		return nil, badField("seeds", "no seeds")
	}
	if o.Out == "" {
		o.Out = runner.DefaultOut(o.Scenario.Name, o.Lock)
	}
	if err := runner.PrepareDir(o.Out); err != nil {
		return nil, badField("out", "%s: %w", o.Out, err)
	}
	var runs []SeedRun
	var firstErr error
	for _, seed := range seeds {
		if ctx.Err() != nil {
			break
		}
		sc := *o.Scenario
		sc.Seed = seed
		ro := o
		ro.Scenario, ro.Out = &sc, SeedDir(o.Out, seed)
		out, err := runner.Run(ctx, ro)
		sr := seedRunOf(seed, ro.Out, out, err)
		runs = append(runs, sr)
		if onSeed != nil {
			onSeed(sr, out)
		}
		if err != nil && (out == nil || out.Results == nil) {
			// Bad input or a topology that cannot start: every seed would
			// fail the same way.
			if code := runner.ClassOf(err); code == runner.BadInput || code == runner.Infra {
				firstErr = err
				break
			}
		}
	}
	sum := Summarize(o.Scenario.Name, o.Lock, runner.ExpectationFor(o.Scenario.ForBackend(o.Backend), o.Lock), runs, o.Expect)
	if ctx.Err() != nil && len(runs) < len(seeds) {
		sum.Mismatches = append(sum.Mismatches, fmt.Sprintf("interrupted after %d of %d seeds", len(runs), len(seeds)))
		if sum.ExitCode == 0 {
			sum.ExitCode = int(runner.Unknown)
		}
	}
	if err := report.WriteSeeds(o.Out, sum); err != nil {
		return sum, fail(runner.Infra, "%w", err)
	}
	if firstErr != nil {
		return sum, firstErr
	}
	if ctx.Err() != nil {
		return sum, &runner.Error{Class: runner.Class(sum.ExitCode), Err: context.Canceled}
	}
	return sum, nil
}
