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
// lasts the TTL plus a command timeout and a margin (1.4 s), so a renewing
// lock renews at least once inside it, even one that renews late (at
// 0.8×TTL, as redis-semaphore does, or at TTL − 5 ms) rather than every
// RenewInterval; a lock that does not renew has lost its key by then. The
// command timeout (300 ms) is a loaded machine's: at 100 ms a correct
// watchdog's first acquire once timed out under the whole suite.
var probeOptions = lockimpl.Options{TTL: time.Second, RenewInterval: 100 * time.Millisecond, CommandTimeout: 300 * time.Millisecond}

// probe checks the lock's declarations against what it does on a real
// server, with two handles (two owners) on one key:
//
//   - the first acquires the key, then tries it again: a lock that
//     re-enters must declare Reentrant, one that declares it must re-enter;
//   - the second tries the key the first holds and must be refused;
//   - the first holds the key for longer than the TTL: a lock that reports
//     renewals through Env.Note must declare Renews, one that declares
//     Renews must report one (and still hold the key, so its release
//     succeeds).
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
	p := &prober{name: name, info: info, opts: probeOptions.WithDefaults()}
	defer p.close()
	if err := p.start(ctx, c, tmp); err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: %v", name, err)
		return v
	}
	problems, err := p.check(ctx)
	v.logs = p.logs
	if err != nil {
		v.fail = fmt.Sprintf("capabilities of %s: %v", name, err)
		return v
	}
	if len(problems) > 0 {
		v.fail = fmt.Sprintf("capabilities of %s (declared: %s):", name, info.Capabilities())
		for _, p := range problems {
			v.fail += "\n  " + p
		}
	}
	return v
}

// probeKey is the one key the probe's two handles contend for.
const (
	probePrefix = "locktest:probe:"
	probeKey    = probePrefix + "{k0}"
)

// prober is one capabilities check: its servers and its two handles.
type prober struct {
	name     string
	info     lockimpl.Info
	opts     lockimpl.Options
	spec     cluster.Spec
	cl       *cluster.Cluster
	a, b     lockimpl.Locker // two owners; a reports its renewals
	renewals atomic.Int64
	logs     []string
}

// start starts the servers the lock needs and opens the two handles.
func (p *prober) start(ctx context.Context, c config, tmp func() string) error {
	p.spec = cluster.Spec{Topology: cluster.Single, Nodes: 1, Backend: c.backend, Dir: tmp()}
	if p.info.MinNodes > 0 {
		p.spec.Topology, p.spec.Nodes = cluster.Independent, max(p.info.MinNodes, 3)
	}
	cl, err := cluster.Start(ctx, p.spec)
	if err != nil {
		return fmt.Errorf("start a %s topology: %v", p.spec.Topology, err)
	}
	p.cl = cl
	if p.a, err = p.open(0, func(n lockimpl.Note) {
		if n.Kind == lockimpl.NoteRenew {
			p.renewals.Add(1)
		}
	}); err != nil {
		return fmt.Errorf("build a handle: %v", err)
	}
	if p.b, err = p.open(1, nil); err != nil {
		return fmt.Errorf("build a second handle: %v", err)
	}
	return nil
}

// open builds client id's handle on connections of its own.
func (p *prober) open(id int, note func(lockimpl.Note)) (lockimpl.Locker, error) {
	var conns []redis.UniversalClient
	eps := p.cl.Endpoints()
	for _, ep := range eps {
		conns = append(conns, p.cl.NewClient(ep, cluster.ClientOptions{}))
	}
	lk, err := lockimpl.New(p.name, lockimpl.Env{ClientID: id, Conns: conns, Endpoints: workloads.LockEndpoints(eps), Clock: lockimpl.NewSkewClock(),
		Options: p.opts, Note: note, KeyPrefix: probePrefix})
	if err != nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return nil, err
	}
	return closing{lk, conns}, nil
}

func (p *prober) close() {
	for _, h := range []lockimpl.Locker{p.a, p.b} {
		if h != nil {
			_ = h.Close()
		}
	}
	if p.cl != nil {
		_ = p.cl.Stop()
	}
}

