package explore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Config of one exploration.
type Config struct {
	Lock string
	// LockArg is the --lock value that names Lock in another process, for
	// the replay a finding prints: a driver's exec:<command> or lock file,
	// which registers it under Lock (its hello's name); default Lock.
	LockArg string
	// Reference is the lock the finding rule compares with; default the
	// built-in correct lock of the lock's capabilities (as locktest picks
	// it: runner.CapabilityReference).
	Reference string
	// Budget bounds the whole exploration, shrinking included (hard).
	Budget time.Duration
	// Seed of the generator: the same seed draws the same schedules.
	Seed uint64
	// Topology (default: the lock's: single, independent for redlock,
	// sentinel for a lock that needs replicas) and its node count.
	Topology string
	Nodes    int
	// TTL of the lock in every schedule (default 200ms); magnitudes are
	// multiples of it.
	TTL time.Duration
	// Seeds a failing schedule is run on, lock and reference (default 3);
	// ConfirmSeeds a shrunk finding is confirmed on (default 5), in
	// batches up to MaxConfirm seeds (default 4×ConfirmSeeds) while the
	// two rates' intervals overlap (Apart).
	Seeds, ConfirmSeeds, MaxConfirm int
	// Parallel runs at once (default AutoParallel).
	Parallel int
	// Out is the output directory (findings/, findings.md, explore.json).
	Out string
	// Oracle runs schedules (default RunnerOracle).
	Oracle Oracle
	// Kinds restricts the fault kinds drawn.
	Kinds []string
	// MaxFaults per schedule (default 3).
	MaxFaults int
	// NoShrink saves findings as found.
	NoShrink bool
	// MaxFindings stops after this many (0: until the budget ends).
	MaxFindings int
	// KeepRuns keeps every run directory (default: only findings').
	KeepRuns bool
	// Progress is called after each schedule and shrink step.
	Progress func(Progress)
}

// Progress is a snapshot for the progress line.
type Progress struct {
	Tried, Untried, Limits, Findings int
	// Idle: schedules the reference passed only because it could not
	// acquire under their faults (RefIdle).
	Idle int
	// Shrinking is the finding being shrunk (0: exploring) and Step the
	// reduction under test.
	Shrinking int
	Step      string
	Left      time.Duration
	PerMinute float64
}

func (p Progress) String() string {
	idle := ""
	if p.Idle > 0 {
		idle = fmt.Sprintf(", %d reference idle", p.Idle)
	}
	s := fmt.Sprintf("explore: %d schedules (%d untried, %d limits%s), %d findings, %.1f schedules/min, %v left",
		p.Tried, p.Untried, p.Limits, idle, p.Findings, p.PerMinute, p.Left.Round(time.Second))
	if p.Shrinking > 0 {
		s += fmt.Sprintf("; shrinking finding %d: %s", p.Shrinking, p.Step)
	}
	return s
}

// Report is what an exploration found, written as explore.json.
type Report struct {
	Lock      string        `json:"lock"`
	Reference string        `json:"reference"`
	Topology  string        `json:"topology"`
	Seed      uint64        `json:"seed"`
	Budget    time.Duration `json:"budget"`
	Elapsed   time.Duration `json:"elapsed"`
	// Schedules tried, by class.
	Schedules int           `json:"schedules"`
	Classes   map[Class]int `json:"classes"`
	PerMinute float64       `json:"schedules_per_min"`
	// Runs: every run made (screening, the reference's, more seeds,
	// shrinking, confirmation), and their pace: a lock with findings
	// spends most of its budget shrinking them, so its schedules a minute
	// fall while its runs a minute do not.
	Runs          int      `json:"runs"`
	RunsPerMinute float64  `json:"runs_per_min"`
	Findings      []*Found `json:"findings"`
	// Limits are schedules the reference failed too (the design's limits).
	Limits []Limited `json:"limits,omitempty"`
	// Idle are schedules the lock failed and the reference passed only
	// because it could not acquire under their faults (class RefIdle),
	// each with its reason.
	Idle []Limited `json:"reference_idle,omitempty"`
	// Duplicates: schedules that showed an already saved finding again
	// (those of class Known among them).
	Duplicates int      `json:"duplicates"`
	Coverage   Coverage `json:"coverage"`
	// Unconfirmed: finding candidates the confirmation seeds did not bear out.
	Unconfirmed int `json:"unconfirmed"`
	// Merged: finding candidates that, shrunk and confirmed, had the same
	// check, cause and schedule shape as a saved finding, and were merged
	// into it (its Merged counts them).
	Merged  int  `json:"merged"`
	Stopped bool `json:"stopped,omitempty"`
	// RunErrors: why screening runs did not run to a verdict (class
	// Errored), the first maxRunErrors distinct reasons with their counts.
	RunErrors []RunError `json:"run_errors,omitempty"`
	// Aborted: why the exploration ended before its budget for a reason
	// of its own (the lock does not run at all), empty otherwise.
	Aborted string `json:"aborted,omitempty"`
}

