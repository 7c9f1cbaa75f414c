package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A client's clock inside a driver: libfaketime (Debian's faketime
// package) preloaded into the driver process, reading a timestamp file of
// the client's that a client clock fault rewrites in flight
// (FAKETIME_NO_CACHE=1: every clock read reads the file, so a change
// takes effect at the process's next read). docs/drivers.md, "A client's
// clock: libfaketime".

// FaketimeEnv names the libfaketime library to preload, overriding the
// places FindFaketime looks.
const FaketimeEnv = "LOCKCHAOS_LIBFAKETIME"

// faketimePaths are where Debian, Ubuntu and a source build put it. The MT
// build (a mutex around its state) first: the JVM and Node read the clock
// from several threads.
var faketimePaths = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketimeMT.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketimeMT.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// FindFaketime is the libfaketime library on this machine: $LOCKCHAOS_LIBFAKETIME,
// else the first of the usual places that exists.
func FindFaketime() (string, error) {
	if p := os.Getenv(FaketimeEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("libfaketime: %s=%s: %w", FaketimeEnv, p, err)
		}
		return p, nil
	}
	for _, p := range faketimePaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("libfaketime not found (apt-get install faketime, or set " + FaketimeEnv + " to its libfaketime.so.1)")
}

// fakesMonotonic says whether a driver's CLOCK_MONOTONIC is faked along
// with its wall clock. A lock file's env may decide
// (FAKETIME_DONT_FAKE_MONOTONIC); else by language:
//
//   - java, node: not faked. A real machine's clock step (NTP) moves the
//     wall clock only: the libraries that count a lock's validity on the
//     wall clock (node-redlock's Date.now()) see the fault, timers do not.
//   - python and any other: faked, as libfaketime does by default. With
//     FAKETIME_DONT_FAKE_MONOTONIC=1, libfaketime 0.9.10 fails CPython's
//     time.sleep (clock_nanosleep on CLOCK_MONOTONIC, TIMER_ABSTIME) with
//     EINVAL. A jump then moves the driver's monotonic clock too; the
//     harness maps the driver's times again after every change.
func fakesMonotonic(s *Spec) bool {
	if v, ok := s.Env["FAKETIME_DONT_FAKE_MONOTONIC"]; ok {
		return v != "1"
	}
	switch strings.ToLower(s.Language) {
	case "java", "node":
		return false
	}
	return true
}

// fakeClock is one driver's libfaketime: its timestamp file and what the
// harness knows of the process's clocks.
type fakeClock struct {
	lib  string
	file string
	mono bool // CLOCK_MONOTONIC faked too
	// started is the harness's clock just before the process started.
	// libfaketime counts a rate from the process's start (its
	// constructor): the file's offset is chosen so that the clock reads
	// offset + (t − t_set) × (rate − 1) from the change, which needs that
	// start, measured at the first rate change (start, startKnown).
	started    time.Time
	mu         sync.Mutex
	start      time.Time
	startKnown bool
}

// newFakeClock prepares a driver's libfaketime: the library, and the
// timestamp file holding no fault ("+0.000000 x1").
func newFakeClock(s *Spec, file string) (*fakeClock, error) {
	lib, err := FindFaketime()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	fc := &fakeClock{lib: lib, file: file, mono: fakesMonotonic(s)}
	return fc, fc.write(faketimeSpec(0, 1))
}

// env is the driver's environment for libfaketime.
func (fc *fakeClock) env(s *Spec) []string {
	pre := fc.lib
	if v := os.Getenv("LD_PRELOAD"); v != "" {
		pre += ":" + v
	}
	e := []string{"LD_PRELOAD=" + pre, "FAKETIME_TIMESTAMP_FILE=" + fc.file}
	// Every clock read reads the file, unless the lock file's env says
	// how long libfaketime may cache it (FAKETIME_CACHE_DURATION, whole
	// seconds: a change then takes up to that long).
	_, cache := s.Env["FAKETIME_CACHE_DURATION"]
	_, nocache := s.Env["FAKETIME_NO_CACHE"]
	if !cache && !nocache {
		e = append(e, "FAKETIME_NO_CACHE=1")
	}
	if !fc.mono {
		e = append(e, "FAKETIME_DONT_FAKE_MONOTONIC=1")
		// A real monotonic clock needs no fix of the waits on it
		// (pthread_cond_timedwait on a CLOCK_MONOTONIC condition): with
		// the fix, the JVM's timed waits came late, and Redisson's median
		// acquire took 26-44 ms against 0.5-1.5 ms unfaked.
		if _, ok := s.Env["FAKETIME_FORCE_MONOTONIC_FIX"]; !ok {
			e = append(e, "FAKETIME_FORCE_MONOTONIC_FIX=0")
		}
	}
	return e
}

