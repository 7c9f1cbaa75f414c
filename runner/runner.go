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
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report"
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
	Results *report.Results
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
	pt := report.NewPhaseTimer()
	s := o.Scenario
	if s == nil {
		return nil, fail(BadInput, "no scenario")
	}
	// Again here, for scenarios built in code or changed after Parse: a
	// fault that cannot take effect is refused before anything starts.
	if err := s.Validate(); err != nil {
		return nil, fail(BadInput, "scenario %s: %w", s.Name, err)
	}
	info, _, err := lockimpl.Lookup(o.Lock)
	if err != nil {
		return nil, badField("lock", "%w", err)
	}
	if info.NoCluster != "" && s.Topology == cluster.RedisCluster {
		return nil, badField("lock", "%s cannot run on Redis Cluster (scenario %s): %s", o.Lock, s.Name, info.NoCluster)
	}
	if o.History != "" && o.History != HistoryCompact && o.History != HistoryJSONL {
		return nil, badField("history", "%q is not %s or %s", o.History, HistoryCompact, HistoryJSONL)
	}
	if err := cluster.CheckBackend(o.Backend); err != nil {
		return nil, badField("backend", "%w", err)
	}
	runID := keyspace.NewRunID()
	wk := o.Worker
	if wk != nil {
		if err := wk.Check(s.Workload.Clients, o); err != nil {
			return nil, err
		}
		runID = wk.RunID
	}
	prefix := keyspace.Default(runID)
	if o.KeyPrefix != "" {
		if err := keyspace.Check(o.KeyPrefix); err != nil {
			return nil, badField("key-prefix", "%w", err)
		}
		prefix = keyspace.Prefix(o.KeyPrefix)
	}
	if o.Out == "" {
		o.Out = DefaultOut(s.Name, o.Lock)
	}
	if err := PrepareDir(o.Out); err != nil {
		return nil, badField("out", "%s: %w", o.Out, err)
	}
	defer redisLogs.attach(o.Out)() // go-redis's own lines go to the run directory
	guard := &limitGuard{l: o.Limits, dir: o.Out, free: diskFree}
	if err := guard.Preflight(); err != nil {
		return nil, &Error{Class: Infra, Field: "min-free-disk", Err: err}
	}
	if err := saveScenario(filepath.Join(o.Out, "scenario.yaml"), s); err != nil {
		return nil, fail(Infra, "%w", err)
	}
	lockOpts := s.Lock.WithDefaults()
	needs := faults.NeedsOf(s.Faults)
	spec := cluster.Spec{Topology: s.Topology, Backend: o.Backend, Nodes: s.Nodes, RedisServer: o.RedisServer,
		RedisSentinel: o.RedisSentinel, Image: o.Image, Addrs: o.Addrs, AllowRemote: o.AllowRemote,
		Dir: o.Out, AOF: s.AOF, Proxy: s.Proxy || needs.Proxy, RealClock: needs.RealClock,
		HotKey: prefix.Key(workloads.KeyName(0))}
	if s.Topology == cluster.Single {
		spec.Nodes = 1
	}
	if needs.Links {
		spec.Links = s.Workload.Clients
	}
	cl := o.Cluster
	stopCluster := func() {}
	if cl == nil {
		var err error
		if cl, err = cluster.Start(ctx, spec); err != nil {
			return nil, &Error{Class: ClassOf(err), Err: fmt.Errorf("start %s topology: %w", s.Topology, err)}
		}
		stopCluster = func() { _ = cl.Stop() }
	}
	defer stopCluster()
	pt.Mark("start")
	if err := Preflight(ctx, cl, prefix); err != nil {
		return nil, err
	}
	// Judged as the scenario says for this backend (its backends entry).
	if b := s.ForBackend(cl.Backend); b != s {
		s = b
		if err := saveScenario(filepath.Join(o.Out, "scenario.yaml"), s); err != nil {
			return nil, fail(Infra, "%w", err)
		}
	}

	histPath := filepath.Join(o.Out, history.CompactFile)
	if o.History == HistoryJSONL {
		histPath = filepath.Join(o.Out, history.JSONLFile)
	}
	var hw *history.Writer
	if !o.NoHistory {
		if hw, err = history.Create(histPath); err != nil {
			return nil, fail(Infra, "%w", err)
		}
		defer hw.Close()
	}
	var live *checker.LiveChecker
	if o.Live && hw != nil {
		live = checker.StartLive(checker.Options{})
		hw.Tap(live.Add)
		defer func() { hw.Tap(nil); live.Stop() }() // every way out, Finish or not
	}
	if o.Tap != nil && hw != nil {
		tap := o.Tap
		if live != nil {
			tap = func(e *history.Event) { live.Add(e); o.Tap(e) }
		}
		hw.Tap(tap)
		defer hw.Tap(nil) // runs before the live checker's Stop
	}
	rec := history.NewRecorder(hw)
	honour := *s.Workload.HonourLost
	sched := faults.Resolve(s.Faults, s.Seed, s.Duration)
	var clientIDs []int
	startNS := rec.Start().UnixNano()
	if wk != nil {
		startNS = rec.Start().Add(wk.ClockOffset).UnixNano() // the worker's own wall clock
		// Each worker fires its own share of the schedule (Worker.owns).
		mine := sched[:0:0]
		for _, f := range sched {
			if wk.owns(f) {
				mine = append(mine, f)
			}
		}
		sched = mine
		clientIDs = wk.ids(s.Workload.Clients)
	}
	scheduled := make([]map[string]any, len(sched))
	for i, f := range sched {
		scheduled[i] = map[string]any{"id": f.ID, "kind": f.Spec.Kind, "at_ms": history.MS(int64(f.At))}
	}
	runMeta := map[string]any{
		history.MetaScenario: s.Name, history.MetaLock: o.Lock, history.MetaBackend: cl.Backend,
		history.MetaTopology: s.Topology, history.MetaSeed: s.Seed, history.MetaTTLms: history.MS(int64(lockOpts.TTL)),
		history.MetaResource: s.Workload.Resource, history.MetaStock: s.Workload.Stock,
		history.MetaClients: s.Workload.Clients, history.MetaKeys: s.Workload.Keys,
		history.MetaFenced: info.Fenced && s.Workload.Resource == "register", history.MetaHonours: honour,
		history.MetaStartNS: startNS, "nodes": len(cl.Nodes), "duration_ms": s.Duration.Milliseconds(),
		"recovery_ms": s.Recovery.Milliseconds(), history.MetaRunID: runID, history.MetaKeyPrefix: string(prefix),
		history.MetaFaultsScheduled: scheduled, history.MetaServer: cl.ServerVersion(ctx), history.MetaImage: cl.Image(),
	}
	recordCmds := !o.NoCommandRecord && !o.NoHistory && (wk == nil || wk.Index == 0)
	runMeta[history.MetaCommandRecord] = cluster.RecordOff
	if recordCmds {
		runMeta[history.MetaCommandRecord] = cluster.RecordMonitor
	}
	if wk != nil {
		runMeta[history.MetaWorker] = map[string]any{"index": wk.Index, "count": wk.Count, "clients": clientIDs}
	}
	rec.Record(&history.Event{T: 0, Client: -1, Op: history.OpRun, Meta: runMeta})
	var notes []string
	if cl.ImageWhy != "" {
		notes = append(notes, "docker image: "+cl.ImageWhy)
	}
	if cl.Why != "" {
		notes = append(notes, cl.Why)
	}
	if cl.ClockWhy != "" {
		notes = append(notes, cl.ClockWhy)
	}
	if s.BackendNote != "" {
		notes = append(notes, s.BackendNote)
	}

	stopObserver := func() error { return nil }
	var notify cluster.Notify
	if !o.NoObserver && (wk == nil || wk.Index == 0) {
		var oerr error
		if stopObserver, notify, oerr = observe(ctx, cl, rec, prefix); oerr != nil {
			notes = append(notes, "observer not running: "+oerr.Error())
		}
		if notify.Note != "" {
			notes = append(notes, notify.Note)
		}
	}
	// Every exit path sets the servers' configuration back (stop is
	// idempotent), a failed or interrupted run's too.
	defer func() { _ = stopObserver() }()
	stopRecord, recStatus := func() {}, cluster.RecordStatus{Mode: cluster.RecordOff}
	if recordCmds {
		stopRecord, recStatus = recordCommands(ctx, cl, rec, prefix, runID)
		if recStatus.Note != "" {
			notes = append(notes, recStatus.Note)
		}
	}
	defer stopRecord()

	w, err := workloads.New(workloads.Options{Config: s.Workload, Lock: o.Lock, LockOptions: s.Lock, Cluster: cl,
		Rec: rec, Seed: s.Seed, Histograms: true, Conn: o.Conn, KeyPrefix: prefix, ClientIDs: clientIDs, RunID: runID})
	if err != nil {
		return nil, fail(BadInput, "workload: %w", err)
	}
	defer w.Close()

	_ = report.WriteJSON(filepath.Join(o.Out, "schedule.json"), map[string]any{"seed": s.Seed, "faults": sched})
	fenv := &faults.Env{Cluster: cl, Clients: w, Rand: newRand(s.Seed), TTL: lockOpts.TTL, Now: rec.Now, Record: rec.Record,
		KeyPattern: prefix.Pattern()}
	fr := faults.NewRunner(fenv)

	var wi WorkerInfo
	var admin *redis.Client
	if wk != nil {
		admin = cl.AdminClient(cl.Nodes[0])
		wi = WorkerInfo{RunID: wk.RunID, Index: wk.Index, Count: wk.Count, Clients: clientIDs, Scenario: s.Name, Lock: o.Lock,
			Seed: s.Seed, StartUnixNS: startNS}
		if wi.ServerStartNS, wi.Start, err = wk.join(ctx, admin, rec.Now); err != nil {
			return nil, err
		}
	}
	guard.hw = hw
	gctx, stopGuard := guard.watch(ctx, 250*time.Millisecond)
	pt.Mark("ready")
	interrupted := drive(gctx, o, s, rec, w, fr, sched, live, pt)
	stoppedBy := stopGuard()
	w.Close() // no lock goroutine (renewals) writes a key after the clean-up
	if wk != nil {
		var err error
		if wi.End, err = wk.measureClock(context.WithoutCancel(ctx), admin, rec.Now); err != nil {
			notes = append(notes, "worker clock at the end: "+err.Error()+"; the start's offset stands for the whole run")
			wi.End = wi.Start
		}
		if n := wk.done(ctx, admin); n != "" {
			notes = append(notes, n)
		}
		notes = append(notes, fmt.Sprintf("worker %d of %d of run %s: this history holds clients %v only; lockchaos merge joins the workers' directories into the whole run",
			wk.Index, wk.Count, wk.RunID, clientIDs))
		if err := writeWorkerInfo(o.Out, wi); err != nil {
			notes = append(notes, "worker.json: "+err.Error())
		}
	}
	if err := stopObserver(); err != nil {
		notes = append(notes, err.Error())
	}
	stopRecord()
	// The observer is stopped first: the clean-up's dels are no lock's.
	// Of workers, the coordinator alone cleans up, once all are done.
	if wk == nil || wk.Index == 0 {
		notes = append(notes, CleanUp(ctx, cl, prefix, o.Cluster != nil)...)
	}
	stopCluster() // nothing left running before the (possibly slow) analysis
	if hw != nil {
		if err := hw.Close(); err != nil {
			return nil, fail(Infra, "history: %w", err)
		}
	}
	pt.Mark("stop")
	var checked *checker.Result
	if live != nil {
		var why string
		if checked, why = live.Finish(); checked == nil {
			notes = append(notes, "the live check gave way to checking the history file: "+why)
		}
	}
	notes = append(notes, w.Notes()...)
	switch {
	case stoppedBy != "":
		notes = append(notes, "stopped early: "+stoppedBy+"; the verdict covers what ran, and is unknown where that found nothing")
	case interrupted:
		notes = append(notes, "interrupted: the run was stopped early; the verdict covers what ran")
	}
	if o.NoHistory {
		return &Outcome{Dir: o.Out, Workload: w, Interrupted: interrupted}, nil
	}
	res, code, err := Evaluate(o.Out, s, o.Lock, EvalOptions{Expect: o.Expect, Thresholds: o.Thresholds, Notes: notes,
		LockConfig: w.LockConfig(), Backend: cl.Backend, Interrupted: interrupted, StoppedBy: stoppedBy, Notifications: notify.Mode, CommandRecord: recStatus.Mode, NoPlots: o.NoPlots,
		Checked: checked, Phases: pt})
	out := &Outcome{Dir: o.Out, Results: res, Class: code, Workload: w, Interrupted: interrupted}
	if err != nil {
		return out, err
	}
	if interrupted && stoppedBy == "" {
		return out, &Error{Class: code, Err: context.Canceled}
	}
	return out, nil
}

