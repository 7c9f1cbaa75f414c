package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"

	"github.com/lockchaos/lockchaos/cluster"
)

// The link fault acts on one client × node link, in flight: the client's
// bytes are already written when the link proxy (cluster/links.go) holds,
// drops or resets them. A delayed renewal leaves on time and arrives late;
// other clients' commands to the same node are untouched.

func init() {
	Register(Kind{
		Name: history.FaultLink,
		Description: "fault one client's link to nodes, in flight, through that client's own proxy: " +
			`target "CLIENT -> NODES" (e.g. "holder -> master", "client:0 -> node:2"); ` +
			"params.mode delay (every chunk waits params.delay), drop (silently discarded) or reset (connection closed); " +
			"params.direction to-node (default for delay), from-node or both (default for drop and reset)",
		Validate: func(s Spec) error {
			_, _, err := splitLinkTarget(s.Target)
			return err
		},
		New: func(s Scheduled) (Injector, error) {
			lp, err := parseLinkParams(s.Spec.Params)
			return &linkFault{s: s, p: lp}, err
		},
		Needs: Needs{Links: true},
	})
}

// linkParams are the link kind's params, parsed once.
type linkParams struct {
	mode      string
	direction string
	delay     time.Duration
}

func parseLinkParams(p map[string]string) (linkParams, error) {
	lp := linkParams{mode: p[history.ParamMode], direction: p[history.ParamDirection]}
	switch lp.mode {
	case "":
		lp.mode = "delay"
	case "delay", "drop", "reset":
	default:
		return lp, fmt.Errorf("params.mode: %q is not delay, drop or reset", lp.mode)
	}
	if err := validDirection(lp.direction); err != nil {
		return lp, err
	}
	if lp.direction == "" {
		lp.direction = "both"
		if lp.mode == "delay" {
			lp.direction = "to-node"
		}
	}
	if lp.mode == "delay" {
		d, err := time.ParseDuration(p[history.ParamDelay])
		if err != nil || d < time.Millisecond {
			return lp, fmt.Errorf("params.delay: %q is not a duration of at least 1ms", p[history.ParamDelay])
		}
		lp.delay = d
	} else if v := p[history.ParamDelay]; v != "" {
		return lp, fmt.Errorf("params.delay: %q is set but mode %s delays nothing", v, lp.mode)
	}
	return lp, nil
}

// splitLinkTarget splits "CLIENT -> NODES" and validates both sides.
func splitLinkTarget(t string) (client, nodes string, err error) {
	c, n, ok := strings.Cut(t, "->")
	c, n = strings.TrimSpace(c), strings.TrimSpace(n)
	if !ok || c == "" || n == "" {
		return "", "", fmt.Errorf("target: %q is not \"CLIENT -> NODES\" (e.g. \"holder -> master\", \"client:0 -> node:2\")", t)
	}
	if err := validClientTarget(c); err != nil {
		return "", "", fmt.Errorf("target %q: client side: %w", t, err)
	}
	if err := validNodeTarget(n); err != nil {
		return "", "", fmt.Errorf("target %q: node side: %w", t, err)
	}
	return c, n, nil
}

type linkFault struct {
	s      Scheduled
	p      linkParams
	client int
	nodes  []*cluster.Node
	undos  []func()
}

// linkProbe measures PING through client's link proxy to each node.
func linkProbe(ctx context.Context, c *cluster.Cluster, client int, nodes []*cluster.Node, timeout time.Duration) []probeResult {
	out := make([]probeResult, len(nodes))
	done := make(chan struct{}, len(nodes))
	for i, n := range nodes {
		go func() {
			t0 := time.Now()
			rtt, err := c.MeasureLinkPing(ctx, client, n, timeout)
			out[i] = probeResult{rtt: rtt, err: err, took: time.Since(t0)}
			done <- struct{}{}
		}()
	}
	for range nodes {
		<-done
	}
	return out
}

func (f *linkFault) Start(ctx context.Context, env *Env) (Outcome, error) {
	out := Outcome{Target: f.s.Spec.Target, Effect: map[string]string{}}
	lp := f.p
	cs, ns, err := splitLinkTarget(f.s.Spec.Target)
	if err != nil {
		return out, err
	}
	if f.client, err = clientTarget(env, cs); err != nil {
		out.Effect[history.EffectReason] = err.Error()
		return out, nil
	}
	if f.client >= env.Cluster.Spec.Links {
		out.Effect[history.EffectReason] = fmt.Sprintf("client %d has no link proxy (the cluster has links for %d clients)", f.client, env.Cluster.Spec.Links)
		return out, nil
	}
	nodes, err := nodeTargets(env, ns)
	if err != nil {
		out.Effect[history.EffectReason] = err.Error()
		return out, nil
	}
	out.Target = fmt.Sprintf("client %d -> node %s", f.client, names(nodes))
	out.Effect["mode"], out.Effect["direction"] = lp.mode, lp.direction
	if lp.mode == "delay" {
		out.Effect["delay"] = lp.delay.String()
	}
	before := linkProbe(ctx, env.Cluster, f.client, nodes, probeTimeout)
	out.Effect["ping_before_ms"] = perNode(nodes, func(i int) string { return before[i].String() })
	for _, n := range nodes {
		undo, err := env.Cluster.LinkFault(f.client, n, lp.mode, lp.direction, lp.delay)
		if err != nil {
			f.undoAll()
			return out, fmt.Errorf("client %d -> node %s: %w", f.client, n.Name, err)
		}
		f.nodes = append(f.nodes, n)
		f.undos = append(f.undos, undo)
	}
	out.Effect["toxics"] = perNode(nodes, func(i int) string { return strings.Join(env.Cluster.LinkToxics(f.client, nodes[i]), ",") })
	// The measured effect, on a fresh connection through the same link: a
	// cut link fails or times out, a slow one shows the delay. A delay in
	// both directions is paid twice per round trip.
	timeout := probeCutLimit
	if lp.mode == "delay" {
		timeout = probeTimeout + 4*lp.delay
	}
	after := linkProbe(ctx, env.Cluster, f.client, nodes, timeout)
	out.Effect["ping_after_ms"] = perNode(nodes, func(i int) string { return after[i].String() })
	out.Applied = true
	for i, r := range after {
		ok := r.err != nil
		if lp.mode == "delay" {
			ok = r.err == nil && r.rtt >= lp.delay*9/10
		}
		if !ok {
			out.Applied = false
			out.Effect[history.EffectReason] = fmt.Sprintf("client %d -> node %s: PING through the link did not show the fault: %s", f.client, nodes[i].Name, r)
		}
	}
	return out, nil
}

func (f *linkFault) undoAll() {
	for _, u := range f.undos {
		u()
	}
	f.undos = nil
}

// Heal removes the toxics and measures PING through the link again.
func (f *linkFault) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	if len(f.nodes) == 0 {
		return nil, nil
	}
	f.undoAll()
	after := linkProbe(ctx, env.Cluster, f.client, f.nodes, probeTimeout)
	return map[string]string{
		"toxics_removed":     fmt.Sprintf("client %d -> node %s", f.client, names(f.nodes)),
		"ping_after_heal_ms": perNode(f.nodes, func(i int) string { return after[i].String() }),
	}, nil
}
