package explore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// under is a run with the acquires answered under a latency fault.
func under(r RunResult, ok, unknown int) RunResult {
	r.Windows = map[string]Window{history.FaultLatency: {Firings: 1, OK: ok, Unknown: unknown}}
	return r
}

// The redislock candidate (docs/findings.md): the lock fails mutex on
// some seeds, acquiring through the latency on each run it fails, while
// every acquire of the reference under it went unanswered (its command
// timeout shorter than the latency): the reference's pass is vacuous.
// Acquiring under the fault, the same pass is a finding.
func TestReferenceIdleIsNotAFinding(t *testing.T) {
	lock := []RunResult{under(run(true, "mutex"), 1, 3), under(run(true), 0, 4), under(run(true, "mutex"), 2, 2)}
	idle := []RunResult{under(run(true), 0, 21), under(run(true), 0, 22), under(run(true), 0, 21)}
	got, vs := Classify(lock, idle)
	if got != RefIdle {
		t.Fatalf("redislock-like: %s, want %s (%+v)", got, RefIdle, vs)
	}
	if len(FindingsOf(vs)) != 0 {
		t.Errorf("findings %+v", FindingsOf(vs))
	}
	for _, v := range vs {
		if v.Check == "mutex" && (v.Class != RefIdle || !strings.Contains(v.Reason, history.FaultLatency) || !strings.Contains(v.Reason, "64 attempts unanswered")) {
			t.Errorf("mutex: %+v", v)
		}
	}

	for _, tc := range []struct {
		name string
		lock []RunResult
		ref  []RunResult
	}{
		{"the reference acquired under the fault and passed", lock, []RunResult{under(run(true), 3, 2), under(run(true), 4, 0), under(run(true), 5, 1)}},
		{"the reference acquired on one seed", lock, []RunResult{under(run(true), 0, 21), under(run(true), 1, 20), under(run(true), 0, 21)}},
		{"the reference was refused, not unanswered (the key held)", lock, []RunResult{under(run(true), 0, 0), under(run(true), 0, 0), under(run(true), 0, 0)}},
		{"the reference's acquires not measured", lock, []RunResult{run(true), run(true), run(true)}},
		{"a failing lock run acquired nothing under the fault", append([]RunResult{under(run(true, "mutex"), 0, 5)}, lock...), idle},
	} {
		if got, vs := Classify(tc.lock, tc.ref); got != Finding {
			t.Errorf("%s: %s, want %s (%+v)", tc.name, got, Finding, vs)
		}
	}
	// A limit stays a limit.
	if got, _ := Classify(lock, append([]RunResult{under(run(true, "mutex"), 0, 20)}, idle...)); got != Limit {
		t.Errorf("reference failing too: %s, want %s", got, Limit)
	}
}

