package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

func init() { extraCommands = append(extraCommands, newBisectCmd) }

// bisectFlags are lockchaos bisect's flags.
type bisectFlags struct {
	lock, versions, from, to string
	seeds, checks            string
	out, page, backend       string
	timeout                  time.Duration
	lockOpts                 []string
}

func newBisectCmd(stdout, stderr io.Writer) *cobra.Command {
	var f bisectFlags
	cmd := &cobra.Command{
		Use:   "bisect NAME|FILE.yaml --lock L (--versions V1,V2,… | --from A --to B)",
		Short: "Run a finding's scenario against released versions of a lock's library: one versions table",
		Long: `bisect runs one scenario (a catalog name or a finding's file) with one lock
against released versions of the lock's library, the same seeds each, oldest
first, and writes one table: per version the version that ran, each check's
invalid count over the seeds, the runs' verdicts, the version's verdict
(fails: a check invalid on a seed; passes: every check valid on every seed;
unknown; cannot install; does not build), its seconds and its run directory;
then one line: the version where the checks stop failing (fixed in X) or
start (broken in X), or that every version tried fails or passes.

A driver lock takes each version through its version option (--lock-opt
version=X): the driver's install script puts that release into the driver
cache first (pip, npm, or a Redisson jar built by Maven). A Go adapter
(rueidislock, redislock, redsync) takes each version through
scripts/bisect-go.sh: the repository copied, MODULE required at V there, a
binary built and the scenario run by it; bisect runs from a checkout.

--versions lists versions; --from/--to take the releases between them from
the library's registry (npm, PyPI, Maven Central, the Go module proxy;
pre-releases only when an end is one). The checks counted are --check, by
default those the scenario expects invalid for the lock. The table goes to
stdout and to <out>/bisect.md and bisect.json; --page puts it into a findings
page between <!-- bisect:begin LOCK --> and <!-- bisect:end LOCK -->
(replacing the lock's block, else at the end of the page's ## Versions).

Exit codes: 0 it ran (whatever the table says), 2 interrupted, 3 bad input
(the message names the flag and the value), 4 the Go script failed.`,
		Example: `  lockchaos bisect docs/findings/redis-semaphore-refresh-timeout.yaml --lock redis-semaphore-mutex --versions 5.1.0,5.3.0,5.8.0 --seeds 1-2
  lockchaos bisect docs/findings/driver-locks-no-validity.yaml --lock redis-py --from 5.0.0 --to 5.0.8 --seeds 1
  lockchaos bisect docs/findings/rueidislock-clock-drift.yaml --lock rueidislock --versions v1.0.19,v1.0.79 --seeds 1-3 \
      --page docs/findings/rueidislock-clock-drift.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBisectCmd(cmd, stdout, stderr, &f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.lock, "lock", "", "the lock: a driver lock (lockchaos list locks, a lock file) or a Go adapter (rueidislock, redislock, redsync)")
	fl.StringVar(&f.versions, "versions", "", "versions of the lock's library to try, comma-separated (Go modules: v1.0.79)")
	fl.StringVar(&f.from, "from", "", "with --to: every release the library's registry lists from this version (included)")
	fl.StringVar(&f.to, "to", "", "with --from: … to this version (included); either end alone leaves the other open")
	fl.StringVar(&f.seeds, "seeds", "1-5", "the seeds each version runs: 1-5, 1,3")
	fl.StringVar(&f.checks, "check", "", "the checks whose failure is the finding, comma-separated (default: those the scenario expects invalid for the lock)")
	fl.StringVar(&f.out, "out", "", "the bisect's directory: each version's runs, bisect.md, bisect.json (default runs/bisect-<lock>-<time>)")
	fl.StringVar(&f.page, "page", "", "a findings page (Markdown) to write the table into, between its bisect markers")
	fl.StringVar(&f.backend, "backend", "process", "where Redis runs: process | docker | embedded | external")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "bound of one version: its install or build, and its runs")
	fl.StringArrayVar(&f.lockOpts, "lock-opt", nil, "a driver lock's option key=value, repeatable (not version: bisect sets it)")
	return cmd
}

// bisectInput is what the flags resolve to before anything runs.
type bisectInput struct {
	target   *bisectTarget
	scenario *scenarios.Scenario
	seeds    []uint64
	checks   []string
	versions []string
	out      string
}

// runBisectCmd checks the input, runs the versions, and writes the table.
func runBisectCmd(cmd *cobra.Command, stdout, stderr io.Writer, f *bisectFlags, scenario string) error {
	in, err := bisectArgs(cmd, f, scenario)
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	fmt.Fprintf(stderr, "lockchaos: bisect %s (%s) on %s, seeds %s, %d versions (%s); checks %s; out %s\n",
		in.target.lock, in.target.library, in.scenario.Name, campaign.SeedsText(in.seeds), len(in.versions),
		strings.Join(in.versions, ", "), strings.Join(in.checks, ","), in.out)
	start := time.Now()
	var rows []campaign.BisectRow
	var scriptErr error
	if in.target.module != "" {
		if rows, scriptErr = bisectGo(cmd.Context(), stderr, in, scenario, f); rows == nil && scriptErr != nil {
			return exitWith(ExitInfra, scriptErr)
		}
	} else {
		rows = bisectDriver(cmd.Context(), stderr, in, f)
	}
	b := &campaign.Bisect{Lock: in.target.lock, Library: in.target.library, Scenario: scenario, Command: bisectCommand(cmd, scenario),
		Date: time.Now().UTC().Format("2006-01-02"), Seeds: in.seeds, Checks: in.checks, Rows: rows,
		Conclusion: campaign.BisectConclusion(rows), Seconds: time.Since(start).Seconds()}
	if err := writeBisect(stdout, b, in.out, f.page); err != nil {
		return exitWith(ExitInfra, err)
	}
	if scriptErr != nil {
		return exitWith(ExitInfra, scriptErr)
	}
	if cmd.Context().Err() != nil {
		return exitWith(ExitUnknown, fmt.Errorf("interrupted after %d of %d versions", len(rows), len(in.versions)))
	}
	return nil
}

// bisectArgs resolves and checks every flag, naming the flag and the
// value in its error.
func bisectArgs(cmd *cobra.Command, f *bisectFlags, scenario string) (*bisectInput, error) {
	if strings.TrimSpace(f.lock) == "" {
		return nil, fmt.Errorf("--lock: which lock's library to bisect (a driver lock or a Go adapter)")
	}
	t, err := resolveBisectTarget(f.lock)
	if err != nil {
		return nil, err
	}
	if !slices.Contains([]string{"process", "docker", "embedded", "external"}, f.backend) {
		return nil, fmt.Errorf("--backend %q: not one of process, docker, embedded, external", f.backend)
	}
	in := &bisectInput{target: t}
	if in.scenario, err = bisectScenario(scenario, t, f); err != nil {
		return nil, err
	}
	if in.seeds, err = campaign.ParseSeeds(f.seeds); err != nil {
		return nil, fmt.Errorf("--seeds %q: %v", f.seeds, err)
	}
	if in.checks, err = bisectCheckList(f.checks, in.scenario, t.lock, f.backend); err != nil {
		return nil, err
	}
	if f.page != "" {
		if st, err := os.Stat(f.page); err != nil || st.IsDir() {
			return nil, fmt.Errorf("--page %s: not a page that exists (bisect writes into a findings page, it does not create one)", f.page)
		}
	}
	fl := cmd.Flags()
	if in.versions, err = bisectVersions(cmd.Context(), t, f.versions, f.from, f.to, fl.Changed("from") || fl.Changed("to")); err != nil {
		return nil, err
	}
	in.out = f.out
	if in.out == "" {
		in.out = filepath.Join("runs", fmt.Sprintf("bisect-%s-%s", t.lock, time.Now().Format("20060102-150405")))
	}
	if err := runner.PrepareDir(in.out); err != nil {
		return nil, fmt.Errorf("--out %s: %v", in.out, err)
	}
	return in, nil
}

// bisectScenario loads the scenario with the lock options, and checks
// that the lock runs in it.
func bisectScenario(name string, t *bisectTarget, f *bisectFlags) (*scenarios.Scenario, error) {
	s, err := scenarios.Load(name)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %v", name, err)
	}
	for _, kv := range f.lockOpts {
		if t.module != "" {
			return nil, fmt.Errorf("--lock-opt %q: the runs of a Go adapter's versions (scripts/bisect-go.sh) take no lock options", kv)
		}
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == "version" {
			return nil, fmt.Errorf("--lock-opt %q: bisect sets version itself; give the versions with --versions", kv)
		}
	}
	if s.Lock.Extra, err = lockOpts(f.lockOpts, s.Lock.Extra); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s with --lock-opt: %v", name, err)
	}
	info, _, err := lockimpl.Lookup(t.lock)
	if err != nil {
		return nil, fmt.Errorf("--lock %s: %v", t.lock, err)
	}
	if ok, why := runner.Applicable(info, s.ForBackend(f.backend)); !ok {
		return nil, fmt.Errorf("--lock %s: does not run in scenario %s: %s", t.lock, name, why)
	}
	return s, nil
}

// bisectCheckList is --check, or the checks the scenario expects invalid
// for the lock.
func bisectCheckList(list string, s *scenarios.Scenario, lock, backend string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		cs := campaign.BisectChecks(runner.ExpectationFor(s.ForBackend(backend), lock))
		if len(cs) == 0 {
			return nil, fmt.Errorf("--check: scenario %s expects no check invalid for %s, so none tells a failing version; name the check (--check mutex)", s.Name, lock)
		}
		return cs, nil
	}
	var cs []string
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if !slices.Contains(scenarios.CheckNames, c) {
			return nil, fmt.Errorf("--check %q: %q is not a check (%s)", list, c, strings.Join(scenarios.CheckNames, ", "))
		}
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return cs, nil
}

// bisectCommand is the command line as the page shows it: the scenario
// and the flags given, but --out and --page.
func bisectCommand(cmd *cobra.Command, scenario string) string {
	parts := []string{"lockchaos bisect", scenario}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name == "out" || fl.Name == "page" {
			return
		}
		vals := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			vals = sv.GetSlice()
		}
		for _, v := range vals {
			if strings.ContainsAny(v, " '\"") {
				v = "'" + v + "'"
			}
			parts = append(parts, "--"+fl.Name+" "+v)
		}
	})
	return strings.Join(parts, " ")
}

// writeBisect prints the table and writes bisect.md, bisect.json and the
// page.
func writeBisect(stdout io.Writer, b *campaign.Bisect, out, page string) error {
	fmt.Fprintf(stdout, "%s\nConclusion: %s\n", campaign.BisectTable(b), b.Conclusion)
	js, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "bisect.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "bisect.md"), []byte(campaign.BisectMarkdown(b)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bisect directory: %s (bisect.md, bisect.json; %.0f s)\n", out, b.Seconds)
	if page == "" {
		return nil
	}
	old, err := os.ReadFile(page)
	if err != nil {
		return fmt.Errorf("--page %s: %v", page, err)
	}
	text, where := campaign.ReplaceBisectBlock(string(old), b.Lock, campaign.BisectBlock(b))
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		return fmt.Errorf("--page %s: %v", page, err)
	}
	fmt.Fprintf(stdout, "page: %s (%s)\n", page, where)
	return nil
}
