package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// What the network faults (partition, latency: a file each) share: toxics
// on the in-process fault proxy in front of each node (the cluster's
// Spec.Proxy). They act on the client↔node links only: the
// harness's own admin links (observer, checks) bypass the proxy.

func validDirection(d string) error {
	switch d {
	case "", "both", "to-node", "from-node":
		return nil
	}
	return fmt.Errorf("params.direction: %q is not both, to-node or from-node", d)
}

// netFault is one firing of partition or latency on one or more nodes.
type netFault struct {
	s    Scheduled
	kind string
	// params, parsed in New: partition's mode; latency's latency and
	// jitter; both's direction (with its default).
	mode            string
	latency, jitter time.Duration
	dir             string
	nodes           []*cluster.Node
	undos           []func()
}

// Probe timeouts: a PING through a healthy proxy takes well under a
// millisecond; a cut link either fails at once (reset) or never answers.
const (
	probeTimeout  = 500 * time.Millisecond
	probeCutLimit = 300 * time.Millisecond
)

// probe measures PING through each node's proxy, in parallel.
func probe(ctx context.Context, c *cluster.Cluster, nodes []*cluster.Node, timeout time.Duration) []probeResult {
	out := make([]probeResult, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			rtt, err := c.MeasurePing(ctx, n, timeout)
			out[i] = probeResult{rtt: rtt, err: err, took: time.Since(t0)}
		}()
	}
	wg.Wait()
	return out
}

type probeResult struct {
	rtt  time.Duration
	err  error
	took time.Duration
}

func (r probeResult) String() string {
	switch {
	case r.err == nil:
		return ms(int64(r.rtt))
	case cluster.IsTimeout(r.err):
		return "timeout after " + ms(int64(r.took)) + "ms"
	}
	return "failed after " + ms(int64(r.took)) + "ms: " + r.err.Error()
}

// perNode renders one value per node: "n1=0.12; n2=0.10".
func perNode(nodes []*cluster.Node, f func(i int) string) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name + "=" + f(i)
	}
	return strings.Join(parts, "; ")
}

func (f *netFault) Start(ctx context.Context, env *Env) (Outcome, error) {
	out := Outcome{Target: f.s.Spec.Target, Effect: map[string]string{}}
	if !env.Cluster.Spec.Proxy {
		out.Effect[history.EffectReason] = f.kind + " needs the fault proxy on every client↔node link: set the cluster's proxy: true"
		return out, nil
	}
	nodes, err := nodeTargets(env, f.s.Spec.Target)
	if err != nil {
		out.Effect[history.EffectReason] = err.Error()
		return out, nil
	}
	out.Target = "node " + names(nodes)
	dir, latency, jitter := f.dir, f.latency, f.jitter
	if f.kind == history.FaultPartition {
		out.Effect["mode"], out.Effect["direction"] = f.mode, dir
	} else {
		out.Effect["latency"], out.Effect["jitter"], out.Effect["direction"] = latency.String(), jitter.String(), dir
	}

	before := probe(ctx, env.Cluster, nodes, probeTimeout)
	out.Effect["ping_before_ms"] = perNode(nodes, func(i int) string { return before[i].String() })

	for _, n := range nodes {
		var undo func()
		if f.kind == history.FaultPartition {
			undo, err = env.Cluster.Partition(n, out.Effect["mode"], dir)
		} else {
			undo, err = env.Cluster.LatencyDir(n, latency, jitter, dir)
		}
		if err != nil {
			f.undoAll()
			return out, fmt.Errorf("node %s: %w", n.Name, err)
		}
		f.nodes = append(f.nodes, n)
		f.undos = append(f.undos, undo)
	}
	out.Effect["toxics"] = perNode(nodes, func(i int) string { return strings.Join(env.Cluster.Toxics(nodes[i]), ",") })

	// The measured effect: a cut link must fail or time out; a slow one must
	// show at least the minimum delay.
	timeout := probeCutLimit
	if f.kind == history.FaultLatency {
		timeout = probeTimeout + 4*(latency+jitter)
	}
	after := probe(ctx, env.Cluster, nodes, timeout)
	out.Effect["ping_after_ms"] = perNode(nodes, func(i int) string { return after[i].String() })
	out.Applied = true
	for i, r := range after {
		var ok bool
		if f.kind == history.FaultPartition {
			ok = r.err != nil
		} else {
			ok = r.err == nil && r.rtt >= (latency-jitter)*9/10
		}
		if !ok {
			out.Applied = false
			out.Effect[history.EffectReason] = "node " + nodes[i].Name + ": PING through the proxy did not show the fault: " + r.String()
		}
	}
	return out, nil
}

func (f *netFault) undoAll() {
	for _, u := range f.undos {
		u()
	}
	f.undos = nil
}

// Heal removes the toxics and measures PING again.
func (f *netFault) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	if len(f.nodes) == 0 {
		return nil, nil
	}
	f.undoAll()
	eff := map[string]string{"toxics_removed": names(f.nodes)}
	after := probe(ctx, env.Cluster, f.nodes, probeTimeout)
	eff["ping_after_heal_ms"] = perNode(f.nodes, func(i int) string { return after[i].String() })
	return eff, nil
}
