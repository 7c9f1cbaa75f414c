package lockimpl_test

import (
	"context"
	"testing"
	"time"

	"lockchaos/lockimpl"
)

// One uncontended acquire + release round trip pair per op, against a local
// redis-server.
func BenchmarkAcquireRelease(b *testing.B) {
	s := startServer(b)
	for _, name := range []string{"simple", "reentrant", "fenced", "watchdog"} {
		b.Run(name, func(b *testing.B) {
			lk := s.locker(b, name, lockimpl.Options{TTL: 5 * time.Second})
			ctx := context.Background()
			for b.Loop() {
				l, err := lk.Acquire(ctx, "bench-"+name)
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
