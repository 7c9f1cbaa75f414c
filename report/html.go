package report

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// scheduleFile is the runner's schedule.json: the seed and the resolved
// fault schedule (durations in ns).
type scheduleFile struct {
	Seed   uint64 `json:"seed"`
	Faults []struct {
		ID       int            `json:"id"`
		Spec     map[string]any `json:"spec"`
		At       int64          `json:"at"`
		Duration int64          `json:"duration"`
	} `json:"faults"`
}

type htmlPlot struct {
	Title, File, Caption string
	Src                  template.URL
}

type htmlRow []string

type htmlViolation struct {
	N                 int
	V                 checker.Violation
	Clients, At, Win  string
	Timeline          template.URL
	TimelineFile      string
	TimelineSVGExists bool
}

// htmlIncident is one incident as report.html shows it.
type htmlIncident struct {
	In           checker.Incident
	Facts        string
	Timeline     template.URL
	TimelineFile string
}

type htmlData struct {
	R          *metrics.Results
	Marker     string
	Outcome    string
	Meta       []htmlRow
	Checks     []htmlRow
	Violations []htmlViolation
	MoreViol   int
	Latency    []htmlRow
	Faults     []htmlRow
	Schedule   []htmlRow
	SchedSeed  string
	Scenario   string
	Plots      []htmlPlot
	Thresholds []htmlRow
	Clients    []htmlRow
	Hgrm       []string
	Stats      metrics.Stats
	Duration   string

	Incidents []htmlIncident
	// NoPlot counts the incidents past MaxPlots (MaxIncidentTimelines),
	// which get no plot.
	NoPlot, MaxPlots int
}

// artifacts are the files Render produced, for the HTML and Markdown.
type artifacts struct {
	dir       string
	plots     []string       // base names written, in display order
	timelines map[int]string // violation index → base name
	hgrm      []string
	// incidentTimelines maps an incident's id to its timeline's base name.
	incidentTimelines map[int]string
}

var plotCaptions = map[string][2]string{
	"latency-percentiles":  {"Latency percentile distribution", "HdrHistogram style: x is 1/(1-p) on a log axis, so the tail (99%, 99.9%, ...) gets as much room as the median. One line per operation."},
	"latency-over-time":    {"Latency over time", "One point per sampled acquire (circle) and release (triangle), coloured by result. Shaded bands are fault windows."},
	"throughput-over-time": {"Throughput over time", "Completed acquire→release cycles per second, with failed and unknown acquires. Shaded bands are fault windows."},
}

// dataURI embeds a PNG file, so report.html needs nothing but itself.
func dataURI(path string) (template.URL, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b)), nil
}

func buildHTMLData(r *metrics.Results, a *metrics.Analysis, art artifacts) *htmlData {
	d := &htmlData{R: r, Marker: Marker(r.ExitCode), Outcome: r.Outcome, Stats: r.Stats}
	if r.DurationMS > 0 {
		d.Duration = (time.Duration(r.DurationMS * 1e6)).Round(time.Millisecond).String()
	}
	d.addMeta(r, a)
	for _, n := range sortedChecks(r) {
		c := r.Checks[n]
		d.Checks = append(d.Checks, htmlRow{n, string(c.Verdict), fmt.Sprint(c.Violations), expectedText(r, n, string(c.Verdict)), strings.Join(c.Notes, "; ")})
	}
	d.MaxPlots = MaxIncidentTimelines
	d.addIncidents(r, art)
	d.addViolations(r, art)
	d.addTables(r, a)
	d.addPlots(art)
	d.Hgrm = art.hgrm
	d.addRunFiles(art.dir)
	return d
}

// addMeta lists the run's facts: the results' and the run event's meta.
func (d *htmlData) addMeta(r *metrics.Results, a *metrics.Analysis) {
	add := func(k, v string) {
		if v != "" {
			d.Meta = append(d.Meta, htmlRow{k, v})
		}
	}
	add("scenario", r.Scenario)
	add("lock", r.Lock)
	add("backend", r.Backend)
	add("topology", r.Topology)
	add("seed", fmt.Sprint(r.Seed))
	if !r.StartedAt.IsZero() {
		add("started", r.StartedAt.UTC().Format(time.RFC3339))
	}
	add("duration", d.Duration)
	add("events", fmt.Sprint(r.Events))
	if a != nil {
		keys := make([]string, 0, len(a.Meta))
		for k := range a.Meta {
			switch k {
			case "scenario", "lock", "backend", "topology", "seed":
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k, metrics.MetaString(a.Meta, k))
		}
	}
	if len(r.LockConfig) > 0 {
		if b, err := json.Marshal(r.LockConfig); err == nil {
			add("lock config", string(b))
		}
	}
}