// RunError is one reason screening runs failed to run, and how often.
type RunError struct {
	Error string `json:"error"`
	Class string `json:"class"`
	Count int    `json:"count"`
}

// maxRunErrors bounds Report.RunErrors (later reasons only count).
const maxRunErrors = 10

// Limited is a schedule under which the reference failed too (in
// Report.Idle: could not acquire, Reason says under which fault).
type Limited struct {
	Schedule string   `json:"schedule"`
	Checks   []string `json:"checks"`
	Reason   string   `json:"reason,omitempty"`
}

// Found is one finding.
type Found struct {
	N     int    `json:"n"`
	Check string `json:"check"`
	// Checks are every check that failed with the same cause.
	Checks   []string `json:"checks"`
	Cause    string   `json:"cause"`
	Sentence string   `json:"sentence"`
	Original Schedule `json:"original"`
	Minimal  Schedule `json:"minimal"`
	// Partial is how far shrinking got when the budget ended before its
	// confirmation (Minimal is then the schedule as found).
	Partial *Schedule `json:"partial,omitempty"`
	// Refuted are the shrunk schedules the confirmation did not hold for
	// (the shrinking judges each step on two seeds), smallest first.
	Refuted []Refutation `json:"refuted,omitempty"`
	// Repeat is the schedule saved as scenario.yaml when it is not the
	// minimal one: the minimal failed on only some confirmation seeds, and
	// its faults repeated over a longer run failed on every one.
	Repeat *Schedule `json:"repeat,omitempty"`
	// Lock and Ref are the confirmation rates of the minimal schedule.
	Lock Rate `json:"lock_rate"`
	Ref  Rate `json:"reference_rate"`
	// Confirmed over ConfirmSeeds seeds (false: the budget ended first).
	Confirmed bool `json:"confirmed"`
	// FoundAfter is the time from the start to the schedule that showed it.
	FoundAfter time.Duration `json:"found_after"`
	// ShrinkSteps tried and how many were kept.
	ShrinkSteps int    `json:"shrink_steps"`
	ShrinkKept  int    `json:"shrink_kept"`
	Dir         string `json:"dir"`
	Replay      string `json:"replay"`
	// RunDir is the confirmation run report.html links to (the lock's,
	// on a seed it failed the check), rendered with its plots, and
	// Timeline that run's timeline picture (PNG) of the check's first
	// incident; empty when there is none (unconfirmed).
	RunDir   string `json:"run_dir,omitempty"`
	Timeline string `json:"timeline,omitempty"`
	Seed     uint64 `json:"seed"`
	// Merged are the other candidates with the same check, cause and
	// shrunk schedule shape (Schedule.Shape) merged into this one: it was
	// found 1+Merged times. Written under the Explorer's saveMu.
	Merged int `json:"merged,omitempty"`
	// refAny are the checks the reference did not pass on every
	// confirmation seed (its expectation says any for them).
	refAny []string
	// whyNot is the last confirmation's reason its check was not a
	// finding (RefIdle: the reference could not acquire).
	whyNot string
}

// FindingsByConfirmation counts the findings whose confirmation held and
// those saved as found because the budget ended during their confirmation
// (candidates, inconclusive: not findings).
func (r *Report) FindingsByConfirmation() (confirmed, cut int) {
	for _, f := range r.Findings {
		if f.Confirmed {
			confirmed++
		} else {
			cut++
		}
	}
	return confirmed, cut
}

