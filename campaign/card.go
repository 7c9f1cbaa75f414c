package campaign

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/explore"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/yardstick"
)

// CardOptions make a report card: the locks side by side over the
// scenarios (over seeds), their margins and their bench.
type CardOptions struct {
	Locks     []string
	Scenarios []*scenarios.Scenario // default: the whole catalog
	Seeds     []uint64              // default: 1
	Setup     runner.Setup
	// Cache holds every run the card makes, each in a directory named by
	// the hash of its inputs; a later card with the same inputs reuses it.
	Cache string
	// Budget bounds the whole card (0: none): what it leaves out is listed
	// as not run.
	Budget time.Duration
	// Parallel is the most runs at once (0: automatic, as the matrix).
	Parallel int
	// Margin, when not empty, bisects the margin templates whose name
	// contains it ("all": every template) per lock; MarginSeeds runs per
	// step (default 1).
	Margin      string
	MarginSeeds int
	// Bench runs each lock's bench for BenchDuration (0: no bench) with
	// BenchClients clients (default 4), beside the yardsticks.
	BenchDuration time.Duration
	BenchClients  int
	// Explore explores each lock this long (0: no exploration) against its
	// reference; its findings join the card's.
	Explore time.Duration
	// OnProgress is told what runs and the time left (one call at a time).
	OnProgress func(CardProgress)
}

// CardProgress is one step of the card.
type CardProgress struct {
	Doing  string // "run gc-pause simple seed 1", "margins redsync", "bench simple"
	Reused bool
	Done   int // steps done
	Total  int
	// Left is the estimated time left (the budget's rest when shorter).
	Left time.Duration
}

// cardStep is one unit of the card's work.
type cardStep struct {
	what string
	cost time.Duration
	hash string
	dir  string
	s    *scenarios.Scenario
	lock string
	seed uint64
	kind string // run | margins | bench | explore
	cell int
}

// RunCard runs (or reuses) everything the card needs and returns it.
func RunCard(ctx context.Context, o CardOptions) (*metrics.Card, error) {
	began := time.Now()
	if len(o.Locks) == 0 {
		return nil, badField("locks", "the card needs at least one lock")
	}
	o.defaults()
	mo := MatrixOptions{Locks: o.Locks, Scenarios: o.Scenarios, Setup: o.Setup, Parallel: o.Parallel}
	infos, err := mo.resolve()
	if err != nil {
		return nil, err
	}
	if o.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Budget)
		defer cancel()
	}
	build := BuildID()
	card := &metrics.Card{Ran: metrics.CardRan{Lockchaos: build, Backend: backendName(o.Setup), Machine: yardstick.Machine(),
		Date: began.UTC().Format(time.RFC3339), Seeds: o.Seeds, Cache: o.Cache}}
	if o.Budget > 0 {
		card.Ran.Budget = o.Budget.String()
	}
	mr := &matrixRun{o: mo, m: &Matrix{Locks: o.Locks, Seeds: o.Seeds}}
	mr.o.Seeds = o.Seeds
	steps := o.steps(mr.plan(infos), infos, build, card.Ran.Backend)
	card.Ran.Runs = len(steps)
	results := make([]any, len(steps))
	cr := &cardRun{o: o, steps: steps, results: results, began: began}
	cr.run(ctx, &mr.o)
	card.Ran.Reused = cr.reused
	mr.cardCells(card, steps, results, o.Setup.Backend)
	card.Cells = mr.m.Cells
	fillCard(card, o, mr.o.Scenarios, infos, steps, results)
	card.Ran.WallS = time.Since(began).Round(100 * time.Millisecond).Seconds()
	return card, nil
}

// defaults fills the options a card left unset.
func (o *CardOptions) defaults() {
	if len(o.Seeds) == 0 {
		o.Seeds = []uint64{1}
	}
	if o.Cache == "" {
		o.Cache = filepath.Join("runs", "card-cache")
	}
	if o.MarginSeeds <= 0 {
		o.MarginSeeds = 1
	}
	if o.BenchClients <= 0 {
		o.BenchClients = 4
	}
}

