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
