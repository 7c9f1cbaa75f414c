package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Locker is one client's driver process behind the lockimpl.Locker API.
type Locker struct {
	p     *proc
	spec  *Spec
	hello Reply
	env   lockimpl.Env
	opts  lockimpl.Options
	// off maps the driver's monotonic nanoseconds to this process's
	// monotonic clock: base + (driver time + off), measured by pings at
	// start to within rtt/2 (the same clock, CLOCK_MONOTONIC, read by two
	// processes: no drift to correct).
	base time.Time
	off  int64
	rtt  time.Duration
	// mono maps the driver's monotonic times to the harness's clock: by
	// off from calibrate, again after each change of a faked monotonic
	// clock (SetProcessClock).
	mono atomic.Pointer[monoMap]
	// fc is the driver's libfaketime when Env.ClockFile asked for it
	// (fcWhy: why it has none).
	fc    *fakeClock
	fcWhy error

	mu     sync.Mutex
	leases map[string]*lease
	// poolKey: where Close keeps the process when reuse is on (pool.go),
	// extra its options (for a spare); warm: the process served an
	// earlier run; prestarted: a spare, started before this run asked.
	poolKey    string
	extra      map[string]string
	warm       bool
	prestarted bool
	// sh: the process this client shares with others of its run (lock
	// option tasks, tasks.go); nil when the process is its own.
	sh *shared
}

var (
	_ lockimpl.Locker        = (*Locker)(nil)
	_ lockimpl.Process       = (*Locker)(nil)
	_ lockimpl.Configured    = (*Locker)(nil)
	_ lockimpl.Reentrant     = (*Locker)(nil)
	_ lockimpl.ProcessClock  = (*Locker)(nil)
	_ lockimpl.LoopBlocker   = (*Locker)(nil)
	_ lockimpl.CallCanceller = (*Locker)(nil)
)

// hello starts the driver of s and checks its hello.
func hello(s *Spec, name string, events func(Reply), extra map[string]string, env ...string) (*proc, Reply, error) {
	p, err := start(s, name, events, extra, env...)
	if err != nil {
		return nil, Reply{}, err
	}
	m, err := p.call(context.Background(), &Request{Type: "hello", Protocol: Protocol}, StartTimeout)
	if err == nil {
		err = checkHello(s, name, m)
	}
	if err != nil {
		if e, ok := err.(*Error); ok && e.Driver == "" {
			e.Driver = name
		}
		_ = p.stop()
		return nil, Reply{}, err
	}
	return p, m, nil
}

func checkHello(s *Spec, name string, m Reply) error {
	line := fmt.Sprintf("%+v", m)
	switch {
	case m.Type != TypeHelloOK:
		return &Error{Driver: name, Msg: "answered hello with " + m.Type + " " + m.Error, Line: line}
	case m.Protocol != Protocol:
		return &Error{Driver: name, Msg: fmt.Sprintf("speaks protocol %d, lockchaos %d", m.Protocol, Protocol)}
	case m.Name == "":
		return &Error{Driver: name, Msg: "hello_ok without a name"}
	}
	if _, err := infoOf(m.Name, m.Capabilities); err != nil {
		return &Error{Driver: name, Msg: "hello_ok: " + err.Error()}
	}
	if s.Capabilities != nil && !sameCaps(*s.Capabilities, m.Capabilities) {
		return &Error{Driver: name, Msg: fmt.Sprintf("its lock file %s says capabilities %v, its hello %v", s.File, *s.Capabilities, m.Capabilities)}
	}
	if s.Library != "" && m.Library != s.Library {
		return &Error{Driver: name, Msg: fmt.Sprintf("its lock file %s says library %q, its hello %q", s.File, s.Library, m.Library)}
	}
	if s.Extensions != nil && !sameCaps(s.Extensions, m.Extensions) {
		return &Error{Driver: name, Msg: fmt.Sprintf("its lock file %s says extensions %v, its hello %v", s.File, s.Extensions, m.Extensions)}
	}
	if s.APIs != nil && !slices.Equal(s.APIs, m.APIs) {
		return &Error{Driver: name, Msg: fmt.Sprintf("its lock file %s says apis %v, its hello %v (the same modes, the default first)", s.File, s.APIs, m.APIs)}
	}
	if len(m.APIs) > 0 && !slices.Contains(m.Options, "api") {
		return &Error{Driver: name, Msg: fmt.Sprintf("hello_ok: apis %v but no option api to choose one", m.APIs)}
	}
	for _, r := range m.Reports {
		if !slices.Contains([]string{"deadline", "lost", "fence", "renewals"}, r) {
			return &Error{Driver: name, Msg: fmt.Sprintf("hello_ok: reports %q: not one of deadline, lost, fence, renewals", r)}
		}
	}
	return nil
}