// steps plans the card's steps: the matrix's runs (jobs), then each lock's
// margins, bench and explore as the options ask; each step's directory in
// the cache is named by the hash of its inputs.
func (o CardOptions) steps(jobs []job, infos map[string]lockimpl.Info, build, backend string) []cardStep {
	var steps []cardStep
	for _, j := range jobs {
		sc := *j.s
		sc.Seed = j.seed
		h := inputHash("run", build, backend, lockInputs(j.lock, infos[j.lock]), scenarioInputs(&sc), fmt.Sprint(j.seed))
		steps = append(steps, cardStep{what: fmt.Sprintf("run %s %s seed %d", j.s.Name, j.lock, j.seed), cost: cellCost(j.s), hash: h,
			dir: filepath.Join(o.Cache, "runs", fmt.Sprintf("%s-%s-s%d-%s", j.s.Name, j.lock, j.seed, h[:12])), s: j.s, lock: j.lock, seed: j.seed, kind: "run", cell: j.i})
	}
	for _, l := range o.Locks {
		if o.Margin != "" {
			h := inputHash("margins", build, backend, lockInputs(l, infos[l]), o.Margin, fmt.Sprint(o.MarginSeeds))
			steps = append(steps, cardStep{what: "margins " + l, cost: time.Duration(marginTemplates(infos[l], o.Margin)) * 20 * time.Second * time.Duration(o.MarginSeeds),
				hash: h, dir: filepath.Join(o.Cache, "margins", l+"-"+h[:12]), lock: l, kind: "margins"})
		}
		if o.BenchDuration > 0 && NotBenched(infos[l], o.Setup.Backend) == "" {
			h := inputHash("bench", build, backend, lockInputs(l, infos[l]), o.BenchDuration.String(), fmt.Sprint(o.BenchClients))
			steps = append(steps, cardStep{what: "bench " + l, cost: o.BenchDuration + 15*time.Second, hash: h,
				dir: filepath.Join(o.Cache, "bench", l+"-"+h[:12]), lock: l, kind: "bench"})
		}
	}
	if o.Explore > 0 {
		for _, l := range o.Locks {
			if exploresItself(l, infos[l]) {
				continue // fillCard says so in the column
			}
			h := inputHash("explore", build, backend, lockInputs(l, infos[l]), o.Explore.String())
			steps = append(steps, cardStep{what: "explore " + l, cost: o.Explore + 10*time.Second, hash: h,
				dir: filepath.Join(o.Cache, "explore", l+"-"+h[:12]), lock: l, kind: "explore"})
		}
	}
	return steps
}

// cardCells judges the matrix's cells over the seeds that ran (the run
// steps'), and lists on the card the steps that did not.
func (mr *matrixRun) cardCells(card *metrics.Card, steps []cardStep, results []any, backend string) {
	// The matrix's cells over the seeds that ran.
	for k, st := range steps {
		if st.kind != "run" {
			continue
		}
		sr, ok := results[k].(SeedRun)
		if !ok {
			card.Ran.NotRun = append(card.Ran.NotRun, st.what)
			continue
		}
		mr.seedRuns = growRuns(mr.seedRuns, st.cell)
		mr.seedRuns[st.cell] = append(mr.seedRuns[st.cell], sr)
	}
	for i, c := range mr.m.Cells {
		if i < len(mr.seedRuns) && len(mr.seedRuns[i]) > 0 {
			s, _ := scenarioByName(mr.o.Scenarios, c.Scenario)
			sum := Summarize(s.Name, c.Lock, runner.ExpectationFor(s.ForBackend(backend), c.Lock), mr.seedRuns[i], true)
			mr.m.Cells[i] = Cell{Scenario: c.Scenario, Lock: c.Lock, Applicable: true, Expected: sum.Expected, Outcome: sum.Outcome,
				Verdict: sum.Majority(), Label: sum.Label(), Seeds: mr.seedRuns[i], Rates: sum.Rates}
		} else if c.Applicable {
			mr.m.Cells[i].Outcome = "not run"
		}
	}
}

func growRuns(r [][]SeedRun, i int) [][]SeedRun {
	for len(r) <= i {
		r = append(r, nil)
	}
	return r
}

func backendName(s runner.Setup) string {
	if s.Backend == "" {
		return "auto"
	}
	return s.Backend
}

// cardRun runs the card's steps, reusing saved ones.
type cardRun struct {
	o       CardOptions
	steps   []cardStep
	results []any
	began   time.Time
	mu      sync.Mutex
	tell    sync.Mutex // one OnProgress call at a time
	done    int
	reused  int
	left    time.Duration
}

