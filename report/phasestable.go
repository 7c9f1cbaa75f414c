package report

import (
	"fmt"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// phasesTable renders, per scenario, the cells' summed phase times (seconds)
// and their share of the cells' total time.
func phasesTable(b *strings.Builder, m *metrics.Matrix) {
	type row struct {
		name  string
		cells int
		p     metrics.Phases
	}
	var rows []*row
	byName := map[string]*row{}
	var all metrics.Phases
	for _, c := range m.Cells {
		if c.Phases == nil {
			continue
		}
		r := byName[c.Scenario]
		if r == nil {
			r = &row{name: c.Scenario}
			byName[c.Scenario] = r
			rows = append(rows, r)
		}
		r.cells += max(1, len(c.Seeds))
		r.p.Add(*c.Phases)
		all.Add(*c.Phases)
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Where the time went\n\n")
	if m.WallMS > 0 {
		fmt.Fprintf(b, "Wall time %.0f s with up to %d cells at once; the cells' own times add up to %.0f s (%.1f× the wall time).\n\n",
			m.WallMS/1000, max(m.Parallel, 1), all.Total()/1000, all.Total()/m.WallMS)
	}
	b.WriteString("Seconds summed over each scenario's cells (and seeds), by phase of the run.\n\n")
	tableHeader(b, "| scenario | runs | total |", "|---|---:|---:|", metrics.PhaseNames, "---:|")
	line := func(name string, runs int, p metrics.Phases) {
		fmt.Fprintf(b, "| %s | %d | %.1f |", name, runs, p.Total()/1000)
		for _, v := range p.Values() {
			fmt.Fprintf(b, " %.1f |", v/1000)
		}
		b.WriteString("\n")
	}
	runs := 0
	for _, r := range rows {
		line(r.name, r.cells, r.p)
		runs += r.cells
	}
	line("**all**", runs, all)
}

// tableHeader writes a Markdown table's header: the lead cells and a cell
// per name, then the separator row, leadSep and sep per name.
func tableHeader(b *strings.Builder, lead, leadSep string, names []string, sep string) {
	b.WriteString(lead)
	for _, n := range names {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n" + leadSep)
	for range names {
		b.WriteString(sep)
	}
	b.WriteString("\n")
}
