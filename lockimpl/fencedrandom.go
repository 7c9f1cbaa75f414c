package lockimpl

import (
	"context"
	"math/rand/v2"
)

// fencedRandom is simple with a fencing token that comes from no counter:
// a random 64-bit value drawn by the client for each acquire, as code does
// that takes "a unique token" for a fence.
type fencedRandom struct{ simple }

func init() {
	Register(Info{
		Name:        "fenced-random",
		Kind:        Broken,
		Fenced:      true,
		Description: "simple + a fencing token drawn at random by the client for each acquire, not INCRed at the server",
		Mistake: "the fence is not monotonic: a later owner's token is lower than an earlier owner's about half " +
			"the time, so a resource that keeps the highest token rejects the new owner and accepts a stale one",
	}, func(env Env) (Locker, error) { return &fencedRandom{simple{nodeBase: newNodeBase(env)}}, nil })
}

func (f *fencedRandom) Acquire(ctx context.Context, key string) (Lease, error) {
	return f.wait(ctx, key, f.TryAcquire)
}

func (f *fencedRandom) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := f.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	bl.fence, bl.fenced = rand.Uint64()|1, true
	return bl, nil
}
