package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// renderDir is where TestRender leaves its output when
// LOCKCHAOS_REPORT_OUT is set (to look at the plots).
func renderDir(t *testing.T) string {
	if d := os.Getenv("LOCKCHAOS_REPORT_OUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func sampleResults(v checker.Violation) *metrics.Results {
	return &metrics.Results{
		Scenario: "synthetic", Lock: "simple", Backend: "embedded", Topology: "single", Seed: 7,
		Verdict: "invalid", Outcome: "as-expected", ExitCode: 0,
		Expected: map[string]string{"mutex": "invalid"},
		Checks: map[string]checker.CheckResult{
			"mutex":    {Verdict: "invalid", Violations: 1},
			"fencing":  {Verdict: "valid"},
			"liveness": {Verdict: "valid"},
		},
		Violations: []checker.Violation{v},
		StartedAt:  time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC),
		DurationMS: 5000,
	}
}

func TestRender(t *testing.T) {
	dir := renderDir(t)
	hist, v := synthRun(t, dir, 20000)
	a, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := sampleResults(v)
	metrics.FillStats(r, a)
	r.Thresholds = metrics.EvalThresholds([]string{"acquire.p99 < 5ms", "throughput > 100", "checks.mutex == valid"}, r)
	if err := os.WriteFile(filepath.Join(dir, "schedule.json"),
		[]byte(`{"seed":7,"faults":[{"id":0,"spec":{"kind":"pause-client","target":"holder"},"at":1000000000,"duration":60000000}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Render(dir, r, a); err != nil {
		t.Fatal(err)
	}
	t.Logf("render: %v", time.Since(start))
	for _, n := range r.Notes {
		t.Errorf("note: %s", n)
	}
	want := []string{"results.json", "summary.md", "report.html",
		"latency-percentiles.png", "latency-percentiles.svg",
		"latency-over-time.png", "latency-over-time.svg",
		"throughput-over-time.png", "throughput-over-time.svg",
		"timeline-1.png", "timeline-1.svg",
		"acquire.hgrm", "release.hgrm", "cycle.hgrm", "handoff.hgrm"}
	for _, f := range want {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("missing %s: %v", f, err)
			continue
		}
		if st.Size() == 0 {
			t.Errorf("%s is empty", f)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) > 0 {
		t.Errorf("temp files left: %v", m)
	}

	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	remote := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)
	if m := remote.Find(html); m != nil {
		t.Errorf("report.html loads a remote resource: %s", m)
	}
	for _, s := range []string{"<script", "@import", "url(http"} {
		if bytes.Contains(bytes.ToLower(html), []byte(s)) {
			t.Errorf("report.html contains %q", s)
		}
	}
	for _, s := range []string{"data:image/png;base64,", "expired during pause", "pause-client", "acquire.p99 &lt; 5ms", "Resolved schedule"} {
		if !bytes.Contains(html, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, s := range []string{"**[PASS]**", "| mutex | **invalid** | 1 | invalid (as expected) |", "expired during pause", "| acquire |", "### Faults", "### Thresholds"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("summary.md lacks %q:\n%s", s, md)
		}
	}
	back, err := metrics.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if back.Stats.Cycles != a.Stats.Cycles || len(back.Faults) != 1 {
		t.Errorf("results.json: cycles %d faults %d, want %d and 1", back.Stats.Cycles, len(back.Faults), a.Stats.Cycles)
	}

	// Re-rendering does not pile up notes, and a failing plot is a note,
	// not a lost run.
	r.Notes = append(r.Notes, "report: plot x failed: old")
	if err := Render(dir, r, a); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes after re-render: %q", r.Notes)
	}
}

func TestRenderSurvivesBrokenPlot(t *testing.T) {
	dir := t.TempDir()
	hist, v := synthRun(t, dir, 3000)
	a, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := sampleResults(v)
	metrics.FillStats(r, a)
	a.HistoryPath = filepath.Join(dir, "gone.jsonl") // timelines cannot be read
	if err := Render(dir, r, a); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "timeline") {
		t.Errorf("notes = %q, want one about the timeline", r.Notes)
	}
	for _, f := range []string{"results.json", "summary.md", "report.html", "latency-percentiles.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	back, err := metrics.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Notes) != 1 {
		t.Errorf("results.json notes = %q", back.Notes)
	}
}

func TestRenderWithoutAnalysis(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults(checker.Violation{Check: "mutex", Key: "k"})
	if err := Render(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "summary.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

func TestPlotMatrix(t *testing.T) {
	dir := renderDir(t)
	cells := []MatrixCell{
		{Scenario: "smoke", Lock: "simple", Verdict: "valid", Expected: true},
		{Scenario: "smoke", Lock: "redlock", Verdict: "valid", Expected: true},
		{Scenario: "smoke", Lock: "watchdog", Verdict: "valid", Expected: true},
		{Scenario: "gc-pause", Lock: "simple", Verdict: "invalid", Expected: true},
		{Scenario: "gc-pause", Lock: "redlock", Verdict: "valid", Expected: false},
		{Scenario: "gc-pause", Lock: "watchdog", Verdict: "unknown", Expected: true},
		{Scenario: "failover", Lock: "simple", Verdict: "error", Expected: false},
		{Scenario: "failover", Lock: "redlock", Verdict: "n/a", Expected: true},
		{Scenario: "failover", Lock: "watchdog", Verdict: "invalid", Expected: true},
	}
	if err := PlotMatrix(cells, filepath.Join(dir, "matrix.png")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"matrix.png", "matrix.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if err := PlotMatrix(nil, filepath.Join(dir, "empty")); err == nil {
		t.Error("PlotMatrix(nil) did not fail")
	}
}

func TestPlotPercentilesCompare(t *testing.T) {
	dir := renderDir(t)
	runs := map[string]*metrics.Analysis{}
	for i, name := range []string{"simple", "redlock"} {
		sub := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		hist, _ := synthRun(t, sub, 5000*(i+1))
		a, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs[name] = a
	}
	if err := PlotPercentilesCompare(runs, metrics.OpAcquire, filepath.Join(dir, "compare-acquire")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "compare-acquire.svg")); err != nil {
		t.Error(err)
	}
	if err := PlotPercentilesCompare(map[string]*metrics.Analysis{}, metrics.OpAcquire, filepath.Join(dir, "none")); err == nil {
		t.Error("no runs: want an error")
	}
}
