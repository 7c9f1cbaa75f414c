package lockimpl

import "context"

// fencedIncrAfterSet is fenced with its two steps apart: the SET NX takes
// the key, and a separate INCR of the counter afterwards issues the fence.
// Between the two the key may expire and other clients take it and draw
// their fences: the first client's INCR then hands it a fence above
// theirs for a lease that had already ended (issue 40).
type fencedIncrAfterSet struct{ simple }

func init() {
	Register(Info{
		Name:        "fenced-incr-after-set",
		Kind:        Broken,
		Fenced:      true,
		Description: "simple + a fencing token INCRed on {<key>}:fence by a separate command after the SET NX took the key",
		Mistake: "the fence is issued after the key is taken, not with it: an acquire slowed between the two gets a " +
			"fence above those of the owners that took the key after its lease expired, and its stale writes outrank theirs",
	}, func(env Env) (Locker, error) { return &fencedIncrAfterSet{simple{nodeBase: newNodeBase(env)}}, nil })
}

func (f *fencedIncrAfterSet) Acquire(ctx context.Context, key string) (Lease, error) {
	return f.wait(ctx, key, f.TryAcquire)
}

func (f *fencedIncrAfterSet) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := f.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	cctx, cancel := f.cmds.commandTimeout(ctx, f.env.Options.CommandTimeout)
	n, err := f.conn.Incr(cctx, fenceKey(key)).Result()
	cancel()
	if err != nil {
		// The key is taken but no fence was issued: give it back.
		_ = l.Release(ctx)
		return nil, Classify("acquire", key, err)
	}
	bl := l.(*basicLease)
	bl.fence, bl.fenced = uint64(n), true
	return bl, nil
}