// Confirmed is the number of confirmed findings.
func (r *Report) Confirmed() int {
	n, _ := r.FindingsByConfirmation()
	return n
}

// Refutation is a shrunk schedule a confirmation refuted, with its rates.
type Refutation struct {
	Schedule string `json:"schedule"`
	Lock     Rate   `json:"lock_rate"`
	Ref      Rate   `json:"reference_rate"`
	// Reason: the reference passed idle (RefIdle), under which fault.
	Reason string `json:"reason,omitempty"`
}

// Coverage is the vocabulary the exploration touched (on runs whose faults
// took effect): kinds, kind×point (client faults, triggers), kind×direction.
type Coverage struct {
	Kinds      []string `json:"kinds"`
	KindsAll   []string `json:"kinds_applicable"`
	Points     []string `json:"points"`
	Directions []string `json:"directions"`
	Whens      []string `json:"whens"`
	Tuples     int      `json:"tuples"`
	// APIs: the schedules tried in each of a driver lock's API modes
	// ("default": the idiom its library's README shows first), absent for
	// a lock with one way in.
	APIs map[string]int `json:"apis,omitempty"`
	// Tasks: the schedules tried with each number of clients a driver
	// process ("1": a process a client), absent for a lock without the
	// tasks extension.
	Tasks map[string]int `json:"tasks,omitempty"`
}

type coverage struct {
	kinds, points, dirs, whens, tuples map[string]bool
	apis, tasks                        map[string]int
}

func newCoverage() *coverage {
	return &coverage{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]int{}, map[string]int{}}
}

