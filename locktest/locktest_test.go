package locktest_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/locktest"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A built-in correct lock passes (the short subset, three scenarios).
func TestSimplePasses(t *testing.T) {
	locktest.Run(t, "simple", nil, locktest.Quick(), locktest.Scenarios("smoke", "expire-then-unlock", "gc-pause"))
}

// Without redis-server the embedded in-process Redis runs the single-node
// scenarios, and a scenario that needs more (sentinel) is skipped with a
// message; were it run, the topology could not start and the test would fail.
func TestWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	locktest.Run(t, "simple", nil, locktest.Scenarios("smoke", "gc-pause", "failover"))
}

// The broken control del-no-owner (release by plain DEL) fails
// expire-then-unlock with the checker's sentence. A failing subtest fails
// its parent, so it runs in a child process: this test binary, running
// only TestHelperBroken. The unlock check names the DEL from the server's
// command record (who ran it), however late keyspace notifications come
// under the whole -race suite.
func TestBrokenFails(t *testing.T) {
	childFails(t, "TestHelperBroken",
		"--- FAIL: TestHelperBroken/expire-then-unlock",
		"expire-then-unlock with del-no-owner: verdicts worse than a correct lock of its kind must get",
		"violation: unlock [deleted-by-non-owner]")
}

// childFails runs helper in a child process of this test binary (a failing
// subtest fails its parent) and wants it to fail with each of wants.
func childFails(t *testing.T, helper string, wants ...string) string {
	if testing.Short() {
		t.Skip("runs a child test process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKTEST_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed; want a failure:\n%s", out)
	}
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	return string(out)
}

func TestHelperBroken(t *testing.T) {
	if os.Getenv("LOCKTEST_HELPER") == "" {
		t.Skip("run by TestBrokenFails")
	}
	locktest.Run(t, "del-no-owner", nil, locktest.Quick(), locktest.Scenarios("expire-then-unlock"))
}

// A lock that declares Renews but reports no renewal (here the watchdog
// with Env.Note dropped) fails: its renewals would be invisible.
func TestSilentRenewerFails(t *testing.T) {
	childFails(t, "TestHelperSilent",
		"renewal-starved with silent-renewer: it declares Renews but reported no renewal through Env.Note")
}

func TestHelperSilent(t *testing.T) {
	if os.Getenv("LOCKTEST_HELPER") == "" {
		t.Skip("run by TestSilentRenewerFails")
	}
	silent := func(env lockimpl.Env) (lockimpl.Locker, error) {
		env.Note = nil
		return lockimpl.New("watchdog", env)
	}
	locktest.Run(t, "silent-renewer", silent, locktest.Info(lockimpl.Info{Reentrant: true, Renews: true}),
		locktest.Quick(), locktest.Scenarios("renewal-starved"))
}

// Each capability set picks the built-in lock of that kind as its bar, and
// the scenarios that apply follow from it.
func TestReferenceAndApplies(t *testing.T) {
	for _, tc := range []struct {
		info lockimpl.Info
		ref  string
		in   []string // scenarios that must apply
		out  []string // and must not
	}{
		{lockimpl.Info{}, "simple", []string{"smoke", "gc-pause", "expire-then-unlock", "failover"}, []string{"reentrant-expiry", "renewal-starved", "clock-drift"}},
		{lockimpl.Info{Renews: true}, "watchdog", []string{"renewal-starved", "gc-pause"}, []string{"reentrant-expiry"}},
		{lockimpl.Info{Reentrant: true, Renews: true}, "watchdog", []string{"renewal-starved", "reentrant-expiry"}, nil},
		{lockimpl.Info{Fenced: true}, "fenced", []string{"gc-pause", "failover"}, []string{"renewal-starved"}},
		{lockimpl.Info{NeedsReplicas: true}, "simple-wait", []string{"failover"}, nil},
		{lockimpl.Info{MinNodes: 1}, "redlock", []string{"clock-drift", "restart-delayed", "smoke"}, []string{"reentrant-expiry"}},
		{lockimpl.Info{MinNodes: 3}, "redlock", []string{"clock-drift", "restart-delayed"}, []string{"smoke", "gc-pause"}},
	} {
		ref := locktest.ReferenceFor(tc.info)
		if ref != tc.ref {
			t.Errorf("%s: reference %s, want %s", tc.info.Capabilities(), ref, tc.ref)
			continue
		}
		refInfo, _, err := lockimpl.Lookup(ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(append([]string{}, tc.in...), tc.out...) {
			s, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			ok, why := locktest.Applies(tc.info, refInfo, s)
			if want := slices.Contains(tc.in, name); ok != want {
				t.Errorf("%s: %s applies %v (%s), want %v", tc.info.Capabilities(), name, ok, why, want)
			}
		}
	}
}

// The bar is the reference's expectation, "invalid" relaxed to "any".
func TestBar(t *testing.T) {
	s, err := scenarios.Builtin("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	if got := locktest.Bar(s, "fenced"); got["mutex"] != "any" || got["resource"] != "valid" {
		t.Errorf("gc-pause bar for fenced: %v, want mutex any, resource valid", got)
	}
	if got := locktest.Bar(s, "simple"); got["mutex"] != "any" || got["resource"] != "any" {
		t.Errorf("gc-pause bar for simple: %v, want mutex any, resource any", got)
	}
}

// A renewing lock registered without Renews fails the suite: its
// capabilities check says to declare Renews. The run says what it did: the
// scenarios that do not apply to a plain lock, one line each with the
// reason, and the summary.
func TestUndeclaredRenewerFails(t *testing.T) {
	childFails(t, "TestHelperUndeclared",
		"--- FAIL: TestHelperUndeclared/capabilities",
		"reported renewals through Env.Note but does not declare Renews",
		"declare Renews in its lockimpl.Info (locktest.Info)",
		"skipped renewal-starved: not for the reference simple: scenario is meant for watchdog",
		"skipped reentrant-expiry: not for the reference simple",
		"--- PASS: TestHelperUndeclared/smoke",
		"locktest undeclared-renewer summary: capabilities check FAILED; 1 scenarios ran: 1 passed, 0 failed",
		"skipped, not selected by locktest.Scenarios: ")
}

func TestHelperUndeclared(t *testing.T) {
	if os.Getenv("LOCKTEST_HELPER") == "" {
		t.Skip("run by TestUndeclaredRenewerFails")
	}
	locktest.Run(t, "undeclared-renewer", locktest.NewRenewerForTest, locktest.Quick(), locktest.Scenarios("smoke"))
}

// A scenario go test's -run leaves out is counted as skipped, not passed.
func TestRunFilterIsNotAPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child test process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFiltered$/^smoke$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKTEST_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestHelperFiltered/smoke",
		"summary: capabilities check not run (go test -run); 1 scenarios ran: 1 passed, 0 failed",
		"skipped, not selected by go test -run: expire-then-unlock"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func TestHelperFiltered(t *testing.T) {
	if os.Getenv("LOCKTEST_HELPER") == "" {
		t.Skip("run by TestRunFilterIsNotAPass")
	}
	locktest.Run(t, "simple", nil, locktest.Quick(), locktest.Scenarios("smoke", "expire-then-unlock"))
}
