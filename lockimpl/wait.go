package lockimpl

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitAcquire turns a single attempt into a blocking Acquire: it retries try
// until it succeeds, fails with something other than ErrNotAcquired, or
// env.Options.AcquireTimeout passes (then it returns ErrNotAcquired). try is
// a lock's TryAcquire on key; env.Conns[0] carries the pub/sub wait.
//
// Under Wait "pubsub" a blocked caller subscribes to the key's release
// channel (ReleaseChannel, published by CompareAndDelete and PublishRelease) and retries as soon as a release
// is announced, or after RetryDelay at the latest (a release by expiry
// publishes nothing). The uncontended path costs one round trip: the
// subscription is made only after the first attempt and a few quick retries
// (4 ms) fail, and one attempt is
// made after the subscription is confirmed so a release in between is not
// missed. Subscriptions go over one long-lived pub/sub connection per Redis
// client (waker): a wait costs a SUBSCRIBE and an UNSUBSCRIBE on it, not a
// new connection. Under "poll" it retries every RetryDelay + jitter.
//
// The timeout ends the wait, not an attempt in flight: cutting a SET NX
// short would make its outcome unknown (and could leave an unowned key).
// The wait is timed by env.Clock, as everything a lock does: a client whose
// clock runs fast gives up sooner, one whose clock jumps ahead gives up at
// its next pause.
func WaitAcquire(ctx context.Context, env *Env, key string, try func(context.Context) (Lease, error)) (Lease, error) {
	o, clock := &env.Options, env.Clock
	deadline := clock.Now().Add(o.AcquireTimeout)
	l, err := try(ctx)
	if !errors.Is(err, ErrNotAcquired) {
		return l, err // the common case pays for no AcquireTimeout timer
	}
	// pause waits d (at most until the deadline) or until wake fires; false
	// when the wait is over (the deadline passed or ctx is done).
	pause := func(d time.Duration, wake <-chan struct{}) bool {
		left := deadline.Sub(clock.Now())
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		return sleepOrWake(ctx, clock, min(d, left), wake) == nil && deadline.After(clock.Now())
	}
	// Most contended waits are short (the holder is about to release): a
	// few quick retries before paying for a subscription and its wake-ups.
	if o.Wait == "pubsub" {
		for i := 0; i < quickRetries; i++ {
			if !pause(quickRetryDelay, nil) {
				return nil, ErrNotAcquired
			}
			if l, err = try(ctx); !errors.Is(err, ErrNotAcquired) {
				return l, err
			}
		}
	}
	var wake <-chan struct{}
	if o.Wait == "pubsub" {
		w := wakerFor(env.Conns[0])
		sub := w.subscribe(ReleaseChannel(key))
		defer w.unsubscribe(sub)
		// Wait (bounded) until the server confirmed the subscription, so
		// a release between here and the next attempt is not missed.
		// Past the deadline, one last attempt follows all the same.
		pause(o.RetryDelay, sub.ready)
		wake = sub.c
	}
	for {
		l, err = try(ctx)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		if !pause(o.RetryPause(), wake) {
			return nil, ErrNotAcquired
		}
	}
}

// sleepOrWake waits d on clock, or until wake fires (a nil wake never
// does) or ctx is done (then it returns ctx's error). Clock has no timers
// to select on, so the sleep runs in a goroutine of its own and this one
// selects: only the caller ever receives from wake, and only when it
// returns woken (a helper that received from wake could take a release's
// wake-up after the sleep ended, and the next wait would miss it).
func sleepOrWake(ctx context.Context, clock Clock, d time.Duration, wake <-chan struct{}) error {
	if wake == nil {
		return clock.Sleep(ctx, d)
	}
	select {
	case <-wake:
		return nil
	default:
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- clock.Sleep(sctx, d) }()
	select {
	case <-wake:
		return nil
	case err := <-slept:
		if err != nil {
			return ctx.Err()
		}
		return nil
	}
}

// waker multiplexes the release-channel subscriptions of every wait on one
// Redis client over a single pub/sub connection.
type waker struct {
	ps   *redis.PubSub
	mu   sync.Mutex
	subs map[string]*chanState
}

