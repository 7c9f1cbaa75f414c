package explore

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
)

// Files an exploration writes into its output directory besides
// explore.json, findings.md and margins.json.
const (
	// HTMLFile indexes the findings (or the margins of a --margin run).
	HTMLFile = "report.html"
	// MarginPlot is the margin table as a plot (.png and .svg).
	MarginPlot = "margin"
)

// showRun picks the run a finding's report links to: the lock's
// confirmation run on the finding's seed when it failed the check there,
// else the first that did. Explore's runs are made without plots (most of
// a run's rendering time): this one is rendered again with them, and the
// timeline of the check's first incident is kept for the exploration's
// report. Without a confirmation run (the budget ended first) there is
// none to show.
func (e *Explorer) showRun(f *Found) {
	f.RunDir, f.Timeline = "", ""
	seeds := []uint64{f.Seed}
	for s := uint64(1); s <= uint64(e.cfg.ConfirmSeeds); s++ {
		if s != f.Seed {
			seeds = append(seeds, s)
		}
	}
	for _, seed := range seeds {
		dir := filepath.Join(f.Dir, "runs", fmt.Sprintf("%s-seed%d", e.cfg.Lock, seed))
		r, err := metrics.ReadResults(filepath.Join(dir, metrics.ResultsFile))
		if err != nil || r.Checks[f.Check].Verdict != checker.Invalid {
			continue
		}
		f.RunDir = dir
		rr, err := runner.RenderDir(dir)
		if err != nil || rr == nil {
			return
		}
		f.Timeline = timelineOf(dir, rr, f.Check)
		return
	}
}

