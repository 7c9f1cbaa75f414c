package driver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Several clients in one driver process (the lock option tasks=N, issue
// 41): applications share one library client among many threads or tasks
// (a web server's request handlers), and some bugs live only there: a
// helper that keeps the lease in a variable of the process, a library
// whose lock identity is per process. With tasks=N, workload clients
// N·g … N·g+N-1 of a run share driver process g: the first starts it, each
// sends its own init (its client id, key prefix and endpoints) and every
// request names its client. The driver connects its library once, at the
// first init, through that client's endpoints, and names the library's
// connections after the process (lc-<run>-p<g>): the servers' command
// record then ties a command to the process, not to a client, and the
// checks that name a command's client (a foreign DEL's culprit, a key
// learned from its writer's connection) do not for them, but for a write
// carrying the token a client's acquire reported (results.json's
// lock_config says attribution per process). Leases stay a client's own:
// the harness's history of acquires and releases, which the mutual
// exclusion, resource and liveness checks read, is per client as before.
//
// A fault on a client's process or its links (history.ClientProcessKinds)
// would hit every client in it, which a fault's record (one client) cannot
// say yet: the runner refuses such a scenario before it starts
// (sharedProcessFaults), and the Locker's fault methods refuse too.
// Shared processes are not kept warm for another run.

// TasksOption is the lock option that puts several clients in one driver
// process. lockchaos reads it; the driver never sees it.
const TasksOption = "tasks"

// Tasks is the tasks option's value in opts (1 when absent), or an error
// naming it.
func Tasks(opts map[string]string) (int, error) {
	v, ok := opts[TasksOption]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("lock option %s=%s: want a number of clients per driver process, 1-64", TasksOption, v)
	}
	return n, nil
}

// shared is one driver process that several clients of a run share.
type shared struct {
	key   string
	tasks int
	ready chan struct{} // closed once started (err set on failure)
	err   error
	p     *proc
	hello Reply

	mu      sync.Mutex
	lockers map[int]*Locker // attached, by client id
	closed  int             // how many detached
	n       int             // how many attached so far
}

var (
	sharedMu sync.Mutex
	shareds  = map[string]*shared{}
)

// procConnName is the name of process g's library connections: the
// client's connection name with its client part (-c<id>) made the
// process's (-p<g>), which cluster.ClientOfConnName ties to no client.
func procConnName(client string, g int) string {
	i := strings.LastIndex(client, "-c")
	if i < 0 {
		return ""
	}
	return client[:i] + "-p" + strconv.Itoa(g)
}

// newShared makes l a client of its group's shared process, starting the
// process when l is the group's first client.
func (l *Locker) newShared(s *Spec, extra map[string]string, tasks int) error {
	env := l.env
	if env.ClockFile != "" {
		return fmt.Errorf("lock option %s=%d: client %d's driver process would run under a faked clock, which every client in it would share: not supported", TasksOption, tasks, env.ClientID)
	}
	g := env.ClientID / tasks
	key := fmt.Sprintf("%s\x00%s\x00%d", s.Name, env.KeyPrefix, g)
	sharedMu.Lock()
	sh, found := shareds[key]
	if !found {
		sh = &shared{key: key, tasks: tasks, ready: make(chan struct{}), lockers: map[int]*Locker{}}
		shareds[key] = sh
	}
	sh.n++
	sharedMu.Unlock()
	if !found {
		sh.p, sh.hello, sh.err = hello(s, fmt.Sprintf("%s (process %d)", s.Name, g), sh.event, extra)
		if sh.err == nil && !slices.Contains(sh.hello.Extensions, "tasks") {
			// Stopped by the last detach, as any shared process.
			sh.err = fmt.Errorf("lock option %s=%d: driver %s (%s %s) runs one client a process (its hello does not list the tasks extension)", TasksOption, tasks, s.Name, sh.hello.Library, sh.hello.Version)
		}
		if sh.err == nil {
			sh.p.cancels.Store(slices.Contains(sh.hello.Extensions, "cancel"))
			sh.p.mu.Lock()
			sh.p.onReply = sh.onReply
			sh.p.mu.Unlock()
		}
		close(sh.ready)
	}
	<-sh.ready
	if sh.err != nil {
		sh.detach(nil)
		return sh.err
	}
	l.sh, l.p, l.hello = sh, sh.p, sh.hello
	sh.mu.Lock()
	sh.lockers[env.ClientID] = l
	sh.mu.Unlock()
	if err := l.checkOptions(extra); err != nil {
		sh.detach(l)
		return err
	}
	if err := l.init(extra, procConnName(env.ConnName, g)); err != nil {
		sh.detach(l)
		return err
	}
	if err := l.calibrate(); err != nil {
		sh.detach(l)
		return err
	}
	return nil
}

// onReply hands an answer to the client that asked.
func (sh *shared) onReply(req *Request, m Reply) {
	if req.Client == nil {
		return
	}
	sh.mu.Lock()
	l := sh.lockers[*req.Client]
	sh.mu.Unlock()
	if l != nil {
		l.onReply(req, m)
	}
}

// event hands a pushed event to every client: each keeps only its own
// leases' (lease names are the process's, unique in it).
func (sh *shared) event(m Reply) {
	sh.mu.Lock()
	ls := make([]*Locker, 0, len(sh.lockers))
	for _, l := range sh.lockers {
		ls = append(ls, l)
	}
	sh.mu.Unlock()
	for _, l := range ls {
		l.event(m)
	}
}

// detach ends l's part (nil: a client whose start failed); the last one
// stops the process.
func (sh *shared) detach(l *Locker) error {
	sh.mu.Lock()
	if l != nil {
		delete(sh.lockers, l.env.ClientID)
	}
	sh.closed++
	sharedMu.Lock()
	last := sh.closed == sh.n
	if last {
		delete(shareds, sh.key)
	}
	sharedMu.Unlock()
	sh.mu.Unlock()
	if last && sh.p != nil {
		return sh.p.stop()
	}
	return nil
}

// clients lists the ids of the clients in the process, sorted.
func (sh *shared) clients() []int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ids := make([]int, 0, len(sh.lockers))
	for id := range sh.lockers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// errShared is the error of a fault on a shared process.
func (l *Locker) errShared(what string) error {
	return fmt.Errorf("driver %s: client %d's process is shared with clients %v (lock option %s): %s would hit every one of them, which the fault's record cannot say",
		l.spec.Name, l.env.ClientID, l.sh.clients(), TasksOption, what)
}
