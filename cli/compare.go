package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
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

type resultsPair struct{ base, cur string }

// comparePairs is what to compare: the two results.json, or, when both are
// bench directories (bench.json), each lock benched in both, with a note for
// a lock benched in only one.
func comparePairs(base, cur string) ([]resultsPair, []string, error) {
	if !hasFile(base, "bench.json") || !hasFile(cur, "bench.json") {
		return []resultsPair{{resultsPath(base), resultsPath(cur)}}, nil, nil
	}
	bb, berr := readBench(base)
	cb, cerr := readBench(cur)
	if err := errors.Join(berr, cerr); err != nil {
		return nil, nil, err
	}
	inCur := map[string]campaign.BenchLock{}
	for _, l := range cb.Locks {
		inCur[l.Lock] = l
	}
	var pairs []resultsPair
	var notes []string
	for _, l := range bb.Locks {
		c, ok := inCur[l.Lock]
		if !ok {
			notes = append(notes, fmt.Sprintf("lock %s: benched in %s only, not compared", l.Lock, base))
			continue
		}
		delete(inCur, l.Lock)
		// The run directories are found where the bench directory is now
		// (a baseline is often a copied CI artifact).
		pairs = append(pairs, resultsPair{filepath.Join(base, filepath.Base(l.Dir), "results.json"),
			filepath.Join(cur, filepath.Base(c.Dir), "results.json")})
	}
	for _, l := range cb.Locks {
		if _, ok := inCur[l.Lock]; ok {
			notes = append(notes, fmt.Sprintf("lock %s: benched in %s only, not compared", l.Lock, cur))
		}
	}
	if len(pairs) == 0 {
		return nil, nil, fmt.Errorf("bench directories %s and %s have no lock in common", base, cur)
	}
	return pairs, notes, nil
}

// readBench reads dir/bench.json.
func readBench(dir string) (*campaign.Bench, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		return nil, err
	}
	var b campaign.Bench
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "bench.json"), err)
	}
	return &b, nil
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
a verdict got worse (valid → unknown → invalid), 0 otherwise. Given two bench
directories it compares every lock benched in both (the median run of each)
and exits 1 when any of them regressed. Given two matrix directories it
compares every run (a cell's seeds each) check by check and exits 1 when any
verdict differs, either way, or a run is in one only: the same catalog run
one cell at a time and packed, or by two builds, must agree. It prints both
wall times.`,
		Example: `  lockchaos compare baseline/results.json runs/smoke/results.json
  lockchaos compare baseline.json runs/smoke --max-regression 5% --markdown compare.md
  lockchaos compare bench-base bench-new                      # every lock benched in both
  lockchaos compare runs/matrix-serial runs/matrix-packed     # every run's verdict per check`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mr, err := parsePercent(maxReg)
			if err != nil {
				return exitWith(ExitBadInput, fmt.Errorf("--max-regression: %v", err))
			}
			if hasFile(args[0], metrics.MatrixFile) && hasFile(args[1], metrics.MatrixFile) {
				return compareMatrices(stdout, args[0], args[1], markdown)
			}
			pairs, notes, err := comparePairs(args[0], args[1])
			if err != nil {
				return exitWith(ExitBadInput, err)
			}
			var md strings.Builder
			regressed := false
			for i, pr := range pairs {
				base, err := metrics.ReadResults(pr.base)
				if err != nil {
					return exitWith(ExitBadInput, err)
				}
				cur, err := metrics.ReadResults(pr.cur)
				if err != nil {
					return exitWith(ExitBadInput, err)
				}
				c := metrics.Compare(base, cur, mr)
				regressed = regressed || c.Regressed
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				if err := report.WriteCompareText(stdout, c); err != nil {
					return exitWith(ExitInfra, err)
				}
				_ = report.WriteCompareMarkdown(&md, c)
			}
			for _, n := range notes {
				fmt.Fprintln(stdout, n)
				fmt.Fprintf(&md, "\n%s\n", n)
			}
			if markdown != "" {
				if err := os.WriteFile(markdown, []byte(md.String()), 0o644); err != nil {
					return exitWith(ExitBadInput, fmt.Errorf("--markdown: %v", err))
				}
			}
			if regressed {
				return exitWith(ExitViolated, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&maxReg, "max-regression", "10%", "tolerated relative change per metric (e.g. 10% or 0.1)")
	cmd.Flags().StringVar(&markdown, "markdown", "", "also write the comparison as Markdown to this file (for a CI job summary)")
	return cmd
}

// hasFile reports whether dir holds a regular file name (a bench
// directory's bench.json, a matrix's matrix.json).
func hasFile(dir, name string) bool {
	st, err := os.Stat(filepath.Join(dir, name))
	return err == nil && st.Mode().IsRegular()
}

// compareMatrices compares two matrix directories run by run.
func compareMatrices(stdout io.Writer, base, cur, markdown string) error {
	bm, berr := metrics.ReadMatrix(base)
	cm, cerr := metrics.ReadMatrix(cur)
	if err := errors.Join(berr, cerr); err != nil {
		return exitWith(ExitBadInput, err)
	}
	c := metrics.CompareMatrices(bm, cm)
	if err := report.WriteMatrixCompareText(stdout, c); err != nil {
		return exitWith(ExitInfra, err)
	}
	if markdown != "" {
		var md strings.Builder
		_ = report.WriteMatrixCompareMarkdown(&md, c)
		if err := os.WriteFile(markdown, []byte(md.String()), 0o644); err != nil {
			return exitWith(ExitBadInput, fmt.Errorf("--markdown: %v", err))
		}
	}
	if c.Differs() {
		return exitWith(ExitViolated, nil)
	}
	return nil
}