// write replaces the timestamp file at once (a rename: a reader never sees
// it half written).
func (fc *fakeClock) write(spec string) error {
	tmp := fc.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(spec+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, fc.file)
}

// faketimeSpec is libfaketime's string for an offset (seconds, as a
// fraction: its "m" suffix would be minutes) and a rate.
func faketimeSpec(o time.Duration, rate float64) string {
	s := strconv.FormatFloat(o.Seconds(), 'f', 6, 64)
	if o >= 0 {
		s = "+" + s
	}
	// The rate always: libfaketime keeps the last rate it read when the
	// file names none (a heal to "+0" after "x3" went on at 3).
	return s + " x" + strconv.FormatFloat(rate, 'f', -1, 64)
}

// fileOffset is the file's offset that makes the clock read off at t and
// advance at rate from then: libfaketime's clock is
// S + O + (now − S) × rate for the process's start S.
func (fc *fakeClock) fileOffset(off time.Duration, rate float64, t time.Time) time.Duration {
	if rate == 1 {
		return off
	}
	fc.mu.Lock()
	s := fc.start
	if !fc.startKnown {
		s = fc.started
	}
	fc.mu.Unlock()
	return off - time.Duration(float64(t.Sub(s))*(rate-1))
}

// learnStart takes the process's start from a wall offset m measured at
// mid under the file's offset o and rate: m = o + (mid − S) × (rate − 1).
// It reports whether the estimate moved by more than a millisecond's worth
// of offset.
func (fc *fakeClock) learnStart(m, o time.Duration, rate float64, mid time.Time) bool {
	if rate == 1 || math.Abs(rate-1) < 1e-9 {
		return false
	}
	s := mid.Add(-time.Duration(float64(m-o) / (rate - 1)))
	fc.mu.Lock()
	defer fc.mu.Unlock()
	old := fc.start
	if !fc.startKnown {
		old = fc.started
	}
	if d := s.Sub(fc.started); d < -time.Minute || d > time.Minute {
		return false // not a sane start: leave the estimate
	}
	fc.start, fc.startKnown = s, true
	return math.Abs(float64(s.Sub(old))*(rate-1)) > float64(time.Millisecond)
}

// clockSample is one clock request: the driver's wall clock less the
// harness's (real) one at the request's midpoint, its monotonic reading,
// the round trip.
type clockSample struct {
	wall time.Duration
	mono int64
	mid  time.Time
	rtt  time.Duration
}

// sampleClock asks the driver for its clocks (bounded: a frozen driver
// does not hold a fault for long).
func (l *Locker) sampleClock() (clockSample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a := time.Now()
	m, err := l.p.call(ctx, &Request{Type: "clock"}, 3*time.Second)
	b := time.Now()
	if err != nil {
		return clockSample{}, err
	}
	if m.Type != TypeClockOK {
		return clockSample{}, fmt.Errorf("driver %s answered clock with %s %s", l.spec.Name, m.Type, m.Error)
	}
	mid := a.Add(b.Sub(a) / 2)
	return clockSample{wall: time.Duration(m.WallNS - mid.UnixNano()), mono: m.MonoNS, mid: mid, rtt: b.Sub(a)}, nil
}

// ClockTakesEffect bounds how long SetProcessClock waits for the driver's
// clock to read what the fault set.
var ClockTakesEffect = time.Second

