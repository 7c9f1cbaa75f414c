package lockimpl

import (
	"context"
	"sync"
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
	renewingSimple
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
		return &blindRenew{newRenewingSimple(env)}, nil
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
	start := bl.deadline.Add(-b.env.Options.TTL)
	var r *Renewal
	r = NewRenewal(&b.env, key, bl.token, start, func(ctx context.Context) error {
		return b.renew(ctx, r, key, bl.token)
	})
	return b.track(bl, r), nil
}

// renew is the blind SET. When the renewal gave up on it (the lease was
// lost or released while it was on the wire) it still ran, and the
// Renewal will not report it: it is reported here, so that what it did at
// the server can be attributed.
func (b *blindRenew) renew(ctx context.Context, r *Renewal, key, token string) error {
	o := &b.env.Options
	sent := b.env.Clock.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.CommandTimeout)
	defer cancel()
	err := Classify("renew", key, b.conn.Set(cctx, key, token, o.TTL).Err())
	if !r.Active() {
		b.env.note(Note{Kind: NoteRenew, Key: key, Token: token, Start: sent, End: b.env.Clock.Now(), Err: err})
	}
	return err
}

// renewingSimple is simple with a Renewal per held lease, for the
// renewing controls: each differs from the correct watchdog only in what
// its renewal does.
type renewingSimple struct {
	simple
	mu       sync.Mutex
	renewals map[*Renewal]struct{}
	wg       sync.WaitGroup
}

func newRenewingSimple(env Env) renewingSimple {
	return renewingSimple{simple: simple{nodeBase: newNodeBase(env)}, renewals: map[*Renewal]struct{}{}}
}

// track starts r for lease bl, keeps it until the lease is released (or
// Close abandons it) and returns the renewed lease.
func (rs *renewingSimple) track(bl *basicLease, r *Renewal) Lease {
	rs.mu.Lock()
	rs.renewals[r] = struct{}{}
	rs.mu.Unlock()
	rs.wg.Go(r.Run)
	release := bl.release
	return NewLease(LeaseFields{Key: bl.key, Token: bl.token, Renewal: r, Release: func(ctx context.Context) error {
		done := r.Releasing()
		err := release(ctx)
		done()
		r.Stop()
		rs.mu.Lock()
		delete(rs.renewals, r)
		rs.mu.Unlock()
		return err
	}})
}

// Close abandons every renewal still running and waits for them.
func (rs *renewingSimple) Close() error {
	rs.mu.Lock()
	for r := range rs.renewals {
		r.Abandon()
		delete(rs.renewals, r)
	}
	rs.mu.Unlock()
	rs.wg.Wait()
	return rs.simple.Close()
}
