package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// JUnit XML: runs, seeds and matrix cells as test cases, the format the
// test reporters of GitLab, Jenkins, Buildkite and GitHub read
// (docs/ci.md). One test case is one scenario × lock × seed: classname the
// scenario, name the lock (lock/seed-N when seeds were asked for).

// Test case statuses. An unknown verdict is an <error> (type "unknown"),
// not a <skipped>: lockchaos exits 2 on it, which fails the CI job, and a
// reporter showing it as skipped would hide why the job failed.
const (
	CasePassed  = "passed"
	CaseFailed  = "failed"  // <failure type="unexpected">: not as expected
	CaseUnknown = "unknown" // <error type="unknown">: no verdict either way
	CaseError   = "error"   // <error type="error">: the run itself failed
	CaseSkipped = "skipped" // <skipped>: the cell does not apply
)

// TestCase is one scenario × lock × seed as a JUnit test case.
type TestCase struct {
	Scenario string
	Lock     string
	// Seed is shown in the name (lock/seed-N) when Seeded.
	Seed   uint64
	Seeded bool
	// Status is one of the Case* constants.
	Status string
	// Message is the one line a reporter shows (failure, error or skip
	// message); Detail the text under it.
	Message string
	Detail  string
	// TimeS is the run's wall time in seconds (the sum of its phases).
	TimeS float64
	// Dir is the run directory (shown in system-out).
	Dir string
}

// Name is the test case's name: the lock, with /seed-N when seeded.
func (c TestCase) Name() string {
	if c.Seeded {
		return fmt.Sprintf("%s/seed-%d", c.Lock, c.Seed)
	}
	return c.Lock
}

// RunCase is the test case of one run's results. Its status follows the
// run's exit code (0 passed, 1 failed, 2 unknown, 3 and 4 error): with
// --expect that is the scenario's expectation, else the verdict alone.
func RunCase(r *metrics.Results, dir string, seeded bool) TestCase {
	c := TestCase{Scenario: r.Scenario, Lock: r.Lock, Seed: r.Seed, Seeded: seeded, Dir: dir, TimeS: wallS(r.Phases, r.DurationMS)}
	switch r.ExitCode {
	case 0:
		c.Status = CasePassed
	case 1:
		c.Status = CaseFailed
		c.Message, c.Detail = failureText(r)
	case 2:
		c.Status = CaseUnknown
		c.Message, c.Detail = unknownText(r)
	default:
		c.Status = CaseError
		c.Message = fmt.Sprintf("exit code %d", r.ExitCode)
		c.Detail = strings.Join(r.Notes, "\n")
	}
	return c
}

// wallS is a run's wall time in seconds: its phases' sum, else (a history
// checked without its run) the recorded duration.
func wallS(p *metrics.Phases, durationMS float64) float64 {
	if p != nil {
		return p.Total() / 1000
	}
	return durationMS / 1000
}

// failureText says why a run is not as expected. The message is the first
// check that differs from the expectation and, when that check came out
// invalid, the first incident it has a violation in (its sentence and
// cause); the detail lists every differing check, every incident and every
// failed threshold.
func failureText(r *metrics.Results) (msg, detail string) {
	var checks []string
	var related []checker.Incident // incidents of the first check invalid where it should not be
	for _, name := range sortedChecks(r) {
		got := string(r.Checks[name].Verdict)
		want, ok := expectedFor(r, name)
		switch {
		case ok && !expectMatches(want, got):
			checks = append(checks, fmt.Sprintf("%s: expected %s, got %s", name, want, got))
		case !ok && got == "invalid":
			checks = append(checks, fmt.Sprintf("%s: invalid", name))
		default:
			continue
		}
		if got != "invalid" || related != nil {
			continue
		}
		for _, in := range r.Incidents {
			if in.Counts[name] > 0 {
				related = append(related, in)
			}
		}
		if related != nil && len(checks) > 1 {
			// This check's incidents lead the message.
			checks[0], checks[len(checks)-1] = checks[len(checks)-1], checks[0]
		}
	}
	var thresholds []string
	for _, t := range r.Thresholds {
		if !t.Passed {
			thresholds = append(thresholds, "threshold failed: "+t.Expr+thresholdDetail(t))
		}
	}
	lines := append([]string(nil), checks...)
	for _, in := range r.Incidents {
		lines = append(lines, fmt.Sprintf("incident %d: %s", in.ID, incidentLine(in)))
	}
	lines = append(lines, thresholds...)
	switch {
	case len(related) > 0:
		msg = checks[0] + ": " + incidentLine(related[0])
		if n := len(related) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more incident%s)", n, plural(n))
		}
	case len(checks) > 0:
		msg = strings.Join(checks, "; ")
	case len(thresholds) > 0:
		msg = strings.Join(thresholds, "; ")
	default:
		msg = fmt.Sprintf("verdict %s, outcome %s", orDash(r.Verdict), orDash(r.Outcome))
	}
	return msg, strings.Join(lines, "\n")
}