// SetProcessClock sets the driver's clock (libfaketime's timestamp file)
// to read real time + offset from now on, advancing at rate, and measures
// it with clock requests until it does (within 5 ms and the request's
// round trip), at most ClockTakesEffect. The effect has the driver's wall
// offset before and after (driver_offset_before_ms, driver_offset_after_ms,
// measured_jump_ms), what was expected, and how long after the file's
// change the clock read it (took_effect_ms); an error says it did not.
func (l *Locker) SetProcessClock(off time.Duration, rate float64) (map[string]string, error) {
	eff := map[string]string{"mechanism": "libfaketime", "driver_pid": strconv.Itoa(l.p.pid)}
	if l.sh != nil {
		return eff, l.errShared("setting its clock")
	}
	l.p.touched.Store(true)
	fc := l.fc
	if fc == nil {
		why := "the driver runs with the real clock"
		if l.fcWhy != nil {
			why += ": " + l.fcWhy.Error()
		}
		return eff, errors.New(why)
	}
	eff["monotonic"] = map[bool]string{true: "faked", false: "real"}[fc.mono]
	before, err := l.sampleClock()
	if err != nil {
		return eff, fmt.Errorf("clock before: %w", err)
	}
	eff["driver_offset_before_ms"] = msStr(before.wall)
	t := time.Now()
	o := fc.fileOffset(off, rate, t)
	spec := faketimeSpec(o, rate)
	if err := fc.write(spec); err != nil {
		return eff, err
	}
	expect := func(at time.Time) time.Duration {
		return off + time.Duration(float64(at.Sub(t))*(rate-1))
	}
	var s clockSample
	for i := 0; ; i++ {
		if s, err = l.sampleClock(); err != nil {
			return eff, fmt.Errorf("clock after: %w", err)
		}
		if i == 0 && fc.learnStart(s.wall, o, rate, s.mid) {
			// The first rate change: the process's start is known now;
			// the file again with the offset it gives.
			o = fc.fileOffset(off, rate, t)
			spec = faketimeSpec(o, rate)
			if err := fc.write(spec); err != nil {
				return eff, err
			}
			eff["start_corrected"] = "true"
			continue
		}
		d := s.wall - expect(s.mid)
		if d < 0 {
			d = -d
		}
		if d <= 5*time.Millisecond+s.rtt {
			break
		}
		if time.Since(t) > ClockTakesEffect {
			eff["faketime"] = spec
			eff["driver_offset_after_ms"] = msStr(s.wall)
			eff["expected_offset_ms"] = msStr(expect(s.mid))
			return eff, fmt.Errorf("driver pid %d: its wall clock was %s ms off the real one %v after the change, expected %s ms: libfaketime did not reach it (a program that reads the clock without libc, such as a Go one, is out of its reach)",
				l.p.pid, msStr(s.wall), ClockTakesEffect, msStr(expect(s.mid)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	eff["faketime"] = spec
	eff["driver_offset_after_ms"] = msStr(s.wall)
	eff["expected_offset_ms"] = msStr(expect(s.mid))
	eff["measured_jump_ms"] = msStr(s.wall - before.wall)
	eff["took_effect_ms"] = msStr(s.mid.Sub(t))
	if fc.mono {
		// The driver's monotonic clock moved with it: its times map to
		// the harness's from here at the new rate.
		eff["driver_mono_moved_ms"] = msStr(l.real(s.mono).Sub(s.mid))
		l.mono.Store(&monoMap{anchor: s.mid, m: s.mono, rate: rate})
	}
	return eff, nil
}

func msStr(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// monoMap maps the driver's monotonic nanoseconds to the harness's clock:
// anchor + (ns − m) / rate.
type monoMap struct {
	anchor time.Time
	m      int64
	rate   float64
}

// real is a driver time on the harness's (real) clock.
func (l *Locker) real(ns int64) time.Time {
	mm := l.mono.Load()
	return mm.anchor.Add(time.Duration(float64(ns-mm.m) / mm.rate))
}

// BlockLoop has the driver block its event loop for d (block_loop, a
// driver that declares it in hello's extensions): nothing in the process
// runs but the busy wait, its timers and renewals wait, and the process
// stays runnable (its state, read halfway, is driver_state: R), unlike a
// SIGSTOP. The effect has loop_blocked_ms, measured by the driver.
func (l *Locker) BlockLoop(d time.Duration) (map[string]string, error) {
	eff := map[string]string{"mode": "block-loop", "driver_pid": strconv.Itoa(l.p.pid)}
	if l.sh != nil {
		return eff, l.errShared("blocking its event loop")
	}
	l.p.touched.Store(true)
	if !l.hasExtension("block_loop") {
		return eff, fmt.Errorf("driver %s (%s) does not block its event loop: its hello declares no block_loop extension", l.spec.Name, l.hello.Language)
	}
	state := make(chan string, 1)
	go func() {
		time.Sleep(d / 2)
		state <- procState(l.p.pid)
	}()
	m, err := l.p.call(context.Background(), &Request{Type: "block_loop", MS: ms(d)}, d+ReplyMargin)
	eff["driver_state"] = <-state
	if err != nil {
		return eff, err
	}
	if m.Type != TypeBlockLoopOK {
		return eff, fmt.Errorf("driver %s answered block_loop with %s %s", l.spec.Name, m.Type, m.Error)
	}
	eff["loop_blocked_ms"] = msStr(time.Duration(m.T1 - m.T0))
	return eff, nil
}