// addIncidents lists the incidents with their timelines.
func (d *htmlData) addIncidents(r *metrics.Results, art artifacts) {
	for i, in := range r.Incidents {
		hi := htmlIncident{In: in, Facts: incidentFacts(in)}
		if t := art.incidentTimelines[in.ID]; t != "" {
			if u, err := dataURI(filepath.Join(art.dir, t+".png")); err == nil {
				hi.Timeline, hi.TimelineFile = u, t
			}
		}
		if i >= MaxIncidentTimelines {
			d.NoPlot++
		}
		d.Incidents = append(d.Incidents, hi)
	}
}

// addViolations lists the first 50 violations with their timelines.
func (d *htmlData) addViolations(r *metrics.Results, art artifacts) {
	for i, v := range r.Violations {
		if i == 50 {
			d.MoreViol = len(r.Violations) - i
			break
		}
		hv := htmlViolation{N: i + 1, V: v, Clients: joinInts(v.Clients), At: formatMS(v.AtMS)}
		if v.Window != [2]int64{} {
			hv.Win = fmt.Sprintf("%s – %s", formatMS(history.MS(v.Window[0])), formatMS(history.MS(v.Window[1])))
		}
		if t := art.timelines[i]; t != "" {
			if u, err := dataURI(filepath.Join(art.dir, t+".png")); err == nil {
				hv.Timeline, hv.TimelineFile = u, t
			}
		}
		d.Violations = append(d.Violations, hv)
	}
}

// addTables fills the latency, fault, threshold and per-client tables.
func (d *htmlData) addTables(r *metrics.Results, a *metrics.Analysis) {
	for _, row := range latencyRows(r.Stats) {
		d.Latency = append(d.Latency, row)
	}
	for _, f := range r.Faults {
		healed, applied := faultTimes(f)
		d.Faults = append(d.Faults, htmlRow{fmt.Sprint(f.ID), f.Kind, f.Target, formatMS(f.AtMS), healed, applied,
			mapText(f.Request), mapText(f.Effect), mapText(f.HealEffect)})
	}
	for _, t := range r.Thresholds {
		val, res := thresholdCells(t)
		d.Thresholds = append(d.Thresholds, htmlRow{t.Expr, val, res})
	}
	if a != nil && len(a.Clients) <= 64 {
		for _, c := range a.Clients {
			d.Clients = append(d.Clients, htmlRow{fmt.Sprint(c.Client), fmt.Sprint(c.Acquires.OK), fmt.Sprint(c.Acquires.Fail),
				fmt.Sprint(c.Acquires.Unknown), fmt.Sprint(c.Cycles)})
		}
	}
}

// addPlots embeds the run's plots with their captions.
func (d *htmlData) addPlots(art artifacts) {
	for _, base := range art.plots {
		u, err := dataURI(filepath.Join(art.dir, base+".png"))
		if err != nil {
			continue
		}
		pc := plotCaptions[base]
		title := pc[0]
		if title == "" {
			title = base
		}
		d.Plots = append(d.Plots, htmlPlot{Title: title, File: base, Caption: pc[1], Src: u})
	}
}

// addRunFiles adds the fault schedule and the scenario saved in the run
// directory.
func (d *htmlData) addRunFiles(dir string) {
	if b, err := os.ReadFile(filepath.Join(dir, "schedule.json")); err == nil {
		var s scheduleFile
		if json.Unmarshal(b, &s) == nil {
			d.SchedSeed = fmt.Sprint(s.Seed)
			for _, f := range s.Faults {
				spec, _ := json.Marshal(f.Spec)
				d.Schedule = append(d.Schedule, htmlRow{fmt.Sprint(f.ID), formatMS(history.MS(int64(f.At))),
					time.Duration(f.Duration).String(), string(spec)})
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "scenario.yaml")); err == nil && len(b) < 64<<10 {
		d.Scenario = string(b)
	}
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"rate":  formatRate,
	"f3":    func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"vclass": func(v string) string {
		switch v {
		case "valid", "pass", "as-expected":
			return "ok"
		case "invalid", "FAIL", "unexpected":
			return "bad"
		}
		if strings.HasPrefix(v, "ERROR") || strings.Contains(v, "NOT AS EXPECTED") {
			return "bad"
		}
		if strings.HasSuffix(v, "(as expected)") {
			return "ok"
		}
		return "unk"
	},
}).Parse(htmlSource))

