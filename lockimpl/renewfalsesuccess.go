package lockimpl

import (
	"context"
	"errors"
)

// falseSuccess renews like the correct watchdog (an owner-checked
// extension every renew_interval, a local deadline, Lost on a refusal)
// except for one line: an extension the server refused is reported as a
// success. The class of bug is real (a popular Go lock library's Extend
// returned success on a refused extension until a patch release): the
// deadline keeps moving, and a holder whose key the server lost (expired
// during a stall, restarted empty, failed over) is never told and works on
// past the next owner's acquire. A control: restart-under-holder must
// catch it.
type falseSuccess struct {
	*renewingSimple
	// hides says which failed renewals count as a success (renew-false-
	// success: a refusal; renew-timeout-ack: an unknown outcome).
	hides func(error) bool
}

func init() {
	Register(Info{
		Name:        "renew-false-success",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + an owner-checked extension every renew_interval whose refusal is reported as success",
		Mistake: "a refused extension counts as a success: the deadline moves on and a holder whose key is gone " +
			"is never told, so it works past the next owner's acquire",
	}, func(env Env) (Locker, error) {
		rs, err := newRenewingSimple(env)
		return &falseSuccess{rs, func(err error) bool { return errors.Is(err, ErrNotOwner) }}, err
	})
}

func (f *falseSuccess) Acquire(ctx context.Context, key string) (Lease, error) {
	return f.wait(ctx, key, f.TryAcquire)
}

func (f *falseSuccess) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := f.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	r := f.renewals.Start(key, bl.token, bl.deadline.Add(-f.env.Options.TTL), func(ctx context.Context) error {
		err := RenewOwned(ctx, f.conn, &f.env.Options, key, bl.token)
		if f.hides(err) {
			return nil // the mistake
		}
		return err
	})
	return f.track(bl, r), nil
}
