package history

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
// checker's causes and the report's legend cover every one of them
// (TestEveryKindHasACause, TestEveryFaultKindHasAColour).
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
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{FaultPauseClient, FaultCrashClient, FaultClockSkew, FaultCutClient, FaultStallCommands,
	FaultPauseNode, FaultKillNode, FaultRestartNode, FaultReplicationLag, FaultClockJump, FaultClockDrift,
	FaultFailover, FaultPartition, FaultLatency, FaultLink}

// Keys of a fault's Request (the scenario's params, plus the schedule's
// fields) and Effect (what the injector measured) that more than the fault
// itself reads: the faults package writes them through these names and the
// checker and report read them through FaultView, so a rename is one edit.
const (
	ParamMode      = "mode"      // restart-node: empty | aof | delayed; failover: kill | manual; cut-client, partition, link: reset | drop | delay
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

	EffectNewMaster = "new_master" // failover: the promoted node
	EffectReason    = "reason"     // why a fault did not take effect
	EffectError     = "error"      // the error that stopped it
	EffectMechanism = "mechanism"  // clock faults: real-clock | ttl-rewrite
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
	// Why is the reason a fault did not take effect (Effect reason, else
	// error).
	Why     string
	Applied bool
}

// View reads f into its typed form.
func (f *Fault) View() FaultView {
	r, e := f.Request, f.Effect
	v := FaultView{Kind: f.Kind, Target: f.Target, Mode: r[ParamMode], Delta: r[ParamDelta], Rate: r[ParamRate],
		Delay: r[ParamDelay], Nodes: r[ParamNodes], Point: r[ParamPoint], NewMaster: e[EffectNewMaster], Why: e[EffectReason],
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
