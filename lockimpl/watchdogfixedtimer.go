package lockimpl

import (
	"context"
	"sync"
	"time"
)

// fixedTimer is the watchdog many codebases start with: SET NX PX, then a
// goroutine that renews with an owner-checked PEXPIRE on a fixed timer
// (1733 ms, whatever the TTL) and only logs when a renewal fails. Its lease
// promises no deadline and has no Lost channel: the holder is never told
// that its key expired between two renewals, or that a renewal was refused.
// A control: holder-partitioned-long must catch it.
type fixedTimer struct {
	simple
	wg     sync.WaitGroup
	ctx    context.Context // ends at Close: renewals of unreleased leases stop
	cancel context.CancelFunc
}

// fixedRenewEvery is the timer of the code this control is modelled on.
const fixedRenewEvery = 1733 * time.Millisecond

func init() {
	Register(Info{
		Name:        "watchdog-fixed-timer",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + an owner-checked PEXPIRE every 1733 ms whatever the TTL; a failed renewal is only logged",
		Mistake: "the lease promises no deadline and the holder is never told: a key that expires between renewals, " +
			"or whose renewal is refused, is still believed held",
	}, func(env Env) (Locker, error) {
		ctx, cancel := context.WithCancel(context.Background())
		return &fixedTimer{simple: simple{nodeBase: newNodeBase(env)}, ctx: ctx, cancel: cancel}, nil
	})
}

func (f *fixedTimer) Acquire(ctx context.Context, key string) (Lease, error) {
	return f.wait(ctx, key, f.TryAcquire)
}

func (f *fixedTimer) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := f.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	// The lease's renewals end at its release or at Close, whichever first.
	hold, stop := context.WithCancel(f.ctx)
	release := bl.releaseFunc()
	bl.deadline = time.Time{} // "the watchdog keeps it alive"
	bl.release = func(ctx context.Context) error {
		stop()
		return release(ctx)
	}
	f.wg.Go(func() { f.renew(hold, key, bl.token) })
	return bl, nil
}

// renew runs until hold ends; failures are reported as notes (the log
// line) and change nothing.
func (f *fixedTimer) renew(hold context.Context, key, token string) {
	for f.env.Clock.Sleep(hold, fixedRenewEvery) == nil {
		start := f.env.Clock.Now()
		err := RenewOwned(hold, f.conn, &f.env.Options, key, token)
		if hold.Err() != nil {
			return
		}
		f.env.note(Note{Kind: NoteRenew, Key: key, Token: token, Start: start, End: f.env.Clock.Now(), Err: err})
	}
}

func (f *fixedTimer) Close() error {
	f.cancel()
	f.wg.Wait()
	return f.simple.Close()
}
