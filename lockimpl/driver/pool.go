package driver

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Warm drivers (issue 43): a driver process whose hello lists the reset
// extension is, once its client's run is over, reset (the driver closes
// its clients and forgets its state) and kept for the next run of the same
// lock file and options, which sends it a fresh init (new connections,
// connection name, key prefix and endpoints) and calibrates its clock
// again. A process is kept only when nothing but the workload touched it:
// no fault stopped, killed, terminated, skewed or blocked it, no call of it
// was cancelled or thrown in, no faked clock was preloaded, it is not
// broken, it has no request in flight, and neither lockchaos nor the
// driver believes it holds a lease. Everything else is stopped as before.
// Reuse is off unless a command turns it on (explore, matrix, the card);
// Drain stops every kept process, and one idle for PoolIdle is stopped by
// itself.
//
// A process that cannot be kept because a fault acted on it (or it was
// closed holding a lease) is replaced by a spare: a process of the same
// lock file and options started in the background at once, answered hello
// and waiting for its first init, as a process started for the next run
// would be, only sooner. Explore's schedules freeze, cancel, terminate and
// skew processes in most runs; a JVM's start then overlaps the rest of the
// run instead of opening the next (results.json: process_prestarted). A
// driver that broke by itself gets no spare.

// PoolIdle is how long a kept process waits for its next run.
const PoolIdle = 30 * time.Second

// poolMax bounds the processes kept per lock file and options.
const poolMax = 16

type pooled struct {
	p     *proc
	hello Reply
	timer *time.Timer
	// fresh: a spare, never initialised (it served no run).
	fresh bool
	// kept, cpu: when it was kept and the CPU time it had used by then
	// (busyIdle).
	kept time.Time
	cpu  time.Duration
}

// busyIdle says whether e, reset after a run, worked while it waited in
// the pool (a spare's start-up work, a JVM loading its classes, is its
// own): more CPU than a tenth of the time kept, beyond 100 ms (a Redisson
// driver reset after 20 acquires used 20 ms in the 3 s after its reset).
// Such a process still runs something of an earlier run (a RedissonRedLock
// interrupted in its lock script spins for the life of its JVM, 16 threads
// a third of a core each: an exploration of redisson-redlock that reused
// such processes ran at a load average of 40 on 2 cores), and would take
// the CPU of the runs it served: it is stopped instead.
func (e *pooled) busyIdle() bool {
	cpu, ok := procCPU(e.p.pid)
	return ok && cpu-e.cpu > time.Since(e.kept)/10+100*time.Millisecond
}

var pool struct {
	mu sync.Mutex
	// on counts the commands (in one process: tests run several) that
	// asked for reuse and have not ended.
	on   int
	idle map[string][]*pooled
	// starting counts the spares per key being started, spawning all of
	// them; spawned is signalled as each one ends.
	starting map[string]int
	spawning int
	spawned  *sync.Cond
}

// waitSpares waits until no spare is being started.
func waitSpares() {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for pool.spawning > 0 {
		pool.spawned.Wait()
	}
}

// Reuse(true) asks for warm drivers until the matching Reuse(false); when
// no command asks any more, the kept processes are stopped.
func Reuse(on bool) {
	pool.mu.Lock()
	if on {
		pool.on++
	} else if pool.on > 0 {
		pool.on--
	}
	off := pool.on == 0
	pool.mu.Unlock()
	if off {
		Drain()
	}
}

// Drain stops every kept driver process, and the spares being started.
func Drain() {
	waitSpares()
	pool.mu.Lock()
	var all []*pooled
	for k, ps := range pool.idle {
		all = append(all, ps...)
		delete(pool.idle, k)
	}
	pool.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range all {
		e.timer.Stop()
		wg.Add(1)
		go func() { defer wg.Done(); _ = e.p.stop() }()
	}
	wg.Wait()
}

func reuseOn() bool {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	return pool.on > 0
}