func (c *coverage) add(s Schedule) {
	if s.API != "" {
		c.apis[s.API]++
	} else {
		c.apis["default"]++
	}
	c.tasks[strconv.Itoa(max(s.Tasks, 1))]++
	for _, f := range s.Faults {
		k := f.Spec.Kind
		c.kinds[k] = true
		p, d := "-", "-"
		if f.Spec.Point != "" {
			p = f.Spec.Point
			c.points[k+"@"+p] = true
		}
		if v := f.Spec.Params[history.ParamDirection]; v != "" {
			d = v
			c.dirs[k+":"+d] = true
		}
		if f.Spec.When != "" {
			c.whens[strings.Fields(f.Spec.When)[1]] = true
		}
		c.tuples[k+"|"+p+"|"+d] = true
	}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DefaultTopology is the topology a lock explores in.
func DefaultTopology(info lockimpl.Info) string {
	switch {
	case info.NeedsReplicas:
		return "sentinel"
	case info.MinNodes > 0:
		return "independent"
	}
	return "single"
}

// Explorer runs one exploration.
type Explorer struct {
	cfg      Config
	info     lockimpl.Info
	gen      Generator
	start    time.Time
	deadline time.Time
	sem      chan struct{}
	// fsem bounds the runs of findings being shrunk, confirmed and
	// amplified (findingSlots): of four slots or more the screening keeps
	// one at least (forFinding).
	fsem chan struct{}
	fwg  sync.WaitGroup // findings being processed beside the screening
	// finders bounds the schedules whose findings are processed at once
	// (findings).
	finders chan struct{}
	// screenDone is closed when the screening ended (the budget, enough
	// findings, an error): the findings still being processed then take
	// every slot.
	screenDone chan struct{}
	mu         sync.Mutex
	saveMu     sync.Mutex // one finding saved at a time (findings.md lists them all)
	rep        *Report
	cov        *coverage
	seen       map[string]bool   // causes of saved findings
	known      map[string]bool   // causes of confirmed findings
	shapes     map[string]*Found // confirmed findings by check, cause and schedule shape
	runN       int               // runs made: screening, reference, shrinking, confirmation
	prog       Progress
	// ranOK: a screening run of the lock reached its verdict; badRuns:
	// screening runs refused as bad input since the last one that did
	// (Run: a lock that never ran is not explored).
	ranOK   bool
	badRuns int
}

// New checks cfg and prepares an exploration.
func New(cfg Config) (*Explorer, error) {
	info, _, err := lockimpl.Lookup(cfg.Lock)
	if err != nil {
		return nil, err
	}
	if cfg.Reference == "" {
		cfg.Reference = runner.CapabilityReference(info)
	}
	if _, _, err := lockimpl.Lookup(cfg.Reference); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if cfg.Topology == "" {
		cfg.Topology = DefaultTopology(info)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.TTL == 0 {
		cfg.TTL = 200 * time.Millisecond
	}
	if cfg.Seeds <= 0 {
		cfg.Seeds = 3
	}
	if cfg.ConfirmSeeds <= 0 {
		cfg.ConfirmSeeds = 5
	}
	if cfg.MaxConfirm < cfg.ConfirmSeeds {
		cfg.MaxConfirm = 4 * cfg.ConfirmSeeds
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = AutoParallel(cfg.Lock)
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 10 * time.Minute
	}
	if cfg.Oracle == nil {
		cfg.Oracle = RunnerOracle{}
	}
	if cfg.Out == "" {
		cfg.Out = filepath.Join("explore", fmt.Sprintf("%s-%s", cfg.Lock, time.Now().Format("20060102-150405")))
	}
	for _, l := range []string{cfg.Lock, cfg.Reference} {
		li, _, _ := lockimpl.Lookup(l)
		if ok, why := runner.Applicable(li, &scenarios.Scenario{Topology: cfg.Topology}); !ok {
			return nil, fmt.Errorf("topology %s: %s %s", cfg.Topology, l, why)
		}
	}
	if len(Applicable(cfg.Topology)) == 0 {
		return nil, fmt.Errorf("topology %q: no fault kind applies", cfg.Topology)
	}
	for _, k := range cfg.Kinds {
		if !slices.Contains(Applicable(cfg.Topology), k) {
			return nil, fmt.Errorf("kinds: %q is not a fault kind of topology %s (%s)", k, cfg.Topology, strings.Join(Applicable(cfg.Topology), ", "))
		}
	}
	e := &Explorer{cfg: cfg, info: info, sem: make(chan struct{}, cfg.Parallel), fsem: make(chan struct{}, findingSlots(cfg.Parallel)), screenDone: make(chan struct{}), finders: make(chan struct{}, max(1, cfg.Parallel/2)), cov: newCoverage(), seen: map[string]bool{}, known: map[string]bool{}, shapes: map[string]*Found{}}
	e.gen = Generator{Seed: cfg.Seed, Topology: cfg.Topology, Nodes: cfg.Nodes, TTL: cfg.TTL, Info: info, MaxFaults: cfg.MaxFaults, Kinds: cfg.Kinds}
	e.rep = &Report{Lock: cfg.Lock, Reference: cfg.Reference, Topology: cfg.Topology, Seed: cfg.Seed, Budget: cfg.Budget,
		Classes: map[Class]int{}}
	return e, nil
}

// AutoParallel is the runs at once of an exploration of lock by default:
// two a core for a lock whose clients run in driver processes (a run
// mostly waits on them and on its scenario's timers: Redisson, 10 minutes
// at seed 1, made 90 schedules two at a time and 163 four at a time on two
// cores, the same findings and two more), two for a lock in the harness's
// process (redsync made 342 two at a time).
func AutoParallel(lock string) int {
	if _, ok := lockimpl.ProcessNeedsOf(lock); ok {
		return max(2, 2*runtime.NumCPU())
	}
	return 2
}

// Config is the exploration's configuration with its defaults filled.
func (e *Explorer) Config() Config { return e.cfg }

// findingKey marks the context of a finding's processing (forFinding).
type findingKey struct{}

// forFinding is ctx for the runs of a finding's shrinking, confirmation
// and amplification: while the screening runs they take one of fsem's
// slots before one of sem's (findingSlots: every slot but one of four or
// more), and the screening goes on beside them; once it ended, every
// slot. An exploration of redisson-lease whose workers each shrank the
// finding they had found spent half its runs shrinking and screened 11
// schedules a minute; with half the slots for findings it screened 50 a
// minute for 10 minutes but confirmed 2 of its 9 findings.
func forFinding(ctx context.Context) context.Context {
	return context.WithValue(ctx, findingKey{}, true)
}

// run runs s once, bounded by the parallelism.
func (e *Explorer) run(ctx context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	if ctx.Value(findingKey{}) != nil {
		select {
		case e.fsem <- struct{}{}:
			defer func() { <-e.fsem }()
		case <-e.screenDone:
		case <-ctx.Done():
			return RunResult{Lock: lock, Seed: seed, Err: ctx.Err()}
		}
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return RunResult{Lock: lock, Seed: seed, Err: ctx.Err()}
	}
	defer func() { <-e.sem }()
	if ctx.Err() != nil {
		// A select takes any ready case: a slot free as the exploration
		// ends does not start a run (the findings still being processed
		// then would each start theirs).
		return RunResult{Lock: lock, Seed: seed, Err: ctx.Err()}
	}
	r := e.cfg.Oracle.Run(ctx, s, lock, seed, dir)
	if ctx.Err() == nil { // one the exploration's end cut short is not counted
		e.mu.Lock()
		e.runN++
		e.mu.Unlock()
	}
	return r
}

// job is one run to make.
type job struct {
	lock string
	seed uint64
	dir  string
	ref  bool // a reference run
}

// runAll runs jobs concurrently (bounded) and returns their results in order.
func (e *Explorer) runAll(ctx context.Context, s Schedule, jobs []job) []RunResult {
	out := make([]RunResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = e.run(ctx, s, j.lock, j.seed, j.dir)
		}()
	}
	wg.Wait()
	return out
}

func (e *Explorer) dir(parts ...string) string {
	return filepath.Join(append([]string{e.cfg.Out, "runs"}, parts...)...)
}

func (e *Explorer) drop(rs ...RunResult) {
	if e.cfg.KeepRuns {
		return
	}
	for _, r := range rs {
		if r.Dir != "" {
			_ = os.RemoveAll(r.Dir)
		}
	}
}

func (e *Explorer) progress(f func(p *Progress)) {
	e.mu.Lock()
	f(&e.prog)
	e.prog.Left = max(time.Until(e.deadline), 0)
	if m := time.Since(e.start).Minutes(); m > 0 {
		e.prog.PerMinute = float64(e.prog.Tried) / m
	}
	defer e.mu.Unlock()
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.prog) // under the lock: workers report one at a time
	}
}

