package workloads

import (
	"cmp"
	"context"
	"errors"
	"math/bits"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// gate is one client's fault state: armed pauses, crashes and watches
// waiting for their point, a freeze in progress, stalled commands, cut
// nodes. Every goroutine of the client (its loop and its lock's background
// work, through the go-redis hook) passes through it.
type gate struct {
	c *Client

	mu     sync.Mutex
	armed  []*armedFault
	frozen chan struct{} // non-nil while frozen; closed at resume
	// frozenNS is the time this client spent frozen so far (ns): a hold's
	// frozen time is not time its lock could renew in (Workload.Notes).
	frozenNS atomic.Int64
	dead     bool
	stallD   time.Duration
	stallOn  map[string]bool // nil = all commands
	cuts     map[int]string  // node index → reset | drop
	// stalled counts the commands a stall delayed, and stalledAcq those
	// of them sent while the client was acquiring: a stall's measured
	// effect (a stall of SET does not touch a lock that acquires with a
	// script, and liveness and explore must know that).
	stalled, stalledAcq atomic.Int64
	// dropWait is how long a command over a dropping cut waits for an
	// answer that never comes: the client's timeout (its read deadline).
	dropWait time.Duration
	// phase is the phase (phaseAcquiring, phaseReleasing, 0 for neither)
	// times 1<<32 plus the answered commands of the phase so far, in one
	// word so that both change together without the lock (4 phase
	// changes and 2 replies a cycle). in-release fires after the first
	// reply only, so a fault armed in the middle of a two-command release
	// (get-del's GET, then DEL) waits for the next release instead of
	// freezing this one after its DEL, where it changes nothing.
	phase atomic.Uint64
	// quorum is how many nodes' SETs take the lock: 1, or a majority of
	// the nodes for a lock that uses all of them (Redlock). in-acquire
	// fires when the quorum-th node took the key with the attempt's token
	// (quorumTok, quorumMask: the nodes that took it so far, under mu):
	// a Redlock attempt that took one node and lost the others has not
	// taken the lock, and freezing it there tests nothing (slow-acquire/
	// redlock-no-validity seed 2 in a packed CI matrix froze such a client).
	// A library that keeps one value across an acquire's retries (redsync)
	// adds its attempts' nodes together: the count is per value, not per
	// attempt, which the gate cannot tell apart.
	quorum     int
	quorumTok  string
	quorumMask uint64
	// cancelReq cancels the request of the cycle in progress as its
	// deferred release sees it (the release's context), nil when the
	// cycle has none to cancel: a cycle gets one only when a cancel is
	// armed as it starts (wantsCancel), so a run without cancel faults
	// allocates nothing. Under mu.
	cancelReq context.CancelFunc
	// cancelAcq cancels the cycle's acquire only (in-acquire: the call in
	// flight; the release the application then defers is not the
	// cancelled call's). Under mu, set with cancelReq.
	cancelAcq context.CancelFunc
	// acqRep, relRep: what a driver's call says a cancel of the acquire's
	// or the release's context did (lockimpl.CancelReport), for a lock in
	// a driver process that cancels calls; reqDone is closed when the
	// cycle ends. Under mu, set with cancelReq.
	acqRep, relRep *lockimpl.CancelReport
	reqDone        chan struct{}
	// throwing is the throw fault that fired in the cycle in progress, at
	// throwAtNS, until its release reports it (appfaults.go). Under mu.
	throwing  *armedFault
	throwAtNS int64
	// busy says the gate has something to do at a checkpoint or before a
	// command: an armed fault, a freeze, death, a stall or a cut. It is
	// set under mu (unlock) and read without it: a client without faults
	// passes its checkpoints and commands (8 a cycle) without the lock.
	busy atomic.Bool
}

// unlock sets busy from the state mu guards, then unlocks mu. Every change
// of that state is followed by it.
func (g *gate) unlock() {
	g.busy.Store(len(g.armed) > 0 || g.frozen != nil || g.dead || g.stallD > 0 || len(g.cuts) > 0)
	g.mu.Unlock()
}

type armKind int

const (
	armPause armKind = iota
	armCrash
	armWatch // report the moment, do not stop the client
	// armBlockLoop freezes the client as armPause does, and blocks its
	// lock's event loop (lockimpl.LoopBlocker) instead of stopping its
	// process.
	armBlockLoop
	// armCancel cancels the request of the cycle in progress (cancelReq)
	// and lets the client go on.
	armCancel
	// armThrow makes the cycle's critical section raise (appfaults.go).
	armThrow
	// armTerm stops the client's process gracefully (appfaults.go).
	armTerm
)

// armedFault waits in one or more gates for a point; the first gate to reach
// it takes the shot, the others drop their copy.
type armedFault struct {
	point string
	kind  armKind
	d     time.Duration
	shot  *shot
	ctx   context.Context // the fault's wait: armed until it ends
	tries atomic.Int32    // a driver's cancel armed again after a miss (rearm)
	grace time.Duration   // armTerm: how long the process may take to end
}

// shot is shared by the gates armed together: taken once, by the first
// client at the point or by the end of the fault's wait (reply closed empty).
type shot struct {
	taken atomic.Bool
	reply chan faults.Hit
}

// ErrCrashed is returned by every command of a crashed client.
var ErrCrashed = errors.New("lockchaos: client crashed")

// errCut is what a command over a cut (reset) link returns: a network error,
// as a real connection reset would be.
var errCut = &net.OpError{Op: "write", Net: "tcp", Err: errors.New("connection reset by lockchaos cut")}

// errDropped is what a command over a dropping cut returns when the
// client's timeout passes first: the i/o timeout of a read deadline.
var errDropped = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// arm arms the gates of clients cs with one fault; see faults.ClientControl.
func arm(ctx context.Context, gates []*gate, point string, kind armKind, d time.Duration) <-chan faults.Hit {
	return armFault(ctx, gates, &armedFault{point: point, kind: kind, d: d})
}

// armFault arms the gates with a (its point, kind and parameters set).
func armFault(ctx context.Context, gates []*gate, a *armedFault) <-chan faults.Hit {
	sh := &shot{reply: make(chan faults.Hit, 1)}
	a.shot, a.ctx = sh, ctx
	live := 0
	for _, g := range gates {
		g.mu.Lock()
		if !g.dead {
			g.armed = append(g.armed, a)
			live++
		}
		g.unlock()
	}
	if live == 0 {
		sh.taken.Store(true)
		close(sh.reply)
		return sh.reply
	}
	go func() { // disarm when the fault's wait ends without the point reached
		<-ctx.Done()
		for _, g := range gates {
			g.disarm(a)
		}
		if sh.taken.CompareAndSwap(false, true) {
			close(sh.reply)
		}
	}()
	return sh.reply
}

func (g *gate) disarm(a *armedFault) {
	g.mu.Lock()
	g.armed = slices.DeleteFunc(g.armed, func(x *armedFault) bool { return x == a })
	g.unlock()
}

// checkpoint is called at named points of the cycle. It fires the armed
// faults whose point matches (or "now") — watches first, then a crash or a
// freeze — and waits out a freeze in progress. It returns ErrCrashed once
// the client is dead.
func (g *gate) checkpoint(point string) error {
	if !g.busy.Load() {
		return nil
	}
	g.mu.Lock()
	if g.dead {
		g.unlock()
		return ErrCrashed
	}
	var stop *armedFault
	if len(g.armed) > 0 {
		var now int64
		keep := g.armed[:0]
		for _, a := range g.armed {
			switch {
			case a.shot.taken.Load():
				continue // another client took it, or its wait ended
			case a.point != point && a.point != history.PointNow || stop != nil && a.kind != armWatch,
				a.kind == armCancel && g.cancelReq == nil: // this cycle has no request to cancel: the next one will
				keep = append(keep, a)
				continue
			case !a.shot.taken.CompareAndSwap(false, true):
				continue
			}
			if a.kind == armWatch {
				if now == 0 {
					now = g.c.rec.Now()
				}
				a.shot.reply <- faults.Hit{Client: g.c.ID, From: now, To: now}
				close(a.shot.reply)
				continue
			}
			stop = a
		}
		clear(g.armed[len(keep):])
		g.armed = keep
	}
	if stop != nil {
		return g.fire(stop, point)
	}
	fr := g.frozen
	g.unlock()
	if fr != nil {
		<-fr
	}
	return nil
}

// fire (with mu held, which it unlocks) fires fault stop, which this
// gate's client took at point: what the client does next is its result.
func (g *gate) fire(stop *armedFault, point string) error {
	switch stop.kind {
	case armCancel:
		g.cancel(stop)
		return nil
	case armThrow:
		return g.throwAt(stop)
	case armTerm:
		call := strings.HasPrefix(point, "call-")
		g.terminate(stop, call)
		if call {
			return nil // the call goes on; the process ends under it
		}
		return ErrCrashed
	case armCrash:
		g.dead = true
		t := g.c.rec.Now()
		g.unlock()
		var eff map[string]string
		if p, ok := g.c.lk.(lockimpl.Process); ok {
			// A lock in a process of its own dies with the client,
			// holding what it holds.
			eff = map[string]string{"process_killed": "true"}
			if err := p.Kill(); err != nil {
				eff = map[string]string{"process_kill_error": err.Error()}
			}
		}
		stop.shot.reply <- faults.Hit{Client: g.c.ID, From: t, To: t, Effect: eff}
		close(stop.shot.reply)
		return ErrCrashed
	}
	ch := make(chan struct{})
	g.frozen = ch
	g.unlock()
	g.freeze(stop, point, ch)
	return nil
}

// cancel (with mu held, which it unlocks) cancels the cycle's request,
// as an application whose request timed out or whose caller went away
// does: in the acquire, the acquire's context; in the critical section
// or the release, the release's (the one the cycle defers). A lock in a
// driver process that cannot cancel a call (no cancel extension) is left
// alone, and the fault says so; one that can is cancelled by cancelCall.
func (g *gate) cancel(a *armedFault) {
	cancel, rep := g.cancelReq, g.relRep
	call := "none"
	switch g.phase.Load() >> 32 {
	case phaseAcquiring:
		call, cancel, rep = "acquire", g.cancelAcq, g.acqRep
	case phaseReleasing:
		call = "release"
	}
	cycle := g.reqDone
	g.cancelReq, g.cancelAcq, g.acqRep, g.relRep, g.reqDone = nil, nil, nil, nil, nil
	g.unlock()
	t := g.c.rec.Now()
	eff := map[string]string{history.EffectCall: call}
	if _, ok := g.c.lk.(lockimpl.Process); ok {
		if rep == nil {
			eff[history.EffectReason] = "cancel: lock " + g.c.w.lockInfo.Name + " runs in a driver process whose hello does not list the cancel extension"
		} else {
			go g.cancelCall(a, t, eff, cancel, rep, cycle)
			return
		}
	} else {
		cancel()
	}
	a.shot.reply <- faults.Hit{Client: g.c.ID, From: t, To: t, Effect: eff}
	close(a.shot.reply)
}

// cancelCall cancels a driver's call (after the fault's delay, a.d) and
// reports what the driver says the cancel did: whether it reached the call
// before its answer, and the answer. A cancel in the critical section
// reaches the release that follows. A cancel that came too late (the call
// had answered: a one-command release is quick) or found no call (the
// cycle ended without a release) is tried again at this client's next
// cycle until the fault's wait ends (rearm), as a pause waits for its
// point; the effect then counts the tries.
func (g *gate) cancelCall(a *armedFault, t int64, eff map[string]string, cancel context.CancelFunc, rep *lockimpl.CancelReport, cycle <-chan struct{}) {
	missed := ""
	if a.d > 0 {
		ph := g.phase.Load() >> 32
		time.Sleep(a.d)
		eff[history.ParamDelay] = a.d.String()
		t = g.c.rec.Now()
		if eff[history.EffectCall] != "none" && g.phase.Load()>>32 != ph {
			missed = "cancel: the driver's " + eff[history.EffectCall] + " had answered before the cancel was sent, " + a.d.String() + " after it"
		}
	}
	if missed == "" {
		cancel()
		select {
		case <-rep.Done():
			eff[history.EffectCancelledCall] = cmp.Or(rep.Call, eff[history.EffectCall])
			eff[history.EffectDelivered] = strconv.FormatBool(rep.Delivered)
			eff[history.EffectCallAnswer] = rep.Answer
			if !rep.Delivered {
				missed = "cancel: the driver's " + rep.Call + " had answered (" + rep.Answer + ") before the cancel reached it"
			}
		case <-cycle:
			missed = "cancel: the cycle ended without a call of the driver's to cancel"
		}
	}
	if missed != "" && g.rearm(a) {
		return
	}
	if missed != "" {
		eff[history.EffectReason] = missed
	}
	if n := a.tries.Load(); n > 0 {
		eff[history.EffectTries] = strconv.Itoa(int(n) + 1)
	}
	a.shot.reply <- faults.Hit{Client: g.c.ID, From: t, To: g.c.rec.Now(), Effect: eff}
	close(a.shot.reply)
}

// rearm arms a, whose shot this gate holds, again in this gate alone,
// while the fault's wait lasts; false when it has ended (the caller then
// reports the miss). The shot is released to the gate's next cycle; a
// wait that ends first closes it empty (arm's own watcher).
func (g *gate) rearm(a *armedFault) bool {
	if a.ctx.Err() != nil {
		return false
	}
	a.tries.Add(1)
	g.mu.Lock()
	g.armed = append(g.armed, a)
	a.shot.taken.Store(false)
	g.unlock()
	// arm's watcher closes the shot when the wait ends; if it ended just
	// now, the watcher may have looked while this gate held the shot.
	if a.ctx.Err() != nil && a.shot.taken.CompareAndSwap(false, true) {
		g.disarm(a)
		close(a.shot.reply)
	}
	return true
}

// wantsCancel says whether a cancel is armed in this gate: the cycle
// starting gets a request it can cancel.
func (g *gate) wantsCancel() bool {
	if !g.busy.Load() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.ContainsFunc(g.armed, func(a *armedFault) bool { return a.kind == armCancel && !a.shot.taken.Load() })
}

// request gives the cycle starting its contexts: the acquire's (from the
// run's ctx) and the release's. A cancel in the acquire cancels the
// acquire's (the call in flight); one in the critical section or in the
// release cancels the release's (the deferred release gets the cancelled
// request's context). A lock in a driver process that cancels calls gets
// a lockimpl.CancelReport in each, to tell what the cancel did. Without
// a cancel armed they are ctx and context.Background(), and done is a
// no-op.
func (g *gate) request(ctx context.Context) (acq, rel context.Context, done func()) {
	if !g.wantsCancel() {
		return ctx, context.Background(), func() {}
	}
	var acqRep, relRep *lockimpl.CancelReport
	if _, ok := g.c.lk.(lockimpl.Process); ok && lockimpl.CancelsCalls(g.c.lk) {
		acqRep, relRep = lockimpl.NewCancelReport(), lockimpl.NewCancelReport()
		ctx = lockimpl.WithCancelReport(ctx, acqRep)
	}
	acq, cancelAcq := context.WithCancel(ctx)
	rel, cancelRel := context.WithCancel(context.Background())
	if relRep != nil {
		rel = lockimpl.WithCancelReport(rel, relRep)
	}
	cycle := make(chan struct{})
	g.mu.Lock()
	g.cancelReq, g.cancelAcq, g.acqRep, g.relRep, g.reqDone = cancelRel, cancelAcq, acqRep, relRep, cycle
	g.unlock()
	return acq, rel, func() {
		g.mu.Lock()
		g.cancelReq, g.cancelAcq, g.acqRep, g.relRep, g.reqDone = nil, nil, nil, nil, nil
		g.unlock()
		cancelAcq()
		cancelRel()
		close(cycle)
	}
}

func (g *gate) freeze(a *armedFault, point string, ch chan struct{}) {
	t0 := g.c.rec.Now()
	// A lock in a process of its own (a driver) is stopped with the
	// client, every thread of it (SIGSTOP): its renewals stop as well.
	p, _ := g.c.lk.(lockimpl.Process)
	var eff map[string]string
	if a.kind == armBlockLoop {
		// The process goes on running; its event loop is busy for d.
		p = nil
		if b, ok := g.c.lk.(lockimpl.LoopBlocker); ok {
			var err error
			if eff, err = b.BlockLoop(a.d); err != nil {
				if eff == nil {
					eff = map[string]string{}
				}
				eff[history.EffectReason] = "block-loop: " + err.Error()
			}
		} else {
			eff = map[string]string{history.EffectReason: "block-loop: lock " + g.c.w.lockInfo.Name + " has no event loop lockchaos can block (a driver that declares block_loop)"}
		}
		if left := a.d - time.Duration(g.c.rec.Now()-t0); left > 0 {
			time.Sleep(left)
		}
	}
	if p != nil {
		var err error
		if eff, err = p.Freeze(); err != nil {
			eff = map[string]string{"process_freeze_error": err.Error()}
		}
	}
	if a.kind != armBlockLoop {
		time.Sleep(a.d) // a stop-the-world pause is not interruptible
	}
	if p != nil {
		if err := p.Thaw(); err != nil {
			eff["process_thaw_error"] = err.Error()
		}
	}
	t1 := g.c.rec.Now()
	g.frozenNS.Add(t1 - t0)
	g.mu.Lock()
	g.frozen = nil
	g.unlock()
	close(ch)
	g.c.rec.Record(&history.Event{T: t0, End: t1, Client: g.c.ID, Key: g.c.curKey(), Op: history.OpPause, Detail: point})
	a.shot.reply <- faults.Hit{Client: g.c.ID, From: t0, To: t1, Effect: eff}
	close(a.shot.reply)
}

// Phases of gate.phase.
const (
	phaseAcquiring = 1 + iota
	phaseReleasing
)

// setPhase starts phase p: "acquiring", "releasing" or "" (neither).
func (g *gate) setPhase(p string) {
	var ph uint64
	switch p {
	case "acquiring":
		ph = phaseAcquiring
	case "releasing":
		ph = phaseReleasing
	}
	g.phase.Store(ph << 32)
}

// hook returns the go-redis hook for this client's connection to node idx.
func (g *gate) hook(idx int) redis.Hook { return gateHook{g: g, idx: idx} }

// Before and After make the gate a lockimpl.CommandGate for locks that
// bring their own client library.
//
// A driver's call (name "acquire" or "release") fires the cancel faults
// armed at callPoint(in-acquire or in-release) as it is sent: lockchaos
// cannot see a driver's commands answered, so a driver's call is
// cancelled while in flight (after the fault's delay) rather than after
// the reply that took the lock.
func (g *gate) Before(ctx context.Context, node int, name string) error {
	if g.busy.Load() {
		switch name {
		case "acquire":
			_ = g.checkpoint(callPoint(history.PointInAcquire))
		case "release":
			_ = g.checkpoint(callPoint(history.PointInRelease))
		}
	}
	return gateHook{g: g, idx: node}.before(ctx, name)
}

// callPoint is the point a cancel at point p is armed at for a lock in a
// driver process that cancels calls: in-acquire and in-release fire as
// the driver's call is sent (Before); other points are the cycle's own.
func callPoint(p string) string {
	if p == history.PointInAcquire || p == history.PointInRelease {
		return "call-" + p
	}
	return p
}

func (g *gate) After(node int, answered, ok bool) { gateHook{g: g, idx: node}.after(answered, ok, "") }

type gateHook struct {
	g   *gate
	idx int
}

func (h gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.before(ctx, cmd.Name()); err != nil {
			cmd.SetErr(err)
			return err
		}
		err := next(ctx, cmd)
		h.after(answered(err), err == nil && succeeded(cmd), setToken(h.g, cmd))
		return err
	}
}

