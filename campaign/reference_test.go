package campaign_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A user's lock registered with the capabilities of a built-in correct lock
// runs in the matrix wherever that built-in runs (the catalog and the
// sweep), judged there by the built-in's expectation (invalid relaxed to
// any) when the scenario names none of its own; where it runs and the
// built-in does not, a listed lock with its capabilities stands for it (the
// redlock-like lock and redsync on a cluster). The matrix runs with a
// context already done: it decides every cell's applicability and starts
// none. (runner's TestNewCorrectLockRunsWhereItsReferenceRuns places a new correct
// reference of each set of capabilities the same way.)
func TestUserLockRunsWhereItsReferenceRuns(t *testing.T) {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := scenarios.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, sweep...)
	never := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("never built") }
	for _, builtin := range []string{"simple", "fenced", "reentrant", "watchdog", "redlock", "simple-wait"} {
		bi, _, err := lockimpl.Lookup(builtin)
		if err != nil {
			t.Fatal(err)
		}
		user := bi
		user.Name, user.Kind, user.Description = "test-user-like-"+builtin, lockimpl.User, "test"
		lockimpl.Register(user, never)
		if got := runner.CapabilityReference(user); got != builtin {
			t.Errorf("%s: capability reference %s, want %s", user.Name, got, builtin)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m, err := campaign.RunMatrix(ctx, campaign.MatrixOptions{Locks: []string{builtin, user.Name}, Scenarios: all, Out: t.TempDir(), Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		applies := map[string]map[string]bool{}
		for _, c := range m.Cells {
			if applies[c.Scenario] == nil {
				applies[c.Scenario] = map[string]bool{}
			}
			applies[c.Scenario][c.Lock] = c.Applicable
		}
		runs := 0
		for _, s := range all {
			b, u := applies[s.Name][builtin], applies[s.Name][user.Name]
			if b && !u {
				t.Errorf("%s: %s runs, the user lock %s does not", s.Name, builtin, user.Name)
			}
			if u && !b {
				if name, _, ok := runner.StandIn(user, s); !ok || name == builtin {
					t.Errorf("%s: the user lock %s runs, %s does not, and no other listed lock stands for it (%q)", s.Name, user.Name, builtin, name)
				}
				continue
			}
			if !b {
				continue
			}
			runs++
			if got, want := runner.ExpectationFor(s, user.Name), runner.RelaxInvalid(s.Expectation(builtin)); !equalExp(got, want) {
				t.Errorf("%s: %s judged by %v, want %s's %v", s.Name, user.Name, got, builtin, want)
			}
		}
		t.Logf("%s and %s: %d of %d scenarios", builtin, user.Name, runs, len(all))
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
