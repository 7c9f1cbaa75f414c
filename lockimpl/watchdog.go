package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// watchdog is reentrant plus a background renewal (Renewal) per held key. Each hold
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

// hold is one continuous possession of a key, shared by its nested leases:
// its Renewal and the hold count.
type hold struct {
	*Renewal
	depth int // guarded by watchdog.mu
}

var errClosed = errors.New("locker closed")

func init() {
	Register(Info{
		Name:        "watchdog",
		Kind:        Correct,
		Description: "reentrant + background owner-checked PEXPIRE every renew_interval; Lost at the local deadline or on refusal",
		Reentrant:   true,
		Renews:      true,
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
	return NewLease(LeaseFields{Key: key, Token: w.owner, Depth: n, Renewal: h.Renewal,
		Release: func(ctx context.Context) error { return w.release(ctx, key) }}), nil
}

// track records an acquire that left the hold count at n. A nested acquire
// joins the current hold (the script reset the TTL, so its deadline moves);
// a first one, or one after the local hold was lost, starts a new hold with
// its own renewal.
func (w *watchdog) track(key string, start time.Time, n int) *hold {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h := w.holds[key]; h != nil {
		if n > 1 && h.Active() {
			h.depth = n
			h.Extend(start.Add(w.env.Options.TTL))
			return h
		}
		// n == 1: the server no longer had our hold (it expired unnoticed,
		// e.g. during a pause), so the old leases are gone. Otherwise the
		// local hold was already lost and a new one takes over.
		h.Lose(fmt.Errorf("%w: re-acquired %s at depth %d", ErrLeaseLost, key, n))
	}
	h := &hold{Renewal: NewRenewal(&w.env, key, w.owner, start, func(ctx context.Context) error { return w.renew(ctx, key) }), depth: n}
	w.holds[key] = h
	if w.closed { // closed during the acquire: nothing will maintain it
		h.Abandon()
		return h
	}
	w.wg.Go(h.Run)
	return h
}

// renew is one owner-checked PEXPIRE of the hold's hash (RenewReentrant).
func (w *watchdog) renew(ctx context.Context, key string) error {
	return RenewReentrant(ctx, w.conn, &w.env.Options, key, w.owner)
}

// release undoes one level and stops the hold's renewal at depth 0: by the
// server's count when it answered, else by the local one.
func (w *watchdog) release(ctx context.Context, key string) error {
	w.mu.Lock()
	if h := w.holds[key]; h != nil {
		defer h.Releasing()()
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
		h.Lose(err)
	default:
		h.depth--
	}
	if h.depth <= 0 {
		h.Stop()
		delete(w.holds, key)
	}
	return err
}

// Close stops every renewal and waits for it. Leases still held are no
// longer maintained: their Lost is closed (without a NoteLost).
func (w *watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	for key, h := range w.holds {
		h.Abandon()
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
