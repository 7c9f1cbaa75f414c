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
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// clusterFlags are the flags that choose where Redis runs.
type clusterFlags struct {
	backend, redisServer, redisSentinel, image string
	addrs                                      []string
	allowRemote                                bool
	keyPrefix                                  string
	history                                    string
	maxHistory, minFree                        string
	live                                       bool
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "auto", "where Redis runs: auto | process | docker | embedded | external")
	fl.StringVar(&f.redisServer, "redis-server", "", "redis-server binary (default: from PATH)")
	fl.StringVar(&f.redisSentinel, "redis-sentinel", "", "redis-sentinel binary (default: from PATH)")
	fl.StringVar(&f.image, "image", "", "docker image with redis-server (backend docker)")
	fl.StringSliceVar(&f.addrs, "addrs", nil, "external servers: host:port or redis:// URLs, comma-separated (backend external; password from LOCKCHAOS_REDIS_PASSWORD)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow non-loopback external addresses")
	fl.StringVar(&f.history, "history", runner.HistoryCompact, "history form: compact (history.lch, ~10 bytes an event) | jsonl (history.jsonl, ~100; lockchaos export converts)")
	fl.StringVar(&f.maxHistory, "max-history", "0", "stop a run cleanly (verdict unknown where nothing was found) when its history reaches this size, e.g. 2GiB (0: no limit)")
	fl.StringVar(&f.minFree, "min-free-disk", "256MiB", "do not start, or stop cleanly, when the output's disk has less than this free")
	fl.BoolVar(&f.live, "live", false, "check the history while the run records it: the progress line shows the verdict so far, and the check after the run costs only the tail")
	fl.StringVar(&f.keyPrefix, "key-prefix", "", "prefix of every key the run creates at the server (default lc:<random run id>:; matrix adds the cell's number)")
}

func (f *clusterFlags) apply(o *runner.Setup) error {
	var err error
	if o.Limits.MaxHistory, err = runner.ParseSize(f.maxHistory); err != nil {
		return exitWith(ExitBadInput, fmt.Errorf("--max-history: %v", err))
	}
	if o.Limits.MinFreeDisk, err = runner.ParseSize(f.minFree); err != nil {
		return exitWith(ExitBadInput, fmt.Errorf("--min-free-disk: %v", err))
	}
	o.Backend, o.RedisServer, o.RedisSentinel, o.Image = f.backend, f.redisServer, f.redisSentinel, f.image
	o.Addrs, o.AllowRemote, o.KeyPrefix = f.addrs, f.allowRemote, f.keyPrefix
	o.History = f.history
	o.Live = f.live
	return nil
}

// overrideFlags change a loaded scenario.
type overrideFlags struct {
	duration time.Duration
	clients  int
	keys     int
	seed     uint64
	ttl      time.Duration
	lockOpts []string
}

func (f *overrideFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", 0, "workload phase length (overrides the scenario)")
	fl.IntVar(&f.clients, "clients", 0, "number of clients (overrides the scenario)")
	fl.IntVar(&f.keys, "keys", 0, "number of lock keys (overrides the scenario)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed for keys, timings and fault schedule (overrides the scenario)")
	fl.DurationVar(&f.ttl, "ttl", 0, "lock TTL (overrides the scenario)")
	fl.StringArrayVar(&f.lockOpts, "lock-opt", nil, "a lock option key=value, repeatable: into the scenario's lock.extra (a driver lock refuses one it does not declare)")
}

// load loads scenario name (a built-in or a file) with the flags applied;
// errors exit 3.
func (f *overrideFlags) load(cmd *cobra.Command, name string) (*scenarios.Scenario, error) {
	s, err := scenarios.Load(name)
	if err != nil {
		return nil, exitWith(ExitBadInput, err)
	}
	if err := f.apply(cmd, s); err != nil {
		return nil, exitWith(ExitBadInput, err)
	}
	return s, nil
}