// check runs the three checks on one hold of the key by a; an error is a
// probe that could not run, problems are declarations the lock broke.
func (p *prober) check(ctx context.Context) (problems []string, err error) {
	held, err := p.a.Acquire(ctx, probeKey)
	if err != nil {
		return nil, fmt.Errorf("acquiring a free key failed: %v", err)
	}
	begun := time.Now()
	problems = append(problems, p.reentry(ctx)...)
	problems = append(problems, p.exclusion(ctx)...)
	hold := p.opts.TTL + p.opts.CommandTimeout + 100*time.Millisecond
	if err := (lockimpl.RealClock{}).Sleep(ctx, hold-time.Since(begun)); err != nil {
		return nil, err
	}
	n := p.renewals.Load()
	problems = append(problems, p.renewal(n, hold)...)
	if err := held.Release(ctx); err != nil && p.info.Renews {
		problems = append(problems, fmt.Sprintf("releasing the key after a hold of %v (TTL %v) failed: %v; a lock that declares Renews keeps its key", hold, p.opts.TTL, err))
	} else if err != nil {
		p.logs = append(p.logs, fmt.Sprintf("capabilities of %s: releasing the key after a hold of %v, longer than the TTL %v, failed as a lock that does not renew may: %v", p.name, hold, p.opts.TTL, err))
	}
	p.logs = append(p.logs, fmt.Sprintf("capabilities of %s: declared %s; re-entry and renewal (%d reported in %v) checked on a %s topology", p.name, p.info.Capabilities(), n, hold, p.spec.Topology))
	return problems, nil
}

// reentry: a lock that re-enters must declare Reentrant, one that declares
// it must re-enter.
func (p *prober) reentry(ctx context.Context) []string {
	var problems []string
	again, err := p.a.TryAcquire(ctx, probeKey)
	switch reentered := err == nil && again != nil; {
	case reentered && !p.info.Reentrant:
		problems = append(problems, fmt.Sprintf("it re-entered a key it holds (a second TryAcquire by the same handle returned a lease of depth %d) but does not declare Reentrant: declare Reentrant in its lockimpl.Info (locktest.Info), or it is judged as a lock that does not re-enter and the re-entry scenarios (reentrant-expiry) skip it", again.Depth()))
	case !reentered && p.info.Reentrant:
		problems = append(problems, fmt.Sprintf("it declares Reentrant but a second TryAcquire of a key it holds, by the same handle, failed (%v): a reentrant lock lets its owner in again", err))
	}
	if err == nil && again != nil {
		if err := again.Release(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("releasing the re-entered level failed: %v", err))
		}
	}
	return problems
}

// exclusion: another owner is refused the held key.
func (p *prober) exclusion(ctx context.Context) []string {
	other, err := p.b.TryAcquire(ctx, probeKey)
	if err == nil && other != nil {
		_ = other.Release(ctx)
		return []string{"a second handle (another owner) acquired the key the first holds: the lock does not exclude"}
	}
	if !errors.Is(err, lockimpl.ErrNotAcquired) {
		p.logs = append(p.logs, fmt.Sprintf("capabilities of %s: another owner's attempt on the held key failed with %v (not ErrNotAcquired)", p.name, err))
	}
	return nil
}

// renewal: a lock that reports renewals must declare Renews, one that
// declares Renews must report one (n in a hold of hold).
func (p *prober) renewal(n int64, hold time.Duration) []string {
	switch {
	case n > 0 && !p.info.Renews:
		return []string{fmt.Sprintf("it %s (%d in a hold of %v): declare Renews in its lockimpl.Info (locktest.Info), or it is judged as a lock that does not renew and the renewal scenarios skip it", workloads.UndeclaredRenewals, n, hold)}
	case n == 0 && p.info.Renews:
		return []string{fmt.Sprintf("it %s in a hold of %v (TTL %v, renew interval %v): report each renewal attempt (lockimpl.Note of kind renew) or the checker cannot see it", workloads.SilentRenewals, hold, p.opts.TTL, p.opts.RenewInterval)}
	}
	return nil
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
