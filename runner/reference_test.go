package runner_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A new correct built-in with the capabilities of each correct built-in
// is placed as a user's lock with its capabilities is (campaign's
// TestUserLockRunsWhereItsReferenceRuns), without a catalog edit; a broken lock
// stays where it is named.
func TestNewCorrectLockRunsWhereItsReferenceRuns(t *testing.T) {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := scenarios.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, sweep...)
	for _, builtin := range []string{"simple", "fenced", "reentrant", "watchdog", "redlock", "simple-wait"} {
		bi, _, err := lockimpl.Lookup(builtin)
		if err != nil {
			t.Fatal(err)
		}
		newCorrectLockRunsWhereItsReferenceRuns(t, all, bi)
	}
	// A broken lock stays where it is named.
	if br, _, _ := lockimpl.Lookup("get-del"); runner.StandsByCapabilities(br) {
		t.Errorf("a broken lock stands by its capabilities")
	}
}

// newCorrectLockRunsWhereItsReferenceRuns: a new correct built-in with the
// capabilities of the correct built-in bi runs wherever bi runs and is
// judged by bi's expectation (invalid relaxed to any) where the scenario
// names none of its own, without a catalog edit (runner.StandsByCapabilities); bi,
// the reference of its capabilities, runs only where it is named. The new lock is
// not registered: Applicable and the expectation take its Info.
func newCorrectLockRunsWhereItsReferenceRuns(t *testing.T, all []*scenarios.Scenario, bi lockimpl.Info) {
	t.Helper()
	if runner.StandsByCapabilities(bi) {
		t.Errorf("%s stands by its capabilities: it is the reference of its capabilities", bi.Name)
	}
	nl := bi
	nl.Name = "test-correct-like-" + bi.Name
	if !runner.StandsByCapabilities(nl) {
		t.Fatalf("%s does not stand by its capabilities", nl.Name)
	}
	for _, s := range all {
		b, _ := runner.Applicable(bi, s)
		n, why := runner.Applicable(nl, s)
		if b && !n {
			t.Errorf("%s: %s runs, %s does not (%s)", s.Name, bi.Name, nl.Name, why)
		}
		if n && !b {
			// Where bi cannot run, a listed lock with the same
			// capabilities stands for it (redsync on a cluster).
			if name, _, ok := runner.StandIn(nl, s); !ok || name == bi.Name {
				t.Errorf("%s: %s runs, %s does not, and no other listed lock stands for it (%q)", s.Name, nl.Name, bi.Name, name)
			}
			continue
		}
		if b {
			if got, want := runner.ExpectationForInfo(s, nl), runner.RelaxInvalid(s.Expectation(bi.Name)); !equalExp(got, want) {
				t.Errorf("%s: %s judged by %v, want %s's %v", s.Name, nl.Name, got, bi.Name, want)
			}
		}
	}
}

// A user's lock with capabilities no listed lock has does not run in a
// scenario with a locks: list, and says why; one that renews but is not
// reentrant stands with the watchdog but not where the workload re-enters.
func TestUserLockStandIn(t *testing.T) {
	never := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("never built") }
	lockimpl.Register(lockimpl.Info{Name: "test-user-renews", Kind: lockimpl.User, Description: "test", Renews: true}, never)
	info, _, err := lockimpl.Lookup("test-user-renews")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario string
		ok       bool
	}{{"renewal-starved", true}, {"holder-partitioned-long", true}, {"reentrant-expiry", false}, {"slow-acquire", false}, {"gc-pause", true}} {
		s, err := scenarios.Builtin(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		ok, why := runner.Applicable(info, s)
		if ok != tc.ok || !ok && why == "" {
			t.Errorf("%s: applicable %v (%q), want %v", tc.scenario, ok, why, tc.ok)
		}
	}
	// A built-in is not a user lock: its list entry is its own.
	bi, _, _ := lockimpl.Lookup("renew-false-success")
	s, _ := scenarios.Builtin("renewal-starved")
	if ok, _ := runner.Applicable(bi, s); ok || slices.Contains(s.Locks, bi.Name) {
		t.Errorf("renew-false-success applicable in renewal-starved, which does not list it")
	}
}

func equalExp(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
