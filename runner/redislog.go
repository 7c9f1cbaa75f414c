package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLogFile is the file in a run directory that holds go-redis's own
// log lines (reconnects, Sentinel's choice of master) written during the run.
const RedisLogFile = "go-redis.log"

// go-redis logs through one process-wide logger (redis.SetLogger), which by
// default writes to stderr: in a lock author's `go test` (locktest) the
// lines of a sentinel failover buried the test output. The router sends each
// line to the run directory of every run in progress; when several runs are
// in progress at once (a matrix running cells in parallel, parallel tests) a line
// cannot be told apart, so each of their logs gets it, marked. With no run
// in progress the line is dropped (a library prints nothing), unless
// LOCKCHAOS_DEBUG is set, which writes every line to stderr as well.
var redisLogs = &redisRouter{runs: map[int]*runLog{}}

// init installs the router before any goroutine can read go-redis's logger
// (SetLogger is a plain write of a global).
func init() { redis.SetLogger(redisLogs) }

type redisRouter struct {
	mu   sync.Mutex
	next int
	runs map[int]*runLog
}

type runLog struct {
	path string
	f    *os.File // opened at the first line: most runs have none
}

// Printf is go-redis's logging interface.
func (r *redisRouter) Printf(_ context.Context, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	if os.Getenv("LOCKCHAOS_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, "redis:", line)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	mark := ""
	if len(r.runs) > 1 {
		mark = fmt.Sprintf("[one of %d runs in this process] ", len(r.runs))
	}
	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	for _, l := range r.runs {
		if l.f == nil {
			f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				continue // the run directory is gone: nothing to keep it in
			}
			l.f = f
		}
		_, _ = fmt.Fprintf(l.f, "%s %s%s\n", stamp, mark, line)
	}
}

// attach routes go-redis's lines to dir/RedisLogFile until the returned
// function is called.
func (r *redisRouter) attach(dir string) (detach func()) {
	r.mu.Lock()
	id := r.next
	r.next++
	r.runs[id] = &runLog{path: filepath.Join(dir, RedisLogFile)}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if l := r.runs[id]; l != nil && l.f != nil {
			_ = l.f.Close()
		}
		delete(r.runs, id)
	}
}
