package lockimpl_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// The exported blocks make a renewing plain lock: RenewOwned keeps the key
// past its TTL, each attempt is a NoteRenew, the Deadline moves; when
// another owner takes the key the renewal is refused, Lost closes and a
// NoteLost says why; CompareAndDelete then refuses the release.
func TestRenewalBlocks(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	var mu sync.Mutex
	var notes []lockimpl.Note
	env := lockimpl.Env{Conns: s.lockerEnvConns(), Clock: lockimpl.RealClock{},
		Options: lockimpl.Options{TTL: 150 * time.Millisecond}.WithDefaults(),
		Note:    func(n lockimpl.Note) { mu.Lock(); notes = append(notes, n); mu.Unlock() }}
	o, conn, key, token := &env.Options, env.Conns[0], "renewed", lockimpl.NewToken()
	start := env.Clock.Now()
	if ok, err := conn.SetNX(ctx, key, token, o.TTL).Result(); !ok || err != nil {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	r := lockimpl.NewRenewal(&env, key, token, start, func(ctx context.Context) error {
		return lockimpl.RenewOwned(ctx, conn, o, key, token)
	})
	done := make(chan struct{})
	go func() { r.Run(); close(done) }()
	lease := lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: token, Renewal: r,
		Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }})
	first := start.Add(o.TTL)

	time.Sleep(3 * o.TTL)
	if !s.owns(t, key, token) {
		t.Fatal("the key expired although renewed")
	}
	if !lease.Deadline().After(first) {
		t.Errorf("deadline %v did not move past the first %v", lease.Deadline(), first)
	}
	s.admin.Set(ctx, key, "someone-else", 0)
	select {
	case <-lease.Lost():
	case <-time.After(2 * o.TTL):
		t.Fatal("Lost not closed after another owner took the key")
	}
	<-done
	mu.Lock()
	var renewed, refused, lost int
	for _, n := range notes {
		switch {
		case n.Kind == lockimpl.NoteRenew && n.Err == nil:
			renewed++
		case n.Kind == lockimpl.NoteRenew && errors.Is(n.Err, lockimpl.ErrNotOwner):
			refused++
		case n.Kind == lockimpl.NoteLost:
			lost++
		}
	}
	mu.Unlock()
	if renewed < 3 || refused != 1 || lost != 1 {
		t.Errorf("notes: %d renewed, %d refused, %d lost; want ≥3, 1, 1", renewed, refused, lost)
	}
	if err := lease.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Errorf("release of a key someone else holds: %v, want ErrNotOwner", err)
	}
	if v, _ := s.admin.Get(ctx, key).Result(); v != "someone-else" {
		t.Errorf("the refused release changed the key to %q", v)
	}
}
