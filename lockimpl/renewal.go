package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Renewal keeps one held key alive in the background, the way the watchdog
// lock does: every Options.RenewInterval it calls renew (typically
// RenewOwned). An acknowledged renewal moves the deadline to when it was
// sent + TTL; a refusal (ErrNotOwner) loses the lease at once; a failure
// leaves the deadline alone, and the lease is declared lost a little before
// the deadline passes, so a holder cut off from Redis learns it before the
// key can expire there. Every attempt and the loss are reported through
// Env.Note, which is how renewals reach the checker: a lock that renews
// without reporting them is flagged (Info.Renews).
//
// Build it with NewRenewal, start Run in a goroutine, hand it to the lease
// (LeaseFields.Renewal) and call Stop when the lease is released.
type Renewal struct {
	env        *Env
	key, token string
	renew      func(ctx context.Context) error
	deadline   atomic.Pointer[time.Time]
	lost       chan struct{}
	lostOnce   sync.Once
	// releasing counts releases in flight: a renewal refused meanwhile may
	// only have come after our own delete.
	releasing atomic.Int32
	ctx       context.Context // done when stopped, lost or abandoned
	stop      context.CancelFunc
}

// NewRenewal prepares the renewal of key, held with token since start (by
// env.Clock, when the acquiring command was sent), so its first deadline is
// start + TTL. renew makes one owner-checked renewal and returns nil,
// ErrNotOwner, or another error (indeterminate or not).
func NewRenewal(env *Env, key, token string, start time.Time, renew func(ctx context.Context) error) *Renewal {
	ctx, stop := context.WithCancel(context.Background())
	r := &Renewal{env: env, key: key, token: token, renew: renew, lost: make(chan struct{}), ctx: ctx, stop: stop}
	d := start.Add(env.Options.TTL)
	r.deadline.Store(&d)
	return r
}

// Run renews and watches the deadline until the renewal is stopped, lost or
// abandoned.
func (r *Renewal) Run() {
	var wg sync.WaitGroup
	wg.Go(r.watch)
	r.loop()
	wg.Wait()
}

func (r *Renewal) loop() {
	o := &r.env.Options
	for r.env.Clock.Sleep(r.ctx, o.RenewInterval) == nil {
		sent := r.env.Clock.Now()
		cctx, cancel := context.WithTimeout(r.ctx, o.CommandTimeout)
		err := r.renew(cctx)
		cancel()
		if r.ctx.Err() != nil {
			return // released or closed meanwhile: no verdict on this renewal
		}
		if errors.Is(err, ErrNotOwner) && r.releasing.Load() > 0 {
			continue // refused after our own release; that release decides
		}
		if err == nil {
			r.Extend(sent.Add(o.TTL))
		}
		r.env.note(Note{Kind: NoteRenew, Key: r.key, Token: r.token, Start: sent, End: r.env.Clock.Now(), Err: err})
		if errors.Is(err, ErrNotOwner) {
			r.Lose(err)
			return
		}
	}
}

// lostGuard is how early watch declares the lease lost: a timer fires late
// by a few milliseconds on a busy machine, and Lost must close no later than
// the deadline. TTL/20, between 1ms and 10ms.
func (r *Renewal) lostGuard() time.Duration {
	return min(max(r.env.Options.TTL/20, time.Millisecond), 10*time.Millisecond)
}

// watch loses the lease when the clock reaches its deadline. It wakes at
// least every RenewInterval, so a jump of the client's clock is noticed.
func (r *Renewal) watch() {
	for {
		d := r.Deadline()
		left := d.Sub(r.env.Clock.Now()) - r.lostGuard()
		if left <= 0 {
			r.Lose(fmt.Errorf("%w: no renewal of %s acknowledged before the local deadline %s",
				ErrLeaseLost, r.key, d.Format("15:04:05.000")))
			return
		}
		if r.env.Clock.Sleep(r.ctx, min(left, r.env.Options.RenewInterval)) != nil {
			return
		}
	}
}

// Deadline is the validity promised now: the last acknowledged renewal's
// send time + TTL (or the acquire's).
func (r *Renewal) Deadline() time.Time { return *r.deadline.Load() }

// Extend moves the deadline forward to d (never back), e.g. after a nested
// acquire that reset the TTL.
func (r *Renewal) Extend(d time.Time) {
	for {
		old := r.deadline.Load()
		if !d.After(*old) || r.deadline.CompareAndSwap(old, &d) {
			return
		}
	}
}

// Lost is closed when the lease is lost (or the renewal abandoned).
func (r *Renewal) Lost() <-chan struct{} { return r.lost }

// Active reports whether the renewal still runs.
func (r *Renewal) Active() bool { return r.ctx.Err() == nil }

// Lose reports the loss (a NoteLost with why), closes Lost and stops, once.
func (r *Renewal) Lose(why error) {
	r.lostOnce.Do(func() {
		now := r.env.Clock.Now()
		r.env.note(Note{Kind: NoteLost, Key: r.key, Token: r.token, Start: now, End: now, Err: why})
		close(r.lost)
		r.stop()
	})
}

// Stop ends the renewal without a loss: the lease was released.
func (r *Renewal) Stop() { r.stop() }

// Abandon ends the renewal of a lease still held (the Locker is closing):
// Lost is closed, without a NoteLost, since nothing maintains it any more.
func (r *Renewal) Abandon() {
	r.lostOnce.Do(func() { close(r.lost) })
	r.stop()
}

// Releasing marks a release of the key in flight until the returned func is
// called: a renewal refused meanwhile is not a loss (the release decides).
func (r *Renewal) Releasing() (done func()) {
	r.releasing.Add(1)
	return func() { r.releasing.Add(-1) }
}
