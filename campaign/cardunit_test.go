package campaign

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
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
			if _, ok := adapterModules[l.Name]; !ok {
				t.Errorf("adapter %s has no module in adapterModules: the card cannot tell its version", l.Name)
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