// Windows counts the acquires answered while each fault that took effect
// was in effect, up to its heal, or to the run's end when not healed.
func TestWindowsCountAcquiresUnderEachFault(t *testing.T) {
	ms := int64(time.Millisecond)
	evs := []history.Event{
		{T: 0, Op: history.OpRun, Client: -1},
		{T: 10 * ms, End: 20 * ms, Op: history.OpAcquire, Result: history.OK},       // before every fault
		{T: 90 * ms, End: 110 * ms, Op: history.OpAcquire, Result: history.Unknown}, // latency
		{T: 120 * ms, End: 150 * ms, Op: history.OpAcquire, Result: history.OK},     // latency
		{T: 160 * ms, End: 170 * ms, Op: history.OpAcquire, Result: history.Fail},   // latency: refused, not counted
		{T: 250 * ms, End: 260 * ms, Op: history.OpAcquire, Result: history.OK},     // healed: only the jump
		{T: 900 * ms, End: 950 * ms, Op: history.OpAcquire, Result: history.Unknown},
	}
	path := filepath.Join(t.TempDir(), history.JSONLFile)
	var b []byte
	for _, e := range evs {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := []metrics.FaultSummary{
		{ID: 1, Kind: history.FaultLatency, AtMS: 100, HealedMS: 200, Applied: true},
		{ID: 2, Kind: history.FaultClockJump, AtMS: 240, Applied: true},
		{ID: 3, Kind: history.FaultPauseClient, AtMS: 0, HealedMS: 1000, Applied: false},
	}
	w, err := Windows(path, fs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Window{history.FaultLatency: {Firings: 1, OK: 1, Unknown: 1}, history.FaultClockJump: {Firings: 1, OK: 1, Unknown: 1}}
	if len(w) != len(want) || w[history.FaultLatency] != want[history.FaultLatency] || w[history.FaultClockJump] != want[history.FaultClockJump] {
		t.Errorf("windows %+v, want %+v", w, want)
	}
}

// idleOracle: the lock fails mutex under every schedule, acquiring under
// its first fault; the reference passes, acquiring nothing under it
// (every attempt unanswered) unless acquires is set.
type idleOracle struct{ refAcquires int }

func (o *idleOracle) Run(_ context.Context, s Schedule, lock string, seed uint64, dir string) RunResult {
	r := RunResult{Lock: lock, Seed: seed, Dir: dir, Tried: true, Checks: map[string]string{"mutex": "valid", "unlock": "valid"},
		Causes: map[string]string{}, Sentences: map[string]string{}, Windows: map[string]Window{}}
	if len(s.Faults) == 0 {
		return r
	}
	k := s.Faults[0].Spec.Kind
	if lock == "simple" {
		r.Windows[k] = Window{Firings: 1, OK: o.refAcquires, Unknown: 20}
		return r
	}
	r.Windows[k] = Window{Firings: 1, OK: 2, Unknown: 1}
	r.Checks["mutex"], r.Causes["mutex"] = "invalid", "expired-during-pause"
	return r
}

// An exploration whose reference could not acquire under any schedule's
// faults reports no finding: each schedule is counted reference-idle and
// listed with its reason in explore.json, findings.md and report.html.
// With a reference acquiring under them, the same exploration finds.
func TestExploreCountsReferenceIdle(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", Budget: 2 * time.Second, Seed: 1, Out: out, Oracle: &idleOracle{},
		Kinds: []string{history.FaultPauseClient}, MaxFaults: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 || rep.Unconfirmed != 0 || rep.Classes[RefIdle] == 0 || rep.Classes[RefIdle] != rep.Schedules {
		t.Fatalf("findings %d, unconfirmed %d, classes %v of %d schedules: want every schedule reference-idle",
			len(rep.Findings), rep.Unconfirmed, rep.Classes, rep.Schedules)
	}
	if len(rep.Idle) == 0 || !strings.Contains(rep.Idle[0].Reason, history.FaultPauseClient) || rep.Idle[0].Checks[0] != "mutex" {
		t.Errorf("idle list %+v", rep.Idle)
	}
	md, _ := os.ReadFile(filepath.Join(out, "findings.md"))
	if !strings.Contains(string(md), "the reference could not acquire") || !strings.Contains(string(md), rep.Idle[0].Reason) {
		t.Errorf("findings.md:\n%s", md)
	}
	html, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	if !strings.Contains(string(html), `id="count-idle">`) || !strings.Contains(string(html), `id="reference-idle"`) {
		t.Error("report.html shows no reference-idle count or list")
	}
	if !strings.Contains((Progress{Tried: 3, Idle: 3}).String(), "3 reference idle") {
		t.Error("progress line without the reference-idle count")
	}

	e, err = New(Config{Lock: "del-no-owner", Budget: 20 * time.Second, Seed: 1, Out: t.TempDir(), Oracle: &idleOracle{refAcquires: 3},
		Kinds: []string{history.FaultPauseClient}, MaxFaults: 1, MaxFindings: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || !rep.Findings[0].Confirmed || rep.Classes[RefIdle] != 0 {
		t.Fatalf("findings %d, classes %v: want one confirmed finding, nothing reference-idle", len(rep.Findings), rep.Classes)
	}
}

// Shrinking keeps no reduction under which the reference passes idle.
func TestShrinkRejectsAReferenceIdle(t *testing.T) {
	for _, tc := range []struct {
		refAcquires int
		want        bool
	}{{0, false}, {3, true}} {
		e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: t.TempDir(), Oracle: &idleOracle{refAcquires: tc.refAcquires}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.still(1, "mutex", []uint64{1, 2})(context.Background(), bigSchedule())
		if err != nil || got != tc.want {
			t.Errorf("reference acquiring %d times: kept %v (%v), want %v", tc.refAcquires, got, err, tc.want)
		}
	}
}

// stalled is a run with a stall-commands firing that delayed n of its
// acquire commands (-1: not measured).
func stalled(r RunResult, n int) RunResult {
	if _, ok := r.Checks["liveness"]; !ok {
		r.Checks["liveness"] = "valid"
	}
	r.Windows = map[string]Window{history.FaultStallCommands: {Firings: 1, OK: 3, StalledInAcquire: n}}
	return r
}

// Issue 44: a stall of SET slowed simple's acquires and not the
// reference's (watchdog acquires with a script), and explore saved
// simple's liveness failure as a finding. A stall whose measured effect on
// the reference's acquires was nil while it delayed the lock's on every
// failing run is no comparison: reference-idle, with its reason. Where it
// touched the reference too, or was not measured, it is a finding.
func TestAStallThatMissedTheReferenceIsNotAFinding(t *testing.T) {
	lock := []RunResult{stalled(run(true, "liveness"), 4), stalled(run(true, "liveness"), 2), stalled(run(true), 3)}
	ref := []RunResult{stalled(run(true), 0), stalled(run(true), 0), stalled(run(true), 0)}
	got, vs := Classify(lock, ref)
	if got != RefIdle {
		t.Fatalf("%s, want %s (%+v)", got, RefIdle, vs)
	}
	for _, v := range vs {
		if v.Check == "liveness" && !strings.Contains(v.Reason, "stall-commands delayed none of the reference's acquire commands on 3 seed(s) and at least 2 of the lock's on each of its 2 failing run(s)") {
			t.Errorf("reason %q", v.Reason)
		}
	}
	for _, tc := range []struct {
		name      string
		lock, ref []RunResult
	}{
		{"the stall delayed the reference's acquires too", lock, []RunResult{stalled(run(true), 0), stalled(run(true), 1), stalled(run(true), 0)}},
		{"the reference's stall not measured", lock, []RunResult{stalled(run(true), 0), stalled(run(true), -1), stalled(run(true), 0)}},
		{"a failing lock run whose acquires the stall missed", append([]RunResult{stalled(run(true, "liveness"), 0)}, lock...), ref},
	} {
		if got, vs := Classify(tc.lock, tc.ref); got != Finding {
			t.Errorf("%s: %s, want %s (%+v)", tc.name, got, Finding, vs)
		}
	}
}

// Windows sums a stall's measured acquire commands over its firings, and
// says "not measured" (-1) once a firing's heal lacks the count.
func TestWindowsSumAStallsAcquireCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), history.JSONLFile)
	if err := os.WriteFile(path, []byte(`{"t":0,"op":"run","client":-1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eff := func(n string) map[string]string {
		return map[string]string{history.EffectStalled: n, history.EffectStalledInAcquire: n}
	}
	for _, tc := range []struct {
		heals []map[string]string
		want  int
	}{
		{[]map[string]string{eff("2"), eff("3")}, 5},
		{[]map[string]string{eff("0"), eff("0")}, 0},
		{[]map[string]string{eff("2"), nil}, -1},
		{[]map[string]string{{history.EffectStalledInAcquire: "0", history.EffectStalledOnWire: "true"}}, -1},
	} {
		var fs []metrics.FaultSummary
		for i, h := range tc.heals {
			fs = append(fs, metrics.FaultSummary{ID: i + 1, Kind: history.FaultStallCommands, AtMS: float64(100 * i), HealedMS: float64(100*i + 50), Applied: true, HealEffect: h})
		}
		w, err := Windows(path, fs)
		if err != nil {
			t.Fatal(err)
		}
		if got := w[history.FaultStallCommands].StalledInAcquire; got != tc.want {
			t.Errorf("heals %v: %d acquire commands stalled, want %d", tc.heals, got, tc.want)
		}
	}
}