// Probe starts the driver of s for its hello, then stops it.
func Probe(s *Spec) (Reply, error) {
	p, m, err := hello(s, s.label(), nil, nil)
	if err != nil {
		return Reply{}, err
	}
	return m, p.stop()
}

// New starts one client's driver: hello, the options checked against the
// ones it declares, init with the client's endpoints (its link proxies),
// connection name and key prefix, and pings that map its clock to the
// client's.
func New(s *Spec, env lockimpl.Env) (lockimpl.Locker, error) {
	l := &Locker{spec: s, env: env, opts: env.Options.WithDefaults(), leases: map[string]*lease{}}
	if l.env.Clock == nil {
		l.env.Clock = lockimpl.RealClock{}
	}
	extra := map[string]string{}
	for k, v := range s.Options {
		extra[k] = v
	}
	for k, v := range env.Options.Extra {
		extra[k] = v
	}
	tasks, err := Tasks(extra)
	if err != nil {
		return nil, err
	}
	delete(extra, TasksOption)
	if tasks > 1 {
		if err := l.newShared(s, extra, tasks); err != nil {
			return nil, err
		}
		return l, nil
	}
	var fenv []string
	if env.ClockFile != "" {
		if l.fc, l.fcWhy = newFakeClock(s, env.ClockFile); l.fc != nil {
			fenv = l.fc.env(s)
			l.fc.started = time.Now()
		}
	}
	if l.fc == nil && env.ClockFile == "" && reuseOn() {
		l.poolKey, l.extra = poolKey(s, extra), extra
		if e := take(l.poolKey); e != nil {
			e.p.recycle(l.event, l.onReply)
			if err := l.begin(e.p, e.hello, extra); err == nil {
				l.warm, l.prestarted = !e.fresh, e.fresh
				return l, nil
			}
			// A kept process that cannot start this run (stopped by
			// begin): a fresh one, as without reuse.
		}
	}
	p, m, err := hello(s, s.Name, l.event, extra, fenv...)
	if err != nil {
		return nil, err
	}
	if err := l.begin(p, m, extra); err != nil {
		return nil, err
	}
	return l, nil
}

// begin makes p (hello answered m) this Locker's driver: the options
// checked against hello's, init, calibration. On an error p is stopped.
func (l *Locker) begin(p *proc, m Reply, extra map[string]string) error {
	l.p, l.hello = p, m
	p.cancels.Store(slices.Contains(m.Extensions, "cancel"))
	p.mu.Lock()
	p.onReply = l.onReply
	p.mu.Unlock()
	err := l.checkOptions(extra)
	if err == nil {
		err = l.init(extra, l.env.ConnName)
	}
	if err == nil {
		err = l.calibrate()
	}
	if err != nil {
		_ = p.stop()
	}
	return err
}

