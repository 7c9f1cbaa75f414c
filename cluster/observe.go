package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
)

// How the observer got the servers' keyspace notifications (Notify.Mode).
const (
	// NotifyHarness: servers the harness started, with notifications on.
	NotifyHarness = "harness-servers"
	// NotifyEnabled: the user's servers had notifications off (or missing
	// what the observer needs); they were turned on for the run with CONFIG
	// SET notify-keyspace-events and restored afterwards.
	NotifyEnabled = "enabled-for-run"
	// NotifyAlreadyOn: the user's servers already had what is needed;
	// nothing was changed.
	NotifyAlreadyOn = "already-on"
	// NotifyRefused: CONFIG GET/SET is not allowed on a user's server
	// (renamed, ACL): no notifications, the unlock check is skipped.
	NotifyRefused = "config-refused"
	// NotifyUnavailable: the backend cannot deliver them (embedded).
	NotifyUnavailable = "unavailable"
)

// Notify says how keyspace notifications were obtained.
type Notify struct {
	Mode string
	// Note is a sentence for the results when Mode is not NotifyHarness.
	Note string
}

// notifyFlags are the notify-keyspace-events classes the observer needs:
// keyspace channels (K; they carry the key in the channel name, so the
// subscription matches the run's prefix only and none of a user's other
// keys reach the harness), generic (del, expire), string (set), hash,
// expired and evicted.
const notifyFlags = "Kg$hxe"

// Observe subscribes to the keyspace notifications of every data node for
// the keys under p (__keyspace@*__:<p>*) and records each one as an
// OpServer event: Node = the node's name, Key = the key as history events
// name it (p.Short), Detail = the event (set, del, expired, hset, hincrby,
// pexpire, ...). T is when the notification reached the observer, on the
// run clock now: a few hundred µs after the server acted, never before.
//
// On the user's servers (external backend) notifications are usually off:
// Observe reads notify-keyspace-events (CONFIG GET), adds what it needs
// (CONFIG SET), and stop sets the previous value back; so does the
// cluster's Stop, in case stop is never reached. Where CONFIG is refused,
// the node is recorded as "observer-unavailable" and Notify says why.
//
// The subscription follows node restarts: go-redis re-dials and re-subscribes
// a pub/sub connection that broke. A node that cannot deliver notifications
// (the embedded backend, a refused CONFIG) is skipped; Observe says so by
// recording one OpServer event with Detail "observer-unavailable".
//
// stop ends every subscription, waits for the goroutines to finish, then
// restores the servers' configuration; it returns what it could not restore.
func Observe(ctx context.Context, c *Cluster, p keyspace.Prefix, record func(*history.Event), now func() int64) (stop func() error, st Notify, err error) {
	o := &observer{c: c, p: p, record: record, now: now}
	o.ctx, o.cancel = context.WithCancel(ctx)
	o.st.Mode = NotifyHarness
	for _, n := range c.Nodes {
		// A cluster's replicas replay their masters' writes and would
		// report each a second time; the checker tells masters from
		// replicas for Sentinel only (by its failover record), so on a
		// cluster the observer listens to the masters it started with. (A
		// promoted replica is not heard: cluster faults are to come.)
		if c.Spec.Topology == RedisCluster && n.Role == "replica" {
			continue
		}
		if err := o.watch(n); err != nil {
			o.closeAll()
			return func() error { return nil }, o.st, errors.Join(err, o.restoreAll())
		}
	}
	if c.Backend == External {
		o.externalNote()
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			o.closeAll()
			rerr = o.restoreAll()
		})
		return rerr
	}, o.st, nil
}

// observer is Observe's state: its subscriptions and what stop restores.
type observer struct {
	c      *Cluster
	p      keyspace.Prefix
	record func(*history.Event)
	now    func() int64

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	subs     []*redis.PubSub
	restores []func() error
	st       Notify
	// enabled, refused: the external nodes where notifications were
	// turned on for the run, or could not be.
	enabled, refused []string
}

func (o *observer) closeAll() {
	o.cancel()
	for _, s := range o.subs {
		_ = s.Close()
	}
	o.wg.Wait()
}

func (o *observer) restoreAll() error {
	var errs []error
	for _, r := range o.restores {
		errs = append(errs, r())
	}
	return errors.Join(errs...)
}