func (cr *cardRun) run(ctx context.Context, mo *MatrixOptions) {
	for _, st := range cr.steps {
		cr.left += st.cost
	}
	// Saved steps first: they cost nothing, and the estimate then holds
	// only what remains.
	var todo []int
	for k, st := range cr.steps {
		if r, ok := loadStep(st); ok {
			cr.results[k] = r
			cr.finish(st, true)
			continue
		}
		todo = append(todo, k)
	}
	sched := newScheduler(mo.Parallel)
	var wg sync.WaitGroup
	for _, k := range todo {
		st := cr.steps[k]
		a := appetiteExclusive // margins and bench keep the machine to themselves
		if st.kind == "run" {
			a = cellAppetite(st.s)
		}
		sl := sched.acquire(ctx, a)
		if sl == nil {
			break
		}
		cr.progress(st.what, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sl.release()
			if r, ok := cr.runStep(ctx, mo, st, sl.clientsDone); ok {
				cr.results[k] = r
			}
			cr.finish(st, false)
		}()
	}
	wg.Wait()
}

func (cr *cardRun) finish(st cardStep, reused bool) {
	cr.mu.Lock()
	cr.done++
	cr.left -= st.cost
	if reused {
		cr.reused++
	}
	cr.mu.Unlock()
	if reused {
		cr.progress(st.what, true)
	}
}

func (cr *cardRun) progress(what string, reused bool) {
	if cr.o.OnProgress == nil {
		return
	}
	cr.mu.Lock()
	p := CardProgress{Doing: what, Reused: reused, Done: cr.done, Total: len(cr.steps), Left: max(cr.left, 0)}
	cr.mu.Unlock()
	if cr.o.Budget > 0 {
		p.Left = min(p.Left, max(cr.o.Budget-time.Since(cr.began), 0))
	}
	cr.tell.Lock()
	defer cr.tell.Unlock()
	cr.o.OnProgress(p)
}

// stepMark is the file that makes a step's directory reusable: written
// only when the step ended whole (not cut by the budget).
const stepMark = "card-step.json"

type stepFile struct {
	Hash   string          `json:"hash"`
	What   string          `json:"what"`
	Result json.RawMessage `json:"result"`
}

func loadStep(st cardStep) (any, bool) {
	b, err := os.ReadFile(filepath.Join(st.dir, stepMark))
	if err != nil {
		return nil, false
	}
	var f stepFile
	if json.Unmarshal(b, &f) != nil || f.Hash != st.hash {
		return nil, false
	}
	switch st.kind {
	case "run":
		var r SeedRun
		return r, json.Unmarshal(f.Result, &r) == nil
	case "margins":
		var r []explore.Margin
		return r, json.Unmarshal(f.Result, &r) == nil
	case "explore":
		var r explore.Report
		return &r, json.Unmarshal(f.Result, &r) == nil
	default:
		var r metrics.Bench
		return &r, json.Unmarshal(f.Result, &r) == nil
	}
}

func saveStep(st cardStep, r any) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	_ = metrics.WriteJSON(filepath.Join(st.dir, stepMark), stepFile{Hash: st.hash, What: st.what, Result: b})
}

