package driver

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		fakeMain(mode)
		os.Exit(0)
	}
	if os.Getenv(holderEnv) != "" {
		holderMain()
		return
	}
	os.Exit(m.Run())
}

func testEnv(notes func(lockimpl.Note)) lockimpl.Env {
	return lockimpl.Env{ClientID: 2, Endpoints: []lockimpl.Endpoint{{Addr: "127.0.0.1:1"}}, Clock: lockimpl.RealClock{},
		Options: lockimpl.Options{TTL: 500 * time.Millisecond}, Note: notes, ConnName: "lc-test-c2", KeyPrefix: "lc:test:"}
}

// gone reports whether pid no longer runs (exited and reaped, or a zombie
// about to be).
func gone(pid int) bool {
	st := procState(pid)
	return st == "" || st == "Z" || st == "X"
}

func TestGoodDriver(t *testing.T) {
	var mu sync.Mutex
	var notes []lockimpl.Note
	env := testEnv(func(n lockimpl.Note) { mu.Lock(); notes = append(notes, n); mu.Unlock() })
	env.Options.Extra = map[string]string{"flavour": "sour"}
	lk, err := New(fakeSpec("good"), env)
	if err != nil {
		t.Fatal(err)
	}
	l := lk.(*Locker)
	pid := l.Pid()
	ctx := context.Background()

	before := time.Now()
	ls, err := l.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if ls.Token() != "tok-L1" || ls.Depth() != 1 || ls.Key() != "k0" {
		t.Errorf("lease: token %q depth %d key %q", ls.Token(), ls.Depth(), ls.Key())
	}
	if f, ok := ls.Fence(); !ok || f != 1 {
		t.Errorf("fence %d %v, want 1", f, ok)
	}
	// The driver's deadline (its clock + ttl) on the client's clock.
	if d := ls.Deadline().Sub(before); d < 400*time.Millisecond || d > 700*time.Millisecond {
		t.Errorf("deadline %v after the call began, want about the ttl (500ms)", d)
	}
	if ls.Lost() == nil {
		t.Error("Lost() nil for a driver that reports lost")
	}
	if err := ls.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}

	// `keys` in acquired: the keys the library wrote (lockimpl.KeysOf).
	if keys := lockimpl.KeysOf(l, ls, "k0"); keys != nil {
		t.Errorf("keys %q of a driver that reported none", keys)
	}
	own, err := l.TryAcquire(ctx, "own.k1")
	if err != nil {
		t.Fatal(err)
	}
	if keys := lockimpl.KeysOf(l, own, "own.k1"); len(keys) != 1 || keys[0] != "lib:own.k1" {
		t.Errorf("keys %q, want the acquired reply's [lib:own.k1]", keys)
	}
	if err := own.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}

	if _, err := l.TryAcquire(ctx, "busy"); !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.IsIndeterminate(err) {
		t.Errorf("busy: %v, want ErrNotAcquired", err)
	}
	if _, err := l.Acquire(ctx, "unknown"); !lockimpl.IsIndeterminate(err) || errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "timeout after 250ms") {
		t.Errorf("unknown: %v, want indeterminate with the driver's message", err)
	}

	// Pushed renewal and lost: a NoteRenew, a NoteLost, Lost closed, and
	// the release of the lost lease refused.
	ls, err = l.Acquire(ctx, "lose")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost() not closed after the driver pushed lost")
	}
	if err := ls.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Errorf("release of a lost lease: %v, want ErrNotOwner", err)
	}
	mu.Lock()
	var kinds []string
	for _, n := range notes {
		kinds = append(kinds, string(n.Kind))
		if n.Key != "lose" || n.Token != "tok-L2" {
			t.Errorf("note %+v: want key lose, token tok-L2", n)
		}
	}
	mu.Unlock()
	if strings.Join(kinds, ",") != "renew,lost" {
		t.Errorf("notes %v, want renew,lost", kinds)
	}

	// Freeze stops the process: its state is T until Thaw.
	eff, err := l.Freeze()
	if err != nil || eff["driver_state"] != "T" {
		t.Errorf("freeze: %v %v, want driver_state T", eff, err)
	}
	if err := l.Thaw(); err != nil {
		t.Fatal(err)
	}
	if st := procState(pid); st == "T" {
		t.Errorf("state %s after thaw", st)
	}
	// The protocol's cost per answered request: the calibration's 7 pings
	// and the requests above (the frozen spell counts none), each a round
	// trip over two pipes less the driver's own time.
	if h := l.PipeCost(); h == nil {
		t.Error("no pipe cost recorded")
	} else if n, p50 := h.TotalCount(), time.Duration(h.ValueAtQuantile(50)); n < 7+5 || p50 <= 0 || p50 > time.Second {
		t.Errorf("pipe cost: %d requests, p50 %v: want at least 12 requests, p50 above 0 and under 1s", n, p50)
	}
	cfg := l.Config()
	if cfg["library"] != "fakelib" || cfg["version"] != "0.0.1" {
		t.Errorf("config %v: want the library and version of hello", cfg)
	}
	if err := l.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !gone(pid) {
		t.Errorf("driver pid %d still running after Close (state %s)", pid, procState(pid))
	}
}