// checkOptions refuses a lock option the driver's hello does not declare,
// and an API mode it does not offer.
func (l *Locker) checkOptions(extra map[string]string) error {
	s, m := l.spec, l.hello
	for _, k := range sortedKeys(extra) {
		if !slices.Contains(m.Options, k) {
			return fmt.Errorf("lock option %s=%s: driver %s (%s %s) understands %s", k, extra[k], s.Name, m.Library, m.Version, optList(m.Options))
		}
	}
	if v, ok := extra["api"]; ok && len(m.APIs) > 0 && !slices.Contains(m.APIs, v) {
		return fmt.Errorf("lock option api=%s: driver %s (%s %s) calls its library in modes %s (the default first)", v, s.Name, m.Library, m.Version, strings.Join(m.APIs, ", "))
	}
	return nil
}

// init sends the client's init: its id, connection name, key prefix,
// endpoints (its link proxies) and the lock's options.
func (l *Locker) init(extra map[string]string, connName string) error {
	s, env, o := l.spec, l.env, l.opts
	client := env.ClientID
	req := &Request{Type: "init", Client: &client, ConnName: connName, KeyPrefix: env.KeyPrefix, Topology: topology(env.Endpoints),
		Options: &InitOptions{TTLMS: o.TTL.Milliseconds(), AcquireTimeoutMS: o.AcquireTimeout.Milliseconds(), CommandTimeoutMS: o.CommandTimeout.Milliseconds(),
			RetryDelayMS: o.RetryDelay.Milliseconds(), RenewIntervalMS: o.RenewInterval.Milliseconds(), Extra: extra}}
	for _, ep := range env.Endpoints {
		req.Endpoints = append(req.Endpoints, EndpointMsg{Addr: ep.Addr, MasterName: ep.MasterName, Sentinels: ep.SentinelAddrs, Cluster: ep.ClusterAddrs, Password: ep.Password})
	}
	r, err := l.p.call(context.Background(), req, StartTimeout)
	if err == nil && r.Type != TypeInitOK {
		err = &Error{Driver: s.Name, Msg: "answered init with " + r.Type + ": " + r.Error, Unavailable: r.Unavailable}
	}
	return err
}

