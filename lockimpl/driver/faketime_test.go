package driver

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func effMS(t *testing.T, eff map[string]string, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(eff[k], 64)
	if err != nil {
		t.Fatalf("effect %s: %q (%v)", k, eff[k], eff)
	}
	return v
}

// A client clock fault rewrites the driver's timestamp file and measures
// the driver's clock until it reads what was set: an offset at once, a
// rate from the change (libfaketime counts a rate from the process's
// start: the first rate change learns it and writes the file again). The
// fake driver reads the file as libfaketime would (the library itself, on
// real drivers: runner's TestDriverClockFaultsTakeEffectInside).
func TestProcessClockSetAndMeasured(t *testing.T) {
	t.Setenv(FaketimeEnv, "/dev/null") // a Go process's clocks do not pass libc: the fake reads the file itself
	env := testEnv(nil)
	env.ClockFile = filepath.Join(t.TempDir(), "clients", "c2.faketime")
	lk, err := New(fakeSpec("faketime"), env)
	if err != nil {
		t.Fatal(err)
	}
	l := lk.(*Locker)
	defer l.Close()
	eff, err := l.SetProcessClock(300*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err, eff)
	}
	if got := effMS(t, eff, "driver_offset_after_ms"); got < 290 || got > 310 || eff["mechanism"] != "libfaketime" {
		t.Errorf("offset %v ms, want 300: %v", got, eff)
	}
	// A rate of 2 from now, from an offset of 0: the file's offset makes up
	// for the time since the process started.
	time.Sleep(300 * time.Millisecond)
	eff, err = l.SetProcessClock(0, 2)
	if err != nil {
		t.Fatal(err, eff)
	}
	if got := effMS(t, eff, "driver_offset_after_ms"); got < -10 || got > 10 || eff["start_corrected"] != "true" {
		t.Errorf("rate 2: offset %v ms right after the change, want 0: %v", got, eff)
	}
	if !strings.HasSuffix(eff["faketime"], " x2") {
		t.Errorf("faketime %q, want a rate of 2", eff["faketime"])
	}
	time.Sleep(200 * time.Millisecond)
	s, err := l.sampleClock()
	if err != nil {
		t.Fatal(err)
	}
	if s.wall < 180*time.Millisecond || s.wall > 260*time.Millisecond {
		t.Errorf("200 ms at rate 2: offset %v, want about 200ms", s.wall)
	}
	eff, err = l.SetProcessClock(0, 1)
	if err != nil {
		t.Fatal(err, eff)
	}
	if got := effMS(t, eff, "driver_offset_after_ms"); got < -10 || got > 10 {
		t.Errorf("healed: offset %v ms, want 0", got)
	}
	// block_loop, which this fake declares.
	eff, err = l.BlockLoop(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err, eff)
	}
	if b := effMS(t, eff, "loop_blocked_ms"); b < 95 || b > 1000 {
		t.Errorf("loop blocked %v ms, want 100", b)
	}
}

// A fault that does not reach the driver's clock is said, never ignored:
// a driver whose clock ignores the file (a Go program: libfaketime does not
// reach it), one started without libfaketime, one that does not declare
// block_loop.
func TestProcessClockNotTakingEffectIsAnError(t *testing.T) {
	t.Setenv(FaketimeEnv, "/dev/null")
	defer func(d time.Duration) { ClockTakesEffect = d }(ClockTakesEffect)
	ClockTakesEffect = 100 * time.Millisecond
	env := testEnv(nil)
	env.ClockFile = filepath.Join(t.TempDir(), "c2.faketime")
	lk, err := New(fakeSpec("good"), env)
	if err != nil {
		t.Fatal(err)
	}
	l := lk.(*Locker)
	defer l.Close()
	if eff, err := l.SetProcessClock(time.Second, 1); err == nil || !strings.Contains(err.Error(), "libfaketime did not reach it") {
		t.Errorf("a clock that ignores the file: %v, %v", err, eff)
	}
	if eff, err := l.BlockLoop(10 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "no block_loop") {
		t.Errorf("block_loop undeclared: %v, %v", err, eff)
	}

	t.Setenv(FaketimeEnv, filepath.Join(t.TempDir(), "nothing.so"))
	lk, err = New(fakeSpec("good"), env)
	if err != nil {
		t.Fatal(err)
	}
	l2 := lk.(*Locker)
	defer l2.Close()
	if eff, err := l2.SetProcessClock(time.Second, 1); err == nil || !strings.Contains(err.Error(), "real clock") || !strings.Contains(err.Error(), FaketimeEnv) {
		t.Errorf("without libfaketime: %v, %v", err, eff)
	}
	if c, ok := l2.Config()["clock"].(map[string]any); !ok || c["error"] == nil {
		t.Errorf("config clock %v, want the error", l2.Config()["clock"])
	}
}

func TestFaketimeSpec(t *testing.T) {
	for _, c := range []struct {
		o    time.Duration
		r    float64
		want string
	}{{0, 1, "+0.000000 x1"}, {5 * time.Second, 1, "+5.000000 x1"}, {-1500 * time.Millisecond, 1, "-1.500000 x1"}, {300 * time.Millisecond, 2.5, "+0.300000 x2.5"}} {
		if got := faketimeSpec(c.o, c.r); got != c.want {
			t.Errorf("faketimeSpec(%v, %v) = %q, want %q", c.o, c.r, got, c.want)
		}
	}
}
