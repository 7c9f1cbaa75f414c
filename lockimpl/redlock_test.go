package lockimpl_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// startMasters starts n independent redis-server processes, stopped at the
// end of the test. It skips when redis-server is not installed.
func startMasters(tb testing.TB, n int) *cluster.Cluster {
	tb.Helper()
	return clustertest.Start(tb, cluster.Spec{Topology: cluster.Independent, Nodes: n}).Cluster
}

// newLocker builds lock name for one client of c, as the workload does: one
// go-redis client per master. hooks[i], when set, is installed on node i's
// client.
func newLocker(tb testing.TB, c *cluster.Cluster, name string, o lockimpl.Options, hooks map[int]redis.Hook) lockimpl.Locker {
	tb.Helper()
	eps := c.Endpoints()
	env := lockimpl.Env{Options: o}
	for i, ep := range eps {
		co := cluster.ClientOptions{}
		if h := hooks[i]; h != nil {
			co.Hooks = []redis.Hook{h}
		}
		env.Conns = append(env.Conns, c.NewClient(ep, co))
		env.Endpoints = append(env.Endpoints, lockimpl.Endpoint{Addr: ep.Addr, MasterName: ep.MasterName, SentinelAddrs: ep.SentinelAddrs})
	}
	lk, err := lockimpl.New(name, env)
	if err != nil {
		tb.Fatalf("new %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = lk.Close() })
	return lk
}

// holders counts the live nodes on which key holds token.
func holders(t *testing.T, c *cluster.Cluster, key, token string) int {
	t.Helper()
	n := 0
	for _, node := range c.Nodes {
		if node.Ctl.State() == "gone" {
			continue
		}
		v, err := c.AdminClient(node).Get(context.Background(), key).Result()
		if err == nil && v == token {
			n++
		} else if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("GET %s on %s: %v", key, node.Name, err)
		}
	}
	return n
}

// pauseNodes freezes nodes (SIGSTOP) until killNodes or the end of the test.
func pauseNodes(t *testing.T, nodes []*cluster.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := n.Ctl.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Ctl.Resume()
		}
	})
}

// killNodes kills nodes (SIGKILL), paused or not.
func killNodes(t *testing.T, nodes []*cluster.Node) {
	t.Helper()
	for _, n := range nodes {
		_ = n.Ctl.Resume()
		if err := n.Ctl.Kill(); err != nil {
			t.Fatal(err)
		}
	}
}