// setToken is the value a SET writes (a lock's token), when the gate has
// something armed (it is read for in-acquire only); "" otherwise.
func setToken(g *gate, cmd redis.Cmder) string {
	if g.quorum <= 1 || !g.busy.Load() || cmd.Name() != "set" {
		return ""
	}
	if args := cmd.Args(); len(args) > 2 {
		switch s := args[2].(type) {
		case string:
			return s
		case *string: // the simple lock's (no boxing allocation)
			if s != nil {
				return *s
			}
		}
	}
	return ""
}

func (h gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		name := ""
		if len(cmds) > 0 {
			name = cmds[0].Name()
		}
		if err := h.before(ctx, name); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		err := next(ctx, cmds)
		h.after(answered(err), err == nil, "")
		return err
	}
}

// before: wait out a freeze, fail when crashed or cut, delay stalled commands.
func (h gateHook) before(ctx context.Context, name string) error {
	g := h.g
	if !g.busy.Load() {
		return nil // no checkpoint, cut or stall to pass
	}
	if err := g.checkpoint("command"); err != nil {
		return err
	}
	g.mu.Lock()
	cut := g.cuts[h.idx]
	stall := g.stallD
	if stall > 0 && g.stallOn != nil && !g.stallOn[strings.ToLower(name)] {
		stall = 0
	}
	g.unlock()
	switch cut {
	case "reset":
		return errCut
	case "drop":
		// A silent drop: no answer until the caller gives up, by its
		// context or, as the connection's read deadline would, after the
		// client's timeout. go-redis runs some commands with a context
		// that never ends (HELLO on a pub/sub connection it dials while
		// a waiter subscribes): waiting for that context alone hung the
		// client, its run and an exploration's whole budget.
		t := time.NewTimer(cmp.Or(g.dropWait, cluster.DefaultTimeout))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return errDropped
		}
	}
	if stall > 0 {
		g.stalled.Add(1)
		if g.phase.Load()>>32 == phaseAcquiring {
			g.stalledAcq.Add(1)
		}
		time.Sleep(stall)
	}
	return nil
}