// watch subscribes to n's notifications (turning them on first on an
// external server), or records why it cannot; an error is the
// subscription's own.
func (o *observer) watch(n *Node) error {
	c := o.c
	if c.Backend == Embedded {
		o.st.Mode = NotifyUnavailable
		o.st.Note = "backend embedded does not deliver keyspace notifications: the unlock check is skipped"
		o.record(&history.Event{T: o.now(), Client: -1, Op: history.OpServer, Node: n.Name,
			Detail: "observer-unavailable", Err: "backend " + c.Backend + " does not deliver keyspace notifications to lockchaos"})
		return nil
	}
	cl := c.AdminClient(n)
	if c.Backend == External {
		restore, old, changed, cerr := enableNotify(o.ctx, c, n)
		if cerr != nil {
			o.refused = append(o.refused, n.Name+": "+cerr.Error())
			o.record(&history.Event{T: o.now(), Client: -1, Op: history.OpServer, Node: n.Name, Detail: "observer-unavailable",
				Err: "notify-keyspace-events could not be turned on (" + cerr.Error() + ")"})
			return nil
		}
		if changed {
			o.enabled = append(o.enabled, fmt.Sprintf("%s (was %q)", n.Name, old))
			o.restores = append(o.restores, restore)
		}
	}
	ps := cl.PSubscribe(o.ctx, "__keyspace@*__:"+o.p.NamesPattern())
	// The first reply confirms the subscription: events before it are
	// not seen, so wait for it (bounded) before the workload starts.
	rctx, rcancel := context.WithTimeout(o.ctx, 3*time.Second)
	_, err := ps.Receive(rctx)
	rcancel()
	if err != nil {
		_ = ps.Close()
		return err
	}
	o.subs = append(o.subs, ps)
	ch := ps.Channel(redis.WithChannelSize(1<<16), redis.WithChannelHealthCheckInterval(time.Second))
	o.wg.Go(func() { o.listen(ch, n.Name) })
	return nil
}

// listen records node name's notifications until the subscription is
// closed (stop), so go-redis is never left blocked on a full channel.
func (o *observer) listen(ch <-chan *redis.Message, name string) {
	for m := range ch {
		if o.ctx.Err() != nil {
			continue
		}
		// __keyspace@<db>__:<key>, the event in the payload.
		_, key, ok := strings.Cut(m.Channel, "__:")
		if !ok {
			continue
		}
		if !o.p.Names(key) {
			continue
		}
		short, _ := o.p.Short(key)
		o.record(&history.Event{T: o.now(), Client: -1, Op: history.OpServer, Node: name, Key: short, Detail: m.Payload})
	}
}

// externalNote says what Observe did to the user's servers'
// notify-keyspace-events.
func (o *observer) externalNote() {
	switch {
	case len(o.refused) > 0:
		o.st.Mode = NotifyRefused
		o.st.Note = "keyspace notifications unavailable, the unlock check is skipped: " + strings.Join(o.refused, "; ")
	case len(o.enabled) > 0:
		o.st.Mode = NotifyEnabled
		o.st.Note = "notify-keyspace-events was turned on for the run on " + strings.Join(o.enabled, ", ") + " and set back to its previous value afterwards"
	default:
		o.st.Mode = NotifyAlreadyOn
		o.st.Note = "notify-keyspace-events already had what the observer needs: nothing was changed"
	}
}

// enableNotify adds notifyFlags to node n's notify-keyspace-events. It
// returns the restore function (idempotent; also registered with the
// cluster's Stop) and whether it changed anything.
func enableNotify(ctx context.Context, c *Cluster, n *Node) (restore func() error, old string, changed bool, err error) {
	cl := c.AdminClient(n)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := cl.ConfigGet(cctx, "notify-keyspace-events").Result()
	if err != nil {
		return nil, "", false, fmt.Errorf("CONFIG GET notify-keyspace-events: %w", err)
	}
	old, ok := v["notify-keyspace-events"]
	if !ok {
		return nil, "", false, fmt.Errorf("CONFIG GET notify-keyspace-events: no such parameter")
	}
	want := MergeNotify(old, notifyFlags)
	if want == old {
		return func() error { return nil }, old, false, nil
	}
	if err := cl.ConfigSet(cctx, "notify-keyspace-events", want).Err(); err != nil {
		return nil, old, false, fmt.Errorf("CONFIG SET notify-keyspace-events %s: %w", want, err)
	}
	var once sync.Once
	var rerr error
	restore = func() error {
		once.Do(func() {
			// A fresh context: the run's may be cancelled (Ctrl-C) and the
			// user's server must get its setting back regardless.
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			rc := redis.NewClient(&redis.Options{Addr: n.ServerAddr, Password: c.password, TLSConfig: n.tls, MaxRetries: 2,
				DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 1, DisableIdentity: true})
			defer rc.Close()
			if err := rc.ConfigSet(rctx, "notify-keyspace-events", old).Err(); err != nil {
				rerr = fmt.Errorf("node %s: restore notify-keyspace-events to %q: %w", n.Name, old, err)
			}
		})
		return rerr
	}
	c.onStop(restore)
	return restore, old, true, nil
}

// MergeNotify is the notify-keyspace-events value that has every class of
// have and of need. "A" stands for g$lshzxetd.
func MergeNotify(have, need string) string {
	out := have
	for _, f := range need {
		if strings.ContainsRune(out, f) || (strings.ContainsRune("g$lshzxetd", f) && strings.ContainsRune(out, 'A')) {
			continue
		}
		out += string(f)
	}
	return out
}
