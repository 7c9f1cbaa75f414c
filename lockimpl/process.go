package lockimpl

// ProcessNeeds is what a lock whose clients each run in a process of their own
// (a driver lock: Java, Python, Node, or a Go program) needs of a run. The
// runner asks it before the workload starts, so that it never has to know
// which locks are drivers.
type ProcessNeeds interface {
	// OwnTraffic reports whether the process sends commands of its own
	// that do not pass the client's gate (a watchdog's renewals): a cut or
	// a stall of such a client goes through links (proxies) between its
	// process and the servers instead.
	OwnTraffic() bool
	// ClockPreload is the library the process is started under to give it
	// a clock of its own (libfaketime, for the client clock faults), or
	// why there is none on this machine.
	ClockPreload() (string, error)
	// BlockLoop is nil when the process can block its event loop (a
	// pause-client of mode block-loop) or cannot tell before its hello
	// (exec:), and says why not otherwise.
	BlockLoop() error
	// Cancel is nil when a cancelled context reaches the process's calls
	// (a driver with the protocol's cancel extension) or it cannot tell
	// before its hello (exec:), and says why not otherwise.
	Cancel() error
	// Extension is nil when the process handles the protocol's extension
	// x (throw, sigterm, ...) or cannot tell before its hello (exec:), and
	// says why not otherwise.
	Extension(x string) error
	// APIModes are the library idioms the process can call (the lock
	// option api), the default first; none for a lock with one way in.
	APIModes() []string
	// TasksPerProcess is how many clients share one process with the
	// scenario's lock options extra over the lock's own (1: a process
	// each), or the option's error.
	TasksPerProcess(extra map[string]string) (int, error)
}
