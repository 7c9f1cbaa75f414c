package lockimpl

import (
	"context"
	"sync"
)

// CallCanceller is implemented by Process lockers whose calls a cancelled
// context reaches although they run in another process (a driver with the
// protocol's cancel extension: asyncio's task.cancel(), Java's
// Thread.interrupt(), a Node promise given up). CancelsCalls says whether
// this one does (a driver's hello decides).
type CallCanceller interface {
	Process
	CancelsCalls() bool
}

// CancelsCalls reports whether l's calls can be cancelled: an in-process
// lock's always can (it is given the context), a process's when it is a
// CallCanceller that says so.
func CancelsCalls(l Locker) bool {
	if c, ok := l.(CallCanceller); ok {
		return c.CancelsCalls()
	}
	_, inProcess := l.(Process)
	return !inProcess
}

// CancelReport is what a CallCanceller tells about a call whose context
// was cancelled: whether the cancel reached the call before it answered,
// and the call's answer (its reply type: "cancelled" when the call ended
// by the cancel, else what it answered anyway). The harness gives one to
// each context it may cancel (WithCancelReport) and reads it as the
// cancel fault's effect.
type CancelReport struct {
	once      sync.Once
	done      chan struct{}
	Call      string // the request cancelled: acquire, release, extend
	Delivered bool
	Answer    string
}

// NewCancelReport makes an empty report.
func NewCancelReport() *CancelReport { return &CancelReport{done: make(chan struct{})} }

// Finish fills the report, once; later calls do nothing.
func (r *CancelReport) Finish(call string, delivered bool, answer string) {
	r.once.Do(func() {
		r.Call, r.Delivered, r.Answer = call, delivered, answer
		close(r.done)
	})
}

// Done is closed once the report is filled; Delivered and Answer may be
// read then.
func (r *CancelReport) Done() <-chan struct{} { return r.done }

type cancelReportKey struct{}

// WithCancelReport returns ctx carrying r.
func WithCancelReport(ctx context.Context, r *CancelReport) context.Context {
	return context.WithValue(ctx, cancelReportKey{}, r)
}

// CancelReportFrom returns the report ctx carries, or nil.
func CancelReportFrom(ctx context.Context) *CancelReport {
	r, _ := ctx.Value(cancelReportKey{}).(*CancelReport)
	return r
}
