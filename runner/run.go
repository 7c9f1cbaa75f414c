package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// run is one run's state: its options resolved once (the lock looked up,
// its defaults applied, the worker's share, the key prefix, the directory),
// then what each step of Run starts, and the clean-ups that undo them.
type run struct {
	o        Options
	s        *scenarios.Scenario // as judged on the backend, once it is known
	info     lockimpl.Info
	lockOpts lockimpl.Options // s.Lock with its defaults
	wk       *Worker
	runID    string
	prefix   keyspace.Prefix
	pt       *metrics.PhaseTimer
	guard    *limitGuard
	notes    []string
	undo     []func() // run in reverse when Run returns

	cl          *cluster.Cluster
	stopCluster func()
	hw          *history.Writer
	live        *checker.LiveChecker
	rec         *history.Recorder
	sched       []faults.Scheduled // this process's share of the schedule
	clientIDs   []int              // a worker's clients (nil: all)
	startNS     int64
	recordCmds  bool
	notify      cluster.Notify
	recStatus   cluster.RecordStatus
	stopObs     func() error
	stopRecord  func()
	w           *workloads.Workload
	fr          *faults.Runner
	admin       *redis.Client // a worker's barrier connection
	wi          WorkerInfo

	interrupted bool   // ctx ended the run early
	stoppedBy   string // a limit stopped it
}

// resolve checks the options and fills in their defaults, before anything
// starts.
func resolve(o Options) (*run, error) {
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
	if err := blockLoopLock(o.Lock, s); err != nil {
		return nil, err
	}
	if err := sharedProcessFaults(o.Lock, s); err != nil {
		return nil, err
	}
	if o.History != "" && o.History != HistoryCompact && o.History != HistoryJSONL {
		return nil, badField("history", "%q is not %s or %s", o.History, HistoryCompact, HistoryJSONL)
	}
	if err := cluster.CheckBackend(o.Backend); err != nil {
		return nil, badField("backend", "%w", err)
	}
	r := &run{o: o, s: s, info: info, lockOpts: s.Lock.WithDefaults(), wk: o.Worker, runID: keyspace.NewRunID(),
		pt: metrics.NewPhaseTimer(), stopCluster: func() {}, stopObs: func() error { return nil }, stopRecord: func() {}}
	if r.wk != nil {
		if err := r.wk.Check(s.Workload.Clients, o); err != nil {
			return nil, err
		}
		r.runID = r.wk.RunID
	}
	r.prefix = keyspace.Default(r.runID)
	if o.KeyPrefix != "" {
		if err := keyspace.Check(o.KeyPrefix); err != nil {
			return nil, badField("key-prefix", "%w", err)
		}
		r.prefix = keyspace.Prefix(o.KeyPrefix)
	}
	if r.o.Out == "" {
		r.o.Out = DefaultOut(s.Name, o.Lock)
	}
	r.guard = &limitGuard{l: o.Limits, dir: r.o.Out, free: diskFree}
	return r, nil
}

// atExit adds a clean-up that runs when Run returns, before the ones added
// earlier.
func (r *run) atExit(f func()) { r.undo = append(r.undo, f) }

func (r *run) undoAll() {
	for _, f := range slices.Backward(r.undo) {
		f()
	}
}

// coordinator: the process that observes, records commands and cleans up
// (the only one, or worker 0).
func (r *run) coordinator() bool { return r.wk == nil || r.wk.Index == 0 }

// prepare makes the run directory, with the scenario in it.
func (r *run) prepare(context.Context) error {
	if err := PrepareDir(r.o.Out); err != nil {
		return badField("out", "%s: %w", r.o.Out, err)
	}
	r.atExit(redisLogs.attach(r.o.Out)) // go-redis's own lines go to the run directory
	if err := r.guard.preflight(); err != nil {
		return &Error{Class: Infra, Field: "min-free-disk", Err: err}
	}
	return r.saveScenario()
}

func (r *run) saveScenario() error {
	if err := saveScenario(filepath.Join(r.o.Out, "scenario.yaml"), r.s); err != nil {
		return fail(Infra, "%w", err)
	}
	return nil
}

