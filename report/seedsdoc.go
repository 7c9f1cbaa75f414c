package report

import (
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/scenarios"
)

// The multi-seed document: seeds.json's runs and rates and their rendering
// (seeds.md, an index report.html).

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
	// Phases is where the seed's run spent its time.
	Phases *Phases `json:"phases_ms,omitempty"`
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

// WriteSeeds writes seeds.json, seeds.md and report.html (an index of the
// seeds' reports with the rates) into dir.
func WriteSeeds(dir string, s *SeedSummary) error {
	if err := WriteJSON(filepath.Join(dir, "seeds.json"), s); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, "seeds.md"), []byte(SeedsMarkdown(s, dir))); err != nil {
		return err
	}
	return writeBytes(filepath.Join(dir, HTMLFile), []byte(seedsHTML(s, dir)))
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
