package adapters

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockchaos/lockchaos/lockimpl"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLock adapts rueidis' rueidislock: a lock kept alive by the
// library (extended every ExtendInterval) and watched through client-side
// caching, whose context is cancelled the moment the key is lost.
//
// It needs its own rueidis client, built from lockimpl.Env.Endpoints[0]. rueidis does
// not go through go-redis, so that client is wrapped (gatedClient) to pass
// every Do/DoMulti — the library's background extensions included —
// through lockimpl.Env.Gate: a paused client's renewals stop, stalls and cuts apply.
// Its subscription (Receive) is not gated: it only listens.
// Its keys are named <Env.KeyPrefix>rueidislock:0:<key>, and its owner
// value is internal (lockimpl.Lease.Token is empty).
//
// Seen in v1.0.79 under load (go test -race): a WithContext waiter is
// sometimes not woken by a release and waits until its context ends (here
// AcquireTimeout) although the lock is free — about 1 wait in 40 in a test
// that hands the lock over 200 times. The likely cause: try's monitoring
// goroutine for a refused key can read the failure count before try
// increments it, and then drops the waiter's gate, so the invalidation that
// should wake it finds no gate. The adapter keeps the library's behaviour:
// it is what the liveness check should see.
type rueidislockLock struct {
	env     lockimpl.Env
	lk      rueidislock.Locker
	noLoop  bool
	closing atomic.Bool // Close ends every lock's context: no loss
}

// rueidisModule is the module rueidislock is a package of.
const rueidisModule = "github.com/redis/rueidis"

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "rueidislock",
		Kind:        lockimpl.Adapter,
		Module:      rueidisModule,
		Description: "rueidis rueidislock on the first node (own rueidis client: go-redis hook faults such as in-acquire pauses do not reach it); auto-extended, Lost on loss",
		// It extends its keys itself and reports none of it (only the
		// loss, a NoteLost when the library cancels the lock's context):
		// declared, so the results say its renewals are invisible.
		Renews: true,
	}, newRueidislock)
}

func newRueidislock(env lockimpl.Env) (lockimpl.Locker, error) {
	if len(env.Endpoints) == 0 {
		return nil, errors.New("rueidislock: no endpoint address in Env (it needs its own rueidis client)")
	}
	ep := env.Endpoints[0]
	co := rueidis.ClientOption{InitAddress: []string{ep.Addr}, Password: ep.Password, ClientName: env.ConnName}
	switch {
	case ep.MasterName != "":
		co.InitAddress = ep.SentinelAddrs
		co.Sentinel = rueidis.SentinelOption{MasterSet: ep.MasterName}
	case len(ep.ClusterAddrs) > 0:
		// rueidis finds a cluster by itself (CLUSTER SLOTS) and follows
		// MOVED/ASK replies, which are refusals: the command did not run.
		co.InitAddress = ep.ClusterAddrs
	}
	// The README's advice: KeyMajority 1 for one Redis instance, and
	// NoLoopTracking when every server is 7.0.5 or newer.
	noLoop := serverAtLeast(env, 7, 0, 5)
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   co,
		KeyValidity:    env.Options.TTL,
		KeyMajority:    1,
		KeyPrefix:      env.KeyPrefix + "rueidislock",
		NoLoopTracking: noLoop,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil || env.Gate == nil {
				return c, err
			}
			return gatedClient{Client: c, gate: env.Gate}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: connect %s: %w", ep.Addr, err)
	}
	return &rueidislockLock{env: env, lk: lk, noLoop: noLoop}, nil
}

// serverAtLeast asks the first node's INFO for its version.
func serverAtLeast(env lockimpl.Env, want ...int) bool {
	ctx, cancel := commandCtx(context.Background(), &env.Options)
	defer cancel()
	info, err := env.Conns[0].Info(ctx, "server").Result()
	if err != nil {
		return false
	}
	_, v, ok := strings.Cut(info, "redis_version:")
	if !ok {
		return false
	}
	v, _, _ = strings.Cut(v, "\r\n")
	parts := strings.Split(strings.TrimSpace(v), ".")
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil || n != w {
			return err == nil && n > w
		}
	}
	return true
}

// Acquire waits in WithContext (woken by invalidations of the key). The
// lock's context must outlive the wait, so the wait is bounded by cancelling
// a detached parent rather than by a deadline, which rueidislock would also
// apply to the lock itself.
func (r *rueidislockLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	parent, cancelParent := context.WithCancel(context.WithoutCancel(ctx))
	timer := time.AfterFunc(r.env.Options.AcquireTimeout, cancelParent)
	stopCtx := context.AfterFunc(ctx, cancelParent)
	lctx, unlock, err := r.lk.WithContext(parent, key)
	inTime := timer.Stop()
	inTime = stopCtx() && inTime
	if err == nil && !inTime {
		// Acquired just as the wait ended: the lock's context is already
		// being cancelled.
		unlock()
		err = context.Canceled
	}
	return r.lease(key, lctx, func() { unlock(); cancelParent() }, err, cancelParent)
}

func (r *rueidislockLock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	parent, cancelParent := context.WithCancel(context.WithoutCancel(ctx))
	lctx, unlock, err := r.lk.TryWithContext(parent, key)
	return r.lease(key, lctx, func() { unlock(); cancelParent() }, err, cancelParent)
}

