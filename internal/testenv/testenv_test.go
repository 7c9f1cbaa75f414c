package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// tb records how a helper ended a test: skipped or failed, and why.
type tb struct {
	testing.TB
	ended, why string
}

type stop struct{}

func (f *tb) Helper()          {}
func (f *tb) Skip(args ...any) { f.end("skip", fmt.Sprint(args...)) }
func (f *tb) Skipf(format string, args ...any) {
	f.end("skip", fmt.Sprintf(format, args...))
}
func (f *tb) Fatalf(format string, args ...any) { f.end("fail", fmt.Sprintf(format, args...)) }
func (f *tb) end(how, why string)               { f.ended, f.why = how, why; panic(stop{}) }

func run(f func(testing.TB)) (t *tb) {
	t = &tb{}
	defer func() {
		if r := recover(); r != nil && r != (stop{}) {
			panic(r)
		}
	}()
	f(t)
	return t
}

// A missing binary skips, unless its LOCKCHAOS_REQUIRE_ variable is set:
// then it fails, naming the variable.
func TestNeedSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, bin := range []string{"redis-server", "redis-sentinel", "gcc"} {
		env := requires[bin]
		t.Setenv(env, "")
		if got := run(func(tb testing.TB) { Need(tb, bin) }); got.ended != "skip" || !strings.Contains(got.why, env) {
			t.Errorf("%s missing, %s unset: %s %q, want a skip naming %s", bin, env, got.ended, got.why, env)
		}
		if got := run(func(tb testing.TB) { Has(tb, bin) }); got.ended != "" {
			t.Errorf("Has(%s) with %s unset ended the test: %s %q", bin, env, got.ended, got.why)
		}
		t.Setenv(env, "1")
		if got := run(func(tb testing.TB) { Need(tb, bin) }); got.ended != "fail" || !strings.Contains(got.why, env) {
			t.Errorf("%s missing, %s=1: %s %q, want a failure naming %s", bin, env, got.ended, got.why, env)
		}
		if got := run(func(tb testing.TB) { Has(tb, bin) }); got.ended != "fail" {
			t.Errorf("Has(%s) with %s=1: %s %q, want a failure", bin, env, got.ended, got.why)
		}
	}
}

func TestLong(t *testing.T) {
	t.Setenv(LongEnv, "")
	if got := run(Long); got.ended != "skip" || !strings.Contains(got.why, LongEnv) {
		t.Errorf("LOCKCHAOS_LONG unset: %s %q, want a skip naming it", got.ended, got.why)
	}
	t.Setenv(LongEnv, "1")
	if got := run(Long); got.ended != "" {
		t.Errorf("LOCKCHAOS_LONG=1: %s %q, want the test to run", got.ended, got.why)
	}
}
