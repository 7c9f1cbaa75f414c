package lockimpl

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script loads lua/<name>.lua. Scripts run by EVALSHA, falling back to EVAL
// on NOSCRIPT (redis.Script.Run), so a restarted or failed-over server that
// lost its script cache keeps working.
func script(name string) *redis.Script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lockimpl: embedded script %s missing: %v", name, err))
	}
	return redis.NewScript(string(src))
}

var (
	releaseScript          = script("release")
	renewValueScript       = script("renew_value")
	renewScript            = script("renew")
	reentrantAcquireScript = script("reentrant_acquire")
	reentrantReleaseScript = script("reentrant_release")
)

// ReleaseScript is CompareAndDelete's script (KEYS: key and
// ReleaseChannel(key); ARGV: the token), for tools that run the standard
// release without a Lock: the bench's yardsticks time the same commands.
func ReleaseScript() *redis.Script { return releaseScript }

// ReleaseChannel is the pub/sub channel a release of key publishes on, and
// the one WaitAcquire's pub/sub wait listens to.
func ReleaseChannel(key string) string { return "lockchaos:released:" + key }

// CompareAndDelete is the standard release of a lock stored as key = token:
// one Lua script deletes key only if it still holds token and publishes on
// ReleaseChannel(key) to wake waiters. It returns ErrNotOwner when the key
// is gone or held by another token, and an error wrapping ErrIndeterminate
// when the reply did not come within o.CommandTimeout.
func CompareAndDelete(ctx context.Context, conn redis.Scripter, o *Options, key, token string) error {
	return compareAndDelete(ctx, conn, o, []string{key, ReleaseChannel(key)}, token)
}

// compareAndDelete is CompareAndDelete with its script's keys (the lock's
// key and its ReleaseChannel) and token argument made by the caller, who
// may reuse them.
func compareAndDelete(ctx context.Context, conn redis.Scripter, o *Options, keys []string, token any) error {
	cctx, cancel := commandTimeout(ctx, o.CommandTimeout)
	n, err := releaseScript.Run(cctx, conn, keys, token).Int()
	cancel()
	if err != nil {
		return Classify("release", keys[0], err)
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// RenewOwned is the standard owner-checked renewal of a lock stored as
// key = token: it resets key's TTL to o.TTL only while key holds token.
// Same errors as CompareAndDelete.
func RenewOwned(ctx context.Context, conn redis.Scripter, o *Options, key, token string) error {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	n, err := renewValueScript.Run(cctx, conn, []string{key}, token, ttlMS(o.TTL)).Int()
	if err != nil {
		return Classify("renew", key, err)
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// AcquireReentrant is the standard acquire of a reentrant lock stored as a
// hash key = {owner: hold count}: one Lua script takes key when it is free
// or already owner's (one more level) and resets its TTL to o.TTL either
// way. It returns the hold count after the acquire, ErrNotAcquired when
// another owner holds key, and an error wrapping ErrIndeterminate when the
// reply did not come within o.CommandTimeout. owner is the Locker's
// identity (one NewToken per Locker), not one per lease.
func AcquireReentrant(ctx context.Context, conn redis.Scripter, o *Options, key, owner string) (int, error) {
	return acquireReentrant(ctx, conn, o, reentrantAcquireScript, key, owner)
}

// acquireReentrant is AcquireReentrant by the script given (a broken
// control's own).
func acquireReentrant(ctx context.Context, conn redis.Scripter, o *Options, acquire *redis.Script, key, owner string) (int, error) {
	return acquireReentrantHolding(ctx, conn, o, acquire, key, owner, -1)
}

// acquireReentrantHolding is acquireReentrant for a client that holds
// held levels of key by its own count (-1: it does not count): the
// script sets owner's count to held, where it differs, before adding the
// new level (a higher one: levels a release that never reached the server
// left).
func acquireReentrantHolding(ctx context.Context, conn redis.Scripter, o *Options, acquire *redis.Script, key, owner string, held int) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	args := []any{owner, ttlMS(o.TTL)}
	if held >= 0 {
		args = append(args, held)
	}
	n, err := acquire.Run(cctx, conn, []string{key}, args...).Int()
	if err != nil {
		return 0, Classify("acquire", key, err)
	}
	if n == 0 {
		return 0, ErrNotAcquired
	}
	return n, nil
}

// ReleaseReentrant undoes one level of owner's hold on the reentrant key
// (AcquireReentrant); the last level deletes key and publishes on
// ReleaseChannel(key). It returns the hold count left, ErrNotOwner when
// owner does not hold key (it expired, or another owner has it), and an
// error wrapping ErrIndeterminate when the reply did not come within
// o.CommandTimeout.
func ReleaseReentrant(ctx context.Context, conn redis.Scripter, o *Options, key, owner string) (int, error) {
	return releaseReentrant(ctx, conn, o, reentrantReleaseScript, key, owner)
}

// releaseReentrant is ReleaseReentrant by the script given (a broken
// control's own).
func releaseReentrant(ctx context.Context, conn redis.Scripter, o *Options, release *redis.Script, key, owner string) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	n, err := release.Run(cctx, conn, []string{key}, owner, ReleaseChannel(key)).Int()
	if err != nil {
		return 0, Classify("release", key, err)
	}
	if n < 0 {
		return 0, ErrNotOwner
	}
	return n, nil
}

// RenewReentrant is the owner-checked renewal of a reentrant key
// (AcquireReentrant): it resets key's TTL to o.TTL only while owner holds
// it. Same errors as RenewOwned.
func RenewReentrant(ctx context.Context, conn redis.Scripter, o *Options, key, owner string) error {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	n, err := renewScript.Run(cctx, conn, []string{key}, owner, ttlMS(o.TTL)).Int()
	if err != nil {
		return Classify("renew", key, err)
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

// PublishRelease wakes the waiters of key (WaitAcquire under "pubsub")
// after a release made without CompareAndDelete. It is best effort: waiters
// poll as well.
func PublishRelease(ctx context.Context, conn redis.UniversalClient, o *Options, key string) {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	_ = conn.Publish(cctx, ReleaseChannel(key), "1").Err()
}

// ttlMS is a TTL in whole milliseconds for scripts, rounded up so that the
// key never expires before the deadline computed from the TTL.
func ttlMS(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}
