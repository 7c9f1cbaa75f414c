package workloads

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// Client is one lock client: its Locker (one owner identity), clock, fault
// gate and per-client histograms (hdrhistogram is not goroutine-safe, so
// each client has its own and they are merged at the end).
type Client struct {
	ID    int
	lk    lockimpl.Locker
	clock *lockimpl.SkewClock
	gate  gate
	rec   *history.Recorder
	w     *Workload
	rng   *rand.Rand
	zipf  *rand.Zipf

	key     atomic.Int32 // key index in use, -1 none
	holding atomic.Bool
	// running while the client's loop has not returned (Workload.Running).
	running atomic.Bool

	// Counters read by progress displays.
	Cycles   atomic.Int64
	Failed   atomic.Int64
	Unknowns atomic.Int64

	hAcquire, hRelease, hCycle *hdrhistogram.Histogram

	// The events of the client's own loop are written into these rather
	// than each into a new heap object (four or more a cycle): the history
	// copies what it records before Record returns (history.Writer.Tap's
	// contract), and only this client's loop uses them. evAcq is the
	// cycle's first acquire, read again after other events; ev is the
	// others'.
	evAcq, ev history.Event

	// keysNoted: the lock's own Redis keys (lockimpl.KeysOf) already
	// recorded (history.OpKeys), by workload key and Redis key.
	keysNoted map[[2]string]bool
	// renewed counts the renewals of the hold in progress answered ok
	// (the renewal N trigger, faults.RenewalPoint).
	renewed atomic.Int32
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) } // µs

func (c *Client) curKey() string {
	if k := c.key.Load(); k >= 0 {
		return c.w.keyNames[k]
	}
	return ""
}

func us(ns int64) int64 { return max(ns/1000, 1) }

