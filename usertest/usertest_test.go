package usertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// root is the checkout of this module (the package directory's parent).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// goTool runs the go tool in dir as a user would, plainly: go.mod and
// go.sum as they are (-mod=readonly, the default, so a module that is not
// tidy fails here as it does for a user; the environment's GOFLAGS are kept
// but any -mod is overridden), offline: every module from the module cache
// and every checksum from the module's own go.sum. Only when a module is
// missing from a cold cache (a fresh CI machine) is it run again with the
// environment's GOPROXY, and the test says so.
func goTool(ctx context.Context, t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	goflags := "GOFLAGS=" + strings.Join(append(flags, "-mod=readonly"), " ")
	cmd := func(proxy string) *exec.Cmd {
		c := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
		c.Dir = dir
		c.Env = append(os.Environ(), goflags, "GOWORK=off")
		if proxy != "" {
			c.Env = append(c.Env, "GOPROXY="+proxy)
		}
		return c
	}
	out, err := run(t, cmd("off"))
	if err != nil && strings.Contains(out, "GOPROXY=off") {
		t.Logf("go %s: a module is not in the cache (%s); running it with GOPROXY", strings.Join(args, " "), firstLine(out))
		return run(t, cmd(""))
	}
	return out, err
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func run(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// The custom binary (the xk6 pattern): examples/customlock is a module of its
// own whose ten-line main.go imports cli and its lock package. It builds (and
// vets, which compiles its conformance test) from the module cache; the
// binary lists seq-lock among the locks and runs gc-pause on it as expected.
func TestCustomBinary(t *testing.T) {
	testenv.Long(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ex := filepath.Join(root(t), "examples", "customlock")
	bin := filepath.Join(t.TempDir(), "customlock")
	if out, err := goTool(ctx, t, ex, "build", "-o", bin, "."); err != nil {
		t.Fatalf("go build in examples/customlock: %v\n%s", err, out)
	}
	if out, err := goTool(ctx, t, ex, "vet", "./..."); err != nil {
		t.Fatalf("go vet ./... in examples/customlock: %v\n%s", err, out)
	}
	out, err := run(t, exec.CommandContext(ctx, bin, "list", "locks"))
	for _, want := range []string{"seq-lock", "renew-lock", "reentrant-lock", "watchdog"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("customlock list locks: %v; want %s among the example's and the built-in locks:\n%s", err, want, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, "run", "gc-pause", "--lock", "seq-lock", "--expect", "--out", filepath.Join(t.TempDir(), "run"))
	if out, err := run(t, cmd); err != nil {
		t.Fatalf("customlock run gc-pause --lock seq-lock --expect: %v (want exit 0)\n%s", err, out)
	}
}

// freshLock is a user's lock in a module of its own, built only from the
// exported blocks; New(true) is the classic mistake, release by plain DEL.
const freshLock = `// Package mylock is a lock written outside lockchaos.
package mylock

import (
	"context"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// New returns the factory of the lock; plainDel releases without an owner check.
func New(plainDel bool) lockimpl.Factory {
	return func(env lockimpl.Env) (lockimpl.Locker, error) { return &lock{env: env, plainDel: plainDel}, nil }
}

type lock struct {
	env      lockimpl.Env
	plainDel bool
}

func (l *lock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return lockimpl.WaitAcquire(ctx, &l.env, key, func(ctx context.Context) (lockimpl.Lease, error) {
		return l.TryAcquire(ctx, key)
	})
}

func (l *lock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o, conn, token := &l.env.Options, l.env.Conns[0], lockimpl.NewToken()
	start := l.env.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	ok, err := conn.SetNX(cctx, key, token, o.TTL).Result()
	if err != nil {
		return nil, lockimpl.Classify("acquire", key, err)
	}
	if !ok {
		return nil, lockimpl.ErrNotAcquired
	}
	release := func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }
	if l.plainDel {
		release = func(ctx context.Context) error {
			cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
			defer cancel()
			return lockimpl.Classify("release", key, conn.Del(cctx, key).Err())
		}
	}
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: token, Deadline: start.Add(o.TTL), Release: release}), nil
}

func (l *lock) Close() error { return nil }
`

const freshTest = `package mylock_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/locktest"

	"example.com/fresh/mylock"
)

func TestCorrect(t *testing.T) { locktest.Run(t, "my-lock", mylock.New(false)) }

func TestBroken(t *testing.T) { locktest.Run(t, "my-broken-lock", mylock.New(true)) }
`

// The "done when": a fresh module in a temp dir requires the module
// path (replaced by this checkout), defines its own lock with the exported
// blocks in under 80 lines, passes locktest.Run -short with the correct
// release and fails it, naming the violation, with a plain DEL.
func TestFreshModule(t *testing.T) {
	testenv.Long(t)
	if n := strings.Count(freshLock, "\n"); n >= 80 {
		t.Fatalf("the fresh lock is %d lines; the point is under 80", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ex := filepath.Join(root(t), "examples", "customlock")
	sum, err := os.ReadFile(filepath.Join(ex, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// The example's go.mod, renamed: lockchaos and every module its
	// packages need (a go.mod that lists only lockchaos does not build
	// with -mod=readonly), the replace pointed at this checkout.
	mod, err := os.ReadFile(filepath.Join(ex, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := strings.Replace(replaceToRoot(t, string(mod)), "module example.com/customlock\n", "module example.com/fresh\n", 1)
	files := map[string]string{
		"go.mod":                gomod,
		"go.sum":                string(sum), // the checksums of lockchaos's dependencies
		"mylock/mylock.go":      freshLock,
		"mylock/mylock_test.go": freshTest,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := goTool(ctx, t, dir, "test", "-short", "-count=1", "-v", "-run", "^TestCorrect$", "./mylock")
	if err != nil {
		t.Fatalf("the correct lock failed the conformance suite: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestCorrect/capabilities", "--- PASS: TestCorrect/smoke", "--- PASS: TestCorrect/expire-then-unlock", "--- PASS: TestCorrect/stall-unlock", "locktest my-lock summary: capabilities check passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("correct lock: output lacks %q:\n%s", want, out)
		}
	}
	out, err = goTool(ctx, t, dir, "test", "-short", "-count=1", "-v", "-run", "^TestBroken$/^expire-then-unlock$", "./mylock")
	if err == nil {
		t.Fatalf("the plain-DEL lock passed the conformance suite:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestBroken/expire-then-unlock",
		"expire-then-unlock with my-broken-lock: verdicts worse than a correct lock of its kind must get",
		// Which check names the cause depends on the interleaving (the
		// unlock check attributes the DEL when it saw it land on another
		// owner's key); a mutex or unlock violation is always there.
		"violation: ",
		"while client ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("broken lock: output lacks %q:\n%s", want, out)
		}
	}
}

// replaceToRoot points an example go.mod's replace of lockchaos (../..)
// at this checkout, for a copy of the module elsewhere.
func replaceToRoot(t *testing.T, mod string) string {
	t.Helper()
	const rel = "replace github.com/lockchaos/lockchaos => ../..\n"
	if strings.Count(mod, rel) != 1 {
		t.Fatalf("the example's go.mod has no line %q", rel)
	}
	return strings.Replace(mod, rel, "replace github.com/lockchaos/lockchaos => "+root(t)+"\n", 1)
}