// startCluster starts the topology (or takes Options.Cluster) and judges
// the scenario as it says for the backend that runs.
func (r *run) startCluster(ctx context.Context) error {
	r.cl = r.o.Cluster
	if r.cl == nil {
		var err error
		if r.cl, err = cluster.Start(ctx, r.clusterSpec()); err != nil {
			return &Error{Class: ClassOf(err), Err: fmt.Errorf("start %s topology: %w", r.s.Topology, err)}
		}
		r.stopCluster = func() { _ = r.cl.Stop() }
	}
	r.atExit(func() { r.stopCluster() })
	r.pt.Mark("start")
	if err := Preflight(ctx, r.cl, r.prefix); err != nil {
		return err
	}
	// Judged as the scenario says for this backend (its backends entry).
	if b := r.s.ForBackend(r.cl.Backend); b != r.s {
		r.s = b
		return r.saveScenario()
	}
	return nil
}

func (r *run) clusterSpec() cluster.Spec {
	s, o := r.s, r.o
	needs := faults.NeedsOf(s.Faults)
	spec := cluster.Spec{Topology: s.Topology, Backend: o.Backend, Nodes: s.Nodes, RedisServer: o.RedisServer,
		RedisSentinel: o.RedisSentinel, Image: o.Image, Addrs: o.Addrs, AllowRemote: o.AllowRemote,
		Dir: o.Out, AOF: s.AOF, Proxy: s.Proxy || needs.Proxy, RealClock: needs.RealClock,
		HotKey: r.prefix.Key(workloads.KeyName(0))}
	if s.Topology == cluster.Single {
		spec.Nodes = 1
	}
	if needs.Links || driverCut(o.Lock, s) {
		spec.Links = s.Workload.Clients
	}
	return spec
}

// openHistory creates the history file with its taps (the live check,
// Options.Tap) and the recorder, and resolves this process's share of the
// fault schedule.
func (r *run) openHistory(context.Context) error {
	if !r.o.NoHistory {
		path := filepath.Join(r.o.Out, history.CompactFile)
		if r.o.History == HistoryJSONL {
			path = filepath.Join(r.o.Out, history.JSONLFile)
		}
		var err error
		if r.hw, err = history.Create(path); err != nil {
			return fail(Infra, "%w", err)
		}
		r.atExit(func() { r.hw.Close() })
		r.tap()
	}
	r.rec = history.NewRecorder(r.hw)
	r.sched = faults.Resolve(r.s.Faults, r.s.Seed, r.s.Duration)
	r.startNS = r.rec.Start().UnixNano()
	if wk := r.wk; wk != nil {
		r.startNS = r.rec.Start().Add(wk.ClockOffset).UnixNano() // the worker's own wall clock
		// Each worker fires its own share of the schedule (Worker.owns).
		r.sched = slices.DeleteFunc(slices.Clone(r.sched), func(f faults.Scheduled) bool { return !wk.owns(f) })
		r.clientIDs = wk.ids(r.s.Workload.Clients)
	}
	return nil
}

// tap sends every event the history records to the live checker and to
// Options.Tap.
func (r *run) tap() {
	hw := r.hw
	if r.o.Live {
		r.live = checker.StartLive(checker.Options{})
		hw.Tap(r.live.Add)
		r.atExit(func() { hw.Tap(nil); r.live.Stop() }) // every way out, Finish or not
	}
	if r.o.Tap != nil {
		tap := r.o.Tap
		if r.live != nil {
			tap = func(e *history.Event) { r.live.Add(e); r.o.Tap(e) }
		}
		hw.Tap(tap)
		r.atExit(func() { hw.Tap(nil) }) // runs before the live checker's Stop
	}
}

// startRecording records the run event and starts the server-side record:
// the keyspace observer and the command record (the coordinator's).
func (r *run) startRecording(ctx context.Context) error {
	o := r.o
	r.recordCmds = !o.NoCommandRecord && !o.NoHistory && r.coordinator()
	r.rec.Record(&history.Event{T: 0, Client: -1, Op: history.OpRun, Meta: r.runMeta(ctx)})
	r.note(r.cl.ImageWhy, "docker image: ")
	r.note(r.cl.Why, "")
	r.note(r.cl.ClockWhy, "")
	r.note(r.s.BackendNote, "")
	if !o.NoObserver && r.coordinator() {
		var err error
		if r.stopObs, r.notify, err = observe(ctx, r.cl, r.rec, r.prefix); err != nil {
			r.notes = append(r.notes, "observer not running: "+err.Error())
		}
		r.note(r.notify.Note, "")
	}
	// Every exit path sets the servers' configuration back (stop is
	// idempotent), a failed or interrupted run's too.
	r.atExit(func() { _ = r.stopObs() })
	r.recStatus = cluster.RecordStatus{Mode: cluster.RecordOff}
	if r.recordCmds {
		r.stopRecord, r.recStatus = recordCommands(ctx, r.cl, r.rec, r.prefix, r.runID)
		r.note(r.recStatus.Note, "")
	}
	r.atExit(func() { r.stopRecord() })
	return nil
}

