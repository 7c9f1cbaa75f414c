package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// stuckLock is simple, except that client 0's second acquire blocks in a
// call that ignores its context until the test ends: a library stuck in
// its own command.
type stuckLock struct {
	lockimpl.Locker
	client  int
	n       int
	mu      sync.Mutex
	release <-chan struct{}
}

func (l *stuckLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	l.mu.Lock()
	l.n++
	stuck := l.client == 0 && l.n == 2
	l.mu.Unlock()
	if stuck {
		<-l.release
		return nil, lockimpl.ErrNotAcquired
	}
	return l.Locker.Acquire(ctx, key)
}

// A client that never returns from a call does not hang its run: the run
// ends a bounded time after its cancellation, says so in its notes, and
// the rest of the run (its check, its results) happens.
func TestStuckClientDoesNotHangTheRun(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	restore := runner.SetAbandonAfter(300 * time.Millisecond)
	defer restore()
	lockimpl.Register(lockimpl.Info{Name: "test-stuck", Kind: lockimpl.User, Description: "test"},
		func(env lockimpl.Env) (lockimpl.Locker, error) {
			lk, err := lockimpl.New("simple", env)
			if err != nil {
				return nil, err
			}
			return &stuckLock{Locker: lk, client: env.ClientID, release: release}, nil
		})
	s, err := scenarios.Parse([]byte("name: stuck\nduration: 1s\nrecovery: 0s\nlock: {ttl: 1s, acquire_timeout: 100ms}\nworkload: {clients: 2, keys: 2, hold: 5ms, think: 5ms}\n"), "stuck.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	done := make(chan struct{})
	var o *runner.Outcome
	var runErr error
	start := time.Now()
	go func() {
		defer close(done)
		o, runErr = runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "test-stuck", Setup: runner.Setup{Backend: "process"}, Out: out})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end within 30 s of a stuck client")
	}
	if runErr != nil || o == nil || o.Results == nil {
		t.Fatalf("run: %v (outcome %v)", runErr, o)
	}
	took := time.Since(start)
	if !slicesHas(o.Results.Notes, "clients [0] were still in a call") {
		t.Errorf("notes %q: want client 0 named as abandoned", o.Results.Notes)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Error(err)
	}
	t.Logf("run ended after %v", took)
}

func slicesHas(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
