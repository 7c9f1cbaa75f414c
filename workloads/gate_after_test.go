package workloads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

// CommandGate.After tells "the server answered" from "it did something": a
// release the server refused (answered, not ok) is still a release reply,
// so an armed in-release fault fires on it; an unanswered command (timeout)
// fires nothing, and in-acquire needs a command that took the lock.
func TestGateAfterAnsweredVsSucceeded(t *testing.T) {
	for _, tc := range []struct {
		phase, point string
		answered, ok bool
		fires        bool
	}{
		{"releasing", "in-release", true, false, true},   // refused release
		{"releasing", "in-release", false, false, false}, // no reply
		{"acquiring", "in-acquire", true, false, false},  // refused SET NX
		{"acquiring", "in-acquire", true, true, true},
	} {
		c := &Client{ID: 0, rec: history.NewRecorder(nil)}
		g := &c.gate
		g.c = c
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		hit := arm(ctx, []*gate{g}, tc.point, armWatch, 0)
		g.setPhase(tc.phase)
		g.After(0, tc.answered, tc.ok)
		g.setPhase("")
		cancel()
		_, fired := <-hit
		if fired != tc.fires {
			t.Errorf("%s, After(answered %v, ok %v): %s fired %v, want %v", tc.phase, tc.answered, tc.ok, tc.point, fired, tc.fires)
		}
	}
}

func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true}, {redis.Nil, true}, {redisErr("NOSCRIPT no such script"), true},
		{context.DeadlineExceeded, false}, {errCut, false}, {ErrCrashed, false}, {errors.New("x"), false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("answered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type redisErr string

func (e redisErr) Error() string { return string(e) }
func (e redisErr) RedisError()   {}

// in-release fires after the first reply of a release only: a fault armed
// between get-del's GET and DEL replies does not freeze the client after
// its DEL (where the freeze changes nothing) but waits for the next
// release, which it freezes after its GET.
//
// in-acquire fires after the reply that took the lock only: a crash armed
// between setnx-expire's SETNX and EXPIRE replies (it came late to a loaded
// machine) does not kill the client after its EXPIRE, where the lock is
// whole (a control went uncaught in a CI rehearsal), but waits for the next
// acquire, which it ends after its SETNX.
func TestPointFiresAfterItsReplyOnly(t *testing.T) {
	type reply struct{ answered, ok bool }
	for _, tc := range []struct {
		phase, point, later, next string
		before, after, again      []reply // replies before arming, after arming, in the next call
	}{
		{"releasing", "in-release", "the release's second reply", "the next release's first reply",
			[]reply{{true, true}},  // GET answered before the fault was armed
			[]reply{{true, true}},  // DEL: the second reply of this release
			[]reply{{true, true}}}, // the next release's GET
		{"acquiring", "in-acquire", "the acquire's EXPIRE", "the next acquire's taking reply",
			[]reply{{true, false}, {true, true}},  // a refused SET NX; the SETNX that took it, before the fault was armed
			[]reply{{true, true}},                 // EXPIRE: a later reply of this acquire
			[]reply{{true, false}, {true, true}}}, // refused: not the point; the next acquire's SETNX
	} {
		c := &Client{ID: 0, rec: history.NewRecorder(nil)}
		g := &c.gate
		g.c = c
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		call := func(rs []reply) {
			for _, r := range rs {
				g.After(0, r.answered, r.ok)
			}
		}
		g.setPhase(tc.phase)
		call(tc.before)
		hit := arm(ctx, []*gate{g}, tc.point, armWatch, 0)
		call(tc.after)
		g.setPhase("")
		select {
		case h, ok := <-hit:
			cancel()
			if ok {
				t.Fatalf("%s fired after %s: %+v", tc.point, tc.later, h)
			}
			t.Fatalf("%s: the armed fault ended before the next call", tc.point)
		case <-time.After(20 * time.Millisecond):
		}
		g.setPhase(tc.phase)
		call(tc.again)
		g.setPhase("")
		_, fired := <-hit
		cancel()
		if !fired {
			t.Fatalf("%s did not fire after %s", tc.point, tc.next)
		}
	}
}

// A command over a dropping cut waits for its context or, when the context
// never ends (go-redis dials a pub/sub connection and sends HELLO with
// context.Background()), for the client's timeout, as a read deadline
// would: it used to wait forever and hang the run.
func TestDropCutEndsAtTheClientsTimeout(t *testing.T) {
	c := &Client{ID: 0, rec: history.NewRecorder(nil)}
	g := &c.gate
	g.c = c
	g.dropWait = 150 * time.Millisecond
	g.mu.Lock()
	g.cuts = map[int]string{0: "drop"}
	g.unlock()
	start := time.Now()
	err := gateHook{g: g, idx: 0}.before(context.Background(), "hello")
	if took := time.Since(start); !errors.Is(err, errDropped) || took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("background context: %v after %v, want the drop's timeout after 150ms", err, took)
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() || answered(err) {
		t.Errorf("%v: want an unanswered timeout", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := (gateHook{g: g, idx: 0}).before(ctx, "set"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context with a 20ms deadline: %v", err)
	}
	if err := (gateHook{g: g, idx: 1}).before(context.Background(), "set"); err != nil {
		t.Errorf("a node not cut: %v", err)
	}
}

// For a lock that takes a majority of nodes, the node that completes the
// majority for one token is where the lock was taken: an attempt that took
// fewer nodes does not count, nor do an earlier attempt's nodes (its own
// token) toward the next one.
func TestGateTookQuorum(t *testing.T) {
	g := &gate{quorum: 3}
	steps := []struct {
		idx  int
		tok  string
		want bool
	}{
		{0, "a", false}, {1, "a", false}, // an attempt with two of five
		{2, "b", false}, {3, "b", false}, // the next: its own count
		{3, "b", false}, // the same node again
		{4, "b", true},
	}
	for i, s := range steps {
		if got := g.tookQuorum(s.idx, s.tok); got != s.want {
			t.Fatalf("step %d (node %d, token %s): %v, want %v", i, s.idx, s.tok, got, s.want)
		}
	}
	single := &gate{quorum: 1}
	if !single.tookQuorum(0, "x") || !(&gate{quorum: 3}).tookQuorum(0, "") {
		t.Error("a one-node lock, or a reply with no token, takes the lock with one reply")
	}
}

// A stall counts the commands it delayed, and those sent in an acquire:
// its measured effect. A stall of SET met by a lock that acquires with a
// script delays none of its acquire commands, and says so.
func TestStallCountsWhatItDelayed(t *testing.T) {
	c := &Client{ID: 0, rec: history.NewRecorder(nil)}
	w := &Workload{byID: map[int]*Client{0: c}}
	g := &c.gate
	g.c = c
	undo := w.Stall(0, []string{"set"}, time.Millisecond)
	h := gateHook{g: g, idx: 0}
	g.setPhase("acquiring")
	for _, cmd := range []string{"evalsha", "SET", "get"} {
		if err := h.before(context.Background(), cmd); err != nil {
			t.Fatal(err)
		}
	}
	g.setPhase("")
	if err := h.before(context.Background(), "set"); err != nil { // the resource's write
		t.Fatal(err)
	}
	eff := undo()
	if eff[history.EffectStalled] != "2" || eff[history.EffectStalledInAcquire] != "1" {
		t.Errorf("effect %v: want 2 stalled, 1 in an acquire", eff)
	}
	if err := h.before(context.Background(), "set"); err != nil || g.stalled.Load() != 2 {
		t.Errorf("after the heal a SET is not stalled: %v, stalled %d", err, g.stalled.Load())
	}
}
