package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A command's context ends at its deadline, as context.WithTimeout's: Done
// closes, Err says so, Deadline tells it; the next one from the pool starts
// afresh.
func TestCommandTimeoutExpires(t *testing.T) {
	for range 3 {
		start := time.Now()
		ctx, cancel := commandTimeout(context.Background(), 20*time.Millisecond)
		if d, ok := ctx.Deadline(); !ok || d.Before(start.Add(20*time.Millisecond)) || d.After(time.Now().Add(20*time.Millisecond)) {
			t.Errorf("Deadline = %v, %v; want 20ms from the call", d, ok)
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline = %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed 5 s after a 20 ms deadline")
		}
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("Done closed after %v, before the 20 ms deadline", el)
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err after the deadline = %v, want DeadlineExceeded", err)
		}
		cancel()
	}
}

// A reused context carries nothing of its last command: not its end, not its
// parent's values, not its parent's cancellation.
func TestCommandTimeoutReuse(t *testing.T) {
	type key struct{}
	for i := range 100 {
		parent := context.WithValue(context.Background(), key{}, i)
		ctx, cancel := commandTimeout(parent, time.Second)
		if v := ctx.Value(key{}); v != i {
			t.Fatalf("command %d: Value = %v, want %d", i, v, i)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("command %d: Done closed at the start (%v)", i, ctx.Err())
		default:
		}
		cancel()
	}
}

// The parent's cancellation ends the command's context, as it ends a child
// of context.WithTimeout; a parent already done or with an earlier deadline
// gets context.WithTimeout itself.
func TestCommandTimeoutParent(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := commandTimeout(parent, time.Minute)
	defer cancel()
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5 s after the parent's cancel")
	}
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err = %v, want Canceled", err)
	}
	ctx2, cancel2 := commandTimeout(parent, time.Minute)
	defer cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Errorf("under a done parent: Err = %v, want Canceled", ctx2.Err())
	}
	early, cancelEarly := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelEarly()
	ctx3, cancel3 := commandTimeout(early, time.Minute)
	defer cancel3()
	if d, _ := ctx3.Deadline(); d.After(time.Now().Add(time.Second)) {
		t.Errorf("under a parent ending in 10 ms: Deadline %v, want the parent's", d)
	}
}

// The point of it: a command's context from the pool allocates nothing
// under a parent that is never done (a release's), where
// context.WithTimeout allocates four objects.
func TestCommandTimeoutAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		_, cancel := commandTimeout(ctx, time.Second)
		cancel()
	})
	if n > 0.1 {
		t.Errorf("%.2f allocations per command context, want 0", n)
	}
}

func BenchmarkCommandTimeout(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(context.Context, time.Duration) (context.Context, context.CancelFunc)
	}{{"pooled", commandTimeout}, {"slot", new(cmdSlot).commandTimeout}, {"context.WithTimeout", context.WithTimeout}} {
		b.Run(c.name+"/background", func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := c.f(context.Background(), time.Second)
				_ = ctx.Done()
				cancel()
			}
		})
		b.Run(c.name+"/cancellable", func(b *testing.B) {
			parent, cancelParent := context.WithCancel(context.Background())
			defer cancelParent()
			for b.Loop() {
				ctx, cancel := c.f(parent, time.Second)
				_ = ctx.Done()
				cancel()
			}
		})
	}
}

// A Locker's slot keeps its context registered with the parent between
// commands: the next command under the same parent allocates nothing, the
// parent's cancel still ends a command in flight, and a context the parent
// ended while it waited in the slot is not handed to a command under
// another parent.
func TestCommandTimeoutSlot(t *testing.T) {
	var s cmdSlot
	parent, cancelParent := context.WithCancel(context.Background())
	if !raceEnabled {
		n := testing.AllocsPerRun(1000, func() {
			_, cancel := s.commandTimeout(parent, time.Second)
			cancel()
		})
		if n > 0.1 {
			t.Errorf("%.2f allocations per command under the slot's parent, want 0", n)
		}
	}
	_, cancel := s.commandTimeout(parent, time.Minute)
	cancel() // back to the slot, registered with parent
	ctx, cancel := s.commandTimeout(parent, time.Minute)
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a command from the slot: Done not closed 5 s after the parent's cancel")
	}
	cancel()

	p2, cancelP2 := context.WithCancel(context.Background())
	_, cancel = s.commandTimeout(p2, time.Minute)
	cancel() // in the slot, registered with p2
	cancelP2()
	time.Sleep(10 * time.Millisecond) // p2's callback ends the idle context
	ctx, cancel = s.commandTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ctx.Err(); err != nil {
		t.Errorf("a command under a new parent got a context already ended: %v", err)
	}
}

// A reused context's timer, still set for its last command, ends the next
// one at the next one's deadline: not at the last one's earlier deadline,
// and not after the next one's when that is the earlier.
func TestCommandTimeoutReusedTimer(t *testing.T) {
	var s cmdSlot
	waitDone := func(ctx context.Context, start time.Time, want time.Duration) {
		t.Helper()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("Done not closed 5 s after a %v deadline", want)
		}
		if el := time.Since(start); el < want || el > want+2*time.Second {
			t.Errorf("ended after %v, want its own deadline %v", el, want)
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded", ctx.Err())
		}
	}
	_, cancel := s.commandTimeout(context.Background(), 50*time.Millisecond)
	cancel() // the timer stays set for +50 ms
	start := time.Now()
	ctx, cancel := s.commandTimeout(context.Background(), 200*time.Millisecond)
	waitDone(ctx, start, 200*time.Millisecond)
	cancel()

	_, cancel = s.commandTimeout(context.Background(), time.Minute)
	cancel() // the timer stays set for +1 min
	start = time.Now()
	ctx, cancel = s.commandTimeout(context.Background(), 30*time.Millisecond)
	waitDone(ctx, start, 30*time.Millisecond)
	cancel()
}
