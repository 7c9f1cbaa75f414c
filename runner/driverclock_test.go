package runner_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// driverLock registers a shipped driver lock by its lock file, or skips
// (fails with LOCKCHAOS_REQUIRE_DRIVERS) when its runtime or libraries are
// not installed (bash scripts/drivers.sh).
func driverLock(t *testing.T, lang, name string) string {
	t.Helper()
	bin := map[string]string{"python": "python3", "java": "java", "node": "node"}[lang]
	if _, err := exec.LookPath(bin); err != nil {
		testenv.Missing(t, "LOCKCHAOS_REQUIRE_DRIVERS", "%s not on PATH", bin)
	}
	// What scripts/drivers.sh installs in the worktree (a launcher that
	// builds the jar on demand takes longer than hello's bound).
	need := map[string]string{"node": "drivers/node/node_modules", "java": "drivers/java/target/lockchaos-driver-java.jar"}[lang]
	if need != "" {
		if _, err := os.Stat(filepath.Join("..", need)); err != nil {
			testenv.Missing(t, "LOCKCHAOS_REQUIRE_DRIVERS", "%s missing (bash scripts/drivers.sh)", need)
		}
	}
	n, err := driver.Resolve(filepath.Join("..", "drivers", lang, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// faultEvents runs y with lock and returns its outcome and its fault and
// heal events.
func runCollecting(t *testing.T, y, lock string) (*runner.Outcome, []*history.Event) {
	t.Helper()
	s, err := scenarios.Parse([]byte(y), "driver-clock")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []*history.Event
	tap := func(e *history.Event) {
		if e.Op == history.OpFault || e.Op == history.OpHeal {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}
	}
	t0 := time.Now()
	o, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: lock, Setup: runner.Setup{Backend: "process"},
		Out: filepath.Join(t.TempDir(), "run"), NoPlots: true, Tap: tap})
	if err != nil && (o == nil || o.Results == nil) {
		t.Fatal(err)
	}
	t.Logf("%s: run took %v", lock, time.Since(t0).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	return o, evs
}

func effectMS(t *testing.T, e *history.Event, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.Fault.Effect[key], 64)
	if err != nil {
		t.Fatalf("fault %d (%s) effect %s: %q: %+v", e.Fault.ID, e.Op, key, e.Fault.Effect[key], e.Fault.Effect)
	}
	return v
}

// A client clock fault on a driver lock's client sets the driver
// process's clock (libfaketime), in flight, measured inside the process
// with the protocol's clock request: a skew of +5 s in Java, Python and
// Node, a jump of -2 s after it, and a rate of 3 from the change (the heal
// finds the clock 1 s ahead after 500 ms); each heal brings the clock back.
func TestDriverClockFaultsTakeEffectInside(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	if _, err := driver.FindFaketime(); err != nil {
		testenv.Missing(t, "LOCKCHAOS_REQUIRE_DRIVERS", "%v", err)
	}
	for _, c := range []struct{ lang, lock string }{{"python", "redis-py"}, {"node", "node-redlock"}, {"java", "redisson"}} {
		t.Run(c.lang, func(t *testing.T) {
			lock := driverLock(t, c.lang, c.lock)
			y := `name: driver-clock
topology: single
duration: 3s
recovery: 300ms
lock: {ttl: 500ms}
workload: {clients: 2, keys: 1, hold: 20ms, think: 5ms, resource: counter}
faults:
  - {kind: clock-skew, at: 300ms, duration: 800ms, target: client:0, params: {offset: 5s}}
  - {kind: clock-skew, at: 1500ms, duration: 600ms, target: client:1, params: {offset: -2s}}
  - {kind: clock-skew, at: 2300ms, duration: 500ms, target: client:0, params: {rate: "3"}}
`
			o, evs := runCollecting(t, y, lock)
			if f := o.Results.Checks[checker.CheckFaults]; f.Verdict != checker.Valid {
				t.Errorf("faults %s: %+v", f.Verdict, evs)
			}
			want := map[int]float64{1: 5000, 2: -2000}
			var rateAt *history.Event
			for _, e := range evs {
				t.Logf("%s %d %s: %v", e.Op, e.Fault.ID, e.Fault.Target, e.Fault.Effect)
				if !e.Fault.Applied {
					t.Errorf("%s of fault %d did not take effect: %v", e.Op, e.Fault.ID, e.Fault.Effect)
					continue
				}
				if e.Fault.Effect["mechanism"] != "libfaketime" {
					t.Errorf("%s of fault %d: mechanism %q, want libfaketime", e.Op, e.Fault.ID, e.Fault.Effect["mechanism"])
					continue
				}
				got, exp := effectMS(t, e, "driver_offset_after_ms"), effectMS(t, e, "expected_offset_ms")
				if d := got - exp; d > 60 || d < -60 {
					t.Errorf("%s of fault %d: the driver's clock reads %.1f ms off, expected %.1f", e.Op, e.Fault.ID, got, exp)
				}
				if w, ok := want[e.Fault.ID]; ok && e.Op == history.OpFault && (exp < w-1 || exp > w+1) {
					t.Errorf("fault %d: expected %.1f ms, want %.0f", e.Fault.ID, exp, w)
				}
				if e.Op == history.OpFault && e.Fault.ID == 3 {
					rateAt = e
				}
				if e.Op == history.OpHeal && e.Fault.ID == 3 && rateAt != nil {
					// At 3× it gains 2 ms a ms from the change to the heal's
					// measure (the heal fires late under load).
					lo, hi := 2*history.MS(e.T-rateAt.End)-50, 2*history.MS(e.End-rateAt.T)+50
					if b := effectMS(t, e, "driver_offset_before_ms"); b < lo || b > hi {
						t.Errorf("heal of the rate 3: the driver's clock was %.1f ms ahead, want %.0f–%.0f", b, lo, hi)
					}
				}
				if e.Op == history.OpHeal && (got > 60 || got < -60) {
					t.Errorf("heal of fault %d: the driver's clock is %.1f ms off after the heal", e.Fault.ID, got)
				}
				if l := effectMS(t, e, "took_effect_ms"); l > 1000 {
					t.Errorf("%s of fault %d: took %.1f ms", e.Op, e.Fault.ID, l)
				}
			}
		})
	}
}

// Node's event loop blocked (pause-client mode block-loop: the process
// runs, its loop is busy) for 3×TTL at the holder's worst point:
// redis-semaphore's refresh timer cannot run, the key expires, another
// client takes it and the blocked holder writes after it: mutex and
// resource invalid, caused by the pause. The driver process was running
// (state R) while blocked, not stopped.
func TestNodeEventLoopBlockLapsesTheLease(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	lock := driverLock(t, "node", "redis-semaphore-mutex")
	y := `name: block-loop
topology: single
duration: 2500ms
lock: {ttl: 300ms}
workload: {clients: 3, keys: 1, hold: 5ms, think: 1ms, resource: register}
faults:
  - {kind: pause-client, at: 600ms, target: holder, point: before-write, duration: 900ms, params: {mode: block-loop}}
`
	o, evs := runCollecting(t, y, lock)
	var fault *history.Event
	for _, e := range evs {
		t.Logf("%s %d %s: %v", e.Op, e.Fault.ID, e.Fault.Target, e.Fault.Effect)
		if e.Op == history.OpFault {
			fault = e
		}
	}
	if fault == nil || !fault.Fault.Applied {
		t.Fatalf("the block-loop fault did not take effect: %+v", fault)
	}
	if b := effectMS(t, fault, "loop_blocked_ms"); b < 850 || b > 1500 {
		t.Errorf("loop blocked %.1f ms, want about 900", b)
	}
	if st := fault.Fault.Effect["driver_state"]; st != "R" && st != "S" {
		t.Errorf("driver state %q while its loop was blocked, want running (R)", st)
	}
	cs := o.Results.Checks
	if m := cs[checker.CheckMutex]; m.Verdict != checker.Invalid {
		t.Errorf("mutex %s, want invalid: the lease lapsed while the loop was blocked", m.Verdict)
	}
	found := false
	for i, v := range o.Results.Violations {
		if i < 3 {
			t.Logf("violation %s: %s %s", v.Check, v.Cause, v.Explanation)
		}
		if v.Check == checker.CheckMutex && v.Cause == checker.CausePause {
			found = true
		}
	}
	if !found {
		t.Errorf("no mutex violation caused by the pause (%s)", checker.CausePause)
	}
}

// pause-client mode block-loop is refused before the run for a lock with
// no event loop to block: a built-in lock, a driver that does not declare
// block_loop.
func TestBlockLoopRefusedForLocksWithoutALoop(t *testing.T) {
	y := `name: block-loop
topology: single
duration: 1s
workload: {clients: 2, keys: 1}
faults:
  - {kind: pause-client, at: 300ms, target: holder, duration: 200ms, params: {mode: block-loop}}
`
	s, err := scenarios.Parse([]byte(y), "block-loop")
	if err != nil {
		t.Fatal(err)
	}
	n, err := driver.Resolve(filepath.Join("..", "drivers", "python", "redis-py.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"simple", n} {
		_, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: lock, Setup: runner.Setup{Backend: "embedded"},
			Out: filepath.Join(t.TempDir(), "run"), NoPlots: true})
		if runner.ClassOf(err) != runner.BadInput {
			t.Errorf("%s: %v (class %v), want bad input", lock, err, runner.ClassOf(err))
			continue
		}
		t.Logf("%s: %v", lock, err)
	}
}
