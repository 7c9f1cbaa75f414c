package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/workloads"
)

// probeOptions are the lock options of the capabilities check: its hold
// lasts two renewal intervals plus a command timeout and a margin (400ms),
// so a renewing lock renews at least once inside it, and stays well inside
// the TTL, so a lock that does not renew still holds its key at the end.
var probeOptions = lockimpl.Options{TTL: time.Second, RenewInterval: 100 * time.Millisecond, CommandTimeout: 100 * time.Millisecond}

// probe checks the lock's declarations against what it does on a real
// server, with two handles (two owners) on one key:
//
//   - the first acquires the key, then tries it again: a lock that
//     re-enters must declare Reentrant, one that declares it must re-enter;
//   - the second tries the key the first holds and must be refused;
//   - the first holds the key for two renewal intervals and a command
//     timeout: a lock that reports renewals through Env.Note must declare
//     Renews, one that declares Renews must report one.
//
// A lock that needs replicas is checked by its scenarios' notes only (the
// probe runs on a single node or independent masters).
func probe(c config, name string, info lockimpl.Info, tmp func() string) verdict {
	var v verdict
	if info.NeedsReplicas {
		v.skip = "the capabilities check runs on a single node or independent masters; a lock that needs replicas is checked by the scenarios' notes only"
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := cluster.Spec{Topology: cluster.Single, Nodes: 1, Backend: c.backend, Dir: tmp()}
	if info.MinNodes > 0 {
		spec.Topology, spec.Nodes = cluster.Independent, max(info.MinNodes, 3)
	}
	cl, err := cluster.Start(ctx, spec)
	if err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: start a %s topology: %v", name, spec.Topology, err)
		return v
	}
	defer func() { _ = cl.Stop() }()
	opts := probeOptions.WithDefaults()
	const prefix = "locktest:probe:"
	key := prefix + "{k0}"
	var renewals atomic.Int64
	open := func(id int, note func(lockimpl.Note)) (lockimpl.Locker, error) {
		var conns []redis.UniversalClient
		var eps []lockimpl.Endpoint
		for _, ep := range cl.Endpoints() {
			conns = append(conns, cl.NewClient(ep, cluster.ClientOptions{}))
			eps = append(eps, lockimpl.Endpoint{Addr: ep.Addr, ClusterAddrs: ep.ClusterAddrs, MasterName: ep.MasterName, SentinelAddrs: ep.SentinelAddrs, Password: ep.Password})
		}
		lk, err := lockimpl.New(name, lockimpl.Env{ClientID: id, Conns: conns, Endpoints: eps, Clock: lockimpl.NewSkewClock(),
			Options: opts, Note: note, KeyPrefix: prefix})
		if err != nil {
			for _, c := range conns {
				_ = c.Close()
			}
			return nil, err
		}
		return closing{lk, conns}, nil
	}
	a, err := open(0, func(n lockimpl.Note) {
		if n.Kind == lockimpl.NoteRenew {
			renewals.Add(1)
		}
	})
	if err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: build a handle: %v", name, err)
		return v
	}
	defer a.Close()
	b, err := open(1, nil)
	if err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: build a second handle: %v", name, err)
		return v
	}
	defer b.Close()

	var problems []string
	held, err := a.Acquire(ctx, key)
	if err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: acquiring a free key failed: %v", name, err)
		return v
	}
	begun := time.Now()
	again, err := a.TryAcquire(ctx, key)
	switch reentered := err == nil && again != nil; {
	case reentered && !info.Reentrant:
		problems = append(problems, fmt.Sprintf("it re-entered a key it holds (a second TryAcquire by the same handle returned a lease of depth %d) but does not declare Reentrant: declare Reentrant in its lockimpl.Info (locktest.Info), or it is judged as a lock that does not re-enter and the re-entry scenarios (reentrant-expiry) skip it", again.Depth()))
	case !reentered && info.Reentrant:
		problems = append(problems, fmt.Sprintf("it declares Reentrant but a second TryAcquire of a key it holds, by the same handle, failed (%v): a reentrant lock lets its owner in again", err))
	}
	if err == nil && again != nil {
		if err := again.Release(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("releasing the re-entered level failed: %v", err))
		}
	}
	if other, err := b.TryAcquire(ctx, key); err == nil && other != nil {
		problems = append(problems, "a second handle (another owner) acquired the key the first holds: the lock does not exclude")
		_ = other.Release(ctx)
	} else if !errors.Is(err, lockimpl.ErrNotAcquired) {
		v.logs = append(v.logs, fmt.Sprintf("capabilities of %s: another owner's attempt on the held key failed with %v (not ErrNotAcquired)", name, err))
	}
	hold := 2*opts.RenewInterval + opts.CommandTimeout + 100*time.Millisecond
	if err := (lockimpl.RealClock{}).Sleep(ctx, hold-time.Since(begun)); err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: %v", name, err)
		return v
	}
	n := renewals.Load()
	switch {
	case n > 0 && !info.Renews:
		problems = append(problems, fmt.Sprintf("it %s (%d in a hold of %v): declare Renews in its lockimpl.Info (locktest.Info), or it is judged as a lock that does not renew and the renewal scenarios skip it", workloads.UndeclaredRenewals, n, hold))
	case n == 0 && info.Renews:
		problems = append(problems, fmt.Sprintf("it %s in a hold of %v (TTL %v, renew interval %v): report each renewal attempt (lockimpl.Note of kind renew) or the checker cannot see it", workloads.SilentRenewals, hold, opts.TTL, opts.RenewInterval))
	}
	if err := held.Release(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("releasing the key after the hold failed: %v", err))
	}
	v.logs = append(v.logs, fmt.Sprintf("capabilities of %s: declared %s; re-entry and renewal (%d reported in %v) checked on a %s topology", name, info.Capabilities(), n, hold, spec.Topology))
	if len(problems) > 0 {
		v.fail = fmt.Sprintf("capabilities of %s (declared: %s):", name, info.Capabilities())
		for _, p := range problems {
			v.fail += "\n  " + p
		}
	}
	return v
}

// closing closes a handle and then the connections made for it.
type closing struct {
	lockimpl.Locker
	conns []redis.UniversalClient
}

func (c closing) Close() error {
	err := c.Locker.Close()
	for _, cn := range c.conns {
		_ = cn.Close()
	}
	return err
}
