package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Bounds of a driver's answers. A request's own bound is its wait (an
// acquire's wait_ms) plus its command timeouts; ReplyMargin is added on top
// for the pipe, the scheduler and a runtime's pauses (a JVM's GC).
var (
	// StartTimeout bounds the start: hello's answer (a JVM takes seconds).
	StartTimeout = 30 * time.Second
	// ReplyMargin is added to every request's own bound.
	ReplyMargin = 5 * time.Second
	// StopGrace is how long a driver has to exit after shutdown before
	// its process group is killed.
	StopGrace = 2 * time.Second
)

// Error is a driver that failed: it exited, wrote a line that is not a
// protocol line, answered the wrong request or not in time. It wraps
// lockimpl.ErrBroken.
type Error struct {
	Driver string   // the lock's name
	Msg    string   // what went wrong
	Line   string   // the offending line, when one
	Stderr []string // the driver's last lines on stderr
	// Unavailable: the driver said its init could not reach the servers
	// (an init error with unavailable: true), not that it refused what
	// it was asked.
	Unavailable bool
}

func (e *Error) Error() string {
	s := "driver " + e.Driver + ": " + e.Msg
	if e.Line != "" {
		s += ": line " + strconvQuote(e.Line)
	}
	if len(e.Stderr) > 0 {
		s += "; its stderr ended with: " + strings.Join(e.Stderr, " | ")
	}
	return s
}

func (e *Error) Unwrap() []error {
	if e.Unavailable {
		return []error{lockimpl.ErrBroken, lockimpl.ErrUnavailable}
	}
	return []error{lockimpl.ErrBroken}
}

func strconvQuote(s string) string {
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// tail keeps the last lines written to it (a driver's stderr).
type tail struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

const tailLines = 8

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, b...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > 4096 {
		t.add(string(t.part))
		t.part = nil
	}
	return len(b), nil
}

func (t *tail) add(l string) {
	if l = strings.TrimSpace(l); l == "" {
		return
	}
	if len(l) > 400 {
		l = l[:400] + "…"
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

func (t *tail) last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.part) > 0 {
		out = append(out, strings.TrimSpace(string(t.part)))
	}
	return out
}

// proc is one running driver.
type proc struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	stderr *tail
	events func(Reply)
	// onReply, when set, sees each answer with its request in the reader's
	// order, before its caller does: a lease is known before an event
	// about it that follows its acquired line. Set under mu.
	onReply func(req *Request, m Reply)

	wmu    sync.Mutex // one line at a time on stdin
	mu     sync.Mutex
	nextID int64
	// pending are the requests awaiting an answer; abandoned, those whose
	// caller gave up (its context ended): a late answer to them is no
	// protocol break.
	pending   map[int64]waiter
	abandoned map[int64]bool
	broken    chan struct{} // closed by fail
	err       *Error
	killed    atomic.Bool // by Kill (a crash) or stop: its exit is expected
	// touched: a fault acted on the process (stopped, blocked, a call
	// cancelled or thrown in, its clock set): it is never kept for
	// another run (pool.go).
	touched atomic.Bool
	// cancels: the driver's hello lists the cancel extension; a call
	// whose context ends sends it a cancel instead of giving up.
	cancels  atomic.Bool
	readDone chan struct{}
	exited   chan struct{}
	waitErr  error

	// frozen: SIGSTOPped now; frozenNS: time spent stopped so far. A
	// request's bound does not count it.
	frozen   atomic.Bool
	frozenAt time.Time
	frozenNS atomic.Int64

	// pipe: each answered request's round trip less the driver's own time
	// in it (t1-t0), in ns: what the protocol costs on top of the library
	// (bench shows it apart). A request the driver spent stopped in is not
	// counted.
	pipeMu sync.Mutex
	pipe   *hdrhistogram.Histogram
}

// pipeSample records a request's pipe cost: rtt less the driver's t1-t0.
func (p *proc) pipeSample(rtt time.Duration, m Reply) {
	if m.T0 == 0 || m.T1 < m.T0 {
		return
	}
	v := max(int64(rtt)-(m.T1-m.T0), 0)
	p.pipeMu.Lock()
	defer p.pipeMu.Unlock()
	if p.pipe == nil {
		p.pipe = hdrhistogram.New(1, 60_000_000_000, 3)
	}
	_ = p.pipe.RecordValue(v)
}

// pipeCost is a copy of the pipe costs recorded so far (nil before any).
func (p *proc) pipeCost() *hdrhistogram.Histogram {
	p.pipeMu.Lock()
	defer p.pipeMu.Unlock()
	if p.pipe == nil {
		return nil
	}
	return hdrhistogram.Import(p.pipe.Export())
}

