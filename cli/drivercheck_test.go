package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
)

// brokenDriver builds lockimpl/driver/testdata/brokendriver (a driver that
// breaks the protocol one way per kind).
func brokenDriver(t *testing.T) string {
	return helperBinary(t, "brokendriver", "./lockimpl/driver/testdata/brokendriver")
}

// checkDriver runs driver check on spec against a redis-server of its own.
func checkDriver(t *testing.T, spec *driver.Spec, ttl time.Duration) map[string]driver.CheckResult {
	t.Helper()
	res, err := runDriverCheck(context.Background(), spec, spec.Options, ttl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]driver.CheckResult{}
	for _, r := range res {
		out[r.Name] = r
	}
	if len(out) != len(driver.CheckNames()) {
		t.Fatalf("%d results for %d checks", len(out), len(driver.CheckNames()))
	}
	return out
}

// A driver broken in one way fails the check named for it, with a sentence;
// the same driver unbroken passes every check (issue 42.3).
func TestDriverCheckCatchesEachBrokenDriver(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	bin := brokenDriver(t)
	cases := []struct{ kind, lock, fails string }{
		{"none", "simple", ""},
		{"hello-fields", "simple", "hello"},
		{"init", "simple", "init"},
		{"acquire", "simple", "acquire"},
		{"conn-name", "simple", "conn-name"},
		{"keys", "simple", "keys"},
		{"refused", "simple", "refused"},
		{"waits", "simple", "waits"},
		{"waits-unsure", "simple", "waits"},
		{"refused-unsure", "simple", "refused"},
		{"unsure-once", "simple", ""},
		{"ping", "simple", "ping-while-waiting"},
		{"release", "simple", "release"},
		{"none", "del-no-owner", "not-owner"},
		{"stopped", "simple", "stopped-server"},
		{"reset", "simple", "reset"},
		{"bounded", "simple", "bounded"},
		{"shutdown", "simple", "shutdown"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.lock, func(t *testing.T) {
			spec, err := driver.ExecSpec(bin + " " + c.kind + " " + c.lock)
			if err != nil {
				t.Fatal(err)
			}
			res := checkDriver(t, spec, 500*time.Millisecond)
			for _, name := range driver.CheckNames() {
				r := res[name]
				switch {
				case name == c.fails && (r.Verdict != driver.CheckFail || r.Detail == ""):
					t.Errorf("%s: %s %q, want it to fail with a sentence", name, r.Verdict, r.Detail)
				case c.fails == "" && r.Verdict != driver.CheckPass:
					t.Errorf("the unbroken driver: %s %s %q, want pass", name, r.Verdict, r.Detail)
				case r.Verdict == driver.CheckFail:
					t.Logf("also failed: %s: %s", name, r.Detail)
				}
			}
			if c.fails != "" {
				t.Logf("%s: %s", c.fails, res[c.fails].Detail)
			}
		})
	}
}

// Every shipped driver and the worked examples whose programs are built
// here pass driver check (the Java example's jar is built by
// drivers/java/test.sh, after this tier).
func TestDriverCheckPassesShippedDrivers(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	files, err := filepath.Glob(filepath.Join("..", "drivers", "*", "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("%d lock files under drivers/ (%v)", len(files), err)
	}
	files = append(files, filepath.Join("..", "examples", "python-driver", "my-lock.yaml"), filepath.Join("..", "examples", "python-driver", "forever-lock.yaml"),
		filepath.Join("..", "examples", "node-driver", "my-lock.yaml"))
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), ".yaml"), func(t *testing.T) {
			spec, err := driver.LoadSpec(f)
			if err != nil {
				t.Fatal(err)
			}
			for name, r := range checkDriver(t, spec, time.Second) {
				switch r.Verdict {
				case driver.CheckFail:
					t.Errorf("%s: %s", name, r.Detail)
				case driver.CheckSkip:
					t.Logf("%s skipped: %s", name, r.Detail)
				}
			}
		})
	}
}

// The command: exit 0 when every check passes, 1 when one fails, and a
// JUnit file with a test case per check.
func TestDriverCheckCommand(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	bin := brokenDriver(t)
	dir := t.TempDir()
	for _, c := range []struct {
		kind string
		code int
	}{{"none", ExitOK}, {"waits", ExitViolated}} {
		junit := filepath.Join(dir, c.kind+".xml")
		code, stdout, stderr := lockchaos(t, "driver", "check", "exec:"+bin+" "+c.kind, "--ttl", "500ms", "--junit", junit)
		wantExit(t, code, c.code, stdout, stderr)
		x, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(x), "<testcase "); n != len(driver.CheckNames()) {
			t.Errorf("%s: %d test cases in the JUnit file, want %d", c.kind, n, len(driver.CheckNames()))
		}
		if got := strings.Contains(string(x), "<failure"); got != (c.code != ExitOK) {
			t.Errorf("%s: JUnit failure present %v, exit %d", c.kind, got, code)
		}
	}
	code, stdout, stderr := lockchaos(t, "driver", "check", filepath.Join(dir, "no-such.yaml"))
	wantExit(t, code, ExitBadInput, stdout, stderr)
}
