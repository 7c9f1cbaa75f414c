package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// withIncident gives r one incident made of its violations, as the runner
// copies it from the checker.
func withIncident(r *metrics.Results, sentence string) checker.Incident {
	in := checker.Incident{ID: 1, Sentence: sentence, Cause: "expired-during-pause", FaultID: 1,
		Span: [2]int64{500e6, 910e6}, Clients: []int{0, 1, 2}, Keys: []string{"k0"}, Counts: map[string]int{}}
	for i, v := range r.Violations {
		in.Counts[v.Check]++
		in.Violations = append(in.Violations, i)
		in.Span[0], in.Span[1] = min(in.Span[0], v.Window[0]), max(in.Span[1], v.Window[1])
	}
	r.Incidents = []checker.Incident{in}
	return in
}

const pauseSentence = "client 0 was paused 0.40 s (2.0×TTL) at before-write from 0.510 s, while holding k0; 2 clients (1, 2) acquired k0 2 times meanwhile."

func TestTextAndSummaryLeadWithIncidents(t *testing.T) {
	r := sampleResults(checker.Violation{Check: "mutex", Key: "k0", Clients: []int{0, 1}, AtMS: 711, Window: [2]int64{711e6, 717e6}, Cause: "expired-during-pause"})
	r.Violations = append(r.Violations,
		checker.Violation{Check: "mutex", Key: "k0", Clients: []int{0, 2}, AtMS: 718, Window: [2]int64{718e6, 723e6}, Cause: "expired-during-pause"},
		checker.Violation{Check: "resource", Key: "k0", Clients: []int{1, 0}, AtMS: 909, Window: [2]int64{503e6, 909e6}, Cause: "expired-during-pause"})
	withIncident(r, pauseSentence)
	facts := "span 500.0 ms – 910.0 ms · clients 0,1,2 · key k0 · cause expired-during-pause (fault 1) · contains 2 mutex pairs, 1 lost write"

	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	// Header, verdict, then the incidents before anything else.
	want := []string{"1 incident:", "  1. " + pauseSentence, "     " + facts}
	if len(lines) < 5 || !strings.HasPrefix(lines[1], "verdict: ") {
		t.Fatalf("output:\n%s", buf.String())
	}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("line %d = %q, want %q\n%s", 2+i, lines[2+i], w, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "1. mutex on k0, clients 0,1, at 711.0 ms: expired-during-pause (incident 1)") {
		t.Errorf("the violations do not name their incident:\n%s", buf.String())
	}

	var md bytes.Buffer
	if err := WriteSummaryMarkdown(&md, r, nil); err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(md.String(), "\n### ")
	if len(sections) < 2 || !strings.HasPrefix(sections[1], "1 incident\n\n1. **"+pauseSentence+"**\n   <br>"+facts+"\n") {
		t.Errorf("summary.md does not lead with the incident:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "(incident 1)") {
		t.Errorf("summary.md violations do not name their incident:\n%s", md.String())
	}
	// No violations: no incident lines.
	r.Violations, r.Incidents = nil, nil
	buf.Reset()
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "incident") {
		t.Errorf("a run without incidents prints one:\n%s", buf.String())
	}
}

func TestRenderIncidentTimeline(t *testing.T) {
	dir := t.TempDir()
	hist, v := synthRun(t, dir, 3000)
	a, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := sampleResults(v)
	metrics.FillStats(r, a)
	in := withIncident(r, "client 1 was paused past its TTL.")
	in.Keys = []string{v.Key}
	r.Incidents[0] = in
	if err := Render(dir, r, a); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"incident-1.png", "incident-1.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	h := string(html)
	ii, iv := strings.Index(h, "<h2>1 incident</h2>"), strings.Index(h, "<h2>Violations")
	if ii < 0 || iv < 0 || ii > iv || ii > strings.Index(h, "<h2>Checks</h2>") {
		t.Errorf("report.html does not lead with the incident (at %d, checks at %d, violations at %d)", ii, strings.Index(h, "<h2>Checks</h2>"), iv)
	}
	for _, s := range []string{"client 1 was paused past its TTL.", "contains 1 mutex pair", `alt="holder timeline of incident 1" src="data:image/png;base64,`} {
		if !strings.Contains(h, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "timeline: `incident-1.png`") {
		t.Errorf("summary.md does not name the incident's timeline:\n%s", md)
	}
	back, err := metrics.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Incidents) != 1 || back.Incidents[0].Sentence != in.Sentence || len(back.Violations) != 1 {
		t.Errorf("results.json keeps %d incidents, %d violations: want both levels", len(back.Incidents), len(back.Violations))
	}
}