type waiter struct {
	ch  chan Reply
	req *Request
}

// start starts a driver in its own process group (killed with lockchaos:
// Pdeathsig on Linux) and reads its stdout. The lock options (extra, the
// lock file's and --lock-opt's) are also in its environment, since some
// choose what the process is before hello (which library version a
// launcher runs, whether a lock renews): LOCKCHAOS_LOCK_OPTS ("k=v,k=v",
// sorted) and LOCKCHAOS_LOCK_VERSION (the version option alone).
func start(s *Spec, name string, events func(Reply), extra map[string]string, moreEnv ...string) (*proc, error) {
	argv, err := s.argv()
	if err != nil {
		return nil, &Error{Driver: name, Msg: err.Error()}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir()
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, optionEnv(extra)...)
	cmd.Env = append(cmd.Env, moreEnv...)
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{name: name, cmd: cmd, stderr: &tail{}, events: events, pending: map[int64]waiter{},
		abandoned: map[int64]bool{}, broken: make(chan struct{}), readDone: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, &Error{Driver: name, Msg: fmt.Sprintf("cannot start %q in %s: %v", strings.Join(argv, " "), cmd.Dir, err)}
	}
	p.pid = cmd.Process.Pid
	go p.read(out)
	go func() {
		<-p.readDone
		p.waitErr = cmd.Wait()
		close(p.exited)
		if !p.killed.Load() {
			msg := "exited"
			if p.waitErr != nil {
				msg = "exited: " + p.waitErr.Error()
			}
			p.fail(&Error{Msg: msg})
		}
	}()
	return p, nil
}

// read dispatches the driver's lines: replies to their requests, events to
// the handler. A line that is not a protocol line breaks the driver.
func (p *proc) read(r io.Reader) {
	defer close(p.readDone)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			p.handle(bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

func (p *proc) handle(line []byte) {
	var m Reply
	if err := json.Unmarshal(line, &m); err != nil || m.Type == "" || line[0] != '{' {
		why := "a line on stdout that is not a protocol message (a JSON object with a type)"
		if err != nil {
			why += ": " + err.Error()
		}
		p.fail(&Error{Msg: why, Line: string(line)})
		return
	}
	if m.InReplyTo == 0 {
		switch m.Type {
		case TypeLost, TypeRenewal:
			p.mu.Lock()
			events := p.events
			p.mu.Unlock()
			if events != nil {
				events(m)
			}
		default:
			p.fail(&Error{Msg: "a line without in_reply_to that is no event (lost, renewal)", Line: string(line)})
		}
		return
	}
	p.mu.Lock()
	w, ok := p.pending[m.InReplyTo]
	onReply := p.onReply
	delete(p.pending, m.InReplyTo)
	late := p.abandoned[m.InReplyTo]
	delete(p.abandoned, m.InReplyTo)
	p.mu.Unlock()
	switch {
	case ok:
		if onReply != nil {
			onReply(w.req, m)
		}
		w.ch <- m
	case !late:
		p.fail(&Error{Msg: fmt.Sprintf("a reply to id %d, which no request in flight has", m.InReplyTo), Line: string(line)})
	}
}

// fail breaks the driver once: every request in flight and every later one
// fails with err, and its process group is killed.
func (p *proc) fail(e *Error) {
	if !p.killed.Load() {
		e.Stderr = p.stderr.last()
	}
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	e.Driver = p.name
	p.err = e
	close(p.broken)
	p.mu.Unlock()
	p.killed.Store(true)
	p.signal(syscall.SIGKILL)
}

func (p *proc) brokenErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		return nil
	}
	return p.err
}

// signal sends sig to the driver's process group.
func (p *proc) signal(sig syscall.Signal) error {
	return syscall.Kill(-p.pid, sig)
}

// ended is the answer of request id when the driver's process ended with
// it in flight: its reply if it came first; unknown when lockchaos ended
// it (a crash, a SIGTERM: what the call did at the server is unknown);
// the driver broken otherwise.
func (p *proc) ended(req *Request, id int64, ch chan Reply) (Reply, error) {
	if err := p.brokenErr(); err != nil {
		return Reply{}, err
	}
	if !p.killed.Load() {
		<-p.broken // an exit lockchaos did not ask for breaks the driver
		return Reply{}, p.brokenErr()
	}
	select {
	case m := <-ch:
		return m, nil
	default:
	}
	return Reply{}, fmt.Errorf("%w: %w: driver %s ended with request %s %d unanswered", lockimpl.ErrIndeterminate, errEnded, p.name, req.Type, id)
}

