// Package runner runs one scenario end to end: start the topology, drive the
// workload while the fault schedule fires, heal, let the recovery window run,
// stop everything, then check the history and render the report into the run
// directory. The CLI is a thin layer over it; a user's program can call it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// Class is how a run, a check or a campaign came out, from as expected to
// an infrastructure failure: the CLI maps it onto its exit code (cli.ExitCode).
// Its value is what the run's documents record as exit_code (results.json,
// seeds.json, matrix.json), the CLI's exit code for that class.
type Class int

// Classes, in the order the CLI ranks them.
const (
	Passed   Class = iota // as expected (or, without Expect, a valid verdict)
	Violated              // a violation, or a failed threshold
	Unknown               // inconclusive
	BadInput              // an option, a scenario or a saved run is wrong
	Infra                 // the servers, the disk, the network failed
)

// Setup is what the runs of a campaign (a matrix, a bench) share: where
// Redis runs and how each run records. Options embeds it.
type Setup struct {
	// Cluster settings: backend, binaries, docker image, external addresses.
	Backend       string
	RedisServer   string
	RedisSentinel string
	Image         string
	Addrs         []string
	AllowRemote   bool
	// KeyPrefix is the prefix of every key the run creates at the server
	// (keyspace.Prefix). Default "lc:<run id>:", the run id random per run.
	KeyPrefix string
	// Limits stop the run cleanly (unknown, with the reason) before its
	// history outgrows a size or the disk runs short.
	Limits Limits
	// History is the history's form: HistoryCompact (default, history.lch)
	// or HistoryJSONL (history.jsonl).
	History string
	// Live checks the history while it is recorded (checker.LiveChecker):
	// Progress shows the verdict so far, and the check after the run costs
	// only the tail.
	Live bool
}

// Options for one run.
type Options struct {
	Setup
	Scenario *scenarios.Scenario
	Lock     string
	// Out is the run directory; it is created (and must be empty if it exists).
	Out string
	// Expect makes the exit code follow the scenario's expectation for the
	// lock (0 = as expected) instead of the verdict alone.
	Expect bool
	// Thresholds are added to the scenario's.
	Thresholds []string
	// Progress, when set, is called about once a second during the run.
	Progress func(Progress)
	// NoHistory turns history recording off (bench overhead baseline only:
	// nothing can be checked).
	NoHistory bool
	// Cluster, when set, is used instead of starting one (bench runs several
	// locks on the same servers); Run does not stop it.
	Cluster *cluster.Cluster
	// Conn tunes each client's connections (pool size, connection check);
	// the zero value is what scenario runs use.
	Conn cluster.ClientOptions
	// NoObserver skips the keyspace-notification observer (bench: it costs
	// Redis and harness CPU the lock under test does not).
	NoObserver bool
	// NoCommandRecord skips the per-node command record (MONITOR): bench
	// turns it off, since MONITOR costs the servers throughput (see
	// docs/ground-truth.md); scenario runs and matrix cells keep it.
	NoCommandRecord bool
	// NoPlots skips the report's plots (matrix cells unless MatrixOptions.Plots).
	NoPlots bool
	// Worker, when set, makes this run one worker of a run spread over
	// processes (see Worker; Merge joins their directories).
	Worker *Worker
	// ClientsDone, when set, is called once the clients stopped (the
	// workload, heal and recovery are over; stopping the servers, the check
	// and the report follow): matrix lets the next busy cell start then.
	ClientsDone func()
	// Tap, when set, sees every event as the history records it (after
	// the live checker), under the history writer's lock: it must be quick
	// and copy what it keeps (the CLI's metrics endpoint: its acquire histogram).
	Tap func(*history.Event)
}

// History forms.
const (
	HistoryCompact = "compact"
	HistoryJSONL   = "jsonl"
)

// Progress is a snapshot for progress displays.
type Progress struct {
	Phase        string
	Elapsed      time.Duration
	Total        time.Duration
	Cycles       int64
	CyclesPerSec float64
	Overlaps     int64 // holds that began while another client held the key (live estimate)
	ActiveFaults int
	FaultsFired  int
	// Live is the live check's verdict so far (nil without Options.Live).
	Live *checker.Live
}

// Outcome of a run.
type Outcome struct {
	Dir     string
	Results *metrics.Results
	// Class is how the run came out (the exit code's class).
	Class Class
	// Workload is the finished workload (its counters and histograms).
	Workload *workloads.Workload
	// Interrupted: the run was stopped before its workload phase ended.
	Interrupted bool
}

// Error wraps a failure with the class it comes out as.
// It is the one error type that carries an outcome class out of the
// runner: Class is BadInput, Infra, ..., Field the option the error is
// about (the CLI shows it as its flag), Err the cause (nil: nothing to say).
type Error struct {
	Class Class
	Field string
	Err   error
}

func (e *Error) Error() string {
	switch {
	case e.Err == nil:
		return fmt.Sprintf("exit %d", e.Class)
	case e.Field != "":
		return e.Field + ": " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func fail(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// badField is bad input about one option (named as in the CLI's flags).
func badField(field string, format string, args ...any) error {
	return &Error{Class: BadInput, Field: field, Err: fmt.Errorf(format, args...)}
}

// ClassOf is the class of an error from Run, Check or a campaign: an
// Error's own, else bad input or (every other failure) infrastructure.
func ClassOf(err error) Class {
	var re *Error
	switch {
	case err == nil:
		return Passed
	case errors.As(err, &re):
		return re.Class
	case errors.Is(err, scenarios.ErrBadInput), errors.Is(err, cluster.ErrBadSpec):
		return BadInput
	case errors.Is(err, cluster.ErrInfra):
		return Infra
	}
	return Infra
}

// DefaultOut is runs/<scenario>-<lock>-<time>.
func DefaultOut(scenario, lock string) string {
	return filepath.Join("runs", fmt.Sprintf("%s-%s-%s", scenario, lock, time.Now().Format("20060102-150405.000")))
}

// Run executes a scenario. A run that started is always checked and reported,
// even when interrupted (ctx cancelled) or when infrastructure failed midway;
// the Outcome is then returned with the error.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	r, err := resolve(o)
	if err != nil {
		return nil, err
	}
	defer r.undoAll()
	for _, step := range []func(context.Context) error{r.prepare, r.startCluster, r.openHistory, r.startRecording, r.startWorkload} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	r.drive(ctx)
	if err := r.stop(ctx); err != nil {
		return nil, err
	}
	out, err := r.evaluate()
	if berr := r.w.Broken(); berr != nil && err == nil {
		// A lock that broke (a driver process that exited or broke the
		// protocol) fails the run, its history checked for what ran.
		return out, fail(Infra, "lock %s: %w", r.o.Lock, berr)
	}
	return out, err
}

// PrepareDir makes a run directory: a new one, or an empty one (a run is
// never overwritten).
func PrepareDir(dir string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("directory exists and is not empty (a run is never overwritten)")
	}
	return os.MkdirAll(dir, 0o755)
}

func saveScenario(path string, s *scenarios.Scenario) error {
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Errorf("save scenario: %w", err)
	}
	return os.WriteFile(path, b, 0o644)
}

func itoa(i int) string { return strconv.Itoa(i) }
