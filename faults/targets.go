package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

// holderWait bounds how long a "holder" target waits for some client to hold
// a lock: max(2×TTL, 1s).
func holderWait(env *Env) time.Duration { return max(2*env.TTL, time.Second) }

// clientTarget resolves a client target: holder | random-client | client:N.
// "holder" picks a current holder at random; when nobody holds at that
// instant (between cycles) it waits for one, at most holderWait, and fails
// after that.
func clientTarget(env *Env, target string) (int, error) {
	switch {
	case target == "" || target == "holder":
		deadline := time.Now().Add(holderWait(env))
		for {
			if h := env.Clients.Holders(); len(h) > 0 {
				return h[env.Rand.IntN(len(h))], nil
			}
			if time.Now().After(deadline) {
				return -1, fmt.Errorf("target holder: no client held a lock within %v", holderWait(env))
			}
			time.Sleep(200 * time.Microsecond)
		}
	case target == "random-client":
		ids := env.Clients.IDs()
		return ids[env.Rand.IntN(len(ids))], nil
	case strings.HasPrefix(target, "client:"):
		n, err := strconv.Atoi(strings.TrimPrefix(target, "client:"))
		if err != nil || !slices.Contains(env.Clients.IDs(), n) {
			return -1, fmt.Errorf("target %q: no such client here (clients %s)", target, idRange(env.Clients.IDs()))
		}
		return n, nil
	}
	return -1, fmt.Errorf("target %q is not a client target (holder, random-client, client:N)", target)
}

// pointTargets resolves the target of a fault that waits for a point of the
// cycle: any-client arms every client and the first to reach the point takes
// it; the other targets name one client as clientTarget does.
func pointTargets(env *Env, target string) ([]int, error) {
	if target == "any-client" {
		return env.Clients.IDs(), nil
	}
	c, err := clientTarget(env, target)
	if err != nil {
		return nil, err
	}
	return []int{c}, nil
}

func validPointTarget(t string) error {
	if t == "any-client" {
		return nil
	}
	if err := validClientTarget(t); err != nil {
		return fmt.Errorf("target: %q is not one of holder, random-client, any-client, client:N", t)
	}
	return nil
}

func validClientTarget(t string) error {
	switch {
	case t == "" || t == "holder" || t == "random-client":
		return nil
	case strings.HasPrefix(t, "client:"):
		if _, err := strconv.Atoi(strings.TrimPrefix(t, "client:")); err == nil {
			return nil
		}
	}
	return fmt.Errorf("target: %q is not one of holder, random-client, client:N", t)
}

// nodeTargets resolves node targets: master | replica | node:N (1-based, as
// the node names n1..nN) | random-node | minority | majority | all | nodes:1,2.
func nodeTargets(env *Env, target string) ([]*cluster.Node, error) {
	nodes := env.Cluster.Nodes
	if len(nodes) == 0 {
		return nil, fmt.Errorf("target %q: the cluster has no nodes", target)
	}
	pick := func(idx []int) []*cluster.Node {
		out := make([]*cluster.Node, 0, len(idx))
		for _, i := range idx {
			out = append(out, nodes[i])
		}
		return out
	}
	switch {
	case target == "" || target == "master":
		m := CurrentMaster(env)
		if m == nil {
			return nil, fmt.Errorf("target master: no node is master now")
		}
		return []*cluster.Node{m}, nil
	case target == "replica":
		// Under Sentinel roles change with failovers: every node but the
		// current master is a replica.
		var m *cluster.Node
		if len(env.Cluster.Sentinels) > 0 {
			m = CurrentMaster(env)
		}
		var reps []*cluster.Node
		for _, n := range nodes {
			if (m == nil && n.Role == "replica") || (m != nil && n != m) {
				reps = append(reps, n)
			}
		}
		if len(reps) == 0 {
			return nil, fmt.Errorf("target replica: the topology has no replica")
		}
		return []*cluster.Node{reps[env.Rand.IntN(len(reps))]}, nil
	case target == "random-node":
		return []*cluster.Node{nodes[env.Rand.IntN(len(nodes))]}, nil
	case target == "all":
		return nodes, nil
	case target == "minority", target == "majority":
		k := (len(nodes) - 1) / 2
		if target == "majority" {
			k = len(nodes)/2 + 1
		}
		return pick(env.Rand.Perm(len(nodes))[:k]), nil
	case strings.HasPrefix(target, "node:"), strings.HasPrefix(target, "nodes:"):
		idx, err := nodeIndexes(strings.SplitN(target, ":", 2)[1], len(nodes))
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", target, err)
		}
		return pick(idx), nil
	}
	return nil, fmt.Errorf("target %q is not a node target", target)
}

// nodeIndexes parses "1,3" (1-based node numbers) into 0-based indexes.
func nodeIndexes(s string, n int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 1 || (n > 0 && v > n) {
			return nil, fmt.Errorf("%q is not a node number 1..%d", part, n)
		}
		out = append(out, v-1)
	}
	return out, nil
}

func validNodeTarget(t string) error {
	switch {
	case t == "" || t == "master" || t == "replica" || t == "random-node" || t == "all" || t == "minority" || t == "majority":
		return nil
	case strings.HasPrefix(t, "node:"), strings.HasPrefix(t, "nodes:"):
		if _, err := nodeIndexes(strings.SplitN(t, ":", 2)[1], 0); err == nil {
			return nil
		}
	}
	return fmt.Errorf("target: %q is not one of master, replica, node:N, nodes:N,M, random-node, minority, majority, all", t)
}

// CurrentMaster returns the node that is master now: for sentinel topologies
// the one the sentinels name (falling back to roles), else the first node.
// Other files may replace masterLookup for topologies they know.
func CurrentMaster(env *Env) *cluster.Node {
	if masterLookup != nil {
		if n := masterLookup(env); n != nil {
			return n
		}
	}
	for _, n := range env.Cluster.Nodes {
		if n.Role == "master" {
			return n
		}
	}
	return env.Cluster.Nodes[0]
}

var masterLookup func(env *Env) *cluster.Node

func names(nodes []*cluster.Node) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = n.Name
	}
	return strings.Join(s, ",")
}

// onlyMaster validates the target of a kind that always acts on the
// current master: none, or "master"; why says so otherwise.
func onlyMaster(why string) func(Spec) error {
	return func(s Spec) error {
		if s.Target != "" && s.Target != "master" {
			return fmt.Errorf("target: %q: %s", s.Target, why)
		}
		return nil
	}
}

// idRange shows client ids compactly: "0..3", or the list when not
// contiguous (a worker's share).
func idRange(ids []int) string {
	if len(ids) == 0 {
		return "none"
	}
	if ids[len(ids)-1]-ids[0] == len(ids)-1 {
		return fmt.Sprintf("%d..%d", ids[0], ids[len(ids)-1])
	}
	return strings.Trim(fmt.Sprint(ids), "[]")
}