// errEnded: a request in flight when lockchaos ended the driver.
var errEnded = errors.New("driver process ended")

// terminate sends SIGTERM to the driver's process (not its group: the
// runtime that handles it, which a driver's script execs) and waits for it
// to exit, at most grace; then it kills the group. It returns how the
// process ended, and whether it did within the grace.
func (p *proc) terminate(grace time.Duration) (exit string, graceful bool, err error) {
	p.killed.Store(true)
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil {
		return "", false, fmt.Errorf("SIGTERM to driver %s (pid %d): %w", p.name, p.pid, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		graceful = true
	case <-t.C:
		p.signal(syscall.SIGKILL)
		<-p.exited
	}
	exit = "exit status 0"
	if p.waitErr != nil {
		exit = p.waitErr.Error()
	}
	if !graceful {
		exit = fmt.Sprintf("killed after %v (SIGTERM did not end it)", grace)
	}
	// What the process left behind in its group (a child it started).
	p.signal(syscall.SIGKILL)
	return exit, graceful, nil
}

// send writes one request and returns the channel its answer comes on.
func (p *proc) send(req *Request) (int64, chan Reply, error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return 0, nil, p.err
	}
	p.nextID++
	id := p.nextID
	req.ID = id
	ch := make(chan Reply, 1)
	p.pending[id] = waiter{ch, req}
	p.mu.Unlock()
	b, _ := json.Marshal(req)
	b = append(b, '\n')
	p.wmu.Lock()
	_, err := p.stdin.Write(b)
	p.wmu.Unlock()
	if err != nil {
		p.fail(&Error{Msg: "cannot write a request to its stdin: " + err.Error(), Line: string(b[:len(b)-1])})
		return 0, nil, p.brokenErr()
	}
	return id, ch, nil
}

// errAbandoned is returned when the caller's context ended before the
// answer: the outcome is unknown.
var errAbandoned = errors.New("driver: the caller gave up waiting")

// call sends req and waits for its answer, at most bound of the driver's
// running time (time it spent stopped by a pause does not count). A
// driver that does not answer within it is broken. ctx ending first: a
// driver with the cancel extension (cancels), when ctx is a cancel fault's
// (cancelReported), is sent a cancel of req and its answer is still
// waited for (what the cancelled call did, reported to
// ctx's lockimpl.CancelReport); any other abandons the request (its
// answer, when it comes, is dropped) with an indeterminate error.
func (p *proc) call(ctx interface{ Done() <-chan struct{} }, req *Request, bound time.Duration) (Reply, error) {
	sent := time.Now()
	id, ch, err := p.send(req)
	if err != nil {
		return Reply{}, err
	}
	fz0 := p.frozenNS.Load()
	left := bound
	t := time.NewTimer(left)
	defer t.Stop()
	began := time.Now()
	done := ctx.Done()
	cancelSent := false
	var cancelled chan Reply // the cancel's answer, until it comes
	var ack *Reply
	for {
		select {
		case m := <-ch:
			if p.frozenNS.Load() == fz0 && !p.frozen.Load() && !cancelSent {
				p.pipeSample(time.Since(sent), m)
			}
			if cancelSent {
				p.reportCancel(ctx, req, cancelled, ack, m)
			}
			return m, nil
		case a := <-cancelled:
			ack, cancelled = &a, nil
		case <-p.broken:
			select {
			case m := <-ch: // answered before it broke
				return m, nil
			default:
			}
			return Reply{}, p.brokenErr()
		case <-p.exited:
			return p.ended(req, id, ch)
		case <-done:
			done = nil
			if p.cancels.Load() && cancelReported(ctx) {
				p.touched.Store(true)
				if _, c, err := p.send(&Request{Type: "cancel", Of: id}); err == nil {
					cancelled, cancelSent = c, true
					continue
				}
			}
			p.mu.Lock()
			if _, ok := p.pending[id]; ok {
				delete(p.pending, id)
				p.abandoned[id] = true
			}
			p.mu.Unlock()
			select {
			case m := <-ch:
				return m, nil
			default:
			}
			return Reply{}, fmt.Errorf("%w: %w (request %s %d)", lockimpl.ErrIndeterminate, errAbandoned, req.Type, id)
		case <-t.C:
			stopped := time.Duration(p.frozenNS.Load() - fz0)
			if p.frozen.Load() {
				stopped += time.Since(p.frozenAtTime())
			}
			if ran := time.Since(began) - stopped; ran < bound {
				t.Reset(bound - ran)
				continue
			}
			b, _ := json.Marshal(req)
			p.fail(&Error{Msg: fmt.Sprintf("no answer to request %d within %v", id, bound.Round(time.Millisecond)), Line: string(b)})
			return Reply{}, p.brokenErr()
		}
	}
}