// phaseTook marks, in the phase word, an acquire whose reply took the lock
// was seen (after); the word's low bits below it count the phase's replies.
const phaseTook = 1 << 31

// after fires "in-acquire"/"in-release" faults after a successful reply
// arrived during that phase: the client is frozen (or dies) between a reply
// and its next step — e.g. between redlock's replies and its validity check,
// between setnx-expire's SETNX and EXPIRE, or between get-del's GET and DEL.
// A refused command (SET NX on a held key) does not fire "in-acquire": the
// point is "after the command that took the lock". "in-release" fires after
// the first answered command of a release: a one-command release (a script
// returning the count left, 0) is then frozen after its only reply, and a
// two-command one (GET, then DEL) between the two.
//
// For a lock that takes a majority of nodes, in-acquire fires after the
// reply that completed the majority for tok (the value the SETs wrote); a
// reply without a token (a script, a pipeline) counts alone.
func (h gateHook) after(answered, ok bool, tok string) {
	if !answered {
		return
	}
	g := h.g
	st := g.phase.Add(1)
	phase, replied, took := st>>32, st&(phaseTook-1), st&phaseTook != 0
	if phase == phaseAcquiring && ok && !took && g.quorum <= 1 {
		// The reply that took the lock, armed or not: later replies of
		// this acquire (setnx-expire's EXPIRE after its SETNX) are past
		// the point, and a fault armed after it waits for the next
		// acquire.
		g.phase.Or(phaseTook)
	}
	if !g.busy.Load() {
		return // nothing armed
	}
	point := ""
	g.mu.Lock()
	switch {
	case len(g.armed) == 0:
	case phase == phaseAcquiring && ok && !took && g.tookQuorum(h.idx, tok):
		if g.quorum > 1 {
			g.phase.Or(phaseTook)
		}
		point = history.PointInAcquire
	case phase == phaseReleasing && replied == 1:
		point = history.PointInRelease
	}
	if point != "" && !slices.ContainsFunc(g.armed, func(a *armedFault) bool { return a.point == point && !a.shot.taken.Load() }) {
		point = ""
	}
	g.unlock()
	if point != "" {
		_ = g.checkpoint(point)
	}
}

