package history

import "strings"

// Points of a client's lock cycle where a client fault (pause, crash) can
// fire and a fault's `when` trigger can wait: defined once here, where the
// history that records them is defined; the workload's checkpoints, fault
// validation and the documentation range over Points.
const (
	PointNow           = "now" // at the client's next step (faults only, not a trigger)
	PointBeforeAcquire = "before-acquire"
	PointInAcquire     = "in-acquire" // after the reply of the command that took the lock
	PointAfterAcquire  = "after-acquire"
	PointBeforeWrite   = "before-write" // after the lease check, before the write
	PointInWrite       = "in-write"
	PointBeforeRelease = "before-release"
	PointInRelease     = "in-release" // after a release's first reply
	PointAfterRelease  = "after-release"
)

// Points lists the cycle points in cycle order (without PointNow).
var Points = []string{PointBeforeAcquire, PointInAcquire, PointAfterAcquire, PointBeforeWrite, PointInWrite,
	PointBeforeRelease, PointInRelease, PointAfterRelease}

// Fault kinds: the names a history's fault events carry (Fault.Kind). The
// faults package registers exactly these (TestKindsMatchTheVocabulary), the
// checker's causes cover every one (TestEveryFaultKindIsExplained) and the
// report colours each by its family (TestEveryFaultKindHasAColour).
const (
	FaultPauseClient    = "pause-client"
	FaultCrashClient    = "crash-client"
	FaultClockSkew      = "clock-skew"
	FaultCutClient      = "cut-client"
	FaultStallCommands  = "stall-commands"
	FaultPauseNode      = "pause-node"
	FaultKillNode       = "kill-node"
	FaultRestartNode    = "restart-node"
	FaultReplicationLag = "replication-lag"
	FaultClockJump      = "clock-jump"
	FaultClockDrift     = "clock-drift"
	FaultFailover       = "failover"
	FaultPartition      = "partition"
	FaultLatency        = "latency"
	FaultLink           = "link"
	FaultMigrateSlot    = "migrate-slot"
	FaultIsolateNode    = "isolate-node"
	// FaultCancel cancels the application's request at a point of a
	// client's cycle: the lock call in flight (its context) and the
	// release the application defers with it.
	FaultCancel = "cancel"
	// FaultThrow raises an exception in the application's critical
	// section: the release runs on the lock idiom's exception path (a
	// deferred release recovering a panic, a context manager's exit, a
	// using() routine that rejects, a finally).
	FaultThrow = "throw"
	// FaultSigterm stops a client's process gracefully (SIGTERM): its
	// runtime's shutdown hooks run, then it exits; it is killed if it has
	// not after a grace period.
	FaultSigterm = "sigterm"
)

// Fault families: kinds that do the same thing to a lock by different
// means share one (the report gives a family one colour), so a new kind of
// an existing family needs no change outside its own file and this table.
const (
	FamilyClientFreeze = "client-freeze" // a client stops, then resumes
	FamilyClientCrash  = "client-crash"  // a client stops for good
	FamilyClientStall  = "client-stall"  // a client's commands are slow
	FamilyCut          = "cut"           // links fail or hang
	FamilySlowLink     = "slow-link"     // links are slow
	FamilyNodeFreeze   = "node-freeze"   // a server stops, then resumes
	FamilyNodeLoss     = "node-loss"     // a server dies or restarts
	FamilyFailover     = "failover"      // a replica is promoted
	FamilyReplication  = "replication"   // replicas fall behind
	FamilyClock        = "clock"         // a clock jumps, drifts or is skewed
	FamilyReshard      = "reshard"       // a slot moves to another shard
	FamilyApplication  = "application"   // the application gives up a call, throws, shuts down
)

// FaultFamilies lists every family.
var FaultFamilies = []string{FamilyClientFreeze, FamilyClientCrash, FamilyClientStall, FamilyCut, FamilySlowLink,
	FamilyNodeFreeze, FamilyNodeLoss, FamilyFailover, FamilyReplication, FamilyClock, FamilyReshard, FamilyApplication}