// begin starts the budget's clock: ctx ends with it.
func (e *Explorer) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	e.start = time.Now()
	e.deadline = e.start.Add(e.cfg.Budget)
	ctx, cancel := context.WithDeadline(ctx, e.deadline)
	if err := os.MkdirAll(e.cfg.Out, 0o755); err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, cancel, nil
}

// split sorts the results of jobs into the lock's and the reference's.
func split(jobs []job, rs []RunResult) (lockRuns, refRuns []RunResult) {
	for i, j := range jobs {
		if j.ref {
			refRuns = append(refRuns, rs[i])
		} else {
			lockRuns = append(lockRuns, rs[i])
		}
	}
	return lockRuns, refRuns
}

// Run explores until the budget ends (or ctx: Ctrl-C), shrinking and
// saving each new finding, and writes the report. What was found is kept
// when it stops early.
func (e *Explorer) Run(ctx context.Context) (*Report, error) {
	ctx, cancel, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	// Workers side by side, each screening the next schedule on the lock
	// alone: only a schedule the lock fails is run on the reference, and
	// shrunk by the worker that found it, the other going on exploring
	// (every run takes one of the Parallel slots).
	var next atomic.Int64
	var wg sync.WaitGroup
	var genErr error
	var once sync.Once
	for range e.cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && !e.enough() {
				i := int(next.Add(1))
				s, err := e.gen.Generate(i - 1)
				if err != nil {
					once.Do(func() { genErr = err })
					cancel()
					return
				}
				sr := e.run(ctx, s, e.cfg.Lock, 1, e.dir(fmt.Sprint(i), e.cfg.Lock+"-seed1"))
				if ctx.Err() != nil {
					e.drop(sr)
					return
				}
				if err := e.doesNotRun(sr); err != nil {
					// The lock cannot run at all (an option it refuses, a
					// driver that will not start as configured): every
					// schedule would fail the same way, and an exploration
					// of nothing must not end as one that found nothing.
					once.Do(func() { genErr = err })
					e.drop(sr)
					cancel()
					return
				}
				e.screened(ctx, i, s, sr)
			}
		}()
	}
	wg.Wait()
	close(e.screenDone)
	e.fwg.Wait()
	if genErr != nil {
		// What was explored before is kept: the report is written
		// whatever ended the exploration.
		e.mu.Lock()
		e.rep.Aborted = genErr.Error()
		e.mu.Unlock()
		rep, _ := e.finish()
		return rep, genErr
	}
	e.rep.Stopped = ctx.Err() != nil && time.Now().Before(e.deadline)
	return e.finish()
}