// apply changes s where a flag was given and re-validates, naming the flag.
func (f *overrideFlags) apply(cmd *cobra.Command, s *scenarios.Scenario) error {
	fl := cmd.Flags()
	if fl.Changed("duration") {
		if f.duration <= 0 {
			return fmt.Errorf("--duration: %v must be positive", f.duration)
		}
		s.Duration = f.duration
	}
	if fl.Changed("clients") {
		if f.clients < 1 {
			return fmt.Errorf("--clients: %d must be at least 1", f.clients)
		}
		s.Workload.Clients = f.clients
	}
	if fl.Changed("keys") {
		if f.keys < 1 {
			return fmt.Errorf("--keys: %d must be at least 1", f.keys)
		}
		s.Workload.Keys = f.keys
		if s.Workload.HotKeys > f.keys {
			s.Workload.HotKeys = f.keys
		}
	}
	if fl.Changed("seed") {
		s.Seed = f.seed
	}
	extra, err := lockOpts(f.lockOpts, s.Lock.Extra)
	if err != nil {
		return err
	}
	s.Lock.Extra = extra
	if fl.Changed("ttl") {
		if f.ttl < time.Millisecond {
			return fmt.Errorf("--ttl: %v is below 1ms", f.ttl)
		}
		s.Lock.TTL = f.ttl
		if s.Lock.RenewInterval >= f.ttl {
			s.Lock.RenewInterval = 0
		}
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("scenario %s after flags: %v", s.Name, err)
	}
	return nil
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		cf         clusterFlags
		of         overrideFlags
		lock, out  string
		expect     bool
		quiet      bool
		thresholds []string
		seedList   string
		repeat     int
		ci         ciFlags
		mf         metricsFlags
	)
	cmd := &cobra.Command{
		Use:   "run NAME|FILE.yaml",
		Short: "Run a scenario against a lock and check the result",
		Long: `Run starts Redis (per --backend), drives the lock with the scenario's
workload while its faults fire, heals, lets a recovery window run, stops
everything, then checks the history and writes the report into the run
directory (--out; default runs/<scenario>-<lock>-<time>).

With --seeds (1-10, 1,3,5) or --repeat N (N seeds from --seed, default the
scenario's seed: --repeat 10 is seeds 1-10) the scenario runs once per seed,
each in <out>/seed-N; <out>/seeds.json, seeds.md and report.html give each
check's rate over the seeds with its 95% Wilson interval.

The exit code follows the verdict (0 valid, 1 invalid or a failed threshold,
2 unknown); with --expect it follows the scenario's expectation for the lock
instead (0 = the harness found exactly what the scenario expects).`,
		Example: `  lockchaos run smoke --lock simple --duration 5s --out runs/smoke
  lockchaos run gc-pause --lock fenced            # fenced keeps the resource safe
  lockchaos run my-scenario.yaml --lock watchdog --backend process --seed 7
  lockchaos run smoke --lock redislock --threshold 'acquire.p99 < 5ms' --threshold 'throughput > 1000'
  lockchaos run gc-pause --lock simple --seeds 1-10   # hit rate per check over 10 seeds
  lockchaos run gc-pause --lock simple --repeat 5 --seed 20   # seeds 20-24`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The lock first: an exec: or lock-file driver is registered
			// by it, under its hello's name, which a scenario's expect:
			// may name (an explore finding's replay does).
			lock, err := resolveLock(lock)
			if err != nil {
				return err
			}
			s, err := of.load(cmd, args[0])
			if err != nil {
				return err
			}
			if err := checkThresholds(thresholds); err != nil {
				return err
			}
			seeds, err := seedsFlag(cmd, seedList, repeat, s.Seed)
			if err != nil {
				return exitWith(ExitBadInput, err)
			}
			o := runner.Options{Scenario: s, Lock: lock, Out: out, Expect: expect, Thresholds: thresholds}
			if err := cf.apply(&o.Setup); err != nil {
				return err
			}
			if err := ci.check(); err != nil {
				return err
			}
			if seeds != nil {
				if mf.addr != "" {
					return exitWith(ExitBadInput, fmt.Errorf("--metrics-addr with --seeds or --repeat: the endpoint serves one run"))
				}
				return runSeeds(cmd, stdout, stderr, o, seeds, ci)
			}
			return runOne(cmd, stdout, stderr, o, &mf, ci, quiet)
		},
	}
	cf.add(cmd)
	of.add(cmd)
	ci.add(cmd)
	mf.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&lock, "lock", "simple", "lock implementation (lockchaos list locks), exec:<driver command> or a lock file (docs/driver-protocol.md)")
	fl.StringVar(&out, "out", "", "run directory (created; must not hold files)")
	fl.BoolVar(&expect, "expect", false, "exit 0 when the verdicts match the scenario's expectation for the lock")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress display")
	fl.StringArrayVar(&thresholds, "threshold", nil, "k6-style threshold over results, repeatable (e.g. 'acquire.p99 < 5ms')")
	fl.StringVar(&seedList, "seeds", "", "run once per seed and report each check's rate: 1-10, 1,3,5 (each seed in <out>/seed-N)")
	fl.IntVar(&repeat, "repeat", 0, "run N seeds from --seed (default the scenario's): --repeat 10 is seeds 1-10")
	return cmd
}