// note adds a note unless it is empty.
func (r *run) note(n, prefix string) {
	if n != "" {
		r.notes = append(r.notes, prefix+n)
	}
}

// runMeta is the run event's: what the checker and the report need to know
// of the run.
func (r *run) runMeta(ctx context.Context) map[string]any {
	s, cl := r.s, r.cl
	scheduled := make([]map[string]any, len(r.sched))
	for i, f := range r.sched {
		scheduled[i] = map[string]any{"id": f.ID, "kind": f.Spec.Kind, "at_ms": history.MS(int64(f.At))}
	}
	meta := map[string]any{
		history.MetaScenario: s.Name, history.MetaLock: r.o.Lock, history.MetaBackend: cl.Backend,
		history.MetaTopology: s.Topology, history.MetaSeed: s.Seed, history.MetaTTLms: history.MS(int64(r.lockOpts.TTL)),
		history.MetaResource: s.Workload.Resource, history.MetaStock: s.Workload.Stock,
		history.MetaClients: s.Workload.Clients, history.MetaKeys: s.Workload.Keys,
		history.MetaFenced: r.info.Fenced && s.Workload.Resource == "register", history.MetaHonours: *s.Workload.HonourLost,
		history.MetaStartNS: r.startNS, "nodes": len(cl.Nodes), "duration_ms": s.Duration.Milliseconds(),
		"recovery_ms": s.Recovery.Milliseconds(), history.MetaRunID: r.runID, history.MetaKeyPrefix: string(r.prefix),
		history.MetaFaultsScheduled: scheduled, history.MetaServer: cl.ServerVersion(ctx), history.MetaImage: cl.Image(),
		history.MetaCommandRecord: cluster.RecordOff,
	}
	if r.recordCmds {
		meta[history.MetaCommandRecord] = cluster.RecordMonitor
	}
	if wk := r.wk; wk != nil {
		meta[history.MetaWorker] = map[string]any{"index": wk.Index, "count": wk.Count, "clients": r.clientIDs}
	}
	return meta
}

// startWorkload builds the clients and the fault runner, writes the
// schedule, and has a worker join the others at the barrier.
func (r *run) startWorkload(ctx context.Context) error {
	s := r.s
	// No client histograms (workloads.Options.Histograms): a run's
	// latencies come from its history (report/metrics), and nothing read
	// the clients' ones, which cost three HdrHistogram records a cycle
	// (0.9 µs of a bench cycle's CPU: each client's counts, 130 kB a
	// histogram, are out of cache by its next cycle; issue 27).
	clocks := driverClocks(r.o.Lock, s, r.o.Out)
	if p, ok := lockimpl.ProcessNeedsOf(r.o.Lock); ok && len(clocks) > 0 {
		if lib, err := p.ClockPreload(); err != nil {
			r.notes = append(r.notes, "client clock faults do not reach the driver processes: "+err.Error())
		} else {
			r.notes = append(r.notes, fmt.Sprintf("the driver processes of %d client(s) start under libfaketime (%s): the client clock faults set their clocks too, measured inside each", len(clocks), lib))
		}
	}
	w, err := workloads.New(workloads.Options{Config: s.Workload, Lock: r.o.Lock, LockOptions: s.Lock, Cluster: r.cl,
		Rec: r.rec, Seed: s.Seed, Conn: r.o.Conn, KeyPrefix: r.prefix, ClientIDs: r.clientIDs, RunID: r.runID, ClockFiles: clocks})
	if err != nil {
		// A lock that could not reach the servers is the machine's failure;
		// any other is what the run asked for (an option, a lock's name).
		class := BadInput
		if errors.Is(err, lockimpl.ErrUnavailable) {
			class = Infra
		}
		return fail(class, "workload: %w", err)
	}
	r.w = w
	r.atExit(func() { w.Close() })
	_ = metrics.WriteJSON(filepath.Join(r.o.Out, "schedule.json"), map[string]any{"seed": s.Seed, "faults": r.sched})
	r.fr = faults.NewRunner(&faults.Env{Cluster: r.cl, Clients: w, Rand: faults.NewRand(s.Seed), TTL: r.lockOpts.TTL, Now: r.rec.Now,
		Record: r.rec.Record, KeyPattern: r.prefix.Pattern()})
	wk := r.wk
	if wk == nil {
		return nil
	}
	r.admin = r.cl.AdminClient(r.cl.Nodes[0])
	r.wi = WorkerInfo{RunID: wk.RunID, Index: wk.Index, Count: wk.Count, Clients: r.clientIDs, Scenario: s.Name, Lock: r.o.Lock,
		Seed: s.Seed, StartUnixNS: r.startNS}
	r.wi.ServerStartNS, r.wi.Start, err = wk.join(ctx, r.admin, r.rec.Now)
	return err
}

