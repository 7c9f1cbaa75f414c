// Package history defines the event schema of a run and its crash-tolerant JSONL
// writer and reader. A history is the only thing the checker and the report read.
//
// Every time is nanoseconds since the run's start on one monotonic clock (the
// harness's), whatever clock an implementation under test was given.
package history

// Op names what an event records.
type Op string

const (
	// OpRun is the first line of every history: what ran, with which settings.
	OpRun Op = "run"
	// OpAcquire is one Acquire/TryAcquire call: T invoke, End ack.
	// Result ok = the client now believes it holds Key (Token, Fence, Depth,
	// Deadline are set); fail = it knows it does not; unknown = the call timed
	// out or the connection broke, the server may have set the key. A client
	// never acts on an unknown acquire.
	OpAcquire Op = "acquire"
	// OpRelease is one Release call: T invoke, End ack. Depth is the hold
	// count the client expects to remain after it (0 = key should be freed).
	OpRelease Op = "release"
	// OpLost records that the client learned its lease is gone (Lost() closed
	// or the Deadline passed) and stopped acting on it. T = when it noticed.
	OpLost Op = "lost"
	// OpTold records that the lock declared the lease lost (its Lost
	// channel closed: a refused renewal, a renewal deadline) at T, whether
	// or not the client has looked yet; the client stops acting when it
	// next checks (OpLost). Loss detection measures to it.
	OpTold Op = "told-lost"
	// OpRenew is one background renewal (watchdog). Result fail = the server
	// refused it (not the owner), unknown = no answer.
	OpRenew Op = "renew"
	// OpRead is a read of the protected resource: T invoke, End when applied;
	// Value is what was read.
	OpRead Op = "read"
	// OpWrite is a write to the protected resource: T invoke, End when the
	// resource applied (or rejected) it. Value is the value written, Fence
	// the fencing token presented (if any). Result fail = rejected (stale
	// fence, or out of stock for an inventory).
	OpWrite Op = "write"
	// OpPause is a client being frozen: T start, End resume.
	OpPause Op = "pause"
	// OpFault is a fault starting (T) with its request and measured effect.
	OpFault Op = "fault"
	// OpHeal is a fault ending (T) with its measured effect.
	OpHeal Op = "heal"
	// OpServer is what a Redis node reported through keyspace notifications
	// (observer): Detail is the event (set, del, expired, hset, pexpire, ...).
	OpServer Op = "server"
	// OpPhase marks run phases: Detail = workload | heal | recovery | done.
	OpPhase Op = "phase"
	// OpCommand is one command a node ran on the run's keys, from the
	// node's command record (MONITOR): T = the server's time of it, mapped
	// onto the run clock (start_unix_ns); Node = the node; Client = the
	// lock client whose named connection ran it (-1: the harness or an
	// unnamed connection); Key = the first of the run's keys it names;
	// Cmd = the connection, the command and, for a script, the commands it
	// ran. Result is empty: MONITOR does not show replies. Detail
	// "record-gap" (Err says why) marks a node whose record stopped (a
	// dropped MONITOR connection, a node down) and "record-resumed" where it
	// starts again: commands between the two are missing.
	OpCommand Op = "command"
	// OpKeys says which Redis key a lock wrote for workload key Key when
	// it names its own keys (a prefix of its own, "lock.<key>"): Detail
	// is that key as the server names it. The lock reported it (a
	// driver's `keys` in `acquired`, a built-in adapter's
	// lockimpl.KeyMapper); T is the ack of the client's first acquire
	// that named it, recorded once per client, key and Redis key. The
	// checks read the server's record of Detail as Key's.
	OpKeys Op = "keys"
)

// Details of OpCommand events that are not commands. CmdUnavailable,
// recorded once at the start, says the run has no record after all (MONITOR
// refused): Err says why.
const (
	CmdGap         = "record-gap"
	CmdResumed     = "record-resumed"
	CmdUnavailable = "record-unavailable"
	// CmdClock marks, in a node's record, where the harness changed that
	// node's clock (a clock fault on a node with its own clock): the
	// commands after it, up to the next, ran with the server's clock at
	// harness time h reading h + Value + (h - T)×(rate - 1) on the run
	// clock, Value in ns, rate Depth/ClockRateUnit (Depth 0: rate 1). T
	// is when the harness wrote it. A command's T stays the server's
	// stamp: the marker maps it to the harness clock, and the node's
	// order is the record's.
	CmdClock = "record-clock"
)

// ClockRateUnit: a CmdClock event's Depth is its clock's rate in these
// (parts per billion).
const ClockRateUnit = 1e9

