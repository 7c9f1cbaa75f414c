package lockimpl_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Declarations that contradict each other are refused at registration.
func TestRegisterChecksInfo(t *testing.T) {
	f := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, nil }
	for _, tc := range []struct {
		info lockimpl.Info
		want string
	}{
		{lockimpl.Info{Name: "has space"}, "containing a space"},
		{lockimpl.Info{Name: "x-kind", Kind: "weird"}, `kind "weird"`},
		{lockimpl.Info{Name: "x-broken", Kind: lockimpl.Broken}, "must say its Mistake"},
		{lockimpl.Info{Name: "x-both", NeedsReplicas: true, MinNodes: 3}, "exclude each other"},
		{lockimpl.Info{Name: "x-neg", MinNodes: -1}, "negative"},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("Register(%+v): panic %v, want one naming %q", tc.info, r, tc.want)
				}
			}()
			lockimpl.Register(tc.info, f)
		}()
		if _, _, err := lockimpl.Lookup(tc.info.Name); err == nil {
			t.Errorf("%s was registered anyway", tc.info.Name)
		}
	}
}

// saysReentrant is a Locker that claims reentrancy through the old
// interface without declaring it in Info.
type saysReentrant struct{}

func (saysReentrant) Acquire(context.Context, string) (lockimpl.Lease, error)    { return nil, nil }
func (saysReentrant) TryAcquire(context.Context, string) (lockimpl.Lease, error) { return nil, nil }
func (saysReentrant) Close() error                                               { return nil }
func (saysReentrant) Reentrant() bool                                            { return true }

// Reentrancy is declared once, in Info: a Locker that says otherwise is
// refused when built, since the workload would not re-enter it.
func TestReentrancyDeclaredInInfo(t *testing.T) {
	lockimpl.Register(lockimpl.Info{Name: "test-says-reentrant", Description: "test"},
		func(lockimpl.Env) (lockimpl.Locker, error) { return saysReentrant{}, nil })
	conn := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer conn.Close()
	_, err := lockimpl.New("test-says-reentrant", lockimpl.Env{Conns: []redis.UniversalClient{conn}})
	if err == nil || !strings.Contains(err.Error(), "declare it in Info") {
		t.Fatalf("New: %v, want the undeclared reentrancy refused", err)
	}
}

type testNeeds struct{}

func (testNeeds) OwnTraffic() bool                               { return true }
func (testNeeds) ClockPreload() (string, error)                  { return "", errors.New("no libfaketime here") }
func (testNeeds) BlockLoop() error                               { return nil }
func (testNeeds) Cancel() error                                  { return nil }
func (testNeeds) Extension(string) error                         { return nil }
func (testNeeds) APIModes() []string                             { return nil }
func (testNeeds) TasksPerProcess(map[string]string) (int, error) { return 1, nil }

// A lock in a process of its own says what that process needs of a run;
// one in the harness's process has no such needs.
func TestProcessNeedsOf(t *testing.T) {
	if _, ok := lockimpl.ProcessNeedsOf("simple"); ok {
		t.Error("simple runs in the harness's process, yet has process needs")
	}
	if _, ok := lockimpl.ProcessNeedsOf("no-such-lock"); ok {
		t.Error("an unknown lock has process needs")
	}
	lockimpl.RegisterProcess(lockimpl.Info{Name: "test-process-needs", Description: "a lock in a process of its own"},
		func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("not built in this test") }, testNeeds{})
	p, ok := lockimpl.ProcessNeedsOf("test-process-needs")
	if !ok || !p.OwnTraffic() {
		t.Fatalf("ProcessNeedsOf = %v, %v: want the needs it was registered with", p, ok)
	}
}