// exclusive runs two lockers in a loop for cycles each on one key and fails
// if their critical sections ever overlap or the plain counter loses updates.
// It returns how many Acquire calls timed out (ErrNotAcquired); those cycles
// are skipped.
func exclusive(t *testing.T, a, b lockimpl.Locker, key string, cycles int) (timeouts int) {
	t.Helper()
	var inside, overlaps, timedOut atomic.Int32
	counter := 0 // unsynchronised on purpose: the lock is the only guard
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, lk := range []lockimpl.Locker{a, b} {
		wg.Go(func() {
			for i := 0; i < cycles; i++ {
				l, err := lk.Acquire(context.Background(), key)
				if errors.Is(err, lockimpl.ErrNotAcquired) {
					timedOut.Add(1)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("acquire %d: %w", i, err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				v := counter
				time.Sleep(100 * time.Microsecond)
				counter = v + 1
				inside.Add(-1)
				if err := l.Release(context.Background()); err != nil {
					errs <- fmt.Errorf("release %d: %w", i, err)
					return
				}
				// Think a little: a locker that re-acquires at once can
				// starve a waiter (none of these locks is fair), and
				// fairness is not what this checks.
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if want := 2*cycles - int(timedOut.Load()); overlaps.Load() != 0 || counter != want {
		t.Fatalf("%d overlapping critical sections, counter %d after %d cycles", overlaps.Load(), counter, want)
	}
	return int(timedOut.Load())
}

func TestRedlockMutualExclusion(t *testing.T) {
	c := startMasters(t, 3)
	o := lockimpl.Options{TTL: time.Second, RetryDelay: time.Millisecond}
	a := newLocker(t, c, "redlock", o, nil)
	b := newLocker(t, c, "redlock", o, nil)
	if n := exclusive(t, a, b, "k", 150); n > 0 {
		t.Fatalf("%d acquires timed out", n)
	}

	l, err := a.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(context.Background(), "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("second TryAcquire of a held key: %v, want ErrNotAcquired", err)
	}
	if got := holders(t, c, "k", l.Token()); got != 3 {
		t.Fatalf("token on %d of 3 nodes, want 3", got)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A minority of nodes down (paused: no answer; killed: refused) does not stop
// an acquire, but a paused node costs its CommandTimeout of validity.
func TestRedlockMinorityDown(t *testing.T) {
	c := startMasters(t, 5)
	ttl := 400 * time.Millisecond
	lk := newLocker(t, c, "redlock", lockimpl.Options{TTL: ttl, CommandTimeout: 100 * time.Millisecond}, nil)
	pauseNodes(t, c.Nodes[:2])
	start := time.Now()
	l, err := lk.Acquire(context.Background(), "paused")
	if err != nil {
		t.Fatalf("acquire with 2 of 5 nodes paused: %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("acquire took %v: it did not wait for the paused nodes' timeout", took)
	}
	if left := time.Until(l.Deadline()); left > ttl-100*time.Millisecond {
		t.Fatalf("validity left %v after waiting 100ms for paused nodes, want <= %v", left, ttl-100*time.Millisecond)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("release with 2 of 5 nodes paused: %v", err)
	}

	killNodes(t, c.Nodes[:2])
	l, err = lk.Acquire(context.Background(), "killed")
	if err != nil {
		t.Fatalf("acquire with 2 of 5 nodes killed: %v", err)
	}
	if got := holders(t, c, "killed", l.Token()); got != 3 {
		t.Fatalf("token on %d live nodes, want 3", got)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Without a majority there is no lock. Silent nodes may have set the key, so
// the attempt is indeterminate; dead nodes are not reliably told apart from
// silent ones (go-redis dials in the background and reports the caller's
// timeout), so either error is right there. Nothing is left on live nodes.
func TestRedlockMajorityDown(t *testing.T) {
	c := startMasters(t, 5)
	lk := newLocker(t, c, "redlock", lockimpl.Options{TTL: 200 * time.Millisecond, AcquireTimeout: 300 * time.Millisecond}, nil)
	pauseNodes(t, c.Nodes[:3])
	_, err := lk.TryAcquire(context.Background(), "k")
	if !errors.Is(err, lockimpl.ErrIndeterminate) {
		t.Fatalf("3 of 5 nodes paused: %v, want ErrIndeterminate", err)
	}
	if n := c.AdminClient(c.Nodes[4]).Exists(context.Background(), "k").Val(); n != 0 {
		t.Fatal("a failed attempt left its key on a live node")
	}
	killNodes(t, c.Nodes[:3])
	l, err := lk.Acquire(context.Background(), "k")
	if l != nil || !(errors.Is(err, lockimpl.ErrNotAcquired) || errors.Is(err, lockimpl.ErrIndeterminate)) {
		t.Fatalf("3 of 5 nodes killed: lease %v, %v; want ErrNotAcquired or ErrIndeterminate", l, err)
	}
	if n := c.AdminClient(c.Nodes[4]).Exists(context.Background(), "k").Val(); n != 0 {
		t.Fatal("a failed attempt left its key on a live node")
	}
}

// delayHook holds every SET reply for d after it arrived: the client is slow
// between the replies and its validity check, as in the slow-acquire scenario.
type delayHook time.Duration

func (delayHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (delayHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h delayHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "set" {
			time.Sleep(time.Duration(h))
		}
		return err
	}
}

// Acquire latency eats validity: a slow reply from one node shortens the
// lease by as much, and a reply slower than the TTL means no lock — unless the
// validity check is skipped.
func TestRedlockValidityReducedByLatency(t *testing.T) {
	c := startMasters(t, 3)
	ttl := 300 * time.Millisecond
	o := lockimpl.Options{TTL: ttl}
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	for _, d := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		lk := newLocker(t, c, "redlock", o, map[int]redis.Hook{2: delayHook(d)})
		key := fmt.Sprintf("delay-%v", d)
		l, err := lk.TryAcquire(context.Background(), key)
		if err != nil {
			t.Fatalf("reply delayed %v: %v", d, err)
		}
		left := time.Until(l.Deadline())
		if left > ttl-d-drift || left < ttl-d-drift-50*time.Millisecond {
			t.Errorf("reply delayed %v: validity left %v, want just under %v", d, left, ttl-d-drift)
		}
		_ = l.Release(context.Background())
	}

	slow := delayHook(ttl + 100*time.Millisecond)
	lk := newLocker(t, c, "redlock", o, map[int]redis.Hook{2: slow})
	if l, err := lk.TryAcquire(context.Background(), "slow"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("reply delayed past the TTL: lease %v, err %v; want ErrNotAcquired", l, err)
	}
	broken := newLocker(t, c, "redlock-no-validity", o, map[int]redis.Hook{2: slow})
	start := time.Now()
	l, err := broken.TryAcquire(context.Background(), "slow2")
	if err != nil {
		t.Fatalf("redlock-no-validity, reply delayed past the TTL: %v; want a lease", err)
	}
	// It never measured the elapsed time, so it promises a whole TTL (less
	// drift) from the end of the acquire, although its keys already expired.
	end := time.Now()
	if d := l.Deadline(); d.Before(start.Add(2*ttl)) || d.After(end.Add(ttl)) {
		t.Fatalf("redlock-no-validity: deadline %v after start, want about TTL after the acquire returned (%v)", d.Sub(start), end.Sub(start)+ttl)
	}
	if err := l.Release(context.Background()); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("release of a lease whose keys expired while acquiring: %v, want ErrNotOwner", err)
	}

	// A large drift allowance makes validity run out while the keys still
	// live: the failed attempt must delete them at once, not leave them to expire.
	lk = newLocker(t, c, "redlock", lockimpl.Options{TTL: ttl, Drift: 0.5}, map[int]redis.Hook{2: delayHook(200 * time.Millisecond)})
	if _, err := lk.TryAcquire(context.Background(), "undo"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("validity <= 0 with drift 0.5: %v, want ErrNotAcquired", err)
	}
	for _, n := range c.Nodes {
		if c.AdminClient(n).Exists(context.Background(), "undo").Val() != 0 {
			t.Fatalf("node %s still holds the key of a rejected attempt", n.Name)
		}
	}
}

func TestRedlockReleaseEverywhere(t *testing.T) {
	c := startMasters(t, 5)
	lk := newLocker(t, c, "redlock", lockimpl.Options{TTL: 2 * time.Second}, nil)
	ctx := context.Background()
	l, err := lk.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if got := holders(t, c, "k", l.Token()); got != 5 {
		t.Fatalf("token on %d of 5 nodes", got)
	}
	// Our key lost on 4 nodes still counts as ours on the fifth.
	for _, n := range c.Nodes[1:] {
		c.AdminClient(n).Del(ctx, "k")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release with the key on 1 node: %v", err)
	}
	if got := holders(t, c, "k", l.Token()); got != 0 {
		t.Fatalf("token on %d nodes after release", got)
	}
	if err := l.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("second release: %v, want ErrNotOwner", err)
	}

	// Someone else's key is never touched.
	l, err = lk.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		c.AdminClient(n).Set(ctx, "k", "other", 0)
	}
	if err := l.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("release after another owner took the key: %v, want ErrNotOwner", err)
	}
	if got := holders(t, c, "k", "other"); got != 5 {
		t.Fatalf("the other owner's key survives on %d of 5 nodes", got)
	}
}

func TestRedlockConfig(t *testing.T) {
	c := startMasters(t, 3)
	lk := newLocker(t, c, "redlock", lockimpl.Options{TTL: 100 * time.Millisecond}, nil)
	cf, ok := lk.(lockimpl.Configured)
	if !ok {
		t.Fatal("redlock does not report its config")
	}
	if got := cf.Config(); got["quorum"] != 2 || got["nodes"] != 3 || got["validity_check"] != true {
		t.Fatalf("config %v", got)
	}
}

// BenchmarkRedlock measures one uncontended acquire+release: the fan-out
// cost of 5 nodes against 1.
func BenchmarkRedlock(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			c := startMasters(b, n)
			lk := newLocker(b, c, "redlock", lockimpl.Options{TTL: time.Second}, nil)
			ctx := context.Background()
			for b.Loop() {
				l, err := lk.TryAcquire(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
