package explore

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// needRedis: the long tier, on real servers.
func needRedis(t *testing.T) {
	t.Helper()
	testenv.Long(t)
	testenv.Need(t, "redis-server")
}

// brokenControl is one exploration of del-no-owner (the whole vocabulary,
// exploration seed 1), shared by the tests that read its finding: its
// shrinking and replay, and its report.
var brokenControl struct {
	sync.Mutex
	out string
	rep *Report
	err error
}

func exploreBrokenControl(t *testing.T) (string, *Report) {
	t.Helper()
	needRedis(t)
	bc := &brokenControl
	bc.Lock()
	defer bc.Unlock()
	if bc.rep == nil && bc.err == nil {
		bc.out, bc.err = os.MkdirTemp("", "lockchaos-explore-")
		if bc.err == nil {
			var e *Explorer
			e, bc.err = New(Config{Lock: "del-no-owner", Budget: 90 * time.Second, Seed: 1, Out: bc.out, ConfirmSeeds: 5,
				MaxFindings: 1, Oracle: RunnerOracle{Backend: "process"}})
			if bc.err == nil {
				bc.rep, bc.err = e.Run(context.Background())
			}
		}
	}
	if bc.err != nil {
		t.Fatal(bc.err)
	}
	if len(bc.rep.Findings) == 0 {
		t.Fatalf("no finding for del-no-owner in 90s: %d schedules, classes %v", bc.rep.Schedules, bc.rep.Classes)
	}
	return bc.out, bc.rep
}

func TestMain(m *testing.M) {
	code := m.Run()
	if brokenControl.out != "" {
		os.RemoveAll(brokenControl.out)
	}
	os.Exit(code)
}

// A broken control is found blind, shrunk, and its saved scenario replays
// with --expect.
func TestExploreFindsABrokenControl(t *testing.T) {
	out, rep := exploreBrokenControl(t)
	f := rep.Findings[0]
	t.Logf("finding after %v: %s %s (%s): %s; lock %v, reference %v; minimal: %s",
		f.FoundAfter, f.Check, f.Cause, f.Sentence, f.Replay, f.Lock, f.Ref, f.Minimal.Describe())
	if f.Check != "mutex" && f.Check != "unlock" && f.Check != "resource" {
		t.Errorf("check %s: del-no-owner deletes others' keys (mutex, unlock)", f.Check)
	}
	if len(f.Minimal.Faults) > 2 || f.Minimal.Clients > 3 {
		t.Errorf("not shrunk to ≤2 faults and ≤3 clients: %s", f.Minimal.Describe())
	}
	if !f.Confirmed {
		t.Skipf("the budget ended before the confirmation: %s", f.Minimal.Describe())
	}
	sc, err := scenarios.LoadFile(filepath.Join(f.Dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Lock: "del-no-owner", Out: filepath.Join(out, "replay"),
		Setup: runner.Setup{Backend: "process"}, Expect: true, NoPlots: true})
	if err != nil && res == nil {
		t.Fatal(err)
	}
	if res.Class != runner.Passed {
		t.Errorf("replay: %v (%s), want passed (exit 0)", res.Class, res.Results.Outcome)
	}
}

// The known margin: simple fails under a pause before the write from about
// the TTL (±10%).
func TestMarginOfSimpleBeforeWrite(t *testing.T) {
	needRedis(t)
	e, err := New(Config{Lock: "simple", Budget: 50 * time.Second, Out: t.TempDir(), Oracle: RunnerOracle{Backend: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := e.Margins(context.Background(), 2, "pause-client@before-write", nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%v %v", ms, err)
	}
	t.Log(ms[0].Text("simple", "simple"))
	if math.Abs(ms[0].Lock-1.0) > 0.1 {
		t.Errorf("simple fails from %.2f×TTL under a pause before the write, want 1.0±0.1", ms[0].Lock)
	}
}