// stop ends what the run started, the servers last, and closes the
// history: nothing is left running before the (possibly slow) analysis.
func (r *run) stop(ctx context.Context) error {
	if r.wk != nil {
		r.endWorker(ctx)
	}
	if err := r.stopObs(); err != nil {
		r.notes = append(r.notes, err.Error())
	}
	r.stopRecord()
	if d := r.rec.WallDrift(); d > time.Millisecond {
		r.notes = append(r.notes, fmt.Sprintf("the host's wall clock moved up to %v from its monotonic clock during the run (NTP, or a resumed virtual machine): the servers' stamps were mapped to the run clock as each was read", d.Round(10*time.Microsecond)))
	}
	// The observer is stopped first: the clean-up's dels are no lock's.
	// Of workers, the coordinator alone cleans up, once all are done.
	if r.coordinator() {
		r.notes = append(r.notes, CleanUp(ctx, r.cl, r.prefix, r.o.Cluster != nil)...)
	}
	r.stopCluster()
	if r.hw != nil {
		if err := r.hw.Close(); err != nil {
			return fail(Infra, "history: %w", err)
		}
	}
	r.pt.Mark("stop")
	return nil
}

// endWorker measures a worker's clock again, waits at the done barrier and
// writes worker.json.
func (r *run) endWorker(ctx context.Context) {
	wk := r.wk
	var err error
	if r.wi.End, err = wk.measureClock(context.WithoutCancel(ctx), r.admin, r.rec.Now); err != nil {
		r.notes = append(r.notes, "worker clock at the end: "+err.Error()+"; the start's offset stands for the whole run")
		r.wi.End = r.wi.Start
	}
	r.note(wk.done(ctx, r.admin), "")
	r.notes = append(r.notes, fmt.Sprintf("worker %d of %d of run %s: this history holds clients %v only; lockchaos merge joins the workers' directories into the whole run",
		wk.Index, wk.Count, wk.RunID, r.clientIDs))
	if err := writeWorkerInfo(r.o.Out, r.wi); err != nil {
		r.notes = append(r.notes, "worker.json: "+err.Error())
	}
}

// evaluate checks the history and renders the report (Evaluate).
func (r *run) evaluate() (*Outcome, error) {
	var checked *checker.Result
	if r.live != nil {
		var why string
		if checked, why = r.live.Finish(); checked == nil {
			r.notes = append(r.notes, "the live check gave way to checking the history file: "+why)
		}
	}
	r.notes = append(r.notes, r.w.Notes()...)
	switch {
	case r.stoppedBy != "":
		r.notes = append(r.notes, "stopped early: "+r.stoppedBy+"; the verdict covers what ran, and is unknown where that found nothing")
	case r.interrupted:
		r.notes = append(r.notes, "interrupted: the run was stopped early; the verdict covers what ran")
	}
	out := &Outcome{Dir: r.o.Out, Workload: r.w, Interrupted: r.interrupted}
	if r.o.NoHistory {
		return out, nil
	}
	var pipe *metrics.Latency
	if h := r.w.PipeCost(); h != nil {
		l := metrics.Summarize(h)
		pipe = &l
	}
	res, class, err := Evaluate(r.o.Out, r.s, r.o.Lock, EvalOptions{Expect: r.o.Expect, Thresholds: r.o.Thresholds, Notes: r.notes, Pipe: pipe,
		LockConfig: r.w.LockConfig(), Backend: r.cl.Backend, Interrupted: r.interrupted, StoppedBy: r.stoppedBy,
		Notifications: r.notify.Mode, CommandRecord: r.recStatus.Mode, NoPlots: r.o.NoPlots, Checked: checked, Phases: r.pt})
	out.Results, out.Class = res, class
	if err != nil {
		return out, err
	}
	if r.interrupted && r.stoppedBy == "" {
		return out, &Error{Class: class, Err: context.Canceled}
	}
	return out, nil
}

