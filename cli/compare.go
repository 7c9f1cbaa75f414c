package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"lockchaos/report"
	"lockchaos/runner"
)

func init() { extraCommands = append(extraCommands, newCompareCmd) }

// parsePercent reads "10%" or "0.1".
func parsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return 0, fmt.Errorf("%q is not a positive percentage", s)
		}
		return f / 100, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a positive fraction or percentage", s)
	}
	return f, nil
}

// resultsPath accepts a results.json or a run directory holding one.
func resultsPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, "results.json")
	}
	return p
}

func newCompareCmd(stdout, _ io.Writer) *cobra.Command {
	var (
		maxReg   string
		markdown string
	)
	cmd := &cobra.Command{
		Use:   "compare BASE.json NEW.json",
		Short: "Compare a run against a baseline; exit 1 on a regression or a worse verdict",
		Long: `Compare reads two results.json files (or run directories) and prints the
change of every metric (throughput, latency p50/p99/p999 per operation,
fairness) and every verdict. It exits 1 when a metric regressed by more than
--max-regression (latency changes under 20µs never count: scheduler noise) or
a verdict got worse (valid → unknown → invalid), 0 otherwise.`,
		Example: `  lockchaos compare baseline/results.json runs/smoke/results.json
  lockchaos compare baseline.json runs/smoke --max-regression 5% --markdown compare.md`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mr, err := parsePercent(maxReg)
			if err != nil {
				return exitWith(runner.ExitBadInput, fmt.Errorf("--max-regression: %v", err))
			}
			base, err := report.ReadResults(resultsPath(args[0]))
			if err != nil {
				return exitWith(runner.ExitBadInput, err)
			}
			cur, err := report.ReadResults(resultsPath(args[1]))
			if err != nil {
				return exitWith(runner.ExitBadInput, err)
			}
			c := report.Compare(base, cur, mr)
			if err := report.WriteCompareText(stdout, c); err != nil {
				return exitWith(runner.ExitInfra, err)
			}
			if markdown != "" {
				f, err := os.Create(markdown)
				if err != nil {
					return exitWith(runner.ExitBadInput, fmt.Errorf("--markdown: %v", err))
				}
				werr := report.WriteCompareMarkdown(f, c)
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					return exitWith(runner.ExitInfra, werr)
				}
			}
			if c.Regressed {
				return exitWith(runner.ExitViolated, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&maxReg, "max-regression", "10%", "tolerated relative change per metric (e.g. 10% or 0.1)")
	cmd.Flags().StringVar(&markdown, "markdown", "", "also write the comparison as Markdown to this file (for a CI job summary)")
	return cmd
}