func optList(o []string) string {
	if len(o) == 0 {
		return "no options"
	}
	return "only " + strings.Join(o, ", ")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// topology is init's topology for the endpoints.
func topology(eps []lockimpl.Endpoint) string {
	switch {
	case len(eps) > 1:
		return "independent"
	case len(eps) == 1 && eps[0].MasterName != "":
		return "sentinel"
	case len(eps) == 1 && len(eps[0].ClusterAddrs) > 0:
		return "cluster"
	}
	return "single"
}

// calibrate measures the offset of the driver's monotonic clock to the
// client's: of 7 pings, the one with the shortest round trip, its midpoint
// against the midpoint of the driver's t0 and t1.
func (l *Locker) calibrate() error {
	best := time.Duration(-1)
	l.base = time.Now()
	for i := 0; i < 7; i++ {
		a := time.Now()
		m, err := l.p.call(context.Background(), &Request{Type: "ping"}, ReplyMargin)
		b := time.Now()
		if err != nil {
			return err
		}
		if m.Type != TypePong || m.T1 < m.T0 {
			return &Error{Driver: l.spec.Name, Msg: fmt.Sprintf("answered ping with %s (t0 %d, t1 %d): want pong with t1 >= t0", m.Type, m.T0, m.T1)}
		}
		if rtt := b.Sub(a); best < 0 || rtt < best {
			best = rtt
			mid := int64(a.Sub(l.base) + rtt/2)
			l.off = mid - (m.T0+m.T1)/2
		}
	}
	l.rtt = best
	l.mono.Store(&monoMap{anchor: l.base, m: -l.off, rate: 1})
	return nil
}

// at is a driver time on the client's clock as it reads now: the time
// from now to the driver's time, by the offset measured at start (and
// again after each change of a faked monotonic clock, SetProcessClock),
// added to the client's clock. A client clock fault (a skew of Env.Clock)
// moves it as it moves an in-process lock's times, taken by that clock;
// the driver's monotonic clock is real unless libfaketime fakes it too.
// It does not depend on how long a line took to arrive (a reply late by a
// loaded scheduler).
func (l *Locker) at(ns int64) time.Time {
	return l.env.Clock.Now().Add(time.Until(l.real(ns)))
}

// deadline is a driver's deadline_ns on the client's clock, early by the
// offset's uncertainty (rtt/2): a holder never believes longer than the
// driver's lock said. (A deadline taken as the validity left at the
// reply's t1 from when the reply arrived believed too long by the reply's
// delay: 6 ms under load, and a client wrote after its key expired in
// slow-acquire-reply.)
func (l *Locker) deadline(ns int64) time.Time { return l.at(ns).Add(-l.rtt / 2) }

// PipeCost is the protocol's cost per answered request so far (ns): the
// round trip less the driver's own time in it (nil before any).
func (l *Locker) PipeCost() *hdrhistogram.Histogram { return l.p.pipeCost() }

// CancelsCalls says whether a cancelled context reaches the driver's call
// (its hello lists the cancel extension).
func (l *Locker) CancelsCalls() bool { return l.hasExtension("cancel") }

// hasExtension: the driver's hello declares the optional request.
func (l *Locker) hasExtension(x string) bool { return slices.Contains(l.hello.Extensions, x) }

// Reentrant reports the driver's capability.
func (l *Locker) Reentrant() bool { return slices.Contains(l.hello.Capabilities, "reentrant") }

// Config is the lock's configuration for results.json: the library and the
// version its driver runs, and how lockchaos talks to it.
func (l *Locker) Config() map[string]any {
	h := l.hello
	c := map[string]any{"driver": h.Name, "library": h.Library, "version": h.Version, "language": h.Language,
		"protocol": h.Protocol, "capabilities": h.Capabilities, "reports": h.Reports, "command": l.spec.Command,
		"clock_ping_rtt_us": l.rtt.Microseconds(), "process_reused": l.warm, "process_prestarted": l.prestarted}
	if l.spec.File != "" {
		c["lock_file"] = l.spec.File
	}
	if len(h.Extensions) > 0 {
		c["extensions"] = h.Extensions
	}
	if l.sh != nil {
		c["tasks_per_process"] = l.sh.tasks
		c["command_attribution"] = "per process: the clients of a process share its library's connections, named lc-<run>-p<process>; the checks tie a write there to the client whose acquire reported its token, and a delete to no client"
	}
	switch {
	case l.fc != nil:
		c["clock"] = map[string]any{"libfaketime": l.fc.lib, "timestamp_file": l.fc.file, "monotonic_faked": l.fc.mono}
	case l.fcWhy != nil:
		c["clock"] = map[string]any{"error": l.fcWhy.Error()}
	}
	return c
}

// Acquire waits up to the acquire timeout.
func (l *Locker) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return l.acquire(ctx, key, l.opts.AcquireTimeout)
}

// TryAcquire makes one attempt (wait_ms 0).
func (l *Locker) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return l.acquire(ctx, key, 0)
}

func ms(d time.Duration) *int64 { v := d.Milliseconds(); return &v }

// bound is a request's own bound (its wait plus two command timeouts)
// plus the margin.
func (l *Locker) bound(wait time.Duration) time.Duration {
	return wait + 2*l.opts.CommandTimeout + ReplyMargin
}

func (l *Locker) acquire(ctx context.Context, key string, wait time.Duration) (lockimpl.Lease, error) {
	m, err := l.gated(ctx, &Request{Type: "acquire", Key: key, TTLMS: ms(l.opts.TTL), WaitMS: ms(wait)}, l.bound(wait), TypeAcquired, TypeNotAcquired)
	if err != nil {
		return nil, err
	}
	switch m.Type {
	case TypeAcquired:
		l.mu.Lock()
		ls := l.leases[m.Lease] // onReply made it
		l.mu.Unlock()
		if m.Lease == "" || ls == nil {
			l.p.fail(&Error{Msg: "acquired without a lease", Line: fmt.Sprintf("%+v", m)})
			return nil, l.p.brokenErr()
		}
		return ls, nil
	case TypeNotAcquired:
		return nil, lockimpl.ErrNotAcquired
	case TypeIndetermined, TypeError, TypeCancelled:
		return nil, l.indeterminate(m)
	}
	return nil, l.protocolBreak("acquire", m)
}

