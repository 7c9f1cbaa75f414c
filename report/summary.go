package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// Marker is the emoji-free status word for an exit code, as summary.md and
// report.html show it: PASS (0), FAIL (1), UNKNOWN (2), ERROR (3, 4).
func Marker(exitCode int) string {
	switch exitCode {
	case 0:
		return "PASS"
	case 1:
		return "FAIL"
	case 2:
		return "UNKNOWN"
	}
	return "ERROR"
}

func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "\r", "", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

func mdCode(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// expectedText says what the scenario expected of check name, and whether
// the run matched.
func expectedText(r *metrics.Results, name, got string) string {
	e, ok := expectedFor(r, name)
	if !ok {
		return "-"
	}
	if expectMatches(e, got) {
		return e + " (as expected)"
	}
	return e + " (NOT AS EXPECTED)"
}

// expectedFor is the scenario's expectation for check name: its own entry,
// else the "*" entry. A scenario with an expectation but no entry for name
// expects it valid.
func expectedFor(r *metrics.Results, name string) (string, bool) {
	if e, ok := r.Expected[name]; ok {
		return e, true
	}
	if e, ok := r.Expected["*"]; ok {
		return e, true
	}
	if r.Expected != nil {
		return "valid", true
	}
	return "", false
}

// expectMatches: "any" accepts every verdict; a rate expectation
// ("invalid >=0.8", judged over seeds) is met in one run by its verdict.
func expectMatches(want, got string) bool {
	return want == "any" || want == got || strings.HasPrefix(want, got+" ")
}

func mapText(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

// WriteSummaryMarkdown writes summary.md's content: a GitHub job summary
// of the run. timelines maps a violation's index to its timeline plot's
// base name ("" or missing = none).
func WriteSummaryMarkdown(w io.Writer, r *metrics.Results, timelines map[int]string) error {
	return writeSummaryMarkdown(w, r, artifacts{timelines: timelines})
}

// writeSummaryMarkdown is WriteSummaryMarkdown with every plot Render
// made: the violations' and the incidents' timelines.
func writeSummaryMarkdown(w io.Writer, r *metrics.Results, art artifacts) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## lockchaos: %s / %s%s\n\n", orDash(r.Scenario), orDash(r.Lock), library(r))
	fmt.Fprintf(&b, "**[%s]** verdict **%s**%s · exit %d · backend %s · topology %s · seed %d\n\n",
		Marker(r.ExitCode), orDash(r.Verdict), outcomeSuffix(r.Outcome), r.ExitCode, orDash(r.Backend), orDash(r.Topology), r.Seed)
	for _, section := range summarySections {
		section(&b, r, art)
	}
	b.WriteString("Full report: `report.html` in the run directory (plots, timelines, `.hgrm` files).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// summarySections are summary.md's sections in order; each writes nothing
// when the run has nothing for it.
var summarySections = []func(b *strings.Builder, r *metrics.Results, art artifacts){
	mdIncidents, mdChecks, mdViolations, mdPerformance, mdFaults, mdThresholds, mdNotes,
}

// mdIncidents lists the first incidents with their timelines.
func mdIncidents(b *strings.Builder, r *metrics.Results, art artifacts) {
	if n := len(r.Incidents); n > 0 {
		fmt.Fprintf(b, "### %s\n\n", incidentsHeading(n))
		for i, in := range r.Incidents {
			if i == maxTextIncidents {
				fmt.Fprintf(b, "\n... and %d more in results.json.\n", n-i)
				break
			}
			fmt.Fprintf(b, "%d. **%s**\n   <br>%s\n", in.ID, mdEscape(in.Sentence), mdEscape(incidentFacts(in)))
			if t := art.incidentTimelines[in.ID]; t != "" {
				fmt.Fprintf(b, "   <br>timeline: `%s.png`\n", t)
			}
		}
		b.WriteString("\n")
	}
}

// mdChecks is the table of the checks' verdicts.
func mdChecks(b *strings.Builder, r *metrics.Results, _ artifacts) {
	if len(r.Checks) > 0 {
		b.WriteString("### Checks\n\n| check | verdict | violations | expected |\n|---|---|---:|---|\n")
		for _, n := range sortedChecks(r) {
			c := r.Checks[n]
			v := c.Verdict
			if v != "valid" {
				v = "**" + v + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s |\n", n, v, c.Violations, expectedText(r, n, string(c.Verdict)))
		}
		b.WriteString("\n")
	}
}

// mdViolations lists the first violations with their evidence.
func mdViolations(b *strings.Builder, r *metrics.Results, art artifacts) {
	if n := len(r.Violations); n > 0 {
		fmt.Fprintf(b, "### Violations (%d)\n\n", n)
		inc := incidentOf(r)
		for i, v := range r.Violations {
			if i == maxTextViolations {
				fmt.Fprintf(b, "\n... and %d more in results.json.\n", n-i)
				break
			}
			fmt.Fprintf(b, "%d. **%s** on %s, clients %s, at %s — cause: **%s**%s\n", i+1, v.Check, mdCode(v.Key),
				joinInts(v.Clients), formatMS(v.AtMS), mdEscape(orDash(v.Cause)), incidentRef(inc, i))
			if v.Explanation != "" {
				fmt.Fprintf(b, "   %s\n", mdEscape(v.Explanation))
			}
			if v.Detail != "" && v.Detail != v.Explanation {
				fmt.Fprintf(b, "   <br>evidence: %s\n", mdEscape(v.Detail))
			}
			if t := art.timelines[i]; t != "" {
				fmt.Fprintf(b, "   <br>timeline: `%s.png`\n", t)
			}
		}
		b.WriteString("\n")
	}
}

// mdPerformance gives throughput, counts, loss detection, latencies and
// the server's cost.
func mdPerformance(b *strings.Builder, r *metrics.Results, _ artifacts) {
	st := r.Stats
	b.WriteString("### Performance\n\n")
	fmt.Fprintf(b, "Throughput **%s cycles/s** (%d cycles in %.2f s of workload, %d in all) · fairness (Jain) **%.3f**\n\n",
		formatRate(st.Throughput), st.WorkloadCycles, st.WorkloadS, st.Cycles, st.Fairness)
	fmt.Fprintf(b, "Acquires: %d ok, %d fail, %d unknown · releases: %d ok, %d fail, %d unknown",
		st.Acquires.OK, st.Acquires.Fail, st.Acquires.Unknown, st.Releases.OK, st.Releases.Fail, st.Releases.Unknown)
	if st.Pauses > 0 || st.Lost > 0 {
		fmt.Fprintf(b, " · pauses %d · leases lost %d", st.Pauses, st.Lost)
	}
	b.WriteString("\n\n")
	if line := LossDetectionLine(r.LossDetection); line != "" {
		b.WriteString(strings.ToUpper(line[:1]) + line[1:] + ".\n\n")
	}
	if hasLatency(st) {
		b.WriteString("| latency | count | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range latencyRows(st) {
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	if s := st.Server; s != nil {
		fmt.Fprintf(b, "Redis per cycle: %.2f commands, %.1f µs of server CPU\n\n", s.CommandsPerCycle, s.UsecPerCycle)
	}
}

// mdFaults is the table of the faults that fired.
func mdFaults(b *strings.Builder, r *metrics.Results, _ artifacts) {
	if len(r.Faults) > 0 {
		b.WriteString("### Faults\n\n| id | kind | target | at | healed | took effect | effect |\n|---:|---|---|---:|---:|---|---|\n")
		for _, f := range r.Faults {
			healed, applied := faultTimes(f)
			if !f.Applied {
				applied = "**no**"
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", f.ID, f.Kind, mdEscape(orDash(f.Target)), formatMS(f.AtMS),
				healed, applied, mdEscape(mapText(f.Effect)))
		}
		b.WriteString("\n")
	}
}

// mdThresholds is the table of the thresholds.
func mdThresholds(b *strings.Builder, r *metrics.Results, _ artifacts) {
	if len(r.Thresholds) > 0 {
		b.WriteString("### Thresholds\n\n| threshold | value | result |\n|---|---:|---|\n")
		for _, t := range r.Thresholds {
			val, res := thresholdCells(t)
			if res != "pass" {
				res = "**" + mdEscape(res) + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", mdCode(t.Expr), orDash(val), res)
		}
		b.WriteString("\n")
	}
}

// mdNotes lists the run's notes.
func mdNotes(b *strings.Builder, r *metrics.Results, _ artifacts) {
	if len(r.Notes) > 0 {
		b.WriteString("### Notes\n\n")
		for _, n := range r.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
		b.WriteString("\n")
	}
}

// latencyRows are the latency table's rows: op, count, p50, p90, p99,
// p99.9, max (formatted), for the ops that recorded any.
func latencyRows(st metrics.Stats) [][]string {
	var rows [][]string
	for _, op := range metrics.Ops {
		l, ok := st.LatencyUS[op]
		if !ok || l.Count == 0 {
			continue
		}
		rows = append(rows, []string{op, fmt.Sprint(l.Count), metrics.FormatUS(l.P50), metrics.FormatUS(l.P90), metrics.FormatUS(l.P99), metrics.FormatUS(l.P999), metrics.FormatUS(l.Max)})
	}
	return rows
}

// faultTimes formats when a fault healed ("-" if never) and whether it
// took effect.
func faultTimes(f metrics.FaultSummary) (healed, applied string) {
	healed, applied = "-", "yes"
	if f.HealedMS > 0 {
		healed = formatMS(f.HealedMS)
	}
	if !f.Applied {
		applied = "no"
	}
	return healed, applied
}

// thresholdCells formats a threshold's measured value and its result:
// pass, FAIL, or "ERROR: why".
func thresholdCells(t metrics.ThresholdResult) (value, result string) {
	value = t.Actual
	if value == "" && t.Error == "" {
		value = trimFloat(t.Value)
	}
	switch {
	case t.Error != "":
		return value, "ERROR: " + t.Error
	case !t.Passed:
		return value, "FAIL"
	}
	return value, "pass"
}
