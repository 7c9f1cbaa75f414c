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

var fixedTimerRenewScript = script("fixedtimer_renew")

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
	stop := make(chan struct{})
	var once sync.Once
	release := bl.release
	bl.deadline = time.Time{} // "the watchdog keeps it alive"
	bl.release = func(ctx context.Context) error {
		once.Do(func() { close(stop) })
		return release(ctx)
	}
	f.wg.Go(func() { f.renew(key, bl.token, stop) })
	return bl, nil
}

// renew runs until the lease is released; failures are reported as notes
// (the log line) and change nothing.
func (f *fixedTimer) renew(key, token string, stop <-chan struct{}) {
	o := &f.env.Options
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for f.env.Clock.Sleep(ctx, fixedRenewEvery) == nil {
		start := f.env.Clock.Now()
		cctx, cc := context.WithTimeout(ctx, o.CommandTimeout)
		n, err := fixedTimerRenewScript.Run(cctx, f.conn, []string{key}, token, o.TTL.Milliseconds()).Int()
		cc()
		if ctx.Err() != nil {
			return
		}
		if err == nil && n == 0 {
			err = ErrNotOwner
		}
		f.env.note(Note{Kind: NoteRenew, Key: key, Token: token, Start: start, End: f.env.Clock.Now(), Err: Classify("renew", key, err)})
	}
}

func (f *fixedTimer) Close() error {
	f.cancel()
	f.wg.Wait()
	return f.simple.Close()
}
