package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/scenarios"
)

func init() { extraCommands = append(extraCommands, newMatrixCmd) }

// matrixFlags are matrix's flags.
type matrixFlags struct {
	warm     warmFlag
	cf       clusterFlags
	locks    []string
	scens    []string
	lockOpts []string
	out      string
	parallel int
	retries  int
	seedList string
	plots    bool
	shard    string
	ci       ciFlags
}

func newMatrixCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &matrixFlags{}
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Run locks × scenarios and fail when any outcome differs from the scenario's expectation",
		Long: `Matrix runs every chosen lock in every chosen scenario (default: every
registered lock × the whole catalog), compares each cell's verdicts with the
expectation written in the scenario, and writes matrix.md, matrix.json and a
verdict grid plot. It is the harness checking itself: exit 1 if any cell is
unexpected, 2 if any is unknown, 0 otherwise.

With --seeds each cell runs once per seed (in <out>/<scenario>/<lock>/seed-N)
and is judged over them: a plain expectation must hold on every seed, a rate
expectation ({invalid: ">=0.8", why: ...}) over the seeds. matrix.md lists
each check's rate with its 95% Wilson interval where the seeds disagreed.

With --shard I/N it runs a deterministic I-th of the applicable cells
(balanced by each scenario's length), for spreading the matrix over the
machines of a CI job matrix; "lockchaos matrix merge" combines the shards'
directories into one matrix with the same exit-code rules.`,
		Example: `  lockchaos matrix --backend process
  lockchaos matrix --locks simple,fenced,redlock --scenarios gc-pause,restart-empty --parallel 2
  lockchaos matrix --backend process --seeds 1-3      # what CI runs
  lockchaos matrix --backend process --seeds 1-3 --shard 2/3 --out runs/shard-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, stdout, stderr) },
	}
	f.cf.add(cmd)
	f.ci.add(cmd)
	f.warm.add(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&f.locks, "locks", nil, "locks to run, comma-separated (default: all registered)")
	fl.StringArrayVar(&f.lockOpts, "lock-opt", nil, "a lock option key=value, repeatable: into every scenario's lock.extra (a driver lock's version=…; a built-in ignores it)")
	fl.StringSliceVar(&f.scens, "scenarios", nil, "scenarios (names or files), comma-separated (default: the catalog)")
	fl.StringVar(&f.out, "out", "", "directory for the matrix (default runs/matrix-<time>)")
	fl.IntVar(&f.parallel, "parallel", 0, "cells run at once at most: 0 automatic (8 a core, packed by CPU appetite: busy cells beside busy cells only, two a core, while their clients run), 1 one at a time")
	fl.StringVar(&f.seedList, "seeds", "", "run every cell once per seed and judge it over them: 1-3, 1,5,9")
	fl.BoolVar(&f.plots, "plots", false, "render every cell's plots (default: none; lockchaos report DIR renders a cell's)")
	fl.IntVar(&f.retries, "retries", 0, "re-run a cell that did not come out as expected up to N times (marked in matrix.md, every attempt kept)")
	fl.StringVar(&f.shard, "shard", "", "run only shard I of N of the applicable cells (e.g. 2/3); combine with lockchaos matrix merge")
	cmd.AddCommand(newMatrixMergeCmd(stdout, stderr))
	return cmd
}

func (f *matrixFlags) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
	defer f.warm.start()()
	o, err := f.options(cmd)
	if err != nil {
		return err
	}
	o.OnCell = func(c campaign.Cell) {
		v := c.Verdict
		if c.Label != "" {
			v = c.Label
		}
		fmt.Fprintf(stderr, "%-20s %-20s %-8s %s\n", c.Scenario, c.Lock, v, c.Outcome)
	}
	if err := f.ci.check(); err != nil {
		return err
	}
	start := time.Now()
	m, err := campaign.RunMatrix(cmd.Context(), o)
	if err != nil {
		code := f.ci.write(stderr, "lockchaos matrix", []report.TestCase{{Scenario: "matrix", Lock: strings.Join(f.locks, ","), Status: report.CaseError, Message: err.Error()}},
			"## lockchaos matrix\n\n**[ERROR]** "+err.Error()+"\n", ExitCodeOf(err))
		return exitWith(code, err)
	}
	if err := report.WriteMatrix(f.out, m); err != nil {
		return exitWith(ExitInfra, err)
	}
	md := report.MatrixMarkdown(m, nil)
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stdout, "\nmatrix written to %s (%.0fs)\n", f.out, time.Since(start).Seconds())
	if code := f.ci.write(stderr, "lockchaos matrix", report.MatrixCases(m), md, m.ExitCode); code != 0 {
		return exitWith(code, nil)
	}
	return nil
}

// options checks the flags and makes the matrix's options of them.
func (f *matrixFlags) options(cmd *cobra.Command) (campaign.MatrixOptions, error) {
	var o campaign.MatrixOptions
	// The locks first: an exec: or lock-file driver is registered by
	// them, under the name a scenario's expect: may give it.
	locks, err := resolveLocks(f.locks)
	if err != nil {
		return o, err
	}
	list, err := loadScenarios(f.scens)
	if err != nil {
		return o, err
	}
	for _, s := range list {
		if s.Lock.Extra, err = lockOpts(f.lockOpts, s.Lock.Extra); err != nil {
			return o, exitWith(ExitBadInput, err)
		}
	}
	if f.parallel < 0 || f.parallel > 64 {
		return o, exitWith(ExitBadInput, fmt.Errorf("--parallel: %d is not in 0..64 (0: automatic)", f.parallel))
	}
	if f.out == "" {
		f.out = filepath.Join("runs", "matrix-"+time.Now().Format("20060102-150405"))
	}
	if f.retries < 0 || f.retries > 5 {
		return o, exitWith(ExitBadInput, fmt.Errorf("--retries: %d is not in 0..5", f.retries))
	}
	var seeds []uint64
	if cmd.Flags().Changed("seeds") {
		var err error
		if seeds, err = campaign.ParseSeeds(f.seedList); err != nil {
			return o, exitWith(ExitBadInput, fmt.Errorf("--seeds: %v", err))
		}
	}
	o = campaign.MatrixOptions{Locks: locks, Scenarios: list, Out: f.out, Parallel: f.parallel, Retries: f.retries, Seeds: seeds, Plots: f.plots}
	if cmd.Flags().Changed("shard") {
		sh, err := campaign.ParseShard(f.shard)
		if err != nil {
			return o, exitWith(ExitBadInput, fmt.Errorf("--shard: %v", err))
		}
		o.Shard = &sh
	}
	err = f.cf.apply(&o.Setup)
	return o, err
}

// loadScenarios loads --scenarios' names or files.
func loadScenarios(names []string) ([]*scenarios.Scenario, error) {
	var list []*scenarios.Scenario
	for _, n := range names {
		s, err := scenarios.Load(strings.TrimSpace(n))
		if err != nil {
			return nil, exitWith(ExitBadInput, fmt.Errorf("--scenarios: %v", err))
		}
		list = append(list, s)
	}
	return list, nil
}

func newMatrixMergeCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out string
		ci  ciFlags
	)
	cmd := &cobra.Command{
		Use:   "merge SHARD-DIR...",
		Short: "Combine the directories of matrix shards (--shard I/N) into one matrix",
		Long: `Merge reads matrix.json from every shard directory, checks that they are
