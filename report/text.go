package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// maxTextViolations is how many violations WriteText and summary.md spell out.
const maxTextViolations = 5

// WriteText writes a compact aligned summary of r for a terminal: verdict,
// checks, the first violations with their explanation, throughput and the
// latency table, thresholds and notes.
func WriteText(w io.Writer, r *metrics.Results) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s · lock %s%s · backend %s · topology %s · seed %d\n",
		orDash(r.Scenario), orDash(r.Lock), library(r), orDash(r.Backend), orDash(r.Topology), r.Seed)
	fmt.Fprintf(&b, "verdict: %s%s · exit %d\n", strings.ToUpper(orDash(r.Verdict)), outcomeSuffix(r.Outcome), r.ExitCode)
	writeTextIncidents(&b, r)
	writeTextChecks(&b, r)
	writeTextViolations(&b, r)
	writeTextStats(&b, r)
	if len(r.Faults) > 0 {
		applied := 0
		for _, f := range r.Faults {
			if f.Applied {
				applied++
			}
		}
		fmt.Fprintf(&b, "faults: %d fired, %d took effect\n", len(r.Faults), applied)
	}
	if len(r.Thresholds) > 0 {
		b.WriteString("thresholds:\n")
		for _, t := range r.Thresholds {
			fmt.Fprintf(&b, "  %s %s%s\n", passWord(t), t.Expr, thresholdDetail(t))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// writeTextChecks is a line per check: verdict, violations, expectation.
func writeTextChecks(b *strings.Builder, r *metrics.Results) {
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	for _, name := range sortedChecks(r) {
		c := r.Checks[name]
		exp := ""
		if e, ok := expectedFor(r, name); ok {
			mark := "ok"
			if !expectMatches(e, string(c.Verdict)) {
				mark = "NOT AS EXPECTED"
			}
			exp = fmt.Sprintf("expected %s: %s", e, mark)
		}
		viol := ""
		if c.Violations > 0 {
			viol = fmt.Sprintf("%d violation%s", c.Violations, plural(c.Violations))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, c.Verdict, viol, exp)
	}
	tw.Flush()
}

// writeTextViolations lists the first violations.
func writeTextViolations(b *strings.Builder, r *metrics.Results) {
	if n := len(r.Violations); n > 0 {
		fmt.Fprintf(b, "violations: %d\n", n)
		inc := incidentOf(r)
		for i, v := range r.Violations {
			if i == maxTextViolations {
				fmt.Fprintf(b, "  ... %d more in results.json\n", n-i)
				break
			}
			fmt.Fprintf(b, "  %d. %s on %s, clients %s, at %s: %s%s\n", i+1, v.Check, orDash(v.Key), joinInts(v.Clients), formatMS(v.AtMS), orDash(v.Cause), incidentRef(inc, i))
			if v.Explanation != "" {
				fmt.Fprintf(b, "     %s\n", v.Explanation)
			} else if v.Detail != "" {
				fmt.Fprintf(b, "     %s\n", v.Detail)
			}
		}
	}
}

// writeTextStats gives throughput, counts, latencies and loss detection.
func writeTextStats(b *strings.Builder, r *metrics.Results) {
	st := r.Stats
	fmt.Fprintf(b, "throughput: %s cycles/s (%d cycles in %.2fs of workload; %d in all) · fairness %.3f\n",
		formatRate(st.Throughput), st.WorkloadCycles, st.WorkloadS, st.Cycles, st.Fairness)
	fmt.Fprintf(b, "acquires: %d ok, %d fail, %d unknown · releases: %d ok, %d fail, %d unknown\n",
		st.Acquires.OK, st.Acquires.Fail, st.Acquires.Unknown, st.Releases.OK, st.Releases.Fail, st.Releases.Unknown)
	if hasLatency(st) {
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', tabwriter.AlignRight)
		// Right-aligned numbers; op names padded so they read left-aligned.
		fmt.Fprintln(tw, "latency\tcount\tp50\tp90\tp99\tp99.9\tmax\t")
		for _, row := range latencyRows(st) {
			row[0] = fmt.Sprintf("%-7s", row[0])
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		tw.Flush()
	}
	if line := LossDetectionLine(r.LossDetection); line != "" {
		b.WriteString(line + "\n")
	}
}

func outcomeSuffix(o string) string {
	if o == "" {
		return ""
	}
	return " (" + o + ")"
}

func passWord(t metrics.ThresholdResult) string {
	switch {
	case t.Error != "":
		return "ERROR"
	case t.Passed:
		return "PASS "
	}
	return "FAIL "
}

func thresholdDetail(t metrics.ThresholdResult) string {
	switch {
	case t.Error != "":
		return ": " + t.Error
	case t.Actual != "":
		return " (" + t.Actual + ")"
	}
	return fmt.Sprintf(" (%s)", trimFloat(t.Value))
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func hasLatency(st metrics.Stats) bool {
	for _, l := range st.LatencyUS {
		if l.Count > 0 {
			return true
		}
	}
	return false
}

func sortedChecks(r *metrics.Results) []string {
	names := make([]string, 0, len(r.Checks))
	for n := range r.Checks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func joinInts(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeTextIncidents writes "N incidents:" and each incident's sentence
// with its facts; nothing when the run had no violation.
func writeTextIncidents(b *strings.Builder, r *metrics.Results) {
	n := len(r.Incidents)
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n", incidentsHeading(n))
	for i, in := range r.Incidents {
		if i == maxTextIncidents {
			fmt.Fprintf(b, "  ... %d more in results.json\n", n-i)
			break
		}
		fmt.Fprintf(b, "  %d. %s\n", in.ID, in.Sentence)
		fmt.Fprintf(b, "     %s\n", incidentFacts(in))
	}
}

// incidentRef is " (incident N)" for violation i, "" if it has none.
func incidentRef(inc map[int]int, i int) string {
	if id, ok := inc[i]; ok {
		return fmt.Sprintf(" (incident %d)", id)
	}
	return ""
}

// LossDetectionLine is one sentence on loss detection, "" when nothing was
// lost or it was not measured.
func LossDetectionLine(ld *checker.LossDetection) string {
	if ld == nil || ld.Losses == 0 {
		return ""
	}
	s := fmt.Sprintf("loss detection: %d %s lost at the server while believed", ld.Losses, plural2(ld.Losses, "key", "keys"))
	if n := ld.Learned + ld.Released; n > 0 {
		s += fmt.Sprintf(" · believed on for p50 %.0f ms, p99 %.0f ms, max %.0f ms", ld.P50MS, ld.P99MS, ld.MaxMS)
	}
	s += fmt.Sprintf(" · learned %d, released without learning %d", ld.Learned, ld.Released)
	if ld.Unbounded > 0 {
		s += fmt.Sprintf(", never learned (still believing at the end: unbounded) %d", ld.Unbounded)
	}
	return s
}

func plural2(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// library names the library and version a lock reports in its
// configuration (a driver lock's hello: " (redis 5.0.8)"), or "".
func library(r *metrics.Results) string {
	lib, _ := r.LockConfig["library"].(string)
	ver, _ := r.LockConfig["version"].(string)
	if lib == "" {
		return ""
	}
	return " (" + strings.TrimSpace(lib+" "+ver) + ")"
}
