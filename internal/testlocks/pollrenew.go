// Package testlocks holds locks that the tests run but the catalog does
// not: correct locks of a shape the built-ins lack, written as a user
// would write them, so that a false positive the checker raises on them is
// caught here (issue 33). They are not registered by default (a control
// runs in every catalog scenario without a locks: list); a test calls
// Register, and cmd/lockchaos-testlocks is lockchaos with them.
package testlocks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// PollRenew is the name of the polling, renewing lock.
const PollRenew = "poll-renew"

var once sync.Once

// Register registers the test locks (once; later calls do nothing).
func Register() {
	once.Do(func() {
		lockimpl.Register(lockimpl.Info{
			Name: PollRenew,
			Kind: lockimpl.Control,
			Description: "SET key token NX PX ttl (20-byte hex token), a failed attempt retried every retry_delay (polling, no pub/sub); " +
				"renewal every renew_interval by Lua GET == token then PEXPIRE; Lua compare-and-delete; Lost on refusal or at send time + TTL",
			Renews: true,
		}, newPollRenew)
	})
}

// pollRenew is the correct renewing lock of issue 33's second part, as it
// was written outside the project: nothing of the built-ins but the
// renewal lifecycle (lockimpl.Renewals) and the standard scripts.
type pollRenew struct {
	env      lockimpl.Env
	renewals *lockimpl.Renewals
}

func newPollRenew(env lockimpl.Env) (lockimpl.Locker, error) {
	// Polling whatever the options say: no release channel, no wake-up.
	env.Options.Wait = "poll"
	l := &pollRenew{env: env}
	var err error
	l.renewals, err = lockimpl.NewRenewals(&l.env, 0)
	return l, err
}

// Acquire retries a failed attempt every RetryDelay (+ jitter) until
// AcquireTimeout.
func (l *pollRenew) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return lockimpl.WaitAcquire(ctx, &l.env, key, func(ctx context.Context) (lockimpl.Lease, error) {
		return l.TryAcquire(ctx, key)
	})
}

// TryAcquire makes one SET NX PX attempt with a fresh token and, when it
// took the key, renews it until released or lost. The deadline is the
// send time + TTL, moved by each acknowledged renewal.
func (l *pollRenew) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o, conn := &l.env.Options, l.env.Conns[0]
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b[:])
	start := l.env.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	ok, err := conn.SetNX(cctx, key, token, o.TTL).Result()
	cancel()
	if err != nil {
		return nil, lockimpl.Classify("acquire", key, err)
	}
	if !ok {
		return nil, lockimpl.ErrNotAcquired
	}
	r := l.renewals.Start(key, token, start, func(ctx context.Context) error {
		return lockimpl.RenewOwned(ctx, conn, o, key, token)
	})
	return l.renewals.Lease(r, lockimpl.LeaseFields{Key: key, Token: token,
		Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }}), nil
}

// Close stops the renewals still running and waits for them.
func (l *pollRenew) Close() error {
	l.renewals.Close()
	return nil
}
