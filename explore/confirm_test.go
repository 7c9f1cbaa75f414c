package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// scriptedOracle: the lock fails mutex under a pause before the release of
// at least 1×TTL with two clients or more; the reference fails it too with
// fewer than refMinClients clients, and on seed 3 when the pause is
// below refMinMag×TTL (shrinking judges on seeds 1 and 4, the
// confirmation on 1-5).
type scriptedOracle struct {
	refMinClients int
	refMinMag     float64
	mu            sync.Mutex
	refRuns       int
}

func (o *scriptedOracle) Run(_ context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	// As the runner: a run never overwrites a directory.
	if err := runner.PrepareDir(dir); err != nil {
		return RunResult{Lock: lock, Seed: seed, Dir: dir, Err: err}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("{}"), 0o644); err != nil {
		return RunResult{Lock: lock, Seed: seed, Dir: dir, Err: err}
	}
	r := RunResult{Lock: lock, Seed: seed, Dir: dir, Tried: true, Checks: map[string]string{"mutex": "valid"},
		Causes: map[string]string{}, Sentences: map[string]string{}}
	mag := 0.0
	for _, f := range s.Faults {
		if f.Spec.Kind == history.FaultPauseClient && f.Spec.Point == history.PointBeforeRelease {
			mag = max(mag, f.Mag)
		}
	}
	if lock != "simple" {
		if mag >= 1 && s.Clients >= 2 {
			r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-during-pause"
		}
		return r
	}
	o.mu.Lock()
	o.refRuns++
	o.mu.Unlock()
	if mag >= 1 && (s.Clients < o.refMinClients || seed == 3 && mag < o.refMinMag) {
		r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-during-pause"
	}
	return r
}

func findWith(t *testing.T, o *scriptedOracle) *Found {
	t.Helper()
	e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: o})
	if err != nil {
		t.Fatal(err)
	}
	s := bigSchedule()
	s.Clients = 4
	e.finding(context.Background(), s, Verdict{Check: "mutex", Class: Finding, Cause: "expired-during-pause"}, []string{"mutex"}, []uint64{1}, time.Second)
	if len(e.rep.Findings) != 1 {
		t.Fatalf("%d findings, %d unconfirmed", len(e.rep.Findings), e.rep.Unconfirmed)
	}
	return e.rep.Findings[0]
}

// optionedOracle is scriptedOracle running the lock with options.
type optionedOracle struct{ *scriptedOracle }

func (optionedOracle) LockOptions() map[string]string { return map[string]string{"version": "1.2.3"} }

// A finding's scenario keeps the lock options its oracle ran the lock
// with (any oracle that says them, not only RunnerOracle), so its replay
// runs the version explored.
func TestFindingScenarioKeepsTheLockOptions(t *testing.T) {
	for _, o := range []Oracle{&scriptedOracle{refMinClients: 3}, optionedOracle{&scriptedOracle{refMinClients: 3}}} {
		e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: o})
		if err != nil {
			t.Fatal(err)
		}
		s := bigSchedule()
		s.Clients = 4
		e.finding(context.Background(), s, Verdict{Check: "mutex", Class: Finding, Cause: "expired-during-pause"}, []string{"mutex"}, []uint64{1}, time.Second)
		if len(e.rep.Findings) != 1 {
			t.Fatalf("%T: %d findings", o, len(e.rep.Findings))
		}
		sc, err := scenarios.LoadFile(filepath.Join(e.rep.Findings[0].Dir, "scenario.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		_, optioned := o.(LockOptioner)
		if got := sc.Lock.Extra["version"]; optioned && got != "1.2.3" || !optioned && got != "" {
			t.Errorf("%T: the saved scenario's lock.extra is %v", o, sc.Lock.Extra)
		}
	}
}

