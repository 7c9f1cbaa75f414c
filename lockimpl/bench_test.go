package lockimpl_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// One uncontended acquire + release per op, for every registered lock, on
// one local redis-server (redlock-family locks with one node; see
// BenchmarkRedlock for five). Each lock gets a fresh key per op so that
// controls which leave their key behind do not block the next op.
func BenchmarkAcquireRelease(b *testing.B) {
	c := startMasters(b, 1)
	for _, info := range lockimpl.List() {
		b.Run(info.Name, func(b *testing.B) {
			lk := newLocker(b, c, info.Name, lockimpl.Options{TTL: 5 * time.Second}, nil)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				key := "bench-" + info.Name + "-" + strconv.Itoa(i%1024)
				l, err := lk.TryAcquire(ctx, key)
				if errors.Is(err, lockimpl.ErrNotReplicated) {
					b.Skip("needs replicas (simple-wait): a single master has none")
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A nested acquire + release on a held key (one level deep).
func BenchmarkReenter(b *testing.B) {
	s := startServer(b)
	lk := s.locker(b, "reentrant", lockimpl.Options{TTL: 5 * time.Second})
	ctx := context.Background()
	outer := mustAcquire(b, lk, "bench-reenter")
	for b.Loop() {
		l, err := lk.Acquire(ctx, "bench-reenter")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	mustRelease(b, outer)
}
