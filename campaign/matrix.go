// Package campaign runs many runs, each through runner.Run: a matrix of
// locks × scenarios (packed by the scheduler, optionally one shard of it,
// shards merged back), a scenario over many seeds judged over them, and the
// bench (every lock in turn on one set of servers). It returns documents
// (report/metrics' Matrix, SeedSummary, Bench) and errors with a
// runner.Class; the CLI turns them into exit codes.
package campaign

import (
	"context"
	"fmt"
	"github.com/lockchaos/lockchaos/runner"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// MatrixOptions run locks × scenarios.
type MatrixOptions struct {
	Locks     []string              // default: every registered lock except user locks
	Scenarios []*scenarios.Scenario // default: the whole catalog
	Out       string                // each cell in Out/<scenario>/<lock>
	// Parallel is the most cells run at once: 1 runs one at a time; 0
	// (the default) is 8 a core on the process backend and 1 on the others
	// (a docker engine's container operations, a user's server, the
	// embedded server in this process are not ours to share). Beyond one, cells are packed by their CPU
	// appetite (schedule.go): cells that keep cores busy run alone, the
	// rest share 75% of the cores, none starts while the machine is busier
	// than 85%, and the long cells start first.
	Parallel int
	// Retries re-runs a cell whose outcome was not as expected up to this
	// many times. The scenarios are timing experiments on a shared machine;
	// a retried cell says so in matrix.md and keeps every attempt's run dir.
	Retries int
	// Seeds, when set, runs every cell once per seed (each in
	// <cell>/seed-N) and judges the cell over them; nil runs each scenario
	// once with its own seed, in <cell> itself.
	Seeds []uint64
	// Setup is where Redis runs and how each cell's run records (a
	// KeyPrefix gets each cell's number added).
	Setup runner.Setup
	// Plots renders every cell's plots (off by default: they were an eighth
	// of the matrix's wall time; `lockchaos report DIR` renders a cell's).
	Plots bool
	// OnCell is called as each cell finishes (for progress output).
	OnCell func(c Cell)
	// OnSeed, with Seeds, is called as each seed of a cell finishes.
	OnSeed func(c Cell, r SeedRun)
	// Shard, when set, runs only this shard's part of the applicable cells
	// (see shard.go); the others are marked OutcomeElsewhere.
	Shard *Shard
}

// RunMatrix runs every applicable cell and returns the table with its exit
// code: 1 if any cell was unexpected, else 2 if any was unknown, else 0.
func RunMatrix(ctx context.Context, o MatrixOptions) (*Matrix, error) {
	infos, err := o.resolve()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	mr := &matrixRun{o: o, m: &Matrix{Locks: o.Locks, Seeds: o.Seeds, Parallel: o.Parallel}}
	jobs := mr.plan(infos)
	if o.Shard != nil {
		jobs = mr.shard(jobs)
	}
	mr.seedRuns = make([][]SeedRun, len(mr.m.Cells))
	mr.left = make([]int, len(mr.m.Cells))
	for _, j := range jobs {
		if j.seed != 0 {
			mr.seedRuns[j.i] = make([]SeedRun, len(o.Seeds))
			mr.left[j.i] = len(o.Seeds)
		}
	}
	for jn := range jobs {
		jobs[jn].n = jn // the key prefix's number, whatever the order
	}
	if o.Parallel > 1 {
		orderJobs(jobs, func(j job) *scenarios.Scenario { return j.s })
	}
	mr.runJobs(ctx, jobs)
	mr.judgeCut()
	mr.m.ExitCode = int(matrixClass(mr.m.Cells, ctx.Err() != nil))
	mr.m.WallMS = metrics.MSOf(time.Since(began))
	return mr.m, nil
}

// resolve fills in the defaults (every lock but users', the whole catalog,
// the parallelism) and looks up every lock.
func (o *MatrixOptions) resolve() (map[string]lockimpl.Info, error) {
	if len(o.Locks) == 0 {
		for _, l := range lockimpl.List() {
			if l.Kind != lockimpl.User {
				o.Locks = append(o.Locks, l.Name)
			}
		}
	}
	if o.Setup.KeyPrefix != "" {
		// Each cell's keys go under the prefix plus the cell's number, so
		// cells run in parallel do not meet each other's keys.
		if err := keyspace.Check(o.Setup.KeyPrefix + "0000:"); err != nil {
			return nil, badField("key-prefix", "%w", err)
		}
	}
	infos := map[string]lockimpl.Info{}
	for _, l := range o.Locks {
		info, _, err := lockimpl.Lookup(l)
		if err != nil {
			return nil, badField("locks", "%w", err)
		}
		infos[l] = info
	}
	if len(o.Scenarios) == 0 {
		all, err := scenarios.All()
		if err != nil {
			return nil, fail(runner.BadInput, "%w", err)
		}
		o.Scenarios = all
	}
	if o.Parallel < 1 {
		o.Parallel = autoParallel(o.Setup)
	}
	return infos, nil
}

// job is one run of a matrix: a cell, or one seed of it.
type job struct {
	i    int
	s    *scenarios.Scenario
	lock string
	seed uint64 // 0: the scenario's own seed, no seed directory
	k    int    // index of the seed in o.Seeds
	n    int    // the job's number in catalog order
}

// matrixRun is a matrix being run: the table, and each seeded cell's runs
// so far and how many are left.
type matrixRun struct {
	o        MatrixOptions
	m        *Matrix
	mu       sync.Mutex
	seedRuns [][]SeedRun
	left     []int
}

// plan lays out the table's cells and the jobs of the applicable ones.
func (mr *matrixRun) plan(infos map[string]lockimpl.Info) []job {
	o, m := mr.o, mr.m
	var jobs []job
	for _, s := range o.Scenarios {
		m.Scenarios = append(m.Scenarios, s.Name)
		for _, l := range o.Locks {
			c := Cell{Scenario: s.Name, Lock: l, Outcome: "n/a"}
			ok, why := runner.Applicable(infos[l], s)
			c.Applicable, c.Reason = ok, why
			m.Cells = append(m.Cells, c)
			if !ok {
				continue
			}
			if len(o.Seeds) == 0 {
				jobs = append(jobs, job{i: len(m.Cells) - 1, s: s, lock: l})
			}
			for k, seed := range o.Seeds {
				jobs = append(jobs, job{i: len(m.Cells) - 1, s: s, lock: l, seed: seed, k: k})
			}
		}
	}
	return jobs
}

// shard keeps the jobs of this shard's cells and marks the others' cells
// as run elsewhere.
func (mr *matrixRun) shard(jobs []job) []job {
	o, m := mr.o, mr.m
	sh := *o.Shard
	sh.Build, sh.Catalog = BuildID(), catalogHash(o.Scenarios)
	m.Shard = &sh
	var cells []int
	for i, c := range m.Cells {
		if c.Applicable {
			cells = append(cells, i)
		}
	}
	byName := map[string]*scenarios.Scenario{}
	for _, s := range o.Scenarios {
		byName[s.Name] = s
	}
	of := shardOf(cells, func(i int) time.Duration { return cellCost(byName[m.Cells[i].Scenario]) }, sh.Count)
	for i, k := range of {
		if k != sh.Index {
			m.Cells[i].Outcome, m.Cells[i].Reason = OutcomeElsewhere, fmt.Sprintf("shard %d/%d", k, sh.Count)
		}
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if of[j.i] == sh.Index {
			kept = append(kept, j)
		}
	}
	return kept
}

// runJobs runs the jobs as the scheduler admits them, until ctx ends.
func (mr *matrixRun) runJobs(ctx context.Context, jobs []job) {
	sched := newScheduler(mr.o.Parallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sl := sched.acquire(ctx, cellAppetite(j.s))
		if sl == nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sl.release()
			mr.runJob(ctx, j, sl.clientsDone)
		}()
	}
	wg.Wait()
}

