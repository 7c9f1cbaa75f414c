package cluster

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestStopWaitsForTheServersTogether: Stop runs its steps in reverse
// order, begins the servers' stops in their turn and waits for them side
// by side (each wait below needs the other's to have started, which one
// after the other never happens), and joins every error.
func TestStopWaitsForTheServersTogether(t *testing.T) {
	c := &Cluster{}
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	started := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	server := func(name, other string) func() func() error {
		return func() func() error {
			note("begin " + name)
			return func() error {
				close(started[name])
				select {
				case <-started[other]:
					note("end " + name)
					return nil
				case <-time.After(5 * time.Second):
					return errors.New(name + " waited alone: the waits ran one after the other")
				}
			}
		}
	}
	c.onStop(func() error { note("first"); return errors.New("first failed") })
	c.onStopBegin(server("a", "b"))
	c.onStop(func() error { note("middle"); return nil })
	c.onStopBegin(server("b", "a"))
	c.onStop(func() error { note("last"); return nil })

	err := c.Stop()
	if err == nil || err.Error() != "first failed" {
		t.Fatalf("Stop = %v, want the first step's error alone", err)
	}
	want := []string{"last", "begin b", "middle", "begin a", "first"}
	if len(order) != 7 || !slices.Equal(order[:5], want) {
		t.Fatalf("steps ran %q, want %q then both ends", order, want)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("a second Stop = %v, want nil", err)
	}
}
