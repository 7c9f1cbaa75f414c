package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/lockchaos/lockchaos/explore"
	"github.com/lockchaos/lockchaos/report"
)

func init() { extraCommands = append(extraCommands, newExploreCmd) }

// exploreCmd is explore's flags.
type exploreCmd struct {
	warm         warmFlag
	cfg          explore.Config
	backend      string
	kinds        string
	margin       bool
	marginSeeds  int
	marginFamily string
	lockOptList  []string
	ci           ciFlags
}

const exploreLong = `explore draws fault schedules (every kind, cycle point, target, direction and
when: trigger of the topology; magnitudes 0.1–3×TTL; one to three faults;
workload shapes), runs each on the lock and, when the lock fails, on its
reference (default: the built-in correct lock of the same capabilities) over
a few seeds. A finding is a check the reference passes on every seed, its
faults in effect, while the lock fails it on at least one. Each finding is
shrunk to a minimal schedule, confirmed over 5 seeds (up to 20 until the
lock's and the reference's 95% intervals are apart) and saved as
OUT/findings/N/scenario.yaml (replay: lockchaos run FILE --lock L --expect),
with one line in OUT/findings.md; OUT/report.html indexes the findings
(rates, schedules, replay commands, each finding's run report and
timeline), the counts, the coverage and the limits, and is written whenever
the exploration ends (budget, Ctrl-C). Schedules the reference fails too
are limits of the design; schedules the reference passed only because it
could not acquire under a fault (none granted, some unanswered, on every
seed, while the lock acquired under it on each run it failed) are
reference-idle, not findings; schedules whose faults did not take effect
are untried. --margin instead bisects, per fault family, the smallest magnitude
(×TTL; a rate for the clock-rate templates) at which the lock and its
reference fail, and plots it (OUT/margin.png, .svg, in OUT/report.html).

Exit codes: 0 no finding, 1 findings, 2 only candidates whose confirmation
the budget cut short (saved, inconclusive), 3 bad input, 4 infrastructure.`

