package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/history"
)

// Observe subscribes to every data node's keyspace notifications
// (__keyevent@*__:*; process and docker nodes run with
// notify-keyspace-events KEA) and records each one as an OpServer event:
// Node = the node's name, Key = the key, Detail = the event (set, del,
// expired, hset, hincrby, pexpire, ...). T is when the notification reached
// the observer, on the run clock now: a few hundred µs after the server
// acted, never before.
//
// The subscription follows node restarts: go-redis re-dials and re-subscribes
// a pub/sub connection that broke. A node that cannot deliver notifications
// (the embedded backend) is skipped; Observe says so by recording one
// OpServer event with Detail "observer-unavailable".
//
// stop ends every subscription and waits for the goroutines to finish.
func Observe(ctx context.Context, c *Cluster, record func(*history.Event), now func() int64) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var subs []*redis.PubSub
	for _, n := range c.Nodes {
		if c.Backend == Embedded || c.Backend == External {
			record(&history.Event{T: now(), Client: -1, Op: history.OpServer, Node: n.Name,
				Detail: "observer-unavailable", Err: "backend " + c.Backend + " does not deliver keyspace notifications to lockchaos"})
			continue
		}
		cl := c.AdminClient(n)
		ps := cl.PSubscribe(ctx, "__keyevent@*__:*")
		// The first reply confirms the subscription: events before it are
		// not seen, so wait for it (bounded) before the workload starts.
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := ps.Receive(rctx)
		rcancel()
		if err != nil {
			_ = ps.Close()
			for _, s := range subs {
				_ = s.Close()
			}
			cancel()
			return func() {}, err
		}
		subs = append(subs, ps)
		ch := ps.Channel(redis.WithChannelSize(1<<16), redis.WithChannelHealthCheckInterval(time.Second))
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			// Drain until the subscription is closed (stop), so go-redis is
			// never left blocked on a full channel.
			for m := range ch {
				if ctx.Err() != nil {
					continue
				}
				ev := m.Channel
				if i := strings.LastIndexByte(ev, ':'); i >= 0 {
					ev = ev[i+1:]
				}
				record(&history.Event{T: now(), Client: -1, Op: history.OpServer, Node: name, Key: m.Payload, Detail: ev})
			}
		}(n.Name)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			for _, s := range subs {
				_ = s.Close()
			}
			wg.Wait()
		})
	}, nil
}
