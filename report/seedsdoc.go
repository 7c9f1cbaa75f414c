package report

import (
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The multi-seed document: seeds.json's runs and rates and their rendering
// (seeds.md, an index report.html).

// WriteSeeds writes seeds.json, seeds.md and report.html (an index of the
// seeds' reports with the rates) into dir.
func WriteSeeds(dir string, s *metrics.SeedSummary) error {
	if err := metrics.WriteJSON(filepath.Join(dir, "seeds.json"), s); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, "seeds.md"), []byte(SeedsMarkdown(s, dir))); err != nil {
		return err
	}
	return writeBytes(filepath.Join(dir, HTMLFile), []byte(seedsHTML(s, dir)))
}

// checkNames is the summary's checks in the checker's order.
func checkNames(s *metrics.SeedSummary) []string {
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
func SeedsMarkdown(s *metrics.SeedSummary, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s · lock %s · %d seeds\n\n", s.Scenario, s.Lock, len(s.Runs))
	fmt.Fprintf(&b, "Outcome over the seeds: **%s** (exit code %d). Verdicts: %s.\n\n", s.Outcome, s.ExitCode, scenarios.VerdictCounts(s.Verdicts))
	b.WriteString("| check | expected | rate (95% Wilson interval) |\n|---|---|---|\n")
	for _, c := range checkNames(s) {
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
	"rates": func(s *metrics.SeedSummary, c string) string { return s.RateText(c) },
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

func seedsHTML(s *metrics.SeedSummary, dir string) string {
	var b strings.Builder
	if err := seedsTmpl.Execute(&b, map[string]any{"S": s, "Dir": dir, "Checks": checkNames(s)}); err != nil {
		return "template error: " + template.HTMLEscapeString(err.Error())
	}
	return b.String()
}
