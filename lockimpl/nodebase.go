package lockimpl

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// nodeBase is what the single-node locks share: the environment and the
// first connection, which carries the client's fault hooks.
type nodeBase struct {
	env  Env
	conn redis.UniversalClient
	// cmds keeps a command context for the next command (commandTimeout).
	cmds cmdSlot
	// rel is the last key's release keys (releaseKeys).
	rel atomic.Pointer[[]string]
}

// releaseKeys are the release script's keys for key, [key,
// ReleaseChannel(key)]: the last key's are kept, so a client that locks the
// same key cycle after cycle builds them once. Read-only: go-redis only
// copies them into the command.
func (b *nodeBase) releaseKeys(key string) []string {
	if p := b.rel.Load(); p != nil && (*p)[0] == key {
		return *p
	}
	keys := []string{key, ReleaseChannel(key)}
	b.rel.Store(&keys)
	return keys
}

func newNodeBase(env Env) nodeBase { return nodeBase{env: env, conn: env.Conns[0]} }

// cmdCtx bounds one round trip by Options.CommandTimeout.
func (b *nodeBase) cmdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.env.Options.CommandTimeout)
}

// wait turns a lock's single attempt into its blocking Acquire.
func (b *nodeBase) wait(ctx context.Context, key string, try func(context.Context, string) (Lease, error)) (Lease, error) {
	return WaitAcquire(ctx, &b.env, key, func(ctx context.Context) (Lease, error) { return try(ctx, key) })
}

// publishRelease wakes the waiters of key after a release made without the
// release script. It is best effort: waiters poll as well.
func (b *nodeBase) publishRelease(ctx context.Context, key string) {
	PublishRelease(ctx, b.conn, &b.env.Options, key)
}

// ttlMS is the TTL in whole milliseconds for scripts, rounded up so that the
// key never expires before the deadline computed from Options.TTL.
func (b *nodeBase) ttlMS() int64 { return ttlMS(b.env.Options.TTL) }

// Config reports the effective options (results.json lock_config).
func (b *nodeBase) Config() map[string]any {
	o := &b.env.Options
	return map[string]any{
		"ttl": o.TTL.String(), "acquire_timeout": o.AcquireTimeout.String(),
		"command_timeout": o.CommandTimeout.String(), "wait": o.Wait,
		"retry_delay": o.RetryDelay.String(), "retry_jitter": o.RetryJitter.String(),
	}
}

func (b *nodeBase) Close() error { return nil }