// runJob runs one job and files its cell, or its seed's run (the cell is
// judged once its last seed ran). clientsDone is called when the cell's
// clients ended (without retries: a retry's clients run again).
func (mr *matrixRun) runJob(ctx context.Context, j job, clientsDone func()) {
	o, m := mr.o, mr.m
	if o.Retries > 0 {
		clientsDone = nil
	}
	c := runCellRetried(ctx, o, j.s, j.lock, j.seed, j.n, clientsDone)
	if j.seed == 0 {
		mr.mu.Lock()
		m.Cells[j.i] = c
		mr.mu.Unlock()
		if o.OnCell != nil {
			o.OnCell(c)
		}
		return
	}
	sr := SeedRun{Seed: j.seed, Dir: c.Dir, Verdict: c.Verdict, Checks: c.Checks, Outcome: c.Outcome,
		ExitCode: c.RunExit, Error: c.Reason, Attempts: c.Attempts, Phases: c.Phases}
	for _, n := range c.Notes {
		if strings.HasPrefix(n, "attempt ") {
			sr.Notes = append(sr.Notes, n)
		}
	}
	mr.mu.Lock()
	mr.seedRuns[j.i][j.k] = sr
	mr.left[j.i]--
	done := mr.left[j.i] == 0
	if done {
		m.Cells[j.i] = seedCell(o, j.s, j.lock, mr.seedRuns[j.i])
		c = m.Cells[j.i]
	}
	mr.mu.Unlock()
	if o.OnSeed != nil {
		o.OnSeed(c, sr)
	}
	if done && o.OnCell != nil {
		o.OnCell(c)
	}
}