// driverCut says whether a driver lock (a lock in a process of its own)
// meets a client cut or stall in s: the client then needs links, which
// the cut and the stall fault too (workloads.Workload.Cut), since the
// driver's own commands (renewals) do not pass the client's gate.
func driverCut(lock string, s *scenarios.Scenario) bool {
	if p, ok := lockimpl.ProcessNeedsOf(lock); !ok || !p.OwnTraffic() {
		return false
	}
	return slices.ContainsFunc(s.Faults, func(f faults.Spec) bool {
		return f.Kind == history.FaultCutClient || f.Kind == history.FaultStallCommands
	})
}

// driverClocks are the timestamp files of the clients whose driver process
// runs under libfaketime: a driver lock's clients that a clock-skew fault
// of s may hit (client:N, else all of them), in <out>/clients/cN.faketime.
// Other runs start no driver under it.
func driverClocks(lock string, s *scenarios.Scenario, out string) map[int]string {
	if _, ok := lockimpl.ProcessNeedsOf(lock); !ok {
		return nil
	}
	m := map[int]string{}
	file := func(c int) string { return filepath.Join(out, "clients", fmt.Sprintf("c%d.faketime", c)) }
	for _, f := range s.Faults {
		if f.Kind != history.FaultClockSkew {
			continue
		}
		if n, ok := strings.CutPrefix(f.Target, "client:"); ok {
			if c, err := strconv.Atoi(n); err == nil {
				m[c] = file(c)
				continue
			}
		}
		for c := 0; c < s.Workload.Clients; c++ {
			m[c] = file(c)
		}
	}
	return m
}

// sharedProcessFaults refuses a fault on a client's process when a driver
// lock's clients share processes (lock option tasks above 1): it would hit
// every client in the process, which a fault's record (one client) cannot
// say yet. A cancel and a throw act on one client's call and stay.
func sharedProcessFaults(lock string, s *scenarios.Scenario) error {
	p, ok := lockimpl.ProcessNeedsOf(lock)
	if !ok {
		if v, set := s.Lock.Extra[driver.TasksOption]; set {
			return badField("lock", "option %s=%s: %s runs in lockchaos's process; only a driver lock's clients can share a process", driver.TasksOption, v, lock)
		}
		return nil
	}
	tasks, err := p.TasksPerProcess(s.Lock.Extra)
	if err != nil {
		return badField("lock", "%w", err)
	}
	if tasks < 2 {
		return nil
	}
	if err := p.Extension("tasks"); err != nil {
		return badField("lock", "option %s=%d: %s runs one client a process: %v", driver.TasksOption, tasks, lock, err)
	}
	for i, f := range s.Faults {
		if slices.Contains(history.ClientProcessKinds, f.Kind) {
			return badField("lock", "option %s=%d: clients share driver processes, and %s (scenario %s, faults[%d]) acts on a client's process or its links, which would hit every client in it: not supported yet",
				driver.TasksOption, tasks, f.Kind, s.Name, i)
		}
	}
	return nil
}

// blockLoopLock refuses a pause-client of mode block-loop for a lock that
// cannot block an event loop: only a driver lock whose lock file declares
// the block_loop extension can. A driver known by its hello only (exec:)
// is left to the fault, which records it as not taken effect.
func blockLoopLock(lock string, s *scenarios.Scenario) error {
	for i, f := range s.Faults {
		if f.Kind != history.FaultPauseClient || f.Params[history.ParamMode] != faults.PauseBlockLoop {
			continue
		}
		p, ok := lockimpl.ProcessNeedsOf(lock)
		if !ok {
			return badField("lock", "%s has no event loop to block (scenario %s, faults[%d]: pause-client mode %s): only a driver lock that declares the block_loop extension (the Node drivers)", lock, s.Name, i, faults.PauseBlockLoop)
		}
		if err := p.BlockLoop(); err != nil {
			return badField("lock", "%s cannot block its event loop (scenario %s, faults[%d]: pause-client mode %s): %v", lock, s.Name, i, faults.PauseBlockLoop, err)
		}
	}
	return nil
}
