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
	}
	c.slot, c.parent = s, parent
	c.start(deadline)
	if c.stop == nil && parent.Done() != nil {
		c.regParent = parent
		c.stop = context.AfterFunc(parent, c.parentDoneFn)
	}
	return c, c.cancelFn
}

// cmdContexts are idle cmdContexts, registered with no parent (their timer
// may still be set: it then finds them idle).
var cmdContexts sync.Pool

// cmdContext is commandTimeout's context.
type cmdContext struct {
	parent   context.Context
	deadline time.Time
	slot     *cmdSlot
	done     chan struct{} // closed by expire or parentDone, never while idle
	// timer runs expire at armedAt (zero: not set). It is not reset for
	// every command: see start.
	timer   *time.Timer
	armedAt time.Time
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

// start begins a command that must end by deadline. The timer is set only
// when it is not set, or set for later: commands take microseconds and
// their timeouts up to a second, so the timer set for one command is
// nearly always still to fire when the next begins, and expire then sets
// it again for the command in progress, if any. A command ends at its own
// deadline all the same; a Reset and a Stop a command (a context's timer
// taken from and put back into the runtime's timer heap) are saved.
func (c *cmdContext) start(deadline time.Time) {
	c.mu.Lock()
	c.deadline = deadline
	switch {
	case c.timer == nil:
		c.timer, c.armedAt = time.AfterFunc(time.Until(deadline), c.expire), deadline
	case c.armedAt.IsZero() || c.armedAt.After(deadline):
		c.timer.Reset(time.Until(deadline))
		c.armedAt = deadline
	}
	c.mu.Unlock()
}

// expire runs when the timer fires: it ends the command in progress if
// its deadline passed, or sets the timer for it.
func (c *cmdContext) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armedAt = time.Time{}
	if c.deadline.IsZero() || c.err != nil {
		return // idle, or ended
	}
	if left := time.Until(c.deadline); left > 0 {
		c.timer.Reset(left)
		c.armedAt = c.deadline
		return
	}
	c.err = context.DeadlineExceeded
	close(c.done)
}

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

// cancel ends the command's use of c. c is reused unless it ended (its
// deadline or its parent's end: done is closed for good) or its parent's
// callback may still run (it could end the next command's context): a
// used-up c is left to the garbage collector.
func (c *cmdContext) cancel() {
	c.mu.Lock()
	c.deadline = time.Time{} // idle: expire leaves it be
	ended := c.err != nil
	c.mu.Unlock()
	if ended {
		c.unregister()
		return
	}
	c.parent = context.Background() // not nil: a stale Value call must not panic
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