// doesNotRun says, from a screening run, whether the lock does not run at
// all: bad input (an option the lock refuses, a driver that will not start
// as configured), or a driver that cannot reach the servers (infra), on two
// screening runs before any reached its verdict. One
// such failure may be the machine's (a driver's first connection refused
// under load); once a run of the lock reached its verdict, a later one is
// that run's failure, counted as Errored (an exploration of redisson-redlock
// lost 23 schedules and 5 findings to one driver that could not connect
// after 445 s).
func (e *Explorer) doesNotRun(sr RunResult) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case sr.Err == nil:
		e.ranOK, e.badRuns = true, 0
	case !e.ranOK && (runner.ClassOf(sr.Err) == runner.BadInput || errors.Is(sr.Err, lockimpl.ErrUnavailable)):
		// A driver that cannot reach the servers (its init said
		// unavailable) on both: the machine's failure, with its class.
		if e.badRuns++; e.badRuns >= 2 {
			return &runner.Error{Class: runner.ClassOf(sr.Err), Err: fmt.Errorf("explore: lock %s does not run: %w", e.cfg.Lock, sr.Err)}
		}
	}
	return nil
}

// runError notes why a screening run did not run to its verdict.
func (e *Explorer) runError(err error) {
	msg, class := err.Error(), "infra"
	if runner.ClassOf(err) == runner.BadInput {
		class = "bad-input"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.rep.RunErrors {
		if r := &e.rep.RunErrors[i]; r.Error == msg {
			r.Count++
			return
		}
	}
	if len(e.rep.RunErrors) < maxRunErrors {
		e.rep.RunErrors = append(e.rep.RunErrors, RunError{Error: msg, Class: class, Count: 1})
	}
}

// enough: MaxFindings are saved.
func (e *Explorer) enough() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg.MaxFindings > 0 && len(e.rep.Findings) >= e.cfg.MaxFindings
}

// screened classifies schedule id from its screening run, running the
// reference (and more seeds) when the lock failed.
func (e *Explorer) screened(ctx context.Context, id int, s Schedule, sr RunResult) {
	if sr.Err != nil {
		e.drop(sr)
		e.runError(sr.Err)
		e.count(Errored)
		return
	}
	if sr.Tried {
		e.mu.Lock()
		e.cov.add(s)
		e.mu.Unlock()
	}
	if !anyInvalid(sr) {
		e.drop(sr)
		if sr.Tried {
			e.count(Passed)
		} else {
			e.count(Untried)
		}
		return
	}
	if e.knownOnly(sr) {
		// Re-running it on the reference and more seeds could only show
		// a confirmed finding again.
		e.drop(sr)
		e.mu.Lock()
		e.rep.Duplicates++
		e.mu.Unlock()
		e.count(Known)
		return
	}
	lockRuns, refRuns, ok := e.rerun(ctx, id, s, sr)
	if !ok {
		return
	}
	class, vs := Classify(lockRuns, refRuns)
	defer e.drop(append(lockRuns, refRuns...)...)
	e.count(class)
	switch class {
	case Limit, RefIdle:
		e.limit(s, class, vs)
	case Finding:
		e.findings(ctx, s, e.newCauses(vs, lockRuns), time.Since(e.start))
	}
}

