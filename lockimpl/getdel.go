package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:        "get-del",
		Kind:        Broken,
		Description: "simple, but release is GET, compare the token in the client, then DEL",
		Mistake: "check-then-act: if the key expires after the GET and another client acquires it " +
			"before the DEL arrives (a pause or a slow link in between), the DEL removes the new owner's lock",
	}, func(env Env) (Locker, error) { return &simple{nodeBase: newNodeBase(env), unlock: getThenDel}, nil })
}

func getThenDel(ctx context.Context, b *nodeBase, key, token string) error {
	cctx, cancel := b.cmdCtx(ctx)
	v, err := b.conn.Get(cctx, key).Result()
	cancel()
	switch {
	case errors.Is(err, redis.Nil):
		return ErrNotOwner
	case err != nil:
		return Classify("release (get)", key, err)
	case v != token:
		return ErrNotOwner
	}
	// The mistake: the key may change hands right here.
	cctx, cancel = b.cmdCtx(ctx)
	err = b.conn.Del(cctx, key).Err()
	cancel()
	if err != nil {
		return Classify("release (del)", key, err)
	}
	b.publishRelease(ctx, key)
	return nil
}
