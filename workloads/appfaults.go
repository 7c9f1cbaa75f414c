package workloads

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// The application faults that end a request or a process rather than
// freeze it: throw (the critical section raises, and the release runs on
// the idiom's exception path) and sigterm (the client's process is
// stopped gracefully). cancel is in gate.go, with the request contexts it
// cancels.

// errThrown is what a checkpoint in the critical section returns when a
// throw fires there: the cycle skips the rest of it and releases on the
// exception path.
var errThrown = errors.New("lockchaos: the critical section threw")

// ThrowMessage is the exception's message a driver raises in its idiom.
const ThrowMessage = "lockchaos: an error in the critical section (the throw fault)"

// throwAt (with mu held, which it unlocks) fires throw a at this client:
// the cycle in progress unwinds from its critical section. The fault's hit
// comes once the release on the exception path has answered (thrown).
func (g *gate) throwAt(a *armedFault) error {
	g.throwing = a
	g.throwAtNS = g.c.rec.Now()
	g.unlock()
	return errThrown
}

// throwContext is ctx for the release of a cycle whose critical section
// threw, carrying the report the lock fills (lockimpl.WithThrow); ctx
// unchanged and nil when it did not.
func (g *gate) throwContext(ctx context.Context, thrown bool) (context.Context, *lockimpl.ThrowReport) {
	if !thrown {
		return ctx, nil
	}
	r := lockimpl.NewThrowReport(ThrowMessage)
	return lockimpl.WithThrow(ctx, r), r
}

// thrown reports the throw fault's hit, after the release on the
// exception path (its history event ev): what the lock did with the
// exception, and the release's answer.
func (g *gate) thrown(r *lockimpl.ThrowReport, ev *history.Event) {
	g.mu.Lock()
	a, t := g.throwing, g.throwAtNS
	g.throwing = nil
	g.unlock()
	if a == nil {
		return
	}
	eff := map[string]string{history.EffectCall: "release", history.EffectThrownAt: strconv.FormatFloat(history.MS(t), 'f', 2, 64),
		history.EffectRelease: string(ev.Result)}
	if _, ok := g.c.lk.(lockimpl.Process); !ok {
		// A Go application: the panic unwinds to the deferred release,
		// which recovers it; the lock is released as by any caller.
		eff[history.EffectPanicRecover] = "true"
	} else {
		select {
		case <-r.Done():
		default:
			r.Finish(false, string(ev.Result), nil)
		}
		switch {
		case !r.Delivered:
			eff[history.EffectReason] = "throw: lock " + g.c.w.lockInfo.Name + " runs in a driver process whose hello does not list the throw extension: its release was a plain release"
		case r.Raised != nil:
			eff[history.EffectRaised] = strconv.FormatBool(*r.Raised)
		}
		if r.Answer != "" {
			eff[history.EffectCallAnswer] = r.Answer
		}
	}
	a.shot.reply <- faults.Hit{Client: g.c.ID, From: t, To: g.c.rec.Now(), Effect: eff}
	close(a.shot.reply)
}

// throwEnded reports a throw whose cycle ended before its release (the
// client died, the cycle returned early): its fault is not left waiting.
func (g *gate) throwEnded() {
	g.mu.Lock()
	a, t := g.throwing, g.throwAtNS
	g.throwing = nil
	g.unlock()
	if a == nil {
		return
	}
	a.shot.reply <- faults.Hit{Client: g.c.ID, From: t, To: g.c.rec.Now(), Effect: map[string]string{
		history.EffectReason: "throw: the cycle ended before its release on the exception path"}}
	close(a.shot.reply)
}

// terminate (with mu held, which it unlocks) fires sigterm a at this
// client: the client is dead from now on (the application is shutting
// down: its harness side acts no more), and its lock's process gets
// SIGTERM, after a.d when the fault is at a driver's call in flight
// (call). The hit comes when the process has ended.
func (g *gate) terminate(a *armedFault, call bool) {
	t, ok := g.c.lk.(lockimpl.Terminator)
	if !ok {
		g.unlock()
		now := g.c.rec.Now()
		a.shot.reply <- faults.Hit{Client: g.c.ID, From: now, To: now, Effect: map[string]string{
			history.EffectReason: "sigterm: lock " + g.c.w.lockInfo.Name + " runs in lockchaos's own process: there is no process of its own to stop"}}
		close(a.shot.reply)
		return
	}
	if !call {
		g.dead = true
	}
	g.unlock()
	go func() {
		if call && a.d > 0 {
			time.Sleep(a.d)
		}
		g.mu.Lock()
		g.dead = true
		g.unlock()
		from := g.c.rec.Now()
		exit, graceful, err := t.Terminate(a.grace)
		to := g.c.rec.Now()
		eff := map[string]string{history.EffectSignalledAt: ms(from), history.EffectCrashedAt: ms(to), history.EffectExit: exit,
			history.EffectGraceful: strconv.FormatBool(graceful), history.EffectHooks: strconv.FormatBool(t.ShutsDownGracefully()),
			"driver_pid": strconv.Itoa(t.Pid())}
		if call {
			eff[history.ParamDelay] = a.d.String()
		}
		if err != nil {
			eff = map[string]string{history.EffectReason: "sigterm: " + err.Error()}
		}
		a.shot.reply <- faults.Hit{Client: g.c.ID, From: from, To: to, Effect: eff}
		close(a.shot.reply)
	}()
}

func ms(ns int64) string { return strconv.FormatFloat(history.MS(ns), 'f', 2, 64) }

// Throw makes the critical section of the first of clients cs to reach
// point raise (see faults.ClientControl).
func (w *Workload) Throw(ctx context.Context, cs []int, point string) <-chan faults.Hit {
	return arm(ctx, w.gates(cs), point, armThrow, 0)
}

// Terminate stops the process of the first of clients cs to reach point
// gracefully (see faults.ClientControl). On a lock in a driver process,
// in-acquire and in-release are the driver's call in flight, delay after
// its request (gate.Before).
func (w *Workload) Terminate(ctx context.Context, cs []int, point string, delay, grace time.Duration) <-chan faults.Hit {
	gs := w.gates(cs)
	if len(gs) > 0 {
		if _, ok := gs[0].c.lk.(lockimpl.Process); ok {
			point = callPoint(point)
		}
	}
	return armFault(ctx, gs, &armedFault{point: point, kind: armTerm, d: delay, grace: grace})
}

// watchPoint fires the watches (when: triggers) armed at point, and nothing
// else: for points reached off the client's loop (a renewal, on the lock's
// own goroutine or process), which must not wait out the client's freeze.
func (g *gate) watchPoint(point string) {
	if !g.busy.Load() {
		return
	}
	g.mu.Lock()
	var now int64
	keep := g.armed[:0]
	for _, a := range g.armed {
		switch {
		case a.shot.taken.Load():
			continue // another client took it, or its wait ended
		case a.kind != armWatch || a.point != point:
			keep = append(keep, a)
			continue
		case !a.shot.taken.CompareAndSwap(false, true):
			continue
		}
		if now == 0 {
			now = g.c.rec.Now()
		}
		a.shot.reply <- faults.Hit{Client: g.c.ID, From: now, To: now}
		close(a.shot.reply)
	}
	clear(g.armed[len(keep):])
	g.armed = keep
	g.unlock()
}
