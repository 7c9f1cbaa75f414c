package cluster

import "fmt"

// IsolateNode partitions n, a node of the cluster topology, from every other
// node while clients still reach it: its bus proxy cuts every link to it,
// every other node's bus proxy cuts the links n opens (they come from n's
// own source address), and its replication proxy cuts its replicas' links.
// What the harness asks of the cluster (Shard, CurrentMaster) it asks the
// majority from then on. It returns how many live links it cut, and heal,
// which lifts every cut.
func (c *Cluster) IsolateNode(n *Node) (cut int, heal func(), err error) {
	if c.Spec.Topology != RedisCluster || n.bus == nil {
		return 0, nil, fmt.Errorf("%w: isolating a node needs the cluster topology (this is %s)", ErrUnsupported, c.Spec.Topology)
	}
	c.mu.Lock()
	if c.isolated == nil {
		c.isolated = map[*Node]bool{}
	}
	c.isolated[n] = true
	c.mu.Unlock()
	cut += n.bus.cut(true)
	for _, o := range c.Nodes {
		if o != n && o.bus != nil {
			cut += o.bus.cut(false, n.src)
		}
	}
	if n.repl != nil {
		cut += n.repl.cutReplication()
	}
	heal = func() {
		n.bus.heal(true)
		for _, o := range c.Nodes {
			if o != n && o.bus != nil {
				o.bus.heal(false, n.src)
			}
		}
		if n.repl != nil {
			n.repl.healReplication()
		}
		c.mu.Lock()
		delete(c.isolated, n)
		c.mu.Unlock()
	}
	return cut, heal, nil
}

func (c *Cluster) isIsolated(n *Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isolated[n]
}