// faultTable is the one list of fault kinds, with their families and
// whether they aim at one client (else at nodes or links).
var faultTable = []struct {
	kind, family string
	client       bool
}{
	{FaultPauseClient, FamilyClientFreeze, true}, {FaultCrashClient, FamilyClientCrash, true},
	{FaultClockSkew, FamilyClock, true}, {FaultCutClient, FamilyCut, true}, {FaultStallCommands, FamilyClientStall, true},
	{FaultPauseNode, FamilyNodeFreeze, false}, {FaultKillNode, FamilyNodeLoss, false}, {FaultRestartNode, FamilyNodeLoss, false},
	{FaultReplicationLag, FamilyReplication, false}, {FaultClockJump, FamilyClock, false}, {FaultClockDrift, FamilyClock, false},
	{FaultFailover, FamilyFailover, false}, {FaultPartition, FamilyCut, false}, {FaultLatency, FamilySlowLink, false},
	{FaultLink, FamilySlowLink, false}, {FaultMigrateSlot, FamilyReshard, false}, {FaultIsolateNode, FamilyCut, false},
	{FaultCancel, FamilyApplication, true}, {FaultThrow, FamilyApplication, true}, {FaultSigterm, FamilyApplication, true},
}

// FaultKinds lists every fault kind.
var FaultKinds = func() []string {
	out := make([]string, len(faultTable))
	for i, f := range faultTable {
		out[i] = f.kind
	}
	return out
}()

// ClientFault reports whether kind aims at one client.
func ClientFault(kind string) bool {
	for _, f := range faultTable {
		if f.kind == kind {
			return f.client
		}
	}
	return false
}

// FaultFamily is kind's family ("" for a kind this build does not know,
// e.g. from a history written by another).
func FaultFamily(kind string) string {
	for _, f := range faultTable {
		if f.kind == kind {
			return f.family
		}
	}
	return ""
}

// Keys of a fault's Request (the scenario's params, plus the schedule's
// fields) and Effect (what the injector measured) that more than the fault
// itself reads: the faults package writes them through these names and the
// checker and report read them through FaultView, so a rename is one edit.
const (
	ParamMode      = "mode"      // restart-node: empty | aof | delayed; failover: kill | manual; cut-client, partition, link: reset | drop | delay; pause-client: sigstop | block-loop
	ParamDelta     = "delta"     // clock-jump, clock-skew: a duration
	ParamRate      = "rate"      // clock-drift, clock-skew: a factor
	ParamDelay     = "delay"     // stall-commands, restart-node (delayed), link: a duration
	ParamNodes     = "nodes"     // cut-client: 1-based node list
	ParamPoint     = "point"     // pause-client, crash-client: the cycle point
	ParamLatency   = "latency"   // latency, replication-lag: a duration
	ParamTimeout   = "timeout"   // failover: how long to wait for the new master
	ParamCommands  = "commands"  // stall-commands: comma-separated
	ParamDirection = "direction" // partition, latency, link: both | to-node | from-node
	ParamOffset    = "offset"    // clock-skew: a duration

	EffectNewMaster = "new_master"    // failover, isolate-node: the promoted node
	EffectOldMaster = "old_master"    // failover, isolate-node: the master it replaced
	EffectReason    = "reason"        // why a fault did not take effect
	EffectError     = "error"         // the error that stopped it
	EffectMechanism = "mechanism"     // clock faults: real-clock | ttl-rewrite
	EffectCrashedAt = "crashed_at_ms" // crash-client: when the client died (run ms)
	// cancel: when the request was cancelled (run ms), and the call in
	// flight then: acquire, release, or none (the client was in its
	// critical section; its deferred release got the cancelled context).
	EffectCancelledAt = "cancelled_at_ms"
	EffectCall        = "call"
	// cancel on a lock in a driver process (the protocol's cancel
	// extension): the call the cancel was sent for (acquire, release),
	// whether it reached that call before it answered, and the call's
	// answer then (cancelled, or what it answered anyway).
	EffectCancelledCall = "cancelled_call"
	EffectDelivered     = "cancel_delivered"
	EffectCallAnswer    = "call_answer"
	EffectTries         = "tries" // the calls it was sent for, when the first ones had answered first
	// throw: the release on the exception path and its answer, and (a
	// driver with the throw extension) whether the exception came out of
	// the lock's idiom to the application.
	EffectThrownAt     = "thrown_at_ms"
	EffectRelease      = "release_answer"
	EffectRaised       = "raised"
	EffectPanicRecover = "panic_recovered"
	// sigterm: when the signal was sent and the process ended (run ms;
	// crashed_at_ms too, which the checks read as a crash's), how it ended
	// (exit status, or killed after the grace), whether it ended within the
	// grace, and whether its driver declared a graceful shutdown (the
	// sigterm extension).
	EffectSignalledAt = "signalled_at_ms"
	EffectExit        = "exit"
	EffectGraceful    = "ended_in_grace"
	EffectHooks       = "shutdown_hooks"
	ParamGrace        = "grace" // sigterm: how long the process may take to exit
	// stall-commands' heal: the commands it delayed at the client's gate,
	// those of them in an acquire, and "true" when the client's lock runs
	// in a process whose own commands the stall met on the wire, uncounted.
	EffectStalled          = "stalled_commands"
	EffectStalledInAcquire = "stalled_in_acquire"
	EffectStalledOnWire    = "stalled_on_wire"
)