// onReply keeps the leases as the driver's lines come, in their order:
// an acquired line makes its lease before the events that follow it are
// handled, a definite release ends it.
func (l *Locker) onReply(req *Request, m Reply) {
	switch {
	case req.Type == "acquire" && m.Type == TypeAcquired && m.Lease != "":
		ls := &lease{l: l, name: m.Lease, key: req.Key, token: m.Token, depth: max(m.Depth, 1), keys: m.Keys}
		if m.Fence != nil {
			ls.fence, ls.fenced = *m.Fence, true
		}
		if m.DeadlineNS != nil {
			ls.deadline = l.deadline(*m.DeadlineNS)
		}
		if slices.Contains(l.hello.Reports, "lost") {
			ls.lost = make(chan struct{})
		}
		l.mu.Lock()
		l.leases[m.Lease] = ls
		l.mu.Unlock()
	case req.Type == "release":
		l.mu.Lock()
		delete(l.leases, req.Lease)
		l.mu.Unlock()
	}
}

// gated sends a request through the harness's client gate (Env.Gate), as
// an in-process lock's command passes it: before, it waits out a freeze of
// the client and fails when the client crashed or is cut off (reset or
// drop, on a single node), or is stalled; after, an answer of type ok
// (the lock taken or freed) or refused (the server answered) fires the
// in-acquire and in-release points. It gates what lockchaos asks the
// driver, not the commands the driver's library sends on its own
// (renewals): those meet only the link faults of its proxies.
func (l *Locker) gated(ctx context.Context, req *Request, bound time.Duration, ok, refused string) (Reply, error) {
	g := l.env.Gate
	if g == nil {
		return l.call(ctx, req, bound)
	}
	node := 0
	if len(l.env.Endpoints) > 1 {
		node = -1 // a multi-node lock's request goes to every node: no one node's cut stops it
	}
	if err := g.Before(ctx, node, req.Type); err != nil {
		var cut *net.OpError
		if req.Type == "release" && errors.As(err, &cut) {
			// A release over a cut link still runs in the library: its
			// user's release() stops the renewal timer whatever the network
			// does, and the driver's links are cut too. Refused here alone,
			// the library would renew that lease for ever (redis-semaphore's
			// Mutex: no acquire succeeded again, docs/findings.md). The
			// outcome stays the gate's: the command could not be sent.
			_, _ = l.call(ctx, req, bound) // the gate's error is the outcome
		}
		return Reply{}, err
	}
	m, err := l.call(ctx, req, bound)
	g.After(node, err == nil && (m.Type == ok || m.Type == refused), err == nil && m.Type == ok)
	return m, err
}

// call sends one of the client's requests: in a shared process it names
// the client.
func (l *Locker) call(ctx context.Context, req *Request, bound time.Duration) (Reply, error) {
	if l.sh != nil {
		c := l.env.ClientID
		req.Client = &c
	}
	return l.p.call(ctx, req, bound)
}

func (l *Locker) protocolBreak(req string, m Reply) error {
	l.p.fail(&Error{Msg: "answered " + req + " with " + m.Type, Line: fmt.Sprintf("%+v", m)})
	return l.p.brokenErr()
}