// run is the client's closed loop. It ends when stop is closed (after
// finishing the cycle in progress), when ctx is done, or when the client
// crashes.
func (c *Client) run(ctx context.Context, stop <-chan struct{}, tickets <-chan int64) {
	cfg := &c.w.cfg
	if cfg.Stagger > 0 {
		sleep(time.Duration(c.ID)*cfg.Stagger, stop)
	}
	for {
		var sched int64
		if tickets != nil {
			select {
			case <-stop:
				return
			case sched = <-tickets:
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		if err := c.cycle(ctx, stop, c.w.pickKey(c), sched); errors.Is(err, ErrCrashed) || ctx.Err() != nil || c.w.Broken() != nil {
			return
		}
		sleep(c.w.sample(c.rng, cfg.Think), stop)
	}
}

// cycle is acquire → read → hold → [re-enter] → check lease → write →
// [re-release] → release. sched, in open mode, is when the cycle was due.
// The end of the run (stop) cuts the hold short; the cycle still writes and
// releases, so the run ends on time and its history stays whole.
func (c *Client) cycle(ctx context.Context, stop <-chan struct{}, k int, sched int64) error {
	w, rec, g := c.w, c.rec, &c.gate
	c.key.Store(int32(k))
	defer c.key.Store(-1)
	if err := g.checkpoint(history.PointBeforeAcquire); err != nil {
		return err
	}
	// The request the cycle serves: a cancel fault cancels it (the call
	// in flight, and the release deferred with it); without one armed it
	// is ctx, and the release's context.Background().
	ctx, relCtx, done := g.request(ctx)
	defer done()
	defer g.throwEnded()
	lease, ev, err := c.acquire(ctx, k, 1, &c.evAcq)
	if sched != 0 {
		ev.Value = ev.T - sched // open loop: how long the cycle waited to start
	}
	rec.Record(ev)
	if err != nil || lease == nil {
		if g.isDead() {
			return ErrCrashed
		}
		return nil
	}
	c.hold(k, true)
	defer c.hold(k, false)
	c.renewed.Store(0)
	frozen0 := c.gate.frozenNS.Load()
	start := ev.T
	if sched != 0 {
		start = sched
	}
	// The critical section; a throw fault there unwinds it (errThrown)
	// to the release, which runs on the exception path.
	nested, err := c.critical(ctx, stop, k, lease)
	thrown := errors.Is(err, errThrown)
	if err != nil && !thrown {
		return err
	}
	relCtx, th := g.throwContext(relCtx, thrown)
	for i := len(nested) - 1; i >= 0; i-- {
		c.release(relCtx, nested[i], nested[i].Depth()-1)
	}
	if !thrown {
		if err := g.checkpoint(history.PointBeforeRelease); errors.Is(err, errThrown) {
			relCtx, th = g.throwContext(relCtx, true)
		} else if err != nil {
			return err
		}
	}
	c.hold(k, false)
	// The hold ends as the release is called, less the time the client
	// was frozen (its lock's renewals with it): see Workload.Notes.
	w.sawHold(rec.Now() - ev.End - (c.gate.frozenNS.Load() - frozen0))
	end := c.release(relCtx, lease, 0)
	if th != nil {
		g.thrown(th, &c.ev)
	}
	if c.gate.isDead() {
		return ErrCrashed
	}
	if err := g.checkpoint(history.PointAfterRelease); err != nil {
		return err
	}
	if c.hCycle != nil {
		_ = c.hCycle.RecordValue(us(end - start))
	}
	c.Cycles.Add(1)
	return nil
}

// critical is the critical section of a cycle holding key k: read, hold,
// [re-enter], check the lease, write value+1 (not atomic on purpose). It
// returns the nested leases to release, and errThrown when a throw fault
// made it raise (at after-acquire, before-write or in-write).
func (c *Client) critical(ctx context.Context, stop <-chan struct{}, k int, lease lockimpl.Lease) ([]lockimpl.Lease, error) {
	w, rec, key := c.w, c.rec, c.w.keyNames[k]
	if err := c.gate.checkpoint(history.PointAfterAcquire); err != nil {
		return nil, err
	}
	fence, _ := lease.Fence()
	v, applied := w.res.Read(k, rec.Now)
	c.ev = history.Event{T: applied, End: applied, Client: c.ID, Key: key, Op: history.OpRead, Value: v, Fence: fence}
	rec.Record(&c.ev)
	sleep(w.sample(c.rng, w.cfg.Hold), stop)
	var nested []lockimpl.Lease
	for i := 0; i < w.cfg.Reentry && w.reentrant; i++ {
		l2, ev2, err := c.acquire(ctx, k, i+2, &c.ev)
		rec.Record(ev2)
		if err != nil || l2 == nil {
			break
		}
		nested = append(nested, l2)
	}
	return nested, c.writeIfHeld(k, key, lease, v, fence)
}

// writeIfHeld checks the lease (when clients honour Lost/Deadline), then
// writes. The before-write checkpoint sits after the check: a pause there is
// the gap no client-side check can close.
func (c *Client) writeIfHeld(k int, key string, lease lockimpl.Lease, v int64, fence uint64) error {
	w, rec := c.w, c.rec
	if w.honour && c.leaseGone(lease) {
		c.ev = history.Event{T: rec.Now(), Client: c.ID, Key: key, Op: history.OpLost, Token: lease.Token()}
		rec.Record(&c.ev)
		return nil
	}
	if err := c.gate.checkpoint(history.PointBeforeWrite); err != nil {
		return err
	}
	nv := v + 1
	if w.cfg.Resource == "inventory" {
		if v <= 0 {
			return nil // sold out: nothing to write
		}
		nv = v - 1
	}
	t := rec.Now()
	if err := c.gate.checkpoint(history.PointInWrite); err != nil {
		return err
	}
	ok, applied := w.res.Write(k, nv, fence, rec.Now)
	res := history.OK
	if !ok {
		res = history.Fail
	}
	c.ev = history.Event{T: t, End: applied, Client: c.ID, Key: key, Op: history.OpWrite, Value: nv, Fence: fence, Result: res}
	rec.Record(&c.ev)
	return nil
}

// hold tracks whether the client believes it holds key k, and counts holds
// that began while another client held the same key (a live estimate of
// mutual-exclusion violations for progress displays; the checker decides).
func (c *Client) hold(k int, on bool) {
	if c.holding.Load() == on {
		return
	}
	c.holding.Store(on)
	if on {
		if c.w.holders[k].n.Add(1) > 1 {
			c.w.overlaps.Add(1)
		}
		return
	}
	c.w.holders[k].n.Add(-1)
}

func (c *Client) leaseGone(l lockimpl.Lease) bool {
	if lost := l.Lost(); lost != nil {
		select {
		case <-lost:
			return true
		default:
		}
	}
	d := l.Deadline()
	return !d.IsZero() && !c.clock.Now().Before(d)
}

// acquire runs one Acquire (or TryAcquire) of key k and returns the event
// for it, written into ev.
func (c *Client) acquire(ctx context.Context, k int, depth int, ev *history.Event) (lockimpl.Lease, *history.Event, error) {
	rec, key, srvKey := c.rec, c.w.keyNames[k], c.w.srvKeys[k]
	c.gate.setPhase("acquiring")
	t0 := rec.Now()
	var l lockimpl.Lease
	var err error
	if c.w.cfg.Try {
		l, err = c.lk.TryAcquire(ctx, srvKey)
	} else {
		l, err = c.lk.Acquire(ctx, srvKey)
	}
	t1 := rec.Now()
	c.gate.setPhase("")
	*ev = history.Event{T: t0, End: t1, Client: c.ID, Key: key, Op: history.OpAcquire}
	if c.hAcquire != nil {
		_ = c.hAcquire.RecordValue(us(t1 - t0))
	}
	switch {
	case err == nil && l != nil:
		ev.Result = history.OK
		ev.Token = l.Token()
		ev.Fence, _ = l.Fence()
		ev.Depth = l.Depth()
		if d := l.Deadline(); !d.IsZero() {
			// The deadline is by the client's clock; map it to run time as
			// the client sees it: now + (deadline − client now).
			ev.Deadline = t1 + int64(d.Sub(c.clock.Now()))
		}
		c.noteKeys(key, srvKey, l, t1)
		return l, ev, nil
	case lockimpl.IsIndeterminate(err) || errors.Is(err, ErrCrashed):
		ev.Result = history.Unknown
		c.Unknowns.Add(1)
	default:
		ev.Result = history.Fail
		c.Failed.Add(1)
	}
	if err != nil && !errors.Is(err, lockimpl.ErrNotAcquired) {
		ev.Err = err.Error()
	}
	if errors.Is(err, lockimpl.ErrBroken) {
		c.w.broke(err)
	}
	ev.Depth = depth
	return nil, ev, err
}

// noteKeys records, once per client, key and Redis key, the keys of its
// own lease l's acquire wrote for key (a lock that names its own keys,
// lockimpl.KeysOf): the checks read the servers' record of them as key's.
func (c *Client) noteKeys(key, srvKey string, l lockimpl.Lease, t int64) {
	for _, rk := range lockimpl.KeysOf(c.lk, l, srvKey) {
		if rk == srvKey || c.keysNoted[[2]string{key, rk}] {
			continue
		}
		if c.keysNoted == nil {
			c.keysNoted = map[[2]string]bool{}
		}
		c.keysNoted[[2]string{key, rk}] = true
		c.rec.Record(&history.Event{T: t, Client: c.ID, Key: key, Op: history.OpKeys, Detail: rk})
	}
}

// release gives up one level with ctx and records it; it returns the ack
// time.
func (c *Client) release(ctx context.Context, l lockimpl.Lease, remaining int) int64 {
	rec := c.rec
	c.gate.setPhase("releasing")
	t0 := rec.Now()
	err := l.Release(ctx)
	t1 := rec.Now()
	c.gate.setPhase("")
	ev := &c.ev
	*ev = history.Event{T: t0, End: t1, Client: c.ID, Key: c.w.shortKey(l.Key()), Op: history.OpRelease, Token: l.Token(), Depth: remaining, Result: history.OK}
	switch {
	case err == nil:
	case lockimpl.IsIndeterminate(err) || errors.Is(err, ErrCrashed):
		ev.Result = history.Unknown
	default:
		ev.Result = history.Fail
	}
	if err != nil {
		ev.Err = err.Error()
	}
	if errors.Is(err, lockimpl.ErrBroken) {
		c.w.broke(err)
	}
	rec.Record(ev)
	if c.hRelease != nil {
		_ = c.hRelease.RecordValue(us(t1 - t0))
	}
	return t1
}

// note records a lock's background event (renewals).
func (c *Client) note(n lockimpl.Note) {
	c.w.lockNotes.Add(1)
	if n.Kind == lockimpl.NoteRenew {
		c.w.renewNotes.Add(1)
	}
	if n.Kind == lockimpl.NoteLost {
		c.rec.Record(&history.Event{T: c.rec.Now(), Client: c.ID, Key: c.w.shortKey(n.Key), Token: n.Token, Op: history.OpTold})
		return
	}
	if n.Kind != lockimpl.NoteRenew {
		return
	}
	end := c.rec.Now()
	ev := &history.Event{T: end - int64(n.End.Sub(n.Start)), End: end, Client: c.ID, Key: c.w.shortKey(n.Key), Token: n.Token, Op: history.OpRenew, Result: history.OK}
	switch {
	case n.Err == nil:
		defer c.gate.watchPoint(faults.RenewalPoint(int(c.renewed.Add(1))))
	case lockimpl.IsIndeterminate(n.Err):
		ev.Result, ev.Err = history.Unknown, n.Err.Error()
	default:
		ev.Result, ev.Err = history.Fail, n.Err.Error()
	}
	c.rec.Record(ev)
}
