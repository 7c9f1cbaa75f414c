package workloads

import (
	"sync"
	"time"
)

// Resource is the protected resource behind the lock: in-process storage
// with one cell per lock key, standing for the database or file that the
// lock is meant to protect. Reads and writes are individually atomic but a
// read-modify-write across them is not — exactly what the lock must guard.
type Resource struct {
	kind  string // counter | inventory | register
	cells []resCell
}

type resCell struct {
	mu       sync.Mutex
	value    int64
	maxFence uint64
	_        [40]byte // keep cells on separate cache lines
}

// NewResource makes a resource of kind for n keys; inventories start at stock.
func NewResource(kind string, n int, stock int) *Resource {
	r := &Resource{kind: kind, cells: make([]resCell, n)}
	if kind == "inventory" {
		for i := range r.cells {
			r.cells[i].value = int64(stock)
		}
	}
	return r
}

// Read returns key i's value and when it was applied (run ns).
func (r *Resource) Read(i int, now func() int64) (int64, int64) {
	c := &r.cells[i]
	c.mu.Lock()
	v := c.value
	t := now()
	c.mu.Unlock()
	return v, t
}

// Write stores v for key i. A register rejects a write whose fence is lower
// than the highest it accepted (fence 0 = none presented, never rejected).
// It returns whether it was accepted and when it was applied (run ns).
func (r *Resource) Write(i int, v int64, fence uint64, now func() int64) (bool, int64) {
	c := &r.cells[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.kind == "register" && fence != 0 {
		if fence < c.maxFence {
			return false, now()
		}
		c.maxFence = fence
	}
	c.value = v
	return true, now()
}

// Value is key i's current value (for tests and the final check).
func (r *Resource) Value(i int) int64 {
	c := &r.cells[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.value
}

// sleep waits d (no-op for d <= 0) or until stop is closed.
func sleep(d time.Duration, stop <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-stop:
		t.Stop()
	}
}