// poolKey names what makes two processes interchangeable: the lock file,
// its command, directory and environment, and the lock options (some
// choose what the process is before hello: a library version).
func poolKey(s *Spec, extra map[string]string) string {
	argv, _ := s.argv()
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return fmt.Sprintf("%s|%s|%q|%s|%q|%q", s.File, s.Name, argv, s.dir(), env, optionEnv(extra))
}

// take is a kept process for key (a reset one before a spare), nil when
// none is.
func take(key string) *pooled {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for {
		ps := pool.idle[key]
		if len(ps) == 0 {
			return nil
		}
		i := len(ps) - 1
		for j := i; j >= 0; j-- {
			if !ps[j].fresh {
				i = j
				break
			}
		}
		e := ps[i]
		pool.idle[key] = append(ps[:i:i], ps[i+1:]...)
		if !e.timer.Stop() || e.p.brokenErr() != nil {
			continue // its idle time is up (being stopped), or it died meanwhile
		}
		if !e.fresh && e.busyIdle() {
			go func() { _ = e.p.stop() }()
			continue
		}
		return e
	}
}

// spare starts, in the background, a process of s with the options extra
// for key, and keeps it unless reuse ended or the pool for key is full.
func spare(key string, s *Spec, extra map[string]string) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.on == 0 || len(pool.idle[key])+pool.starting[key] >= poolMax {
		return
	}
	if pool.starting == nil {
		pool.starting, pool.spawned = map[string]int{}, sync.NewCond(&pool.mu)
	}
	pool.starting[key]++
	pool.spawning++
	go func() {
		p, m, err := hello(s, s.Name, nil, extra)
		if err == nil && !keep(key, p, m, true) {
			_ = p.stop()
		}
		pool.mu.Lock()
		pool.starting[key]--
		pool.spawning--
		pool.spawned.Broadcast()
		pool.mu.Unlock()
	}()
}

// keep puts a reset process (fresh: a spare) in the pool; false when
// reuse is off or the pool for key is full (the caller stops it).
func keep(key string, p *proc, hello Reply, fresh bool) bool {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.on == 0 || len(pool.idle[key]) >= poolMax {
		return false
	}
	if pool.idle == nil {
		pool.idle = map[string][]*pooled{}
	}
	e := &pooled{p: p, hello: hello, fresh: fresh, kept: time.Now()}
	e.cpu, _ = procCPU(p.pid)
	e.timer = time.AfterFunc(PoolIdle, func() {
		pool.mu.Lock()
		ps := pool.idle[key]
		for i, x := range ps {
			if x == e {
				pool.idle[key] = append(ps[:i:i], ps[i+1:]...)
				break
			}
		}
		pool.mu.Unlock()
		_ = p.stop()
	})
	pool.idle[key] = append(pool.idle[key], e)
	return true
}

// recycle prepares a process for another client's run: what one run left
// on it (its pipe costs, its stopped time, its handlers) is cleared.
func (p *proc) recycle(events func(Reply), onReply func(*Request, Reply)) {
	p.pipeMu.Lock()
	p.pipe = nil
	p.pipeMu.Unlock()
	p.frozenNS.Store(0)
	p.stderr.mu.Lock()
	p.stderr.lines, p.stderr.part = nil, nil
	p.stderr.mu.Unlock()
	p.mu.Lock()
	p.events = events
	p.onReply = onReply
	p.mu.Unlock()
}

// reset asks the driver to forget its run: reset_ok, or an error.
func (p *proc) reset() error {
	p.mu.Lock()
	inFlight := len(p.pending)
	p.mu.Unlock()
	if inFlight > 0 {
		return fmt.Errorf("driver %s: %d requests in flight", p.name, inFlight)
	}
	m, err := p.call(chanCtx(nil), &Request{Type: "reset"}, StopGrace)
	if err != nil {
		return err
	}
	if m.Type != TypeResetOK {
		return fmt.Errorf("driver %s answered reset with %s %s", p.name, m.Type, strings.TrimSpace(m.Error))
	}
	return nil
}
