package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// watchdog is reentrant plus a background renewal per held key. Each hold
// keeps a local deadline: when the last acknowledged renewal was sent + TTL.
// Lost closes when the server says another owner holds the key, and at that
// deadline when renewals keep failing, so a holder cut off from Redis learns
// it before the key can expire there (the server's TTL starts after the
// renewal was sent).
type watchdog struct {
	*reentrant
	mu     sync.Mutex
	holds  map[string]*hold // the current hold per key
	closed bool
	wg     sync.WaitGroup // renewal and deadline goroutines
}

// hold is one continuous possession of a key, shared by its nested leases.
type hold struct {
	key      string
	depth    int // guarded by watchdog.mu
	deadline atomic.Pointer[time.Time]
	lost     chan struct{}
	lostOnce sync.Once
	// releasing counts releases in flight: a renewal refused meanwhile may
	// only have come after our own DEL.
	releasing atomic.Int32
	ctx       context.Context // done when the hold is released, lost or closed
	stop      context.CancelFunc
}

var (
	renewScript = script("renew")
	errClosed   = errors.New("locker closed")
)

func init() {
	Register(Info{
		Name:        "watchdog",
		Kind:        Correct,
		Description: "reentrant + background owner-checked PEXPIRE every renew_interval; Lost at the local deadline or on refusal",
		Reentrant:   true,
	}, func(env Env) (Locker, error) {
		return &watchdog{reentrant: newReentrant(env), holds: map[string]*hold{}}, nil
	})
}

func (w *watchdog) Acquire(ctx context.Context, key string) (Lease, error) {
	return w.wait(ctx, key, w.TryAcquire)
}

func (w *watchdog) TryAcquire(ctx context.Context, key string) (Lease, error) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("acquire %s: %w", key, errClosed)
	}
	start, n, err := w.enter(ctx, key)
	if err != nil {
		return nil, err
	}
	h := w.track(key, start, n)
	return &watchdogLease{basicLease{
		key: key, token: w.owner, lost: h.lost, depth: n,
		release: releaseOnce(key, func(ctx context.Context) error { return w.release(ctx, key) }),
	}, h}, nil
}

// track records an acquire that left the hold count at n. A nested acquire
// joins the current hold (the script reset the TTL, so its deadline moves);
// a first one, or one after the local hold was lost, starts a new hold with
// its own renewal.
func (w *watchdog) track(key string, start time.Time, n int) *hold {
	w.mu.Lock()
	defer w.mu.Unlock()
	deadline := start.Add(w.env.Options.TTL)
	if h := w.holds[key]; h != nil {
		if n > 1 && h.ctx.Err() == nil {
			h.depth = n
			h.extend(deadline)
			return h
		}
		// n == 1: the server no longer had our hold (it expired unnoticed,
		// e.g. during a pause), so the old leases are gone. Otherwise the
		// local hold was already lost and a new one takes over.
		w.lose(h, fmt.Errorf("%w: re-acquired %s at depth %d", ErrLeaseLost, key, n))
	}
	ctx, stop := context.WithCancel(context.Background())
	h := &hold{key: key, depth: n, lost: make(chan struct{}), ctx: ctx, stop: stop}
	h.deadline.Store(&deadline)
	w.holds[key] = h
	if w.closed { // closed during the acquire: nothing will maintain it
		h.lostOnce.Do(func() { close(h.lost) })
		h.stop()
		return h
	}
	w.wg.Go(func() { w.renew(h) })
	w.wg.Go(func() { w.watch(h) })
	return h
}