// runStep runs one step in its (emptied) directory; ok is false when it
// did not end whole.
func (cr *cardRun) runStep(ctx context.Context, mo *MatrixOptions, st cardStep, clientsDone func()) (any, bool) {
	_ = os.RemoveAll(st.dir) // a step cut short before
	var r any
	switch st.kind {
	case "run":
		sc := *st.s
		sc.Seed = st.seed
		c := runCell(ctx, *mo, &sc, st.lock, st.dir, 0, clientsDone)
		r = SeedRun{Seed: st.seed, Dir: c.Dir, Verdict: c.Verdict, Checks: c.Checks, Outcome: c.Outcome,
			ExitCode: c.RunExit, Error: c.Reason, Attempts: 1, Phases: c.Phases}
	case "margins":
		e, err := explore.New(explore.Config{Lock: st.lock, Out: st.dir, Budget: max(time.Until(deadlineOr(ctx)), time.Second), Parallel: 1})
		if err != nil {
			return nil, false
		}
		filter := cr.o.Margin
		if filter == "all" {
			filter = ""
		}
		ms, err := e.Margins(ctx, cr.o.MarginSeeds, filter, func(m explore.Margin) { cr.progress("margins "+st.lock+": "+m.Template, false) })
		if err != nil && len(ms) == 0 {
			return nil, false
		}
		r = ms
	case "explore":
		e, err := explore.New(explore.Config{Lock: st.lock, Out: st.dir, Budget: min(cr.o.Explore, max(time.Until(deadlineOr(ctx)), time.Second)), Parallel: 1,
			Progress: func(p explore.Progress) {
				cr.progress("explore "+st.lock+": "+strings.TrimPrefix(p.String(), "explore: "), false)
			}})
		if err != nil {
			return nil, false
		}
		rep, err := e.Run(ctx)
		if err != nil || rep == nil {
			return nil, false
		}
		r = rep
	case "bench":
		b, err := RunBench(ctx, BenchOptions{Locks: []string{st.lock}, Clients: cr.o.BenchClients, Keys: 1, Duration: cr.o.BenchDuration,
			Out: st.dir, Setup: mo.Setup, Ceiling: true})
		if err != nil || len(b.Locks) == 0 {
			return nil, false
		}
		_ = metrics.WriteJSON(filepath.Join(st.dir, "bench.json"), b)
		r = b
	}
	if ctx.Err() != nil {
		return r, st.kind != "run" // a cut run is not judged; cut margins and bench are partial
	}
	saveStep(st, r)
	return r, true
}

func deadlineOr(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(24 * time.Hour)
}

// inputHash names a step by its inputs.
func inputHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// scenarioInputs is the scenario as it runs (its options included).
func scenarioInputs(s *scenarios.Scenario) string {
	b, _ := yaml.Marshal(s)
	return string(b)
}

// lockInputs is a lock's identity: its name, kind, capabilities and the
// version of the library behind it.
func lockInputs(lock string, info lockimpl.Info) string {
	lib, v := LockLibrary(lock, info)
	return fmt.Sprintf("%s|%s|%s|%s@%s", lock, info.Kind, info.Capabilities(), lib, v)
}

// LockLibrary is the library a lock is and its version as built into this
// binary: a built-in is lockchaos's own.
func LockLibrary(lock string, info lockimpl.Info) (lib, version string) {
	bi, _ := debug.ReadBuildInfo()
	return lockLibrary(lock, info, bi)
}

// driverLibrary is the library and version a driver lock's hello named, as
// its run recorded them (results.json lock_config).
func driverLibrary(cfg map[string]any) (lib, version string) {
	l, _ := cfg["library"].(string)
	v, _ := cfg["version"].(string)
	return l, v
}

// lockLibrary reads an adapter's module version (its Info.Module) from bi
// (nil, or a test binary's, which lists no modules: "(unknown)").
func lockLibrary(lock string, info lockimpl.Info, bi *debug.BuildInfo) (lib, version string) {
	if info.Module == "" {
		switch info.Kind {
		case lockimpl.Adapter:
			return lock, lockimpl.UnknownVersion
		case lockimpl.User:
			return "(named by its runs)", "" // a driver's hello: driverLibrary
		}
		return "lockchaos built-in", ""
	}
	return info.Module, lockimpl.ModuleVersionIn(bi, info.Module)
}

// scenarioFamily is a scenario's fault family ("none" without faults):
// its faults' family, where a cut of a client or a replication lag that
// only set the stage for another kind (restart-empty cuts clients before
// restarting a node; failover lags replication) gives way to the other.
func scenarioFamily(s *scenarios.Scenario) string {
	fam := "none"
	for _, f := range s.Faults {
		fm := history.FaultFamily(f.Kind)
		if fm == "" {
			continue
		}
		if fam == "none" || f.Kind != history.FaultCutClient && f.Kind != history.FaultReplicationLag {
			fam = fm
		}
		if f.Kind != history.FaultCutClient && f.Kind != history.FaultReplicationLag {
			break
		}
	}
	return fam
}

