package lockimpl_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// server is one redis-server process for a test, with an admin client that
// bypasses every hook.
type server struct {
	c     *cluster.Cluster
	admin *redis.Client
}

func startServer(tb testing.TB) *server {
	tb.Helper()
	c := clustertest.Start(tb, cluster.Spec{Topology: cluster.Single}).Cluster
	return &server{c: c, admin: c.AdminClient(c.Nodes[0])}
}

// locker builds lock name on its own connection (with hooks), as the
// harness does, and closes it at the end of the test.
func (s *server) locker(tb testing.TB, name string, o lockimpl.Options, hooks ...redis.Hook) lockimpl.Locker {
	return s.lockerEnv(tb, name, lockimpl.Env{Options: o}, hooks...)
}

func (s *server) lockerEnv(tb testing.TB, name string, env lockimpl.Env, hooks ...redis.Hook) lockimpl.Locker {
	tb.Helper()
	env.Conns = s.lockerEnvConns(hooks...)
	lk, err := lockimpl.New(name, env)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = lk.Close() })
	return lk
}

// lockerEnvConns is Env.Conns for a new client of the server.
func (s *server) lockerEnvConns(hooks ...redis.Hook) []redis.UniversalClient {
	return []redis.UniversalClient{s.c.NewClient(s.c.Endpoints()[0], cluster.ClientOptions{Hooks: hooks})}
}

