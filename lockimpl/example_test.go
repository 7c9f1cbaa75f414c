package lockimpl_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// A lock author's Acquire: one attempt (TryAcquire) turned into a blocking
// wait that wakes on releases published by CompareAndDelete (Wait "pubsub")
// or polls every RetryDelay (Wait "poll"), until AcquireTimeout.
func ExampleWaitAcquire() {
	var env lockimpl.Env // given to the lock's factory
	try := func(ctx context.Context) (lockimpl.Lease, error) {
		return nil, lockimpl.ErrNotAcquired // one SET NX attempt in a real lock
	}
	lease, err := lockimpl.WaitAcquire(context.Background(), &env, "orders", try)
	_, _ = lease, err
}

// A lease from its fields: key, token, the deadline promised (the acquire's
// send time + TTL, by the client's clock) and the release, here the
// standard compare-and-delete script.
func ExampleNewLease() {
	var env lockimpl.Env // given to the lock's factory
	o, conn := &env.Options, env.Conns[0]
	key, token := "orders", lockimpl.NewToken()
	start := env.Clock.Now()
	// ... SET key token NX PX ttl succeeded ...
	lease := lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: token, Deadline: start.Add(o.TTL),
		Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }})
	_ = lease
}

// A renewing lease: a Renewal renews with the owner-checked RenewOwned
// script every RenewInterval, reports each attempt through Env.Note (so the
// checker sees it), moves the lease's Deadline and closes its Lost.
// Renewals runs it, stops it at the release and abandons it at Close.
func ExampleRenewals() {
	var env lockimpl.Env                           // given to the lock's factory
	renewals, err := lockimpl.NewRenewals(&env, 0) // every Options.RenewInterval; call Close in the Locker's Close
	if err != nil {
		return // the interval cannot renew before the lease is lost
	}
	o, conn := &env.Options, env.Conns[0]
	key, token := "orders", lockimpl.NewToken()
	start := env.Clock.Now()
	// ... SET key token NX PX ttl succeeded ...
	r := renewals.Start(key, token, start, func(ctx context.Context) error {
		return lockimpl.RenewOwned(ctx, conn, o, key, token)
	})
	lease := renewals.Lease(r, lockimpl.LeaseFields{Key: key, Token: token,
		Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }})
	_ = lease
}

// Classify marks the errors after which the server may have applied the
// command: the harness then treats the outcome as unknown, not as failed.
func ExampleClassify() {
	err := lockimpl.Classify("acquire", "orders", os.ErrDeadlineExceeded)
	fmt.Println(errors.Is(err, lockimpl.ErrIndeterminate))
	err = lockimpl.Classify("acquire", "orders", errors.New("WRONGTYPE"))
	fmt.Println(errors.Is(err, lockimpl.ErrIndeterminate), err)
	// Output:
	// true
	// false acquire orders: WRONGTYPE
}
