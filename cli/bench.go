package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/workloads"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

// benchFlags are bench's flags, beyond where Redis runs.
type benchFlags struct {
	cf         clusterFlags
	o          campaign.BenchOptions
	overhead   bool
	noCeil     bool
	cpuProfile string
	mutexProf  string
	blockProf  string
	minRatio   float64
	format     string
}

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark locks side by side on the same servers (no faults)",
		Long: `Bench runs each lock in turn with the same workload on the same Redis
servers (independent masters: redlock-family locks use all of them, the others
the first), and reports cycles/s, acquire/release/cycle/hand-off latency,
failed acquires, fairness (Jain's index) and Redis's own cost per cycle (INFO
commandstats). With redis-benchmark installed it also measures the ceiling for
the simple lock's two commands in the same run, and the same cycle from bare
go-redis clients (the client library's share of any gap). Bench clients skip
go-redis's per-checkout connection probe: no fault closes their connections.
Each lock's run directory holds the usual results.json and report.`,
		Example: `  lockchaos bench --lock simple,redlock,watchdog,redislock,redsync,rueidislock --clients 50 --keys 50 --duration 8s
  lockchaos bench --lock simple --keys 1 --clients 16 --duration 5s          # hand-off on one hot key
  lockchaos bench --lock simple --key-dist per-client --overhead --repeat 5  # uncontended, cost of recording, median of 5
  lockchaos bench --lock simple --rate 5000 --duration 5s                   # open loop
  lockchaos bench --lock simple --clients 50 --keys 50 --key-dist per-client --duration 4s --repeat 3 --min-ratio 0.9  # CI: exit 1 below 0.9 of bare go-redis
  lockchaos bench --lock simple --backend external --addrs 127.0.0.1:6379 --clients 50 --keys 50 --duration 8s --out D`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, stdout, stderr) },
	}
	f.add(cmd)
	return cmd
}

func (f *benchFlags) add(cmd *cobra.Command) {
	f.cf.add(cmd)
	o := &f.o
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Locks, "lock", []string{"simple"}, "locks to compare, comma-separated")
	fl.IntVar(&o.Clients, "clients", 50, "concurrent clients")
	fl.IntVar(&o.Keys, "keys", 50, "lock keys (1 = one hot key: contended)")
	fl.StringVar(&o.KeyDist, "key-dist", "uniform", "how clients pick keys: uniform | per-client (client i → key i mod keys: uncontended when keys >= clients) | zipf | hot")
	fl.DurationVar(&o.Duration, "duration", 5*time.Second, "per lock")
	fl.DurationVar(&o.TTL, "ttl", 0, "lock TTL (default 500ms)")
	fl.DurationVar(&o.Hold, "hold", 0, "critical-section hold time")
	fl.StringVar(&o.Wait, "wait", "", "how blocked acquirers wait: pubsub | poll (default: the lock's)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write the harness's CPU profile to this file (go tool pprof)")
	fl.StringVar(&f.mutexProf, "mutexprofile", "", "write the harness's mutex contention profile to this file (go tool pprof)")
	fl.StringVar(&f.blockProf, "blockprofile", "", "write where the harness's goroutines blocked to this file (go tool pprof)")
	fl.Float64Var(&f.minRatio, "min-ratio", 0, "exit 1 when a lock's cycles/s is below this fraction of bare go-redis's in the same run (medians over --repeat; 0 = off)")
	fl.Float64Var(&o.Rate, "rate", 0, "open loop: cycle starts per second in total (0 = closed loop)")
	fl.IntVar(&o.Nodes, "nodes", 5, "independent masters to start (redlock-family locks use all)")
	fl.StringVar(&o.Out, "out", "", "bench directory (default runs/bench-<time>)")
	fl.BoolVar(&f.overhead, "overhead", false, "also run each lock with history recording off and report the cost of recording")
	fl.BoolVar(&o.CommandRecord, "command-record", false, "record every node's commands (MONITOR) as scenario runs do; off by default: it costs the servers throughput (docs/ground-truth.md)")
	fl.BoolVar(&f.noCeil, "no-ceiling", false, "skip the redis-benchmark ceiling")
	fl.StringVar(&f.format, "format", "markdown", "what stdout gets: markdown (bench.md) | gobench (Go benchmark lines with custom units for benchstat; docs/ci.md); the directory gets both (bench.md, gobench.txt)")
	fl.IntVar(&o.Repeat, "repeat", 1, "rounds: each measures the yardsticks, then runs every lock once (with --overhead, recording on and off alternate); the median run is reported with the spread")
}

