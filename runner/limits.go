package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	units "github.com/docker/go-units"

	"github.com/lockchaos/lockchaos/history"
)

// Limits on what a run may write: a soak run stops cleanly, as unknown
// with the reason, before it fills the disk.
type Limits struct {
	// MaxHistory stops the run when its history file reaches this many
	// bytes (0: no limit).
	MaxHistory int64
	// MinFreeDisk: the run does not start, or stops, when the run
	// directory's file system has less than this free (0: DefaultMinFree).
	MinFreeDisk int64
}

// DefaultMinFree is the free space a run keeps on its disk unless told.
const DefaultMinFree = 256 << 20

// ParseSize reads a size as the flags take it: 500MB, 2GiB, 1g (binary
// units), or a number of bytes.
func ParseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (e.g. 500MB, 2GiB)", s)
	}
	return n, nil
}

// limitGuard watches a running run's history size and free disk.
type limitGuard struct {
	l    Limits
	dir  string
	hw   *history.Writer
	free func(dir string) (int64, error)

	mu     sync.Mutex
	reason string
}

func (g *limitGuard) minFree() int64 {
	if g.l.MinFreeDisk > 0 {
		return g.l.MinFreeDisk
	}
	return DefaultMinFree
}

// preflight refuses to start a run on a disk that is already short.
func (g *limitGuard) preflight() error {
	free, err := g.free(g.dir)
	if err != nil {
		return nil // unknown free space (an unusual file system): the watch still checks the history size
	}
	if free < g.minFree() {
		return fmt.Errorf("%s has %s free, less than %s (min-free-disk)", g.dir, units.BytesSize(float64(free)), units.BytesSize(float64(g.minFree())))
	}
	return nil
}

// check returns why the run must stop now, or "".
func (g *limitGuard) check() string {
	if g.hw != nil && g.l.MaxHistory > 0 {
		if n := g.hw.Size(); n >= g.l.MaxHistory {
			return fmt.Sprintf("the history reached %s (max-history %s)", units.BytesSize(float64(n)), units.BytesSize(float64(g.l.MaxHistory)))
		}
	}
	if free, err := g.free(g.dir); err == nil && free < g.minFree() {
		return fmt.Sprintf("%s has %s free, less than %s (min-free-disk)", g.dir, units.BytesSize(float64(free)), units.BytesSize(float64(g.minFree())))
	}
	return ""
}

// watch returns a context that ends when ctx does or a limit is reached
// (checked every period), and a stop function that returns the reason
// ("" when no limit was reached).
func (g *limitGuard) watch(ctx context.Context, period time.Duration) (context.Context, func() string) {
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-gctx.Done():
				return
			case <-t.C:
			}
			if r := g.check(); r != "" {
				g.mu.Lock()
				g.reason = r
				g.mu.Unlock()
				cancel()
				return
			}
		}
	}()
	return gctx, func() string {
		cancel()
		<-done
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.reason
	}
}
