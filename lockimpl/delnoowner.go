package lockimpl

import "context"

func init() {
	Register(Info{
		Name:        "del-no-owner",
		Kind:        Broken,
		Description: "simple, but release is a plain DEL key",
		Mistake: "no owner check: a holder whose key expired (it held longer than the TTL) " +
			"deletes the lock of whoever acquired it next, and its release still reports success",
	}, func(env Env) (Locker, error) { return &simple{nodeBase: newNodeBase(env), unlock: plainDel}, nil })
}

func plainDel(ctx context.Context, b *nodeBase, key, _ string) error {
	cctx, cancel := b.cmdCtx(ctx)
	err := b.conn.Del(cctx, key).Err()
	cancel()
	if err != nil {
		return Classify("release", key, err)
	}
	b.publishRelease(ctx, key)
	return nil
}
