package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procNode is a redis-server (or redis-sentinel) child process. Each runs in
// its own process group and dies with the harness (Pdeathsig), so nothing is
// left behind even when the harness is killed.
type procNode struct {
	bin  string
	args []string // without the port, which is fixed at first start
	dir  string   // node working directory (data, config)
	log  string   // log file path
	port int
	conf string   // config file to pass first (sentinel), or ""
	env  []string // added to the harness's environment (the clock shim)
	// portArgs, when set, adds args that depend on the port (the cluster
	// bus port a node announces).
	portArgs func(port int) []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	all  []int // every pid started, for tests that check none survives
}

func startProcess(ctx context.Context, c *Cluster) error {
	bin, err := lookRedisServer(c.Spec.RedisServer)
	if err != nil {
		return fmt.Errorf("%w: backend process: redis-server not found (%v); install it (apt-get install redis-server) or pass --redis-server PATH", ErrInfra, err)
	}
	if c.Spec.RealClock {
		// A shim that cannot be built is not fatal: clock faults fall back
		// to rewriting TTLs, and ClockWhy reaches the run's notes.
		if c.shim, err = BuildShim(); err != nil {
			c.ClockWhy = "real server clock unavailable (" + err.Error() + "); clock faults rewrite TTLs"
		} else {
			c.ClockWhy = "real server clock: each redis-server runs with the clock shim " + c.shim
		}
	}
	switch c.Spec.Topology {
	case Single:
		n, err := c.startServer(ctx, bin, "n1", nil)
		if err != nil {
			return err
		}
		n.Role = "master"
	case Independent:
		for i := 1; i <= c.Spec.Nodes; i++ {
			n, err := c.startServer(ctx, bin, fmt.Sprintf("n%d", i), nil)
			if err != nil {
				return err
			}
			n.Role = "master"
		}
	default:
		starter, ok := topologies[c.Spec.Topology]
		if !ok {
			return fmt.Errorf("%w: topology %q is not one of single, sentinel, independent, cluster", ErrBadSpec, c.Spec.Topology)
		}
		return starter(ctx, c, bin)
	}
	return nil
}

// topologies holds process-backend starters registered by other files.
var topologies = map[string]func(ctx context.Context, c *Cluster, bin string) error{}

// startServer starts one redis-server named name with extra config args
// (and portArgs' args for its port, when given) and appends it to c.Nodes.
func (c *Cluster) startServer(ctx context.Context, bin, name string, extra []string, portArgs ...func(port int) []string) (*Node, error) {
	dir := filepath.Join(c.Spec.Dir, "nodes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: node dir: %v", ErrInfra, err)
	}
	args := []string{
		"--bind", "127.0.0.1", "--protected-mode", "yes", "--daemonize", "no",
		"--dir", dir, "--save", "", "--notify-keyspace-events", "KEA",
		"--logfile", filepath.Join(c.Spec.Dir, "nodes", name+".log"),
	}
	if c.Spec.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, extra...)
	p := &procNode{bin: bin, args: args, dir: dir, log: filepath.Join(c.Spec.Dir, "nodes", name+".log")}
	if len(portArgs) > 0 {
		p.portArgs = portArgs[0]
	}
	var clock *ServerClock
	if c.shim != "" {
		// The clock file lives beside the node's directory, not in it: an
		// empty restart clears the directory, and a restarted server keeps
		// its clock (p.env is passed at every start).
		var err error
		if clock, err = newServerClock(filepath.Join(c.Spec.Dir, "nodes", name+".clock")); err != nil {
			return nil, fmt.Errorf("%w: redis-server %s: %v", ErrInfra, name, err)
		}
		c.onStop(clock.close)
		p.env = []string{"LD_PRELOAD=" + c.shim, ClockEnv + "=" + clock.Path()}
	}
	if err := p.startFresh(ctx); err != nil {
		return nil, fmt.Errorf("%w: start redis-server %s: %v", ErrInfra, name, err)
	}
	c.onStopBegin(p.beginStop)
	addr := p.addr()
	n := &Node{Name: name, Addr: addr, ServerAddr: addr, Ctl: p, Clock: clock}
	c.Nodes = append(c.Nodes, n)
	return n, nil
}

func (p *procNode) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// startFresh picks a free port and starts; a lost race for the port is retried.
func (p *procNode) startFresh(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		p.port, err = freePort()
		if err != nil {
			return err
		}
		if err = p.start(ctx); err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "exited") {
			return err
		}
	}
	return err
}

func (p *procNode) start(ctx context.Context) error {
	args := append([]string{}, p.args...)
	if p.conf != "" {
		args = append([]string{p.conf}, args...)
	}
	args = append(args, "--port", strconv.Itoa(p.port))
	if p.portArgs != nil {
		args = append(args, p.portArgs(p.port)...)
	}
	if p.conf != "" {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.all = append(p.all, cmd.Process.Pid)
	p.mu.Unlock()
	alive := func() error {
		select {
		case <-done:
			return fmt.Errorf("redis exited during start (port %d); log %s: %s", p.port, p.log, tail(p.log))
		default:
			return nil
		}
	}
	if err := waitReady(ctx, p.addr(), 10*time.Second, alive, cmd.Process.Pid); err != nil {
		p.kill()
		return err
	}
	return nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (p *procNode) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return errors.New("not running")
	}
	select {
	case <-done:
		return errors.New("process has exited")
	default:
	}
	// Signal the process group: redis-server forks for BGSAVE/AOF rewrite.
	return syscall.Kill(-cmd.Process.Pid, sig)
}

func (p *procNode) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *procNode) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *procNode) Kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	p.wait(5 * time.Second)
	return nil
}

func (p *procNode) kill() {
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGKILL)
	p.wait(5 * time.Second)
}

func (p *procNode) wait(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Restart starts the server again on its port; empty discards its data.
func (p *procNode) Restart(ctx context.Context, empty bool) error {
	if p.running() {
		return errors.New("restart: node is still running (kill it first)")
	}
	if empty {
		entries, _ := os.ReadDir(p.dir)
		for _, e := range entries {
			if e.Name() == "sentinel.conf" || strings.HasSuffix(e.Name(), ".conf") {
				continue
			}
			_ = os.RemoveAll(filepath.Join(p.dir, e.Name()))
		}
	}
	return p.start(ctx)
}

func (p *procNode) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (p *procNode) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// State reads the process state letter from /proc (T = stopped).
func (p *procNode) State() string {
	if !p.running() {
		return "gone"
	}
	return ProcState(p.Pid())
}

// ProcState returns the state letter of pid from /proc/PID/stat, or "gone".
func ProcState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "?"
	}
	return s[i+2 : i+3]
}

// stop ends the process: SIGCONT (a paused node cannot act on SIGTERM),
// SIGTERM, then SIGKILL after a grace period.
func (p *procNode) stop() error { return p.beginStop()() }

// beginStop sends the SIGCONT and the SIGTERM of stop and returns the rest
// of it: the wait for the exit, SIGKILL after the grace period.
func (p *procNode) beginStop() (wait func() error) {
	if !p.running() {
		return func() error { return nil }
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	return func() error {
		if p.wait(2 * time.Second) {
			return nil
		}
		_ = p.signal(syscall.SIGKILL)
		if !p.wait(5 * time.Second) {
			return fmt.Errorf("redis pid %d did not exit after SIGKILL", p.Pid())
		}
		return nil
	}
}

// pids returns every pid this node has had.
func (p *procNode) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.all...)
}