// checkThresholds refuses a --threshold that does not parse.
func checkThresholds(thresholds []string) error {
	for _, t := range thresholds {
		if _, err := metrics.ParseThreshold(t); err != nil {
			return exitWith(ExitBadInput, fmt.Errorf("--threshold %q: %v", t, err))
		}
	}
	return nil
}

// runOne runs the scenario once (run without --seeds or --repeat), with
// the metrics endpoint when asked for, and prints its results.
func runOne(cmd *cobra.Command, stdout, stderr io.Writer, o runner.Options, mf *metricsFlags, ci ciFlags, quiet bool) error {
	if !quiet {
		o.Progress = newProgress(stderr, o.Scenario.Name, o.Lock)
	}
	stopMetrics, err := mf.start(cmd, stderr, &o)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(stderr, "lockchaos: running %s with lock %s (backend %s, seed %d)\n", o.Scenario.Name, o.Lock, o.Backend, o.Scenario.Seed)
	res, err := runner.Run(cmd.Context(), o)
	code := ExitCodeOf(err)
	cases := []report.TestCase{{Scenario: o.Scenario.Name, Lock: o.Lock, Status: report.CaseError, Message: fmt.Sprint(err)}}
	dir := ""
	if res != nil && res.Results != nil {
		report.WriteText(stdout, res.Results)
		fmt.Fprintf(stdout, "run directory: %s\n", res.Dir)
		code = max(code, ExitCode(res.Class))
		cases[0], dir = report.RunCase(res.Results, res.Dir, false), res.Dir
	}
	code = ci.write(stderr, "lockchaos run", cases, runMarkdown(o.Scenario.Name, o.Lock, dir, err), code)
	if err != nil || code != 0 {
		return exitWith(code, err)
	}
	return nil
}

// seedsFlag reads --seeds / --repeat (nil: neither, one run as before).
func seedsFlag(cmd *cobra.Command, list string, repeat int, first uint64) ([]uint64, error) {
	fl := cmd.Flags()
	if fl.Changed("seeds") && fl.Changed("repeat") {
		return nil, fmt.Errorf("--seeds and --repeat: give one of them")
	}
	if fl.Changed("seeds") && fl.Changed("seed") {
		return nil, fmt.Errorf("--seeds and --seed: --seeds lists every seed; --seed with --repeat N runs N seeds from it")
	}
	if fl.Changed("repeat") {
		if repeat < 1 || repeat > campaign.MaxSeeds {
			return nil, fmt.Errorf("--repeat: %d is not in 1..%d", repeat, campaign.MaxSeeds)
		}
		return campaign.RepeatSeeds(first, repeat), nil
	}
	if !fl.Changed("seeds") {
		return nil, nil
	}
	seeds, err := campaign.ParseSeeds(list)
	if err != nil {
		return nil, fmt.Errorf("--seeds: %v", err)
	}
	return seeds, nil
}

