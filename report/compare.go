package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// metricValue formats one of m's values with its unit.
func metricValue(m metrics.MetricChange, v float64) string {
	switch m.Unit {
	case "us":
		return metrics.FormatUS(v)
	case "/s":
		return formatRate(v) + "/s"
	}
	return fmt.Sprintf("%.3f", v)
}

// changeText is m's relative change in percent.
func changeText(m metrics.MetricChange) string {
	if m.Base == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*m.Change)
}

// verdictLine is the comparison's one-line verdict.
func verdictLine(c *metrics.Comparison) string {
	if c.Regressed {
		return fmt.Sprintf("REGRESSED: %s against baseline %s (max regression %.0f%%)", c.Cur, c.Base, 100*c.MaxRegression)
	}
	return fmt.Sprintf("OK: %s against baseline %s (max regression %.0f%%)", c.Cur, c.Base, 100*c.MaxRegression)
}

// WriteCompareText writes the comparison as an aligned text table.
func WriteCompareText(w io.Writer, c *metrics.Comparison) error {
	var b strings.Builder
	b.WriteString(verdictLine(c) + "\n\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbaseline\tcurrent\tchange\t")
	for _, m := range c.Metrics {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, metricValue(m, m.Base), metricValue(m, m.Cur), changeText(m), m.Status())
	}
	tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tbaseline\tcurrent\t")
	for _, v := range c.Verdicts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Check, orDash(v.Base), orDash(v.Cur), v.Status())
	}
	tw.Flush()
	for _, n := range c.Notes {
		b.WriteString("note: " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCompareMarkdown writes the comparison as Markdown (for a CI job
// summary).
func WriteCompareMarkdown(w io.Writer, c *metrics.Comparison) error {
	var b strings.Builder
	b.WriteString("## lockchaos compare\n\n**" + verdictLine(c) + "**\n\n")
	b.WriteString("| metric | baseline | current | change | |\n|---|---:|---:|---:|---|\n")
	for _, m := range c.Metrics {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.Name, metricValue(m, m.Base), metricValue(m, m.Cur), changeText(m), m.Status())
	}
	b.WriteString("\n| check | baseline | current | |\n|---|---|---|---|\n")
	for _, v := range c.Verdicts {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", v.Check, orDash(v.Base), orDash(v.Cur), v.Status())
	}
	if len(c.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range c.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
	fmt.Fprintf(&b, "\nLatency changes under %.0fµs are never counted as regressions.\n", metrics.MinLatencyDeltaUS)
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
