package runner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// prefixedLock is del-no-owner writing "lock.<key>" instead of the key it
// is given, as many libraries name their own keys. declared: it says so
// (lockimpl.KeyMapper).
type prefixedLock struct{ inner lockimpl.Locker }

type prefixedDeclared struct{ prefixedLock }

func (prefixedDeclared) RedisKeys(key string) []string { return []string{"lock." + key} }

// prefixedLease reports the key it was given, as a library's lease does.
type prefixedLease struct {
	lockimpl.Lease
	key string
}

func (l prefixedLease) Key() string { return l.key }

func (p prefixedLock) wrap(key string, l lockimpl.Lease, err error) (lockimpl.Lease, error) {
	if err != nil {
		return nil, err
	}
	return prefixedLease{l, key}, nil
}
func (p prefixedLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	l, err := p.inner.Acquire(ctx, "lock."+key)
	return p.wrap(key, l, err)
}
func (p prefixedLock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	l, err := p.inner.TryAcquire(ctx, "lock."+key)
	return p.wrap(key, l, err)
}
func (p prefixedLock) Close() error { return p.inner.Close() }

func init() {
	build := func(declared bool) lockimpl.Factory {
		return func(env lockimpl.Env) (lockimpl.Locker, error) {
			in, err := lockimpl.New("del-no-owner", env)
			if err != nil {
				return nil, err
			}
			if declared {
				return prefixedDeclared{prefixedLock{in}}, nil
			}
			return prefixedLock{in}, nil
		}
	}
	lockimpl.Register(lockimpl.Info{Name: "test-prefixed-del", Kind: lockimpl.User, Description: "del-no-owner on lock.<key>"}, build(false))
	lockimpl.Register(lockimpl.Info{Name: "test-prefixed-del-declared", Kind: lockimpl.User, Description: "del-no-owner on lock.<key>, declared"}, build(true))
}

// A lock that names its own key ("lock.<p>{k0}") and deletes without an
// owner check, run against a real server: the record and the observer
// keep its key (keyspace.Prefix.Names), and the unlock check finds its
// late DEL of the next holder's key, whether it declares its key (OpKeys)
// or the checker learns it from its connection's writes. Before issue 40
// both runs said unlock valid, server_dels 0.
func TestRenamedKeyDeclaredThroughTheRunner(t *testing.T) {
	renamedRun(t, "test-prefixed-del-declared")
}

func TestRenamedKeyLearnedThroughTheRunner(t *testing.T) {
	renamedRun(t, "test-prefixed-del")
}

func renamedRun(t *testing.T, lock string) {
	s, err := scenarios.Parse([]byte(`name: renamed
topology: single
duration: 500ms
lock: {ttl: 100ms}
workload: {clients: 3, keys: 1, hold: 10ms, think: 2ms, resource: counter}
faults:
  - {kind: pause-client, at: 100ms, every: 250ms, target: holder, point: before-release, duration: 200ms}
`), "renamed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), lock)
	if _, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: lock, Setup: runner.Setup{Backend: "process"}, Out: out}); err != nil {
		t.Fatalf("%s: %v", lock, err)
	}
	hist := history.FileIn(out)
	r, err := checker.CheckFile(hist, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := r.Checks[checker.CheckUnlock]
	found := false
	for _, v := range r.Violations {
		found = found || v.Check == checker.CheckUnlock && v.Cause == checker.CauseNonOwnerDel && v.Key == "k0"
	}
	if u.Verdict != checker.Invalid || !found {
		t.Errorf("unlock %s, %+v (notes %q): want invalid, deleted-by-non-owner on k0", u.Verdict, u, r.Notes)
	}
	// Declared: the run recorded the key (OpKeys) and the checker read
	// it; else the checker learned it.
	how := map[bool]string{true: "reported", false: "learned"}[lock != "test-prefixed-del"]
	mapped := false
	for _, n := range r.Notes {
		mapped = mapped || strings.Contains(n, how+" lock.{k0}")
	}
	if !mapped {
		t.Errorf("notes %q: want the mapping named, %s", r.Notes, how)
	}
	// The observer alone: the declared key's notifications are k0's;
	// nothing is learned without the record, so no verdict then.
	obs, err := checker.CheckFile(hist, checker.Options{NoCommandRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	ou := obs.Checks[checker.CheckUnlock]
	if lock == "test-prefixed-del" && ou.Verdict == checker.Valid || lock != "test-prefixed-del" && fmt.Sprint(ou.Stats["server_dels"]) == "0" {
		t.Errorf("observer only: unlock %s %+v", ou.Verdict, ou)
	}
}
