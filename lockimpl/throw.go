package lockimpl

import (
	"context"
	"sync"
	"time"
)

// ThrowReport marks a release made on the exception path: the
// application's critical section raised (the throw fault), and the release
// runs as its idiom's exception handling does (a deferred release that
// recovers a panic in Go; a context manager's exit, a using() routine that
// rejects, a finally in a driver with the protocol's throw extension). The
// lock fills it as the release ends; the harness reads it as the fault's
// effect.
type ThrowReport struct {
	Msg string

	once sync.Once
	done chan struct{}
	// Delivered: the exception reached the lock's idiom (a driver with the
	// throw extension); false for a lock that cannot tell (a Go lock, to
	// which a recovered panic's release is a release).
	Delivered bool
	// Answer is the release's answer (a driver's reply type, or its error).
	Answer string
	// Raised, when the driver says: the exception came out of the idiom to
	// the application (false: the idiom swallowed it).
	Raised *bool
}

// NewThrowReport makes a report for an exception with message msg.
func NewThrowReport(msg string) *ThrowReport {
	return &ThrowReport{Msg: msg, done: make(chan struct{})}
}

// Finish fills the report, once.
func (r *ThrowReport) Finish(delivered bool, answer string, raised *bool) {
	r.once.Do(func() {
		r.Delivered, r.Answer, r.Raised = delivered, answer, raised
		close(r.done)
	})
}

// Done is closed once the report is filled.
func (r *ThrowReport) Done() <-chan struct{} { return r.done }

type throwKey struct{}

// WithThrow returns ctx carrying r: the release it is given runs on the
// exception path.
func WithThrow(ctx context.Context, r *ThrowReport) context.Context {
	return context.WithValue(ctx, throwKey{}, r)
}

// ThrowFrom returns the report ctx carries, or nil.
func ThrowFrom(ctx context.Context) *ThrowReport {
	r, _ := ctx.Value(throwKey{}).(*ThrowReport)
	return r
}

// Thrower is implemented by Process lockers that can raise inside their
// library's idiom (a driver with the protocol's throw extension).
type Thrower interface {
	Process
	Throws() bool
}

// Terminator is implemented by Process lockers that can be stopped
// gracefully (SIGTERM): Terminate sends it, waits for the process to end
// at most grace, then kills it, and says how it ended.
type Terminator interface {
	Process
	Terminate(grace time.Duration) (exit string, graceful bool, err error)
	// ShutsDownGracefully: the process runs the application's shutdown
	// hooks on SIGTERM (a driver with the sigterm extension).
	ShutsDownGracefully() bool
	// Pid is the process's id.
	Pid() int
}
