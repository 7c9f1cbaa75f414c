package lockimpl

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated: the key was set, but fewer than Options.Replicas replicas
// acknowledged it within Options.ReplicaTimeout, so simple-wait gave it back.
// It wraps ErrNotAcquired: a blocking Acquire keeps trying.
var ErrNotReplicated = fmt.Errorf("%w: too few replicas acknowledged the lock", ErrNotAcquired)

// simpleWait is simple followed by WAIT, so that a failover is less likely
// to promote a replica that never saw the key. WAIT does not make
// replication synchronous: a replica that acknowledged can still lose the
// key (it is not persisted), and one that did not may be promoted anyway.
type simpleWait struct{ simple }

func init() {
	Register(Info{
		Name:          "simple-wait",
		Kind:          Correct,
		Description:   "simple, then WAIT replicas timeout; gives the key back when too few replicas acknowledge",
		NeedsReplicas: true,
	}, func(env Env) (Locker, error) { return &simpleWait{simple{nodeBase: newNodeBase(env)}}, nil })
}

func (s *simpleWait) Acquire(ctx context.Context, key string) (Lease, error) {
	return s.wait(ctx, key, s.TryAcquire)
}

// TryAcquire sets the key and waits for Options.Replicas replicas. When too
// few acknowledge it releases the key and returns ErrNotReplicated; when that
// release cannot complete either, the error is indeterminate.
//
// WAIT counts the writes of its own connection, so SET and WAIT go in one
// pipeline: on separate pooled connections WAIT could return at once. (A
// refused SET still runs its WAIT, which returns at once when the
// connection's earlier writes are replicated.)
func (s *simpleWait) TryAcquire(ctx context.Context, key string) (Lease, error) {
	o := &s.env.Options
	token := NewToken()
	start := s.env.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout+o.ReplicaTimeout)
	var set *redis.BoolCmd
	var wait *redis.Cmd
	_, _ = s.conn.Pipelined(cctx, func(p redis.Pipeliner) error {
		set = p.SetNX(cctx, key, token, o.TTL)
		wait = p.Do(cctx, "wait", o.Replicas, max(o.ReplicaTimeout.Milliseconds(), 1)) // 0 would block forever
		return nil
	})
	cancel()
	if err := set.Err(); err != nil {
		return nil, Classify("acquire", key, err)
	}
	if !set.Val() {
		return nil, ErrNotAcquired
	}
	l := s.lease(key, token, start)
	n, werr := wait.Int()
	if werr == nil && int(n) >= o.Replicas {
		return l, nil
	}
	if rerr := l.Release(ctx); rerr != nil && !errors.Is(rerr, ErrNotOwner) {
		return nil, fmt.Errorf("acquire %s: giving back an unreplicated key: %w", key, rerr)
	}
	if werr != nil {
		// The key is given back, so the outcome is known: not %w werr.
		return nil, fmt.Errorf("acquire %s: WAIT %d: %w (%v)", key, o.Replicas, ErrNotReplicated, werr)
	}
	return nil, fmt.Errorf("acquire %s: WAIT %d: %d acknowledged: %w", key, o.Replicas, n, ErrNotReplicated)
}

// Config adds the replica options.
func (s *simpleWait) Config() map[string]any {
	m := s.nodeBase.Config()
	m["replicas"], m["replica_timeout"] = s.env.Options.Replicas, s.env.Options.ReplicaTimeout.String()
	return m
}