// incidentLine is an incident's sentence and its cause.
func incidentLine(in checker.Incident) string {
	if in.Cause == "" {
		return in.Sentence
	}
	return in.Sentence + " (cause: " + in.Cause + ")"
}

// unknownText says why a run has no verdict: the checks that came out
// unknown with their notes, and the run's notes.
func unknownText(r *metrics.Results) (msg, detail string) {
	var lines []string
	for _, name := range sortedChecks(r) {
		c := r.Checks[name]
		if c.Verdict != "unknown" {
			continue
		}
		why := "no reason given"
		if len(c.Notes) > 0 {
			why = strings.Join(c.Notes, "; ")
		}
		lines = append(lines, name+" unknown: "+why)
	}
	msg = "verdict unknown"
	if len(lines) > 0 {
		msg = lines[0]
	}
	for _, n := range r.Notes {
		lines = append(lines, "note: "+n)
	}
	return msg, strings.Join(lines, "\n")
}

// SeedCases are the test cases of a scenario × lock run over seeds, one a
// seed (read from each seed's results.json). outcome is the judgement over
// the seeds: a seed fails only when the whole is not as expected (a rate
// expectation tolerates some seeds' verdicts), and when the whole is not
// as expected but no seed alone is, every seed carries the failure.
func SeedCases(scenario, lock, outcome, label string, runs []metrics.SeedRun) []TestCase {
	var cases []TestCase
	failed := false
	for _, sr := range runs {
		c := seedCase(scenario, lock, sr)
		switch {
		case outcome == "as-expected" && (c.Status == CaseFailed || c.Status == CaseUnknown):
			// Judged over the seeds, the cell holds: this seed's own
			// verdict is told, not failed.
			c.Detail = fmt.Sprintf("this seed alone: %s (%s); over the seeds the outcome is as expected (%s)\n%s", sr.Outcome, c.Message, label, c.Detail)
			c.Status, c.Message = CasePassed, ""
		case outcome == "unknown" && c.Status == CaseFailed:
			c.Status = CaseUnknown
		}
		failed = failed || c.Status == CaseFailed
		cases = append(cases, c)
	}
	if outcome == "unexpected" && !failed {
		for i := range cases {
			if cases[i].Status == CasePassed {
				cases[i].Status = CaseFailed
				cases[i].Message = fmt.Sprintf("not as expected over the seeds: %s", label)
			}
		}
	}
	return cases
}

// seedCase is one seed's case from its results.json, or from the seed's
// record when the run left none (it failed before its report).
func seedCase(scenario, lock string, sr metrics.SeedRun) TestCase {
	if r, err := metrics.ReadResults(filepath.Join(sr.Dir, "results.json")); err == nil {
		c := RunCase(r, sr.Dir, true)
		c.Scenario, c.Lock, c.Seed = scenario, lock, sr.Seed
		if sr.Phases != nil {
			c.TimeS = sr.Phases.Total() / 1000
		}
		return c
	}
	c := TestCase{Scenario: scenario, Lock: lock, Seed: sr.Seed, Seeded: true, Dir: sr.Dir, Status: CaseError, Message: sr.Error}
	if sr.Phases != nil {
		c.TimeS = sr.Phases.Total() / 1000
	}
	if c.Message == "" {
		c.Message = fmt.Sprintf("no results.json in %s (outcome %s)", sr.Dir, sr.Outcome)
	}
	return c
}

// MatrixCases are a matrix's test cases: one per applicable cell and seed
// (each read from its run's results.json), a skipped case per cell that
// does not apply, none for a cell another shard runs.
func MatrixCases(m *metrics.Matrix) []TestCase {
	var cases []TestCase
	for _, cell := range m.Cells {
		switch {
		case cell.Outcome == metrics.OutcomeElsewhere:
			continue
		case !cell.Applicable:
			cases = append(cases, TestCase{Scenario: cell.Scenario, Lock: cell.Lock, Status: CaseSkipped, Message: "not applicable: " + orDash(cell.Reason)})
		case len(cell.Seeds) > 0:
			label := cell.Label
			if label == "" {
				label = cell.Verdict
			}
			cases = append(cases, SeedCases(cell.Scenario, cell.Lock, cell.Outcome, label, cell.Seeds)...)
		default:
			cases = append(cases, cellCase(cell))
		}
	}
	return cases
}

