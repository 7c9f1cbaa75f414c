package lockimpl

import (
	"context"
	"fmt"
	"time"
)

// basicLease is the Lease most implementations return: fixed fields plus a
// release function.
type basicLease struct {
	key      string
	token    string
	fence    uint64
	fenced   bool
	deadline time.Time
	lost     chan struct{}
	depth    int
	release  func(ctx context.Context) error
}

func (l *basicLease) Key() string                       { return l.key }
func (l *basicLease) Token() string                     { return l.token }
func (l *basicLease) Fence() (uint64, bool)             { return l.fence, l.fenced }
func (l *basicLease) Deadline() time.Time               { return l.deadline }
func (l *basicLease) Lost() <-chan struct{}             { return l.lost }
func (l *basicLease) Depth() int                        { return max(l.depth, 1) }
func (l *basicLease) Release(ctx context.Context) error { return l.release(ctx) }

// classify turns a command error into the API's errors: indeterminate
// outcomes wrap ErrIndeterminate, the rest are returned with context.
func classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if IsIndeterminate(err) {
		return fmt.Errorf("%s %s: %w: %w", op, key, ErrIndeterminate, err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}