// judgeCut judges a cell cut short (ctx ended) over the seeds that ran.
func (mr *matrixRun) judgeCut() {
	for i, runs := range mr.seedRuns {
		if runs == nil || mr.left[i] == 0 {
			continue
		}
		var ran []SeedRun
		for _, r := range runs {
			if r.Seed != 0 {
				ran = append(ran, r)
			}
		}
		if len(ran) > 0 {
			c := mr.m.Cells[i]
			sc, _ := scenarioByName(mr.o.Scenarios, c.Scenario)
			mr.m.Cells[i] = seedCell(mr.o, sc, c.Lock, ran)
		}
	}
}

// runCellRetried runs one cell (with seed when not 0, in its seed
// directory) and re-runs it up to o.Retries times while not as expected.
// job numbers the run among the matrix's: its keys get their own prefix.
// clientsDone, when set, is called when the first attempt's clients ended.
func runCellRetried(ctx context.Context, o MatrixOptions, s *scenarios.Scenario, lock string, seed uint64, job int, clientsDone func()) Cell {
	dir := filepath.Join(o.Out, s.Name, lock)
	if seed != 0 {
		sc := *s
		sc.Seed = seed
		s, dir = &sc, SeedDir(dir, seed)
	}
	c := runCell(ctx, o, s, lock, dir, job, clientsDone)
	c.Attempts = 1
	for a := 2; a <= o.Retries+1 && c.Outcome != "as-expected" && ctx.Err() == nil; a++ {
		prev := c
		c = runCell(ctx, o, s, lock, fmt.Sprintf("%s-attempt%d", dir, a), job, nil)
		c.Attempts = a
		c.Notes = append(c.Notes, fmt.Sprintf("attempt %d was %s (verdict %s, checks %v) in %s", a-1, prev.Outcome, prev.Verdict, prev.Checks, prev.Dir))
	}
	return c
}