// WriteHTML writes report.html's content: one self-contained page (CSS
// inline, plots embedded as base64 PNG, no scripts, no remote resources).
func writeHTML(w io.Writer, d *htmlData) error {
	return htmlTmpl.Execute(w, d)
}

// PageCSS is the style of lockchaos's HTML pages (a run's report, an
// exploration's): one look for both.
const PageCSS = `body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:bold;color:#fff}
.PASS{background:#3c8a35}.FAIL{background:#c23b3d}.UNKNOWN{background:#888}.ERROR{background:#555}
.ok{color:#2f7a29;font-weight:bold}.bad{color:#b3262a;font-weight:bold}.unk{color:#666;font-weight:bold}
.viol{border-left:4px solid #c23b3d;padding:4px 12px;margin:12px 0;background:#fdf6f6}
.cause{font-weight:bold}img{max-width:100%;height:auto;border:1px solid #eee}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px}.muted{color:#777}
figure{margin:12px 0}figcaption{color:#555;font-size:13px}
code{background:#f3f3f3;padding:0 3px}
`

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockchaos {{.R.Scenario}} / {{.R.Lock}}: {{.Marker}}</title>
<style>
` + PageCSS + `</style>
</head>
<body>
<h1>lockchaos: {{.R.Scenario}} / {{.R.Lock}}</h1>
<p><span class="badge {{.Marker}}">{{.Marker}}</span>
verdict <span class="{{vclass .R.Verdict}}">{{.R.Verdict}}</span>{{if .Outcome}} · outcome <span class="{{vclass .Outcome}}">{{.Outcome}}</span>{{end}} · exit code {{.R.ExitCode}}</p>

{{if .Incidents}}<h2>{{len .Incidents}} incident{{if ne (len .Incidents) 1}}s{{end}}</h2>
{{range .Incidents}}<div class="viol">
<h3>Incident {{.In.ID}}</h3>
<p><b>{{.In.Sentence}}</b></p>
<p>{{.Facts}}</p>
{{if .Timeline}}<figure><img alt="holder timeline of incident {{.In.ID}}" src="{{.Timeline}}">
<figcaption>Holder timeline ({{.TimelineFile}}.png / .svg) over the incident's span: one lane per client; bars are believed holds, hatched boxes are pauses, vertical ticks are lease deadlines; marks on the redis lanes are what the server reported for the key.</figcaption></figure>{{end}}
</div>
{{end}}{{if .NoPlot}}<p class="muted">Timelines are drawn for the first {{.MaxPlots}} incidents; {{.NoPlot}} more have none.</p>{{end}}
<p class="muted">Each incident groups the violations below that share a cause and the fault it names or the lease the others overlapped; the violations are its evidence.</p>{{end}}

