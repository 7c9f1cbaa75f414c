package faults

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

func TestRestartNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aof    bool
		params map[string]string
		keep   bool
		down   time.Duration
	}{
		{"empty", false, map[string]string{"mode": "empty"}, false, 0},
		{"aof", true, map[string]string{"mode": "aof"}, true, 0},
		{"delayed", false, map[string]string{"mode": "delayed", "delay": "400ms"}, false, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single, AOF: tc.aof})
			env := testEnv(c.Cluster)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n := c.Nodes[0]
			admin := c.AdminClient(n)
			for i := range 3 {
				if err := admin.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// While a delayed restart is down, the node must not answer.
			var downSeen error
			probe := make(chan struct{})
			if tc.down > 0 {
				go func() {
					defer close(probe)
					time.Sleep(tc.down / 2)
					downSeen = ping(ctx, n.ServerAddr, 100*time.Millisecond)
				}()
			} else {
				close(probe)
			}
			t0 := time.Now()
			out, err := inject("restart-node", "", tc.params, 0).Start(ctx, env)
			took := time.Since(t0)
			<-probe
			c.Seen()
			mustApply(t, out, err)
			if out.Effect["dbsize_before"] != "3" {
				t.Fatalf("dbsize before %q, want 3", out.Effect["dbsize_before"])
			}
			want := "0"
			if tc.keep {
				want = "3"
			}
			if out.Effect["dbsize_after"] != want {
				t.Fatalf("dbsize after %q, want %s", out.Effect["dbsize_after"], want)
			}
			if got, err := admin.DBSize(ctx).Result(); err != nil || strconv.FormatInt(got, 10) != want {
				t.Fatalf("DBSIZE after restart %d, %v; want %s", got, err, want)
			}
			downMS, _ := strconv.Atoi(out.Effect["down_ms"])
			if tc.down > 0 {
				if downSeen == nil {
					t.Fatal("the node answered PING during its delayed restart")
				}
				if time.Duration(downMS)*time.Millisecond < tc.down || took < tc.down {
					t.Fatalf("down %dms (Start took %v), want at least %v", downMS, took, tc.down)
				}
			}
			t.Logf("restart %s took %v", tc.name, took.Round(time.Millisecond))
		})
	}
}

func TestRestartNodeAOFNeedsAppendonly(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid := c.Nodes[0].Ctl.Pid()
	out, err := inject("restart-node", "", map[string]string{"mode": "aof"}, 0).Start(ctx, testEnv(c.Cluster))
	if err != nil || out.Applied || !strings.Contains(out.Effect["error"], "appendonly") {
		t.Fatalf("outcome %+v, %v; want not applied for lack of appendonly", out, err)
	}
	if c.Nodes[0].Ctl.Pid() != pid {
		t.Fatal("the node was restarted anyway")
	}
}
