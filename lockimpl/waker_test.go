package lockimpl_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// healthChecks counts go-redis pub/sub health-check goroutines.
func healthChecks() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*channel).initHealthCheck")
}

// A lock whose waits subscribed to release channels leaves no goroutine
// behind once its client is closed: the waker closes its PubSub, whose
// health check otherwise runs (and pings) for the life of the process.
func TestWaitSubscriptionEndsWithItsClient(t *testing.T) {
	s := startServer(t)
	before := healthChecks()
	for i := 0; i < 3; i++ {
		o := lockimpl.Options{TTL: 5 * time.Second, AcquireTimeout: 5 * time.Second, Wait: "pubsub"}
		conns := s.lockerEnvConns()
		a, err := lockimpl.New("simple", lockimpl.Env{Options: o, Conns: conns[:1]})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, s.lockerEnvConns()...)
		b, err := lockimpl.New("simple", lockimpl.Env{Options: o, Conns: conns[1:]})
		if err != nil {
			t.Fatal(err)
		}
		la := mustAcquire(t, a, "waker")
		// b waits past its quick retries, so it subscribes: a is released
		// once b's subscription's health check runs (or after 3 s, when
		// the check below says it never did), not after a fixed time that
		// a loaded machine's retries outlast.
		released := make(chan struct{})
		go func() {
			defer close(released)
			for end := time.Now().Add(3 * time.Second); healthChecks() <= before && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
			mustRelease(t, la)
		}()
		lb, err := b.Acquire(context.Background(), "waker")
		if err != nil {
			t.Fatalf("waiting acquire: %v", err)
		}
		<-released // its reply read before the connections close
		mustRelease(t, lb)
		if healthChecks() <= before && i == 0 {
			t.Fatal("no pub/sub health check while subscribed: the wait did not subscribe, so this test shows nothing")
		}
		_ = a.Close()
		_ = b.Close()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for healthChecks() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := healthChecks(); n > before {
		t.Fatalf("%d pub/sub health checks left after the clients closed (%d before)", n, before)
	}
}
