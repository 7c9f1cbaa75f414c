package explore

import (
	"math/rand/v2"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// How explore draws each fault kind, in one table: a registered kind
// (faults.Kinds) is either here or in unexplored with the reason
// (TestEveryFaultKindIsExploredOrListed), and a margin template (margin.go)
// names only kinds drawn here (TestMarginTemplatesAreExplored). A new kind:
// a row here (its prior, and a draw of its target, params and magnitude),
// or a line in unexplored; a margin template when its size is a time.
type kindDraw struct {
	// prior is how often the kind is drawn, relative to the other kinds of
	// the topology: the classic mistakes (a holder frozen around its TTL, a
	// release that arrives late or twice, a crash between two commands)
	// are found by the client-side faults, so they weigh most; every other
	// kind of the topology still comes up.
	prior int
	// atPoint: the fault fires at a client's cycle point (f.Spec.Point),
	// which draw sets; the others fire at a time, sometimes held by a
	// `when:` trigger (Generator.fault).
	atPoint bool
	// draw sets f's target, params (f.Spec.Params, empty) and magnitude
	// (f.Mag in f.MagField, and f.Hold when the fault's effect outlasts
	// its duration).
	draw func(g Generator, r *rand.Rand, s Schedule, f *Fault)
}

var kindDraws = map[string]kindDraw{
	history.FaultPauseClient:    {30, true, drawClientAtPoint},
	history.FaultCrashClient:    {8, true, drawClientAtPoint},
	history.FaultStallCommands:  {9, false, drawStallCommands},
	history.FaultLink:           {8, false, drawLink},
	history.FaultCutClient:      {5, false, drawCutClient},
	history.FaultLatency:        {5, false, drawLatency},
	history.FaultPartition:      {4, false, drawPartition},
	history.FaultPauseNode:      {4, false, drawNodeOutage},
	history.FaultKillNode:       {4, false, drawNodeOutage},
	history.FaultRestartNode:    {4, false, drawRestartNode},
	history.FaultClockJump:      {5, false, drawClockJump},
	history.FaultClockSkew:      {4, false, drawClockSkew},
	history.FaultClockDrift:     {3, false, drawClockDrift},
	history.FaultFailover:       {4, false, drawFailover},
	history.FaultReplicationLag: {3, false, drawReplicationLag},
	history.FaultMigrateSlot:    {2, false, drawNothing},
	history.FaultIsolateNode:    {2, false, drawNothing},
	history.FaultCancel:         {6, true, drawCancel},
	history.FaultThrow:          {4, true, drawThrow},
	history.FaultSigterm:        {4, true, drawSigterm},
}

// unexplored are the registered fault kinds explore never draws, each with
// why (none today).
var unexplored = map[string]string{}

// kindPrior is each explored kind's prior, for pickWeighted.
var kindPrior = func() map[string]int {
	m := make(map[string]int, len(kindDraws))
	for k, d := range kindDraws {
		m[k] = d.prior
	}
	return m
}()

// A client frozen (pause-client, with a duration) or killed (crash-client)
// at a cycle point.
func drawClientAtPoint(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Point = drawPoint(r, true)
	f.Spec.Target = g.clientTarget(r, s)
	if r.IntN(3) == 0 {
		f.Spec.Target = "any-client"
	}
	if f.Spec.Kind == history.FaultPauseClient {
		f.Mag, f.MagField = drawMag(r), MagDuration
	}
}

// A request cancelled inside a lock call or the critical section
// (faults.CancelPoints), around the acquire most: an acquire that took the
// key and then saw its caller gone is where libraries leak.
func drawCancel(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Point = pickWeighted(r, cancelPrior, faults.CancelPoints)
	if _, driver := lockimpl.ProcessNeedsOf(g.Info.Name); driver && (f.Spec.Point == history.PointInAcquire || f.Spec.Point == history.PointInRelease) {
		// A driver's call is cancelled in flight, this long after it
		// was sent (faults/cancel.go): with it, or a command's time on
		// a loopback link later, or well into a wait.
		if d := pick(r, []string{"", "1ms", "3ms", "10ms", "30ms"}); d != "" {
			f.Spec.Params[history.ParamDelay] = d
		}
	}
	f.Spec.Target = g.clientTarget(r, s)
	if r.IntN(3) == 0 {
		f.Spec.Target = "any-client"
	}
}

var cancelPrior = map[string]int{history.PointInAcquire: 4, history.PointAfterAcquire: 2, history.PointBeforeWrite: 1,
	history.PointInWrite: 1, history.PointBeforeRelease: 2, history.PointInRelease: 3}

// The application's code in the critical section raises
// (faults.ThrowPoints): the lock's idiom releases on its exception path.
func drawThrow(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Point = pick(r, faults.ThrowPoints)
	f.Spec.Target = g.clientTarget(r, s)
	if r.IntN(3) == 0 {
		f.Spec.Target = "any-client"
	}
}

// A driver's process stopped gracefully while it acquires, holds or
// releases; in a call, in flight (params.delay after it was sent) as a
// cancel is. Drawn for locks with a process of their own only
// (Generator.kinds).
func drawSigterm(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Point = pickWeighted(r, sigtermPrior, []string{history.PointInAcquire, history.PointAfterAcquire,
		history.PointBeforeWrite, history.PointBeforeRelease, history.PointInRelease})
	if f.Spec.Point == history.PointInAcquire || f.Spec.Point == history.PointInRelease {
		if d := pick(r, []string{"", "1ms", "3ms", "10ms"}); d != "" {
			f.Spec.Params[history.ParamDelay] = d
		}
	}
	f.Spec.Target = g.clientTarget(r, s)
}

var sigtermPrior = map[string]int{history.PointInAcquire: 2, history.PointAfterAcquire: 3, history.PointBeforeWrite: 2,
	history.PointBeforeRelease: 1, history.PointInRelease: 2}

func drawStallCommands(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Target = g.clientTarget(r, s)
	if c := pick(r, []string{"", "del", "eval,evalsha", "set", "get", "pexpire,expire"}); c != "" {
		f.Spec.Params[history.ParamCommands] = c
	}
	f.Mag, f.MagField = drawMag(r), MagDelay
	f.Hold = 2 + f.Mag
}

func drawCutClient(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Target = g.clientTarget(r, s)
	f.Spec.Params[history.ParamMode] = pick(r, []string{"reset", "drop"})
	if g.Topology == "independent" {
		f.Spec.Params[history.ParamNodes] = g.someNodes(r)
	}
	f.Mag, f.MagField = drawMag(r), MagDuration
}

func drawLink(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	p := f.Spec.Params
	c := pick(r, []string{"holder", "holder", "client:0"})
	n := "master"
	if g.Topology == "independent" {
		n = g.nodeTarget(r)
	}
	f.Spec.Target = c + " -> " + n
	mode := pick(r, []string{"delay", "delay", "drop", "reset"})
	p[history.ParamMode] = mode
	p[history.ParamDirection] = pick(r, []string{"to-node", "from-node", "both"})
	if mode == "delay" {
		f.Mag, f.MagField = drawMag(r), MagDelay
		f.Hold = 2 + f.Mag
	} else {
		f.Mag, f.MagField = drawMag(r), MagDuration
	}
}

func drawLatency(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	f.Spec.Params[history.ParamDirection] = pick(r, []string{"from-node", "to-node", "both"})
	f.Mag, f.MagField = drawMag(r), MagLatency
	f.Hold = 2 + f.Mag
}

func drawPartition(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	f.Spec.Params[history.ParamMode] = pick(r, []string{"reset", "drop"})
	f.Spec.Params[history.ParamDirection] = pick(r, []string{"both", "to-node", "from-node"})
	f.Mag, f.MagField = drawMag(r), MagDuration
}

// A node frozen (pause-node) or down (kill-node) for a duration.
func drawNodeOutage(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	f.Mag, f.MagField = drawMag(r), MagDuration
}

func drawRestartNode(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	if r.IntN(2) == 0 {
		f.Spec.Params[history.ParamMode] = "delayed"
		f.Mag, f.MagField = drawMag(r), MagDelay
	}
}

func drawClockJump(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	f.Mag, f.MagField = drawMag(r), MagDelta
	if r.IntN(5) == 0 {
		f.Mag = -f.Mag
	}
}

func drawClockDrift(g Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = g.nodeTarget(r)
	f.Mag, f.MagField = pick(r, rates), MagRate
	f.Hold = 3
}

func drawClockSkew(g Generator, r *rand.Rand, s Schedule, f *Fault) {
	f.Spec.Target = g.clientTarget(r, s)
	if r.IntN(3) == 0 {
		f.Mag, f.MagField = pick(r, rates), MagRate
	} else {
		f.Mag, f.MagField = drawMag(r), MagOffset
		if r.IntN(2) == 0 {
			f.Mag = -f.Mag
		}
	}
	f.Hold = 3
}

func drawReplicationLag(_ Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Target = "all"
	f.Mag, f.MagField = drawMag(r), MagLatency
	f.Hold = 2 + f.Mag
}

func drawFailover(_ Generator, r *rand.Rand, _ Schedule, f *Fault) {
	f.Spec.Params[history.ParamMode] = pick(r, []string{"kill", "manual"})
}

// A kind with nothing to draw: its target and size are the topology's
// (migrate-slot, isolate-node).
func drawNothing(Generator, *rand.Rand, Schedule, *Fault) {}
