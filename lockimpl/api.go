// Package lockimpl is lockchaos's public lock API: the Locker/Lease interfaces
// every lock under test implements, the registry that names them with their
// declared capabilities (Info), the building blocks the built-in locks are
// made of, and those built-in locks (correct locks and broken controls). It
// imports go-redis and the standard library only; the third-party library
// adapters live in lockimpl/adapters.
//
// A user's own lock plugs in by implementing Locker and calling Register from
// any Go package. The blocks make a lock short: WaitAcquire (the blocking
// wait, timed by Env.Clock), NewLease (a once-guarded Release; a fixed or
// moving deadline), Classify (error classification), the standard scripts
// of a plain lock (CompareAndDelete, RenewOwned) and of a reentrant one
// (AcquireReentrant, ReleaseReentrant, RenewReentrant), Renewal (one
// background renewal that reports through Env.Note) and Renewals (the
// lifecycle of a Locker's renewals). Test it with the locktest package, or
// build lockchaos with it (cli.Main); see examples/customlock and
// docs/custom-locks.md.
package lockimpl

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Locker is one client's handle: one owner identity, one set of connections.
// Lockers are used by one goroutine at a time (the client's), but their leases
// may run background goroutines (renewals).
type Locker interface {
	// Acquire waits until key is held, ctx is done, or Options.AcquireTimeout
	// passes. It returns ErrNotAcquired when the wait ended without the lock,
	// and an error wrapping ErrIndeterminate when it cannot know whether the
	// server set the key (a timeout mid-command).
	Acquire(ctx context.Context, key string) (Lease, error)
	// TryAcquire makes one attempt. Same errors as Acquire.
	TryAcquire(ctx context.Context, key string) (Lease, error)
	// Close releases the handle's connections and background work.
	Close() error
}

// A Lease is one held lock.
type Lease interface {
	Key() string
	// Token is the owner value stored in Redis.
	Token() string
	// Fence returns the fencing token, when the implementation issues one.
	Fence() (uint64, bool)
	// Deadline is the validity the implementation promises, by the client's
	// clock (Env.Clock). Zero means it promises none.
	Deadline() time.Time
	// Lost is closed when the implementation learns the lease is gone. A nil
	// channel means the implementation cannot know.
	Lost() <-chan struct{}
	// Depth is the hold count for reentrant locks after the acquire that
	// returned this lease (1 for non-reentrant locks).
	Depth() int
	// Release gives the lock up. ErrNotOwner means the server refused because
	// the caller no longer owns the key (it expired or someone else holds it).
	Release(ctx context.Context) error
}

// Reentrant is implemented by lockers whose owner can acquire a key it holds
// again; Acquire on a held key then returns a lease with Depth()+1 and each
// Release undoes one level.
type Reentrant interface {
	Locker
	Reentrant() bool
}

// KeyMapper is implemented by lockers that write Redis keys of their own
// rather than the key they are given (a library's prefix before it,
// "rueidislock:0:<key>"): RedisKeys names, as the server names them, the
// keys an acquire of key writes. The run records them (history.OpKeys) and
// the checks read the servers' record of those keys as key's; without it
// they learn them from the command record (docs/driver-protocol.md, "A
// library that names its own keys").
type KeyMapper interface {
	RedisKeys(key string) []string
}

// LeaseKeys is implemented by leases that know which keys their acquire
// wrote (a driver's `keys` in `acquired`): KeyMapper for one lease.
type LeaseKeys interface {
	RedisKeys() []string
}

// KeysOf are the Redis keys of its own lease l (acquired on key by lk)
// wrote: the lease's (LeaseKeys), else the locker's mapping (KeyMapper),
// else none (the lock writes key itself, or says nothing).
func KeysOf(lk Locker, l Lease, key string) []string {
	if lk, ok := l.(LeaseKeys); ok {
		if ks := lk.RedisKeys(); len(ks) > 0 {
			return ks
		}
	}
	if km, ok := lk.(KeyMapper); ok {
		return km.RedisKeys(key)
	}
	return nil
}

// Configured is implemented by lockers that report their effective
// configuration: the options as the implementation (or, for an adapter, the
// library) applies them, defaults included. A run records it in results.json
// as lock_config.
type Configured interface {
	Locker
	Config() map[string]any
}

var (
	// ErrNotAcquired: the lock was held by someone else for the whole wait.
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrNotOwner: a release or renewal was refused because the caller does
	// not own the key.
	ErrNotOwner = errors.New("not the lock owner")
	// ErrIndeterminate: the outcome at the server is unknown (timeout,
	// connection broken mid-command). Callers must not act as if they hold.
	ErrIndeterminate = errors.New("outcome unknown")
	// ErrLeaseLost: an operation found the lease already lost.
	ErrLeaseLost = errors.New("lease lost")
	// ErrBroken: the lock implementation itself failed (a driver process
	// that exited, broke the protocol or stopped answering). An error
	// wrapping it ends the client's loop and fails the run with it.
	ErrBroken = errors.New("lock implementation broken")
	// ErrUnavailable: the lock could not reach the servers as it started
	// (a driver's init that could not connect): the machine's or the
	// servers' failure, not a refused option.
	ErrUnavailable = errors.New("servers unreachable")
)