// MarkKnownFindings labels the expected failures that are a lock's own: the
// scenario expects the lock to fail a check that it expects the built-in of
// the lock's capabilities to pass (a finding the catalog asserts, such as
// rueidislock's in holder-partitioned-long), not a limit of the design that
// the reference shares.
func MarkKnownFindings(c *metrics.Card, list []*scenarios.Scenario, backend string, infos map[string]lockimpl.Info) {
	for i := range c.Findings {
		f := &c.Findings[i]
		if !f.Expected || f.Reference != "" {
			continue
		}
		s, ok := scenarioByName(list, f.Scenario)
		info, known := infos[f.Lock]
		if !ok || !known {
			continue
		}
		ref := runner.CapabilityReference(info)
		if ref == f.Lock {
			continue
		}
		sb := s.ForBackend(backend)
		lockExp, refExp := runner.ExpectationFor(sb, f.Lock), runner.ExpectationFor(sb, ref)
		refFails := func(check string) bool {
			for _, v := range []string{refExp[check], refExp["*"]} {
				if strings.HasPrefix(v, "invalid") || v == "any" {
					return true
				}
			}
			return false
		}
		for check, v := range lockExp {
			if check != "*" && strings.HasPrefix(v, "invalid") && !refFails(check) {
				f.Known = true
			}
		}
	}
}

// exploresItself: the lock is the reference of its own capabilities (a
// correct built-in), so an exploration would compare it with itself and
// could only find the machine's timing noise: the card does not run one.
func exploresItself(lock string, info lockimpl.Info) bool {
	return runner.CapabilityReference(info) == lock
}

// marginTemplates counts the margin templates filter picks for the lock.
func marginTemplates(info lockimpl.Info, filter string) int {
	n := 0
	for _, t := range explore.Templates(explore.DefaultTopology(info)) {
		if filter == "all" || strings.Contains(t.Name, filter) {
			n++
		}
	}
	return n
}

// fillCard sums the runs into the card's columns.
func fillCard(card *metrics.Card, o CardOptions, list []*scenarios.Scenario, infos map[string]lockimpl.Info, steps []cardStep, results []any) {
	fam := cardFamilies(card, list)
	cols := cardColumns(card, o, infos)
	p50s := map[string][]float64{}
	for _, c := range card.Cells {
		if len(c.Seeds) > 0 {
			tallyCell(card, cols[c.Lock], c, fam[c.Scenario], infos[c.Lock], p50s)
		}
	}
	MarkKnownFindings(card, list, o.Setup.Backend, infos)
	for l, ps := range p50s {
		cols[l].Loss.P50MS = median(ps)
	}
	for k, st := range steps {
		fillStep(card, cols[st.lock], st, results[k])
	}
	if o.Explore > 0 {
		for _, l := range o.Locks {
			if exploresItself(l, infos[l]) {
				cols[l].Explored = &metrics.CardExplore{Reference: l, Self: true}
			}
		}
	}
	// Last: a lock's verdict line names its cost, from its bench step.
	card.JudgeAgainstReferences(func(l string) string { return runner.CapabilityReference(infos[l]) })
}

// cardFamilies lists the scenarios and their fault families on the card,
// and maps each scenario to its family.
func cardFamilies(card *metrics.Card, list []*scenarios.Scenario) map[string]string {
	fam := map[string]string{}
	seen := map[string]bool{}
	for _, s := range list {
		f := scenarioFamily(s)
		fam[s.Name] = f
		card.Scenarios = append(card.Scenarios, metrics.CardScenario{Name: s.Name, Family: f})
		if !seen[f] {
			seen[f] = true
			card.Families = append(card.Families, f)
		}
	}
	return fam
}

// cardColumns adds a column per lock and maps each lock to its column.
func cardColumns(card *metrics.Card, o CardOptions, infos map[string]lockimpl.Info) map[string]*metrics.CardLock {
	for _, l := range o.Locks {
		lib, v := LockLibrary(l, infos[l])
		card.Locks = append(card.Locks, metrics.CardLock{Name: l, Kind: string(infos[l].Kind), Library: lib, Version: v, Safety: map[string]metrics.FamilyRate{}})
		if o.BenchDuration > 0 {
			card.Locks[len(card.Locks)-1].NotBenched = NotBenched(infos[l], o.Setup.Backend)
		}
	}
	cols := map[string]*metrics.CardLock{}
	for i := range card.Locks {
		cols[card.Locks[i].Name] = &card.Locks[i]
	}
	return cols
}