// knownOnly: every check the screening run sr failed failed with the
// cause of a confirmed finding, or of one being shrunk and confirmed
// beside the screening (seen): re-running it on the reference and more
// seeds could only make it that finding's duplicate (an exploration of
// redisson-lease re-ran 32 such schedules in 5 minutes). Should that
// finding be refuted, its cause is forgotten and the next schedule that
// shows it is a candidate again.
func (e *Explorer) knownOnly(sr RunResult) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for c, v := range sr.Checks {
		if v != "invalid" {
			continue
		}
		if cause := sr.Causes[c]; cause == "" || !e.known[cause] && !e.seen[cause] {
			return false
		}
		n++
	}
	return n > 0
}

// anyInvalid: the run failed some check.
func anyInvalid(r RunResult) bool {
	for _, v := range r.Checks {
		if v == "invalid" {
			return true
		}
	}
	return false
}

// count records one more schedule of class c.
func (e *Explorer) count(c Class) {
	e.mu.Lock()
	e.rep.Schedules++
	e.rep.Classes[c]++
	e.mu.Unlock()
	e.progress(func(p *Progress) {
		p.Tried++
		switch c {
		case Untried:
			p.Untried++
		case Limit:
			p.Limits++
		case RefIdle:
			p.Idle++
		}
	})
}

// rerun runs a schedule the lock failed (screening run sr) on the
// reference on every seed and on the lock's other seeds, in two stages:
// the reference's first seed beside the lock's second, and the rest only
// when the reference did not fail every check the lock failed (then the
// schedule is a limit already). ok is false when ctx ended.
func (e *Explorer) rerun(ctx context.Context, id int, s Schedule, sr RunResult) (lockRuns, refRuns []RunResult, ok bool) {
	var jobs []job
	for seed := uint64(1); seed <= uint64(e.cfg.Seeds); seed++ {
		jobs = append(jobs, job{e.cfg.Reference, seed, e.dir(fmt.Sprint(id), fmt.Sprintf("ref-%s-seed%d", e.cfg.Reference, seed)), true})
		if seed > 1 {
			jobs = append(jobs, job{e.cfg.Lock, seed, e.dir(fmt.Sprint(id), fmt.Sprintf("%s-seed%d", e.cfg.Lock, seed)), false})
		}
	}
	first := min(2, len(jobs))
	rs := e.runAll(ctx, s, jobs[:first])
	if ctx.Err() != nil {
		return nil, nil, false
	}
	if !limitAlready(sr, rs[0]) {
		rs = append(rs, e.runAll(ctx, s, jobs[first:])...)
		if ctx.Err() != nil {
			return nil, nil, false
		}
	} else {
		jobs = jobs[:first]
	}
	lockRuns, refRuns = split(jobs, rs)
	return append([]RunResult{sr}, lockRuns...), refRuns, true
}

// limit records schedule s as a limit of the design (the checks the
// reference fails too) or, class RefIdle, as one the reference passed
// idle (the checks, with the first one's reason), up to 100 of each.
func (e *Explorer) limit(s Schedule, class Class, vs []Verdict) {
	l := Limited{Schedule: s.Describe()}
	for _, v := range vs {
		if v.Class == class {
			l.Checks = append(l.Checks, v.Check)
			if l.Reason == "" {
				l.Reason = v.Reason
			}
		}
	}
	e.mu.Lock()
	list := &e.rep.Limits
	if class == RefIdle {
		list = &e.rep.Idle
	}
	if len(*list) < 100 {
		*list = append(*list, l)
	}
	e.mu.Unlock()
}

// candidate is one new cause of a schedule the lock failed: its lead
// verdict (the first check in the checker's order), every check that
// failed with it, and the lock's seeds that failed the lead check.
type candidate struct {
	v         Verdict
	checks    []string
	failSeeds []uint64
}

// newCauses returns the schedule's findings whose causes were not seen
// before, marking them seen (a duplicate is counted): a later schedule
// failing only with them is known from then on, not re-run.
func (e *Explorer) newCauses(vs []Verdict, lockRuns []RunResult) []candidate {
	var out []candidate
	at := map[string]int{}
	for _, v := range FindingsOf(vs) {
		if i, ok := at[v.Cause]; ok {
			if i >= 0 {
				out[i].checks = append(out[i].checks, v.Check)
			}
			continue
		}
		if !e.firstOf(v.Cause) {
			at[v.Cause] = -1
			continue
		}
		c := candidate{v: v, checks: []string{v.Check}}
		for _, r := range lockRuns {
			if r.Checks[v.Check] == "invalid" {
				c.failSeeds = append(c.failSeeds, r.Seed)
			}
		}
		at[v.Cause] = len(out)
		out = append(out, c)
	}
	return out
}