func TestOptionRefused(t *testing.T) {
	env := testEnv(nil)
	env.Options.Extra = map[string]string{"colour": "blue"}
	_, err := New(fakeSpec("good"), env)
	if err == nil || !strings.Contains(err.Error(), "lock option colour=blue") || !strings.Contains(err.Error(), "only flavour") {
		t.Fatalf("err %v: want the option, its value and the ones declared named", err)
	}
}

// TestInitUnreachable: an init the driver says could not reach the servers
// is ErrUnavailable (the machine's failure, run class infra); any other
// init error is not (the run asked for something the lock refuses).
func TestInitUnreachable(t *testing.T) {
	for mode, want := range map[string]bool{"unreachable": true, "init-refused": false} {
		_, err := New(fakeSpec(mode), testEnv(nil))
		if err == nil {
			t.Fatalf("%s: no error", mode)
		}
		if got := errors.Is(err, lockimpl.ErrUnavailable); got != want {
			t.Errorf("%s: %v: ErrUnavailable %v, want %v", mode, err, got, want)
		}
		if !errors.Is(err, lockimpl.ErrBroken) {
			t.Errorf("%s: %v: want ErrBroken too", mode, err)
		}
	}
}

// TestBadDrivers: each bad driver fails with an error naming the driver
// and what it did (the line), in bounded time, and is not left running.
func TestBadDrivers(t *testing.T) {
	defer func(m time.Duration) { ReplyMargin = m }(ReplyMargin)
	ReplyMargin = 500 * time.Millisecond
	for _, tc := range []struct {
		mode, want string
		atStart    bool
	}{
		{"crash", "exited: exit status 3; its stderr ended with: fake: cannot load the library: boom", true},
		{"malformed", `not a protocol message (a JSON object with a type): invalid character 'o' in literal null (expecting 'u'): line "not json"`, true},
		{"wrong-id", "a reply to id 8, which no request in flight has", true},
		{"event", `a line without in_reply_to that is no event (lost, renewal): line "{\"type\":\"surprise\"}"`, true},
		{"never", `no answer to request 10 within 1.001s: line "{\"id\":10,\"type\":\"acquire\",\"key\":\"k0\",\"ttl_ms\":500,\"wait_ms\":500}"`, false},
		{"break", "answered acquire with released", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			began := time.Now()
			env := testEnv(nil)
			env.Options.CommandTimeout = 500 * time.Microsecond // the bound: wait 1s + 2×0.5µs + margin
			env.Options.AcquireTimeout = 500 * time.Millisecond
			lk, err := New(fakeSpec(tc.mode), env)
			var pid int
			if err == nil {
				pid = lk.(*Locker).Pid()
				_, err = lk.Acquire(context.Background(), "k0")
				if cerr := lk.Close(); cerr != nil {
					t.Logf("close: %v", cerr)
				}
			}
			if tc.atStart != (pid == 0) {
				t.Errorf("failed at start: %v, want %v", pid == 0, tc.atStart)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, lockimpl.ErrBroken) || lockimpl.IsIndeterminate(err) {
				t.Errorf("%v: want ErrBroken, not indeterminate", err)
			}
			if !strings.Contains(err.Error(), "driver fake-"+tc.mode+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant the driver named and\n  %s", err, tc.want)
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if pid != 0 && !gone(pid) {
				t.Errorf("driver pid %d left running", pid)
			}
		})
	}
}

