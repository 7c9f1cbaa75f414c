package campaign

import (
	"runtime/debug"
	"testing"

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