// A reduction under which the reference fails too (fewer clients) is not
// kept: the shrinking asks the reference where the lock failed, so the
// minimal schedule stops at the smallest shape that is still a finding,
// and the confirmation holds for it.
func TestShrinkKeepsTheReferencePassing(t *testing.T) {
	o := &scriptedOracle{refMinClients: 3}
	f := findWith(t, o)
	if !f.Confirmed || f.Minimal.Clients != 3 || len(f.Minimal.Faults) != 1 || len(f.Refuted) != 0 {
		t.Fatalf("confirmed %v, minimal %s, refuted %v: want 3 clients, one fault, nothing refuted", f.Confirmed, f.Minimal.Describe(), f.Refuted)
	}
	if f.Minimal.Faults[0].Mag > 1+ShrinkPrecision {
		t.Errorf("pause not at its boundary: %s", f.Minimal.Describe())
	}
	if o.refRuns == 0 {
		t.Error("the reference never ran while shrinking")
	}
}

// A minimal schedule the confirmation refutes (the reference fails on
// seeds the shrinking did not look at) gives way to the smallest schedule
// kept on the way that the confirmation holds for, not to the original.
func TestRefutedMinimalFallsBackAlongTheTrail(t *testing.T) {
	o := &scriptedOracle{refMinClients: 2, refMinMag: 1.6}
	f := findWith(t, o)
	if !f.Confirmed || len(f.Refuted) == 0 {
		t.Fatalf("confirmed %v, refuted %v: want a refuted minimal and a confirmed one", f.Confirmed, f.Refuted)
	}
	if f.Minimal.Size() >= f.Original.Size() {
		t.Errorf("fell back to the original: %s", f.Minimal.Describe())
	}
	var mag float64
	for _, x := range f.Minimal.Faults {
		if x.Spec.Kind == history.FaultPauseClient {
			mag = x.Mag
		}
	}
	if mag < 1.6 || f.Ref.Fails != 0 || f.Lock.Fails == 0 {
		t.Errorf("minimal %s (lock %s, reference %s): want a pause ≥ 1.6×TTL the reference passes", f.Minimal.Describe(), f.Lock, f.Ref)
	}
	if f.Refuted[0].Ref.Fails == 0 {
		t.Errorf("the refutation records no reference failure: %+v", f.Refuted[0])
	}
	// runs/ holds the confirmation of the schedule kept, and only it.
	entries, err := os.ReadDir(filepath.Join(f.Dir, "runs"))
	if err != nil || len(entries) != 10 {
		t.Errorf("runs/: %d entries (%v), want the 10 runs of the kept schedule's confirmation", len(entries), err)
	}
	if left, _ := filepath.Glob(filepath.Join(f.Dir, "runs-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// seedOracle: the lock fails mutex on the seeds fails picks, under any
// schedule; the reference never does.
type seedOracle struct {
	fails   func(seed uint64) bool
	mu      sync.Mutex
	maxSeed uint64
}

func (o *seedOracle) Run(_ context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	o.mu.Lock()
	o.maxSeed = max(o.maxSeed, seed)
	o.mu.Unlock()
	r := RunResult{Lock: lock, Seed: seed, Dir: dir, Tried: true, Checks: map[string]string{"mutex": "valid"},
		Causes: map[string]string{}, Sentences: map[string]string{}}
	if lock != "simple" && o.fails(seed) {
		r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-during-pause"
	}
	return r
}

func confirmWith(t *testing.T, o *seedOracle) (*Found, *Explorer) {
	t.Helper()
	e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: o, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	e.finding(context.Background(), bigSchedule(), Verdict{Check: "mutex", Class: Finding, Cause: "expired-during-pause"}, []string{"mutex"}, []uint64{2}, time.Second)
	if len(e.rep.Findings) == 1 {
		return e.rep.Findings[0], e
	}
	return nil, e
}

// A lock that fails on 2 seeds of 10, whatever the schedule, against a
// reference that passes: 2/5 against 0/5 is chance, so the confirmation
// adds seeds, and at 20 seeds (4/20 against 0/20) the intervals still
// overlap: no finding. This is what a correct lock explored as its own
// reference had reported as two findings.
func TestChanceIsNotAFinding(t *testing.T) {
	o := &seedOracle{fails: func(seed uint64) bool { return seed%10 == 2 || seed%10 == 4 }}
	f, e := confirmWith(t, o)
	if f != nil {
		t.Fatalf("finding confirmed at lock %s, reference %s", f.Lock, f.Ref)
	}
	if e.rep.Unconfirmed != 1 || o.maxSeed != 20 {
		t.Errorf("unconfirmed %d, seeds run up to %d: want 1 and 20", e.rep.Unconfirmed, o.maxSeed)
	}
}

// A lock failing on 3 seeds of 5 is confirmed once more seeds set its rate
// apart from the reference's (6/10 against 0/10).
func TestAFindingNeedsRatesApart(t *testing.T) {
	o := &seedOracle{fails: func(seed uint64) bool { return seed%5 == 1 || seed%5 == 2 || seed%5 == 4 }}
	f, _ := confirmWith(t, o)
	if f == nil || !f.Confirmed || f.Lock.N != 10 || f.Lock.Fails != 6 || !Apart(f.Lock, f.Ref) {
		t.Fatalf("finding %+v: want confirmed at 6/10 against 0/10", f)
	}
}

// A schedule whose screening run fails only with the cause of a confirmed
// finding is not run again on the reference and more seeds: it counts as
// Known (and a duplicate). One that fails with a cause not confirmed yet,
// beside a known one, is classified as before.
func TestKnownCauseIsNotRerun(t *testing.T) {
	o := &scriptedOracle{refMinClients: 2, refMinMag: 1.6}
	e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: o})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := bigSchedule()
	s.Clients = 4
	e.finding(ctx, s, Verdict{Check: "mutex", Class: Finding, Cause: "expired-during-pause"}, []string{"mutex"}, []uint64{1}, time.Second)
	if len(e.rep.Findings) != 1 || !e.known["expired-during-pause"] {
		t.Fatalf("%d findings, known %v", len(e.rep.Findings), e.known)
	}
	before := o.refRuns
	sr := RunResult{Lock: "del-no-owner", Seed: 1, Tried: true, Checks: map[string]string{"mutex": "invalid", "unlock": "valid"},
		Causes: map[string]string{"mutex": "expired-during-pause"}, Dir: filepath.Join(t.TempDir(), "screen")}
	e.screened(ctx, 2, s, sr)
	if e.rep.Classes[Known] != 1 || e.rep.Duplicates != 1 || o.refRuns != before {
		t.Errorf("known cause: classes %v, duplicates %d, %d reference runs (want none)", e.rep.Classes, e.rep.Duplicates, o.refRuns-before)
	}
	sr.Checks["unlock"], sr.Causes["unlock"] = "invalid", "deleted-foreign-lock"
	e.screened(ctx, 3, s, sr)
	if e.rep.Classes[Known] != 1 || o.refRuns == before {
		t.Errorf("a new cause beside a known one: classes %v, %d reference runs (want some)", e.rep.Classes, o.refRuns-before)
	}
}

// countingOracle is seedOracle counting the runs of each lock.
type countingOracle struct {
	seedOracle
	runs map[string]int
}

func (o *countingOracle) Run(ctx context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	o.mu.Lock()
	o.runs[lock]++
	o.mu.Unlock()
	return o.seedOracle.Run(ctx, s, lock, seed, dir)
}

// A shrinking step tries the lock's seeds one after the other and stops at
// the first that fails, the reference running on that seed alone: a step
// of a finding that fails on every seed costs one run of each, not two.
func TestShrinkStepStopsAtTheFirstFailingSeed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fails       func(uint64) bool
		kept        bool
		lockN, refN int
	}{
		{"fails on the first seed", func(uint64) bool { return true }, true, 1, 1},
		{"fails on the second", func(seed uint64) bool { return seed == 2 }, true, 2, 1},
		{"fails on neither", func(uint64) bool { return false }, false, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &countingOracle{seedOracle: seedOracle{fails: tc.fails}, runs: map[string]int{}}
			e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: o})
			if err != nil {
				t.Fatal(err)
			}
			kept, err := e.still(1, "mutex", []uint64{1, 2})(context.Background(), bigSchedule())
			if err != nil || kept != tc.kept {
				t.Fatalf("kept %v (%v), want %v", kept, err, tc.kept)
			}
			if o.runs["del-no-owner"] != tc.lockN || o.runs[e.cfg.Reference] != tc.refN {
				t.Errorf("runs %v: want %d of the lock, %d of the reference (%s)", o.runs, tc.lockN, tc.refN, e.cfg.Reference)
			}
		})
	}
}