// tookQuorum (with mu held) counts node idx as taken for tok and reports
// whether the quorum of nodes has taken it.
func (g *gate) tookQuorum(idx int, tok string) bool {
	if g.quorum <= 1 || tok == "" || idx < 0 || idx >= 64 {
		return true
	}
	if tok != g.quorumTok {
		g.quorumTok, g.quorumMask = tok, 0
	}
	g.quorumMask |= 1 << idx
	return bits.OnesCount64(g.quorumMask) >= g.quorum
}

func (g *gate) isDead() bool {
	if !g.busy.Load() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dead
}

// answered reports whether a command's error still means the server
// replied: no error, a nil reply, or an error reply (a script's refusal).
func answered(err error) bool {
	if err == nil {
		return true // without a heap allocation for re (2 per lock cycle)
	}
	var re redis.Error
	return errors.Is(err, redis.Nil) || errors.As(err, &re) && !errors.Is(err, ErrCrashed)
}

// succeeded reports whether a reply means the command did something: not
// nil, false, 0 or an error.
func succeeded(cmd redis.Cmder) bool {
	if cmd.Err() != nil {
		return false
	}
	switch c := cmd.(type) {
	case *redis.BoolCmd:
		return c.Val()
	case *redis.IntCmd:
		return c.Val() != 0
	case *redis.Cmd:
		v := c.Val()
		if n, ok := v.(int64); ok {
			return n != 0
		}
		return v != nil
	}
	return true
}
