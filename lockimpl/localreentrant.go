package lockimpl

import (
	"context"
	"sync"
)

// localReentrant counts re-entries in client memory (the ThreadLocal scheme)
// around simple: only the first acquire and the last release reach Redis.
type localReentrant struct {
	simple
	mu   sync.Mutex
	held map[string]*localHold
}

type localHold struct {
	token string
	count int
}

func init() {
	Register(Info{
		Name:        "local-reentrant",
		Kind:        Broken,
		Description: "simple + a hold count kept in client memory; re-entry never asks Redis",
		Mistake: "a re-entry succeeds locally even after the key expired in Redis (a pause or a long hold " +
			"past the TTL) and another client acquired it: two owners at once",
		Reentrant: true,
	}, func(env Env) (Locker, error) {
		return &localReentrant{simple: simple{nodeBase: newNodeBase(env)}, held: map[string]*localHold{}}, nil
	})
}

func (l *localReentrant) Reentrant() bool { return true }

func (l *localReentrant) Acquire(ctx context.Context, key string) (Lease, error) {
	if le := l.reenter(key); le != nil {
		return le, nil
	}
	return l.wait(ctx, key, l.TryAcquire)
}

func (l *localReentrant) TryAcquire(ctx context.Context, key string) (Lease, error) {
	if le := l.reenter(key); le != nil {
		return le, nil
	}
	le, err := l.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.held[key] = &localHold{token: le.Token(), count: 1}
	l.mu.Unlock()
	return l.wrap(le.(*basicLease), 1), nil
}

// reenter is the mistake: a key counted as held is re-entered, with a fresh
// TTL's worth of promised validity, without asking Redis whether it still is.
func (l *localReentrant) reenter(key string) Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[key]
	if h == nil {
		return nil
	}
	h.count++
	le := l.lease(key, h.token, l.env.Clock.Now())
	return l.wrap(le, h.count)
}

// wrap makes a lease's release undo one local level; the last one releases
// in Redis (by compare-and-delete: the release itself is correct).
func (l *localReentrant) wrap(le *basicLease, depth int) Lease {
	unlock := le.releaseFunc()
	le.depth = depth
	le.release = releaseOnce(le.key, func(ctx context.Context) error {
		l.mu.Lock()
		h := l.held[le.key]
		last := h == nil || h.count <= 1
		if last {
			delete(l.held, le.key)
		} else {
			h.count--
		}
		l.mu.Unlock()
		if !last {
			return nil
		}
		return unlock(ctx)
	})
	return le
}
