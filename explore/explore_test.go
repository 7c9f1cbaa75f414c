package explore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// fakeOracle: the lock fails unlock under a pause before the release of at
// least 1×TTL; the reference never fails, except under a clock jump, where
// both fail mutex (a limit). Faults with a when: trigger never take effect.
type fakeOracle struct {
	mu   sync.Mutex
	runs int
}

func (o *fakeOracle) Run(_ context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	o.mu.Lock()
	o.runs++
	o.mu.Unlock()
	r := RunResult{Lock: lock, Seed: seed, Dir: dir, Tried: true, Checks: map[string]string{"mutex": "valid", "unlock": "valid", "liveness": "valid"},
		Causes: map[string]string{}, Sentences: map[string]string{}}
	for _, f := range s.Faults {
		if f.Spec.When != "" {
			r.Tried = false
		}
		if f.Spec.Kind == history.FaultClockJump && f.Spec.When == "" {
			r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-early-clock-jump"
		}
		if lock == "del-no-owner" && f.Spec.Kind == history.FaultPauseClient && f.Spec.Point == history.PointBeforeRelease && f.Mag >= 1 {
			r.Checks["unlock"], r.Causes["unlock"], r.Sentences["unlock"] = "invalid", "deleted-by-non-owner", "client 0 deleted client 1's key."
		}
	}
	return r
}