// owns reports whether token holds key on the server: the string value of
// the simple family, or a field of the reentrant family's hash.
func (s *server) owns(tb testing.TB, key, token string) bool {
	tb.Helper()
	ctx := context.Background()
	typ, err := s.admin.Type(ctx, key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	switch typ {
	case "none":
		return false
	case "hash":
		ok, err := s.admin.HExists(ctx, key, token).Result()
		if err != nil {
			tb.Fatal(err)
		}
		return ok
	}
	v, err := s.admin.Get(ctx, key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return v == token
}

func (s *server) exists(tb testing.TB, key string) bool {
	tb.Helper()
	n, err := s.admin.Exists(context.Background(), key).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n == 1
}

// awaitGone waits until key has expired on the server.
func (s *server) awaitGone(tb testing.TB, key string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.exists(tb, key) {
		if time.Now().After(deadline) {
			tb.Fatalf("key %s still exists after 5s", key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustAcquire(tb testing.TB, lk lockimpl.Locker, key string) lockimpl.Lease {
	tb.Helper()
	l, err := lk.TryAcquire(context.Background(), key)
	if err != nil {
		tb.Fatalf("acquire %s: %v", key, err)
	}
	return l
}

func mustRelease(tb testing.TB, l lockimpl.Lease) {
	tb.Helper()
	if err := l.Release(context.Background()); err != nil {
		tb.Fatalf("release %s: %v", l.Key(), err)
	}
}

// singleNode are the registered locks that run on one plain master (not
// simple-wait, which needs a replica).
var singleNode = []string{"simple", "reentrant", "watchdog", "fenced",
	"setnx-expire", "get-del", "del-no-owner", "local-reentrant", "watch-unlock",
	"deadline-from-reply", "server-clock-deadline"}

// cmdHook runs before every command and pipeline of a connection, with the
// names of the commands.
type cmdHook func(ctx context.Context, names []string) error

func (h cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h(ctx, []string{cmd.Name()}); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		if err := h(ctx, names); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// beforeFirst returns a hook that runs f once, before the first command or
// pipeline that includes a command called name, while armed is set.
func beforeFirst(name string, armed *atomic.Bool, f func()) redis.Hook {
	var once sync.Once
	return cmdHook(func(_ context.Context, names []string) error {
		if armed.Load() && slices.Contains(names, name) {
			once.Do(f)
		}
		return nil
	})
}

func TestRegistered(t *testing.T) {
	want := map[string]lockimpl.Info{
		"simple-wait":     {Kind: lockimpl.Correct, NeedsReplicas: true},
		"reentrant":       {Kind: lockimpl.Correct, Reentrant: true},
		"watchdog":        {Kind: lockimpl.Correct, Reentrant: true, Renews: true},
		"fenced":          {Kind: lockimpl.Correct, Fenced: true},
		"setnx-expire":    {Kind: lockimpl.Broken},
		"get-del":         {Kind: lockimpl.Broken},
		"del-no-owner":    {Kind: lockimpl.Broken},
		"local-reentrant": {Kind: lockimpl.Broken, Reentrant: true},
		"watch-unlock":    {Kind: lockimpl.Control},

		"deadline-from-reply":   {Kind: lockimpl.Broken},
		"server-clock-deadline": {Kind: lockimpl.Broken},
		"unknown-acquire-held":  {Kind: lockimpl.Broken},
		"renew-timeout-ack":     {Kind: lockimpl.Broken, Renews: true},
	}
	for name, w := range want {
		info, _, err := lockimpl.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Kind != w.Kind || info.Capabilities() != w.Capabilities() {
			t.Errorf("%s: kind %s, %s; want %s, %s", name, info.Kind, info.Capabilities(), w.Kind, w.Capabilities())
		}
		if info.Description == "" || (info.Kind == lockimpl.Broken) != (info.Mistake != "") {
			t.Errorf("%s: description %q, mistake %q", name, info.Description, info.Mistake)
		}
	}
}

// Config reports the effective options, defaults filled in.
func TestConfig(t *testing.T) {
	s := startServer(t)
	for _, tc := range []struct{ name, field, want string }{
		{"simple", "ttl", "500ms"},
		{"fenced", "acquire_timeout", "1s"},
		{"watchdog", "renew_interval", "166.666666ms"},
		{"simple-wait", "replica_timeout", "100ms"},
	} {
		lk := s.locker(t, tc.name, lockimpl.Options{})
		cf, ok := lk.(interface{ Config() map[string]any })
		if !ok {
			t.Fatalf("%s has no Config", tc.name)
		}
		if got := cf.Config()[tc.field]; got != tc.want {
			t.Errorf("%s: %s = %v, want %s", tc.name, tc.field, got, tc.want)
		}
	}
}

// Two lockers on one key: the second is refused while the first holds, and
// gets it (woken by the release) once it is freed.
func TestHandOff(t *testing.T) {
	s := startServer(t)
	for _, name := range singleNode {
		t.Run(name, func(t *testing.T) {
			o := lockimpl.Options{TTL: 5 * time.Second, AcquireTimeout: 100 * time.Millisecond}
			a, b := s.locker(t, name, o), s.locker(t, name, o)
			key := "handoff-" + name
			la := mustAcquire(t, a, key)
			if la.Depth() != 1 || la.Key() != key || !s.owns(t, key, la.Token()) {
				t.Fatalf("lease depth %d key %s; server owner check failed", la.Depth(), la.Key())
			}
			if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("second TryAcquire: %v, want ErrNotAcquired", err)
			}
			if _, err := b.Acquire(context.Background(), key); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("second Acquire: %v, want ErrNotAcquired after the acquire timeout", err)
			}
			got := make(chan error, 1)
			go func() {
				lb, err := b.Acquire(context.Background(), key)
				if err == nil {
					err = lb.Release(context.Background())
				}
				got <- err
			}()
			time.Sleep(20 * time.Millisecond)
			mustRelease(t, la)
			if err := <-got; err != nil {
				t.Fatalf("waiting Acquire after release: %v", err)
			}
			if s.exists(t, key) {
				t.Fatal("key left after both released")
			}
		})
	}
}

// Several lockers in a loop: never two inside the critical section.
func TestMutualExclusion(t *testing.T) {
	s := startServer(t)
	for _, name := range singleNode {
		t.Run(name, func(t *testing.T) {
			o := lockimpl.Options{TTL: 5 * time.Second, AcquireTimeout: 5 * time.Second}
			var inside, entries atomic.Int32
			var wg sync.WaitGroup
			for range 4 {
				lk := s.locker(t, name, o)
				wg.Go(func() {
					for range 25 {
						l, err := lk.Acquire(context.Background(), "mutex-"+name)
						if err != nil {
							t.Error(err)
							return
						}
						if inside.Add(1) != 1 {
							t.Error("two holders inside the critical section")
						}
						entries.Add(1)
						time.Sleep(100 * time.Microsecond)
						inside.Add(-1)
						if err := l.Release(context.Background()); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if entries.Load() != 100 {
				t.Fatalf("%d entries, want 100", entries.Load())
			}
		})
	}
}

// A holder whose key expired and was taken by another client releases: the
// correct locks refuse with ErrNotOwner and leave the new owner's key;
// del-no-owner deletes it and reports success.
func TestStaleRelease(t *testing.T) {
	s := startServer(t)
	for _, name := range singleNode {
		if name == "watchdog" {
			continue // it renews; see TestWatchdogLostWhenKeyDeleted
		}
		t.Run(name, func(t *testing.T) {
			key := "stale-" + name
			a := s.locker(t, name, lockimpl.Options{TTL: 50 * time.Millisecond})
			b := s.locker(t, name, lockimpl.Options{TTL: 5 * time.Second})
			la := mustAcquire(t, a, key)
			s.awaitGone(t, key)
			lb := mustAcquire(t, b, key)
			err := la.Release(context.Background())
			if name == "del-no-owner" {
				if err != nil || s.exists(t, key) {
					t.Fatalf("release: %v, key exists %v; want the new owner's key deleted with no error", err, s.exists(t, key))
				}
				return
			}
			if !errors.Is(err, lockimpl.ErrNotOwner) {
				t.Fatalf("stale release: %v, want ErrNotOwner", err)
			}
			if !s.owns(t, key, lb.Token()) {
				t.Fatal("stale release removed the new owner's key")
			}
			mustRelease(t, lb)
		})
	}
}

// A release of a lease that is already released is refused: it would undo
// someone else's level (or hold).
func TestDoubleRelease(t *testing.T) {
	s := startServer(t)
	for _, name := range []string{"reentrant", "watchdog", "local-reentrant"} {
		t.Run(name, func(t *testing.T) {
			lk := s.locker(t, name, lockimpl.Options{TTL: 5 * time.Second})
			key := "double-" + name
			outer := mustAcquire(t, lk, key)
			inner := mustAcquire(t, lk, key)
			mustRelease(t, inner)
			if err := inner.Release(context.Background()); !errors.Is(err, lockimpl.ErrNotOwner) {
				t.Fatalf("second release: %v, want ErrNotOwner", err)
			}
			if !s.owns(t, key, outer.Token()) {
				t.Fatal("a repeated inner release freed the outer hold")
			}
			mustRelease(t, outer)
		})
	}
}
