// Command customlock shows how a lock written outside lockchaos plugs in: it
// implements lockimpl.Locker, registers itself by name, and runs a built-in
// scenario through the runner, as `lockchaos run --lock seq-lock` would.
//
//	go run ./examples/customlock -scenario smoke
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "seq-lock",
		Kind:        lockimpl.User,
		Description: "example: SET NX PX with a readable token client-<id>#<n>; Lua compare-and-delete",
	}, func(env lockimpl.Env) (lockimpl.Locker, error) { return &seqLock{env: env, conn: env.Conns[0]}, nil })
}

// seqLock is SET key token NX PX ttl where the token names its owner and
// counts its acquires ("client-3#17"). Unique within one run, which is all
// the harness needs; a lock shared between programs wants a random token.
type seqLock struct {
	env  lockimpl.Env
	conn redis.UniversalClient
	n    atomic.Uint64
}

var unlock = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *seqLock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o := &l.env.Options // defaults already filled in by lockimpl.New
	token := fmt.Sprintf("client-%d#%d", l.env.ClientID, l.n.Add(1))
	start := l.env.Clock.Now() // the injected clock, so clock-skew faults reach us
	ctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	ok, err := l.conn.SetNX(ctx, key, token, o.TTL).Result()
	switch {
	case lockimpl.IsIndeterminate(err):
		return nil, fmt.Errorf("seq-lock acquire %s: %w: %w", key, lockimpl.ErrIndeterminate, err)
	case err != nil:
		return nil, fmt.Errorf("seq-lock acquire %s: %w", key, err)
	case !ok:
		return nil, lockimpl.ErrNotAcquired
	}
	return &lease{key: key, token: token, deadline: start.Add(o.TTL), lock: l}, nil
}

// Acquire polls every RetryDelay until AcquireTimeout.
func (l *seqLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, l.env.Options.AcquireTimeout)
	defer cancel()
	for {
		le, err := l.TryAcquire(ctx, key)
		if !errors.Is(err, lockimpl.ErrNotAcquired) {
			return le, err
		}
		if l.env.Clock.Sleep(ctx, l.env.Options.RetryDelay) != nil {
			return nil, lockimpl.ErrNotAcquired
		}
	}
}

func (l *seqLock) Close() error { return nil }

type lease struct {
	key, token string
	deadline   time.Time
	lock       *seqLock
}

func (le *lease) Key() string           { return le.key }
func (le *lease) Token() string         { return le.token }
func (le *lease) Fence() (uint64, bool) { return 0, false }
func (le *lease) Deadline() time.Time   { return le.deadline }
func (le *lease) Lost() <-chan struct{} { return nil } // cannot know
func (le *lease) Depth() int            { return 1 }

func (le *lease) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, le.lock.env.Options.CommandTimeout)
	defer cancel()
	n, err := unlock.Run(ctx, le.lock.conn, []string{le.key}, le.token).Int()
	switch {
	case lockimpl.IsIndeterminate(err):
		return fmt.Errorf("seq-lock release %s: %w: %w", le.key, lockimpl.ErrIndeterminate, err)
	case err != nil:
		return fmt.Errorf("seq-lock release %s: %w", le.key, err)
	case n == 0:
		return lockimpl.ErrNotOwner
	}
	return nil
}

func main() {
	name := flag.String("scenario", "smoke", "built-in scenario ("+fmt.Sprint(scenarios.BuiltinNames())+")")
	backend := flag.String("backend", "auto", "auto | process | embedded | docker")
	out := flag.String("out", "", "run directory (default runs/<scenario>-seq-lock-<time>)")
	flag.Parse()

	s, err := scenarios.Builtin(*name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitBadInput)
	}
	res, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "seq-lock", Backend: *backend, Out: *out, Expect: true})
	if res == nil || res.Results == nil {
		fmt.Fprintln(os.Stderr, "run failed:", err)
		os.Exit(runner.ExitCodeOf(err))
	}
	r := res.Results
	fmt.Printf("%s with seq-lock on %s: verdict %s, %s (run dir %s)\n", r.Scenario, r.Backend, r.Verdict, r.Outcome, res.Dir)
	checks := make([]string, 0, len(r.Checks))
	for c := range r.Checks {
		checks = append(checks, c)
	}
	sort.Strings(checks)
	for _, c := range checks {
		fmt.Printf("  %-18s %-8s %d violations\n", c, r.Checks[c].Verdict, r.Checks[c].Violations)
	}
	os.Exit(res.ExitCode)
}