// chanState is one subscribed channel: its waiters, and whether the server
// confirmed every SUBSCRIBE sent for it.
type chanState struct {
	waiters map[*waitSub]struct{}
	pending int // SUBSCRIBEs sent, not yet confirmed
	ready   chan struct{}
}

// waitSub is one waiter: c gets a value per release announced.
type waitSub struct {
	name  string
	c     chan struct{}
	ready chan struct{}
}

var wakers sync.Map // redis.UniversalClient → *waker

func wakerFor(c redis.UniversalClient) *waker {
	if w, ok := wakers.Load(c); ok {
		return w.(*waker)
	}
	w := &waker{subs: map[string]*chanState{}}
	if actual, loaded := wakers.LoadOrStore(c, w); loaded {
		return actual.(*waker)
	}
	w.ps = c.Subscribe(context.Background())
	msgs := w.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	go func() {
		// Ends when the client is closed (its pub/sub connections with it).
		// The PubSub is closed too: its health check's goroutine ends only
		// then (it pinged a dead connection every 3 s; an exploration of
		// 346 schedules in one process had leaked 2591 of them).
		defer wakers.CompareAndDelete(c, w)
		defer w.ps.Close()
		for m := range msgs {
			w.deliver(m)
		}
	}()
	return w
}

func (w *waker) deliver(m any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch m := m.(type) {
	case *redis.Subscription:
		st := w.subs[m.Channel]
		if m.Kind != "subscribe" || st == nil || st.pending == 0 {
			return
		}
		if st.pending--; st.pending == 0 {
			close(st.ready)
		}
	case *redis.Message:
		if st := w.subs[m.Channel]; st != nil {
			for ws := range st.waiters {
				select {
				case ws.c <- struct{}{}:
				default:
				}
			}
		}
	}
}

// subscribe registers a waiter on channel name, subscribing when it is the
// first. The SUBSCRIBE is only written here; waitSub.ready closes when the
// server confirmed it.
func (w *waker) subscribe(name string) *waitSub {
	w.mu.Lock()
	st := w.subs[name]
	first := st == nil
	if first {
		st = &chanState{waiters: map[*waitSub]struct{}{}, pending: 1, ready: make(chan struct{})}
		w.subs[name] = st
	}
	ws := &waitSub{name: name, c: make(chan struct{}, 1), ready: st.ready}
	st.waiters[ws] = struct{}{}
	w.mu.Unlock()
	if first {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := w.ps.Subscribe(ctx, name); err != nil {
			// No wake-ups for this wait: it polls every RetryDelay.
			w.mu.Lock()
			if st.pending > 0 {
				st.pending = 0
				close(st.ready)
			}
			w.mu.Unlock()
		}
	}
	return ws
}

// quickRetries short retries, quickRetryDelay apart (4 ms in all), come
// before a pub/sub wait subscribes: most contended waits are short, and a
// subscription costs two commands plus a wake-up of every waiter per release.
// Measured with lockchaos bench on 2 cores: 50 clients × 50 keys 21.7k →
// 28.8k cycles/s; 16 clients on one key 4.4k → 9.9k cycles/s, hand-off p50
// 3.5× → 1.5× the SET round trip, acquire p99 15 ms → 7 ms.
const (
	quickRetries    = 8
	quickRetryDelay = 500 * time.Microsecond
)

// unsubscribe removes a waiter and unsubscribes the channel when it was
// the last, off the waiter's path. Keeping idle channels subscribed for a
// while was measured (lockchaos bench, 2 cores): it saved the SUBSCRIBE/
// UNSUBSCRIBE pair on one hot key, but with 50 clients on 50 keys every
// client ended up subscribed to every key and received every release (15k
// cycles/s instead of 21.7k).
func (w *waker) unsubscribe(ws *waitSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.subs[ws.name]
	if st == nil {
		return
	}
	delete(st.waiters, ws)
	if len(st.waiters) > 0 {
		return
	}
	delete(w.subs, ws.name)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.ps.Unsubscribe(ctx, ws.name)
	}()
}