// event handles a pushed event: lost closes the lease's Lost channel and
// notes the loss; renewal notes the attempt (Env.Note).
func (l *Locker) event(m Reply) {
	l.mu.Lock()
	ls := l.leases[m.Lease]
	l.mu.Unlock()
	if ls == nil {
		return // a lease released already (a renewal racing its release)
	}
	switch m.Type {
	case TypeLost:
		ls.once.Do(func() {
			if ls.lost != nil {
				close(ls.lost)
			}
		})
		l.note(lockimpl.Note{Kind: lockimpl.NoteLost, Key: ls.key, Token: ls.token, Start: l.at(m.T), End: l.at(m.T), Err: lockimpl.ErrLeaseLost})
	case TypeRenewal:
		n := lockimpl.Note{Kind: lockimpl.NoteRenew, Key: ls.key, Token: ls.token, Start: l.at(m.T0), End: l.at(m.T1)}
		switch m.Outcome {
		case "ok":
			if m.DeadlineNS != nil {
				ls.setDeadline(l.deadline(*m.DeadlineNS))
			}
		case "not_owner":
			n.Err = lockimpl.ErrNotOwner
		default:
			n.Err = fmt.Errorf("%w: driver renewal: %s %s", lockimpl.ErrIndeterminate, m.Outcome, m.Error)
		}
		l.note(n)
	}
}

func (l *Locker) note(n lockimpl.Note) {
	if l.env.Note != nil {
		l.env.Note(n)
	}
}

// Extend extends a lease by ttl where the driver's library can.
func (l *Locker) Extend(ctx context.Context, ls lockimpl.Lease, ttl time.Duration) error {
	dl, ok := ls.(*lease)
	if !ok || dl.l != l {
		return fmt.Errorf("driver %s: Extend of a lease it did not give", l.spec.Name)
	}
	m, err := l.call(ctx, &Request{Type: "extend", Lease: dl.name, TTLMS: ms(ttl)}, l.bound(0))
	if err != nil {
		return err
	}
	if m.Type == TypeExtended && m.DeadlineNS != nil {
		dl.setDeadline(l.deadline(*m.DeadlineNS))
	}
	return l.outcome("extend", TypeExtended, m)
}

// outcome is the error of a release's or an extend's answer m (success
// type ok): nil, not owner, indeterminate, or a protocol break.
func (l *Locker) outcome(req, ok string, m Reply) error {
	switch m.Type {
	case ok:
		return nil
	case TypeNotOwner:
		return lockimpl.ErrNotOwner
	case TypeIndetermined, TypeError, TypeCancelled:
		return l.indeterminate(m)
	}
	return l.protocolBreak(req, m)
}

// indeterminate is the error of an indeterminate or error answer, or of
// a call ended by its cancel (which wraps context.Canceled too: its effect
// at the server is unknown).
func (l *Locker) indeterminate(m Reply) error {
	if m.Type == TypeCancelled {
		return fmt.Errorf("%w: %w: driver %s: the call was cancelled: %s", lockimpl.ErrIndeterminate, context.Canceled, l.spec.Name, m.Error)
	}
	return fmt.Errorf("%w: driver %s: %s: %s", lockimpl.ErrIndeterminate, l.spec.Name, m.Type, m.Error)
}

// Freeze stops the driver's process group (SIGSTOP); the effect is its
// process state read from /proc once stopped ('T').
func (l *Locker) Freeze() (map[string]string, error) {
	if l.sh != nil {
		return nil, l.errShared("stopping it")
	}
	st, err := l.p.freeze()
	return map[string]string{"driver_pid": fmt.Sprint(l.p.pid), "driver_state": st}, err
}

// Thaw continues it (SIGCONT).
func (l *Locker) Thaw() error { return l.p.thaw() }

// Kill ends it at once (SIGKILL of its group): a crashed client.
func (l *Locker) Kill() error {
	if l.sh != nil {
		return l.errShared("killing it")
	}
	l.p.killed.Store(true)
	return l.p.signal(syscall.SIGKILL)
}

