package yardstick

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/keyspace"
)

func TestCostSinceAndPerCycle(t *testing.T) {
	before := Cost{"set": {Calls: 10, Usec: 20}, "evalsha": {Calls: 5, Usec: 50}}
	after := Cost{"set": {Calls: 110, Usec: 220}, "evalsha": {Calls: 105, Usec: 550}, "get": {Calls: 0, Usec: 0}}
	d := after.Since(before)
	if len(d) != 2 || d["set"].Calls != 100 || d["evalsha"].Usec != 500 {
		t.Fatalf("Since = %+v", d)
	}
	pc := d.PerCycle(100)
	if pc.CommandsPerCycle != 2 || pc.UsecPerCycle != 7 || pc.ByCommand["set"] != 1 {
		t.Errorf("PerCycle = %+v, want 2 commands and 7 µs a cycle", pc)
	}
	if (Cost(nil)).Since(before) != nil || after.Since(nil) != nil {
		t.Error("Since with a missing side must be nil")
	}
}

func TestMachine(t *testing.T) {
	if m := Machine(); !strings.Contains(m, "cores") {
		t.Errorf("Machine() = %q", m)
	}
}

// The yardsticks against a real server: a round trip, the bare go-redis
// cycle through the simple lock's own release script, and the servers'
// counters seeing exactly those commands.
func TestYardsticksOnARealServer(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	ctx := context.Background()
	admin := c.AdminClient(c.Nodes[0])
	p := keyspace.Prefix("lc:ys:")
	cl := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{})
	defer cl.Close()
	if rtt := SetRTT(ctx, []redis.UniversalClient{cl}, p); rtt <= 0 {
		t.Errorf("SetRTT = %v", rtt)
	}
	before := ServerCost(ctx, []*redis.Client{admin})
	cps := GoRedisCycles(ctx, c.Cluster, admin, cluster.ClientOptions{}, 2, 300*time.Millisecond, p)
	if cps <= 0 {
		t.Fatalf("GoRedisCycles = %v: a command failed", cps)
	}
	d := ServerCost(ctx, []*redis.Client{admin}).Since(before)
	if d["set"].Calls < 1 || d["evalsha"].Calls+d["eval"].Calls < 1 {
		t.Errorf("commands seen: %+v, want SET and the release script", d)
	}
}
