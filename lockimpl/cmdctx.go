package lockimpl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// commandTimeout is context.WithTimeout(parent, d) for one command sent
// with go-redis, at a fraction of its cost: the context and its timer are
// reused from one command to the next. A command of a lock runs in one
// synchronous go-redis call, which bounds its I/O by the context's Deadline
// and its waits (pool, dial, a fault's dropped link) by Done, as with
// context.WithTimeout; nothing keeps the context after the call.
//
// context.WithTimeout cost about 2 µs of the harness's CPU per lock cycle
// (two commands: the context, its timer, its Done channel and the cancel
// closure are 4-5 allocations each, and a timer added to and removed from
// the runtime's heap), a tenth of the gap between the simple lock's bench
// cycle and bare go-redis's (issue 27).
//
// cancel must be called exactly once, and the context not used after it:
// it may then serve another command. When the parent has a deadline
// before d (or is done already) this is context.WithTimeout itself.
func commandTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return (*cmdSlot)(nil).commandTimeout(parent, d)
}

// cmdSlot keeps one idle cmdContext for a Locker's commands with the
// parent still registered (context.AfterFunc) from its last command: an
// acquire's parent, the client's context, is the same every cycle, and
// registering and unregistering with it cost as much as the rest. At most
// one context waits in it; the others go to the pool, unregistered, so no
// registration outlives its use but this one.
type cmdSlot struct{ idle atomic.Pointer[cmdContext] }

// commandTimeout is the package's commandTimeout, reusing s's idle
// context first (s may be nil).
func (s *cmdSlot) commandTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 || parent.Err() != nil {
		return context.WithTimeout(parent, d)
	}
	deadline := time.Now().Add(d)
	if pd, ok := parent.Deadline(); ok && !pd.After(deadline) {
		return context.WithTimeout(parent, d)
	}
	var c *cmdContext
	if s != nil {
		if c = s.idle.Swap(nil); c != nil && !c.takeFor(parent) {
			c = nil
		}
	}
	if c == nil {
		c, _ = cmdContexts.Get().(*cmdContext)
	}
	if c == nil {
		c = &cmdContext{done: make(chan struct{})}
		c.cancelFn = c.cancel
		c.parentDoneFn = c.parentDone
		c.timer = time.AfterFunc(d, c.expire)
	} else {
		c.timer.Reset(d)
	}
	c.slot, c.parent, c.deadline = s, parent, deadline
	if c.stop == nil && parent.Done() != nil {
		c.regParent = parent
		c.stop = context.AfterFunc(parent, c.parentDoneFn)
	}
	return c, c.cancelFn
}

// cmdContexts are idle cmdContexts: their timer stopped before it fired,
// registered with no parent.
var cmdContexts sync.Pool

// cmdContext is commandTimeout's context.
type cmdContext struct {
	parent   context.Context
	deadline time.Time
	slot     *cmdSlot
	timer    *time.Timer   // runs expire at the deadline; stopped while idle
	done     chan struct{} // closed by expire or parentDone, never while idle
	// regParent is the parent parentDone is registered with (stop
	// unregisters it); nil: none (a parent that is never done).
	regParent context.Context
	stop      func() bool

	cancelFn     context.CancelFunc // cancel and parentDone as func values, made once
	parentDoneFn func()

	mu  sync.Mutex
	err error
}

func (c *cmdContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *cmdContext) Done() <-chan struct{}       { return c.done }
func (c *cmdContext) Value(key any) any           { return c.parent.Value(key) }

func (c *cmdContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end closes done with err, once.
func (c *cmdContext) end(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
	c.mu.Unlock()
}

func (c *cmdContext) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

func (c *cmdContext) expire()     { c.end(context.DeadlineExceeded) }
func (c *cmdContext) parentDone() { c.end(c.regParent.Err()) }

// unregister removes parentDone from its parent; false when it already
// ran or runs.
func (c *cmdContext) unregister() bool {
	if c.stop == nil {
		return true
	}
	if !c.stop() {
		return false // parentDone reads regParent: c is dropped as it is
	}
	c.stop, c.regParent = nil, nil
	return true
}

// takeFor readies an idle c of a slot for a command under parent: false
// when it cannot serve (its parent ended it while it waited).
func (c *cmdContext) takeFor(parent context.Context) bool {
	if c.regParent != parent && !c.unregister() {
		return false
	}
	return !c.ended()
}

// cancel ends the command's use of c. c is reused only when neither the
// timer nor the parent's callback has fired or started: a callback still
// running could otherwise end the next command's context. A used-up c is
// left to the garbage collector, done closed as a cancelled context's.
func (c *cmdContext) cancel() {
	if !c.timer.Stop() || c.ended() {
		c.unregister()
		c.end(context.Canceled)
		return
	}
	c.parent = nil
	if c.slot != nil && c.slot.idle.CompareAndSwap(nil, c) {
		return // registered with its parent still: see cmdSlot
	}
	if !c.unregister() {
		c.end(context.Canceled)
		return
	}
	c.slot = nil
	cmdContexts.Put(c)
}
