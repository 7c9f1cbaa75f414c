package workloads

import (
	"strconv"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// Clients that share a driver process (a driver lock's option tasks,
// lockimpl/driver/tasks.go) share its library's connections, which carry
// the process's name (lc-<run>-p<g>), not a client's: the servers' command
// record alone cannot tie a command to a client. CallerOf does, where one
// client can have sent it: the one client of the process with a call in
// flight at the command's time (a delete: a release; anything else: an
// acquire or a release), within callSlack. A command no call or several
// calls of the process could have sent stays the process's (client -1),
// as a library's own commands (a watchdog's renewals) do; the checks then
// tie a write to a client by its token where an acquire reported it.

// callSlack is how far outside a call's span a command's time may fall
// (the record's stamps are the server's clock, mapped to the run's).
const callSlack = int64(2e6)

// callLogSize bounds the calls each client keeps.
const callLogSize = 32

// callLog is one client's recent acquire and release calls (run times).
type callLog struct {
	mu    sync.Mutex
	calls [callLogSize]callSpan
	n     int // calls begun, the latest at (n-1)%callLogSize
}

type callSpan struct {
	release bool
	t0, t1  int64 // t1 0: in flight
}

func (l *callLog) begin(release bool, t int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.calls[l.n%callLogSize] = callSpan{release: release, t0: t}
	l.n++
	l.mu.Unlock()
}

func (l *callLog) end(t int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.n > 0 {
		l.calls[(l.n-1)%callLogSize].t1 = t
	}
	l.mu.Unlock()
}

// during says whether a call of the kind (releases only, or any) spans t.
func (l *callLog) during(t int64, releases bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := max(0, l.n-callLogSize); i < l.n; i++ {
		c := l.calls[i%callLogSize]
		if releases && !c.release {
			continue
		}
		if t >= c.t0-callSlack && (c.t1 == 0 || t <= c.t1+callSlack) {
			return true
		}
	}
	return false
}

// sharing returns the clients per process when the lock's clients share
// driver processes (1 otherwise).
func sharing(lock string, opts lockimpl.Options) int {
	p, ok := lockimpl.ProcessNeedsOf(lock)
	if !ok {
		return 1
	}
	n, err := p.TasksPerProcess(opts.Extra)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// CallerOf is the client that sent cmd, recorded at run time t on a
// connection named name, when the connection is a shared process's of
// this run and one client of it can have sent it; -1 otherwise.
func (w *Workload) CallerOf(name string, t int64, cmd *history.Command) int {
	if w.tasks < 2 || w.runID == "" {
		return -1
	}
	rest, ok := strings.CutPrefix(name, "lc-"+w.runID+"-p")
	if !ok {
		return -1
	}
	g, err := strconv.Atoi(rest)
	if err != nil || g < 0 {
		return -1
	}
	releases := deletes(cmd)
	who := -1
	for id := g * w.tasks; id < (g+1)*w.tasks; id++ {
		c := w.byID[id]
		if c == nil || !c.calls.during(t, releases) {
			continue
		}
		if who >= 0 {
			return -1 // two clients' calls: either can have sent it
		}
		who = id
	}
	return who
}

// deletes says whether cmd (or a command its script ran) deletes a key.
func deletes(cmd *history.Command) bool {
	del := func(args []string) bool {
		if len(args) == 0 {
			return false
		}
		switch strings.ToUpper(args[0]) {
		case "DEL", "UNLINK", "GETDEL", "HDEL":
			return true
		}
		return false
	}
	if del(cmd.Args) {
		return true
	}
	for _, in := range cmd.Inner {
		if del(in) {
			return true
		}
	}
	return false
}