// holderEnv makes this test binary a stand-in for lockchaos: it starts a
// driver lock, prints the driver's pid and waits to be killed.
const holderEnv = "LOCKCHAOS_DRIVER_HOLDER"

func holderMain() {
	lk, err := New(fakeSpec("good"), testEnv(nil))
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	if _, err := lk.Acquire(context.Background(), "k0"); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString(strconv.Itoa(lk.(*Locker).Pid()) + "\n")
	time.Sleep(time.Minute)
	os.Exit(1)
}

// TestKilledHolderLeavesNoDriver: SIGKILL of a process holding a driver
// lock (nothing of it runs to stop the driver) leaves no driver behind.
func TestKilledHolderLeavesNoDriver(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var s string
	select {
	case s = <-line:
	case <-time.After(20 * time.Second):
		t.Fatal("the holder did not report its driver in 20s")
	}
	pid, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("holder: %s", s)
	}
	if gone(pid) {
		t.Fatalf("driver %d not running while held", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("driver %d still running 5s after its lockchaos was SIGKILLed (state %s)", pid, procState(pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cutGate is a gate whose link is cut (reset) for a release: Before fails
// it as the harness's gate does (workloads/gate.go errCut).
type cutGate struct{}

func (cutGate) Before(_ context.Context, _ int, name string) error {
	if name == "release" {
		return &net.OpError{Op: "write", Net: "tcp", Err: errors.New("connection reset by lockchaos cut")}
	}
	return nil
}
func (cutGate) After(int, bool, bool) {}

// TestReleaseOverACutLinkReachesTheLibrary: a release the gate refuses for a
// cut still goes to the driver (its library stops renewing; redis-semaphore's
// Mutex renewed such a lease for ever, and its only client never acquired
// again), and its outcome is the gate's error.
func TestReleaseOverACutLinkReachesTheLibrary(t *testing.T) {
	env := testEnv(nil)
	env.Gate = cutGate{}
	lk, err := New(fakeSpec("good"), env)
	if err != nil {
		t.Fatal(err)
	}
	l := lk.(*Locker)
	defer l.Close()
	ctx := context.Background()
	ls, err := l.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	var op *net.OpError
	if err := ls.Release(ctx); !errors.As(err, &op) {
		t.Fatalf("release over a cut link: %v, want the gate's network error", err)
	}
	_, err = l.TryAcquire(ctx, "count-releases")
	if err == nil || !strings.Contains(err.Error(), "releases 1") {
		t.Errorf("the driver's count: %v, want releases 1", err)
	}
	l.mu.Lock()
	n := len(l.leases)
	l.mu.Unlock()
	if n != 0 {
		t.Errorf("%d leases still tracked after the release", n)
	}
}

// Terminate stops a driver with SIGTERM (the sigterm fault): a driver
// that ends on it ends within the grace, and a call it had in flight comes
// back unknown, not as a broken driver.
func TestTerminate(t *testing.T) {
	env := testEnv(nil)
	env.Options.AcquireTimeout = 5 * time.Second
	lk, err := New(fakeSpec("never"), env)
	if err != nil {
		t.Fatal(err)
	}
	l := lk.(*Locker)
	errc := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), "k0") // never answered
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	exit, graceful, err := l.Terminate(3 * time.Second)
	if err != nil || !graceful || !strings.Contains(exit, "terminated") {
		t.Errorf("Terminate = %q, %v, %v; want ended by the signal within the grace", exit, graceful, err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Terminate took %v", d)
	}
	select {
	case err := <-errc:
		if !lockimpl.IsIndeterminate(err) || errors.Is(err, lockimpl.ErrBroken) {
			t.Errorf("the acquire in flight: %v, want an unknown outcome, not a broken driver", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the acquire in flight did not come back when the driver ended")
	}
	if l.ShutsDownGracefully() {
		t.Error("the fake driver declares no sigterm extension")
	}
	_ = l.Close()
}