the shards 1..N of one matrix (same build, catalog, locks and seeds; each
shard once) and writes the combined matrix.md, matrix.json and verdict grid
to --out. It exits like matrix: 1 if any cell was unexpected, 2 if any was
unknown, 0 otherwise; 3 when the shards do not belong together.`,
		Example: `  lockchaos matrix merge --out runs/matrix runs/shard-1 runs/shard-2 runs/shard-3`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ci.check(); err != nil {
				return err
			}
			m, err := campaign.MergeShards(args)
			if err != nil {
				return exitWith(ExitCodeOf(err), err)
			}
			if out == "" {
				out = filepath.Join("runs", "matrix-merged-"+time.Now().Format("20060102-150405"))
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return exitWith(ExitInfra, err)
			}
			if err := report.WriteMatrix(out, m); err != nil {
				return exitWith(ExitInfra, err)
			}
			md := report.MatrixMarkdown(m, nil)
			fmt.Fprint(stdout, md)
			fmt.Fprintf(stdout, "\nmerged matrix written to %s\n", out)
			// A cell whose shard directory is not on this machine is told
			// from matrix.json alone (its causes, no incident sentence).
			if code := ci.write(stderr, "lockchaos matrix", report.MatrixCases(m), md, m.ExitCode); code != 0 {
				return exitWith(code, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the merged matrix (default runs/matrix-merged-<time>)")
	ci.add(cmd)
	return cmd
}
