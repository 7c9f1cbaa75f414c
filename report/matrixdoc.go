package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The matrix document: matrix.json's cells and their rendering (matrix.md,
// the verdict grid). The runner fills it; lockchaos matrix merge reads it
// back.

// WriteMatrix writes matrix.json, matrix.md and the verdict grid plot.
func WriteMatrix(dir string, m *metrics.Matrix) error {
	if err := metrics.WriteJSON(filepath.Join(dir, "matrix.json"), m); err != nil {
		return err
	}
	var cells []MatrixCell
	for _, c := range m.Cells {
		mc := MatrixCell{Scenario: c.Scenario, Lock: c.Lock, Verdict: cellVerdict(c), Expected: c.Outcome != "unexpected" && c.Outcome != "error"}
		if c.Label != c.Verdict {
			mc.Label = c.Label
		}
		cells = append(cells, mc)
	}
	var notes []string
	if err := PlotMatrix(cells, filepath.Join(dir, "matrix")); err != nil {
		notes = append(notes, "matrix plot: "+err.Error())
	}
	return writeBytes(filepath.Join(dir, "matrix.md"), []byte(MatrixMarkdown(m, notes)))
}

func cellVerdict(c metrics.Cell) string {
	if !c.Applicable || c.Outcome == metrics.OutcomeElsewhere {
		return "n/a"
	}
	if c.Verdict == "" {
		return "error"
	}
	return c.Verdict
}

// MatrixMarkdown renders the table: one row per scenario, one column per
// lock; each cell the verdict, ✓ when it matched the expectation, ✗ when not.
func MatrixMarkdown(m *metrics.Matrix, notes []string) string {
	var b strings.Builder
	unexpected := 0
	for _, c := range m.Cells {
		if c.Outcome == "unexpected" || c.Outcome == "error" {
			unexpected++
		}
	}
	fmt.Fprintf(&b, "# lockchaos matrix\n\n%d scenarios × %d locks%s; %d cells unexpected; exit code %d.\n\n", len(m.Scenarios), len(m.Locks), seedsText(m.Seeds), unexpected, m.ExitCode)
	if m.Shard != nil {
		fmt.Fprintf(&b, "Shard %d of %d (build %s, catalog %s): it ran the cells marked neither `–` nor `(shard K/N)`; `lockchaos matrix merge` combines the shards.\n\n", m.Shard.Index, m.Shard.Count, m.Shard.Build, m.Shard.Catalog)
	}
	if len(m.Seeds) > 0 {
		b.WriteString("Each cell ran once per seed. A plain expectation must hold on every seed, a rate expectation (`invalid >=0.8`) over the seeds. Where the seeds' overall verdicts differ the cell shows the most common one with its count (`invalid 2/3`); the rates per check are listed below the table.\n\n")
	}
	b.WriteString("Each cell: the overall verdict, then `ok` when every check matched the scenario's expectation for that lock, `UNEXPECTED` when not; `–` not applicable. Then the number of incidents (violations grouped by cause and the fault or lease they share), causes of violations in brackets.\n\n")
	tableHeader(&b, "| scenario |", "|---|", m.Locks, "---|")
	matrixRows(&b, m)
	mixedRates(&b, m)
	phasesTable(&b, m)
	unmatchedCells(&b, m)
	for _, n := range notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}

// matrixRows is the table's rows: a row per scenario, a cell per lock.
func matrixRows(b *strings.Builder, m *metrics.Matrix) {
	idx := map[string]metrics.Cell{}
	for _, c := range m.Cells {
		idx[c.Scenario+"\x00"+c.Lock] = c
	}
	for _, s := range m.Scenarios {
		b.WriteString("| " + s + " |")
		for _, l := range m.Locks {
			c := idx[s+"\x00"+l]
			switch {
			case !c.Applicable:
				b.WriteString(" – |")
			case c.Outcome == metrics.OutcomeElsewhere:
				fmt.Fprintf(b, " (%s) |", c.Reason)
			case c.Outcome == "error":
				b.WriteString(" error UNEXPECTED |")
			default:
				b.WriteString(" " + cellText(c) + " |")
			}
		}
		b.WriteString("\n")
	}
}

// cellText is a run cell of the table: verdict (or label), whether it was
// as expected, attempts, incidents and causes.
func cellText(c metrics.Cell) string {
	mark := "ok"
	if c.Outcome == "unexpected" {
		mark = "UNEXPECTED"
	} else if c.Outcome == "unknown" {
		mark = "unknown"
	}
	if c.Attempts > 1 {
		mark += fmt.Sprintf(" (attempt %d)", c.Attempts)
	}
	cause := ""
	switch {
	case c.Incidents == 1:
		cause = " · 1 incident"
	case c.Incidents > 1:
		cause = fmt.Sprintf(" · %d incidents", c.Incidents)
	}
	if len(c.Causes) > 0 {
		cause += " [" + strings.Join(c.Causes, ", ") + "]"
	}
	v := c.Verdict
	if c.Label != "" {
		v = c.Label
	}
	return fmt.Sprintf("%s %s%s", v, mark, cause)
}

// unmatchedCells lists the cells that did not match their expectation,
// with their seeds and notes.
func unmatchedCells(b *strings.Builder, m *metrics.Matrix) {
	var bad []metrics.Cell
	for _, c := range m.Cells {
		if c.Outcome == "unexpected" || c.Outcome == "error" || c.Outcome == "unknown" {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		b.WriteString("\n## Cells that did not match\n\n")
		for _, c := range bad {
			fmt.Fprintf(b, "- **%s / %s**: %s %s; checks %v; expected %v; run dir `%s`\n", c.Scenario, c.Lock, c.Outcome, c.Reason, c.Checks, c.Expected, c.Dir)
			for _, r := range c.Seeds {
				if r.Outcome != "as-expected" {
					fmt.Fprintf(b, "  - seed %d: %s, checks %v, run dir `%s`\n", r.Seed, r.Outcome, r.Checks, r.Dir)
				}
			}
			for _, n := range c.Notes {
				fmt.Fprintf(b, "  - %s\n", n)
			}
		}
	}
}

func seedsText(seeds []uint64) string {
	switch len(seeds) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" × seed %d", seeds[0])
	}
	return fmt.Sprintf(" × %d seeds (%s)", len(seeds), seedListText(seeds))
}

// seedListText is "1-10" for a run of consecutive seeds, else the list.
func seedListText(seeds []uint64) string {
	consecutive := true
	for i := 1; i < len(seeds); i++ {
		consecutive = consecutive && seeds[i] == seeds[i-1]+1
	}
	if consecutive && len(seeds) > 1 {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ",")
}

// mixedRates lists, for every cell whose seeds disagreed on a check, that
// check's rates with their 95% Wilson intervals.
func mixedRates(b *strings.Builder, m *metrics.Matrix) {
	head := false
	for _, c := range m.Cells {
		var checks []string
		for check, rates := range c.Rates {
			if len(rates) > 1 || rates[0].Hits != rates[0].N {
				checks = append(checks, check)
			}
		}
		if len(checks) == 0 {
			continue
		}
		if !head {
			b.WriteString("\n## Checks whose verdict differed between seeds\n\n")
			head = true
		}
		sort.Strings(checks)
		for _, check := range checks {
			var parts []string
			for _, r := range c.Rates[check] {
				if r.Hits > 0 {
					parts = append(parts, r.String())
				}
			}
			fmt.Fprintf(b, "- %s / %s: %s %s (expected %s)\n", c.Scenario, c.Lock, check, strings.Join(parts, ", "), scenarios.WantFor(c.Expected, check))
		}
	}
}