func (f *benchFlags) run(cmd *cobra.Command, stdout, stderr io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	stop, err := f.startProfiles(stderr)
	if err != nil {
		return err
	}
	defer stop()
	b, err := campaign.RunBench(cmd.Context(), f.o)
	if b != nil {
		f.write(stdout, stderr, b)
	}
	if err != nil {
		return exitWith(ExitCodeOf(err), err)
	}
	if f.minRatio > 0 {
		if err := campaign.RatioGate(b, f.minRatio); err != nil {
			return exitWith(ExitViolated, fmt.Errorf("--min-ratio %.2f: %w", f.minRatio, err))
		}
		for _, l := range b.Locks {
			fmt.Fprintf(stdout, "--min-ratio %.2f: %s %.0f cycles/s, bare go-redis %.0f: %.3f of it\n", f.minRatio, l.Lock, l.Throughput, b.GoRedisCS, l.Throughput/b.GoRedisCS)
		}
	}
	return nil
}

// check refuses bad flags and fills in the options from them.
func (f *benchFlags) check() error {
	o := &f.o
	if f.format != "markdown" && f.format != "gobench" {
		return exitWith(ExitBadInput, fmt.Errorf("--format: %q is not one of markdown, gobench", f.format))
	}
	if err := f.cf.apply(&o.Setup); err != nil {
		return err
	}
	locks, err := resolveLocks(o.Locks)
	if err != nil {
		return err
	}
	o.Locks = locks
	o.Overhead, o.Ceiling = f.overhead, !f.noCeil
	if o.Out == "" {
		o.Out = filepath.Join("runs", "bench-"+time.Now().Format("20060102-150405"))
	}
	if !slices.Contains(workloads.KeyDists, o.KeyDist) {
		return exitWith(ExitBadInput, fmt.Errorf("--key-dist: %q is not one of %s", o.KeyDist, strings.Join(workloads.KeyDists, ", ")))
	}
	if o.Repeat < 1 || o.Repeat > 100 {
		return exitWith(ExitBadInput, fmt.Errorf("--repeat: %d is not in 1..100", o.Repeat))
	}
	if o.Clients < 1 || o.Keys < 1 || o.Duration <= 0 || o.Rate < 0 {
		return exitWith(ExitBadInput, fmt.Errorf("--clients %d, --keys %d, --duration %v, --rate %v: must be positive", o.Clients, o.Keys, o.Duration, o.Rate))
	}
	if f.minRatio < 0 || f.minRatio > 10 {
		return exitWith(ExitBadInput, fmt.Errorf("--min-ratio: %v is not in 0..10", f.minRatio))
	}
	if f.minRatio > 0 && f.noCeil {
		return exitWith(ExitBadInput, fmt.Errorf("--min-ratio %v compares with bare go-redis, which --no-ceiling skips", f.minRatio))
	}
	return nil
}

// startProfiles starts the profiles asked for; stop writes them.
func (f *benchFlags) startProfiles(stderr io.Writer) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	if f.cpuProfile != "" {
		file, err := os.Create(f.cpuProfile)
		if err != nil {
			return nil, exitWith(ExitBadInput, fmt.Errorf("--cpuprofile %s: %w", f.cpuProfile, err))
		}
		stops = append(stops, func() { file.Close() })
		if err := pprof.StartCPUProfile(file); err != nil {
			stop()
			return nil, exitWith(ExitInfra, err)
		}
		stops = append(stops, pprof.StopCPUProfile)
	}
	// Where the harness's goroutines wait for each other (the
	// history writer's lock, issue 27).
	if f.mutexProf != "" {
		runtime.SetMutexProfileFraction(5)
		stops = append(stops, func() { writeProfile(stderr, "mutex", f.mutexProf) })
	}
	if f.blockProf != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		stops = append(stops, func() { writeProfile(stderr, "block", f.blockProf) })
	}
	return stop, nil
}

// write prints the bench (markdown or gobench lines) and writes it into
// its directory.
func (f *benchFlags) write(stdout, stderr io.Writer, b *campaign.Bench) {
	out := f.o.Out
	md := report.BenchMarkdown(b)
	var gb strings.Builder
	_ = report.WriteGoBench(&gb, b)
	msg := stdout
	if f.format == "gobench" {
		// stdout is the benchmark file (> new.txt); the rest is on stderr.
		fmt.Fprint(stdout, gb.String())
		msg = stderr
	} else {
		fmt.Fprint(stdout, md)
	}
	_ = os.WriteFile(filepath.Join(out, "bench.md"), []byte(md), 0o644)
	_ = os.WriteFile(filepath.Join(out, "gobench.txt"), []byte(gb.String()), 0o644)
	_ = metrics.WriteJSON(filepath.Join(out, "bench.json"), b)
	// One lock: the run directory is the bench directory too.
	if len(b.Locks) == 1 {
		_ = copyFile(filepath.Join(b.Locks[0].Dir, "results.json"), filepath.Join(out, "results.json"))
	}
	fmt.Fprintf(msg, "\nbench written to %s\n", out)
}

// writeProfile writes the named runtime profile (mutex, block) to path.
func writeProfile(stderr io.Writer, name, path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "--%sprofile: %v\n", name, err)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
