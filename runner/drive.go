package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// drive runs the workload and faults through the phases: workload (faults
// fire), heal, recovery, stop, watched by the limits; it notes whether ctx
// or a limit ended it early. No lock goroutine (renewals) runs after it.
func (r *run) drive(ctx context.Context) {
	r.guard.hw = r.hw
	gctx, stopGuard := r.guard.watch(ctx, 250*time.Millisecond)
	r.pt.Mark("ready")
	r.interrupted = r.phases(gctx)
	r.stoppedBy = stopGuard()
	r.w.Close() // no lock goroutine (renewals) writes a key after the clean-up
}

// recoveryLeft is how much of the recovery window is still to run at now:
// the window is the workload's time after every fault healed (settled; the
// workload's start when none fired), so a fault healed well before the
// workload phase ended has had its recovery already, and one healed at its
// end (HealAll) gets the whole window.
func recoveryLeft(window time.Duration, start, settled, now int64) time.Duration {
	return window - time.Duration(now-max(start, settled))
}

// phases runs the phases; it reports whether ctx ended them early.
func (r *run) phases(ctx context.Context) bool {
	s, rec, w := r.s, r.rec, r.w
	phase := func(p string) { rec.Record(&history.Event{T: rec.Now(), Client: -1, Op: history.OpPhase, Detail: p}) }
	// Hard stop for client cycles still in flight well after the end.
	wctx, cancelW := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelW()
	stop := make(chan struct{})
	done := make(chan struct{})
	phase("workload")
	start := rec.Now()
	go func() { w.Run(wctx, stop); close(done) }()
	fctx, cancelF := context.WithCancel(ctx)
	r.fr.Start(fctx, start, r.sched)

	var cur atomic.Value
	cur.Store("workload")
	stopProgress := r.progressLoop(&cur, start)
	defer stopProgress()

	interrupted := !wait(ctx, s.Duration)
	cancelF()
	r.pt.Mark("workload")
	phase("heal")
	cur.Store("heal")
	r.fr.HealAll(context.WithoutCancel(ctx))
	r.pt.Mark("heal")
	if rest := recoveryLeft(s.Recovery, start, r.fr.Settled(), rec.Now()); !interrupted && rest > 0 {
		phase("recovery")
		cur.Store("recovery")
		interrupted = !wait(ctx, rest)
	}
	r.pt.Mark("recovery")
	close(stop)
	grace := 2*r.lockOpts.AcquireTimeout + 5*time.Second
	select {
	case <-done:
	case <-time.After(grace):
		cancelW()
		select {
		case <-done:
		case <-time.After(abandonAfter):
			// A client stuck in a call its cancellation does not reach
			// (a library's own command on a context that never ends):
			// the run ends without it rather than never. Its last cycle
			// stays open in the history: its outcome is unknown.
			r.notes = append(r.notes, fmt.Sprintf("clients %v were still in a call %v after the run's end, %v after their cancellation: the run ended without them (their last cycle's outcome is unknown)",
				r.w.Running(), grace+abandonAfter, abandonAfter))
		}
	}
	phase("done")
	if r.o.ClientsDone != nil {
		r.o.ClientsDone()
	}
	return interrupted
}

// abandonAfter is how long a run waits, after cancelling its clients, for
// a client that does not return.
var abandonAfter = 5 * time.Second

// wait sleeps d unless ctx ends first; it reports whether d elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// progressLoop calls Options.Progress about once a second with the phase
// in cur, from start (run time, ns); it returns its stop.
func (r *run) progressLoop(cur *atomic.Value, start int64) func() {
	if r.o.Progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastCycles, lastT int64 = 0, r.rec.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			now := r.rec.Now()
			cycles, _, _ := r.w.Totals()
			applied, failed := r.fr.Counts()
			p := Progress{Phase: cur.Load().(string), Elapsed: time.Duration(now - start), Total: r.s.Duration + r.s.Recovery,
				Cycles: cycles, CyclesPerSec: float64(cycles-lastCycles) / (float64(now-lastT) / 1e9), Overlaps: r.w.Overlaps(),
				ActiveFaults: r.fr.Active(), FaultsFired: applied + failed}
			if r.live != nil {
				st := r.live.Status()
				p.Live = &st
			}
			r.o.Progress(p)
			lastCycles, lastT = cycles, now
		}
	}()
	return func() { close(stop); <-done }
}