// drive runs the workload and faults through the phases: workload (faults
// fire), heal, recovery, stop. It reports whether ctx ended it early.
func drive(ctx context.Context, o Options, s *scenarios.Scenario, rec *history.Recorder, w *workloads.Workload, fr *faults.Runner, sched []faults.Scheduled, live *checker.LiveChecker, pt *report.PhaseTimer) bool {
	phase := func(p string) { rec.Record(&history.Event{T: rec.Now(), Client: -1, Op: history.OpPhase, Detail: p}) }
	// Hard stop for client cycles still in flight well after the end.
	wctx, cancelW := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelW()
	stop := make(chan struct{})
	done := make(chan struct{})
	phase("workload")
	start := rec.Now()
	go func() { w.Run(wctx, stop); close(done) }()
	fctx, cancelF := context.WithCancel(ctx)
	fr.Start(fctx, start, sched)

	var cur atomic.Value
	cur.Store("workload")
	total := s.Duration + s.Recovery
	stopProgress := progressLoop(o.Progress, rec, w, fr, &cur, start, total, live)
	defer stopProgress()

	interrupted := !wait(ctx, s.Duration)
	cancelF()
	pt.Mark("workload")
	phase("heal")
	cur.Store("heal")
	fr.HealAll(context.WithoutCancel(ctx))
	pt.Mark("heal")
	if !interrupted && s.Recovery > 0 {
		phase("recovery")
		cur.Store("recovery")
		interrupted = !wait(ctx, s.Recovery)
	}
	pt.Mark("recovery")
	close(stop)
	grace := 2*s.Lock.WithDefaults().AcquireTimeout + 5*time.Second
	select {
	case <-done:
	case <-time.After(grace):
		cancelW()
		<-done
	}
	phase("done")
	return interrupted
}

// wait sleeps d unless ctx ends first; it reports whether d elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func progressLoop(fn func(Progress), rec *history.Recorder, w *workloads.Workload, fr *faults.Runner, cur *atomic.Value, start int64, total time.Duration, live *checker.LiveChecker) func() {
	if fn == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastCycles, lastT int64 = 0, rec.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			now := rec.Now()
			cycles, _, _ := w.Totals()
			applied, failed := fr.Counts()
			p := Progress{Phase: cur.Load().(string), Elapsed: time.Duration(now - start), Total: total, Cycles: cycles,
				CyclesPerSec: float64(cycles-lastCycles) / (float64(now-lastT) / 1e9), Overlaps: w.Overlaps(),
				ActiveFaults: fr.Active(), FaultsFired: applied + failed}
			if live != nil {
				st := live.Status()
				p.Live = &st
			}
			fn(p)
			lastCycles, lastT = cycles, now
		}
	}()
	return func() { close(stop); <-done }
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