// Terminate stops the driver gracefully (SIGTERM), as a pod being stopped
// is: its runtime's shutdown hooks run (a driver with the sigterm
// extension runs the application's), and it is killed if it has not ended
// after grace (lockimpl.Terminator).
func (l *Locker) Terminate(grace time.Duration) (exit string, graceful bool, err error) {
	if l.sh != nil {
		return "", false, l.errShared("a SIGTERM")
	}
	return l.p.terminate(grace)
}

// ShutsDownGracefully says whether the driver declared the sigterm
// extension (lockimpl.Terminator).
func (l *Locker) ShutsDownGracefully() bool { return l.hasExtension("sigterm") }

// Throws says whether the driver raises in its idiom for a release on the
// exception path (the throw extension; lockimpl.Thrower).
func (l *Locker) Throws() bool { return l.hasExtension("throw") }

// Pid is the driver's process id (its process group's too).
func (l *Locker) Pid() int { return l.p.pid }

// Err is the driver's failure, nil while it works.
func (l *Locker) Err() error { return l.p.brokenErr() }

// Close shuts the driver down and kills its process group, or, when
// reuse is on and nothing but the workload touched the process, resets it
// and keeps it warm for the next run of the same lock (pool.go).
func (l *Locker) Close() error {
	if l.sh != nil {
		return l.sh.detach(l)
	}
	if l.reusable() && l.p.reset() == nil && keep(l.poolKey, l.p, l.hello, false) {
		return nil
	}
	if l.poolKey != "" && l.hasExtension("reset") && (l.p.brokenErr() == nil || l.p.killed.Load() || l.p.touched.Load()) {
		spare(l.poolKey, l.spec, l.extra)
	}
	return l.p.stop()
}

// reusable says whether the process may serve another run: reuse asked
// for, the reset extension declared, no fault on it, not broken or ended,
// and no lease held in lockchaos's view.
func (l *Locker) reusable() bool {
	if l.poolKey == "" || !l.hasExtension("reset") || l.p.touched.Load() || l.p.killed.Load() || l.p.frozen.Load() || l.p.brokenErr() != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.leases) == 0
}

// lease is one hold, named by the driver.
type lease struct {
	l      *Locker
	name   string
	key    string
	token  string
	depth  int
	fence  uint64
	fenced bool
	keys   []string // the acquired reply's keys (lockimpl.LeaseKeys)

	dmu      sync.Mutex
	deadline time.Time
	lost     chan struct{}
	once     sync.Once
	released sync.Once
	relErr   error
}

func (s *lease) Key() string             { return s.key }
func (s *lease) Token() string           { return s.token }
func (s *lease) Fence() (uint64, bool)   { return s.fence, s.fenced }
func (s *lease) Depth() int              { return s.depth }
func (s *lease) RedisKeys() []string     { return s.keys }
func (s *lease) Lost() <-chan struct{}   { return s.lost }
func (s *lease) setDeadline(t time.Time) { s.dmu.Lock(); s.deadline = t; s.dmu.Unlock() }
func (s *lease) Deadline() (t time.Time) { s.dmu.Lock(); t = s.deadline; s.dmu.Unlock(); return }
func (s *lease) String() string          { return "driver lease " + s.name }
func (s *lease) Release(ctx context.Context) error {
	s.released.Do(func() { s.relErr = s.release(ctx) })
	return s.relErr
}

func (s *lease) release(ctx context.Context) error {
	l := s.l
	req := &Request{Type: "release", Lease: s.name}
	th := lockimpl.ThrowFrom(ctx)
	if th != nil && l.Throws() {
		req.Throw = th.Msg
		l.p.touched.Store(true)
	}
	m, err := l.gated(ctx, req, l.bound(0), TypeReleased, TypeNotOwner)
	if th != nil {
		answer := m.Type
		if err != nil {
			answer = "error: " + err.Error()
		}
		th.Finish(req.Throw != "", answer, m.Raised)
	}
	if err != nil {
		return err
	}
	return l.outcome("release", TypeReleased, m)
}