// busyOracle fails the lock on every run (one cause), takes a few
// milliseconds a run (a finding's longer), and counts how many runs of a finding's processing
// (shrinking, confirmation) run at once and how many screening runs start
// while one does.
type busyOracle struct {
	mu                  sync.Mutex
	finding, maxFinding int
	screenedBeside      int
}

func (o *busyOracle) Run(_ context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	isFinding := strings.Contains(dir, "shrink-") || strings.Contains(dir, string(filepath.Separator)+"findings"+string(filepath.Separator))
	o.mu.Lock()
	if isFinding {
		o.finding++
		o.maxFinding = max(o.maxFinding, o.finding)
	} else if o.finding > 0 && strings.HasSuffix(dir, lock+"-seed1") {
		o.screenedBeside++
	}
	o.mu.Unlock()
	// A finding's runs outlast the screening's, so the slots a screening
	// run frees go to the finding's runs waiting for them as far as their
	// bound lets them.
	if isFinding {
		time.Sleep(10 * time.Millisecond)
	} else {
		time.Sleep(time.Millisecond)
	}
	o.mu.Lock()
	if isFinding {
		o.finding--
	}
	o.mu.Unlock()
	r := RunResult{Lock: lock, Seed: seed, Dir: dir, Tried: true, Checks: map[string]string{"mutex": "valid"},
		Causes: map[string]string{}, Sentences: map[string]string{}}
	if lock != "simple" {
		r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-during-pause"
	}
	return r
}