// FaultView is the typed reading of a fault event: the fields the checker's
// explanations and the report use, each parsed from Request and Effect in
// one place.
type FaultView struct {
	Kind, Target string
	Mode         string // Request[ParamMode] with the kind's default (restart-node: empty; failover: kill)
	Delta        string
	Rate         string
	Delay        string
	Nodes        string
	Point        string
	NewMaster    string
	OldMaster    string
	// Why is the reason a fault did not take effect (Effect reason, else
	// error).
	Why     string
	Applied bool
}

// View reads f into its typed form.
func (f *Fault) View() FaultView {
	r, e := f.Request, f.Effect
	v := FaultView{Kind: f.Kind, Target: f.Target, Mode: r[ParamMode], Delta: r[ParamDelta], Rate: r[ParamRate],
		Delay: r[ParamDelay], Nodes: r[ParamNodes], Point: r[ParamPoint], NewMaster: e[EffectNewMaster], OldMaster: e[EffectOldMaster], Why: e[EffectReason],
		Applied: f.Applied}
	if v.Why == "" {
		v.Why = e[EffectError]
	}
	if v.Point == "" {
		v.Point = e[ParamPoint]
	}
	if v.Mode == "" {
		switch f.Kind {
		case FaultRestartNode:
			v.Mode = "empty"
			if r["empty"] == "false" {
				v.Mode = "aof"
			}
		case FaultFailover:
			v.Mode = "kill"
		}
	}
	return v
}

// MS converts run time (ns, as every history time is) to milliseconds, the
// unit results and reports show.
func MS(ns int64) float64 { return float64(ns) / 1e6 }

// SharedProcessConn says whether a connection name is a driver process's
// that several clients share (lc-<run>-p<g>, lockimpl/driver's procConnName): its
// commands belong to one of those clients, which the record alone does
// not say.
func SharedProcessConn(name string) bool {
	rest, ok := strings.CutPrefix(name, "lc-")
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, "-p")
	if i < 0 || i+2 == len(rest) {
		return false
	}
	for _, r := range rest[i+2:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ClientProcessKinds are the fault kinds that act on a client's process or
// its links (its library's own connections): clients that share a driver
// process (the lock option tasks) cannot take them, since they would hit
// every client in it.
var ClientProcessKinds = []string{FaultPauseClient, FaultCrashClient, FaultSigterm, FaultClockSkew,
	FaultCutClient, FaultStallCommands, FaultLink}
