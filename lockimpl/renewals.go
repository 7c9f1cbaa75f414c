package lockimpl

import (
	"context"
	"sync"
	"time"
)

// Renewals is the lifecycle of the renewals of one Locker's leases, which
// every renewing lock needs: each Renewal runs in a goroutine of its own,
// a release marks itself in flight (Releasing) and stops its renewal, Close
// abandons the renewals still running and waits for them. A renewing lock
// keeps one Renewals per Locker: Start when an acquire succeeded, Lease for
// the lease it returns, Close in its Close.
//
// Its renewals report every renewal, also one that was on the wire when
// the lease was lost or released (it is not cut short, only
// Options.CommandTimeout bounds it) and that the server acknowledged after:
// what a late renewal did at the server must be attributable to it.
type Renewals struct {
	env    *Env
	every  time.Duration
	mu     sync.Mutex
	live   map[*Renewal]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewRenewals returns the renewals of one Locker built with env, renewing
// every interval (0: env.Options.RenewInterval). The interval must be below
// the TTL minus RenewalGuard(TTL), or every lease would be lost before its
// first renewal: the error names it.
func NewRenewals(env *Env, every time.Duration) (*Renewals, error) {
	field := "renewal interval"
	if every == 0 {
		every, field = env.Options.RenewInterval, "lock option renew_interval"
	}
	if err := checkRenewInterval(field, env.Options.TTL, every); err != nil {
		return nil, err
	}
	return &Renewals{env: env, every: every, live: map[*Renewal]struct{}{}}, nil
}

// Start starts renewing key, held with token since start (by Env.Clock,
// when the acquiring command was sent: the first deadline is start + TTL).
// renew makes one owner-checked renewal (RenewOwned, RenewReentrant) and
// returns nil, ErrNotOwner, or another error. After Close the renewal is
// abandoned at once: its Lost is closed.
func (rs *Renewals) Start(key, token string, start time.Time, renew func(ctx context.Context) error) *Renewal {
	r := newRenewal(rs.env, key, token, start, rs.every, renew)
	r.late = true
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed { // closed during the acquire: nothing will maintain it
		r.Abandon()
		return r
	}
	rs.live[r] = struct{}{}
	rs.wg.Go(func() {
		r.Run() // until stopped, lost or abandoned
		rs.mu.Lock()
		delete(rs.live, r)
		rs.mu.Unlock()
	})
	return r
}

// Lease returns the lease f renewed by r (its deadline and Lost move with
// r). Its Release acts once: it marks the release in flight (a renewal
// refused meanwhile is not a loss: the release decides), calls f.Release,
// and stops r.
func (rs *Renewals) Lease(r *Renewal, f LeaseFields) Lease {
	release := f.Release
	f.Renewal = r
	f.Release = func(ctx context.Context) error {
		done := r.Releasing()
		err := release(ctx)
		done()
		r.Stop()
		return err
	}
	return NewLease(f)
}

// Close abandons every renewal still running (the Lost of their leases
// closes, without a NoteLost: nothing maintains them any more) and waits
// for their goroutines. It may be called more than once.
func (rs *Renewals) Close() {
	rs.mu.Lock()
	rs.closed = true
	for r := range rs.live {
		r.Abandon()
	}
	rs.mu.Unlock()
	rs.wg.Wait()
}