func newExploreCmd(stdout, stderr io.Writer) *cobra.Command {
	x := &exploreCmd{}
	cmd := &cobra.Command{
		Use:   "explore --lock L [--reference R] [--budget 10m] [--seed S]",
		Short: "Generate fault schedules from the whole vocabulary and find what the lock fails and its reference passes",
		Long:  exploreLong,
		Example: `  lockchaos explore --lock del-no-owner --budget 2m
  lockchaos explore --lock my-lock --reference fenced --budget 10m --seed 7
  lockchaos explore --lock simple --margin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return x.run(cmd, stdout, stderr) },
	}
	x.ci.add(cmd)
	x.warm.add(cmd)
	x.flags(cmd.Flags())
	return cmd
}

func (x *exploreCmd) flags(fl *pflag.FlagSet) {
	fl.StringVar(&x.cfg.Lock, "lock", "", "the lock to explore")
	fl.StringArrayVar(&x.lockOptList, "lock-opt", nil, "a lock option key=value, repeatable: into every schedule's lock.extra (a driver lock's version=…; a built-in ignores it)")
	fl.StringVar(&x.cfg.Reference, "reference", "", "the lock to compare with (default: the built-in correct lock of the same capabilities)")
	fl.DurationVar(&x.cfg.Budget, "budget", 10*time.Minute, "hard bound on the whole exploration, shrinking included")
	fl.Uint64Var(&x.cfg.Seed, "seed", 1, "exploration seed: the same seed draws the same schedules")
	fl.StringVar(&x.cfg.Topology, "topology", "", "single | independent | sentinel | cluster (default: the lock's)")
	fl.IntVar(&x.cfg.Nodes, "nodes", 0, "nodes of the topology (default: its own)")
	fl.DurationVar(&x.cfg.TTL, "ttl", 200*time.Millisecond, "the lock's TTL in every schedule; magnitudes are multiples of it")
	fl.IntVar(&x.cfg.Seeds, "seeds", 3, "seeds a schedule the lock fails is run on, lock and reference")
	fl.IntVar(&x.cfg.ConfirmSeeds, "confirm-seeds", 5, "seeds a shrunk finding is confirmed on")
	fl.IntVar(&x.cfg.Parallel, "parallel", 0, "runs at once, at most 4 a core (0: automatic, two a core for a driver lock, 2 for a lock in lockchaos's process)")
	fl.StringVar(&x.cfg.Out, "out", "", "output directory (default explore/<lock>-<time>)")
	fl.StringVar(&x.kinds, "kinds", "", "only these fault kinds, comma-separated")
	fl.IntVar(&x.cfg.MaxFaults, "max-faults", 3, "most faults in one schedule (1..3)")
	fl.BoolVar(&x.cfg.NoShrink, "no-shrink", false, "save findings as found, unshrunk")
	fl.IntVar(&x.cfg.MaxFindings, "max-findings", 0, "stop after this many findings (0: at the end of the budget)")
	fl.BoolVar(&x.cfg.KeepRuns, "keep-runs", false, "keep every run directory (default: only the findings')")
	fl.StringVar(&x.backend, "backend", "auto", "where Redis runs: auto | process | embedded")
	fl.BoolVar(&x.margin, "margin", false, "bisect each fault family's smallest failing magnitude (×TTL) for the lock and its reference")
	fl.IntVar(&x.marginSeeds, "margin-seeds", 2, "seeds per bisection step (--margin): a magnitude fails when any seed fails")
	fl.StringVar(&x.marginFamily, "family", "", "--margin: only templates whose name contains this (e.g. pause-client@before-write)")
}

func (x *exploreCmd) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
	defer x.warm.start()()
	if x.cfg.Lock == "" {
		return exitWith(ExitBadInput, fmt.Errorf("--lock: missing"))
	}
	var err error
	arg := x.cfg.Lock
	if x.cfg.Lock, err = resolveLock(x.cfg.Lock); err != nil {
		return err
	}
	if arg != x.cfg.Lock {
		// exec:<command> or a lock file: a replay in another
		// process registers the driver by it, not by its name.
		x.cfg.LockArg = arg
	}
	if most := maxExploreParallel(); x.cfg.Parallel > most {
		return exitWith(ExitBadInput, fmt.Errorf("--parallel: %d: at most %d runs at once (4 a core)", x.cfg.Parallel, most))
	}
	if x.kinds != "" {
		x.cfg.Kinds = strings.Split(x.kinds, ",")
	}
	extra, err := lockOpts(x.lockOptList, nil)
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	x.cfg.Oracle = explore.RunnerOracle{Backend: x.backend, LockExtra: extra}
	line := progressLine(stderr)
	x.cfg.Progress = func(p explore.Progress) { line(p.String(), false) }
	if err := x.ci.check(); err != nil {
		return err
	}
	if x.margin {
		return runMargins(cmd, stdout, stderr, x.cfg, x.marginSeeds, x.marginFamily, line)
	}
	e, err := explore.New(x.cfg)
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	c := e.Config()
	fmt.Fprintf(stderr, "explore %s against %s on %s, budget %v, seed %d, out %s\n", c.Lock, c.Reference, c.Topology, c.Budget, c.Seed, c.Out)
	if c.Lock == c.Reference {
		fmt.Fprintf(stderr, "note: %s is its own reference: a finding can only be a flaky verdict\n", c.Lock)
	}
	rep, err := e.Run(cmd.Context())
	line("", true)
	if rep == nil {
		// A lock that does not run (bad input) or the machine.
		return exitWith(max(ExitCodeOf(err), ExitBadInput), err)
	}
	printExplore(stdout, rep, c.Out)
	if err != nil {
		// Written as it stood (rep.Aborted says why it ended): a lock
		// that does not run is bad input (or, a driver that could not
		// reach the servers, the machine's), anything else the machine's.
		if rep.Aborted != "" {
			return exitWith(max(ExitCodeOf(err), ExitBadInput), err)
		}
		return exitWith(ExitInfra, err)
	}
	if code := x.ci.write(stderr, "lockchaos explore", ExploreCases(rep), exploreMarkdown(rep, c.Out), exploreExit(rep)); code != ExitOK {
		return exitWith(code, nil)
	}
	return nil
}

// progressLine rewrites one status line on a terminal, and prints a line
// every 10s otherwise; done ends it.
func progressLine(w io.Writer) func(s string, done bool) {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var last time.Time
	shown := false
	return func(s string, done bool) {
		switch {
		case done:
			if tty && shown {
				fmt.Fprintln(w)
			}
		case tty:
			fmt.Fprintf(w, "\r\033[K%s", s)
			shown = true
		case time.Since(last) >= 10*time.Second:
			fmt.Fprintln(w, s)
			last = time.Now()
		}
	}
}

func printExplore(w io.Writer, r *explore.Report, out string) {
	fmt.Fprintf(w, "explore %s against %s (%s, seed %d): %d schedules in %v (%.1f/min; %d runs, %.1f/min): %d passed, %d untried, %d limits of the design, %d findings",
		r.Lock, r.Reference, r.Topology, r.Seed, r.Schedules, r.Elapsed.Round(time.Second), r.PerMinute, r.Runs, r.RunsPerMinute,
		r.Classes[explore.Passed], r.Classes[explore.Untried], r.Classes[explore.Limit], r.Confirmed())
	if n := r.Classes[explore.RefIdle]; n > 0 {
		fmt.Fprintf(w, ", %d where the reference could not acquire under the faults (not findings)", n)
	}
	if n := r.Classes[explore.Known]; n > 0 {
		fmt.Fprintf(w, ", %d failing only with a confirmed finding's cause (not re-run)", n)
	}
	if _, cut := r.FindingsByConfirmation(); cut > 0 {
		fmt.Fprintf(w, ", %d candidates whose confirmation the budget cut short (saved, inconclusive)", cut)
	}
	if r.Unconfirmed > 0 {
		fmt.Fprintf(w, " (%d candidates refuted)", r.Unconfirmed)
	}
	if n := r.Classes[explore.Errored]; n > 0 {
		fmt.Fprintf(w, ", %d whose run did not reach a verdict (nothing tested)", n)
	}
	fmt.Fprintln(w)
	for _, re := range r.RunErrors {
		fmt.Fprintf(w, "  run error (%s) ×%d: %s\n", re.Class, re.Count, re.Error)
	}
	if r.Aborted != "" {
		fmt.Fprintf(w, "stopped early: %s\n", r.Aborted)
	}
	c := r.Coverage
	fmt.Fprintf(w, "coverage: %d/%d kinds, %d kind×point, %d kind×direction, %d when-points, %d kind×point×direction tuples (on runs whose faults took effect)\n",
		len(c.Kinds), len(c.KindsAll), len(c.Points), len(c.Directions), len(c.Whens), c.Tuples)
	if len(c.APIs) > 0 {
		var modes []string
		for _, a := range slices.Sorted(maps.Keys(c.APIs)) {
			modes = append(modes, fmt.Sprintf("%s %d", a, c.APIs[a]))
		}
		fmt.Fprintf(w, "  API modes (schedules whose faults took effect): %s\n", strings.Join(modes, ", "))
	}
	if missing := missingKinds(c); len(missing) > 0 {
		fmt.Fprintf(w, "  kinds not yet tried: %s\n", strings.Join(missing, ", "))
	}
	for _, f := range r.Findings {
		what := "finding"
		if !f.Confirmed {
			what = "candidate (confirmation cut short by the budget)"
		}
		fmt.Fprintf(w, "%s %d after %v: %s fails %s (%s), lock %v, reference %v; %d faults, %d clients (shrunk in %d steps, %d kept)\n  %s\n  minimal: %s\n",
			what, f.N, f.FoundAfter.Round(time.Second), r.Lock, f.Check, f.Cause, f.Lock, f.Ref, len(f.Minimal.Faults), f.Minimal.Clients,
			f.ShrinkSteps, f.ShrinkKept, f.Sentence, f.Minimal.Describe())
		if f.Replay != "" {
			fmt.Fprintf(w, "  replay: %s\n", f.Replay)
		}
	}
	if nothingTested(r) {
		fmt.Fprintln(w, "verdict: unknown: nothing was tested (no schedule's faults took effect on a run that reached its verdict), not \"no finding\"")
	}
	fmt.Fprintf(w, "report: %s/report.html, %s/explore.json, %s/findings.md\n", out, out, out)
}

func missingKinds(c explore.Coverage) []string {
	var out []string
	for _, k := range c.KindsAll {
		found := false
		for _, x := range c.Kinds {
			found = found || x == k
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}

func runMargins(cmd *cobra.Command, stdout, stderr io.Writer, cfg explore.Config, seeds int, family string, line func(string, bool)) error {
	if !cmd.Flags().Changed("budget") {
		cfg.Budget = 30 * time.Minute
	}
	e, err := explore.New(cfg)
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	c := e.Config()
	fmt.Fprintf(stderr, "margins of %s and %s on %s (TTL %v, %d seeds a step, budget %v)\n", c.Lock, c.Reference, c.Topology, c.TTL, seeds, c.Budget)
	t0 := time.Now()
	ms, err := e.Margins(cmd.Context(), seeds, family, func(m explore.Margin) {
		line("", true)
		fmt.Fprintln(stdout, m.Text(c.Lock, c.Reference))
		line(fmt.Sprintf("margins: %v elapsed", time.Since(t0).Round(time.Second)), false)
	})
	line("", true)
	fmt.Fprintf(stdout, "%d margins in %v; %s/margins.json, %s/margin.png (.svg), %s/report.html\n", len(ms), time.Since(t0).Round(time.Second), c.Out, c.Out, c.Out)
	if err != nil {
		return exitWith(ExitInfra, err)
	}
	return nil
}

// exploreExit is an exploration's exit code: 1 with confirmed findings, 2
// when the only ones saved are candidates whose confirmation the budget
// cut short (inconclusive) or when nothing was tested (every schedule's
// screening run reached no verdict, or its faults took no effect: not "no
// finding"), else 0.
func exploreExit(rep *explore.Report) int {
	confirmed, cut := rep.FindingsByConfirmation()
	switch {
	case confirmed > 0:
		return ExitViolated
	case cut > 0, nothingTested(rep):
		return ExitUnknown
	}
	return ExitOK
}

// nothingTested: the exploration made schedules, and every one errored or
// had faults that took no effect (so it saved no finding either).
func nothingTested(rep *explore.Report) bool {
	return rep.Schedules > 0 && rep.Classes[explore.Errored]+rep.Classes[explore.Untried] == rep.Schedules
}

// ExploreCases are an exploration's JUnit test cases: one per finding
// (failed; a candidate whose confirmation was cut short: unknown), or one
// passed case when it found none.
func ExploreCases(rep *explore.Report) []report.TestCase {
	suite := "explore " + rep.Lock
	if len(rep.Findings) == 0 {
		c := report.TestCase{Scenario: suite, Lock: "against " + rep.Reference, Status: report.CasePassed, TimeS: rep.Elapsed.Seconds()}
		if nothingTested(rep) {
			c.Status, c.Message = report.CaseUnknown, fmt.Sprintf("nothing was tested: of its %d schedules, %d ran to no verdict and %d had faults that took no effect",
				rep.Schedules, rep.Classes[explore.Errored], rep.Classes[explore.Untried])
		}
		return []report.TestCase{c}
	}
	var cs []report.TestCase
	for _, f := range rep.Findings {
		c := report.TestCase{Scenario: suite, Lock: fmt.Sprintf("finding-%d", f.N), Status: report.CaseFailed,
			Message: fmt.Sprintf("%s: %s (cause %s); lock %v, reference %v", f.Check, strings.TrimSpace(f.Sentence), f.Cause, f.Lock, f.Ref),
			Detail:  f.Line(rep.Lock, rep.Reference), Dir: f.Dir}
		if !f.Confirmed {
			c.Status = report.CaseUnknown
		}
		cs = append(cs, c)
	}
	return cs
}

// exploreMarkdown is the step summary of an exploration: its counts and
// findings.md.
func exploreMarkdown(rep *explore.Report, out string) string {
	var b strings.Builder
	printExplore(&b, rep, out)
	md := "### lockchaos explore " + rep.Lock + "\n\n```\n" + b.String() + "```\n"
	if f, err := os.ReadFile(filepath.Join(out, "findings.md")); err == nil {
		md += "\n" + string(f)
	}
	return md
}

// maxExploreParallel bounds explore's --parallel: four runs a core.
func maxExploreParallel() int { return 4 * runtime.NumCPU() }