<h2>Run</h2>
<table>{{range .Meta}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>

<h2>Checks</h2>
{{if .Checks}}<table><tr><th>check</th><th>verdict</th><th class="num">violations</th><th>expected</th><th>notes</th></tr>
{{range .Checks}}<tr><td>{{index . 0}}</td><td class="{{vclass (index . 1)}}">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="{{vclass (index . 3)}}">{{index . 3}}</td><td>{{index . 4}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No checks were run.</p>{{end}}

{{if .Violations}}<h2>Violations ({{len .R.Violations}})</h2>
{{range .Violations}}<div class="viol">
<h3>{{.N}}. {{.V.Check}} on <code>{{.V.Key}}</code></h3>
<p>clients {{.Clients}} · at {{.At}}{{if .Win}} · window {{.Win}}{{end}}</p>
<p class="cause">cause: {{if .V.Cause}}{{.V.Cause}}{{else}}unknown{{end}}</p>
{{if .V.Explanation}}<p>{{.V.Explanation}}</p>{{end}}
{{if .V.Detail}}<p class="muted">evidence: {{.V.Detail}}</p>{{end}}
{{if .Timeline}}<figure><img alt="holder timeline around violation {{.N}}" src="{{.Timeline}}">
<figcaption>Holder timeline ({{.TimelineFile}}.png / .svg): one lane per client; bars are believed holds (acquire ack → release invoke), hatched boxes are pauses, vertical ticks are lease deadlines; marks on the redis lanes are what the server reported for the key.</figcaption></figure>{{end}}
</div>
{{end}}{{if .MoreViol}}<p class="muted">... and {{.MoreViol}} more in results.json.</p>{{end}}{{end}}

<h2>Performance</h2>
<p>Throughput <b>{{rate .Stats.Throughput}} cycles/s</b> ({{.Stats.WorkloadCycles}} cycles in {{f2 .Stats.WorkloadS}} s of workload; {{.Stats.Cycles}} in all) ·
fairness (Jain) <b>{{f3 .Stats.Fairness}}</b> ·
acquires {{.Stats.Acquires.OK}} ok / {{.Stats.Acquires.Fail}} fail / {{.Stats.Acquires.Unknown}} unknown ·
releases {{.Stats.Releases.OK}} ok / {{.Stats.Releases.Fail}} fail / {{.Stats.Releases.Unknown}} unknown</p>
{{if .Latency}}<table><tr><th>latency</th><th class="num">count</th><th class="num">p50</th><th class="num">p90</th><th class="num">p99</th><th class="num">p99.9</th><th class="num">max</th></tr>
{{range .Latency}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td><td class="num">{{index . 5}}</td><td class="num">{{index . 6}}</td></tr>
{{end}}</table>
<p class="muted">acquire: ok outermost acquires, invoke → ack (includes waiting) · release: ok releases that freed the key · cycle: acquire invoke → release ack · handoff: a holder's release invoke → the next waiter's acquire ack.</p>{{end}}
{{with .Stats.Server}}<p>Redis per cycle: {{f2 .CommandsPerCycle}} commands, {{f2 .UsecPerCycle}} µs of server time.</p>{{end}}
{{range .Plots}}<figure><img alt="{{.Title}}" src="{{.Src}}"><figcaption><b>{{.Title}}</b> ({{.File}}.png / .svg). {{.Caption}}</figcaption></figure>
{{end}}
{{if .Hgrm}}<p class="muted">HdrHistogram percentile files (values in µs): {{range .Hgrm}}<code>{{.}}</code> {{end}}</p>{{end}}
{{if .Clients}}<h3>Per client</h3><table><tr><th class="num">client</th><th class="num">ok acquires</th><th class="num">failed</th><th class="num">unknown</th><th class="num">cycles</th></tr>
{{range .Clients}}<tr><td class="num">{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td></tr>
{{end}}</table>{{end}}

<h2>Faults</h2>
{{if .Faults}}<table><tr><th class="num">id</th><th>kind</th><th>target</th><th class="num">at</th><th class="num">healed</th><th>took effect</th><th>request</th><th>effect</th><th>heal effect</th></tr>
{{range .Faults}}<tr><td class="num">{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td><td class="{{if eq (index . 5) "no"}}bad{{end}}">{{index . 5}}</td><td>{{index . 6}}</td><td>{{index . 7}}</td><td>{{index . 8}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No faults fired.</p>{{end}}
{{if .Schedule}}<h3>Resolved schedule (seed {{.SchedSeed}})</h3>
<table><tr><th class="num">id</th><th class="num">at</th><th>duration</th><th>spec</th></tr>
{{range .Schedule}}<tr><td class="num">{{index . 0}}</td><td class="num">{{index . 1}}</td><td>{{index . 2}}</td><td><code>{{index . 3}}</code></td></tr>
{{end}}</table>{{end}}

{{if .Thresholds}}<h2>Thresholds</h2>
<table><tr><th>threshold</th><th class="num">value</th><th>result</th></tr>
{{range .Thresholds}}<tr><td><code>{{index . 0}}</code></td><td class="num">{{index . 1}}</td><td class="{{vclass (index . 2)}}">{{index . 2}}</td></tr>
{{end}}</table>{{end}}

{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{if .Scenario}}<h2>Scenario</h2><pre>{{.Scenario}}</pre>{{end}}
<p class="muted">Generated by lockchaos from the history (history.lch; <code>lockchaos export --jsonl</code> writes it as history.jsonl) and results.json in this run directory.</p>
</body>
</html>
`
