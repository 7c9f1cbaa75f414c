package runner_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

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
