package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/report"
)

func init() { extraCommands = append(extraCommands, newCardCmd) }

type cardFlags struct {
	warm        warmFlag
	cf          clusterFlags
	locks       []string
	scens       []string
	out, cache  string
	seedList    string
	budget      time.Duration
	margin      string
	marginSeeds int
	bench       time.Duration
	explore     time.Duration
	parallel    int
}

func newCardCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &cardFlags{}
	cmd := &cobra.Command{
		Use:   "card --locks L1,L2,...",
		Short: "Put locks side by side: safety by fault family, margins, loss detection, cost, findings (card.html, card.md)",
		Long: `Card runs each lock in the scenarios over the seeds (the matrix), bisects
its safety margins (--margin), benches it (--bench) and explores it against
its reference (--explore), and writes one
self-contained card.html and card.md with a column per lock: safety by fault
family, the smallest failing magnitude as a multiple of the TTL, how late the
holder learns it lost the key, throughput against redis-benchmark's ceiling
and bare go-redis, hand-off latency, fairness, server CPU per cycle, the
findings with their replay command, and what ran.

Every run is saved under --cache in a directory named by the hash of its
inputs (scenario, lock and its library version, seed, backend, lockchaos
build): a second card with one more lock reuses the others' runs and costs
that lock alone. --budget bounds the whole card; what it leaves out is
listed as not run.`,
		Example: `  lockchaos card --locks simple,watchdog,redsync --backend process --budget 20m
  lockchaos card --locks simple,redsync --scenarios gc-pause,restart-empty --seeds 1-3 --margin pause-client --bench 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, stdout, stderr) },
	}
	f.cf.add(cmd)
	f.warm.add(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&f.locks, "locks", nil, "locks, one column each, comma-separated (required)")
	fl.StringSliceVar(&f.scens, "scenarios", nil, "scenarios (names or files), comma-separated (default: the catalog)")
	fl.StringVar(&f.out, "out", "", "directory for the card (default runs/card-<time>)")
	fl.StringVar(&f.cache, "cache", filepath.Join("runs", "card-cache"), "directory of saved runs, reused when their inputs match")
	fl.StringVar(&f.seedList, "seeds", "1", "seeds every scenario runs with: 1-3, 1,5,9")
	fl.DurationVar(&f.budget, "budget", 0, "bound the whole card (0: none); what it leaves out is listed")
	fl.StringVar(&f.margin, "margin", "", "bisect the margin templates whose name contains this (all: every one); empty: no margins")
	fl.IntVar(&f.marginSeeds, "margin-seeds", 1, "seeds run at each bisection step")
	fl.DurationVar(&f.bench, "bench", 5*time.Second, "bench each lock this long beside the yardsticks (0: no bench)")
	fl.DurationVar(&f.explore, "explore", 0, "explore each lock this long against its reference (0: no exploration); its findings join the card's")
	fl.IntVar(&f.parallel, "parallel", 0, "runs at once at most (0: automatic, as matrix)")
	_ = cmd.MarkFlagRequired("locks")
	return cmd
}

func (f *cardFlags) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
	defer f.warm.start()()
	list, err := loadScenarios(f.scens)
	if err != nil {
		return err
	}
	seeds, err := campaign.ParseSeeds(f.seedList)
	if err != nil {
		return exitWith(ExitBadInput, fmt.Errorf("--seeds: %v", err))
	}
	if f.budget < 0 || f.bench < 0 || f.explore < 0 || f.parallel < 0 {
		return exitWith(ExitBadInput, fmt.Errorf("--budget, --bench, --explore and --parallel must not be negative"))
	}
	if f.out == "" {
		f.out = filepath.Join("runs", "card-"+time.Now().Format("20060102-150405"))
	}
	o := campaign.CardOptions{Locks: f.locks, Scenarios: list, Seeds: seeds, Cache: f.cache, Budget: f.budget,
		Parallel: f.parallel, Margin: f.margin, MarginSeeds: f.marginSeeds, BenchDuration: f.bench, Explore: f.explore}
	if err := f.cf.apply(&o.Setup); err != nil {
		return err
	}
	o.OnProgress = func(p campaign.CardProgress) {
		state := "running"
		if p.Reused {
			state = "reused "
		}
		fmt.Fprintf(stderr, "[%d/%d, ~%s left] %s %s\n", p.Done, p.Total, p.Left.Round(time.Second), state, p.Doing)
	}
	card, err := campaign.RunCard(cmd.Context(), o)
	if err != nil {
		return exitWith(ExitCodeOf(err), err)
	}
	if err := report.WriteCard(f.out, card); err != nil {
		return exitWith(ExitInfra, err)
	}
	md, err := os.ReadFile(filepath.Join(f.out, "card.md"))
	if err != nil {
		return exitWith(ExitInfra, err)
	}
	stdout.Write(md)
	fmt.Fprintf(stdout, "\ncard written to %s/card.html (%.0fs, %d of %d steps reused)\n", f.out, card.Ran.WallS, card.Ran.Reused, card.Ran.Runs)
	return nil
}
