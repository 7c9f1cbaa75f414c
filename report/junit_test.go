package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// junitDoc decodes what WriteJUnit writes, as a reader of JUnit would.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     float64  `xml:"time,attr"`
	Suites   []struct {
		Name     string  `xml:"name,attr"`
		Tests    int     `xml:"tests,attr"`
		Failures int     `xml:"failures,attr"`
		Errors   int     `xml:"errors,attr"`
		Skipped  int     `xml:"skipped,attr"`
		Time     float64 `xml:"time,attr"`
		Props    []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string  `xml:"name,attr"`
			Classname string  `xml:"classname,attr"`
			Time      float64 `xml:"time,attr"`
			Failure   *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// junitRuns writes three runs' results.json into dirs under base: gc-pause
// found invalid where valid was expected (an incident with its cause), the
// same valid as expected, and one whose fault did not take effect
// (unknown).
func junitRuns(t *testing.T, base string) (bad, good, unknown string) {
	t.Helper()
	write := func(name string, r *metrics.Results) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := metrics.WriteJSON(filepath.Join(dir, "results.json"), r); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	phases := &metrics.Phases{Start: 100, Ready: 50, Workload: 3000, Heal: 10, Recovery: 1000, Stop: 200, Check: 30, Report: 110} // 4.5 s
	bad = write("bad", &metrics.Results{Scenario: "gc-pause", Lock: "simple", Seed: 1, Verdict: "invalid", Outcome: "unexpected", ExitCode: 1,
		Expected: map[string]string{"mutex": "valid"},
		Checks:   map[string]checker.CheckResult{"mutex": {Verdict: checker.Invalid, Violations: 2}, "liveness": {Verdict: checker.Valid}},
		Incidents: []checker.Incident{{ID: 1, Sentence: "Client 3 held k0 after a 1.2s pause outlived its 500ms lease; client 5 took the key.",
			Cause: "expired-during-pause", Counts: map[string]int{"mutex": 2}}},
		Phases: phases, DurationMS: 9999})
	good = write("good", &metrics.Results{Scenario: "gc-pause", Lock: "fenced", Seed: 1, Verdict: "valid", Outcome: "as-expected", ExitCode: 0,
		Checks: map[string]checker.CheckResult{"mutex": {Verdict: checker.Valid}}, Phases: phases})
	unknown = write("unknown", &metrics.Results{Scenario: "restart-empty", Lock: "simple", Seed: 1, Verdict: "unknown", Outcome: "unknown", ExitCode: 2,
		Checks:     map[string]checker.CheckResult{"mutex": {Verdict: checker.Unknown, Notes: []string{"fault 1 (kill-node) did not take effect"}}},
		DurationMS: 2500})
	return bad, good, unknown
}

func TestJUnitOfMatrix(t *testing.T) {
	base := t.TempDir()
	bad, good, unknown := junitRuns(t, base)
	m := &metrics.Matrix{Locks: []string{"simple", "fenced"}, Scenarios: []string{"gc-pause", "restart-empty", "sentinel-failover"}, Cells: []metrics.Cell{
		{Scenario: "gc-pause", Lock: "simple", Applicable: true, Outcome: "unexpected", Dir: bad, Verdict: "invalid"},
		{Scenario: "gc-pause", Lock: "fenced", Applicable: true, Outcome: "as-expected", Dir: good, Verdict: "valid"},
		{Scenario: "restart-empty", Lock: "simple", Applicable: true, Outcome: "unknown", Dir: unknown, Verdict: "unknown"},
		{Scenario: "restart-empty", Lock: "fenced", Applicable: true, Outcome: "error", Reason: "start: redis-server not found"},
		{Scenario: "sentinel-failover", Lock: "simple", Applicable: false, Outcome: "n/a", Reason: "the lock does not speak sentinel"},
		{Scenario: "sentinel-failover", Lock: "fenced", Applicable: true, Outcome: metrics.OutcomeElsewhere},
	}}
	path := filepath.Join(base, "out", "junit.xml")
	if err := WriteJUnitFile(path, "lockchaos matrix", map[string]string{"lockchaos.version": "v1.2.3", "backend": "process"}, MatrixCases(m)); err != nil {
		t.Fatal(err)
	}
	validateJUnit(t, path)
	doc := readJUnit(t, path)

	if doc.Tests != 5 || doc.Failures != 1 || doc.Errors != 2 {
		t.Errorf("testsuites: %d tests, %d failures, %d errors; want 5, 1, 2 (the other shard's cell left out)", doc.Tests, doc.Failures, doc.Errors)
	}
	if len(doc.Suites) != 3 || doc.Suites[0].Name != "lockchaos matrix: gc-pause" || doc.Suites[2].Skipped != 1 {
		t.Fatalf("suites: %+v", doc.Suites)
	}
	if p := doc.Suites[0].Props; len(p) != 2 || p[0].Name != "backend" || p[1].Value != "v1.2.3" {
		t.Errorf("properties %+v, want backend and lockchaos.version sorted", p)
	}
	gc := doc.Suites[0].Cases
	if gc[0].Classname != "gc-pause" || gc[0].Name != "simple" || gc[0].Failure == nil {
		t.Fatalf("gc-pause/simple: %+v, want a failure", gc[0])
	}
	f := gc[0].Failure
	if !strings.Contains(f.Message, "outlived its 500ms lease") || !strings.Contains(f.Message, "cause: expired-during-pause") || f.Type != "unexpected" {
		t.Errorf("failure message %q (type %q): want the incident's sentence and cause", f.Message, f.Type)
	}
	if !strings.Contains(f.Text, "mutex: expected valid, got invalid") {
		t.Errorf("failure text %q does not name the check that was not as expected", f.Text)
	}
	if gc[0].Time != 4.5 || doc.Suites[0].Time != 9 {
		t.Errorf("time %v (suite %v), want 4.5 s, the sum of the phases (suite 9)", gc[0].Time, doc.Suites[0].Time)
	}
	if gc[1].Failure != nil || gc[1].Error != nil || !strings.Contains(gc[1].SystemOut, good) {
		t.Errorf("gc-pause/fenced: %+v, want a pass naming its run directory", gc[1])
	}
	re := doc.Suites[1].Cases
	if re[0].Error == nil || re[0].Error.Type != "unknown" || !strings.Contains(re[0].Error.Message, "did not take effect") {
		t.Errorf("restart-empty/simple: %+v, want an unknown error with the check's reason", re[0])
	}
	if re[0].Time != 2.5 {
		t.Errorf("without phases the time is the duration: %v, want 2.5", re[0].Time)
	}
	if re[1].Error == nil || re[1].Error.Type != "error" || !strings.Contains(re[1].Error.Message, "redis-server not found") {
		t.Errorf("restart-empty/fenced: %+v, want an error with the cell's reason", re[1])
	}
	if sk := doc.Suites[2].Cases[0].Skipped; sk == nil || !strings.Contains(sk.Message, "does not speak sentinel") {
		t.Errorf("sentinel-failover/simple: %+v, want skipped with the reason", doc.Suites[2].Cases[0])
	}
}

// A cell over seeds is one case a seed; a seed fails only when the cell is
// not as expected.
func TestJUnitSeeds(t *testing.T) {
	base := t.TempDir()
	bad, good, _ := junitRuns(t, base)
	runs := []metrics.SeedRun{{Seed: 1, Dir: bad, Outcome: "unexpected"}, {Seed: 2, Dir: good, Outcome: "as-expected"},
		{Seed: 3, Dir: filepath.Join(base, "missing"), Outcome: "error", Error: "start: port in use"}}
	cases := SeedCases("gc-pause", "simple", "unexpected", "invalid 1/3", runs)
	want := []struct{ name, status string }{{"simple/seed-1", CaseFailed}, {"simple/seed-2", CasePassed}, {"simple/seed-3", CaseError}}
	if len(cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(cases), len(want))
	}
	for i, w := range want {
		if cases[i].Name() != w.name || cases[i].Status != w.status {
			t.Errorf("case %d: %s %s, want %s %s", i, cases[i].Name(), cases[i].Status, w.name, w.status)
		}
	}
	if cases[2].Message != "start: port in use" {
		t.Errorf("seed 3's message %q, want the seed's error", cases[2].Message)
	}
	// A rate expectation met over the seeds: the invalid seed passes, its
	// own verdict told.
	held := SeedCases("gc-pause", "simple", "as-expected", "invalid 2/3", runs[:2])
	if held[0].Status != CasePassed || !strings.Contains(held[0].Detail, "this seed alone: unexpected") {
		t.Errorf("seed 1 of a cell as expected: %+v", held[0])
	}
	// Not as expected over the seeds though no seed alone is: every seed
	// carries the failure.
	rate := SeedCases("gc-pause", "fenced", "unexpected", "valid 2/2", []metrics.SeedRun{{Seed: 1, Dir: good}, {Seed: 2, Dir: good}})
	for _, c := range rate {
		if c.Status != CaseFailed || !strings.Contains(c.Message, "over the seeds") {
			t.Errorf("%s: %s %q, want failed over the seeds", c.Name(), c.Status, c.Message)
		}
	}
	// The failure leads with the check not as expected, not with an
	// incident of a check that was meant to fail.
	r := &metrics.Results{Scenario: "gc-pause", Lock: "simple", ExitCode: 1, Outcome: "unexpected",
		Expected: map[string]string{"mutex": "invalid", "liveness": "valid"},
		Checks:   map[string]checker.CheckResult{"mutex": {Verdict: checker.Invalid}, "liveness": {Verdict: checker.Invalid}},
		Incidents: []checker.Incident{{ID: 1, Sentence: "Client 0 was paused.", Cause: "expired-during-pause", Counts: map[string]int{"mutex": 3}},
			{ID: 2, Sentence: "Client 2 waited 4s.", Cause: "starved", Counts: map[string]int{"liveness": 1}}}}
	if c := RunCase(r, "", false); c.Message != "liveness: expected valid, got invalid: Client 2 waited 4s. (cause: starved)" ||
		!strings.Contains(c.Detail, "incident 1: Client 0 was paused.") {
		t.Errorf("message %q, detail %q: want liveness's incident first, every incident in the detail", c.Message, c.Detail)
	}
	r.Incidents = r.Incidents[:1]
	if c := RunCase(r, "", false); c.Message != "liveness: expected valid, got invalid" {
		t.Errorf("message %q: want the check alone when no incident is its", c.Message)
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, "x", nil, []TestCase{{Scenario: "s", Lock: "l", Status: "odd"}}); err == nil || !strings.Contains(err.Error(), `"odd"`) {
		t.Errorf("a bad status: %v, want an error naming it", err)
	}
}

// validateJUnit validates path against the JUnit schema CI tools read
// (testdata/junit.xsd) with xmllint, and checks that the validator
// rejects a file that breaks it, so a pass means something.
func validateJUnit(t *testing.T, path string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (Debian: apt-get install libxml2-utils): the JUnit schema is not checked")
	}
	xsd := filepath.Join("testdata", "junit.xsd")
	if out, err := exec.Command(xmllint, "--noout", "--schema", xsd, path).CombinedOutput(); err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%s does not validate against %s: %v\n%s\n%s", path, xsd, err, out, b)
	}
	broken := filepath.Join(t.TempDir(), "broken.xml")
	body := `<testsuites><testsuite name="s" tests="one" failures="0" errors="0"><testcase classname="c"/></testsuite></testsuites>`
	if err := os.WriteFile(broken, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", xsd, broken).CombinedOutput(); err == nil {
		t.Fatalf("xmllint accepted a testcase without a name and a count that is no number:\n%s", out)
	}
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}
