// Package testenv holds the two switches every test of lockchaos reads from
// the environment: the long tier (LOCKCHAOS_LONG) and what a test needs from
// the machine (redis-server, redis-sentinel, gcc, docker), which it skips
// without unless a LOCKCHAOS_REQUIRE_… variable says the machine has it
// (CI sets them, so a missing binary fails there instead of skipping).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// LongEnv is the variable that runs the long tier: end-to-end runs on real
// servers that take more than a few seconds. `go test ./...` skips them;
// scripts/test.sh runs them (LOCKCHAOS_LONG=1).
const LongEnv = "LOCKCHAOS_LONG"

// Long skips tb unless the long tier runs. A test is long or not as a
// whole: scripts/test.sh's long tier reruns exactly the tests that skipped
// here (internal/testenv/longtier), by name.
func Long(tb testing.TB) {
	tb.Helper()
	if os.Getenv(LongEnv) == "" {
		tb.Skip("long tier: LOCKCHAOS_LONG=1 runs it (scripts/test.sh does)")
	}
}

// requires maps a binary to the variable that requires it.
var requires = map[string]string{
	"redis-server":   "LOCKCHAOS_REQUIRE_REDIS",
	"redis-sentinel": "LOCKCHAOS_REQUIRE_REDIS",
	"gcc":            "LOCKCHAOS_REQUIRE_GCC",
}

// Need skips tb when bin is not on PATH, or fails it when the variable that
// requires bin (LOCKCHAOS_REQUIRE_REDIS for redis-server and redis-sentinel,
// LOCKCHAOS_REQUIRE_GCC for gcc) is set.
func Need(tb testing.TB, bin string) {
	tb.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		env, ok := requires[bin]
		if !ok {
			panic("testenv.Need: no LOCKCHAOS_REQUIRE_ variable for " + bin)
		}
		Missing(tb, env, "%s is not on PATH: %v", bin, err)
	}
}

// Has reports whether bin is on PATH, for a test that falls back to another
// backend without it; a set LOCKCHAOS_REQUIRE_… variable fails tb instead.
func Has(tb testing.TB, bin string) bool {
	tb.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		if env := requires[bin]; env != "" && os.Getenv(env) != "" {
			tb.Fatalf("%s is not on PATH although %s is set: %v", bin, env, err)
		}
		return false
	}
	return true
}

// Missing skips tb for what it lacks (format, args), or fails it when env
// (LOCKCHAOS_REQUIRE_DOCKER, LOCKCHAOS_REQUIRE_REDIS, …) is set: the one
// place a missing prerequisite becomes a skip or a failure.
func Missing(tb testing.TB, env, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(env) != "" {
		tb.Fatalf("%s, although %s is set", why, env)
	}
	tb.Skipf("%s (%s=1 makes this a failure)", why, env)
}
