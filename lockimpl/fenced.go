package lockimpl

import (
	"context"
	"strings"
)

// fenced is simple whose acquire also issues a fencing token: a per-key
// counter incremented in the same script as the SET NX, so tokens strictly
// increase from one owner to the next. The counter never expires; a server
// that loses it (restart without persistence, failover before replication)
// starts again lower, which a resource keeping the highest token it saw
// rejects until the counter passes it.
type fenced struct{ simple }

var fencedAcquireScript = script("fenced_acquire")

func init() {
	Register(Info{
		Name:        "fenced",
		Kind:        Correct,
		Description: "simple + a fencing token INCRed on {<key>}:fence in the same Lua script as the SET NX",
		Fenced:      true,
	}, func(env Env) (Locker, error) { return &fenced{simple{nodeBase: newNodeBase(env)}}, nil })
}

func (f *fenced) Acquire(ctx context.Context, key string) (Lease, error) {
	return f.wait(ctx, key, f.TryAcquire)
}

func (f *fenced) TryAcquire(ctx context.Context, key string) (Lease, error) {
	token := NewToken()
	start := f.env.Clock.Now()
	cctx, cancel := f.cmdCtx(ctx)
	n, err := fencedAcquireScript.Run(cctx, f.conn, []string{key, fenceKey(key)}, token, f.ttlMS()).Int64()
	cancel()
	if err != nil {
		return nil, Classify("acquire", key, err)
	}
	if n == 0 {
		return nil, ErrNotAcquired
	}
	l := f.lease(key, token, start)
	l.fence, l.fenced = uint64(n), true
	return l, nil
}

// fenceKey names key's fencing counter so that both hash to one cluster
// slot: key's own hash tag when it has one, else key as the tag.
func fenceKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":fence"
		}
	}
	return "{" + key + "}:fence"
}