// timelineOf is the PNG of the first incident with a violation of check
// (the report package draws incident-<id> per incident), else the first
// violation timeline; "" when none was drawn.
func timelineOf(dir string, r *metrics.Results, check string) string {
	for _, in := range r.Incidents {
		if in.Counts[check] == 0 {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("incident-%d.png", in.ID))
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if ps, _ := filepath.Glob(filepath.Join(dir, "timeline-*.png")); len(ps) > 0 {
		sort.Strings(ps)
		return ps[0]
	}
	return ""
}

type htmlFinding struct {
	F        *Found
	ID       string
	Checks   string
	Minimal  string
	Original string
	Partial  string
	Repeat   string
	LockRate string
	RefRate  string
	// Links relative to the report (empty: no such file).
	Scenario, RunReport, TimelineSVG string
	Timeline                         template.URL
}

type htmlKind struct {
	Kind, Points, Directions string
	Tried                    bool
}

type htmlData struct {
	Title             string
	Lock, Ref         string
	Topology          string
	Seed              uint64
	TTL, Budget       string
	R                 *Report
	Elapsed           string
	Passed, Untried   int
	LimitsN, IdleN    int
	KnownN            int
	ErroredN          int
	Findings          []htmlFinding
	Kinds             []htmlKind
	KindsTried        int
	Whens             string
	Margins           []Margin
	MarginTexts       []string
	MarginPNG         template.URL
	MarginSVG         string
	Generated         string
	MarginsUnfinished bool
}

// writeHTML writes OUT/report.html: the findings with their rates,
// schedules, replay commands, run reports and timelines, the counts,
// coverage and limits of rep (nil for a --margin run), and the margins
// with their plot. Pictures are embedded, so the file stands alone;
// the run reports it links to are under OUT/findings.
func (e *Explorer) writeHTML(rep *Report, margins []Margin, marginsDone bool) error {
	out := e.cfg.Out
	rel := func(p string) string {
		if p == "" {
			return ""
		}
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		r, err := filepath.Rel(out, p)
		if err != nil {
			return ""
		}
		return filepath.ToSlash(r)
	}
	d := &htmlData{Lock: e.cfg.Lock, Ref: e.cfg.Reference, Topology: e.cfg.Topology, Seed: e.cfg.Seed, TTL: e.cfg.TTL.String(),
		Budget: e.cfg.Budget.String(), R: rep, Margins: margins, Generated: time.Now().UTC().Format(time.RFC3339),
		MarginsUnfinished: margins != nil && !marginsDone}
	d.Title = fmt.Sprintf("lockchaos explore: %s against %s", d.Lock, d.Ref)
	if rep != nil {
		d.Elapsed = rep.Elapsed.Round(time.Second).String()
		d.Passed, d.Untried, d.LimitsN, d.IdleN, d.KnownN = rep.Classes[Passed], rep.Classes[Untried], rep.Classes[Limit], rep.Classes[RefIdle], rep.Classes[Known]
		d.ErroredN = rep.Classes[Errored]
		for _, f := range rep.Findings {
			d.Findings = append(d.Findings, e.htmlFinding(f, rel))
		}
		c := rep.Coverage
		for _, k := range c.KindsAll {
			hk := htmlKind{Kind: k, Tried: slices.Contains(c.Kinds, k)}
			var ps, ds []string
			for _, p := range c.Points {
				if kk, pt, _ := strings.Cut(p, "@"); kk == k {
					ps = append(ps, pt)
				}
			}
			for _, x := range c.Directions {
				if kk, dir, _ := strings.Cut(x, ":"); kk == k {
					ds = append(ds, dir)
				}
			}
			hk.Points, hk.Directions = strings.Join(ps, ", "), strings.Join(ds, ", ")
			if hk.Tried {
				d.KindsTried++
			}
			d.Kinds = append(d.Kinds, hk)
		}
		d.Whens = strings.Join(c.Whens, ", ")
	} else {
		d.Title = fmt.Sprintf("lockchaos explore --margin: %s against %s", d.Lock, d.Ref)
	}
	for _, m := range margins {
		d.MarginTexts = append(d.MarginTexts, m.Text(d.Lock, d.Ref))
	}
	if p := filepath.Join(out, MarginPlot+".png"); len(margins) > 0 && rel(p) != "" {
		if b, err := os.ReadFile(p); err == nil {
			d.MarginPNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
			d.MarginSVG = rel(filepath.Join(out, MarginPlot+".svg"))
		}
	}
	var b bytes.Buffer
	if err := htmlTmpl.Execute(&b, d); err != nil {
		return fmt.Errorf("%s: %w", HTMLFile, err)
	}
	tmp := filepath.Join(out, HTMLFile+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", HTMLFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(out, HTMLFile)); err != nil {
		return fmt.Errorf("%s: %w", HTMLFile, err)
	}
	return nil
}

func (e *Explorer) htmlFinding(f *Found, rel func(string) string) htmlFinding {
	h := htmlFinding{F: f, ID: fmt.Sprintf("finding-%d", f.N), Checks: strings.Join(f.Checks, ", "),
		Minimal: f.Minimal.Describe(), LockRate: f.Lock.String(), RefRate: f.Ref.String()}
	if f.Original.Size() != f.Minimal.Size() || f.Original.Describe() != f.Minimal.Describe() {
		h.Original = f.Original.Describe()
	}
	if f.Partial != nil {
		h.Partial = f.Partial.Describe()
	}
	if f.Repeat != nil {
		h.Repeat = f.Repeat.Describe()
	}
	if f.Dir != "" {
		h.Scenario = rel(filepath.Join(f.Dir, "scenario.yaml"))
	}
	if f.RunDir != "" {
		h.RunReport = rel(filepath.Join(f.RunDir, report.HTMLFile))
	}
	if f.Timeline != "" {
		if b, err := os.ReadFile(f.Timeline); err == nil {
			h.Timeline = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
			h.TimelineSVG = rel(strings.TrimSuffix(f.Timeline, ".png") + ".svg")
		}
	}
	return h
}

// writeMargins writes margin.png/.svg and report.html for margins (done:
// every template was bisected).
func (e *Explorer) writeMargins(margins []Margin, done bool) error {
	var rows []report.MarginRow
	for _, m := range margins {
		lo, hi := m.Range[0], m.Range[1]
		if hi == 0 {
			lo, hi = MinMag, MaxMag
		}
		rows = append(rows, report.MarginRow{Template: m.Template, Unit: m.Unit, Lock: m.Lock, Ref: m.Ref,
			LockNever: m.Lock == Never, RefNever: m.Ref == Never, Lo: lo, Hi: hi, Falling: m.Falling})
	}
	var errs []error
	if len(rows) > 0 {
		if err := report.PlotMargins(e.cfg.Lock, e.cfg.Reference, rows, filepath.Join(e.cfg.Out, MarginPlot)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.writeHTML(nil, margins, done); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("margins: %w", errs[0])
	}
	return nil
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

var htmlTmpl = template.Must(template.New("explore").Funcs(template.FuncMap{"pct": pct, "inc": func(n int) int { return n + 1 }}).Parse(htmlSource))

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
` + report.PageCSS + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>topology {{.Topology}} · TTL {{.TTL}} · exploration seed {{.Seed}} · budget {{.Budget}}{{with .R}} · elapsed {{$.Elapsed}}{{if .Stopped}} · <span class="bad">stopped early (Ctrl-C)</span>{{end}}{{if .Aborted}} · <span class="bad">stopped early: {{.Aborted}}</span>{{end}}{{end}} · written {{.Generated}}</p>
{{with .R}}
<h2 id="counts">Schedules</h2>
<table>
<tr><th>schedules tried</th><td class="num" id="count-schedules">{{.Schedules}}</td></tr>
<tr><th>passed</th><td class="num">{{$.Passed}}</td></tr>
<tr><th>untried (their faults did not take effect)</th><td class="num" id="count-untried">{{$.Untried}}</td></tr>
<tr><th>limits of the design (the reference failed too)</th><td class="num" id="count-limits">{{$.LimitsN}}</td></tr>
<tr><th>reference idle (it could not acquire under the faults: its pass is vacuous)</th><td class="num" id="count-idle">{{$.IdleN}}</td></tr>
<tr><th>findings</th><td class="num" id="count-findings">{{len .Findings}}</td></tr>
<tr><th>candidates not confirmed</th><td class="num">{{.Unconfirmed}}</td></tr>
<tr><th>duplicates of a saved finding</th><td class="num">{{.Duplicates}}</td></tr>
<tr><th>of those, failing only with a confirmed finding's cause (not re-run on the reference)</th><td class="num" id="count-known">{{$.KnownN}}</td></tr>
<tr><th>candidates merged into a finding (same check, cause and schedule shape)</th><td class="num" id="count-merged">{{.Merged}}</td></tr>
<tr><th>errored (the screening run reached no verdict: nothing tested)</th><td class="num" id="count-errored">{{$.ErroredN}}</td></tr>
<tr><th>schedules per minute</th><td class="num" id="count-per-minute">{{printf "%.1f" .PerMinute}}</td></tr>
<tr><th>runs (screening, reference, shrinking, confirmation) and per minute</th><td class="num" id="count-runs">{{.Runs}} ({{printf "%.1f" .RunsPerMinute}}/min)</td></tr>
</table>
{{if .RunErrors}}<table id="run-errors"><tr><th>why runs reached no verdict</th><th>class</th><th>runs</th></tr>
{{range .RunErrors}}<tr><td>{{.Error}}</td><td>{{.Class}}</td><td class="num">{{.Count}}</td></tr>
{{end}}</table>{{end}}

<h2 id="findings">{{len .Findings}} finding{{if ne (len .Findings) 1}}s{{end}}</h2>
{{if not .Findings}}<p class="muted">None: the lock failed nothing its reference passed.</p>{{end}}
{{range $.Findings}}<div class="viol finding" id="{{.ID}}">
<h3>Finding {{.F.N}}: {{$.Lock}} fails <span class="bad check">{{.F.Check}}</span>{{if .F.Cause}} (cause <span class="cause">{{.F.Cause}}</span>){{end}}{{if not .F.Confirmed}} <span class="unk">not confirmed: the budget ended first</span>{{end}}</h3>
{{if .F.Sentence}}<p class="sentence"><b>{{.F.Sentence}}</b></p>{{end}}
<table>
<tr><th>checks failed with this cause</th><td>{{.Checks}}</td></tr>
<tr><th>minimal schedule</th><td class="minimal">{{.Minimal}}</td></tr>
{{if .Original}}<tr><th>as found</th><td>{{.Original}}</td></tr>{{end}}
{{if .Partial}}<tr><th>shrunk so far (unconfirmed)</th><td>{{.Partial}}</td></tr>{{end}}
{{if .Repeat}}<tr><th>saved for the replay (faults repeated)</th><td>{{.Repeat}}</td></tr>{{end}}
<tr><th>{{$.Lock}} fails</th><td class="rate-lock">{{.F.Lock.Fails}}/{{.F.Lock.N}} seeds (95% Wilson interval {{pct .F.Lock.Low}}–{{pct .F.Lock.High}})</td></tr>
<tr><th>{{$.Ref}} (reference) fails</th><td class="rate-ref">{{.F.Ref.Fails}}/{{.F.Ref.N}} seeds (95% Wilson interval {{pct .F.Ref.Low}}–{{pct .F.Ref.High}})</td></tr>
{{if .F.Merged}}<tr><th>found</th><td class="times-found">{{inc .F.Merged}} times (the other candidates shrank to the same check, cause and schedule shape)</td></tr>{{end}}
<tr><th>found after</th><td>{{.F.FoundAfter.Round 1000000000}} (shrunk in {{.F.ShrinkSteps}} steps, {{.F.ShrinkKept}} kept)</td></tr>
<tr><th>replay</th><td>{{if .F.Replay}}<code class="replay">{{.F.Replay}}</code>{{else}}<span class="muted">not saved</span>{{end}}</td></tr>
<tr><th>files</th><td>{{if .Scenario}}<a class="scenario" href="{{.Scenario}}">scenario.yaml</a>{{end}}{{if .RunReport}} · <a class="run-report" href="{{.RunReport}}">the run's report (seed {{.F.Seed}})</a>{{else}} <span class="muted">no confirmation run to show</span>{{end}}{{if .TimelineSVG}} · <a class="timeline-svg" href="{{.TimelineSVG}}">timeline (SVG)</a>{{end}}</td></tr>
</table>
{{if .Timeline}}<figure><img class="timeline" alt="holder timeline of finding {{.F.N}}" src="{{.Timeline}}">
<figcaption>The run's holder timeline over its first incident of {{.F.Check}}: one lane per client; bars are believed holds, hatched boxes are pauses, vertical ticks are lease deadlines; marks on the redis lanes are what the server reported for the key.</figcaption></figure>{{end}}
</div>
{{end}}

<h2 id="coverage">Coverage</h2>
<p>On runs whose faults took effect: {{$.KindsTried}}/{{len .Coverage.KindsAll}} kinds, {{len .Coverage.Points}} kind×point, {{len .Coverage.Directions}} kind×direction, {{len .Coverage.Whens}} when-points, {{.Coverage.Tuples}} kind×point×direction tuples.</p>
{{with .Coverage.APIs}}<p id="coverage-apis">API modes (the library's idioms; schedules whose faults took effect): {{range $m, $n := .}}<span class="mode">{{$m}} {{$n}}</span> {{end}}</p>{{end}}
<table id="coverage-kinds"><tr><th>kind</th><th>tried</th><th>points</th><th>directions</th></tr>
{{range $.Kinds}}<tr><td>{{.Kind}}</td><td class="{{if .Tried}}ok{{else}}unk{{end}}">{{if .Tried}}yes{{else}}not yet{{end}}</td><td>{{.Points}}</td><td>{{.Directions}}</td></tr>
{{end}}</table>
<p>when: triggers fired at: {{if $.Whens}}{{$.Whens}}{{else}}<span class="muted">none</span>{{end}}</p>

<h2 id="limits">Limits of the design</h2>
{{if .Limits}}<p>Schedules the reference failed too (the first {{len .Limits}}): no lock of this design passes them.</p>
<table><tr><th>schedule</th><th>checks both failed</th></tr>
{{range .Limits}}<tr><td>{{.Schedule}}</td><td>{{range $i, $c := .Checks}}{{if $i}}, {{end}}{{$c}}{{end}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None seen.</p>{{end}}
{{if .Idle}}
<h2 id="reference-idle">Reference idle</h2>
<p>Schedules the lock failed and the reference passed only because it acquired nothing under a fault, while the lock acquired under it on every run it failed (the first {{len .Idle}}): not findings.</p>
<table><tr><th>schedule</th><th>checks</th><th>why</th></tr>
{{range .Idle}}<tr><td>{{.Schedule}}</td><td>{{range $i, $c := .Checks}}{{if $i}}, {{end}}{{$c}}{{end}}</td><td class="reason">{{.Reason}}</td></tr>
{{end}}</table>
{{end}}
{{end}}
{{if .Margins}}
<h2 id="margins">Margins</h2>
{{if .MarginsUnfinished}}<p class="unk">The budget (or Ctrl-C) ended the bisection before every template: these are the ones done.</p>{{end}}
<p>Per template, the smallest magnitude at which each lock failed a safety check (the largest rate, for a clock running slow); "never": not within the range searched.</p>
{{if .MarginPNG}}<figure><img id="margin-plot" alt="margin plot" src="{{.MarginPNG}}"><figcaption>margin.png{{if .MarginSVG}} (<a href="{{.MarginSVG}}">SVG</a>){{end}}</figcaption></figure>{{end}}
<table id="margin-table"><tr><th>template</th><th>family</th><th>unit</th><th>{{.Lock}}</th><th>{{.Ref}}</th></tr>
{{range $i, $m := .Margins}}<tr><td>{{$m.Template}}</td><td>{{$m.Family}}</td><td>{{$m.Unit}}</td><td>{{if eq $m.Lock -1.0}}never{{else}}{{printf "%.2f" $m.Lock}}{{end}}{{with $m.LockChecks}} ({{range $j, $c := .}}{{if $j}}, {{end}}{{$c}}{{end}}){{end}}</td><td>{{if eq $m.Ref -1.0}}never{{else}}{{printf "%.2f" $m.Ref}}{{end}}{{with $m.RefChecks}} ({{range $j, $c := .}}{{if $j}}, {{end}}{{$c}}{{end}}){{end}}</td></tr>
{{end}}</table>
<ul>{{range .MarginTexts}}<li>{{.}}</li>{{end}}</ul>
{{end}}
</body>
</html>
`
