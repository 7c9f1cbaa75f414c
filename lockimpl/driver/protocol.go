// Package driver runs a lock written in any language: a driver process that
// lockchaos starts, one per workload client, and talks to in JSON lines over
// its stdin and stdout (docs/driver-protocol.md). Its Locker is a
// lockimpl.Locker like any other, and a lockimpl.Process, so the client
// faults stop, continue and kill the driver's process group together with
// the harness side of the client. Lock files (Spec) name a driver's command,
// directory, environment and options; Discover finds the shipped ones under
// drivers/<lang>/ and Resolve turns a --lock value (a name, exec:<command>
// or a lock file's path) into a registered lock.
package driver

// Protocol is the protocol version this package speaks.
const Protocol = 1

// Request is one line lockchaos writes to a driver (every field of every
// request type; a driver reads the ones of its type).
type Request struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
	// hello
	Protocol int `json:"protocol,omitempty"`
	// init
	Client    *int          `json:"client,omitempty"`
	ConnName  string        `json:"conn_name,omitempty"`
	KeyPrefix string        `json:"key_prefix,omitempty"`
	Topology  string        `json:"topology,omitempty"`
	Endpoints []EndpointMsg `json:"endpoints,omitempty"`
	Options   *InitOptions  `json:"options,omitempty"`
	// acquire, release, extend
	Key    string `json:"key,omitempty"`
	TTLMS  *int64 `json:"ttl_ms,omitempty"`
	WaitMS *int64 `json:"wait_ms,omitempty"`
	Lease  string `json:"lease,omitempty"`
	// release (the throw extension): the application's critical section
	// raised this; the driver releases on its idiom's exception path.
	Throw string `json:"throw,omitempty"`
	// block_loop (an extension)
	MS *int64 `json:"ms,omitempty"`
	// cancel (an extension): the id of the request to cancel
	Of int64 `json:"of,omitempty"`
}

// EndpointMsg is one endpoint of init.
type EndpointMsg struct {
	Addr       string   `json:"addr"`
	MasterName string   `json:"master_name,omitempty"`
	Sentinels  []string `json:"sentinels,omitempty"`
	Cluster    []string `json:"cluster,omitempty"`
	Password   string   `json:"password,omitempty"`
}

// InitOptions are init's lock options, in milliseconds.
type InitOptions struct {
	TTLMS            int64             `json:"ttl_ms"`
	AcquireTimeoutMS int64             `json:"acquire_timeout_ms"`
	CommandTimeoutMS int64             `json:"command_timeout_ms"`
	RetryDelayMS     int64             `json:"retry_delay_ms"`
	RenewIntervalMS  int64             `json:"renew_interval_ms"`
	Extra            map[string]string `json:"extra,omitempty"`
}

// Reply is one line a driver writes: a reply (InReplyTo set) or a pushed
// event (lost, renewal).
type Reply struct {
	InReplyTo int64  `json:"in_reply_to,omitempty"`
	Type      string `json:"type"`
	// hello_ok
	Protocol     int      `json:"protocol,omitempty"`
	Name         string   `json:"name,omitempty"`
	Library      string   `json:"library,omitempty"`
	Version      string   `json:"version,omitempty"`
	Language     string   `json:"language,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Reports      []string `json:"reports,omitempty"`
	Options      []string `json:"options,omitempty"`
	// Extensions are the optional requests and signals the driver
	// handles (block_loop, cancel, throw, sigterm).
	Extensions []string `json:"extensions,omitempty"`
	// APIs are the library's idioms the driver can call (its API modes,
	// the lock option api), the default first.
	APIs []string `json:"apis,omitempty"`
	// released, not_owner, indeterminate of a release with throw (the
	// throw extension): the exception came out of the idiom to the
	// application (false: the idiom swallowed it).
	Raised *bool `json:"raised,omitempty"`
	// acquired, extended, renewal, lost
	Lease      string  `json:"lease,omitempty"`
	Token      string  `json:"token,omitempty"`
	Depth      int     `json:"depth,omitempty"`
	DeadlineNS *int64  `json:"deadline_ns,omitempty"`
	Fence      *uint64 `json:"fence,omitempty"`
	// acquired: the Redis keys the acquire created or wrote, when the
	// library names its own keys rather than the key it was given
	// (docs/driver-protocol.md, "A library that names its own keys").
	Keys []string `json:"keys,omitempty"`
	// every reply: the driver's monotonic clock around the library call
	T0 int64 `json:"t0,omitempty"`
	T1 int64 `json:"t1,omitempty"`
	// error, indeterminate
	Error string `json:"error,omitempty"`
	// error of init: the driver could not reach the servers (connecting
	// failed or timed out), as against an option or topology it refuses.
	Unavailable bool `json:"unavailable,omitempty"`
	// clock_ok
	MonoNS int64 `json:"mono_ns,omitempty"`
	WallNS int64 `json:"wall_ns,omitempty"`
	// cancel_ok: the cancel reached the request before it answered
	Delivered bool `json:"delivered,omitempty"`
	// lost, renewal
	T       int64  `json:"t,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// Reply and event types.
const (
	TypeHelloOK      = "hello_ok"
	TypeInitOK       = "init_ok"
	TypeAcquired     = "acquired"
	TypeNotAcquired  = "not_acquired"
	TypeReleased     = "released"
	TypeNotOwner     = "not_owner"
	TypeExtended     = "extended"
	TypeIndetermined = "indeterminate"
	TypeError        = "error"
	TypePong         = "pong"
	TypeClockOK      = "clock_ok"
	TypeShutdownOK   = "shutdown_ok"
	TypeResetOK      = "reset_ok" // the reset extension (warm drivers)
	TypeBlockLoopOK  = "block_loop_ok"
	TypeCancelOK     = "cancel_ok"
	TypeCancelled    = "cancelled" // a call ended by its cancel (the cancel extension)
	TypeLost         = "lost"
	TypeRenewal      = "renewal"
)

// Capabilities a hello may declare.
var knownCapabilities = []string{"reentrant", "renews", "multi-node", "fenced", "needs-replicas", "no-cluster"}