// tallyCell adds one cell's seeds to its lock's column (of family fam):
// the family's rates, its loss detection (the p50s gathered to take their
// median), and a finding when a seed was invalid.
func tallyCell(card *metrics.Card, col *metrics.CardLock, c metrics.Cell, fam string, info lockimpl.Info, p50s map[string][]float64) {
	fr := col.Safety[fam]
	var f *metrics.CardFinding
	for _, r := range c.Seeds {
		fr.Count(r.Verdict)
		if r.Outcome != "as-expected" {
			fr.Unexpected++
		}
		res, err := metrics.ReadResults(filepath.Join(r.Dir, "results.json"))
		if err != nil {
			continue
		}
		if card.Ran.Redis == "" {
			card.Ran.Redis = res.Server
		}
		if lib, v := driverLibrary(res.LockConfig); lib != "" && info.Kind == lockimpl.User {
			col.Library, col.Version = lib, v // a driver names its library in its hello
		}
		if ld := res.LossDetection; ld != nil && ld.Losses > 0 {
			if col.Loss == nil {
				col.Loss = &metrics.CardLoss{}
			}
			col.Loss.Runs++
			col.Loss.Losses += ld.Losses
			col.Loss.Never += ld.Released + ld.Unbounded
			col.Loss.P99MS = max(col.Loss.P99MS, ld.P99MS)
			col.Loss.MaxMS = max(col.Loss.MaxMS, ld.MaxMS)
			p50s[c.Lock] = append(p50s[c.Lock], ld.P50MS)
		}
		if r.Verdict == "invalid" {
			if f == nil {
				f = &metrics.CardFinding{Lock: c.Lock, Scenario: c.Scenario, Family: fam, Dir: r.Dir,
					Expected: true,
					Replay:   fmt.Sprintf("lockchaos run %s --lock %s --seed %d --backend %s", c.Scenario, c.Lock, r.Seed, card.Ran.Backend)}
			}
			f.Invalid++
			// Expected: every failing seed came out as the scenario
			// says the lock must.
			f.Expected = f.Expected && r.Outcome == "as-expected"
			for _, v := range res.Violations {
				if v.Cause != "" && !contains(f.Causes, v.Cause) {
					f.Causes = append(f.Causes, v.Cause)
				}
			}
		}
	}
	col.Safety[fam] = fr
	if f != nil {
		f.Runs = len(c.Seeds)
		sort.Strings(f.Causes)
		card.Findings = append(card.Findings, *f)
	}
}

// fillStep adds a margins, explore or bench step's result to its lock's
// column (an explore's findings to the card's).
func fillStep(card *metrics.Card, col *metrics.CardLock, st cardStep, result any) {
	switch r := result.(type) {
	case []explore.Margin:
		for _, m := range r {
			col.Margins = append(col.Margins, metrics.CardMargin{Template: m.Template, Family: m.Family, Unit: m.Unit,
				At: m.Lock, Lo: m.Range[0], Hi: m.Range[1], Falling: m.Falling, Checks: m.LockChecks})
		}
	case *explore.Report:
		col.Explored = &metrics.CardExplore{Budget: r.Budget.String(), Schedules: r.Schedules, Findings: len(r.Findings),
			Limits: len(r.Limits), Dir: st.dir, Reference: r.Reference}
		for _, f := range r.Findings {
			fam := "none"
			if len(f.Minimal.Faults) > 0 {
				fam = history.FaultFamily(f.Minimal.Faults[0].Spec.Kind)
			}
			card.Findings = append(card.Findings, metrics.CardFinding{Lock: st.lock, Scenario: fmt.Sprintf("explore finding %d (%s)", f.N, f.Cause),
				Family: fam, Invalid: f.Lock.Fails, Runs: f.Lock.N, Causes: []string{f.Cause}, Dir: cmp.Or(f.RunDir, f.Dir), Replay: f.Replay, ScenarioFile: filepath.Join(f.Dir, "scenario.yaml"),
				Reference: fmt.Sprintf("%s %d/%d", r.Reference, f.Ref.Fails, f.Ref.N), Unconfirmed: !f.Confirmed})
		}
	case *metrics.Bench:
		if len(r.Locks) > 0 {
			col.Bench = &metrics.CardBench{Lock: r.Locks[0], CeilingCS: r.CeilingCS, GoRedisCS: r.GoRedisCS,
				Duration: r.Duration, Clients: r.Clients, Dir: st.dir}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
