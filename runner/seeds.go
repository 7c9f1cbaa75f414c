package runner

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/report"
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

// RepeatSeeds is `--repeat n`: n seeds from first (the scenario's seed,
// or --seed), so that --repeat 10 on a default scenario is seeds 1-10.
func RepeatSeeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// SeedDir is a seed's run directory under a multi-seed run or cell.
func SeedDir(dir string, seed uint64) string { return filepath.Join(dir, fmt.Sprintf("seed-%d", seed)) }

// Wilson is the 95% Wilson score interval for hits successes in n trials:
// unlike the normal approximation it stays inside [0, 1] and is not a
// zero-width interval at 0/n or n/n, which is what a few seeds give.
func Wilson(hits, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(hits) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// Rate is how often a check had one verdict over the seeds.
type Rate struct {
	Verdict string  `json:"verdict"`
	Hits    int     `json:"hits"`
	N       int     `json:"n"`
	Low     float64 `json:"ci95_low"`
	High    float64 `json:"ci95_high"`
}

func (r Rate) String() string {
	return fmt.Sprintf("%s in %d/%d (95%% CI %.2f–%.2f)", r.Verdict, r.Hits, r.N, r.Low, r.High)
}

// SeedRun is one seed's run of a multi-seed run or matrix cell.
type SeedRun struct {
	Seed     uint64            `json:"seed"`
	Dir      string            `json:"dir"`
	Verdict  string            `json:"verdict,omitempty"`
	Checks   map[string]string `json:"checks,omitempty"`
	Outcome  string            `json:"outcome"` // of this seed alone, as in its results.json
	ExitCode int               `json:"exit_code"`
	Error    string            `json:"error,omitempty"`
	// Attempts is how many runs the seed took (matrix --retries), and
	// Notes what the earlier attempts were.
	Attempts int      `json:"attempts,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// SeedSummary aggregates the seeds of one scenario × lock.
type SeedSummary struct {
	Scenario string            `json:"scenario"`
	Lock     string            `json:"lock"`
	Seeds    []uint64          `json:"seeds"`
	Runs     []SeedRun         `json:"runs"`
	Expected map[string]string `json:"expected,omitempty"`
	// Rates per check: one entry per verdict seen, the expected verdict's
	// (else invalid's) first.
	Rates map[string][]Rate `json:"rates"`
	// Verdicts over all seeds: how many runs ended valid/invalid/unknown.
	Verdicts map[string]int `json:"verdicts"`
	// Outcome over the seeds: as-expected when every plain expectation held
	// on every seed and every rate expectation's rate was met.
	Outcome    string   `json:"outcome"`
	Mismatches []string `json:"mismatches,omitempty"`
	ExitCode   int      `json:"exit_code"`
}

// Agreed is the verdict every seed had, or "" when they differ.
func (s *SeedSummary) Agreed() string {
	if len(s.Verdicts) == 1 {
		for v := range s.Verdicts {
			return v
		}
	}
	return ""
}

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
		thresholdFail = thresholdFail || (r.Outcome == "as-expected" && r.ExitCode == ExitViolated && expect)
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
			lo, hi := Wilson(m[v], n)
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
	switch {
	case expect && (s.Outcome == "unexpected" || s.Outcome == "error" || thresholdFail):
		s.ExitCode = ExitViolated
	case expect && s.Outcome == "unknown":
		s.ExitCode = ExitUnknown
	case !expect:
		// As for one run: the verdicts decide; the worst seed wins.
		for _, r := range runs {
			switch {
			case r.Verdict == "" || r.ExitCode == ExitViolated:
				s.ExitCode = ExitViolated
			case r.ExitCode != ExitOK && s.ExitCode == ExitOK:
				s.ExitCode = ExitUnknown
			}
		}
	}
	return s
}

// RateText is a check's rates in one line: "invalid in 9/10 (95% CI
// 0.60–0.98), valid in 1/10 (...)".
func (s *SeedSummary) RateText(check string) string {
	var parts []string
	for _, r := range s.Rates[check] {
		if r.Hits > 0 || len(parts) == 0 {
			parts = append(parts, r.String())
		}
	}
	return strings.Join(parts, ", ")
}

// Label is a short cell label: the verdict when every seed agrees, else
// the overall verdicts' counts ("invalid 2/3").
func (s *SeedSummary) Label() string {
	if v := s.Agreed(); v != "" {
		return v
	}
	v := s.Majority()
	return fmt.Sprintf("%s %d/%d", v, s.Verdicts[v], len(s.Runs))
}

// Majority is the most common overall verdict (ties: invalid, unknown,
// valid, error first).
func (s *SeedSummary) Majority() string {
	best := ""
	for _, v := range []string{"invalid", "unknown", "valid", "error"} {
		if s.Verdicts[v] > s.Verdicts[best] || best == "" && s.Verdicts[v] > 0 {
			best = v
		}
	}
	return best
}

// seedRunOf turns one seed's Run outcome into its SeedRun.
func seedRunOf(seed uint64, dir string, out *Outcome, err error) SeedRun {
	sr := SeedRun{Seed: seed, Dir: dir, Attempts: 1}
	if out == nil || out.Results == nil {
		sr.Outcome, sr.Error, sr.ExitCode = "error", fmt.Sprint(err), ExitCodeOf(err)
		return sr
	}
	r := out.Results
	sr.Verdict, sr.Outcome, sr.ExitCode = r.Verdict, r.Outcome, out.ExitCode
	sr.Checks = map[string]string{}
	for n, c := range r.Checks {
		sr.Checks[n] = c.Verdict
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
func RunSeeds(ctx context.Context, o Options, seeds []uint64, onSeed func(SeedRun, *Outcome)) (*SeedSummary, error) {
	if o.Scenario == nil {
		return nil, fail(ExitBadInput, "no scenario")
	}
	if len(seeds) == 0 {
		return nil, badField("seeds", "no seeds")
	}
	if o.Out == "" {
		o.Out = DefaultOut(o.Scenario.Name, o.Lock)
	}
	if err := prepareDir(o.Out); err != nil {
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
		out, err := Run(ctx, ro)
		sr := seedRunOf(seed, ro.Out, out, err)
		runs = append(runs, sr)
		if onSeed != nil {
			onSeed(sr, out)
		}
		if err != nil && (out == nil || out.Results == nil) {
			// Bad input or a topology that cannot start: every seed would
			// fail the same way.
			if code := ExitCodeOf(err); code == ExitBadInput || code == ExitInfra {
				firstErr = err
				break
			}
		}
	}
	sum := Summarize(o.Scenario.Name, o.Lock, o.Scenario.Expectation(o.Lock), runs, o.Expect)
	if ctx.Err() != nil && len(runs) < len(seeds) {
		sum.Mismatches = append(sum.Mismatches, fmt.Sprintf("interrupted after %d of %d seeds", len(runs), len(seeds)))
		if sum.ExitCode == 0 {
			sum.ExitCode = ExitUnknown
		}
	}
	if err := WriteSeeds(o.Out, sum); err != nil {
		return sum, fail(ExitInfra, "%w", err)
	}
	if firstErr != nil {
		return sum, firstErr
	}
	if ctx.Err() != nil {
		return sum, &Error{Code: sum.ExitCode, Err: context.Canceled}
	}
	return sum, nil
}

// WriteSeeds writes seeds.json, seeds.md and report.html (an index of the
// seeds' reports with the rates) into dir.
func WriteSeeds(dir string, s *SeedSummary) error {
	if err := report.WriteJSON(filepath.Join(dir, "seeds.json"), s); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "seeds.md"), SeedsMarkdown(s, dir)); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, report.HTMLFile), seedsHTML(s, dir))
}

// checkNames is the summary's checks in the checker's order.
func (s *SeedSummary) checkNames() []string {
	var out []string
	for _, c := range scenarios.CheckNames {
		if _, ok := s.Rates[c]; ok {
			out = append(out, c)
		}
	}
	for c := range s.Rates {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// SeedsMarkdown renders a multi-seed run: the rates per check, then one
// line per seed with its run directory (relative to dir).
func SeedsMarkdown(s *SeedSummary, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s · lock %s · %d seeds\n\n", s.Scenario, s.Lock, len(s.Runs))
	fmt.Fprintf(&b, "Outcome over the seeds: **%s** (exit code %d). Verdicts: %s.\n\n", s.Outcome, s.ExitCode, scenarios.VerdictCounts(s.Verdicts))
	b.WriteString("| check | expected | rate (95% Wilson interval) |\n|---|---|---|\n")
	for _, c := range s.checkNames() {
		exp := "-"
		if s.Expected != nil {
			exp = scenarios.WantFor(s.Expected, c)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c, exp, s.RateText(c))
	}
	for _, m := range s.Mismatches {
		fmt.Fprintf(&b, "\nNot as expected: %s\n", m)
	}
	b.WriteString("\n| seed | verdict | outcome | run directory |\n|---|---|---|---|\n")
	for _, r := range s.Runs {
		v := r.Verdict
		if v == "" {
			v = "error: " + r.Error
		}
		fmt.Fprintf(&b, "| %d | %s | %s | `%s` |\n", r.Seed, v, r.Outcome, relDir(dir, r.Dir))
	}
	return b.String()
}

func relDir(base, dir string) string {
	if rel, err := filepath.Rel(base, dir); err == nil {
		return rel
	}
	return dir
}

var seedsTmpl = template.Must(template.New("seeds").Funcs(template.FuncMap{
	"rel":   relDir,
	"want":  scenarios.WantFor,
	"rates": func(s *SeedSummary, c string) string { return s.RateText(c) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>lockchaos {{.S.Scenario}} / {{.S.Lock}}: {{len .S.Runs}} seeds, {{.S.Outcome}}</title>
<style>
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:1180px;margin:0 auto;padding:16px 24px 48px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f4f4f4}
.bad{color:#b3262a;font-weight:bold}
</style></head><body>
<h1>lockchaos: {{.S.Scenario}} / {{.S.Lock}} over {{len .S.Runs}} seeds</h1>
<p>Outcome over the seeds: <b>{{.S.Outcome}}</b> · exit code {{.S.ExitCode}}</p>
{{range .S.Mismatches}}<p class="bad">Not as expected: {{.}}</p>{{end}}
<h2>Checks</h2>
<table><tr><th>check</th><th>expected</th><th>rate (95% Wilson interval)</th></tr>
{{range .Checks}}<tr><td>{{.}}</td><td>{{if $.S.Expected}}{{want $.S.Expected .}}{{else}}-{{end}}</td><td>{{rates $.S .}}</td></tr>
{{end}}</table>
<h2>Seeds</h2>
<table><tr><th>seed</th><th>verdict</th><th>outcome</th><th>report</th></tr>
{{range .S.Runs}}<tr><td>{{.Seed}}</td><td>{{if .Verdict}}{{.Verdict}}{{else}}error: {{.Error}}{{end}}</td><td>{{.Outcome}}</td><td><a href="{{rel $.Dir .Dir}}/report.html">{{rel $.Dir .Dir}}</a></td></tr>
{{end}}</table>
</body></html>
`))

func seedsHTML(s *SeedSummary, dir string) string {
	var b strings.Builder
	if err := seedsTmpl.Execute(&b, map[string]any{"S": s, "Dir": dir, "Checks": s.checkNames()}); err != nil {
		return "template error: " + template.HTMLEscapeString(err.Error())
	}
	return b.String()
}