func (r *rueidislockLock) lease(key string, lctx context.Context, unlock func(), err error, cancelParent func()) (lockimpl.Lease, error) {
	switch {
	case err == nil:
	case errors.Is(err, rueidislock.ErrNotLocked), errors.Is(err, context.Canceled):
		cancelParent()
		return nil, lockimpl.ErrNotAcquired
	default:
		cancelParent()
		return nil, lockimpl.Classify("rueidislock acquire", key, err)
	}
	// Lost when the library cancels the lock's context; the history is
	// told when (a NoteLost, the told-lost event), unless the context ends
	// because the lease is released or the Locker closes.
	var ours atomic.Bool
	context.AfterFunc(lctx, func() {
		if !ours.Load() && !r.closing.Load() && r.env.Note != nil {
			now := r.env.Clock.Now()
			r.env.Note(lockimpl.Note{Kind: lockimpl.NoteLost, Key: key, Start: now, End: now, Err: lockimpl.ErrNotOwner})
		}
	})
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Lost: lctx.Done(),
		Release: func(ctx context.Context) error {
			return r.release(ctx, key, lctx, func() { ours.Store(true); unlock() })
		}}), nil
}

// release cancels the lock's context; rueidislock then deletes its key. A
// lock already lost is ErrNotOwner: the library removed nothing of ours.
func (r *rueidislockLock) release(ctx context.Context, key string, lctx context.Context, unlock func()) error {
	lost := lctx.Err() != nil
	done := make(chan struct{})
	go func() { unlock(); close(done) }()
	ctx, cancel := commandCtx(ctx, &r.env.Options)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return lockimpl.Classify("rueidislock release", key, ctx.Err())
	}
	if lost {
		return fmt.Errorf("rueidislock release %s: %w: the lock was lost before", key, lockimpl.ErrNotOwner)
	}
	return nil
}

// RedisKeys is rueidislock's name for key (lockimpl.KeyMapper): with
// KeyMajority 1 it writes one key, <prefix>:0:<key> (rueidislock's
// keyname), the prefix being the one newRueidislock gives it.
func (r *rueidislockLock) RedisKeys(key string) []string {
	return []string{r.env.KeyPrefix + "rueidislock:0:" + key}
}

// Config reports rueidislock's effective settings.
func (r *rueidislockLock) Config() map[string]any {
	o := &r.env.Options
	return map[string]any{
		"library": rueidisModule + "/rueidislock", "version": lockimpl.ModuleVersion(rueidisModule), "key_validity": o.TTL.String(),
		"extend_interval": (o.TTL / 2).String(), "try_next_after": "20ms", "key_majority": 1,
		"key_prefix": r.env.KeyPrefix + "rueidislock", "no_loop_tracking": r.noLoop, "fallback_setpx": false,
		"client_side_caching": true, "acquire_timeout": o.AcquireTimeout.String(), "release_timeout": o.CommandTimeout.String(),
		"client": "own rueidis client (go-redis hooks do not apply)", "clock": "machine",
	}
}

func (r *rueidislockLock) Close() error {
	r.closing.Store(true)
	r.lk.Close()
	return nil
}

// gatedClient passes a rueidis client's commands through the harness's
// fault gate (lockimpl.Env.Gate), as the go-redis hooks do for lockimpl.Env.Conns.
type gatedClient struct {
	rueidis.Client
	gate lockimpl.CommandGate
}

func (g gatedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if err := g.gate.Before(ctx, 0, cmdName(cmd.Commands())); err != nil {
		return errorResult(err)
	}
	r := g.Client.Do(ctx, cmd)
	g.gate.After(0, answered(r.Error()), r.Error() == nil)
	return r
}

func (g gatedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	name := ""
	if len(multi) > 0 {
		name = cmdName(multi[0].Commands())
	}
	if err := g.gate.Before(ctx, 0, name); err != nil {
		out := make([]rueidis.RedisResult, len(multi))
		for i := range out {
			out[i] = errorResult(err)
		}
		return out
	}
	r := g.Client.DoMulti(ctx, multi...)
	ok, ans := true, true
	for _, x := range r {
		ok = ok && x.Error() == nil
		ans = ans && answered(x.Error())
	}
	g.gate.After(0, ans, ok)
	return r
}

// errorResult is rueidis.NewErrorResult for every release of rueidis:
// v1.0.77 has that function and v1.0.71, the release the Go module proxy
// serves before it, lacks it, and scripts/bisect-go.sh builds this adapter
// against older releases. RedisResult has kept one unexported field
// `err error` from v1.0.14 to v1.0.79 (rueidis' own mock package builds
// results the same way); it is found by name and type, and a release
// without it panics here rather than return a result without its error
// (TestRueidisErrorResult).
func errorResult(err error) rueidis.RedisResult {
	var r rueidis.RedisResult
	f, ok := reflect.TypeOf(r).FieldByName("err")
	if !ok || f.Type != reflect.TypeFor[error]() {
		panic("rueidislock adapter: rueidis.RedisResult has no field err error")
	}
	*(*error)(unsafe.Add(unsafe.Pointer(&r), f.Offset)) = err
	return r
}

// answered: the server replied, if only with nil or an error reply.
func answered(err error) bool {
	_, isRedisErr := rueidis.IsRedisErr(err)
	return err == nil || isRedisErr || rueidis.IsRedisNil(err)
}

func cmdName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return strings.ToLower(args[0])
}
