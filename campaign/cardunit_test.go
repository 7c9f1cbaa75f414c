package campaign

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestScenarioFamily: a scenario's family is its main fault's, a client
// cut or replication lag that sets the stage giving way.
func TestScenarioFamily(t *testing.T) {
	for name, want := range map[string]string{"restart-empty": "node-loss", "failover": "failover", "clock-drift": "clock",
		"holder-partitioned": "cut", "gc-pause": "client-freeze", "smoke": "none"} {
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := scenarioFamily(s); got != want {
			t.Errorf("%s: family %q, want %q", name, got, want)
		}
	}
}

// TestCardInputHash: a step's name changes with each of its inputs, so a
// saved run is reused only for the same scenario, lock, seed, backend and
// build; an adapter's inputs carry its library's version.
func TestCardInputHash(t *testing.T) {
	s, err := scenarios.Load("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := lockimpl.Lookup("simple")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "build", "process", lockInputs("simple", info), scenarioInputs(s), "1"}
	h := inputHash(base...)
	longer := *s
	longer.Duration *= 2
	for i, v := range []string{"bench", "build2", "docker", lockInputs("fenced", info), scenarioInputs(&longer), "2"} {
		in := append([]string(nil), base...)
		in[i] = v
		if inputHash(in...) == h {
			t.Errorf("changing input %d to %.30q keeps the hash", i, v)
		}
	}
	rs, _, err := lockimpl.Lookup("redsync")
	if err != nil {
		t.Fatal(err)
	}
	bi := &debug.BuildInfo{Deps: []*debug.Module{{Path: "github.com/go-redsync/redsync/v4", Version: "v4.18.0"}}}
	if lib, v := lockLibrary("redsync", rs, bi); lib != "github.com/go-redsync/redsync/v4" || v != "v4.18.0" {
		t.Errorf("redsync's library: %s %s, want github.com/go-redsync/redsync/v4 v4.18.0", lib, v)
	}
	if lib, v := lockLibrary("simple", info, bi); lib != "lockchaos built-in" || v != "" {
		t.Errorf("simple's library: %s %s, want lockchaos built-in", lib, v)
	}
	for _, l := range lockimpl.List() {
		if l.Kind == lockimpl.Adapter {
			if l.Module == "" {
				t.Errorf("adapter %s declares no Module: the card cannot tell its version", l.Name)
			}
		}
	}
}

// TestCardBudgetLeavesOut: what the budget leaves out is listed as not run
// and its cells say so; nothing is saved for it.
func TestCardBudgetLeavesOut(t *testing.T) {
	s, err := scenarios.Load("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	o := CardOptions{Locks: []string{"simple"}, Scenarios: []*scenarios.Scenario{s}, Cache: t.TempDir(), Budget: time.Nanosecond}
	o.Setup.Backend = "process"
	c, err := RunCard(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ran.NotRun) != 1 || c.Ran.NotRun[0] != "run gc-pause simple seed 1" || c.Ran.Reused != 0 {
		t.Errorf("not run %v, reused %d; want the one run left out", c.Ran.NotRun, c.Ran.Reused)
	}
	if len(c.Cells) != 1 || c.Cells[0].Outcome != "not run" {
		t.Errorf("cells %+v, want gc-pause×simple not run", c.Cells)
	}
	if fr := c.Locks[0].Safety["client-freeze"]; fr.Runs != 0 {
		t.Errorf("client-freeze %+v from no run", fr)
	}
}

// TestMarkKnownFindings: an expected failure is the lock's own (known) when
// the scenario expects the built-in of its capabilities to pass that check,
// and a limit of the design when the built-in is expected to fail it too.
func TestMarkKnownFindings(t *testing.T) {
	var list []*scenarios.Scenario
	for _, name := range []string{"holder-partitioned-long", "restart-under-holder"} {
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	infos := map[string]lockimpl.Info{}
	for _, l := range []string{"rueidislock", "simple", "watchdog"} {
		info, _, err := lockimpl.Lookup(l)
		if err != nil {
			t.Fatal(err)
		}
		infos[l] = info
	}
	c := &metrics.Card{Findings: []metrics.CardFinding{
		{Lock: "rueidislock", Scenario: "holder-partitioned-long", Expected: true}, // watchdog expected valid there
		{Lock: "rueidislock", Scenario: "restart-under-holder", Expected: true},    // default: every lock invalid
		{Lock: "simple", Scenario: "restart-under-holder", Expected: true},         // its own reference
		{Lock: "rueidislock", Scenario: "holder-partitioned-long"},                 // not expected: news anyway
		{Lock: "rueidislock", Scenario: "explore finding 1", Expected: true, Reference: "watchdog 0/5"},
	}}
	MarkKnownFindings(c, list, "process", infos)
	for i, want := range []bool{true, false, false, false, false} {
		if f := c.Findings[i]; f.Known != want {
			t.Errorf("%s in %s (expected %v): known %v, want %v", f.Lock, f.Scenario, f.Expected, f.Known, want)
		}
	}
}

// TestDriverLibrary: a driver lock's column names the library and version
// its hello gave, as the run recorded them.
func TestDriverLibrary(t *testing.T) {
	if lib, v := driverLibrary(map[string]any{"driver": "redis-py", "library": "redis", "version": "8.1.0"}); lib != "redis" || v != "8.1.0" {
		t.Errorf("driverLibrary: %q %q, want redis 8.1.0", lib, v)
	}
	if lib, _ := driverLibrary(map[string]any{"key_prefix": "lc:"}); lib != "" {
		t.Errorf("a built-in's lock config names library %q", lib)
	}
}

// A lock the bench cannot run on its servers (simple-wait needs replicas)
// gets no bench step, and its cost cells say why instead of a bench of 0
// cycles/s.
func TestCardDoesNotBenchALockThatNeedsReplicas(t *testing.T) {
	s, err := scenarios.Load("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	o := CardOptions{Locks: []string{"simple", "simple-wait"}, Scenarios: []*scenarios.Scenario{s}, Cache: t.TempDir(),
		Budget: time.Nanosecond, BenchDuration: time.Second}
	o.Setup.Backend = "process"
	c, err := RunCard(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Its steps: gc-pause × simple (simple-wait does not apply on a single
	// node) and the bench of simple; none of simple-wait.
	if c.Ran.Runs != 2 {
		t.Errorf("%d steps, want 2: the run of simple and its bench", c.Ran.Runs)
	}
	if c.Locks[0].NotBenched != "" || c.Locks[1].NotBenched != "needs replicas" {
		t.Errorf("not benched: %q, %q", c.Locks[0].NotBenched, c.Locks[1].NotBenched)
	}
	dir := t.TempDir()
	if err := report.WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "card.md")); !strings.Contains(string(md), "| throughput (cycles/s) | not benched | n/a: needs replicas |") {
		t.Errorf("card.md's cost rows do not say why simple-wait was not benched:\n%s", md)
	}
}