// release undoes one level and stops the hold's renewal at depth 0: by the
// server's count when it answered, else by the local one.
func (w *watchdog) release(ctx context.Context, key string) error {
	w.mu.Lock()
	if h := w.holds[key]; h != nil {
		h.releasing.Add(1)
		defer h.releasing.Add(-1)
	}
	w.mu.Unlock()
	n, err := w.leave(ctx, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.holds[key]
	if h == nil {
		return err
	}
	switch {
	case err == nil:
		h.depth = n
	case errors.Is(err, ErrNotOwner):
		h.depth = 0
		w.lose(h, err)
	default:
		h.depth--
	}
	if h.depth <= 0 {
		h.stop()
		delete(w.holds, key)
	}
	return err
}

// renew sends an owner-checked PEXPIRE every RenewInterval until the hold
// ends. A renewal that is acknowledged moves the deadline to when it was
// sent + TTL; a refusal loses the hold at once; a failure leaves the
// deadline to watch.
func (w *watchdog) renew(h *hold) {
	o := &w.env.Options
	for w.env.Clock.Sleep(h.ctx, o.RenewInterval) == nil {
		sent := w.env.Clock.Now()
		cctx, cancel := context.WithTimeout(h.ctx, o.CommandTimeout)
		n, err := renewScript.Run(cctx, w.conn, []string{h.key}, w.owner, w.ttlMS()).Int()
		cancel()
		if h.ctx.Err() != nil {
			return // released or closed meanwhile: no verdict on this renewal
		}
		if err == nil && n == 0 && h.releasing.Load() > 0 {
			continue // refused after our own release; that release decides
		}
		switch {
		case err != nil:
			err = classify("renew", h.key, err)
		case n == 1:
			h.extend(sent.Add(o.TTL))
		default:
			err = ErrNotOwner
		}
		w.env.note(Note{Kind: NoteRenew, Key: h.key, Token: w.owner, Start: sent, End: w.env.Clock.Now(), Err: err})
		if errors.Is(err, ErrNotOwner) {
			w.lose(h, err)
			return
		}
	}
}

// lostGuard is how early watch declares a hold lost: a timer fires late by
// a few milliseconds on a busy machine, and Lost must close no later than
// the deadline. TTL/20, between 1ms and 10ms.
func (w *watchdog) lostGuard() time.Duration {
	return min(max(w.env.Options.TTL/20, time.Millisecond), 10*time.Millisecond)
}

// watch loses the hold when the clock reaches its deadline. It wakes at
// least every RenewInterval, so a jump of the client's clock is noticed.
func (w *watchdog) watch(h *hold) {
	o := &w.env.Options
	for {
		d := h.Deadline()
		left := d.Sub(w.env.Clock.Now()) - w.lostGuard()
		if left <= 0 {
			w.lose(h, fmt.Errorf("%w: no renewal of %s acknowledged before the local deadline %s",
				ErrLeaseLost, h.key, d.Format("15:04:05.000")))
			return
		}
		if w.env.Clock.Sleep(h.ctx, min(left, o.RenewInterval)) != nil {
			return
		}
	}
}

// lose reports the loss, closes the hold's Lost and stops its goroutines,
// once.
func (w *watchdog) lose(h *hold, why error) {
	h.lostOnce.Do(func() {
		now := w.env.Clock.Now()
		w.env.note(Note{Kind: NoteLost, Key: h.key, Token: w.owner, Start: now, End: now, Err: why})
		close(h.lost)
		h.stop()
	})
}

func (h *hold) Deadline() time.Time { return *h.deadline.Load() }

// extend moves the deadline forward to d (never back).
func (h *hold) extend(d time.Time) {
	for {
		old := h.deadline.Load()
		if !d.After(*old) || h.deadline.CompareAndSwap(old, &d) {
			return
		}
	}
}

// Close stops every renewal and waits for it. Leases still held are no
// longer maintained: their Lost is closed (without a NoteLost).
func (w *watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	for key, h := range w.holds {
		h.lostOnce.Do(func() { close(h.lost) })
		h.stop()
		delete(w.holds, key)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}

// Config adds the renewal interval.
func (w *watchdog) Config() map[string]any {
	m := w.nodeBase.Config()
	m["renew_interval"] = w.env.Options.RenewInterval.String()
	return m
}

// watchdogLease reads its deadline from the hold, which renewals move.
type watchdogLease struct {
	basicLease
	h *hold
}

func (l *watchdogLease) Deadline() time.Time { return l.h.Deadline() }