// seedCell judges a cell over its seeds' runs and writes its seeds.json,
// seeds.md and index report.html into the cell directory.
func seedCell(o MatrixOptions, s *scenarios.Scenario, lock string, runs []SeedRun) Cell {
	dir := filepath.Join(o.Out, s.Name, lock)
	sum := Summarize(s.Name, lock, runner.ExpectationFor(s.ForBackend(o.Setup.Backend), lock), runs, true)
	c := Cell{Scenario: s.Name, Lock: lock, Applicable: true, Dir: dir, Expected: sum.Expected, Outcome: sum.Outcome,
		Verdict: sum.Majority(), Label: sum.Label(), Seeds: runs, Rates: sum.Rates, Checks: map[string]string{}}
	if c.Verdict == "error" {
		c.Verdict = ""
	}
	for check, rates := range sum.Rates {
		c.Checks[check] = rates[0].Verdict
		if rates[0].Hits != rates[0].N {
			c.Checks[check] = fmt.Sprintf("%s %d/%d", rates[0].Verdict, rates[0].Hits, rates[0].N)
		}
	}
	for _, r := range runs {
		if r.Phases != nil {
			if c.Phases == nil {
				c.Phases = &metrics.Phases{}
			}
			c.Phases.Add(*r.Phases)
		}
		c.Attempts = max(c.Attempts, r.Attempts)
		if r.Error != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("seed %d: %s", r.Seed, r.Error))
		}
		for _, n := range r.Notes {
			c.Notes = append(c.Notes, fmt.Sprintf("seed %d: %s", r.Seed, n))
		}
	}
	c.Notes = append(c.Notes, sum.Mismatches...)
	if err := report.WriteSeeds(dir, sum); err != nil {
		c.Notes = append(c.Notes, "seeds summary: "+err.Error())
	}
	return c
}

func scenarioByName(list []*scenarios.Scenario, name string) (*scenarios.Scenario, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

func runCell(ctx context.Context, o MatrixOptions, s *scenarios.Scenario, lock, dir string, job int, clientsDone func()) Cell {
	c := Cell{Scenario: s.Name, Lock: lock, Applicable: true}
	ro := runner.Options{Setup: o.Setup}
	if ro.KeyPrefix != "" {
		ro.KeyPrefix += strconv.Itoa(job) + ":"
	}
	ro.Scenario, ro.Lock, ro.Expect, ro.Progress, ro.NoPlots = s, lock, true, nil, !o.Plots
	ro.ClientsDone = clientsDone
	ro.Out = dir
	c.Dir = ro.Out
	out, err := runner.Run(ctx, ro)
	if out == nil || out.Results == nil {
		c.Outcome, c.Reason, c.RunExit = "error", fmt.Sprint(err), int(runner.ClassOf(err))
		return c
	}
	c.RunExit = int(out.Class)
	r := out.Results
	c.Verdict, c.Expected, c.Outcome, c.Throughput, c.Notes = r.Verdict, r.Expected, r.Outcome, r.Stats.Throughput, r.Notes
	c.Checks = map[string]string{}
	for n, ch := range r.Checks {
		c.Checks[n] = string(ch.Verdict)
	}
	seen := map[string]bool{}
	for _, v := range r.Violations {
		if !seen[v.Cause] {
			seen[v.Cause] = true
			c.Causes = append(c.Causes, v.Cause)
		}
	}
	sort.Strings(c.Causes)
	c.Incidents = len(r.Incidents)
	c.Phases = r.Phases
	if err != nil && c.Outcome == "as-expected" {
		c.Outcome, c.Reason = "unknown", err.Error()
	}
	return c
}

// The matrix and seed documents live in report, which renders them; these
// names keep the runner's API.
type (
	Cell        = metrics.Cell
	Matrix      = metrics.Matrix
	Shard       = metrics.Shard
	SeedRun     = metrics.SeedRun
	SeedSummary = metrics.SeedSummary
	Rate        = metrics.Rate
)

// OutcomeElsewhere marks, in a shard's matrix, a cell another shard runs.
const OutcomeElsewhere = metrics.OutcomeElsewhere