// A finding is shrunk and confirmed beside the screening, on every slot
// but one at most: the worker that found it goes on screening. Once the
// screening ended (here: enough findings), the finding takes every slot.
func TestFindingsLeaveTheScreeningASlot(t *testing.T) {
	for _, tc := range []struct {
		maxFindings int
		want        func(maxFinding int) bool
		what        string
	}{
		{0, func(n int) bool { return n >= 1 && n <= 3 }, "at most 3 of the 4 slots"},
		{1, func(n int) bool { return n == 4 }, "all 4 slots once the screening stopped"},
	} {
		t.Run(fmt.Sprintf("max-findings=%d", tc.maxFindings), func(t *testing.T) {
			o := &busyOracle{}
			e, err := New(Config{Lock: "del-no-owner", Reference: "simple", Budget: 3 * time.Second, Seed: 1, Out: t.TempDir(), Oracle: o,
				Parallel: 4, MaxFindings: tc.maxFindings})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Confirmed() == 0 {
				t.Fatalf("no confirmed finding: %+v", rep.Classes)
			}
			if !tc.want(o.maxFinding) {
				t.Errorf("%d runs of a finding at once, want %s", o.maxFinding, tc.what)
			}
			if tc.maxFindings == 0 && o.screenedBeside == 0 {
				t.Error("no schedule was screened while a finding was processed")
			}
		})
	}
}

// Findings leave the screening a slot of four or more, and may take every
// slot of fewer (one of two confirmed none of rueidislock's findings in 4
// minutes).
func TestFindingSlots(t *testing.T) {
	for p, want := range map[int]int{1: 1, 2: 2, 3: 3, 4: 3, 8: 7} {
		if got := findingSlots(p); got != want {
			t.Errorf("findingSlots(%d) = %d, want %d", p, got, want)
		}
	}
}