// cancelReported says whether ctx is a request's that a cancel fault may
// cancel (it carries a lockimpl.CancelReport): only those send the driver
// a cancel. The end of a run, or a caller's own deadline, abandons the
// call as before: the run's stop is no application giving up a request,
// and an interrupted library call there would leave effects no check
// looks at as a fault's.
func cancelReported(ctx interface{ Done() <-chan struct{} }) bool {
	c, ok := ctx.(context.Context)
	return ok && lockimpl.CancelReportFrom(c) != nil
}

// reportCancel fills ctx's cancel report with what a cancelled request
// did: whether the driver's cancel_ok said it was delivered (waited for
// briefly when it has not come yet: a driver sends it first when it is)
// and the request's answer m.
func (p *proc) reportCancel(ctx interface{ Done() <-chan struct{} }, req *Request, pending chan Reply, ack *Reply, m Reply) {
	c, ok := ctx.(context.Context)
	if !ok {
		return
	}
	rep := lockimpl.CancelReportFrom(c)
	if rep == nil {
		return
	}
	if ack == nil && pending != nil {
		select {
		case a := <-pending:
			ack = &a
		case <-time.After(ReplyMargin):
		case <-p.broken:
		}
	}
	rep.Finish(req.Type, ack != nil && ack.Type == TypeCancelOK && ack.Delivered, m.Type)
}

func (p *proc) frozenAtTime() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozenAt
}

// stop ends the driver: shutdown, a grace period, then SIGKILL of its
// process group (always: a driver's children go with it), and waits for
// it to be reaped (bounded).
func (p *proc) stop() error {
	var err error
	if p.brokenErr() == nil && !p.killed.Load() {
		p.thaw()
		done := make(chan struct{})
		timer := time.AfterFunc(StopGrace, func() { close(done) })
		m, cerr := p.call(chanCtx(done), &Request{Type: "shutdown"}, StopGrace)
		timer.Stop()
		if cerr == nil && m.Type != TypeShutdownOK {
			err = &Error{Driver: p.name, Msg: "answered shutdown with " + m.Type}
		}
		p.killed.Store(true)
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(StopGrace):
		}
	}
	p.killed.Store(true)
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("driver %s: pid %d not reaped 5s after SIGKILL", p.name, p.pid)
	}
	return err
}

type chanCtx chan struct{}

func (c chanCtx) Done() <-chan struct{} { return c }

// freeze stops the driver's process group (SIGSTOP) and returns the
// driver's process state read from /proc once it stopped ('T'), or what it
// was when it did not within 200ms.
func (p *proc) freeze() (string, error) {
	p.mu.Lock()
	p.frozenAt = time.Now()
	p.mu.Unlock()
	p.frozen.Store(true)
	p.touched.Store(true)
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return "", fmt.Errorf("driver %s: SIGSTOP of process group %d: %w", p.name, p.pid, err)
	}
	var st string
	for i := 0; i < 40; i++ {
		st = procState(p.pid)
		if st == "T" || st == "t" || st == "" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return st, nil
}

// thaw continues a frozen driver.
func (p *proc) thaw() error {
	if !p.frozen.Swap(false) {
		return nil
	}
	p.frozenNS.Add(int64(time.Since(p.frozenAtTime())))
	return p.signal(syscall.SIGCONT)
}

// procState is the state letter of /proc/<pid>/stat ("" when unreadable).
func procState(pid int) string {
	if f := procStat(pid); len(f) > 0 {
		return f[0][:1]
	}
	return ""
}

// procStat is /proc/<pid>/stat's fields after comm, from the state (field
// 3) on; nil when unreadable.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// pid (comm) S ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// procCPU is the CPU time pid has used, user and system (/proc/<pid>/stat
// utime and stime, in the kernel's USER_HZ of 100 a second), ok false
// when unreadable.
func procCPU(pid int) (time.Duration, bool) {
	// utime (field 14) and stime (15).
	f := procStat(pid)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}

// optionEnv is the environment that carries a driver's lock options.
func optionEnv(extra map[string]string) []string {
	if len(extra) == 0 {
		return nil
	}
	var kv []string
	for _, k := range sortedKeys(extra) {
		kv = append(kv, k+"="+extra[k])
	}
	env := []string{"LOCKCHAOS_LOCK_OPTS=" + strings.Join(kv, ",")}
	if v := extra["version"]; v != "" {
		env = append(env, "LOCKCHAOS_LOCK_VERSION="+v)
	}
	return env
}