// Process is implemented by Lockers whose client runs in a process of its
// own (a driver, lockimpl/driver): the client faults act on that process
// together with the harness side of the client. Freeze stops every thread
// of it (SIGSTOP), its renewal timers too, and returns the effect measured
// (e.g. the process state); Thaw continues it (SIGCONT); Kill ends it at
// once (SIGKILL), holding what it holds.
type Process interface {
	Locker
	Freeze() (effect map[string]string, err error)
	Thaw() error
	Kill() error
}

// ProcessClock is implemented by Process lockers whose process can run
// with a clock of its own (a driver started under libfaketime, Env.ClockFile):
// a client clock fault sets it as it sets the client's Clock (the clock
// reads real time + offset from now on, advancing at rate) and returns the
// effect measured inside the process; an error says it did not take effect.
type ProcessClock interface {
	SetProcessClock(offset time.Duration, rate float64) (effect map[string]string, err error)
}

// LoopBlocker is implemented by Process lockers whose process can block its
// own event loop for a while (a Node driver's block_loop): a pause of the
// client that leaves the process running, unlike Freeze. It returns when
// the loop is free again, with the effect measured.
type LoopBlocker interface {
	BlockLoop(d time.Duration) (effect map[string]string, err error)
}

// IsIndeterminate reports whether err means the server may have applied the
// command: a timeout, a cancelled context mid-command, or a broken connection.
func IsIndeterminate(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrIndeterminate) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// Endpoint says how to reach one Redis deployment an implementation may use,
// for adapters that bring their own client library.
type Endpoint struct {
	Addr string // host:port of the node (or of the current master)
	// ClusterAddrs, in a Redis Cluster, are every node's address (Addr is
	// the first): a client of its own must be a cluster client that
	// follows the slot map. Conns are go-redis cluster clients there.
	ClusterAddrs  []string
	MasterName    string   // Sentinel master name, when behind Sentinel
	SentinelAddrs []string // Sentinel addresses, when behind Sentinel
	Password      string   // AUTH password, empty for none
}

// Env is what a factory gets to build one client's Locker.
type Env struct {
	// ClientID is the owner identity of this handle in the history.
	ClientID int
	// Conns are go-redis clients, one per independent master (one entry
	// except for the "independent" topology). They are created by the harness
	// with MaxRetries -1 and the client's fault hooks installed: use them for
	// every command so that client faults reach the lock.
	Conns []redis.UniversalClient
	// Endpoints parallel Conns, for adapters that must build their own client.
	Endpoints []Endpoint
	// Clock is the client's clock: skew faults act through it. Implementations
	// must read time and wait through it, never through package time: a
	// wait that must also end on an event sleeps with a context the event
	// cancels (WaitAcquire does).
	Clock Clock
	// Options are the lock options of the scenario.
	Options Options
	// Note, when set, receives background events (renewals, loss) for the
	// history. It may be called from any goroutine.
	Note func(Note)
	// Gate, when set, carries the harness's client faults (pause, crash,
	// stall, cut) to implementations that talk to Redis through their own
	// client library instead of Conns: call Before ahead of every command
	// (background ones too) and After when it returned.
	// Conns already pass through it.
	Gate CommandGate
	// KeyPrefix is the run's key prefix; the keys a lock is given are under
	// it already. A lock that names keys of its own (not derived from the
	// key it is given by appending) puts them under it too, so that a run
	// on a user's server touches no key of the user's.
	KeyPrefix string
	// ConnName, when set, is the name an implementation that builds its
	// own client gives every connection (CLIENT SETNAME), as Conns' are
	// named: the harness's command record ties commands to clients by it.
	ConnName string
	// ClockFile, when set, asks a lock whose client runs in a process of
	// its own (a driver) to start that process with its clocks faked from
	// this file (libfaketime's timestamp file), so that the client clock
	// faults reach inside it (ProcessClock). Set only for the clients a
	// run's clock faults may hit.
	ClockFile string
}

// CommandGate is the harness's per-client fault gate (Env.Gate).
type CommandGate interface {
	// Before blocks while the client is frozen and fails when it crashed or
	// is cut off from node (an index into Conns/Endpoints); name is the
	// command's name, lower case.
	Before(ctx context.Context, node int, name string) error
	// After reports that a command to node returned. answered: the server
	// replied (an error reply or a refusal included; not a timeout or a
	// broken connection), which fires an in-release fault during a release;
	// ok: the reply did something (a lock taken or freed), which an
	// in-acquire fault needs.
	After(node int, answered, ok bool)
}

// NoteKind names a background event.
type NoteKind string

const (
	NoteRenew NoteKind = "renew" // one renewal attempt finished
	NoteLost  NoteKind = "lost"  // the lease was declared lost
)

// Note is a background event reported by an implementation.
type Note struct {
	Kind       NoteKind
	Key, Token string
	Start, End time.Time // by the client's clock
	Err        error     // nil: success; ErrNotOwner: refused; indeterminate: no answer
}

func (e *Env) note(n Note) {
	if e.Note != nil {
		e.Note(n)
	}
}