func TestExploreWithAFakeOracle(t *testing.T) {
	out := t.TempDir()
	o := &fakeOracle{}
	e, err := New(Config{Lock: "del-no-owner", Budget: 3 * time.Second, Seed: 1, Out: out, Oracle: o,
		Kinds: []string{history.FaultPauseClient, history.FaultClockJump}, MaxFaults: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e.Config().Reference != "simple" {
		t.Fatalf("reference %s, want simple", e.Config().Reference)
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings, want 1 (one per cause): %+v", len(rep.Findings), rep)
	}
	f := rep.Findings[0]
	if f.Check != "unlock" || f.Cause != "deleted-by-non-owner" || !f.Confirmed {
		t.Fatalf("finding: %+v", f)
	}
	if len(f.Minimal.Faults) != 1 || f.Minimal.Faults[0].Spec.Kind != history.FaultPauseClient || f.Minimal.Faults[0].Mag > 1+ShrinkPrecision || f.Minimal.Clients > 2 {
		t.Errorf("not minimal: %s", f.Minimal.Describe())
	}
	if rep.Classes[Limit] == 0 || rep.Classes[Untried] == 0 || rep.Classes[Passed] == 0 {
		t.Errorf("classes %v: want limits (clock jumps), untried (when:) and passed", rep.Classes)
	}
	if f.Lock.Fails != 5 || f.Ref.Fails != 0 || f.Ref.N != 5 {
		t.Errorf("rates lock %v reference %v", f.Lock, f.Ref)
	}
	sc, err := scenarios.LoadFile(filepath.Join(f.Dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Expectation("del-no-owner")["unlock"]; got != "invalid" {
		t.Errorf("lock's expectation for unlock: %q", got)
	}
	if got := sc.Expectation("simple")["unlock"]; got != "valid" {
		t.Errorf("reference's expectation for unlock: %q", got)
	}
	md, _ := os.ReadFile(filepath.Join(out, "findings.md"))
	if !strings.Contains(string(md), "lockchaos run "+filepath.Join(f.Dir, "scenario.yaml")+" --lock del-no-owner --expect") ||
		!strings.Contains(string(md), "deleted-by-non-owner") {
		t.Errorf("findings.md:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(out, "explore.json")); err != nil {
		t.Error(err)
	}
	o.mu.Lock()
	// Those the budget's end cut short (at most one per slot) are not counted.
	if rep.Runs > o.runs || rep.Runs < o.runs-e.Config().Parallel || rep.RunsPerMinute <= 0 {
		t.Errorf("report counts %d runs (%.1f/min), the oracle made %d", rep.Runs, rep.RunsPerMinute, o.runs)
	}
	o.mu.Unlock()
	if len(rep.Coverage.Kinds) != 2 {
		t.Errorf("coverage %+v", rep.Coverage)
	}
}

// failingOracle: the lock does not run at all: every run ends with err and
// no results.
type failingOracle struct {
	runs atomic.Int64
	err  error
}

func (o *failingOracle) Run(_ context.Context, _ Schedule, lock string, seed uint64, dir string) RunResult {
	o.runs.Add(1)
	return RunResult{Lock: lock, Seed: seed, Dir: dir, Err: o.err}
}

// exploreFailing explores del-no-owner with every run ending with err: the
// report, the runs made, its out directory and the exploration's error.
func exploreFailing(t *testing.T, err error) (*Report, int64, string, error) {
	t.Helper()
	o := &failingOracle{err: err}
	e, nerr := New(Config{Lock: "del-no-owner", Budget: 30 * time.Second, Seed: 1, Out: t.TempDir(), Oracle: o,
		Kinds: []string{history.FaultPauseClient}, Parallel: 1})
	if nerr != nil {
		t.Fatal(nerr)
	}
	rep, rerr := e.Run(context.Background())
	return rep, o.runs.Load(), e.Config().Out, rerr
}

// An exploration whose lock does not run (an option its driver refuses)
// stops at its second screening run with that error (a bad input), rather
// than running out its budget and reporting no finding; its report is
// still written, saying why it stopped.
func TestExploreOfALockThatDoesNotRun(t *testing.T) {
	began := time.Now()
	rep, n, out, err := exploreFailing(t, &runner.Error{Class: runner.BadInput, Err: errors.New("lock option x=1: refused")})
	if err == nil || runner.ClassOf(err) != runner.BadInput || !strings.Contains(err.Error(), "x=1: refused") {
		t.Fatalf("report %+v, error %v: want the lock's bad-input error", rep, err)
	}
	if n != 2 || time.Since(began) > 10*time.Second {
		t.Errorf("%d runs in %v: want it to stop after the second", n, time.Since(began))
	}
	if rep == nil || !strings.Contains(rep.Aborted, "does not run") {
		t.Fatalf("report %+v: want one saying the lock does not run", rep)
	}
	if _, err := os.Stat(filepath.Join(out, "explore.json")); err != nil {
		t.Error(err)
	}
}

// A driver that cannot reach the servers (its init said unavailable) before
// any run reached its verdict stops the exploration at its second screening
// run too, as the machine's failure: errored schedule after errored
// schedule would end as "no finding".
func TestExploreOfALockThatCannotConnect(t *testing.T) {
	cause := fmt.Errorf("workload: driver init: connect: refused: %w", lockimpl.ErrUnavailable)
	rep, n, _, err := exploreFailing(t, &runner.Error{Class: runner.Infra, Err: cause})
	if err == nil || runner.ClassOf(err) != runner.Infra || !errors.Is(err, lockimpl.ErrUnavailable) {
		t.Fatalf("report %+v, error %v: want the driver's infra error", rep, err)
	}
	if n != 2 || rep == nil || !strings.Contains(rep.Aborted, "does not run") {
		t.Errorf("%d runs, report %+v: want it to stop after the second, saying why", n, rep)
	}
}

// flakyOracle is fakeOracle whose runs after the fourth fail now and then
// the way a driver that cannot connect does (bad input at workload start).
type flakyOracle struct {
	fakeOracle
	n atomic.Int64
}

func (o *flakyOracle) Run(ctx context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	if n := o.n.Add(1); n > 4 && n%5 == 0 {
		return RunResult{Lock: lock, Seed: seed, Dir: dir, Err: &runner.Error{Class: runner.BadInput, Err: errors.New("driver init: Unable to connect to Redis server")}}
	}
	return o.fakeOracle.Run(ctx, s, lock, seed, dir)
}

// Once the lock has run, a run that fails to start is that run's failure:
// the exploration goes on to its budget, keeps its findings, and counts
// the schedule as errored with the reason (an exploration of
// redisson-redlock once ended at 445 s on one such run, its report unwritten).
func TestExploreGoesOnPastARunThatFailsToStart(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", Budget: 3 * time.Second, Seed: 1, Out: out, Oracle: &flakyOracle{},
		Kinds: []string{history.FaultPauseClient}, MaxFaults: 1, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatalf("error %v: want the exploration to go on", err)
	}
	if rep.Aborted != "" || rep.Classes[Errored] == 0 || rep.Confirmed() != 1 {
		t.Fatalf("aborted %q, classes %v, %d confirmed: want errored schedules beside the finding", rep.Aborted, rep.Classes, rep.Confirmed())
	}
	if len(rep.RunErrors) != 1 || rep.RunErrors[0].Count != rep.Classes[Errored] || rep.RunErrors[0].Class != "bad-input" ||
		!strings.Contains(rep.RunErrors[0].Error, "Unable to connect") {
		t.Errorf("run errors %+v, %d errored", rep.RunErrors, rep.Classes[Errored])
	}
	if _, err := os.Stat(filepath.Join(out, "explore.json")); err != nil {
		t.Error(err)
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	if !strings.Contains(string(html), fmt.Sprintf(`id="count-errored">%d<`, rep.Classes[Errored])) || !strings.Contains(string(html), "Unable to connect") {
		t.Errorf("report.html does not show the errored runs and why")
	}
}

// Two candidates found under different causes that shrink and confirm to
// the same check, cause and schedule shape are one finding, found twice:
// one directory, Merged 1 in finding.json, "found 2 times" in findings.md.
func TestFindingsMergedBySameCauseAndShape(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: out, Oracle: &fakeOracle{},
		Kinds: []string{history.FaultPauseClient}, MaxFaults: 1, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	pause := func(mag float64, at time.Duration) Schedule {
		return Schedule{Topology: "single", TTL: 200 * time.Millisecond, Duration: 2 * time.Second, Recovery: 500 * time.Millisecond,
			Clients: 2, Keys: 1, Hold: 20 * time.Millisecond, Resource: "counter",
			Faults: []Fault{{Spec: faults.Spec{Kind: history.FaultPauseClient, At: at, Target: "holder", Point: history.PointBeforeRelease},
				Mag: mag, MagField: MagDuration}}}
	}
	a, b := pause(1.5, 300*time.Millisecond), pause(2, 700*time.Millisecond)
	if a.Shape() != b.Shape() || a.Describe() == b.Describe() {
		t.Fatalf("shapes %q and %q: want one shape, two schedules", a.Shape(), b.Shape())
	}
	ctx := context.Background()
	// The causes they were found with differ (the screening run's); the
	// confirmation names deleted-by-non-owner for both.
	e.finding(ctx, a, Verdict{Check: "unlock", Cause: "unknown"}, []string{"unlock"}, []uint64{1}, time.Second)
	e.finding(ctx, b, Verdict{Check: "unlock", Cause: "expired-while-held"}, []string{"unlock"}, []uint64{2}, 2*time.Second)
	rep, err := e.finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Merged != 1 {
		t.Fatalf("%d findings, %d merged: want 1 finding, 1 merged", len(rep.Findings), rep.Merged)
	}
	f := rep.Findings[0]
	if f.Cause != "deleted-by-non-owner" || f.Merged != 1 || !f.Confirmed {
		t.Errorf("finding: cause %s merged %d confirmed %v", f.Cause, f.Merged, f.Confirmed)
	}
	dirs, _ := os.ReadDir(filepath.Join(out, "findings"))
	if len(dirs) != 1 {
		t.Errorf("%d finding directories, want 1", len(dirs))
	}
	js, _ := os.ReadFile(filepath.Join(f.Dir, "finding.json"))
	md, _ := os.ReadFile(filepath.Join(out, "findings.md"))
	if !strings.Contains(string(js), `"merged": 1`) || !strings.Contains(string(md), "found 2 times") {
		t.Errorf("the count is not saved:\nfinding.json %s\nfindings.md %s", js, md)
	}
	page, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	if !strings.Contains(string(page), `id="count-merged">1<`) || !strings.Contains(string(page), "2 times") {
		t.Errorf("%s does not show the merge", HTMLFile)
	}
	// Another shape of the same cause is a finding of its own.
	c := a.Clone()
	c.Faults[0].Spec.Target = "any-client"
	e.finding(ctx, c, Verdict{Check: "unlock", Cause: "other"}, []string{"unlock"}, []uint64{1}, 3*time.Second)
	if len(e.rep.Findings) != 2 {
		t.Errorf("a schedule of another shape was merged: %d findings", len(e.rep.Findings))
	}
}

// A finding's replay names the lock as another process must be given it:
// LockArg (a driver's exec:<command>, one shell word), else the name.
func TestReplayNamesTheLockArg(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", LockArg: "exec:/opt/my driver del-no-owner", Budget: time.Minute, Seed: 1, Out: out,
		Oracle: &fakeOracle{}, Kinds: []string{history.FaultPauseClient}, MaxFaults: 1, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	s := Schedule{Topology: "single", TTL: 200 * time.Millisecond, Duration: 2 * time.Second, Clients: 2, Keys: 1, Resource: "counter",
		Faults: []Fault{{Spec: faults.Spec{Kind: history.FaultPauseClient, At: 300 * time.Millisecond, Target: "holder", Point: history.PointBeforeRelease},
			Mag: 1.5, MagField: MagDuration}}}
	e.finding(context.Background(), s, Verdict{Check: "unlock", Cause: "deleted-by-non-owner"}, []string{"unlock"}, []uint64{1}, time.Second)
	if len(e.rep.Findings) != 1 {
		t.Fatalf("%d findings", len(e.rep.Findings))
	}
	want := "lockchaos run " + filepath.Join(out, "findings", "1", "scenario.yaml") + " --lock 'exec:/opt/my driver del-no-owner' --expect"
	if got := e.rep.Findings[0].Replay; got != want {
		t.Errorf("replay\n%s\nwant\n%s", got, want)
	}
	for in, want := range map[string]string{"simple": "simple", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "/tmp/x.yaml": "/tmp/x.yaml"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
