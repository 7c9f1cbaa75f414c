package driver

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Warm drivers: with reuse on, a process whose driver declares reset serves
// the next client's run after Close (the same pid, a second init, its clock
// calibrated again, no lease of the last run known); one a fault touched, or
// one whose driver does not declare reset, is stopped as before; Drain stops
// the kept ones.
func TestReuseKeepsOnlyUntouchedProcesses(t *testing.T) {
	Reuse(true)
	defer Reuse(false)
	ctx := context.Background()
	open := func(mode string) *Locker {
		t.Helper()
		lk, err := New(fakeSpec(mode), testEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		return lk.(*Locker)
	}
	inits := func(l *Locker) string {
		_, err := l.Acquire(ctx, "count-inits")
		if err == nil {
			t.Fatal("count-inits acquired")
		}
		return err.Error()[strings.LastIndex(err.Error(), "inits"):]
	}

	a := open("reset")
	pid := a.Pid()
	ls, err := a.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Fatalf("pid %d stopped by Close with reuse on", pid)
	}
	b := open("reset")
	if b.Pid() != pid || !b.warm || b.Config()["process_reused"] != true {
		t.Fatalf("second client: pid %d warm %v, want the first's %d reused", b.Pid(), b.warm, pid)
	}
	if got := inits(b); got != "inits 2" {
		t.Errorf("reused process: %q, want a second init", got)
	}
	// This run's requests only: init, the calibration's 7 pings, one acquire.
	if h := b.PipeCost(); h == nil || h.TotalCount() > 1+7+1 {
		t.Errorf("the reused process's pipe costs carry the last run's: %d requests", h.TotalCount())
	}

	// A lease still held at Close: stopped, not kept.
	if _, err := b.Acquire(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("a process closed holding a lease was kept (pid %d %s)", pid, procState(pid))
	}

	// A fault (a freeze) on it: stopped.
	c := open("reset")
	if c.warm {
		t.Fatal("a stopped process served a run")
	}
	if _, err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	_ = c.Thaw()
	cpid := c.Pid()
	_ = c.Close()
	if !gone(cpid) {
		t.Errorf("a frozen process was kept (pid %d)", cpid)
	}

	// No reset extension: stopped.
	d := open("good")
	dpid := d.Pid()
	_ = d.Close()
	if !gone(dpid) {
		t.Errorf("a driver without the reset extension was kept (pid %d)", dpid)
	}

	// Drain stops what is kept.
	e := open("reset")
	epid := e.Pid()
	_ = e.Close()
	if gone(epid) {
		t.Fatal("not kept")
	}
	Drain()
	if !gone(epid) {
		t.Errorf("Drain left pid %d (%s)", epid, procState(epid))
	}
}

// A process a fault acted on is replaced by a spare started in the
// background: the next client's run gets a process it did not wait for,
// never initialised before (its first init), marked prestarted and not
// reused; a driver without the reset extension gets none.
func TestSpareReplacesATouchedProcess(t *testing.T) {
	Reuse(true)
	defer Reuse(false)
	ctx := context.Background()
	// frozenClosed opens a client of mode, freezes, thaws and closes it,
	// and says how many processes its key has kept or starting after.
	frozenClosed := func(mode string) (pid, kept int) {
		t.Helper()
		lk, err := New(fakeSpec(mode), testEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		l := lk.(*Locker)
		if _, err := l.Freeze(); err != nil {
			t.Fatal(err)
		}
		_ = l.Thaw()
		_ = l.Close()
		waitSpares()
		pool.mu.Lock()
		defer pool.mu.Unlock()
		return l.Pid(), len(pool.idle[l.poolKey]) + pool.starting[l.poolKey]
	}
	apid, n := frozenClosed("reset")
	if n != 1 {
		t.Fatalf("%d processes kept after a frozen one closed, want its spare", n)
	}
	b, err := New(fakeSpec("reset"), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	lb := b.(*Locker)
	defer lb.Close()
	if lb.Pid() == apid || lb.warm || !lb.prestarted || lb.Config()["process_prestarted"] != true || lb.Config()["process_reused"] != false {
		t.Fatalf("next client: pid %d (frozen one %d) warm %v prestarted %v", lb.Pid(), apid, lb.warm, lb.prestarted)
	}
	_, err = lb.Acquire(ctx, "count-inits")
	if err == nil || !strings.HasSuffix(err.Error(), "inits 1") {
		t.Errorf("the spare: %v, want its first init", err)
	}
	if _, n := frozenClosed("good"); n != 0 {
		t.Errorf("a driver without reset got %d spares", n)
	}
}

// A process that works while it waits in the pool (a thread of an earlier
// run still spinning) is told from one that idles: busyIdle by its CPU time
// since it was kept, on two real processes.
func TestBusyIdleByCPUTime(t *testing.T) {
	start := func(script string) *pooled {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		e := &pooled{p: &proc{pid: cmd.Process.Pid}, kept: time.Now()}
		e.cpu, _ = procCPU(e.p.pid)
		return e
	}
	spin, idle := start("while :; do :; done"), start("sleep 30")
	// Polled: on a loaded machine the spinner gets its share of a core late.
	for end := time.Now().Add(5 * time.Second); !spin.busyIdle() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if !spin.busyIdle() {
		c, _ := procCPU(spin.p.pid)
		t.Errorf("a spinning process counts as idle (%v of CPU in %v)", c-spin.cpu, time.Since(spin.kept))
	}
	if idle.busyIdle() {
		t.Error("a sleeping process counts as busy")
	}
}