// Command is what a node's command record shows of one command.
type Command struct {
	// Conn is the connection's address as the node saw it (ip:port).
	Conn string `json:"conn"`
	// Name is the connection's name (CLIENT SETNAME), "" when unnamed.
	Name string `json:"name,omitempty"`
	// Args is the command and its arguments as the server received them.
	Args []string `json:"args"`
	// Inner, for a script (EVAL, EVALSHA, FCALL), is what it ran, in order:
	// a conditional script's write appears only when it ran.
	Inner [][]string `json:"inner,omitempty"`
}

// Result of an operation.
type Result string

const (
	OK      Result = "ok"
	Fail    Result = "fail"
	Unknown Result = "unknown"
)

// Event is one line of history.jsonl. Fields that do not apply are omitted.
type Event struct {
	T        int64  `json:"t"`                  // ns since run start: invoke / start
	End      int64  `json:"end,omitempty"`      // ns since run start: ack / applied / end
	Client   int    `json:"client"`             // client id; -1 for the harness (faults, observer)
	Key      string `json:"key,omitempty"`      // lock key (resource ops: the lock key guarding it)
	Op       Op     `json:"op"`                 // what happened
	Result   Result `json:"result,omitempty"`   // ok | fail | unknown
	Token    string `json:"token,omitempty"`    // owner value stored in Redis
	Fence    uint64 `json:"fence,omitempty"`    // fencing token, when the lock has one
	Depth    int    `json:"depth,omitempty"`    // reentrant hold count after the op
	Deadline int64  `json:"deadline,omitempty"` // lease validity end (ns since run start), 0 = none promised
	Value    int64  `json:"value,omitempty"`    // resource value read / written
	Node     string `json:"node,omitempty"`     // Redis node name (observer, faults)
	Err      string `json:"err,omitempty"`      // error text of a failed/unknown op
	Detail   string `json:"detail,omitempty"`   // op-specific detail (observer event, pause point, phase)

	Fault *Fault         `json:"fault,omitempty"` // OpFault / OpHeal
	Cmd   *Command       `json:"cmd,omitempty"`   // OpCommand
	Meta  map[string]any `json:"meta,omitempty"`  // OpRun: scenario, lock, seed, ttl_ms, ...
}

// Fault describes one fault event: what was asked for and what it measurably did.
type Fault struct {
	ID      int               `json:"id"`                // schedule index; pairs OpFault with OpHeal
	Kind    string            `json:"kind"`              // pause-client, kill-node, failover, ...
	Target  string            `json:"target"`            // resolved target (client 3, node n2, ...)
	Request map[string]string `json:"request,omitempty"` // the parameters asked for
	Effect  map[string]string `json:"effect,omitempty"`  // what was measured (state T, new master, pttl before/after, ...)
	Applied bool              `json:"applied"`           // false: the fault did not take effect (verdict becomes unknown)
}

// Meta keys written in the OpRun event, read by checker and report.
const (
	MetaScenario = "scenario"
	MetaLock     = "lock"
	MetaBackend  = "backend"
	MetaTopology = "topology"
	MetaSeed     = "seed"
	MetaTTLms    = "ttl_ms"
	MetaResource = "resource" // counter | inventory | register
	MetaStock    = "stock"    // inventory initial stock per key
	MetaClients  = "clients"
	MetaKeys     = "keys"
	MetaFenced   = "fenced"  // true when the resource rejects stale fences
	MetaHonours  = "honours" // true when clients honour Lost/Deadline before acting
	MetaStartNS  = "start_unix_ns"
	// MetaRunID and MetaKeyPrefix name the run and the prefix of every key
	// it created at the server (keyspace.Prefix).
	MetaRunID     = "run_id"
	MetaKeyPrefix = "key_prefix"
	// MetaFaultsScheduled lists the firings the schedule holds, each
	// {"id", "kind", "at_ms"}: the checker compares it with the fault
	// events, so a firing that never happened is not silently missing.
	MetaFaultsScheduled = "faults_scheduled"
	// MetaServer is what the servers run ("redis 7.4.1", INFO server);
	// MetaImage the docker image they run from (docker backend).
	MetaServer = "server"
	MetaImage  = "image"
	// MetaClockUncertainty, in a history merged from workers (lockchaos
	// merge), maps each client id ("3") to the error bound (ns) of its
	// worker's clock against the server's TIME: an overlap between two
	// clients shorter than the sum of theirs is not evidence.
	MetaClockUncertainty = "clock_uncertainty_ns"
	// MetaClientWorker maps each client id to its worker's index: two
	// clients of one worker share a clock (no uncertainty between them).
	MetaClientWorker = "client_worker"
	// MetaWorkers, in a merged history, lists each worker's index, clients
	// and measured clock offset; in a worker's own history, MetaWorker is
	// its part of the run (runner.WorkerInfo).
	MetaWorkers = "workers"
	MetaWorker  = "worker"
	// MetaCommandRecord says whether the run recorded every node's commands
	// on its keys (OpCommand events): "monitor", or "off".
	MetaCommandRecord = "command_record"
)
