package lockimpl

import (
	"context"
	"sync/atomic"
)

// blindRenew is the watchdog written without an owner check on renewal:
// SET key token NX PX to take the lock, then every renew_interval
// SET key token PX ttl (no NX, no comparison) to "keep it alive". Its
// lease keeps an honest deadline and learns of a loss at that deadline
// (the Renewal of the correct watchdog), so a paused or cut-off holder
// stops in time. What it gets wrong is the renewal itself: one that
// leaves on time and reaches the server after the key expired and another
// client took it overwrites that client's key with this client's token.
// The renewal is sent with a context that the lease's loss does not
// cancel, as such code usually does (a background context with a
// timeout): a command already on the wire cannot be called back anyway.
// A control: renewal-arrives-late must catch it.
type blindRenew struct {
	*renewingSimple
}

func init() {
	Register(Info{
		Name:        "renew-no-owner-check",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + a renewal every renew_interval by SET key token PX ttl, without checking the owner",
		Mistake: "a renewal that arrives after the key expired and another client took it overwrites that " +
			"client's key with this client's token: the new owner's lock is stolen without an acquire",
	}, func(env Env) (Locker, error) {
		rs, err := newRenewingSimple(env)
		return &blindRenew{rs}, err
	})
}

func (b *blindRenew) Acquire(ctx context.Context, key string) (Lease, error) {
	return b.wait(ctx, key, b.TryAcquire)
}

func (b *blindRenew) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := b.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	var rp atomic.Pointer[Renewal]
	r := b.renewals.Start(key, bl.token, bl.deadline.Add(-b.env.Options.TTL), func(ctx context.Context) error {
		return b.renew(ctx, rp.Load(), key, bl.token)
	})
	rp.Store(r)
	return b.track(bl, r), nil
}

// renew is the blind SET. The renewals (Renewals) send it with a context
// that the lease's loss does not cancel, as such code usually does (a
// background context with a timeout), and report it when it comes back
// acknowledged after the lease was lost or released. One that comes back
// unanswered then (a timeout: it may well have landed) is reported here,
// so that what it did at the server can be attributed. Renewals does not
// report those: for an owner-checked renewal the checker would pin on it
// whatever happened to the key meanwhile.
func (b *blindRenew) renew(ctx context.Context, r *Renewal, key, token string) error {
	sent := b.env.Clock.Now()
	err := Classify("renew", key, b.conn.Set(ctx, key, token, b.env.Options.TTL).Err())
	if err != nil && r != nil && !r.Active() {
		b.env.note(Note{Kind: NoteRenew, Key: key, Token: token, Start: sent, End: b.env.Clock.Now(), Err: err})
	}
	return err
}

// renewingSimple is simple with a Renewal per held lease (Renewals), for
// the renewing controls: each differs from the correct watchdog only in
// what its renewal does.
type renewingSimple struct {
	simple
	renewals *Renewals
}

func newRenewingSimple(env Env) (*renewingSimple, error) {
	rs := &renewingSimple{simple: simple{nodeBase: newNodeBase(env)}}
	var err error
	rs.renewals, err = NewRenewals(&rs.env, 0)
	return rs, err
}

// track returns the renewed lease of bl.
func (rs *renewingSimple) track(bl *basicLease, r *Renewal) Lease {
	return rs.renewals.Lease(r, LeaseFields{Key: bl.key, Token: bl.token, Release: bl.releaseFunc()})
}

// Close abandons every renewal still running and waits for them.
func (rs *renewingSimple) Close() error {
	rs.renewals.Close()
	return rs.simple.Close()
}
