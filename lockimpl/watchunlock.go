package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// watchUnlockTries bounds the optimistic retries of one release: EXEC is
// aborted whenever the watched key changed, and a retry reads it again.
const watchUnlockTries = 3

func init() {
	Register(Info{
		Name:        "watch-unlock",
		Kind:        Control,
		Description: "simple, but release is WATCH key, GET, compare, MULTI DEL EXEC (optimistic, correct)",
	}, func(env Env) (Locker, error) { return &simple{nodeBase: newNodeBase(env), unlock: watchThenDel}, nil })
}

// watchThenDel deletes key only if it still holds token: a change between
// the GET and the EXEC (expiry, another owner's SET) aborts the EXEC, and the
// retry sees the key is no longer ours.
func watchThenDel(ctx context.Context, b *nodeBase, key, token string) error {
	var err error
	for range watchUnlockTries {
		if err = watchThenDelOnce(ctx, b, key, token); !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	if err == nil || errors.Is(err, ErrNotOwner) {
		return err
	}
	return Classify("release", key, err)
}

func watchThenDelOnce(ctx context.Context, b *nodeBase, key, token string) error {
	cctx, cancel := b.cmdCtx(ctx)
	defer cancel()
	return b.conn.Watch(cctx, func(tx *redis.Tx) error {
		v, err := tx.Get(cctx, key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != token) {
			return ErrNotOwner
		}
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(cctx, func(p redis.Pipeliner) error {
			p.Del(cctx, key)
			p.Publish(cctx, ReleaseChannel(key), "1")
			return nil
		})
		return err
	}, key)
}
