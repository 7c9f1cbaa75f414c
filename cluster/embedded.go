package cluster

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// startEmbedded runs miniredis in-process: it runs anywhere but has no
// replication, no persistence and no process to pause, so only client-side
// faults apply.
func startEmbedded(_ context.Context, c *Cluster) error {
	n := 1
	switch c.Spec.Topology {
	case Single:
	case Independent:
		n = c.Spec.Nodes
	default:
		return fmt.Errorf("%w: backend embedded supports topologies single and independent, not %s", ErrBadSpec, c.Spec.Topology)
	}
	for i := 1; i <= n; i++ {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true) // TTLs run on the wall clock, as in a real server
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("%w: start embedded redis: %v", ErrInfra, err)
		}
		c.onStop(func() error { m.Close(); return nil })
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("n%d", i), Addr: m.Addr(), ServerAddr: m.Addr(), Role: "master", Ctl: embeddedCtl{}})
	}
	return nil
}

type embeddedCtl struct{}

func (embeddedCtl) Pause() error                        { return ErrUnsupported }
func (embeddedCtl) Resume() error                       { return ErrUnsupported }
func (embeddedCtl) Kill() error                         { return ErrUnsupported }
func (embeddedCtl) Restart(context.Context, bool) error { return ErrUnsupported }
func (embeddedCtl) State() string                       { return "embedded" }
func (embeddedCtl) Pid() int                            { return 0 }
