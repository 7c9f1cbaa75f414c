package locktest

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/explore"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// An ExploreOption tunes Explore.
type ExploreOption func(*exploreConfig)

type exploreConfig struct {
	config
	budget  time.Duration
	seed    uint64
	save    string
	replay  string
	kinds   []string
	maxFind int
}

// Budget bounds the exploration (default 2 minutes; under -short at most
// 30 seconds; never past the test binary's -timeout).
func Budget(d time.Duration) ExploreOption { return func(c *exploreConfig) { c.budget = d } }

// ExploreSeed draws another set of schedules (default 1).
func ExploreSeed(seed uint64) ExploreOption { return func(c *exploreConfig) { c.seed = seed } }

// SaveFindings writes the findings (findings/N/scenario.yaml, findings.md)
// under dir instead of a temporary directory, to commit them as a
// regression corpus for Replay.
func SaveFindings(dir string) ExploreOption { return func(c *exploreConfig) { c.save = dir } }

// Replay first runs every saved finding under dir (dir/findings/*/scenario.yaml,
// as SaveFindings writes them) as a subtest, failing while the lock still
// fails the finding's check: like a fuzz corpus, a finding stays a test
// once the lock is fixed.
func Replay(dir string) ExploreOption { return func(c *exploreConfig) { c.replay = dir } }

// Kinds restricts the fault kinds drawn.
func Kinds(kinds ...string) ExploreOption { return func(c *exploreConfig) { c.kinds = kinds } }

// MaxFindings stops the exploration after n findings (default: the budget).
func MaxFindings(n int) ExploreOption { return func(c *exploreConfig) { c.maxFind = n } }

// With applies Run's options (Backend, Reference, KeepRuns) to Explore.
func With(opts ...Option) ExploreOption {
	return func(c *exploreConfig) {
		for _, o := range opts {
			o(&c.config)
		}
	}
}

// Explore searches the fault vocabulary for schedules under which the
// registered lock name fails a check its reference (the built-in correct
// lock of its kind, or Reference) passes on every seed, within the budget
// (see package explore and docs/explore.md). Each finding fails the test
// with its line: the check, the cause, the minimal schedule and the
// command that replays it. Schedules under which the reference fails too
// are limits of the design, logged, not failed.
//
// Explore is a test, not a native fuzz target: a schedule takes seconds of
// real servers, clocks and sockets, which coverage-guided fuzzing (many
// in-process executions a second, one target per `go test -fuzz`, as
// many workers as CPUs) cannot drive, and a finding's input is a scenario
// file `lockchaos run` replays, not a byte string. Replay gives the corpus
// half of fuzzing: saved findings run first, every time.
//
//	func TestExploreMyLock(t *testing.T) {
//		locktest.Explore(t, "my-lock", locktest.Budget(2*time.Minute))
//	}
func Explore(t T, name string, opts ...ExploreOption) {
	t.Helper()
	c := exploreConfig{config: config{backend: "auto"}, budget: 2 * time.Minute, seed: 1}
	for _, o := range opts {
		o(&c)
	}
	info, _, err := lockimpl.Lookup(name)
	if err != nil {
		t.Fatalf("locktest.Explore: %v (register the lock first, e.g. through locktest.Run or its package's init)", err)
	}
	ref := c.reference
	if ref == "" {
		ref = ReferenceFor(info)
	}
	if c.replay != "" {
		replayFindings(t, name, c)
	}
	budget := c.budget
	if testing.Short() {
		budget = min(budget, 30*time.Second)
	}
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			budget = min(budget, time.Until(dl)-30*time.Second)
		}
	}
	if budget <= 0 {
		t.Skip("locktest.Explore: no time left before the test binary's -timeout")
	}
	out := c.save
	if out == "" {
		out = c.keep
	}
	if out == "" {
		out = t.TempDir()
	}
	e, err := explore.New(explore.Config{Lock: name, Reference: ref, Budget: budget, Seed: c.seed, Out: out, Kinds: c.kinds,
		MaxFindings: c.maxFind, Oracle: explore.RunnerOracle{Backend: c.backend}})
	if err != nil {
		t.Fatalf("locktest.Explore: %v", err)
	}
	t.Logf("locktest.Explore %s against %s, budget %v, seed %d, out %s", name, ref, budget, c.seed, out)
	rep, err := e.Run(context.Background())
	if rep == nil {
		t.Fatalf("locktest.Explore: %v", err)
	}
	t.Logf("%d schedules (%.1f/min): %d passed, %d untried, %d limits of the design (the reference fails too), %d findings; %d/%d fault kinds tried",
		rep.Schedules, rep.PerMinute, rep.Classes[explore.Passed], rep.Classes[explore.Untried], rep.Classes[explore.Limit],
		rep.Confirmed(), len(rep.Coverage.Kinds), len(rep.Coverage.KindsAll))
	for _, l := range rep.Limits[:min(len(rep.Limits), 5)] {
		t.Logf("limit of the design (%v): %s", l.Checks, l.Schedule)
	}
	for _, f := range rep.Findings {
		if !f.Confirmed {
			// Inconclusive: the budget ended during its confirmation.
			t.Logf("candidate %d, confirmation cut short by the budget: %s", f.N, f.Line(name, ref))
			continue
		}
		t.Errorf("finding %d: %s", f.N, f.Line(name, ref))
	}
	if err != nil {
		t.Errorf("locktest.Explore: %v", err)
	}
}

// replayFindings runs each saved finding under c.replay as a subtest.
func replayFindings(t T, name string, c exploreConfig) {
	files, _ := filepath.Glob(filepath.Join(c.replay, "findings", "*", "scenario.yaml"))
	sort.Strings(files)
	for _, f := range files {
		s, err := scenarios.LoadFile(f)
		if err != nil {
			t.Errorf("replay %s: %v", f, err)
			continue
		}
		t.Run("replay/"+filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			exp := s.Expectation(name)
			var checks []string
			for check, w := range exp {
				if w == "invalid" {
					checks = append(checks, check)
				}
			}
			dir := t.TempDir()
			res, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: name, Out: dir, Setup: runner.Setup{Backend: c.backend}, NoPlots: true})
			if res == nil || res.Results == nil {
				t.Fatalf("%s: the run did not happen: %v", f, err)
			}
			for _, check := range checks {
				if v := res.Results.Checks[check].Verdict; v == "invalid" {
					t.Errorf("%s still fails %s (%s): %v", name, check, f, violations(res.Results.Violations))
				}
			}
		})
	}
	if len(files) == 0 {
		t.Logf("locktest.Explore: no saved findings to replay under %s", c.replay)
	}
}