// runSeeds is run with --seeds/--repeat: one line per seed, then the rates.
func runSeeds(cmd *cobra.Command, stdout, stderr io.Writer, o runner.Options, seeds []uint64, ci ciFlags) error {
	s := o.Scenario
	fmt.Fprintf(stderr, "lockchaos: running %s with lock %s over %d seeds (backend %s)\n", s.Name, o.Lock, len(seeds), o.Backend)
	sum, err := campaign.RunSeeds(cmd.Context(), o, seeds, func(r campaign.SeedRun, _ *runner.Outcome) {
		v := r.Verdict
		if v == "" {
			v = "error: " + r.Error
		}
		fmt.Fprintf(stdout, "seed %-4d %-8s %-11s %s\n", r.Seed, v, r.Outcome, r.Dir)
	})
	if sum != nil {
		fmt.Fprintf(stdout, "%s · lock %s · %d seeds · outcome %s · exit %d\n", s.Name, o.Lock, len(sum.Runs), sum.Outcome, sum.ExitCode)
		for _, c := range scenarios.CheckNames {
			if _, ok := sum.Rates[c]; ok {
				fmt.Fprintf(stdout, "  %-11s %s\n", c, sum.RateText(c))
			}
		}
		for _, m := range sum.Mismatches {
			fmt.Fprintf(stdout, "  not as expected: %s\n", m)
		}
		fmt.Fprintf(stdout, "run directory: %s (seeds.md, report.html)\n", runDir(o, sum))
	}
	code := ExitCodeOf(err)
	cases := []report.TestCase{{Scenario: s.Name, Lock: o.Lock, Status: report.CaseError, Message: fmt.Sprint(err)}}
	md := runMarkdown(s.Name, o.Lock, "", err)
	if sum != nil {
		code = max(code, sum.ExitCode)
		cases = report.SeedCases(s.Name, o.Lock, sum.Outcome, sum.Label(), sum.Runs)
		if b, rerr := os.ReadFile(filepath.Join(runDir(o, sum), "seeds.md")); rerr == nil {
			md = string(b)
		}
	}
	code = ci.write(stderr, "lockchaos run", cases, md, code)
	if err != nil || code != 0 {
		return exitWith(code, err)
	}
	return nil
}

func runDir(o runner.Options, sum *campaign.SeedSummary) string {
	if len(sum.Runs) > 0 {
		return filepath.Dir(sum.Runs[0].Dir)
	}
	return o.Out
}

func newCheckCmd(stdout io.Writer) *cobra.Command {
	var expect bool
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Re-run the checker on a saved run directory",
		Long: `Check reads DIR's history (history.lch or history.jsonl) and DIR/scenario.yaml, runs every check again
(so a checker fix applies to old histories), rewrites results.json and the
report, and exits like run.`,
		Example: `  lockchaos check runs/gc-pause-simple-20261122-140000.000`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, code, err := runner.CheckDir(args[0], runner.EvalOptions{Expect: expect})
			if r != nil {
				report.WriteText(stdout, r)
			}
			if err != nil {
				return exitWith(ExitCode(code), err)
			}
			if code != runner.Passed {
				return exitWith(ExitCode(code), nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&expect, "expect", false, "exit 0 when the verdicts match the scenario's expectation")
	return cmd
}

func newReportCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "report DIR",
		Short:   "Re-render a saved run's report (plots, report.html, summary.md)",
		Example: `  lockchaos report runs/smoke`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := runner.RenderDir(args[0])
			if err != nil {
				return exitWith(ExitCodeOf(err), err)
			}
			report.WriteText(stdout, r)
			return nil
		},
	}
}

func newListCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "list scenarios|locks|faults|controls",
		Short: "List the built-in scenarios, the registered locks, the fault kinds or which scenario catches each broken control",
		Example: `  lockchaos list locks
  lockchaos list scenarios
  lockchaos list controls`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"scenarios", "locks", "faults", "controls"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch strings.TrimSpace(args[0]) {
			case "scenarios":
				return listScenarios(stdout)
			case "locks":
				listLocks(stdout)
			case "faults":
				listFaults(stdout)
			case "controls":
				return listControls(stdout)
			default:
				return exitWith(ExitBadInput, fmt.Errorf("list: %q is not one of scenarios, locks, faults, controls", args[0]))
			}
			return nil
		},
	}
}