// cellCase is a one-run cell's case: its results.json read for the
// incidents, its status from the cell's outcome (a matrix judges by the
// expectation).
func cellCase(cell metrics.Cell) TestCase {
	c := TestCase{Scenario: cell.Scenario, Lock: cell.Lock, Dir: cell.Dir}
	r, err := metrics.ReadResults(filepath.Join(cell.Dir, "results.json"))
	if err == nil {
		c = RunCase(r, cell.Dir, false)
		c.Scenario, c.Lock = cell.Scenario, cell.Lock
	}
	if cell.Phases != nil {
		c.TimeS = cell.Phases.Total() / 1000
	}
	switch cell.Outcome {
	case "as-expected":
		c.Status, c.Message, c.Detail = CasePassed, "", ""
	case "unexpected":
		c.Status = CaseFailed
		if r != nil {
			c.Message, c.Detail = failureText(r)
		} else {
			c.Message = "not as expected: " + strings.Join(cell.Causes, ", ")
		}
	case "unknown":
		c.Status = CaseUnknown
		if r != nil {
			c.Message, c.Detail = unknownText(r)
		} else {
			c.Message = "verdict unknown"
		}
	default:
		c.Status, c.Message = CaseError, orDash(cell.Reason)
	}
	return c
}

// The XML, as Jenkins's junit-10.xsd has it (report/testdata/junit.xsd).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties *junitProps     `xml:"properties,omitempty"`
		Cases      []junitTestCase `xml:"testcase"`
	}
	junitProps struct {
		Props []junitProp `xml:"property"`
	}
	junitProp struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitTestCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitOutcome `xml:"failure,omitempty"`
		Error     *junitOutcome `xml:"error,omitempty"`
		Skipped   *junitOutcome `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitOutcome struct {
		Type    string `xml:"type,attr,omitempty"`
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
)

// seconds is a time attribute: seconds with three decimals.
func seconds(s float64) string { return strconv.FormatFloat(max(s, 0), 'f', 3, 64) }

// WriteJUnit writes cases as JUnit XML: one testsuite per scenario (in the
// order the scenarios first appear), named suite-prefixed ("lockchaos run:
// gc-pause"); props become the suites' properties (the lockchaos version,
// the backend, ...), sorted by name.
func WriteJUnit(w io.Writer, suite string, props map[string]string, cases []TestCase) error {
	root := junitSuites{Name: suite}
	index := map[string]int{}
	var total float64
	suiteTime := map[string]float64{}
	var plist []junitProp
	for k, v := range props {
		plist = append(plist, junitProp{Name: k, Value: v})
	}
	sort.Slice(plist, func(i, j int) bool { return plist[i].Name < plist[j].Name })
	for _, c := range cases {
		i, ok := index[c.Scenario]
		if !ok {
			i = len(root.Suites)
			index[c.Scenario] = i
			s := junitSuite{Name: suite + ": " + c.Scenario}
			if len(plist) > 0 {
				s.Properties = &junitProps{Props: plist}
			}
			root.Suites = append(root.Suites, s)
		}
		s := &root.Suites[i]
		tc := junitTestCase{Name: c.Name(), Classname: c.Scenario, Time: seconds(c.TimeS)}
		if c.Dir != "" {
			tc.SystemOut = "run directory: " + c.Dir
		}
		o := &junitOutcome{Message: c.Message, Text: c.Detail}
		switch c.Status {
		case CasePassed:
			if c.Detail != "" {
				tc.SystemOut = strings.TrimPrefix(tc.SystemOut+"\n"+c.Detail, "\n")
			}
		case CaseFailed:
			o.Type, tc.Failure = "unexpected", o
			s.Failures++
		case CaseUnknown:
			o.Type, tc.Error = "unknown", o
			s.Errors++
		case CaseSkipped:
			tc.Skipped = o
			s.Skipped++
		case CaseError:
			o.Type, tc.Error = "error", o
			s.Errors++
		default:
			return fmt.Errorf("junit: test case %s/%s: status %q is not one of passed, failed, unknown, error, skipped", c.Scenario, c.Name(), c.Status)
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
		suiteTime[c.Scenario] += c.TimeS
		total += c.TimeS
	}
	for name, i := range index {
		s := &root.Suites[i]
		s.Time = seconds(suiteTime[name])
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
	}
	root.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnitFile writes the JUnit XML to path (atomically, as WriteJSON).
func WriteJUnitFile(path, suite string, props map[string]string, cases []TestCase) error {
	var b strings.Builder
	if err := WriteJUnit(&b, suite, props, cases); err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("junit %s: %w", path, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	return nil
}