// findings shrinks, confirms and saves the candidates of schedule s beside
// the screening, which the worker that found them goes on with: at most
// finders schedules' candidates at once, the others waiting their turn in
// the order they were found (each one's runs take fsem's slots: a finding
// done is worth more than several half done when the budget ends, and an
// exploration of redisson-lease that processed every finding at once
// confirmed 3 of 10 in 10 minutes). Candidates still waiting when the
// exploration ends are saved as found, their confirmation cut short.
func (e *Explorer) findings(ctx context.Context, s Schedule, cs []candidate, at time.Duration) {
	if len(cs) == 0 {
		return
	}
	e.fwg.Add(1)
	go func() {
		defer e.fwg.Done()
		select {
		case e.finders <- struct{}{}:
			defer func() { <-e.finders }()
		case <-ctx.Done():
		}
		fctx := forFinding(ctx)
		for _, c := range cs {
			e.finding(fctx, s, c.v, c.checks, c.failSeeds, at)
		}
	}()
}

// firstOf marks cause seen and reports whether it was new (a duplicate is
// counted).
func (e *Explorer) firstOf(cause string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	dup := e.seen[cause]
	e.seen[cause] = true
	if dup {
		e.rep.Duplicates++
	}
	return !dup
}

// limitAlready: the reference failed every check the lock failed in its
// screening run (more seeds cannot make any of them a finding).
func limitAlready(screen, ref RunResult) bool {
	if ref.Err != nil {
		return false
	}
	for c, v := range screen.Checks {
		if v == "invalid" && ref.Checks[c] != "invalid" {
			return false
		}
	}
	return true
}

// still is the shrinking predicate for check: the lock fails it on one of
// seeds, and the reference passes it on the seed the lock failed. The
// lock's seeds run one after the other and the step stops at the first
// that fails: most findings fail on most seeds, and such a step costs one
// run of the lock and one of the reference, not two of each side by side
// (an exploration of redisson-lease spent half its runs shrinking), the
// slots left free screening schedules meanwhile. The reference runs only
// when the lock failed, so a rejected reduction costs the lock's runs
// alone. Without the reference's runs a reduction that turns the finding
// into a limit of the design (the reference failing too, e.g. fewer
// clients under the same pause) is kept, and the confirmation refutes the
// whole shrunk schedule.
func (e *Explorer) still(n int, check string, seeds []uint64) Pred {
	step := 0
	return func(ctx context.Context, s Schedule) (bool, error) {
		step++
		for _, seed := range seeds {
			r := e.run(ctx, s, e.cfg.Lock, seed, e.dir(fmt.Sprintf("shrink-%d-%d-seed%d", n, step, seed)))
			e.drop(r)
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if r.Err != nil || r.Checks[check] != "invalid" {
				continue
			}
			if e.cfg.Reference == e.cfg.Lock {
				return true, nil
			}
			ref := e.run(ctx, s, e.cfg.Reference, seed, e.dir(fmt.Sprintf("shrink-%d-%d-ref-seed%d", n, step, seed)))
			e.drop(ref)
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if ref.Err != nil || !ref.Tried || ref.Checks[check] != "valid" {
				return false, nil
			}
			// A reduction under which the reference passes only because it
			// cannot acquire under a fault is no finding (RefIdle).
			return Idle([]RunResult{r}, []RunResult{ref}, check) == "", nil
		}
		return false, nil
	}
}

// findingSlots is how many runs at once findings may take while the
// screening runs: every slot but one of four or more; of fewer, every slot
// (the finder still beside the screening, which takes the slots findings
// leave). One slot of two for findings confirmed none of rueidislock's 3
// findings in 4 minutes, where the worker that found them had confirmed 2
// of 2.
func findingSlots(parallel int) int {
	if parallel >= 4 {
		return parallel - 1
	}
	return max(1, parallel)
}
