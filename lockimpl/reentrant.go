package lockimpl

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// reentrant keeps a hash per key, field = the Locker's owner token, value =
// its hold count, changed only by Lua so the check and the change are atomic.
// Every acquire, first or nested, resets the TTL; a release undoes one level
// and deletes the key at zero.
type reentrant struct {
	nodeBase
	owner string
	// levels are the levels of each key this Locker's leases hold (under
	// mu): the acquire script sets the server's count back to them, so a
	// release that never reached the server (a cancelled context, a cut
	// link) does not leave a level the client's next acquire re-enters
	// and its last release then leaves behind. With a count one above the
	// client's, its releases never freed the key and the watchdog renewed
	// it after every lease had ended (the cancel fault, cancelled-request:
	// liveness invalid 4/4).
	mu     sync.Mutex
	levels map[string]int
	// acquire and release are the scripts enter and leave run: the
	// standard ones (AcquireReentrant, ReleaseReentrant) or a broken
	// control's.
	acquire, release *redis.Script
}

func init() {
	Register(Info{
		Name:        "reentrant",
		Kind:        Correct,
		Description: "hash field = owner, value = hold count; Lua HINCRBY+PEXPIRE acquire, HINCRBY -1 release, DEL at 0",
		Reentrant:   true,
	}, func(env Env) (Locker, error) { return newReentrant(env), nil })
}

func newReentrant(env Env) *reentrant {
	return &reentrant{nodeBase: newNodeBase(env), owner: NewToken(), acquire: reentrantAcquireScript, release: reentrantReleaseScript, levels: map[string]int{}}
}

func (r *reentrant) Reentrant() bool { return true }

func (r *reentrant) Acquire(ctx context.Context, key string) (Lease, error) {
	return r.wait(ctx, key, r.TryAcquire)
}

func (r *reentrant) TryAcquire(ctx context.Context, key string) (Lease, error) {
	start, n, err := r.enter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &basicLease{
		key: key, token: r.owner, deadline: start.Add(r.env.Options.TTL), depth: n,
		release: releaseOnce(key, func(ctx context.Context) error { _, err := r.leave(ctx, key); return err }),
	}, nil
}

// enter runs the acquire script (AcquireReentrant). It returns when the
// script was sent (by the client's clock) and the hold count after it.
func (r *reentrant) enter(ctx context.Context, key string) (time.Time, int, error) {
	start := r.env.Clock.Now()
	r.mu.Lock()
	held := r.levels[key]
	r.mu.Unlock()
	n, err := acquireReentrantHolding(ctx, r.conn, &r.env.Options, r.acquire, key, r.owner, held)
	if err == nil {
		r.mu.Lock()
		r.levels[key] = held + 1
		r.mu.Unlock()
	}
	return start, n, err
}

// leave runs the release script (ReleaseReentrant) and returns the hold
// count left.
func (r *reentrant) leave(ctx context.Context, key string) (int, error) {
	// The level is given up whatever the release's outcome: its lease is
	// released, and the client holds one level fewer by its own count.
	r.mu.Lock()
	if r.levels[key] <= 1 {
		delete(r.levels, key)
	} else {
		r.levels[key]--
	}
	r.mu.Unlock()
	return releaseReentrant(ctx, r.conn, &r.env.Options, r.release, key, r.owner)
}
