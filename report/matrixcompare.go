package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// matrixCompareHead is the comparison's first lines: how many runs and
// checks, how many differ, and both matrices' times.
func matrixCompareHead(c *metrics.MatrixComparison) []string {
	lines := []string{fmt.Sprintf("%d runs in both matrices, %d checks compared: %d differ", c.Runs, c.Checks, len(c.Diffs))}
	if len(c.OnlyBase)+len(c.OnlyCur) > 0 {
		lines = append(lines, fmt.Sprintf("%d runs in the baseline only, %d in the current only", len(c.OnlyBase), len(c.OnlyCur)))
	}
	at := func(wall float64, par int) string {
		switch {
		case wall <= 0:
			return "wall time not recorded"
		case par == 1:
			return fmt.Sprintf("%.0f s of wall time, one cell at a time", wall/1000)
		case par > 1:
			return fmt.Sprintf("%.0f s of wall time, up to %d cells at once", wall/1000, par)
		}
		return fmt.Sprintf("%.0f s of wall time", wall/1000)
	}
	lines = append(lines, fmt.Sprintf("baseline: %s (its runs' own times add up to %.0f s)", at(c.BaseWallMS, c.BaseParallel), c.BaseRunsMS/1000),
		fmt.Sprintf("current:  %s (its runs' own times add up to %.0f s)", at(c.CurWallMS, c.CurParallel), c.CurRunsMS/1000))
	if c.BaseWallMS > 0 && c.CurWallMS > 0 {
		lines = append(lines, fmt.Sprintf("the current matrix took %.2f× the baseline's wall time (%.2f× as fast)", c.CurWallMS/c.BaseWallMS, c.BaseWallMS/c.CurWallMS))
	}
	return lines
}

// WriteMatrixCompareText writes a matrix comparison for a terminal: every
// run's check whose verdict differs, with both run directories.
func WriteMatrixCompareText(w io.Writer, c *metrics.MatrixComparison) error {
	var b strings.Builder
	for _, l := range matrixCompareHead(c) {
		b.WriteString(l + "\n")
	}
	if len(c.Diffs) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "run\tcheck\tbaseline\tcurrent\tdirectories\t")
		for _, d := range c.Diffs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s %s\t\n", d.Run(), d.Check, orDash(d.Base), orDash(d.Cur), d.BaseDir, d.CurDir)
		}
		tw.Flush()
	}
	for _, r := range c.OnlyBase {
		b.WriteString("only in the baseline: " + r + "\n")
	}
	for _, r := range c.OnlyCur {
		b.WriteString("only in the current: " + r + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMatrixCompareMarkdown writes a matrix comparison as Markdown.
func WriteMatrixCompareMarkdown(w io.Writer, c *metrics.MatrixComparison) error {
	var b strings.Builder
	b.WriteString("## lockchaos compare (matrices)\n\n")
	for _, l := range matrixCompareHead(c) {
		b.WriteString("- " + mdEscape(l) + "\n")
	}
	if len(c.Diffs) > 0 {
		b.WriteString("\n| run | check | baseline | current |\n|---|---|---|---|\n")
		for _, d := range c.Diffs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdEscape(d.Run()), d.Check, orDash(d.Base), orDash(d.Cur))
		}
	}
	for _, r := range c.OnlyBase {
		b.WriteString("\n- only in the baseline: " + mdEscape(r))
	}
	for _, r := range c.OnlyCur {
		b.WriteString("\n- only in the current: " + mdEscape(r))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
