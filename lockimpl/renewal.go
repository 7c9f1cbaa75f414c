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
// (LeaseFields.Renewal) and call Stop when the lease is released; or let
// Renewals do all of that (and Abandon on Close).
type Renewal struct {
	env        *Env
	key, token string
	renew      func(ctx context.Context) error
	every      time.Duration // the renewal interval
	// late: the renewal's command is not cut short by the stop (it is on
	// the wire; only CommandTimeout bounds it), and one acknowledged after
	// the stop is still reported: what it did at the server must be
	// attributable. Renewals sets it.
	late     bool
	deadline atomic.Pointer[time.Time]
	lost     chan struct{}
	lostOnce sync.Once
	// releasing counts releases in flight: a renewal refused meanwhile may
	// only have come after our own delete.
	releasing atomic.Int32
	ctx       context.Context // done when stopped, lost or abandoned
	stop      context.CancelFunc
}

// NewRenewal prepares the renewal of key, held with token since start (by
// env.Clock, when the acquiring command was sent), so its first deadline is
// start + TTL, renewing every env.Options.RenewInterval (which
// Options.Validate checks against RenewalGuard; Renewals takes an interval
// of its own). renew makes one owner-checked renewal and returns nil,
// ErrNotOwner, or another error (indeterminate or not).
func NewRenewal(env *Env, key, token string, start time.Time, renew func(ctx context.Context) error) *Renewal {
	return newRenewal(env, key, token, start, env.Options.RenewInterval, renew)
}

func newRenewal(env *Env, key, token string, start time.Time, every time.Duration, renew func(ctx context.Context) error) *Renewal {
	ctx, stop := context.WithCancel(context.Background())
	r := &Renewal{env: env, key: key, token: token, renew: renew, every: every, lost: make(chan struct{}), ctx: ctx, stop: stop}
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
	for r.env.Clock.Sleep(r.ctx, r.every) == nil {
		sent := r.env.Clock.Now()
		base := r.ctx
		if r.late {
			base = context.WithoutCancel(r.ctx)
		}
		cctx, cancel := context.WithTimeout(base, o.CommandTimeout)
		err := r.renew(cctx)
		cancel()
		if r.ctx.Err() != nil {
			// Released, lost or closed meanwhile: no verdict on this
			// renewal. In late mode one that the server acknowledged is
			// still reported, for the history: it changed the key. One
			// refused changed nothing, and one unanswered is not reported
			// either: its window would span the loss or the release, and
			// the checker would pin on it whatever happened to the key
			// meanwhile (the next owner's SET PX) although an
			// owner-checked renewal cannot have done it.
			if r.late && err == nil {
				r.env.note(Note{Kind: NoteRenew, Key: r.key, Token: r.token, Start: sent, End: r.env.Clock.Now(), Err: err})
			}
			return
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

// RenewalGuard is how early a Renewal declares its lease lost, before the
// deadline, for a lock whose TTL is ttl: a timer fires late by a few
// milliseconds on a busy machine, and Lost must close no later than the
// deadline. TTL/20, between 1ms and 10ms. A renewal interval must be below
// ttl - RenewalGuard(ttl), or the lease is lost before its first renewal.
func RenewalGuard(ttl time.Duration) time.Duration {
	return min(max(ttl/20, time.Millisecond), 10*time.Millisecond)
}

// checkRenewInterval says why every cannot renew a lease of ttl, naming
// field.
func checkRenewInterval(field string, ttl, every time.Duration) error {
	switch {
	case every <= 0:
		return fmt.Errorf("%s: %v is not positive", field, every)
	case every >= ttl-RenewalGuard(ttl):
		return fmt.Errorf("%s: %v is not below ttl %v minus the %v a renewal declares the lease lost early "+
			"(RenewalGuard): the lease would be lost before its first renewal", field, every, ttl, RenewalGuard(ttl))
	}
	return nil
}

// watch loses the lease when the clock reaches its deadline. It wakes at
// least every renewal interval, so a jump of the client's clock is noticed.
func (r *Renewal) watch() {
	for {
		d := r.Deadline()
		left := d.Sub(r.env.Clock.Now()) - RenewalGuard(r.env.Options.TTL)
		if left <= 0 {
			r.Lose(fmt.Errorf("%w: no renewal of %s acknowledged before the local deadline %s",
				ErrLeaseLost, r.key, d.Format("15:04:05.000")))
			return
		}
		if r.env.Clock.Sleep(r.ctx, min(left, r.every)) != nil {
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
